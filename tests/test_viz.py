"""Figures: their data checked against the result frames and the tidy tables, each number
recomputed here independently (plain loops over rows, pandas on ``attempts``)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from agenticlens_frames import analyze, load_experiment, load_report, viz, write_json_report
from agenticlens_frames.errors import InputError

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "support"


@pytest.fixture(scope="module")
def analysis():
    return analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))


@pytest.fixture(scope="module")
def saved(analysis, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("saved") / "report.json"
    write_json_report(analysis, path)
    return load_report(path)


def _rows(frame: pd.DataFrame) -> list[dict]:
    return frame.to_dict("records")


# --------------------------------------------------------------------------- heatmap


def test_heatmap_cells_match_the_case_matrix(analysis) -> None:
    fig = viz.case_heatmap(analysis.cases, analysis.variants)
    trace = fig.data[0]
    assert trace.type == "heatmap"
    x, y = list(trace.x), list(trace.y)
    assert y == [str(v) for v in analysis.variants["variant_id"]]
    assert x == list(analysis.info["case_ids"])
    att = analysis.run.attempts
    flaky_cells = set()
    for row in _rows(analysis.cases):
        i, j = y.index(str(row["variant_id"])), x.index(str(row["case_id"]))
        assert trace.z[i][j] == pytest.approx(row["mean_score"], nan_ok=True)
        assert trace.text[i][j] == f"{row['passes']}/{row['attempts']}"
        assert row["case_name"] in trace.hovertext[i][j]
        # The hover's passes are over the evaluated attempts (a failed trial left out).
        cell = att[(att["variant_id"] == row["variant_id"]) & (att["case_id"] == row["case_id"])]
        evaluated = cell[cell["status"] != "trial_failed"]
        passed = int(evaluated["passed"].sum())
        assert (
            f"passed {passed}/{len(evaluated)} evaluated ({passed / len(evaluated):.0%})"
            in trace.hovertext[i][j]
        )
        assert ("not evaluated (failed trial)" in trace.hovertext[i][j]) == (
            len(evaluated) < len(cell)
        )
        assert f"{row['mean_latency_ms']:,.0f} ms" in trace.hovertext[i][j]
        if not row["consistent"]:
            flaky_cells.add((i, j))
    outlined = {(round(s.y0 + 0.5), round(s.x0 + 0.5)) for s in fig.layout.shapes}
    assert outlined == flaky_cells


def test_an_unknown_heatmap_colour_is_refused_with_the_choices(analysis) -> None:
    # It was "the case matrix lacks column(s) score (pass the matching result frame ...)".
    with pytest.raises(InputError, match="unknown heatmap colour 'score'") as info:
        viz.case_heatmap(analysis, color="score")
    assert "mean_score, pass_rate, evaluated_pass_rate" in str(info.value)
    assert "color" in str(info.value)


#: (figure, keywords, argument, bad value, closest choice, every choice in the hint).
_BAD_CHOICES = [
    (
        "case_heatmap",
        {"case_order": "atention"},
        "case_order",
        "atention",
        "attention",
        "attention, regression, flaky, pass_rate, suite",
    ),
    (
        "case_heatmap",
        {"variant_order": "pas_rate"},
        "variant_order",
        "pas_rate",
        "pass_rate",
        "manifest, pass_rate, regression, factor:model, factor:prompt, factor:retrieval",
    ),
    (
        "delta_forest",
        {"metrics": ["case_pass_rate", "latncy"]},
        "metrics",
        "latncy",
        "latency",
        "case_pass_rate, score, latency, cost",
    ),
    (
        "pareto_chart",
        {"x": "latncy"},
        "x",
        "latncy",
        "latency",
        "pass_rate, case_pass_rate, score, latency, cost, reliability",
    ),
    (
        "pareto_chart",
        {"y": "scor"},
        "y",
        "scor",
        "score",
        "pass_rate, case_pass_rate, score, latency, cost, reliability",
    ),
    (
        "factor_levels_chart",
        {"metric": "mean_pass"},
        "metric",
        "mean_pass",
        "mean_pass_rate",
        "mean_pass_rate, mean_average_score, mean_latency_ms, mean_cost_usd, "
        "mean_trial_success_rate",
    ),
    (
        "factor_effects_forest",
        {"metric": "scores"},
        "metric",
        "scores",
        "score",
        "pass_rate, score",
    ),
    (
        "factor_interaction_chart",
        {"metric": "scores"},
        "metric",
        "scores",
        "score",
        "pass_rate, score",
    ),
]


@pytest.mark.parametrize(
    ("figure", "keywords", "argument", "bad", "closest", "choices"),
    _BAD_CHOICES,
    ids=[f"{row[0]}-{row[2]}" for row in _BAD_CHOICES],
)
def test_an_unknown_choice_is_refused_naming_the_argument_and_the_closest(
    analysis, figure, keywords, argument, bad, closest, choices
) -> None:
    """Each said "unknown metric 'scores'; choose one of ..." (or the like): neither the
    argument nor the closest choice."""
    with pytest.raises(InputError) as info:
        getattr(viz, figure)(analysis, **keywords)
    said = str(info.value)
    assert said.startswith(f"{argument}: unknown "), said
    assert said.endswith(f" {bad!r} (did you mean {closest!r}? known: {choices})"), said


def test_a_case_order_that_is_not_a_name_is_refused_naming_the_argument(analysis) -> None:
    """A list of case ids was a bare "TypeError: unhashable type: 'list'"."""
    with pytest.raises(InputError, match=r"^case_order: must name a case order, got list") as info:
        viz.case_heatmap(analysis, case_order=["track-order", "refund-damaged-item"])
    assert "attention, regression, flaky, pass_rate, suite" in str(info.value)
    with pytest.raises(
        InputError, match=r"^by: unknown case order 'flakey' \(did you mean 'flaky'"
    ):
        viz.order_cases(analysis.cases, "flakey")


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_a_case_limit_below_one_or_not_whole_is_refused(analysis, bad) -> None:
    # 0 and -1 drew an empty heatmap titled "all cases"; 2.5 showed 2 cases.
    from agenticlens_frames import explore

    with pytest.raises(InputError, match=r"^max_cases: max_cases must be a whole number ≥ 1"):
        viz.case_heatmap(analysis, max_cases=bad)
    with pytest.raises(InputError, match=r"^max_cases: "):
        explore(analysis, max_cases=bad)
    assert len(viz.case_heatmap(analysis, max_cases=2).data[0].x) == 2


def test_heatmap_colour_by_pass_rate_from_the_tables(analysis) -> None:
    fig = viz.case_heatmap(analysis.cases, analysis.variants, color="pass_rate")
    att = analysis.run.attempts
    for i, vid in enumerate(fig.data[0].y):
        for j, cid in enumerate(fig.data[0].x):
            mine = att[(att["variant_id"] == vid) & (att["case_id"] == cid)]
            assert fig.data[0].z[i][j] == pytest.approx(mine["passed"].mean())


def test_heatmap_colour_by_evaluated_pass_rate(analysis, saved) -> None:
    """Passes over the evaluated attempts, from the attempts table; a saved report (whose
    case matrix has no completed-trial counts) gives the same cells from its trial counts."""
    att = analysis.run.attempts
    assert "scored" not in saved.cases
    traces = [viz.case_heatmap(s, color="evaluated_pass_rate").data[0] for s in (analysis, saved)]
    for trace in [*traces, viz.figures(analysis)["heatmap"].data[0]]:  # figures(): this colour
        assert trace.colorbar.title.text == "Evaluated pass rate"
        for i, vid in enumerate(trace.y):
            for j, cid in enumerate(trace.x):
                cell = att[(att["variant_id"] == vid) & (att["case_id"] == cid)]
                evaluated = cell[cell["status"] != "trial_failed"]
                assert trace.z[i][j] == pytest.approx(evaluated["passed"].mean())
                assert f"/{len(evaluated)} evaluated" in trace.hovertext[i][j]


def _naive_regression_order(cases: pd.DataFrame, baseline: str) -> list[str]:
    rate = {(str(r["variant_id"]), str(r["case_id"])): r["pass_rate"] for r in _rows(cases)}
    case_ids = list(dict.fromkeys(cases.sort_values("case_index")["case_id"].astype(str)))
    variants = list(dict.fromkeys(cases["variant_id"].astype(str)))
    keys = {}
    for n, c in enumerate(case_ids):
        drops = [rate[(baseline, c)] - rate[(v, c)] for v in variants if v != baseline]
        mean = sum(rate[(v, c)] for v in variants) / len(variants)
        keys[c] = (-max(drops), mean, n)
    return sorted(case_ids, key=keys.__getitem__)


def test_case_orders_and_truncation(analysis) -> None:
    cm = analysis.cases
    expected = _naive_regression_order(cm, "baseline")
    assert viz.order_cases(cm, "regression", baseline="baseline") == expected
    fig = viz.case_heatmap(cm, analysis.variants, case_order="regression", max_cases=4)
    assert list(fig.data[0].x) == expected[:4]
    assert np.asarray(fig.data[0].z).shape == (len(analysis.variants), 4)
    # Hardest first: mean pass rate over variants never decreases along the order.
    order = viz.order_cases(cm, "pass_rate")
    means = cm.assign(c=cm["case_id"].astype(str)).groupby("c")["pass_rate"].mean()
    assert list(means[order]) == sorted(means[order])
    # Flaky first: the count of inconsistent variants never increases.
    flaky = (~cm["consistent"]).groupby(cm["case_id"].astype(str)).sum()
    assert list(flaky[viz.order_cases(cm, "flaky")]) == sorted(flaky, reverse=True)
    # Attention: every case with a regression comes before every case without one.
    attention = viz.order_cases(cm, "attention", baseline="baseline")
    regressed = {c for c in expected if _naive_drop(cm, c) > 0}
    assert set(attention[: len(regressed)]) == regressed


def _naive_drop(cases: pd.DataFrame, case_id: str) -> float:
    sub = cases[cases["case_id"].astype(str) == case_id]
    base = float(sub.loc[sub["variant_id"] == "baseline", "pass_rate"].iloc[0])
    return max(base - float(r) for r in sub.loc[sub["variant_id"] != "baseline", "pass_rate"])


def test_variant_orders(analysis) -> None:
    vs = analysis.variants
    by_rate = viz.case_heatmap(analysis.cases, vs, variant_order="pass_rate").data[0].y
    rates = dict(zip(vs["variant_id"].astype(str), vs["case_pass_rate"], strict=True))
    assert [rates[v] for v in by_rate] == sorted(rates.values(), reverse=True)
    by_model = viz.order_variants(vs, "factor:model")
    models = [analysis.run.manifest.variant(v).factors["model"] for v in by_model]
    assert models == sorted(models)
    by_regression = viz.order_variants(vs, "regression", cases=analysis.cases)
    assert by_regression[0] == "baseline"
    named = viz.order_variants(vs, "regression", cases=analysis.cases, baseline="prompt-v2")
    assert named[0] == "prompt-v2"
    # a misspelt baseline: named with the ids to choose from, not list.index's ValueError
    with pytest.raises(InputError, match=r"unknown baseline variant id 'basline'.*'baseline'"):
        viz.order_variants(vs, "regression", cases=analysis.cases, baseline="basline")
    with pytest.raises(InputError):
        viz.order_variants(vs, "colour")
    with pytest.raises(InputError):
        viz.order_cases(analysis.cases, "alphabet")


def test_heatmap_escapes_user_strings() -> None:
    cm = pd.DataFrame(
        {
            "variant_id": ["<b>v</b>"],
            "case_id": ["<i>c"],
            "case_name": ["<script>x</script>"],
            "case_index": [0],
            "attempts": [2],
            "passes": [1],
            "pass_rate": [0.5],
            "mean_score": [0.5],
            "consistent": [False],
        }
    )
    trace = viz.case_heatmap(cm).data[0]
    assert list(trace.x) == ["&lt;i&gt;c"] and list(trace.y) == ["&lt;b&gt;v&lt;/b&gt;"]
    assert "&lt;script&gt;x&lt;/script&gt;" in trace.hovertext[0][0]
    assert "<script>" not in trace.hovertext[0][0]


def test_heatmap_of_a_saved_report(saved) -> None:
    fig = viz.case_heatmap(saved.cases, saved.variants)
    assert "mean latency n/a" in fig.data[0].hovertext[0][0]


# --------------------------------------------------------------------------- pass@k


def test_pass_k_curves_from_the_attempts(analysis) -> None:
    frame = viz.pass_k_frame(analysis)
    fig = viz.pass_k_curves(frame)
    att = analysis.run.attempts
    trials = analysis.run.manifest.trial_count
    per_case = att.groupby(["variant_id", "case_id"], observed=True)["passed"].agg(["sum", "count"])
    for vid in analysis.run.manifest.variant_ids:
        at = next(t for t in fig.data if t.name.startswith(vid) and t.name.endswith("pass@k"))
        hat = next(t for t in fig.data if t.name.startswith(vid) and t.name.endswith("pass^k"))
        assert list(at.x) == list(range(1, trials + 1))
        c, n = per_case.loc[vid, "sum"].to_numpy(), per_case.loc[vid, "count"].to_numpy()
        # pass@1 = mean of c/n; pass^T = share of cases passing every attempt;
        # pass@T = share of cases passing at least once (unbiased estimators at the ends).
        assert at.y[0] == pytest.approx(np.mean(c / n))
        assert hat.y[-1] == pytest.approx(np.mean(c == n))
        assert at.y[-1] == pytest.approx(np.mean(c > 0))
        for k in range(1, trials + 1):
            naive = np.mean(
                [math.comb(int(ci), k) / math.comb(int(ni), k) for ci, ni in zip(c, n, strict=True)]
            )
            assert hat.y[k - 1] == pytest.approx(naive)


def test_pass_k_bands_are_optional() -> None:
    frame = pd.DataFrame(
        {
            "variant_id": ["a"] * 3,
            "k": [1, 2, 3],
            "pass_at_k": [0.5, 0.7, 0.8],
            "pass_hat_k": [0.5, 0.3, 0.2],
        }
    )
    assert [t.fill for t in viz.pass_k_curves(frame).data] == [None, None]
    with pytest.raises(InputError, match="ci_low"):
        viz.pass_k_curves(frame, bands=True)
    banded = frame.assign(pass_at_k_ci_low=frame["pass_at_k"] - 0.1)
    banded = banded.assign(pass_at_k_ci_high=frame["pass_at_k"] + 0.1)
    fig = viz.pass_k_curves(banded)
    band = next(t for t in fig.data if t.fill == "toself")
    assert band.y.tolist() == pytest.approx([0.6, 0.8, 0.9, 0.7, 0.6, 0.4])
    assert band.x.tolist() == [1, 2, 3, 3, 2, 1]
    assert len(viz.pass_k_curves(banded, bands=False).data) == 2


def test_pass_k_frame_of_a_saved_report(saved) -> None:
    frame = viz.pass_k_frame(saved)
    assert sorted(frame["k"].unique()) == list(saved.pass_k)
    row = frame[(frame["variant_id"] == "baseline") & (frame["k"] == 1)].iloc[0]
    base = saved.variants[saved.variants["variant_id"] == "baseline"].iloc[0]
    assert row["pass_at_k"] == base["pass_at_1"]


# --------------------------------------------------------------------------- pareto


def _naive_frontier(vs: pd.DataFrame) -> set[str]:
    cols = [
        ("trial_success_rate", 1),
        ("pass_rate_mean", 1),
        ("average_score_mean", 1),
        ("average_latency_ms_mean", -1),
        ("total_cost_usd_mean", -1),
    ]
    rows = _rows(vs)
    front = set()
    for a in rows:
        dominated = False
        for b in rows:
            if a is b:
                continue
            ge = all(s * b[c] >= s * a[c] for c, s in cols)
            gt = any(s * b[c] > s * a[c] for c, s in cols)
            dominated |= ge and gt
        if not dominated:
            front.add(str(a["variant_id"]))
    return front


def test_pareto_frontier_joined_and_dominated_dimmed(analysis) -> None:
    vs = analysis.variants
    fig = viz.pareto_chart(vs, x="cost", y="score")
    dominated, frontier = fig.data
    assert set(frontier.text) == _naive_frontier(vs)
    assert set(dominated.text) == set(vs["variant_id"].astype(str)) - _naive_frontier(vs)
    assert list(frontier.x) == sorted(frontier.x)  # joined left to right
    assert "lines" in frontier.mode and "lines" not in dominated.mode
    assert dominated.marker.opacity < 1
    cost = dict(zip(vs["variant_id"].astype(str), vs["total_cost_usd_mean"], strict=True))
    score = dict(zip(vs["variant_id"].astype(str), vs["average_score_mean"], strict=True))
    for trace in fig.data:
        for label, xv, yv in zip(trace.text, trace.x, trace.y, strict=True):
            assert (xv, yv) == (cost[label], score[label])
    # The other objectives are in the hover.
    assert "Mean latency" in frontier.hovertext[0] and "Reliability" in frontier.hovertext[0]


def test_pareto_any_two_objectives(analysis) -> None:
    for x, y in itertools.permutations(viz.OBJECTIVES, 2):
        fig = viz.pareto_chart(analysis.variants, x=x, y=y)
        assert fig.layout.xaxis.title.text.startswith(viz.OBJECTIVES[x].label)
    with pytest.raises(InputError):
        viz.pareto_chart(analysis.variants, x="speed")
    with pytest.raises(InputError, match="two different objectives; x and y are both 'cost'"):
        viz.pareto_chart(analysis.variants, x="cost", y="cost")  # it drew a diagonal
    explicit = viz.pareto_chart(analysis.variants, frontier=["model-large"])
    assert list(explicit.data[1].text) == ["model-large"]


def test_a_variant_without_a_value_on_an_axis_is_named_not_dropped_silently() -> None:
    # c has no latency (its traces recorded none) and b no cost: each is drawn only where
    # it has both values, and the subtitle names what was left out.
    vs = pd.DataFrame(
        {
            "variant_id": ["a", "b", "c"],
            "pass_rate_mean": [0.7, 0.8, 0.9],
            "average_latency_ms_mean": [900.0, 1000.0, np.nan],
            "total_cost_usd_mean": [0.01, np.nan, 0.02],
            "pareto_optimal": [True, True, True],
        }
    )
    fig = viz.pareto_chart(vs, x="latency", y="pass_rate")
    assert [list(t.text) for t in fig.data] == [[], ["a", "b"]]
    assert fig.layout.title.subtitle.text.endswith(" · not drawn, no latency: c")
    fig = viz.pareto_chart(vs, x="latency", y="cost")
    assert [list(t.text) for t in fig.data] == [[], ["a"]]
    subtitle = fig.layout.title.subtitle.text
    assert "no cost: b" in subtitle and "no latency: c" in subtitle


def test_many_undrawable_variants_keep_the_subtitle_one_short_line() -> None:
    """Eight variants without a latency: the subtitle names two and counts the rest (it
    listed all eight, 300 characters that plotly cut at the figure's edge)."""
    ids = [f"retrieval-variant-{i}" for i in range(8)]
    vs = pd.DataFrame(
        {
            "variant_id": ["base", *ids],
            "pass_rate_mean": np.linspace(0.5, 0.9, 9),
            "average_latency_ms_mean": [900.0] + [np.nan] * 8,
            "pareto_optimal": [True] * 9,
        }
    )
    subtitle = viz.pareto_chart(vs).layout.title.subtitle.text
    assert subtitle.endswith(f"not drawn, no latency: {', '.join(ids[:2])} and 6 more")
    assert len(subtitle) < 120


# --------------------------------------------------------------------------- deltas


def test_delta_forest_matches_the_comparisons(analysis) -> None:
    """The package's pooled z test is never starred unless asked: by default a gain it
    calls significant is grey like any other."""
    comps = analysis.comparisons
    assert comps["statistically_significant"].fillna(False).any()  # the case below occurs
    fig = viz.delta_forest(comps)
    assert len(fig.data) == 4
    assert all(t.error_x.array is None for t in fig.data)
    assert "no interval" in fig.layout.annotations[0].text
    assert "AgenticLens" in fig.layout.title.text
    cpr = fig.data[0]
    assert list(cpr.y) == [str(c) for c in comps["candidate_variant_id"]]
    # In percentage points, as the tables state a pass-rate change (the axis said "+10%").
    assert cpr.x.tolist() == pytest.approx((100 * comps["case_pass_rate_delta"]).tolist())
    assert fig.layout.xaxis.ticksuffix == " pp" and "%" not in fig.layout.xaxis.tickformat
    marked = viz.delta_forest(comps, mark_significant=True).data[0].marker.color
    for colour, asked, reg, sig in zip(
        cpr.marker.color,
        marked,
        comps["pass_rate_regressed"],
        comps["statistically_significant"],
        strict=True,
    ):
        assert colour == ("#b42318" if reg else "#5f6470")
        assert asked == ("#b42318" if reg else "#1d7f4e" if sig else "#5f6470")
    lat = fig.data[2]
    assert lat.x.tolist() == pytest.approx(comps["average_latency_ms_delta"].tolist())


def test_delta_forest_draws_intervals_when_present(analysis) -> None:
    comps = analysis.comparisons.assign(
        average_score_delta_ci_low=lambda f: f["average_score_delta"] - 0.01,
        average_score_delta_ci_high=lambda f: f["average_score_delta"] + 0.03,
    )
    fig = viz.delta_forest(comps, metrics=["score"])
    assert fig.data[0].error_x.array.tolist() == pytest.approx([0.03] * len(comps))
    assert fig.data[0].error_x.arrayminus.tolist() == pytest.approx([0.01] * len(comps))
    with pytest.raises(InputError):
        viz.delta_forest(comps, metrics=["speed"])


# --------------------------------------------------------------------------- factors


def test_factor_levels_chart_from_the_variants(analysis) -> None:
    fig = viz.factor_levels_chart(analysis.factor_levels)
    run, vs = analysis.run, analysis.variants
    means = dict(zip(vs["variant_id"].astype(str), vs["pass_rate_mean"], strict=True))
    factors = sorted(run.factor_names)
    assert [t.name for t in fig.data] == factors
    for trace, name in zip(fig.data, factors, strict=True):
        column = run.variants[f"factor_{name}"]
        for value, y in zip(trace.x, trace.y, strict=True):
            members = run.variants.loc[column == value, "variant_id"].astype(str)
            assert y == pytest.approx(sum(means[m] for m in members) / len(members))
    cost = viz.factor_levels_chart(analysis.factor_levels, metric="mean_cost_usd")
    assert cost.data[0].y.tolist() == pytest.approx(
        analysis.factor_levels.loc[
            analysis.factor_levels["factor"] == factors[0], "mean_cost_usd"
        ].tolist()
    )
    empty = viz.factor_levels_chart(analysis.factor_levels.iloc[0:0])
    assert len(empty.data) == 0


def test_case_outcomes_counts(analysis) -> None:
    fig = viz.case_outcomes_chart(analysis.cases)
    att = analysis.run.attempts
    passes = att.groupby(["variant_id", "case_id"], observed=True)["passed"].sum()
    for trace in fig.data:
        counts = passes.loc[trace.name].value_counts()
        for label, y in zip(trace.x, trace.y, strict=True):
            assert y == counts.get(int(label.split("/")[0]), 0)


# --------------------------------------------------------------------------- contract


def test_figures_never_show(analysis, saved, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("a figure function called .show()")

    monkeypatch.setattr(go.Figure, "show", refuse)
    for a in (analysis, saved):
        figs = viz.figures(a)
        assert all(isinstance(f, go.Figure) for f in figs.values())
        assert len(figs["heatmap"].data[0].x) == len(a.info["case_ids"])  # 14 < 50


def _paired_frame() -> pd.DataFrame:
    # The columns of paired.paired_comparisons that the figure reads, by hand.
    return pd.DataFrame(
        {
            "candidate_variant_id": ["b", "c", "b", "c"],
            "dimension": ["quality", "quality", "latency", "latency"],
            "evaluator": ["passed", "passed", "latency_ms", "latency_ms"],
            "higher_is_better": [True, True, False, False],
            "mean_difference": [0.10, -0.05, 120.0, -30.0],
            "ci_low": [0.02, -0.20, 40.0, -80.0],
            "ci_high": [0.18, 0.10, 200.0, 20.0],
            "significant": [True, False, True, False],
            "adjusted_p_value": [0.01, 0.6, 0.002, 0.4],
            "ci_method": ["t"] * 4,
            "correction": ["holm"] * 4,
            "confidence_level": [0.95] * 4,
        }
    )


def test_the_paired_forest_names_the_comparisons_it_has_no_mark_for(tmp_path, analysis) -> None:
    # prompt-v2 recorded no latency: its latency mark was simply missing, which reads as
    # nothing to see; retrieval-dense has no pass^5 after its failed trial.
    from .conftest import example_without_latency

    folder = example_without_latency(tmp_path)
    bare = analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))
    subtitle = viz.paired_forest(bare).layout.title.subtitle.text
    assert subtitle.endswith(
        "<br>not compared: retrieval-dense (reliability), prompt-v2 (latency) "
        "(the verdict table says why)"
    )
    latency = [t for t in viz.paired_forest(bare).data if t.name.startswith("latency")]
    assert "prompt-v2" not in {str(y) for t in latency for y in t.y}
    full = viz.paired_forest(analysis).layout.title.subtitle.text
    assert "not compared: retrieval-dense (reliability) (" in full


