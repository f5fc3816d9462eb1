"""The trial scorer gives what scoring every sample on its own gives, check for check.

The reference is :func:`~agenticlens_frames.scoring.score_sample` (itself checked against
hand-written expectations in test_scoring.py and against the real package in the
differential tests); every planned check kind is exercised on its edges: casefolding,
whitespace, a limit met exactly, costs and turn counts that are missing, odd turn counts
(``True``, ``2.0``, 0), cases without any check.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef, SuiteSpec
from agenticlens_frames.formats.recorded import TrialColumns
from agenticlens_frames.formats.traces import normalize_trace
from agenticlens_frames.frames import CheckColumns
from agenticlens_frames.scoring import score_sample
from agenticlens_frames.scoring_batch import plan_suite, score_trial

TOOLS = ("search", "refund", "escalate")
WORDS = ("Refund", "STRASSE", "straße", "order 7", "", "ok")


def _random_case(rng: random.Random, index: int) -> CaseSpec:
    fields: dict = {}
    if rng.random() < 0.3:
        fields["expected_output"] = rng.choice([" ok ", "Refund", "straße"])
    if rng.random() < 0.6:
        fields["expected_contains"] = tuple(rng.sample(WORDS, rng.randint(1, 3)))
    if rng.random() < 0.5:
        fields["required_tools"] = tuple(rng.sample(TOOLS, rng.randint(1, 2)))
    if rng.random() < 0.4:
        fields["forbidden_tools"] = tuple(rng.sample(TOOLS, 1))
    if rng.random() < 0.5:
        fields["max_latency_ms"] = rng.choice([100.0, 250.5, 1000.0])
    if rng.random() < 0.4:
        fields["max_cost_usd"] = rng.choice([0.001, 0.0025, 1.0])
    if rng.random() < 0.4:
        fields["max_turns"] = rng.choice([1, 3])
    return CaseSpec(id=f"c{index}", name=f"case {index}", index=index, **fields)


def _random_sample(rng: random.Random) -> tuple[str, dict]:
    output = rng.choice(["  ok\n", "Refund issued, order 7", "Die Straße", "nothing", ""])
    trace: dict = {
        "spans": [{"tool_name": t} for t in rng.sample(TOOLS, rng.randint(0, 3))],
        "total_latency_ms": rng.choice([99.94, 100.0, 250.5, 250.56, 4000.0]),
    }
    cost = rng.choice([None, 0.0025, 0.00249999, 2.0])
    if cost is not None:
        trace["estimated_cost_usd"] = cost
        trace["cost_source"] = rng.choice(["measured", "estimated", None])
    turns = rng.choice([None, 0, 1, 3, 4, True, 2.0, "3"])
    if turns is not None:
        trace["metadata"] = {"turn_count": turns}
    return output, trace


def _columns(outputs: list[str], traces: list) -> TrialColumns:
    columns = TrialColumns.empty()
    for index, (output, trace) in enumerate(zip(outputs, traces, strict=True)):
        columns.append(index, output, trace)
    return columns


def _reference(suite: SuiteSpec, outputs: list[str], traces: list) -> tuple[CheckColumns, list]:
    sink = CheckColumns()
    results = [
        score_sample(case, output, trace, sink, row)
        for row, (case, output, trace) in enumerate(zip(suite.cases, outputs, traces, strict=True))
    ]
    return sink, results


@pytest.mark.parametrize("seed", range(8))
def test_trial_scores_equal_per_sample_scores(seed: int) -> None:
    rng = random.Random(seed)
    cases = tuple(_random_case(rng, i) for i in range(60))
    suite = SuiteSpec(Path("s.yaml"), "s", "1", cases)
    samples = [_random_sample(rng) for _ in cases]
    outputs = [output for output, _ in samples]
    traces = [normalize_trace(trace) for _, trace in samples]

    plan = plan_suite(suite)
    assert plan is not None
    checks, scores = score_trial(plan, _columns(outputs, traces))
    sink, results = _reference(suite, outputs, traces)

    assert checks["attempt"].to_pylist() == sink.attempt
    assert checks["name"].to_pylist() == sink.name
    assert checks["metric"].to_pylist() == sink.metric
    assert checks["value"].to_pylist() == sink.value
    assert checks["passed"].to_pylist() == sink.passed
    assert checks["explanation"].to_pylist() == sink.explanation
    assert scores["passed"].tolist() == [r.passed for r in results]
    assert scores["n_checks"].tolist() == [r.n_checks for r in results]
    assert scores["n_checks_passed"].tolist() == [r.n_checks_passed for r in results]
    assert scores["score_sum"].tolist() == [r.score_sum for r in results]
    assert scores["turns"].to_pylist() == [int(r.turns) if r.turns else None for r in results]
    ours = scores["score"].to_pylist()
    for mine, ref in zip(ours, results, strict=True):
        if ref.score is None:
            assert mine is None
        else:  # bit for bit, not approximately
            assert mine == ref.score and math.copysign(1, mine) == math.copysign(1, ref.score)


def test_case_without_checks_passes_with_no_score() -> None:
    suite = SuiteSpec(
        Path("s.yaml"), "s", "1", (CaseSpec("a", "A", 0), CaseSpec("b", "B", 1, max_turns=2))
    )
    traces = [normalize_trace({}), normalize_trace({"metadata": {"turn_count": 2}})]
    plan = plan_suite(suite)
    assert plan is not None
    checks, scores = score_trial(plan, _columns(["x", "y"], traces))
    assert checks["attempt"].to_pylist() == [1]
    assert scores["passed"].tolist() == [True, True]
    assert scores["score"].to_pylist() == [None, 1.0]
    assert scores["score_sum"].tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    "fields",
    [
        {"output_json_schema": {"type": "object"}},
        {"required_output_fields": ("a",)},
        {"required_tool_arguments": {"search": ("q",)}},
        {"expected_tool_arguments": {"search": {"q": 1}}},
        {"required_tool_order": ("a", "b")},
        {"evaluators": (EvaluatorRef(name="judge"),)},
    ],
)
def test_suites_with_other_checks_are_not_planned(fields: dict) -> None:
    # These stay with score_sample: the whole suite is scored sample by sample.
    cases = (CaseSpec("a", "A", 0, max_turns=2), CaseSpec("b", "B", 1, **fields))
    assert plan_suite(SuiteSpec(Path("s.yaml"), "s", "1", cases)) is None


# One check kind per suite: each kind's scoring is reached on its own, not only beside the
# kind it shares a pass with (exact_match with contains, required with forbidden tools).
_ONE_KIND = {
    "exact_match": ({"expected_output": " Refund "}, ["Refund\n", "refund"], [{}, {}]),
    "contains": ({"expected_contains": ("STRASSE",)}, ["Die Straße", "Die Strase"], [{}, {}]),
    "required_tool": (
        {"required_tools": ("refund",)},
        ["", ""],
        [{"spans": [{"tool_name": "refund"}]}, {"spans": [{"tool_name": "search"}]}],
    ),
    "forbidden_tool": (
        {"forbidden_tools": ("refund",)},
        ["", ""],
        [{"spans": [{"tool_name": "search"}]}, {"spans": [{"tool_name": "refund"}]}],
    ),
    "latency_threshold": (
        {"max_latency_ms": 250.5},
        ["", ""],
        [{"total_latency_ms": 250.5}, {"total_latency_ms": 250.56}],
    ),
    "cost_threshold": (
        {"max_cost_usd": 0.0025},
        ["", ""],
        [{"estimated_cost_usd": 0.0025}, {"estimated_cost_usd": 0.00250001}],
    ),
    "turn_count_threshold": (
        {"max_turns": 3},
        ["", ""],
        [{"metadata": {"turn_count": 3}}, {"metadata": {"turn_count": 4}}],
    ),
}


@pytest.mark.parametrize("kind", list(_ONE_KIND))
def test_a_suite_of_one_check_kind_scores_as_the_package(kind: str) -> None:
    """Against the real package's evaluate_suite (not score_sample): the first sample
    passes the case's one check, the second fails it."""
    package = pytest.importorskip("agenticlens.evaluation", reason="needs agenticlens 0.10")
    fields, outputs, traces = _ONE_KIND[kind]
    cases = tuple(CaseSpec(f"c{i}", f"case {i}", i, **fields) for i in range(2))
    plan = plan_suite(SuiteSpec(Path("s.yaml"), "s", "1", cases))
    assert plan is not None and list(plan.kinds) == [kind]
    checks, scores = score_trial(plan, _columns(outputs, [normalize_trace(t) for t in traces]))

    listed = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    suite = package.TestSuite(
        name="s",
        version="1",
        cases=[package.TestCase(id=f"c{i}", name=f"case {i}", **listed) for i in range(2)],
    )
    samples = [
        package.EvaluationSample(case_id=f"c{i}", output=output, trace=trace)
        for i, (output, trace) in enumerate(zip(outputs, traces, strict=True))
    ]
    report = package.evaluate_suite(suite, samples)
    theirs = [(case.scores[0], case) for case in report.cases]
    assert [score.passed for score, _ in theirs] == [True, False]  # the fixture's intent
    assert checks["attempt"].to_pylist() == [0, 1]
    assert checks["name"].to_pylist() == [score.name for score, _ in theirs]
    assert checks["metric"].to_pylist() == [score.metric for score, _ in theirs]
    assert checks["passed"].to_pylist() == [score.passed for score, _ in theirs]
    assert checks["value"].to_pylist() == [score.value for score, _ in theirs]
    assert checks["explanation"].to_pylist() == [score.explanation for score, _ in theirs]
    assert scores["passed"].tolist() == [case.passed for _, case in theirs]
    assert scores["score"].to_pylist() == [1.0, 0.0]
