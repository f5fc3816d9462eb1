"""Notebook explorer: ipywidgets controls wired to plotly figures.

:func:`explore` lays out factor filters, a metric selector and case-ordering controls
above three figures (case heatmap, pass@k / pass^k curves, Pareto frontier) and a panel
that shows a case's attempts when a heatmap cell is clicked. Every change calls the same
pure functions as the HTML report (:mod:`agenticlens_frames.viz`) on the filtered result
frames; the widgets themselves hold no logic worth testing apart from that wiring.

The figures are shown through the notebook's own plotly renderer (``Output`` widgets
holding ``go.Figure`` s), not as ``FigureWidget`` s: each of those carries the whole of
plotly.js (5 MB) in the notebook's saved widget state, so three of them made an executed
notebook 15 MB. A heatmap click reaches Python through :class:`ClickBridge`, a widget of
a few lines of JavaScript that listens to the rendered heatmap.

Needs a Jupyter front end with ipywidgets 8 and anywidget (``pip install
'agenticlens-frames[notebook]'``); in a plain Python session the objects work but draw
nothing.
"""

from __future__ import annotations

import html
import json
from collections.abc import Collection, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from . import viz
from ._deprecate import keyword_hints
from ._optional import require
from ._suggest import require_known
from .analysis import ExperimentAnalysis, pareto_frontier
from .errors import InputError, check_count
from .frames import ExperimentRun
from .per_case import EVALUATED_PASS_RATE, evaluated_pass_rate

# The notebook extra: a plain install has no Jupyter widget stack.
anywidget = require("anywidget", "the notebook explorer")
widgets = require("ipywidgets", "the notebook explorer")
traitlets = require("traitlets", "the notebook explorer")

__all__ = ["Explorer", "attempt_details", "explore", "select_variants"]

#: Metric selector: label → (Pareto y objective, heatmap colour column).
METRICS: dict[str, tuple[str, str]] = {
    "pass rate (mean over trials)": ("pass_rate", EVALUATED_PASS_RATE),
    # AgenticLens's pooled rate: a failed trial counts as failing every case, here too.
    "case pass rate (pooled)": ("case_pass_rate", "pass_rate"),
    "mean score": ("score", "mean_score"),
    "reliability (trial success)": ("reliability", EVALUATED_PASS_RATE),
}


@keyword_hints
def select_variants(variants: pd.DataFrame, filters: Mapping[str, Collection[str]]) -> list[str]:
    """Variant ids (in the frame's order) whose factor values are all among ``filters``.

    An empty selection for a factor means "no filter on that factor"; a variant without
    the factor has the value ``"(unset)"``. A factor name or level that no variant has is
    refused, with the closest existing one.

    Examples
    --------
    >>> vs = pd.DataFrame({"variant_id": ["a", "b", "c"],
    ...                    "factors": [{"m": "x"}, {"m": "y"}, {}]})
    >>> select_variants(vs, {"m": ["y", "(unset)"]})
    ['b', 'c']
    >>> select_variants(vs, {"m": []})
    ['a', 'b', 'c']
    >>> select_variants(vs, {"m": ["z"]})
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: filters.m: unknown level of factor 'm' 'z'
    (known: (unset), x, y)
    """
    names: dict[str, None] = {}
    for factors in variants["factors"]:
        names.update(dict.fromkeys(factors or {}))
    require_known("factor", filters, names, location="filters")
    for name, chosen in filters.items():
        levels = sorted({str((f or {}).get(name, "(unset)")) for f in variants["factors"]})
        require_known(f"level of factor {name!r}", chosen, levels, location=f"filters.{name}")
    keep = []
    for vid, factors in zip(variants["variant_id"].astype(str), variants["factors"], strict=True):
        values = factors or {}
        if all(
            not chosen or str(values.get(name, "(unset)")) in set(chosen)
            for name, chosen in filters.items()
        ):
            keep.append(vid)
    return keep


