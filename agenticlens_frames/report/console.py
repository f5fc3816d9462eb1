"""The console summary (spec §10.5): rich tables rendered from the result frames."""

from __future__ import annotations

import math
import re
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._values import (
    NO_EVALUATED_ATTEMPT,
    count_noun,
    format_power,
    membership_cell,
    missing_interval_reason,
    pass_rate_unit,
)
from ..analysis import (
    ExperimentAnalysis,
    headline_warnings,
    judge_cost_lines,
    judge_noise_notes,
    judge_verdict_note,
    target_failure_warnings,
)
from ..frontier import membership_note

__all__ = [
    "COMPAT_HEADER",
    "COMPAT_TITLE",
    "VARIANT_HEADER",
    "compat_caption",
    "compat_cells",
    "factor_cells",
    "factor_correction_statement",
    "factor_header",
    "factor_notes",
    "factor_title",
    "pass_rates",
    "print_summary",
    "single_line",
    "strip_control",
    "variant_cells",
    "variant_notes",
    "verdict_caption",
]

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


def single_line(text: Any) -> str:
    """User text made safe for one line of a log: :func:`strip_control`, and its line
    breaks as spaces.

    A line of ours that ends in a name or a target's error message must stay one line: a
    break there starts a line the text controls, which a CI runner reads as its own (a
    GitHub Actions ``::error::`` workflow command) or a reader as the tool's.

    Examples
    --------
    >>> single_line("upstream 503\\n::error::forged\\r\\n\\x1b[31m")
    'upstream 503 ::error::forged [31m'
    """
    return strip_control(" ".join(str(text).splitlines()))


def _t(text: Any) -> Text:
    # Text objects are never parsed as rich markup, so "[bold]" in a name stays literal.
    return Text(strip_control(text))


def _pct(value: float, digits: int = 1) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}%}"


def _stopping_table(analysis: ExperimentAnalysis, block: Any, console: Console) -> None:
    """The early-stopping decision per candidate, first: the inferential statement of a
    run the rule watched, whether it stopped early or ran to the end of its plan."""
    from ..early_stopping import (
        attempts_statement,
        decision_rows,
        differences_statement,
        rule_statement,
        unit_statement,
    )
    from ..paired.verdicts import VERDICT_STYLES

    name = strip_control(analysis.info["experiment_name"])
    title = (
        f"Experiment · {name}\nEarly stopping: {block['reason']} "
        "(anytime-valid; the inferential statement)"
    )
    table = Table(title=_t(title), caption_justify="left")
    table.add_column("Candidate", overflow="fold")
    table.add_column("Decision", overflow="fold")
    table.add_column("Anytime-valid interval", justify="right", no_wrap=True)
    table.add_column("Paired cases", justify="right")
    for row in decision_rows(block):
        decision = row["decision"]
        table.add_row(
            _t(row["candidate"]),
            Text(decision, style=VERDICT_STYLES.get(decision, "")),
            row["interval"],
            row["paired_cases"],
        )
    unit = unit_statement(block)
    table.caption = _t(
        f"{differences_statement(block)}. {rule_statement(block)}. "
        f"{attempts_statement(block)}." + (f" {unit}." if unit else "")
    )
    console.print(table)


