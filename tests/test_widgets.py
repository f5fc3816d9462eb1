"""The notebook explorer, driven from pytest (no kernel, no browser): set a control, then
check the FigureWidgets' data against an independent computation; and the rich reprs."""

from __future__ import annotations

import html
import re
from pathlib import Path

import ipywidgets
import numpy as np
import plotly.graph_objects as go
import pytest

from agenticlens_frames import analyze, load_experiment, load_report, viz, write_json_report
from agenticlens_frames._repr import analysis_repr, analysis_repr_html, run_repr_html
from agenticlens_frames.errors import InputError
from agenticlens_frames.widgets import Explorer, explore, select_variants

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "support"


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.fixture(scope="module")
def analysis(run):
    return analyze(run)


@pytest.fixture(scope="module")
def saved(analysis, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("saved") / "report.json"
    write_json_report(analysis, path)
    return load_report(path)


@pytest.fixture
def explorer(analysis) -> Explorer:
    return explore(analysis)


def _dominance_front(rows: list[dict]) -> set[str]:
    cols = [
        ("trial_success_rate", 1),
        ("pass_rate_mean", 1),
        ("average_score_mean", 1),
        ("average_latency_ms_mean", -1),
        ("total_cost_usd_mean", -1),
    ]
    front = set()
    for a in rows:
        beaten = any(
            all(s * b[c] >= s * a[c] for c, s in cols) and any(s * b[c] > s * a[c] for c, s in cols)
            for b in rows
            if b is not a
        )
        if not beaten:
            front.add(str(a["variant_id"]))
    return front


def test_layout_is_widgets_and_figures(explorer: Explorer) -> None:
    assert isinstance(explorer, ipywidgets.VBox)
    for name in ("heatmap", "curves", "frontier"):
        fig = getattr(explorer, name)
        assert isinstance(fig, go.Figure) and not isinstance(fig, go.FigureWidget)
        # What the notebook renders is the figure shown, as plotly's own mime bundle.
        (output,) = explorer.views[name].outputs
        spec = output["data"]["application/vnd.plotly.v1+json"]
        assert spec["data"][0]["type"] == fig.data[0].type
        assert spec["config"] == {"responsive": True}
    assert set(explorer.factor_filters) == {"model", "prompt", "retrieval"}
    assert explorer.heatmap.data[0].type == "heatmap"


def test_the_explorer_repr_is_one_line_naming_the_analysis(explorer: Explorer, analysis) -> None:
    # ipywidgets' repr dumped every child with its value: ~100,000 characters here.
    text = repr(explorer)
    assert text == f"Explorer({analysis!r})"
    assert "\n" not in text and len(text) < 400
    assert "verdicts=" in text


def test_factor_filter_updates_every_figure(explorer: Explorer, run, analysis) -> None:
    explorer.factor_filters["model"].value = ("gpt-small",)
    explorer.factor_filters["retrieval"].value = ("bm25",)
    v = run.variants
    expected = v.loc[
        (v["factor_model"] == "gpt-small") & (v["factor_retrieval"] == "bm25"), "variant_id"
    ].astype(str)
    assert list(explorer.heatmap.data[0].y) == list(expected)
    curve_variants = {t.legendgroup for t in explorer.curves.data}
    assert curve_variants == set(expected)
    # The frontier is recomputed among the variants shown.
    rows = [r for r in analysis.variants.to_dict("records") if r["variant_id"] in set(expected)]
    assert set(explorer.frontier.data[1].text) == _dominance_front(rows)
    assert set(explorer.frontier.data[0].text) | set(explorer.frontier.data[1].text) == set(
        expected
    )


def test_nothing_matches(explorer: Explorer) -> None:
    explorer.factor_filters["model"].value = ("gpt-large",)
    explorer.factor_filters["retrieval"].value = ("dense",)
    assert "0 of 5 variants" in explorer.status.value
    assert len(explorer.heatmap.data) == 0 and len(explorer.frontier.data) == 0
    explorer.factor_filters["retrieval"].value = ()
    assert list(explorer.heatmap.data[0].y) == ["model-large", "large-v2"]


def test_metric_selector(explorer: Explorer, run, analysis) -> None:
    explorer.metric.value = "pass rate (mean over trials)"
    att = run.attempts
    trace = explorer.heatmap.data[0]
    # Over the evaluated attempts, as the Pareto axis: retrieval-dense's failed trial is
    # left out of the colour (its label still counts it, as AgenticLens does).
    assert trace.colorbar.title.text == "Evaluated pass rate"
    differs = 0
    for i, vid in enumerate(trace.y):
        for j, cid in enumerate(trace.x):
            cell = att[(att["variant_id"] == vid) & (att["case_id"] == cid)]
            evaluated = cell[cell["status"] != "trial_failed"]
            assert trace.z[i][j] == pytest.approx(evaluated["passed"].mean())
            differs += evaluated["passed"].mean() != pytest.approx(cell["passed"].mean())
    assert differs > 0  # the example has a failed trial: the old colour was not this one
    explorer.metric.value = "case pass rate (pooled)"
    trace = explorer.heatmap.data[0]
    for i, vid in enumerate(trace.y):
        for j, cid in enumerate(trace.x):
            cell = att[(att["variant_id"] == vid) & (att["case_id"] == cid)]
            assert trace.z[i][j] == pytest.approx(cell["passed"].mean())
    explorer.metric.value = "mean score"
    explorer.cost_axis.value = "cost"
    vs = analysis.variants.set_index(analysis.variants["variant_id"].astype(str))
    for t in explorer.frontier.data:
        for label, x, y in zip(t.text, t.x, t.y, strict=True):
            assert (x, y) == (
                vs.loc[label, "total_cost_usd_mean"],
                vs.loc[label, "average_score_mean"],
            )
    assert explorer.frontier.layout.yaxis.title.text.startswith("Mean score")


def test_case_order_and_count(explorer: Explorer, analysis) -> None:
    explorer.case_order.value = "suite"
    explorer.max_cases.value = 3
    assert list(explorer.heatmap.data[0].x) == list(analysis.info["case_ids"][:3])
    explorer.case_order.value = "regression"
    expected = viz.order_cases(analysis.cases, "regression", baseline="baseline")[:3]
    assert list(explorer.heatmap.data[0].x) == expected


def _click(explorer: Explorer, trace, row: int, col: int) -> None:
    # The message the click bridge's JavaScript sends for a click on that cell.
    explorer.clicks.clicked = [str(trace.x[col]), str(trace.y[row]), 1]


def test_click_shows_the_cells_attempts(explorer: Explorer, run) -> None:
    explorer.factor_filters["prompt"].value = ("v2",)  # the callback survives a redraw
    trace = explorer.heatmap.data[0]
    _click(explorer, trace, 1, 2)
    vid, cid = trace.y[1], trace.x[2]
    shown = explorer.details.value
    att = run.attempts[(run.attempts["variant_id"] == vid) & (run.attempts["case_id"] == cid)]
    assert len(re.findall(r"<b>trial \d+</b>", shown)) == len(att) == 5
    for output in att["output"].dropna():
        assert html.escape(output) in shown
    names = run.checks[(run.checks["variant_id"] == vid) & (run.checks["case_id"] == cid)]
    for name in names["name"].unique():
        assert html.escape(name) in shown
    with pytest.raises(InputError):
        explorer.show_attempts_at("no-such-case", "baseline")


def test_saved_report_explorer(saved) -> None:
    ex = explore(saved)
    assert list(ex.curves.data[0].x) == list(saved.pass_k)
    ex.show_attempts_at(ex.heatmap.data[0].x[0], ex.heatmap.data[0].y[0])
    assert "saved report" in ex.details.value


def test_explore_takes_a_run_or_an_analysis(run) -> None:
    ex = explore(run, confidence_level=0.9)
    assert ex.analysis.confidence_level == 0.9
    with pytest.raises(InputError):
        explore("data/support")
    # Options with an analysis recompute it from its run (its own settings kept).
    again = explore(ex.analysis, confidence_level=0.8)
    assert again.analysis.confidence_level == 0.8 and again.analysis is not ex.analysis


def test_select_variants(analysis) -> None:
    vs = analysis.variants
    assert select_variants(vs, {}) == [str(v) for v in vs["variant_id"]]
    assert select_variants(vs, {"prompt": ["v2"], "model": ["gpt-large"]}) == ["large-v2"]


# --------------------------------------------------------------------------- reprs


def test_reprs(run, analysis, saved) -> None:
    html_run = run_repr_html(run)
    assert "<script" not in html_run and "support-agent-upgrade" in html_run
    assert str(len(run.attempts)) in html_run
    html_a = analysis_repr_html(analysis)
    assert "Pareto" in html_a and "prompt-v2" in html_a and "<script" not in html_a
    assert "saved report" in analysis_repr_html(saved)
    ids = re.findall(r"id='(alf-[0-9a-f]+)'", html_a)
    assert len(ids) == 1 and f"#{ids[0]}" in html_a  # scoped style
    assert analysis_repr(saved) == analysis_repr(analysis)
    # Without case-level numbers (a report AgenticLens wrote) the pooled rate is all there
    # is: shown, and marked as what it is.
    from dataclasses import replace

    bare = replace(analysis, paired_frames={})._repr_html_()
    assert "case pass rate [pooled Wilson] †" in bare and "treats attempts as independent" in bare
    assert "cases as the unit]" in analysis._repr_html_()
    assert analysis_repr(saved).startswith("ExperimentAnalysis('support-agent-upgrade@1'")


def test_repr_escapes(analysis) -> None:
    hostile = analysis.variants.copy()
    hostile["variant_id"] = hostile["variant_id"].astype(str)
    hostile.loc[0, "variant_id"] = "<script>alert(1)</script>"
    from dataclasses import replace

    page = analysis_repr_html(replace(analysis, variants=hostile))
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page


def test_explorer_shows_the_paired_forest_and_filters_it() -> None:
    from agenticlens_frames import analyze, load_experiment, parse_comparisons
    from agenticlens_frames.widgets import explore

    run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    analysis = analyze(run, comparisons=parse_comparisons({"correction": "holm"}))
    paired = analysis.paired_frames["paired_comparisons"]
    explorer = explore(analysis)
    assert explorer.paired is not None
    shown = {str(v) for trace in explorer.paired.data for v in (trace.customdata or [])} | {
        str(v) for trace in explorer.paired.data for v in (trace.y or [])
    }
    assert any("prompt-v2" in s for s in shown)
    # keep only the prompt=v2 variants: model-large (prompt v1) leaves the forest
    explorer.factor_filters["prompt"].value = ("v2",)
    shown = {str(v) for trace in explorer.paired.data for v in (trace.y or [])}
    assert not any("model-large" in s for s in shown)
    assert len(paired) > 0
    # The verdicts lead the explorer, filtered with the variants.
    assert explorer.children[0] is explorer.verdicts
    assert "prompt-v2" in explorer.verdicts.value
    assert "data-variant='model-large'" not in explorer.verdicts.value  # its rows, that is
    # Without a declared correction: per-comparison differences, nothing marked
    # significant (every marker grey), and how to declare one.
    from dataclasses import replace

    undeclared = replace(run, manifest=replace(run.manifest, comparisons=None))
    plain = explore(analyze(undeclared))
    assert "comparisons: {correction: holm}" in plain.verdicts.value
    assert "Adjusted p" not in plain.verdicts.value and "worse" not in plain.verdicts.value
    colours = {c for trace in plain.paired.data for c in trace.marker.color}
    assert colours == {"#5f6470"}


def test_explorer_verdicts_say_what_the_filters_hide(explorer: Explorer) -> None:
    def text() -> str:
        return re.sub(r"\s+", " ", html.unescape(re.sub("<[^>]+>", " ", explorer.verdicts.value)))

    explorer.factor_filters["prompt"].value = ("v2",)
    # retrieval-dense has a not-compared note (a failed trial): hidden with its rows.
    assert "Hidden by the factor filters: model-large, retrieval-dense;" in text()
    assert "Not compared: retrieval-dense" not in text()
    # Only the baseline left: the candidates were filtered out, not left uncompared.
    explorer.factor_filters["prompt"].value = ("v1",)
    explorer.factor_filters["model"].value = ("gpt-small",)
    explorer.factor_filters["retrieval"].value = ("bm25",)
    assert explorer.selected_variants == ["baseline"]
    assert "No candidate could be compared" not in text()
    assert "Hidden by the factor filters: model-large, prompt-v2, retrieval-dense, large-v2" in (
        text()
    )
    for w in explorer.factor_filters.values():
        w.value = ()
    assert "Hidden by" not in text() and "Not compared: retrieval-dense" in text()


def test_a_cells_attempts_are_reachable_from_the_keyboard(explorer: Explorer, run) -> None:
    # A heatmap cell takes no focus: the variant and case dropdowns are the way in.
    trace = explorer.heatmap.data[0]
    # "(choose)" selected, not none (the browser shows a blank and loses an arrow key).
    assert explorer.pick_variant.index == explorer.pick_case.index == 0
    assert [v for _, v in explorer.pick_variant.options[1:]] == list(trace.y)
    assert [c for _, c in explorer.pick_case.options[1:]] == list(trace.x)
    vid, cid = trace.y[2], trace.x[3]
    explorer.pick_variant.value = vid
    assert "<b>trial" not in explorer.details.value  # one of the two is not enough
    explorer.pick_case.value = cid
    att = run.attempts[(run.attempts["variant_id"] == vid) & (run.attempts["case_id"] == cid)]
    shown = re.findall(r"<b>trial (\d+)</b> · (\w+) · (passed|failed)", explorer.details.value)
    expected = [
        (str(t), s, "passed" if p else "failed")
        for t, s, p in zip(att["trial"], att["status"], att["passed"], strict=True)
    ]
    assert sorted(shown) == sorted(expected) and len(shown) == 5
    # A click moves the dropdowns to its cell.
    _click(explorer, trace, 0, 1)
    assert (explorer.pick_variant.value, explorer.pick_case.value) == (trace.y[0], trace.x[1])
    assert f"<h4>{trace.y[0]} · {trace.x[1]}</h4>" in explorer.details.value


def test_the_case_count_slider_redraws_on_release(explorer: Explorer) -> None:
    # Dragging it across 5,000 cases redrew at every value passed: minutes of a busy kernel.
    assert explorer.max_cases.continuous_update is False


def test_a_failed_gate_and_the_warnings_lead_the_verdicts(run) -> None:
    # As on the page: a failed non-inferiority gate (exit status 5 on the command line)
    # comes before the "no detectable difference" rows; the explorer showed no gate at all,
    # nor the warning that a variant completed too few trials.
    from scipy import stats

    ex = explore(run, noninferiority_margin=0.02)
    text = re.sub(r"\s+", " ", html.unescape(re.sub("<[^>]+>", " ", ex.verdicts.value)))
    att = run.attempts
    trial_failed = att.groupby(["variant_id", "trial"], observed=True)["status"].agg(
        lambda s: (s == "trial_failed").all()
    )
    short = sorted({v for (v, _), failed in trial_failed.items() if failed})
    assert short == ["retrieval-dense"]
    warned = text.index(f"completed fewer than 5 trials ({short[0]})")
    gate = text.index("Non-inferiority gate failed")
    assert warned < gate < text.index("Verdicts against the baseline")
    # Each candidate's one-sided 95% lower bound on the case-level quality difference, with
    # docs/statistics.md's two pseudo-cases (+1 and -1; Bonett & Price): with m = n + 2,
    # min(mean over m, mean over n) - t(n + 1) * sqrt((sum d² + 2) / m - (mean over m)²) / √m.
    evaluated = att[att["status"] != "trial_failed"]
    rate = evaluated.groupby(["variant_id", "case_id"], observed=True)["passed"].mean().unstack()
    for candidate in ["model-large", "prompt-v2", "retrieval-dense", "large-v2"]:
        d = (rate.loc[candidate] - rate.loc["baseline"]).dropna().to_numpy()
        m = len(d) + 2
        mean_m = d.sum() / m
        sd_m = ((np.sum(d**2) + 2) / m - mean_m**2) ** 0.5
        bound = 100 * (min(mean_m, d.mean()) - stats.t.ppf(0.95, len(d) + 1) * sd_m / m**0.5)
        shown = re.search(rf"{candidate} \(quality\): lower 95% bound (-?[\d.]+) pp", text)
        assert shown and float(shown.group(1)) == pytest.approx(bound, abs=0.01)
        assert bound < -2  # so the gate (margin 2 pp) fails for every one


def test_without_any_latency_the_frontier_starts_on_cost() -> None:
    # A run that recorded no latency: the frontier on latency (the default) was an empty
    # plot; on cost every variant is placed.
    import pandas as pd

    from agenticlens_frames import ExperimentRun

    rows = [
        {"variant_id": v, "trial": t, "case_id": c, "passed": (i + t + j) % 3 > 0,
         "cost_usd": 0.001 * (i + 1) + 0.0001 * j}
        for i, v in enumerate(["a", "b", "c"])
        for t in (1, 2)
        for j, c in enumerate(["x", "y", "z"])
    ]  # fmt: skip
    attempts = pd.DataFrame(rows)
    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": ["a", "b", "c"]}),
        pd.DataFrame({"case_id": list("xyz")}),
    )
    ex = explore(run)
    assert ex.cost_axis.value == "cost"
    # Each variant at its mean cost per trial (the sum over the suite, averaged over trials).
    per_trial = attempts.groupby(["variant_id", "trial"])["cost_usd"].sum().groupby("variant_id")
    expected = per_trial.mean().to_dict()
    placed = {
        label: x for trace in ex.frontier.data for label, x in zip(trace.text, trace.x, strict=True)
    }
    assert placed == pytest.approx(expected)


