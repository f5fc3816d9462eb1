"""factor_effects on loaded experiments: the bundled example and a generated full factorial."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml

from agenticlens_frames import (
    InputError,
    analyze,
    factor_effects,
    load_experiment,
    load_report,
    viz,
    write_json_report,
)
from agenticlens_frames.report.html import render_html

from .conftest import EXAMPLE


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def test_bundled_example_words_and_estimates(run) -> None:
    fe = factor_effects(run, correction="holm")
    notes = fe.attrs["design_notes"]
    assert notes[0] == "model × prompt is estimable only through large-v2."
    assert "retrieval's interactions are not estimable." in notes
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    assert not pr.loc["model × retrieval: gpt-large & dense", "estimable"]
    # One factor at a time: a main effect is the paired mean difference of two variants.
    cm = analyze(run, frontier_n_resamples=0).cases
    rate = cm.pivot(index="case_id", columns="variant_id", values="pass_rate")
    diff = rate["prompt-v2"] - rate["baseline"]
    assert pr.loc["prompt: v2 vs v1", "estimate"] == pytest.approx(diff.mean())
    inter = rate["large-v2"] - rate["model-large"] - rate["prompt-v2"] + rate["baseline"]
    assert pr.loc["model × prompt: gpt-large & v2", "estimate"] == pytest.approx(inter.mean())
    assert pr.loc["model × prompt: gpt-large & v2", "contrast"] == (
        "+large-v2 +baseline −model-large −prompt-v2"
    )
    # Holm across the estimable terms of the metric, as statsmodels does it.
    multitest = pytest.importorskip("statsmodels.stats.multitest", reason="test extra")
    est = pr[pr["estimable"]]
    expected = multitest.multipletests(est["p_value"], method="holm")[1]
    np.testing.assert_allclose(est["p_adjusted"], expected)


def test_a_one_candidate_contrast_is_that_candidates_paired_comparison(run) -> None:
    """The case as the unit over the evaluated attempts, as the verdicts: retrieval-dense
    lost a trial, whose placeholder attempts the case matrix's (AgenticLens's) pass rate
    counts as failures — the effect was -5.7 pp against the verdict's +10.7 pp."""
    a = analyze(run, frontier_n_resamples=0)
    pr = a.factor_effects[a.factor_effects["metric"] == "pass_rate"].set_index("term")
    paired = a.paired_frames["paired_comparisons"]
    quality = paired[paired["evaluator"] == "passed"].set_index(
        paired.loc[paired["evaluator"] == "passed", "candidate_variant_id"].astype(str)
    )
    # Independent: each case's mean over the attempts of trials that did not fail.
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    rate = att.groupby(["case_id", "variant_id"], observed=True)["passed"].mean().unstack()
    for term, candidate in [
        ("prompt: v2 vs v1", "prompt-v2"),
        ("retrieval: dense vs bm25", "retrieval-dense"),
    ]:
        own = (rate[candidate] - rate["baseline"]).mean()
        assert pr.loc[term, "estimate"] == pytest.approx(own, abs=1e-12)
        assert pr.loc[term, "estimate"] == pytest.approx(
            quality.loc[candidate, "mean_difference"], abs=1e-12
        )
        assert pr.loc[term, "contrast"] == f"+{candidate} −baseline"
    assert pr.loc["retrieval: dense vs bm25", "estimate"] == pytest.approx(0.10714286, abs=1e-8)
    # The same contrast's adjusted p is over the factor terms (4), not the verdicts' 19.
    assert a.factor_effects.attrs["correction_family"].startswith("the estimable factor-effect")
    assert pr.loc["prompt: v2 vs v1", "p_adjusted"] == pytest.approx(0.223025, abs=1e-6)
    assert quality.loc["prompt-v2", "adjusted_p_value"] == pytest.approx(0.634740, abs=1e-6)


def _recorded_experiment(
    folder, outcomes: dict[str, tuple[dict[str, str], np.ndarray]], topics=None
):
    """Write and load a recorded experiment: per variant id, its factors and a (trials ×
    cases) array saying which cases it answers "yes" (the one expected answer) per trial;
    the first variant is the baseline. ``topics``: each case's metadata ``topic``."""
    n_trial, n_case = next(iter(outcomes.values()))[1].shape
    cases = [
        {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["yes"]}
        for i in range(n_case)
    ]
    for case, topic in zip(cases, topics or [], strict=False):
        case["metadata"] = {"topic": topic}
    variants = []
    (folder / "trials").mkdir()
    for vid, (factors, passed) in outcomes.items():
        trials = [
            {
                "samples": [
                    {"case_id": c["id"], "output": "yes" if o else "no"}
                    for c, o in zip(cases, row, strict=True)
                ]
            }
            for row in passed
        ]
        (folder / "trials" / f"{vid}.json").write_text(
            json.dumps({"variant_id": vid, "trials": trials})
        )
        variants.append(
            {
                "id": vid,
                "name": vid,
                "target_kind": "recorded",
                "target": f"trials/{vid}.json",
                "factors": factors,
            }
        )
    manifest = {
        "name": "factorial",
        "version": "1",
        "baseline_variant_id": variants[0]["id"],
        "trial_count": n_trial,
        "variants": variants,
    }
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (folder / "suite.yaml").write_text(
        yaml.safe_dump({"name": "s", "version": "1", "cases": cases}, sort_keys=False)
    )
    return load_experiment(folder / "manifest.yaml", folder / "suite.yaml")


