"""Score a whole recorded trial at once, one check kind at a time, into Arrow columns.

:func:`~agenticlens_frames.scoring.score_sample` scores one sample: for every check it
formats the check's name and explanation and appends six values to Python lists. For a
replayed trial of thousands of cases that per-sample work was most of the scoring time.
Here the suite is compiled once into a :class:`SuitePlan` (every check's row, name,
metric and both explanations, written out in advance), and a trial is scored kind by kind
over all its samples; the columns come out as Arrow arrays, ready to be joined.

The rules, names, order and explanations are :func:`score_sample`'s, which stays the
reference: ``tests/test_scoring_batch.py`` checks the two against each other, and the
differential tests check both against the real package. Only the built-in checks whose
outcome is a plain comparison are planned; a suite with any other check (JSON schema,
required fields, tool arguments, tool order, registered evaluators) has no plan, and a
trial with a missing sample is scored sample by sample — both as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .frames import table_turns
from .scoring import (
    CHECK_TEXTS,
    _exact_match_applies,
    cost_text,
    latency_text,
    positive_turn_count,
    turns_text,
)

if TYPE_CHECKING:
    from .formats.model import CaseSpec, SuiteSpec
    from .formats.recorded import TrialColumns

__all__ = ["SuitePlan", "plan_suite", "score_trial"]

#: Check kinds a plan scores, in score_sample's emission order.
_KINDS = (
    "exact_match",
    "contains",
    "required_tool",
    "forbidden_tool",
    "latency_threshold",
    "cost_threshold",
    "turn_count_threshold",
)


@dataclass(frozen=True, slots=True)
class _KindRows:
    """Every check of one kind in the suite: its flat row, its case and its argument,
    and the explanations of a pass and a fail (empty for the thresholds, whose
    explanations quote the measured value and are written at scoring time)."""

    rows: np.ndarray
    cases: list[int]
    args: list[Any]
    yes: np.ndarray  # of str objects
    no: np.ndarray


@dataclass(frozen=True, slots=True)
class SuitePlan:
    """Every built-in check of a suite laid out as rows of a trial's ``checks`` columns.

    The checks of case *i* are rows ``starts[i] : starts[i] + n_checks[i]``, in
    :func:`~agenticlens_frames.scoring.score_sample`'s order.
    """

    n_checks: np.ndarray
    starts: np.ndarray
    names: pa.Array
    metrics: pa.Array
    kinds: dict[str, _KindRows]

    @property
    def n_rows(self) -> int:
        return len(self.names)


def _case_checks(case: CaseSpec) -> list[tuple[str, str, str, Any, str, str]] | None:
    """``(kind, name, metric, argument, yes, no)`` per check of ``case``, or None when the
    case has a check this module does not plan."""
    if (
        case.output_json_schema is not None
        or case.required_output_fields
        or case.required_tool_arguments
        or case.expected_tool_arguments
        or case.required_tool_order
        or case.evaluators
    ):
        return None
    out: list[tuple[str, str, str, Any, str, str]] = []
    if _exact_match_applies(case):
        out.append(
            (
                "exact_match",
                "exact_match",
                "exact_match",
                case.expected_output.strip(),  # type: ignore[union-attr]
                *CHECK_TEXTS["exact_match"],
            )
        )
    for expected in case.expected_contains:
        out.append(
            (
                "contains",
                f"contains:{expected}",
                "contains",
                expected.casefold(),
                *(text.format(expected) for text in CHECK_TEXTS["contains"]),
            )
        )
    for tool in case.required_tools:
        out.append(
            (
                "required_tool",
                f"required_tool:{tool}",
                "required_tool",
                tool,
                *(text.format(tool) for text in CHECK_TEXTS["required_tool"]),
            )
        )
    for tool in case.forbidden_tools:
        out.append(
            (
                "forbidden_tool",
                f"forbidden_tool:{tool}",
                "forbidden_tool",
                tool,
                *(text.format(tool) for text in CHECK_TEXTS["forbidden_tool"]),
            )
        )
    # The thresholds' explanations quote the measured value: written at scoring time.
    if case.max_latency_ms is not None:
        out.append(("latency_threshold",) * 3 + (case.max_latency_ms, "", ""))
    if case.max_cost_usd is not None:
        out.append(("cost_threshold",) * 3 + (case.max_cost_usd, "", ""))
    if case.max_turns is not None:
        out.append(("turn_count_threshold",) * 3 + (case.max_turns, "", ""))
    return out


def plan_suite(suite: SuiteSpec) -> SuitePlan | None:
    """Compile ``suite`` for :func:`score_trial`, or None if a case has a check that only
    :func:`~agenticlens_frames.scoring.score_sample` scores.

    Examples
    --------
    >>> from pathlib import Path
    >>> from agenticlens_frames.formats.model import CaseSpec, SuiteSpec
    >>> suite = SuiteSpec(Path("s.yaml"), "s", "1", (
    ...     CaseSpec("a", "A", 0, expected_contains=("x", "y")),
    ...     CaseSpec("b", "B", 1, max_latency_ms=10.0)))
    >>> plan = plan_suite(suite)
    >>> plan.n_checks.tolist(), plan.names.to_pylist()
    ([2, 1], ['contains:x', 'contains:y', 'latency_threshold'])
    """
    names: list[str] = []
    metrics: list[str] = []
    counts: list[int] = []
    by_kind: dict[str, tuple[list[int], list[int], list[Any], list[str], list[str]]] = {
        kind: ([], [], [], [], []) for kind in _KINDS
    }
    for index, case in enumerate(suite.cases):
        checks = _case_checks(case)
        if checks is None:
            return None
        counts.append(len(checks))
        for kind, name, metric, arg, yes, no in checks:
            rows, cases, args, yeses, nos = by_kind[kind]
            rows.append(len(names))
            cases.append(index)
            args.append(arg)
            yeses.append(yes)
            nos.append(no)
            names.append(name)
            metrics.append(metric)
    n_checks = np.asarray(counts, dtype=np.int64)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(n_checks[:-1], out=starts[1:])
    return SuitePlan(
        n_checks=n_checks,
        starts=starts,
        names=pa.array(names, type=pa.large_string()),
        metrics=pa.array(metrics, type=pa.string()),
        kinds={
            kind: _KindRows(
                np.asarray(rows, dtype=np.int64),
                cases,
                args,
                np.asarray(yes, dtype=object),
                np.asarray(no, dtype=object),
            )
            for kind, (rows, cases, args, yes, no) in by_kind.items()
            if rows
        },
    )


def score_trial(plan: SuitePlan, trial: TrialColumns) -> tuple[dict[str, pa.Array], dict[str, Any]]:
    """Score one sample per suite case: ``trial`` in case order (sample *i* answers case *i*).

    Returns
    -------
    checks, attempts
        The ``checks`` columns of the trial (``attempt`` is the case's position, i.e. the
        row of its attempt within the trial) as Arrow arrays, and per attempt ``passed``,
        ``score``, ``n_checks``, ``n_checks_passed``, ``score_sum`` and ``turns`` —
        exactly what :func:`~agenticlens_frames.scoring.score_sample` gives each sample.
    """
    outputs = trial.output
    n = plan.n_rows
    kinds = plan.kinds
    passed = np.zeros(n, dtype=bool)
    # Each row is one check of one kind: every row is written below.
    explanation = np.empty(n, dtype=object)

    def put(k: _KindRows, ok: list[bool], texts: Any) -> None:
        passed[k.rows] = ok
        explanation[k.rows] = texts

    def fixed(k: _KindRows, ok: list[bool]) -> None:
        put(k, ok, np.where(np.asarray(ok, dtype=bool), k.yes, k.no))

    if "exact_match" in kinds or "contains" in kinds:
        texts = [output.strip() for output in outputs]
        if (k := kinds.get("exact_match")) is not None:
            fixed(k, [texts[c] == want for c, want in zip(k.cases, k.args, strict=True)])
        if (k := kinds.get("contains")) is not None:
            folded = [text.casefold() for text in texts]
            fixed(k, [want in folded[c] for c, want in zip(k.cases, k.args, strict=True)])
    if "required_tool" in kinds or "forbidden_tool" in kinds:
        # Membership in the tuple of names equals membership in its set.
        tools = trial.tools
        if (k := kinds.get("required_tool")) is not None:
            fixed(k, [tool in tools[c] for c, tool in zip(k.cases, k.args, strict=True)])
        if (k := kinds.get("forbidden_tool")) is not None:
            fixed(k, [tool not in tools[c] for c, tool in zip(k.cases, k.args, strict=True)])
    if (k := kinds.get("latency_threshold")) is not None:
        latency = [trial.latency[c] for c in k.cases]
        ok = [value <= most for value, most in zip(latency, k.args, strict=True)]
        put(k, ok, list(map(latency_text, latency, k.args, ok)))
    if (k := kinds.get("cost_threshold")) is not None:
        cost = [trial.cost[c] for c in k.cases]
        ok = [value is not None and value <= most for value, most in zip(cost, k.args, strict=True)]
        put(k, ok, list(map(cost_text, cost, k.args, ok)))
    turns = list(map(positive_turn_count, trial.turn_count))
    if (k := kinds.get("turn_count_threshold")) is not None:
        counted = [turns[c] for c in k.cases]
        ok = [t is not None and t <= most for t, most in zip(counted, k.args, strict=True)]
        put(k, ok, list(map(turns_text, counted, k.args, ok)))

    n_cases = len(outputs)
    counts = plan.n_checks
    # Per attempt: how many of its checks passed. Built-in values are 1.0 / 0.0, so the
    # fsum of an attempt's values is this count exactly, and its mean count / n.
    cumulative = np.concatenate(([0], np.cumsum(passed, dtype=np.int64)))
    n_passed = cumulative[plan.starts + counts] - cumulative[plan.starts]
    has_checks = counts > 0
    score = np.divide(n_passed, counts, out=np.zeros(n_cases), where=has_checks)
    checks = {
        "attempt": pa.array(np.repeat(np.arange(n_cases, dtype=np.int64), counts)),
        "name": plan.names,
        "metric": plan.metrics,
        "value": pa.array(passed.astype(np.float64)),
        "passed": pa.array(passed),
        "explanation": pa.array(explanation, type=pa.large_string()),
    }
    attempts = {
        "passed": n_passed == counts,
        "score": pa.array(score, mask=~has_checks),
        "n_checks": counts.astype(np.int32),
        "n_checks_passed": n_passed.astype(np.int32),
        "score_sum": n_passed.astype(np.float64),
        "turns": pa.array(list(map(table_turns, turns)), type=pa.int32()),
    }
    return checks, attempts
