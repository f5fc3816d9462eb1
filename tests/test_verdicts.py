"""The case-level verdicts, against scipy's paired t-test and statsmodels' Holm correction."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from agenticlens_frames import (
    analyze,
    build_report,
    load_experiment,
    load_report,
    write_json_report,
)
from agenticlens_frames.frames import ExperimentRun
from agenticlens_frames.paired import paired_comparisons
from agenticlens_frames.paired.verdicts import (
    HOW_TO_DECLARE,
    VERDICT_COLUMNS,
    case_verdicts,
    headline_pass_rates,
    regressions,
    verdicts_from_paired,
)

from .conftest import EXAMPLE

#: Quality and latency only: a two-dimension family small enough to recompute by hand.
QUALITY_AND_LATENCY = {
    "correction": "holm",
    "evaluators": {"safety": None, "reliability": None, "cost": None},
}


@pytest.fixture(scope="module")
def run() -> ExperimentRun:
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def _undeclared(run: ExperimentRun) -> ExperimentRun:
    return dataclasses.replace(run, manifest=dataclasses.replace(run.manifest, comparisons=None))


def _case_means(run: ExperimentRun, column: str) -> pd.DataFrame:
    """case × variant: the mean of ``column`` over each case's evaluated attempts."""
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"].copy()
    att["value"] = att[column].astype(float)
    att = att.dropna(subset=["value"])
    return att.pivot_table(
        index="case_id", columns="variant_id", values="value", aggfunc="mean", observed=True
    )


def _by_hand(run: ExperimentRun, level: float = 0.95) -> pd.DataFrame:
    rows = []
    for dimension, column, higher in (
        ("quality", "passed", True),
        ("latency", "latency_ms", False),
    ):
        means = _case_means(run, column)
        for cand in [v for v in run.manifest.variant_ids if v != "baseline"]:
            both = means[["baseline", cand]].dropna()
            d = (both[cand] - both["baseline"]).to_numpy()
            test = stats.ttest_rel(both[cand], both["baseline"])
            low, high = test.confidence_interval(level)
            rows.append(
                {
                    "candidate_variant_id": cand,
                    "dimension": dimension,
                    "higher": higher,
                    "difference": d.mean(),
                    "low": low,
                    "high": high,
                    "p": test.pvalue,
                }
            )
    frame = pd.DataFrame(rows)
    reject, adjusted, _, _ = multipletests(frame["p"], alpha=1 - level, method="holm")
    frame["adjusted"], frame["reject"] = adjusted, reject
    return frame


def test_verdicts_match_scipy_paired_t_and_statsmodels_holm(run: ExperimentRun) -> None:
    verdicts = case_verdicts(run, QUALITY_AND_LATENCY)
    assert list(verdicts.columns) == VERDICT_COLUMNS
    expected = _by_hand(run)
    assert len(verdicts) == len(expected) == 8
    merged = verdicts.assign(
        candidate_variant_id=verdicts["candidate_variant_id"].astype(str),
        dimension=verdicts["dimension"].astype(str),
    ).merge(expected, on=["candidate_variant_id", "dimension"], validate="1:1")
    np.testing.assert_allclose(merged["mean_difference"], merged["difference"], rtol=1e-12)
    np.testing.assert_allclose(merged["ci_low"], merged["low"], rtol=1e-9)
    np.testing.assert_allclose(merged["ci_high"], merged["high"], rtol=1e-9)
    np.testing.assert_allclose(merged["p_value"], merged["p"], rtol=1e-9)
    np.testing.assert_allclose(merged["adjusted_p_value"], merged["adjusted"], rtol=1e-9)
    for r in merged.to_dict("records"):
        if r["reject"]:
            better = (r["difference"] > 0) == r["higher"]
            assert r["verdict"] == ("better" if better else "worse"), r
            assert r["detectable"] == ""
        else:
            assert r["verdict"] == "no detectable difference", r
            assert r["detectable"]  # never a bare "not significant"
    # The example's known answer: slower on latency, nothing detectable on quality.
    quality = merged[merged["dimension"] == "quality"]
    assert set(quality["verdict"]) == {"no detectable difference"}
    latency = merged.set_index("candidate_variant_id")
    assert latency.loc["model-large"].query("dimension == 'latency'")["verdict"].item() == "worse"
    # prompt-v2, starred by AgenticLens's z-test (p = 0.022), is not significant here.
    assert quality.set_index("candidate_variant_id").loc["prompt-v2", "adjusted"] > 0.05


def test_every_non_significant_row_says_what_could_not_be_detected(run: ExperimentRun) -> None:
    verdicts = case_verdicts(run)  # the manifest's Holm over all five dimensions
    quiet = verdicts[verdicts["verdict"] == "no detectable difference"]
    assert len(quiet) > 0
    for r in quiet.to_dict("records"):
        scale = r["unit"] in ("proportion", "score")
        if scale and r["mde"] > 1:
            assert r["detectable"].startswith("not detectable with this design"), r
        elif r["unit"] == "proportion":
            assert r["detectable"] == (
                f"this run could not detect changes smaller than {100 * r['mde']:.1f} pp"
            )
        else:
            assert r["detectable"].startswith("this run could not detect changes smaller than")
        assert r["detectable"] in r["statement"]