def _verdict_table(
    analysis: ExperimentAnalysis,
    console: Console,
    *,
    descriptive: bool = False,
    stopped: bool = True,
    named: bool = True,
) -> None:
    """The case-level verdicts, first: what a person decides on. ``descriptive``: in a
    run the rule watched, where they follow its statement and are labelled descriptive
    (``stopped``: after an early stop, else at the end of a run it never stopped).
    ``named``: the table names the experiment (False when a line above already did)."""
    from ..early_stopping import descriptive_note, descriptive_title
    from ..paired.verdicts import (
        CORRECTION_NAMES,
        HOW_TO_DECLARE,
        VERDICT_STYLES,
        detectable_cell,
        format_change,
        format_p,
        omitted_statement,
        p_header,
        verdicts_family,
    )

    v = analysis.verdicts
    name = strip_control(analysis.info["experiment_name"])
    if v.attrs.get("missing"):
        if named:
            console.print(Text(f"Experiment · {name}", style="bold"))
        console.print(Text(f"! {v.attrs['missing']}", style="yellow"))
        return
    base = strip_control(analysis.info["baseline_variant_id"])
    declared = bool(v.attrs.get("declared", False))
    level = float(v["confidence_level"].iloc[0]) if len(v) else analysis.confidence_level
    if declared:
        # The words of the summary's and the page's heading (one function builds them).
        title = f"Verdicts against {base}: case-level paired comparisons, {verdicts_family(v)}"
        if not len(v):
            # An empty family (no candidate compared) has no α, but its correction is said.
            correction = str(v.attrs.get("correction") or "")
            title += f" ({CORRECTION_NAMES.get(correction, correction)} correction)"
    else:
        title = (
            f"Paired differences against {base}: case-level, "
            f"{level:.0%} per-comparison intervals (no correction declared)"
        )
    # After an early stop the experiment's name heads the stopping table, printed above.
    if descriptive:
        title = descriptive_title(title, stopped)
    elif named:
        title = f"Experiment · {name}\n{title}"
    table = Table(title=Text(title), caption_justify="left")
    # Rows grouped by dimension (a heading row each) rather than a dimension column, and the
    # detectable change in a column of its own (its magnitude; the caption says what it
    # means): a verdict row then fits one line of a 120-column terminal, names unshortened.
    table.add_column("Candidate", overflow="fold")
    # The interval is per comparison whatever the correction (the verdict follows the
    # adjusted p); the caption says so (a longer header would wrap the rows at 120 columns).
    table.add_column(f"Difference [{level:.0%} CI]", justify="right", no_wrap=True)
    if declared:
        table.add_column(
            p_header(str(v["correction"].iloc[0]) if len(v) else "", short=True),
            justify="right",
            no_wrap=True,
        )
        table.add_column("Verdict", overflow="fold")
    table.add_column("Smallest detectable change", overflow="fold")
    evaluators: dict[str, str] = {}
    for r in v.to_dict("records"):
        unit = str(r["unit"])
        dimension = str(r["dimension"])
        if dimension not in evaluators:
            if evaluators:
                table.add_section()
            evaluators[dimension] = str(r["evaluator"])
            table.add_row(Text(strip_control(dimension), style="bold"))
        cells: list[Any] = [
            Text("  ") + _t(r["candidate_variant_id"]),
            # Text, not a str: rich read a str's "[n/a]" (a row without an interval) as a
            # markup tag and printed the difference with no interval at all.
            _t(format_change(r)),
        ]
        if declared:
            cells.append(format_p(r["adjusted_p_value"]))
            verdict = str(r["verdict"])
            cells.append(Text(verdict, style=VERDICT_STYLES.get(verdict, "")))
        detectable = str(r["detectable"] or "")
        cells.append(
            _t(detectable_cell(str(r["verdict"]), float(r["mde"]), unit, detectable) or "-")
        )
        table.add_row(*cells)
    if not len(v):
        table.add_row(*(["-"] * len(table.columns)))
    if evaluators:
        table.caption = _t(verdict_caption(v, level))
    if descriptive:
        table.caption = Text(f"{table.caption or ''} {descriptive_note(stopped)}".lstrip())
    if console.width < NARROW and len(v):
        # Too narrow for the columns (at 40 the candidate and verdict columns shrank to
        # nothing and "1…" stood for the adjusted p): each row as its sentence instead.
        console.print(Text(title, style="bold"))
        for r in v.to_dict("records"):
            verdict = str(r["verdict"])
            console.print(
                Text("• ")
                + Text(strip_control(r["statement"]), style=VERDICT_STYLES.get(verdict, ""))
            )
        console.print(table.caption or "")
    else:
        console.print(table)
    if omitted := omitted_statement(v):
        console.print(_t(omitted))
    if judges := judge_verdict_note(analysis):
        # Beside the verdicts: the judge-noise notes come last, after every table.
        console.print(
            Text(strip_control(judges), style="yellow" if "larger noise" in judges else "")
        )
    if v.attrs.get("source"):
        console.print(Text(f"Note: {v.attrs['source']}", style="dim"))
    if not declared:
        console.print(Text(f"! {HOW_TO_DECLARE}", style="yellow"))