def _factorial_experiment(
    folder, effects: dict[tuple[str, str], float], n_case: int = 24, topics: int = 0
):
    """A recorded 2 × 2 (model × prompt) experiment; pass probability per cell and case.
    With ``topics``, case i has topic ``t{i % topics}``, and the topic moves every cell's
    pass probability, and each cell's effect, together (clustered cases)."""
    rng = np.random.default_rng(7)
    difficulty = rng.normal(0, 0.15, n_case)
    topic = np.arange(n_case) % topics if topics else np.zeros(n_case, dtype=int)
    shift = rng.normal(0, 0.2, (len(effects), max(topics, 1)))
    outcomes = {}
    for k, ((model, prompt), p) in enumerate(effects.items()):
        prob = np.clip(p + difficulty + (shift[k, topic] if topics else 0), 0.02, 0.98)
        passed = np.stack([rng.random(n_case) < prob for _ in range(3)])
        outcomes[f"{model}-{prompt}"] = ({"model": model, "prompt": prompt}, passed)
    names = [f"t{i}" for i in topic] if topics else None
    return _recorded_experiment(folder, outcomes, topics=names)


def test_full_factorial_agrees_with_pingouin_rm_anova(tmp_path) -> None:
    pingouin = pytest.importorskip("pingouin", reason="pingouin is a core dependency")
    run = _factorial_experiment(
        tmp_path,
        {("s", "1"): 0.4, ("l", "1"): 0.6, ("s", "2"): 0.5, ("l", "2"): 0.85},
    )
    fe = factor_effects(run, correction="bonferroni")
    assert fe.attrs["design"].startswith("full factorial")
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    cm = analyze(run, frontier_n_resamples=0).cases
    levels = run.variants.set_index(run.variants["variant_id"].astype(str))
    long = cm.assign(
        model=cm["variant_id"].astype(str).map(levels["factor_model"]),
        prompt=cm["variant_id"].astype(str).map(levels["factor_prompt"]),
        case=cm["case_id"].astype(str),
    )[["case", "model", "prompt", "pass_rate"]]
    aov = pingouin.rm_anova(
        data=long, dv="pass_rate", within=["model", "prompt"], subject="case"
    ).set_index("Source")
    p_col = "p_unc" if "p_unc" in aov else "p-unc"
    for term, source in [
        ("model: l vs s", "model"),
        ("prompt: 2 vs 1", "prompt"),
        ("model × prompt: l & 2", "model * prompt"),
    ]:
        assert pr.loc[term, "statistic"] ** 2 == pytest.approx(aov.loc[source, "F"], rel=1e-9)
        assert pr.loc[term, "p_value"] == pytest.approx(aov.loc[source, p_col], rel=1e-7)
        assert pr.loc[term, "anova_f"] == pytest.approx(aov.loc[source, "F"], rel=1e-9)
        # Two-level factors: epsilon is 1 and the corrected p the uncorrected one.
        assert pr.loc[term, "anova_eps"] == 1.0
        assert pr.loc[term, "anova_p"] == pytest.approx(aov.loc[source, p_col], rel=1e-7)
        assert pr.loc[term, "p_adjusted"] == pytest.approx(min(1, 3 * pr.loc[term, "p_value"]))
    # Main effects are averaged over the other factor (the ANOVA definition).
    rate = cm.pivot(index="case_id", columns="variant_id", values="pass_rate")
    main = (rate["l-1"] + rate["l-2"] - rate["s-1"] - rate["s-2"]) / 2
    assert pr.loc["model: l vs s", "estimate"] == pytest.approx(main.mean())


def test_a_three_level_factors_anova_p_is_greenhouse_geisser_corrected(tmp_path) -> None:
    """Three variants of one factor, the third's pass rate swinging from case to case and
    the other two's steady: sphericity fails, and anova_p — which was the uncorrected p —
    is pingouin's Greenhouse–Geisser corrected p, with its epsilon in anova_eps; the JSON
    block and a saved report carry both and say the p is corrected."""
    pingouin = pytest.importorskip("pingouin", reason="pingouin comes with the test extra")
    rng = np.random.default_rng(5)
    n_case, n_trial = 16, 4
    swing = rng.choice([0.05, 0.7], n_case)
    probability = {"a": np.full(n_case, 0.1), "b": np.full(n_case, 0.1), "c": swing}
    run = _recorded_experiment(
        tmp_path,
        {m: ({"model": m}, rng.random((n_trial, n_case)) < p) for m, p in probability.items()},
    )
    a = analyze(run, frontier_n_resamples=0)
    fe = a.factor_effects
    pr = fe[fe["metric"] == "pass_rate"]
    assert fe.attrs["method"].endswith("Greenhouse–Geisser corrected p)")
    # Independent: each case's pass rate per variant, and pingouin's one-way rm_anova.
    rate = run.attempts.groupby(["case_id", "variant_id"], observed=True)["passed"].mean()
    long = rate.astype(float).rename("y").reset_index()
    aov = pingouin.rm_anova(
        data=long, dv="y", within="variant_id", subject="case_id", correction=True
    ).set_index("Source")
    row = aov.loc["variant_id"]
    p_gg = "p_GG_corr" if "p_GG_corr" in aov else "p-GG-corr"
    p_unc = "p_unc" if "p_unc" in aov else "p-unc"
    assert row["eps"] < 0.6
    for _, term in pr.iterrows():  # the whole factor's test on each level's row
        assert term["anova_f"] == pytest.approx(row["F"], rel=1e-9)
        assert term["anova_eps"] == pytest.approx(row["eps"], rel=1e-9)
        assert term["anova_p"] == pytest.approx(row[p_gg], rel=1e-7)
        assert term["anova_p"] > 3 * row[p_unc]  # 0.023, against 0.0069 uncorrected
    path = write_json_report(a, tmp_path / "r.json", lean=True)
    block = json.loads(path.read_text())["factor_effects"]
    assert "anova_p is Greenhouse–Geisser corrected" in block["anova"]
    assert block["method"] == fe.attrs["method"]
    terms = [t for t in block["terms"] if t["metric"] == "pass_rate"]
    assert [t["anova_eps"] for t in terms] == pr["anova_eps"].tolist()
    assert [t["anova_p"] for t in terms] == pr["anova_p"].tolist()
    saved = load_report(path).factor_effects
    pd.testing.assert_series_equal(saved["anova_eps"], fe["anova_eps"], check_names=False)


