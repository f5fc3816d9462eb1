"""Python targets: loading forms, call conventions, timeouts, and the bounded thread pool."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats.model import CaseSpec
from agenticlens_frames.runner.python_target import (
    DaemonPool,
    PythonTarget,
    _deadlines,
    accepts_keyword,
    load_callable,
)
from agenticlens_frames.runner.retry import TargetFailure

CASE = CaseSpec(id="c1", name="one", index=0, input={"q": "hi"})


def _call(target: PythonTarget, case: CaseSpec = CASE):
    return asyncio.run(target.call(case))


def test_file_targets_resolve_against_the_base_folder_and_load_once(tmp_path, monkeypatch):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "bot.py").write_text(
        "LOADS = [0]\nLOADS[0] += 1\n\nclass Agent:\n    def answer(self, text):\n"
        "        return text\n\nagent = Agent()\n"
    )
    monkeypatch.chdir("/")  # not the base folder: AgenticLens would look here
    fn = load_callable("agents/bot.py:agent.answer", base_dir=tmp_path)
    assert fn("x") == "x"
    again = load_callable("agents/bot.py:agent.answer", base_dir=tmp_path)
    assert again.__self__ is fn.__self__  # same module object: executed once
    assert fn.__globals__["LOADS"] == [1]


def test_module_targets_are_found_in_the_base_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))  # the folder added is taken out after
    (tmp_path / "my_agent_mod_xyz.py").write_text(
        "def run(text, case=None):\n    import later_xyz  # at call time\n"
        "    return text + later_xyz.SUFFIX\n"
    )
    (tmp_path / "later_xyz.py").write_text("SUFFIX = '!'\n")
    try:
        fn = load_callable("my_agent_mod_xyz:run", base_dir=tmp_path)
        # An import in a call failed: the folder was on sys.path only while imported.
        assert fn("y") == "y!"
    finally:
        sys.modules.pop("later_xyz", None)
    assert sys.path.index(str(tmp_path)) == len(sys.path) - 1  # last: it hides nothing


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module_qq:run", "was not found"),
        ("json:loads.nope", "has no attribute 'nope'"),
        ("json:__doc__", "not a callable"),
        ("missing.py:run", "does not exist"),
        ("json", "must be 'module:function'"),
    ],
)
def test_targets_that_cannot_work_are_refused(target, message, tmp_path):
    with pytest.raises(InputError, match=message):
        load_callable(target, base_dir=tmp_path)


def test_an_import_error_inside_the_target_module_is_reported(tmp_path):
    (tmp_path / "broken_qq.py").write_text("import definitely_missing_dependency_qq\n")
    with pytest.raises(InputError, match="definitely_missing_dependency_qq"):
        load_callable("broken_qq.py:run", base_dir=tmp_path)


@pytest.mark.parametrize("prefix", ["", "async "])
def test_a_generator_function_is_refused(tmp_path, prefix):
    # Every call returned a generator: every trial failed on its first case.
    (tmp_path / "streams_qq.py").write_text(
        f"{prefix}def run(text):\n    yield {{'output': text}}\n"
    )
    with pytest.raises(InputError, match="is a generator function"):
        load_callable("streams_qq.py:run", base_dir=tmp_path)


def test_an_error_raised_while_importing_says_its_type_and_place(tmp_path, monkeypatch):
    # It said only "python target 'config_qq.py:run': 'AGENT_KEY_QQ'".
    monkeypatch.delenv("AGENT_KEY_QQ", raising=False)
    path = tmp_path / "config_qq.py"
    path.write_text(
        "import os\nKEY = os.environ['AGENT_KEY_QQ']\n\ndef run(text):\n    return text\n"
    )
    with pytest.raises(InputError) as info:
        load_callable("config_qq.py:run", base_dir=tmp_path)
    assert info.value.message == (
        "python target 'config_qq.py:run': importing it raised KeyError: 'AGENT_KEY_QQ' "
        f"(at {path}, line 2)"
    )


def test_a_missing_function_names_the_file_and_what_is_close(tmp_path):
    # It named the module's private name: "module '_agenticlens_frames_target_bot_…' has
    # no attribute 'answr'".
    (tmp_path / "bot.py").write_text("def answer(text):\n    return text\n")
    with pytest.raises(InputError) as info:
        load_callable("bot.py:answr", base_dir=tmp_path)
    assert info.value.message == (
        "python target 'bot.py:answr': bot.py has no attribute 'answr' (did you mean 'answer'?)"
    )


def test_case_keyword_is_passed_only_when_accepted():
    seen = {}

    def with_case(text, case):
        seen["case"] = case
        return text

    assert _call(PythonTarget(with_case, timeout_seconds=1)) == {"q": "hi"}
    assert seen["case"] == CASE and seen["case"] is not CASE  # its own copy
    assert _call(PythonTarget(lambda text: text["q"], timeout_seconds=1)) == "hi"
    assert accepts_keyword(lambda text, **kw: 0, "case")
    assert not accepts_keyword(lambda text, *, other=1: 0, "case")


def test_each_call_gets_its_own_copy_of_the_input():
    def mutate(text):
        text["q"] += "!"
        return text["q"]

    target = PythonTarget(mutate, timeout_seconds=1)
    assert [_call(target), _call(target)] == ["hi!", "hi!"]
    assert CASE.input == {"q": "hi"}


def test_a_target_that_changes_its_case_changes_no_later_call():
    # With ``case=`` the target got the run's own CaseSpec: writing case.input["q"] changed
    # the input of every later call, other variants' too (and its expectations could be
    # changed the same way, which score every attempt).
    case = CaseSpec(
        id="c1", name="one", index=0, input={"q": "hi"}, expected_tool_arguments={"t": {"a": 1}}
    )

    def meddle(text, case):
        seen = (case.input["q"], case.expected_tool_arguments["t"]["a"])
        case.input["q"] = "mutated"
        case.expected_tool_arguments["t"]["a"] = 2
        return seen

    target = PythonTarget(meddle, timeout_seconds=1)
    assert [_call(target, case), _call(target, case)] == [("hi", 1), ("hi", 1)]
    assert case.input == {"q": "hi"} and case.expected_tool_arguments == {"t": {"a": 1}}


def test_failures_are_classified():
    def boom(text):
        raise KeyError("k")

    def own_timeout(text):
        raise TimeoutError("upstream model timed out")

    def exits(text):
        raise SystemExit(3)

    with pytest.raises(TargetFailure) as info:
        _call(PythonTarget(boom, timeout_seconds=1))
    assert (info.value.kind, info.value.message) == ("error", "KeyError: 'k'")
    with pytest.raises(TargetFailure) as info:
        _call(PythonTarget(own_timeout, timeout_seconds=1))
    # A target's own TimeoutError counts as timed out (AgenticLens' rule), with its message.
    assert (info.value.kind, info.value.message) == (
        "timeout",
        "TimeoutError: upstream model timed out",
    )
    with pytest.raises(TargetFailure) as info:  # SystemExit must not end the run
        _call(PythonTarget(exits, timeout_seconds=1))
    assert info.value.message == "SystemExit: 3"


def test_sync_function_returning_a_coroutine_is_awaited():
    async def inner(text):
        return "async " + text["q"]

    assert _call(PythonTarget(lambda text: inner(text), timeout_seconds=1)) == "async hi"


def test_a_full_pool_times_calls_out_in_the_queue_without_new_threads():
    release = threading.Event()

    def stuck(text):
        release.wait(5)
        return "late"

    target = PythonTarget(stuck, timeout_seconds=0.05, threads=2, name="stuck-qq")

    async def many():
        return await asyncio.gather(*(target.call(CASE) for _ in range(5)), return_exceptions=True)

    try:
        outcomes = asyncio.run(many())
        assert all(isinstance(o, TargetFailure) and o.kind == "timeout" for o in outcomes)
        never_started = [o for o in outcomes if "never started" in o.message]
        assert len(never_started) == 3  # two ran on the two threads; three never started
        assert target.pool.threads == 2
    finally:
        release.set()
        target.close()
    deadline = time.monotonic() + 5
    while any(t.name.startswith("stuck-qq") for t in threading.enumerate()):
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_daemon_pool_reuses_idle_threads():
    pool = DaemonPool(4, name="reuse-qq")
    for i in range(20):
        assert pool.submit(lambda x: x * 2, i).result(timeout=5) == 2 * i
    assert pool.threads == 1
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(print)


def test_deadlines_fire_in_order_never_early_and_only_for_calls_still_running():
    # Twelve calls with one timeout, started 1 ms apart; every third ends before its
    # deadline. Expected by a plain loop over the same choices: the others, in order.
    # The timeout is long beside the loop that starts them: with 20 ms, a loaded machine
    # took longer than that to start all twelve, and the first fired before its call
    # "ended" (the test failed on load, not on the code).
    fired: list[tuple[int, float, float]] = []
    timeout = 0.5

    async def scenario():
        loop = asyncio.get_running_loop()
        watch = _deadlines(loop, timeout)
        entries = []
        for i in range(12):
            deadline = loop.time() + timeout
            entries.append(
                watch.add(
                    deadline, lambda a: fired.append((a[0], a[1], loop.time())), (i, deadline)
                )
            )
            await asyncio.sleep(0.001)
        for i in range(0, 12, 3):
            watch.discard(entries[i])
        while len(fired) < 8:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.03)  # nothing else fires later

    asyncio.run(scenario())
    expected = [i for i in range(12) if i % 3 != 0]
    assert [i for i, _, _ in fired] == expected
    assert all(at >= deadline for _, deadline, at in fired)


def test_deadlines_drop_the_entries_of_calls_that_ended_long_ago():
    async def scenario():
        loop = asyncio.get_running_loop()
        watch = _deadlines(loop, 3600.0)
        for _ in range(5000):
            watch.discard(watch.add(loop.time() + 3600.0, print, None))
        # bounded by twice the live calls plus a constant, not by the calls made
        return len(watch._entries)

    assert asyncio.run(scenario()) <= 1025


def test_an_async_target_that_blocks_its_loop_times_out_without_holding_the_run():
    release = threading.Event()

    async def blocks(text):
        release.wait(5)  # blocks the target's own loop, not the caller's
        return {"output": "late"}

    target = PythonTarget(blocks, timeout_seconds=0.05, name="blocks-qq")

    async def run():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        running = asyncio.create_task(ticker())
        try:
            outcomes = await asyncio.gather(
                *(target.call(CASE) for _ in range(3)), return_exceptions=True
            )
        finally:
            running.cancel()
        return outcomes, ticks

    try:
        outcomes, ticks = asyncio.run(run())
    finally:
        release.set()
        target.close()
    assert all(isinstance(o, TargetFailure) and o.kind == "timeout" for o in outcomes)
    # the caller's loop kept turning while the target's loop was blocked
    assert ticks > 0


def test_a_file_target_imports_the_modules_beside_it(tmp_path, monkeypatch):
    # As `python agent/bot.py` does; it was refused: "No module named 'helpers_qq'".
    monkeypatch.setattr(sys, "path", list(sys.path))  # the folder added is taken out after
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "helpers_qq.py").write_text("def shout(text):\n    return text + '!'\n")
    (tmp_path / "agent" / "later_qq.py").write_text("SUFFIX = '?'\n")
    (tmp_path / "agent" / "bot.py").write_text(
        "from helpers_qq import shout\n\n"
        "def answer(text):\n    import later_qq  # at call time\n"
        "    return shout(text) + later_qq.SUFFIX\n"
    )
    try:
        fn = load_callable("agent/bot.py:answer", base_dir=tmp_path)
        assert fn("hi") == "hi!?"
    finally:
        for name in ("helpers_qq", "later_qq"):
            sys.modules.pop(name, None)


def test_a_target_module_setting_an_interrupt_handler_leaves_the_runs(tmp_path, caplog):
    # `signal.signal(SIGINT, SIG_IGN)` in the module (or an SDK's own handler) made Ctrl-C,
    # and the SIGINT `experiment run` passes on, do nothing: the run went on to the end.
    before = signal.getsignal(signal.SIGINT)
    (tmp_path / "deaf_qq.py").write_text(
        "import signal\n\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n\n"
        "def run(text):\n    return text\n"
    )
    try:
        load_callable("deaf_qq.py:run", base_dir=tmp_path)
        assert signal.getsignal(signal.SIGINT) == before
    finally:
        signal.signal(signal.SIGINT, before)
    assert "python target 'deaf_qq.py:run' set a SIGINT handler when imported" in caplog.text


def test_a_file_written_from_the_working_directory_is_named_with_the_path_to_write(
    tmp_path, monkeypatch
):
    # AgenticLens reads agents/bot.py from the working directory; the refusal named only
    # the manifest's folder's path, which does not exist.
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "bot.py").write_text("def run(text):\n    return text\n")
    (tmp_path / "experiments").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="does not exist") as info:
        load_callable("agents/bot.py:run", base_dir=tmp_path / "experiments")
    assert info.value.hint == (
        "agents/bot.py is in the working directory: a relative path is read from the "
        "manifest's folder; write ../agents/bot.py"
    )


def _sharing(original: CaseSpec, copied: CaseSpec) -> list[tuple[str, str, bool]]:
    """Which fields of ``copied`` are the original's objects, and which are one object."""
    names = list(original.__dict__)
    same = [(n, "original", getattr(copied, n) is getattr(original, n)) for n in names]
    for a in names:
        for b in names:
            if a < b:
                same.append((a, b, getattr(copied, a) is getattr(copied, b)))
    return same


