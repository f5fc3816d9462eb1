"""Judges, differentially: the bundled example graded by the fake judges of
tests/judge_fakes.py through ``experiment run --evaluators``, against the real package's
``run_experiment(..., registry=...)`` on the same files.

Every trial report (every score, every metadata key in order, ``summary.judge``) must
match, both CSVs must be byte-identical, and the package must load our JSON. The only
numbers excluded are judge times the package measures with a wall clock (unavailable
scores, judges that report no time): those are checked for internal consistency instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from . import judge_fakes
from .conftest import EXAMPLE, REPO
from .jsondiff import json_differences

pytestmark = pytest.mark.differential

agenticlens = pytest.importorskip("agenticlens", reason="the real agenticlens 0.10 is needed")


def judge_suite(folder: Path) -> None:
    """Add judge and reference-scorer entries to every case of ``folder``'s suite."""
    path = folder / "suite.yaml"
    suite = yaml.safe_load(path.read_text())
    for i, case in enumerate(suite["cases"]):
        entries: list[dict[str, Any]] = [
            {"name": "helpfulness_judge", "threshold": 0.5},
            {"name": "multi_aspect", "threshold": 0.6, "required": False},
            {"name": "strict_panel", "threshold": 0.5},
        ]
        if i % 2 == 0:
            entries += [
                {"name": "context_window", "threshold": 0.5, "config": {"max_chars": 120}},
                {"name": "applicability", "threshold": 0.5},
                {"name": "coin", "threshold": 0.5},
            ]
        else:
            entries += [
                {"name": "flaky", "threshold": 0.9},
                {"name": "rubric", "threshold": 0.5, "required": False},
            ]
        if case.get("expected_output"):
            # no reference: graded against expected_output, exact_match left out
            entries += [
                {"name": "levenshtein_similarity", "threshold": 0.8},
                {"name": "numeric_diff", "threshold": 0.0},
            ]
        else:
            entries += [
                {"name": "starts_with", "threshold": 1.0, "config": {"reference": "so sorry"}},
                {"name": "ends_with", "config": {"reference": "."}, "required": False},
                {"name": "json_diff", "config": {"reference": '{"ticket": 1}'}},
                {"name": "numeric_diff", "config": {"reference": 42}},
            ]
        if i == 3:
            case["expected_output"] = "Done."
            entries.append({"name": "levenshtein_similarity", "config": {"reference": ""}})
        case["evaluators"] = entries
    path.write_text(yaml.safe_dump(suite, sort_keys=False))


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("judged") / "exp"
    shutil.copytree(EXAMPLE, folder)
    judge_suite(folder)
    return folder