def test_report_blocks_page_and_saved_report(run, tmp_path) -> None:
    a = analyze(run, frontier_n_resamples=50)
    path = write_json_report(a, tmp_path / "r.json", lean=True)
    block = json.loads(path.read_text())["factor_effects"]
    assert block["design_notes"][0] == "model × prompt is estimable only through large-v2."
    terms = {(t["metric"], t["term"]): t for t in block["terms"]}
    fe = a.factor_effects.set_index(["metric", "term"])
    got = terms[("pass_rate", "prompt: v2 vs v1")]
    assert got["estimate"] == fe.loc[("pass_rate", "prompt: v2 vs v1"), "estimate"]
    assert terms[("pass_rate", "model × retrieval: gpt-large & dense")]["estimate"] is None
    saved = load_report(path)
    pd.testing.assert_series_equal(
        saved.factor_effects["estimate"], a.factor_effects["estimate"], check_names=False
    )
    page = render_html(saved)
    assert "id='factor-effects'" in page and "estimable only through large-v2" in page
    assert "fig-factor_effects" in page and "fig-factor_interaction" in page
    # The page says which family the factor effects' adjusted p is corrected over.
    assert (
        saved.factor_effects.attrs["correction_family"]
        == a.factor_effects.attrs["correction_family"]
    )
    section = page[page.index("id='factor-effects'") :]
    assert "Holm correction over the estimable factor-effect terms of each metric, a " in section
    assert "here 4 terms, against the verdicts' 19 comparisons" in section
    assert "evaluated attempts" in block["unit"]


def test_figures(run) -> None:
    a = analyze(run, frontier_n_resamples=50)
    fig = viz.factor_effects_forest(a.factor_effects)
    main, inter = fig.data
    pr = a.factor_effects[(a.factor_effects["metric"] == "pass_rate")]
    est = pr[pr["estimable"] & (pr["kind"] == "main")]
    # pass-rate effects are drawn in percentage points
    np.testing.assert_allclose(main.x, 100 * est["estimate"])
    np.testing.assert_allclose(
        np.asarray(main.error_x.arrayminus), 100 * (est["estimate"] - est["ci_low"])
    )
    inter_row = pr[pr["estimable"] & (pr["kind"] == "interaction")]
    np.testing.assert_allclose(inter.x, 100 * inter_row["estimate"])
    assert f"{100 * est['estimate'].iloc[0]:+.1f} pp [" in main.hovertext[0]
    # the figure takes the analysis (or the run) as its siblings do
    assert viz.factor_effects_forest(a).to_json() == fig.to_json()
    assert "model × retrieval" in fig.layout.annotations[0].text
    assert "not the verdicts' family" in fig.layout.title.subtitle.text
    assert all("adjusted over the factor terms" in h for h in main.hovertext)
    chart = viz.factor_interaction_chart(a.variants, a.factor_effects)
    lines = {t.name: dict(zip(t.x, t.y, strict=True)) for t in chart.data}
    # Each variant's pass rate over its evaluated attempts, counted from the attempts.
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    rate = att.groupby("variant_id", observed=True)["passed"].mean()
    assert lines["prompt = v2"]["gpt-large"] == pytest.approx(rate["large-v2"], abs=1e-12)
    assert lines["prompt = v1"]["gpt-small"] == pytest.approx(rate["baseline"], abs=1e-12)
    assert len(lines["prompt = v1"]) == 2  # retrieval-dense is not on this plot
    # Every pass rate the chart can show is that one, not AgenticLens's case pass rate
    # (retrieval-dense: 82.1 %, where its failed trial counted as failures gives 65.7 %).
    dense = viz.factor_interaction_chart(a.variants, a.factor_effects, pair=("model", "retrieval"))
    points = {v: y for t in dense.data for v, y in zip(t.text, t.y, strict=True)}
    assert points["retrieval-dense"] == pytest.approx(rate["retrieval-dense"], abs=1e-12)


def test_bad_correction_is_a_clear_error(run) -> None:
    with pytest.raises(InputError, match="correction"):
        factor_effects(run, correction="tukey")
    assert math.isnan(factor_effects(run)["p_adjusted"].iloc[0])


def test_explorer_shows_the_factor_effects(run) -> None:
    from agenticlens_frames.widgets import Explorer

    a = analyze(run, frontier_n_resamples=50)
    explorer = Explorer(a)
    # The figures are drawn in Output widgets as plotly mime bundles.
    titles = [
        out["data"]["application/vnd.plotly.v1+json"]["layout"].get("title", {}).get("text")
        for w in explorer.children
        for out in getattr(w, "outputs", ())
        if "application/vnd.plotly.v1+json" in out.get("data", {})
    ]
    assert any(t and t.startswith("Factor effects on the pass rate") for t in titles)
    assert any(t and "model × prompt" in t for t in titles)


