"""The run must not end silently: ``experiment run`` works in a child process, watched.

A python target or an evaluator runs inside the run's process, so it can end that process
in ways no ``try`` catches: ``os._exit(0)``, a signal it sends itself, a crash in native
code, the out-of-memory killer. Without a watcher the CLI would then exit 0 (or a code that
means something else) with no report.

So the console script runs ``experiment run`` in a child process and waits for it. The
child says it finished by writing its exit code to a file (:data:`DONE_ENV`); a child that
ends without doing so was ended by something else. The parent cannot tell a target or an
evaluator that ended the process from an outside kill (the out-of-memory killer, ``kill
-9`` on the process seen in ``top``), so it records an attempt as having ended the process
only when the evidence points at it: when the attempt was in flight at two ends of the
process (:func:`_blame`). It

1. reads which attempts were in flight (``runner/inflight.py``): those calling their target
   or being judged are the suspects (a reply journaled and waiting for its judge was doing
   nothing; it is judged on resume);
2. records each suspect in flight for the first time at an end as a ``suspect`` in the run
   journal, and nothing else: the resumed run calls the suspects again first, one at a
   time, each alone until its record is on disk, before any other work
   (``runner/scheduler.py``). An innocent one simply finishes; a real culprit ends the
   process again, alone;
3. records a suspect that was in flight at an earlier end too as a failed attempt whose
   error says what ended the process — or, for an attempt whose reply was journaled and
   was being judged, records that its judging ended: the resumed run keeps the reply and
   makes the judge sample in progress unavailable with that error, without calling the
   judge again (an end while judging it once more fails it);
4. starts the child again on the same run folder, which resumes: finished attempts are not
   called again, nor is an attempt recorded as having ended the process (and a
   ``--rerun-failed`` continues: the children share one ``INVOCATION_ENV``);
5. gives up after :data:`MAX_RESTARTS_ENV` (default 20) restarts, or when no attempt was in
   flight, saying what ended the run and how to resume; exit status 7.

Runs without ``--run-dir`` and with live targets get a private run folder for this, removed
at the end (kept, and named, when the run was interrupted). Ctrl-C, ``SIGTERM`` and
``SIGHUP`` (each unless ignored) are passed on to the child as ``SIGINT``, so it stops as
on Ctrl-C: exit 130, every finished attempt kept, the calls in flight not recorded, the
run resumable with the same ``--run-dir``. Once it has passed a signal on, the parent
records nothing and starts no child again: a child that then ends without saying so (one
killed by the signal before it could act on it) gives exit 130 too, with the command that
resumes. If the parent is killed the child is killed too.

The child is forked from the parent, which has imported the command line and done nothing
else, so it does not pay for a second interpreter's start-up and imports (0.1–0.3 s a
run). Where forking is not safe (not Linux, or another thread runs here) it is a new
interpreter instead, ``python -P -m agenticlens_frames.cli`` with the same arguments; the
forked child is set up to behave as that one does (see :func:`_become_child`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, NoReturn

from ._fork import can_fork, flush_output, fork, wait_for_workers
from .errors import InputError
from .runner.inflight import INFLIGHT_ENV, INVOCATION_ENV, being_judged, in_flight

__all__ = [
    "DONE_ENV",
    "EXIT_ENDED",
    "EXIT_INTERRUPTED",
    "MAX_RESTARTS_ENV",
    "PRIVATE_RUN_DIR_ENV",
    "SUPERVISE_ENV",
    "exit_now",
    "listen",
    "mark_done",
    "supervise",
]

#: Set in the child: the file it writes its exit code to when it ends deliberately.
DONE_ENV = "AGENTICLENS_FRAMES_DONE"
#: Set in the child when the run folder holds only this command's attempts (the
#: supervisor's private one, no --run-dir given; or a --run-dir with no finished attempt
#: when the command began): its path. A resume from it is the supervisor's restart,
#: already said, not a folder kept from an earlier command line.
PRIVATE_RUN_DIR_ENV = "AGENTICLENS_FRAMES_PRIVATE_RUN_DIR"
#: ``0`` runs ``experiment run`` in one process, unwatched (for debugging).
SUPERVISE_ENV = "AGENTICLENS_FRAMES_SUPERVISE"
#: Most restarts after the run's process ended without finishing (default 20).
MAX_RESTARTS_ENV = "AGENTICLENS_FRAMES_MAX_RESTARTS"
#: Exit status when the run's process ended without finishing and could not be resumed.
EXIT_ENDED = 7
#: Exit status of a command that failed: invalid input, an output it could not write.
EXIT_FAILED = 1
#: Exit status when the run was stopped by a signal (Ctrl-C, SIGTERM, SIGHUP).
EXIT_INTERRUPTED = 130
#: The signals the parent passes on to the child.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def wanted(argv: list[str]) -> bool:
    """Whether this command line should run supervised (``experiment run``, not --help)."""
    if os.environ.get(DONE_ENV) or os.environ.get(SUPERVISE_ENV) == "0":
        return False
    words = [a for a in argv if not a.startswith("-")]
    return words[:2] == ["experiment", "run"] and not {"--help", "-h"} & set(argv)


def mark_done(code: int) -> None:
    """In the child: record that the command ended deliberately with ``code``."""
    path = os.environ.get(DONE_ENV)
    if path:
        with contextlib.suppress(OSError):
            Path(path).write_text(str(code), encoding="utf-8")


def _option(argv: list[str], name: str) -> str | None:
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _has_live_targets(argv: list[str]) -> bool:
    words = [a for a in argv[2:] if not a.startswith("-")]
    if not words:
        return False
    try:
        from .formats import load_manifest

        manifest = load_manifest(words[0])
    except Exception:  # the child reports the problem, with its place
        return False
    return any(v.target_kind != "recorded" for v in manifest.variants)


def _describe(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return (
        f"exited with status {returncode} without finishing (os._exit, or exit from native "
        "code, in a target or an evaluator)"
    )


def _blame(
    run_dir: Path,
    suspects: list[tuple[str, int, str]],
    what: str,
    judging: Collection[tuple[str, int, str]] = (),
) -> list[tuple[str, str]]:
    """Record in the journal what became of each attempt that was in flight (``suspects``,
    ``judging`` those of them being judged) when the run's process ended.

    An attempt whose journaled reply was waiting for its judges did nothing: it is left to
    be judged on resume. The others (calling their target, or being judged) are the
    suspects. A suspect that was in flight at an earlier end of the process too (it has a
    ``suspect`` record) is journaled as failed or, when it was being judged, its judging
    as ended; each other one gets a ``suspect`` record, and the resumed run calls it again
    alone, before other work.

    Returns
    -------
    list of (str, str)
        Each attempt's name with what became of it: ``"failed"``, ``"judging"``,
        ``"answered"`` or ``"suspect"``; empty when the journal cannot be read.

    Raises
    ------
    InputError
        A damaged journal record, naming its segment, line and fix (the journal's own
        error): nothing is recorded, and the run cannot resume until it is mended.
    """
    from .runner.journal import PROCESS_ENDED, RERUNNABLE, encode_record, now_iso, read_segments

    journal = run_dir / "journal"
    segments = sorted(p for p in journal.glob("*.jsonl") if p.stem.isascii() and p.stem.isdigit())
    records: list[tuple[Any, tuple[Any, int, Any]]] = []
    # Per attempt: the segment of its latest attempt record, and that record's status.
    latest: dict[tuple[Any, int, Any], tuple[int, Any]] = {}
    try:
        for number, segment in enumerate(segments):
            for r in read_segments([segment]):
                if r.get("type") not in ("attempt", "answered", "judge_ended", "suspect"):
                    continue
                key = (r.get("variant"), int(r.get("trial", -1)), r.get("case"))
                records.append((r.get("type"), key))
                if r["type"] == "attempt":
                    latest[key] = (number, r.get("status"))
    except InputError:
        # A damaged record: said by the caller now. Taken as "nothing to blame", it gave
        # "run again with --run-dir to resume", and the resume was refused for the damage.
        raise
    except Exception:  # unreadable otherwise (a segment removed meanwhile): no restart
        return []
    # Finished: recorded by the session that ended (which the in-flight list may not show
    # yet), or earlier with an outcome no session calls again. An earlier target error or
    # timeout in flight now was being called again (--rerun-failed): not finished, so a
    # run it ends again blames it instead of restarting until the restart limit. So is an
    # earlier finished attempt being judged now: its judge was unavailable and the run
    # judges it again from its reply (``Ledger.reopen_unavailable``).
    done = {
        key
        for key, (number, status) in latest.items()
        if number == len(segments) - 1 or (status not in RERUNNABLE and key not in judging)
    }
    # An end while judging an attempt whose judging ended before (a plain evaluator of its
    # case, say, which is run again on resume) fails it, as any attempt: no restart loop.
    ended_before = {key for kind, key in records if kind == "judge_ended"}
    answered = {key for kind, key in records if kind == "answered"} - ended_before
    suspected = {key for kind, key in records if kind == "suspect"}
    suspects = [s for s in suspects if s not in done]
    waiting = [s for s in suspects if s in answered and s not in judging]
    active = [s for s in suspects if s not in waiting]
    # What this end of the process is called in the records of its suspects.
    shared = f"one of {len(active)}" if len(active) > 1 else "the only attempt"
    now = now_iso()
    records_out: list[dict[str, Any]] = []
    fates: list[tuple[str, str]] = []
    for variant, trial, case in suspects:
        key = (variant, trial, case)
        base = {"variant": variant, "trial": trial, "case": case, "session": f"{now}-supervisor"}
        name = f"{variant} trial {trial} case {case}"
        if key in waiting:
            # Its reply waited for a judge that had not started: judged on resume.
            fates.append((name, "answered"))
            continue
        if key not in suspected:
            # Nothing points at it yet (the process may have been killed from outside):
            # called again alone, before other work.
            fates.append((name, "suspect"))
            records_out.append(
                {
                    "type": "suspect",
                    **base,
                    "error": f"the run's process {what} while this attempt was {shared} in flight",
                }
            )
            continue
        # In flight at an earlier end of the process too (alone this time, unless others
        # were started beside it): it ended the process.
        again = f"{shared} in flight; in flight when it ended before too"
        if key in answered:
            fates.append((name, "judging"))
            # The target had answered and its reply is on disk: the judge (or whatever
            # ended the process while it judged) must not cost the agent its attempt. The
            # resumed run keeps the reply and records the judge sample in progress as
            # unavailable, without calling that judge again (runner/journal.py).
            records_out.append(
                {
                    "type": "judge_ended",
                    **base,
                    "error": f"the run's process {what} while this attempt was being "
                    f"judged ({again})",
                }
            )
            continue
        fates.append((name, "failed"))
        error = f"{PROCESS_ENDED} the run's process {what} during this attempt ({again})"
        records_out.append(
            {
                "type": "call",
                **base,
                "call": 1,
                "outcome": "error",
                "error": error,
                "elapsed_ms": 0.0,
                "started_at": now,
            }
        )
        records_out.append(
            {
                "type": "attempt",
                **base,
                "status": "target_error",
                "calls": 1,
                "error": error,
                "payload": None,
                "elapsed_ms": 0.0,
                "started_at": now,
            }
        )
    if not records_out:
        return fates
    number = int(segments[-1].stem) + 1 if segments else 1
    journal.mkdir(parents=True, exist_ok=True)
    path = journal / f"{number:06d}.jsonl"
    # Lines as the run's journal writes them (with their checksums, which readers verify).
    data = b"".join(encode_record(r)[1] for r in records_out)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return fates


_FATES = {
    "failed": "{}: recorded as a failed attempt",
    "judging": "the judging of {}: its reply kept, the judge sample in progress recorded as "
    "unavailable",
    "answered": "{}: its reply kept, to be judged on resume",
    "suspect": "{}: to be called again alone, before other work (not recorded as failed)",
}


def _blamed_text(blamed: list[tuple[str, str]]) -> str:
    """What the supervisor did with the attempts in flight (``_blame``), for its message.

    Examples
    --------
    >>> _blamed_text([("a trial 1 case c1", "failed")])
    'a trial 1 case c1: recorded as a failed attempt'
    >>> text = _blamed_text([("a trial 1 case c1", "judging"), ("b trial 2 case c3", "answered")])
    >>> text.split("; ")[1]
    'b trial 2 case c3: its reply kept, to be judged on resume'
    >>> text.startswith("the judging of a trial 1 case c1: its reply kept, the judge sample")
    True
    >>> _blamed_text([("a trial 1 case c1", "suspect")])
    'a trial 1 case c1: to be called again alone, before other work (not recorded as failed)'
    >>> text = _blamed_text([("a trial 1 case c1", "suspect"), ("b trial 1 case c1", "suspect")])
    >>> text.split(": ")
    ['a trial 1 case c1 and b trial 1 case c1', '2 attempts, each to be called again alone, \
before other work (none recorded as failed)']
    >>> _blamed_text([(f"a trial 1 case c{i}", "suspect") for i in range(1, 6)]).split(":")[0]
    'a trial 1 case c1, a trial 1 case c2, a trial 1 case c3 and 2 more'
    """
    parts = [_FATES[fate].format(name) for name, fate in blamed if fate != "suspect"]
    suspects = [name for name, fate in blamed if fate == "suspect"]
    if len(suspects) == 1:
        parts.append(_FATES["suspect"].format(suspects[0]))
    elif suspects:
        shown = " and ".join(suspects) if len(suspects) == 2 else ", ".join(suspects[:3])
        if len(suspects) > 3:
            shown += f" and {len(suspects) - 3} more"
        parts.append(
            f"{shown}: {len(suspects)} attempts, each to be called again alone, before other "
            "work (none recorded as failed)"
        )
    return "; ".join(parts)


def _stopped_text(signum: int, what: str | None, run_dir: Path | None) -> str:
    """The parent's message when it stops the run on a signal and the child did not say so.

    Examples
    --------
    >>> print(_stopped_text(signal.SIGTERM, "was killed by SIGINT", Path("runs/x")))
    Stopped by SIGTERM before the run finished (its process was killed by SIGINT); what \
