"""Python live targets: load ``module:function`` or ``path/to/file.py:function`` once, call it
per case with a real timeout.

The call convention is AgenticLens' — ``fn(case.input, case=case)`` — except that a
function without a ``case`` parameter is called as ``fn(case.input)`` instead of failing
every case (fix B10). ``case`` is the suite case (:class:`~agenticlens_frames.formats.
CaseSpec`: ``id``, ``name``, ``input``, ``tags``, ``metadata`` and the expectations).

Timeouts:

* ``async def`` targets run on an event loop of their own, in a daemon thread (one for
  the async targets open at a time, so that they can share objects bound to a loop),
  and the run waits for them from its loop with the timeout. A timeout cancels
  the call; a target that ignores the cancellation, or blocks its loop (``time.sleep``
  in an ``async def``), cannot hold up the run: the attempt times out all the same.
* Plain functions run on a :class:`DaemonPool` of the variant. Python cannot kill a
  thread, so a timed-out call keeps its thread until it returns. The pool has the
  variant's concurrency limit plus :data:`SPARE_THREADS` threads: up to that many
  timed-out calls may linger while new calls still start at once. Beyond that, threads
  never pile up: new calls wait in the pool's queue and, if no thread frees up within
  their timeout, time out there without ever starting (their error says so). The
  threads are daemons, so a call that never returns does not keep the process alive.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import logging
import os
import queue
import signal
import sys
import threading
import traceback
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from .._imports import import_nearby, keep_importable
from .._values import clip
from ..errors import InputError, describe_error
from ..formats.model import CaseSpec
from .retry import TargetFailure

__all__ = ["SPARE_THREADS", "DaemonPool", "PythonTarget", "accepts_keyword", "load_callable"]

_LOG = logging.getLogger(__name__)

#: Longest error an attempt records for what a python target raised (characters; longer
#: ones are cut, marked with "…").
MAX_ERROR_CHARS = 4_000

#: Threads a sync target's pool has beyond its concurrency limit, for calls that timed out
#: but have not returned yet.
SPARE_THREADS = 8


class DaemonPool:
    """A fixed-size pool of daemon threads returning :class:`concurrent.futures.Future`.

    Unlike :class:`~concurrent.futures.ThreadPoolExecutor`, whose workers are joined at
    interpreter exit, a daemon worker stuck in a call that never returns cannot hang the
    process. Threads start lazily, up to ``size``; a future cancelled before a worker picks
    it up never runs.

    Examples
    --------
    >>> pool = DaemonPool(2, name="demo")
    >>> pool.submit(sum, [1, 2, 3]).result()
    6
    >>> pool.shutdown()
    """

    def __init__(self, size: int, *, name: str = "target") -> None:
        if size < 1:
            raise ValueError("a pool needs at least one thread")
        self.size = size
        self.name = name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        #: One entry per idle worker. A deque's ``append`` and ``pop`` are atomic: a
        #: worker marks itself idle without the pool's lock, which every call's submit
        #: would otherwise contend for with the worker threads finishing calls.
        self._idle: deque[None] = deque()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def threads(self) -> int:
        """Worker threads started so far (never more than ``size``)."""
        return len(self._threads)

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Schedule ``fn(*args)``; the future is cancellable until a worker starts it."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._put((future, fn, args))
        return future

    def start(self, fn: Callable[..., None], *args: Any) -> list[None]:
        """Schedule ``fn(*args)``, which must deliver its own outcome and not raise.

        Returns a ticket for :meth:`withdraw`. Lighter than :meth:`submit`: no future to
        create, run and resolve (each takes the future's lock, on the worker's side while
        hundreds of workers finish calls together).
        """
        ticket = [None]  # taken by the worker that starts the call, or by withdraw
        self._put((ticket, fn, args))
        return ticket

    @staticmethod
    def withdraw(ticket: list[None]) -> bool:
        """Whether the call of ``ticket`` (from :meth:`start`) is now withdrawn before any
        worker started it (then it never runs); False once a worker has started it."""
        try:
            ticket.pop()  # atomic: either this or the worker's pop gets the one entry
        except IndexError:
            return False
        return True

    def _put(self, item: tuple[Any, Callable[..., Any], tuple[Any, ...]]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("pool is shut down")
            self._queue.put(item)
            try:
                self._idle.pop()
            except IndexError:  # no idle worker: start one, if the pool may grow
                if len(self._threads) < self.size:
                    thread = threading.Thread(
                        target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True
                    )
                    self._threads.append(thread)
                    thread.start()

    def _work(self) -> None:
        idle = self._idle
        while True:
            item = self._queue.get()
            if item is None:
                return
            claim, fn, args = item
            if type(claim) is list:  # from start(): fn delivers its own outcome
                try:
                    claim.pop()
                except IndexError:  # withdrawn before it started
                    idle.append(None)
                    continue
                try:
                    fn(*args)
                except BaseException:  # a bug of ours: keep the worker, say what it was
                    _LOG.exception("%s: a pool call raised", self.name)
                idle.append(None)
                continue
            future = claim
            if not future.set_running_or_notify_cancel():
                idle.append(None)
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # delivered through the future
                idle.append(None)  # idle before the caller hears back, so it is reused
                future.set_exception(exc)
            else:
                idle.append(None)
                future.set_result(result)

    def shutdown(self) -> None:
        """Let idle workers exit; busy ones exit when their call returns."""
        with self._lock:
            self._closed = True
            for _ in self._threads:
                self._queue.put(None)


def accepts_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` can be called with keyword argument ``name``.

    Callables whose signature cannot be read (some builtins) are assumed to accept it,
    which is what AgenticLens assumes of every target.

    Examples
    --------
    >>> accepts_keyword(lambda text, case=None: text, "case")
    True
    >>> accepts_keyword(lambda text: text, "case")
    False
    >>> accepts_keyword(lambda text, **kw: text, "case")
    True
    """
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (
            p.name == name
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        )
        for p in parameters
    )


