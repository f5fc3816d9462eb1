"""Plotly figures of the result frames: pure functions, frame in, ``go.Figure`` out.

Every function here reads a result frame of :mod:`agenticlens_frames.analysis` (or of a
saved report loaded by :func:`~agenticlens_frames.load_report`) and returns a
:class:`plotly.graph_objects.Figure`; none calls ``.show()`` and none computes a statistic
of its own. The only arithmetic is presentation: ordering rows and columns, and choosing
which cases to show when a suite is too wide to read.

User-supplied strings (case and variant ids and names, factor values) are HTML-escaped
before they reach a figure, because plotly renders a subset of HTML in every label, tick
and hover text: a case called ``<b>x`` shows as ``<b>x``, not as bold ``x``.

==========================  =================================================
:func:`case_heatmap`        variant × case: colour = pass rate or score, label = passes/attempts
:func:`pass_k_curves`       pass@k and pass^k for k = 1..T, optional uncertainty bands
:func:`pareto_chart`        any two objectives, frontier joined, dominated dimmed
:func:`paired_forest`       paired differences per dimension with their intervals
:func:`delta_forest`        AgenticLens's candidate − baseline per metric (pooled)
:func:`factor_levels_chart` per factor and level, one metric
:func:`case_outcomes_chart` how many cases pass 0..T of T attempts (wide suites)
:func:`factor_effects_forest` main effects and interactions with intervals (issue 17)
:func:`factor_interaction_chart` a two-factor interaction plot (parallel = additive)
:func:`figures`             all of the above for one analysis (:data:`FIGURES`)
==========================  =================================================

:data:`FIGURES` is the one list of standard figures: :func:`figures`, the HTML report and
the figures table of docs/data-model.md read it.
"""

from __future__ import annotations

import html
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._deprecate import keyword_hints, renamed_keywords, unexpected_keyword
from ._docs import markdown_table
from ._suggest import require_known
from ._values import is_missing
from .errors import InputError, check_count, check_list
from .per_case import EVALUATED_PASS_RATE, evaluated_attempts, evaluated_pass_rate

if TYPE_CHECKING:
    from .analysis import ExperimentAnalysis
    from .frames import ExperimentRun

__all__ = [
    "CASE_ORDERS",
    "FIGURES",
    "OBJECTIVES",
    "SIGNIFICANCE_COLOURS",
    "FigureEntry",
    "case_heatmap",
    "case_outcomes_chart",
    "delta_forest",
    "draw_figures",
    "factor_effects_forest",
    "factor_interaction_chart",
    "factor_levels_chart",
    "figures",
    "figures_table",
    "order_cases",
    "order_variants",
    "paired_forest",
    "paired_rows",
    "pareto_chart",
    "pass_k_curves",
    "pass_k_frame",
]


def __dir__() -> list[str]:
    """The public names only: tab completion on ``alf.viz.`` should not offer ``np``,
    ``pd`` or ``go`` (PEP 562)."""
    return sorted(__all__)


#: Case orderings of :func:`order_cases`, most useful for wide suites first.
CASE_ORDERS: dict[str, str] = {
    # An ordering, not a test: "dropped" is any fall below the baseline's case pass rate.
    "attention": "any drop below the baseline first (an ordering, not a test), then flaky, "
    "then hardest",
    "regression": "largest pass-rate drop against the baseline first (an ordering, not a test)",
    "flaky": "inconsistent in the most variants first",
    "pass_rate": "lowest mean pass rate across variants first",
    "suite": "suite order",
}

#: Red → green for scores in [0, 1]; the same hues as AgenticLens' HTML heatmap
#: (``hsl(round(score·130) 62% 38%)``), so both pages read alike.
#: The cell colours of :func:`case_heatmap` (columns of the case matrix).
HEATMAP_COLOURS: tuple[str, ...] = ("mean_score", "pass_rate", EVALUATED_PASS_RATE)
SCORE_COLORSCALE = [[i / 4, f"hsl({round(i * 130 / 4)},62%,38%)"] for i in range(5)]
#: Colour bar titles of the heatmap's colour metrics (others: the column name in words).
COLOUR_LABELS = {
    "mean_score": "Mean score",
    "pass_rate": "Pass rate",
    EVALUATED_PASS_RATE: "Evaluated pass rate",
}
#: A colour per variant, stable across figures (plotly's default qualitative palette).
PALETTE = (
    "#636efa",
    "#ef553b",
    "#00cc96",
    "#ab63fa",
    "#ffa15a",
    "#19d3f3",
    "#ff6692",
    "#b6e880",
    "#ff97ff",
    "#fecb52",
)


@dataclass(frozen=True)
class Objective:
    """One axis a Pareto chart can show: a column of the variant summary.

    :data:`OBJECTIVES` holds them by the short names :func:`pareto_chart`'s ``x`` and
    ``y`` take.

    Examples
    --------
    >>> OBJECTIVES["latency"]  # doctest: +NORMALIZE_WHITESPACE
    Objective(column='average_latency_ms_mean', label='Mean latency (ms)',
              higher_is_better=False, hover_format=',.1f')
    """

    column: str
    label: str
    higher_is_better: bool
    hover_format: str


#: Objectives by short name (spec §9.4 plus the pooled case pass rate).
OBJECTIVES: dict[str, Objective] = {
    "pass_rate": Objective("pass_rate_mean", "Pass rate (mean over trials)", True, ".1%"),
    "case_pass_rate": Objective("case_pass_rate", "Case pass rate (pooled)", True, ".1%"),
    "score": Objective("average_score_mean", "Mean score", True, ".3f"),
    "latency": Objective("average_latency_ms_mean", "Mean latency (ms)", False, ",.1f"),
    "cost": Objective("total_cost_usd_mean", "Mean cost per trial (USD)", False, "$.4f"),
    "reliability": Objective("trial_success_rate", "Reliability (trial success rate)", True, ".1%"),
}

#: Delta metrics of :func:`delta_forest`: comparison column stem, label, higher is better.
DELTA_METRICS: dict[str, tuple[str, str, bool]] = {
    "case_pass_rate": ("case_pass_rate_delta", "Δ case pass rate (pp)", True),
    "score": ("average_score_delta", "Δ mean score", True),
    "latency": ("average_latency_ms_delta", "Δ latency (ms)", False),
    "cost": ("total_cost_usd_delta", "Δ cost per trial (USD)", False),
}

FACTOR_METRICS: dict[str, str] = {
    "mean_pass_rate": "Pass rate",
    "mean_average_score": "Mean score",
    "mean_latency_ms": "Latency (ms)",
    "mean_cost_usd": "Cost per trial (USD)",
    "mean_trial_success_rate": "Reliability",
}


# --------------------------------------------------------------------------- helpers


def esc(value: Any) -> str:
    """Escape a user string for a plotly label (plotly renders a subset of HTML).

    Examples
    --------
    >>> esc("<script>alert(1)</script>")
    '&lt;script&gt;alert(1)&lt;/script&gt;'
    """
    return html.escape(str(value), quote=False)


def _fmt(value: Any, spec: str, suffix: str = "") -> str:
    if is_missing(value):
        return "n/a"
    if spec.startswith("$"):
        return f"${value:{spec[1:]}}{suffix}"
    return f"{value:{spec}}{suffix}"


#: Longest case id shown on an axis; longer ones are shortened (the hover has them whole).
MAX_TICK_CHARS = 24
#: Percent axes: one decimal where needed (``.0%`` repeats labels on a narrow range, e.g.
#: 71%, 71%, 72% for ticks half a point apart), none where not (70%, 80%).
PERCENT_TICKS = ".1~%"


def _title(main: str, detail: str | None = None) -> dict[str, Any]:
    """A short title that fits a phone-wide figure; the detail as its subtitle, a second,
    smaller line (plotly never wraps a title, so a long one is cut by narrow areas)."""
    title: dict[str, Any] = {
        "text": main,
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        # At the figure's top, clear of panel titles and the plot, whatever the margin.
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 10},
    }
    if detail is not None:
        title["subtitle"] = {"text": detail}
    return title


def short_label(text: str, limit: int = MAX_TICK_CHARS) -> str:
    """``text`` cut in the middle to at most ``limit`` characters (both ends kept, where
    long ids differ).

    Examples
    --------
    >>> short_label("customer-escalation-refund-request-track-order", 20)
    'customer-e…ack-order'
    >>> short_label("short")
    'short'
    """
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2 + (limit - 1) % 2
    tail = limit - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def _short_labels(ids: list[str], limit: int = MAX_TICK_CHARS) -> list[str]:
    """Shortened labels that stay distinct (the tail grows until they are)."""
    labels = [short_label(i, limit) for i in ids]
    if len(set(labels)) == len(labels) or limit >= max(map(len, ids), default=0):
        return labels
    return _short_labels(ids, limit + 4)


def _finish(fig: go.Figure) -> go.Figure:
    # Tick labels (long case ids, percentages) must never be clipped by tight margins.
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def _analysis_of(
    data: Any, options: dict[str, Any], figure: Callable[..., go.Figure]
) -> ExperimentAnalysis | None:
    """None for a result frame (used as is); else the analysis of a run, a result or an
    analysis, computed with the statistics ``options`` (see :func:`~agenticlens_frames.
    coerce.as_analysis`). A keyword in ``options`` that is neither a statistics option nor
    ``figure``'s own is refused with the closest of either (a misspelt ``case_order``
    lands in ``**statistics``)."""
    from .coerce import check_options

    own = [  # its keywords after the data it draws
        p.name
        for p in list(inspect.signature(figure).parameters.values())[1:]
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    check_options(options, figure.__name__, own=own)
    if isinstance(data, pd.DataFrame):
        if options:
            raise InputError(
                f"statistics option(s) {', '.join(sorted(options))} apply to a run or an "
                "analysis, not to a result frame",
                hint="pass the run (or the analysis) instead of the frame",
            )
        return None
    from .coerce import as_analysis

    return as_analysis(data, **options)


def _require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"{what} lacks column(s) {', '.join(missing)}",
            hint="pass the matching result frame of analyze() or load_report()",
        )


def _names(value: Any, argument: str, example: str) -> list[str]:
    """``value`` as a list of names; a bare string (or a mapping, or a scalar) refused
    (:func:`~agenticlens_frames.errors.check_list`): ``frontier="baseline"`` was a
    frontier of eight one-letter variants, none drawn.

    Examples
    --------
    >>> _names(("pass_at_k",), "measures", "['pass_at_k']")
    ['pass_at_k']
    """
    listed = check_list(value, argument, of=" of names", hint=f"pass e.g. {argument}={example}")
    return [str(name) for name in listed]


