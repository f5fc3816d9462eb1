"""Live runs with python targets: statuses, fixes B10/B11, timeouts, order, limits, resume."""

from __future__ import annotations

import asyncio
import importlib.util
import random
import re
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from agenticlens_frames import load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.evaluators import EvaluatorRegistry
from agenticlens_frames.runner import RetryPolicy, run_experiment
from agenticlens_frames.runner.journal import RunFolder
from agenticlens_frames.runner.python_target import SPARE_THREADS, load_callable

from .conftest import SUITE, TARGETS, journal_line, simple_cases, variant

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "support"


def _reference_targets():
    """The fixture module loaded on its own, to compute expected payloads independently."""
    spec = importlib.util.spec_from_file_location("live_targets_reference", TARGETS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(result, variant_id):
    att = result.run.attempts
    return att[att["variant_id"] == variant_id].reset_index(drop=True)


def test_outputs_latency_cost_come_from_the_payloads(write_experiment):
    manifest, suite = write_experiment(
        [
            variant("sync", "answer"),
            variant("async", "answer_async"),
            variant("run", "answer_run_shape"),
        ]
    )
    result = run_experiment(manifest, suite, progress=False, concurrency=3)
    ref = _reference_targets()
    inputs = {c["id"]: c["input"] for c in __import__("yaml").safe_load(SUITE.read_text())["cases"]}
    rows = _rows(result, "sync")
    assert result.complete and (rows["status"] == "ok").all()
    for row in rows.itertuples():
        expected = ref._answer(inputs[row.case_id])
        assert row.output == expected["output"]
        assert row.latency_ms == expected["trace"]["total_latency_ms"]
        assert row.cost_usd == expected["trace"]["estimated_cost_usd"]
        assert row.target_attempts == 1
    async_rows = _rows(result, "async")
    assert async_rows["output"].str.endswith("(async): refund parcel ok").all()
    assert set(async_rows["tools"]) == {"search,reply"}
    # Run-shaped traces: latency from the timestamps, cost = sum of span costs.
    run_rows = _rows(result, "run")
    text = inputs["c8"]  # "short": 5 characters -> completed 08:00:00.005
    row = run_rows[(run_rows["case_id"] == "c8") & (run_rows["trial"] == 1)].iloc[0]
    assert row.latency_ms == pytest.approx(5.0)
    assert row.cost_usd == pytest.approx(0.0003 * len(text) + 0.001)
    assert row.trace_shape == "run"


def test_function_without_case_parameter_is_called_with_the_input_alone(write_experiment):
    # B10: AgenticLens calls fn(input, case=...) and fails every case with a TypeError.
    manifest, suite = write_experiment([variant("plain", "no_case"), variant("full", "answer")])
    result = run_experiment(manifest, suite, progress=False)
    plain, full = _rows(result, "plain"), _rows(result, "full")
    assert (plain["status"] == "ok").all()
    assert plain["output"].tolist() == full["output"].tolist()
    assert plain["passed"].tolist() == full["passed"].tolist()


def test_payload_without_trace_is_scored_with_an_empty_trace(write_experiment):
    # B11: AgenticLens fails the whole trial when a live payload has no trace.
    manifest, suite = write_experiment([variant("notrace", "no_trace")])
    result = run_experiment(manifest, suite, progress=False)
    rows = _rows(result, "notrace")
    assert (result.run.trials.query("variant_id == 'notrace'")["status"] == "succeeded").all()
    assert (rows["status"] == "ok").all()
    # An empty trace recorded no latency: unknown, not 0 ms (fix B3; frames.measured_latency).
    assert rows["latency_ms"].isna().all() and rows["cost_usd"].isna().all()
    checks = result.run.checks
    c1 = checks[(checks["variant_id"] == "notrace") & (checks["case_id"] == "c1")]
    # c1: "refund" is in the output, but no tool was called in an empty trace.
    assert dict(zip(c1["name"], c1["passed"], strict=True)) == {
        "contains:refund": True,
        "required_tool:lookup_order": False,
    }


def test_file_targets_resolve_against_the_manifest_folder(tmp_path, monkeypatch):
    # B10: AgenticLens resolves `dir/file.py:fn` against the working directory.
    folder = tmp_path / "experiment"
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "bot.py").write_text(TARGETS.read_text())
    manifest = folder / "manifest.yaml"
    manifest.write_text(
        __import__("yaml").safe_dump(
            {
                "name": "rel",
                "version": "1",
                "baseline_variant_id": "a",
                "trial_count": 1,
                "variants": [
                    {"id": v, "name": v, "target_kind": "python", "target": "agents/bot.py:answer"}
                    for v in "abc"
                ],
            }
        )
    )
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    result = run_experiment(Path("../experiment/manifest.yaml"), SUITE, progress=False)
    assert result.complete and (result.run.attempts["status"] == "ok").all()


