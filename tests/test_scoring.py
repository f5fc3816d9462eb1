"""Built-in checks: pass rules, names, order and explanations (spec §6).

Expected values are written out by hand from the spec's rules; the differential tests
additionally compare every score of every trial report with the real package.
"""

from __future__ import annotations

import pytest

from agenticlens_frames.evaluators import EvaluatorRegistry
from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef
from agenticlens_frames.formats.traces import normalize_trace
from agenticlens_frames.frames import CheckColumns
from agenticlens_frames.scoring import score_sample, score_unavailable


def _score(case: CaseSpec, output: str, trace: dict | None = None, registry=None):
    sink = CheckColumns()
    result = score_sample(case, output, normalize_trace(trace or {}), sink, 0, registry)
    return result, sink


def _case(**fields) -> CaseSpec:
    return CaseSpec(id="c1", name="case one", index=0, **fields)


def test_exact_match_strips_whitespace_but_keeps_case() -> None:
    result, sink = _score(_case(expected_output="  Hello "), "Hello\n")
    assert (result.passed, sink.name) == (True, ["exact_match"])
    result, sink = _score(_case(expected_output="Hello"), "hello")
    assert result.passed is False
    assert sink.explanation == ["Output does not exactly match the reference."]


def test_exact_match_skipped_for_reference_scorers_without_reference() -> None:
    registry = EvaluatorRegistry()
    registry.register("starts_with", lambda o, c, t, cfg: 1.0, version="1")
    case = _case(expected_output="x", evaluators=(EvaluatorRef(name="starts_with"),))
    _, sink = _score(case, "y", registry=registry)
    assert sink.name == ["starts_with"]
    case = _case(
        expected_output="x",
        evaluators=(EvaluatorRef(name="starts_with", config={"reference": "y"}),),
    )
    _, sink = _score(case, "y", registry=registry)
    assert sink.name == ["exact_match", "starts_with"]


def test_contains_is_casefolded_and_empty_string_passes() -> None:
    result, sink = _score(_case(expected_contains=("STRASSE", "")), "Die straße ist gesperrt")
    assert sink.passed == [True, True]
    assert sink.name == ["contains:STRASSE", "contains:"]
    assert sink.metric == ["contains", "contains"]
    assert result.score == 1.0


def test_json_checks_and_required_fields() -> None:
    schema = {"type": "object", "required": ["ticket"]}
    case = _case(output_json_schema=schema, required_output_fields=("ticket.id", "items.1", "n"))
    output = '{"ticket": {"id": null}, "items": [1], "n": 0}'
    result, sink = _score(case, output)
    # present-but-null counts as present; items.1 is out of range
    assert sink.passed == [True, True, False, True]
    assert result.score == 0.75
    _, sink = _score(case, "NaN")
    assert sink.passed == [False, False, False, False]  # no JSON: every JSON check fails
    assert sink.explanation[0] == (
        "Output is not valid JSON: Non-finite JSON constant NaN is not allowed."
    )
    assert sink.explanation[1].startswith("Output is not valid JSON, so required field")
    _, sink = _score(case, "null")  # valid JSON, but the value is null
    assert sink.passed == [False, False, False, False]
    assert sink.explanation[0].startswith("Output violates JSON Schema at $:")


def test_a_list_index_is_a_decimal_number_in_any_script() -> None:
    """A path segment indexes a list when int() reads it: "1" and the Arabic-Indic "١"
    do; a superscript "²" is a digit int() cannot read, so the field is missing (fix B14:
    the package's int() raises there and fails the whole trial)."""
    case = _case(required_output_fields=("items.1", "items.\u0661", "items.\u00b2"))
    result, sink = _score(case, '{"items": [10, 20, 30]}')
    assert sink.passed == [True, True, False]
    assert sink.explanation[2] == "Output is missing required field 'items.\u00b2'."
    assert result.passed is False
    # as a key of an object, the same segment is found as any key is
    case = _case(required_output_fields=("items.\u00b2",))
    _, sink = _score(case, '{"items": {"\u00b2": 1}}')
    assert sink.passed == [True]


