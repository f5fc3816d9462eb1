"""The early-stopping statement (``stop_when="decided"``) in words, for every surface.

In a run the rule watched — stopped early or run to the end of its plan — the stopping
rule's statement is the inferential one and the fixed-sample verdicts are descriptive
(docs/statistics.md §13: read as well, they would give the run a second chance at a false
claim), so the console, the HTML page and ``experiment report`` lead with it; they all
word it from the report's ``early_stopping`` block through these helpers, and the exit
code follows it
(:func:`stop_regressions`). Nothing here computes a statistic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape
from typing import Any, Protocol

from ._stopping_block import check_block, declared_correction, is_clustered
from ._values import count_noun
from .paired.verdicts import CORRECTION_NAMES, format_difference, format_interval

__all__ = [
    "DESCRIPTIVE_NOTE",
    "WATCHED_NOTE",
    "attempts_statement",
    "check_block",
    "decision_rows",
    "descriptive_note",
    "descriptive_suffix",
    "descriptive_title",
    "differences_statement",
    "early_stopping",
    "rule_statement",
    "sequence_leads",
    "stop_regressions",
    "stopped_early",
    "stopping_section_html",
    "unit_statement",
]

#: The page's verdict classes (as its verdict table colours better and worse).
_CLASSES = {"better": "good", "worse": "bad"}

#: Said beside the fixed-sample verdicts of a run that stopped early.
DESCRIPTIVE_NOTE = (
    "The run stopped early, so these fixed-sample numbers are descriptive: their intervals "
    "and p-values assume a sample size fixed in advance (they are not anytime-valid) and "
    "the estimates lean away from 0. The stopping decision above is the inferential "
    "statement, and --fail-on-regression follows it."
)
#: Said beside the fixed-sample verdicts of a run the rule watched to the end of its plan.
WATCHED_NOTE = (
    "The early-stopping rule watched this run to the end of its plan, so these fixed-sample "
    "numbers are descriptive: read as well as the rule's statement, they would give the run "
    "a second chance at a false claim. The rule's anytime-valid statement above is the "
    "inferential one (not decided: no claim), and --fail-on-regression follows it."
)


class Analysis(Protocol):
    """What this module reads of an :class:`~agenticlens_frames.analysis.ExperimentAnalysis`:
    its ``extras`` (the ``early_stopping`` block). Named so, not imported: the analysis'
    notebook display reads this module (below the analysis, beside the verdicts' words),
    which would otherwise import it back."""

    @property
    def extras(self) -> Mapping[str, Any] | None: ...


def early_stopping(a: Analysis) -> Mapping[str, Any] | None:
    """The analysis' ``early_stopping`` block (a live run with ``stop_when``), or None."""
    block = (a.extras or {}).get("early_stopping")
    return block if isinstance(block, Mapping) and block else None


def descriptive_title(title: str, stopped: bool = True) -> str:
    """The heading of the fixed-sample verdicts of a watched run, from a surface's heading
    of the verdicts (``"Verdicts against …"``): after an early stop, or (``stopped``
    False) at the end of a run the rule watched but never stopped.

    The one place these words are built: the explorer had titled the table "(case-level;
    descriptive)" and the ``--summary`` added "(descriptive after the early stop)" without
    "Fixed-sample", while the console and the page said the words below.

    Examples
    --------
    >>> descriptive_title("Verdicts against base: case-level paired comparisons")
    'Fixed-sample verdicts against base: case-level paired comparisons — descriptive after \
the early stop'
    >>> descriptive_title("Verdicts against base", stopped=False)
    'Fixed-sample verdicts against base — descriptive beside the early-stopping rule'
    """
    return f"Fixed-sample {title[0].lower()}{title[1:]} {descriptive_suffix(stopped)}"


def descriptive_suffix(stopped: bool = True) -> str:
    """What follows the title of fixed-sample numbers in a run the rule watched (the
    verdicts', by :func:`descriptive_title`, and the factor effects').

    Examples
    --------
    >>> descriptive_suffix(), descriptive_suffix(stopped=False)
    ('— descriptive after the early stop', '— descriptive beside the early-stopping rule')
    """
    after = "after the early stop" if stopped else "beside the early-stopping rule"
    return f"— descriptive {after}"


def descriptive_note(stopped: bool = True) -> str:
    """:data:`DESCRIPTIVE_NOTE` after an early stop, else :data:`WATCHED_NOTE`."""
    return DESCRIPTIVE_NOTE if stopped else WATCHED_NOTE


def stopped_early(a: Analysis) -> bool:
    """The run was stopped by the rule (its fixed-sample numbers are then descriptive)."""
    block = early_stopping(a)
    return bool(block and block.get("stopped_early"))


def sequence_leads(a: Analysis) -> bool:
    """The rule watched the run (stopped early or to the end of its plan): its statement
    leads, the fixed-sample verdicts follow as descriptive and do not gate.

    A run that never stopped leads with the sequence's final state too: its fixed-sample
    verdicts, leading, gave it a second chance at a false claim (docs/statistics.md §13).
    Only a run whose sequence is over carries the block."""
    return early_stopping(a) is not None


def _corrections(block: Mapping[str, Any]) -> tuple[str, str | None]:
    """(applied, declared). Reports before ``declared_correction`` held the declared one
    in ``correction``; the rule applied Bonferroni exactly when it split α."""
    declared = declared_correction(block)
    if "declared_correction" in block:
        return str(block["correction"]), declared
    split = not math.isclose(float(block["alpha_per_candidate"]), float(block["alpha"]))
    return ("bonferroni" if split else "none"), declared


def rule_statement(block: Mapping[str, Any]) -> str:
    """α and the correction the stopping rule applied, beside the declared one.

    Examples
    --------
    >>> block = {"alpha": 0.05, "alpha_per_candidate": 0.025, "correction": "bonferroni",
    ...          "declared_correction": "holm", "candidates": [{}, {}]}
    >>> for part in rule_statement(block).split("; "):
    ...     print(part)
    Bonferroni across the 2 candidates: α/m = 0.025 each (α = 0.05)
    the declared Holm correction applies to the fixed-sample verdicts
    >>> rule_statement({**block, "candidates": [{}], "rule_candidates": 2}).split("; ")[0]
    'Bonferroni across the 2 candidates: α/m = 0.025 each (α = 0.05)'
    """
    applied, declared = _corrections(block)
    alpha = float(block["alpha"])
    # A block restricted to some candidates (a slice of an archived run) keeps how many
    # the rule decided across: α was split by those.
    m = block.get("rule_candidates", len(block.get("candidates", [])))
    named = CORRECTION_NAMES.get(str(declared), str(declared))
    if applied == "bonferroni":
        text = (
            f"Bonferroni across the {m} candidates: α/m = "
            f"{float(block['alpha_per_candidate']):.4g} each (α = {alpha:g})"
        )
        if declared not in (None, "bonferroni"):
            text += f"; the declared {named} correction applies to the fixed-sample verdicts"
        return text
    if m > 1:
        return f"no correction (declared none): α = {alpha:g} for each candidate"
    return f"one candidate: α = {alpha:g}, nothing to correct"


def unit_statement(block: Mapping[str, Any]) -> str:
    """With declared clusters: that the sequence ran at the cluster level, its estimand,
    and the clusters used ("" without clusters).

    Examples
    --------
    >>> unit_statement({"unit": "cluster", "cluster": "topic", "clusters_used": 12,
    ...                 "clusters_planned": 30})  # doctest: +NORMALIZE_WHITESPACE
    "The sequence ran at the cluster level (metadata field 'topic'): one observation per
    completed cluster, the mean difference over its paired cases, every cluster weighing
    the same; 12 of 30 clusters used"
    >>> unit_statement({})
    ''
    """
    if not is_clustered(block):
        return ""
    return (
        f"The sequence ran at the cluster level (metadata field {str(block.get('cluster'))!r}): "
        "one observation per completed cluster, the mean difference over its paired cases, "
        f"every cluster weighing the same; {block.get('clusters_used')} of "
        f"{block.get('clusters_planned')} clusters used"
    )


def differences_statement(block: Mapping[str, Any]) -> str:
    """What the anytime-valid intervals are intervals of, in words.

    Examples
    --------
    >>> differences_statement({})  # doctest: +NORMALIZE_WHITESPACE
    'Each candidate minus the baseline in pass rate, case by case over the evaluated
    attempts; the interval is a confidence sequence, valid however often it was checked'
    """
    if is_clustered(block):
        return (
            "Each candidate minus the baseline in pass rate over the evaluated attempts, "
            "averaged within each cluster of cases and then over clusters; the interval is a "
            "confidence sequence over the clusters, valid however often it was checked"
        )
    return (
        "Each candidate minus the baseline in pass rate, case by case over the evaluated "
        "attempts; the interval is a confidence sequence, valid however often it was checked"
    )


def _decision(candidate: Mapping[str, Any], margin: Any) -> str:
    decision = candidate.get("decision")
    if decision is None:
        return "not decided"
    if decision == "within ±δ" and margin is not None:
        return "within ±" + format_difference(float(margin), "proportion").lstrip("+")
    return str(decision)


def _interval(c: Mapping[str, Any]) -> str:
    """A candidate's anytime-valid interval in pp, or that its sequence is empty (every
    value excluded: the data fit no difference, a chance of at most α; no claim)."""
    lower, upper = c.get("lower"), c.get("upper")
    if lower is None or upper is None or math.isnan(lower) or math.isnan(upper):
        return "empty (no difference fits the data; no claim)"
    return format_interval(float(lower), float(upper), "proportion") + " pp"


def decision_rows(block: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per candidate: its decision, anytime-valid interval (pp) and paired cases, as text.

    Examples
    --------
    >>> block = {"margin": 0.15, "candidates": [{"candidate_variant_id": "b",
    ...          "decision": "within ±δ", "lower": -0.1, "upper": 0.05, "paired_cases": 40}]}
    >>> list(decision_rows(block)[0].values())
    ['b', 'within ±15.0 pp', '[-10.0, +5.0] pp', '40']
    """
    rows = []
    for c in block.get("candidates", []):
        paired = c.get("paired_cases")
        rows.append(
            {
                "candidate": str(c["candidate_variant_id"]),
                "decision": _decision(c, block.get("margin")),
                "interval": _interval(c),
                # Reports written before paired_cases do not have it.
                "paired_cases": _paired(paired, c.get("paired_clusters")),
            }
        )
    return rows


def _paired(cases: Any, clusters: Any) -> str:
    """Paired cases, and with clusters the clusters they make up (the sequence's units)."""
    text = "n/a" if cases is None else str(int(cases))
    if clusters is not None:
        text += f" ({count_noun(int(clusters), 'cluster')})"
    return text


def attempts_statement(block: Mapping[str, Any]) -> str:
    """What the rule saved (or that it did not stop), in attempts.

    Examples
    --------
    >>> attempts_statement({"stopped_early": True, "attempts_saved": 3240,
    ...                     "attempts_planned": 3600, "attempts_skipped": 0})
    '3240 of 3600 planned attempts saved'
    >>> attempts_statement({"stopped_early": True, "attempts_saved": 3234,
    ...                     "attempts_planned": 3600, "attempts_after_decision": 6})
    '3234 of 3600 planned attempts saved (6 more had started before the stop, and ran)'
    """
    planned = block["attempts_planned"]
    if block.get("stopped_early"):
        text = f"{block['attempts_saved']} of {planned} planned attempts saved"
        # Already running when the stop took effect: paid for, not in the tables (a report
        # written before the count was kept has no such key).
        after = int(block.get("attempts_after_decision") or 0)
        if after:
            text += f" ({after} more had started before the stop, and ran)"
    else:
        text = f"{block['attempts_run']} of {planned} planned attempts run"
    skipped = int(block.get("attempts_skipped") or 0)
    if skipped:
        text += f"; {skipped} not run because their trial had failed (not saved by stopping)"
    return text


def stop_regressions(block: Mapping[str, Any]) -> list[dict[str, str]]:
    """The candidates decided *worse*: after an early stop, what fails
    ``--fail-on-regression`` (the rows of :func:`decision_rows`)."""
    worse = {
        str(c["candidate_variant_id"])
        for c in block.get("candidates", [])
        if c.get("decision") == "worse"
    }
    return [row for row in decision_rows(block) if row["candidate"] in worse]


def _sentence(text: str) -> str:
    """`` text.`` after a sentence, or nothing for no text."""
    return f" {text}." if text else ""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _heading(block: Mapping[str, Any]) -> str:
    return f"Early stopping: {block['reason']}"


def stopping_section_html(a: Analysis) -> str:
    """The page's early-stopping section ("" without one); see :func:`rule_statement`."""
    block = early_stopping(a)
    if block is None:
        return ""
    stopped = bool(block.get("stopped_early"))
    rows = "".join(
        f"<tr data-variant='{_e(r['candidate'])}'><td><strong>{_e(r['candidate'])}</strong></td>"
        f"<td class='verdict {_CLASSES.get(r['decision'], '')}'>"
        f"<strong>{_e(r['decision'])}</strong></td><td>{_e(r['interval'])}</td>"
        f"<td>{_e(r['paired_cases'])}</td></tr>"
        for r in decision_rows(block)
    )
    # A stopped run's sample size depends on the data, and a watched run's verdicts would
    # be its second chance at a false claim: the rule's statement is what to read first.
    lead, tail = (
        (
            "The stopping decision is the inferential statement of this run; the verdicts "
            "below are descriptive. ",
            " The tables and every number on this page use the cases run before the decision.",
        )
        if stopped
        else (
            "The rule's anytime-valid statement at the end of the plan is the inferential "
            "statement of this run (not decided: no claim); the verdicts below are "
            "descriptive. ",
            "",
        )
    )
    return (
        f"<section id='early-stopping'><h2>{_e(_heading(block))}</h2>"
        f"<p>{_e(lead)}{_e(attempts_statement(block))}. {_e(rule_statement(block))}."
        f"{_e(_sentence(unit_statement(block)))}{_e(tail)}</p>"
        "<div class='scroll'><table class='verdicts'><tr><th>Candidate</th><th>Decision</th>"
        "<th>Anytime-valid interval<br><small>pass rate, candidate − baseline</small></th>"
        f"<th>Paired cases</th></tr>{rows}</table></div>"
        f"<p class='note'>{_e(block['method'])}.</p></section>"
    )