finished is kept: run again with --run-dir runs/x to resume.
    >>> _stopped_text(signal.SIGHUP, None, None)
    'Stopped by SIGHUP before the run finished.'
    """
    how = f" (its process {what})" if what else ""
    where = (
        f"; what finished is kept: run again with --run-dir {run_dir} to resume"
        if run_dir is not None
        else ""
    )
    return f"Stopped by {signal.Signals(signum).name} before the run finished{how}{where}."


def _has_finished_attempts(run_dir: Path) -> bool:
    """Whether the journal of ``run_dir`` records a finished attempt (read up to the first).

    Examples
    --------
    >>> _has_finished_attempts(Path("no-such-run-folder"))
    False
    >>> _has_finished_attempts(Path("x" * 300))  # too long a name: the run will say so
    False
    """
    try:
        segments = sorted((run_dir / "journal").glob("*.jsonl"))
    except OSError:  # a name too long, a file in the way: the run itself says what is wrong
        return False
    for segment in segments:
        with contextlib.suppress(OSError), open(segment, "rb") as handle:
            if any(_is_attempt(line) for line in handle):
                return True
    return False


def _is_attempt(line: bytes) -> bool:
    try:
        record = json.loads(line)
    except ValueError:  # a line torn by the end of the process
        return False
    return isinstance(record, dict) and record.get("type") == "attempt"


def _kept_text(run_dir: Path) -> str:
    """The parent's message when it keeps the finished attempts of a run that failed.

    Examples
    --------
    >>> print(_kept_text(Path("/tmp/agenticlens-frames-x/run")))
    The finished attempts are kept in /tmp/agenticlens-frames-x/run: fix the problem above \
