"""Fake LLM judges, each exercising one behaviour, usable by us and by the real package.

Every fake is a pure function of (judge, case, trace id, call number within that
evaluation), so the same experiment graded by agenticlens_frames and by AgenticLens
0.10's ``run_experiment(..., registry=...)`` gets the same replies in whatever order the
evaluations run. :func:`build_registry` gives our registry (``--evaluators
tests.judge_fakes:build_registry``); :func:`package_registry` the package's.

Every delivered sample reports ``judge_latency_ms``, so delivered scores are
reproducible; unavailable scores' latency is measured by the package (J3).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

#: Backoff waits requested by our retry policies (sleeping is replaced by recording).
SLEEPS: list[float] = []
#: Every call of :func:`build_registry`'s judges but the ``async`` rubric: (judge, case id,
#: the trace object of the evaluation (kept, so that its identity names one evaluation),
#: the reply or None, the raised exception's ``usage`` or None). A test counts what the
#: judges did from it.
CALLS: list[tuple[str, str, Any, Any, dict[str, Any] | None]] = []


def _logged(name: str, case_id: str, trace: Any, reply: Callable[[], Any]) -> Any:
    try:
        value = reply()
    except Exception as exc:
        CALLS.append((name, case_id, trace, None, getattr(exc, "usage", None)))
        raise
    CALLS.append((name, case_id, trace, value, None))
    return value


class RateLimited(Exception):
    """A retried failure that answered and was billed (it carries ``usage``)."""

    def __init__(self, message: str, usage: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if usage is not None:
            self.usage = usage


class Refusal(PermissionError):
    """A failure the panel judge's retry policy does not retry."""


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


VERDICTS = {"good": 1.0, "partial": 0.5, "poor": 0.0}


def _verdict(verdict: str, explanation: str, **meta: Any) -> dict[str, Any]:
    return {
        "value": VERDICTS[verdict],
        "explanation": explanation,
        "metadata": {"verdict": verdict, **meta},
    }


# ------------------------------------------------------------------- the fake judges
# Each takes (output, case_id, trace_id, config, call) where ``call`` numbers the calls of
# one evaluation from 0 (samples and retries alike).


