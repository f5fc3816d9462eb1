"""Score one sample against one case: the built-in checks of AgenticLens 0.10 (spec §6).

Scores are not objects: each check appends one value to the columns of a
:class:`~agenticlens_frames.frames.CheckColumns` sink (the ``checks`` table's builder).
The pass rule, name, metric, order and explanation of every check follow the package
exactly, so our ``checks`` table and the package's trial reports agree score for score.
"""

from __future__ import annotations

import json
import math
import re
import threading
import warnings
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ._limits import REGEX_TIMEOUT_ENV, limit
from .errors import is_recursion
from .evaluators import REFERENCE_SCORER_NAMES, EvaluatorRegistry
from .frames import CheckColumns
from .judges import Judged, SampleBook

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

    from .formats.model import CaseSpec
    from .formats.traces import Trace

__all__ = [
    "AttemptScore",
    "score_sample",
    "score_unavailable",
]


def metadata_json(metadata: dict[str, Any]) -> str | None:
    """A score's metadata as JSON text (None when empty); key order kept.

    Values JSON cannot hold are written with ``str()``, as a report must never fail to be
    written because a judge put an odd object in its metadata.

    Examples
    --------
    >>> metadata_json({"verdict": "good", "judge_latency_ms": 12.5})
    '{"verdict": "good", "judge_latency_ms": 12.5}'
    >>> metadata_json({}) is None
    True
    """
    if not metadata:
        return None
    return json.dumps(metadata, default=str, ensure_ascii=False)


@dataclass(slots=True)
class AttemptScore:
    """What one scored sample contributes to the ``attempts`` table (read-only by
    convention: not frozen, because a frozen dataclass costs 0.6 µs more per attempt)."""

    passed: bool
    #: Mean of the values of the non-skipped scores (``statistics.fmean``), the case score.
    score: float | None
    n_checks: int
    n_checks_passed: int
    #: Sum of the check values in emission order (plain left-to-right float sum).
    score_sum: float
    #: ``metadata.turn_count`` when it is a positive ``int`` (the package's rule), else None.
    turns: int | None
    evaluator_error: str | None = None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _reject_constant(value: str) -> Any:
    raise ValueError(f"Non-finite JSON constant {value} is not allowed")


@lru_cache(maxsize=4096)
def _validator_for(schema_json: str) -> Draft202012Validator:
    # Built once per distinct schema; an empty registry means remote $refs never load.
    # (Imported here: only suites with output_json_schema need jsonschema.)
    from referencing import Registry

    return _safe_validator_class()(json.loads(schema_json), registry=Registry())


@lru_cache(maxsize=256)
def as_re_reads(pattern: str) -> str:
    r"""``pattern`` rewritten so the ``regex`` engine reads it as Python's ``re`` does.

    The two differ on a ``[`` inside a character set: ``re`` takes it literally (and warns
    "Possible nested set"), while ``regex`` reads ``[[:digit:]]`` as a POSIX class and
    ``[[a]b]`` as a nested set. The reference validator uses ``re``, so ``^[[:digit:]]$``
    must match ``:]``, not ``7``. Escaping such a ``[`` gives ``regex`` the ``re``
    reading; every other construct the two engines share is read alike.

    Examples
    --------
    >>> print(as_re_reads("^TCK-[[:digit:]]{6}$"))
    ^TCK-[\[:digit:]]{6}$
    >>> print(as_re_reads(r"[]a[]\[x\]"))
    []a\[]\[x\]
    """
    if "[" not in pattern:
        return pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    in_set = False
    while i < n:
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if not in_set:
            out.append(char)
            if char == "[":
                in_set = True
                i += 1
                # A leading ^ negates, and a ] right after "[" or "[^" is a literal.
                if i < n and pattern[i] == "^":
                    out.append("^")
                    i += 1
                if i < n and pattern[i] == "]":
                    out.append("]")
                    i += 1
                continue
        elif char == "[":
            out.append("\\[")
        else:
            out.append(char)
            in_set = char != "]"
        i += 1
    return "".join(out)


