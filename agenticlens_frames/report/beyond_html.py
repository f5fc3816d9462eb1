"""HTML blocks of issue 17 for the report page: frontier probabilities, factor effects.

Kept apart from :mod:`agenticlens_frames.report.html`, which calls these through small
hooks; every number is read from the analysis' result frames, none is computed here.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from .. import viz
from ..frontier import FRONTIER_OBJECTIVES
from ..paired.verdicts import format_difference, format_interval
from .console import factor_correction_statement, factor_title

if TYPE_CHECKING:
    from ..analysis import ExperimentAnalysis

__all__ = ["beyond_figures", "beyond_sections", "frontier_table"]

_OBJECTIVE_LABELS = {
    "reliability": "reliability",
    "pass_rate": "pass rate",
    "score": "score",
    "latency": "latency",
    "cost": "cost",
}


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _pct(value: Any) -> str:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return "—"
    return "—" if math.isnan(f) else f"{f:.0%}"


def _p(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.3g}"


def frontier_table(a: ExperimentAnalysis) -> str:
    """Per variant: P(on the frontier) and P(best) per objective, or "" without them."""
    vs = a.variants
    if "p_frontier" not in vs:
        return ""
    settings = vs.attrs.get("frontier") or {}
    head = "".join(f"<th>P(best {_e(_OBJECTIVE_LABELS[n])})</th>" for n in FRONTIER_OBJECTIVES)
    rows = "".join(
        f"<tr data-variant='{_e(v['variant_id'])}'><td>{_e(v['variant_id'])}</td>"
        f"<td><b>{_pct(v['p_frontier'])}</b></td>"
        + "".join(f"<td>{_pct(v[f'p_best_{n}'])}</td>" for n in FRONTIER_OBJECTIVES)
        + "</tr>"
        for v in vs.to_dict("records")
    )
    n = settings.get("n_resamples")
    seed = settings.get("seed")
    if settings.get("resampled") == "clusters":
        kind = "cluster-bootstrap"
        drawn = (
            f"the {_e(settings.get('n_clusters'))} clusters of cases by "
            f"{_e(settings.get('cluster'))} drawn jointly for every variant, each with all "
            "its cases"
        )
    else:
        kind, drawn = "case-bootstrap", "cases drawn jointly for every variant"
    notes = "".join(f" {_e(line)}" for line in settings.get("notes") or [])
    return (
        "<div class='scroll'><table id='frontier-probabilities'><tr><th>variant</th>"
        f"<th>P(on the frontier)</th>{head}</tr>{rows}</table></div>"
        f"<p class='note'>How sure the frontier is: the share of {kind} resamples "
        f"({_e(n)} resamples, seed {_e(seed)}; {drawn}) in "
        "which the variant is on the frontier, or best on one objective (ties split). "
        "Near 100%: on the frontier whatever cases the suite happened to hold; near 0%: "
        "dominated; in between: the suite cannot tell — it measures how stable the "
        "verdict is, not the chance the variant truly belongs there (two variants the "
        "suite cannot tell apart both sit near 60–75%, lower the fewer the cases). "
        "Whiskers on the chart are the "
        "bootstrap intervals of each axis; labels carry P(on the frontier)."
        + notes
        + _few_cases_caution(a)
        + "</p>"
    )


#: Up to this many cases the frontier's percentile whiskers under-cover (simulated in
#: benchmarks/coverage_frontier.py: 86–92 % at 10 cases, 88–94 % at 20, against 95 %).
FEW_FRONTIER_CASES = 20


def _few_cases_caution(a: ExperimentAnalysis) -> str:
    """The whiskers' measured shortfall, said when the suite is small enough to have it:
    ≤ :data:`FEW_FRONTIER_CASES` cases, or as many clusters under a cluster bootstrap."""
    settings = a.variants.attrs.get("frontier") or {}
    if settings.get("resampled") == "clusters":
        # A cluster bootstrap of G clusters is a case bootstrap of G units (a suite whose
        # every case is doubled, clustered by pair, gives the original's numbers): its
        # whiskers are as rough as those of a suite of G cases, however many cases it has.
        n, units = int(settings.get("n_clusters") or 0), "clusters"
    else:
        rates = a.pass_rates
        n = int(rates["n_cases"].max()) if "n_cases" in rates and len(rates) else 0
        units = "cases"
    if not 0 < n <= FEW_FRONTIER_CASES:
        return ""
    # The measured shortfalls (docs/statistics.md §11, benchmarks/coverage_frontier.py).
    measured = (
        "about 90% at 10–20 clusters and about 82% at 5"
        if units == "clusters"
        else "about 90% at 10–20 cases (too optimistic for a pass rate near 1, too low for latency)"
    )
    return (
        f" With {n} {units} the whiskers are rough: in simulation a 95% whisker covered "
        f"{measured}; the variant table's pass-rate interval is the one to quote."
    )


def beyond_figures(a: ExperimentAnalysis) -> dict[str, go.Figure]:
    """Static figures of the issue-17 sections, drawn into ``fig-<name>`` divs."""
    fe = getattr(a, "factor_effects", None)
    if fe is None or fe.empty:
        return {}
    out = {"factor_effects": viz.factor_effects_forest(fe)}
    interaction = viz.factor_interaction_chart(a.variants, fe)
    if interaction is not None:
        out["factor_interaction"] = interaction
    return out


def beyond_sections(a: ExperimentAnalysis) -> str:
    """The factor-effects section (the early-stopping one is placed by the page itself:
    :mod:`.early_stopping`)."""
    return _factor_section(a)


def _factor_section(a: ExperimentAnalysis) -> str:
    fe = getattr(a, "factor_effects", None)
    if fe is None or fe.empty:
        return ""
    notes = "".join(f"<li>{_e(n)}</li>" for n in fe.attrs.get("design_notes", []))
    design = _e(fe.attrs.get("design", ""))
    level = fe.attrs.get("confidence_level", a.confidence_level)
    corr = escape(factor_correction_statement(a), quote=False)  # element text
    rows = []
    for r in fe.to_dict("records"):
        if r["metric"] != "pass_rate":
            continue
        # Percentage points, as the verdicts write a pass-rate difference (not "+15.7%").
        ci = (
            format_interval(r["ci_low"], r["ci_high"], "proportion")
            if not math.isnan(r["ci_low"])
            else "—"
        )
        # A term the design cannot separate has no estimate: say so, not "+nan pp".
        effect = (
            "not estimable"
            if math.isnan(r["estimate"])
            else format_difference(r["estimate"], "proportion")
        )
        rows.append(
            f"<tr><td>{_e(r['term'])}</td><td>{effect}</td><td>{ci}</td>"
            f"<td>{_p(r['p_value'])}</td><td>{_p(r['p_adjusted'])}</td>"
            f"<td>{_e(', '.join(r['through']))}</td></tr>"
        )
    interactions = (fe["kind"] == "interaction") & fe["estimable"].astype(bool)
    # The interaction chart exists only when an interaction is estimable (beyond_figures).
    interaction_div = (
        "<div id='fig-factor_interaction' class='fig'></div>" if interactions.any() else ""
    )
    return (
        f"<section id='factor-effects'><h2>{_e(factor_title(a))}</h2>"
        f"<p class='note'>Design: {design}. Effects on each case's pass rate over its "
        "evaluated attempts (a failed trial's attempts left out, as in the verdicts; the "
        "score's effects are in the JSON report), the case as the unit; "
        f"{level:.0%} intervals. {corr}</p>"
        f"<ul id='factor-design-notes'>{notes}</ul>"
        "<div class='scroll'><table id='factor-effects-table'><tr><th>term</th>"
        "<th>effect on pass rate</th><th>interval</th><th>p</th>"
        "<th>p adjusted<br><small>over the factor terms</small></th>"
        f"<th>estimated from</th></tr>{''.join(rows)}</table></div>"
        f"<div id='fig-factor_effects' class='fig'></div>{interaction_div}</section>"
    )