def test_tool_checks_follow_the_spans() -> None:
    trace = {
        "spans": [
            {"tool_name": "lookup", "attributes": {"tool_args": {"id": 1, "x": True}}},
            {"tool_name": "refund", "attributes": {"tool_args": {"amount": 10}}},
            {"tool_name": "lookup", "attributes": {"tool_args": {"id": 2}}},
            {"tool_name": None, "attributes": {}},
        ]
    }
    case = _case(
        required_tools=("lookup", "escalate"),
        forbidden_tools=("delete",),
        required_tool_arguments={"refund": ("amount",), "lookup": ("id", "x", "y")},
        expected_tool_arguments={"lookup": {"id": 2}, "refund": {"amount": 10.0}},
        required_tool_order=("lookup", "refund"),
    )
    _, sink = _score(case, "ok", trace)
    assert sink.name == [
        "required_tool:lookup",
        "required_tool:escalate",
        "forbidden_tool:delete",
        "tool_args:refund",
        "tool_args:lookup",
        "tool_arg_values:lookup",
        "tool_arg_values:refund",
        "tool_order",
    ]
    # 10 == 10.0 in Python, so the value check passes (the package's rule)
    assert sink.passed == [True, False, True, True, False, True, True, True]
    assert sink.explanation[4] == (
        "Tool 'lookup' did not include required arguments ['id', 'x', 'y']."
    )


def test_tool_order_reports_the_first_swap() -> None:
    trace = {"spans": [{"tool_name": "b"}, {"tool_name": "a"}, {"tool_name": "b"}]}
    _, sink = _score(_case(required_tool_order=("a", "b")), "", trace)
    assert sink.passed == [False]
    assert sink.explanation == ["Required order ['a', 'b'] not met: 'b' was called before 'a'."]
    _, sink = _score(_case(required_tool_order=("a", "c")), "", trace)
    assert sink.explanation == ["Required order ['a', 'c'] not met: ['c'] never called."]


@pytest.mark.parametrize(
    ("turns", "passed", "explanation"),
    [
        (3, True, "Turn count 3 meets the 3 turn limit."),
        (4, False, "Turn count 4 exceeds the 3 turn limit."),
        (True, True, "Turn count True meets the 3 turn limit."),  # B7: True counts as 1
        (0, False, "Trace metadata is missing a positive integer turn_count"),  # not positive
        (2.0, False, "Trace metadata is missing a positive integer turn_count"),  # B7
        (None, False, "Trace metadata is missing a positive integer turn_count"),
    ],
)
def test_turn_count_rule(turns: object, passed: bool, explanation: str) -> None:
    metadata = {} if turns is None else {"turn_count": turns}
    _, sink = _score(_case(max_turns=3), "", {"metadata": metadata})
    assert sink.passed == [passed]
    assert sink.explanation[0].startswith(explanation)


def test_latency_and_cost_thresholds() -> None:
    case = _case(max_latency_ms=100.0, max_cost_usd=0.01)
    _, sink = _score(case, "", {"total_latency_ms": 100.0, "estimated_cost_usd": 0.01})
    assert sink.passed == [True, True]
    assert sink.explanation == [
        "Latency 100.0 ms meets the 100.0 ms limit.",
        "Cost $0.010000 meets the $0.010000 limit.",
    ]
    _, sink = _score(case, "", {"total_latency_ms": 100.5})
    assert sink.passed == [False, False]  # unknown cost fails
    assert sink.explanation[1] == "Cost is unavailable or exceeds the configured limit."


def test_case_score_is_the_mean_of_check_values_and_pass_needs_all_required() -> None:
    registry = EvaluatorRegistry()
    registry.register("tone", lambda o, c, t, cfg: (0.25, "a bit curt"), version="2")
    case = _case(
        expected_contains=("hi",),
        evaluators=(EvaluatorRef(name="tone", threshold=0.5, required=False),),
    )
    result, sink = _score(case, "hi", registry=registry)
    assert result.passed is True  # the failing evaluator is not required
    assert result.score == pytest.approx((1.0 + 0.25) / 2)
    columns = sink.columns()
    assert columns["evaluator"] == ["agentic_evals.builtin", "tone"]
    assert columns["evaluator_version"] == ["0.9.0", "2"]
    assert columns["required"] == [True, False]
    assert columns["passed"] == [True, False]


def test_evaluator_errors_fail_the_check_and_are_reported() -> None:
    registry = EvaluatorRegistry()

    def broken(output, case, trace, config):
        raise RuntimeError("model unavailable")

    registry.register("judge", broken, version="1")
    result, sink = _score(_case(evaluators=(EvaluatorRef(name="judge"),)), "x", registry=registry)
    assert result.passed is False
    assert result.evaluator_error == "RuntimeError: model unavailable"
    assert "raised RuntimeError" in sink.explanation[0]