def test_each_calls_copy_of_the_case_is_what_a_deep_copy_makes():
    # The copy a ``case=`` target gets is made field by field; checked against
    # ``copy.deepcopy`` itself: equal, and sharing exactly what a deep copy shares (the
    # strings and tuples of strings), between its fields too.
    import copy

    from agenticlens_frames.formats.model import EvaluatorRef
    from agenticlens_frames.runner.python_target import _copy_case

    shared: dict[str, object] = {}
    cases = [
        CASE,
        CaseSpec(id="c2", name="two", index=1, input="plain text", tags=("a", "b")),
        CaseSpec(
            id="c3",
            name="three",
            index=2,
            input=[{"q": 1}, ("x", [2])],
            expected_contains=("refund",),
            output_json_schema={"type": "object"},
            required_tool_arguments={"t": ("a",)},
            expected_tool_arguments={"t": {"a": [1, 2]}},
            max_latency_ms=5.0,
            evaluators=(EvaluatorRef(name="polite", threshold=0.8, config={"strict": True}),),
            metadata={"owner": {"team": "x"}},
        ),
        # One dict in two fields (empty, and not): a deep copy keeps them one object.
        CaseSpec(id="c4", name="four", index=3, metadata=shared, required_tool_arguments=shared),
        CaseSpec(id="c5", name="five", index=4, input={"k": 1}, metadata={"k": 1}, tags=("t",)),
    ]
    full = {"k": [1]}
    cases.append(CaseSpec(id="c6", name="six", index=5, input=full, metadata={"same": full}))
    for case in cases:
        deep, ours = copy.deepcopy(case), _copy_case(case)
        assert type(ours) is CaseSpec and ours == deep == case
        assert _sharing(case, ours) == _sharing(case, deep), case.id
    ours = _copy_case(cases[-1])
    assert ours.metadata["same"] is ours.input  # one object in the copy, as in the original
    ours.input["k"].append(2)
    assert cases[-1].input == {"k": [1]}


def test_a_withdrawn_pool_call_never_runs_and_a_started_one_cannot_be_withdrawn():
    release, ran = threading.Event(), []
    pool = DaemonPool(1, name="withdraw-qq")
    try:
        first = pool.start(lambda: (ran.append("first"), release.wait(5)))
        deadline = time.monotonic() + 5
        while first:  # taken by the worker once it starts the call
            assert time.monotonic() < deadline
            time.sleep(0.001)
        second = pool.start(ran.append, "second")  # queued: the only thread is busy
        assert DaemonPool.withdraw(second)
        assert not DaemonPool.withdraw(first)
        release.set()
        third = pool.start(ran.append, "third")
        while ran[-1] != "third":
            assert time.monotonic() < deadline
            time.sleep(0.001)
        assert not DaemonPool.withdraw(third)
        assert ran == ["first", "third"] and pool.threads == 1
    finally:
        release.set()
        pool.shutdown()