def test_the_console_and_page_say_which_attempts_the_target_never_answered(write_experiment):
    """A live run's target errors count as failed cases in the pass rates and verdicts;
    the console and the page say how many per variant and why (they said nothing, so an
    outage read as the agent's quality)."""
    import io

    from rich.console import Console

    from agenticlens_frames import analyze
    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.html import render_html

    manifest, suite = write_experiment([variant("raising", "raises_on_boom")])
    analysis = analyze(run_experiment(manifest, suite, progress=False).run, frontier_n_resamples=0)
    out = io.StringIO()
    print_summary(analysis, Console(file=out, width=400, soft_wrap=True))
    expected = (
        "raising: 2 of 16 attempts got no answer from the target (2 target_error, first: "
        "ValueError: cannot answer case c5). They count as failed cases"
    )
    assert expected in out.getvalue()
    assert expected in render_html(analysis)
    assert "filler1: " not in out.getvalue()  # variants whose target always answered


def test_a_failed_gate_names_the_attempts_the_target_never_answered(write_experiment):
    """An outage of the candidate's target reads as a regression: the gate's message (what
    a CI log shows) now says how many attempts got no answer, beside the verdict."""
    import os
    import subprocess
    import sys

    manifest, suite = write_experiment(
        [variant("plain", "answer"), variant("raising", "raises_on_boom")]
    )
    done = subprocess.run(
        [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run", str(manifest),
         str(suite), "-q", "--save", str(manifest.parent / "r.json"), "--fail-on-regression",
         "--regression-rule", "compat"],
        capture_output=True, text=True, timeout=180,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    message = " ".join(done.stderr.split())
    message = message[message.index("Regression against the baseline") :]
    assert message.startswith("Regression against the baseline (AgenticLens rule, uncertainty ")
    assert "note: raising: 2 of 16 attempts got no answer from the target (2 target_error" in (
        message
    )


def test_a_raising_target_fails_only_its_case(write_experiment):
    manifest, suite = write_experiment([variant("raising", "raises_on_boom")])
    result = run_experiment(manifest, suite, progress=False)
    rows = _rows(result, "raising")
    failed = rows[rows["case_id"] == "c5"]
    assert (failed["status"] == "target_error").all()
    assert (failed["error"] == "ValueError: cannot answer case c5").all()
    assert (rows[rows["case_id"] != "c5"]["status"] == "ok").all()
    checks = result.run.checks
    c5 = checks[(checks["variant_id"] == "raising") & (checks["case_id"] == "c5")]
    # The package's single target_call score (spec §6, "live failure" template).
    assert c5["name"].unique().tolist() == ["target_call"]
    assert (
        c5["explanation"]
        == "Live target failed after 1 attempt(s): ValueError: cannot answer case c5"
    ).all()


def test_invalid_payload_fails_the_trial_and_later_cases_are_not_called(
    write_experiment, tmp_path, monkeypatch
):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("LIVE_CALL_LOG", str(log))
    manifest, suite = write_experiment([variant("listy", "list_on_list")], trial_count=2)
    result = run_experiment(manifest, suite, progress=False)
    trials = result.run.trials.query("variant_id == 'listy'")
    assert (trials["status"] == "failed").all()
    assert (
        trials["error_message"]
        == "live target returned list for case 'c6'; expected an object with output and trace"
    ).all()
    assert (_rows(result, "listy")["status"] == "trial_failed").all()
    called = Counter(line.split()[1] for line in log.read_text().splitlines())
    # c6 is invalid: c7 and c8 are never called, as in AgenticLens (max_workers 1).
    assert called == {f"c{i}": 2 for i in range(1, 7)}


def test_invalid_payload_can_fail_only_its_case(write_experiment):
    manifest, suite = write_experiment([variant("listy", "list_on_list")])
    result = run_experiment(manifest, suite, progress=False, invalid_payload="case")
    rows = _rows(result, "listy")
    assert (result.run.trials.query("variant_id == 'listy'")["status"] == "succeeded").all()
    c6 = rows[rows["case_id"] == "c6"]
    assert (c6["status"] == "target_error").all()
    assert c6["error"].str.startswith("live target returned list for case 'c6'").all()
    assert (rows[rows["case_id"] != "c6"]["status"] == "ok").all()


def test_a_run_folder_keeps_the_invalid_payload_mode_it_was_started_with(
    write_experiment, tmp_path
):
    # Resumed (or read) without --invalid-payload case, a folder run with it turned its
    # failed case into failed trials: the pass rate fell to 0 with no call made.
    manifest, suite = write_experiment([variant("listy", "list_on_list")])
    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, progress=False, invalid_payload="case", run_dir=run_dir)
    rate = first.run.attempts["passed"].mean()
    for attempt in (
        lambda: run_experiment(manifest, suite, progress=False, run_dir=run_dir),
        lambda: load_experiment(manifest, suite, run_dir=run_dir),
    ):
        with pytest.raises(InputError, match="started with --invalid-payload case, now trial"):
            attempt()
    again = load_experiment(manifest, suite, run_dir=run_dir, invalid_payload="case")
    assert again.attempts["passed"].mean() == rate > 0


def test_non_string_output_is_an_invalid_payload(write_experiment):
    manifest, suite = write_experiment([variant("null", "null_output")], trial_count=1)
    result = run_experiment(manifest, suite, progress=False)
    (message,) = result.run.trials.query("variant_id == 'null'")["error_message"]
    assert message == "live target payload for case 'c1': 'output' must be a string, got null"