def test_paired_forest_intervals_and_colours() -> None:
    frame = _paired_frame()
    fig = viz.paired_forest(frame)
    assert [t.name for t in fig.data] == ["quality", "latency"]
    for trace in fig.data:
        sub = frame[frame["dimension"] == trace.name]
        assert list(trace.y) == list(sub["candidate_variant_id"])
        assert trace.x.tolist() == sub["mean_difference"].tolist()
        assert (trace.x + trace.error_x.array).tolist() == pytest.approx(sub["ci_high"].tolist())
        assert (trace.x - trace.error_x.arrayminus).tolist() == pytest.approx(
            sub["ci_low"].tolist()
        )
    # quality b: significant gain (green); latency b: +120 ms, significant loss (red).
    assert list(fig.data[0].marker.color) == ["#1d7f4e", "#5f6470"]
    assert list(fig.data[1].marker.color) == ["#b42318", "#5f6470"]
    assert "holm" in fig.data[0].hovertext[0]
    assert "quality (passed)" in fig.layout.annotations[0].text
    # The marks are significance calls: the subtitle names the correction and keys the
    # colours (the frame has no alpha column: the correction alone).
    subtitle = fig.layout.title.subtitle.text
    assert "significance: Holm correction" in subtitle
    for colour, glyph, words in [
        ("#1d7f4e", "▲", "better"),
        ("#b42318", "▼", "worse"),
        ("#5f6470", "◇", "neither"),
    ]:
        assert f"<span style='color:{colour}'>{glyph}</span> " in subtitle and words in subtitle


