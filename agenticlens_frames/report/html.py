"""The offline HTML report: one self-contained page rendered from the result frames.

Shows what AgenticLens 0.10's page shows (spec §10.4: variant table, pass@k / pass^k,
baseline deltas, the variant × case heatmap, factor levels, warnings, execution order)
plus the interactive figures of :mod:`agenticlens_frames.viz`.

Offline and safe by construction:

* plotly.js is inlined once, as plotly.py ships it, in a ``<script type="text/plain">``
  block that ``assets/loader.js`` runs as a ``blob:`` script (so chromium compiles it off
  the main thread while the page is parsed); the figures travel as JSON in a
  non-executable ``<script type="application/json">`` block (with ``<``, ``>`` and ``&``
  written as ``\\u`` escapes, so no string can close the block);
* a Content-Security-Policy allows exactly three scripts, by their SHA-256 hashes (plotly.js,
  ``assets/loader.js`` and the page's own ``assets/report.js``), and ``blob:`` scripts,
  which only a running script can create: an injected ``<script>`` or ``onerror=``
  handler would not run even if some string escaped escaping; ``default-src 'none'``
  forbids every network request;
* every user string is HTML-escaped in the page and in plotly labels, and attempt
  details are inserted with ``textContent``.

Drawn as read: the page draws the figures in the window on opening first, then the others
one per idle moment, and any figure scrolled into view (or printed) before its turn at once
(report.js ``ensure``); the attempt details and the case table's rows are parsed only when
a cell is clicked or the table opened.

The heatmap is coloured by the pass rate over the evaluated attempts (a case can score high
and never pass), AgenticLens's mean score a selector away; the hover gives both.

Wide suites: the heatmap shows one page of cases at a time (50 by default), the cases that
need attention first (any drop below the baseline, then flaky, then hardest); the page
says so, and offers other orders, factor filters, a case search and paging. A bar chart of
how many cases pass 0..T of T attempts, and a table of every case (cases as rows, so it
grows downwards), summarise the whole suite.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from functools import cache
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .. import viz
from .._deprecate import renamed_keywords
from .._files import write_atomic
from .._repr import regressed_labels
from .._values import (
    NO_EVALUATED_ATTEMPT,
    count_noun,
    frontier_share,
    is_missing,
    missing_interval_reason,
)
from ..analysis import (
    ExperimentAnalysis,
    failed_trials,
    headline_warnings,
    judge_cost_lines,
    judge_noise_notes,
    judge_verdict_note,
    require_analysis,
    target_failure_warnings,
)
from ..early_stopping import (
    descriptive_note,
    descriptive_title,
    stopped_early,
    stopping_section_html,
)
from ..errors import check_path
from ..frontier import frontier_columns
from ..per_case import EVALUATED_PASS_RATE, evaluated_attempts, evaluated_pass_rate
from .beyond_html import beyond_figures, beyond_sections, frontier_table
from .provenance import footer_html

__all__ = ["render_html", "verdicts_table_html", "write_html_report"]

#: Cases per heatmap page; the budget (bytes of JSON) of attempt-level details in the page,
#: filled case by case in needs-attention order, DETAIL_CHUNK cases read at a time.
PAGE_SIZE = 50
#: The heatmap's page sizes on offer (and "all", for a suite of up to ALL_CASES_AT_ONCE).
PAGE_SIZES = (25, 50, 100, 200)
#: The most cases the heatmap offers to draw at once ("all" per page): plotly's time grows
#: faster than the cells (1000 cases x 4 variants took 5 s in headless chromium on a busy
#: two-core machine, 5000 took 97 s, the page frozen meanwhile); a wider suite pages, and
#: its table holds every case.
ALL_CASES_AT_ONCE = 1000
DETAIL_BYTES = 1_000_000
DETAIL_CHUNK = 250
OUTPUT_CHARS = 1000
EXPLANATION_CHARS = 300
#: The heatmap's colourings, the first the default: key → its selector label and colour
#: bar title (report.js drawHeat).
HEAT_COLOURS = {
    "pass_rate": {
        "label": "pass rate (evaluated attempts)",
        "title": viz.COLOUR_LABELS[EVALUATED_PASS_RATE],
    },
    "mean_score": {"label": "mean score (AgenticLens)", "title": viz.COLOUR_LABELS["mean_score"]},
}


# --------------------------------------------------------------------------- helpers


@cache
def _asset(name: str) -> str:
    return resources.files("agenticlens_frames.report").joinpath("assets", name).read_text("utf-8")


@cache
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _pct(value: Any, digits: int = 1) -> str:
    return "n/a" if is_missing(value) else f"{value:.{digits}%}"


def _num(value: Any, digits: int = 3, prefix: str = "", suffix: str = "") -> str:
    """``value`` to ``digits`` places, with its unit; "n/a" alone when missing (not
    "n/a ms")."""
    return "n/a" if is_missing(value) else f"{prefix}{value:.{digits}f}{suffix}"


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _has_failed_trials(a: ExperimentAnalysis) -> bool:
    """Whether a trial failed anywhere: the pass@k note and the heatmap note both say how
    such a trial is counted, and must agree on when they say it."""
    return bool((a.variants["attempted_trials"] > a.variants["completed_trials"]).any())


def _json_for_script(payload: Any) -> str:
    """JSON that cannot end its ``<script>`` block nor open a comment in it."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _figure_json(fig: go.Figure) -> dict[str, Any]:
    # plotly's encoder writes NaN as null and numpy arrays as typed-array specs. The page
    # draws with its own theme (report.js themed() sets template null): plotly's default
    # template, ~8 kB per figure, would only be parsed.
    out = json.loads(fig.to_json(validate=False))
    out.get("layout", {}).pop("template", None)
    return out


def _plain(values: Any, digits: int | None = None) -> Any:
    """Nested lists with NaN → None (for JSON), floats optionally rounded."""
    if isinstance(values, (list, tuple)) or hasattr(values, "tolist"):
        items = values.tolist() if hasattr(values, "tolist") else values
        return [_plain(v, digits) for v in items]
    if isinstance(values, float):
        if math.isnan(values):
            return None
        return round(values, digits) if digits is not None else values
    return values


# --------------------------------------------------------------------------- tables


def _variant_notes(a: ExperimentAnalysis, case_level: bool) -> str:
    """What each number of the variant table is, said where it is shown: the console's and
    the summary's notes (:func:`~agenticlens_frames.report.console.variant_notes`), each
    one's label in bold."""
    from .console import variant_notes

    paragraphs = []
    for note in variant_notes(a, case_level):
        label, _, text = note.partition(": ")
        paragraphs.append(f"<p class='note'><b>{_e(label)}</b>: {_e(text)}</p>")
    return "".join(paragraphs)


