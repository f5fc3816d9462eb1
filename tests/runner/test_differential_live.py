"""Live python targets against the real agenticlens 0.10.0 on the same manifest.

tests/fixtures/live/manifest_compat.yaml runs five deterministic python targets (sync,
async, Run-shaped traces, one raising on a case, one returning an invalid payload on a
case) for three shuffled trials. The package runs it one call at a time; we run it with
concurrency, and every JSON number and both CSVs must still be the same. The targets
avoid the behaviours we fix on purpose (B10: no ``case`` parameter; B11: no trace), which
tests/runner/test_live.py covers.
"""

from __future__ import annotations

import json

import pytest

from agenticlens_frames import analyze
from agenticlens_frames.report.csv_report import render_cases_csv, render_variants_csv
from agenticlens_frames.report.json_report import build_report
from agenticlens_frames.runner import run_experiment

from ..jsondiff import json_differences
from .conftest import LIVE

pytestmark = pytest.mark.differential


@pytest.mark.parametrize("concurrency", [1, 6])
def test_live_python_targets_match_the_package(reference, concurrency, tmp_path):
    ref = reference(LIVE, "manifest_compat.yaml", "suite.yaml")
    assert ref.returncode == 0, ref.stdout + ref.stderr
    result = run_experiment(
        LIVE / "manifest_compat.yaml",
        LIVE / "suite.yaml",
        progress=False,
        concurrency=concurrency,
        variant_concurrency={v: concurrency for v in ("base", "async", "run", "raising", "listy")},
        run_dir=tmp_path / "run",
    )
    analysis = analyze(result.run, latency_missing="zero")
    report = json.loads(json.dumps(build_report(analysis)))
    assert json_differences(report, ref.report) == []
    assert render_variants_csv(analysis).encode() == ref.variants_csv
    assert render_cases_csv(analysis).encode() == ref.cases_csv
    # The live-run fixes are listed with the others (docs/live-runs.md; they were not).
    fixes = report["agenticlens_frames"]["deliberate_fixes"]
    assert {"B10", "B11"} <= set(fixes) and fixes == sorted(fixes, key=lambda b: int(b[1:]))


def test_recorded_and_live_variants_mixed_match_the_package(reference):
    suite = "../../../data/support/suite.yaml"
    ref = reference(LIVE, "manifest_mixed.yaml", suite)
    assert ref.returncode == 0, ref.stdout + ref.stderr
    result = run_experiment(LIVE / "manifest_mixed.yaml", LIVE / suite, progress=False)
    analysis = analyze(result.run, latency_missing="zero")
    assert render_variants_csv(analysis).encode() == ref.variants_csv
    assert render_cases_csv(analysis).encode() == ref.cases_csv
    report = json.loads(json.dumps(build_report(analysis)))
    assert json_differences(report, ref.report) == []
