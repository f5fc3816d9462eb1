"""The offline HTML report: one self-contained page rendered from the result frames.

Shows what AgenticLens 0.10's page shows (spec §10.4): the variant table, pass@k / pass^k,
baseline deltas, the variant × case heatmap, factor levels, warnings and the execution
order. Every user-supplied string is escaped; the page makes no network request and
follows the system's light/dark preference.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis import ExperimentAnalysis

__all__ = ["render_html", "write_html_report"]

_CSS = """
:root { color-scheme: light dark; --bg:#f7f7f8; --card:#ffffff; --fg:#1d1d22; --muted:#5f6470;
  --line:#e2e3e8; --accent:#3451b2; --good:#1d7f4e; --bad:#b42318; --grey:#9aa0a6; }
@media (prefers-color-scheme: dark) { :root { --bg:#15161a; --card:#1e2026; --fg:#e8e9ee;
  --muted:#a3a8b4; --line:#30333c; --accent:#8ea2ff; --good:#5dd39e; --bad:#ff8a80; --grey:#5f6470; } }
* { box-sizing: border-box }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  background:var(--bg); color:var(--fg) }
main { max-width:1200px; margin:0 auto; padding:24px }
.eyebrow { letter-spacing:.12em; font-size:11px; color:var(--muted); font-weight:600 }
h1 { margin:4px 0 2px; font-size:26px } h2 { font-size:18px; margin:0 0 12px }
.sub { color:var(--muted); margin-bottom:16px }
.tiles { display:grid; grid-template-columns:repeat(auto-fit,minmax(150px,1fr)); gap:10px; margin:16px 0 }
.tile { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:10px 12px }
.tile b { display:block; font-size:16px } .tile span { color:var(--muted); font-size:12px }
section { background:var(--card); border:1px solid var(--line); border-radius:12px; padding:16px;
  margin:16px 0 }
table { border-collapse:collapse; width:100% } th, td { text-align:left; padding:6px 8px;
  border-bottom:1px solid var(--line); vertical-align:top } th { font-size:12px; color:var(--muted) }
small { color:var(--muted) } .scroll { overflow-x:auto }
.tag { display:inline-block; font-size:11px; padding:1px 6px; border-radius:999px; margin-left:4px;
  border:1px solid var(--line) } .tag.base { color:var(--accent) } .tag.pareto { color:var(--good) }
.good { color:var(--good) } .bad { color:var(--bad) }
.warn li { margin:4px 0 } .heat td { text-align:center; color:#fff; font-size:12px; min-width:56px }
.heat td.flaky { outline:2px dashed var(--fg); outline-offset:-3px } .heat td.none { background:var(--grey) }
.heat th.case { writing-mode:vertical-rl; transform:rotate(180deg); white-space:nowrap; max-height:180px }
.note { color:var(--muted); font-size:12px }
"""


def _pct(value: Any, digits: int = 1) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}%}"


def _num(value: Any, digits: int = 3, prefix: str = "") -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{prefix}{value:.{digits}f}"


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _variant_table(a: ExperimentAnalysis) -> str:
    rows = []
    for v in a.variants.to_dict("records"):
        factors = ", ".join(f"{_e(k)}={_e(val)}" for k, val in v["factors"].items())
        badges = ('<span class="tag base">baseline</span>' if v["is_baseline"] else "") + (
            '<span class="tag pareto">pareto</span>' if v["pareto_optimal"] else ""
        )
        interval = (
            f"<small>{_pct(v['case_pass_rate_ci_low'])}–{_pct(v['case_pass_rate_ci_high'])}</small>"
            if not math.isnan(v["case_pass_rate_ci_low"])
            else ""
        )
        rows.append(
            f"<tr><td><strong>{_e(v['variant_name'])}</strong> {badges}<br><small>"
            f"{_e(v['variant_id'])}{' · ' + factors if factors else ''}</small></td>"
            f"<td>{_pct(v['case_pass_rate'])} {interval}</td>"
            f"<td>{_num(v['average_score_mean'])}</td>"
            f"<td>{_num(v['average_latency_ms_mean'], 1)} ms</td>"
            f"<td>{_num(v['total_cost_usd_mean'], 4, '$')}<br><small>{int(v['priced_trials'])}/"
            f"{int(v['completed_trials'])} trials priced</small></td>"
            f"<td>{_pct(v['trial_success_rate'])}<br><small>{int(v['completed_trials'])}/"
            f"{int(v['attempted_trials'])} completed</small></td>"
            f"<td>{_pct(v['consistency_rate'])}<br><small>{int(v['n_flaky_cases'])} flaky</small></td>"
            "</tr>"
        )
    return (
        "<section><h2>Quality, cost, latency, and reliability</h2><div class='scroll'><table>"
        "<tr><th>Variant</th><th>Case pass rate</th><th>Mean score</th><th>Mean latency</th>"
        "<th>Mean cost / trial</th><th>Reliability</th><th>Consistency</th></tr>"
        + "".join(rows)
        + "</table></div></section>"
    )


def _pass_k_table(a: ExperimentAnalysis) -> str:
    head = "".join(f"<th>pass@{k}</th><th>pass^{k}</th>" for k in a.pass_k)
    rows = "".join(
        f"<tr><td>{_e(v['variant_name'])}</td>"
        + "".join(
            f"<td>{_pct(v[f'pass_at_{k}'])}</td><td>{_pct(v[f'pass_hat_{k}'])}</td>"
            for k in a.pass_k
        )
        + "</tr>"
        for v in a.variants.to_dict("records")
    )
    return (
        "<section><h2>pass@k and pass^k</h2><div class='scroll'><table><tr><th>Variant</th>"
        f"{head}</tr>{rows}</table></div></section>"
    )


def _comparisons(a: ExperimentAnalysis) -> str:
    rows = []
    for c in a.comparisons.to_dict("records"):
        changed = ", ".join(
            f"{_e(n)}: {_e(v[0])} → {_e(v[1])}" for n, v in c["changed_factors"].items()
        )
        significant = c["statistically_significant"]
        sig = (
            "n/a"
            if significant is pd.NA or significant is None
            else ("significant" if significant else "not significant")
        )
        p = c["case_pass_rate_p_value"]
        regressions = [
            label
            for label, key in (
                ("pass rate", "pass_rate_regressed"),
                ("score", "average_score_regressed"),
                ("latency", "average_latency_ms_regressed"),
                ("cost", "total_cost_usd_regressed"),
            )
            if c[key] is True
        ]
        warnings = "".join(f"<li>{_e(w)}</li>" for w in c["warnings"])
        cost_delta = c["total_cost_usd_delta"]
        cost = "n/a" if math.isnan(cost_delta) else f"{cost_delta:+.4f}"
        delta = c["case_pass_rate_delta"]
        rows.append(
            f"<tr><td><strong>{_e(c['candidate_variant_id'])}</strong><br><small>"
            f"{changed or 'no factor changes recorded'}</small></td>"
            f"<td>{'n/a' if math.isnan(delta) else f'{delta:+.1%}'}"
            f"<br><small>{sig}{'' if math.isnan(p) else f' (p={p:.3f})'}</small></td>"
            f"<td>{c['average_score_delta']:+.3f}</td><td>{c['average_latency_ms_delta']:+.1f} ms</td>"
            f"<td>{cost}</td>"
            f"<td class='{'bad' if regressions else 'good'}'>{_e(', '.join(regressions)) or 'none'}"
            f"<br><small>{len(c['regressed_case_ids'])} case(s) regressed · "
            f"{len(c['improved_case_ids'])} improved</small>"
            f"{f'<ul>{warnings}</ul>' if warnings else ''}</td></tr>"
        )
    body = "".join(rows) or "<tr><td colspan='6'>No comparisons.</td></tr>"
    return (
        f"<section><h2>Against the baseline ({_e(a.info['baseline_variant_id'])})</h2>"
        "<div class='scroll'><table><tr><th>Candidate</th><th>Case pass rate Δ</th><th>Score Δ</th>"
        f"<th>Latency Δ</th><th>Cost Δ</th><th>Regressions</th></tr>{body}</table></div></section>"
    )


def _heatmap(a: ExperimentAnalysis) -> str:
    cm = a.cases
    case_ids = a.info["case_ids"]
    names = dict(zip(cm["case_id"].astype(str), cm["case_name"], strict=False))
    head = "".join(f"<th class='case' title='{_e(names.get(c, c))}'>{_e(c)}</th>" for c in case_ids)
    rows = []
    for vid, grp in cm.groupby("variant_id", observed=False, sort=True):
        cells = []
        for r in grp.to_dict("records"):
            score = r["mean_score"]
            label = f"{int(r['passes'])}/{int(r['attempts'])}"
            cls = "" if r["consistent"] else "flaky"
            if isinstance(score, float) and math.isnan(score):
                cells.append(f"<td class='none {cls}'>{label}</td>")
                continue
            hue = round(score * 130)
            cells.append(
                f"<td class='{cls}' style='background:hsl({hue} 62% 38%)' "
                f"title='{_e(r['case_name'])}'>{label}<br>{score:.2f}</td>"
            )
        rows.append(f"<tr><th>{_e(vid)}</th>{''.join(cells)}</tr>")
    return (
        "<section><h2>Test-level heatmap</h2><p class='note'>Cell: passes/attempts and mean "
        "score; dashed outline: inconsistent (flaky) case.</p><div class='scroll'>"
        f"<table class='heat'><tr><th></th>{head}</tr>{''.join(rows)}</table></div></section>"
    )


def _factor_levels(a: ExperimentAnalysis) -> str:
    fl = a.factor_levels
    if fl.empty:
        return ""
    rows = "".join(
        f"<tr><td>{_e(f['factor'])}</td><td>{_e(f['value'])}</td>"
        f"<td>{_e(', '.join(f['variant_ids']))}</td><td>{_pct(f['mean_pass_rate'])}</td>"
        f"<td>{_num(f['mean_average_score'])}</td><td>{_num(f['mean_latency_ms'], 1)} ms</td>"
        f"<td>{_num(f['mean_cost_usd'], 4, '$')}</td><td>{_pct(f['mean_trial_success_rate'])}</td></tr>"
        for f in fl.to_dict("records")
    )
    return (
        "<section><h2>Factor levels</h2><p class='note'>Unweighted means over the variants "
        "at each level; confounded unless the design is factorial.</p><div class='scroll'><table>"
        "<tr><th>Factor</th><th>Value</th><th>Variants</th><th>Pass rate</th><th>Score</th>"
        f"<th>Latency</th><th>Cost</th><th>Reliability</th></tr>{rows}</table></div></section>"
    )


def render_html(a: ExperimentAnalysis, *, extra_sections: str = "", head_extra: str = "") -> str:
    """The whole page as a string."""
    info = a.info
    seed = info["random_seed"]
    tiles = [
        (str(info["trial_count"]), "trials per variant"),
        (_e(info["baseline_variant_id"]), "baseline"),
        (f"{a.confidence_level:.0%}", "confidence level"),
        (f"{a.regression_threshold:.0%}", "regression threshold"),
        ("none (fixed order)" if seed is None else _e(seed), "random seed"),
        (str(info["minimum_trials"]), "minimum trials"),
    ]
    warnings = (
        "<section class='warn'><h2>Warnings</h2><ul>"
        + "".join(f"<li>{_e(w)}</li>" for w in a.warnings)
        + "</ul></section>"
        if a.warnings
        else ""
    )
    order = ", ".join(f"{_e(v)}#{t}" for v, t in a.execution_order)
    title = f"Experiment Report — {_e(info['experiment_name'])}"
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; font-src data:\">"
        f"<title>{title}</title><style>{_CSS}</style>{head_extra}</head><body><main>"
        "<div class='eyebrow'>AGENTICLENS · EXPERIMENT REPORT</div>"
        f"<h1>{title}</h1><div class='sub'>Experiment {_e(info['experiment_version'])} · suite "
        f"{_e(info['suite_name'])} {_e(info['suite_version'])}</div>"
        "<div class='tiles'>"
        + "".join(f"<div class='tile'><b>{v}</b><span>{k}</span></div>" for v, k in tiles)
        + "</div>"
        + warnings
        + _variant_table(a)
        + _pass_k_table(a)
        + _comparisons(a)
        + extra_sections
        + _heatmap(a)
        + _factor_levels(a)
        + f"<section><h2>Randomization</h2><p>Execution order: {order or 'n/a'}</p>"
        f"<p class='note'>Generated {_e(info.get('created_at') or '')}</p></section>"
        "</main></body></html>"
    )


def write_html_report(a: ExperimentAnalysis, path: str | Path) -> Path:
    """Write the page to ``path`` (parents created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(a), encoding="utf-8")
    return target