def test_paired_forest_tells_the_calls_apart_by_shape_too() -> None:
    """Red and green diamonds alone: a reader who cannot tell the colours apart could not
    tell a significant gain from a significant loss."""
    frame = _paired_frame()
    fig = viz.paired_forest(frame)
    # quality b: significant gain; latency b: significant loss; the c rows: neither.
    symbols = [list(t.marker.symbol) for t in fig.data]
    assert symbols[0][0] != symbols[1][0]
    assert len({symbols[0][0], symbols[1][0], symbols[0][1]}) == 3
    assert symbols[0][1] == symbols[1][1]
    assert "significantly better" in fig.data[0].hovertext[0]
    assert "significantly worse" in fig.data[1].hovertext[0]
    assert "significantly" not in fig.data[0].hovertext[1]


def test_the_figure_registry_is_the_one_list(analysis) -> None:
    """viz.figures, the HTML page's embedded figures and the docs table read FIGURES;
    the paired forest is among them (it was missing from figures())."""
    from pathlib import Path

    from agenticlens_frames import parse_comparisons
    from agenticlens_frames.report.html import render_html

    declared = analyze(analysis.run, comparisons=parse_comparisons({"correction": "holm"}))
    figs = viz.figures(declared)
    assert list(figs) == [e.name for e in viz.FIGURES]
    # The case-level comparisons lead; AgenticLens's pooled deltas come after them.
    names = list(figs)
    assert names[0] == "paired" and names.index("paired") < names.index("deltas")
    paired = declared.paired_frames["paired_comparisons"]
    assert [t.name for t in figs["paired"].data] == list(dict.fromkeys(paired["dimension"]))
    subtitle = figs["paired"].layout.title.subtitle.text
    assert "Holm correction over the family of 19 comparisons, α = 0.05" in subtitle
    # A mark is coloured exactly when the declared correction calls it significant.
    shown = [c for t in figs["paired"].data for c in t.marker.color]
    assert (np.array(shown) != "#5f6470").tolist() == paired["significant"].tolist()
    undeclared = analyze(
        dataclasses.replace(
            analysis.run, manifest=dataclasses.replace(analysis.run.manifest, comparisons=None)
        )
    )
    # Nothing declared: the quality differences with per-comparison intervals, all grey.
    plain = viz.figures(undeclared)
    assert next(iter(plain)) == "paired"
    (trace,) = plain["paired"].data
    quality = undeclared.verdicts
    # drawn in percentage points, as the tables write a pass-rate difference
    assert trace.x.tolist() == pytest.approx((100 * quality["mean_difference"]).tolist())
    assert (trace.x + trace.error_x.array).tolist() == pytest.approx(
        (100 * quality["ci_high"]).tolist()
    )
    assert plain["paired"].layout.xaxis.title.text == "percentage points"
    assert (
        trace.hovertext[0]
        .split(": ", 1)[1]
        .startswith(f"{100 * quality['mean_difference'].iloc[0]:+.1f} pp [")
    )
    assert set(trace.marker.color) == {"#5f6470"}
    assert "per-comparison intervals; no correction declared" in (
        plain["paired"].layout.title.subtitle.text
    )
    assert viz.paired_forest(undeclared).to_dict() == plain["paired"].to_dict()
    docs = (Path(__file__).resolve().parents[1] / "docs" / "data-model.md").read_text()
    assert viz.figures_table() in docs
    page = render_html(declared)
    for entry in viz.FIGURES:
        assert f"id='fig-{entry.name}'" in page