@lru_cache(maxsize=1)
def _safe_validator_class() -> Any:
    """Draft 2020-12 with ``pattern`` and ``patternProperties`` under a time limit.

    Python's ``re`` backtracks without bound: ``^(a|a)*$`` on a 40-character output takes
    hours. The ``regex`` engine takes a timeout; a pattern that runs out of time fails
    the check with a message naming the limit and the variable that raises it.
    """
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import ValidationError

    def search(pattern: str, text: str) -> bool:
        import regex

        seconds = limit(REGEX_TIMEOUT_ENV)
        try:
            return regex.search(as_re_reads(pattern), text, timeout=seconds) is not None
        except TimeoutError:
            raise ValidationError(
                f"pattern {pattern!r} took longer than {seconds:g} s on this output "
                f"(the regular-expression time limit, {REGEX_TIMEOUT_ENV})"
            ) from None
        except regex.error:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # "Possible nested set"
                return re.search(pattern, text) is not None

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "string"):
            return
        try:
            found = search(patrn, instance)
        except ValidationError as exc:
            yield exc
            return
        if not found:
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                try:
                    found = search(patrn, key)
                except ValidationError as exc:
                    yield exc
                    return
                if found:
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    return validators.extend(
        Draft202012Validator, {"pattern": pattern, "patternProperties": pattern_properties}
    )


def _schema_check(payload: Any, schema: dict[str, Any]) -> tuple[bool, str]:
    from referencing.exceptions import Unresolvable

    # Keys in the suite's order, not sorted: jsonschema yields errors keyword by keyword in
    # the schema's order, and the explanation quotes the first one, as the package does.
    validator = _validator_for(json.dumps(schema))
    try:
        error = next(validator.iter_errors(payload), None)
    except Unresolvable as exc:
        # The suite loader refuses unresolvable references; this is a last line of defence.
        return False, f"Unresolvable output_json_schema reference: {exc}"
    except BaseException as exc:  # the loader refuses $ref loops; a payload nested too deep
        if not is_recursion(exc):
            raise
        return False, "Output is nested too deeply to check against the JSON Schema."
    if error is not None:
        return False, f"Output violates JSON Schema at {error.json_path}: {error.message}"
    return True, "Output matches the configured JSON Schema Draft 2020-12."


def _lookup(payload: Any, dotted: str) -> bool:
    current = payload
    for part in dotted.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        # Fix B14: the package tests `isdigit()`, true of digits int() cannot read ("²",
        # "①"), and its int() then fails the whole trial. isdecimal() is true of exactly
        # the digits int() reads ("0"-"9" and other scripts' decimals, e.g. "١"), so such
        # a segment is simply no index: the field is missing, every other path unchanged.
        elif isinstance(current, list) and part.isdecimal() and int(part) < len(current):
            current = current[int(part)]
        else:
            return False
    return True


#: The package's explanations of the plain built-in checks, (passed, failed), as format
#: templates of the check's argument: one table for :func:`score_sample` and the batch
#: scorer (:mod:`~agenticlens_frames.scoring_batch`), so neither drifts from the wording.
CHECK_TEXTS: dict[str, tuple[str, str]] = {
    "exact_match": (
        "Output exactly matches the reference.",
        "Output does not exactly match the reference.",
    ),
    "contains": ("Output contains required text: {!r}.", "Output is missing required text: {!r}."),
    "required_tool": ("Required tool {!r} was called.", "Required tool {!r} was not called."),
    "forbidden_tool": ("Forbidden tool {!r} was not called.", "Forbidden tool {!r} was called."),
}


def latency_text(latency: float, limit: float, ok: bool) -> str:
    """The package's explanation of a latency check.

    Examples
    --------
    >>> latency_text(12.34, 50.0, True)
    'Latency 12.3 ms meets the 50.0 ms limit.'
    """
    return f"Latency {latency:.1f} ms {'meets' if ok else 'exceeds'} the {limit:.1f} ms limit."


