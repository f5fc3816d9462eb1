"""A run killed (SIGKILL) or interrupted (Ctrl-C) mid-way, then resumed, reports exactly
what an uninterrupted run reports; attempts journaled before the crash are not redone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from agenticlens_frames import analyze
from agenticlens_frames.report.csv_report import render_cases_csv, render_variants_csv
from agenticlens_frames.report.json_report import build_report
from agenticlens_frames.runner import run_experiment

from .conftest import variant

pytestmark = pytest.mark.slow

SCRIPT = """
import json, sys
from agenticlens_frames.runner import run_experiment
result = run_experiment(sys.argv[1], sys.argv[2], run_dir=sys.argv[3], concurrency=2,
                        progress=False)
print(json.dumps({"remaining": result.remaining, "interrupted": result.interrupted}))
"""
TOTAL = 3 * 3 * 8  # variants x trials x cases
CONCURRENCY = 2
# Limits change speed, never results: the reference runs use more of them.
FAST = {"concurrency": 9, "variant_concurrency": {"a": 3, "b": 3, "c": 3}}


def _journaled_attempts(run_dir: Path) -> int:
    count = 0
    for segment in (run_dir / "journal").glob("*.jsonl"):
        *whole, _torn_or_empty = segment.read_bytes().split(b"\n")
        count += sum(line.startswith(b'{"type":"attempt"') for line in whole)
    return count


def _start(manifest: Path, suite: Path, run_dir: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(manifest), str(suite), str(run_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_attempts(process: subprocess.Popen, run_dir: Path, n: int) -> None:
    deadline = time.monotonic() + 30
    while _journaled_attempts(run_dir) < n:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.01)


def _report(run) -> tuple[dict, str, str]:
    analysis = analyze(run)
    report = json.loads(json.dumps(build_report(analysis)))
    report.pop("created_at")
    for v in report["variants"]:
        for t in v["trials"]:
            if t["report"] is not None:
                t["report"].pop("created_at")
    return report, render_variants_csv(analysis), render_cases_csv(analysis)


@pytest.fixture
def experiment(write_experiment, tmp_path, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("LIVE_CALL_LOG", str(log))
    # Long enough that the 57 attempts left after the signal cannot all finish before it
    # arrives on a loaded machine (at 0.04 s the run once ended first under load).
    monkeypatch.setenv("LIVE_DELAY", "0.08")
    variants = [variant("a", "logged"), variant("b", "logged_async"), variant("c", "logged_plain")]
    manifest, suite = write_experiment(variants, trial_count=3, random_seed=9)
    return manifest, suite, log


def _assert_same_as_uninterrupted(resumed, manifest, suite, log: Path) -> None:
    calls = len(log.read_text().splitlines())
    # Only calls in flight at the crash (or finished but not yet on disk) run twice.
    assert TOTAL <= calls <= TOTAL + 2 * CONCURRENCY
    fresh = run_experiment(manifest, suite, progress=False, **FAST)
    for table in ("attempts", "checks", "trials"):
        pd.testing.assert_frame_equal(getattr(resumed.run, table), getattr(fresh.run, table))
    assert _report(resumed.run) == _report(fresh.run)


def test_sigkill_mid_run_then_resume(experiment, tmp_path):
    manifest, suite, log = experiment
    run_dir = tmp_path / "run"
    process = _start(manifest, suite, run_dir, dict(os.environ))
    _wait_for_attempts(process, run_dir, 15)
    process.kill()  # SIGKILL: no cleanup at all
    process.communicate()
    done = _journaled_attempts(run_dir)
    assert 15 <= done < TOTAL
    resumed = run_experiment(manifest, suite, progress=False, run_dir=run_dir, **FAST)
    assert resumed.complete and resumed.attempted == TOTAL - done
    _assert_same_as_uninterrupted(resumed, manifest, suite, log)


def test_ctrl_c_stops_cleanly_keeping_what_is_done(experiment, tmp_path):
    manifest, suite, log = experiment
    run_dir = tmp_path / "run"
    process = _start(manifest, suite, run_dir, dict(os.environ))
    _wait_for_attempts(process, run_dir, 15)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["interrupted"] is True and summary["remaining"] > 0
    # A clean stop leaves whole lines only.
    for segment in (run_dir / "journal").glob("*.jsonl"):
        text = segment.read_text()
        assert text.endswith("\n")
        [json.loads(line) for line in text.splitlines()]
    assert summary["remaining"] == TOTAL - _journaled_attempts(run_dir)
    resumed = run_experiment(manifest, suite, progress=False, run_dir=run_dir, **FAST)
    assert resumed.complete
    _assert_same_as_uninterrupted(resumed, manifest, suite, log)