def test_unavailable_samples_and_failed_calls() -> None:
    sink = CheckColumns()
    result = score_unavailable(sink, 0)
    assert (result.passed, result.score, sink.name) == (False, 0.0, ["sample_available"])
    assert (result.n_checks, result.n_checks_passed, result.score_sum) == (1, 0, 0.0)
    result = score_unavailable(
        sink, 1, status="timed_out", error="TimeoutError: slow", target_attempts=2
    )
    assert sink.name[1] == "target_call"
    assert sink.explanation[1] == "Live target timed out after 2 attempt(s): TimeoutError: slow"
    assert (result.passed, result.score, result.n_checks_passed) == (False, 0.0, 0)
    assert (sink.passed, sink.value) == ([False, False], [0.0, 0.0])


@pytest.mark.parametrize(
    "pattern",
    [
        r"^TCK-[[:digit:]]{6}$",
        r"^[[a]b]+$",
        r"^[^[]x$",
        r"^[]a[]+$",
        r"^\[[[:alpha:]]\]$",
        # a negated set whose first member is "]"; escapes in and out of a set; two sets
        r"^[^]a[]+$",
        r"^\d-[[:digit:]]\]$",
        r"^[\][]x$",
        r"^[a-c][[]b?$",
    ],
)
def test_a_schema_pattern_is_read_as_re_reads_it(pattern: str) -> None:
    """The reference validator (jsonschema on Python's re) reads a "[" inside a set
    literally; the regex engine we use for its time limit read ``[[:digit:]]`` as a POSIX
    class, so ``TCK-661345`` passed a check the reference fails."""
    import json
    import warnings

    from jsonschema import Draft202012Validator

    from agenticlens_frames.scoring import _validator_for

    schema = {"type": "string", "pattern": pattern}
    ours = _validator_for(json.dumps(schema))
    reference = Draft202012Validator(schema)
    outputs = ["TCK-661345", "TCK-d]]]]]]", "ab]", "a", "[x", "[]", "x", "[a]", "[[]", "b]]"]
    outputs += ["b", "bc", "^", "]", "1-:]", "1-7]", "1-:]]", "]x", "[x", "a[", "a[b", "ab"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re: "Possible nested set"
        expected = [reference.is_valid(text) for text in outputs]
    assert [ours.is_valid(text) for text in outputs] == expected
    if pattern.startswith("^TCK"):
        assert expected[:2] == [False, True]


@pytest.mark.parametrize(
    ("schema", "payload"),
    [
        ({"required": ["a"], "properties": {"b": {"type": "string"}}}, {"b": 1}),
        (
            {"type": "object", "minProperties": 3, "additionalProperties": False},
            {"b": 1},
        ),
    ],
)
def test_the_first_schema_violation_is_the_packages_when_several_keywords_fail(
    schema: dict, payload: dict
) -> None:
    """The explanation quotes the first error jsonschema yields, which follows the order
    of the schema's keywords as the suite wrote them; the schema was read back with its
    keys sorted, so another keyword's error was quoted than the package's."""
    import json

    package = pytest.importorskip("agenticlens.evaluation", reason="needs agenticlens 0.10")
    output = json.dumps(payload)
    _, sink = _score(_case(output_json_schema=schema), output)
    suite = package.TestSuite(
        name="s",
        version="1",
        cases=[package.TestCase(id="c1", name="case one", output_json_schema=schema)],
    )
    sample = package.EvaluationSample(case_id="c1", output=output, trace={})
    (theirs,) = package.evaluate_suite(suite, [sample]).cases[0].scores
    assert (sink.name, sink.passed) == (["json_schema"], [False])
    assert sink.explanation == [theirs.explanation]


def test_a_schema_alone_is_checked() -> None:
    schema = {"type": "object", "required": ["ticket"]}
    result, sink = _score(_case(output_json_schema=schema), '{"ticket": 1}')
    assert (sink.name, sink.passed, result.score) == (["json_schema"], [True], 1.0)
    _, sink = _score(_case(output_json_schema=schema), "[]")
    assert (sink.name, sink.passed) == (["json_schema"], [False])


def test_a_field_path_does_not_descend_into_text_or_numbers() -> None:
    # "a" is in the text "abc", but a string has no fields: missing, as is "n.x" of 0
    case = _case(required_output_fields=("s.a", "n.x", "s"))
    _, sink = _score(case, '{"s": "abc", "n": 0}')
    assert sink.passed == [False, False, True]
    assert sink.explanation[0] == "Output is missing required field 's.a'."


def test_tool_argument_values_fail_on_another_value_or_no_arguments() -> None:
    trace = {
        "spans": [
            {"tool_name": "lookup", "attributes": {"tool_args": {"id": 1}}},
            {"tool_name": "refund", "attributes": {}},
        ]
    }
    case = _case(
        expected_tool_arguments={
            "lookup": {"id": 3},
            "refund": {"amount": 10},
            "escalate": {"to": "x"},
        }
    )
    result, sink = _score(case, "", trace)
    assert sink.passed == [False, False, False]
    assert sink.explanation == [
        "Tool 'lookup' was called with [{'id': 1}], not {'id': 3}.",
        "Tool 'refund' was called with [None], not {'amount': 10}.",
        "Tool 'escalate' was not called, so {'to': 'x'} was not passed.",
    ]
    assert (result.passed, result.score) == (False, 0.0)
    # a key the call lacks fails too, even when another key matches
    case = _case(expected_tool_arguments={"lookup": {"id": 1, "q": "x"}})
    _, sink = _score(case, "", trace)
    assert sink.passed == [False]


def test_a_tool_listed_twice_in_the_order_is_not_a_swap() -> None:
    # The package compares first calls with ">": a tool is never called before itself.
    trace = {"spans": [{"tool_name": "a"}, {"tool_name": "b"}]}
    _, sink = _score(_case(required_tool_order=("a", "a", "b")), "", trace)
    assert sink.passed == [True]


def _registry(**functions) -> EvaluatorRegistry:
    registry = EvaluatorRegistry()
    for name, function in functions.items():
        registry.register(name, function, version="1")
    return registry


@pytest.mark.parametrize(
    ("value", "metadata", "passed"),
    [
        (0.5, {}, True),  # the threshold met exactly passes
        (0.9, {}, True),
        (0.49, {}, False),
        (0.9, {"judge_status": "unavailable"}, False),  # an unavailable judgement fails
    ],
)
def test_an_evaluator_passes_at_its_threshold(value: float, metadata: dict, passed: bool) -> None:
    registry = _registry(tone=lambda o, c, t, cfg: {"value": value, "metadata": metadata})
    case = _case(evaluators=(EvaluatorRef(name="tone", threshold=0.5),))
    result, sink = _score(case, "x", registry=registry)
    assert (sink.passed, sink.value) == ([passed], [value])
    assert (result.passed, result.score) == (passed, value)


def test_a_raising_evaluator_fails_even_with_threshold_0() -> None:
    def broken(output, case, trace, config):
        raise RuntimeError("down")

    case = _case(evaluators=(EvaluatorRef(name="judge", threshold=0.0),))
    result, sink = _score(case, "x", registry=_registry(judge=broken))
    assert (sink.passed, sink.value) == ([False], [0.0])
    assert (result.passed, result.score, result.n_checks_passed) == (False, 0.0, 0)


def test_an_evaluator_missing_from_the_registry_fails_with_value_0() -> None:
    # The suite loader refuses this; scored directly, the row still says what happened.
    result, sink = _score(_case(evaluators=(EvaluatorRef(name="tone"),)), "x")
    assert (sink.passed, sink.value) == ([False], [0.0])
    assert sink.explanation == ["Evaluator is not registered."]
    assert (result.passed, result.score) == (False, 0.0)


@pytest.mark.parametrize("required", [False, True])
def test_skipped_scores_count_in_neither_pass_nor_score_of_a_later_attempt(
    required: bool,
) -> None:
    """Scored into a sink that already holds another attempt's row: a skipped score that
    failed leaves the case passing, required or not, and its value is left out of the
    mean (spec §6: the mean of the scores not skipped)."""
    skipped = {"value": 0.0, "skipped": True, "required": required, "explanation": "n/a"}
    registry = _registry(skip=lambda o, c, t, cfg: skipped, good=lambda o, c, t, cfg: 1.0)
    case = _case(
        expected_contains=("hi",),
        evaluators=(EvaluatorRef(name="skip"), EvaluatorRef(name="good")),
    )
    sink = CheckColumns()
    score_unavailable(sink, 0)
    result = score_sample(case, "hi", normalize_trace({}), sink, 1, registry)
    columns = sink.columns()
    assert columns["skipped"] == [False, False, True, False]
    assert columns["required"] == [True, True, required, True]
    assert columns["passed"] == [False, True, False, True]
    assert (result.passed, result.score, result.score_sum) == (True, 1.0, 2.0)
    assert (result.n_checks, result.n_checks_passed) == (3, 2)


def test_evaluator_metadata_is_json_text_with_its_characters_kept() -> None:
    registry = _registry(
        tone=lambda o, c, t, cfg: {"value": 1.0, "metadata": {"note": "Straße"}},
        plain=lambda o, c, t, cfg: 1.0,
    )
    case = _case(evaluators=(EvaluatorRef(name="tone"), EvaluatorRef(name="plain")))
    _, sink = _score(case, "x", registry=registry)
    assert sink.columns()["metadata"] == ['{"note": "Straße"}', None]


def test_an_output_nested_too_deeply_for_the_schema_fails_its_check() -> None:
    """jsonschema recurses once per level; an output nested deeper than the stack allows
    fails the check with an explanation (the package raises RecursionError and the trial
    fails), and the other checks of the sample are still scored."""
    schema = {"type": "array", "items": {"$ref": "#"}}
    case = _case(output_json_schema=schema, expected_contains=("[",))
    result, sink = _score(case, "[" * 600 + "]" * 600)
    assert sink.passed == [True, False]
    assert sink.name == ["contains:[", "json_schema"]
    assert sink.explanation[1] == "Output is nested too deeply to check against the JSON Schema."
    assert (result.passed, result.score) == (False, 0.5)


def test_pattern_properties_apply_to_objects_only() -> None:
    """The time-limited patternProperties keeps the keyword's rule: an object's matching
    keys are checked, anything else passes; checked against jsonschema itself."""
    import json
    import warnings

    from jsonschema import Draft202012Validator

    from agenticlens_frames.scoring import _validator_for

    schema = {"patternProperties": {"^[[]x$": {"type": "integer"}}}
    ours = _validator_for(json.dumps(schema))
    reference = Draft202012Validator(schema)
    payloads = [{"[x": "s"}, {"[x": 1}, {"x": "s"}, ["[x"], "[x", 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # re: "Possible nested set"
        expected = [reference.is_valid(payload) for payload in payloads]
    assert expected == [False, True, True, True, True, True]
    assert [ours.is_valid(payload) for payload in payloads] == expected


@pytest.mark.parametrize(
    ("pattern", "rewritten"),
    [
        (r"^[a-c][[]b?$", r"^[a-c][\[]b?$"),  # the first set closes at its "]"
        (r"[^]a[]", r"[^]a\[]"),  # "^" negates, then "]" is a member
        (r"[\][]x", r"[\]\[]x"),  # an escaped "]" does not close the set
        (r"\[[[]", r"\[[\[]"),
        ("a[", "a["),  # an unclosed set (an invalid pattern) is left as it is
        ("a[^", "a[^"),
    ],
)
def test_a_bracket_inside_a_set_is_escaped_and_nothing_else(pattern: str, rewritten: str) -> None:
    """Hand-worked rewrites: ``re`` reads a "[" inside a set as a literal, so it is
    escaped for ``regex``; every other character is kept. (A wrong rewrite that does not
    compile would fall back to ``re`` and lose the time limit, unseen by the results.)"""
    from agenticlens_frames.scoring import as_re_reads

    assert as_re_reads(pattern) == rewritten


def test_ctrl_c_from_an_evaluator_is_the_users_only_on_the_main_thread() -> None:
    # Ctrl-C lands in the main thread: there it must stop the run. Raised on a worker
    # thread, a KeyboardInterrupt is the evaluator's own doing and fails its check.
    import threading

    def interrupted(output, case, trace, config):
        raise KeyboardInterrupt("stop")

    case = _case(evaluators=(EvaluatorRef(name="judge"),))
    with pytest.raises(KeyboardInterrupt):
        _score(case, "x", registry=_registry(judge=interrupted))
    scored: list = []
    worker = threading.Thread(
        target=lambda: scored.append(_score(case, "x", registry=_registry(judge=interrupted)))
    )
    worker.start()
    worker.join()
    result, sink = scored[0]
    assert (sink.passed, result.evaluator_error) == ([False], "KeyboardInterrupt: stop")


def test_an_unresolvable_schema_reference_fails_the_check_not_the_run() -> None:
    # The suite loader refuses such a schema; scored directly, the check says why it failed.
    from agenticlens_frames.scoring import _schema_check

    ok, why = _schema_check({"a": 1}, {"$ref": "https://example.invalid/schema.json"})
    assert ok is False
    assert why.startswith("Unresolvable output_json_schema reference: ")
