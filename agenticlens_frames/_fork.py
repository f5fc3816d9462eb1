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

import atexit
import contextlib
import gc
import io
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "LARGE_RUN_ATTEMPTS",
    "WORKERS_ENV",
    "Started",
    "can_fork",
    "flush_output",
    "fork",
    "forked_stages",
    "give_back_free_memory",
    "idle_work",
    "input_pending",
    "run_tasks",
    "start_worker",
    "worker_count",
]

T = TypeVar("T")

#: Environment variable that sets the number of worker processes (1: no forking).
WORKERS_ENV = "AGENTICLENS_FRAMES_WORKERS"
#: Below this many attempts one process does the work (forking costs more than it saves).
LARGE_RUN_ATTEMPTS = 10_000


# Work this process will need later, done the first time it waits for forked workers.
_IDLE_WORK: list[Callable[[], None]] = []


@contextlib.contextmanager
def idle_work(work: Callable[[], None]) -> Iterator[None]:
    """Within the block, run ``work`` here the first time :func:`run_tasks` has finished
    this process's tasks and waits for its forked workers' (a forked worker runs slower
    than its parent, so the parent idles there); not at all if it never waits.

    For work that must be done later anyway and gives the same result whenever it is
    done, such as importing a module. An error in ``work`` is ignored: the later use meets
    it again and reports it where it belongs.

    Examples
    --------
    >>> done = []
    >>> with idle_work(lambda: done.append(1)):
    ...     run_tasks([lambda: 1], workers=1)  # nothing to wait for
    [1]
    >>> done
    []
    """
    _IDLE_WORK.append(work)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # already done
            _IDLE_WORK.remove(work)


def _do_idle_work() -> None:
    while _IDLE_WORK:
        work = _IDLE_WORK.pop(0)
        with contextlib.suppress(Exception):
            work()


def _collect_while_idle(children: list[tuple[int, int, list[int]]]) -> list[dict[int, Any]]:
    """:func:`_collect` of every child on a thread while this one does the idle work.

    The thread waits for the workers' results without the GIL (pipe reads), so the idle
    work neither waits for a worker still running nor keeps a finished one waiting to
    send (its pipe holds 64 KiB): the results arrive while it runs. The children are
    collected (pipes closed, processes reaped) when this returns, and ``children`` is
    emptied; if the idle work is interrupted, they are killed first.
    """
    collected: list[dict[int, Any]] = []
    failed: list[BaseException] = []

    def collect() -> None:
        try:
            for pid, fd, mine in children:
                collected.append(_collect(pid, fd, mine))
        except BaseException as exc:  # raised in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=collect, name="collect-workers", daemon=True)
    thread.start()
    try:
        _do_idle_work()
    except BaseException:
        for pid, _, _ in children:  # (their pipes end, and the thread reaps them)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        raise
    finally:
        thread.join()
        children.clear()
    if failed:
        raise failed[0]
    return collected


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
    flush_output()  # buffered output would otherwise be written twice, by both processes
    _reap_ended()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        _ENDING.clear()  # the parent's workers: not this process's children
    return pid


def flush_output() -> None:
    """Flush stdout and stderr, as far as they can be (one may be None, or a closed pipe
    as in ``| head``: then there is nothing left to say there).

    Examples
    --------
    >>> flush_output()
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def run_tasks(tasks: Sequence[Callable[[], T]], workers: int) -> list[T]:
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
        tasks here, one after the other. Once this process's own tasks are done, the
        :func:`idle_work` pending runs here while the workers' results are collected.

    Examples
    --------
    >>> run_tasks([lambda: 1, lambda: 2, lambda: 3], workers=1)
    [1, 2, 3]
    """
    if workers <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
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
        if _IDLE_WORK:
            for collected in _collect_while_idle(children):
                outcomes.update(collected)
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


U = TypeVar("U")