def test_an_mde_beyond_the_scale_is_not_detectable_with_this_design() -> None:
    row = {
        "baseline_variant_id": "b",
        "candidate_variant_id": "c",
        "dimension": "quality",
        "evaluator": "passed",
        "unit": "proportion",
        "higher_is_better": True,
        "mean_difference": 0.05,
        "ci_low": -0.6,
        "ci_high": 0.7,
        "confidence_level": 0.95,
        "p_value": 0.8,
        "adjusted_p_value": 1.0,
        "correction": "holm",
        "alpha": 0.05,
        "family_size": 3,
        "significant": False,
        "mde": 1.648,
        "degenerate": False,
    }
    frame = verdicts_from_paired(pd.DataFrame([row, {**row, "mde": 0.3}]), declared=True)
    assert frame.loc[0, "detectable"].startswith("not detectable with this design")
    assert frame.loc[1, "detectable"] == "this run could not detect changes smaller than 30.0 pp"


def test_a_significant_zero_difference_is_no_difference() -> None:
    """A row flagged significant with a mean difference of exactly zero was called "worse"
    on a higher-is-better dimension and "better" on latency: a direction the estimate does
    not have. Hand-made rows, as a frame from elsewhere (or a degenerate test) gives them."""
    row = {
        **HAND_ROW,
        "mean_difference": 0.0,
        "ci_low": 0.0,
        "ci_high": 0.0,
        "p_value": 0.0,
        "adjusted_p_value": 0.0,
        "family_size": 2,
        "mde": 0.1,
        "degenerate": True,
    }
    latency = {**row, "dimension": "latency", "unit": "ms", "higher_is_better": False}
    moved = {**row, "mean_difference": -0.2, "ci_low": -0.2, "ci_high": -0.2}
    frame = verdicts_from_paired(pd.DataFrame([row, latency, moved]), declared=True)
    assert frame["verdict"].tolist() == [
        "no detectable difference",
        "no detectable difference",
        "worse",
    ]
    assert "no detectable difference" in frame.loc[0, "statement"]


def test_without_a_declared_correction_nothing_is_judged(run: ExperimentRun) -> None:
    plain = case_verdicts(_undeclared(run))
    assert plain.attrs["declared"] is False
    assert plain.attrs["how_to_declare"] == HOW_TO_DECLARE
    assert "comparisons: {correction: holm}" in HOW_TO_DECLARE
    assert set(plain["dimension"].astype(str)) == {"quality"}
    assert set(plain["verdict"]) == {"not judged"}
    assert plain["significant"].isna().all() and plain["adjusted_p_value"].isna().all()
    # no family was declared, so none is counted (the tables' family phrase names none)
    assert (plain["family_size"] == 0).all() and set(plain["correction"]) == {"not declared"}
    # The intervals are per comparison: scipy's paired t, unadjusted.
    expected = _by_hand(run).query("dimension == 'quality'").set_index("candidate_variant_id")
    for r in plain.to_dict("records"):
        e = expected.loc[str(r["candidate_variant_id"])]
        assert r["ci_low"] == pytest.approx(e["low"], rel=1e-9)
        assert r["ci_high"] == pytest.approx(e["high"], rel=1e-9)
        assert "per-comparison interval" in r["statement"]
        assert "worse" not in r["statement"] and "better" not in r["statement"]


def test_analysis_report_and_saved_report_carry_the_verdicts(
    run: ExperimentRun, tmp_path: Path
) -> None:
    analysis = analyze(run)
    assert analysis.verdicts.attrs["declared"] is True
    assert "verdicts" in analysis.frames()
    path = write_json_report(analysis, tmp_path / "r.json")
    report = json.loads(Path(path).read_text())
    keys = list(report)
    assert keys.index("case_level") < keys.index("verdicts") < keys.index("paired_comparisons")
    block = report["verdicts"]
    assert block["declared"] is True and block["correction"] == "holm"
    assert len(block["rows"]) == len(analysis.verdicts)
    first = block["rows"][0]
    assert first["verdict"] == analysis.verdicts["verdict"].iloc[0]
    assert all(
        r["adjusted_p_value"] is None or math.isfinite(r["adjusted_p_value"]) for r in block["rows"]
    )
    restored = load_report(path).verdicts
    assert restored["verdict"].tolist() == analysis.verdicts["verdict"].tolist()
    np.testing.assert_allclose(restored["ci_low"], analysis.verdicts["ci_low"].astype(float))
    plain = build_report(analyze(_undeclared(run)))["verdicts"]
    assert plain["declared"] is False and plain["how_to_declare"] == HOW_TO_DECLARE
    assert plain["rows"] and all(r["significant"] is None for r in plain["rows"])