and run again with --run-dir /tmp/agenticlens-frames-x/run to finish without calling them again.
    """
    return (
        f"The finished attempts are kept in {run_dir}: fix the problem above and run again "
        f"with --run-dir {run_dir} to finish without calling them again."
    )


def listen() -> None:
    """In the child: act on the ``SIGINT`` its parent passes on (as Ctrl-C) even when the
    parent was started ignoring ``SIGINT`` (``cmd &`` in a script): the parent passes on
    ``SIGTERM`` and ``SIGHUP`` as ``SIGINT`` too."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class _Forked:
    """A forked child, with the two methods of ``subprocess.Popen`` the supervisor uses.

    Only :meth:`wait` reaps the child: :meth:`send_signal` runs in a signal handler, which
    may interrupt :meth:`wait`, and a child reaped there would leave ``wait`` nothing to
    wait for (and its pid free for another process to take).
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        """Wait for the child to end; its status as ``Popen.wait`` gives it (-N: signal N)."""
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the child unless it has ended."""
        if self.returncode is not None:
            return
        try:
            # WNOWAIT: look without reaping (a zombie keeps its pid, so the kill is safe).
            ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped by wait() an instant ago
            return
        if ended is None:
            os.kill(self.pid, signum)


def _exit_status(command: Callable[[], object]) -> int:
    """Run ``command`` and return the exit status the interpreter would end with after it.

    Returns
    -------
    int
        0 when it returns; a ``SystemExit``'s code (``None`` is 0; anything but a whole
        number is printed to stderr and gives 1, as at the interpreter's exit); 1 after
        any other exception, printed by ``sys.excepthook``.
    """
    try:
        command()
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        print(done.code, file=sys.stderr)
        return 1
    except BaseException as exc:  # the interpreter's top level, emulated
        sys.excepthook(type(exc), exc, exc.__traceback__)
        if isinstance(exc, KeyboardInterrupt):
            # The interpreter ends by SIGINT after an uncaught KeyboardInterrupt.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return 1
    return 0


