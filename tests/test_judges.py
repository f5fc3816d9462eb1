"""Judges (agenticlens_frames.judges): retries, samples, unavailable scores, usage, the
summary block, and the replies we refuse. Expected values are the published behaviour
of AgenticLens 0.10's judges (documented in docs/judges.md) or computed here by hand;
the differential test (tests/test_judges_differential.py) checks whole experiments against
the real package.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agenticlens_frames.evaluators import EvaluatorRegistry, JudgeRetryPolicy, RetryPolicy
from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
from agenticlens_frames.formats.traces import normalize_trace
from agenticlens_frames.frames import CheckColumns
from agenticlens_frames.judges import summarize_judges
from agenticlens_frames.scoring import score_sample


class Billed(Exception):
    def __init__(self, message: str, usage: dict[str, Any]) -> None:
        super().__init__(message)
        self.usage = usage


def _case(*refs: EvaluatorRef, **fields: Any) -> CaseSpec:
    return CaseSpec(id="c1", name="case one", index=0, evaluators=refs, **fields)


def _run(registry: EvaluatorRegistry, case: CaseSpec, output: str = "out") -> tuple[Any, list]:
    sink = CheckColumns()
    result = score_sample(case, output, normalize_trace({}), sink, 0, registry)
    columns = sink.columns()
    rows = [
        dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)
    ]
    for row in rows:
        row["metadata"] = json.loads(row["metadata"]) if row["metadata"] else {}
    return result, rows


def _script(*replies: Any) -> Any:
    """A judge replying (or raising) ``replies`` in turn, recording what it was given."""
    calls: list[tuple] = []

    def judge(output, case, trace, config):  # type: ignore[no-untyped-def]
        calls.append((output, case.id, dict(config)))
        reply = replies[len(calls) - 1]
        if isinstance(reply, BaseException):
            raise reply
        return reply

    judge.calls = calls  # type: ignore[attr-defined]
    return judge


def _verdict(verdict: str, value: float, **meta: Any) -> dict:
    return {
        "value": value,
        "explanation": f"said {verdict}",
        "metadata": {"verdict": verdict, **meta},
    }


# ----------------------------------------------------------------------- retries


def test_backoff_delays_follow_the_formula_and_are_injectable() -> None:
    waits: list[float] = []
    policy = RetryPolicy(
        max_attempts=5,
        backoff_seconds=0.5,
        backoff_multiplier=3,
        max_backoff_seconds=4,
        sleep=waits.append,
    )
    registry = EvaluatorRegistry()
    judge = _script(*[TimeoutError("slow")] * 4, {"value": 1.0})
    registry.register_judge("j", judge, retry=policy)
    _, rows = _run(registry, _case(EvaluatorRef("j")))
    # min(0.5 * 3 ** (n - 1), 4) for retries n = 1..4, computed by hand
    assert waits == [0.5, 1.5, 4.0, 4.0]
    assert rows[0]["metadata"]["judge_attempts"] == 5
    assert rows[0]["passed"] is True


def test_only_retry_on_exceptions_are_retried() -> None:
    registry = EvaluatorRegistry()
    judge = _script(ValueError("prompt too long"), {"value": 1.0})
    policy = JudgeRetryPolicy(attempts=3, retry_on=(TimeoutError,), sleep=lambda s: None)
    registry.register_judge("window", judge, retry=policy)
    result, rows = _run(registry, _case(EvaluatorRef("window", threshold=0.0)))
    assert len(judge.calls) == 1
    (score,) = rows
    assert score["name"] == "window" and score["value"] == 0.0
    # unavailable never passes, not even at threshold 0
    assert score["passed"] is False and result.passed is False
    assert (
        score["explanation"] == "Judge unavailable after 1 attempt(s): ValueError: prompt too long"
    )
    assert list(score["metadata"])[:5] == [
        "judge_status",
        "judge_attempts",
        "judge_error",
        "judge_errors",
        "judge_latency_ms",
    ]
    assert score["metadata"]["judge_errors"] == ["ValueError: prompt too long"]


def test_retry_policy_validation_uses_the_package_messages() -> None:
    for kwargs, message in [
        ({"max_attempts": 0}, "max_attempts must be at least 1"),
        ({"backoff_seconds": -1}, "backoff seconds must not be negative"),
        ({"backoff_multiplier": 0.5}, "backoff_multiplier must be at least 1"),
        ({"retry_on": ()}, "retry_on must name at least one exception type"),
    ]:
        with pytest.raises(ValueError, match=message):
            JudgeRetryPolicy(**kwargs)
    with pytest.raises(ValueError, match="samples must be at least 1"):
        EvaluatorRegistry().register_judge("j", lambda *a: 1.0, samples=0)
    # the live targets' RetryPolicy has other fields: refused by name, not read mid-run
    from agenticlens_frames import RetryPolicy as TargetRetryPolicy
    from agenticlens_frames.errors import InputError

    with pytest.raises(InputError, match="retry must be a JudgeRetryPolicy, got RetryPolicy"):
        EvaluatorRegistry().register_judge("j", lambda *a: 1.0, retry=TargetRetryPolicy(attempts=3))


# ----------------------------------------------------------------------- samples


@pytest.mark.parametrize(
    ("verdicts", "value", "agreement", "modal", "pct"),
    [
        (["good", "good", "partial"], (1 + 1 + 0.5) / 3, 0.666667, "good", "67%"),
        (["good", "partial", "poor"], (1 + 0.5 + 0) / 3, 0.333333, "poor", "33%"),
    ],
)
def test_samples_aggregate_mean_modal_and_agreement(
    verdicts: list[str], value: float, agreement: float, modal: str, pct: str
) -> None:
    values = {"good": 1.0, "partial": 0.5, "poor": 0.0}
    registry = EvaluatorRegistry()
    replies = [
        _verdict(v, values[v], judge_latency_ms=10.0, judge_cost_usd=0.001) for v in verdicts
    ]
    registry.register_judge("panel", _script(*replies), samples=3)
    _, (score,) = _run(registry, _case(EvaluatorRef("panel", threshold=0.5)))
    meta = score["metadata"]
    assert score["value"] == value  # plain mean, as sum / n
    assert meta["judge_agreement"] == agreement
    assert meta["verdict"] == modal
    assert meta["judge_verdicts"] == verdicts
    assert meta["judge_sample_values"] == [values[v] for v in verdicts]
    assert meta["judge_latency_ms"] == 30.0  # the judge's own times, summed
    assert meta["judge_cost_usd"] == 0.001 + 0.001 + 0.001
    assert score["explanation"] == (
        f"Judged 3 times; {verdicts.count(modal)}/3 agreed on {modal!r} (agreement {pct}). "
        f"said {modal}"
    )
    assert list(meta)[:8] == [
        "verdict",
        "judge_status",
        "judge_attempts",
        "judge_samples",
        "judge_verdicts",
        "judge_sample_values",
        "judge_agreement",
        "judge_latency_ms",
    ]


def test_a_tie_takes_the_lower_verdict_but_the_mean_decides_the_pass() -> None:
    registry = EvaluatorRegistry()
    registry.register_judge("coin", _script(0.8, 0.2), samples=2)
    _, (score,) = _run(registry, _case(EvaluatorRef("coin", threshold=0.5)))
    assert score["value"] == 0.5 and score["passed"] is True
    assert score["explanation"].startswith("Judged 2 times; 1/2 agreed on 0.2 (agreement 50%).")


def test_a_failed_sample_stops_sampling_and_drops_no_usage_from_the_spent_fields() -> None:
    registry = EvaluatorRegistry()
    ok = _verdict("good", 1.0, judge_cost_usd=0.002, judge_cost_source="measured")
    judge = _script(ok, ok, PermissionError("refused"), ok)
    registry.register_judge("panel", judge, samples=4)
    _, (score,) = _run(registry, _case(EvaluatorRef("panel")))
    meta = score["metadata"]
    assert len(judge.calls) == 3  # the fourth sample is never asked for
    assert (meta["judge_samples"], meta["judge_completed_samples"]) == (4, 2)
    assert "judge_cost_usd" not in meta  # the package drops completed samples' cost (J8)
    assert meta["judge_spent_cost_usd"] == 0.002 + 0.002  # ... we keep it apart


def test_list_replies_with_failed_attempt_usage_count_it_on_every_score_but_spend_it_once() -> None:
    """Spec §9 fixture ``multi-aspect``."""
    aspect = {
        "judge_cost_usd": 0.0004,
        "judge_cost_source": "estimated",
        "judge_input_tokens": 160,
        "judge_output_tokens": 12,
    }
    wasted = {
        "judge_cost_usd": 0.0003,
        "judge_cost_source": "measured",
        "judge_input_tokens": 150,
        "judge_output_tokens": 9,
    }
    reply = [
        {"name": "tone", "value": 1.0, "metadata": aspect},
        {"name": "accuracy", "value": 0.5, "metadata": aspect},
    ]
    registry = EvaluatorRegistry()
    registry.register_judge(
        "multi", _script(Billed("unparseable", wasted), reply), retry=RetryPolicy(max_attempts=2)
    )
    _, rows = _run(registry, _case(EvaluatorRef("multi", threshold=0.6)))
    assert [r["name"] for r in rows] == ["tone", "accuracy"]
    assert [r["passed"] for r in rows] == [True, False]
    for row in rows:  # the package's numbers, kept (J2)
        meta = row["metadata"]
        assert meta["judge_cost_usd"] == 0.0004 + 0.0003
        assert meta["judge_cost_source"] == "estimated"
        assert (meta["judge_input_tokens"], meta["judge_output_tokens"]) == (310, 21)
        assert meta["judge_attempts"] == 2
    # the correct figure: the wasted call counted once
    assert rows[0]["metadata"]["judge_spent_cost_usd"] == 0.0004 + 0.0003
    assert rows[1]["metadata"]["judge_spent_cost_usd"] == 0.0004
    assert rows[1]["metadata"]["judge_spent_input_tokens"] == 160


def test_stamped_metadata_order_and_reported_latency_wins() -> None:
    registry = EvaluatorRegistry()
    reply = {"value": 0.7, "metadata": {"judge_model": "m", "judge_latency_ms": 41.5}}
    registry.register_judge("j", _script(reply), version="v2")
    _, (score,) = _run(registry, _case(EvaluatorRef("j", threshold=0.5, required=False)))
    assert list(score["metadata"])[:4] == [
        "judge_latency_ms",
        "judge_model",
        "judge_status",
        "judge_attempts",
    ]
    assert score["metadata"]["judge_latency_ms"] == 41.5
    assert score["metadata"]["judge_latency_source"] == "reported"
    assert (score["evaluator"], score["evaluator_version"], score["evaluator_type"]) == (
        "j",
        "v2",
        "llm_judge",
    )
    assert score["required"] is False


def test_judges_get_the_raw_output_and_the_whole_entry() -> None:
    registry = EvaluatorRegistry()
    judge = _script(1.0)
    registry.register_judge("j", judge)
    _run(registry, _case(EvaluatorRef("j", threshold=0.4, config={"k": 1})), output="  hi\n")
    assert judge.calls == [
        ("  hi\n", "c1", {"name": "j", "threshold": 0.4, "required": True, "config": {"k": 1}})
    ]


def test_async_judges_are_awaited() -> None:
    registry = EvaluatorRegistry()

    async def judge(output, case, trace, config):  # type: ignore[no-untyped-def]
        return {"value": 0.25, "explanation": "async"}

    registry.register_judge("aj", judge)
    _, (score,) = _run(registry, _case(EvaluatorRef("aj", threshold=0.2)))
    assert (score["value"], score["explanation"], score["passed"]) == (0.25, "async", True)


# ----------------------------------------------------------------------- skipped


def test_skipped_scores_leave_averages_and_a_case_of_only_skips_has_no_score() -> None:
    registry = EvaluatorRegistry()
    registry.register_judge("n_a", lambda *a: {"skipped": True, "explanation": "does not apply"})
    registry.register_judge("half", lambda *a: 0.5)
    result, rows = _run(registry, _case(EvaluatorRef("n_a"), EvaluatorRef("half", threshold=0.9)))
    assert rows[0]["skipped"] is True and rows[0]["passed"] is False
    assert rows[0]["required"] is False
    assert result.score == 0.5  # the skipped 0 is not averaged in
    assert result.passed is False  # "half" fails; the skip does not
    result, _ = _run(registry, _case(EvaluatorRef("n_a")))
    assert result.score is None and result.passed is True


# ----------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("reply", "samples", "message"),
    [
        ("good", 1, "TypeError: judge 'j' returned str for case 'c1'"),
        ([], 1, "ValueError: judge 'j' returned an empty list for case 'c1'"),
        (
            {"value": 1.0, "metadata": {"judge_cost_usd": -0.01}},
            1,
            "ValueError: judge 'j' returned judge_cost_usd -0.01 for case 'c1'",
        ),
        (
            {"value": 1.0, "metadata": {"verdict": ["a"]}},
            2,
            "TypeError: judge 'j' returned an unhashable verdict (list) for case 'c1'",
        ),
        ({"value": 1.5}, 1, "ValueError: judge 'j' returned value 1.5 for case 'c1'"),
        ([1.0, 1.0], 2, "TypeError: a judge sampled more than once must return a single Score"),
        ("good", 2, "TypeError: a judge must return a Score"),
        # JSON keeps one of two keys it writes alike: refused, naming both, at any depth.
        (
            {"value": 1.0, "metadata": {1: "int", "1": "str"}},
            1,
            "TypeError: judge 'j' returned metadata JSON cannot hold for case 'c1' (keys 1 "
            """and '1' are both "1" in JSON, at the top level)""",
        ),
        (
            {"value": 1.0, "metadata": {"verdict": "a", "per": [{True: 1, "true": 2}]}},
            2,
            "TypeError: judge 'j' returned metadata JSON cannot hold for case 'c1' (keys "
            """True and 'true' are both "true" in JSON, in the dict at ['per'][0])""",
        ),
    ],
)
def test_replies_the_package_crashes_on_or_passes_silently_are_refused(
    reply: Any, samples: int, message: str
) -> None:
    registry = EvaluatorRegistry()
    registry.register_judge("j", lambda *a: reply, samples=samples)
    result, (score,) = _run(registry, _case(EvaluatorRef("j", threshold=0.0)))
    assert score["metadata"]["judge_status"] == "unavailable"
    assert score["metadata"]["judge_error"].startswith(message)
    assert score["passed"] is False and result.passed is False


# ----------------------------------------------------------------------- summary


def test_summary_block_counts_as_the_package() -> None:
    scores = [
        ("a", False, {"judge_status": "ok", "judge_attempts": 4, "judge_samples": 3,
                      "judge_agreement": 1.0, "judge_cost_usd": 0.001,
                      "judge_cost_source": "measured", "judge_input_tokens": 10,
                      "judge_output_tokens": 10.0, "judge_latency_ms": 1.25}),
        ("b", False, {"judge_status": "ok", "judge_attempts": 3, "judge_samples": 3,
                      "judge_agreement": 0.333333, "judge_cost_usd": 0.002,
                      "judge_cost_source": "guess", "judge_input_tokens": True,
                      "judge_latency_ms": 2.5}),
        ("b", True, {"judge_status": "ok", "judge_attempts": 9, "judge_cost_usd": 5.0}),
        ("c", False, {"judge_status": "unavailable", "judge_attempts": 2,
                      "judge_latency_ms": 0.125}),
        ("c", False, {"judge_status": "unavailable", "judge_attempts": 1}),
    ]  # fmt: skip
    block = summarize_judges(scores)
    assert block is not None
    assert block["judge_scores"] == 4  # the skipped one is not counted
    assert block["unavailable_scores"] == 2 and block["unavailable_cases"] == ["c"]
    assert block["retried_scores"] == 2  # 4 > 3, and 2 > 1
    assert block["priced_scores"] == 2 and block["total_cost_usd"] is None  # 2 of 4 priced
    assert block["cost_sources"] == {"measured": 1, "unspecified": 1}
    assert (block["input_tokens"], block["output_tokens"]) == (10, 0)  # 10.0 and True: 0
    assert block["total_latency_ms"] == 3.875
    assert block["average_agreement"] == (1.0 + 0.333333) / 2 == 0.6666665
    assert block["min_agreement"] == 0.333333
    assert block["case_agreement"] == {"a": 1.0, "b": 0.333333}
    assert summarize_judges([]) is None
    assert summarize_judges([("a", True, {})])["judge_scores"] == 0  # type: ignore[index]


def test_total_cost_needs_every_active_score_priced() -> None:
    block = summarize_judges(
        [("a", False, {"judge_cost_usd": 0.1}), ("b", False, {"judge_cost_usd": 0.2})]
    )
    assert block is not None and math.isclose(block["total_cost_usd"], 0.1 + 0.2)
    assert block["total_cost_usd"] == 0.1 + 0.2  # the plain left-to-right sum


def test_summary_keys_are_the_packages_in_its_order_then_ours() -> None:
    models = pytest.importorskip("agentic_evals.models", reason="the real agentic-evals is needed")
    from agenticlens_frames.judges import ADDED_SUMMARY_KEYS

    block = summarize_judges([("a", False, {"judge_status": "ok"})])
    assert block is not None
    assert list(block) == [*models.JudgeSummary.model_fields, *ADDED_SUMMARY_KEYS]


# ----------------------------------------------------------------------- journaled samples


def _scored_with_book(
    replies: list[Any], recalled: dict, **register: Any
) -> tuple[list, list, list[dict]]:
    """Score one case with a judge replaying ``replies``, given journaled samples; returns
    the score rows, the judge's calls and the samples it journaled (as JSON text would)."""
    from agenticlens_frames.judges import SampleBook

    registry = EvaluatorRegistry()
    judge = _script(*replies)
    registry.register_judge("panel", judge, version="v1", **register)
    registry["panel"].runner.clock = lambda: 0.0  # type: ignore[union-attr]
    journaled: list[dict] = []

    def journal(entry, sample, name, version, data):  # type: ignore[no-untyped-def]
        journaled.append(json.loads(json.dumps({"at": [entry, sample], "data": data})))

    sink = CheckColumns()
    case = _case(EvaluatorRef("panel", threshold=0.5))
    book = SampleBook(recalled, journal)
    score_sample(case, "out", normalize_trace({}), sink, 0, registry, judge_samples=book)
    columns = sink.columns()
    rows = [dict(zip(columns, v, strict=True)) for v in zip(*columns.values(), strict=True)]
    return rows, judge.calls, journaled


