"""Which attempts are in flight, written where a supervising process can read it after a
crash of the run's process (see ``agenticlens_frames/_supervise.py``).

Each started attempt appends ``["start", variant, trial, case]``, an attempt whose judges
are being called appends ``["judge", ...]``, and each attempt whose journal record is
durable appends ``["end", ...]``, to a file named by the environment variable
:data:`INFLIGHT_ENV` (set only by the supervisor). The lines go to the kernel with
one ``write`` each and no ``fsync``: the file must survive the process, not the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["INFLIGHT_ENV", "INVOCATION_ENV", "InflightLog", "being_judged", "in_flight"]

#: Set by the supervising parent to the file the run's process marks its attempts in.
INFLIGHT_ENV = "AGENTICLENS_FRAMES_INFLIGHT"
#: Set by the supervisor to one id per command line, the same in every run process it
#: starts for it: a process started again continues its command line's ``--rerun-failed``
#: (the journal's ``reopen`` record names it) rather than reopening the failures again.
INVOCATION_ENV = "AGENTICLENS_FRAMES_INVOCATION"


class InflightLog:
    """Append-only marks of started and finished attempts."""

    def __init__(self, path: str | Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    @classmethod
    def from_env(cls) -> InflightLog | None:
        """The log the supervisor asked for, if any."""
        path = os.environ.get(INFLIGHT_ENV)
        if not path:
            return None
        try:
            return cls(path)
        except OSError:
            return None

    def _mark(self, event: str, variant: str, trial: int, case: str) -> None:
        line = json.dumps([event, variant, trial, case], ensure_ascii=True) + "\n"
        # Best effort: the journal, not this file, is the record.
        with contextlib.suppress(OSError):
            os.write(self._fd, line.encode())

    def started(self, variant: str, trial: int, case: str) -> None:
        """An attempt is about to call its target."""
        self._mark("start", variant, trial, case)

    def judging(self, record: dict[str, Any]) -> None:
        """An attempt's judges are about to be called (its reply is journaled)."""
        self._mark("judge", record["variant"], int(record["trial"]), record["case"])

    def ended(self, record: dict[str, Any]) -> None:
        """A journal record is durable; an ``attempt`` record ends its attempt."""
        if record.get("type") == "attempt":
            self._mark("end", record["variant"], int(record["trial"]), record["case"])

    def close(self) -> None:
        """Close the file."""
        with contextlib.suppress(OSError):
            os.close(self._fd)


def in_flight(path: str | Path) -> list[tuple[str, int, str]]:
    """Attempts started but not durably finished, in the order they started.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "inflight"
    >>> log = InflightLog(path)
    >>> log.started("v", 1, "c1"); log.started("v", 1, "c2")
    >>> log.ended({"type": "attempt", "variant": "v", "trial": 1, "case": "c1"})
    >>> in_flight(path)
    [('v', 1, 'c2')]
    """
    return list(_open_attempts(path))


def being_judged(path: str | Path) -> set[tuple[str, int, str]]:
    """The attempts of :func:`in_flight` whose judges were being called.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "inflight"
    >>> log = InflightLog(path)
    >>> log.started("v", 1, "c1"); log.started("v", 1, "c2")
    >>> log.judging({"variant": "v", "trial": 1, "case": "c1"})
    >>> being_judged(path)
    {('v', 1, 'c1')}
    """
    return {key for key, judged in _open_attempts(path).items() if judged}


def _open_attempts(path: str | Path) -> dict[tuple[str, int, str], bool]:
    """Attempts started but not durably finished, in the order they started, each with
    whether its judges were being called."""
    open_attempts: dict[tuple[str, int, str], bool] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            event, variant, trial, case = json.loads(line)
        except (ValueError, TypeError):
            continue  # a line torn by the crash
        key = (str(variant), int(trial), str(case))
        if event == "start":
            open_attempts[key] = False
        elif event == "judge":
            if key in open_attempts:
                open_attempts[key] = True
        else:
            open_attempts.pop(key, None)
    return open_attempts