def test_a_payload_json_cannot_carry_is_invalid_never_called_again(write_experiment, tmp_path):
    # A tuple key in the trace was recorded as the target's error: "no answer from the
    # target", called again by the retry policy and by rerun_failed (4 calls a case here).
    calls = tmp_path / "calls.txt"
    (tmp_path / "pairs.py").write_text(
        "def answer(text):\n"
        f"    with open({str(calls)!r}, 'a') as log:\n"
        "        log.write(text + '\\n')\n"
        "    return {'output': 'parcel', 'trace': {'metadata': {(1, 2): 'pair'}}}\n"
    )
    manifest, suite = write_experiment(
        [variant("pairs", f"{tmp_path / 'pairs.py'}:answer", retry={"attempts": 3})],
        cases=simple_cases(["a", "b"]),
        trial_count=1,
    )
    run_dir = tmp_path / "run"
    run_experiment(manifest, suite, progress=False, run_dir=run_dir, invalid_payload="case")
    again = run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, invalid_payload="case", rerun_failed=True
    )
    assert calls.read_text().splitlines() == ["a", "b"]
    assert _rows(again, "pairs")["error"].tolist() == [
        f"live target payload for case {case!r} cannot be passed through JSON: TypeError: keys "
        "must be str, int, float, bool or None, not tuple"
        for case in ("c1", "c2")
    ]


def test_a_payload_with_keys_json_writes_alike_is_invalid(write_experiment, tmp_path):
    # {1: ..., "1": ...} in a trace's metadata lost one key in the JSON copy: the run scored
    # a payload other than the target's, without a word.
    (tmp_path / "clash.py").write_text(
        "def answer(text):\n"
        "    return {'output': 'parcel', 'trace': {'metadata': {1: 'int', '1': 'str'}}}\n"
    )
    manifest, suite = write_experiment(
        [variant("clash", f"{tmp_path / 'clash.py'}:answer")],
        cases=simple_cases(["a"]),
        trial_count=1,
    )
    result = run_experiment(manifest, suite, progress=False, invalid_payload="case")
    assert _rows(result, "clash")["error"].tolist() == [
        "live target payload for case 'c1' cannot be passed through JSON: keys 1 and '1' are "
        """both "1" in JSON, in the dict at ['trace']['metadata']"""
    ]


def test_a_huge_or_unreadable_error_is_recorded_short(write_experiment, tmp_path):
    # A 1 MB message went into the journal twice (call and attempt) and into every table.
    (tmp_path / "loud.py").write_text(
        "def huge(text):\n    raise ValueError('x' * 1_000_000)\n\n"
        "class Unreadable(Exception):\n    def __str__(self):\n        raise RuntimeError\n\n"
        "def unreadable(text):\n    raise Unreadable()\n"
    )
    manifest, suite = write_experiment(
        [variant(v, f"{tmp_path / 'loud.py'}:{v}") for v in ("huge", "unreadable")],
        cases=simple_cases(["a"]),
        trial_count=1,
    )
    run_dir = tmp_path / "run"
    result = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    (huge,) = _rows(result, "huge")["error"]
    assert huge.startswith("ValueError: xxx") and huge.endswith("x…") and len(huge) < 10_000
    assert _rows(result, "unreadable")["error"].tolist() == [
        "Unreadable (its message cannot be read: RuntimeError)"
    ]
    assert sum(f.stat().st_size for f in (run_dir / "journal").iterdir()) < 50_000


def test_unimportable_target_is_refused_before_any_call(write_experiment):
    manifest, suite = write_experiment([variant("bad", "no_such_function")])
    with pytest.raises(InputError, match="no attribute 'no_such_function'") as info:
        run_experiment(manifest, suite, progress=False)
    assert info.value.location == "variants[0].target"


@pytest.mark.parametrize(
    ("parameters", "problem"),
    [
        ("text, extra", "fn(input): missing a required argument: 'extra'"),
        ("", "fn(input): too many positional arguments"),
        ("*, text", "fn(input): too many positional arguments"),
        ("case", "fn(input, case=case): multiple values for argument 'case'"),
    ],
)
def test_a_target_whose_parameters_cannot_take_the_call_is_refused_before_any_call(
    write_experiment, tmp_path, parameters, problem
):
    # Every attempt of every trial failed with the same TypeError, the run going to the end.
    calls = tmp_path / "calls.txt"
    body = (
        f"    with open({str(calls)!r}, 'a') as log:\n        log.write('call\\n')\n"
        "    return {'output': 'parcel'}\n"
    )
    (tmp_path / "agent.py").write_text(f"def good(text):\n{body}def bad({parameters}):\n{body}")
    manifest, suite = write_experiment(
        [
            variant("good", f"{tmp_path / 'agent.py'}:good"),
            variant("bad", f"{tmp_path}/agent.py:bad"),
        ]
    )
    with pytest.raises(InputError, match=f"cannot be called as {re.escape(problem)}") as info:
        run_experiment(manifest, suite, progress=False)
    assert info.value.location == "variants[1].target"
    assert not calls.exists()