def _become_child(
    argv: list[str],
    env: dict[str, str],
    handlers: dict[int, Any],
    mask: set[signal.Signals],
    parent: int,
    command: Callable[[], object],
) -> NoReturn:  # pragma: no cover - runs in the forked child (tests run it as a process)
    """In the forked child: become what ``python -P -m agenticlens_frames.cli`` would be,
    run ``command`` and end the process (never return into the parent's code)."""
    code = 1
    try:
        os.setpgid(0, 0)  # a process group of its own: Ctrl-C reaches it once, through us
        _die_with_parent()
        if os.getppid() != parent:  # the parent ended before the line above: so do we
            os._exit(1)
        # A new interpreter starts with the signal handlers the parent had before it
        # installed its forwarding ones.
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        listen()
        os.environ.update(env)
        sys.argv[1:] = argv
        _drop_script_folder()
        # What came from the parent (the CLI's modules) lives as long as the process:
        # out of the collector's reach, each full collection skips it (and does not write
        # to, and so copy, every page of it).
        gc.freeze()

        def run() -> None:
            # Signals held since the fork arrive now, handled as in the command itself.
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            command()

        code = _exit_status(run)
        # The interpreter's exit: wait for non-daemon threads, then the atexit functions.
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    finally:
        exit_now(code)