def test_an_outcome_that_never_varies_is_an_effect_of_zero_not_a_crash(tmp_path) -> None:
    """Every variant passing every case (a smoke test): pingouin's ANOVA table then has no
    F column, and `analyze` — so `experiment run` — ended with KeyError: 'F'."""
    everything = np.ones((2, 4), dtype=bool)
    run = _recorded_experiment(tmp_path, {m: ({"model": m}, everything) for m in "abc"})
    fe = factor_effects(run, correction="holm")
    main = fe[fe["kind"] == "main"]
    # Independent: identical outcomes give every paired contrast exactly 0, and no F.
    assert set(main["level"]) == {"b", "c"} and (main["estimate"] == 0).all()
    assert main["anova_f"].isna().all()
    analysis = analyze(run)
    assert (analysis.variants["case_pass_rate"] == 1).all()


def test_no_outcome_at_all_estimates_nothing(tmp_path) -> None:
    """Plain inputs without expectations run no check, so nothing is scored: an
    incomplete design then had no rows for the score's OLS, which failed reshaping an
    empty array (ValueError) inside `analyze`."""
    from agenticlens_frames.api import Experiment, Variant, run

    class Agent:
        def __init__(self, variant):
            pass

        def run(self, text):
            return text

    variants = [
        Variant("base", model="m", temperature=0.2),
        Variant("other", model="m"),
        Variant("third", model="n", temperature=0.2),
    ]
    experiment = Experiment(name="plain", variants=variants, dataset=["a", "b"])
    result = run(experiment, Agent, progress=False)
    assert result.attempts["n_checks"].eq(0).all()
    fe = factor_effects(result.run)
    score = fe[fe["estimable"] & (fe["metric"] == "score")]
    assert len(score) and score["estimate"].isna().all() and score["se"].isna().all()
    assert (score["n_cases"] == 0).all()
    result.analyze()