def _significance_at(a: ExperimentAnalysis) -> str:
    """Where the compatible section sends the reader for significance: the verdicts at the
    top, or — without a declared correction, when there are none — nowhere yet."""
    if a.verdicts.attrs.get("declared", False):
        return "read the verdicts at the top"
    return "no verdict is given without a declared correction (see the note at the top)"


def _pass_rate_cell(v: dict[str, Any], headline: dict[str, dict[str, Any]]) -> str:
    """The variant table's pass rate: the case-level estimate and interval; AgenticLens's
    pooled case pass rate (†) only when the report has no case-level numbers at all."""
    h = headline.get(str(v["variant_id"]))
    if h is None and headline:
        # Others have a case-level row, this one none: not the pooled number under a
        # case-level header (the compatible section below still shows that one).
        return _e(NO_EVALUATED_ATTEMPT)
    rate, low, high, mark = (
        (v["case_pass_rate"], v["case_pass_rate_ci_low"], v["case_pass_rate_ci_high"], " †")
        if h is None
        else (h["estimate"], h["ci_low"], h["ci_high"], "")
    )
    if not is_missing(low):
        interval = f"<small>{_pct(low)}–{_pct(high)}</small>"
    elif h is not None:
        # Why there is none (one cluster), in the words of the JSON's note.
        interval = f"<small>({_e(missing_interval_reason(h))})</small>"
    else:
        interval = ""
    return f"{_pct(rate)}{mark} {interval}"


def _frontier_badge(v: dict[str, Any]) -> str:
    """The variant's Pareto tag: on the frontier of the point estimates, with the share of
    bootstrap resamples that put it there (the variant notes say what it is); off it, only
    the share, when some resample did.

    Examples
    --------
    >>> _frontier_badge({"pareto_optimal": True, "p_frontier": 0.5855})
    '<span class="tag pareto" title="share of resamples on the frontier">pareto · 59%</span>'
    >>> _frontier_badge({"pareto_optimal": False, "p_frontier": 0.001})[-32:]
    'off the frontier · &lt;1%</span>'
    >>> _frontier_badge({"pareto_optimal": False, "p_frontier": 0.0})
    ''
    """
    share = frontier_share(v.get("p_frontier"))
    share = None if share is None else _e(share)  # "<1%" is text, not markup
    title = ' title="share of resamples on the frontier"' if share else ""
    if v["pareto_optimal"]:
        return f'<span class="tag pareto"{title}>pareto{" · " + share if share else ""}</span>'
    if share in (None, "0%"):
        return ""
    return f'<span class="tag"{title}>off the frontier · {share}</span>'


def _variant_table(a: ExperimentAnalysis) -> str:
    from ..paired.verdicts import headline_pass_rates

    headline = {
        str(r["variant_id"]): r
        for r in headline_pass_rates(a.paired_frames.get("case_level_summary")).to_dict("records")
    }
    rows = []
    for v in a.variants.to_dict("records"):
        factors = ", ".join(f"{_e(k)}={_e(val)}" for k, val in v["factors"].items())
        badges = ('<span class="tag base">baseline</span>' if v["is_baseline"] else "") + (
            _frontier_badge(v)
        )
        rate_cell = _pass_rate_cell(v, headline)
        rows.append(
            f"<tr data-variant='{_e(v['variant_id'])}'><td><strong>{_e(v['variant_name'])}"
            f"</strong> {badges}<br><small>"
            f"{_e(v['variant_id'])}{' · ' + factors if factors else ''}</small></td>"
            f"<td>{rate_cell}</td>"
            f"<td>{_num(v['average_score_mean'])}</td>"
            f"<td>{_num(v['average_latency_ms_mean'], 1, suffix=' ms')}</td>"
            f"<td>{_num(v['total_cost_usd_mean'], 4, '$')}<br><small>{int(v['priced_trials'])}/"
            f"{int(v['completed_trials'])} trials priced</small></td>"
            f"<td>{_pct(v['trial_success_rate'])}<br><small>of trials passed every case · "
            f"{int(v['completed_trials'])}/{int(v['attempted_trials'])} completed</small></td>"
            + (
                f"<td>{_pct(v['consistency_rate'])}<br><small>{int(v['n_flaky_cases'])} flaky"
                "</small></td></tr>"
                if v["completed_trials"]
                else "<td>n/a<br><small>no trial completed</small></td></tr>"
            )
        )
    level = f"{a.confidence_level:.0%}"
    return (
        "<section id='variants'><h2>Quality, cost, latency, and reliability</h2>"
        "<div class='scroll'><table>"
        f"<tr><th>Variant</th><th>Pass rate<br><small>case-level {level} CI</small></th>"
        "<th>Mean score</th><th>Mean latency</th>"
        "<th>Mean cost / trial</th><th>Trial success</th><th>Consistency</th></tr>"
        + "".join(rows)
        + "</table></div>"
        + _variant_notes(a, bool(headline))
        + "</section>"
    )


def _pass_k_section(a: ExperimentAnalysis) -> str:
    head = "".join(f"<th>pass@{k}</th><th>pass^{k}</th>" for k in a.pass_k)
    rows = "".join(
        f"<tr data-variant='{_e(v['variant_id'])}'><td>{_e(v['variant_name'])}</td>"
        + "".join(
            f"<td>{_pct(v[f'pass_at_{k}'])}</td><td>{_pct(v[f'pass_hat_{k}'])}</td>"
            for k in a.pass_k
        )
        + "</tr>"
        for v in a.variants.to_dict("records")
    )
    return (
        "<section id='pass-k'><h2>pass@k and pass^k</h2><div class='scroll'><table>"
        f"<tr><th>Variant</th>{head}</tr>{rows}</table></div>"
        "<div id='fig-pass_k' class='fig'></div>"
        "<p class='note'>pass@k: chance that at least one of k attempts passes; pass^k: that "
        "all k pass (unbiased estimators, mean over cases)."
        + (
            " A failed trial counts as failed attempts here (as in AgenticLens), so pass@1 is "
            "the AgenticLens case pass rate, not the pass rate of the table above."
            if _has_failed_trials(a)
            else ""
        )
        + "</p></section>"
    )