def exit_now(code: int) -> NoReturn:
    """End this process with ``code`` after flushing stdout and stderr and waiting for the
    workers left to end (:func:`~agenticlens_frames._fork.wait_for_workers`), without the
    interpreter's teardown (freeing every object one by one) and without returning.

    For a process whose files are all closed, and for the forked child, which must never
    return into the parent's code.
    """
    flush_output()
    wait_for_workers()
    os._exit(code)


def _drop_script_folder() -> None:  # pragma: no cover - runs in the forked child
    """What ``-P`` does: no script folder, working directory or ``''`` first on
    ``sys.path`` (where the interpreter put it at start-up; the CLI adds nothing before)."""
    if sys.flags.safe_path or not sys.path:
        return
    first = {"", os.path.dirname(os.path.realpath(sys.argv[0]))}
    with contextlib.suppress(OSError):  # a working directory since removed
        first.add(os.getcwd())
    if sys.path[0] in first:
        del sys.path[0]


def _start(
    argv: list[str],
    env: dict[str, str],
    command: Callable[[], object] | None,
    handlers: dict[int, Any],
    mask: set[signal.Signals],
) -> subprocess.Popen[bytes] | _Forked:
    """Start the child: forked when ``command`` is given and forking is safe, else a new
    interpreter. ``handlers`` and ``mask`` are what the child starts with."""
    if command is None or not can_fork():
        return subprocess.Popen(
            [sys.executable, "-P", "-m", "agenticlens_frames.cli", *argv],
            env={**os.environ, **env},
            process_group=0,  # a process group of its own: Ctrl-C reaches it once, through us
            preexec_fn=functools.partial(_as_started, mask),
        )
    parent = os.getpid()
    pid = fork()
    if pid == 0:
        _become_child(argv, env, handlers, mask, parent, command)
    return _Forked(pid)


def _as_started(mask: set[signal.Signals]) -> None:  # pragma: no cover - in the child
    """Before the new interpreter's exec: the signal mask the parent had, dies with it."""
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if sys.platform == "linux":
        _die_with_parent()


def _say(text: str) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(stderr=True, highlight=False)
    if console.is_terminal:
        # The child may have ended mid-way through a progress line: start a fresh one.
        console.file.write("\n")
    console.print(Text(text, style="yellow"), soft_wrap=True)