@contextlib.contextmanager
def forked_stages(
    first: Callable[[], T], then: Callable[[T], U]
) -> Iterator[tuple[Callable[[], T], Callable[[], U]]]:
    """Run ``first()`` and then ``then(first's result)`` in a forked worker; within the
    block, the first function given waits for ``first``'s result, the second for
    ``then``'s (each pickled back; each returns it or raises its exception).

    ``first``'s result is sent as soon as it exists, while the worker goes on with
    ``then`` (``experiment run``: the suite, needed after this process's imports, then a
    share of the recorded replay, needed later). If ``first`` fails, ``then`` does not
    run and both raise its exception. Waiting for ``then``'s result does the
    :func:`idle_work` pending. A worker whose second result was not taken when the block
    ends is stopped. Call :func:`worker_count` first. The worker runs a thread (the
    sender of ``first``'s result) while ``then`` runs, so ``then`` must not fork:
    ``can_fork`` says no there.

    Examples
    --------
    >>> if can_fork():
    ...     with forked_stages(lambda: 6, lambda six: six * 7) as (first, then):
    ...         answers = first(), then()
    ... else:
    ...     answers = 6, 42
    >>> answers
    (6, 42)
    """
    first_read, first_write = os.pipe()
    then_read, then_write = os.pipe()
    pid = fork()
    if pid == 0:  # the child: never returns into the parent's code
        _run_stages(first, then, (first_read, first_write), (then_read, then_write))
    os.close(first_write)
    os.close(then_write)
    fds: dict[str, int | None] = {"first": first_read, "then": then_read}

    def first_result() -> T:
        fd = fds["first"]
        if fd is None:
            raise RuntimeError("the worker's first result was already taken")
        fds["first"] = None
        outcomes = None
        with os.fdopen(fd, "rb") as pipe, contextlib.suppress(Exception):
            outcomes = pickle.load(pipe)
        if not outcomes:  # (the worker died: then's result says how)
            raise RuntimeError("a worker process ended before sending its first result")
        _, ok, value = outcomes[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def then_result() -> U:
        fd = fds.pop("then", None)
        if fd is None:
            raise RuntimeError("the worker's result was already taken")
        child = [(pid, fd, [0])]
        try:
            collected = _collect_while_idle(child) if _IDLE_WORK else [_collect(*child[0])]
        except BaseException:  # interrupted: stop and reap it
            _stop(pid)
            raise
        ok, value = collected[0][0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    try:
        yield first_result, then_result
    finally:
        if fds.get("first") is not None:
            os.close(fds["first"])  # type: ignore[arg-type]
        if fds.get("then") is not None:  # not taken: stop the worker
            os.close(fds.pop("then"))  # type: ignore[arg-type]
            _stop(pid)


def _run_stages(
    first: Callable[[], T],
    then: Callable[[T], Any],
    first_pipe: tuple[int, int],
    then_pipe: tuple[int, int],
) -> None:
    """:func:`forked_stages`' worker: run both steps, send both outcomes, exit."""
    code = 0
    try:
        os.close(first_pipe[0])
        os.close(then_pipe[0])
        _child_setup()
        try:
            value = first()
            out: list[tuple[int, bool, Any]] = [(0, True, value)]
        except Exception as exc:
            out = [(0, False, exc)]
        failed = not out[0][1]
        data = _pickled(list(out), [0])

        def send_first() -> None:
            with contextlib.suppress(OSError), os.fdopen(first_pipe[1], "wb") as pipe:
                pipe.write(data)  # (waits for the parent to read, without the GIL)

        sender = threading.Thread(target=send_first, name="worker-first", daemon=True)
        if _pipe_holds(first_pipe[1], len(data)):
            # Written whole before `then` starts, without waiting for the parent: a `then`
            # that ends the process can no longer take the first result with it.
            send_first()
        else:
            sender.start()
        if not failed:
            try:
                out = [(0, True, then(value))]
            except Exception as exc:
                out = [(0, False, exc)]
        _send(out, then_pipe[1], [0])
        if sender.is_alive():
            sender.join()
    except BaseException:
        code = 1
    finally:
        os._exit(code)  # never return into the parent's code (atexit, buffers, tests)


def _pipe_holds(fd: int, size: int) -> bool:
    """Whether the empty pipe ``fd`` can take ``size`` bytes without a reader, after
    asking Linux to grow it that far (``F_SETPIPE_SZ``; an unprivileged process may grow
    a pipe to ``/proc/sys/fs/pipe-max-size``, 1 MiB by default)."""
    import fcntl

    getter = getattr(fcntl, "F_GETPIPE_SZ", None)
    setter = getattr(fcntl, "F_SETPIPE_SZ", None)
    if getter is None or setter is None:
        return False
    try:
        if fcntl.fcntl(fd, getter) >= size:
            return True
        return fcntl.fcntl(fd, setter, size) >= size
    except OSError:  # beyond the allowed size (or not a pipe)
        return False


class Started(Generic[T]):
    """A forked worker that began its work before all of its input existed
    (:func:`start_worker`): :meth:`send` gives it the rest, :meth:`result` waits for its
    outcome, :meth:`cancel` stops it."""

    def __init__(self, pid: int, inbox: int, outbox: int, shared: Sequence[object]) -> None:
        self._pid = pid
        self._inbox: int | None = inbox
        self._outbox: int | None = outbox
        self._shared = {id(value): index for index, value in enumerate(shared)}

    def send(self, message: object) -> None:
        """Give the worker its input, pickled; the objects it shares with this process
        since the fork (``shared``) go by reference, not by copy. Once only."""
        if self._inbox is None:
            raise RuntimeError("the worker was already given its input, or stopped")
        buffer = io.BytesIO()
        _SharedPickler(buffer, self._shared).dump(message)  # (may fail: the worker waits)
        inbox, self._inbox = self._inbox, None
        # What this process computed the message with is garbage now: give it back before
        # the worker's own peak, which would otherwise come on top of it.
        give_back_free_memory()
        # A worker that died is reported by result(), with how it ended.
        with contextlib.suppress(BrokenPipeError), os.fdopen(inbox, "wb") as pipe:
            pipe.write(buffer.getbuffer())

    def result(self) -> T:
        """Wait for the worker and return its result (or raise its exception)."""
        if self._outbox is None:
            raise RuntimeError("the worker's result was already taken, or it was stopped")
        if self._inbox is not None:  # never given its input: it ends without a result
            os.close(self._inbox)
            self._inbox = None
        outbox, self._outbox = self._outbox, None
        # Not waited for once it has sent the result: it only has to end (_reap_later).
        ok, value = _collect(self._pid, outbox, [0], wait=False)[0]
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        """Stop the worker if it still runs (nothing happens after :meth:`result`)."""
        for fd in (self._inbox, self._outbox):
            if fd is not None:
                os.close(fd)
        if self._outbox is not None:
            _stop(self._pid)
        self._inbox = self._outbox = None


class _SharedPickler(pickle.Pickler):
    """Pickles the objects of ``shared`` (by ``id``) as their index there."""

    def __init__(self, file: io.BytesIO, shared: dict[int, int]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._ids = shared

    def persistent_id(self, obj: object) -> int | None:
        return self._ids.get(id(obj))


class _SharedUnpickler(pickle.Unpickler):
    """Reads what :class:`_SharedPickler` wrote, each index back to its object."""

    def __init__(self, file: io.BytesIO, shared: Sequence[object]) -> None:
        super().__init__(file)
        self._shared = shared

    def persistent_load(self, pid: Any) -> object:
        return self._shared[pid]


def start_worker(
    prepare: Callable[[], Callable[[Any], T]], *, shared: Sequence[object] = ()
) -> Started[T]:
    """Fork a worker that runs ``prepare()`` now and, once given its input, the function
    ``prepare`` returned, on that input; the result comes back pickled.

    This overlaps work that needs only what exists now (the worker's share of it is
    ``prepare``) with whatever this process computes next, and hands the worker what that
    computation produced without a second fork (the worker keeps what it prepared). The
    worker reads its input while it prepares, so :meth:`Started.send` never waits for
    ``prepare``. Call :func:`worker_count` first: forking must be safe (no other Python
    thread) and worth it.

    Parameters
    ----------
    prepare
        Runs in the worker at once; returns the function of the input.
    shared
        Objects that exist before the fork and that the input may contain: they are sent
        as references to the worker's own copy (which it has since the fork), not pickled.
        They must not change in this process before the input is sent.

    Returns
    -------
    Started
        The handle: :meth:`~Started.send` the input, then :meth:`~Started.result`; or
        :meth:`~Started.cancel`.

    Examples
    --------
    >>> table = list(range(5))
    >>> if can_fork():  # Linux, and no other Python thread
    ...     worker = start_worker(lambda: lambda rows: sum(rows) + len(table), shared=[table])
    ...     worker.send(table)
    ...     worker.result()
    ... else:
    ...     15
    15
    """
    inbox_read, inbox_write = os.pipe()
    outbox_read, outbox_write = os.pipe()
    give_back_free_memory()  # (or both processes would fill the same free pages, copied)
    pid = fork()
    if pid == 0:  # the child: prepare while reading the input, finish, send the outcome
        code = 0
        try:
            os.close(inbox_write)
            os.close(outbox_read)
            _child_setup()
            received: list[bytes] = []
            global _INPUT_COMING
            _INPUT_COMING = coming = threading.Event()

            def read() -> None:
                with os.fdopen(inbox_read, "rb", buffering=0) as pipe:
                    # The first bytes say the input is on its way (input_pending): work
                    # done ahead of it stops, and the rest is read without waiting for it.
                    head = pipe.read(1 << 16)
                    coming.set()
                    received.append(head + pipe.readall() if head else head)

            # Read at once, so the parent's send (as large as its message) never waits for
            # prepare(); a thread is safe here, the worker never forks.
            reader = threading.Thread(target=read, name="worker-inbox", daemon=True)
            reader.start()
            try:
                finish = prepare()
                give_back_free_memory()  # prepare's temporaries, before the input's work
                reader.join()
                if not received or not received[0]:  # not sent: the parent gave up
                    os._exit(0)
                message = _SharedUnpickler(io.BytesIO(received.pop()), shared).load()
                out = [(0, True, finish(message))]
            except Exception as exc:
                out = [(0, False, exc)]
            _send(out, outbox_write, [0])
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # never return into the parent's code (atexit, buffers, tests)
    os.close(inbox_read)
    os.close(outbox_write)
    return Started(pid, inbox_write, outbox_read, shared)


#: In a worker of start_worker: set once its input begins to arrive (see input_pending).
_INPUT_COMING: threading.Event | None = None


def input_pending() -> bool:
    """Whether this process is a :func:`start_worker` worker whose input has not begun to
    arrive: work it will need later (and could not do before the fork) may be done now,
    in small steps, checking this between them; in any other process, False.

    Examples
    --------
    >>> input_pending()  # not a worker
    False
    """
    return _INPUT_COMING is not None and not _INPUT_COMING.is_set()


def give_back_free_memory() -> None:
    """Return freed heap memory to the operating system (glibc's ``malloc_trim``, and
    Arrow's memory pool if Arrow is loaded); nothing happens where neither applies.

    Allocators keep freed memory for reuse. One process reuses it for its next step, but
    two processes working at once after a fork each fill those same pages with their own
    data, each taking a private copy (copy-on-write): at 20 000 cases the replay's freed
    heap (about 250 MB) and the worker's temporaries came on top of everything else. A
    trim costs a few tens of milliseconds on a heap of that size.

    Examples
    --------
    >>> give_back_free_memory()
    """
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                import ctypes

                libc = ctypes.CDLL(None)
                _LIBC = libc.malloc_trim  # absent outside glibc (musl)
    if _LIBC:
        _LIBC(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:  # (never imported for this)
        arrow.default_memory_pool().release_unused()


_LIBC: Any = None


def _child_setup() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent decides what Ctrl-C means
    # The parent's objects are read, never freed, here: out of the collector's reach, a
    # collection does not write to each one and so copy every page that holds Python
    # objects (copy-on-write) into this process.
    gc.freeze()


def _send(out: list[tuple[int, bool, Any]], fd: int, mine: list[int]) -> None:
    """Write a worker's outcomes to the parent, pickled (see :func:`_collect`)."""
    data = _pickled(out, mine)
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)


def _pickled(out: list[tuple[int, bool, Any]], mine: list[int]) -> bytes:
    """A worker's outcomes as :func:`_collect` reads them (``out`` is emptied)."""
    try:
        data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        # The pickled copy is what goes: holding the results too while the parent
        # finishes its own tasks would double this process's memory.
        out.clear()
    except Exception as exc:  # an unpicklable result or exception
        error = RuntimeError(f"a worker process could not send its result back: {exc}")
        data = pickle.dumps([(mine[0], False, error)])
    return data


def _fork_child(tasks: Sequence[Callable[[], Any]], mine: list[int]) -> tuple[int, int, list[int]]:
    read_fd, write_fd = os.pipe()
    pid = fork()
    if pid == 0:  # the child: run its tasks, send the outcomes, leave without cleanup
        code = 0
        try:
            os.close(read_fd)
            _child_setup()
            out: list[tuple[int, bool, Any]] = []
            for index in mine:
                try:
                    out.append((index, True, tasks[index]()))
                except Exception as exc:
                    out.append((index, False, exc))
                    break
            _send(out, write_fd, mine)
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # never return into the parent's code (atexit, buffers, tests)
    os.close(write_fd)
    return pid, read_fd, mine


def _collect(
    pid: int, fd: int, mine: list[int], *, wait: bool = True
) -> dict[int, tuple[bool, Any]]:
    """The outcomes a worker sent; with ``wait=False`` a worker that sent them is not
    waited for (see :func:`_reap_later`)."""
    # Unpickled as it arrives: the results, not the results and their pickled bytes.
    outcomes = None
    # (An empty or cut-short stream fails to load: the worker died while sending.)
    with os.fdopen(fd, "rb") as pipe, contextlib.suppress(Exception):
        outcomes = {index: (ok, value) for index, ok, value in pickle.load(pipe)}
    if outcomes is not None and not wait:
        _reap_later(pid)
        return outcomes
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


#: Workers that sent their result and were left to end on their own (:func:`_reap_later`).
_ENDING: list[int] = []


def _reap_later(pid: int) -> None:
    """Reap worker ``pid`` if it has ended, else once it has: at the next fork, or when
    this interpreter exits.

    A worker that sent its result has nothing left to do but end, and ending frees its
    memory page by page: tens of milliseconds for the JSON report's worker of a large
    run, which the run's last step would otherwise spend waiting.
    """
    _ENDING.append(pid)
    _reap_ended()


def wait_for_workers() -> None:
    """Wait for the workers left to end (:func:`_reap_later`) to have ended.

    At this interpreter's exit, and before a process ends by ``os._exit``
    (:func:`agenticlens_frames._supervise.exit_now`): no worker outlives the process that
    started it, and each worker's time and memory are counted in its parent's (what
    ``time`` and ``getrusage`` report for the command).

    Examples
    --------
    >>> wait_for_workers()  # none left: returns at once
    """
    _reap_ended(block=True)


atexit.register(wait_for_workers)  # (nothing to do unless a worker was left to end)


def _reap_ended(*, block: bool = False) -> None:
    """Reap the workers of :func:`_reap_later` that have ended (all of them: ``block``)."""
    for pid in list(_ENDING):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # (reaped elsewhere)
            done = pid
        if done:
            _ENDING.remove(pid)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