def test_the_regression_gate_reads_declared_worse_outcome_rows() -> None:
    frame = pd.DataFrame(
        {
            "declared": [True, True, True, False],
            "verdict": ["worse", "worse", "better", "not judged"],
            "dimension": ["safety", "latency", "quality", "quality"],
        }
    )
    assert regressions(frame)["dimension"].tolist() == ["safety"]


def test_headline_is_the_case_level_mean_with_its_recommended_interval(
    run: ExperimentRun,
) -> None:
    analysis = analyze(run)
    headline = headline_pass_rates(analysis.paired_frames["case_level_summary"]).set_index(
        "variant_id"
    )
    means = _case_means(run, "passed")
    att = run.attempts[run.attempts["status"].astype(str) != "trial_failed"]
    pooled = att.groupby("variant_id", observed=True)["passed"].mean()
    for vid in run.manifest.variant_ids:
        # Over evaluated attempts: retrieval-dense's lost trial is left out (82.1 %), not
        # counted as failing every case as AgenticLens's case pass rate does (65.7 %).
        assert headline.loc[vid, "estimate"] == pytest.approx(pooled[vid])
        assert headline.loc[vid, "ci_low"] < headline.loc[vid, "estimate"]
        assert headline.loc[vid, "ci_high"] > headline.loc[vid, "estimate"]
        assert headline.loc[vid, "n_cases"] == means[vid].notna().sum()
    assert headline.loc["retrieval-dense", "estimate"] == pytest.approx(23 / 28)
    compat = analysis.variants.set_index(analysis.variants["variant_id"].astype(str))
    assert compat.loc["retrieval-dense", "case_pass_rate"] == pytest.approx(46 / 70)


def test_a_hand_edited_verdicts_block_renders_without_a_crash(
    run: ExperimentRun, tmp_path: Path
) -> None:
    from rich.console import Console

    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.html import render_html

    path = write_json_report(analyze(run), tmp_path / "r.json")
    report = json.loads(Path(path).read_text())
    report["verdicts"]["rows"][0].update(
        {"family_size": "many", "confidence_level": None, "significant": "yes", "unit": None}
    )
    report["verdicts"]["rows"].append("not a row")
    report["case_level"]["summary"] = [{"variant_id": "baseline"}]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(report))
    loaded = load_report(edited)
    assert loaded.verdicts["significant"].isna().iloc[0]
    assert len(loaded.verdicts) == len(report["verdicts"]["rows"]) - 1
    page = render_html(loaded)
    assert "id='verdicts'" in page and "<b>† Pass rate</b>" in page  # falls back, says so
    console = Console(record=True, width=300, color_system=None)
    print_summary(loaded, console)
    assert "Verdicts against baseline" in console.export_text()


def test_the_notebook_display_leads_with_the_verdicts(run: ExperimentRun) -> None:
    analysis = analyze(run)
    page = analysis._repr_html_()
    verdicts = page.index("table class='verdicts'")
    compat = page.index("AgenticLens-compatible numbers")
    assert verdicts < compat
    assert analysis.verdicts["statement"].iloc[1].replace("'", "&#x27;") in page[:compat]
    assert "class='good'" not in page[compat:] and "class='bad'" not in page[compat:]


def test_the_plain_repr_names_the_correction_and_the_verdicts(run: ExperimentRun) -> None:
    """repr() (a terminal, print) showed only AgenticLens's frontier on means."""
    import dataclasses

    analysis = analyze(run, frontier_n_resamples=0)
    counts = analysis.verdicts["verdict"].astype(str).value_counts()
    assert set(counts.index) == {"worse", "no detectable difference"}
    tally = (
        f"{counts['worse']} worse, {counts['no detectable difference']} no detectable difference"
    )
    text = repr(analysis)
    assert f"correction='holm', verdicts='{tally}', frontier=" in text
    assert text.index("verdicts=") < text.index("frontier=")
    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    plain = analyze(undeclared, frontier_n_resamples=0)
    assert f"correction=None, verdicts='{len(plain.verdicts)} not judged'" in repr(plain)


def test_the_notebook_display_leads_with_the_case_level_pass_rates(run: ExperimentRun) -> None:
    from statsmodels.stats.proportion import proportion_confint

    from agenticlens_frames.stats_paired import beta_binomial_interval

    page = analyze(run)._repr_html_()
    compat = page.index("AgenticLens-compatible numbers")
    assert "pass rate [95% CI, cases as the unit]" in page[:compat]
    att = run.attempts[run.attempts["variant_id"].astype(str) == "baseline"]
    by_case = att.groupby(att["case_id"].astype(str))["passed"]
    passes = by_case.agg(lambda s: sum(x is True for x in s.tolist()))
    case_level = beta_binomial_interval(passes, by_case.size())
    assert f"[{case_level.ci_low:.1%}, {case_level.ci_high:.1%}]" in page[:compat]
    low, high = proportion_confint(int(passes.sum()), len(att), method="wilson")
    pooled = f"[{low:.1%}, {high:.1%}]"
    assert pooled not in page[:compat] and pooled in page[compat:]