def verdict_caption(v: Any, level: float) -> str:
    """What a verdict table shows, said under it: the difference, the evaluators, the test,
    what the interval is beside a declared verdict, and what the smallest detectable change
    means ("" for a frame without rows). The console's and the Markdown summary's.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> print(verdict_caption(a.verdicts, 0.95))  # doctest: +ELLIPSIS
    Each candidate minus the baseline, case by case over the cases both scored; evaluators:
    quality = passed, ... test: paired t. The interval is per comparison (95%), ...
    """
    from ..paired.verdicts import how_tested, interval_phrase

    if not len(v):
        return ""
    declared = bool(v.attrs.get("declared", False))
    evaluators: dict[str, str] = {}
    for dimension, evaluator in zip(v["dimension"], v["evaluator"], strict=True):
        evaluators.setdefault(str(dimension), str(evaluator))  # (the same for every row)
    caption = (
        "Each candidate minus the baseline, case by case over the cases both scored; "
        "evaluators: " + ", ".join(f"{d} = {e}" for d, e in evaluators.items())
    )
    test = how_tested(v)
    caption += f"; test: {test}." if test else "."
    if declared:
        caption += " " + interval_phrase(
            level, float(v["alpha"].iloc[0]), str(v["correction"].iloc[0])
        )
    powers = {
        float(r["mde_power"])
        for r in v.to_dict("records")
        if r["detectable"] and math.isfinite(float(r["mde"]))
    }
    if powers:
        power = "/".join(format_power(p) for p in sorted(powers))
        caption += (
            " Smallest detectable change: the true difference this run would have found "
            f"with {power} power "
            + (
                "at the level the correction sets; a smaller one could have gone "
                'unnoticed, so "no detectable difference" is not "no difference".'
                if declared
                else "at the per-comparison level; a smaller one could have gone unnoticed."
            )
        )
    return caption


#: Narrower than this (columns), the verdicts are printed one sentence a row, not as a table.
NARROW = 72


def _pass_rate_cell(row: dict[str, Any], headline: dict[str, dict[str, Any]]) -> str:
    h = headline.get(str(row["variant_id"]))
    if h is None and headline:
        # Others have a case-level row, this one none (it completed no trial): not the
        # pooled number in the case-level column (the compatible table shows that one).
        return NO_EVALUATED_ATTEMPT
    if h is None:  # an AgenticLens report: no case-level numbers to lead with
        rate = _pct(row["case_pass_rate"])
        if not math.isnan(row["case_pass_rate_ci_low"]):
            rate += f" [{row['case_pass_rate_ci_low']:.0%}–{row['case_pass_rate_ci_high']:.0%}]"
        return rate + " †"
    rate = _pct(h["estimate"])
    if not math.isnan(h["ci_low"]):
        return rate + f" [{h['ci_low']:.0%}–{h['ci_high']:.0%}]"
    # Why there is none (one cluster), as the JSON's note says it: a bare rate read as one
    # without uncertainty.
    return f"{rate} ({missing_interval_reason(h)})"


def variant_notes(analysis: ExperimentAnalysis, case_level: bool) -> list[str]:
    """What each number of the variant table is, said where it is shown; ``case_level``:
    the pass rate column holds the case-level rates (:func:`pass_rates`).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> variant_notes(a, True)[-1][:46]
    'retrieval-dense: 1 of 5 trials failed; the pas'
    """
    level = f"{analysis.confidence_level:.0%}"
    # Under a declared cluster the interval's unit is the cluster (CR1), not the case.
    unit = pass_rate_unit(pass_rates(analysis).values()) if case_level else "cases"
    notes = [
        f"Pass rate: mean over the evaluated attempts, {level} interval with {unit} as the "
        "unit (the case-level interval); the same mean the factor levels and the Pareto view "
        "use."
        if case_level
        else "† Pass rate: AgenticLens's case pass rate with a pooled Wilson interval that "
        "treats attempts as independent (this report has no case-level numbers).",
        "Trial success: share of trials in which every case passed (AgenticLens's "
        "'reliability', its trial success rate); it falls towards 0% as a suite grows, so 0% "
        "does not mean nothing passed — pass^k below is the per-case reliability the "
        "verdicts compare.",
        "Consistency: share of cases with the same outcome in every trial; a failed trial "
        "counts as a failure of every case (n/a: no trial completed).",
        "Score, Latency, Cost: AgenticLens's per-trial values averaged over the completed "
        "trials (a trial's mean latency, its total cost over the suite); the verdicts' "
        "latency and cost are per attempt.",
    ]
    frontier = membership_note(analysis.variants)
    if frontier is not None:
        notes.append(frontier)
    for row in analysis.variants.to_dict("records"):
        failed = int(row["attempted_trials"]) - int(row["completed_trials"])
        if failed and case_level:
            notes.append(
                f"{row['variant_id']}: {failed} of {int(row['attempted_trials'])} trials failed; "
                f"the pass rate above leaves {'it' if failed == 1 else 'them'} out, while the "
                f"AgenticLens case pass rate ({_pct(row['case_pass_rate'])}, below) counts "
                f"{'it' if failed == 1 else 'them'} as failing every case."
            )
    return notes


