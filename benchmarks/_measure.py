"""A command's peak memory and CPU time, without the benchmark's own in them.

Every benchmark that runs a command in a fresh process measures it here, the same way:

* **peak RSS** (``max_rss_mib``) — the largest peak resident set of one process among the
  command and every process it waited for, as the kernel accounts it for a child that
  exits. Not taken from the benchmark's own ``os.wait4`` or ``RUSAGE_CHILDREN``: on Linux
  a child started by ``fork`` + ``exec`` keeps the peak of the memory it started from
  (``exec`` records the old address space's high-water mark in the process's ``maxrss``),
  and ``subprocess`` starts children by ``vfork``, whose old address space is the
  *parent's*: a 10 MiB command started by a benchmark that once held 400 MiB reports 400
  MiB. So the command is run by a small process of its own — GNU ``time`` where there is
  one, else this file run as a script (a Python interpreter's 10 MiB is then the smallest
  peak it can report) — which waits for it and writes its usage to a file.
* **CPU** (``cpu``) — user + kernel seconds of the command and every process it waited
  for, of this run alone (``RUSAGE_CHILDREN`` of the benchmark sums every child it ever
  waited for; the wrapper has only this one).
* **all processes** (``tree_pss_mib``) — the proportional set size of the command and all
  its descendants together, sampled every ``interval`` seconds: pages shared after a fork
  count once, so this is the memory the whole run holds. No counter keeps this peak, so it
  is a sample: a peak shorter than the interval can be missed (a lower bound).

The largest process's peak is exact but is one process's; the sampled sum is the whole
tree's but may miss a short peak. Report both.

    python benchmarks/_measure.py REPORT COMMAND...   # the wrapper (no GNU time)
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

#: GNU time, where the machine has it.
GNU_TIME = "/usr/bin/time"
#: What the wrapper writes (GNU time's ``-f`` format): peak RSS KiB, user s, kernel s.
_FORMAT = "%M %U %S"
#: How often the process tree's proportional set size is sampled by default (seconds).
#: Reading ``smaps_rollup`` of a 1 GiB process takes a few milliseconds of a core.
INTERVAL = 0.05


@dataclass(frozen=True)
class Usage:
    """What :func:`measure` measured of one run of a command."""

    #: Wall time from start to exit, seconds (the wrapper's start-up included, ~1 ms).
    seconds: float
    #: User-mode seconds of the command and every process it waited for.
    user: float
    #: Kernel-mode seconds of the same.
    system: float
    #: Largest peak RSS of one process among the command and those it waited for, MiB.
    max_rss_mib: float
    #: Peak sampled PSS of the command and all its descendants together, MiB (None where
    #: ``/proc/*/smaps_rollup`` is not readable).
    tree_pss_mib: float | None
    #: The command's exit status (``-N``: killed by signal N).
    returncode: int
    #: Every sample of the tree's PSS, MiB, in order (empty where none was taken): how
    #: much a coarser sampling would have missed is ``max(samples[::k])`` against the peak.
    samples: tuple[float, ...] = ()

    @property
    def cpu(self) -> float:
        """User + kernel seconds of the command and every process it waited for."""
        return self.user + self.system


@functools.cache
def has_gnu_time() -> bool:
    """Whether :data:`GNU_TIME` is GNU time (``-f`` and ``-o``; BusyBox's is not)."""
    try:
        done = subprocess.run(
            [GNU_TIME, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return False
    return "GNU" in done.stdout + done.stderr


def wrapped(command: Sequence[str], report: Path) -> list[str]:
    """``command`` run by a small process that writes its usage to ``report``."""
    if has_gnu_time():
        return [GNU_TIME, "-f", _FORMAT, "-o", str(report), *command]
    return [sys.executable, "-S", "-E", str(Path(__file__).resolve()), str(report), *command]


def read_report(report: Path) -> tuple[float, float, float]:
    """(peak RSS MiB, user seconds, kernel seconds) from a report of :func:`wrapped`.

    GNU time puts "Command exited with non-zero status N" (or "... terminated by signal")
    on a line before the figures: the figures are the last line.
    """
    peak_kib, user, system = report.read_text().split()[-3:]
    return int(peak_kib) / 1024, float(user), float(system)


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (from ``/proc``, at this instant)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_pss_mib(root: int) -> float:
    """Proportional set size of a process and all its descendants now, MiB: pages shared
    after a fork count once in total, so this is the memory the whole run really holds."""
    total = 0
    for pid in descendants(root):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            continue
    return total / 1024


def measure(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    timeout: float | None = None,
    interval: float | None = INTERVAL,
) -> Usage | None:
    """Run ``command`` (stdout and stderr as for ``subprocess.Popen``) and measure it.

    ``interval=None`` samples nothing (``tree_pss_mib`` None): the sampling's few
    milliseconds of a core every interval are then not in the times. Returns None when the
    command ran past ``timeout`` seconds (it is then killed).
    """
    sample = interval is not None and Path("/proc/self/smaps_rollup").exists()
    with tempfile.TemporaryDirectory(prefix="alf-measure-") as tmp:
        report = Path(tmp) / "usage"
        start = time.perf_counter()
        proc = subprocess.Popen(
            wrapped(command, report), env=env, cwd=cwd, stdout=stdout, stderr=stderr
        )
        samples: list[float] = []
        while proc.poll() is None:
            if timeout is not None and time.perf_counter() - start > timeout:
                for pid in reversed(descendants(proc.pid)):  # the command, not only its timer
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
                proc.wait()
                return None
            if sample:
                samples.append(tree_pss_mib(proc.pid))
            with contextlib.suppress(subprocess.TimeoutExpired):  # (returns once it ends)
                proc.wait(interval if sample else 0.05)
        seconds = time.perf_counter() - start
        max_rss, user, system = read_report(report)
    peak = max(samples, default=0.0) if sample else None
    return Usage(seconds, user, system, max_rss, peak, proc.returncode, tuple(samples))


def _wrapper(report: str, command: list[str]) -> int:
    """Run ``command``, wait for it, write its usage as GNU time's ``-f "%M %U %S"``."""
    pid = os.posix_spawnp(command[0], command, os.environ)
    _, status, usage = os.wait4(pid, 0)
    with open(report, "w", encoding="ascii") as handle:
        handle.write(f"{usage.ru_maxrss} {usage.ru_utime:.2f} {usage.ru_stime:.2f}\n")
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code  # as a shell reports a signal


if __name__ == "__main__":
    sys.exit(_wrapper(sys.argv[1], sys.argv[2:]))