def helpfulness(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """Three samples, a retry policy of 2; the first call of a third of the evaluations
    is rate limited (billed, measured) and retried; verdicts drift between samples."""
    if _h("dead", case_id, trace_id) % 11 == 0:
        # never answers: unavailable, named after the registered judge (J6), with usage
        raise RateLimited("503 overloaded", {"judge_input_tokens": 150, "judge_latency_ms": 2.0})
    if call == 0 and _h("rate", case_id, trace_id) % 3 == 0:
        raise RateLimited(
            "429 slow down",
            {
                "judge_cost_usd": 0.0003,
                "judge_cost_source": "measured",
                "judge_input_tokens": 150,
                "judge_output_tokens": 0,
                "judge_latency_ms": 4.25,
            },
        )
    verdict = ("good", "partial", "poor")[_h("help", case_id, trace_id, call) % 3]
    if "refund" in output.lower() and call % 2 == 0:
        verdict = "good"
    source = "measured" if _h("src", case_id, trace_id) % 2 else "estimated"
    return {
        "name": "helpfulness",
        **_verdict(
            verdict,
            f"Graded {verdict} for {case_id}.",
            judge_model="fake-m1",
            judge_latency_ms=10.0 + call,
            judge_cost_usd=0.0004,
            judge_cost_source=source,
            judge_input_tokens=120 + call,
            judge_output_tokens=9,
        ),
    }


def multi_aspect(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """One call grades two aspects (a list reply); half the evaluations fail once first
    with billed usage, which the package adds to *both* scores (J2)."""
    if call == 0 and _h("multi", case_id, trace_id) % 2 == 0:
        raise RateLimited(
            "429 busy",
            {"judge_cost_usd": 0.0003, "judge_input_tokens": 150, "judge_output_tokens": 12},
        )
    tone = 0.25 * (_h("tone", case_id, trace_id) % 5)
    return [
        {
            "name": "multi:tone",
            "metric": "tone",
            "value": tone,
            "explanation": f"tone {tone}",
            "metadata": {
                "judge_latency_ms": 7.5,
                "judge_cost_usd": 0.0004,
                "judge_cost_source": "estimated",
                "judge_input_tokens": 160,
                "judge_output_tokens": 9,
            },
        },
        {
            "name": "multi:accuracy",
            "metric": "accuracy",
            "value": 1.0 if len(output) % 2 else 0.5,
            "explanation": "accuracy",
            "metadata": {
                "judge_latency_ms": 7.5,
                "judge_cost_usd": 0.0004,
                "judge_cost_source": "estimated",
                "judge_input_tokens": 160,
                "judge_output_tokens": 9,
            },
        },
    ]


def strict_panel(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """Three samples; outputs with a link (or a fifth of the evaluations) are refused by
    the third sample, a failure not retried: unavailable, 2 of 3 samples completed,
    their usage dropped by the package (J8)."""
    if call == 2 and ("http" in output or _h("panel", case_id, trace_id) % 5 == 0):
        raise Refusal("strict panelist refuses to grade outputs with links")
    verdict = "good" if _h("panel-v", case_id, trace_id, call) % 4 else "poor"
    return _verdict(
        verdict,
        "panel",
        judge_latency_ms=3.0,
        judge_cost_usd=0.0001,
        judge_cost_source="measured",
    )


def context_window(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """A ValueError (not retried) for long outputs: unavailable after 1 attempt."""
    limit = int(config.get("max_chars", 120))
    if len(output) > limit:
        raise ValueError(
            f"prompt of {len(output)} characters exceeds the {limit}-character context "
            "window of judge-m1"
        )
    return (0.75, "fits the window")


def applicability(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """Skipped where it does not apply (no value, not counted)."""
    if _h("apply", case_id) % 2 == 0:
        return {
            "skipped": True,
            "explanation": "not a billing question",
            "metadata": {"why": "n/a"},
        }
    return {"value": 0.9, "explanation": "applies", "metadata": {"judge_latency_ms": 1.0}}


def coin(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """Two samples that often tie: the lower verdict wins; a plain number reply."""
    value = 0.8 if (_h("coin", case_id, trace_id) + call) % 2 else 0.2
    return [{"value": value, "explanation": "flip", "metadata": {"judge_latency_ms": 2.0}}]


def flaky(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """Fails twice with unbilled timeouts on some evaluations; retried up to 3 times."""
    if call < 2 and _h("flaky", case_id, trace_id) % 4 == 0:
        raise TimeoutError()
    return {"value": 1.0, "explanation": "ok", "metadata": {"judge_latency_ms": 5.0}}


async def rubric(output: str, case_id: str, trace_id: str, config: dict, call: int) -> Any:
    """An ``async def`` judge of evaluator type llm_rubric with a verdict letter."""
    letter = "ABC"[_h("rubric", case_id, trace_id) % 3]
    return {
        "value": {"A": 1.0, "B": 0.5, "C": 0.0}[letter],
        "explanation": f"Rubric 'closed_qa' graded verdict '{letter}'.",
        "metadata": {
            "rubric": "closed_qa",
            "verdict": letter,
            "judge_latency_ms": 30.0,
            "judge_input_tokens": 200,
            "judge_output_tokens": 1,
        },
    }


#: name -> (fake, options for registration)
JUDGES: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "helpfulness_judge": (
        helpfulness,
        {"version": "m1/p3", "samples": 3, "retry": {"max_attempts": 2}},
    ),
    "multi_aspect": (multi_aspect, {"version": "2", "retry": {"max_attempts": 3}}),
    "strict_panel": (
        strict_panel,
        {"samples": 3, "retry": {"max_attempts": 2, "retry_on": (TimeoutError,)}},
    ),
    "context_window": (
        context_window,
        {"version": "1", "retry": {"max_attempts": 3, "retry_on": (TimeoutError,)}},
    ),
    "applicability": (applicability, {"version": "1"}),
    "coin": (coin, {"samples": 2}),
    "flaky": (flaky, {"version": "1", "retry": {"max_attempts": 3, "backoff_seconds": 0.5}}),
    "rubric": (rubric, {"version": "r1", "evaluator_type": "llm_rubric"}),
}


class _Calls:
    """Numbers the calls of each evaluation (a fresh counter per registry)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, ...], int] = {}

    def next(self, *key: str) -> int:
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return n


def build_registry() -> Any:
    """Our registry: the default scorers plus every fake judge."""
    from agenticlens_frames.evaluators import JudgeRetryPolicy, default_registry

    registry = default_registry()
    calls = _Calls()
    for name, (fake, options) in JUDGES.items():
        opts = dict(options)
        retry = opts.pop("retry", None)
        policy = JudgeRetryPolicy(**retry, sleep=SLEEPS.append) if retry else None

        def judge(output, case, trace, entry, _fake=fake, _name=name):  # type: ignore[no-untyped-def]
            call = calls.next(_name, case.id, trace.trace_id)
            return _logged(
                _name,
                case.id,
                trace,
                lambda: _fake(output, case.id, trace.trace_id, dict(entry["config"]), call),
            )

        if name == "rubric":

            async def judge(output, case, trace, entry, _fake=fake, _name=name):  # type: ignore[no-untyped-def]
                call = calls.next(_name, case.id, trace.trace_id)
                return await _fake(output, case.id, trace.trace_id, dict(entry["config"]), call)

        registry.register_judge(name, judge, retry=policy, **opts)
    return registry


def package_registry() -> Any:
    """The real package's registry (its default scorers plus the same judges)."""
    import inspect

    from agentic_evals import LLMJudgeEvaluator, RetryPolicy
    from agentic_evals.models import Score
    from agenticlens.evaluation import default_registry

    registry = default_registry()
    calls = _Calls()

    def to_score(item: Any, name: str) -> Any:
        if isinstance(item, list):
            return [to_score(i, name) for i in item]
        if isinstance(item, dict):
            skipped = bool(item.get("skipped", False))
            return Score(
                name=item.get("name") or name,
                metric=item.get("metric", ""),
                value=item.get("value", 0.0),
                passed=bool(item.get("passed", False)),
                required=bool(item.get("required", not skipped)),
                skipped=skipped,
                explanation=item.get("explanation", ""),
                metadata=dict(item.get("metadata") or {}),
            )
        if isinstance(item, tuple):
            return Score(name=name, value=item[0], passed=False, explanation=str(item[1]))
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return Score(name=name, value=item, passed=False, explanation="")
        return item

    for name, (fake, options) in JUDGES.items():
        opts = dict(options)
        retry = opts.pop("retry", None)
        policy = RetryPolicy(**retry) if retry else None

        if inspect.iscoroutinefunction(fake):

            async def judge(context, _fake=fake, _name=name):  # type: ignore[no-untyped-def]
                sample = context.sample
                call = calls.next(_name, context.case.id, sample.trace.trace_id)
                reply = await _fake(
                    sample.output,
                    context.case.id,
                    sample.trace.trace_id,
                    context.config.config,
                    call,
                )
                return to_score(reply, _name)

        else:

            def judge(context, _fake=fake, _name=name):  # type: ignore[no-untyped-def]
                sample = context.sample
                call = calls.next(_name, context.case.id, sample.trace.trace_id)
                reply = _fake(
                    sample.output,
                    context.case.id,
                    sample.trace.trace_id,
                    context.config.config,
                    call,
                )
                return to_score(reply, _name)

        registry.register(LLMJudgeEvaluator(name, judge, retry=policy, **opts))
    return registry


#: The file :func:`slow_registry`'s judge appends each call to (one line: the output it
#: graded), so the calls of an interrupted run and of its resume, in any process, add up.
SLOW_JUDGE_LOG = "SLOW_JUDGE_LOG"
#: Seconds each of its calls takes (default 0.5: slower than an instant target).
SLOW_JUDGE_SECONDS = "SLOW_JUDGE_SECONDS"


def slow_registry() -> Any:
    """A registry with one judge, ``slow_judge``, slower than the targets: their replies
    queue up for it, and a run spends its end judging them (the final judge drain).

    Every call is logged to :data:`SLOW_JUDGE_LOG` before it sleeps
    :data:`SLOW_JUDGE_SECONDS`, and grades 1.0.
    """
    import os
    import threading
    import time
    from pathlib import Path

    from agenticlens_frames.evaluators import EvaluatorRegistry

    registry = EvaluatorRegistry()
    log = Path(os.environ[SLOW_JUDGE_LOG])
    seconds = float(os.environ.get(SLOW_JUDGE_SECONDS, "0.5"))
    lock = threading.Lock()

    @registry.register_judge("slow_judge", version="1")
    def slow_judge(output, case, trace, config):  # type: ignore[no-untyped-def]
        with lock, log.open("a", encoding="utf-8") as calls:
            calls.write(output + "\n")
        time.sleep(seconds)
        return 1.0

    return registry