#: The variant table's columns (the console's and the Markdown summary's).
VARIANT_HEADER = (
    "Variant",
    "Pass rate",
    "Score",
    "Latency",
    "Cost",
    "Trial success",
    "Consistency",
    "Pareto",
)


def pass_rates(analysis: ExperimentAnalysis) -> dict[str, dict[str, Any]]:
    """Each variant's case-level pass rate row (:func:`headline_pass_rates`), by id.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> round(float(pass_rates(a)["retrieval-dense"]["estimate"]), 3)
    0.821
    """
    from ..paired.verdicts import headline_pass_rates

    summary = analysis.paired_frames.get("case_level_summary")
    return {str(r["variant_id"]): r for r in headline_pass_rates(summary).to_dict("records")}


def variant_cells(
    analysis: ExperimentAnalysis, headline: dict[str, dict[str, Any]] | None = None
) -> list[list[str]]:
    """The variant table's cells after the variant's id (:data:`VARIANT_HEADER`), one row
    per variant, as text; ``headline``: :func:`pass_rates` when already read.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> variant_cells(a)[0][:2]
    ['71.4% [57%–82%]', '0.884']
    """
    headline = pass_rates(analysis) if headline is None else headline
    return [
        [
            _pass_rate_cell(row, headline),
            f"{row['average_score_mean']:.3f}" if row["average_score_count"] else "n/a",
            f"{row['average_latency_ms_mean']:.0f} ms"
            if row["average_latency_ms_count"]
            else "n/a",
            f"${row['total_cost_usd_mean']:.4f}" if row["total_cost_usd_count"] else "n/a",
            f"{row['trial_success_rate']:.0%} "
            f"({row['completed_trials']}/{row['attempted_trials']} completed)",
            # With no completed trial every case "failed" alike: not a consistent variant.
            _pct(row["consistency_rate"], 0) if row["completed_trials"] else "n/a",
            membership_cell(row),
        ]
        for row in analysis.variants.to_dict("records")
    ]


def factor_header(analysis: ExperimentAnalysis) -> list[str]:
    """The factor-effects table's columns (the console's and the Markdown summary's): one
    p-value, the adjusted one under a declared correction, as the verdicts show theirs.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> factor_header(a)
    ['Term', 'Effect on pass rate', 'Adj. p', 'Estimated from']
    """
    correction = analysis.factor_effects.attrs.get("correction")
    p = "Adj. p" if correction not in (None, "none") else "p (not adjusted)"
    return ["Term", "Effect on pass rate", p, "Estimated from"]


def _factor_rows(analysis: ExperimentAnalysis) -> list[dict[str, Any]]:
    """The pass-rate rows of the factor effects (none when the design has no factor
    effects: one factor, or a saved report without them)."""
    fe = getattr(analysis, "factor_effects", None)
    if fe is None or fe.empty:
        return []
    return [r for r in fe.to_dict("records") if r["metric"] == "pass_rate"]


def factor_cells(analysis: ExperimentAnalysis) -> list[list[str]]:
    """Which factor did it, as text: one row per pass-rate term of the factor effects
    (:func:`factor_header`), the effect with its interval in percentage points as the
    verdicts write a difference, and the adjusted p (equal to the p-value without a
    correction); [] without factor effects.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> factor_cells(a)[1]
    ['prompt: v2 vs v1', '+15.7 pp [-0.4, +31.9]', '0.223', 'prompt-v2, large-v2']
    >>> factor_cells(a)[4][1:]
    ['not estimable', '—', '—']
    """
    from ..paired.verdicts import format_difference, format_interval

    def p(value: float) -> str:
        return "—" if math.isnan(value) else f"{value:.3g}"

    rows = _factor_rows(analysis)
    # Without a declared correction the p-value itself (the header says not adjusted).
    adjusted = bool(rows) and analysis.factor_effects.attrs.get("correction") not in (None, "none")
    cells = []
    for r in rows:
        # A term the design cannot separate has no estimate: said so, not "+nan pp".
        effect = (
            "not estimable"
            if math.isnan(r["estimate"])
            else f"{format_difference(r['estimate'], 'proportion')} "
            f"{format_interval(r['ci_low'], r['ci_high'], 'proportion')}"
        )
        through = ", ".join(str(v) for v in r["through"]) or "—"
        shown = r["p_adjusted"] if adjusted else r["p_value"]
        cells.append([str(r["term"]), effect, p(shown), through])
    return cells