@pytest.fixture(scope="module")
def package_outputs(experiment: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real package's report and CSVs (its retry sleeps replaced by no-ops)."""
    from agentic_evals import reliability
    from agenticlens.experiments import (
        load_experiment_suite,
        load_manifest,
        run_experiment,
        save_case_matrix_csv,
        save_variant_csv,
    )

    out = tmp_path_factory.mktemp("package")
    saved = reliability.call_with_retry.__kwdefaults__["sleep"]
    reliability.call_with_retry.__kwdefaults__["sleep"] = lambda seconds: None
    try:
        report = run_experiment(
            load_manifest(experiment / "manifest.yaml"),
            load_experiment_suite(experiment / "suite.yaml"),
            registry=judge_fakes.package_registry(),
        )
    finally:
        reliability.call_with_retry.__kwdefaults__["sleep"] = saved
    (out / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    save_variant_csv(report, out / "variants.csv")
    save_case_matrix_csv(report, out / "cases.csv")
    return out


@pytest.fixture(scope="module")
def our_outputs(experiment: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ours")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agenticlens_frames.cli",
            "experiment",
            "run",
            str(experiment / "manifest.yaml"),
            str(experiment / "suite.yaml"),
            "--evaluators",
            "tests.judge_fakes:build_registry",
            "--latency-missing",
            "zero",
            "--save",
            str(out / "report.json"),
            "--csv",
            str(out / "variants.csv"),
            "--cases-csv",
            str(out / "cases.csv"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _trial_reports(report: dict) -> list[tuple[str, int, dict]]:
    return [
        (v["variant_id"], t["trial_index"], t["report"])
        for v in report["variants"]
        for t in v["trials"]
        if t["report"] is not None
    ]


def _judge_scores(trial: dict) -> list[dict]:
    return [
        s
        for case in trial["cases"]
        for s in case["scores"]
        if s["evaluator_type"] in ("llm_judge", "llm_rubric")
    ]


def _drop_wall_clock(ours: dict, theirs: dict) -> None:
    """Remove judge times the package measures with a clock, after checking that each
    side's ``summary.judge.total_latency_ms`` adds up its own scores' times."""
    for (_, _, mine), (_, _, ref) in zip(_trial_reports(ours), _trial_reports(theirs), strict=True):
        for side in (mine, ref):
            judge = side["summary"]["judge"]
            active = [s for s in _judge_scores(side) if not s["skipped"]]
            total = sum(s["metadata"]["judge_latency_ms"] for s in active)
            assert judge["total_latency_ms"] == pytest.approx(round(total, 3), abs=1e-9)
            judge.pop("total_latency_ms")
        for a, b in zip(_judge_scores(mine), _judge_scores(ref), strict=True):
            if a["metadata"].get("judge_latency_source") == "measured" or (
                b["metadata"].get("judge_status") == "unavailable"
            ):
                a["metadata"].pop("judge_latency_ms")
                b["metadata"].pop("judge_latency_ms")


def test_judged_experiment_matches_the_package(our_outputs: Path, package_outputs: Path) -> None:
    ours = json.loads((our_outputs / "report.json").read_text())
    theirs = json.loads((package_outputs / "report.json").read_text())
    judged = [s for _, _, t in _trial_reports(theirs) for s in _judge_scores(t)]
    # the fakes really exercise every behaviour in this experiment
    statuses = {s["metadata"]["judge_status"] for s in judged}
    assert statuses == {"ok", "unavailable"}
    assert any(s["skipped"] for s in judged)
    assert any(s["metadata"].get("judge_completed_samples") == 2 for s in judged)
    assert any(
        s["metadata"].get("judge_attempts", 0) > s["metadata"].get("judge_samples", 1)
        for s in judged
    )
    assert any(s["evaluator_type"] == "llm_rubric" for s in judged)
    assert any(s["name"] == "multi:tone" for s in judged)
    unavailable = {s["name"] for s in judged if s["metadata"]["judge_status"] == "unavailable"}
    assert {"helpfulness_judge", "strict_panel", "context_window"} <= unavailable
    _drop_wall_clock(ours, theirs)
    assert json_differences(ours, theirs) == []
    assert (our_outputs / "variants.csv").read_bytes() == (
        package_outputs / "variants.csv"
    ).read_bytes()
    assert (our_outputs / "cases.csv").read_bytes() == (package_outputs / "cases.csv").read_bytes()


def test_summary_judge_is_filled_for_every_trial(our_outputs: Path) -> None:
    ours = json.loads((our_outputs / "report.json").read_text())
    for _, _, trial in _trial_reports(ours):
        judge = trial["summary"]["judge"]
        scores = _judge_scores(trial)
        active = [s for s in scores if not s["skipped"]]
        # independent count from the scores themselves
        assert judge["judge_scores"] == len(active)
        unavailable = [s for s in active if s["metadata"]["judge_status"] == "unavailable"]
        assert judge["unavailable_scores"] == len(unavailable)
        agreements = [
            s["metadata"]["judge_agreement"] for s in active if "judge_agreement" in s["metadata"]
        ]
        assert judge["sampled_scores"] == len(agreements)
        assert judge["min_agreement"] == (min(agreements) if agreements else None)


def test_the_package_loads_our_report_and_renders_the_same_csvs(
    our_outputs: Path, package_outputs: Path, tmp_path: Path
) -> None:
    exe = Path(sys.executable).parent / "agenticlens"
    done = subprocess.run(
        [
            str(exe),
            "experiment",
            "report",
            str(our_outputs / "report.json"),
            "--csv",
            str(tmp_path / "v.csv"),
            "--cases-csv",
            str(tmp_path / "c.csv"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "v.csv").read_bytes() == (package_outputs / "variants.csv").read_bytes()
    assert (tmp_path / "c.csv").read_bytes() == (package_outputs / "cases.csv").read_bytes()


def test_judge_totals_add_up_the_trial_reports(our_outputs: Path) -> None:
    ours = json.loads((our_outputs / "report.json").read_text())
    totals = {row["variant_id"]: row for row in ours["judge_noise"]["totals"]}
    for variant in ours["variants"]:
        trials = [t["report"] for t in variant["trials"] if t["report"] is not None]
        row = totals[variant["variant_id"]]
        for key in ("judge_scores", "unavailable_scores", "retried_scores", "priced_scores"):
            assert row[key] == sum(t["summary"]["judge"][key] for t in trials), key
        assert row["input_tokens"] == sum(t["summary"]["judge"]["input_tokens"] for t in trials)
        costs = [
            s["metadata"]["judge_cost_usd"]
            for t in trials
            for s in _judge_scores(t)
            if not s["skipped"] and "judge_cost_usd" in s["metadata"]
        ]
        assert row["cost_usd"] == pytest.approx(sum(costs), rel=1e-12)
        spent = sum(t["summary"]["judge"]["spent_cost_usd"] or 0.0 for t in trials)
        assert row["spent_cost_usd"] == pytest.approx(spent, rel=1e-12)