def _variant_ids(cases: pd.DataFrame) -> list[str]:
    col = cases["variant_id"]
    if isinstance(col.dtype, pd.CategoricalDtype):
        present = np.unique(col.cat.codes.to_numpy())
        categories = col.cat.categories.astype(str).tolist()
        return [categories[code] for code in present.tolist() if code >= 0]
    return list(dict.fromkeys(col.astype(str)))


def _case_ids(cases: pd.DataFrame) -> list[str]:
    column = cases["case_id"]
    if "case_index" in cases:
        column = column.iloc[np.argsort(cases["case_index"].to_numpy(), kind="stable")]
    if isinstance(column.dtype, pd.CategoricalDtype):
        # First appearance of each code, then one string per case (not per row).
        codes = pd.unique(column.cat.codes.to_numpy())
        names = column.cat.categories.astype(str).tolist()
        return [names[c] for c in codes.tolist() if c >= 0]
    return list(dict.fromkeys(column.astype(str)))


def _positions(column: pd.Series, ids: list[str]) -> np.ndarray:
    """Position of each value of ``column`` in ``ids`` (-1 when absent)."""
    index = pd.Index(ids, dtype=object)
    if isinstance(column.dtype, pd.CategoricalDtype):
        # Look up each category once, then spread by code: no per-row string work.
        per_category = index.get_indexer(column.cat.categories.astype(str))
        codes = column.cat.codes.to_numpy()
        return np.where(codes >= 0, per_category[codes], -1)
    return index.get_indexer(column.astype(str))


def _grid(cases: pd.DataFrame, column: str, variants: list[str], case_ids: list[str]) -> np.ndarray:
    """A (variant, case) matrix of one column of the case matrix (NaN where absent).

    Where a (variant, case) pair occurs more than once, its first row wins.

    Examples
    --------
    >>> cm = pd.DataFrame({"variant_id": ["a", "a", "b"], "case_id": ["x", "y", "x"],
    ...                    "pass_rate": [1.0, 0.5, 0.0]})
    >>> _grid(cm, "pass_rate", ["b", "a"], ["y", "x", "z"]).tolist()
    [[nan, 0.0, nan], [0.5, 1.0, nan]]
    """
    out = np.full((len(variants), len(case_ids)), np.nan)
    rows = _positions(cases["variant_id"], variants)
    cols = _positions(cases["case_id"], case_ids)
    values = pd.to_numeric(cases[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    keep = np.flatnonzero((rows >= 0) & (cols >= 0))[::-1]  # reversed: the first row wins
    out[rows[keep], cols[keep]] = values[keep]
    return out


def _baseline_of(variants: pd.DataFrame | None, baseline: str | None) -> str | None:
    if baseline is not None:
        return baseline
    if variants is not None and "is_baseline" in variants:
        hit = variants.loc[variants["is_baseline"].astype(bool), "variant_id"]
        if len(hit):
            return str(hit.iloc[0])
    return None


# --------------------------------------------------------------------------- ordering


@keyword_hints
def order_cases(
    cases: pd.DataFrame, by: str = "attention", *, baseline: str | None = None
) -> list[str]:
    """Case ids of a case matrix in a reading order (see :data:`CASE_ORDERS`).

    ``"regression"`` and ``"attention"`` need the baseline's id; without one they fall
    back to ``"flaky"`` then ``"pass_rate"`` ordering. Ties keep suite order.

    Examples
    --------
    >>> cm = pd.DataFrame({"variant_id": ["b", "b", "c", "c"], "case_id": ["x", "y"] * 2,
    ...                    "case_index": [0, 1, 0, 1], "pass_rate": [1.0, 0.6, 1.0, 0.2],
    ...                    "consistent": [True, False, True, False]})
    >>> order_cases(cm, "regression", baseline="b")
    ['y', 'x']
    >>> order_cases(cm, "suite")
    ['x', 'y']
    """
    check_case_order(by, "by")
    case_ids = _case_ids(cases)
    if by == "suite" or not case_ids:
        return case_ids
    variants = _variant_ids(cases)
    rate = _grid(cases, "pass_rate", variants, case_ids)
    flaky = (~cases["consistent"].astype(bool)).astype(float)
    flaky_count = np.nansum(
        _grid(cases.assign(_flaky=flaky.to_numpy()), "_flaky", variants, case_ids), axis=0
    )
    with np.errstate(all="ignore"):
        mean_rate = np.nanmean(rate, axis=0) if len(variants) else np.zeros(len(case_ids))
    drop = np.zeros(len(case_ids))
    if baseline is not None and baseline in variants and len(variants) > 1:
        base = rate[variants.index(baseline)]
        others = np.delete(rate, variants.index(baseline), axis=0)
        with np.errstate(all="ignore"):
            drop = np.nan_to_num(np.nanmax(base[None, :] - others, axis=0), nan=0.0)
    suite = np.arange(len(case_ids))
    mean_rate = np.nan_to_num(mean_rate, nan=1.0)
    if by == "regression":
        keys = (suite, mean_rate, -drop)
    elif by == "flaky":
        keys = (suite, mean_rate, -flaky_count)
    elif by == "pass_rate":
        keys = (suite, mean_rate)
    else:  # attention: any regression first (largest first), then flaky, then hardest
        keys = (suite, mean_rate, -flaky_count, -np.maximum(drop, 0.0))
    order = np.lexsort(keys)
    return [case_ids[i] for i in order]


def check_case_order(by: Any, location: str) -> None:
    """Refuse ``by`` unless it names a case order (:data:`CASE_ORDERS`): the error names
    the argument (``location``), the value, the closest order and every order.

    An unknown name said neither the argument nor the closest order; a list of case ids
    (which no order takes) was a bare TypeError, "unhashable type: 'list'".

    Examples
    --------
    >>> check_case_order("flaky", "case_order")
    >>> check_case_order("atention", "case_order")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: case_order: unknown case order 'atention' (did you
    mean 'attention'? known: attention, regression, flaky, pass_rate, suite)
    """
    if not isinstance(by, str):
        raise InputError(
            f"must name a case order, got {type(by).__name__} {str(by)[:80]}",
            location=location,
            hint=f"choose one of {', '.join(CASE_ORDERS)}; to show some cases only, pass "
            "the case matrix filtered to them",
        )
    require_known("case order", [by], CASE_ORDERS, location=location)


#: What the baseline orders become without a baseline among the rows (see order_cases).
_WITHOUT_BASELINE = {
    "regression": "lowest mean pass rate first (no baseline shown to compare with)",
    "attention": "flaky first, then hardest (no baseline shown to compare with)",
}


def _case_order_label(by: str, *, baseline: str | None, variants: Sequence[str]) -> str:
    """The words for a case order as :func:`order_cases` applies it: a baseline order says
    that it fell back when the baseline is not among ``variants`` (filtered out).

    Examples
    --------
    >>> _case_order_label("regression", baseline="b", variants=["b", "c"])[:30]
    'largest pass-rate drop against'
    >>> _case_order_label("regression", baseline=None, variants=["c", "d"])
    'lowest mean pass rate first (no baseline shown to compare with)'
    """
    compared = baseline is not None and baseline in variants and len(variants) > 1
    return CASE_ORDERS[by] if compared else _WITHOUT_BASELINE.get(by, CASE_ORDERS[by])


@keyword_hints
def order_variants(
    variants: pd.DataFrame,
    by: str = "manifest",
    *,
    cases: pd.DataFrame | None = None,
    baseline: str | None = None,
) -> list[str]:
    """Variant ids in a reading order: ``"manifest"``, ``"pass_rate"`` (best first),
    ``"regression"`` (baseline first, then most regressed cases first; needs ``cases``)
    or ``"factor:<name>"`` (by that factor's value, then manifest order).

    Examples
    --------
    >>> vs = pd.DataFrame({"variant_id": ["a", "b", "c"], "case_pass_rate": [0.5, 0.9, 0.7],
    ...                    "factors": [{"m": "y"}, {"m": "x"}, {"m": "y"}]})
    >>> order_variants(vs, "pass_rate")
    ['b', 'c', 'a']
    >>> order_variants(vs, "factor:m")
    ['b', 'a', 'c']
    """
    ids = [str(v) for v in variants["variant_id"]]
    if by == "manifest":
        return ids
    if by == "pass_rate":
        _require_columns(variants, ["case_pass_rate"], "the variant summary")
        rate = variants["case_pass_rate"].to_numpy(float)
        order = np.lexsort((np.arange(len(ids)), -np.nan_to_num(rate, nan=-1.0)))
        return [ids[i] for i in order]
    if by.startswith("factor:"):
        name = by.split(":", 1)[1]
        known: dict[str, None] = {}
        for f in variants.get("factors", []):
            known.update(dict.fromkeys(f or {}))
        require_known("factor", [name], known, location="variant_order")
        values = [
            str((f or {}).get(name, "(unset)")) for f in variants.get("factors", [{}] * len(ids))
        ]
        order = sorted(range(len(ids)), key=lambda i: (values[i], i))
        return [ids[i] for i in order]
    if by == "regression":
        if cases is None:
            raise InputError("ordering variants by regression needs the case matrix (cases=)")
        if baseline is not None:
            # A misspelt id was a bare ValueError from list.index, deep in the ordering.
            require_known("baseline variant id", [baseline], ids, location="baseline")
        base = _baseline_of(variants, baseline)
        if base is None:
            return ids
        case_ids = _case_ids(cases)
        rate = _grid(cases, "pass_rate", ids, case_ids)
        b = rate[ids.index(base)]
        regressed = np.nansum(rate < b[None, :], axis=1).astype(float)
        regressed[ids.index(base)] = math.inf
        order = np.lexsort((np.arange(len(ids)), -regressed))
        return [ids[i] for i in order]
    # The orders there are, with one factor order per factor of these variants: an unknown
    # one was refused without the argument's name or the closest order.
    factors: dict[str, None] = {}
    for f in variants.get("factors", []):
        factors.update(dict.fromkeys(f or {}))
    orders = ["manifest", "pass_rate", "regression", *(f"factor:{n}" for n in factors)]
    require_known("variant order", [by], orders, location="variant_order")
    raise AssertionError(f"variant order {by!r} is known but not handled")  # pragma: no cover


# --------------------------------------------------------------------------- heatmap


def _passes_line(passes: float, attempts: float, rate: float, evaluated: float) -> str:
    """A heatmap hover's passes: over the evaluated attempts where their count is known
    (report.js ``hoverOf`` words the page's the same way), else over all attempts.

    Examples
    --------
    >>> _passes_line(0, 5, 0.0, 4)
    '<br>passed 0/4 evaluated (0%)<br>1 not evaluated (failed trial)'
    >>> _passes_line(2, 5, 0.4, math.nan)
    '<br>passes 2/5 (40%)'
    """
    if math.isnan(evaluated):
        return f"<br>passes {int(passes)}/{int(attempts)} ({_fmt(rate, '.0%')})"
    share = passes / evaluated if evaluated > 0 else math.nan
    line = f"<br>passed {int(passes)}/{int(evaluated)} evaluated ({_fmt(share, '.0%')})"
    if attempts > evaluated:
        line += f"<br>{int(attempts - evaluated)} not evaluated (failed trial)"
    return line


def case_heatmap(
    cases: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    variants: pd.DataFrame | None = None,
    *,
    color: str = "mean_score",
    case_order: str = "suite",
    variant_order: str = "manifest",
    baseline: str | None = None,
    max_cases: int | None = None,
    outline_flaky: bool = True,
    **statistics: Any,
) -> go.Figure:
    """Variant × case heatmap of a case matrix (spec §10.4, interactive).

    Parameters
    ----------
    cases
        :func:`~agenticlens_frames.case_matrix` (or ``analysis.cases``), or the run, the
        result or the analysis itself (then ``variants`` defaults to its summary).
    variants
        The variant summary; needed to sort rows by pass rate or factor and to find the
        baseline. Rows are limited to the variants present in ``cases``.
    color
        The cell colour: ``"mean_score"`` (AgenticLens' choice), ``"pass_rate"`` (theirs:
        a failed trial counts as a failed attempt) or ``"evaluated_pass_rate"`` (passes over
        the evaluated attempts, :func:`~agenticlens_frames.per_case.evaluated_pass_rate`;
        the HTML page's default, a high mean score can hide a case that never passes).
    case_order, variant_order
        See :func:`order_cases` and :func:`order_variants`.
    baseline
        Baseline id for the regression orders (default: ``variants``' ``is_baseline``).
    max_cases
        Show only the first ``max_cases`` cases of the chosen order (wide suites).
    outline_flaky
        Dotted outline around inconsistent (flaky) cells.
    **statistics
        With a run or an analysis: options of :func:`~agenticlens_frames.coerce.as_analysis`
        (``confidence_level``, ``correction`` ...).

    Returns
    -------
    plotly.graph_objects.Figure
        One heatmap trace: ``z`` (variants × cases) the colour metric, ``text`` the
        ``passes/attempts`` labels, ``hovertext`` the case name, the passes over the
        evaluated attempts (when the case matrix has ``scored`` or ``variants`` the trial
        counts; else over all attempts), mean score and latency; one dotted rectangle per
        flaky cell in ``layout.shapes``.

    Examples
    --------
    >>> cm = pd.DataFrame({"variant_id": ["b", "b"], "case_id": ["x", "y"],
    ...                    "case_name": ["X", "Y"], "case_index": [0, 1], "attempts": [5, 5],
    ...                    "passes": [5, 2], "pass_rate": [1.0, 0.4],
    ...                    "mean_score": [1.0, 0.5], "consistent": [True, False]})
    >>> fig = case_heatmap(cm)
    >>> fig.data[0].text.tolist(), len(fig.layout.shapes)
    ([['5/5', '2/5']], 1)
    """
    analysis = _analysis_of(cases, statistics, case_heatmap)
    if analysis is not None:
        cases = analysis.cases
        variants = analysis.variants if variants is None else variants
    # An unknown colour was reported as a column the case matrix lacks ("pass the
    # matching result frame"), not as a choice with its alternatives.
    require_known("heatmap colour", [color], HEATMAP_COLOURS, location="color")
    evaluated_of = evaluated_attempts(cases, variants)
    if color == EVALUATED_PASS_RATE and color not in cases:
        cases = cases.assign(**{color: evaluated_pass_rate(cases, variants)})
    _require_columns(
        cases,
        ["variant_id", "case_id", "attempts", "passes", "pass_rate", "consistent", color],
        "the case matrix",
    )
    base = _baseline_of(variants, baseline)
    present = _variant_ids(cases)
    if baseline is not None:
        require_known("baseline variant id", [baseline], present, location="baseline")
    if variants is not None:
        order = order_variants(variants, variant_order, cases=cases, baseline=base)
        row_ids = [v for v in order if v in present]
    elif variant_order == "manifest":
        row_ids = present
    else:
        raise InputError(f"ordering variants by {variant_order!r} needs the variant summary")
    # Checked here to name this function's argument (order_cases names its own, ``by``).
    check_case_order(case_order, "case_order")
    col_ids = order_cases(cases, case_order, baseline=base)
    if max_cases is not None:
        # 0 or -1 drew an empty heatmap titled "all cases"; 2.5 was cut to 2 unsaid.
        col_ids = col_ids[: check_count(max_cases, "max_cases", location="max_cases")]

    z = _grid(cases, color, row_ids, col_ids)
    passes = _grid(cases, "passes", row_ids, col_ids)
    attempts = _grid(cases, "attempts", row_ids, col_ids)
    rate = _grid(cases, "pass_rate", row_ids, col_ids)
    evaluated = _grid(cases.assign(_e=evaluated_of), "_e", row_ids, col_ids)
    score = _grid(cases, "mean_score", row_ids, col_ids) if "mean_score" in cases else z * np.nan
    latency = (
        _grid(cases, "mean_latency_ms", row_ids, col_ids)
        if "mean_latency_ms" in cases
        else np.full(z.shape, np.nan)
    )
    flaky = _grid(
        cases.assign(_f=(~cases["consistent"].astype(bool)).astype(float)), "_f", row_ids, col_ids
    )
    names = (
        dict(zip(cases["case_id"].astype(str), cases["case_name"].astype(str), strict=False))
        if "case_name" in cases
        else {}
    )
    vnames = (
        dict(zip(variants["variant_id"].astype(str), variants["variant_name"], strict=False))
        if variants is not None and "variant_name" in variants
        else {}
    )
    text = np.empty(z.shape, dtype=object)
    hover = np.empty(z.shape, dtype=object)
    for i, vid in enumerate(row_ids):
        for j, cid in enumerate(col_ids):
            if math.isnan(attempts[i, j]):
                text[i, j] = ""
                hover[i, j] = f"{esc(cid)}<br>variant {esc(vid)}: no data"
                continue
            label = f"{int(passes[i, j])}/{int(attempts[i, j])}"
            text[i, j] = label
            hover[i, j] = (
                f"<b>{esc(names.get(cid, cid))}</b><br>case {esc(cid)}"
                f"<br>variant {esc(vnames.get(vid, vid))}"
                + _passes_line(passes[i, j], attempts[i, j], rate[i, j], evaluated[i, j])
                + f"<br>mean score {_fmt(score[i, j], '.3f')}"
                f"<br>mean latency {_fmt(latency[i, j], ',.0f', ' ms')}"
                + ("<br><i>flaky: outcomes differ between trials</i>" if flaky[i, j] == 1 else "")
            )
    label = COLOUR_LABELS.get(color, color.replace("_", " ").capitalize())
    trace = go.Heatmap(
        z=z,
        x=[esc(c) for c in col_ids],
        y=[esc(v) for v in row_ids],
        text=text,
        texttemplate="%{text}",
        textfont={"color": "white", "size": 11},
        hovertext=hover,
        hovertemplate="%{hovertext}<extra></extra>",
        colorscale=SCORE_COLORSCALE,
        zmin=0.0,
        zmax=1.0,
        xgap=2,
        ygap=2,
        colorbar={"title": {"text": label}, "thickness": 12},
        name="cases",
    )
    fig = go.Figure(trace)
    if outline_flaky:
        fig.layout.shapes = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": j - 0.5,
                "x1": j + 0.5,
                "y0": i - 0.5,
                "y1": i + 0.5,
                "line": {"dash": "dot", "width": 2, "color": "rgba(255,255,255,0.9)"},
                "layer": "above",
            }
            for i, j in zip(*np.nonzero(flaky == 1), strict=True)
        ]
    shown = f"{len(col_ids)} of {len(_case_ids(cases))} cases" if max_cases else "all cases"
    x_labels = [esc(c) for c in col_ids]
    fig.update_layout(
        title=_title(
            "Cases by variant",
            f"{shown}, {_case_order_label(case_order, baseline=base, variants=present)}",
        ),
        xaxis={
            "type": "category",
            "tickangle": -45,
            "automargin": True,
            "title": "case",
            # Long ids shortened on the axis only: the cells keep the full id (hover,
            # clicks), and every case gets one tick whatever the width.
            "tickmode": "array",
            "tickvals": x_labels,
            "ticktext": [esc(t) for t in _short_labels(col_ids)],
        },
        yaxis={"type": "category", "autorange": "reversed", "automargin": True},
        height=max(260, 90 + 46 * len(row_ids)),
        margin={"t": 70, "l": 10, "r": 10, "b": 10},
    )
    return _finish(fig)