def _run_example(*options: str):
    """`experiment run` of the bundled example in this process (typer's runner)."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    example = [str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml")]
    return CliRunner().invoke(
        app, ["experiment", "run", *example, *options], env={"COLUMNS": "200"}
    )


def test_parquet_results_include_the_verdicts(run: ExperimentRun, tmp_path: Path) -> None:
    out = tmp_path / "pq"
    done = _run_example("--save", str(tmp_path / "r.json"), "--parquet", str(out), "-q")
    assert done.exit_code == 0, done.output
    frame = pd.read_parquet(out / "results" / "verdicts.parquet")
    expected = analyze(run).verdicts
    assert frame["verdict"].tolist() == expected["verdict"].tolist()
    np.testing.assert_allclose(frame["ci_high"], expected["ci_high"].astype(float))


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (-0.3, "ms", "-0.3 ms"),  # was "-0 ms": read as a sign error
        (0.004, "ms", "+0.004 ms"),
        (-12.4, "ms", "-12 ms"),
        (0.0, "ms", "+0 ms"),  # a true zero stays zero
        (0.00042, "proportion", "+0.042 pp"),
        (-0.157, "proportion", "-15.7 pp"),
        (-2e-6, "usd", "-2e-06 USD"),
    ],
)
def test_a_nonzero_difference_never_prints_as_zero(value: float, unit: str, text: str) -> None:
    from agenticlens_frames.paired.verdicts import detectable_note, format_difference

    assert format_difference(value, unit) == text
    if value > 0:
        assert detectable_note(value, unit, False).endswith(text.lstrip("+"))


def test_a_zero_width_interval_is_named_in_the_statement() -> None:
    """Every case moved by the same amount: "[+100.0, +100.0] (95% CI)" beside "no
    detectable difference" read as a contradiction; the statement names the interval's
    zero width as arithmetic."""
    from agenticlens_frames.api import Experiment, Variant, run

    class Agent:
        def __init__(self, variant: Variant) -> None:
            self.good = variant.name == "b"

        def run(self, text: str) -> str:
            return "refund" if self.good else "no"

    experiment = Experiment(
        name="same-shift",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": f"q{i}", "expected_contains": ["refund"]} for i in range(3)],
        comparisons={"correction": "holm"},
    )
    verdicts = case_verdicts(run(experiment, Agent, trials=3, progress=False).run)
    quality = verdicts[verdicts["dimension"] == "quality"].iloc[0]
    assert quality["ci_low"] == quality["ci_high"] == 1.0
    assert (
        "(zero-width interval: every case differed by the same amount, not certainty)"
        in (quality["statement"])
    )
    assert "(95% CI)" not in quality["statement"]


def test_a_variant_without_latencies_gets_no_latency_verdict_and_says_why(
    run: ExperimentRun, tmp_path: Path
) -> None:
    """prompt-v2 logged no latency: AgenticLens reads 0 ms, which made it "better" by
    −1976 ms (adjusted p = 2.6e-05). Now it has no latency row, every surface says why, and
    the family is the other seven comparisons (recomputed by hand from the intact run)."""
    from rich.console import Console

    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.html import render_html

    from .conftest import example_without_latency

    folder = example_without_latency(tmp_path)
    bare = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    verdicts = case_verdicts(bare, QUALITY_AND_LATENCY)
    expected = _by_hand(run)
    expected = expected[
        ~((expected["candidate_variant_id"] == "prompt-v2") & (expected["dimension"] == "latency"))
    ].reset_index(drop=True)
    expected["adjusted"] = multipletests(expected["p"], alpha=0.05, method="holm")[1]
    rows = verdicts.assign(
        candidate_variant_id=verdicts["candidate_variant_id"].astype(str),
        dimension=verdicts["dimension"].astype(str),
    )
    latency = rows[rows["dimension"] == "latency"].merge(
        expected, on=["candidate_variant_id", "dimension"], validate="1:1"
    )
    assert len(rows) == 7 and len(latency) == 3
    np.testing.assert_allclose(latency["mean_difference"], latency["difference"], rtol=1e-12)
    np.testing.assert_allclose(latency["adjusted_p_value"], latency["adjusted"], rtol=1e-9)
    assert (rows["family_size"] == 7).all()
    [omitted] = verdicts.attrs["omitted"]
    assert (omitted["candidate_variant_id"], omitted["dimension"]) == ("prompt-v2", "latency")
    assert "known latency" in omitted["reason"]

    analysis = analyze(bare, comparisons=QUALITY_AND_LATENCY, frontier_n_resamples=0)
    console = Console(record=True, width=200, color_system=None)
    print_summary(analysis, console)
    text = console.export_text()
    assert "Not compared: prompt-v2 on latency (latency_ms): no case has a known latency" in text
    page = render_html(analysis)  # (each part tagged with its candidate for the filters)
    assert "Not compared: prompt-v2 on latency" in re.sub(r"<[^>]+>", "", page)
    # The notebook's display too (it left the comparison out without a word).
    shown = analysis._repr_html_()
    assert (
        "Not compared: prompt-v2 on latency (latency_ms): no case has a known latency"
        in (shown[: shown.index("AgenticLens-compatible numbers")])
    )
    saved = load_report(write_json_report(analysis, tmp_path / "report.json"))
    assert saved.verdicts.attrs["omitted"] == verdicts.attrs["omitted"]


def test_the_analysis_level_sets_the_declared_verdicts_intervals(run: ExperimentRun) -> None:
    """`analyze(confidence_level=0.9)` (`--confidence-level 0.9`) with a declared
    correction that names no level (the example's holm) left the verdicts' intervals at
    95 % beside a 90 % variant table. They follow the analysis now; α, and so the adjusted
    p-values and the verdicts, do not move; a level the settings declare wins."""

    family = {"evaluators": QUALITY_AND_LATENCY["evaluators"]}
    manifest = dataclasses.replace(run.manifest, comparisons={**run.manifest.comparisons, **family})
    small = dataclasses.replace(run, manifest=manifest)
    at90 = analyze(small, confidence_level=0.9).verdicts
    at95 = analyze(small).verdicts
    assert (at90["confidence_level"] == 0.9).all() and (at95["confidence_level"] == 0.95).all()
    expected = _by_hand(run, 0.9)
    merged = at90.assign(
        candidate_variant_id=at90["candidate_variant_id"].astype(str),
        dimension=at90["dimension"].astype(str),
    ).merge(expected, on=["candidate_variant_id", "dimension"], validate="1:1")
    assert len(merged) == 8
    np.testing.assert_allclose(merged["ci_low"], merged["low"], rtol=1e-9)
    np.testing.assert_allclose(merged["ci_high"], merged["high"], rtol=1e-9)
    for column in ("adjusted_p_value", "alpha", "verdict", "significant"):
        assert at90[column].tolist() == at95[column].tolist(), column
    declared = case_verdicts(
        run, {"correction": "holm", "confidence_level": 0.99}, confidence_level=0.9
    )
    assert (declared["confidence_level"] == 0.99).all()
    done = _run_example("--confidence-level", "0.9")
    assert done.exit_code == 0, done.output
    assert "Difference [90% CI]" in done.output and "95% CI" not in done.output


def test_the_way_to_declare_a_correction_in_python_is_the_short_one_and_works() -> None:
    # The hint named analyze(run, comparisons=ComparisonsConfig(correction='holm')), a
    # class a user first has to find and import; analyze takes correction= directly.
    call = re.search(r"analyze\(run, [^)]*\)", HOW_TO_DECLARE)
    assert call is not None and call.group(0) == "analyze(run, correction='holm')"
    att = pd.DataFrame(
        {
            "variant_id": ["a", "a", "b", "b"],
            "trial": [1] * 4,
            "case_id": ["x", "y"] * 2,
            "passed": [True, False, True, True],
        }
    )
    run = ExperimentRun.from_frames(
        att, pd.DataFrame({"variant_id": ["a", "b"]}), pd.DataFrame({"case_id": ["x", "y"]})
    )
    assert analyze(run, correction="holm").verdicts.attrs["declared"]


def test_a_candidates_headline_groups_its_dimensions_by_verdict() -> None:
    """better and worse first, each dimension with its own numbers; a not-significant one
    with its smallest detectable change; no verdict word without a declared correction."""
    from agenticlens_frames.paired.headline import candidate_headlines

    def row(dimension: str, verdict: str, diff: float, mde: float, detectable: str) -> dict:
        return {
            "candidate_variant_id": "c", "dimension": dimension, "unit": "proportion",
            "mean_difference": diff, "ci_low": diff - 0.05, "ci_high": diff + 0.05,
            "declared": True, "correction": "holm", "adjusted_p_value": 0.0123,
            "confidence_level": 0.95, "verdict": verdict, "mde": mde, "detectable": detectable,
        }  # fmt: skip

    frame = pd.DataFrame(
        [
            row("quality", "no detectable difference", 0.02, 0.25,
                "this run could not detect changes smaller than 25.0 pp"),
            row("safety", "worse", -0.2, 0.1, ""),
            row("reliability", "no test", 0.0, float("nan"),
                "fewer than two paired cases (or clusters)"),
            row("cost", "better", 0.3, 0.1, ""),
        ]
    )  # fmt: skip
    [(candidate, sentence)] = candidate_headlines(frame)
    assert candidate == "c"
    assert sentence == (
        "better on cost (+30.0 pp [+25.0, +35.0], adj. p 0.012); "
        "worse on safety (-20.0 pp [-25.0, -15.0], adj. p 0.012); "
        "no detectable difference in quality (+2.0 pp [-3.0, +7.0], adj. p 0.012; "
        "smallest detectable 25.0 pp); "
        "no test on reliability (+0.0 pp [-5.0, +5.0], adj. p 0.012; "
        "fewer than two paired cases (or clusters))"
    )
    undeclared = frame.assign(declared=False, verdict="not judged")
    [(_, sentence)] = candidate_headlines(undeclared)
    assert sentence.startswith("quality (+2.0 pp [-3.0, +7.0], 95% per-comparison interval; ")
    for word in ("better", "worse", "no detectable", "adj. p"):
        assert word not in sentence


def test_clusters_with_equal_mean_differences_are_not_called_better() -> None:
    """Four cases in two topics, each topic one pass gained of two: the CR1 interval has
    zero width (every cluster's mean difference is 0.5) and the t p was 0, a 'better'
    verdict. The exact sign flip over the two cluster sums (scipy) is 0.5, and the
    statement names the clusters, not 'every case', as alike."""
    attempts = pd.DataFrame(
        {
            "variant_id": ["a"] * 4 + ["b"] * 4 + ["c"] * 4,
            "trial": [1] * 12,
            "case_id": ["w", "x", "y", "z"] * 3,
            "passed": [False] * 4 + [False, True, False, True] + [False] * 4,
        }
    )
    cases = pd.DataFrame({"case_id": ["w", "x", "y", "z"]})
    cases["metadata"] = [{"topic": t} for t in ("A", "A", "B", "B")]
    clustered = ExperimentRun.from_frames(
        attempts, pd.DataFrame({"variant_id": ["a", "b", "c"]}), cases
    )
    want = stats.permutation_test(
        (np.array([1.0, 1.0]),), np.sum, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    verdicts = case_verdicts(clustered, {"correction": "holm", "cluster": "topic"})
    b = verdicts[verdicts["candidate_variant_id"] == "b"].iloc[0]
    assert b["p_value"] == pytest.approx(want) == 0.5
    assert b["verdict"] == "no detectable difference"
    assert "every cluster's mean differed by the same amount, not certainty" in b["statement"]
    paired = paired_comparisons(clustered, correction="holm", cluster="topic")
    assert paired.loc[paired["candidate_variant_id"] == "b", "note"].tolist() == [
        "zero-width interval (every cluster's mean difference equal): not certainty; "
        "no detectable-effect bound"
    ]

    # The gate at δ = 0.5, by hand: the pseudo-case bound over the 4 cases as independent
    # (d = 0, 1, 0, 1 with +1 and -1 added, t at 5 df) passed it; over the 2 cluster means
    # (0.5, 0.5 with +1 and -1, t at 3 df) it fails.
    def pseudo_bound(d: np.ndarray) -> float:
        augmented = np.concatenate([d, [1.0, -1.0]])
        spread = math.sqrt(np.mean((augmented - augmented.mean()) ** 2) / len(augmented))
        centre = min(augmented.mean(), d.mean())
        return centre - stats.t.ppf(0.95, len(d) + 1) * spread

    assert pseudo_bound(np.array([0.0, 1.0, 0.0, 1.0])) > -0.5
    by_cluster = pseudo_bound(np.array([0.5, 0.5]))
    gated = paired_comparisons(
        clustered, correction="holm", cluster="topic", noninferiority_margin=0.5
    ).attrs["noninferiority"]
    row = gated[gated["candidate_variant_id"] == "b"].iloc[0]
    assert row["bound"] == pytest.approx(by_cluster, rel=1e-12) and by_cluster < -0.5
    assert not row["passed"] and row["bound_method"].startswith("two pseudo-clusters")


def test_a_one_case_verdict_says_no_test_once(tmp_path) -> None:
    """One case: every row is "no test", and its sentence says why once. It read "…: no
    test; fewer than two paired cases (or clusters): no test"."""
    from agenticlens_frames.testing import make_synthetic

    make_synthetic(tmp_path, variants=3, trials=2, cases=1, seed=1)
    run = load_experiment(tmp_path / "manifest.yaml", tmp_path / "suite.yaml")
    verdicts = analyze(run, correction="holm").verdicts
    assert set(verdicts["verdict"]) == {"no test"}
    for statement in verdicts["statement"]:
        assert statement.count("no test") == 1, statement
        assert statement.endswith(": no test; fewer than two paired cases (or clusters)")


def test_a_saved_report_without_declared_comparisons_keeps_the_omitted_ones(
    tmp_path: Path,
) -> None:
    """Candidate ``c`` lost every trial: its quality comparison has no row, and the
    verdicts say why. Without a declared correction there is no paired_comparisons
    block, where a loaded report used to look for that list (and found none)."""
    rows = [
        {
            "variant_id": v,
            "trial": t,
            "case_id": c,
            "passed": v != "c" and (c != "z" or t == 1),
            "status": "trial_failed" if v == "c" else "ok",
        }
        for v in ("a", "b", "c")
        for t in (1, 2)
        for c in ("x", "y", "z")
    ]
    run = ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["a", "b", "c"]}),
        pd.DataFrame({"case_id": ["x", "y", "z"]}),
    )
    analysis = analyze(run, frontier_n_resamples=0)
    expected = [
        {
            "candidate_variant_id": "c",
            "dimension": "quality",
            "evaluator": "passed",
            "reason": "no case has a value for both arms",
        }
    ]
    assert analysis.paired is None and analysis.verdicts.attrs["omitted"] == expected
    path = write_json_report(analysis, tmp_path / "r.json")
    report = json.loads(Path(path).read_text())
    assert "paired_comparisons" not in report and report["verdicts"]["omitted"] == expected
    assert load_report(path).verdicts.attrs["omitted"] == expected
    # A report written before the block kept it, with no paired block: none, as before.
    del report["verdicts"]["omitted"]
    (tmp_path / "earlier.json").write_text(json.dumps(report))
    assert "omitted" not in load_report(tmp_path / "earlier.json").verdicts.attrs