def cost_text(cost: float | None, limit: float, ok: bool) -> str:
    """The package's explanation of a cost check (a missing cost fails it).

    Examples
    --------
    >>> cost_text(None, 0.01, False)
    'Cost is unavailable or exceeds the configured limit.'
    """
    if ok and cost is not None:
        return f"Cost ${cost:.6f} meets the ${limit:.6f} limit."
    return "Cost is unavailable or exceeds the configured limit."


def turns_text(turns: int | None, limit: int, ok: bool) -> str:
    """The package's explanation of a turn-count check (``turns`` from
    :func:`positive_turns`).

    Examples
    --------
    >>> turns_text(3, 2, False)
    'Turn count 3 exceeds the 2 turn limit.'
    """
    if turns is None:
        return (
            "Trace metadata is missing a positive integer turn_count, "
            "so the max_turns check could not be evaluated."
        )
    return f"Turn count {turns} {'meets' if ok else 'exceeds'} the {limit} turn limit."


def positive_turns(trace: Trace) -> int | None:
    """``metadata.turn_count`` if it is a Python ``int`` > 0 (``True`` counts as 1), else None.

    This is the package's rule (bug B7 kept for compatibility: ``2.0`` is "missing").

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> positive_turns(SimpleNamespace(metadata={"turn_count": 3}))
    3
    >>> positive_turns(SimpleNamespace(metadata={"turn_count": 2.0})) is None
    True
    """
    return positive_turn_count(trace.metadata.get("turn_count"))


def positive_turn_count(turns: Any) -> int | None:
    """:func:`positive_turns` of a trace whose ``metadata.turn_count`` is ``turns``.

    Examples
    --------
    >>> positive_turn_count(True), positive_turn_count(0), positive_turn_count("3")
    (True, None, None)
    """
    if isinstance(turns, int) and turns > 0:
        return turns
    return None


def _exact_match_applies(case: CaseSpec) -> bool:
    if case.expected_output is None:
        return False
    return not any(
        ref.name in REFERENCE_SCORER_NAMES and not ref.config.get("reference")
        for ref in case.evaluators
    )


