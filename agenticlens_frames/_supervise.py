"""The run must not end silently: ``experiment run`` works in a child process, watched.

A python target or an evaluator runs inside the run's process, so it can end that process
in ways no ``try`` catches: ``os._exit(0)``, a signal it sends itself, a crash in native
code, the out-of-memory killer. Without a watcher the CLI would then exit 0 (or a code that
means something else) with no report.

So the console script runs ``experiment run`` in a child process and waits for it. The
child says it finished by writing its exit code to a file (:data:`DONE_ENV`); a child that
ends without doing so was ended by something else. The parent then

1. reads which attempts were in flight (``runner/inflight.py``) and records each in the
   run journal as a failed attempt whose error says what ended the process;
2. starts the child again on the same run folder, which resumes: finished attempts are not
   called again, and the culprit is not called again either;
3. gives up after :data:`MAX_RESTARTS_ENV` (default 20) such restarts, or when no attempt
   was in flight, saying what ended the run and how to resume; exit status 7.

Runs without ``--run-dir`` and with live targets get a private run folder for this, removed
at the end (kept, and named, when the run was interrupted). Ctrl-C, ``SIGTERM`` and
``SIGHUP`` are passed on to the child, which stops as it always did (exit 130, finished
work kept); if the parent is killed the child is killed too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .runner.inflight import INFLIGHT_ENV, in_flight

__all__ = ["DONE_ENV", "EXIT_ENDED", "MAX_RESTARTS_ENV", "SUPERVISE_ENV", "mark_done", "supervise"]

#: Set in the child: the file it writes its exit code to when it ends deliberately.
DONE_ENV = "AGENTICLENS_FRAMES_DONE"
#: ``0`` runs ``experiment run`` in one process, unwatched (for debugging).
SUPERVISE_ENV = "AGENTICLENS_FRAMES_SUPERVISE"
#: Most restarts after attempts that ended the process (default 20).
MAX_RESTARTS_ENV = "AGENTICLENS_FRAMES_MAX_RESTARTS"
#: Exit status when the run's process ended without finishing and could not be resumed.
EXIT_ENDED = 7


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


def _blame(run_dir: Path, suspects: list[tuple[str, int, str]], what: str) -> list[str]:
    """Journal each suspect attempt as failed; return the ones recorded."""
    from .runner.journal import now_iso, read_segments

    journal = run_dir / "journal"
    segments = sorted(p for p in journal.glob("*.jsonl") if p.stem.isdigit())
    try:
        done = {
            (r.get("variant"), int(r.get("trial", -1)), r.get("case"))
            for r in read_segments(segments)
            if r.get("type") == "attempt"
        }
    except Exception:  # a damaged journal: the child reports it on restart
        return []
    suspects = [s for s in suspects if s not in done]
    if not suspects:
        return []
    shared = f" (one of {len(suspects)} attempts in flight)" if len(suspects) > 1 else ""
    error = f"ProcessEnded: the run's process {what} during this attempt{shared}"
    now = now_iso()
    records: list[dict[str, Any]] = []
    for variant, trial, case in suspects:
        base = {"variant": variant, "trial": trial, "case": case, "session": f"{now}-supervisor"}
        records.append(
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
        records.append(
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
    number = int(segments[-1].stem) + 1 if segments else 1
    journal.mkdir(parents=True, exist_ok=True)
    path = journal / f"{number:06d}.jsonl"
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return [f"{v} trial {t} case {c}" for v, t, c in suspects]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _say(text: str) -> None:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False).print(Text(text, style="yellow"), soft_wrap=True)


def supervise(argv: list[str]) -> int:
    """Run ``experiment run`` with ``argv`` in a watched child; return the exit status."""
    work = Path(tempfile.mkdtemp(prefix="agenticlens-frames-"))
    run_dir_text = _option(argv, "--run-dir")
    injected = run_dir_text is None and _has_live_targets(argv)
    if injected:
        argv = [*argv, "--run-dir", str(work / "run")]
        run_dir_text = str(work / "run")
    run_dir = Path(run_dir_text) if run_dir_text else None
    limit = int(os.environ.get(MAX_RESTARTS_ENV, "20") or 20)
    restarts = 0
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: Any) -> None:
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    previous = {
        s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    keep_run = False
    try:
        while True:
            done = work / "done"
            inflight = work / "inflight"
            done.unlink(missing_ok=True)
            inflight.unlink(missing_ok=True)
            env = {**os.environ, DONE_ENV: str(done), INFLIGHT_ENV: str(inflight)}
            # A process group of its own: Ctrl-C reaches it once, through us.
            child = subprocess.Popen(
                [sys.executable, "-P", "-m", "agenticlens_frames.cli", *argv],
                env=env,
                process_group=0,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
            returncode = child.wait()
            if done.exists():
                code = int(done.read_text() or returncode)
                # Kept only when the child's message points the user at it.
                keep_run = injected and code in (6, 130)
                return code
            what = _describe(returncode)
            suspects = in_flight(inflight)
            blamed = _blame(run_dir, suspects, what) if run_dir and suspects else []
            if blamed and restarts < limit and returncode != -signal.SIGTERM:
                restarts += 1
                _say(
                    f"The run's process {what} during {'; '.join(blamed)}: recorded as a "
                    f"failed attempt; resuming ({restarts} of at most {limit} restarts, "
                    f"{MAX_RESTARTS_ENV})."
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