def _comparisons(a: ExperimentAnalysis) -> str:
    """AgenticLens's numbers, unchanged, in a section that says what they assume.

    They pool every attempt as independent (Wilson interval, z test), so nothing here is
    styled or worded as significant: the verdicts section is the significance statement.
    """
    from .console import compat_cells

    by_candidate = {str(c["candidate_variant_id"]): c for c in a.comparisons.to_dict("records")}
    rows = []
    # The console's and the summary's cells: a pass-rate change in percentage points (a
    # "+15.7%" read as relative), the latency and cost changes with their units.
    for v, cells in zip(a.variants.to_dict("records"), compat_cells(a), strict=True):
        rate = (
            f"{_pct(v['case_pass_rate'])}<br><small>{_pct(v['case_pass_rate_ci_low'])}–"
            f"{_pct(v['case_pass_rate_ci_high'])}</small>"
        )
        c = by_candidate.get(str(v["variant_id"]))
        if c is None:
            rows.append(
                f"<tr><td><strong>{_e(v['variant_id'])}</strong><br><small>"
                f"{'baseline' if v['is_baseline'] else 'not compared'}</small></td>"
                f"<td>{rate}</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td></tr>"
            )
            continue
        changed = ", ".join(
            f"{_e(n)}: {_e(val[0])} → {_e(val[1])}" for n, val in c["changed_factors"].items()
        )
        flagged = regressed_labels(c)
        warnings = "".join(f"<li>{_e(w)}</li>" for w in c["warnings"])
        _, delta, p, score, latency, cost, _ = (_e(cell) for cell in cells)
        rows.append(
            f"<tr data-variant='{_e(c['candidate_variant_id'])}'><td><strong>"
            f"{_e(c['candidate_variant_id'])}</strong><br><small>"
            f"{changed or 'no factor changes recorded'}</small></td><td>{rate}</td>"
            f"<td>{delta}<br><small>z-test p = {p}</small></td>"
            f"<td>{score}</td><td>{latency}</td><td>{cost}</td>"
            f"<td>{_e(', '.join(flagged)) or 'none'}"
            f"<br><small>{count_noun(len(c['regressed_case_ids']), 'case')} regressed · "
            f"{len(c['improved_case_ids'])} improved</small>"
            f"{f'<ul>{warnings}</ul>' if warnings else ''}</td></tr>"
        )
    figure = "<div id='fig-deltas' class='fig'></div>" if len(a.comparisons) else ""
    return (
        "<section id='compat'><h2>AgenticLens-compatible numbers (attempts treated as "
        f"independent) · baseline {_e(a.info['baseline_variant_id'])}</h2>"
        "<p class='note'>The numbers AgenticLens 0.10 reports, unchanged (they are the "
        "JSON and CSV reports' numbers). The case pass rate counts a failed trial as failing "
        "every case; its Wilson interval and the z-test pool every attempt as if independent, "
        "but attempts on one case are correlated, so these intervals are too narrow and the "
        f"p-values too small. They are not a significance verdict: {_significance_at(a)}. "
        "Flags follow AgenticLens's rule (a relative change beyond the regression "
        f"threshold, {a.regression_threshold:.0%}, uncertainty ignored).</p>"
        "<div class='scroll'><table><tr><th>Variant</th>"
        "<th>Case pass rate<br><small>pooled Wilson interval</small></th>"
        "<th>Case pass rate Δ</th><th>Score Δ</th><th>Latency Δ</th>"
        "<th>Cost Δ<br><small>per trial</small></th>"
        f"<th>Flagged by AgenticLens's rule</th></tr>{''.join(rows)}</table></div>"
        f"{figure}</section>"
    )


def _cases_table(a: ExperimentAnalysis, order: list[str]) -> tuple[str, str]:
    """Every case as a row, every variant as a column (§10.4's heatmap, transposed so a
    wide suite grows downwards).

    Cells are kept small for wide suites: the colour is a class (``h0`` … ``h130``, the hue
    of the pass rate over the evaluated attempts, the heatmap's default colour, in
    report.css) and a column follows the variant filter through its header's
    ``data-variant`` (report.js hides the column's cells). The rows are in the page
    as markup, escaped like the rest, and enter the document when the table is opened.
    Returns the table and the block of its rows (placed after the page's markup).
    """
    cm = a.cases
    variant_ids = [str(v) for v in a.variants["variant_id"]]
    columns = ["variant_id", "case_id", "passes", "attempts", "mean_score", "consistent"]
    by_key = {
        (str(r["variant_id"]), str(r["case_id"])): r
        for r in cm[columns]
        .assign(
            variant_id=cm["variant_id"].astype(str),
            case_id=cm["case_id"].astype(str),
            rate=evaluated_pass_rate(cm, a.variants),
        )
        .to_dict("records")
    }
    names = dict(zip(cm["case_id"].astype(str), cm["case_name"].astype(str), strict=False))
    rows = []
    for cid in order:
        cells = []
        for vid in variant_ids:
            r = by_key.get((vid, cid))
            if r is None:
                cells.append("<td class='c none'>–</td>")
                continue
            label = f"{int(r['passes'])}/{int(r['attempts'])}"
            cls = "c" if r["consistent"] else "c flaky"
            score, rate = r["mean_score"], r["rate"]
            text = label if is_missing(score) else f"{label} · {score:.2f}"
            hue = "none" if is_missing(rate) else f"h{round(rate * 130)}"
            cells.append(f"<td class='{cls} {hue}'>{text}</td>")
        name = _e(names.get(cid, ""))
        rows.append(
            f"<tr data-case='{_e(cid)}'><th title='{name or _e(cid)}'>{_e(cid)}<br><small>"
            f"{name}</small></th>"
            f"{''.join(cells)}</tr>"
        )
    head = "".join(f"<th data-variant='{_e(v)}'>{_e(v)}</th>" for v in variant_ids)
    is_open = " open" if len(order) <= 60 else ""
    # The rows wait as raw text in a non-executable script block until the table is
    # opened (report.js fillCaseTable): the parser only scans it for its end tag, where
    # thousands of rows in a <template> were parsed into nodes before anything was drawn.
    # Every user string above is escaped, so no '<' can come from one and the block can
    # hold no '</script' or '<!--' but the tags written here. The block goes after the
    # page's markup, so a wide suite's rows do not hold up the text above them.
    return (
        f"<details id='case-table'{is_open}><summary>All {len(order)} cases as a table "
        "(needs-attention order; cell: passes/attempts · mean score, coloured by the pass "
        "rate over the evaluated attempts, grey without one; dashed: flaky; click a cell, or "
        "press Enter on it, for its attempts)</summary>"
        f"<div class='scroll'><table class='cases'><thead><tr><th>Case</th>{head}</tr></thead>"
        "<tbody></tbody></table></div></details>",
        f"<script type='text/html' id='case-rows'>{''.join(rows)}</script>",
    )