def test_guard_rails_refuse_a_live_run_before_any_call(write_experiment, tmp_path, monkeypatch):
    """A manifest whose paired comparisons exceed their limits is refused before the first
    call (it used to run every attempt and be refused only by analyze)."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("LIVE_CALL_LOG", str(log))
    variants = [variant("a", "logged"), variant("b", "logged"), variant("c", "logged")]
    limits = {"correction": "holm", "limits": {"max_case_scores": 100}}
    manifest, suite = write_experiment(variants, comparisons=limits)
    with pytest.raises(InputError, match="case-scores exceed the limit of 100") as info:
        run_experiment(manifest, suite, progress=False)
    assert info.value.location == "comparisons.limits.max_case_scores"
    assert not log.exists()
    # the caller's settings are checked too (the command line passes what it resolved)
    with pytest.raises(InputError, match="fixed correction = 'holm'"):
        run_experiment(manifest, suite, progress=False, comparisons={"correction": "none"})
    lifted = {"correction": "holm", "limits": {"allow_large": True}}
    assert run_experiment(manifest, suite, progress=False, comparisons=lifted).complete
    assert log.exists()


def test_a_pass_k_beyond_the_trials_is_refused_before_any_call(
    write_experiment, tmp_path, monkeypatch
):
    """comparisons.evaluators {reliability: pass_hat_9} on a run of fewer trials ran every
    call, then dropped every reliability row "(a failed trial)"; it is refused up front."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("LIVE_CALL_LOG", str(log))
    variants = [variant("a", "logged"), variant("b", "logged"), variant("c", "logged")]
    declared = {"correction": "holm", "evaluators": {"reliability": "pass_hat_9"}}
    manifest, suite = write_experiment(variants, comparisons=declared)
    with pytest.raises(InputError, match=r"'pass_hat_9' needs 9 attempts per case") as info:
        run_experiment(manifest, suite, progress=False)
    assert info.value.location == "comparisons.evaluators.reliability"
    assert str(info.value.file) == str(manifest)
    assert not log.exists()


def _target_threads(prefix: str) -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith(prefix))


def test_sync_timeouts_never_accumulate_threads(write_experiment, monkeypatch):
    monkeypatch.setenv("LIVE_SLOW_SECONDS", "0.6")
    cases = simple_cases([f"slow {i}" for i in range(4)])
    manifest, suite = write_experiment(
        [variant("sleepy", "sleepy", timeout_seconds=0.1)], cases=cases, trial_count=2
    )
    result = run_experiment(manifest, suite, progress=False)
    rows = _rows(result, "sleepy")
    assert (rows["status"] == "timed_out").all()
    assert (
        rows["error"].iloc[0] == "TimeoutError: Python target timed out after 0.1 s for case 'c1'"
    )
    # 8 timed-out calls, never more threads than the pool's size (max_workers + spares).
    assert _target_threads("target-sleepy") <= 1 + SPARE_THREADS
    deadline = time.monotonic() + 5
    while _target_threads("target-sleepy") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _target_threads("target-sleepy") == 0


def test_async_timeouts_cancel_the_coroutine(write_experiment, monkeypatch):
    monkeypatch.setenv("LIVE_SLOW_SECONDS", "5")
    state = load_callable(f"{TARGETS}:sleepy_async").__globals__["STATE"]
    before = dict(state)
    cases = simple_cases(["slow a", "fast b", "slow c"])
    manifest, suite = write_experiment(
        [variant("asleep", "sleepy_async", timeout_seconds=0.1)], cases=cases, trial_count=2
    )
    result = run_experiment(manifest, suite, progress=False, concurrency=4)
    rows = _rows(result, "asleep")
    assert rows.groupby("case_id", observed=True)["status"].first().to_dict() == {
        "c1": "timed_out",
        "c2": "ok",
        "c3": "timed_out",
    }
    # The four slow calls were cancelled, not left running.
    assert state["cancelled"] - before["cancelled"] == 4
    assert state["finished"] - before["finished"] == 6


def test_async_targets_share_objects_bound_to_their_loop(write_experiment, tmp_path):
    # A client or lock made by the first call, at module level, as agent code keeps them:
    # with a loop per target every call of the second and third variants failed ("Task got
    # Future attached to a different loop").
    calls = tmp_path / "calls.txt"
    (tmp_path / "agents.py").write_text(
        "import asyncio\n\nLOOP = []\n\n"
        "async def small(text):\n"
        f"    with open({str(calls)!r}, 'a') as log:\n"
        "        log.write(text + '\\n')\n"
        "    if not LOOP:\n        LOOP.append(asyncio.get_running_loop())\n"
        "    reply = LOOP[0].create_future()\n"
        "    LOOP[0].call_soon(reply.set_result, 'parcel')\n"
        "    return {'output': await reply}\n\n"
        "large = huge = small\n"
    )
    manifest, suite = write_experiment(
        [variant(v, f"{tmp_path / 'agents.py'}:{v}") for v in ("small", "large", "huge")],
        cases=simple_cases(["a", "b", "c"]),
        trial_count=2,
    )
    result = run_experiment(manifest, suite, progress=False, concurrency=4)
    assert len(calls.read_text().splitlines()) == 3 * 3 * 2
    assert result.run.attempts["status"].tolist() == ["ok"] * 18