@pytest.mark.parametrize(
    ("replies", "register"),
    [
        pytest.param(
            [
                _verdict("good", 0.9, judge_cost_usd=0.001, judge_cost_source="measured"),
                Billed("garbled", {"judge_cost_usd": 0.0005, "judge_input_tokens": 40}),
                _verdict("poor", 0.2, judge_cost_usd=0.001, judge_cost_source="measured"),
                _verdict("good", 0.7, judge_cost_usd=0.001, judge_cost_source="measured"),
            ],
            {"samples": 3, "retry": RetryPolicy(max_attempts=2)},
            id="sampled-with-a-retry",
        ),
        pytest.param(
            [
                _verdict("good", 1.0, judge_cost_usd=0.002, judge_cost_source="measured"),
                Billed("refused", {"judge_cost_usd": 0.0003, "judge_latency_ms": 4.0}),
                Billed("refused again", {"judge_cost_usd": 0.0003}),
            ],
            {"samples": 3, "retry": RetryPolicy(max_attempts=2)},
            id="unavailable-after-a-completed-sample",
        ),
        pytest.param(
            [
                Billed("unparseable", {"judge_cost_usd": 0.0003, "judge_input_tokens": 9}),
                [{"name": "tone", "value": 1.0}, {"name": "accuracy", "value": 0.25}],
            ],
            {"retry": RetryPolicy(max_attempts=2)},
            id="list-reply",
        ),
    ],
)
def test_journaled_samples_resume_to_the_same_scores_calling_only_the_missing(
    replies: list[Any], register: dict
) -> None:
    whole, calls, journaled = _scored_with_book(replies, {}, **register)
    assert len(calls) == len(replies)
    for cut in range(len(journaled) + 1):
        # A crash after ``cut`` samples were journaled: they come back from the journal.
        recalled = {tuple(j["at"]): ("panel", "v1", j["data"]) for j in journaled[:cut]}
        used = sum(j["data"]["attempts"] for j in journaled[:cut])
        rows, calls, again = _scored_with_book(replies[used:], recalled, **register)
        assert rows == whole, cut
        assert len(calls) == len(replies) - used
        assert again == journaled[cut:]
    # Another judge version reuses nothing.
    recalled = {tuple(j["at"]): ("panel", "v0", j["data"]) for j in journaled}
    _, calls, _ = _scored_with_book(replies, recalled, **register)
    assert len(calls) == len(replies)