@pytest.mark.parametrize(
    ("order", "fallback"),
    [("regression", "lowest mean pass rate first"), ("attention", "flaky first, then hardest")],
)
def test_heatmap_says_when_a_baseline_order_has_no_baseline(analysis, order, fallback) -> None:
    """Without the baseline among the rows (the explorer's filters removed it) the baseline
    orders fall back; the subtitle says the order applied, not a drop it did not measure."""
    subtitle = viz.case_heatmap(analysis, case_order=order).layout.title.subtitle.text
    assert "against the baseline" in subtitle or "below the baseline" in subtitle
    others = analysis.cases[analysis.cases["variant_id"].astype(str) != "baseline"]
    fig = viz.case_heatmap(others, analysis.variants, case_order=order, baseline=None)
    assert "baseline" not in list(fig.data[0].y)
    subtitle = fig.layout.title.subtitle.text
    assert fallback in subtitle and "no baseline shown" in subtitle
    assert list(fig.data[0].x) == viz.order_cases(others, order)


def test_pass_k_curves_name_a_variant_that_completed_no_trial() -> None:
    """Its curves lie flat at 0 because its failed trials count as failing every case: the
    subtitle says so (the figure alone read as a variant that failed every attempt)."""
    import agenticlens_frames as alf

    rows = [
        {
            "variant_id": v,
            "trial": t,
            "case_id": f"c{c}",
            "passed": v != "dead" and c % 3 > 0,
            "status": "trial_failed" if v == "dead" else "ok",
        }
        for v in ("base", "cand", "dead")
        for t in (1, 2, 3)
        for c in range(6)
    ]
    run = alf.ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["base", "cand", "dead"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(6)]}),
    )
    a = alf.analyze(run)
    for fig in (viz.pass_k_curves(a), viz.figures(a)["pass_k"]):
        title = fig.layout.title.subtitle.text
        assert "at 0: dead completed no trial" in title, title
        dead = [t for t in fig.data if t.name.startswith("dead")]
        assert dead and all(set(t.y) == {0.0} for t in dead)
    example = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    assert "completed no trial" not in viz.pass_k_curves(example).layout.title.subtitle.text