def test_a_target_changing_the_working_directory_moves_no_output(
    write_experiment, tmp_path, monkeypatch, caplog
):
    # The tables went to the target's folder, and the command line then could not read
    # its manifest again ("manifest.yaml: No such file or directory", exit 1, no report).
    elsewhere, calls = tmp_path / "elsewhere", tmp_path / "calls.txt"
    elsewhere.mkdir()
    (tmp_path / "mover.py").write_text(
        "import os\n\ndef answer(text):\n"
        f"    with open({str(calls)!r}, 'a') as log:\n        log.write(text + '\\n')\n"
        f"    os.chdir({str(elsewhere)!r})\n    return {{'output': 'parcel'}}\n"
    )
    manifest, suite = write_experiment(
        [variant("mover", f"{tmp_path / 'mover.py'}:answer")], cases=simple_cases(["a", "b"])
    )
    monkeypatch.chdir(tmp_path)
    result = run_experiment(manifest.name, suite, progress=False, run_dir="run")
    assert Path.cwd() == tmp_path
    assert "a python target changed the working directory" in caplog.text
    assert not any(elsewhere.iterdir())
    tables = load_experiment(manifest, suite, run_dir=tmp_path / "run").attempts
    mover = tables[tables["variant_id"] == "mover"]
    assert len(mover) == len(calls.read_text().splitlines()) == len(_rows(result, "mover")) == 4


def test_calls_wait_for_a_journal_that_fell_behind(write_experiment, tmp_path):
    # A slow evaluator let the journal's writer fall behind the calls, and a crash lost
    # every answered attempt not on disk yet (565 of 600 in an audit): all called again.
    # Each call counts, from the journal on disk, the calls made before it and not
    # journaled: at most those in flight and four times as many waiting for the disk.
    run_dir, gaps = tmp_path / "run", tmp_path / "gaps.txt"
    (tmp_path / "fast.py").write_text(
        "import json, pathlib\n\n"
        f"JOURNAL = pathlib.Path({str(run_dir / 'journal')!r})\nCALLS = [0]\n\n"
        "def on_disk():\n    count = 0\n"
        "    for segment in JOURNAL.glob('*.jsonl'):\n"
        "        for line in segment.read_text().splitlines():\n"
        "            try:\n                count += json.loads(line)['type'] == 'attempt'\n"
        "            except ValueError:  # a line being written\n                pass\n"
        "    return count\n\n"
        "def answer(text):\n"
        f"    with open({str(gaps)!r}, 'a') as log:\n"
        "        log.write(f'{CALLS[0] - on_disk()}\\n')\n"
        "    CALLS[0] += 1\n    return {'output': 'parcel'}\n"
    )
    registry = EvaluatorRegistry()
    registry.register("slow", lambda *args: time.sleep(0.01) or 1.0, version="1")
    cases = [{**case, "evaluators": [{"name": "slow"}]} for case in simple_cases(["a"] * 30)]
    manifest, suite = write_experiment(
        [variant(v, f"{tmp_path / 'fast.py'}:answer") for v in ("one", "two", "three")],
        cases=cases,
        trial_count=1,
        max_workers=2,
    )
    result = run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, evaluators=registry, concurrency=2
    )
    behind = [int(line) for line in gaps.read_text().splitlines()]
    assert len(behind) == len(result.run.attempts) == 90
    assert max(behind) <= 2 + 4 * 2


def test_calls_follow_the_package_order_at_concurrency_one(write_experiment, tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("LIVE_CALL_LOG", str(log))
    variants = [variant("a", "logged"), variant("b", "logged_async"), variant("c", "logged_plain")]
    manifest, suite = write_experiment(variants, trial_count=3, random_seed=5)
    run_experiment(manifest, suite, progress=False)
    # Independently: the package shuffles [(a,1),(a,2),(a,3),(b,1),...] with Random(seed).
    work = [(v, t) for v in "abc" for t in (1, 2, 3)]
    random.Random(5).shuffle(work)
    tags = {"a": "logged", "b": "logged_async", "c": "logged_plain"}
    cases = [f"c{i}" for i in range(1, 9)]
    expected = [f"{tags[v]} {c}" for v, _ in work for c in cases]
    assert log.read_text().splitlines() == expected


def test_global_and_per_variant_limits_across_cases_and_trials(write_experiment):
    tracker = load_callable(f"{TARGETS}:answer").__globals__["TRACKER"]
    tracker.reset()
    variants = [variant("a", "tracked_a"), variant("b", "tracked_b"), variant("c", "tracked_c")]
    manifest, suite = write_experiment(variants, trial_count=2)
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        concurrency=15,
        variant_concurrency={"a": 2, "b": 12, "c": 1},
    )
    assert result.complete
    assert tracker.peak["a"] == 2
    assert tracker.peak["c"] == 1
    # 12 > 8 cases: variant b ran its two trials at the same time (the package never does).
    assert tracker.peak["b"] == 12
    assert tracker.total_peak == 15


