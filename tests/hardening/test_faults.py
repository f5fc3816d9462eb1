"""Faults during live runs: targets that hang, crash or answer garbage, a full disk, and
SIGKILL at random points followed by a resume.

The figures (runs survived, rows lost, rows duplicated) are printed with ``-s`` and kept in
docs/reliability.md. Archive faults (a half-written experiment, two writers on one
archive) are the archive's own tests (tests/archive/).
"""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from agenticlens_frames.cli import app
from agenticlens_frames.errors import InputError
from agenticlens_frames.runner import journal as journal_module
from agenticlens_frames.runner import run_experiment

HERE = Path(__file__).resolve().parent
TARGETS = HERE / "fault_targets.py"
CASES = [
    {"id": f"c{i}", "name": f"case {i}", "input": f"question {i}", "expected_contains": ["refund"]}
    for i in range(1, 11)
]
KEY = ["variant_id", "trial", "case_id"]


def _experiment(folder: Path, targets: list[str], trials: int = 2, **variant_extra) -> tuple:
    variants = [
        {
            "id": f"v{i}-{name}",
            "name": name,
            "target_kind": "python",
            "target": f"{TARGETS}:{name}",
            **variant_extra,
        }
        for i, name in enumerate(targets)
    ]
    manifest = {
        "name": "faults",
        "version": "1",
        "baseline_variant_id": variants[0]["id"],
        "trial_count": trials,
        "random_seed": 5,
        "variants": variants,
    }
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (folder / "suite.yaml").write_text(
        yaml.safe_dump({"name": "s", "version": "1", "cases": CASES}, sort_keys=False)
    )
    return folder / "manifest.yaml", folder / "suite.yaml"


def _expected_rows(result) -> int:
    return len(result.run.manifest.variants) * result.run.manifest.trial_count * len(CASES)


def _lost_and_duplicated(attempts: pd.DataFrame, expected: int) -> tuple[int, int]:
    keys = attempts[KEY].astype(str)
    duplicated = int(keys.duplicated().sum())
    return expected - (len(keys) - duplicated), duplicated


