"""Reports AgenticLens wrote, read back (report/rebuild.py): their per-case records give
the case-level verdicts and intervals `experiment run` gives on the recorded files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from agenticlens_frames import analyze, case_level_summary, load_experiment
from agenticlens_frames.cli import app
from agenticlens_frames.errors import InputError
from agenticlens_frames.paired.settings import parse_comparisons
from agenticlens_frames.paired.verdicts import HOW_TO_DECLARE, NOT_IN_REPORT, headline_pass_rates
from agenticlens_frames.report.console import print_summary
from agenticlens_frames.report.html import render_html
from agenticlens_frames.report.rebuild import run_from_report
from agenticlens_frames.report.saved import REBUILT_NOTE, load_report

from ..conftest import EXAMPLE, Reference


@pytest.fixture(scope="module")
def theirs(reference: Callable[..., Reference], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's own report of the bundled example (it declares no verdicts)."""
    ref = reference(EXAMPLE)
    assert ref.returncode == 0, ref.stderr
    path = tmp_path_factory.mktemp("theirs") / "theirs.json"
    path.write_text(json.dumps(ref.report))
    return path


@pytest.fixture(scope="module")
def ours():
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    return run, analyze(run, frontier_n_resamples=0)  # the manifest declares holm


def _assert_same_verdicts(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Every column equal: numbers to the bit, the rest as text."""
    for column in expected.columns:
        a, b = got[column], expected[column]
        if pd.api.types.is_float_dtype(b):
            np.testing.assert_array_equal(a.to_numpy(float), b.to_numpy(float), err_msg=column)
        else:
            assert a.astype(str).tolist() == b.astype(str).tolist(), column


def _text(analysis) -> str:
    console = Console(record=True, width=400, color_system=None)
    print_summary(analysis, console)
    return console.export_text()


def test_the_tables_rebuilt_from_its_records_are_the_runs(theirs: Path, ours) -> None:
    run, _ = ours
    rebuilt = run_from_report(json.loads(theirs.read_text()), theirs)
    assert rebuilt is not None
    columns = ["variant_id", "trial", "case_id", "status", "passed", "score", "n_checks"]
    columns += ["n_checks_passed", "score_sum", "latency_ms", "cost_usd"]
    for column in columns:
        a, b = run.attempts[column], rebuilt.attempts[column]
        assert (
            a.astype(object).where(a.notna(), None).tolist()
            == b.astype(object).where(b.notna(), None).tolist()
        ), column
    keys = ["variant_id", "trial", "case_id", "check_index", "name", "metric", "value"]
    keys += ["passed", "required", "skipped", "evaluator", "evaluator_version"]
    for column in keys:
        assert (
            run.checks[column].astype(str).tolist() == rebuilt.checks[column].astype(str).tolist()
        ), column


def test_declared_verdicts_equal_those_of_experiment_run(theirs: Path, ours) -> None:
    _, analysis = ours
    loaded = load_report(theirs, comparisons=parse_comparisons({"correction": "holm"}))
    got, expected = loaded.verdicts, analysis.verdicts
    as_mapping = load_report(theirs, comparisons={"correction": "holm"}).verdicts
    assert as_mapping["statement"].tolist() == got["statement"].tolist()
    assert len(got) == len(expected) == 19
    _assert_same_verdicts(got, expected)
    assert got.attrs["declared"] and got.attrs["source"] == REBUILT_NOTE
    # ... and the case-level pass rates: retrieval-dense's failed trial is left out
    mine = headline_pass_rates(loaded.paired_frames["case_level_summary"])
    want = headline_pass_rates(analysis.paired_frames["case_level_summary"])
    for column in ("estimate", "ci_low", "ci_high", "n_cases", "n_attempts"):
        np.testing.assert_array_equal(
            mine[column].astype(float), want[column].astype(float), err_msg=column
        )
    text = _text(loaded)
    assert "Holm correction over the family" in text and REBUILT_NOTE[:60] in text
    assert "82.1% [69%–90%]" in text and "65.7% [54%–76%] †" not in text
    assert "65.7% [54%–76%]" in text  # AgenticLens's pooled rate, in its labelled section
    page = render_html(loaded)
    assert "Verdicts against" in page and "† Pass rate" not in page


def test_negative_latencies_and_costs_give_the_verdicts_of_experiment_run(
    tmp_path: Path, reference: Callable[..., Reference]
) -> None:
    """A recorded trace may say -5 ms or -$1 (the package reads it, `experiment run` too,
    docs/reliability.md). The rebuild refused its records ("column 'latency_ms' is -5 at
    row ...; expected ≥ 0"), so the package's report of such files had no verdicts."""
    import shutil

    folder = tmp_path / "negative"
    shutil.copytree(EXAMPLE, folder)
    path = folder / "trials" / "prompt-v2.json"
    data = json.loads(path.read_text())
    first, second = data["trials"][0]["samples"][:2]
    first["trace"]["total_latency_ms"] = -5.0
    second["trace"]["estimated_cost_usd"] = -1.0
    path.write_text(json.dumps(data))
    ref = reference(folder)
    assert ref.returncode == 0, ref.stderr
    saved = tmp_path / "theirs.json"
    saved.write_text(json.dumps(ref.report))

    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    expected = analyze(run, frontier_n_resamples=0).verdicts  # the manifest declares holm
    got = load_report(saved, comparisons={"correction": "holm"}).verdicts
    assert got.attrs["declared"], got.attrs.get("missing")
    assert len(got) == len(expected) == 19
    _assert_same_verdicts(got, expected)
    rebuilt = run_from_report(ref.report, saved)
    assert rebuilt is not None
    cell = rebuilt.attempts.set_index(["variant_id", "trial", "case_id"])
    ids = (first["case_id"], second["case_id"])
    assert cell.loc[("prompt-v2", 1, ids[0]), "latency_ms"] == -5.0
    assert cell.loc[("prompt-v2", 1, ids[1]), "cost_usd"] == -1.0


def test_factor_effects_equal_those_of_experiment_run(theirs: Path, ours) -> None:
    """Which factor made the difference, from the records: the same terms, estimates and
    Holm-adjusted p-values as `experiment run`; without a declaration, no adjusted p."""
    _, analysis = ours
    loaded = load_report(theirs, comparisons={"correction": "holm"})
    got, expected = loaded.factor_effects, analysis.factor_effects
    assert len(expected) > 0 and list(got.columns) == list(expected.columns)
    for column in expected.columns:
        if pd.api.types.is_float_dtype(expected[column]):
            np.testing.assert_array_equal(
                got[column].to_numpy(float), expected[column].to_numpy(float), err_msg=column
            )
        else:
            assert got[column].astype(str).tolist() == expected[column].astype(str).tolist()
    assert "fig-factor_effects" in render_html(loaded)
    # Over the evaluated attempts, as the rebuilt verdicts: retrieval-dense's failed trial
    # (every case a failure in the report's case matrix) is left out of both.
    effect = got.set_index(["metric", "term"]).loc[("pass_rate", "retrieval: dense vs bm25")]
    verdicts = loaded.verdicts.set_index(["candidate_variant_id", "dimension"])
    difference = verdicts.loc[("retrieval-dense", "quality"), "mean_difference"]
    assert effect["estimate"] == pytest.approx(difference, abs=1e-12)
    assert difference == pytest.approx(0.10714286, abs=1e-8)
    undeclared = load_report(theirs).factor_effects
    assert undeclared["p_adjusted"].isna().all()
    np.testing.assert_array_equal(
        undeclared["estimate"].to_numpy(float), expected["estimate"].to_numpy(float)
    )


def test_without_a_declaration_it_shows_per_comparison_differences(theirs: Path, ours) -> None:
    _, analysis = ours
    loaded = load_report(theirs)
    quality = analysis.verdicts[analysis.verdicts["dimension"] == "quality"]
    assert loaded.verdicts["verdict"].tolist() == ["not judged"] * 4
    np.testing.assert_array_equal(
        loaded.verdicts["mean_difference"].to_numpy(float),
        quality["mean_difference"].to_numpy(float),
    )
    text = _text(loaded)
    assert "(no correction declared)" in text and "`experiment report`" in HOW_TO_DECLARE
    assert HOW_TO_DECLARE[:40] in text and NOT_IN_REPORT not in text


def test_a_report_without_case_records_falls_back_to_its_counts(
    theirs: Path, ours, tmp_path: Path
) -> None:
    """No per-case record in any trial (a lean report of an older version): no verdicts,
    said so; the pass rates still lead with the case-level interval of the counts."""
    _, analysis = ours
    data = json.loads(theirs.read_text())
    for variant in data["variants"]:
        for trial in variant["trials"]:
            if trial["report"] is not None:
                trial["report"]["cases"] = []
    path = tmp_path / "lean.json"
    path.write_text(json.dumps(data))
    loaded = load_report(path)
    assert loaded.verdicts.empty and loaded.verdicts.attrs["missing"] == NOT_IN_REPORT
    mine = headline_pass_rates(loaded.paired_frames["case_level_summary"])
    want = headline_pass_rates(case_level_summary(analysis.run))
    for column in ("estimate", "ci_low", "ci_high", "n_cases", "n_attempts"):
        np.testing.assert_allclose(
            mine[column].astype(float), want[column].astype(float), rtol=1e-12, err_msg=column
        )
    text = _text(loaded)
    assert NOT_IN_REPORT in text and "82.1% [69%–90%]" in text and "*" not in text
    assert "has no case-level verdicts" in render_html(loaded)
    # Counts no run can have (an edit) were shown as the pooled rate, marked as such; a
    # report saying 99 of 5 attempts passed is damaged, and now refused naming the place.
    data["variants"][0]["cases"][0]["passes"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"variants\[0\]\.cases\[0\]\.passes.*99 passes of 5"):
        load_report(path)


def test_the_command_line_declares_a_correction_for_a_report_without_verdicts(
    theirs: Path, ours, tmp_path: Path
) -> None:
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    done = runner.invoke(
        app, ["experiment", "report", str(theirs), "--correction", "holm"], env=env
    )
    assert done.exit_code == 0, done.output
    assert "Holm correction over the family of" in done.output and "α = 0.05" in done.output
    assert "1.1e-04" in done.output  # model-large's latency, as experiment run prints it
    # a report with its own verdicts keeps them: a correction chosen now is refused
    saved = tmp_path / "ours.json"
    from agenticlens_frames import write_json_report

    write_json_report(ours[1], saved)
    refused = runner.invoke(
        app, ["experiment", "report", str(saved), "--correction", "bonferroni"], env=env
    )
    assert refused.exit_code == 1
    assert "has its own verdicts" in refused.output and "Traceback" not in refused.output
    alone = runner.invoke(app, ["experiment", "report", str(theirs), "--alpha", "0.1"], env=env)
    assert alone.exit_code == 1 and "need a declared correction" in alone.output
    # on a report with verdicts, adding --correction (once the only hint) is refused too
    ours_alone = runner.invoke(app, ["experiment", "report", str(saved), "--alpha", "0.1"], env=env)
    assert ours_alone.exit_code == 1
    assert "leave out --alpha and --paired-method" in ours_alone.output


@pytest.mark.parametrize(
    ("edit", "place"),
    [
        (lambda d: d["variants"][1]["trials"][2]["report"]["cases"].pop(),
         r"variants\[1\]\.trials\[2\]\.report\.cases: its case records do not match"),
        (lambda d: d["variants"][0]["trials"][0]["report"]["cases"][3]["scores"][0].update(
            value="high"), r"cases\[3\]\.scores\[0\]\.value: a score value must be a finite"),
        (lambda d: d["variants"][2]["trials"][1]["report"]["cases"][0].update(output=1.5),
         r"variants\[2\]\.trials\[1\]\.report\.cases\[0\]\.output: output must be a text"),
        (lambda d: d["variants"][2]["trials"][1]["report"]["cases"][0]["scores"][1].update(
            explanation=["x"]), r"scores\[1\]\.explanation: explanation must be a text"),
        (lambda d: d["variants"][0]["trials"][3]["report"]["cases"][5].update(passed="yes"),
         r"cases\[5\]\.passed: passed must be true or false, got 'yes'"),
        (lambda d: d["variants"][0]["trials"][3]["report"].update(cases={"a": 1}),
         r"trials\[3\]\.report\.cases: cases must be a list"),
    ],
)  # fmt: skip
def test_a_record_the_package_could_not_have_written_costs_only_the_verdicts(
    theirs: Path, tmp_path: Path, edit, place: str
) -> None:
    """The report still loads and renders with its own numbers; the verdicts are said to
    be missing, naming the record's place and what is wrong with it."""
    import re

    data = json.loads(theirs.read_text())
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    loaded = load_report(path)
    missing = loaded.verdicts.attrs["missing"]
    assert loaded.verdicts.empty and re.search(place, missing), missing
    assert str(path) in missing
    text = _text(loaded)
    assert "its per-case records cannot give them" in text and "Traceback" not in text
    assert "71.4% [57%–82%]" in text  # baseline, from the counts; the rest of the report stands


@pytest.mark.differential
def test_a_live_run_the_package_reported_gives_our_verdicts(
    reference: Callable[..., Reference], tmp_path: Path
) -> None:
    """Live records (a target that raised on a case, a trial failed by an invalid payload,
    Run-shaped traces): the package's report rebuilt gives the verdicts of our own run of
    the same deterministic targets."""
    from agenticlens_frames.paired.verdicts import case_verdicts
    from agenticlens_frames.runner import run_experiment

    live = Path(__file__).resolve().parents[1] / "fixtures" / "live"
    ref = reference(live, "manifest_compat.yaml", "suite.yaml")
    assert ref.returncode == 0, ref.stdout + ref.stderr
    path = tmp_path / "theirs.json"
    path.write_text(json.dumps(ref.report))
    result = run_experiment(live / "manifest_compat.yaml", live / "suite.yaml", progress=False)
    statuses = set(result.run.attempts["status"].astype(str))
    assert {"target_error", "trial_failed"} <= statuses  # the live paths are exercised
    expected = case_verdicts(result.run, {"correction": "holm"})
    got = load_report(path, comparisons={"correction": "holm"}).verdicts
    assert len(got) == len(expected) > 0
    _assert_same_verdicts(got, expected)


def test_a_latency_the_package_wrote_as_0_ms_is_unknown_as_in_the_run(
    reference: Callable[..., Reference], tmp_path: Path
) -> None:
    """prompt-v2's traces recorded no latency: the package's report says 0 ms for each of
    its records; rebuilt, those are unknown, as `experiment run` has them, so `experiment
    report` gives the run's verdicts (no latency verdict for prompt-v2)."""
    from ..conftest import example_without_latency

    folder = example_without_latency(tmp_path)
    ref = reference(folder)
    assert ref.returncode == 0, ref.stderr
    records = [
        case["latency_ms"]
        for variant in ref.report["variants"]
        if variant["variant_id"] == "prompt-v2"
        for trial in variant["trials"]
        if trial["report"]  # a completed trial
        for case in trial["report"]["cases"]
    ]
    assert records and set(records) == {0.0}  # what the package wrote
    path = tmp_path / "theirs.json"
    path.write_text(json.dumps(ref.report))
    rebuilt = run_from_report(ref.report, path)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    np.testing.assert_array_equal(
        rebuilt.attempts["latency_ms"].to_numpy(float), run.attempts["latency_ms"].to_numpy(float)
    )
    holm = {"correction": "holm"}
    _assert_same_verdicts(
        load_report(path, comparisons=holm).verdicts, analyze(run, frontier_n_resamples=0).verdicts
    )