# --------------------------------------------------------------------------- pass@k


def _variant_names(analysis: ExperimentAnalysis) -> dict[str, str]:
    vs = analysis.variants
    return dict(zip(vs["variant_id"].astype(str), vs["variant_name"].astype(str), strict=True))


@renamed_keywords(ks="pass_k")
def pass_k_frame(analysis: ExperimentAnalysis, pass_k: Sequence[int] | None = None) -> pd.DataFrame:
    """pass@k and pass^k per variant in long form, for k = 1..trial_count when the tidy
    tables are at hand, else for the k values the (saved) report holds.

    ``pass_k`` chooses the k values instead (formerly ``ks``, still accepted with a
    ``FutureWarning``).

    Returns ``variant_id, k, pass_at_k, pass_hat_k`` (plus any ``*_ci_low`` /
    ``*_ci_high`` band columns the analysis provides).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> sorted(pass_k_frame(a)["k"].unique().tolist())
    [1, 2, 3, 4, 5]
    """
    if analysis.run is not None:
        from .analysis import pass_at_k

        if pass_k is None:
            pass_k = range(1, int(analysis.info.get("trial_count") or max(analysis.pass_k)) + 1)
        return pass_at_k(analysis.run, list(pass_k))
    vs = analysis.variants
    use = [k for k in (pass_k or analysis.pass_k) if f"pass_at_{k}" in vs]
    rows = [
        {
            "variant_id": str(v["variant_id"]),
            "k": k,
            "pass_at_k": v[f"pass_at_{k}"],
            "pass_hat_k": v[f"pass_hat_{k}"],
        }
        for v in vs.to_dict("records")
        for k in use
    ]
    return pd.DataFrame(rows, columns=["variant_id", "k", "pass_at_k", "pass_hat_k"])


def without_completed_trial(variants: pd.DataFrame) -> list[str]:
    """Ids of the variants that completed no trial (a variant summary's
    ``completed_trials``; none when the frame lacks the column).

    Examples
    --------
    >>> without_completed_trial(pd.DataFrame({"variant_id": ["a", "b"],
    ...                                       "completed_trials": [5, 0]}))
    ['b']
    """
    if "completed_trials" not in variants:
        return []
    empty = variants["completed_trials"].fillna(0).to_numpy(float) == 0
    return variants.loc[empty, "variant_id"].astype(str).tolist()