def factor_title(analysis: ExperimentAnalysis) -> str:
    """The factor effects' heading on every surface; in a run the early-stopping rule
    watched they are fixed-sample numbers, descriptive as the verdicts are there.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> factor_title(analyze(load_experiment("data/support/manifest.yaml",
    ...                                      "data/support/suite.yaml")))
    'Which factor did it'
    """
    from ..early_stopping import descriptive_suffix, early_stopping, stopped_early

    if early_stopping(analysis) is None:
        return "Which factor did it"
    return f"Which factor did it (fixed-sample) {descriptive_suffix(stopped_early(analysis))}"


def factor_correction_statement(analysis: ExperimentAnalysis) -> str:
    """Which family the factor effects' adjusted p-values are corrected over, in words: the
    factor terms' own, not the verdicts', so a reader does not take one for the other
    ("" without factor effects).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> factor_correction_statement(a)[:72]
    'p adjusted: the declared Holm correction over the estimable factor-effec'
    """
    from ..factorial import CORRECTION_FAMILY
    from ..paired.verdicts import CORRECTION_NAMES

    fe = getattr(analysis, "factor_effects", None)
    if fe is None or fe.empty:
        return ""
    correction = fe.attrs.get("correction")
    if not correction:
        return (
            "No correction was declared, so the p-values are unadjusted (declare one in the "
            "manifest's comparisons block)."
        )
    if correction == "none":
        return "No correction, as declared: the adjusted p-values equal the p-values."
    terms = int((fe["estimable"].astype(bool) & (fe["metric"] == "pass_rate")).sum())
    verdicts = analysis.verdicts
    theirs = (
        f", against the verdicts' {int(verdicts['family_size'].iloc[0])} comparisons"
        if verdicts.attrs.get("declared") and len(verdicts)
        else ""
    )
    return (
        f"p adjusted: the declared {CORRECTION_NAMES.get(correction, correction)} "
        f"correction over {CORRECTION_FAMILY}: here {count_noun(terms, 'term')}"
        f"{theirs}. So for the "
        "same contrast it is not the verdict's adjusted p; the verdicts above decide each "
        "candidate."
    )


def factor_notes(analysis: ExperimentAnalysis) -> list[str]:
    """What the factor-effects table is: the design, its notes (what is not estimable and
    what that assumes) and the correction; [] without factor effects.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> factor_notes(a)[0][:60]
    'Design: incomplete design: 5 variants over 3 factors (model,'
    """
    if not _factor_rows(analysis):
        return []
    fe = analysis.factor_effects
    level = float(fe.attrs.get("confidence_level", analysis.confidence_level))
    return [
        f"Design: {fe.attrs.get('design', '')}. Effects on each case's pass rate over its "
        "evaluated attempts, the case as the unit, with "
        f"{level:.0%} intervals ({fe.attrs.get('method', '')}); the score's effects are in "
        "the JSON report.",
        *(str(n) for n in fe.attrs.get("design_notes", [])),
        factor_correction_statement(analysis),
    ]


def _factor_table(analysis: ExperimentAnalysis, console: Console) -> None:
    """Which factor did it: the factor effects on pass rate, when the design has them."""
    cells = factor_cells(analysis)
    if not cells:
        return
    table = Table(title=Text(factor_title(analysis)), caption_justify="left")
    for name in factor_header(analysis):
        table.add_column(name, justify="left" if name in ("Term", "Estimated from") else "right")
    for row in cells:
        table.add_row(*(_t(c) for c in row))
    table.caption = Text(strip_control("\n".join(factor_notes(analysis))))
    console.print(table)