def supervise(argv: list[str], command: Callable[[], object] | None = None) -> int:
    """Run ``experiment run`` with ``argv`` in a watched child; return the exit status.

    Parameters
    ----------
    argv
        The command line after the program's name.
    command
        Runs the command line of ``sys.argv`` in this process (the console script's entry
        point without the supervision). When given and :func:`can_fork` allows it, the
        child is forked and runs it; otherwise the child is a new interpreter.

    Returns
    -------
    int
        The child's exit status, or :data:`EXIT_ENDED`.
    """
    work = Path(tempfile.mkdtemp(prefix="agenticlens-frames-"))
    run_dir_text = _option(argv, "--run-dir")
    # Not for --rerun-failed: without a --run-dir of its own the run refuses it (a private
    # folder holds no failures to call again).
    injected = run_dir_text is None and "--rerun-failed" not in argv and _has_live_targets(argv)
    if injected:
        argv = [*argv, "--run-dir", str(work / "run")]
        run_dir_text = str(work / "run")
    run_dir = Path(run_dir_text) if run_dir_text else None
    # A --run-dir with no finished attempt yet holds only this command's, as the private
    # folder does: a resume from it after a restart (said as it happens) is no resume of
    # an earlier job's folder, which a fresh CI job's log said it was.
    own = injected or (run_dir is not None and not _has_finished_attempts(run_dir))
    limit = int(os.environ.get(MAX_RESTARTS_ENV, "20") or 20)
    restarts = 0
    child: subprocess.Popen[bytes] | _Forked | None = None
    #: The signals received (and passed on): once one came, the run only stops.
    stopping: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        stopping.append(signum)
        if child is not None:
            # As SIGINT whatever it was: the child stops as on Ctrl-C (see `listen`).
            child.send_signal(signal.SIGINT)  # (not once it has ended)

    # A signal the parent was started ignoring (`nohup`, `cmd &` in a script) stays ignored,
    # in the child too.
    previous = {
        s: signal.signal(s, forward) for s in FORWARDED if signal.getsignal(s) != signal.SIG_IGN
    }
    keep_run = False
    try:
        while True:
            if stopping:  # before the first child, or between two
                keep_run = injected
                _say(_stopped_text(stopping[0], None, run_dir))
                return EXIT_INTERRUPTED
            done = work / "done"
            inflight = work / "inflight"
            done.unlink(missing_ok=True)
            inflight.unlink(missing_ok=True)
            env = {DONE_ENV: str(done), INFLIGHT_ENV: str(inflight), INVOCATION_ENV: work.name}
            if own and run_dir is not None:
                env[PRIVATE_RUN_DIR_ENV] = str(run_dir)
            # Held until `child` names the new process, so none is lost: each reaches us
            # and is passed on, or reaches the child, which acts on it once it runs.
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
            try:
                child = _start(argv, env, command, previous, mask)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            returncode = child.wait()
            if done.exists():
                code = int(done.read_text() or returncode)
                # Kept only when the child's message points the user at it.
                keep_run = injected and code in (6, EXIT_INTERRUPTED)
                if injected and code == EXIT_FAILED and _has_finished_attempts(work / "run"):
                    # The command failed after attempts finished (an output it could not
                    # write, say): they may have cost hours and money, so they are kept.
                    keep_run = True
                    _say(_kept_text(work / "run"))
                return code
            what = _describe(returncode)
            if stopping:
                # Asked to stop: the attempts in flight were stopped, not ended by a target;
                # they are called again on resume.
                keep_run = injected
                _say(_stopped_text(stopping[0], what, run_dir))
                return EXIT_INTERRUPTED
            suspects = in_flight(inflight)
            try:
                blamed = (
                    _blame(run_dir, suspects, what, being_judged(inflight))
                    if run_dir and suspects
                    else []
                )
            except InputError as damaged:
                keep_run = injected
                _say(
                    f"The run ended before writing its outputs: its process {what}, and "
                    f"its journal cannot be read to resume: {damaged}. What finished is "
                    f"kept: once the journal is mended, run again with --run-dir {run_dir} "
                    "to resume."
                )
                return EXIT_ENDED
            if blamed and restarts < limit:
                restarts += 1
                _say(
                    f"The run's process {what} during {_blamed_text(blamed)}; resuming "
                    f"({restarts} of at most {limit} restarts, {MAX_RESTARTS_ENV})."
                )
                continue
            keep_run = injected
            where = (
                f"; what finished is kept: run again with --run-dir {run_dir} to resume"
                if run_dir is not None
                else ""
            )
            _say(f"The run ended before writing its outputs: its process {what}{where}.")
            return EXIT_ENDED
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if keep_run and (work / "run").is_dir():
            for item in work.iterdir():
                if item.name != "run":
                    item.unlink(missing_ok=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