@keyword_hints
def attempt_details(run: ExperimentRun, variant_id: str, case_id: str) -> pd.DataFrame:
    """One row per check of each attempt of one (variant, case): the attempt's status,
    outcome, score, latency, cost, tools, turns and output next to each check's name,
    value, pass flag and explanation (attempts without checks keep one row).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> d = attempt_details(run, "baseline", "track-order")
    >>> sorted(d["trial"].unique().tolist())
    [1, 2, 3, 4, 5]
    """
    require_known("variant id", [variant_id], [v.id for v in run.manifest.variants])
    require_known("case id", [case_id], run.suite.case_ids)
    att = run.attempts
    att = att[(att["variant_id"] == variant_id) & (att["case_id"] == case_id)]
    cols = [
        "variant_id", "trial", "case_id", "status", "passed", "score", "latency_ms",
        "cost_usd", "tools", "turns", "error", "output",
    ]  # fmt: skip
    chk = run.checks
    chk = chk[(chk["variant_id"] == variant_id) & (chk["case_id"] == case_id)]
    chk = chk[["trial", "check_index", "name", "value", "passed", "required", "explanation"]]
    chk = chk.rename(columns={"name": "check", "value": "check_value", "passed": "check_passed"})
    out = att[cols].merge(chk, on="trial", how="left")
    return out.sort_values(["trial", "check_index"], kind="stable").reset_index(drop=True)


def _attempts_html(run: ExperimentRun | None, variant_id: str, case_id: str) -> str:
    e = html.escape
    if run is None:
        return (
            f"<b>{e(variant_id)} · {e(case_id)}</b><p>No attempt-level data: this analysis was "
            "loaded from a saved report.</p>"
        )
    details = attempt_details(run, variant_id, case_id)
    parts = [f"<h4>{e(variant_id)} · {e(case_id)}</h4>"]
    for trial, rows in details.groupby("trial", sort=True):
        first = rows.iloc[0]
        score = "n/a" if pd.isna(first["score"]) else f"{first['score']:.3f}"
        latency = "n/a" if pd.isna(first["latency_ms"]) else f"{first['latency_ms']:.0f} ms"
        cost = "n/a" if pd.isna(first["cost_usd"]) else f"${first['cost_usd']:.4f}"
        output = "" if pd.isna(first["output"]) else str(first["output"])
        # Unknown (no sample, a failed trial) is not "none used".
        tools = "n/a" if pd.isna(first["tools"]) else str(first["tools"]) or "none"
        error = "" if pd.isna(first["error"]) else f" · error: {e(str(first['error']))}"
        checks = "".join(
            f"<li style='color:{'#1d7f4e' if bool(r['check_passed']) else '#b42318'}'>"
            f"{'✓' if bool(r['check_passed']) else '✗'} {e(str(r['check']))} = "
            f"{r['check_value']:.3g} — {e(str(r['explanation']))}</li>"
            for _, r in rows.iterrows()
            if not pd.isna(r["check"])
        )
        parts.append(
            f"<div><b>trial {int(trial)}</b> · {e(str(first['status']))} · "
            f"{'passed' if bool(first['passed']) else 'failed'} · score {score} · {latency} · "
            f"{cost} · tools: {e(tools)}{error}"
            f"<pre style='white-space:pre-wrap'>{e(output)}</pre><ul>{checks}</ul></div>"
        )
    return "".join(parts)