#: A hand-made paired row (the columns verdicts_from_paired reads): c against b on quality,
#: significant under Holm, 20 points worse.
HAND_ROW = {
    "baseline_variant_id": "b",
    "candidate_variant_id": "c",
    "dimension": "quality",
    "evaluator": "passed",
    "unit": "proportion",
    "higher_is_better": True,
    "paired_items": 14,
    "mean_difference": -0.2,
    "ci_low": -0.3,
    "ci_high": -0.1,
    "confidence_level": 0.95,
    "p_value": 0.0011,
    "adjusted_p_value": 0.0044,
    "correction": "holm",
    "alpha": 0.05,
    "family_size": 4,
    "significant": True,
    "mde": 0.15,
    "mde_power": 0.8,
    "degenerate": False,
}


def test_each_verdict_is_worded_as_written_here() -> None:
    """The sentence a user reads first, written out by hand for each verdict: the
    correction's name (none declared: "no correction, as declared", not "adjusted"), a
    lower-is-better unit significantly down (better), an MDE of exactly 100 pp (a possible
    change, so stated as a number), a row whose degenerate flag is unknown (treated as not
    degenerate) and a row without a test."""
    latency = {
        "dimension": "latency",
        "evaluator": "latency_ms",
        "unit": "ms",
        "higher_is_better": False,
        "mean_difference": -12.4,
        "ci_low": -20.0,
        "ci_high": -5.0,
        "adjusted_p_value": 0.001,
        "correction": "benjamini_hochberg",
    }
    quiet = {"significant": False, "adjusted_p_value": 1.0, "mean_difference": 0.02}
    quiet.update(ci_low=-0.1, ci_high=0.14)
    rows = [
        HAND_ROW,
        {**HAND_ROW, "correction": "none", "adjusted_p_value": 0.0123, "mean_difference": 0.2,
         "ci_low": 0.1, "ci_high": 0.3},
        {**HAND_ROW, **latency},
        {**HAND_ROW, **latency, "mean_difference": 12.4, "ci_low": 5.0, "ci_high": 20.0},
        {**HAND_ROW, **quiet, "mde": 1.0},
        {**HAND_ROW, **quiet, "mde": 0.3, "degenerate": None},
        {**HAND_ROW, "significant": None, "adjusted_p_value": math.nan, "ci_low": math.nan,
         "ci_high": math.nan, "mde": math.nan},
    ]  # fmt: skip
    v = verdicts_from_paired(pd.DataFrame(rows), declared=True)
    head = "c vs b, quality (passed): "
    assert v["statement"].tolist() == [
        head + "-20.0 pp [-30.0, -10.0] (95% CI), Holm-adjusted p = 0.004: worse",
        head + "+20.0 pp [+10.0, +30.0] (95% CI), p = 0.012 (no correction, as declared): better",
        "c vs b, latency (latency_ms): -12 ms [-20, -5] (95% CI), "
        "Benjamini-Hochberg-adjusted p = 0.001: better",
        "c vs b, latency (latency_ms): +12 ms [+5, +20] (95% CI), "
        "Benjamini-Hochberg-adjusted p = 0.001: worse",
        head + "+2.0 pp [-10.0, +14.0] (95% CI), Holm-adjusted p = 1.000: no detectable "
        "difference; this run could not detect changes smaller than 100.0 pp",
        head + "+2.0 pp [-10.0, +14.0] (95% CI), Holm-adjusted p = 1.000: no detectable "
        "difference; this run could not detect changes smaller than 30.0 pp",
        head + "-20.0 pp [n/a] (95% CI), Holm-adjusted p = n/a: no test; "
        "fewer than two paired cases (or clusters)",
    ]
    assert v["verdict"].tolist() == [
        "worse",
        "better",
        "better",
        "worse",
        "no detectable difference",
        "no detectable difference",
        "no test",
    ]
    assert v["significant"].tolist() == [True, True, True, True, False, False, pd.NA]