def pass_k_curves(
    frame: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    *,
    measures: Sequence[str] = ("pass_at_k", "pass_hat_k"),
    bands: bool | None = None,
    variant_names: dict[str, str] | None = None,
    no_completed_trial: Sequence[str] | None = None,
    **statistics: Any,
) -> go.Figure:
    """pass@k (solid) and pass^k (dashed) against k, one colour per variant.

    Parameters
    ----------
    frame
        Long frame ``variant_id, k, pass_at_k, pass_hat_k`` (see :func:`pass_k_frame` and
        :func:`~agenticlens_frames.pass_at_k`), or a run, result or analysis (with
        ``**statistics`` as for :func:`case_heatmap`).
    measures
        Which curves to draw.
    bands
        Draw uncertainty bands from ``<measure>_ci_low`` / ``<measure>_ci_high`` columns.
        ``None`` (default): draw them exactly when those columns are present.
    variant_names
        Legend names by variant id (default: the ids).
    no_completed_trial
        Variants that completed no trial, named in the subtitle: their curves lie at 0
        because their failed trials count as failing every case (AgenticLens's rule), not
        because an attempt was judged (default: read from an analysis, else none).

    Examples
    --------
    >>> pk = pd.DataFrame({"variant_id": ["a", "a"], "k": [1, 2], "pass_at_k": [0.5, 0.8],
    ...                    "pass_hat_k": [0.5, 0.2]})
    >>> fig = pass_k_curves(pk)
    >>> [t.name for t in fig.data], fig.data[1].y.tolist()
    (['a pass@k', 'a pass^k'], [0.5, 0.2])
    """
    analysis = _analysis_of(frame, statistics, pass_k_curves)
    measures = _names(measures, "measures", "['pass_at_k']")
    if no_completed_trial is not None:
        no_completed_trial = _names(no_completed_trial, "no_completed_trial", "['baseline']")
    if variant_names is not None and not isinstance(variant_names, Mapping):
        raise InputError(
            "variant_names must map variant id to display name, got "
            f"{type(variant_names).__name__} {variant_names!r}",
            location="variant_names",
            hint="pass e.g. variant_names={'baseline': 'Baseline (gpt-small)'}",
        )
    if analysis is not None:
        frame = pass_k_frame(analysis)
        if variant_names is None:
            variant_names = _variant_names(analysis)
        if no_completed_trial is None:
            no_completed_trial = without_completed_trial(analysis.variants)
    _require_columns(frame, ["variant_id", "k", *measures], "the pass@k frame")
    fig = go.Figure()
    names = variant_names or {}
    dash = {"pass_at_k": "solid", "pass_hat_k": "dash"}
    symbol = {"pass_at_k": "circle", "pass_hat_k": "diamond"}
    label = {"pass_at_k": "pass@k", "pass_hat_k": "pass^k"}
    ids = _variant_ids(frame)
    for n, vid in enumerate(ids):
        colour = PALETTE[n % len(PALETTE)]
        sub = frame[frame["variant_id"].astype(str) == vid].sort_values("k")
        k = sub["k"].to_numpy(int)
        for measure in measures:
            low, high = f"{measure}_ci_low", f"{measure}_ci_high"
            has_band = low in sub and high in sub
            if bands or (bands is None and has_band):
                if not has_band:
                    raise InputError(f"bands=True but the frame has no {low} / {high} columns")
                fig.add_trace(
                    go.Scatter(
                        x=np.concatenate([k, k[::-1]]),
                        y=np.concatenate(
                            [sub[high].to_numpy(float), sub[low].to_numpy(float)[::-1]]
                        ),
                        fill="toself",
                        fillcolor=colour,
                        opacity=0.15,
                        line={"width": 0},
                        hoverinfo="skip",
                        legendgroup=vid,
                        showlegend=False,
                        name=f"{esc(vid)} {label[measure]} band",
                    )
                )
            fig.add_trace(
                go.Scatter(
                    x=k,
                    y=sub[measure].to_numpy(float),
                    mode="lines+markers",
                    line={"color": colour, "dash": dash.get(measure, "dot")},
                    marker={"symbol": symbol.get(measure, "square")},
                    legendgroup=vid,
                    name=f"{esc(names.get(vid, vid))} {label.get(measure, measure)}",
                    hovertemplate=f"{esc(names.get(vid, vid))}<br>{label.get(measure, measure)}"
                    " at k=%{x}: %{y:.1%}<extra></extra>",
                )
            )
    drawn = [v for v in no_completed_trial or () if v in ids]
    flat = (
        f"<br>at 0: {esc(', '.join(names.get(v, v) for v in drawn))} completed no trial "
        "(failed trials count as failing every case)"
        if drawn
        else ""
    )
    fig.update_layout(
        title=_title(
            "pass@k and pass^k", "solid: at least one of k passes; dashed: all k pass" + flat
        ),
        xaxis={"title": "k (attempts)", "dtick": 1},
        yaxis={"title": "probability", "range": [0, 1.02], "tickformat": ".0%"},
        height=380,
        margin={"t": 70, "l": 10, "r": 10, "b": 10},
        legend={"groupclick": "togglegroup"},
    )
    return _finish(fig)


# --------------------------------------------------------------------------- pareto


def _objective(name: str, location: str) -> Objective:
    # Named as the argument (x or y), with the closest objective: it said neither.
    require_known("objective", [name], OBJECTIVES, location=location)
    return OBJECTIVES[name]


def _not_drawn(labels: np.ndarray, unknown: dict[str, np.ndarray], shown: int = 2) -> str:
    """The subtitle's note on variants a chart could not place, grouped by what is unknown
    and at most ``shown`` names a group: plotly never wraps a title, so a list of every
    such variant ran off the figure.

    Examples
    --------
    >>> labels = np.array(["a", "b", "c", "d", "e"])
    >>> _not_drawn(labels, {"latency": np.array([1, 1, 1, 1, 0], bool),
    ...                     "cost": np.array([0, 0, 0, 0, 1], bool)})
    ' · not drawn, no latency: a, b and 2 more · not drawn, no cost: e'
    """
    groups: dict[str, list[str]] = {}
    names = list(unknown)
    for i, label in enumerate(labels):
        missing = [n for n in names if unknown[n][i]]
        if missing:
            groups.setdefault(" or ".join(missing), []).append(str(label))
    text = ""
    for what, members in groups.items():
        more = len(members) - shown
        listed = ", ".join(members[:shown]) + (f" and {more} more" if more > 0 else "")
        text += f" · not drawn, no {what}: {listed}"
    return text


def _whiskers(variants: pd.DataFrame, column: str, centre: np.ndarray) -> np.ndarray | None:
    """(2, n) distances from the point to the bootstrap interval's ends, or None."""
    low, high = f"{column}_boot_ci_low", f"{column}_boot_ci_high"
    if low not in variants or high not in variants:
        return None
    lo = variants[low].to_numpy(float)
    hi = variants[high].to_numpy(float)
    # An interval from another estimator need not contain the point: never negative.
    return np.stack([np.clip(centre - lo, 0, None), np.clip(hi - centre, 0, None)])