def _factor_levels(a: ExperimentAnalysis) -> str:
    fl = a.factor_levels
    if fl.empty:
        return ""
    rows = "".join(
        f"<tr data-factor-row='{_e(f['factor'])}' data-level='{_e(f['value'])}'>"
        f"<td>{_e(f['factor'])}</td><td>{_e(f['value'])}</td>"
        f"<td>{_e(', '.join(f['variant_ids']))}</td><td>{_pct(f['mean_pass_rate'])}</td>"
        f"<td>{_num(f['mean_average_score'])}</td>"
        f"<td>{_num(f['mean_latency_ms'], 1, suffix=' ms')}</td>"
        f"<td>{_num(f['mean_cost_usd'], 4, '$')}</td><td>{_pct(f['mean_trial_success_rate'])}"
        "</td></tr>"
        for f in fl.to_dict("records")
    )
    return (
        "<section id='factors'><h2>Factor levels</h2><p class='note'>Unweighted means over the "
        "variants at each level; confounded unless the design is factorial. Pass rate: each "
        "variant's mean over its completed trials (the pass rate of the variant table, not "
        "the AgenticLens case pass rate, which counts a failed trial as failing every case); "
        "trial success: share of trials in which every case passed.</p>"
        "<div class='scroll'><table><tr><th>Factor</th><th>Value</th><th>Variants</th>"
        "<th>Pass rate</th><th>Score</th><th>Latency</th><th>Cost</th><th>Trial success</th></tr>"
        f"{rows}</table></div><div id='fig-factors' class='fig'></div></section>"
    )


def _failed_trials(a: ExperimentAnalysis) -> str:
    failed = failed_trials(a)
    if failed.empty:
        return ""
    items = "".join(
        f"<li>{_e(r['variant_id'])} trial {r['trial']}: "
        f"{_e(r['error_message'] if r['error_message'] is not None else 'no message')}</li>"
        for r in failed.to_dict("records")
    )
    return (
        f"<section class='warn' id='failed-trials'><h2>Failed trials</h2><ul>{items}</ul></section>"
    )


# --------------------------------------------------------------------------- heatmap data


def _factor_names(a: ExperimentAnalysis) -> list[str]:
    names: dict[str, None] = {}
    for f in a.variants["factors"]:
        names.update(dict.fromkeys(f or {}))
    return list(names)