def test_an_mde_just_beyond_100_pp_is_not_detectable_but_100_pp_is() -> None:
    from agenticlens_frames.paired.verdicts import detectable_note

    assert detectable_note(1.0, "proportion", False) == (
        "this run could not detect changes smaller than 100.0 pp"
    )
    assert detectable_note(1.001, "score", False) == (
        "not detectable with this design (the smallest detectable change, 1.001, exceeds the scale)"
    )
    assert detectable_note(250.0, "ms", False) == (
        "this run could not detect changes smaller than 250 ms"  # no scale to exceed
    )
    assert detectable_note(0.3, "proportion", True) == (
        "every case differed by the same amount; no detectable-change bound"
    )
    assert detectable_note(math.nan, "proportion", False) == (
        "the smallest detectable change could not be estimated"
    )


def test_a_detectable_cell_is_the_magnitude_or_beyond_the_scale() -> None:
    from agenticlens_frames.paired.verdicts import detectable_cell

    quiet = "no detectable difference"
    could_not = "this run could not detect changes smaller than 44.7 pp"
    assert detectable_cell(quiet, 0.447, "proportion", could_not) == "44.7 pp"
    assert detectable_cell(quiet, 12.4, "ms", could_not) == "12 ms"
    # an MDE beyond the scale given as a number (a planning frame, a hand-made row) is not
    # shortened to that number: no pass-rate change of 150 pp exists
    beyond = "not detectable with this design (the smallest detectable change, 150.0 pp, …)"
    assert detectable_cell(quiet, 1.5, "proportion", beyond) == "beyond the scale"
    assert detectable_cell(quiet, math.inf, "proportion", beyond) == "beyond the scale"
    degenerate = "every case differed by the same amount; no detectable-change bound"
    assert detectable_cell(quiet, 0.2, "proportion", degenerate) == degenerate
    no_test = "fewer than two paired cases (or clusters)"
    assert detectable_cell("no test", math.nan, "proportion", no_test) == no_test
    assert detectable_cell("better", 0.1, "proportion", "") == ""