def _error_bars(
    whiskers: dict[str, np.ndarray | None], pick: np.ndarray, color: str
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for axis, w in whiskers.items():
        if w is None:
            continue
        out[f"error_{axis}"] = {
            "type": "data",
            "symmetric": False,
            "array": np.nan_to_num(w[1][pick]),
            "arrayminus": np.nan_to_num(w[0][pick]),
            "color": color,
            "thickness": 1,
            "width": 3,
        }
    return out


def pareto_chart(
    variants: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    *,
    x: str = "latency",
    y: str = "pass_rate",
    frontier: Sequence[str] | None = None,
    **statistics: Any,
) -> go.Figure:
    """Two objectives of the variant summary, the Pareto frontier joined and highlighted.

    The frontier is the five-objective one of spec §9.4 (``pareto_optimal`` column, or
    ``frontier``); in any two-dimensional view a frontier variant may therefore look
    dominated — its advantage is on an objective not on the axes, listed in the hover.

    When the summary carries the case-bootstrap columns of
    :func:`~agenticlens_frames.frontier_uncertainty`, each label adds the probability of
    being on the frontier (``p_frontier``, also in the hover), the marker grows with it,
    and whiskers on both axes show each objective's bootstrap interval.

    Parameters
    ----------
    variants
        :func:`~agenticlens_frames.variant_summary` (or ``analysis.variants``), or a run,
        result or analysis (with ``**statistics`` as for :func:`case_heatmap`).
    x, y
        Objective names, keys of :data:`OBJECTIVES`: ``pass_rate``, ``case_pass_rate``,
        ``score``, ``latency``, ``cost``, ``reliability``.
    frontier
        Frontier variant ids, each one of the summary's (default: the ``pareto_optimal``
        column); an id the summary does not have is an InputError.

    Returns
    -------
    plotly.graph_objects.Figure
        Trace 0: dominated variants (dimmed); trace 1: the frontier, sorted by ``x`` and
        joined by a line.

    Examples
    --------
    >>> vs = pd.DataFrame({"variant_id": ["a", "b"], "pass_rate_mean": [0.9, 0.8],
    ...                    "average_latency_ms_mean": [900.0, 1000.0],
    ...                    "pareto_optimal": [True, False]})
    >>> fig = pareto_chart(vs)
    >>> list(fig.data[1].text), list(fig.data[0].text)
    (['a'], ['b'])
    >>> fig = pareto_chart(vs.assign(p_frontier=[0.97, 0.03]))
    >>> list(fig.data[1].customdata), list(fig.data[0].customdata)
    (['a · 97%'], ['b · 3%'])
    """
    analysis = _analysis_of(variants, statistics, pareto_chart)
    if analysis is not None:
        variants = analysis.variants
    ox, oy = _objective(x, "x"), _objective(y, "y")
    if ox is oy:
        # One objective against itself puts every variant on the diagonal and joins a
        # "frontier" of the five-objective one that this view cannot explain.
        other = "pass_rate" if x != "pass_rate" else "latency"
        raise InputError(
            f"pareto_chart needs two different objectives; x and y are both {x!r}",
            hint=f"pass another y, e.g. pareto_chart(..., x={x!r}, y={other!r})",
        )
    _require_columns(variants, ["variant_id", ox.column, oy.column], "the variant summary")
    ids = [str(v) for v in variants["variant_id"]]
    if frontier is None:
        _require_columns(variants, ["pareto_optimal"], "the variant summary")
        on = variants["pareto_optimal"].astype(bool).to_numpy()
    else:
        keep = set(_names(frontier, "frontier", "['baseline']"))
        # A misspelt id drew no frontier at all, without a word.
        require_known("variant id", sorted(keep), ids, location="frontier")
        on = np.array([v in keep for v in ids], dtype=bool)
    hover = []
    for v in variants.to_dict("records"):
        lines = [f"<b>{esc(v.get('variant_name', v['variant_id']))}</b> ({esc(v['variant_id'])})"]
        for name, obj in OBJECTIVES.items():
            on_axis = obj.column in (ox.column, oy.column)
            # The pooled case pass rate only when asked for: it repeats the pass rate.
            if on_axis or (obj.column in v and name != "case_pass_rate"):
                lines.append(f"{obj.label}: {_fmt(v.get(obj.column), obj.hover_format)}")
        factors = v.get("factors") or {}
        if factors:
            lines.append(", ".join(f"{esc(k)}={esc(val)}" for k, val in factors.items()))
        hover.append("<br>".join(lines))
    xs = variants[ox.column].to_numpy(float)
    ys = variants[oy.column].to_numpy(float)
    p_front = (
        variants["p_frontier"].to_numpy(float)
        if "p_frontier" in variants
        else np.full(len(ids), np.nan)
    )
    boot = (
        "cluster bootstrap"
        if (variants.attrs.get("frontier") or {}).get("resampled") == "clusters"
        else "case bootstrap"
    )
    for i, p in enumerate(p_front):
        if not math.isnan(p):
            hover[i] += f"<br>P(on the frontier) = {p:.0%} ({boot})"
    hover_arr = np.array(hover, dtype=object)
    labels = np.array([esc(v) for v in ids], dtype=object)
    shown = np.array(
        [
            esc(v) + ("" if math.isnan(p) else f" · {p:.0%}")
            for v, p in zip(ids, p_front, strict=True)
        ],
        dtype=object,
    )
    whiskers = {"x": _whiskers(variants, ox.column, xs), "y": _whiskers(variants, oy.column, ys)}
    # Marker area grows with P(on the frontier): a sure member is large, a long shot small.
    size = np.where(np.isnan(p_front), np.nan, 7 + 11 * np.nan_to_num(p_front))
    # A variant without a value on an axis (latency or cost unknown) cannot be placed: it
    # is left out of both traces and the subtitle names it, rather than vanishing.
    unplaced = np.isnan(xs) | np.isnan(ys)
    front_order = np.flatnonzero(on & ~unplaced)
    front_order = front_order[np.argsort(xs[front_order], kind="stable")]
    on = on | unplaced  # not in the dominated trace either
    better = {True: "higher is better", False: "lower is better"}
    # One constructor call with the whole layout: plotly validates once, not per update
    # (the report page draws 30 of these).
    xaxis: dict[str, Any] = {"title": f"{ox.label} — {better[ox.higher_is_better]}"}
    yaxis: dict[str, Any] = {"title": f"{oy.label} — {better[oy.higher_is_better]}"}
    for axis, objective in ((xaxis, ox), (yaxis, oy)):
        axis["automargin"] = True  # what _finish sets on every figure
        if "%" in objective.hover_format:
            axis["tickformat"] = PERCENT_TICKS
    return go.Figure(
        data=[
            go.Scatter(
                x=xs[~on],
                y=ys[~on],
                text=labels[~on],
                hovertext=hover_arr[~on],
                hovertemplate="%{hovertext}<extra>dominated</extra>",
                mode="markers+text",
                textposition="top center",
                texttemplate="%{customdata}",
                customdata=shown[~on],
                marker={
                    "size": np.nan_to_num(size[~on], nan=11.0),
                    "color": "#9aa0a6",
                    "opacity": 0.45,
                },
                textfont={"color": "#9aa0a6"},
                name="dominated",
                **_error_bars(whiskers, ~on, "#9aa0a6"),
            ),
            go.Scatter(
                x=xs[front_order],
                y=ys[front_order],
                text=labels[front_order],
                hovertext=hover_arr[front_order],
                hovertemplate="%{hovertext}<extra>Pareto frontier</extra>",
                mode="lines+markers+text",
                textposition="top center",
                line={"color": "#1d7f4e", "width": 2},
                texttemplate="%{customdata}",
                customdata=shown[front_order],
                marker={
                    "size": np.nan_to_num(size[front_order], nan=14.0),
                    "color": "#1d7f4e",
                    "line": {"width": 1, "color": "white"},
                },
                name="Pareto frontier",
                **_error_bars(whiskers, front_order, "#1d7f4e"),
            ),
        ],
        layout={
            "title": _title(
                "Pareto frontier",
                "all five objectives; two on the axes"
                + (" · label: P(on the frontier)" if not np.isnan(p_front).all() else "")
                + _not_drawn(labels, {x: np.isnan(xs), y: np.isnan(ys)}),
            ),
            "xaxis": xaxis,
            "yaxis": yaxis,
            "height": 420,
            "margin": {"t": 70, "l": 10, "r": 10, "b": 10},
        },
    )


# --------------------------------------------------------------------------- deltas


def delta_forest(
    comparisons: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    *,
    metrics: Sequence[str] = ("case_pass_rate", "score", "latency", "cost"),
    mark_significant: bool = False,
    **statistics: Any,
) -> go.Figure:
    """Candidate − baseline deltas as a forest plot, one panel per metric: AgenticLens's
    comparisons (for the case-level paired comparisons, see :func:`paired_forest`).

    Intervals are drawn from ``<metric>_delta_ci_low`` / ``<metric>_delta_ci_high``
    columns (``case_pass_rate_delta_ci_low`` …) when the comparisons frame has them; the
    pooled comparisons of AgenticLens carry a p-value but no interval, and the panel title
    says so. Red marks a regression by the package's rule (spec §9.5). Nothing is marked
    significant by default: the package's ``statistically_significant`` comes from a z test
    that treats attempts as independent, too optimistic with repeated trials.
    ``mark_significant=True`` colours green the rows a frame's own
    ``statistically_significant`` marks (for a frame whose flag you trust). A pass-rate
    change is drawn in percentage points (0.1 → +10 pp).

    Examples
    --------
    >>> comps = pd.DataFrame({"candidate_variant_id": ["c"], "case_pass_rate_delta": [0.1],
    ...                       "case_pass_rate_delta_ci_low": [0.02],
    ...                       "case_pass_rate_delta_ci_high": [0.18]})
    >>> fig = delta_forest(comps, metrics=["case_pass_rate"])
    >>> fig.data[0].x.tolist(), fig.data[0].error_x.array.round(3).tolist()
    ([10.0], [8.0])
    """
    analysis = _analysis_of(comparisons, statistics, delta_forest)
    if analysis is not None:
        comparisons = analysis.comparisons
    metrics = _names(metrics, "metrics", "['case_pass_rate']")
    # Named as the argument, with the closest metric: it said neither.
    require_known("delta metric", metrics, DELTA_METRICS, location="metrics")
    _require_columns(comparisons, ["candidate_variant_id"], "the comparisons frame")
    cands = [str(c) for c in comparisons["candidate_variant_id"]]
    titles = []
    for m in metrics:
        col, label, _ = DELTA_METRICS[m]
        has_ci = f"{col}_ci_low" in comparisons and f"{col}_ci_high" in comparisons
        titles.append(label + ("" if has_ci else "<br><sup>no interval</sup>"))
    fig = make_subplots(rows=1, cols=len(metrics), shared_yaxes=True, subplot_titles=titles)
    regressed_col = {
        "case_pass_rate": "pass_rate_regressed",
        "score": "average_score_regressed",
        "latency": "average_latency_ms_regressed",
        "cost": "total_cost_usd_regressed",
    }
    for n, m in enumerate(metrics, start=1):
        col, label, _ = DELTA_METRICS[m]
        if col not in comparisons:
            continue
        # A pass-rate difference is drawn in percentage points (+2.9 pp), as the tables and
        # the paired forest state it, not as a relative-looking "+2.9%".
        scale, unit = (100.0, " pp") if m == "case_pass_rate" else (1.0, "")
        x = comparisons[col].to_numpy(float) * scale
        low = comparisons.get(f"{col}_ci_low")
        high = comparisons.get(f"{col}_ci_high")
        if low is not None and high is not None:
            low, high = low.to_numpy(float) * scale, high.to_numpy(float) * scale
        regressed = (
            comparisons[regressed_col[m]].fillna(False).astype(bool).to_numpy()
            if regressed_col[m] in comparisons
            else np.zeros(len(x), dtype=bool)
        )
        significant = (
            comparisons["statistically_significant"].fillna(False).astype(bool).to_numpy()
            if m == "case_pass_rate"
            and mark_significant
            and "statistically_significant" in comparisons
            else np.zeros(len(x), dtype=bool)
        )
        colours = [
            "#b42318" if r else ("#1d7f4e" if s else "#5f6470")
            for r, s in zip(regressed, significant, strict=True)
        ]
        error = None
        if low is not None and high is not None:
            error = {
                "type": "data",
                "symmetric": False,
                "array": high - x,
                "arrayminus": x - low,
                "thickness": 2,
                "width": 6,
                "color": "#7f8590",
            }
        fmt = {"case_pass_rate": "+.1f", "score": "+.3f", "latency": "+,.1f", "cost": "+.4f"}[m]
        hover = []
        for i, c in enumerate(cands):
            line = f"{esc(c)}: {label} {_fmt(x[i], fmt, unit)}"
            if low is not None and high is not None:
                line += f" [{_fmt(low[i], fmt)}, {_fmt(high[i], fmt)}]"
            if m == "case_pass_rate" and "case_pass_rate_p_value" in comparisons:
                line += (
                    f"<br>pooled z-test p = "
                    f"{_fmt(comparisons['case_pass_rate_p_value'].iloc[i], '.3f')} "
                    "(attempts as independent)"
                )
            if regressed[i]:
                line += "<br>regressed"
            hover.append(line)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[esc(c) for c in cands],
                error_x=error,
                mode="markers",
                marker={"size": 11, "color": colours, "symbol": "diamond"},
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                name=label,
                showlegend=False,
            ),
            row=1,
            col=n,
        )
        fig.add_vline(x=0, line={"color": "#9aa0a6", "dash": "dash"}, row=1, col=n)
        if m == "case_pass_rate":
            fig.update_xaxes(tickformat="+~g", ticksuffix=" pp", row=1, col=n)
    fig.update_yaxes(autorange="reversed", type="category", row=1, col=1)
    fig.update_layout(
        title=_title(
            "Against the baseline",
            "red: regressed; green: a gain its statistically_significant column marks",
        )
        if mark_significant
        else _title("Against the baseline, AgenticLens's numbers", "red: regressed by its rule"),
        height=max(240, 110 + 36 * len(cands)),
        margin={"t": 100, "l": 10, "r": 10, "b": 10},
    )
    return _finish(fig)