class ClickBridge(anywidget.AnyWidget):  # type: ignore[misc]
    """Reports clicks on the rendered plotly figure whose ``layout.meta`` is ``key``.

    The figure is drawn by the notebook's plotly renderer; this widget (nothing visible)
    finds it in the page and sets ``clicked`` to ``[x, y, stamp]`` on each click, which
    Python observes. Its JavaScript is a few hundred bytes, so it costs nothing in the
    saved notebook. It also marks the box it sits in (the explorer) so that JupyterLab's
    notebook shortcuts leave the keys pressed on its controls to them.
    """

    _esm = """
export default {
  render({ model, el }) {
    const key = model.get("key");
    const hook = (gd) => {
      if (gd.__alfHooked === gd._fullLayout || typeof gd.on !== "function") return;
      gd.__alfHooked = gd._fullLayout;  // once per drawing (a redraw replaces it)
      gd.on("plotly_click", (event) => {
        const point = event.points[0];
        model.set("clicked", [String(point.x), String(point.y), Date.now()]);
        model.save_changes();
      });
    };
    const scan = () => {
      // JupyterLab's command-mode shortcuts take the keys pressed on a select or slider
      // (arrows move to another cell, "c" copies it): off on the explorer's controls (a
      // control matches the shortcuts' selector itself, so marking a parent is not enough).
      const explorer = el.closest(".widget-vbox");
      for (const c of explorer ? explorer.querySelectorAll("select, .noUi-handle") : []) {
        c.setAttribute("data-lm-suppress-shortcuts", "true");
      }
      for (const gd of document.querySelectorAll(".js-plotly-plot")) {
        if (gd.layout && gd.layout.meta === key) hook(gd);
      }
    };
    scan();
    const watcher = new MutationObserver(scan);
    watcher.observe(document.body, { childList: true, subtree: true });
    el.style.display = "none";
    return () => watcher.disconnect();
  },
};
"""
    key = traitlets.Unicode("").tag(sync=True)
    clicked = traitlets.List([]).tag(sync=True)


def _show(view: widgets.Output, fig: go.Figure) -> None:
    """Draw ``fig`` in ``view`` with the notebook's plotly renderer, replacing what was
    there. The output is set directly (not through ``display``), so outside a kernel
    nothing is printed and no browser is opened."""
    spec = json.loads(pio.to_json(fig, validate=False))
    spec["config"] = {"responsive": True}
    view.outputs = (
        {
            "output_type": "display_data",
            "data": {
                "application/vnd.plotly.v1+json": spec,
                "text/plain": f"<plotly figure: {html.escape(str(fig.layout.title.text))}>",
            },
            "metadata": {},
        },
    )


_WRAP = widgets.Layout(flex_flow="row wrap")