def test_a_p_value_of_0_001_is_written_in_decimals() -> None:
    from agenticlens_frames.paired.verdicts import format_p

    assert [format_p(p) for p in (1.0, 0.05, 0.0012, 0.001, 0.00099, 0.0)] == [
        "1.000",
        "0.050",
        "0.001",
        "0.001",
        "9.9e-04",
        "0.0e+00",
    ]
    assert format_p(math.inf) == format_p(math.nan) == "n/a"


def test_the_interval_phrase_says_what_the_verdict_follows() -> None:
    from agenticlens_frames.paired.verdicts import interval_phrase

    per = "The interval is per comparison"
    assert interval_phrase(0.95, 0.05, "holm") == (
        f"{per} (95%), not adjusted for the family; the verdict follows the adjusted p."
    )
    assert interval_phrase(0.9, 0.05, "holm") == (
        f"{per} (90%), not adjusted for the family; the verdict follows the adjusted p at "
        "α = 0.05, not the interval."
    )
    assert interval_phrase(0.975, math.nan) == (
        f"{per} (97.5%), not adjusted for the family; the verdict follows the adjusted p."
    )
    assert interval_phrase(0.95, 0.05, "none") == (
        f"{per} (95%); no correction is declared, so the verdict follows each comparison's own p."
    )
    assert interval_phrase(0.99, 0.05, "none") == (
        f"{per} (99%); no correction is declared, so the verdict follows each comparison's "
        "own p at α = 0.05, not the interval."
    )


def test_the_family_phrase_names_the_correction_its_family_and_alpha() -> None:
    from agenticlens_frames.paired.verdicts import family_phrase

    # a family of one is "1 comparison" (it read "of 1 comparisons" in every heading)
    assert family_phrase("bonferroni", 1, 0.1) == (
        "Bonferroni correction over the family of 1 comparison, α = 0.1"
    )
    assert family_phrase("holm", 2, 0.05) == (
        "Holm correction over the family of 2 comparisons, α = 0.05"
    )
    assert family_phrase("benjamini_hochberg", 0, 0.05) == (
        "Benjamini-Hochberg correction over the family, α = 0.05"
    )
    assert family_phrase("holm", None, 0.05) == "Holm correction over the family, α = 0.05"
    assert family_phrase("none", 3, 0.01) == "no correction (declared), α = 0.01 per comparison"