def score_sample(
    case: CaseSpec,
    output: str,
    trace: Trace,
    sink: CheckColumns,
    attempt: int,
    registry: EvaluatorRegistry | None = None,
    *,
    judge_samples: SampleBook | None = None,
) -> AttemptScore:
    """Run every check of ``case`` on one sample, appending them to ``sink``.

    Parameters
    ----------
    case
        The suite case.
    output
        The agent's output as recorded (stripped of surrounding whitespace before checks).
    trace
        The normalised trace (:func:`agenticlens_frames.formats.normalize_trace`).
    sink
        Where the checks go, one row each.
    attempt
        The attempt's row number, stored with each check.
    registry
        Evaluators named by the case; the suite loader has checked they are registered.
    judge_samples
        Live runs: where judge samples are journaled, and those journaled before a crash
        (reused instead of judging again).

    Returns
    -------
    AttemptScore
        Case pass, case score and counts.

    Examples
    --------
    >>> from agenticlens_frames.formats.model import CaseSpec
    >>> from agenticlens_frames.formats.traces import normalize_trace
    >>> case = CaseSpec(id="c1", name="refund", index=0, expected_contains=("refund",),
    ...                 max_turns=3)
    >>> sink = CheckColumns()
    >>> result = score_sample(case, "Your refund is on its way",
    ...                       normalize_trace({"metadata": {"turn_count": 4}}), sink, 0)
    >>> result.passed, result.score, sink.name
    (False, 0.5, ['contains:refund', 'turn_count_threshold'])
    """
    start = len(sink)
    text = output.strip()
    add = sink.add

    if _exact_match_applies(case):
        ok = text == case.expected_output.strip()  # type: ignore[union-attr]
        add(
            attempt,
            "exact_match",
            "exact_match",
            ok,
            CHECK_TEXTS["exact_match"][not ok],
        )

    if case.expected_contains:
        folded = text.casefold()
        for expected in case.expected_contains:
            ok = expected.casefold() in folded
            add(
                attempt,
                f"contains:{expected}",
                "contains",
                ok,
                CHECK_TEXTS["contains"][not ok].format(expected),
            )

    if case.output_json_schema is not None or case.required_output_fields:
        parsed: Any = None
        json_error: str | None = None
        try:
            parsed = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            json_error = str(exc)
        if case.output_json_schema is not None:
            if json_error is not None:
                add(
                    attempt,
                    "json_schema",
                    "json_schema",
                    False,
                    f"Output is not valid JSON: {json_error}.",
                )
            else:
                ok, why = _schema_check(parsed, case.output_json_schema)
                add(attempt, "json_schema", "json_schema", ok, why)
        for path in case.required_output_fields:
            ok = json_error is None and parsed is not None and _lookup(parsed, path)
            if ok:
                why = f"Output contains required field {path!r}."
            elif json_error is not None:
                why = f"Output is not valid JSON, so required field {path!r} could not be checked."
            else:
                why = f"Output is missing required field {path!r}."
            add(attempt, f"required_field:{path}", "required_field", ok, why)

    if case.required_tools or case.forbidden_tools:
        called = set(trace.tool_names)
        for tool in case.required_tools:
            ok = tool in called
            add(
                attempt,
                f"required_tool:{tool}",
                "required_tool",
                ok,
                CHECK_TEXTS["required_tool"][not ok].format(tool),
            )
        for tool in case.forbidden_tools:
            ok = tool not in called
            add(
                attempt,
                f"forbidden_tool:{tool}",
                "forbidden_tool",
                ok,
                CHECK_TEXTS["forbidden_tool"][not ok].format(tool),
            )

    for tool, needed in case.required_tool_arguments.items():
        needed_list = list(needed)
        ok = any(
            isinstance(args := attrs.get("tool_args"), dict) and all(a in args for a in needed)
            for name, attrs in trace.spans
            if name == tool
        )
        add(
            attempt,
            f"tool_args:{tool}",
            "tool_args",
            ok,
            f"Tool {tool!r} included required arguments {needed_list}."
            if ok
            else f"Tool {tool!r} did not include required arguments {needed_list}.",
        )

    for tool, expected_args in case.expected_tool_arguments.items():
        calls = [attrs.get("tool_args") for name, attrs in trace.spans if name == tool]
        ok = any(
            isinstance(args, dict)
            and all(a in args and args[a] == v for a, v in expected_args.items())
            for args in calls
        )
        if ok:
            why = f"Tool {tool!r} was called with {expected_args}."
        elif calls:
            why = f"Tool {tool!r} was called with {calls}, not {expected_args}."
        else:
            why = f"Tool {tool!r} was not called, so {expected_args} was not passed."
        add(attempt, f"tool_arg_values:{tool}", "tool_arg_values", ok, why)

    if case.required_tool_order:
        order = list(case.required_tool_order)
        names = trace.tool_names
        first: dict[str, int] = {}
        for position, name in enumerate(names):
            first.setdefault(name, position)
        missing = [t for t in order if t not in first]
        swapped = [
            (a, b) for a, b in pairwise(order) if a in first and b in first and first[a] > first[b]
        ]
        ok = not missing and not swapped
        if ok:
            why = f"Tools were first called in the required order {order}."
        elif missing:
            why = f"Required order {order} not met: {missing} never called."
        else:
            a, b = swapped[0]
            why = f"Required order {order} not met: {b!r} was called before {a!r}."
        add(attempt, "tool_order", "tool_order", ok, why)

    if case.max_latency_ms is not None:
        latency = trace.total_latency_ms
        ok = latency <= case.max_latency_ms
        add(
            attempt,
            "latency_threshold",
            "latency_threshold",
            ok,
            latency_text(latency, case.max_latency_ms, ok),
        )

    if case.max_cost_usd is not None:
        cost = trace.estimated_cost_usd
        ok = cost is not None and cost <= case.max_cost_usd
        add(
            attempt,
            "cost_threshold",
            "cost_threshold",
            ok,
            cost_text(cost, case.max_cost_usd, ok),
        )

    turns = positive_turns(trace)
    if case.max_turns is not None:
        ok = turns is not None and turns <= case.max_turns
        add(
            attempt,
            "turn_count_threshold",
            "turn_count_threshold",
            ok,
            turns_text(turns, case.max_turns, ok),
        )

    evaluator_error: str | None = None
    for entry, ref in enumerate(case.evaluators):
        evaluator = registry[ref.name] if registry is not None else None
        if evaluator is None:  # the suite loader prevents this; keep the row honest anyway
            add(attempt, ref.name, ref.name, False, "Evaluator is not registered.", 0.0)
            continue
        raised = False
        try:
            # Evaluators get the raw output, as in the package (built-in checks strip it).
            scores = evaluator.evaluate(output, case, trace, ref, book=judge_samples, entry=entry)
        except BaseException as exc:  # a trusted evaluator's bug fails its check, loudly
            if isinstance(exc, KeyboardInterrupt) and _in_main_thread():
                raise  # Ctrl-C lands in the main thread: the user's, not the evaluator's
            # SystemExit, GeneratorExit, CancelledError from an evaluator end nothing.
            raised = True
            evaluator_error = f"{type(exc).__name__}: {exc}"
            why = f"Evaluator {ref.name!r} raised {evaluator_error}"
            scores = [Judged(name=ref.name, metric=ref.name, value=0.0, explanation=why)]
        for judged in scores:
            if judged.skipped:  # a skipped score keeps its own pass / required flags
                passed, required = judged.passed, judged.required
            else:
                passed = (
                    judged.value >= ref.threshold
                    and judged.metadata.get("judge_status") != "unavailable"
                    and not raised
                )
                required = ref.required
            sink.add_custom(
                attempt,
                judged.name,
                judged.value,
                passed,
                judged.explanation,
                required=required,
                evaluator=ref.name,
                evaluator_version=evaluator.version,
                evaluator_type=evaluator.evaluator_type,
                metric=judged.metric,
                skipped=judged.skipped,
                metadata=metadata_json(judged.metadata),
            )

    values = sink.value[start:]
    flags = sink.passed[start:]
    n = len(values)
    n_passed = sum(flags)
    if sink.custom:
        live = [v for i, v in enumerate(values) if not sink.skipped(start + i)]
        passed = all(
            ok or not sink.required(start + i) or sink.skipped(start + i)
            for i, ok in enumerate(flags)
        )
    else:
        live = values
        passed = n_passed == n
    return AttemptScore(
        passed=passed,
        # statistics.fmean of the non-skipped values; none at all -> no case score
        score=math.fsum(live) / len(live) if live else None,
        n_checks=n,
        n_checks_passed=n_passed,
        score_sum=sum(live),
        turns=turns,
        evaluator_error=evaluator_error,
    )


def score_unavailable(
    sink: CheckColumns,
    attempt: int,
    *,
    status: str = "missing_sample",
    error: str | None = None,
    target_attempts: int | None = None,
) -> AttemptScore:
    """Record the single failing score of a case that has nothing to score.

    A missing recorded sample gets ``sample_available`` = 0; a live target that raised or
    timed out gets ``target_call`` = 0 (spec §6, §8).
    """
    if status == "missing_sample":
        sink.add(
            attempt,
            "sample_available",
            "sample_available",
            False,
            "No evaluation sample was supplied for this test case.",
            0.0,
        )
    else:
        outcome = "timed out" if status == "timed_out" else "failed"
        sink.add(
            attempt,
            "target_call",
            "target_call",
            False,
            f"Live target {outcome} after {target_attempts} attempt(s): {error}",
            0.0,
        )
    return AttemptScore(
        passed=False,
        score=0.0,
        n_checks=1,
        n_checks_passed=0,
        score_sum=0.0,
        turns=None,
    )