class _Strings:
    """A string table: each distinct string is sent once and referred to by its index
    (outputs, tool lists and check explanations repeat across trials and variants)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.bytes = 0

    def __call__(self, text: str) -> int:
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.index)
            self.bytes += len(text.encode("utf-8")) + 4  # quotes, comma, some escapes
        return found

    def table(self) -> list[str]:
        return list(self.index)


def _attempt_details(
    a: ExperimentAnalysis, rows: list[str], cols: list[str], wanted: list[str]
) -> tuple[dict[str, Any], int] | None:
    """Compact attempt details of the first cases of ``wanted`` that fit in DETAIL_BYTES.

    Returns ``{"strings": [...], "cells": {"row:col": [attempt, ...]}}`` (each attempt a
    list of string-table indices, see report.js ``attemptsOf``) and how many cases it
    covers, or None for a report without attempts.
    """
    if a.run is None:
        return None
    row_of = {v: i for i, v in enumerate(rows)}
    col_of = {c: j for j, c in enumerate(cols)}
    strings = _Strings()
    cells: dict[str, list[list[Any]]] = {}
    size, covered = 0, 0
    columns = [
        "variant_id", "trial", "case_id", "status", "passed", "score", "latency_ms",
        "cost_usd", "tools", "turns", "error", "output",
    ]  # fmt: skip
    # A chunk of cases at a time: the budget usually ends long before a wide suite does.
    for start in range(0, len(wanted), DETAIL_CHUNK):
        chunk = wanted[start : start + DETAIL_CHUNK]
        keep = set(chunk)
        att = a.run.attempts
        att = att[att["case_id"].astype(str).isin(keep)]
        chk = a.run.checks
        chk = chk[chk["case_id"].astype(str).isin(keep)]
        checks: dict[tuple[str, int, str], list[tuple[Any, ...]]] = {}
        for k in chk[
            ["variant_id", "trial", "case_id", "name", "passed", "value", "explanation"]
        ].itertuples(index=False):
            checks.setdefault((str(k.variant_id), int(k.trial), str(k.case_id)), []).append(
                tuple(k)[3:]
            )
        by_case: dict[str, list[tuple[Any, ...]]] = {}
        for r in att[columns].itertuples(index=False):
            by_case.setdefault(str(r.case_id), []).append(r)
        for cid in chunk:
            before = (dict(strings.index), strings.bytes)
            added: dict[str, list[list[Any]]] = {}
            case_size = 0
            for r in by_case.get(cid, []):
                vid = str(r.variant_id)
                if vid not in row_of or cid not in col_of:
                    continue
                output = "" if is_missing(r.output) else str(r.output)
                if len(output) > OUTPUT_CHARS:
                    more = len(output) - OUTPUT_CHARS
                    output = output[:OUTPUT_CHARS] + f"… ({more} more characters)"
                listed = [
                    [
                        strings(str(name)),
                        int(bool(passed)),
                        strings("n/a" if is_missing(value) else f"{value:.3g}"),
                        strings(
                            "" if is_missing(explanation) else str(explanation)[:EXPLANATION_CHARS]
                        ),
                    ]
                    for name, passed, value, explanation in checks.get((vid, int(r.trial), cid), [])
                ]
                added.setdefault(f"{row_of[vid]}:{col_of[cid]}", []).append(
                    [
                        int(r.trial),
                        strings(str(r.status)),
                        int(bool(r.passed)),
                        strings(_num(r.score)),
                        strings(
                            "latency n/a" if is_missing(r.latency_ms) else f"{r.latency_ms:.0f} ms"
                        ),
                        strings("cost n/a" if is_missing(r.cost_usd) else f"${r.cost_usd:.4f}"),
                        strings("" if is_missing(r.tools) else str(r.tools)),
                        strings("n/a" if is_missing(r.turns) else str(int(r.turns))),
                        strings("" if is_missing(r.error) else str(r.error)),
                        strings(output),
                        listed,
                    ]
                )
                case_size += 30 + 16 * len(listed)
            if size + case_size + strings.bytes > DETAIL_BYTES and covered:
                strings.index, strings.bytes = before  # this case does not fit: stop here
                return {"strings": strings.table(), "cells": cells}, covered
            size += case_size
            cells.update(added)
            covered += 1
    return {"strings": strings.table(), "cells": cells}, covered


def _hover_stats(
    a: ExperimentAnalysis,
    rows: list[str],
    cols: list[str],
    evaluated: np.ndarray,
    rate: np.ndarray,
    score: np.ndarray,
) -> list[list[Any]]:
    """Per cell the formatted numbers of its hover ("evaluated|rate|score|latency", None
    without data; the passes and attempts are the cell's label); the page builds the hover
    text of the cells it shows from them (viz's wording, ``viz._passes_line``)."""
    cm = a.cases
    attempts = viz._grid(cm, "attempts", rows, cols)
    latency = (
        viz._grid(cm, "mean_latency_ms", rows, cols)
        if "mean_latency_ms" in cm
        else np.full((len(rows), len(cols)), np.nan)
    )
    return [
        [
            None
            if math.isnan(attempts[i, j])
            else f"{viz._fmt(evaluated[i, j], '.0f')}|{viz._fmt(rate[i, j], '.0%')}|"
            f"{viz._fmt(score[i, j], '.3f')}|{viz._fmt(latency[i, j], ',.0f', ' ms')}"
            for j in range(len(cols))
        ]
        for i in range(len(rows))
    ]


def _heat_payload(a: ExperimentAnalysis) -> tuple[dict[str, Any], list[str]]:
    vs = a.variants
    # Coloured by the pass rate over the evaluated attempts (a case can score 0.9 and never
    # pass); AgenticLens's mean score is the page's other colouring (report.js drawHeat).
    cm = a.cases.assign(_evaluated=evaluated_attempts(a.cases, vs))
    base = a.info.get("baseline_variant_id")
    full = viz.case_heatmap(
        cm,
        vs,
        color=EVALUATED_PASS_RATE,
        case_order="suite",
        outline_flaky=False,
        baseline=base,
    )
    trace = full.data[0]
    present = set(viz._variant_ids(cm))
    rows = [str(v) for v in vs["variant_id"] if str(v) in present]
    cols = viz.order_cases(cm, "suite")
    col_of = {c: j for j, c in enumerate(cols)}
    row_of = {v: i for i, v in enumerate(rows)}
    orders = {
        key: [col_of[c] for c in viz.order_cases(cm, key, baseline=base)] for key in viz.CASE_ORDERS
    }
    variant_orders = {
        "manifest": list(range(len(rows))),
        "pass_rate": [row_of[v] for v in viz.order_variants(vs, "pass_rate") if v in row_of],
        "regression": [
            row_of[v]
            for v in viz.order_variants(vs, "regression", cases=cm, baseline=base)
            if v in row_of
        ],
    }
    factors: dict[str, list[str]] = {}
    spec = dict(zip(vs["variant_id"].astype(str), vs["factors"], strict=True))
    for name in _factor_names(a):
        variant_orders[f"factor:{name}"] = [
            row_of[v] for v in viz.order_variants(vs, f"factor:{name}") if v in row_of
        ]
        factors[name] = [str((spec[v] or {}).get(name, "(unset)")) for v in rows]
    flaky = (
        cm.assign(_f=(~cm["consistent"].astype(bool)).astype(float))
        .pipe(lambda f: viz._grid(f, "_f", rows, cols))
        .astype(int)
        .tolist()
    )
    names = dict(zip(cm["case_id"].astype(str), cm["case_name"].astype(str), strict=False))
    vnames = dict(zip(vs["variant_id"].astype(str), vs["variant_name"].astype(str), strict=False))
    attention = viz.order_cases(cm, "attention", baseline=base)
    found = _attempt_details(a, rows, cols, attention)
    details, covered = (None, 0) if found is None else found
    if details is None:
        note = (
            "Attempt-level details (outputs, checks) are not in this report: it was rendered "
            "from a saved JSON report. Re-run the experiment, or use explore() in a notebook."
        )
    elif covered < len(cols):
        note = (
            f"Attempt details are embedded for the first {covered} of {len(cols)} cases in "
            f"needs-attention order only (to keep the page under "
            f"{DETAIL_BYTES // 1_000_000} MB of them); use explore() in a notebook for the "
            "others."
        )
    else:
        note = "No attempts recorded for this cell."
    style = trace.to_plotly_json()
    for key in ("z", "x", "y", "text", "hovertext"):
        style.pop(key, None)
    score = viz._grid(cm, "mean_score", rows, cols) if "mean_score" in cm else trace.z * np.nan
    evaluated = viz._grid(cm, "_evaluated", rows, cols)
    layout = full.layout.to_plotly_json()
    layout.pop("shapes", None)
    layout.pop("template", None)
    # One tick per case shown: the page sets the ticks of the cases on screen (with every
    # case's tick in the layout plotly measures thousands of labels for 50 cells).
    xaxis = layout.get("xaxis", {})
    ticks = list(xaxis.pop("ticktext", trace.x))
    xaxis.pop("tickvals", None)
    payload = {
        "trace": json.loads(json.dumps(style, default=_plain)),
        "layout": layout,
        "x": list(trace.x),
        "y": list(trace.y),
        "ids": cols,
        "names": [names.get(c, c) for c in cols],
        "ticks": ticks,
        "variants": rows,
        "variantNames": [vnames.get(v, v) for v in rows],
        "factors": factors,
        # Factor names as figures label them (escaped), for the page's filters.
        "factorLabels": {viz.esc(name): name for name in factors},
        # Three decimals: finer than a colour step, and the mean score's in the hover.
        "z": {"pass_rate": _plain(trace.z, 3), "mean_score": _plain(score, 3)},
        "colours": HEAT_COLOURS,
        "defaultColour": next(iter(HEAT_COLOURS)),
        "text": _plain(trace.text),
        "stats": _hover_stats(a, rows, cols, evaluated, trace.z, score),
        "flaky": flaky,
        "orders": orders,
        "orderLabels": viz.CASE_ORDERS,
        "defaultOrder": "attention",
        "variantOrders": variant_orders,
        "pageSize": PAGE_SIZE,
        "shapeLine": {"dash": "dot", "width": 2, "color": "rgba(255,255,255,0.9)"},
        "details": details,
        "detailsNote": note,
    }
    return payload, attention


def _heatmap_section(
    a: ExperimentAnalysis, heat: dict[str, Any], attention: list[str]
) -> tuple[str, str]:
    """The section, and the case table's rows block (see :func:`_cases_table`)."""
    n_cases = len(heat["ids"])
    order_opts = "".join(
        f"<option value='{key}'{' selected' if key == 'attention' else ''}>{_e(label)}</option>"
        for key, label in viz.CASE_ORDERS.items()
    )
    vorder_opts = "<option value='manifest'>manifest order</option>"
    vorder_opts += "<option value='pass_rate'>case pass rate (best first)</option>"
    vorder_opts += "<option value='regression'>most regressed cases first</option>"
    vorder_opts += "".join(
        f"<option value='factor:{_e(n)}'>factor {_e(n)}</option>" for n in heat["factors"]
    )
    colour_opts = "".join(
        f"<option value='{key}'{' selected' if key == heat['defaultColour'] else ''}>"
        f"{_e(c['label'])}</option>"
        for key, c in heat["colours"].items()
    )
    sizes = "".join(
        f"<option value='{n}'{' selected' if n == PAGE_SIZE else ''}>{n}</option>"
        for n in PAGE_SIZES
    ) + ("<option value='0'>all</option>" if n_cases <= ALL_CASES_AT_ONCE else "")
    wide = (
        f"This suite has {n_cases} cases, too many to read at once: the heatmap shows "
        f"{PAGE_SIZE} per page, the cases that need attention first (regressed against the "
        "baseline, then flaky, then hardest). Change the order, filter variants by factor "
        "(at the top of the page), "
        "search a case or page through; the bar chart below and the table of all cases "
        "summarise the whole suite."
        + (
            ""
            if n_cases <= ALL_CASES_AT_ONCE
            else f" The heatmap draws at most {max(PAGE_SIZES)} cases at once (all {n_cases} "
            "would hold the page for minutes)."
        )
        if n_cases > PAGE_SIZE
        else f"All {n_cases} cases, those that need attention first (regressed against the "
        "baseline, then flaky, then hardest)."
    )
    table, rows = _cases_table(a, attention)
    return (
        "<section id='heatmap'><h2>Test-level heatmap</h2>"
        f"<p class='note'>{_e(wide)} Cell colour: the pass rate over the evaluated attempts "
        "(red 0 % → green 100 %; grey: no evaluated attempt), or, chosen under colour, "
        "AgenticLens's mean score (partial credit: a case can score high and never pass); "
        "the hover gives both, with the passed/evaluated counts. Label: passes/attempts; "
        "dotted outline: inconsistent (flaky) case. Click a cell for its attempts."
        + (
            " A failed trial counts in the label as a failed attempt (as AgenticLens counts "
            "it) and is left out of the colour."
            if _has_failed_trials(a)
            else ""
        )
        + "</p>"
        "<div class='controls'>"
        f"<label>cases<select id='heat-order'>{order_opts}</select></label>"
        f"<label>variants<select id='heat-vorder'>{vorder_opts}</select></label>"
        f"<label>colour<select id='heat-colour'>{colour_opts}</select></label>"
        "<label>search case<input id='heat-search' type='search' placeholder='id or name'>"
        "</label>"
        f"<label>per page<select id='heat-size'>{sizes}</select></label>"
        "<button id='heat-prev' type='button'>◀ prev</button>"
        "<button id='heat-next' type='button'>next ▶</button>"
        "<span id='heat-page' class='note'></span></div>"
        "<div id='fig-heatmap' class='fig'></div>"
        "<p id='heat-empty' class='note' hidden>No variant or case matches the filters.</p>"
        "<div id='attempts' aria-live='polite'><p class='note'>Click a heatmap cell (or a cell "
        "of the table of all cases below) to see that case's attempts.</p></div>"
        "<div id='fig-case_outcomes' class='fig'></div>"
        f"{table}</section>"
    ), rows


def _filters_section(heat: dict[str, Any]) -> str:
    """One factor filter bar for the whole page: every table and figure follows it."""
    if not heat["factors"]:
        return ""
    filters = "".join(
        f"<label>{_e(name)}<select data-factor='{_e(name)}'><option value=''>all</option>"
        + "".join(f"<option value='{_e(v)}'>{_e(v)}</option>" for v in dict.fromkeys(values))
        + "</select></label>"
        for name, values in heat["factors"].items()
    )
    return (
        "<section id='filters'><div class='controls'>"
        f"<span class='note'>Show variants with</span>{filters}"
        "<span id='filter-status' class='note'></span></div>"
        "<p class='note'>Tables and figures show the matching variants; the baseline's own "
        "numbers, the comparisons and the Pareto frontier are those of the whole "
        "experiment.</p></section>"
    )


def _pareto_section(a: ExperimentAnalysis) -> tuple[str, dict[str, Any]]:
    figures = {}
    # The chart reads these columns only; a slim frame keeps 30 charts cheap.
    wanted = ["variant_id", "variant_name", "factors", "pareto_optimal"]
    wanted += [o.column for o in viz.OBJECTIVES.values()]
    wanted += frontier_columns()  # p_frontier labels and bootstrap whiskers (issue 17)
    variants = a.variants[[c for c in dict.fromkeys(wanted) if c in a.variants]]
    for x in viz.OBJECTIVES:
        for y in viz.OBJECTIVES:
            if x != y:
                fig = viz.pareto_chart(variants, x=x, y=y)
                figures[f"{x}|{y}"] = _figure_json(fig)

    def options(selected: str) -> str:
        return "".join(
            f"<option value='{key}'{' selected' if key == selected else ''}>{_e(o.label)}</option>"
            for key, o in viz.OBJECTIVES.items()
        )

    frontier = ", ".join(_e(v) for v in a.pareto_frontier) or "none"
    html = (
        "<section id='pareto'><h2>Pareto frontier</h2>"
        f"<p>Frontier: {frontier}. <span class='note'>Computed on all five objectives "
        "(reliability, pass rate, score, latency, cost) as point estimates, pass rate over "
        "completed trials as in the variant table; an unknown latency or cost counts as "
        "neither better nor worse. A frontier variant that looks dominated in two "
        "dimensions wins on an objective not on the axes.</span></p>"
        + frontier_table(a)
        + "<div class='controls'>"
        f"<label>x axis<select id='pareto-x'>{options('latency')}</select></label>"
        f"<label>y axis<select id='pareto-y'>{options('pass_rate')}</select></label>"
        "<span id='pareto-note' class='note' hidden>Choose two different objectives.</span>"
        "</div><div id='fig-pareto' class='fig'></div></section>"
    )
    return html, {"figures": figures}


# --------------------------------------------------------------------------- page


def verdicts_table_html(verdicts: pd.DataFrame) -> str:
    """The verdict table as HTML (the page's first results table, and the explorer's).

    When no correction is declared it shows the paired differences with per-comparison
    intervals, no p-value and no verdict, and says how to declare one.
    """
    from ..paired.verdicts import (
        HOW_TO_DECLARE,
        format_difference,
        format_interval,
        format_p,
        how_tested,
        interval_phrase,
        omitted_parts,
        p_header,
        verdicts_family,
    )

    declared = bool(verdicts.attrs.get("declared", False))
    if verdicts.attrs.get("missing"):
        return f"<p class='declare'>{_e(verdicts.attrs['missing'])}</p>"
    after = _omitted_html(omitted_parts(verdicts))
    if not len(verdicts):
        body = "<p class='note'>No candidate could be compared with the baseline.</p>" + after
        return body if declared else body + f"<p class='declare'>{_e(HOW_TO_DECLARE)}</p>"
    first = verdicts.iloc[0]
    level = f"{float(first['confidence_level']):.0%}"
    p_label = p_header(str(first["correction"]))
    rows = []
    for r in verdicts.to_dict("records"):
        unit = str(r["unit"])
        # data-label: on a phone each row is a card and each cell says what it is.
        cells = (
            f"<td data-label='Candidate'><strong>{_e(r['candidate_variant_id'])}</strong></td>"
            f"<td data-label='Dimension'>{_e(r['dimension'])}<br><small>{_e(r['evaluator'])}"
            "</small></td>"
            f"<td data-label='Difference ({level} CI)'>"
            f"{_e(format_difference(r['mean_difference'], unit))} "
            f"<small>{_e(format_interval(r['ci_low'], r['ci_high'], unit))}</small></td>"
        )
        if declared:
            verdict = str(r["verdict"])
            cls = {"better": "good", "worse": "bad"}.get(verdict, "")
            cells += (
                f"<td data-label='{p_label}'>{_e(format_p(r['adjusted_p_value']))}</td>"
                f"<td data-label='Verdict' class='verdict {cls}'><strong>{_e(verdict)}</strong>"
                + (f"<br><small>{_e(r['detectable'])}</small>" if r["detectable"] else "")
                + "</td>"
            )
        else:
            cells += (
                f"<td data-label='Smallest detectable change'><small>{_e(r['detectable'])}"
                "</small></td>"
            )
        # data-variant: the page's factor filters hide the rows of filtered-out candidates
        rows.append(f"<tr data-variant='{_e(r['candidate_variant_id'])}'>{cells}</tr>")
    test = how_tested(verdicts)
    test = f"; test: {test}" if test else ""
    if declared:
        how = _e(verdicts_family(verdicts))
        head = (
            f"<tr><th>Candidate</th><th>Dimension</th><th>Difference<br><small>{level} CI, "
            f"per comparison</small></th><th>{p_label}</th><th>Verdict</th></tr>"
        )
        phrase = interval_phrase(
            float(first["confidence_level"]), float(first["alpha"]), str(first["correction"])
        )
        # Declared clusters are the unit of the interval and test (CR1, cluster bootstrap):
        # a row's method names them.
        clustered = any("cluster" in str(m) for m in verdicts.get("ci_method", ()))
        unit_of = "clusters of cases are the unit" if clustered else "cases are the unit"
        note = (
            "<p class='note'>Each candidate minus the baseline, case by case over the cases "
            f"both scored ({unit_of}); {how}{_e(test)}. "
            f"{_e(phrase)} "
            "Next to every result that is not significant: the smallest change this run "
            "could have detected.</p>"
        )
    else:
        head = (
            f"<tr><th>Candidate</th><th>Dimension</th><th>Difference<br><small>{level} "
            "per-comparison interval</small></th><th>Smallest detectable change</th></tr>"
        )
        note = (
            f"<p class='declare'>{_e(HOW_TO_DECLARE)}</p><p class='note'>Each candidate minus "
            "the baseline on quality, case by case over the cases both scored; intervals are "
            "per comparison, not adjusted for the number of candidates.</p>"
        )
    if verdicts.attrs.get("source"):
        note += f"<p class='note'>{_e(verdicts.attrs['source'])}</p>"
    # The page's factor filters may hide every row: then the table goes and a note says
    # why (an empty table read as "no verdicts"); report.js shows and hides them.
    family = "; they stay in the family the correction is over" if declared else ""
    hidden = (
        "<p class='note' data-all-hidden='table.verdicts tr[data-variant]' hidden>The factor "
        f"filters hide every candidate's row{family}. Clear a filter to see them.</p>"
    )
    return (
        f"{note}<div class='scroll' data-empty-when='tr[data-variant]'><table class='verdicts'>"
        f"{head}{''.join(rows)}</table></div>{hidden}{after}"
    )


def _omitted_html(parts: list[tuple[str, str]]) -> str:
    """The comparisons left out, one part per candidate (hidden with it by the page's
    factor filters; the note goes when every part has)."""
    if not parts:
        return ""
    spans = " ".join(
        f"<span data-variant='{_e(candidate)}'>{_e(text)}.</span>" for candidate, text in parts
    )
    return f"<p class='note omitted' data-empty-when='[data-variant]'>Not compared: {spans}</p>"


def _verdicts_section(
    a: ExperimentAnalysis, forest: bool, *, descriptive: bool = False, stopped: bool = True
) -> str:
    declared = bool(a.verdicts.attrs.get("declared", False))
    title = "Verdicts against" if declared else "Paired differences against"
    title += f" the baseline ({a.info['baseline_variant_id']})"
    if descriptive:  # a run the rule watched: stopped early or not (see .early_stopping)
        title = descriptive_title(title, stopped)
    return (
        f"<section id='verdicts'><h2>{_e(title)}</h2>"
        + (f"<p class='declare'>{_e(descriptive_note(stopped))}</p>" if descriptive else "")
        + verdicts_table_html(a.verdicts)
        + judge_verdict_note_html(a)
        + ("<div id='fig-paired' class='fig'></div>" if forest else "")
        + "</section>"
    )


def gate_section_html(a: ExperimentAnalysis) -> tuple[str, bool]:
    """The non-inferiority gates, when set: the command line's words, every (candidate,
    dimension) with its bound beside the margin in the dimension's unit; and whether they
    all passed (True without a gate). The page's section, and the explorer's.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> gate_section_html(analyze(run))
    ('', True)
    >>> from agenticlens_frames.coerce import as_analysis
    >>> html, passed = gate_section_html(as_analysis(run, noninferiority_margin=0.02))
    >>> passed, "Non-inferiority gate failed: model-large" in html
    (False, True)
    """
    from ..paired.gate import gate_statement

    gate = a.paired_frames.get("noninferiority")
    if gate is None:
        return "", True
    comparisons = a.paired_frames.get("paired_comparisons")
    passed, headline, details = gate_statement(gate, comparisons, every=True)
    items = "".join(f"<li>{_e(line)}</li>" for line in details)
    return (
        "<section id='noninferiority'><h2>Non-inferiority gate</h2>"
        f"<p class='verdict {'good' if passed else 'bad'}'><strong>{_e(headline)}</strong></p>"
        f"<ul>{items}</ul><p class='note'>Every gate must pass for every candidate "
        "(an intersection–union test, so no multiplicity correction is needed).</p></section>"
    ), bool(passed)


def warnings_section_html(a: ExperimentAnalysis) -> str:
    """The run's warnings that bear on reading the verdicts (too few trials, targets that
    failed, noisy judges) as a section; empty without any. The page's, and the explorer's.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> "fewer than 5 trials (retrieval-dense)" in warnings_section_html(a)
    True
    """
    shown = [*headline_warnings(a.warnings), *target_failure_warnings(a), *judge_noise_notes(a)]
    if not shown:
        return ""
    return (
        "<section class='warn' id='warnings'><h2>Warnings</h2><ul>"
        + "".join(f"<li>{_e(w)}</li>" for w in shown)
        + "</ul></section>"
    )


def judge_verdict_note_html(a: ExperimentAnalysis) -> str:
    """The judges' line under the verdicts (:func:`~agenticlens_frames.analysis.\
judge_verdict_note`) as a paragraph; empty without judges. The page's, and the explorer's.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> judge_verdict_note_html(a)  # no judges
    ''
    """
    note = judge_verdict_note(a)
    return f"<p class='note judges'>{_e(note)}</p>" if note else ""


def judges_section_html(a: ExperimentAnalysis) -> str:
    """What each variant's judges did and cost, apart from the agent's cost, as a section
    (the console's lines, :func:`~agenticlens_frames.analysis.judge_cost_lines`); empty
    without judges.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> judges_section_html(a)  # no judges
    ''
    """
    lines = judge_cost_lines(a)
    if not lines:
        return ""
    return (
        "<section id='judges'><h2>Judges</h2><ul>"
        + "".join(f"<li>{_e(line)}</li>" for line in lines)
        + "</ul><p class='note'>Judge cost is never part of the agent's cost above; it counts "
        "every answered judge call once (failed, billed attempts included).</p></section>"
    )


def render_html(a: ExperimentAnalysis, *, paired: pd.DataFrame | None = None) -> str:
    """The whole self-contained page as a string.

    Works for a fresh analysis and for one loaded from a saved JSON report
    (``run=None``), where attempt-level details are simply absent. ``paired``: the frame
    of :func:`agenticlens_frames.paired.paired_comparisons`, drawn as a forest plot
    (default: the analysis' verdict rows, :func:`~agenticlens_frames.viz.paired_rows`:
    per-comparison intervals when no correction is declared).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> page = render_html(a)
    >>> page.startswith("<!DOCTYPE html>"), "<script src=" in page  # nothing fetched
    (True, False)
    """
    a = require_analysis(a, "render_html")
    info = a.info
    seed = info["random_seed"]
    heat, attention = _heat_payload(a)
    # Attempt details (up to DETAIL_BYTES) are read only when a cell is clicked: a block of
    # their own that the page parses then, not at load with the figures.
    details = heat.pop("details")
    pareto_html, pareto = _pareto_section(a)
    # Only the figures the page draws as they are (the heatmap and Pareto views are built
    # above from their own payloads); the paired forest draws the verdict rows unless
    # ``paired`` is given (viz.paired_rows).
    static = viz.draw_figures(a, in_page=True, paired=paired)
    static.update(beyond_figures(a))
    payload = {
        "figures": {name: _figure_json(fig) for name, fig in static.items()},
        "heat": heat,
        "pareto": pareto,
    }
    tiles = [
        (_e(info["trial_count"]), "trials per variant"),
        (_e(info["baseline_variant_id"]), "baseline"),
        (f"{a.confidence_level:.0%}", "confidence level"),
        ("none (fixed order)" if seed is None else _e(seed), "random seed"),
        (_e(info["minimum_trials"]), "minimum trials"),
        # AgenticLens's flag rule, not a test: last, and named as what it sets (beside the
        # verdicts' settings it read as the threshold of a "worse" verdict).
        (f"{a.regression_threshold:.0%}", "AgenticLens flag threshold"),
    ]
    warnings = warnings_section_html(a)
    order = ", ".join(f"{_e(v)}#{_e(t)}" for v, t in a.execution_order)
    stopping, stopped = stopping_section_html(a), stopped_early(a)
    gate_html, gate_passed = gate_section_html(a)
    # A failed gate is what the run's exit status (5) acts on: it leads the verdicts, whose
    # "no detectable difference" rows read as reassurance above it. A passed one follows.
    gate_failed = not gate_passed
    heatmap_html, case_rows = _heatmap_section(a, heat, attention)
    title = f"Experiment Report — {_e(info['experiment_name'])}"
    plotly_js, loader_js, page_js = _plotly_js(), _asset("loader.js"), _asset("report.js")
    # blob: is plotly.js started by loader.js (only a script can make a blob: URL, so
    # injected markup cannot name one); plotly.js's own hash allows loader.js's fallback.
    hashes = " ".join(f"'sha256-{_sha256(js)}'" for js in (loader_js, page_js, plotly_js))
    csp = (
        "default-src 'none'; "
        f"script-src {hashes} blob:; "
        "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{csp}\">"
        "<meta name='color-scheme' content='light dark'>"
        f"<title>{title}</title><style>{_asset('report.css')}</style></head><body><main>"
        "<div class='eyebrow'>AGENTICLENS · EXPERIMENT REPORT</div>"
        f"<h1>{title}</h1><div class='sub'>Experiment {_e(info['experiment_version'])} · suite "
        f"{_e(info['suite_name'])} {_e(info['suite_version'])}</div>"
        "<div class='tiles'>"
        + "".join(f"<div class='tile'><b>{v}</b><span>{k}</span></div>" for v, k in tiles)
        + "</div>"
        + _filters_section(heat)
        + warnings
        + _failed_trials(a)
        # In a run the rule watched (stopped early or not) its statement is the
        # inferential one: first (docs/statistics.md §13).
        + stopping
        + (gate_html if gate_failed else "")
        + _verdicts_section(
            a, forest="paired" in static, descriptive=bool(stopping), stopped=stopped
        )
        + ("" if gate_failed else gate_html)
        + _variant_table(a)
        + judges_section_html(a)
        + _pass_k_section(a)
        + heatmap_html
        + pareto_html
        + _factor_levels(a)
        + _comparisons(a)
        + beyond_sections(a)
        + f"<section id='randomization'><h2>Randomization</h2><p>Execution order: "
        f"{order or 'n/a'}</p></section>" + footer_html(info) + "</main>"
        # The markup above is small and painted first; then plotly.js, as text that
        # loader.js has compiled off the main thread while the parser reads the blocks
        # below (see assets/loader.js); report.js, last, waits for it.
        f"<script type='text/plain' id='alf-plotly'>{plotly_js}</script>"
        f"<script>{loader_js}</script>{case_rows}"
        f"<script type='application/json' id='alf-data'>{_json_for_script(payload)}</script>"
        + (
            ""
            if details is None
            else "<script type='application/json' id='alf-details'>"
            f"{_json_for_script(details)}</script>"
        )
        + f"<script>{page_js}</script></body></html>"
    )


@renamed_keywords(a="analysis")
def write_html_report(
    analysis: ExperimentAnalysis, path: str | Path, *, paired: pd.DataFrame | None = None
) -> Path:
    """Write the page to ``path`` (parents created); see :func:`render_html`.

    Parameters
    ----------
    analysis
        The analysis (:func:`~agenticlens_frames.analyze` or
        :func:`~agenticlens_frames.load_report`). Formerly ``a``, still accepted with a
        ``FutureWarning``.
    path
        The HTML file to write, atomically.
    paired
        A :func:`~agenticlens_frames.paired_comparisons` frame to draw as the forest plot
        (default: the analysis's verdict rows, :func:`~agenticlens_frames.viz.paired_rows`).

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from agenticlens_frames import analyze, load_experiment
    >>> result = analyze(load_experiment("data/support/manifest.yaml",
    ...                                  "data/support/suite.yaml"), frontier_n_resamples=0)
    >>> page = write_html_report(result, Path(tempfile.mkdtemp()) / "report.html")
    >>> page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    analysis = require_analysis(analysis, "write_html_report")
    target = check_path(path, "the page to write")
    write_atomic(target, render_html(analysis, paired=paired))
    return target
