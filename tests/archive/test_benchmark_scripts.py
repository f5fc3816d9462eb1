"""The archive's benchmark scripts refuse arguments that would measure something else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(BENCHMARKS.parent)}
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--variants", "2"], "--variants must be at least 3, got 2"),
        (["--cases", "0"], "--cases must be at least 1, got 0"),
        (["--trials", "0"], "--trials must be at least 1, got 0"),
        (["--experiments", "0"], "--experiments must be at least 1, got 0"),
        (["--drop", "1.5"], "--drop is a share of the rows, in [0, 1), got 1.5"),
    ],
)
def test_make_archive_refuses_a_shape_that_is_not_a_benchmark(
    tmp_path: Path, args: list[str], message: str
):
    # It wrote an archive of two-variant or caseless runs and exited 0.
    done = _run("make_archive.py", str(tmp_path / "arc"), *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert not (tmp_path / "arc").exists()


def test_bench_archive_refuses_a_misspelt_option(tmp_path: Path):
    # parse_known_args ran every engine when --engines was misspelt, without a word.
    args = ["--sizes", "1K", "--repeat", "1", "--enginez", "numpy", "--data", str(tmp_path)]
    done = _run("bench_archive.py", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert "unrecognized arguments: --enginez numpy" in done.stderr
    assert not any(tmp_path.iterdir())  # nothing generated
