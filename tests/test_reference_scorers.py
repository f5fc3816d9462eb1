"""The default scorers (agenticlens_frames.reference_scorers): spec §16's edge cases by
hand, then every scorer against the real package's on a grid of outputs and references
(value, explanation and metadata identical, or the same error)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from agenticlens_frames.evaluators import REFERENCE_SCORER_NAMES, default_registry
from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
from agenticlens_frames.formats.traces import normalize_trace
from agenticlens_frames.frames import CheckColumns
from agenticlens_frames.scoring import score_sample

REGISTRY = default_registry()


def _score(name: str, output: str, expected: str | None = None, **config: Any) -> dict:
    case = CaseSpec(id="c", name="c", index=0, expected_output=expected)
    (judged,) = REGISTRY[name].evaluate(
        output, case, normalize_trace({}), EvaluatorRef(name, config=config)
    )
    return {"value": judged.value, "explanation": judged.explanation, "metadata": judged.metadata}


def test_levenshtein_strips_and_is_case_sensitive() -> None:
    got = _score("levenshtein_similarity", "Paris", "  paris  ")
    assert got["value"] == 1 - 1 / 5  # one substitution over five characters
    assert got["explanation"] == "Levenshtein similarity 0.800 (edit distance 1 over 5 chars)."
    both_empty = _score("levenshtein_similarity", "", reference="", expected=" ")
    assert (
        both_empty["explanation"] == "Levenshtein similarity 1.000 (edit distance 0 over 1 chars)."
    )


def test_reference_is_config_when_truthy_else_expected_output() -> None:
    assert _score("starts_with", "42 apples", "x", reference=42)["value"] == 1.0
    # reference 0 is falsy: the case's expected_output is used instead
    assert _score("ends_with", "count: 0", "count: 0", reference=0)["value"] == 1.0
    with pytest.raises(ValueError, match="starts_with requires either 'reference'"):
        _score("starts_with", "x")


def test_starts_and_ends_with_use_the_raw_output() -> None:
    assert _score("ends_with", "Bye.\n", reference="bye.")["value"] == 0.0
    assert _score("starts_with", " Hello", reference="hello")["value"] == 0.0
    got = _score("starts_with", "HELLO there", reference="hello")
    assert got == {"value": 1.0, "explanation": "Output starts with 'hello'.", "metadata": {}}


def test_numeric_diff_tolerance_closeness_and_non_numbers() -> None:
    assert _score("numeric_diff", " 1e3 ", "1000")["value"] == 1.0
    assert _score("numeric_diff", "4_2", "42")["value"] == 1.0
    # outside tolerance: 1 - |110 - 100| / 100
    assert _score("numeric_diff", "110", "100")["value"] == pytest.approx(0.9, abs=1e-15)
    assert _score("numeric_diff", "nan", "1")["value"] == 0.0
    assert _score("numeric_diff", "abc", "1")["explanation"].startswith("Output is not numeric:")
    with pytest.raises(ValueError, match="numeric_diff's expected_output is not numeric"):
        _score("numeric_diff", "1", "one")


def test_json_diff_first_difference() -> None:
    assert _score("json_diff", ' {"a": [1, true]} ', '{"a": [1.0, 1]}')["value"] == 1.0
    got = _score("json_diff", '{"a": {"c": 1}, "b": 2}', '{"a": {"c": "1"}, "z": 0}')
    assert (
        got["explanation"] == "First difference: $.a.c: value mismatch ('1' expected, 1 in output)."
    )
    got = _score("json_diff", "[1]", "[1, 2]")
    assert got["explanation"] == "First difference: $: length mismatch (2 expected, 1 in output)."


def test_embedding_similarity_needs_embed_fn_and_scales_cosine() -> None:
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [-1.0, 0.0]}
    got = _score("embedding_similarity", "a", "c", embed_fn=vectors.__getitem__)
    assert got["value"] == 0.0 and got["metadata"] == {"raw_cosine_similarity": -1.0}
    assert _score("embedding_similarity", "a", "b", embed_fn=vectors.__getitem__)["value"] == 0.5
    with pytest.raises(ValueError, match="requires an 'embed_fn' callable"):
        _score("embedding_similarity", "a", "b")


def test_exact_match_is_left_out_only_without_a_truthy_reference() -> None:
    def names(*refs: EvaluatorRef) -> list[str]:
        case = CaseSpec(id="c", name="c", index=0, expected_output="Paris", evaluators=refs)
        sink = CheckColumns()
        score_sample(case, "Paris", normalize_trace({}), sink, 0, REGISTRY)
        return sink.name

    assert names(EvaluatorRef("levenshtein_similarity")) == ["levenshtein_similarity"]
    assert names(EvaluatorRef("starts_with", config={"reference": ""})) == ["starts_with"]
    assert names(EvaluatorRef("starts_with", config={"reference": "P"})) == [
        "exact_match",
        "starts_with",
    ]
    assert names(EvaluatorRef("valid_json")) == ["exact_match", "valid_json"]
    assert set(REGISTRY) >= REFERENCE_SCORER_NAMES


# ----------------------------------------------------------------------- differential

OUTPUTS = [
    "",
    "  Paris  ",
    "paris\n",
    "42",
    " 4_2 ",
    "1e3",
    "nan",
    "-0.5",
    '{"a": [1, true], "b": null}',
    '{"a": [1.0, 1], "b": null}',
    '{"a": {"c": 1}}',
    "[1, 2, 3]",
    "NaN",
    "Straße ends here.",
    "not json {",
]
REFERENCES: list[Any] = [
    None,
    "",
    "Paris",
    "42",
    42,
    "1000",
    "-0.5",
    '{"a": [1, 1], "b": null}',
    "[1, 2]",
    "STRASSE",
    "here.",
]


def _package(name: str, output: str, expected: str | None, config: dict) -> Any:
    from agentic_evals.evaluators import EvaluationContext
    from agentic_evals.models import EvalTrace, EvaluationSample, EvaluatorConfig, TestCase
    from agentic_evals.scorers import registry as package_registry

    case = TestCase(id="c", name="c", expected_output=expected, expected_contains=["par", "x"])
    sample = EvaluationSample(case_id="c", output=output, trace=EvalTrace(trace_id="t"))
    context = EvaluationContext(
        case=case, sample=sample, config=EvaluatorConfig(name=name, config=config)
    )
    return package_registry._BUILTIN_SCORERS[name](context)


SCORERS = [
    "levenshtein_similarity",
    "json_diff",
    "numeric_diff",
    "starts_with",
    "ends_with",
    "exact_match",
    "contains_all",
    "contains_any",
    "valid_json",
]


@pytest.mark.differential
@pytest.mark.parametrize("name", SCORERS)
def test_scorers_match_the_package(name: str) -> None:
    pytest.importorskip("agentic_evals", reason="the real agentic-evals 0.9.0 is needed")
    compared = 0
    for output, expected, reference in itertools.product(
        OUTPUTS, ["Paris", '{"a": [1, 1], "b": null}', None], REFERENCES
    ):
        config = {} if reference is None else {"reference": reference}
        try:
            theirs: Any = _package(name, output, expected, config)
        except ValueError as exc:
            theirs = exc
        case = CaseSpec(
            id="c", name="c", index=0, expected_output=expected, expected_contains=("par", "x")
        )
        try:
            (ours,) = REGISTRY[name].evaluate(
                output, case, normalize_trace({}), EvaluatorRef(name, config=config)
            )
        except ValueError as exc:
            assert isinstance(theirs, ValueError), (output, expected, reference, exc)
            assert str(exc) == str(theirs)
            continue
        assert not isinstance(theirs, Exception), (output, expected, reference, theirs)
        same_value = ours.value == theirs.value or (
            math.isnan(ours.value) and math.isnan(theirs.value)
        )
        assert same_value, (output, expected, reference, ours.value, theirs.value)
        assert ours.explanation == theirs.explanation
        assert ours.metadata == theirs.metadata
        compared += 1
    assert compared > 100


@pytest.mark.differential
def test_regex_and_numeric_range_match_the_package() -> None:
    pytest.importorskip("agentic_evals", reason="the real agentic-evals 0.9.0 is needed")
    configs = [
        ("regex_match", {"pattern": r"\d+"}),
        ("regex_match", {"pattern": "paris", "case_insensitive": True, "full_match": True}),
        ("regex_match", {"pattern": "  paris  ", "full_match": True}),
        ("numeric_range", {"min": 0}),
        ("numeric_range", {"max": 100, "min": -1}),
    ]
    for (name, config), output in itertools.product(configs, OUTPUTS):
        theirs = _package(name, output, None, config)
        case = CaseSpec(id="c", name="c", index=0)
        (ours,) = REGISTRY[name].evaluate(
            output, case, normalize_trace({}), EvaluatorRef(name, config=config)
        )
        assert (ours.value, ours.explanation) == (theirs.value, theirs.explanation), (name, output)


def test_a_registry_level_embed_fn_makes_embedding_similarity_usable_from_suites() -> None:
    from agenticlens_frames.evaluators import default_registry

    vectors = {"a": [1.0, 0.0], "b": [1.0, 1.0]}
    registry = default_registry(embed_fn=vectors.__getitem__)
    case = CaseSpec(id="c", name="c", index=0, expected_output="b")
    ref = EvaluatorRef("embedding_similarity", threshold=0.8)
    (judged,) = registry["embedding_similarity"].evaluate("a", case, normalize_trace({}), ref)
    cosine = 1.0 / math.sqrt(2.0)
    assert judged.value == pytest.approx((cosine + 1) / 2)
    assert (
        judged.explanation == f"Cosine similarity {cosine:.3f} (scaled to {(cosine + 1) / 2:.3f})."
    )