def test_an_attempt_without_a_sample_has_unknown_tools(explorer: Explorer, run) -> None:
    # A missing sample or a failed trial recorded no tools: "n/a", as its latency; it said
    # "tools: nan".
    att = run.attempts
    unknown = att[att["tools"].isna()]
    assert set(unknown["status"]) == {"missing_sample", "trial_failed"}
    for r in unknown.drop_duplicates("status").to_dict("records"):
        explorer.pick_variant.value = r["variant_id"]
        explorer.pick_case.value = r["case_id"]
        shown = re.search(rf"<b>trial {r['trial']}</b>[^<]*", explorer.details.value).group(0)
        assert shown.endswith(("tools: n/a", f"error: {html.escape(str(r['error']))}"))
        assert "tools: n/a" in shown and "nan" not in shown
    known = att[att["tools"].notna() & (att["tools"] != "")].iloc[0]
    explorer.pick_variant.value, explorer.pick_case.value = known["variant_id"], known["case_id"]
    assert f"tools: {html.escape(known['tools'])}" in explorer.details.value


def test_filters_that_leave_nothing_clear_the_paired_forest(run) -> None:
    # The forest kept the previous selection's candidates when no variant was left.
    ex = explore(run, correction="holm")
    ex.factor_filters["model"].value = ("gpt-large",)
    v = run.variants
    large = set(v.loc[v["factor_model"] == "gpt-large", "variant_id"].astype(str))
    assert {str(y) for t in ex.paired.data for y in t.y} == large
    ex.factor_filters["retrieval"].value = ("dense",)
    left = v[(v["factor_model"] == "gpt-large") & (v["factor_retrieval"] == "dense")]
    assert ex.selected_variants == [] and left.empty
    assert len(ex.paired.data) == 0
    assert ex.paired.layout.title.text == "no candidate selected"
