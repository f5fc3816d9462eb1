"""Fixtures for the archive tests: real runs (the bundled example, a variant of it with an
extra factor, a generated experiment), archives holding them, and an independent oracle
for the sufficient statistics (plain Python loops, no numpy grouping)."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agenticlens_frames import load_experiment
from agenticlens_frames.archive import Archive
from agenticlens_frames.frames import ExperimentRun

from ..conftest import EXAMPLE, stopping_block  # noqa: F401  (archive tests import it here)

#: When each fixture run "happened" (time-range filters are tested against these).
RUN_AT = {"synthetic": "2026-09-15T08:00:00Z", "support": "2026-10-20", "support_v2": "2026-11-05"}


@pytest.fixture(scope="session")
def support_run() -> ExperimentRun:
    """The bundled example: 5 variants, 5 trials, 14 tagged cases, a failed trial and a
    missing sample."""
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.fixture(scope="session")
def support_v2_run(tmp_path_factory: pytest.TempPathFactory) -> ExperimentRun:
    """The example as version 2 with a new ``memory`` factor (schema evolution)."""
    folder = tmp_path_factory.mktemp("support-v2")
    shutil.copytree(EXAMPLE, folder, dirs_exist_ok=True)
    manifest = (folder / "manifest.yaml").read_text(encoding="utf-8")
    manifest = manifest.replace('version: "1"', 'version: "2"', 1)
    manifest = manifest.replace('retrieval: "bm25"}', 'retrieval: "bm25", memory: "none"}')
    manifest = manifest.replace('retrieval: "dense"}', 'retrieval: "dense", memory: "summary"}')
    (folder / "manifest.yaml").write_text(manifest, encoding="utf-8")
    return load_experiment(folder / "manifest.yaml", folder / "suite.yaml")


@pytest.fixture(scope="session")
def synthetic_run(make_synthetic: Callable[..., Path]) -> ExperimentRun:
    """A generated experiment (no case tags, other case ids)."""
    folder = make_synthetic(variants=3, trials=4, cases=25, seed=5)
    return load_experiment(folder / "manifest.yaml", folder / "suite.yaml")


@pytest.fixture(scope="session")
def runs(
    support_run: ExperimentRun, support_v2_run: ExperimentRun, synthetic_run: ExperimentRun
) -> dict[str, ExperimentRun]:
    return {"synthetic": synthetic_run, "support": support_run, "support_v2": support_v2_run}


def fill(folder: Path, runs: dict[str, ExperimentRun]) -> Archive:
    archive = Archive(folder, durable=False)
    for name, run in runs.items():
        archive.add(run, run_at=RUN_AT[name])
    return archive


@pytest.fixture(scope="session")
def shared_archive(
    tmp_path_factory: pytest.TempPathFactory, runs: dict[str, ExperimentRun]
) -> Archive:
    """An archive of the three runs. Read-only: tests that write make their own."""
    return fill(tmp_path_factory.mktemp("archive") / "arc", runs)


@pytest.fixture
def archive(tmp_path: Path, runs: dict[str, ExperimentRun]) -> Archive:
    """A fresh archive of the three runs that a test may change."""
    return fill(tmp_path / "arc", runs)


def archived_before_checksums(archive: Archive, run_id: str) -> Path:
    """Make one run look archived before files were checksummed (2 December 2026): no
    checksums and no rollups, so its attempts are read and nothing vouches for them."""
    record = archive.record(run_id)
    for name in ("case_stats", "trial_stats"):
        (record.path / f"{name}.parquet").unlink()
    data = json.loads((record.path / "_run.json").read_text(encoding="utf-8"))
    del data["sha256"]
    del data["record_sha256"]  # nor a digest of the record (6 December 2026)
    for name in ("case_stats", "trial_stats"):
        del data["counts"][name]
    (record.path / "_run.json").write_text(json.dumps(data), encoding="utf-8")
    return record.path


# --------------------------------------------------------------------------- the oracle


def naive_stats(attempts: pd.DataFrame) -> tuple[dict[tuple, dict], dict[tuple, dict]]:
    """Sufficient statistics by plain loops: (run, variant, case) and (run, variant, trial)."""
    cases: dict[tuple, dict[str, Any]] = defaultdict(
        lambda: {"attempts": 0, "passes": 0, "failed": 0, "scores": [], "lat": [], "cost": []}
    )
    trials: dict[tuple, dict[str, Any]] = defaultdict(
        lambda: {
            "attempts": 0,
            "passes": 0,
            "failed_attempts": 0,
            "ok_lat": [],
            "cost": [],
            "check_value_sum": 0.0,
            "check_count": 0,
            "orders": set(),
        }
    )
    for row in attempts.itertuples(index=False):
        status = str(row.status)
        c = cases[(str(row.run_id), str(row.variant_id), str(row.case_id))]
        c["attempts"] += 1
        c["passes"] += bool(row.passed)
        c["failed"] += status == "trial_failed"
        if status != "trial_failed" and not pd.isna(row.score):
            c["scores"].append(float(row.score))
        if not pd.isna(row.latency_ms):
            c["lat"].append(float(row.latency_ms))
        if not pd.isna(row.cost_usd):
            c["cost"].append(float(row.cost_usd))
        t = trials[(str(row.run_id), str(row.variant_id), int(row.trial))]
        t["attempts"] += 1
        t["passes"] += bool(row.passed)
        t["failed_attempts"] += status == "trial_failed"
        if status == "ok" and not pd.isna(row.latency_ms):
            t["ok_lat"].append(float(row.latency_ms))
        if not pd.isna(row.cost_usd):
            t["cost"].append(float(row.cost_usd))
        if not pd.isna(row.score_sum):
            t["check_value_sum"] += float(row.score_sum)
        t["check_count"] += int(row.n_checks)
        t["orders"].add(int(row.run_order))
    case_out = {
        key: {
            "attempts": c["attempts"],
            "passes": c["passes"],
            "failed_attempts": c["failed"],
            "scored": len(c["scores"]),
            "score_sum": math.fsum(c["scores"]),
            "score_m2": statistics.pvariance(c["scores"]) * len(c["scores"])
            if c["scores"]
            else 0.0,
            "latency_sum": math.fsum(c["lat"]),
            "latency_count": len(c["lat"]),
            "cost_sum": math.fsum(c["cost"]),
            "cost_count": len(c["cost"]),
        }
        for key, c in cases.items()
    }
    trial_out = {}
    for key, t in trials.items():
        (order,) = t["orders"]  # constant within a trial
        trial_out[key] = {
            "attempts": t["attempts"],
            "passes": t["passes"],
            "failed_attempts": t["failed_attempts"],
            "latency_ok_sum": math.fsum(t["ok_lat"]),
            "latency_ok_count": len(t["ok_lat"]),
            "cost_sum": math.fsum(t["cost"]),
            "cost_count": len(t["cost"]),
            "check_value_sum": t["check_value_sum"],
            "check_count": t["check_count"],
            "execution_position": order,
        }
    return case_out, trial_out


def assert_matches_oracle(stats: Any, attempts: pd.DataFrame) -> None:
    """Every row of the engine's frames equals the oracle (1e-9), and no row is missing."""
    cases, trials = naive_stats(attempts)
    got_cases = {
        (str(r.run_id), str(r.variant_id), str(r.case_id)): r._asdict()
        for r in stats.cases.itertuples(index=False)
    }
    got_trials = {
        (str(r.run_id), str(r.variant_id), int(r.trial)): r._asdict()
        for r in stats.trials.itertuples(index=False)
    }
    assert got_cases.keys() == cases.keys()
    assert got_trials.keys() == trials.keys()
    for expected, got in ((cases, got_cases), (trials, got_trials)):
        for key, values in expected.items():
            for name, value in values.items():
                assert got[key][name] == pytest.approx(value, rel=1e-9, abs=1e-12), (key, name)