def test_the_paired_forest_labels_its_p_as_the_verdict_tables_do() -> None:
    """Under a declared "none" the forest's hover said "adjusted p = 0.0172" beside every
    table's "p (not adjusted)" 0.017: the label and the digits are now the tables'."""
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    for correction, label in (("none", "p (not adjusted)"), ("holm", "Adjusted p")):
        v = analyze(undeclared, correction=correction, frontier_n_resamples=0).verdicts
        if correction == "none":  # independently: no correction leaves each p as it is
            assert (v["adjusted_p_value"] == v["p_value"]).all()
        fig = viz.paired_forest(v)
        hovers = {
            (trace.name, y): text
            for trace in fig.data
            for y, text in zip(trace.y, trace.hovertext, strict=True)
        }
        for r in v.to_dict("records"):
            text = hovers[(r["dimension"], r["candidate_variant_id"])]
            p = r["adjusted_p_value"]
            shown = f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"
            assert f"<br>{label} = {shown}<br>" in text, text
            assert "adjusted p =" not in text


# --------------------------------------------------------------------------- list arguments


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda a: viz.pass_k_curves(a, measures="pass_at_k"), "measures"),
        (lambda a: viz.pass_k_curves(a, no_completed_trial="baseline"), "no_completed_trial"),
        (lambda a: viz.delta_forest(a, metrics="score"), "metrics"),
        (lambda a: viz.pareto_chart(a, frontier="baseline"), "frontier"),
    ],
)
def test_one_bare_name_where_a_list_is_wanted_is_refused_naming_the_argument(
    analysis, call, argument
) -> None:
    # A string is iterable: metrics="score" was "unknown delta metric(s) ['s', 'c', ...]",
    # measures="pass_at_k" a frame lacking "p, a, s, s, _ ...", and frontier="baseline" or
    # no_completed_trial="baseline" were taken letter by letter and drew nothing, silently.
    with pytest.raises(InputError, match=rf"^{argument}: {argument} must be a list of names"):
        call(analysis)


def test_pass_k_curves_variant_names_that_are_no_mapping_are_refused(analysis) -> None:
    # A list failed deep inside with "'list' object has no attribute 'get'".
    with pytest.raises(InputError, match=r"^variant_names: variant_names must map variant id"):
        viz.pass_k_curves(analysis, variant_names=["Baseline"])


def test_a_frontier_id_the_summary_lacks_is_refused_with_the_close_match(analysis) -> None:
    # frontier=["prompt-v3"] drew an empty frontier without a word.
    with pytest.raises(InputError, match=r"^frontier: unknown variant id 'prompt-v3' \(did you"):
        viz.pareto_chart(analysis, frontier=["prompt-v3"])
    fig = viz.pareto_chart(analysis, frontier=["prompt-v2"])
    # The ids given are the frontier trace, the rest the dimmed one.
    assert [label.split(" · ")[0] for label in fig.data[1].customdata] == ["prompt-v2"]
    assert len(fig.data[0].customdata) == len(analysis.variants) - 1
