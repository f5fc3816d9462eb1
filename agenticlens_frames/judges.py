"""LLM judges: retries, repeated samples, unavailable scores and the ``summary.judge`` block.

A judge is a trusted Python callable registered with
:meth:`~agenticlens_frames.evaluators.EvaluatorRegistry.register_judge`. This module runs
it the way AgenticLens 0.10 (agentic-evals 0.9.0, ``JudgeRunner``) does, so that trial
reports graded by judges carry the same scores, metadata and summary as the package's:

* each call is retried under a :class:`JudgeRetryPolicy` (default: one attempt);
* with ``samples = N > 1`` the judge grades the same output N times, one sample after
  another; the score's value is the mean, its verdict the most common one (the lowest
  scoring verdict on a tie) and ``judge_agreement`` the share that agreed;
* when every attempt of a call (or of any sample) fails, the evaluation yields an explicit
  *unavailable* score: value 0, never passing, counted in ``summary.judge``;
* usage reported by failed attempts (an exception's ``usage`` mapping) is recorded.

Where the package has bugs (issue 16, spec J2–J9) the compatible fields keep its numbers
and the correct figures go in added metadata keys (``judge_spent_*``,
``judge_latency_source``) and summary keys (``spent_*``); replies the package crashes on
or silently accepts (a non-judgement, an empty list, a negative cost, an unhashable
verdict) are refused as failed attempts whose message names the judge and the case. See
docs/judges.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ._deprecate import class_keyword_hints
from ._values import json_copy, json_copy_checked, same_json
from .errors import InputError, describe_error

__all__ = [
    "ADDED_JUDGE_KEYS",
    "ADDED_SUMMARY_KEYS",
    "JUDGE_EVALUATOR_TYPES",
    "JudgeRetryPolicy",
    "JudgeRunner",
    "Judged",
    "SampleBook",
    "normalize_judgement",
    "summarize_judges",
]

#: ``evaluator_type`` values that make a score a judge score (the package's rule).
JUDGE_EVALUATOR_TYPES = frozenset({"llm_judge", "llm_rubric"})

#: How many failure messages an unavailable score keeps.
_MAX_RECORDED_ERRORS = 5

_USAGE_TOTALS = ("judge_cost_usd", "judge_input_tokens", "judge_output_tokens")

#: Metadata keys we add to judge scores (never written by the package).
ADDED_JUDGE_KEYS = (
    "judge_latency_source",
    "judge_spent_cost_usd",
    "judge_spent_input_tokens",
    "judge_spent_output_tokens",
)

#: Keys we add to ``summary.judge`` after the package's.
ADDED_SUMMARY_KEYS = ("spent_cost_usd", "spent_input_tokens", "spent_output_tokens")


@class_keyword_hints(skip=("delay",))
class JudgeRetryPolicy:
    """At most ``max_attempts`` calls per judge sample, with exponential backoff.

    The wait before retry *n* (1 for the second attempt) is
    ``min(backoff_seconds * backoff_multiplier ** (n - 1), max_backoff_seconds)``; only
    exceptions that are instances of ``retry_on`` are retried (the fields, defaults and
    rules of agentic-evals' ``RetryPolicy``). ``attempts`` is accepted as another name for
    ``max_attempts`` (the spelling of the live targets' policy). ``sleep`` replaces
    :func:`time.sleep` between attempts (tests pass a recorder, so backoff costs no time).

    Examples
    --------
    >>> policy = JudgeRetryPolicy(max_attempts=5, backoff_seconds=0.5,
    ...                           backoff_multiplier=3, max_backoff_seconds=4)
    >>> [policy.delay(n) for n in range(1, 5)]
    [0.5, 1.5, 4.0, 4.0]
    >>> JudgeRetryPolicy(attempts=0)
    Traceback (most recent call last):
    ...
    ValueError: max_attempts must be at least 1
    """

    __slots__ = (
        "backoff_multiplier",
        "backoff_seconds",
        "max_attempts",
        "max_backoff_seconds",
        "retry_on",
        "sleep",
    )

    def __init__(
        self,
        max_attempts: int | None = None,
        backoff_seconds: float = 0.0,
        backoff_multiplier: float = 2.0,
        max_backoff_seconds: float = 30.0,
        retry_on: type[BaseException] | Sequence[type[BaseException]] = (Exception,),
        *,
        attempts: int | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        if max_attempts is not None and attempts is not None and max_attempts != attempts:
            raise ValueError("give max_attempts or attempts, not both")
        count = max_attempts if max_attempts is not None else attempts
        count = 1 if count is None else count
        if isinstance(count, bool) or not isinstance(count, int):
            raise ValueError(f"max_attempts must be an integer, got {count!r}")
        if count < 1:
            raise ValueError("max_attempts must be at least 1")
        if backoff_seconds < 0 or max_backoff_seconds < 0:
            raise ValueError("backoff seconds must not be negative")
        if backoff_multiplier < 1:
            raise ValueError("backoff_multiplier must be at least 1")
        kinds = (retry_on,) if isinstance(retry_on, type) else tuple(retry_on)
        if not kinds:
            raise ValueError("retry_on must name at least one exception type")
        if not all(isinstance(k, type) and issubclass(k, BaseException) for k in kinds):
            raise ValueError("retry_on must hold exception types")
        self.max_attempts = count
        self.backoff_seconds = float(backoff_seconds)
        self.backoff_multiplier = float(backoff_multiplier)
        self.max_backoff_seconds = float(max_backoff_seconds)
        self.retry_on = kinds
        self.sleep = sleep

    @property
    def attempts(self) -> int:
        """Another name for :attr:`max_attempts`.

        Examples
        --------
        >>> JudgeRetryPolicy(attempts=3).max_attempts, JudgeRetryPolicy(max_attempts=3).attempts
        (3, 3)
        """
        return self.max_attempts

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the second attempt).

        Examples
        --------
        >>> policy = JudgeRetryPolicy(max_attempts=4, backoff_seconds=1, max_backoff_seconds=3)
        >>> policy.delay(1), policy.delay(2), policy.delay(3)
        (1.0, 2.0, 3.0)
        """
        wait = self.backoff_seconds * self.backoff_multiplier ** (retry - 1)
        return float(min(wait, self.max_backoff_seconds))

    def __repr__(self) -> str:
        kinds = ", ".join(k.__name__ for k in self.retry_on)
        return (
            f"JudgeRetryPolicy(max_attempts={self.max_attempts}, "
            f"backoff_seconds={self.backoff_seconds}, "
            f"backoff_multiplier={self.backoff_multiplier}, "
            f"max_backoff_seconds={self.max_backoff_seconds}, retry_on=({kinds}))"
        )


@dataclass
class Judged:
    """One score a judge (or a plain evaluator) delivered, before the runner stamps it.

    ``passed`` / ``required`` are only read for skipped scores (the package keeps what a
    skipped score says; others are decided by the threshold and the suite).
    """

    name: str
    metric: str
    value: float
    explanation: str
    metadata: dict[str, Any] = field(default_factory=dict)
    skipped: bool = False
    passed: bool = False
    required: bool = False


@dataclass
class _Attempted:
    """The outcome of one retried call: a value, or the last error."""

    value: Any = None
    error: BaseException | None = None
    attempts: int = 0
    elapsed_ms: float = 0.0
    errors: list[str] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any] | None:
        """This finished sample as JSON data, or None when JSON cannot hold it exactly
        (then a resumed run judges it again rather than reuse an altered copy).

        The journal keeps NaN and infinities exactly (``NaN`` / ``Infinity``, as
        :func:`json.loads` reads them); a judgement's metadata is already a
        :func:`~agenticlens_frames._values.json_copy` (:meth:`JudgeRunner._parse`), so a
        sample is None here only for a failed attempt's usage JSON cannot write.
        """
        data: dict[str, Any] = {
            "ok": self.ok,
            "attempts": self.attempts,
            "elapsed_ms": self.elapsed_ms,
            "errors": list(self.errors),
            # Only what the scores are built from: the usage a failed attempt reported.
            "failure_usages": [_failure_usage(f) for f in self.failures],
        }
        if self.ok:
            data["value"] = [dataclasses.asdict(judged) for judged in self.value]
        try:
            # NaN-aware: ``==`` called every sample with a NaN in its metadata altered, so
            # it was never journaled (a load said NotJudged, every resume paid for it again).
            same = same_json(json.loads(json.dumps(data)), data)
        except (TypeError, ValueError, RecursionError):
            return None
        return data if same else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Attempted:
        """A sample journaled by :meth:`to_json`, as it was when it finished."""
        failures: list[BaseException] = [_Recalled(usage) for usage in data["failure_usages"]]
        outcome = cls(
            attempts=int(data["attempts"]),
            elapsed_ms=float(data["elapsed_ms"]),
            errors=list(data["errors"]),
            failures=failures,
        )
        if data["ok"]:
            outcome.value = [Judged(**judged) for judged in data["value"]]
        else:
            outcome.error = failures[-1] if failures else _Recalled(None)
        return outcome


#: The keys of a failed attempt's ``usage`` that scores are built from (:func:`_failed_usage`,
#: :func:`_spent`, the latency of an unavailable score).
_FAILURE_USAGE_KEYS = (
    "judge_cost_usd",
    "judge_input_tokens",
    "judge_output_tokens",
    "judge_cost_source",
    "judge_latency_ms",
)


def _failure_usage(failure: BaseException) -> dict[str, Any] | None:
    """What a failed attempt's ``usage`` contributes, as JSON holds it (None without one).

    Only the keys read (an exception's usage may hold anything: the client's own objects);
    each value a :func:`~agenticlens_frames._values.json_copy`, which changes none that is
    read (numbers stay numbers, a NaN stays NaN; other objects were never numbers).
    """
    usage = getattr(failure, "usage", None)
    if not isinstance(usage, dict):
        return None
    if isinstance(failure, _Recalled):
        return usage  # read back from the journal: as JSON holds it already
    kept: dict[str, Any] = {}
    for key in _FAILURE_USAGE_KEYS:
        if key in usage:
            try:
                kept[key] = json_copy(usage[key])
            except Exception:  # a cycle, a str() that raises: not a number, so unread
                kept[key] = None
    return kept


class ProcessEnded(Exception):
    """The run's process ended while a judge sample was being judged (journaled by the
    supervisor; the resumed run makes that sample unavailable with this error)."""


class NotJudged(Exception):
    """A judge sample that a run folder does not hold, met while the folder is loaded:
    loading calls no judge, so the sample is unavailable with this error (a resume of the
    run judges it)."""


class _Recalled(Exception):
    """A failed judge attempt read back from the journal: only its reported usage."""

    def __init__(self, usage: dict[str, Any] | None) -> None:
        super().__init__("journaled judge failure")
        if usage is not None:
            self.usage = usage


class SampleBook:
    """Judge samples of one attempt: those journaled earlier, and where new ones go.

    A live run hands one to :func:`~agenticlens_frames.scoring.score_sample`; each judge
    sample (one call with its retries) is journaled as it finishes, and a resumed run gets
    back the samples of the evaluations it had not finished, so it calls the judge only
    for the missing ones. A sample is reused only for the same evaluator entry, sample
    index, judge name and judge version.

    Parameters
    ----------
    recalled
        Journaled samples: ``(entry, sample)`` → ``(judge, version, data)``.
    journal
        Called with ``(entry, sample, judge, version, data)`` when a sample finishes whose
        data JSON holds exactly (others are judged again after a crash).
    ended
        Why the process judging this attempt in an earlier session ended (the
        supervisor's words), if it did: the first sample not journaled — the one being
        judged then — is unavailable with that error instead of judged again (the judge
        may be what ended the process); later ones are judged as usual.
    offline
        Set when no judge may be called (loading a run folder: a load must cost nothing and
        give the same tables every time). Called for each sample not recalled, it returns
        why; that sample is then unavailable with :class:`NotJudged` instead of judged.

    Examples
    --------
    >>> seen = []
    >>> book = SampleBook({(0, 0): ("tone", "1", {"ok": True})},
    ...                   lambda *args: seen.append(args))
    >>> book.recall(0, 0, "tone", "1"), book.recall(0, 0, "tone", "2")
    ({'ok': True}, None)
    >>> book.record(0, 1, "tone", "1", {"ok": False}, attempts=3, ok=False)
    >>> book.counts(), len(seen)
    ((3, 1, 1), 1)
    """

    def __init__(
        self,
        recalled: Mapping[tuple[int, int], tuple[str, str | None, dict[str, Any]]],
        journal: Callable[[int, int, str, str | None, dict[str, Any]], None],
        ended: str | None = None,
        offline: Callable[[], str] | None = None,
    ) -> None:
        self._recalled = recalled
        self._journal = journal
        self._ended = ended
        self.offline = offline
        self.calls = 0
        self.unavailable = 0
        self.reused = 0

    def recall(
        self, entry: int, sample: int, judge: str, version: str | None
    ) -> dict[str, Any] | None:
        """The journaled sample, if this judge at this version judged it (then counted as
        reused)."""
        found = self._recalled.get((entry, sample))
        if found is None or found[:2] != (judge, version):
            return None
        self.reused += 1
        return found[2]

    def take_ended(self) -> str | None:
        """Why the earlier session ended mid-judging, once (for the sample it was judging),
        or None."""
        ended, self._ended = self._ended, None
        return ended

    def record(
        self,
        entry: int,
        sample: int,
        judge: str,
        version: str | None,
        data: dict[str, Any] | None,
        *,
        attempts: int,
        ok: bool,
    ) -> None:
        """Count a sample that just finished and journal it (unless ``data`` is None)."""
        self.calls += attempts
        self.unavailable += not ok
        if data is not None:
            self._journal(entry, sample, judge, version, data)

    def counts(self) -> tuple[int, int, int]:
        """Judge calls made, samples that ended unavailable, samples reused."""
        return self.calls, self.unavailable, self.reused


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _usage(value: Any) -> float | None:
    """A usable usage figure: a finite number >= 0. A negative or non-finite cost in an
    exception's ``usage`` is ignored (the package would fail to build its summary, J5)."""
    number = _number(value)
    return number if number is not None and math.isfinite(number) and number >= 0 else None


_JUDGEMENT_KEYS = frozenset(
    {"value", "name", "metric", "explanation", "metadata", "skipped", "passed", "required"}
)


def normalize_judgement(item: Any, *, evaluator: str, case_id: str, role: str = "judge") -> Judged:
    """One judgement as a :class:`Judged`, or a clear error naming the judge and case.

    A judgement is a mapping with ``value`` (0..1) and optionally ``name``, ``metric``,
    ``explanation``, ``metadata``, ``skipped`` (and, for skipped ones, ``passed`` /
    ``required``); a plain number or a ``(value, explanation)`` pair is accepted too.

    Examples
    --------
    >>> normalize_judgement((0.5, "half"), evaluator="tone", case_id="c1").value
    0.5
    >>> normalize_judgement("good", evaluator="tone", case_id="c1")
    Traceback (most recent call last):
    ...
    TypeError: judge 'tone' returned str for case 'c1'; return a mapping with 'value' \
(0..1), a number or (value, explanation)
    """
    name = evaluator
    where = f"{role} {evaluator!r} returned"
    if isinstance(item, Mapping):
        unknown = set(item) - _JUDGEMENT_KEYS
        if unknown:
            raise ValueError(
                f"{where} unknown key(s) {sorted(map(str, unknown))} for case {case_id!r}; "
                f"a judgement has {', '.join(sorted(_JUDGEMENT_KEYS))}"
            )
        skipped = bool(item.get("skipped", False))
        raw = item.get("value", 0.0 if skipped else None)
        if raw is None:
            raise ValueError(f"{where} a judgement without 'value' for case {case_id!r}")
        name = item.get("name") or name
        metric = item.get("metric") or name
        explanation = item.get("explanation", "")
        metadata = item.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise TypeError(
                f"{where} metadata of type {type(metadata).__name__} for case {case_id!r}; "
                "metadata must be a mapping"
            )
        judged = Judged(
            name=str(name),
            metric=str(metric),
            value=0.0,
            explanation=str(explanation),
            metadata=dict(metadata),
            skipped=skipped,
            passed=bool(item.get("passed", False)),
            required=bool(item.get("required", not skipped)),
        )
    elif isinstance(item, tuple) and len(item) == 2:
        raw = item[0]
        judged = Judged(name=name, metric=name, value=0.0, explanation=str(item[1]))
    elif _number(item) is not None:
        raw = item
        judged = Judged(name=name, metric=name, value=0.0, explanation="")
    else:
        raise TypeError(
            f"{where} {type(item).__name__} for case {case_id!r}; return a mapping with "
            "'value' (0..1), a number or (value, explanation)"
        )
    value = _number(raw)
    if value is None or not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{where} value {raw!r} for case {case_id!r}; expected a number in [0, 1]")
    judged.value = value
    cost = judged.metadata.get("judge_cost_usd")
    if _number(cost) is not None and (cost < 0 or not math.isfinite(cost)):
        # J5: the package accepts it and then cannot build the report's judge summary.
        raise ValueError(
            f"{where} judge_cost_usd {cost!r} for case {case_id!r}; a cost must be a "
            "finite number >= 0"
        )
    return judged


def _failed_usage(outcomes: list[_Attempted]) -> dict[str, Any]:
    """Usage reported by failed attempts (exceptions with a ``usage`` mapping), summed.

    Attempts that raised without usage (connection errors) add nothing: unknown, not zero.
    """
    totals: dict[str, Any] = {}
    sources: set[Any] = set()
    for outcome in outcomes:
        for failure in outcome.failures:
            # As the journal keeps it: a resume or a load computes the same totals.
            usage = _failure_usage(failure)
            if usage is None:
                continue
            for key in _USAGE_TOTALS:
                value = _usage(usage.get(key))
                if value is not None:
                    totals[key] = totals.get(key, 0) + value
            if "judge_cost_usd" in usage:
                sources.add(usage.get("judge_cost_source"))
    if "judge_cost_usd" in totals:
        totals["judge_cost_source"] = "measured" if sources == {"measured"} else "estimated"
    for key in ("judge_input_tokens", "judge_output_tokens"):
        if key in totals:
            totals[key] = int(totals[key])
    return totals


def _add_usage(metadata: dict[str, Any], wasted: dict[str, Any]) -> dict[str, Any]:
    """Add failed-attempt usage to the totals a delivered score already records."""
    merged = dict(metadata)
    for key in _USAGE_TOTALS:
        current = _number(merged.get(key))
        if key in wasted and current is not None:
            total = current + wasted[key]
            merged[key] = int(total) if key != "judge_cost_usd" else total
    if "judge_cost_usd" in wasted and _number(metadata.get("judge_cost_usd")) is not None:
        both = {metadata.get("judge_cost_source"), wasted["judge_cost_source"]}
        merged["judge_cost_source"] = "measured" if both == {"measured"} else "estimated"
    return merged


def _summed(metas: list[Mapping[str, Any]], key: str) -> float | None:
    """Sum of ``key`` over every mapping, or None if any lacks a number there."""
    values = [_number(meta.get(key)) for meta in metas]
    if any(value is None for value in values):
        return None
    return sum(value for value in values if value is not None)


def _reported(metas: list[Mapping[str, Any]], key: str) -> float | None:
    """Sum of ``key`` over the mappings that report it usably; None when none does."""
    values = [v for meta in metas if (v := _usage(meta.get(key))) is not None]
    return sum(values) if values else None


def _failure_usages(outcomes: list[_Attempted]) -> list[Mapping[str, Any]]:
    return [
        usage
        for outcome in outcomes
        for failure in outcome.failures
        if (usage := _failure_usage(failure)) is not None
    ]


def _spent(own: list[Mapping[str, Any]], outcomes: list[_Attempted]) -> dict[str, Any]:
    """Correct usage of one evaluation: every answered call counted once (J2, J8)."""
    metas = [*own, *_failure_usages(outcomes)]
    out: dict[str, Any] = {}
    for key, added in zip(_USAGE_TOTALS, ADDED_JUDGE_KEYS[1:], strict=True):
        total = _reported(metas, key)
        if total is not None:
            out[added] = total if key == "judge_cost_usd" else int(total)
    return out


def _verdict_key(judged: Judged) -> Any:
    return judged.metadata.get("verdict", judged.value)


class JudgeRunner:
    """Runs one judge function with retries and optional repeated sampling.

    Parameters
    ----------
    name
        The evaluator's registered name (the name of its unavailable scores).
    retry
        The retry policy of each sample (default: one attempt).
    samples
        How many times each evaluation is judged (``>= 1``).
    clock
        Milliseconds-capable ``perf_counter``-like clock (tests fix it).
    """

    def __init__(
        self,
        name: str,
        *,
        retry: JudgeRetryPolicy | None = None,
        samples: int = 1,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError("samples must be at least 1")
        if retry is not None and not isinstance(retry, JudgeRetryPolicy):
            # agenticlens_frames.RetryPolicy (the live targets') has other fields; taken
            # here it would be read by name and fail, or retry nothing, mid-run.
            raise InputError(
                f"retry must be a JudgeRetryPolicy, got {type(retry).__name__}",
                location="retry",
                hint="use agenticlens_frames.JudgeRetryPolicy (also "
                "agenticlens_frames.evaluators.RetryPolicy); agenticlens_frames.RetryPolicy "
                "is the live targets' policy",
            )
        self.name = name
        self.retry = retry or JudgeRetryPolicy()
        self.samples = samples
        self.clock = clock

    # ----------------------------------------------------------------- one call

    def _parse(self, result: Any, case_id: str) -> list[Judged]:
        """The judge's reply as scores; raises (a failed attempt) when unusable."""
        label = dict(evaluator=self.name, case_id=case_id)
        if self.samples > 1:
            if isinstance(result, list):
                if len(result) != 1:
                    raise TypeError("a judge sampled more than once must return a single Score")
                result = result[0]
            try:
                judged = normalize_judgement(result, **label)
            except TypeError:
                raise TypeError("a judge must return a Score") from None
            key = _verdict_key(judged)
            try:
                hash(key)
            except TypeError:
                # J5: the package raises this outside its retry loop, aborting the run.
                raise TypeError(
                    f"judge {self.name!r} returned an unhashable verdict "
                    f"({type(key).__name__}) for case {case_id!r}; a verdict must be a "
                    "string or number"
                ) from None
            self._as_json(judged, case_id)
            try:
                hash(_verdict_key(judged))
            except TypeError:
                raise TypeError(
                    f"judge {self.name!r} returned a verdict of type {type(key).__name__} "
                    f"for case {case_id!r}, which JSON keeps as a list (the run journal "
                    "could not give it back); a verdict must be a string or number"
                ) from None
            return [judged]
        if isinstance(result, list):
            if not result:
                # J4: the package delivers no score, so the case can pass with no evidence.
                raise ValueError(
                    f"judge {self.name!r} returned an empty list for case {case_id!r}; "
                    "return at least one judgement (or a skipped one)"
                )
            judgements = [normalize_judgement(item, **label) for item in result]
        else:
            judgements = [normalize_judgement(result, **label)]
        for judged in judgements:
            self._as_json(judged, case_id)
        return judgements

    def _as_json(self, judged: Judged, case_id: str) -> None:
        """Make ``judged.metadata`` what JSON holds (:func:`~._values.json_copy`), or raise.

        The score is built from what the run journal keeps, so a run, its resume and
        ``load_experiment(run_dir=...)`` give the same score from the same sample: a tuple
        a list, a key ``"1"``, another object its ``str()`` (as the ``checks`` table
        writes them anyway), NaN and infinities as they are. Metadata JSON cannot write at
        all (a tuple key, a cycle) is an invalid reply: a failed attempt (it used to fail
        the table build in ``metadata_json``, after the judge was paid). So is metadata
        with two keys JSON writes alike (``1`` and ``"1"``, at any depth): JSON keeps only
        one of them, which was lost without a word.
        """
        try:
            copied, clash = json_copy_checked(judged.metadata)
        except Exception as exc:  # the judge's objects (RecursionError too), not our bug
            clash = describe_error(exc)
        if clash is not None:
            raise TypeError(
                f"judge {self.name!r} returned metadata JSON cannot hold for case "
                f"{case_id!r} ({clash}); a judge's metadata is kept as JSON "
                "(the run journal, the checks table): use string keys and JSON values"
            )
        judged.metadata = copied

    def _call_with_retry(self, call: Callable[[], Any]) -> _Attempted:
        policy = self.retry
        sleep = policy.sleep or time.sleep
        outcome = _Attempted()
        started = self.clock()
        for attempt in range(1, policy.max_attempts + 1):
            outcome.attempts = attempt
            try:
                outcome.value = call()
                outcome.error = None
                break
            except Exception as exc:
                outcome.error = exc
                outcome.errors.append(describe_error(exc))
                outcome.failures.append(exc)
                if not isinstance(exc, policy.retry_on) or attempt == policy.max_attempts:
                    break
                sleep(policy.delay(attempt))
        outcome.elapsed_ms = (self.clock() - started) * 1000
        return outcome

    # ----------------------------------------------------------------- run

    def run(
        self,
        function: Callable[[], Any],
        case_id: str,
        *,
        book: SampleBook | None = None,
        entry: int = 0,
        version: str | None = None,
    ) -> list[Judged]:
        """Judge once (or ``samples`` times, in order) and return the stamped scores.

        ``function`` takes no argument (the caller binds output, case, trace, config); it
        may return an awaitable, which is run to completion. With a ``book`` (live runs),
        samples journaled earlier for evaluator entry ``entry`` and this judge ``version``
        are reused, and each new sample is journaled as it finishes.
        """
        outcomes: list[_Attempted] = []
        for index in range(self.samples):
            data = book.recall(entry, index, self.name, version) if book is not None else None
            ended = book.take_ended() if book is not None and data is None else None
            if data is not None:
                outcome = _Attempted.from_json(data)
            elif ended is not None:
                # This sample was being judged when the run's process ended: unavailable,
                # not judged again (calling the judge that ended it would end it again).
                failure = ProcessEnded(ended)
                outcome = _Attempted(
                    error=failure, attempts=1, errors=[describe_error(failure)], failures=[failure]
                )
                if book is not None:
                    book.record(
                        entry, index, self.name, version, outcome.to_json(), attempts=0, ok=False
                    )
            elif book is not None and book.offline is not None:
                # Loading a run folder: a sample it does not hold is not judged now (a load
                # calls no judge); unavailable, no attempt made, nothing journaled.
                failure = NotJudged(book.offline())
                outcome = _Attempted(
                    error=failure, attempts=0, errors=[describe_error(failure)], failures=[failure]
                )
                book.record(entry, index, self.name, version, None, attempts=0, ok=False)
            else:
                outcome = self._call_with_retry(lambda: self._parse(_resolve(function()), case_id))
                if book is not None:
                    book.record(
                        entry,
                        index,
                        self.name,
                        version,
                        outcome.to_json(),
                        attempts=outcome.attempts,
                        ok=outcome.ok,
                    )
            outcomes.append(outcome)
            if not outcome.ok:  # the package's synchronous path stops here
                break
        return self._finish(outcomes)

    def _finish(self, outcomes: list[_Attempted]) -> list[Judged]:
        attempts = sum(o.attempts for o in outcomes)
        elapsed = round(sum(o.elapsed_ms for o in outcomes), 3)
        failed = [o for o in outcomes if not o.ok]
        wasted = _failed_usage(outcomes)
        if failed:
            return [self._unavailable(outcomes, failed, attempts, elapsed, wasted)]
        if self.samples == 1:
            scores: list[Judged] = outcomes[0].value
            out = []
            for position, judged in enumerate(scores):
                own = judged.metadata
                reported = _number(own.get("judge_latency_ms")) is not None
                metadata = _add_usage(
                    {
                        "judge_latency_ms": elapsed,
                        **own,
                        "judge_status": "ok",
                        "judge_attempts": attempts,
                    },
                    wasted,
                )
                metadata["judge_latency_source"] = "reported" if reported else "measured"
                # Wasted usage belongs to the call, so only the first score carries it.
                metadata.update(_spent([own], outcomes if position == 0 else []))
                judged.metadata = metadata
                out.append(judged)
            return out
        samples: list[Judged] = [o.value[0] for o in outcomes]
        aggregate = self._aggregate(samples, attempts, elapsed)
        aggregate.metadata = _add_usage(aggregate.metadata, wasted)
        aggregate.metadata.update(_spent([s.metadata for s in samples], outcomes))
        return [aggregate]

    def _unavailable(
        self,
        outcomes: list[_Attempted],
        failed: list[_Attempted],
        attempts: int,
        elapsed: float,
        wasted: dict[str, Any],
    ) -> Judged:
        errors = [error for outcome in failed for error in outcome.errors]
        # The last failure's description (kept as text, so a journaled sample has it too).
        message = failed[-1].errors[-1] if failed[-1].errors else "unknown error"
        # J3: the package always measures; a time every call reported is reproducible.
        completed = [o.value[0].metadata for o in outcomes if o.ok]
        failures = _failure_usages(outcomes)
        n_failures = sum(len(o.failures) for o in outcomes)
        reported = _summed([*completed, *failures], "judge_latency_ms")
        reproducible = reported is not None and len(failures) == n_failures
        metadata: dict[str, Any] = {
            "judge_status": "unavailable",
            "judge_attempts": attempts,
            "judge_error": message,
            "judge_errors": errors[-_MAX_RECORDED_ERRORS:],
            "judge_latency_ms": round(reported, 3)
            if reproducible and reported is not None
            else elapsed,
        }
        if self.samples > 1:
            metadata["judge_samples"] = self.samples
            metadata["judge_completed_samples"] = sum(o.ok for o in outcomes)
        metadata.update(wasted)
        metadata["judge_latency_source"] = "reported" if reproducible else "measured"
        metadata.update(_spent(completed, outcomes))
        return Judged(
            name=self.name,
            metric=self.name,
            value=0.0,
            explanation=f"Judge unavailable after {attempts} attempt(s): {message}",
            metadata=metadata,
        )

    def _aggregate(self, samples: list[Judged], attempts: int, elapsed: float) -> Judged:
        keys = [_verdict_key(sample) for sample in samples]
        counts = Counter(keys)
        top = max(counts.values())
        tied = [key for key in counts if counts[key] == top]

        def mean_value(key: Any) -> float:
            values = [s.value for s, k in zip(samples, keys, strict=True) if k == key]
            return sum(values) / len(values)

        # On a tie the lower-scoring verdict wins: disagreement must not round up.
        modal = min(tied, key=mean_value)
        representative = samples[keys.index(modal)]
        n = len(samples)
        agreement = round(top / n, 6)
        value = sum(sample.value for sample in samples) / n
        dropped = {"judge_latency_ms", *_USAGE_TOTALS, "judge_cost_source"}
        metadata = {k: v for k, v in representative.metadata.items() if k not in dropped}
        metas = [s.metadata for s in samples]
        recorded_latency = _summed(metas, "judge_latency_ms")
        metadata.update(
            {
                "judge_status": "ok",
                "judge_attempts": attempts,
                "judge_samples": n,
                "judge_verdicts": [
                    key if isinstance(key, (str, int, float)) else str(key) for key in keys
                ],
                "judge_sample_values": [sample.value for sample in samples],
                "judge_agreement": agreement,
                "judge_latency_ms": round(recorded_latency, 3)
                if recorded_latency is not None
                else elapsed,
            }
        )
        cost = _summed(metas, "judge_cost_usd")
        if cost is not None:
            sources = {meta.get("judge_cost_source") for meta in metas}
            metadata["judge_cost_usd"] = cost
            metadata["judge_cost_source"] = "measured" if sources == {"measured"} else "estimated"
        for key in ("judge_input_tokens", "judge_output_tokens"):
            total = _summed(metas, key)
            if total is not None:
                metadata[key] = int(total)
        metadata["judge_latency_source"] = (
            "reported" if recorded_latency is not None else "measured"
        )
        return Judged(
            name=representative.name,
            metric=representative.metric,
            value=value,
            explanation=(
                f"Judged {n} times; {top}/{n} agreed on {modal!r} "
                f"(agreement {agreement:.0%}). {representative.explanation}"
            ),
            metadata=metadata,
            skipped=representative.skipped,
            passed=representative.passed,
            required=representative.required,
        )


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _resolve(value: Any) -> Any:
    """``value``, run to completion first if it is awaitable (``async def`` judges).

    Inside a running event loop (live runs score on one) the awaitable runs on its own
    loop in a helper thread; the package refuses that case instead.
    """
    if not inspect.isawaitable(value):
        return value
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(value))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge") as pool:
        return pool.submit(asyncio.run, _await(value)).result()


# --------------------------------------------------------------------------- summary


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def summarize_judges(
    scores: list[tuple[str, bool, Mapping[str, Any]]],
) -> dict[str, Any] | None:
    """The ``summary.judge`` block of one trial report from its judge scores.

    Parameters
    ----------
    scores
        ``(case_id, skipped, metadata)`` of every judge score, in case then score order.

    Returns
    -------
    dict or None
        The package's keys in its order, then ours (``spent_*``); None without judge scores.

    Examples
    --------
    >>> block = summarize_judges([
    ...     ("c1", False, {"judge_status": "ok", "judge_attempts": 2, "judge_cost_usd": 0.01,
    ...                    "judge_cost_source": "measured", "judge_latency_ms": 12.5}),
    ...     ("c2", False, {"judge_status": "unavailable", "judge_attempts": 1}),
    ... ])
    >>> block["unavailable_cases"], block["retried_scores"], block["total_cost_usd"]
    (['c2'], 1, None)
    """
    if not scores:
        return None
    active = [(case_id, meta) for case_id, skipped, meta in scores if not skipped]
    unavailable = [c for c, meta in active if meta.get("judge_status") == "unavailable"]
    costs: list[float] = []
    cost_sources: dict[str, int] = {}
    input_tokens = output_tokens = 0
    latency = 0.0
    agreements: list[float] = []
    case_agreement: dict[str, float] = {}
    retried = 0
    for case_id, meta in active:
        cost = _number(meta.get("judge_cost_usd"))
        if cost is not None:
            costs.append(cost)
            source = meta.get("judge_cost_source")
            key = source if source in ("measured", "estimated") else "unspecified"
            cost_sources[key] = cost_sources.get(key, 0) + 1
        input_tokens += _count(meta.get("judge_input_tokens"))
        output_tokens += _count(meta.get("judge_output_tokens"))
        elapsed = _number(meta.get("judge_latency_ms"))
        if elapsed is not None and elapsed >= 0:
            latency += elapsed
        attempts = meta.get("judge_attempts")
        samples = meta.get("judge_samples", 1)
        if isinstance(attempts, int) and isinstance(samples, int) and attempts > samples:
            retried += 1
        agreement = _number(meta.get("judge_agreement"))
        if agreement is not None:
            agreements.append(agreement)
            case_agreement[case_id] = min(case_agreement.get(case_id, 1.0), agreement)
    spent_cost = _reported([meta for _, _, meta in scores], "judge_spent_cost_usd")
    return {
        "judge_scores": len(active),
        "unavailable_scores": len(unavailable),
        "unavailable_cases": list(dict.fromkeys(unavailable)),
        "retried_scores": retried,
        "priced_scores": len(costs),
        "total_cost_usd": sum(costs) if active and len(costs) == len(active) else None,
        "cost_sources": dict(sorted(cost_sources.items())),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_latency_ms": round(latency, 3),
        "sampled_scores": len(agreements),
        "min_agreement": min(agreements) if agreements else None,
        "average_agreement": sum(agreements) / len(agreements) if agreements else None,
        "case_agreement": case_agreement,
        # Added (J2, J8): every answered judge call counted once, skipped scores included.
        "spent_cost_usd": spent_cost,
        "spent_input_tokens": int(
            _reported([meta for _, _, meta in scores], "judge_spent_input_tokens") or 0
        ),
        "spent_output_tokens": int(
            _reported([meta for _, _, meta in scores], "judge_spent_output_tokens") or 0
        ),
    }