#: The x-axis title of a paired panel, by the evaluator's unit.
_UNIT_AXIS = {"proportion": "percentage points", "ms": "ms", "usd": "USD"}

#: Colours of a significance call (the paired forest, and its key in the subtitle).
SIGNIFICANCE_COLOURS = {
    "better": "#1d7f4e",
    "worse": "#b42318",
    "neither": "#5f6470",
}
#: And their marks (plotly symbol, the glyph of the key): the call is told by shape as
#: well, for a reader who cannot tell the red from the green.
SIGNIFICANCE_MARKS = {
    "better": ("triangle-up", "▲"),
    "worse": ("triangle-down", "▼"),
    "neither": ("diamond-open", "◇"),
}


#: The paired forest's first subtitle line after an early stop.
_STOPPED_NOTE = (
    "descriptive after the early stop: its stopping decision is the inferential statement"
)
#: The same at the end of a run the rule watched but never stopped.
_WATCHED_NOTE = (
    "descriptive beside the early-stopping rule: its statement is the inferential statement"
)


@keyword_hints
def paired_rows(analysis: ExperimentAnalysis) -> pd.DataFrame | None:
    """The rows the paired forest draws for an analysis: its verdicts (the paired
    comparisons under the declared correction, or — none declared — the quality
    differences with per-comparison intervals), else its ``paired_comparisons``; None
    when it has neither. :func:`figures`, the HTML page and the explorer draw these.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> paired_rows(a) is a.verdicts
    True
    """
    if len(analysis.verdicts):
        return analysis.verdicts
    return analysis.paired_frames.get("paired_comparisons")


def _significance_key(paired: pd.DataFrame) -> str:
    """The forest's subtitle: what its intervals are and what its colours mean, with the
    correction and α that make a mark significant (or that none is declared)."""
    from .paired.verdicts import CORRECTION_NAMES, family_phrase

    first = paired.iloc[0]
    level = first.get("confidence_level")
    level_text = f"{float(level):.0%} " if not is_missing(level) else ""
    correction = first.get("correction")
    declared = (
        bool(first["declared"])
        if "declared" in paired
        else not is_missing(correction) and str(correction) != "not declared"
    )
    if not declared:
        return (
            f"{level_text}per-comparison intervals; no correction declared, so nothing is "
            "marked significant"
        )
    alpha, size = first.get("alpha"), first.get("family_size")
    how = (
        f"{CORRECTION_NAMES.get(str(correction), str(correction))} correction"
        if is_missing(alpha)
        else family_phrase(str(correction), None if is_missing(size) else int(size), alpha)
    )
    key = " ".join(
        f"<span style='color:{SIGNIFICANCE_COLOURS[call]}'>{SIGNIFICANCE_MARKS[call][1]}</span> "
        f"{label}"
        for call, label in (
            ("better", "significantly better"),
            ("worse", "significantly worse"),
            ("neither", "neither"),
        )
    )
    return f"{level_text}intervals; significance: {esc(how)}<br>{key}"


def _not_compared(paired: pd.DataFrame) -> str:
    """The forest's note on the comparisons it has no row for (``attrs["omitted"]``), so
    a missing mark is not read as "no difference"; the verdict tables give the reasons.

    Examples
    --------
    >>> frame = pd.DataFrame()
    >>> frame.attrs["omitted"] = [{"candidate_variant_id": "b", "dimension": "latency"}]
    >>> _not_compared(frame)
    '<br>not compared: b (latency) (the verdict table says why)'
    """
    omitted = paired.attrs.get("omitted") or []
    if not omitted:
        return ""
    shown = ", ".join(f"{esc(o['candidate_variant_id'])} ({esc(o['dimension'])})" for o in omitted)
    return f"<br>not compared: {shown} (the verdict table says why)"


def paired_forest(
    paired: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    *,
    after_early_stop: bool | str | None = None,
    **statistics: Any,
) -> go.Figure:
    """Paired candidate − baseline differences with their intervals, one panel per
    dimension (quality, safety, reliability, latency, cost …), the case as the unit.

    Reads the verdicts of :func:`~agenticlens_frames.case_verdicts` or the frame of
    :func:`agenticlens_frames.paired.paired_comparisons` (one row per candidate and
    evaluator: ``mean_difference``, ``ci_low``, ``ci_high``, ``significant`` after the
    declared correction, ``higher_is_better``); for an analysis, :func:`paired_rows`.
    Green: a significant improvement; red: a significant degradation; grey: neither. The
    subtitle names the correction, its family and α, and is the colours' key; without a
    declared correction the intervals are per comparison and every mark is grey.

    After an early stop (``stop_when="decided"``) these fixed-sample numbers are
    descriptive: the subtitle says so first, and that the stopping decision is the
    inferential statement; so at the end of a run the rule watched but never stopped, whose
    statement leads too (docs/statistics.md §13). ``after_early_stop``: whether the run
    stopped early (True), ``"watched"`` for a run the rule watched to the end, False for
    neither; None reads it from the analysis (False for a frame).

    Examples
    --------
    >>> pc = pd.DataFrame({"candidate_variant_id": ["c", "c"], "dimension": ["q", "lat"],
    ...                    "evaluator": ["passed", "latency_ms"], "mean_difference": [0.1, 50.0],
    ...                    "ci_low": [0.02, 10.0], "ci_high": [0.18, 90.0],
    ...                    "significant": [True, True], "higher_is_better": [True, False],
    ...                    "correction": "holm", "alpha": 0.05, "family_size": 2})
    >>> fig = paired_forest(pc)
    >>> [t.name for t in fig.data], list(fig.data[1].marker.color)
    (['q', 'lat'], ['#b42318'])
    >>> fig.layout.title.subtitle.text.split("<br>")[0]
    'intervals; significance: Holm correction over the family of 2 comparisons, α = 0.05'
    >>> paired_forest(pc, after_early_stop=True).layout.title.subtitle.text.split("<br>")[0]
    'descriptive after the early stop: its stopping decision is the inferential statement'
    """
    analysis = _analysis_of(paired, statistics, paired_forest)
    if after_early_stop is None:
        after_early_stop = analysis is not None and _stopped(analysis)
    if analysis is not None:
        frame = paired_rows(analysis)
        if frame is None:
            raise InputError(
                "this analysis has no paired comparisons (no candidate, or a saved report "
                "without verdicts or case records)",
            )
        paired = frame
    _require_columns(
        paired,
        ["candidate_variant_id", "dimension", "mean_difference", "ci_low", "ci_high"],
        "the paired comparisons frame",
    )
    dims = list(dict.fromkeys(paired["dimension"].astype(str)))
    if not dims:
        fig = go.Figure()
        fig.update_layout(title={"text": "No paired comparisons"}, height=200)
        return fig
    evaluators = (
        dict(zip(paired["dimension"].astype(str), paired["evaluator"].astype(str), strict=False))
        if "evaluator" in paired
        else {}
    )
    titles = [esc(f"{d} ({evaluators[d]})" if d in evaluators else d) for d in dims]
    fig = make_subplots(rows=1, cols=len(dims), shared_yaxes=True, subplot_titles=titles)
    from .paired.verdicts import format_change, format_p, p_header

    for n, dim in enumerate(dims, start=1):
        sub = paired[paired["dimension"].astype(str) == dim]
        unit = str(sub["unit"].iloc[0]) if "unit" in sub else ""
        # Proportions are drawn in percentage points, as every table states them: a
        # difference of 0.029 is "+2.9 pp", not "+2.9%" (a relative change).
        scale = 100.0 if unit == "proportion" else 1.0
        raw = sub["mean_difference"].to_numpy(float)
        raw_low, raw_high = sub["ci_low"].to_numpy(float), sub["ci_high"].to_numpy(float)
        x, low, high = raw * scale, raw_low * scale, raw_high * scale
        significant = (
            sub["significant"].fillna(False).astype(bool).to_numpy()
            if "significant" in sub
            else np.zeros(len(sub), dtype=bool)
        )
        higher = (
            sub["higher_is_better"].fillna(True).astype(bool).to_numpy()
            if "higher_is_better" in sub
            else np.ones(len(sub), dtype=bool)
        )
        better = np.where(higher, raw > 0, raw < 0)
        calls = [
            ("better" if b else "worse") if s else "neither"
            for s, b in zip(significant, better, strict=True)
        ]
        colours = [SIGNIFICANCE_COLOURS[c] for c in calls]
        hover = []
        for i, row in enumerate(sub.to_dict("records")):
            change = (
                format_change(row)
                if unit
                else f"{raw[i]:+.4g} [{_fmt(raw_low[i], '+.4g')}, {_fmt(raw_high[i], '+.4g')}]"
            )
            line = f"{esc(row['candidate_variant_id'])} − baseline: {esc(change)}"
            correction = str(row.get("correction", ""))
            if "adjusted_p_value" in row and row.get("declared", correction != "not declared"):
                # The tables' label and digits: under a declared "none" the p is each
                # comparison's own (it read "adjusted p = 0.0172" beside the tables'
                # "p (not adjusted)" 0.017); without a declared correction no p is shown.
                p = format_p(float(row["adjusted_p_value"]))
                line += f"<br>{p_header(correction)} = {p}"
            if "ci_method" in row and "correction" in row:
                line += f"<br>{esc(row['ci_method'])} interval, {esc(row['correction'])}"
            if calls[i] != "neither":
                line += f"<br>significantly {calls[i]}"
            hover.append(line)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=[esc(c) for c in sub["candidate_variant_id"]],
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": high - x,
                    "arrayminus": x - low,
                    "thickness": 2,
                    "width": 6,
                    "color": "#7f8590",
                },
                mode="markers",
                marker={
                    "size": 11,
                    "color": colours,
                    "symbol": [SIGNIFICANCE_MARKS[c][0] for c in calls],
                },
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
                name=esc(dim),
                showlegend=False,
            ),
            row=1,
            col=n,
        )
        fig.add_vline(x=0, line={"color": "#9aa0a6", "dash": "dash"}, row=1, col=n)
        if unit in _UNIT_AXIS:
            fig.update_xaxes(title_text=_UNIT_AXIS[unit], row=1, col=n)
    fig.update_yaxes(autorange="reversed", type="category", row=1, col=1)
    fig.update_layout(
        title=_title(
            "Paired differences against the baseline",
            # After an early stop the green and red marks are fixed-sample calls on a
            # sample the stop chose: said before the key, as every surface titles them.
            (
                (_WATCHED_NOTE if after_early_stop == "watched" else _STOPPED_NOTE) + "<br>"
                if after_early_stop
                else ""
            )
            + _significance_key(paired)
            + _not_compared(paired),
        ),
        height=max(260, 130 + 36 * paired["candidate_variant_id"].nunique()),
        margin={"t": 140 if after_early_stop else 120, "l": 10, "r": 10, "b": 10},
    )
    return _finish(fig)