def test_factor_effects_pass_under_warnings_as_errors(tmp_path) -> None:
    """pingouin's one-way rm_anova calls DataFrame.dropna(inplace=True), deprecated by
    pandas 3.1: a user's test suite running with warnings as errors got Pandas4Warning
    out of `analyze` for any balanced one-factor design (this suite's own filter for
    pingouin's DeprecationWarnings hid it)."""
    import warnings

    rng = np.random.default_rng(11)
    run = _recorded_experiment(
        tmp_path, {m: ({"model": m}, rng.random((2, 12)) < 0.6) for m in ("a", "b", "c")}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fe = factor_effects(run)
    assert fe.attrs["method"].endswith(
        "(with the repeated-measures ANOVA F, Greenhouse–Geisser corrected p)"
    )
    assert fe["anova_f"].notna().all() and fe["anova_eps"].notna().all()


def test_a_variant_without_outcomes_carries_no_term() -> None:
    """A 2 × 2 whose large-v2 lost every trial: the interaction only it carries was
    reported 'estimable' at exactly 0 with a zero-width interval and p = 1 (counted in the
    Holm family), and the notes said the design was a full factorial with every term."""
    from agenticlens_frames import ExperimentRun

    rng = np.random.default_rng(5)
    cells = {"base": ("s", "1"), "L": ("l", "1"), "P": ("s", "2"), "LP": ("l", "2")}
    n_case, rows = 16, []
    difficulty = rng.normal(0, 1, n_case)
    for v, vid in enumerate(cells):
        for t in (1, 2, 3):
            passed = rng.random(n_case) < 1 / (1 + np.exp(-(difficulty + 0.5 * v)))
            for c in range(n_case):
                failed = vid == "LP"
                rows.append((vid, t, f"c{c}", bool(passed[c]) and not failed,
                             "trial_failed" if failed else "ok"))  # fmt: skip
    att = pd.DataFrame(rows, columns=["variant_id", "trial", "case_id", "passed", "status"])
    variants = pd.DataFrame(
        [{"variant_id": k, "factor_model": m, "factor_prompt": p} for k, (m, p) in cells.items()]
    )
    run = ExperimentRun.from_frames(
        att, variants, pd.DataFrame({"case_id": sorted(set(att["case_id"]))})
    )
    fe = factor_effects(run, correction="holm")
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    inter = pr.loc["model × prompt: l & 2"]
    assert not inter["estimable"] and np.isnan(inter["estimate"]) and np.isnan(inter["se"])
    assert fe.attrs["design_notes"][0].startswith("LP has no outcome (no evaluated attempt)")
    assert fe.attrs["design"].endswith("; no outcome for LP")
    # Independent: the main effects are the paired differences at the baseline's levels,
    # with the paired t's estimate; Holm over the two estimable terms only (statsmodels).
    rate = att.groupby(["case_id", "variant_id"])["passed"].mean().unstack()
    for term, vid in [("model: l vs s", "L"), ("prompt: 2 vs 1", "P")]:
        assert pr.loc[term, "estimate"] == pytest.approx((rate[vid] - rate["base"]).mean())
        assert pr.loc[term, "contrast"] == f"+{vid} −base"
    multitest = pytest.importorskip("statsmodels.stats.multitest", reason="test extra")
    est = pr[pr["estimable"]]
    assert len(est) == 2
    np.testing.assert_allclose(
        est["p_adjusted"], multitest.multipletests(est["p_value"], method="holm")[1]
    )


def test_factors_that_change_together_credit_neither() -> None:
    """model and prompt change together (only large-v2 has either): the model row carried
    their joint change (+large-v2 −base) with an interval and a p-value, as if the model
    had caused it, while the prompt row said 'not estimable'."""
    from agenticlens_frames import ExperimentRun

    rng = np.random.default_rng(9)
    cells = {"base": ("s", "1", "bm25"), "LP": ("l", "2", "bm25"), "R": ("s", "1", "dense")}
    n_case, rows = 14, []
    difficulty = rng.normal(0, 1, n_case)
    for v, vid in enumerate(cells):
        for t in (1, 2):
            passed = rng.random(n_case) < 1 / (1 + np.exp(-(difficulty + 0.8 * v)))
            rows += [(vid, t, f"c{c}", bool(passed[c])) for c in range(n_case)]
    att = pd.DataFrame(rows, columns=["variant_id", "trial", "case_id", "passed"])
    variants = pd.DataFrame(
        [
            {"variant_id": k, "factor_model": m, "factor_prompt": p, "factor_retrieval": r}
            for k, (m, p, r) in cells.items()
        ]
    )
    run = ExperimentRun.from_frames(
        att, variants, pd.DataFrame({"case_id": sorted(set(att["case_id"]))})
    )
    fe = factor_effects(run, correction="holm")
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    for term in ("model: l vs s", "prompt: 2 vs 1"):
        assert not pr.loc[term, "estimable"] and np.isnan(pr.loc[term, "estimate"])
    assert fe.attrs["design_notes"][0].endswith("none of them is estimated on its own.")
    # retrieval is still estimated, with the confounded column in the fit: the paired
    # difference; Holm over that one term leaves its p as it is.
    rate = att.groupby(["case_id", "variant_id"])["passed"].mean().unstack()
    dense = pr.loc["retrieval: dense vs bm25"]
    assert dense["estimable"] and dense["contrast"] == "+R −base"
    assert dense["estimate"] == pytest.approx((rate["R"] - rate["base"]).mean())
    assert dense["p_adjusted"] == pytest.approx(dense["p_value"])


@pytest.mark.parametrize("field", ["topic", "difficulty"])
def test_declared_case_clusters_give_cr1_by_cluster_as_statsmodels(field: str) -> None:
    """The bundled example's incomplete design (the fixed-effects path) with its cases
    clustered by topic (13 clusters) or difficulty (3): the estimates are unchanged, the
    errors are statsmodels' cluster covariance by that field on the case-demeaned
    per-case outcomes, with t on G − 1 df. The effects used to ignore the clusters."""
    sm = pytest.importorskip("statsmodels.api", reason="test extra")
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    clustered = analyze(
        run, comparisons={"correction": "holm", "cluster": field}, frontier_n_resamples=0
    ).factor_effects
    plain = analyze(run, frontier_n_resamples=0).factor_effects
    groups = {c.id: c.metadata[field] for c in run.suite.cases}
    n_groups = len(set(groups.values()))
    note = f"The comparisons declare case clusters ({field}, {n_groups} clusters): the"
    assert any(n.startswith(note) for n in clustered.attrs["design_notes"])
    assert not any("clusters" in n for n in plain.attrs["design_notes"])
    pd.testing.assert_series_equal(clustered["estimate"], plain["estimate"])
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    levels = run.variants.set_index(run.variants["variant_id"].astype(str))
    for metric, column in [("pass_rate", "passed"), ("score", "score")]:
        fe = clustered[(clustered["metric"] == metric) & clustered["estimable"]]
        long = (
            att.groupby(["case_id", "variant_id"], observed=True)[column]
            .mean()
            .astype(float)
            .rename("y")
            .reset_index()
        )
        vid = long["variant_id"].astype(str)
        x = pd.DataFrame(index=long.index)
        for _, t in fe.iterrows():
            on = vid.map(levels[f"factor_{t['factor']}"]) == t["level"]
            if t["kind"] == "interaction":
                on &= vid.map(levels[f"factor_{t['factor_b']}"]) == t["level_b"]
            x[t["term"]] = on.astype(float)
        data = pd.concat([long["y"], x], axis=1)
        demeaned = data.groupby(long["case_id"].astype(str)).transform(lambda s: s - s.mean())
        fit = sm.OLS(demeaned["y"], demeaned[list(fe["term"])]).fit(
            cov_type="cluster",
            cov_kwds={"groups": pd.factorize(long["case_id"].astype(str).map(groups))[0]},
            use_t=True,
        )
        np.testing.assert_allclose(fe["estimate"], fit.params, atol=1e-12)
        np.testing.assert_allclose(fe["se"], fit.bse, rtol=1e-9)
        np.testing.assert_allclose(fe["p_value"], fit.pvalues, rtol=1e-7)
        ci = fit.conf_int(alpha=0.05).to_numpy()
        np.testing.assert_allclose(fe["ci_low"], ci[:, 0], rtol=1e-7)
        np.testing.assert_allclose(fe["ci_high"], ci[:, 1], rtol=1e-7)
        assert (fe["df"] == n_groups - 1).all()
        assert fe["method"].str.endswith(f"CR1 by cluster ({n_groups} clusters)").all()


def test_a_balanced_factorial_with_clusters_is_cr1_of_the_contrasts(tmp_path) -> None:
    """A 2 × 2 over 24 cases in 6 topics: each term is CR1 of its per-case contrasts by
    topic with t(5) — statsmodels' cluster covariance of the contrast on a constant — and
    the case-level ANOVA F is left out (it used to be reported, with t over 23 df)."""
    sm = pytest.importorskip("statsmodels.api", reason="test extra")
    effects = {("s", "1"): 0.4, ("l", "1"): 0.6, ("s", "2"): 0.5, ("l", "2"): 0.85}
    run = _factorial_experiment(tmp_path, effects, topics=6)
    fe = analyze(
        run, comparisons={"correction": "holm", "cluster": "topic"}, frontier_n_resamples=0
    ).factor_effects
    plain = factor_effects(run, correction="holm")
    assert fe.attrs["design"].startswith("full factorial")
    assert fe.attrs["design_notes"][-1].endswith(
        "as in the paired verdicts; the repeated-measures ANOVA F, which treats the cases "
        "as independent, is left out."
    )
    assert fe["anova_f"].isna().all() and plain["anova_f"].notna().all()
    assert fe["anova_eps"].isna().all() and (plain["anova_eps"] == 1.0).all()
    assert "ANOVA" not in fe.attrs["method"]
    att = run.attempts.astype({"case_id": str, "variant_id": str})
    topic = {c.id: c.metadata["topic"] for c in run.suite.cases}
    for metric, column in [("pass_rate", "passed"), ("score", "score")]:
        rate = att.groupby(["case_id", "variant_id"])[column].mean().astype(float).unstack()
        groups = pd.factorize(rate.index.astype(str).map(topic))[0]
        contrasts = {
            "model: l vs s": (rate["l-1"] + rate["l-2"] - rate["s-1"] - rate["s-2"]) / 2,
            "prompt: 2 vs 1": (rate["s-2"] + rate["l-2"] - rate["s-1"] - rate["l-1"]) / 2,
            "model × prompt: l & 2": rate["l-2"] - rate["l-1"] - rate["s-2"] + rate["s-1"],
        }
        rows = fe[fe["metric"] == metric].set_index("term")
        for term, c in contrasts.items():
            fit = sm.OLS(c.to_numpy(float), np.ones(len(c))).fit(
                cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
            )
            row = rows.loc[term]
            assert row["estimate"] == pytest.approx(fit.params[0], abs=1e-12)
            assert row["se"] == pytest.approx(fit.bse[0], rel=1e-9)
            assert row["df"] == 5
            assert row["p_value"] == pytest.approx(fit.pvalues[0], rel=1e-7)
            assert row["ci_low"] == pytest.approx(fit.conf_int(0.05)[0, 0], rel=1e-7)
            assert row["ci_high"] == pytest.approx(fit.conf_int(0.05)[0, 1], rel=1e-7)


def test_a_one_factor_contrast_with_clusters_is_the_paired_t(tmp_path) -> None:
    """One factor with three levels (a balanced full factorial): each main effect is a
    candidate's paired comparison, and with clustered cases so is its interval — the
    paired t's CR1 by cluster with t(G − 1)."""
    rng = np.random.default_rng(3)
    n_case, topic = 20, [f"t{i % 5}" for i in range(20)]
    shared = rng.normal(0, 0.25, 5)[np.arange(n_case) % 5]
    outcomes = {
        name: ({"prompt": level}, rng.random((3, n_case)) < np.clip(p + shared, 0.05, 0.95))
        for name, level, p in [("base", "v1", 0.5), ("cand", "v2", 0.65), ("other", "v3", 0.4)]
    }
    run = _recorded_experiment(tmp_path, outcomes, topics=topic)
    a = analyze(run, comparisons={"correction": "holm", "cluster": "topic"}, frontier_n_resamples=0)
    assert a.factor_effects.attrs["design"].startswith("full factorial")
    effects = a.factor_effects.set_index(["metric", "term"])
    paired = a.paired_frames["paired_comparisons"]
    verdicts = paired[paired["evaluator"] == "passed"].set_index(
        paired.loc[paired["evaluator"] == "passed", "candidate_variant_id"].astype(str)
    )
    for level, candidate in [("v2", "cand"), ("v3", "other")]:
        term = effects.loc[("pass_rate", f"prompt: {level} vs v1")]
        verdict = verdicts.loc[candidate]
        assert verdict["n_clusters"] == 5
        assert term["estimate"] == pytest.approx(verdict["mean_difference"], abs=1e-12)
        assert term["ci_low"] == pytest.approx(verdict["ci_low"], rel=1e-9)
        assert term["ci_high"] == pytest.approx(verdict["ci_high"], rel=1e-9)
        assert term["df"] == 4


def test_the_forest_says_its_intervals_are_not_adjusted() -> None:
    """A term's interval clear of 0 can still fail the correction: the subtitle says the
    intervals are per term (it named only the adjusted p's family)."""
    from agenticlens_frames import analyze, load_experiment, viz

    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    fig = viz.factor_effects_forest(analyze(run, frontier_n_resamples=0))
    assert fig.layout.title.subtitle.text.startswith("intervals per term, not adjusted")


def _lost_trial_factorial(folder, *, lose: bool):
    """A recorded 2 × 2 (model × prompt), 4 trials of 20 cases; with ``lose``, l-2's last
    trial is lost (a failed trial, as retrieval-dense's in the bundled example). Returns
    the run and the (trials × cases) pass arrays that were recorded."""
    rng = np.random.default_rng(11)
    difficulty = rng.normal(0, 0.2, 20)
    cells = {("s", "1"): 0.35, ("l", "1"): 0.55, ("s", "2"): 0.5, ("l", "2"): 0.8}
    outcomes = {}
    for (model, prompt), p in cells.items():
        passed = rng.random((4, 20)) < np.clip(p + difficulty, 0.02, 0.98)
        if lose and (model, prompt) == ("l", "2"):
            passed = passed[:3]
        outcomes[f"{model}-{prompt}"] = ({"model": model, "prompt": prompt}, passed)
    return _recorded_experiment(folder, outcomes), {k: v[1] for k, v in outcomes.items()}


def _hand_contrasts(rate: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per case: the 2 × 2's main effects (averaged over the other factor) and interaction."""
    return {
        "model: l vs s": (rate["l-1"] + rate["l-2"] - rate["s-1"] - rate["s-2"]) / 2,
        "prompt: 2 vs 1": (rate["s-2"] + rate["l-2"] - rate["s-1"] - rate["l-1"]) / 2,
        "model × prompt: l & 2": rate["l-2"] - rate["l-1"] - rate["s-2"] + rate["s-1"],
    }


def test_a_failed_trial_is_left_out_of_the_estimate_and_said(tmp_path) -> None:
    """The point estimate is over the evaluated attempts (a lost trial left out, as in the
    verdicts), and a case bootstrap of those same per-case values centres on it. Counting
    the lost trial as failures would move the estimate by several points; the frame now
    also says, per variant, which attempts were left out."""
    run, recorded = _lost_trial_factorial(tmp_path, lose=True)
    fe = factor_effects(run)
    assert fe.attrs["design"].startswith("full factorial")  # the per-case contrasts path
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    # Independent: each case's mean over the trials that were recorded.
    evaluated = _hand_contrasts({v: p.mean(axis=0) for v, p in recorded.items()})
    as_failures = _hand_contrasts(
        {v: np.vstack([p, np.zeros((4 - len(p), 20))]).mean(axis=0) for v, p in recorded.items()}
    )
    rng = np.random.default_rng(0)
    draws = rng.integers(0, 20, (4000, 20))  # naive case bootstrap, one loop per resample
    for term, per_case in evaluated.items():
        assert pr.loc[term, "estimate"] == pytest.approx(per_case.mean(), abs=1e-12)
        assert abs(as_failures[term].mean() - per_case.mean()) > 0.03  # the test can tell
        boot = np.array([per_case[idx].mean() for idx in draws])
        assert boot.mean() == pytest.approx(pr.loc[term, "estimate"], abs=0.005)
        centre = (pr.loc[term, "ci_low"] + pr.loc[term, "ci_high"]) / 2
        assert centre == pytest.approx(pr.loc[term, "estimate"], abs=1e-12)
    assert fe.attrs["design_notes"][-1] == (
        "The attempts of failed trials are left out of the outcomes, not counted as "
        "failures (as in the verdicts): 20 of l-2's 80."
    )


def test_without_a_failed_trial_nothing_is_left_out_or_said(tmp_path) -> None:
    run, recorded = _lost_trial_factorial(tmp_path, lose=False)
    fe = factor_effects(run)
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    for term, per_case in _hand_contrasts({v: p.mean(axis=0) for v, p in recorded.items()}).items():
        assert pr.loc[term, "estimate"] == pytest.approx(per_case.mean(), abs=1e-12)
    assert not any("failed trials" in n for n in fe.attrs["design_notes"])


def test_a_lost_trial_in_an_incomplete_design_matches_statsmodels(tmp_path) -> None:
    """The case-fixed-effects path on make_synthetic's design (model medium, prompt v2 and
    retrieval dense move together in v03) with v01's second trial lost: the estimates are
    statsmodels OLS with explicit case and term dummies on the evaluated attempts, and a
    naive case bootstrap of that OLS centres on them."""
    sm = pytest.importorskip("statsmodels.api", reason="test extra")
    from agenticlens_frames.testing import make_synthetic

    folder = make_synthetic(tmp_path, variants=4, trials=3, cases=20, seed=3)
    path = folder / "trials" / "v01.json"
    recorded = json.loads(path.read_text())
    recorded["trials"] = recorded["trials"][:1] + recorded["trials"][2:]
    path.write_text(json.dumps(recorded))
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    fe = factor_effects(run)
    assert fe.attrs["design_notes"][-1].endswith("20 of v01's 60.")
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    assert len(att) == 4 * 3 * 20 - 20
    levels = run.variants.set_index(run.variants["variant_id"].astype(str))
    for metric, column in [("pass_rate", "passed"), ("score", "score")]:
        rate = att.groupby(["case_id", "variant_id"], observed=True)[column].mean()
        long = rate.astype(float).rename("y").reset_index()
        vid = long["variant_id"].astype(str)
        # The fitted columns: every main effect (v03's confounded ones pinv-resolved) and no
        # interaction (none is estimable here).
        terms = fe[(fe["metric"] == metric) & (fe["kind"] == "main")]
        x = pd.get_dummies(long["case_id"].astype(str), dtype=float)
        for _, t in terms.iterrows():
            x[t["term"]] = (vid.map(levels[f"factor_{t['factor']}"]) == t["level"]).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rank-deficient on purpose: estimable terms only
            ols = sm.OLS(long["y"].to_numpy(float), x).fit().params
        est = fe[(fe["metric"] == metric) & fe["estimable"]].set_index("term")["estimate"]
        assert list(est.index) == ["model: small vs large", "prompt: v2 vs v1"]
        np.testing.assert_allclose(est, ols[est.index], atol=1e-12)
        # Naive case bootstrap of the same regression on the same per-case values.
        cases = long["case_id"].astype(str).to_numpy()
        ids = sorted(set(cases))
        rng = np.random.default_rng(1)
        boot = []
        for _ in range(1000):
            drawn = rng.choice(ids, len(ids))
            rows = np.concatenate([np.flatnonzero(cases == c) for c in drawn])
            xb = np.column_stack(
                [np.repeat(np.eye(len(drawn)), [np.sum(cases == c) for c in drawn], axis=0),
                 x[list(terms["term"])].to_numpy()[rows]]
            )  # fmt: skip
            beta = np.linalg.lstsq(xb, long["y"].to_numpy(float)[rows], rcond=None)[0]
            boot.append(pd.Series(beta[len(drawn) :], index=list(terms["term"]))[est.index])
        np.testing.assert_allclose(np.mean(boot, axis=0), est, atol=0.005)


def test_a_full_factorial_with_a_case_missing_a_variant_keeps_its_main_effects() -> None:
    """A 2 × 2 with an interaction (the large model helps only with prompt v2) where l-2
    lost every trial on one of 16 cases: the model row switched from the main effect
    averaged over the prompts (+0.5·l-1 +0.5·l-2 −…, the per-case contrasts) to the
    saturated fixed-effects fit's l-1 − s-1 (the change at prompt v1 only), under the same
    label and 'full factorial' phrase, because one case of 16 lacked one cell. The
    per-case contrasts now run over the complete cases, as pingouin's rm_anova (listwise
    deletion), and a note says how many cases were left out."""
    pingouin = pytest.importorskip("pingouin", reason="pingouin comes with the test extra")
    from scipy import stats

    from agenticlens_frames import ExperimentRun

    rng = np.random.default_rng(21)
    cells = {"s-1": ("s", "1", 0.3), "l-1": ("l", "1", 0.3), "s-2": ("s", "2", 0.4)}
    cells["l-2"] = ("l", "2", 0.9)
    n_case, rows = 16, []
    for vid, (_, _, p) in cells.items():
        for t in (1, 2, 3):
            passed = rng.random(n_case) < p
            for c in range(n_case):
                lost = vid == "l-2" and c == n_case - 1
                rows.append((vid, t, f"c{c:02d}", bool(passed[c]) and not lost,
                             "trial_failed" if lost else "ok"))  # fmt: skip
    att = pd.DataFrame(rows, columns=["variant_id", "trial", "case_id", "passed", "status"])
    variants = pd.DataFrame(
        [{"variant_id": k, "factor_model": m, "factor_prompt": p} for k, (m, p, _) in cells.items()]
    )
    run = ExperimentRun.from_frames(
        att, variants, pd.DataFrame({"case_id": sorted(set(att["case_id"]))})
    )
    fe = factor_effects(run, correction="holm")
    pr = fe[fe["metric"] == "pass_rate"].set_index("term")
    # Independent: the evaluated attempts' per-case rates, complete cases only.
    rate = att[att["status"] == "ok"].groupby(["case_id", "variant_id"])["passed"].mean()
    rate = rate.unstack().dropna()
    assert len(rate) == n_case - 1
    hand = {
        "model: l vs s": (rate["l-1"] + rate["l-2"] - rate["s-1"] - rate["s-2"]) / 2,
        "prompt: 2 vs 1": (rate["s-2"] + rate["l-2"] - rate["s-1"] - rate["l-1"]) / 2,
        "model × prompt: l & 2": rate["l-2"] - rate["l-1"] - rate["s-2"] + rate["s-1"],
    }
    for term, per_case in hand.items():
        test = stats.ttest_1samp(per_case, 0.0)
        assert pr.loc[term, "estimate"] == pytest.approx(per_case.mean(), abs=1e-12)
        assert pr.loc[term, "p_value"] == pytest.approx(test.pvalue, rel=1e-9)
        assert pr.loc[term, "n_cases"] == n_case - 1
    assert pr.loc["model: l vs s", "contrast"] == "+0.5·l-1 +0.5·l-2 −0.5·s-1 −0.5·s-2"
    long = rate.stack().rename("y").reset_index()
    long["model"] = long["variant_id"].map({k: v[0] for k, v in cells.items()})
    long["prompt"] = long["variant_id"].map({k: v[1] for k, v in cells.items()})
    aov = pingouin.rm_anova(
        data=long, dv="y", within=["model", "prompt"], subject="case_id"
    ).set_index("Source")
    assert pr.loc["model: l vs s", "anova_f"] == pytest.approx(aov.loc["model", "F"])
    note = (
        "Pass rate: 1 of 16 cases lacks an outcome for some variant and is left out of the "
        "per-case contrasts, which need every variant of the full factorial."
    )
    assert note in fe.attrs["design_notes"]


def _design_of(cells: dict[str, tuple[str, ...]], factors: tuple[str, ...]) -> str:
    """The design phrase of a run whose variants carry ``cells`` (levels of ``factors``)."""
    from agenticlens_frames import ExperimentRun

    rng = np.random.default_rng(2)
    rows = [
        (vid, t, f"c{c}", bool(rng.random() < 0.6))
        for vid in cells
        for t in (1, 2)
        for c in range(8)
    ]
    att = pd.DataFrame(rows, columns=["variant_id", "trial", "case_id", "passed"])
    variants = pd.DataFrame(
        [
            {"variant_id": k, **{f"factor_{f}": lv for f, lv in zip(factors, levels, strict=True)}}
            for k, levels in cells.items()
        ]
    )
    run = ExperimentRun.from_frames(
        att, variants, pd.DataFrame({"case_id": sorted(set(att["case_id"]))})
    )
    return factor_effects(run).attrs["design"]


@pytest.mark.parametrize(
    ("cells", "factors", "said"),
    [
        # Two variants at one level of a single factor: not a full factorial.
        (
            {"base": ("s",), "L": ("l",), "L2": ("l",)},
            ("model",),
            "incomplete design: 3 variants over 1 factor (model), 0 interactions estimable",
        ),
        (
            {"base": ("s", "1"), "L": ("l", "1"), "P": ("s", "2")},
            ("model", "prompt"),
            "incomplete design: 3 variants over 2 factors (model, prompt), 0 interactions "
            "estimable",
        ),
    ],
)
def test_the_incomplete_design_is_said_in_grammatical_counts(
    cells: dict[str, tuple[str, ...]], factors: tuple[str, ...], said: str
) -> None:
    """The design phrase said "over 1 factors" and "1 interaction(s) estimable"."""
    assert _design_of(cells, factors) == said


def test_the_bundled_examples_design_says_one_interaction(run) -> None:
    # model × prompt, through large-v2, is the one estimable interaction (its notes).
    assert factor_effects(run).attrs["design"] == (
        "incomplete design: 5 variants over 3 factors (model, prompt, retrieval), "
        "1 interaction estimable"
    )
