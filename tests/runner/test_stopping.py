"""Early stopping of live runs (stop_when="decided"): stop, journal, resume, report."""

from __future__ import annotations

import json

import pytest
import yaml

from agenticlens_frames import InputError, run_experiment
from agenticlens_frames.runner.stopping import StopRule

HOLM = StopRule(alpha=0.05, correction="holm")
TARGETS = """
import hashlib


def _u(*parts):
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _agent(p, name):
    # A function of the case only (not of the call count), so that a resumed session
    # gets the answers an uninterrupted one would.
    def call(text, case=None):
        key = case.id if case is not None else text
        return {"output": "yes" if _u(name, key) < p else "no"}

    return call


base = _agent(0.3, "base")
better = _agent(0.9, "better")
worse = _agent(0.02, "worse")
base2 = _agent(0.3, "base2")
"""


def _experiment(folder, cases: int = 120, variants=("base", "better", "worse"), **manifest_extra):
    (folder / "agents.py").write_text(TARGETS)
    manifest = {
        "name": "stop",
        "version": "1",
        "baseline_variant_id": variants[0],
        "trial_count": 2,
        "random_seed": 3,
        "variants": [
            {"id": v, "name": v, "target_kind": "python", "target": f"agents.py:{v}"}
            for v in variants
        ],
        **manifest_extra,
    }
    suite = {
        "name": "s",
        "version": "1",
        "cases": [
            {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["yes"]}
            for i in range(cases)
        ],
    }
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    return folder / "manifest.yaml", folder / "suite.yaml"


def test_a_clear_difference_stops_early_and_is_journaled(tmp_path) -> None:
    manifest, suite = _experiment(tmp_path)
    result = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
    )
    stop = result.stopping
    assert stop["stopped_early"]
    assert [c["decision"] for c in stop["candidates"]] == ["better", "worse"]
    assert stop["alpha_per_candidate"] == pytest.approx(0.025)
    used = stop["cases_used"]
    assert used < 120
    assert stop["attempts_run"] + stop["attempts_saved"] == 120 * 3 * 2
    # Attempts started while the deciding case was being scored still run (a few).
    assert stop["attempts_saved"] >= (120 - used) * 3 * 2 - 12
    # The tables hold exactly the cases the sequence used, all variants and trials.
    assert len(result.run.cases) == used
    assert len(result.run.attempts) == used * 3 * 2
    assert result.complete
    # Journal: a stop record saying when and why.
    records = [
        json.loads(line)
        for seg in sorted((tmp_path / "run").rglob("*.jsonl"))
        for line in seg.read_text().splitlines()
    ]
    stops = [r for r in records if r["type"] == "stop"]
    assert len(stops) == 1 and stops[0]["cases_used"] == used
    # A resumed run continues the same sequence: already decided, nothing is called.
    again = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
    )
    assert again.attempted == 0 and again.stopping["cases_used"] == used
    assert len(again.run.attempts) == len(result.run.attempts)


def test_interrupted_run_resumes_into_the_same_sequence(tmp_path) -> None:
    manifest, suite = _experiment(tmp_path)
    straight = run_experiment(manifest, suite, progress=False, stop_when="decided", stop_rule=HOLM)
    first = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
        max_attempts=20,
    )
    assert first.remaining > 0
    second = run_experiment(
        manifest,
        suite,
        progress=False,
        run_dir=tmp_path / "run",
        stop_when="decided",
        stop_rule=HOLM,
    )
    assert second.stopping["cases_used"] == straight.stopping["cases_used"]
    assert second.stopping["candidates"] == straight.stopping["candidates"]


def test_analysis_of_a_stopped_run_and_rules(tmp_path) -> None:
    manifest, suite = _experiment(tmp_path, variants=("base", "better", "base2"))
    (tmp_path / "x").mkdir()
    with pytest.raises(InputError, match="correction"):
        run_experiment(manifest, suite, progress=False, stop_when="decided")
    with pytest.raises(InputError, match="stop_when"):
        run_experiment(manifest, suite, progress=False, stop_when="soon")


def test_command_line_stop_when_decided(tmp_path) -> None:
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    manifest, suite = _experiment(tmp_path)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "experiment",
            "run",
            str(manifest),
            str(suite),
            "--save",
            str(out),
            "--correction",
            "holm",
            "--stop-when",
            "decided",
            "--run-dir",
            str(tmp_path / "run"),
            "--html",
            str(tmp_path / "report.html"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Early stopping: every candidate decided after" in result.output
    stop = json.loads(out.read_text())["agenticlens_frames"]["early_stopping"]
    assert stop["stopped_early"] and stop["correction"] == "holm"
    assert stop["attempts_saved"] > 0
    page = (tmp_path / "report.html").read_text()
    assert "id='early-stopping'" in page and "every candidate decided after" in page
    bad = CliRunner().invoke(
        app, ["experiment", "run", str(manifest), str(suite), "--stop-margin", "0.05"]
    )
    assert bad.exit_code == 1 and "--stop-margin needs --stop-when" in bad.output