def _failure(exc: BaseException) -> TargetFailure:
    """The attempt's error for what a target raised, at most :data:`MAX_ERROR_CHARS` long.

    An SDK's error can quote a whole request or reply: a 20 MB message was written into
    the journal twice and the JSON report once per attempt (120 MB for two attempts).

    Examples
    --------
    >>> long = _failure(ValueError("x" * 10_000)).message
    >>> long[:14], long[-3:], len(long)
    ('ValueError: xx', 'xx…', 4000)
    >>> class Unreadable(Exception):
    ...     def __str__(self):
    ...         raise RuntimeError("no")
    >>> _failure(Unreadable()).message
    'Unreadable (its message cannot be read: RuntimeError)'
    """
    # A target's own TimeoutError counts as timed out, as in AgenticLens; SystemExit and
    # friends raised by a target must not stop the run.
    kind = "timeout" if isinstance(exc, TimeoutError) else "error"
    try:
        text = describe_error(exc)
    except Exception as unreadable:  # its __str__ raised: say which exception it was
        text = f"{type(exc).__name__} (its message cannot be read: {type(unreadable).__name__})"
    return TargetFailure(kind, clip(text, MAX_ERROR_CHARS))


def _cancelled_by_us() -> bool:
    """Whether the running task is being cancelled by someone else (timeout, Ctrl-C), as
    opposed to the target raising CancelledError on its own."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _awaited(awaitable: Any) -> Any:
    try:
        return await awaitable
    except TargetFailure:
        raise
    except asyncio.CancelledError as exc:
        if _cancelled_by_us():
            raise
        raise _failure(exc) from None
    except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit, ...
        raise _failure(exc) from None


class _Call:
    """One call crossing to a target's loop: its coroutine until started, then its task;
    ``reply`` is the caller's future, on the caller's loop."""

    __slots__ = ("cancelled", "coroutine", "home", "reply", "task")

    def __init__(self, coroutine: Any, home: asyncio.AbstractEventLoop) -> None:
        self.coroutine: Any = coroutine
        self.home = home
        self.reply: asyncio.Future[Any] = home.create_future()
        self.task: asyncio.Task[Any] | None = None
        self.cancelled = False


class _Deadlines:
    """The deadlines of calls made with one timeout from one loop, watched by one timer.

    Calls with the same timeout expire in the order they start, so a queue's head is
    always the next to expire. A timer per call (``call_later`` then ``cancel``) cost a
    heap push, a cancellation and Python-level heap comparisons per call: about a tenth
    of the runner loop's time at 256 calls in flight.
    """

    __slots__ = ("__weakref__", "_entries", "_live", "_loop", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        #: [deadline, callback, argument]; callback None once the call is over.
        self._entries: deque[list[Any]] = deque()
        self._live = 0
        self._timer: asyncio.TimerHandle | None = None

    def add(self, deadline: float, callback: Callable[[Any], None], argument: Any) -> list[Any]:
        """Call ``callback(argument)`` at ``deadline`` unless :meth:`discard` comes first."""
        entry = [deadline, callback, argument]
        self._entries.append(entry)
        self._live += 1
        if self._timer is None:
            self._timer = self._loop.call_at(deadline, self._fire)
        elif len(self._entries) > 2 * self._live + 1024:
            # Calls that ended long before their deadline: drop their entries.
            self._entries = deque(e for e in self._entries if e[1] is not None)
        return entry

    def discard(self, entry: list[Any]) -> None:
        """The call is over: no expiry (and no reference to it) any more."""
        if entry[1] is not None:
            entry[1] = entry[2] = None
            self._live -= 1

    def _fire(self) -> None:
        self._timer = None
        now = self._loop.time()
        entries = self._entries
        while entries:
            entry = entries[0]
            if entry[1] is not None and entry[0] > now:
                self._timer = self._loop.call_at(entry[0], self._fire)
                return
            entries.popleft()
            callback, argument = entry[1], entry[2]
            if callback is not None:
                self.discard(entry)
                callback(argument)


#: loop -> timeout -> its deadlines.
_DEADLINES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, _Deadlines]] = (
    weakref.WeakKeyDictionary()
)


def _deadlines(loop: asyncio.AbstractEventLoop, timeout: float) -> _Deadlines:
    per_timeout = _DEADLINES.get(loop)
    if per_timeout is None:
        per_timeout = _DEADLINES[loop] = {}
    found = per_timeout.get(timeout)
    if found is None:
        found = per_timeout[timeout] = _Deadlines(loop)
    return found


class _Replies:
    """Outcomes of a sync target's calls, handed from its pool threads to the caller's
    loop in batches.

    ``asyncio.wrap_future`` wakes the caller's loop once per call. At hundreds of calls
    in flight the pool's threads finish together (a wave of equal sleeps), and one wake-up
    per call kept the loop and the threads handing the GIL to each other: an outcome
    posted while a wake-up is pending rides along with it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outbox: dict[
            asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any, Any]]
        ] = {}

    def post(
        self,
        home: asyncio.AbstractEventLoop,
        reply: asyncio.Future[Any],
        result: Any,
        error: BaseException | None,
    ) -> None:
        """Deliver ``result`` (or ``error``) to ``reply`` on ``home`` (from any thread)."""
        with self._lock:
            waiting = self._outbox.setdefault(home, [])
            waiting.append((reply, result, error))
            wake = len(waiting) == 1
        if wake:
            try:
                home.call_soon_threadsafe(self._deliver, home)
            except RuntimeError:  # the caller's loop is closed: nobody waits any more
                with self._lock:
                    self._outbox.pop(home, None)

    def _deliver(self, home: asyncio.AbstractEventLoop) -> None:  # on the caller's loop
        with self._lock:
            done = self._outbox.pop(home, [])
        for reply, result, error in done:
            if reply.done():  # timed out or cancelled meanwhile
                continue
            if error is not None:
                reply.set_exception(error)
            else:
                reply.set_result(result)


