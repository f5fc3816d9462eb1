"""The package's default scorers: reference scorers and simple text checks (spec §16).

Each is a plain evaluator ``fn(output, case, trace, config)`` returning a judgement
mapping, with the formula, explanation and edge cases of agentic-evals 0.9.0's
``scorers/text.py``; :func:`~agenticlens_frames.evaluators.default_registry` registers them
with ``evaluator_type`` "builtin" and no version, as the package does. ``output`` is the raw
output: scorers that strip it (levenshtein, numeric) say so.

Reference text: ``config["reference"]`` when truthy, else the case's ``expected_output``
(and then the built-in exact-match check is left out of the case, see
:data:`~agenticlens_frames.evaluators.REFERENCE_SCORER_NAMES`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .formats.model import CaseSpec
    from .formats.traces import Trace

__all__ = ["SCORERS", "levenshtein_distance"]

Judgement = dict[str, Any]


def _reference(case: CaseSpec, config: Mapping[str, Any], scorer: str) -> str:
    reference = config.get("reference") or case.expected_output
    if reference is None:
        raise ValueError(
            f"{scorer} requires either 'reference' in EvaluatorConfig.config "
            "or the test case to set expected_output"
        )
    return str(reference)


def _result(value: float, explanation: str, **metadata: Any) -> Judgement:
    out: Judgement = {"value": value, "explanation": explanation}
    if metadata:
        out["metadata"] = metadata
    return out


def levenshtein_distance(a: str, b: str) -> int:
    """Edit distance with unit insertions, deletions and substitutions (code points).

    Examples
    --------
    >>> levenshtein_distance("kitten", "sitting")
    3
    """
    if a == b:
        return 0
    if not a or not b:
        return len(a) or len(b)
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            current[j] = min(
                previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)
            )
        previous = current
    return previous[-1]


def levenshtein_similarity(
    output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
) -> Judgement:
    """1 − d / max(len, 1) between the stripped output and stripped reference."""
    reference = _reference(case, config, "levenshtein_similarity").strip()
    text = output.strip()
    distance = levenshtein_distance(text, reference)
    longest = max(len(text), len(reference), 1)
    similarity = 1.0 - distance / longest
    return _result(
        similarity,
        f"Levenshtein similarity {similarity:.3f} (edit distance {distance} over {longest} chars).",
    )


def _cosine(a: list[float], b: list[float]) -> float:
    if len(a) != len(b):
        raise ValueError("embedding vectors must be the same length")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm_a = math.sqrt(sum(x * x for x in a))
    norm_b = math.sqrt(sum(y * y for y in b))
    if norm_a == 0 or norm_b == 0:
        return 0.0
    return dot / (norm_a * norm_b)


def embedding_similarity(
    output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
) -> Judgement:
    """(cos + 1) / 2 of ``embed_fn(output)`` and ``embed_fn(reference)`` (raw strings)."""
    reference = _reference(case, config, "embedding_similarity")
    embed = config.get("embed_fn")
    if embed is None or not callable(embed):
        raise ValueError(
            "embedding_similarity requires an 'embed_fn' callable (text -> vector) "
            "in EvaluatorConfig.config; this package makes no embedding calls itself"
        )
    raw = _cosine(embed(output), embed(reference))
    scaled = (raw + 1.0) / 2.0
    return _result(
        scaled,
        f"Cosine similarity {raw:.3f} (scaled to {scaled:.3f}).",
        raw_cosine_similarity=raw,
    )


def _first_json_difference(expected: Any, actual: Any, path: str = "$") -> str | None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                return f"{path}.{key}: missing from output"
            if key not in expected:
                return f"{path}.{key}: unexpected in output"
            found = _first_json_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{path}: length mismatch ({len(expected)} expected, {len(actual)} in output)"
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            found = _first_json_difference(want, got, f"{path}[{index}]")
            if found:
                return found
        return None
    mismatch = f"{path}: value mismatch ({expected!r} expected, {actual!r} in output)"
    # Numbers compare by value across int / float / bool (true == 1), as in the package.
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return mismatch if expected != actual else None
    if type(expected) is not type(actual) or expected != actual:
        return mismatch
    return None


def json_diff(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """1.0 when the output's JSON equals the reference's, else the first difference."""
    expected_raw = _reference(case, config, "json_diff")
    try:
        actual = json.loads(output)
    except ValueError as exc:
        return _result(0.0, f"Output is not valid JSON: {exc}.")
    try:
        expected = json.loads(expected_raw)
    except ValueError as exc:
        raise ValueError(f"json_diff's expected_output is not valid JSON: {exc}") from exc
    difference = _first_json_difference(expected, actual)
    if difference is None:
        return _result(1.0, "Output matches the expected JSON structure.")
    return _result(0.0, f"First difference: {difference}.")


def numeric_diff(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """1.0 within ``rel_tol`` / ``abs_tol``, else the relative closeness to the reference."""
    expected_raw = _reference(case, config, "numeric_diff")
    try:
        actual = float(output.strip())
    except ValueError as exc:
        return _result(0.0, f"Output is not numeric: {exc}.")
    try:
        expected = float(expected_raw.strip())
    except ValueError as exc:
        raise ValueError(f"numeric_diff's expected_output is not numeric: {exc}") from exc
    close = math.isclose(
        actual,
        expected,
        rel_tol=config.get("rel_tol", 1e-6),
        abs_tol=config.get("abs_tol", 1e-9),
    )
    difference = abs(actual - expected)
    denominator = max(abs(expected), 1e-9)
    similarity = 1.0 if close else max(0.0, 1.0 - min(1.0, difference / denominator))
    if math.isnan(similarity):  # a NaN on either side: no closeness at all
        similarity = 0.0
    return _result(
        similarity,
        f"Output {actual} vs expected {expected} (absolute difference {difference:.6g}).",
    )


def _affix(kind: str) -> Callable[..., Judgement]:
    verb = {"starts_with": ("starts", "does not start"), "ends_with": ("ends", "does not end")}

    def scorer(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
        reference = _reference(case, config, kind)
        folded, ref = output.casefold(), reference.casefold()
        ok = folded.startswith(ref) if kind == "starts_with" else folded.endswith(ref)
        return _result(float(ok), f"Output {verb[kind][0 if ok else 1]} with {reference!r}.")

    scorer.__name__ = kind
    scorer.__doc__ = (
        f"1.0 when the raw output (casefolded) {kind.replace('_', 's ')} the reference."
    )
    return scorer


def exact_match(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """The stripped output equals the stripped ``expected_output``."""
    if case.expected_output is None:
        raise ValueError("exact_match requires the test case to set expected_output")
    ok = output.strip() == case.expected_output.strip()
    return _result(
        float(ok),
        "Output exactly matches the reference."
        if ok
        else "Output does not exactly match the reference.",
    )


def contains_all(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """Every ``expected_contains`` item occurs in the output (casefolded)."""
    if not case.expected_contains:
        raise ValueError("contains_all requires the test case to set expected_contains")
    folded = output.casefold()
    missing = [item for item in case.expected_contains if item.casefold() not in folded]
    if not missing:
        return _result(1.0, "Output contains every required substring.")
    return _result(0.0, f"Output is missing required substrings: {missing}.")


def contains_any(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """At least one ``expected_contains`` item occurs in the output (casefolded)."""
    expected = list(case.expected_contains)
    if not expected:
        raise ValueError("contains_any requires the test case to set expected_contains")
    folded = output.casefold()
    found = [item for item in expected if item.casefold() in folded]
    if found:
        return _result(1.0, f"Output contains {found}.")
    return _result(0.0, f"Output contains none of {expected}.")


def valid_json(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """The raw output parses as JSON (NaN and Infinity accepted, as ``json.loads`` does)."""
    try:
        json.loads(output)
    except ValueError as exc:
        return _result(0.0, f"Output is not valid JSON: {exc}.")
    return _result(1.0, "Output is valid JSON.")


def regex_match(output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]) -> Judgement:
    """``config["pattern"]`` searches (or with ``full_match``, fully matches) the raw output."""
    pattern = config.get("pattern")
    if not pattern:
        raise ValueError("regex_match requires a 'pattern' string in EvaluatorConfig.config")
    flags = re.IGNORECASE if config.get("case_insensitive") else 0
    compiled = re.compile(pattern, flags)
    match = compiled.fullmatch if config.get("full_match") else compiled.search
    ok = match(output) is not None
    return _result(
        float(ok), f"Output {'matches' if ok else 'does not match'} pattern {pattern!r}."
    )


def numeric_range(
    output: str, case: CaseSpec, trace: Trace, config: Mapping[str, Any]
) -> Judgement:
    """The stripped output, as a float, lies within ``[min, max]`` (either bound optional)."""
    low, high = config.get("min"), config.get("max")
    if low is None and high is None:
        raise ValueError(
            "numeric_range requires at least one of 'min'/'max' in EvaluatorConfig.config"
        )
    try:
        value = float(output.strip())
    except ValueError as exc:
        return _result(0.0, f"Output is not numeric: {exc}.")
    ok = (low is None or value >= low) and (high is None or value <= high)
    return _result(
        float(ok), f"Output {value} is {'within' if ok else 'outside'} range [{low}, {high}]."
    )


#: Name -> scorer, in the package's registration order.
SCORERS: dict[str, Callable[..., Judgement]] = {
    "exact_match": exact_match,
    "contains_all": contains_all,
    "contains_any": contains_any,
    "levenshtein_similarity": levenshtein_similarity,
    "embedding_similarity": embedding_similarity,
    "valid_json": valid_json,
    "json_diff": json_diff,
    "numeric_diff": numeric_diff,
    "regex_match": regex_match,
    "starts_with": _affix("starts_with"),
    "ends_with": _affix("ends_with"),
    "numeric_range": numeric_range,
}
