"""Work split across forked processes: order, errors, dead workers, when to fork.

Each check runs in a fresh interpreter (the ``isolated`` fixture): forking needs a
process without other Python threads, which earlier tests do not leave.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from agenticlens_frames import _fork
from agenticlens_frames._fork import WORKERS_ENV, run_tasks, worker_count
from agenticlens_frames._supervise import exit_now
from agenticlens_frames.errors import InputError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")


def _order() -> list[tuple[int, int]]:
    assert threading.active_count() == 1
    waited = []
    with _fork.idle_work(lambda: waited.append(os.getpid())):
        results = run_tasks([lambda i=i: (i, os.getpid()) for i in range(7)], workers=3)
    assert waited == [os.getpid()]
    return [(i, int(pid == os.getpid())) for i, pid in results] + [
        (-1, len({pid for _, pid in results}))
    ]


def test_results_come_back_in_task_order_from_several_processes(isolated) -> None:
    out = isolated(_order)
    assert [i for i, _ in out[:-1]] == list(range(7))
    assert out[-1] == (-1, 3)  # three processes took part
    assert [here for _, here in out[:-1]] == [1, 0, 0, 1, 0, 0, 1]  # task i in process i % 3


def _fail(i: int) -> None:
    raise InputError(f"bad {i}", file=f"v{i}.json", location=("trials", i), hint="fix it")


def _first_error() -> tuple[str | None, ...]:
    # task 1 (a child) and task 2 (this process) fail: task 1's error is the one raised
    tasks = [lambda: 0, lambda: _fail(1), lambda: _fail(2), lambda: 3]
    try:
        run_tasks(tasks, workers=2)
    except InputError as exc:
        return exc.file, exc.location, exc.hint, str(exc)
    raise AssertionError("no error raised")


def test_the_first_failing_task_in_order_raises_with_its_details(isolated) -> None:
    assert isolated(_first_error) == (
        "v1.json",
        "trials[1]",
        "fix it",
        "v1.json: trials[1]: bad 1 (fix it)",
    )


def _dead_worker() -> str:
    try:
        run_tasks([lambda: "here", lambda: os._exit(3)], workers=2)
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError("no error raised")


def test_a_worker_that_dies_is_reported_not_waited_for(isolated) -> None:
    message = isolated(_dead_worker)
    assert "exited with status 3" in message and "AGENTICLENS_FRAMES_WORKERS=1" in message


def _unpicklable() -> str:
    try:
        run_tasks([lambda: 1, lambda: threading.Lock()], workers=2)
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError("no error raised")


def test_a_result_that_cannot_be_pickled_is_an_error(isolated) -> None:
    assert "could not send its result back" in isolated(_unpicklable)


def test_one_worker_runs_everything_here() -> None:
    assert run_tasks([os.getpid, os.getpid], workers=1) == [os.getpid()] * 2


def _idle() -> list[object]:
    done: list[tuple[str, int]] = []

    def work(name: str) -> None:
        done.append((name, os.getpid()))
        if name == "broken":
            raise ImportError("no such module")

    out: list[object] = []
    with _fork.idle_work(lambda: work("import")), _fork.idle_work(lambda: work("broken")):
        # Only this process's waiting runs it: a task runs in each process, once.
        results = run_tasks([os.getpid, lambda: (time.sleep(0.2), os.getpid())[1]], workers=2)
        out.append([(name, pid == os.getpid()) for name, pid in done])
        out.append(results[1] != os.getpid())
        run_tasks([os.getpid, os.getpid], workers=2)  # already done: not again
        out.append(len(done))
    with _fork.idle_work(lambda: work("unused")):
        run_tasks([os.getpid, os.getpid], workers=1)  # nothing waited for: not run
    out.append(len(done))
    run_tasks([os.getpid, os.getpid], workers=2)  # after its block: never
    out.append([name for name, _ in done])

    def interrupt() -> None:
        raise KeyboardInterrupt

    with _fork.idle_work(interrupt):
        try:  # the worker would sleep for a minute: it is stopped, and reaped
            run_tasks([os.getpid, lambda: time.sleep(60)], workers=2)
        except KeyboardInterrupt:
            out.append("interrupted")
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        out.append("no child left")
    return out


def test_idle_work_runs_once_here_while_the_workers_finish(isolated) -> None:
    # in this process, after its own tasks; an error in it is left to the later real use
    assert isolated(_idle) == [
        [("import", True), ("broken", True)],
        True,
        2,
        2,
        ["import", "broken"],
        "interrupted",
        "no child left",
    ]


def _counts() -> list[object]:
    os.environ.pop(WORKERS_ENV, None)
    _fork._cpus = lambda: 8
    out: list[object] = [
        worker_count(4, size=10, threshold=100),  # too small to be worth it
        worker_count(4, size=1000, threshold=100),  # capped at the tasks
        worker_count(1, size=1000, threshold=100),
    ]
    os.environ[WORKERS_ENV] = "2"
    out.append(worker_count(4, size=10, threshold=100))  # the variable wins over size
    os.environ[WORKERS_ENV] = "1"
    out.append(worker_count(4, size=1000, threshold=100))
    os.environ[WORKERS_ENV] = "many"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out.append(worker_count(4, size=1000, threshold=100))
    out.append(str(caught[0].message))
    # another Python thread could hold a lock across the fork: never fork then
    os.environ[WORKERS_ENV] = "2"
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        out.append(worker_count(4, size=1000, threshold=100))
    finally:
        stop.set()
        thread.join()
    return out


def test_worker_count_follows_size_environment_and_threads(isolated) -> None:
    out = isolated(_counts)
    assert out[:6] == [1, 4, 1, 2, 1, 1]
    assert "not a whole number" in out[6]
    assert out[7] == 1


# --------------------------------------------------------------------- start_worker


def _started_roundtrip() -> tuple[object, ...]:
    assert threading.active_count() == 1
    table = list(range(1000))
    parent = os.getpid()

    def prepare() -> object:
        prepared = (os.getpid(), sum(table))  # from the fork's copy, before any input

        def finish(message: tuple[list[int], bytes]) -> tuple[object, ...]:
            rows, blob = message
            # the shared table arrives as the worker's own object, the rest as a copy
            return (*prepared, rows is table, len(blob), blob[:3])

        return finish

    worker = _fork.start_worker(prepare, shared=[table])
    worker.send((table, b"abc" * 1_000_000))  # far beyond a pipe's buffer
    pid, total, same, size, head = worker.result()
    return pid != parent, total, same, size, head


def test_a_started_worker_prepares_then_finishes_on_what_it_is_sent(isolated) -> None:
    assert isolated(_started_roundtrip) == (True, sum(range(1000)), True, 3_000_000, b"abc")


def _send_while_preparing(flag: str) -> str:
    def prepare() -> object:
        # Prepare lasts until this process has finished sending: if send waited for
        # prepare, the two would wait for each other (the worker gives up after a minute).
        for _ in range(6000):
            if os.path.exists(flag):
                return lambda message: len(message)
            time.sleep(0.01)
        raise RuntimeError("send did not return while the worker prepared")

    worker = _fork.start_worker(prepare)
    worker.send(b"x" * 5_000_000)
    Path(flag).touch()
    return str(worker.result())


def test_sending_does_not_wait_for_the_worker_to_prepare(isolated, tmp_path) -> None:
    assert isolated(_send_while_preparing, str(tmp_path / "sent")) == "5000000"


def _pending_until_sent(flag: str) -> tuple[bool, bool, bool, int]:
    def prepare() -> object:
        # Waits here (input_pending stays True) until the test has seen it and sends; a
        # worker that stopped looking at it would wait the whole minute.
        Path(flag).write_text(str(_fork.input_pending()))
        for _ in range(6000):
            if not _fork.input_pending():
                return lambda message: (_fork.input_pending(), len(message))
            time.sleep(0.01)
        raise RuntimeError("the input never showed as arriving")

    here = _fork.input_pending()
    worker = _fork.start_worker(prepare)
    for _ in range(6000):
        if os.path.exists(flag) and Path(flag).read_text():
            break
        time.sleep(0.01)
    before = Path(flag).read_text() == "True"
    worker.send(b"y" * 3_000_000)
    after, size = worker.result()
    return here, before, after, size


def test_input_is_pending_in_a_started_worker_until_it_is_sent(isolated, tmp_path) -> None:
    """Work ahead of the input (json_report.build_ahead) stops once the input comes; a
    process that is no such worker has nothing pending."""
    assert isolated(_pending_until_sent, str(tmp_path / "seen")) == (False, True, False, 3_000_000)


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _child_that_sleeps(seconds: float) -> int:
    pid = os.fork()
    if pid == 0:
        time.sleep(seconds)
        os._exit(0)
    return pid


def _left_to_end(folder: str) -> list[object]:
    out: list[object] = []
    waits: list[int] = []
    real = os.waitpid

    def spy(pid: int, options: int) -> tuple[int, int]:
        waits.append(options)
        return real(pid, options)

    worker = _fork.start_worker(lambda: lambda message: message * 2)
    worker.send(21)
    os.waitpid = spy
    try:
        out.append(worker.result())
    finally:
        os.waitpid = real
    out.append(waits and 0 not in waits)  # looked, never waited for it to end
    # A worker still ending is reaped once it has: at the next fork...
    pid = _child_that_sleeps(0.3)
    _fork._reap_later(pid)
    out.append(pid in _fork._ENDING)
    deadline = time.monotonic() + 30
    # (Until it has ended, unreaped: WNOWAIT looks without reaping it.)
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    run_tasks([os.getpid, os.getpid], workers=2)
    out.append((_reaped(pid), _fork._ENDING))
    # ... or at exit, waiting for it then.
    pid = _child_that_sleeps(0.3)
    _fork._reap_later(pid)
    _fork.wait_for_workers()
    out.append((_reaped(pid), _fork._ENDING))
    # A process that ends without the interpreter's exit (the CLI's) waits for them too.
    ended = Path(folder) / "ended"
    parent = os.fork()
    if parent == 0:
        pid = os.fork()
        if pid == 0:
            time.sleep(0.3)
            ended.write_text("the worker ended")
            os._exit(0)
        _fork._reap_later(pid)
        exit_now(0)
    os.waitpid(parent, 0)
    out.append(ended.exists())
    return out


def test_a_started_worker_that_sent_its_result_is_reaped_later(isolated, tmp_path) -> None:
    """Its result is taken without waiting for it to end (freeing a large worker's memory
    takes tens of milliseconds); it is reaped at the next fork, or at exit."""
    assert isolated(_left_to_end, str(tmp_path)) == [42, True, True, (True, []), (True, []), True]


def _started_failures() -> list[str]:
    out = []
    worker = _fork.start_worker(lambda: lambda message: _fail(message))
    worker.send(4)
    try:
        worker.result()
    except InputError as exc:
        out.append(str(exc))

    def broken() -> object:
        raise ValueError("cannot prepare")

    worker = _fork.start_worker(broken)
    worker.send(None)
    try:
        worker.result()
    except ValueError as exc:
        out.append(str(exc))

    worker = _fork.start_worker(lambda: lambda message: os._exit(5))
    worker.send(None)
    try:
        worker.result()
    except RuntimeError as exc:
        out.append(str(exc))

    # An input that cannot be pickled: send raises, the worker still waits, and stops.
    worker = _fork.start_worker(lambda: lambda message: message)
    try:
        worker.send(threading.Lock())
    except TypeError:
        out.append("unpicklable")
    pid = worker._pid
    worker.cancel()
    try:
        os.kill(pid, 0)
        out.append("still there")
    except ProcessLookupError:
        out.append("stopped and reaped")
    try:
        worker.result()
    except RuntimeError as exc:
        out.append(str(exc))
    return out


def test_a_started_workers_errors_and_death_come_back_and_cancel_stops_it(isolated) -> None:
    out = isolated(_started_failures)
    assert out[0] == "v4.json: trials[4]: bad 4 (fix it)"
    assert out[1] == "cannot prepare"
    assert "exited with status 5" in out[2] and "AGENTICLENS_FRAMES_WORKERS=1" in out[2]
    assert out[3:5] == ["unpicklable", "stopped and reaped"]
    assert "already taken, or it was stopped" in out[5]


def _stages() -> list[object]:
    out: list[object] = []
    # The first result arrives while the worker is still in its second step.
    with _fork.forked_stages(
        lambda: os.getpid(), lambda pid: (time.sleep(0.5), pid, os.getpid())
    ) as (first, then):
        start = time.monotonic()
        worker = first()
        out.append(time.monotonic() - start < 0.4)  # (not after `then`'s half second)
        _, pid, again = then()
        out.append((worker != os.getpid(), pid == worker == again))
    # A failing first step: both raise its error, and the second step never runs.
    with _fork.forked_stages(lambda: _fail(2), lambda _: os._exit(9)) as (first, then):
        for get in (first, then):
            try:
                get()
            except InputError as exc:
                out.append(str(exc))
    # A failing second step; a dying one.
    with _fork.forked_stages(lambda: 3, _fail) as (first, then):
        try:
            out.append((first(), then()))
        except InputError as exc:
            out.append(str(exc))
    with _fork.forked_stages(lambda: 1, lambda _: os._exit(5)) as (first, then):
        out.append(first())
        try:
            then()
        except RuntimeError as exc:
            out.append("exited with status 5" in str(exc))
    # The idle work runs here while the second step is awaited.
    done: list[int] = []
    with (
        _fork.idle_work(lambda: done.append(os.getpid())),
        _fork.forked_stages(lambda: 1, lambda _: time.sleep(0.2)) as (first, then),
    ):
        then()
    out.append(done == [os.getpid()])
    # Not taken: the worker (a minute long) is stopped and reaped when the block ends.
    with _fork.forked_stages(lambda: 1, lambda _: time.sleep(60)) as (first, then):
        out.append(first())
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        out.append("no child left")
    return out


def test_forked_stages_send_the_first_result_early_and_fail_as_their_steps(isolated) -> None:
    assert isolated(_stages) == [
        True,
        (True, True),
        "v2.json: trials[2]: bad 2 (fix it)",
        "v2.json: trials[2]: bad 2 (fix it)",
        "v3.json: trials[3]: bad 3 (fix it)",
        1,
        True,
        True,
        1,
        "no child left",
    ]