# --------------------------------------------------------------------------- factors


def factor_levels_chart(
    factor_levels: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    *,
    metric: str = "mean_pass_rate",
    **statistics: Any,
) -> go.Figure:
    """Per factor, one bar per level: the unweighted mean of ``metric`` over the level's
    variants (spec §9.7; confounded unless the design is factorial).

    Examples
    --------
    >>> fl = pd.DataFrame({"factor": ["model", "model"], "value": ["a", "b"],
    ...                    "variant_ids": [("x",), ("y", "z")], "mean_pass_rate": [0.7, 0.9]})
    >>> fig = factor_levels_chart(fl)
    >>> list(fig.data[0].x), fig.data[0].y.tolist()
    (['a', 'b'], [0.7, 0.9])
    """
    analysis = _analysis_of(factor_levels, statistics, factor_levels_chart)
    if analysis is not None:
        factor_levels = analysis.factor_levels
    require_known("metric", [metric], FACTOR_METRICS, location="metric")
    _require_columns(factor_levels, ["factor", "value", metric], "the factor-levels frame")
    factors = list(dict.fromkeys(factor_levels["factor"].astype(str)))
    if not factors:
        fig = go.Figure()
        fig.update_layout(
            title={"text": "Factor levels: no factor takes two or more values"}, height=200
        )
        return fig
    fig = make_subplots(
        rows=1, cols=len(factors), shared_yaxes=True, subplot_titles=[esc(f) for f in factors]
    )
    for n, name in enumerate(factors, start=1):
        sub = factor_levels[factor_levels["factor"].astype(str) == name]
        members = [
            ", ".join(esc(v) for v in ids) for ids in sub.get("variant_ids", [()] * len(sub))
        ]
        fig.add_trace(
            go.Bar(
                x=[esc(v) for v in sub["value"]],
                y=sub[metric].to_numpy(float),
                marker={"color": PALETTE[(n - 1) % len(PALETTE)]},
                hovertext=[
                    f"{esc(name)} = {esc(v)}<br>variants: {m}"
                    for v, m in zip(sub["value"], members, strict=True)
                ],
                hovertemplate="%{hovertext}<br>"
                + FACTOR_METRICS[metric]
                + ": %{y:.3~f}<extra></extra>",
                name=esc(name),
                showlegend=False,
            ),
            row=1,
            col=n,
        )
    if metric in ("mean_pass_rate", "mean_trial_success_rate"):
        fig.update_yaxes(tickformat=".0%", range=[0, 1])
    fig.update_layout(
        title=_title(f"Factor levels: {FACTOR_METRICS[metric]}", "mean over member variants"),
        height=340,
        margin={"t": 100, "l": 10, "r": 10, "b": 10},
    )
    return _finish(fig)


# --------------------------------------------------------------------------- aggregate