def _gate_lines(analysis: ExperimentAnalysis) -> tuple[bool, list[Text]]:
    """The non-inferiority gates, when set: every (candidate, dimension) with its bound
    beside the margin, in the dimension's unit, and whether all passed (True, no lines,
    without a gate). A failed gate is printed before the verdicts, a passed one after them,
    as on every surface (docs/statistics.md)."""
    from ..paired.gate import gate_statement

    gate = analysis.paired_frames.get("noninferiority")
    if gate is None:
        return True, []
    comparisons = analysis.paired_frames.get("paired_comparisons")
    passed, headline, details = gate_statement(gate, comparisons, every=True)
    lines = [Text(strip_control(headline), style="green" if passed else "red")]
    return passed, lines + [Text("  " + strip_control(line)) for line in details]


def print_summary(analysis: ExperimentAnalysis, console: Console | None = None) -> None:
    """Print the verdicts first, then the variant and pass@k tables, the
    AgenticLens-compatible numbers (labelled as such), the frontier and warnings. A failed
    non-inferiority gate comes before the verdicts, a passed one after them.

    After an early stop (``stop_when="decided"``) the stopping decision comes first and
    the verdicts follow, labelled descriptive; so in a run the rule watched but never
    stopped, with its final state (docs/statistics.md §13)."""
    console = console or Console()
    if console.quiet:
        # rich renders whatever it is given and only then drops it when quiet: the
        # tables below cost 0.05–0.08 s at 5 000 cases to print nothing.
        return
    from ..early_stopping import early_stopping, stopped_early

    info = analysis.info
    vs = analysis.variants
    stopping, stopped = early_stopping(analysis), stopped_early(analysis)
    if stopping is not None:
        # Stopped or run to the end: the rule's statement leads (docs/statistics.md §13).
        _stopping_table(analysis, stopping, console)
    # A failed non-inferiority gate is what the exit status (5) acts on: it leads the
    # verdicts, whose "no detectable difference" rows would read as reassurance above it;
    # a passed one follows them (the page's, the explorer's and --summary's order).
    gate_passed, gate_lines = _gate_lines(analysis)
    named = stopping is not None  # the stopping table's title names the experiment
    if not gate_passed and gate_lines:
        if not named:
            # The experiment's name above its failed gate: in a CI log of several
            # experiments, a gate printed above the name read as the previous one's.
            console.print(
                Text(f"Experiment · {strip_control(info['experiment_name'])}", style="bold")
            )
            named = True
        for line in gate_lines:
            console.print(line)
    _verdict_table(
        analysis, console, descriptive=stopping is not None, stopped=stopped, named=not named
    )
    for line in gate_lines if gate_passed else []:
        console.print(line)
    headline = pass_rates(analysis)
    table = Table(title=Text("Variants"), caption_justify="left")
    for name in VARIANT_HEADER:
        justify = "left" if name == "Variant" else "center" if name == "Pareto" else "right"
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    k_table = Table(title="pass@k / pass^k (mean over cases)")
    k_table.add_column("Variant")
    for k in analysis.pass_k:
        k_table.add_column(f"pass@{k}", justify="right")
        k_table.add_column(f"pass^{k}", justify="right")
    for row, cells in zip(vs.to_dict("records"), variant_cells(analysis, headline), strict=True):
        table.add_row(_t(row["variant_id"]), *cells)
        k_table.add_row(
            _t(row["variant_id"]),
            *[
                _pct(row[f"{name}_{k}"])
                for k in analysis.pass_k
                for name in ("pass_at", "pass_hat")
            ],
        )
    table.caption = Text(strip_control("\n".join(variant_notes(analysis, bool(headline)))))
    if (vs["attempted_trials"] > vs["completed_trials"]).any():
        k_table.caption = Text(
            "A failed trial counts as failed attempts here (as in AgenticLens), so pass@1 is "
            "the AgenticLens case pass rate, not the pass rate of the variant table."
        )
        k_table.caption_justify = "left"
    console.print(table)
    console.print(k_table)
    _factor_table(analysis, console)
    _compat_table(analysis, console)
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
    for warning in [*headline_warnings(analysis.warnings), *target_failure_warnings(analysis)]:
        console.print(Text(f"! {single_line(warning)}", style="yellow"))
    # Judges (docs/judges.md): their cost apart from the agent's, and where their noise,
    # not the agent's, limits detection.
    for line in judge_cost_lines(analysis):
        console.print(Text(strip_control(line)))
    for note in judge_noise_notes(analysis):
        console.print(Text(f"! {strip_control(note)}", style="yellow"))


