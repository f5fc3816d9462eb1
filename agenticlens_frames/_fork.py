"""Run independent pieces of work in forked processes, results back by pickle.

Replaying recorded files and writing the reports are pure Python work that holds the GIL,
so on a machine with several cores the only way to overlap them is more processes. A
forked child starts with the parent's memory (the loaded suite, the analysis), so nothing
but the result crosses a process boundary.

Forking is only done where it is safe and worth it: on Linux, when this process runs no
other Python thread (a thread holding a lock at the fork would leave the child stuck),
and when the work is large. ``AGENTICLENS_FRAMES_WORKERS`` sets the number of processes
(``1`` turns forking off).
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["LARGE_RUN_ATTEMPTS", "WORKERS_ENV", "can_fork", "fork", "run_tasks", "worker_count"]

T = TypeVar("T")

#: Environment variable that sets the number of worker processes (1: no forking).
WORKERS_ENV = "AGENTICLENS_FRAMES_WORKERS"
#: Below this many attempts one process does the work (forking costs more than it saves).
LARGE_RUN_ATTEMPTS = 10_000


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def worker_count(tasks: int, *, size: int, threshold: int = LARGE_RUN_ATTEMPTS) -> int:
    """How many processes to run ``tasks`` pieces of work in (this one included).

    Parameters
    ----------
    tasks
        Number of independent pieces of work.
    size
        How big the whole job is, in attempts (scored or reported).
    threshold
        Below this size forking costs more than it saves: one process.

    Returns
    -------
    int
        ``AGENTICLENS_FRAMES_WORKERS`` when set (capped at ``tasks``), else the usable
        CPUs capped at ``tasks``, or 1 where forking is unsafe or not worth it.

    Examples
    --------
    >>> worker_count(4, size=10, threshold=1000)
    1
    """
    if tasks <= 1 or not can_fork():
        return 1
    wanted = os.environ.get(WORKERS_ENV, "").strip()
    if wanted:
        try:
            return max(1, min(int(wanted), tasks))
        except ValueError:
            warnings.warn(
                f"{WORKERS_ENV}={wanted!r} is not a whole number; using one process",
                RuntimeWarning,
                stacklevel=2,
            )
            return 1
    if size < threshold:
        return 1
    return max(1, min(_cpus(), tasks))


def can_fork() -> bool:
    """Whether this process may fork and go on running Python in the child.

    Only on Linux, and only while this process runs no other Python thread: a thread
    holding a lock (the import lock, a logging handler's) at the fork would leave the
    child waiting for it forever.

    Returns
    -------
    bool
        True where :func:`fork` is safe.

    Examples
    --------
    >>> release = threading.Event()
    >>> other = threading.Thread(target=release.wait)
    >>> other.start()
    >>> can_fork()  # another thread runs
    False
    >>> release.set()
    >>> other.join()
    """
    return sys.platform.startswith("linux") and threading.active_count() == 1


def fork() -> int:
    """``os.fork()`` where :func:`can_fork` said yes: the child's pid here, 0 in the child.

    Python >= 3.12 warns about forking a process with native threads (Arrow's, BLAS'):
    their libraries re-create their pools in the child, and no Python thread runs
    (checked by :func:`can_fork`), so the warning is silenced.

    Returns
    -------
    int
        The child's process id in the parent; 0 in the child.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def run_tasks(
    tasks: Sequence[Callable[[], T]],
    workers: int,
    *,
    while_waiting: Callable[[], None] | None = None,
) -> list[T]:
    """Run ``tasks`` across ``workers`` processes and return their results in order.

    Task *i* runs in process ``i % workers``; process 0 is this one, the others are
    forked children that send their results back pickled. If tasks fail, the exception of
    the first failing task (in task order) is raised, as a sequential run would.

    Parameters
    ----------
    tasks
        Callables without arguments; their results must pickle.
    workers
        Number of processes, this one included (see :func:`worker_count`); 1 runs the
        tasks here, one after the other.
    while_waiting
        Called in this process after its own tasks, before waiting for the workers'
        results (work that would otherwise wait for them); not called with one worker.

    Examples
    --------
    >>> run_tasks([lambda: 1, lambda: 2, lambda: 3], workers=1)
    [1, 2, 3]
    """
    if workers <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    sys.stdout.flush()
    sys.stderr.flush()
    children: list[tuple[int, int, list[int]]] = []
    outcomes: dict[int, tuple[bool, Any]] = {}
    try:
        for worker in range(1, min(workers, len(tasks))):
            mine = list(range(worker, len(tasks), workers))
            children.append(_fork_child(tasks, mine))
        for index in range(0, len(tasks), workers):
            try:
                outcomes[index] = (True, tasks[index]())
            except Exception as exc:
                outcomes[index] = (False, exc)
                break
        if while_waiting is not None:
            while_waiting()
        for pid, fd, mine in children:
            outcomes.update(_collect(pid, fd, mine))
        children.clear()
    finally:
        for pid, fd, _ in children:  # interrupted: stop and reap what still runs
            os.close(fd)
            _stop(pid)
    results = []
    for index in range(len(tasks)):
        ok, value = outcomes.get(index, (False, None))
        if not ok:
            if value is None:  # its worker stopped after an earlier failure of its own
                continue
            raise value
        results.append(value)
    return results


def _fork_child(tasks: Sequence[Callable[[], Any]], mine: list[int]) -> tuple[int, int, list[int]]:
    read_fd, write_fd = os.pipe()
    pid = fork()
    if pid == 0:  # the child: run its tasks, send the outcomes, leave without cleanup
        code = 0
        try:
            os.close(read_fd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent decides what Ctrl-C means
            # The parent's objects are read, never freed, here: out of the collector's
            # reach, a collection does not write to each one and so copy every page
            # that holds Python objects (copy-on-write) into this process.
            gc.freeze()
            out: list[tuple[int, bool, Any]] = []
            for index in mine:
                try:
                    out.append((index, True, tasks[index]()))
                except Exception as exc:
                    out.append((index, False, exc))
                    break
            try:
                data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
                # The pickled copy is what goes: holding the results too while the parent
                # finishes its own tasks would double this process's memory.
                out.clear()
            except Exception as exc:  # an unpicklable result or exception
                error = RuntimeError(f"a worker process could not send its result back: {exc}")
                data = pickle.dumps([(mine[0], False, error)])
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # never return into the parent's code (atexit, buffers, tests)
    os.close(write_fd)
    return pid, read_fd, mine


def _collect(pid: int, fd: int, mine: list[int]) -> dict[int, tuple[bool, Any]]:
    # Unpickled as it arrives: the results, not the results and their pickled bytes.
    outcomes = None
    # (An empty or cut-short stream fails to load: the worker died while sending.)
    with os.fdopen(fd, "rb") as pipe, contextlib.suppress(Exception):
        outcomes = {index: (ok, value) for index, ok, value in pickle.load(pipe)}
    _, status = os.waitpid(pid, 0)
    if outcomes is not None:
        return outcomes
    if os.WIFSIGNALED(status):
        how = f"was killed by signal {os.WTERMSIG(status)}"
    else:
        how = f"exited with status {os.waitstatus_to_exitcode(status)}"
    error = RuntimeError(
        f"a worker process {how} before sending its result (out of memory?); "
        f"set {WORKERS_ENV}=1 to work in one process"
    )
    return {mine[0]: (False, error)}


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