class Explorer(widgets.VBox):
    """The explorer layout; build it with :func:`explore`.

    Attributes
    ----------
    analysis
        The analysis being explored.
    factor_filters
        One ``SelectMultiple`` per factor (nothing selected = no filter).
    metric, cost_axis, case_order, max_cases
        Metric selector (Pareto y axis and heatmap colour), Pareto x axis (latency; cost when
        no variant has a known latency), heatmap case order and number of cases shown.
    heatmap, curves, frontier
        The figures shown (``go.Figure``), redrawn on every change.
    verdicts
        ``HTML`` widget with the case-level verdicts (shown first, filtered with the
        variants); without a declared correction, the paired differences with
        per-comparison intervals and how to declare one.
    judges
        ``HTML`` widget with what each variant's judges did and cost, apart from the
        agent's cost: the page's "Judges" section (the lines of the console, ``--summary``
        and ``agenticlens_frames.judge_costs``); empty without judges.
    paired
        The paired forest plot of the verdict rows (adjusted p in the hover), or None
        when there is no candidate; filtered with the variants.
    views
        The ``Output`` widgets the figures are drawn in, by figure name.
    clicks
        The :class:`ClickBridge` reporting heatmap clicks.
    pick_variant, pick_case
        ``Dropdown`` s of the heatmap's variants and cases: choosing both shows that cell's
        attempts, as a click does (the way in from the keyboard); a click moves them to
        its cell.
    details
        ``HTML`` widget showing the attempts of the last clicked or chosen heatmap cell.

    Examples
    --------
    >>> import pandas as pd
    >>> from agenticlens_frames import ExperimentRun
    >>> attempts = pd.DataFrame({"variant_id": ["a"] * 4 + ["b"] * 4,
    ...                          "trial": [1, 1, 2, 2] * 2, "case_id": ["x", "y"] * 4,
    ...                          "passed": [True, False] + [True] * 6})
    >>> variants = pd.DataFrame({"variant_id": ["a", "b"], "factor_model": ["small", "large"]})
    >>> cases = pd.DataFrame({"case_id": ["x", "y"]})
    >>> run = ExperimentRun.from_frames(attempts, variants, cases)
    >>> ex = explore(run)
    >>> type(ex).__name__, list(ex.factor_filters), ex.metric.value
    ('Explorer', ['model'], 'pass rate (mean over trials)')
    >>> ex.factor_filters["model"].value = ("large",)  # redraws every figure
    >>> ex.selected_variants, ex.heatmap.data[0].y
    (['b'], ('b',))
    """

    def __repr__(self) -> str:
        # ipywidgets' repr printed every child widget with its whole value: some 100,000
        # characters (the verdict table's HTML, each figure) for the example experiment
        # in a console or as a notebook's text/plain fallback. One line instead, with the
        # analysis's own repr (its verdicts first).
        return f"Explorer({self.analysis!r})"

    def __init__(self, analysis: ExperimentAnalysis, *, max_cases: int = 50) -> None:
        # (The slider would clip 0 or -1 to 1 without a word.)
        check_count(max_cases, "max_cases", location="max_cases")
        self.analysis = analysis
        vs = analysis.variants
        names: dict[str, None] = {}
        for f in vs["factors"]:
            names.update(dict.fromkeys(f or {}))
        self.factor_filters: dict[str, widgets.SelectMultiple] = {}
        for name in names:
            levels = sorted({str((f or {}).get(name, "(unset)")) for f in vs["factors"]})
            self.factor_filters[name] = widgets.SelectMultiple(
                options=levels, value=(), description=name, rows=min(len(levels), 4)
            )
        self.metric = widgets.Dropdown(options=list(METRICS), description="metric")
        # Cost when no variant has a known latency (a run that recorded none): the frontier
        # on latency would be an empty plot.
        latency, cost = (vs.get(viz.OBJECTIVES[axis].column) for axis in ("latency", "cost"))
        no_latency = latency is None or bool(latency.isna().all())
        has_cost = cost is not None and bool(cost.notna().any())
        self.cost_axis = widgets.Dropdown(
            options=[("latency", "latency"), ("cost", "cost")],
            value="cost" if no_latency and has_cost else "latency",
            description="x axis",
        )
        self.case_order = widgets.Dropdown(
            options=[(label, key) for key, label in viz.CASE_ORDERS.items()],
            value="attention",
            description="cases",
        )
        n_cases = len(analysis.info.get("case_ids") or analysis.cases["case_id"].unique())
        self.max_cases = widgets.IntSlider(
            value=min(max_cases, n_cases),
            min=1,
            max=max(n_cases, 1),
            description="show",
            # Redraw once, on release: dragging across thousands of cases otherwise queues
            # a redraw per value passed, and the kernel stays busy for minutes.
            continuous_update=False,
        )
        self.heatmap = go.Figure()
        self.curves = go.Figure()
        self.frontier = go.Figure()
        # The rows the page's and figures()'s paired forest draw (the verdicts).
        paired = viz.paired_rows(analysis)
        self._paired = paired if paired is not None and len(paired) else None
        self.verdicts = widgets.HTML()
        from .report.html import judges_section_html

        # The page's section, from the same lines (all variants: the judges' cost is the
        # run's, not filtered with the variants shown).
        self.judges = widgets.HTML(judges_section_html(analysis))
        self.paired: go.Figure | None = go.Figure() if self._paired is not None else None
        names = ["heatmap", "curves", "frontier", *(["paired"] if self._paired is not None else [])]
        self.views = {name: widgets.Output() for name in names}
        self.clicks = ClickBridge(key=f"agenticlens-heatmap-{id(self)}")
        self.clicks.observe(self._on_bridge_click, names="clicked")
        self.details = widgets.HTML(
            "<i>Click a heatmap cell, or choose a variant and a case, to see that case's "
            "attempts.</i>"
        )
        # The keyboard's way to a cell's attempts (a heatmap cell takes no focus): the
        # heatmap's variants and cases, whose axis labels are the values.
        self.pick_variant = widgets.Dropdown(description="variant")
        self.pick_case = widgets.Dropdown(description="case")
        self._picking = False  # set while the explorer itself moves the two dropdowns
        for pick in (self.pick_variant, self.pick_case):
            pick.observe(self._on_pick, names="value")
        self.status = widgets.HTML()
        self._labels: dict[tuple[str, str], tuple[str, str]] = {}
        self._pass_k = viz.pass_k_frame(analysis)
        controls = [self.metric, self.cost_axis, self.case_order, self.max_cases]
        for control in [*controls, *self.factor_filters.values()]:
            control.observe(self._on_change, names="value")
        super().__init__(
            [
                self.verdicts,
                *([self.judges] if self.judges.value else []),
                # Controls wrap onto more lines in a narrow output area.
                widgets.HBox(list(self.factor_filters.values()), layout=_WRAP),
                widgets.HBox(controls, layout=_WRAP),
                self.status,
                self.views["heatmap"],
                self.clicks,
                widgets.HBox([self.pick_variant, self.pick_case], layout=_WRAP),
                self.details,
                # Stacked, not side by side: two figures in one row overflow an output
                # area narrower than twice a figure's natural width.
                self.views["curves"],
                self.views["frontier"],
                *([self.views["paired"]] if "paired" in self.views else []),
                *_beyond_views(analysis),
            ]
        )
        self.refresh()

    # The observers pass a change dict; refresh takes none.
    def _on_change(self, _change: Any = None) -> None:
        self.refresh()

    @property
    def selected_variants(self) -> list[str]:
        """Variant ids passing the factor filters, manifest order.

        Examples
        --------
        >>> import pandas as pd
        >>> from agenticlens_frames import ExperimentRun
        >>> attempts = pd.DataFrame({"variant_id": ["a"] * 4 + ["b"] * 4,
        ...                          "trial": [1, 1, 2, 2] * 2, "case_id": ["x", "y"] * 4,
        ...                          "passed": [True, False] + [True] * 6})
        >>> variants = pd.DataFrame({"variant_id": ["a", "b"], "factor_model": ["small", "large"]})
        >>> cases = pd.DataFrame({"case_id": ["x", "y"]})
        >>> run = ExperimentRun.from_frames(attempts, variants, cases)
        >>> ex = explore(run)
        >>> ex.selected_variants  # no filter selected: every variant
        ['a', 'b']
        >>> ex.factor_filters["model"].value = ("small",)
        >>> ex.selected_variants
        ['a']
        """
        filters = {name: w.value for name, w in self.factor_filters.items()}
        return select_variants(self.analysis.variants, filters)

    def refresh(self) -> None:
        """Redraw every figure from the current control values.

        Changing a control calls it.

        Examples
        --------
        >>> import pandas as pd
        >>> from agenticlens_frames import ExperimentRun
        >>> attempts = pd.DataFrame({"variant_id": ["a"] * 4 + ["b"] * 4,
        ...                          "trial": [1, 1, 2, 2] * 2, "case_id": ["x", "y"] * 4,
        ...                          "passed": [True, False] + [True] * 6})
        >>> variants = pd.DataFrame({"variant_id": ["a", "b"], "factor_model": ["small", "large"]})
        >>> cases = pd.DataFrame({"case_id": ["x", "y"]})
        >>> run = ExperimentRun.from_frames(attempts, variants, cases)
        >>> ex = explore(run)
        >>> ex.heatmap = None
        >>> ex.refresh()
        >>> type(ex.heatmap).__name__, len(ex.heatmap.data)
        ('Figure', 1)
        """
        a = self.analysis
        keep = self.selected_variants
        vs = a.variants[a.variants["variant_id"].astype(str).isin(keep)].copy()
        cm = a.cases[a.cases["variant_id"].astype(str).isin(keep)]
        # A saved report's case matrix has no completed-trial counts: its variants' do.
        cm = cm.assign(**{EVALUATED_PASS_RATE: evaluated_pass_rate(cm, vs)})
        pk = self._pass_k[self._pass_k["variant_id"].astype(str).isin(keep)]
        objective, colour = METRICS[self.metric.value]
        self.status.value = f"{len(keep)} of {len(a.variants)} variants match the filters" + (
            "" if keep else ": choose other levels"
        )
        if keep:
            # The frontier among the variants shown, not among all of them.
            front = pareto_frontier(vs)
            vs["pareto_optimal"] = vs["variant_id"].astype(str).isin(front)
            if len(keep) < len(a.variants) and "p_frontier" in vs:
                # P(on the frontier) was computed among all variants: not for this subset.
                vs = vs.drop(columns="p_frontier")
        self.verdicts.value = self._verdicts_html(keep)
        # Before the early return below: with no variant left, not the last selection's rows.
        if self.paired is not None and self._paired is not None:
            shown = self._paired[self._paired["candidate_variant_id"].astype(str).isin(keep)]
            self.paired = (
                viz.paired_forest(shown, after_early_stop=viz._stopped(a))
                if len(shown)
                else go.Figure(layout={"title": {"text": "no candidate selected"}})
            )
            _show(self.views["paired"], self.paired)
        if not keep:
            empty = go.Figure(layout={"title": {"text": "no variant selected"}})
            self.heatmap = self.curves = self.frontier = empty
            for name in ("heatmap", "curves", "frontier"):
                _show(self.views[name], empty)
            self._labels = {}
            self._set_picks([], [])
            return
        baseline = a.info.get("baseline_variant_id")
        heat = viz.case_heatmap(
            cm,
            vs,
            color=colour,
            case_order=self.case_order.value,
            baseline=baseline if baseline in keep else None,
            max_cases=self.max_cases.value,
        )
        if len(heat.data):
            xs, ys = list(heat.data[0].x), list(heat.data[0].y)
            case_ids, variant_ids = _case_ids_of(heat, cm), _variant_ids_of(heat, vs)
            self._labels = {
                (x, y): (cid, vid)
                for x, cid in zip(xs, case_ids, strict=True)
                for y, vid in zip(ys, variant_ids, strict=True)
            }
            self._set_picks(
                list(zip(variant_ids, ys, strict=True)), list(zip(case_ids, xs, strict=True))
            )
        names = dict(zip(vs["variant_id"].astype(str), vs["variant_name"], strict=True))
        heat.update_layout(meta=self.clicks.key)  # how the click bridge finds it
        self.heatmap = heat
        self.curves = viz.pass_k_curves(
            pk, variant_names=names, no_completed_trial=viz.without_completed_trial(vs)
        )
        self.frontier = viz.pareto_chart(vs, x=self.cost_axis.value, y=objective)
        for name in ("heatmap", "curves", "frontier"):
            _show(self.views[name], getattr(self, name))

    def _set_picks(self, variants: list[tuple[str, str]], cases: list[tuple[str, str]]) -> None:
        """Offer these (id, axis label) pairs in the variant and case dropdowns."""
        self._picking = True
        try:
            for pick, options in ((self.pick_variant, variants), (self.pick_case, cases)):
                keep, values = pick.value, [v for _, v in options]
                pick.options = [("(choose)", None), *options]
                # Kept when still shown. Set either way: an index left None shows no option
                # selected in the browser, and the first arrow key press is lost on it.
                pick.index = values.index(keep) + 1 if keep in values else 0
        finally:
            self._picking = False

    def _on_pick(self, _change: Any = None) -> None:
        x, y = self.pick_case.value, self.pick_variant.value
        if not self._picking and x is not None and y is not None:
            self.show_attempts_at(x, y)

    def _on_bridge_click(self, change: Any) -> None:
        clicked = change["new"]
        if len(clicked) >= 2 and (clicked[0], clicked[1]) in self._labels:
            self.show_attempts_at(clicked[0], clicked[1])

    def _verdicts_html(self, keep: list[str]) -> str:
        from .early_stopping import (
            descriptive_title,
            sequence_leads,
            stopped_early,
            stopping_section_html,
        )
        from .paired.verdicts import HOW_TO_DECLARE
        from .report.html import (
            gate_section_html,
            judge_verdict_note_html,
            verdicts_table_html,
            warnings_section_html,
        )

        v = self.analysis.verdicts
        shown = v[v["candidate_variant_id"].astype(str).isin(keep)]
        # The notes on comparisons not made: only for the candidates shown.
        omitted = v.attrs.get("omitted") or []
        shown.attrs = {
            **v.attrs,
            "omitted": [o for o in omitted if str(o["candidate_variant_id"]) in keep],
        }
        declared = bool(v.attrs.get("declared", False))
        title = "Verdicts against the baseline" if declared else "Paired differences"
        hidden = _hidden_candidates(v, keep)
        if hidden and not len(shown) and not shown.attrs["omitted"]:
            # Not "No candidate could be compared": the filters hid them all.
            body = "" if declared else f"<p class='declare'>{html.escape(HOW_TO_DECLARE)}</p>"
        else:
            # With the page's line on the judges' noise under it.
            body = verdicts_table_html(shown) + judge_verdict_note_html(self.analysis)
        table = f"<h3>{title} (case-level)</h3>" + _hidden_note(hidden, declared) + body
        # In the page's order: the warnings first (too few trials makes every interval
        # exploratory); in a run the rule watched (stopped early or not) the stopping
        # decision leads and the fixed-sample verdicts are descriptive; a failed
        # non-inferiority gate comes before the table (after the stopping decision), whose
        # "no detectable difference" rows would read as reassurance above it, and a passed
        # one after.
        stopping = stopping_section_html(self.analysis)
        gate, gate_passed = gate_section_html(self.analysis)
        lead, rule = "", stopping
        if sequence_leads(self.analysis):
            heading = f"<h3>{title} (case-level)</h3>"
            described = descriptive_title(title + " (case-level)", stopped_early(self.analysis))
            table = table.replace(heading, f"<h3>{html.escape(described)}</h3>", 1)
            lead, rule = stopping, ""
        table = table + gate if gate_passed else gate + table
        return warnings_section_html(self.analysis) + lead + table + rule

    def show_attempts_at(self, x: str, y: str) -> None:
        """Show the attempts of the heatmap cell with these axis labels (``x``: the case,
        ``y``: the variant) in :attr:`details`, as a click on that cell does.

        Examples
        --------
        >>> import pandas as pd
        >>> from agenticlens_frames import ExperimentRun
        >>> attempts = pd.DataFrame({"variant_id": ["a"] * 4 + ["b"] * 4,
        ...                          "trial": [1, 1, 2, 2] * 2, "case_id": ["x", "y"] * 4,
        ...                          "passed": [True, False] + [True] * 6})
        >>> variants = pd.DataFrame({"variant_id": ["a", "b"], "factor_model": ["small", "large"]})
        >>> cases = pd.DataFrame({"case_id": ["x", "y"]})
        >>> run = ExperimentRun.from_frames(attempts, variants, cases)
        >>> ex = explore(run)
        >>> ex.show_attempts_at("y", "a")
        >>> ex.details.value.count("<b>trial"), "failed" in ex.details.value
        (2, True)
        >>> ex.show_attempts_at("z", "a")
        Traceback (most recent call last):
        agenticlens_frames.errors.InputError: no heatmap cell at case 'z', variant 'a'
        """
        hit = self._labels.get((x, y))
        if hit is None:
            raise InputError(f"no heatmap cell at case {x!r}, variant {y!r}")
        case_id, variant_id = hit
        self._picking = True  # a click moves the dropdowns to its cell, without a redraw
        try:
            self.pick_variant.value, self.pick_case.value = y, x
        finally:
            self._picking = False
        self.details.value = _attempts_html(self.analysis.run, variant_id, case_id)


