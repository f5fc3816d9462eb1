"""The console summary (spec §10.5): rich tables rendered from the result frames."""

from __future__ import annotations

import math
import re
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analysis import ExperimentAnalysis

__all__ = ["print_summary", "strip_control"]

# C0/C1 control characters (ESC starts terminal escape sequences) except tab and newline.
# C0/C1 controls (terminal escapes), plus the invisible and bidirectional format
# characters that let a name show text other than it holds ("Trojan source").
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def strip_control(text: Any) -> str:
    """User text made safe for a terminal: control characters (escape sequences) removed.

    Examples
    --------
    >>> strip_control("ok\\x1b[31mred")
    'ok[31mred'
    """
    return _CONTROL.sub("", str(text))


def _t(text: Any) -> Text:
    # Text objects are never parsed as rich markup, so "[bold]" in a name stays literal.
    return Text(strip_control(text))


def _pct(value: float, digits: int = 1) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}%}"


def print_summary(analysis: ExperimentAnalysis, console: Console | None = None) -> None:
    """Print the variant, pass@k and baseline-delta tables, the frontier and warnings."""
    console = console or Console()
    info = analysis.info
    vs = analysis.variants
    table = Table(title=Text(f"Experiment · {strip_control(info['experiment_name'])}"))
    for name, justify in [
        ("Variant", "left"),
        ("Case pass rate", "right"),
        ("Score", "right"),
        ("Latency", "right"),
        ("Cost", "right"),
        ("Reliability", "right"),
        ("Consistency", "right"),
        ("Pareto", "center"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    k_table = Table(title="pass@k / pass^k (mean over cases)")
    k_table.add_column("Variant")
    for k in analysis.pass_k:
        k_table.add_column(f"pass@{k}", justify="right")
        k_table.add_column(f"pass^{k}", justify="right")
    for row in vs.to_dict("records"):
        rate = _pct(row["case_pass_rate"])
        if not math.isnan(row["case_pass_rate_ci_low"]):
            rate += f" [{row['case_pass_rate_ci_low']:.0%}–{row['case_pass_rate_ci_high']:.0%}]"
        table.add_row(
            _t(row["variant_id"]),
            rate,
            f"{row['average_score_mean']:.3f}" if row["average_score_count"] else "n/a",
            f"{row['average_latency_ms_mean']:.0f} ms"
            if row["average_latency_ms_count"]
            else "n/a",
            f"${row['total_cost_usd_mean']:.4f}" if row["total_cost_usd_count"] else "n/a",
            f"{row['trial_success_rate']:.0%} "
            f"({row['completed_trials']}/{row['attempted_trials']})",
            _pct(row["consistency_rate"], 0),
            "yes" if row["pareto_optimal"] else "no",
        )
        k_table.add_row(
            _t(row["variant_id"]),
            *[
                _pct(row[f"{name}_{k}"])
                for k in analysis.pass_k
                for name in ("pass_at", "pass_hat")
            ],
        )
    console.print(table)
    console.print(k_table)

    deltas = Table(title=Text(f"Baseline Deltas · {strip_control(info['baseline_variant_id'])}"))
    for name in (
        "Variant",
        "Changed factors",
        "Case pass rate",
        "p-value",
        "Score",
        "Latency",
        "Cost",
    ):
        deltas.add_column(
            name, justify="left" if name in ("Variant", "Changed factors") else "right"
        )
    for c in analysis.comparisons.to_dict("records"):
        p = c["case_pass_rate_p_value"]
        significant = c["statistically_significant"] is True
        factors = ", ".join(f"{n}: {v[0]} → {v[1]}" for n, v in c["changed_factors"].items())
        deltas.add_row(
            _t(c["candidate_variant_id"]),
            _t(factors or "-"),
            f"{c['case_pass_rate_delta']:+.1%}",
            "n/a" if math.isnan(p) else f"{p:.3f}{' *' if significant else ''}",
            f"{c['average_score_delta']:+.3f}",
            f"{c['average_latency_ms_delta']:+.1f} ms",
            "n/a" if math.isnan(c["total_cost_usd_delta"]) else f"{c['total_cost_usd_delta']:+.4f}",
        )
    console.print(deltas)
    frontier = ", ".join(analysis.pareto_frontier) or "none"
    seed = "none" if info["random_seed"] is None else str(info["random_seed"])
    console.print(
        Text(
            strip_control(
                f"Pareto frontier: {frontier} | Trials per variant: {info['trial_count']} | "
                f"Seed: {seed}"
            )
        )
    )
    for warning in analysis.warnings:
        console.print(Text(f"! {strip_control(warning)}", style="yellow"))
    # Judges (docs/judges.md): their cost apart from the agent's, and where their noise,
    # not the agent's, limits detection.
    judges = analysis.paired.get("judge_noise", {})
    for row in judges.get("totals", []):
        spent = row["spent_cost_usd"]
        cost = "unpriced" if spent is None else f"${spent:.6f}"
        console.print(
            Text(
                strip_control(
                    f"Judges · {row['variant_id']}: {row['judge_scores']} score(s), "
                    f"{row['unavailable_scores']} unavailable, cost {cost} "
                    f"({row['priced_scores']} of {row['judge_scores']} priced), "
                    f"{row['input_tokens']}/{row['output_tokens']} tokens"
                )
            )
        )
    for note in judges.get("notes", []):
        console.print(Text(f"! {strip_control(note)}", style="yellow"))