def test_hang_crash_and_garbage_targets_are_survived(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_HANG_SECONDS", "3")
    manifest, suite = _experiment(
        tmp_path, ["good", "hangs", "crashes", "garbage"], timeout_seconds=0.3
    )
    result = run_experiment(manifest, suite, progress=False, invalid_payload="case")
    attempts = result.run.attempts
    lost, duplicated = _lost_and_duplicated(attempts, _expected_rows(result))
    assert result.complete and (lost, duplicated) == (0, 0)
    by = attempts.set_index(["variant_id", "case_id", "trial"])["status"].astype(str)
    assert by[("v1-hangs", "c1", 1)] == "timed_out"
    assert by[("v2-crashes", "c2", 1)] == "target_error"
    assert "MemoryError" in str(
        attempts.loc[attempts["variant_id"] == "v2-crashes", "error"].dropna().iloc[0]
    )
    garbage = attempts[attempts["variant_id"] == "v3-garbage"]
    assert (garbage["status"].astype(str) != "ok").sum() >= 8
    assert garbage["error"].notna().all() or (garbage["status"].astype(str) == "ok").any()
    print(f"\nFAULTS hang/crash/garbage: survived 1 run, lost {lost}, duplicated {duplicated}")


def test_output_cap_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_OUTPUT_CHARS", "5000")
    manifest, suite = _experiment(tmp_path, ["good", "huge_output", "good"])
    result = run_experiment(
        manifest, suite, progress=False, invalid_payload="case", max_output_chars=4000
    )
    capped = result.run.attempts[result.run.attempts["variant_id"] == "v1-huge_output"]
    assert (capped["status"].astype(str) == "target_error").all()
    assert (
        capped["error"].str.contains("over the limit of 4000 (max_output_chars)", regex=False).all()
    )
    assert (capped["output"].str.len() < 4000).all()
    fine = run_experiment(manifest, suite, progress=False, max_output_chars=None)
    assert (fine.run.attempts["status"].astype(str) == "ok").all()


def test_disk_full_stops_cleanly_and_resume_loses_nothing(tmp_path, monkeypatch):
    manifest, suite = _experiment(tmp_path, ["good", "good", "good"], trials=3)
    run_dir = tmp_path / "run"
    real_write = journal_module.JournalWriter._write
    # Counted in records, not write calls: the journal commits whatever has queued in one
    # write (group commit), so how many writes a run makes depends on the machine's speed.
    state = {"records": 0, "limit": 3}

    class FullDisk:
        """The journal file on a disk that fills up: half of a write lands, then ENOSPC."""

        def __init__(self, file):
            self.file = file

        def write(self, data: bytes) -> int:
            lines = data.count(b"\n")
            if state["records"] + lines > state["limit"]:
                self.file.write(data[: len(data) // 2])  # a torn line, as a real disk gives
                raise OSError(errno.ENOSPC, "No space left on device")
            state["records"] += lines
            return self.file.write(data)

        def __getattr__(self, name):
            return getattr(self.file, name)

    def full_after_some(self, records):
        if self._file is not None and not isinstance(self._file, FullDisk):
            self._file = FullDisk(self._file)
        real_write(self, records)

    monkeypatch.setattr(journal_module.JournalWriter, "_write", full_after_some)
    with pytest.raises(InputError) as caught:
        run_experiment(manifest, suite, progress=False, run_dir=run_dir, concurrency=1)
    assert "No space left" in str(caught.value) and "--run-dir" in str(caught.value)
    state.update(records=0, limit=0)  # full from the first record: work is left to write
    cli = CliRunner().invoke(
        app,
        [
            "experiment",
            "run",
            str(manifest),
            str(suite),
            "--run-dir",
            str(run_dir),
            "-q",
            "--save",
            str(tmp_path / "r.json"),
        ],
    )
    assert cli.exit_code == 1 and "No space left" in cli.output
    assert "Traceback" not in cli.output
    monkeypatch.setattr(journal_module.JournalWriter, "_write", real_write)
    resumed = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    lost, duplicated = _lost_and_duplicated(resumed.run.attempts, _expected_rows(resumed))
    assert resumed.complete and (lost, duplicated) == (0, 0)
    print(f"\nFAULTS disk full: survived 1 run, lost {lost}, duplicated {duplicated}")


SCRIPT = """
import sys
from agenticlens_frames.runner import run_experiment
run_experiment(sys.argv[1], sys.argv[2], run_dir=sys.argv[3], concurrency=2, progress=False)
"""


def _journaled(run_dir: Path) -> int:
    count = 0
    for segment in (run_dir / "journal").glob("*.jsonl"):
        *whole, _torn = segment.read_bytes().split(b"\n")
        count += sum(line.startswith(b'{"type":"attempt"') for line in whole)
    return count


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path, monkeypatch):
    rng = random.Random(20261202)
    manifest, suite = _experiment(tmp_path, ["good", "hangs", "good"], trials=4)
    env = {**os.environ, "FAULT_HANG_SECONDS": "0.02"}
    total = 3 * 4 * len(CASES)
    run_dir = tmp_path / "run"
    kills = 0
    for _ in range(4):
        target = (
            min(total - 1, _journaled(run_dir) + rng.randint(1, 25))
            if run_dir.exists()
            else rng.randint(1, 25)
        )
        process = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(manifest), str(suite), str(run_dir)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while process.poll() is None and _journaled(run_dir) < target:
            assert time.monotonic() < deadline
            time.sleep(0.005 * rng.random())
        if process.poll() is None:
            process.kill()
            kills += 1
        process.wait()
    monkeypatch.setenv("FAULT_HANG_SECONDS", "0.02")
    resumed = run_experiment(manifest, suite, progress=False, run_dir=run_dir)
    fresh = run_experiment(manifest, suite, progress=False)
    lost, duplicated = _lost_and_duplicated(resumed.run.attempts, total)
    assert resumed.complete and (lost, duplicated) == (0, 0)
    for table in ("attempts", "checks"):
        columns = [c for c in getattr(fresh.run, table).columns if c not in ("run_order",)]
        pd.testing.assert_frame_equal(
            getattr(resumed.run, table)[columns], getattr(fresh.run, table)[columns]
        )
    print(f"\nFAULTS SIGKILL: {kills} kills survived, lost {lost}, duplicated {duplicated}")
