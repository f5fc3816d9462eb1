"""The benchmarks' memory and CPU figures are the measured command's, not the benchmark's.

A command started by a process that once held a lot of memory must not report that
process's peak as its own (Linux keeps the peak across ``vfork`` + ``exec``), and one run's
CPU time must not include an earlier run's. Each check runs in a fresh "benchmark"
process that first holds ``PARENT_MIB`` and frees it, then measures a command that holds
``CHILD_MIB``: the figure must be near ``CHILD_MIB``, far below ``PARENT_MIB``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
PARENT_MIB = 400
CHILD_MIB = 120
#: A Python interpreter's own pages, numpy's and the like, on top of what a command holds.
SLACK_MIB = 80

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="the trap and the checks are Linux's"
)

#: Holds CHILD_MIB (every page written, so resident) for a moment, then exits.
CHILD = f"import time; b = b'x' * ({CHILD_MIB} << 20); time.sleep(0.3)"


def _as_benchmark(code: str, *, gnu_time: bool = True) -> dict:
    """Run ``code`` in a process that first held PARENT_MIB; its last line, as JSON."""
    prelude = f"""
        import json, sys
        sys.path.insert(0, {str(BENCHMARKS)!r})
        import _measure
        if not {gnu_time!r}:
            _measure.has_gnu_time = lambda: False
        big = b"x" * ({PARENT_MIB} << 20)  # this process's peak ...
        del big  # ... kept by the kernel after the memory is freed
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("gnu_time", [True, False], ids=["gnu-time", "python-wrapper"])
def test_measure_reports_the_commands_peak_not_the_benchmarks(gnu_time: bool):
    if gnu_time and not Path("/usr/bin/time").exists():
        pytest.skip("no GNU time here")
    out = _as_benchmark(
        f"""
        u = _measure.measure([sys.executable, "-c", {CHILD!r}])
        c = _measure.measure([sys.executable, "-c", "pass"])
        print(json.dumps({{"rss": u.max_rss_mib, "pss": u.tree_pss_mib, "code": u.returncode,
                           "cpu": u.cpu, "cpu_after": c.cpu}}))
        """,
        gnu_time=gnu_time,
    )
    assert out["code"] == 0
    assert CHILD_MIB <= out["rss"] < CHILD_MIB + SLACK_MIB
    assert out["pss"] is None or CHILD_MIB * 0.8 <= out["pss"] < CHILD_MIB + SLACK_MIB
    # Each run's CPU is its own: the second, doing nothing, has none of the first's.
    assert out["cpu_after"] < out["cpu"]


def test_measure_counts_a_grandchild_it_waited_for():
    # The memory is held by a child of the command, which the command waits for.
    command = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {CHILD!r}])"
    out = _as_benchmark(
        f"""
        u = _measure.measure([sys.executable, "-c", {command!r}])
        print(json.dumps({{"rss": u.max_rss_mib, "pss": u.tree_pss_mib}}))
        """
    )
    assert CHILD_MIB <= out["rss"] < CHILD_MIB + SLACK_MIB
    assert out["pss"] is None or out["pss"] >= CHILD_MIB * 0.8


def test_bench_recorded_probe_peak_is_its_own(tmp_path: Path):
    # The probe's peak was RUSAGE_SELF's: at least the benchmark's own peak (559 MiB after
    # generating the 20 000-case experiment), for a floor that held a fifth of it.
    out = _as_benchmark(
        f"""
        import bench_recorded
        r = bench_recorded._measure("b = b'x' * ({CHILD_MIB} << 20)", {str(tmp_path)!r}, 120)
        print(json.dumps(r))
        """
    )
    assert CHILD_MIB <= out["max_rss_mib"] < CHILD_MIB + SLACK_MIB


def test_bench_archive_one_shot_peak_is_the_commands(tmp_path: Path):
    # os.wait4 of the benchmark's own child reported the benchmark's peak.
    pytest.importorskip("pyarrow")
    out = _as_benchmark(
        f"""
        import bench_archive
        from pathlib import Path
        r = bench_archive._fresh_process(["-c", {CHILD!r}], Path({str(ROOT)!r}))
        print(json.dumps(r))
        """
    )
    assert CHILD_MIB <= out["peak_rss_mib"] < CHILD_MIB + SLACK_MIB