def test_a_freed_slot_runs_the_next_item_in_its_own_task(write_experiment, monkeypatch):
    # 3 variants x 2 trials x 8 cases = 48 attempts at 4 calls in flight: four tasks
    # carry every attempt (one per slot), where one task per attempt made 48.
    from agenticlens_frames.runner import scheduler

    made: Counter[str] = Counter()
    create_task = asyncio.create_task

    def counting(coroutine, **kwargs):
        made[coroutine.__qualname__] += 1
        return create_task(coroutine, **kwargs)

    monkeypatch.setattr(scheduler.asyncio, "create_task", counting)
    # A journal writer more than 16 records behind (a loaded machine) holds every start,
    # so a task with no next item ends and a new one starts when the writer catches up:
    # at most one more task per hold (one CI run under load made 5).
    holds = Counter()
    behind = scheduler.Scheduler._journal_behind

    def counted_behind(self):
        held = behind(self)
        holds[held] += 1
        return held

    monkeypatch.setattr(scheduler.Scheduler, "_journal_behind", counted_behind)
    variants = [variant("a", "answer"), variant("b", "answer_async"), variant("c", "answer")]
    manifest, suite = write_experiment(variants, trial_count=2, max_workers=4)
    result = run_experiment(manifest, suite, progress=False, concurrency=4)
    assert result.complete and len(result.run.attempts) == 48
    assert (result.run.attempts["status"] == "ok").all()
    assert 4 <= made["Scheduler._attempt"] <= 4 + holds[True], (made, holds)


def test_max_workers_is_the_default_limit(write_experiment):
    tracker = load_callable(f"{TARGETS}:answer").__globals__["TRACKER"]
    tracker.reset()
    variants = [variant("a", "tracked_a"), variant("b", "tracked_b"), variant("c", "tracked_c")]
    manifest, suite = write_experiment(variants, trial_count=2, max_workers=2)
    run_experiment(manifest, suite, progress=False)
    assert max(tracker.peak.values()) == 2
    assert tracker.total_peak == 2


def test_bounded_runs_resume_without_calling_done_attempts_again(
    write_experiment, tmp_path, monkeypatch
):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("LIVE_CALL_LOG", str(log))
    variants = [variant("a", "logged"), variant("b", "logged_async"), variant("c", "logged_plain")]
    manifest, suite = write_experiment(variants, trial_count=2, random_seed=3)
    total = 3 * 2 * 8
    run_dir = tmp_path / "run"

    first = run_experiment(
        manifest, suite, progress=False, run_dir=run_dir, max_attempts=5, concurrency=2
    )
    assert (first.remaining, first.attempted) == (total - 5, 5)
    assert len(log.read_text().splitlines()) == 5
    second = run_experiment(manifest, suite, progress=False, run_dir=run_dir, max_attempts=20)
    assert second.remaining == total - 25
    last = run_experiment(manifest, suite, progress=False, run_dir=run_dir, concurrency=4)
    assert last.complete and last.attempted == total - 25
    # Every (variant, trial, case) was called exactly once over the three sessions.
    assert Counter(log.read_text().splitlines()) == {
        f"{tag} c{i}": 2 for tag in ("logged", "logged_async", "logged_plain") for i in range(1, 9)
    }
    assert (last.calls.groupby(["variant_id", "trial", "case_id"]).size() == 1).all()

    log.write_text("")
    fresh = run_experiment(manifest, suite, progress=False)
    for table in ("attempts", "checks", "trials", "variants", "cases"):
        pd.testing.assert_frame_equal(getattr(last.run, table), getattr(fresh.run, table))
    # Partial runs hold only finished trials: every trial listed is complete.
    assert len(first.run.attempts) == 8 * len(first.run.trials)


#: Targets that log, as each call starts, how many other calls are in flight and how many
#: attempts' records are on disk.
WATCHED = """
import json, os, threading, time
from pathlib import Path

LOCK = threading.Lock()
RUNNING = [0]


def _on_disk():
    lines = (
        line
        for segment in Path(os.environ["WATCH_RUN"], "journal").glob("*.jsonl")
        for line in segment.read_text().splitlines()
    )
    return sum('"type":"attempt"' in line for line in lines)


def _call(tag, case):
    with LOCK:
        others = RUNNING[0]
        RUNNING[0] += 1
    try:
        with open(os.environ["WATCH_LOG"], "a") as f:
            f.write(json.dumps([tag, case.id, others, _on_disk()]) + "\\n")
        word = "parcel" if (len(tag) + int(case.id[1:])) % 3 else "nothing"
        # Long enough for the calls after the suspects to overlap, however the machine's
        # load schedules the threads (without it one run in many saw none in parallel).
        time.sleep(0.02)
        return {"output": f"{tag}: {word}", "trace": {"total_latency_ms": 5.0}}
    finally:
        with LOCK:
            RUNNING[0] -= 1


def a(text, case=None):
    return _call("a", case)


def b(text, case=None):
    return _call("bb", case)


async def c(text, case=None):
    return _call("ccc", case)
"""