def _where_significance_is(analysis: ExperimentAnalysis, where: str = "above") -> str:
    """Where the compat section sends the reader for significance: the verdicts ``where``
    (above), or, without a declared correction (no verdicts, only per-comparison
    intervals), nowhere yet — pointing at verdicts that are not there would lend these
    p-values weight."""
    if analysis.verdicts.attrs.get("declared", False):
        return f"read the verdicts {where} for significance"
    return f"no verdict is given without a declared correction (see the note {where})"


#: The AgenticLens-compatible table's columns (the console's and the Markdown summary's).
COMPAT_HEADER = (
    "Variant",
    "Case pass rate [pooled Wilson]",
    "Δ pass rate",
    "z-test p",
    "Δ score",
    "Δ latency",
    "Δ cost",
    "Changed factors",
)

#: What the compatible numbers are, said above them (the title after "· baseline: …").
COMPAT_TITLE = "AgenticLens-compatible numbers (attempts treated as independent; not a verdict)"


def compat_cells(analysis: ExperimentAnalysis) -> list[list[str]]:
    """AgenticLens's own numbers per variant, as text: the cells after the variant's id
    (:data:`COMPAT_HEADER`); the baseline's deltas are ``-``. Never marked significant:
    they pool every attempt as independent.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> compat_cells(a)[2][:3]
    ['87.1% [77%–93%]', '+15.7 pp', '0.022']
    """
    from ..paired.verdicts import format_difference

    by_candidate = {
        str(c["candidate_variant_id"]): c for c in analysis.comparisons.to_dict("records")
    }
    rows = []
    for row in analysis.variants.to_dict("records"):
        rate = _pct(row["case_pass_rate"])
        if not math.isnan(row["case_pass_rate_ci_low"]):
            rate += f" [{row['case_pass_rate_ci_low']:.0%}–{row['case_pass_rate_ci_high']:.0%}]"
        c = by_candidate.get(str(row["variant_id"]))
        if c is None:
            rows.append([rate, *(["-"] * 6)])
            continue
        p = c["case_pass_rate_p_value"]
        factors = ", ".join(f"{n}: {v[0]} → {v[1]}" for n, v in c["changed_factors"].items())
        rows.append(
            [
                rate,
                # In the verdicts' units: points of pass rate, not a relative "%".
                format_difference(c["case_pass_rate_delta"], "proportion"),
                "n/a" if math.isnan(p) else f"{p:.3f}",
                "n/a"
                if math.isnan(c["average_score_delta"])
                else f"{c['average_score_delta']:+.3f}",
                "n/a"
                if math.isnan(c["average_latency_ms_delta"])
                else f"{c['average_latency_ms_delta']:+.1f} ms",
                "n/a"
                if math.isnan(c["total_cost_usd_delta"])
                else f"{c['total_cost_usd_delta']:+.4f} USD",
                factors or "-",
            ]
        )
    return rows


def compat_caption(analysis: ExperimentAnalysis, where: str = "above") -> str:
    """What the compatible numbers assume, said under them (``where`` the verdicts are).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> compat_caption(a, "at the top").split("; ")[-1]
    'read the verdicts at the top for significance.'
    """
    return (
        "Case pass rate counts a failed trial as failing every case. The interval and the "
        "z-test pool all attempts as if independent; attempts on one case are correlated, "
        "so they are too narrow and too small. They match AgenticLens 0.10 and the JSON/CSV "
        f"reports; {_where_significance_is(analysis, where)}."
    )


def _compat_table(analysis: ExperimentAnalysis, console: Console) -> None:
    """AgenticLens's own numbers, unchanged, in a section that says what they assume.

    They pool every attempt as independent (Wilson interval, z test), so they are never
    marked significant here: the verdicts above are the significance statement.
    """
    title = Text(
        f"{COMPAT_TITLE} · baseline: {strip_control(analysis.info['baseline_variant_id'])}"
    )
    deltas = Table(title=title, caption_justify="left")
    for name in COMPAT_HEADER:
        deltas.add_column(
            name, justify="left" if name in ("Variant", "Changed factors") else "right"
        )
    for row, cells in zip(
        analysis.variants.to_dict("records"), compat_cells(analysis), strict=True
    ):
        deltas.add_row(_t(row["variant_id"]), *cells[:-1], _t(cells[-1]))
    deltas.caption = Text(compat_caption(analysis))
    console.print(deltas)