def case_outcomes_chart(
    cases: pd.DataFrame | ExperimentAnalysis | ExperimentRun, **statistics: Any
) -> go.Figure:
    """How many cases each variant passes 0, 1, …, T times out of T: the aggregate view
    of a suite too wide for a heatmap.

    Examples
    --------
    >>> cm = pd.DataFrame({"variant_id": ["a", "a", "a"], "case_id": ["x", "y", "z"],
    ...                    "attempts": [2, 2, 2], "passes": [2, 0, 2]})
    >>> fig = case_outcomes_chart(cm)
    >>> list(fig.data[0].x), fig.data[0].y.tolist()
    (['0/2', '1/2', '2/2'], [1, 0, 2])
    """
    analysis = _analysis_of(cases, statistics, case_outcomes_chart)
    if analysis is not None:
        cases = analysis.cases
    _require_columns(cases, ["variant_id", "attempts", "passes"], "the case matrix")
    top = int(cases["attempts"].max()) if len(cases) else 0
    labels = [f"{p}/{top}" for p in range(top + 1)]
    fig = go.Figure()
    for n, vid in enumerate(_variant_ids(cases)):
        sub = cases[cases["variant_id"].astype(str) == vid]
        counts = np.bincount(sub["passes"].to_numpy(int), minlength=top + 1)[: top + 1]
        fig.add_trace(
            go.Bar(
                x=labels,
                y=counts,
                name=esc(vid),
                marker={"color": PALETTE[n % len(PALETTE)]},
                hovertemplate=f"{esc(vid)}: %{{y}} case(s) passed %{{x}}<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        title=_title("Cases by passing attempts", "consistent cases sit at the ends"),
        xaxis={"title": "passes / attempts", "type": "category"},
        yaxis={"title": "cases"},
        height=340,
        margin={"t": 70, "l": 10, "r": 10, "b": 10},
    )
    return _finish(fig)


# --------------------------------------------------------------------------- factor effects

#: Metrics of the factor-effect figures: label, variant-summary column of the level means.
#: The pass rate is over the evaluated attempts (``pass_rate_mean``: a failed trial left
#: out, as in the factor effects and the verdicts), not AgenticLens's ``case_pass_rate``,
#: which counts a failed trial as failing every case.
EFFECT_METRICS: dict[str, tuple[str, str]] = {
    "pass_rate": ("pass rate", "pass_rate_mean"),
    "score": ("mean score", "average_score_mean"),
}


def factor_effects_forest(
    effects: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    *,
    metric: str = "pass_rate",
    **statistics: Any,
) -> go.Figure:
    """Forest plot of :func:`~agenticlens_frames.factor_effects`: one row per term.

    Takes the frame, or an analysis or a run (its ``factor_effects``). Pass-rate effects
    are drawn and written in percentage points.

    Main effects and interactions in two colours, each with its interval; hover shows
    the p-value, the adjusted p-value and the contrast of variants behind the estimate.
    The subtitle says which family the adjusted p-values are corrected over (the factor
    terms', not the verdicts'). Terms the design cannot estimate are named in a note under
    the plot.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> fig = factor_effects_forest(a.factor_effects)
    >>> [t.name for t in fig.data]
    ['main effect', 'interaction']
    """
    from .paired.verdicts import CORRECTION_NAMES, format_difference, format_interval

    analysis = _analysis_of(effects, statistics, factor_effects_forest)
    if analysis is not None:
        effects = analysis.factor_effects
    require_known("metric", [metric], EFFECT_METRICS, location="metric")
    _require_columns(
        effects, ["metric", "term", "kind", "estimate", "ci_low", "ci_high"], "the factor effects"
    )
    rows = effects[(effects["metric"] == metric) & effects["estimable"].astype(bool)]
    missing = effects[(effects["metric"] == metric) & ~effects["estimable"].astype(bool)]
    label, _ = EFFECT_METRICS[metric]
    percent = metric == "pass_rate"
    unit = "proportion" if percent else "score"
    scale = 100.0 if percent else 1.0
    traces = []
    for kind, name, colour in (
        ("main", "main effect", "#1f6feb"),
        ("interaction", "interaction", "#b35900"),
    ):
        sub = rows[rows["kind"] == kind]
        hover = [
            f"<b>{esc(r['term'])}</b><br>{format_difference(r['estimate'], unit)} "
            f"{format_interval(r['ci_low'], r['ci_high'], unit)}"
            f"<br>p = {_fmt(r['p_value'], '.3g')}, adjusted over the factor terms "
            f"{_fmt(r.get('p_adjusted'), '.3g')}"
            f"<br>{esc(r.get('contrast') or '')}"
            for r in sub.to_dict("records")
        ]
        est = sub["estimate"].to_numpy(float) * scale
        traces.append(
            go.Scatter(
                x=est,
                y=[esc(t) for t in sub["term"]],
                mode="markers",
                name=name,
                marker={"size": 10, "color": colour},
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": sub["ci_high"].to_numpy(float) * scale - est,
                    "arrayminus": est - sub["ci_low"].to_numpy(float) * scale,
                    "color": colour,
                },
                hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    note = "not estimable: " + ", ".join(esc(t) for t in missing["term"]) if len(missing) else ""
    level = effects.attrs.get("confidence_level")
    title = f"Factor effects on the {label} (case as the unit"
    title += f", {level:.0%} intervals)" if level else ")"
    correction = effects.attrs.get("correction")
    # The adjusted p is over the factor terms: said here so it is not read as a verdict's.
    # The intervals are per term: one clear of 0 can still fail the correction.
    detail = (
        "intervals per term, not adjusted; adjusted p (hover): "
        f"{esc(CORRECTION_NAMES.get(correction, correction))} over these terms, not the "
        "verdicts' family"
        if correction and correction != "none"
        else None
    )
    return go.Figure(
        data=traces,
        layout={
            "title": _title(title, detail),
            "xaxis": {
                "title": f"effect on the {label} against the baseline's level"
                + (" (percentage points)" if percent else ""),
                "zeroline": True,
                "zerolinewidth": 2,
                "tickformat": "+.0f" if percent else None,
                "automargin": True,
            },
            "yaxis": {"autorange": "reversed", "automargin": True},
            "height": 120 + 34 * max(len(rows), 1),
            "margin": {
                "t": 60 if detail is None else 90,
                "l": 10,
                "r": 10,
                "b": 60 if note else 10,
            },
            "annotations": [
                {
                    "text": note,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0,
                    "y": -0.12,
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "top",
                    "font": {"size": 11, "color": "#666"},
                }
            ]
            if note
            else [],
        },
    )


def factor_interaction_chart(
    variants: pd.DataFrame | ExperimentAnalysis | ExperimentRun,
    effects: pd.DataFrame | None = None,
    *,
    metric: str = "pass_rate",
    pair: tuple[str, str] | None = None,
    **statistics: Any,
) -> go.Figure | None:
    """Interaction plot of two factors: level means, one line per level of the second.

    Points are the variants that differ from the baseline only in these two factors; y is
    the variant's pass rate over its evaluated attempts (``pass_rate_mean``: a failed
    trial left out, as in the factor effects), or its mean score, with the case-bootstrap
    interval when the summary has it. Parallel lines mean the effects add up; crossing or
    diverging lines are an interaction. Returns None when no interaction is estimable.

    Parameters
    ----------
    variants
        The variant summary (``factors`` column), or the analysis or the run itself (as
        every figure function takes them; then ``effects`` defaults to its
        ``factor_effects``).
    effects
        :func:`~agenticlens_frames.factor_effects` (to find the estimable pairs and the
        baseline's levels); needed with a variant summary.
    metric
        ``pass_rate`` or ``score``.
    pair
        The two factors (default: the first estimable interaction).
    **statistics
        With a run or an analysis: options of :func:`~agenticlens_frames.coerce.as_analysis`
        (``confidence_level``, ``correction`` ...).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> fig = factor_interaction_chart(a)  # or (a.variants, a.factor_effects)
    >>> [t.name for t in fig.data]
    ['prompt = v1', 'prompt = v2']
    """
    analysis = _analysis_of(variants, statistics, factor_interaction_chart)
    if analysis is not None:
        variants = analysis.variants
        effects = analysis.factor_effects if effects is None else effects
    elif effects is None:
        # Called with analysis.variants alone, the chart has no way to find the pairs.
        raise InputError(
            "a variant summary needs its factor effects",
            location="effects",
            hint="pass the analysis, factor_interaction_chart(analysis), or both frames: "
            "factor_interaction_chart(analysis.variants, analysis.factor_effects)",
        )
    require_known("metric", [metric], EFFECT_METRICS, location="metric")
    if effects.empty:  # no two-level factor: factor_effects has no rows (nor columns)
        return None
    est = effects[
        (effects["kind"] == "interaction")
        & effects["estimable"].astype(bool)
        & (effects["metric"] == metric)
    ]
    if pair is None:
        if est.empty:
            return None
        pair = (str(est.iloc[0]["factor"]), str(est.iloc[0]["factor_b"]))
    f, g = pair
    mains = effects[effects["kind"] == "main"]
    base = dict(zip(mains["factor"], mains["baseline_level"], strict=False))
    others = {k: v for k, v in base.items() if k not in pair}
    label, column = EFFECT_METRICS[metric]
    _require_columns(variants, ["variant_id", "factors", column], "the variant summary")
    points: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for v in variants.to_dict("records"):
        fac = v.get("factors") or {}
        if any(str(fac.get(k, "(unset)")) != lv for k, lv in others.items()):
            continue
        points.setdefault(str(fac.get(g, "(unset)")), []).append((str(fac.get(f, "(unset)")), v))
    x_levels = sorted(
        {x for pts in points.values() for x, _ in pts}, key=lambda x: (x != base.get(f), x)
    )
    traces = []
    for i, level in enumerate(sorted(points, key=lambda x: (x != base.get(g), x))):
        pts = sorted(points[level], key=lambda p: x_levels.index(p[0]))
        ys = np.array([float(v[column]) for _, v in pts])
        low = np.array([float(v.get(f"{column}_boot_ci_low", np.nan)) for _, v in pts])
        high = np.array([float(v.get(f"{column}_boot_ci_high", np.nan)) for _, v in pts])
        colour = PALETTE[i % len(PALETTE)]
        traces.append(
            go.Scatter(
                x=[esc(x) for x, _ in pts],
                y=ys,
                mode="lines+markers+text",
                text=[esc(v["variant_id"]) for _, v in pts],
                textposition="top center",
                name=f"{esc(g)} = {esc(level)}",
                line={"color": colour},
                marker={"size": 10, "color": colour},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": np.nan_to_num(high - ys),
                    "arrayminus": np.nan_to_num(ys - low),
                    "color": colour,
                    "visible": bool(np.isfinite(low).any()),
                },
            )
        )
    return go.Figure(
        data=traces,
        layout={
            "title": {
                "text": f"{esc(f)} × {esc(g)}: {label} by level (parallel lines = no interaction)"
            },
            "xaxis": {
                "title": esc(f),
                "type": "category",
                "categoryorder": "array",
                "categoryarray": [esc(x) for x in x_levels],
                "automargin": True,
            },
            "yaxis": {
                "title": label,
                "tickformat": ".0%" if metric == "pass_rate" else None,
                "automargin": True,
            },
            "height": 380,
            "margin": {"t": 60, "l": 10, "r": 10, "b": 10},
        },
    )


# --------------------------------------------------------------------------- all


@dataclass(frozen=True)
class FigureEntry:
    """One standard figure of an analysis: how to draw it, and whether there is anything
    to draw (a figure with no data is left out).

    ``draw(analysis, options)`` returns the figure; ``has_data(analysis, options)`` says
    whether it has anything to show (default: always). :data:`FIGURES` lists them.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> pareto = next(entry for entry in FIGURES if entry.name == "pareto")
    >>> pareto.describes
    'two objectives, frontier joined, dominated dimmed'
    >>> pareto.has_data(a, {}), type(pareto.draw(a, {})).__name__
    (True, 'Figure')
    """

    name: str
    #: One line for the docs.
    describes: str
    draw: Callable[[ExperimentAnalysis, dict[str, Any]], go.Figure]
    has_data: Callable[[ExperimentAnalysis, dict[str, Any]], bool] = lambda _a, _o: True
    #: The HTML page embeds it as drawn (the heatmap and the Pareto chart it rebuilds
    #: interactively from their own payloads).
    in_page: bool = True


def _stopped(analysis: ExperimentAnalysis) -> bool | str:
    """The forest's ``after_early_stop`` of an analysis (see :func:`paired_forest`)."""
    from .early_stopping import sequence_leads, stopped_early

    if not sequence_leads(analysis):
        return False
    return True if stopped_early(analysis) else "watched"


def _paired_frame_of(analysis: ExperimentAnalysis, options: dict[str, Any]) -> Any:
    paired = options.get("paired")
    return paired_rows(analysis) if paired is None else paired


#: The standard figures, in the order :func:`figures` returns them. Adding a figure is
#: one entry here (and its function): :func:`figures`, the HTML page and the docs table
#: (:func:`figures_table`) follow.
FIGURES: tuple[FigureEntry, ...] = (
    # First: the case-level paired comparisons (under the declared correction, or
    # per-comparison intervals) lead, as the verdicts lead the console, the page and the
    # explorer; AgenticLens's pooled deltas come after them.
    FigureEntry(
        "paired",
        "paired differences per dimension, case as the unit, with their intervals; "
        "coloured only under a declared correction",
        lambda a, o: paired_forest(_paired_frame_of(a, o), after_early_stop=_stopped(a)),
        has_data=lambda a, o: (p := _paired_frame_of(a, o)) is not None and not p.empty,
    ),
    FigureEntry(
        "heatmap",
        "variant × case: colour = evaluated pass rate, label = passes/attempts",
        lambda a, o: case_heatmap(
            a.cases,
            a.variants,
            color=EVALUATED_PASS_RATE,
            case_order=o.get("case_order", "attention"),
            max_cases=o.get("max_cases", 50),
        ),
        in_page=False,
    ),
    FigureEntry(
        "pass_k",
        "pass@k and pass^k for k = 1..T",
        lambda a, o: pass_k_curves(
            pass_k_frame(a),
            variant_names=_variant_names(a),
            no_completed_trial=without_completed_trial(a.variants),
        ),
    ),
    FigureEntry(
        "case_outcomes",
        "how many cases pass 0..T of T attempts",
        lambda a, o: case_outcomes_chart(a.cases),
    ),
    FigureEntry(
        "pareto",
        "two objectives, frontier joined, dominated dimmed",
        lambda a, o: pareto_chart(
            a.variants, x=o.get("pareto_x", "latency"), y=o.get("pareto_y", "pass_rate")
        ),
        in_page=False,
    ),
    FigureEntry(
        "deltas",
        "AgenticLens's candidate − baseline per metric (pooled; red: regressed by its rule)",
        # AgenticLens's numbers: attempts treated as independent, so never marked significant
        lambda a, o: delta_forest(a.comparisons),
        has_data=lambda a, o: len(a.comparisons) > 0,
    ),
    FigureEntry(
        "factors",
        "per factor and level, one metric",
        lambda a, o: factor_levels_chart(
            a.factor_levels, metric=o.get("factor_metric", "mean_pass_rate")
        ),
        has_data=lambda a, o: not a.factor_levels.empty,
    ),
)


#: The options the entries of :data:`FIGURES` read (:func:`figures`' keywords, and the
#: HTML page's paired frame).
_DRAW_OPTIONS = ("case_order", "max_cases", "pareto_x", "pareto_y", "factor_metric", "paired")


def draw_figures(
    analysis: ExperimentAnalysis, *, in_page: bool | None = None, **options: Any
) -> dict[str, go.Figure]:
    """The figures of :data:`FIGURES` that have data, by name (``in_page``: only those the
    HTML page embeds as drawn, or only the others; None: all).

    ``options`` go to every entry's ``draw`` and ``has_data`` (:func:`figures` passes
    ``case_order``, ``max_cases``, ``pareto_x`` ...).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> list(draw_figures(a, in_page=False))  # the page rebuilds these two itself
    ['heatmap', 'pareto']
    >>> draw_figures(a, in_pag=False)
    Traceback (most recent call last):
    ...
    TypeError: draw_figures() got an unexpected keyword argument 'in_pag'; did you mean \
'in_page'?
    """
    unknown = [name for name in options if name not in _DRAW_OPTIONS]
    if unknown:
        # The entries read only these: any other keyword (in_pag=) was silently ignored.
        raise TypeError(unexpected_keyword("draw_figures", unknown[0], ["in_page", *_DRAW_OPTIONS]))
    return {
        entry.name: entry.draw(analysis, options)
        for entry in FIGURES
        if (in_page is None or entry.in_page == in_page) and entry.has_data(analysis, options)
    }


def figures(
    analysis: ExperimentAnalysis | ExperimentRun,
    *,
    case_order: str = "attention",
    max_cases: int | None = 50,
    pareto_x: str = "latency",
    pareto_y: str = "pass_rate",
    factor_metric: str = "mean_pass_rate",
    **statistics: Any,
) -> dict[str, go.Figure]:
    """Every standard figure of one analysis that has data, by name (:data:`FIGURES`):
    ``paired`` first (the case-level paired comparisons of :func:`paired_rows`: under the
    declared correction, or with per-comparison intervals and no significance colours
    when none is declared), then ``heatmap``, ``pass_k``, ``case_outcomes``, ``pareto``,
    ``deltas`` (AgenticLens's pooled comparisons, labelled) and ``factors``.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> list(figures(analyze(run)))  # the manifest declares comparisons: {correction: holm}
    ['paired', 'heatmap', 'pass_k', 'case_outcomes', 'pareto', 'deltas', 'factors']
    """
    from .coerce import as_analysis, check_options

    # Its own keywords among the closest matches: figures(run, case_ordr=...) was "unknown
    # statistics option 'case_ordr' (did you mean 'cluster'?)".
    check_options(statistics, "figures", own=_DRAW_OPTIONS[:-1])
    return draw_figures(
        as_analysis(analysis, **statistics),
        case_order=case_order,
        max_cases=max_cases,
        pareto_x=pareto_x,
        pareto_y=pareto_y,
        factor_metric=factor_metric,
    )


def figures_table() -> str:
    """The standard figures as a Markdown table (docs/data-model.md).

    Examples
    --------
    >>> figures_table().splitlines()[3]
    '| `heatmap` | variant × case: colour = evaluated pass rate, label = passes/attempts |'
    """
    return markdown_table(["figure", "shows"], [[f"`{e.name}`", e.describes] for e in FIGURES])