class _LoopThread:
    """An event loop running in a daemon thread, for the async targets' calls.

    The async targets open at a time share one (:meth:`shared`): agent code keeps objects
    bound to the loop that first used them at module level — an ``AsyncOpenAI`` or httpx
    client and its connections, a lock or semaphore limiting calls — and with a loop per
    target every variant but the first failed with "... is bound to a different event
    loop". The price: an async target that blocks its loop delays the others' calls too
    (they time out, and say so), as it would under ``asyncio.run``.

    Calls cross between the runner's loop and this one in batches (:meth:`start`): each
    crossing wakes the other thread, and at hundreds of calls in flight one wake-up per
    call and direction made the two threads hand the GIL back and forth for most of the
    run. A wake-up leaves at the end of the loop turn that started (or finished) a call,
    so every call started or finished in that turn, or while it is pending, rides along:
    a wave of calls whose timers fire together crosses back with one wake-up.
    """

    _open: ClassVar[_LoopThread | None] = None
    _users: ClassVar[int] = 0
    _guard: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls) -> _LoopThread:
        """The loop of the async targets open now, started for the first; each
        :meth:`release` it once."""
        with cls._guard:
            if cls._open is None:
                cls._open = cls("python-targets")
            cls._users += 1
            return cls._open

    def release(self) -> None:
        """One target is done with the loop: the last one closes it (:meth:`close`)."""
        with _LoopThread._guard:
            _LoopThread._users -= 1
            last = _LoopThread._users == 0
            if last:
                _LoopThread._open = None
        if last:
            self.close()

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._inbox: list[_Call] = []
        self._outbox: dict[asyncio.AbstractEventLoop, list[_Call]] = {}
        self._thread = threading.Thread(target=self._serve, name=f"{name}-loop", daemon=True)
        self._thread.start()

    def start(self, coroutine: Any) -> _Call:
        """Run ``coroutine`` on this loop; its outcome arrives in the returned call's
        ``reply`` (a future of the running loop)."""
        home = asyncio.get_running_loop()
        call = _Call(coroutine, home)
        with self._lock:
            self._inbox.append(call)
            wake = len(self._inbox) == 1
        if wake:
            # The wake-up leaves at the end of the caller's loop turn, so every call its
            # tasks start in that turn crosses with it.
            home.call_soon(self._send_inbox)
        return call

    def _send_inbox(self) -> None:  # on a caller's loop
        try:
            self.loop.call_soon_threadsafe(self._start_queued)
        except RuntimeError:  # closed: the queued calls can never run
            with self._lock:
                queued, self._inbox = self._inbox, []
            for call in queued:
                call.coroutine.close()
                if not call.reply.done():
                    call.reply.set_exception(RuntimeError("the target's event loop is closed"))

    def _start_queued(self) -> None:  # on this loop
        with self._lock:
            queued, self._inbox = self._inbox, []
            for call in queued:
                if call.cancelled:
                    call.coroutine.close()
                    continue
                call.task = self.loop.create_task(call.coroutine)
                call.coroutine = None
                call.task.add_done_callback(lambda _, call=call: self._finished(call))

    def _finished(self, call: _Call) -> None:  # on this loop
        with self._lock:
            waiting = self._outbox.setdefault(call.home, [])
            waiting.append(call)
            wake = len(waiting) == 1
        if wake:
            # At the end of this loop's turn: calls ending in the same turn (timers due
            # together) go back with one wake-up.
            self.loop.call_soon(self._send_outbox, call.home)

    def _send_outbox(self, home: asyncio.AbstractEventLoop) -> None:  # on this loop
        with contextlib.suppress(RuntimeError):  # the caller's loop is gone
            home.call_soon_threadsafe(self._deliver, home)

    def _deliver(self, home: asyncio.AbstractEventLoop) -> None:  # on the caller's loop
        with self._lock:
            done = self._outbox.pop(home, [])
        for call in done:
            task = call.task
            if task is None:
                continue
            # Read even when nobody waits any more (timed out), so no error is logged as
            # never retrieved.
            error = None if task.cancelled() else task.exception()
            if call.reply.done():
                continue
            if task.cancelled():
                call.reply.cancel()
            elif error is not None:
                call.reply.set_exception(error)
            else:
                call.reply.set_result(task.result())

    def cancel(self, call: _Call) -> None:
        """Cancel a call (from the caller's loop) without waiting for it to end."""
        with self._lock:
            call.cancelled = True
            task = call.task
        call.reply.cancel()
        if task is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed already
                self.loop.call_soon_threadsafe(task.cancel)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def submit(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self, grace: float = 2.0) -> None:
        """Cancel the calls still running and give them ``grace`` seconds to end.

        Calls that ignore their cancellation (or block the loop) are left behind: the
        thread is a daemon and is not joined, so they cannot keep the run waiting.
        """

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=grace)

        async def stop_when_idle() -> None:
            # Calls that ignore cancellation keep the loop (a daemon thread) until they end;
            # the loop is closed only then, so no task is destroyed while pending.
            while [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                await asyncio.sleep(0.1)
            asyncio.get_running_loop().stop()

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(drain(), self.loop).result(grace + 0.5)
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            asyncio.run_coroutine_threadsafe(stop_when_idle(), self.loop)


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def load_callable(target: str, *, base_dir: str | Path | None = None) -> Callable[..., Any]:
    """Import the function a python target names.

    ``target`` is split at its last ``:`` into a module and a dotted attribute path. A
    module ending in ``.py`` is a file, resolved against ``base_dir`` (the manifest's
    folder) when relative, and executed once under a private module name, its folder
    appended to ``sys.path`` (so it imports the modules beside it). Otherwise it is
    imported; if it is not on ``sys.path``, ``base_dir`` and then the working directory are
    tried (the console script does not put the working directory on ``sys.path``).

    Raises
    ------
    InputError
        When the module cannot be found or imported, or the attribute is missing or not
        callable: every call would fail, so the run is refused before it starts.

    Examples
    --------
    >>> load_callable("json:dumps")([1])
    '[1]'
    >>> load_callable("json:nope")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: python target 'json:nope': json has no attribute 'nope'
    """
    module_name, _, attr_path = target.rpartition(":")
    if not module_name or not attr_path:
        raise InputError(
            f"python target {target!r} must be 'module:function' or 'path/to/file.py:function'"
        )
    base = Path(base_dir) if base_dir is not None else None
    try:
        with _interrupts_kept(target):
            if module_name.endswith(".py"):
                obj: Any = _load_file(module_name, base)
            else:
                obj = _import(module_name, base)
    except InputError:
        raise
    except BaseException as exc:  # the module's own error; one that exits must not end the run
        raise InputError(
            f"python target {target!r}: importing it raised {describe_error(exc)}{_place(exc)}"
        ) from (exc if isinstance(exc, Exception) else None)
    owner = module_name
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except Exception as exc:
            # A file's module has a private name: say the file, and what is close.
            missing = f"{owner} has no attribute {part!r}"
            if not isinstance(exc, AttributeError):
                missing = f"getting {part!r} from {owner} raised {describe_error(exc)}"
            close = difflib.get_close_matches(part, [n for n in dir(obj) if n[:1] != "_"], 3)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise InputError(f"python target {target!r}: {missing}{hint}") from None
        owner = f"{owner}:{part}" if owner == module_name else f"{owner}.{part}"
    if not callable(obj):
        raise InputError(f"python target {target!r} is a {type(obj).__name__}, not a callable")
    if inspect.isgeneratorfunction(obj) or inspect.isasyncgenfunction(obj):
        # Every call would return a generator: every trial failed on its first case.
        raise InputError(
            f"python target {target!r} is a generator function (it yields): a target "
            "returns its payload, {'output': ..., 'trace': ...}"
        )
    _check_parameters(obj, target)
    return obj


def _check_parameters(fn: Callable[..., Any], target: str) -> None:
    """Refuse a target whose parameters cannot take the runner's call: every attempt of
    every trial would fail with the same ``TypeError`` (AgenticLens makes them all).

    Examples
    --------
    >>> _check_parameters(lambda text, case=None: text, "t.py:f")
    >>> _check_parameters(lambda text, extra: text, "t.py:f")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: python target 't.py:f' cannot be called as \
fn(input): missing a required argument: 'extra' (its parameters: (text, extra)); a python \
target takes the case input first, and the suite case as its parameter 'case' if it has \
one: give every other parameter a default
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # (some builtins) assumed callable, as accepts_keyword
        return
    pass_case = accepts_keyword(fn, "case")
    try:
        signature.bind(None, case=None) if pass_case else signature.bind(None)
    except TypeError as exc:
        call = "fn(input, case=case)" if pass_case else "fn(input)"
        raise InputError(
            f"python target {target!r} cannot be called as {call}: {exc} (its parameters: "
            f"{signature}); a python target takes the case input first, and the suite case "
            "as its parameter 'case' if it has one: give every other parameter a default"
        ) from None


@contextlib.contextmanager
def _interrupts_kept(target: str) -> Iterator[None]:
    """Put back the ``SIGINT`` and ``SIGTERM`` handlers a target module replaced when it
    was imported (``signal.signal(SIGINT, SIG_IGN)``, an SDK's own), saying so: with the
    target's, Ctrl-C — and the ``SIGINT`` ``experiment run`` passes on — did nothing, and
    the run went on to the end.

    Examples
    --------
    >>> import signal
    >>> before = signal.getsignal(signal.SIGINT)
    >>> with _interrupts_kept("quiet.py:run"):
    ...     _ = signal.signal(signal.SIGINT, signal.SIG_IGN)
    >>> signal.getsignal(signal.SIGINT) == before
    True
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # (only the main thread can set a handler: no import elsewhere can either)
        return
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in before.items():
            if handler is not None and signal.getsignal(signum) != handler:
                signal.signal(signum, handler)
                _LOG.warning(
                    "Note: python target %r set a %s handler when imported; the run's is put "
                    "back, so that Ctrl-C stops the run",
                    target,
                    signal.Signals(signum).name,
                )


def _place(exc: BaseException) -> str:
    """Where ``exc`` was raised, past the import machinery: `` (at FILE, line N)``, or ''
    (a SyntaxError's message says where already).

    Examples
    --------
    >>> try:
    ...     exec(compile("{}['API_KEY']", "/srv/agent/config.py", "exec"))
    ... except KeyError as error:
    ...     _place(error)
    ' (at /srv/agent/config.py, line 1)'
    """
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename[:1] != "<"]
    if not frames or isinstance(exc, SyntaxError):
        return ""
    return f" (at {frames[-1].filename}, line {frames[-1].lineno})"


def _load_file(name: str, base: Path | None) -> Any:
    path = Path(name)
    if not path.is_absolute() and base is not None:
        path = base / path
    path = Path(os.path.realpath(path))  # (resolve() raises on link loops)
    if not path.is_file():
        hint = None
        if base is not None and not Path(name).is_absolute() and Path(name).is_file():
            # Written as AgenticLens reads it: from the working directory.
            beside = os.path.relpath(Path(name).absolute(), base.absolute())
            hint = (
                f"{name} is in the working directory: a relative path is read from the "
                f"manifest's folder; write {beside}"
            )
        raise InputError(f"python target file {str(path)!r} does not exist", hint=hint)
    # A private name per file, so two targets called bot.py in different folders differ.
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"_agenticlens_frames_target_{path.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"python target file {str(path)!r} cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    keep_importable(path.parent)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _import(name: str, base: Path | None) -> Any:
    try:
        return import_nearby(name, (base, Path.cwd()))
    except ModuleNotFoundError as exc:
        if exc.name is None or not name.startswith(exc.name):
            raise  # the target imports something that is missing: report that
    raise InputError(
        f"python target module {name!r} was not found on sys.path, in the manifest's folder "
        "or in the working directory"
    )


#: Types :func:`copy.deepcopy` returns as they are: a copy may share them.
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})