def _hidden_candidates(verdicts: pd.DataFrame, keep: list[str]) -> list[str]:
    """Candidates with a verdict row or a not-compared note that the filters leave out.

    Examples
    --------
    >>> v = pd.DataFrame({"candidate_variant_id": ["b", "c", "b"]})
    >>> v.attrs["omitted"] = [{"candidate_variant_id": "d"}]
    >>> _hidden_candidates(v, ["a", "c"])
    ['b', 'd']
    """
    ids = dict.fromkeys(verdicts["candidate_variant_id"].astype(str))
    ids.update(
        dict.fromkeys(str(o["candidate_variant_id"]) for o in verdicts.attrs.get("omitted") or [])
    )
    return [c for c in ids if c not in keep]


def _hidden_note(hidden: list[str], declared: bool) -> str:
    """Says which candidates' verdicts the filters hide, so that a candidate missing from
    the table is not read as one without a verdict (nor the family as smaller)."""
    if not hidden:
        return ""
    family = "; their comparisons stay in the family the correction is over" if declared else ""
    return (
        f"<p class='note'>Hidden by the factor filters: {html.escape(', '.join(hidden))}"
        f"{family}.</p>"
    )


def _case_ids_of(fig: go.Figure, cases: pd.DataFrame) -> list[str]:
    # Axis labels are escaped ids; map them back through the frame's own ids.
    by_label = {viz.esc(c): c for c in cases["case_id"].astype(str).unique()}
    return [by_label[x] for x in fig.data[0].x]


