"""Work split across forked processes: order, errors, dead workers, when to fork."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from agenticlens_frames import _fork
from agenticlens_frames._fork import WORKERS_ENV, run_tasks, worker_count
from agenticlens_frames.errors import InputError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")


def _no_other_threads() -> None:
    # The tests below must really fork; a thread left by another test would stop that.
    assert threading.active_count() == 1, threading.enumerate()


def test_results_come_back_in_task_order_from_several_processes() -> None:
    _no_other_threads()
    tasks = [lambda i=i: (i, os.getpid()) for i in range(7)]
    results = run_tasks(tasks, workers=3)
    assert [i for i, _ in results] == list(range(7))
    pids = {pid for _, pid in results}
    assert len(pids) == 3 and os.getpid() in pids
    # task i ran in process i % 3
    assert [pid for _, pid in results][0::3] == [os.getpid()] * 3


def test_the_first_failing_task_in_order_raises_with_its_details() -> None:
    _no_other_threads()

    def fail(i: int) -> None:
        raise InputError(f"bad {i}", file=f"v{i}.json", location=("trials", i), hint="fix it")

    # task 1 (a child) and task 2 (this process) fail: task 1's error is the one raised
    tasks = [lambda: 0, lambda: fail(1), lambda: fail(2), lambda: 3]
    with pytest.raises(InputError) as caught:
        run_tasks(tasks, workers=2)
    assert (caught.value.file, caught.value.location, caught.value.hint) == (
        "v1.json",
        "trials[1]",
        "fix it",
    )
    assert str(caught.value) == "v1.json: trials[1]: bad 1 (fix it)"


def test_a_worker_that_dies_is_reported_not_waited_for() -> None:
    _no_other_threads()
    tasks = [lambda: "here", lambda: os._exit(3)]
    with pytest.raises(RuntimeError, match=r"exited with status 3 .*AGENTICLENS_FRAMES_WORKERS=1"):
        run_tasks(tasks, workers=2)


def test_a_result_that_cannot_be_pickled_is_an_error() -> None:
    _no_other_threads()
    tasks = [lambda: 1, lambda: threading.Lock()]
    with pytest.raises(RuntimeError, match="could not send its result back"):
        run_tasks(tasks, workers=2)


def test_one_worker_runs_everything_here() -> None:
    assert run_tasks([os.getpid, os.getpid], workers=1) == [os.getpid()] * 2


def test_worker_count_follows_size_environment_and_threads(monkeypatch) -> None:
    _no_other_threads()
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(_fork, "_cpus", lambda: 8)
    assert worker_count(4, size=10, threshold=100) == 1  # too small to be worth it
    assert worker_count(4, size=1000, threshold=100) == 4  # capped at the tasks
    assert worker_count(1, size=1000, threshold=100) == 1
    monkeypatch.setenv(WORKERS_ENV, "2")
    assert worker_count(4, size=10, threshold=100) == 2  # the variable wins over size
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert worker_count(4, size=1000, threshold=100) == 1
    monkeypatch.setenv(WORKERS_ENV, "many")
    with pytest.warns(RuntimeWarning, match="not a whole number"):
        assert worker_count(4, size=1000, threshold=100) == 1
    # another Python thread could hold a lock across the fork: never fork then
    monkeypatch.setenv(WORKERS_ENV, "2")
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert worker_count(4, size=1000, threshold=100) == 1
    finally:
        stop.set()
        thread.join()