def test_suspects_are_called_first_each_alone_until_its_record_is_on_disk(
    write_experiment, tmp_path, monkeypatch
):
    """Attempts with a supervisor's `suspect` record (in flight with others when the run's
    process ended) are called before any other, one at a time, each only once the one
    before is journaled; the results are those of an uninterrupted run."""
    import json

    module = tmp_path / "watched.py"
    module.write_text(WATCHED)
    log, run_dir = tmp_path / "watch.log", tmp_path / "run"
    monkeypatch.setenv("WATCH_LOG", str(log))
    monkeypatch.setenv("WATCH_RUN", str(run_dir))
    variants = [variant(v, f"{module}:{v}") for v in "abc"]
    manifest, suite = write_experiment(variants, trial_count=2, random_seed=3, max_workers=8)
    first = run_experiment(manifest, suite, progress=False, run_dir=run_dir, max_attempts=6)
    assert first.attempted == 6
    calls = first.calls
    done = set(zip(calls["variant_id"], calls["trial"].tolist(), calls["case_id"], strict=True))
    pending = sorted({(v, t, f"c{i}") for v in "abc" for t in (1, 2) for i in range(1, 9)} - done)
    suspects = [pending[-1], pending[0], pending[len(pending) // 2]]
    records = [
        {"type": "suspect", "variant": v, "trial": t, "case": c, "error": "killed"}
        for v, t, c in suspects
    ]
    # As the supervisor writes them: one line each, with its checksum.
    (run_dir / "journal" / "000002.jsonl").write_text("".join(map(journal_line, records)))
    log.write_text("")
    resumed = run_experiment(manifest, suite, progress=False, run_dir=run_dir, concurrency=8)
    assert resumed.complete and resumed.attempted == 48 - 6
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 48 - 6  # each attempt called once over both sessions
    tags = {"a": "a", "b": "bb", "c": "ccc"}
    assert sorted(call[:2] for call in calls[:3]) == sorted([tags[v], c] for v, _, c in suspects)
    # Alone, and each after the one before is on disk; then the rest, in parallel.
    assert [call[2:] for call in calls[:3]] == [[0, 6], [0, 7], [0, 8]]
    assert min(call[3] for call in calls[3:]) == 9
    assert max(call[2] for call in calls[3:]) > 0

    fresh = run_experiment(manifest, suite, progress=False, concurrency=8)
    for table in ("attempts", "checks", "trials", "variants", "cases"):
        pd.testing.assert_frame_equal(getattr(resumed.run, table), getattr(fresh.run, table))


def test_run_folder_refuses_another_manifest_or_suite(write_experiment, tmp_path):
    manifest, suite = write_experiment([variant("a", "answer")])
    run_dir = tmp_path / "run"
    run_experiment(manifest, suite, progress=False, run_dir=run_dir, max_attempts=3)
    other_suite = tmp_path / "other-suite.yaml"
    other_suite.write_text(SUITE.read_text().replace("refund order 17", "refund order 18"))
    with pytest.raises(InputError, match="different suite"):
        run_experiment(manifest, other_suite, progress=False, run_dir=run_dir)
    slower, _ = write_experiment(
        [variant("a", "answer", timeout_seconds=5)], name="manifest-timeout.yaml"
    )
    with pytest.raises(InputError, match="different manifest"):
        run_experiment(slower, suite, progress=False, run_dir=run_dir)
    # Speed knobs are not part of the identity: resuming with more workers is fine.
    faster, _ = write_experiment([variant("a", "answer")], name="manifest-fast.yaml", max_workers=4)
    assert run_experiment(faster, suite, progress=False, run_dir=run_dir).complete


def test_run_folder_in_use_is_refused(write_experiment, tmp_path):
    manifest, suite = write_experiment([variant("a", "answer")])
    run_dir = tmp_path / "run"
    run_experiment(manifest, suite, progress=False, run_dir=run_dir, max_attempts=1)
    import json

    identity = json.loads((run_dir / "run.json").read_text())
    identity.pop("format"), identity.pop("created_at")
    holder = RunFolder(run_dir, identity)
    try:
        with pytest.raises(InputError, match="another process is running"):
            run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    finally:
        holder.close()


def test_retry_policy_from_python(write_experiment, tmp_path, monkeypatch):
    monkeypatch.setenv("LIVE_SLOW_SECONDS", "0.3")
    cases = simple_cases(["slow one", "fast two"])
    manifest, suite = write_experiment(
        [variant("s", "sleepy", timeout_seconds=0.05)], cases=cases, trial_count=1
    )
    policy = RetryPolicy(attempts=3, backoff_seconds=0.01, retry_on=frozenset({"timeout"}))
    result = run_experiment(manifest, suite, progress=False, retry={"s": policy}, concurrency=2)
    rows = _rows(result, "s")
    assert rows.set_index("case_id")["target_attempts"].to_dict() == {"c1": 3, "c2": 1}
    calls = result.calls[result.calls["variant_id"] == "s"]
    assert calls[calls["case_id"] == "c1"]["outcome"].tolist() == ["timeout"] * 3
    checks = result.run.checks
    why = checks[(checks["variant_id"] == "s") & (checks["case_id"] == "c1")]["explanation"]
    assert why.iloc[0].startswith("Live target timed out after 3 attempt(s): TimeoutError")


def test_unknown_variant_in_overrides_is_refused(write_experiment):
    manifest, suite = write_experiment([variant("a", "answer")])
    with pytest.raises(InputError, match="unknown live variant id"):
        run_experiment(manifest, suite, progress=False, retry={"zzz": RetryPolicy()})
    with pytest.raises(InputError, match="unknown live variant id"):
        run_experiment(manifest, suite, progress=False, variant_concurrency={"zzz": 2})


def test_recorded_and_live_variants_mix(tmp_path):
    text = (EXAMPLE / "manifest.yaml").read_text()
    import yaml

    doc = yaml.safe_load(text)
    for v in doc["variants"]:
        v["target"] = str(EXAMPLE / v["target"])
    live_id = doc["variants"][-1]["id"]
    doc["variants"][-1].update(target_kind="python", target=f"{TARGETS}:answer")
    manifest = tmp_path / "mixed.yaml"
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = run_experiment(manifest, EXAMPLE / "suite.yaml", progress=False, concurrency=2)
    reference = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    recorded_ids = [v["id"] for v in doc["variants"][:-1]]
    ours = result.run.attempts[result.run.attempts["variant_id"].isin(recorded_ids)]
    theirs = reference.attempts[reference.attempts["variant_id"].isin(recorded_ids)]
    pd.testing.assert_frame_equal(ours.reset_index(drop=True), theirs.reset_index(drop=True))
    live = _rows(result, live_id)
    assert len(live) == len(result.run.cases) * doc["trial_count"]
    assert (live["status"] == "ok").all()


def test_a_recorded_only_manifest_gives_the_same_tables_as_load_experiment(tmp_path):
    result = run_experiment(
        EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml", progress=False, run_dir=tmp_path / "r"
    )
    reference = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    assert result.complete and result.attempted == 0 and result.calls.empty
    for table in ("attempts", "checks", "trials", "variants", "cases"):
        pd.testing.assert_frame_equal(getattr(result.run, table), getattr(reference, table))


def test_progress_bars_per_experiment_and_variant(write_experiment, capsys, monkeypatch):
    from agenticlens_frames.runner import live

    # The bars of a terminal (captured stderr is not one: it would get plain lines).
    monkeypatch.setattr(live, "wants_log_lines", lambda: False)
    manifest, suite = write_experiment([variant("a", "answer"), variant("b", "answer_async")])
    run_experiment(manifest, suite, progress=True, concurrency=2)
    err = capsys.readouterr().err
    # One bar for the experiment (3 variants x 2 trials x 8 cases), one per variant.
    assert "live-test · 2 in flight: 100%" in err and "48/48" in err
    assert all(f"  {v:<7}: 100%" in err for v in ("a", "b", "filler2"))
    assert "attempt/s" in err


def test_load_experiment_reads_a_live_runs_folder_or_says_how_to_run_it(write_experiment, tmp_path):
    manifest, suite = write_experiment(
        [variant("sync", "answer"), variant("async", "answer_async")], trial_count=2
    )
    with pytest.raises(InputError, match=r"experiment run .*--run-dir DIR`, then load_experiment"):
        load_experiment(manifest, suite)
    run_dir = tmp_path / "run"
    with pytest.raises(InputError, match="no live run was recorded in this folder"):
        load_experiment(manifest, suite, run_dir=run_dir)
    partial = run_experiment(manifest, suite, progress=False, run_dir=run_dir, max_attempts=2)
    with pytest.raises(
        InputError, match=rf"{partial.remaining} attempts? of .*not run yet.*resume"
    ):
        load_experiment(manifest, suite, run_dir=run_dir)
    done = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    loaded = load_experiment(manifest, suite, run_dir=run_dir)  # no target is called
    pd.testing.assert_frame_equal(loaded.attempts, done.run.attempts)
    pd.testing.assert_frame_equal(loaded.checks, done.run.checks)


def test_the_suggested_max_workers_reaches_the_asked_concurrency(write_experiment):
    """The note's max_workers lifts only the variants without a concurrency of their own;
    it once divided by every variant (32 over a=2, b=4 (own), c=2 suggested 11: 26)."""
    import re

    from agenticlens_frames.formats import load_manifest
    from agenticlens_frames.runner.live import concurrency_plan

    variants = [variant("a", "answer"), variant("b", "answer", concurrency=4)]
    variants.append(variant("c", "answer"))
    manifest = load_manifest(write_experiment(variants, max_workers=2)[0])
    limits = {"a": 2, "b": 4, "c": 2}
    for asked in (9, 17, 32, 33):
        effective, note = concurrency_plan(manifest, asked, limits, own={"b"})
        assert effective == 8
        suggested = int(re.search(r"set max_workers: (\d+)", note).group(1))
        assert 4 + 2 * suggested >= asked > 4 + 2 * (suggested - 1)