def _variant_ids_of(fig: go.Figure, variants: pd.DataFrame) -> list[str]:
    by_label = {viz.esc(v): v for v in variants["variant_id"].astype(str)}
    return [by_label[y] for y in fig.data[0].y]


def explore(
    experiment: ExperimentRun | ExperimentAnalysis | Any,
    *,
    max_cases: int = 50,
    **statistics: Any,
) -> Explorer:
    """An interactive explorer of one experiment for Jupyter.

    Parameters
    ----------
    experiment
        A run, the result of :func:`~agenticlens_frames.api.run` or of the live runner, or an
        analysis (fresh, or loaded from a saved report: then clicking a cell says that
        attempt details are not available).
    max_cases
        Cases shown in the heatmap at first (the slider changes it).
    **statistics
        Passed through :func:`~agenticlens_frames.coerce.as_analysis`: options of
        :func:`~agenticlens_frames.analyze` and paired-comparison settings
        (``correction="holm"``, ``alpha`` ...).

    Returns
    -------
    Explorer
        An ``ipywidgets.VBox``; display it as the last expression of a cell.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> ex = explore(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"),
    ...              correction="holm")
    >>> ex.factor_filters["prompt"].value = ("v2",)
    >>> ex.selected_variants
    ['prompt-v2', 'large-v2']
    >>> ex.paired is not None
    True
    """
    from .coerce import as_analysis, check_options

    check_options(statistics, "explore", own=("max_cases",))
    return Explorer(as_analysis(experiment, **statistics), max_cases=max_cases)


def _beyond_views(analysis: ExperimentAnalysis) -> list[widgets.Output]:
    """The factor-effects forest and interaction plot (all variants: the estimates need
    the whole design, so the factor filters do not apply to them), drawn once."""
    fe = getattr(analysis, "factor_effects", None)
    if fe is None or fe.empty or not fe["estimable"].any():
        return []
    figures = [viz.factor_effects_forest(fe)]
    interaction = viz.factor_interaction_chart(analysis.variants, fe)
    if interaction is not None:
        figures.append(interaction)
    views = []
    for fig in figures:
        view = widgets.Output()
        _show(view, fig)
        views.append(view)
    return views