def _copy_case(case: CaseSpec) -> CaseSpec:
    """What ``copy.deepcopy(case)`` returns, made field by field.

    A case is mostly strings and tuples of strings, which a deep copy returns as they are
    anyway; walking them through ``deepcopy`` cost ~16 µs a call (every call of a target
    that takes ``case``). Only the other fields are deep-copied, with one memo, so values
    shared between fields stay shared as in ``deepcopy``.

    Examples
    --------
    >>> case = CaseSpec(id="c1", name="one", index=0, input={"q": "hi"}, tags=("a",))
    >>> copied = _copy_case(case)
    >>> copied == case, copied.input is case.input, copied.tags is case.tags
    (True, False, True)
    """
    memo: dict[int, Any] = {}
    state = {}
    for name, value in case.__dict__.items():
        kind = type(value)
        if kind in _ATOMIC or (kind is tuple and all(type(v) in _ATOMIC for v in value)):
            state[name] = value
        elif kind is dict and not value:  # most cases' metadata and tool arguments
            state[name] = memo.setdefault(id(value), {})
        else:
            state[name] = copy.deepcopy(value, memo)
    fresh = object.__new__(type(case))
    fresh.__dict__.update(state)  # as deepcopy does: a frozen dataclass has no setter
    return fresh


class PythonTarget:
    """Calls one Python callable per case, enforcing the variant's timeout.

    Parameters
    ----------
    fn
        The target (sync or async).
    timeout_seconds
        Per call.
    threads
        Size of the thread pool for sync targets (unused for async ones).
    pass_case
        Call ``fn(input, case=case)``; by default when ``fn`` accepts a ``case`` keyword.

    Examples
    --------
    >>> import asyncio
    >>> from agenticlens_frames.formats.model import CaseSpec
    >>> target = PythonTarget(lambda text: {"output": text.upper()}, timeout_seconds=1)
    >>> asyncio.run(target.call(CaseSpec(id="c1", name="c1", index=0, input="hi")))
    {'output': 'HI'}
    >>> target.close()
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        timeout_seconds: float,
        threads: int = 1,
        pass_case: bool | None = None,
        name: str = "python-target",
    ) -> None:
        self.fn = fn
        self.timeout = float(timeout_seconds)
        self.pass_case = accepts_keyword(fn, "case") if pass_case is None else pass_case
        self.is_async = _is_async(fn)
        self.pool = None if self.is_async else DaemonPool(threads, name=name)
        self._replies = _Replies()
        self._closed = False
        self.loop_thread = _LoopThread.shared() if self.is_async else None

    def _invoke(self, case: CaseSpec) -> Any:
        # A copy per call: concurrent calls must not see each other's mutations of input,
        # nor later calls — other trials, other variants — a case the target changed (its
        # input or its expectations, which score every attempt).
        if self.pass_case:
            case = _copy_case(case)
            value = case.input
        else:
            value = copy.deepcopy(case.input)
        try:
            return self.fn(value, case=case) if self.pass_case else self.fn(value)
        except BaseException as exc:  # the target's failure, not ours
            raise _failure(exc) from None

    def _invoke_posting(
        self, case: CaseSpec, home: asyncio.AbstractEventLoop, reply: asyncio.Future[Any]
    ) -> None:
        """:meth:`_invoke` on a pool thread, its outcome posted back to ``reply``."""
        try:
            result = self._invoke(case)
        except BaseException as exc:  # TargetFailure, or our own bug: the caller sees it
            self._replies.post(home, reply, None, exc)
        else:
            self._replies.post(home, reply, result, None)

    async def _ainvoke(self, case: CaseSpec) -> Any:
        result = self._invoke(case)
        return await _awaited(result) if inspect.isawaitable(result) else result

    async def call(self, case: CaseSpec) -> Any:
        """The raw payload of one call, or :class:`TargetFailure`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        withdrawn = False
        try:
            if self.loop_thread is not None:
                return await _outside_wait(self.loop_thread, self._ainvoke(case), self.timeout)
            assert self.pool is not None
            reply: asyncio.Future[Any] = loop.create_future()
            ticket = self.pool.start(self._invoke_posting, case, loop, reply)
            # A deadline on the reply, as for async targets: at the deadline the reply fails
            # with TimeoutError. The call is then withdrawn from the pool (as on Ctrl-C): a
            # call no thread has started yet never runs. (Once a thread has started it, and
            # so whenever a reply came back, withdrawing it does nothing.)
            watch = _deadlines(loop, self.timeout)
            expiry = watch.add(deadline, _expire_reply, reply)
            try:
                result = await reply
            finally:
                watch.discard(expiry)
                withdrawn = self.pool.withdraw(ticket)
            if inspect.isawaitable(result):  # a plain function that returned a coroutine
                result = await asyncio.wait_for(_awaited(result), max(deadline - loop.time(), 0.0))
            return result
        except TimeoutError:  # our deadline: the target's own TimeoutErrors arrive wrapped
            message = (
                f"TimeoutError: Python target timed out after {self.timeout:g} s for case "
                f"{case.id!r}"
            )
            if withdrawn and self.pool is not None:
                message += (
                    f" (never started: all {self.pool.size} threads were busy with earlier "
                    "calls that timed out and have not returned)"
                )
            raise TargetFailure("timeout", message) from None

    def close(self) -> None:
        """Release the thread pool (threads still in a timed-out call exit when it returns)."""
        if self.pool is not None:
            self.pool.shutdown()
        if self.loop_thread is not None and not self._closed:
            self.loop_thread.release()
        self._closed = True


async def _outside_wait(thread: _LoopThread, coroutine: Any, timeout: float) -> Any:
    """Run a call on another thread's loop; on timeout cancel it but do not wait for it
    to honour the cancellation."""
    call = thread.start(coroutine)
    # A deadline on the reply itself (cheaper than asyncio.wait's waiter at hundreds of
    # calls in flight): at the deadline the reply fails with TimeoutError and the call is
    # cancelled.
    loop = asyncio.get_running_loop()
    watch = _deadlines(loop, timeout)
    expiry = watch.add(loop.time() + timeout, _expire, (thread, call))
    try:
        return await call.reply
    except asyncio.CancelledError:  # Ctrl-C: stop the call too, without waiting for it
        thread.cancel(call)
        raise
    finally:
        watch.discard(expiry)


def _expire(at: tuple[_LoopThread, _Call]) -> None:
    thread, call = at
    if not call.reply.done():
        call.reply.set_exception(TimeoutError())
        thread.cancel(call)


def _expire_reply(reply: asyncio.Future[Any]) -> None:
    if not reply.done():
        reply.set_exception(TimeoutError())
