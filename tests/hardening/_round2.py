"""Shared checks of the second hostile round (issue 15): stage an experiment, run the CLI,
and assert the rules every case must keep — no traceback, the right exit code, a message
naming the place, no secret anywhere, earlier files intact."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from agenticlens_frames.cli import app

from ._corpus import BASE

ROOT = Path(__file__).resolve().parents[2]


def stage(folder: Path) -> tuple[Path, Path]:
    """The small recorded experiment of the corpus, copied to ``folder``."""
    shutil.copytree(BASE, folder, dirs_exist_ok=True)
    return folder / "manifest.yaml", folder / "suite.yaml"


def cli(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    """The CLI in this process (``app``, so no supervising parent)."""
    return CliRunner().invoke(app, [str(a) for a in args], env=env, catch_exceptions=True)


def cli_process(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The CLI as users start it: ``python -m agenticlens_frames.cli`` (``main()``)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agenticlens_frames.cli", *map(str, args)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links not followed) → SHA-256 of its bytes."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def assert_refused(result: Result, *needles: str, code: int = 1) -> str:
    """Exit ``code``, no traceback, every needle in the message; return the output."""
    text = result.output  # click 8.2+: stdout and stderr, interleaved
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception),
        text,
    )
    assert "Traceback" not in text, text
    assert result.exit_code == code, (result.exit_code, text)
    for needle in needles:
        assert needle in text, (needle, text)
    return text


def assert_process(
    done: subprocess.CompletedProcess[str], code: int, *needles: str, secrets: tuple[str, ...] = ()
) -> str:
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    assert done.returncode == code, (done.returncode, text)
    for needle in needles:
        assert needle in text, (needle, text)
    for secret in secrets:
        assert secret not in text, (secret, text)
    return text


def children(pid: int) -> list[int]:
    """The process ids whose parent is ``pid`` (read from /proc: Linux only)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found
