"""load_suite: agentic-evals TestSuite files (spec §5) plus our load-time checks."""

from __future__ import annotations

import os

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import CaseSpec, EvaluatorRef, load_suite
from agenticlens_frames.formats.suite import suite_memo

from ..conftest import EXAMPLE
from .conftest import EXPERIMENT

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _suite(*cases, **top):
    return {"name": "s", "version": "1", **top, "cases": list(cases)}


def _case(case_id="c1", **fields):
    fields.setdefault("expected_contains", ["x"])
    return {"id": case_id, "name": f"Case {case_id}", **fields}


def _error(write, document, **kwargs) -> InputError:
    path = write("suite.yaml", document)
    with pytest.raises(InputError) as info:
        load_suite(path, **kwargs)
    assert info.value.file == str(path)
    return info.value


def test_fixture_suite():
    suite = load_suite(EXPERIMENT / "suite.yaml")
    assert (suite.name, suite.version, suite.description) == (
        "support",
        "3",
        "Hand-written suite for the formats tests",
    )
    assert suite.metadata == {"domain": "support"}
    assert suite.case_ids == ("refund", "order-json", "reset")
    refund, order, reset = suite.cases
    assert refund == CaseSpec(
        id="refund",
        name="Refund policy",
        index=0,
        input={"question": "Can I get a refund?"},
        expected_contains=("refund", "30 days"),
        required_tools=("search_kb",),
        max_latency_ms=3000.0,
        tags=("billing",),
    )
    assert type(refund.max_latency_ms) is float
    assert order.index == 1
    assert order.output_json_schema["properties"] == {"status": {"$ref": "#/$defs/status"}}
    assert order.required_tool_arguments == {"lookup_order": ("order_id",)}
    assert order.expected_tool_arguments == {"lookup_order": {"order_id": 42}}
    assert order.required_tool_order == ("lookup_order", "track_shipment")
    assert order.required_output_fields == ("status",)
    assert reset.expected_output == "I have sent you a reset link."
    assert (reset.max_cost_usd, reset.max_turns) == (0.01, 3)
    assert reset.forbidden_tools == ("escalate_to_human",)
    assert reset.metadata == {"priority": "high"}


def test_json_suite_and_defaults(write):
    path = write("suite.JSON", _suite({"id": "c1", "name": "", "max_turns": 2.0}))
    suite = load_suite(path)
    assert suite.description == "" and suite.metadata == {}
    case = suite.cases[0]
    assert case.max_turns == 2 and type(case.max_turns) is int
    assert case.name == ""  # agentic-evals allows an empty name
    assert case.input is None and case.evaluators == () and case.tags == ()


# --------------------------------------------------------------------------- suite-level rules


def test_at_least_one_case(write):
    error = _error(write, _suite())
    assert (error.location, error.message) == ("cases", "test suite must contain at least one case")


def test_duplicate_case_ids_name_both_positions(write):
    error = _error(write, _suite(_case("a"), _case("b"), _case("a")))
    assert str(error) == (
        f"{error.file}: cases[2].id: test case IDs must be unique ('a' is also the id of cases[0])"
    )


def test_at_least_one_expectation(write):
    error = _error(write, _suite(_case("a"), {"id": "b", "name": "B", "tags": ["t"]}))
    assert str(error) == (
        f"{error.file}: cases[1]: test case must define at least one expectation (case 'b': "
        "add e.g. expected_output, expected_contains, required_tools or max_latency_ms)"
    )


@pytest.mark.parametrize(
    ("fields", "counts"),
    [
        ({"expected_output": ""}, True),
        ({"output_json_schema": {}}, True),
        ({"max_cost_usd": 0}, True),
        ({"expected_output": None}, False),
        ({"expected_contains": []}, False),
        ({"required_tool_arguments": {}}, False),
        ({"evaluators": []}, False),
        ({"metadata": {"a": 1}, "input": "x"}, False),
    ],
)
def test_what_counts_as_an_expectation(write, fields, counts):
    document = _suite({"id": "c", "name": "C", **fields})
    if counts:
        load_suite(write("suite.yaml", document))
    else:
        assert "at least one expectation" in _error(write, document).message


@pytest.mark.parametrize(
    ("document", "location", "message", "hint"),
    [
        ({"name": "s", "version": "1", "cases": [_case()], "descripton": "x"}, None,
         "unknown key 'descripton'", "did you mean 'description'?"),
        (_suite(_case(expected_contain=["x"])), "cases[0]", "unknown key 'expected_contain'",
         "did you mean 'expected_contains'?"),
        (_suite(_case(evaluators=[{"name": "e", "treshold": 0.5}])), "cases[0].evaluators[0]",
         "unknown key 'treshold'", "did you mean 'threshold'?"),
        (_suite(_case(schema={})), "cases[0]", "unknown key 'schema'",
         "did you mean 'output_json_schema'?"),
    ],
)  # fmt: skip
def test_unknown_keys(write, document, location, message, hint):
    error = _error(write, document, known_evaluators={"e"})
    assert (error.location, error.message, error.hint) == (location, message, hint)


@pytest.mark.parametrize(
    ("document", "location", "message"),
    [
        ([1, 2], None, "expected a mapping of suite fields at the top level, got a list"),
        ({"version": "1", "cases": [_case()]}, None, "missing required key 'name'"),
        (_suite(_case(), version=1.10), "version", "expected a string, got 1.1"),
        ({"name": "s", "version": "1", "cases": None}, "cases", "expected a list, got null"),
        (_suite("c1"), "cases[0]", "expected a case mapping, got 'c1'"),
        (_suite({"name": "x", "expected_output": "y"}), "cases[0]", "missing required key 'id'"),
        (_suite(_case(id="")), "cases[0].id", "must not be empty"),
        (_suite(_case(id=5)), "cases[0].id", "expected a string, got 5"),
        (_suite(_case(expected_contains="x")), "cases[0].expected_contains",
         "expected a list, got 'x'"),
        (_suite(_case(expected_contains=["a", 3])), "cases[0].expected_contains[1]",
         "expected a string, got 3"),
        (_suite(_case(expected_output=3)), "cases[0].expected_output",
         "expected a string, got 3"),
        (_suite(_case(required_tool_arguments={"t": "a"})),
         "cases[0].required_tool_arguments.t", "expected a list, got 'a'"),
        (_suite(_case(required_tool_arguments={"t": ["a", None]})),
         "cases[0].required_tool_arguments.t[1]", "expected a string, got null"),
        (_suite(_case(expected_tool_arguments={"t": ["a"]})),
         "cases[0].expected_tool_arguments.t", "expected a mapping, got a list"),
        (_suite(_case(expected_tool_arguments=[])), "cases[0].expected_tool_arguments",
         "expected a mapping, got a list"),
        (_suite(_case(max_latency_ms=0)), "cases[0].max_latency_ms",
         "expected a number > 0, got 0"),
        (_suite(_case(max_cost_usd=-0.01)), "cases[0].max_cost_usd",
         "expected a number >= 0, got -0.01"),
        (_suite(_case(max_turns=0)), "cases[0].max_turns", "expected an integer >= 1, got 0"),
        (_suite(_case(max_turns=2.5)), "cases[0].max_turns", "expected an integer >= 1, got 2.5"),
        (_suite(_case(max_turns=True)), "cases[0].max_turns", "expected an integer >= 1, got true"),
        (_suite(_case(tags=None)), "cases[0].tags", "expected a list, got null"),
        (_suite(_case(metadata=[])), "cases[0].metadata", "expected a mapping, got a list"),
        (_suite(_case(output_json_schema=[])), "cases[0].output_json_schema",
         "expected a mapping, got a list"),
        (_suite(_case(evaluators={"name": "e"})), "cases[0].evaluators",
         "expected a list, got a mapping"),
        (_suite(_case(evaluators=["e"])), "cases[0].evaluators[0]",
         "expected an evaluator mapping, got 'e'"),
        (_suite(_case(evaluators=[{"name": ""}])), "cases[0].evaluators[0].name",
         "must not be empty"),
        (_suite(_case(evaluators=[{"threshold": 1}])), "cases[0].evaluators[0]",
         "missing required key 'name'"),
        (_suite(_case(evaluators=[{"name": "e", "threshold": 1.5}])),
         "cases[0].evaluators[0].threshold", "expected a number >= 0 and <= 1, got 1.5"),
        (_suite(_case(evaluators=[{"name": "e", "required": "maybe"}])),
         "cases[0].evaluators[0].required", "expected true or false, got 'maybe'"),
        (_suite(_case(evaluators=[{"name": "e", "config": 3}])),
         "cases[0].evaluators[0].config", "expected a mapping, got 3"),
    ],
)  # fmt: skip
def test_type_errors(write, document, location, message):
    error = _error(write, document, known_evaluators={"e"})
    assert (error.location, error.message) == (location, message)


def test_version_number_hint_quotes_the_text_as_written(write):
    text = "name: s\nversion: 2026.10\ncases: [{id: a, name: A, max_turns: 1}]\n"
    path = write("suite.yaml", text)
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert str(info.value) == (
        f'{path}: version: expected a string, got 2026.1 (quote it: version: "2026.10")'
    )


def test_null_field_hint(write):
    error = _error(write, _suite(_case(required_tools=None)))
    assert error.hint == "remove the key if the case has no such expectation"
    # id and name are required: "remove the key" would only trade one error for another
    for key in ("id", "name"):
        error = _error(write, _suite(_case(**{key: None})))
        assert error.location == f"cases[0].{key}" and error.hint == f"give the case its {key}"


# --------------------------------------------------------------------------- evaluators


def test_evaluators_with_defaults(write):
    length = {"name": "len", "threshold": "0.5", "required": "no", "config": {"max": 3}}
    case = _case(evaluators=[{"name": "judge"}, length])
    suite = load_suite(write("suite.yaml", _suite(case)), known_evaluators=["judge", "len"])
    assert suite.cases[0].evaluators == (
        EvaluatorRef("judge", 1.0, True, {}),
        EvaluatorRef("len", 0.5, False, {"max": 3}),
    )


def test_unregistered_evaluator_is_refused(write):
    document = _suite(_case("c1"), _case("c2", evaluators=[{"name": "judg"}]))
    error = _error(write, document, known_evaluators=("judge", "length"))
    assert str(error) == (
        f"{error.file}: cases[1].evaluators[0].name: case 'c2' names evaluator 'judg', which "
        "is not registered (did you mean 'judge'? register it before loading the suite, or "
        "use one of: judge, length)"
    )
    error = _error(write, document)
    assert error.hint == "no evaluators are registered; register it before loading the suite"


# --------------------------------------------------------------------------- output_json_schema


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"$schema": DRAFT_2020_12, "type": "string"},
        {"$schema": DRAFT_2020_12 + "#", "type": "string"},
        {"$defs": {"a": {"type": "integer"}}, "items": {"$ref": "#/$defs/a"}},
        {"$defs": {"a": {"$anchor": "num", "type": "number"}}, "items": {"$ref": "#num"}},
        {"$id": "https://example.com/root", "$defs": {"a": {"$id": "item", "type": "string"}},
         "items": {"$ref": "item"}},
        {"const": {"$ref": "https://example.com/not-a-reference"}},
        {"properties": {"$ref": {"type": "string"}}},
        {"properties": {"child": {"$ref": "#"}}},  # a cycle through properties: fine
    ],
)  # fmt: skip
def test_valid_schemas(write, schema):
    load_suite(write("suite.json", _suite(_case(output_json_schema=schema))))


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"allOf": [{"$ref": "#"}]},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
    ],
)  # fmt: skip
def test_ref_loops_are_refused(write, schema):
    # Validating anything against them recurses without end (RecursionError).
    error = _error(write, _suite(_case("c1", output_json_schema=schema)))
    assert error.location == "cases[0].output_json_schema"
    assert "loop back to themselves" in error.message


def test_other_dialects_are_refused(write):
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    error = _error(write, _suite(_case("c1"), _case("c2", output_json_schema=schema)))
    assert str(error) == (
        f"{error.file}: cases[1].output_json_schema.$schema: case 'c2' declares the JSON "
        "Schema dialect 'http://json-schema.org/draft-07/schema#'; only Draft 2020-12 is "
        f'supported (set "$schema" to "{DRAFT_2020_12}" (and update the keywords) or remove it)'
    )


def test_invalid_schema_names_the_place(write):
    schema = {"type": "object", "properties": {"a": {"type": "strin"}}}
    error = _error(write, _suite(_case("c1", output_json_schema=schema)))
    assert error.location == "cases[0].output_json_schema.properties.a.type"
    assert error.message.startswith("case 'c1' has an invalid JSON Schema: 'strin' is not valid")


@pytest.mark.parametrize(
    ("schema", "location", "message"),
    [
        ({"items": {"$ref": "https://example.com/s.json"}}, "items.$ref",
         "case 'c1': $ref 'https://example.com/s.json' points outside the schema; remote "
         "references are not supported"),
        ({"$ref": "other.json"}, "$ref", "case 'c1': $ref 'other.json' points outside"),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "properties.a.$ref",
         "case 'c1': $ref '#/$defs/missing' does not resolve inside the schema"),
    ],
)  # fmt: skip
def test_unusable_references(write, schema, location, message):
    error = _error(write, _suite(_case("c1", output_json_schema=schema)))
    assert error.location == f"cases[0].output_json_schema.{location}"
    assert error.message.startswith(message)


def test_repeated_schemas_are_checked_once(write, monkeypatch):
    from jsonschema import Draft202012Validator

    calls = []
    original = Draft202012Validator.check_schema
    monkeypatch.setattr(
        Draft202012Validator,
        "check_schema",
        lambda schema: calls.append(1) or original(schema),
    )
    cases = [_case(f"c{i}", output_json_schema={"type": "object"}) for i in range(50)]
    load_suite(write("suite.json", _suite(*cases)))
    assert len(calls) == 1


# --------------------------------------------------------------------------- every problem at once


def test_every_independent_problem_is_reported_at_once(write):
    cases = [
        _case("a", max_turns=0),
        {"id": "b", "name": "B", "tags": ["t"]},  # no expectation
        _case("a", evaluators=[{"name": "polite"}]),  # a repeated id, an unknown evaluator
        _case("d", output_json_schema={"type": 3}),
    ]
    error = _error(write, {**_suite(*cases), "descripton": "x"})
    assert str(error).splitlines() == [
        f"{error.file}: 6 problems:",
        f"  {error.file}: unknown key 'descripton' (did you mean 'description'?)",
        f"  {error.file}: cases[0].max_turns: expected an integer >= 1, got 0",
        f"  {error.file}: cases[1]: test case must define at least one expectation (case 'b': "
        "add e.g. expected_output, expected_contains, required_tools or max_latency_ms)",
        f"  {error.file}: cases[2].id: test case IDs must be unique ('a' is also the id of "
        "cases[0])",
        f"  {error.file}: cases[2].evaluators[0].name: case 'a' names evaluator 'polite', which "
        "is not registered (no evaluators are registered; register it before loading the "
        "suite)",
        f"  {error.file}: cases[3].output_json_schema.type: case 'd' has an invalid JSON "
        "Schema: 3 is not valid under any of the given schemas",
    ]
    assert error.location is None and error.hint == "did you mean 'description'?"


def test_the_same_mistake_in_many_cases_is_listed_up_to_a_cap(write):
    error = _error(write, _suite(*(_case(f"c{i}", max_turns=0) for i in range(100))))
    lines = str(error).splitlines()
    assert lines[0] == f"{error.file}: 100 problems:"
    assert lines[1:21] == [
        f"  {error.file}: cases[{i}].max_turns: expected an integer >= 1, got 0" for i in range(20)
    ]
    assert lines[21:] == [
        "  and 80 more, not listed (fix these and load the file again to see them)"
    ]
    assert (len(error.problems), error.unlisted) == (20, 80)


def test_a_wrong_schema_repeated_in_many_cases_is_checked_while_listed(write, monkeypatch):
    from jsonschema import Draft202012Validator

    calls = []
    original = Draft202012Validator.check_schema
    monkeypatch.setattr(
        Draft202012Validator,
        "check_schema",
        lambda schema: calls.append(1) or original(schema),
    )
    cases = [_case(f"c{i}", output_json_schema={"type": 3}) for i in range(500)]
    error = _error(write, _suite(*cases), known_evaluators=())
    assert str(error).splitlines()[0] == f"{error.file}: 500 problems:"
    assert "case 'c19' has an invalid JSON Schema" in str(error)
    assert len(calls) == 20  # the other 480 are counted, known to be the same problem


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        # The misspelt key was the expectation: not also "no expectation".
        ({"id": "a", "name": "A", "required_tool": ["x"]}, "unknown key 'required_tool'"),
        # A refused expectation still counts as one.
        ({"id": "a", "name": "A", "max_turns": 0}, "cases[0].max_turns"),
        # The evaluators of a case whose list could not be read.
        ({"id": "a", "name": "A", "evaluators": 3}, "cases[0].evaluators: expected a list"),
        # A schema of another dialect is not also checked as Draft 2020-12.
        (_case("a", output_json_schema={"$schema": "x", "type": 3}), "JSON Schema dialect"),
        # An id that could not be read is not compared with the others.
        ({"name": "A", "expected_contains": ["x"]}, "missing required key 'id'"),
    ],
)
def test_checks_that_depend_on_a_refused_value_are_not_reported(write, case, expected):
    error = _error(write, _suite(case, _case("b")))
    assert error.problems == (), str(error)
    assert expected in str(error)


# --------------------------------------------------------------------------- differential


def _reference_suite(path):
    evals = pytest.importorskip("agentic_evals")
    return evals.load_suite(path)


def _assert_same(path) -> None:
    theirs = _reference_suite(path)
    ours = load_suite(path)
    assert (ours.name, ours.version, ours.description, ours.metadata) == (
        theirs.name,
        theirs.version,
        theirs.description,
        theirs.metadata,
    )
    assert len(ours.cases) == len(theirs.cases)
    for index, (our, their) in enumerate(zip(ours.cases, theirs.cases, strict=True)):
        expected = their.model_dump()
        assert our.index == index
        assert expected.pop("evaluators") == []
        for key, value in expected.items():
            mine = getattr(our, key)
            if isinstance(value, list):
                mine = list(mine)
            elif key == "required_tool_arguments":
                mine = {tool: list(names) for tool, names in mine.items()}
            assert mine == value, key
            assert type(mine) is type(value), key


@pytest.mark.differential
def test_matches_agentic_evals_on_fixture():
    _assert_same(EXPERIMENT / "suite.yaml")


@pytest.mark.differential
def test_matches_agentic_evals_on_generated_suite(synthetic):
    _assert_same(synthetic / "suite.yaml")


@pytest.mark.differential
@pytest.mark.parametrize(
    "document",
    [
        _suite(_case(max_turns="3", max_latency_ms="12.5", max_cost_usd=0)),
        _suite(_case(expected_output="", tags=["a"], metadata={"k": [1]})),
        _suite(_case(required_tool_arguments={"t": []}, input=[1, {"a": None}])),
        _suite(_case(max_turns=True)),
        _suite(_case(max_latency_ms=False)),
        _suite(_case(max_turns=0)),
        _suite(_case(tags="a")),
        _suite(_case(id=3)),
        _suite({"id": "a", "name": "b"}),
        _suite(_case("a"), _case("a")),
        _suite(),
        {"name": "s", "cases": [_case()]},
        _suite(_case(), version=2),
    ],
)
def test_accepts_and_refuses_what_agentic_evals_does(write, document):
    """Same verdict as agentic-evals, except the refusals we document (booleans as numbers)."""
    path = write("suite.json", document)
    try:
        _reference_suite(path)
    except Exception:
        with pytest.raises(InputError):
            load_suite(path)
        return
    case = document["cases"][0]
    if any(isinstance(case.get(k), bool) for k in ("max_turns", "max_latency_ms")):
        with pytest.raises(InputError):  # documented refusal
            load_suite(path)
        return
    _assert_same(path)


@pytest.mark.differential
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"$schema": DRAFT_2020_12},
        {"$schema": "http://json-schema.org/draft-07/schema#"},
        {"$schema": "https://json-schema.org/draft/2019-09/schema"},
        {"$schema": 3},
        {"type": "strin"},
        {"minimum": "zero"},
        {"required": "a"},
        {"$defs": {"a": {"type": "integer"}}, "items": {"$ref": "#/$defs/a"}},
        {"pattern": "("},
    ],
)
def test_schema_verdicts_match_agentic_evals(write, schema):
    runner = pytest.importorskip("agentic_evals.runner")
    try:
        runner._schema_validator(schema)
        accepted = True
    except ValueError:
        accepted = False
    path = write("suite.json", _suite(_case(output_json_schema=schema)))
    if accepted:
        load_suite(path)
    else:
        with pytest.raises(InputError):
            load_suite(path)


def test_inside_suite_memo_a_suite_read_again_is_kept_by_its_bytes(tmp_path):
    """`experiment run` reads the suite twice (guard rails, then the run) inside
    suite_memo(): the second read is the first one's SuiteSpec while the file's bytes are
    the same. Outside the block every call reads the file."""
    path = tmp_path / "suite.yaml"
    path.write_text(
        'name: s\nversion: "1"\ncases:\n  - {id: c1, name: x, expected_contains: [a]}\n'
    )
    assert load_suite(path) is not load_suite(path)  # no memo outside the block
    with suite_memo():
        first = load_suite(path)
        assert load_suite(path) is first
        assert load_suite(path, known_evaluators=("judge",)) is not first  # other evaluators
        # Same size and (possibly) the same time stamp, other bytes: read again.
        path.write_text(
            'name: s\nversion: "1"\ncases:\n  - {id: c2, name: x, expected_contains: [a]}\n'
        )
        assert load_suite(path).case_ids == ("c2",)
        # An invalid file is never taken from the memo, and raises every time.
        path.write_text('name: s\nversion: "1"\ncases: []\n')
        for _ in range(2):
            with pytest.raises(InputError, match="at least one case"):
                load_suite(path)
        path.unlink()
        with pytest.raises(InputError, match="file not found"):
            load_suite(path)


def test_experiment_run_reads_its_suite_once(tmp_path, monkeypatch):
    """The guard rails and the run share one read of the suite (the bundled example
    declares comparisons, so both read it)."""
    import shutil

    from typer.testing import CliRunner

    import agenticlens_frames.formats.suite as suite_module
    from agenticlens_frames.cli import app

    reads = []
    real = suite_module._load
    monkeypatch.setattr(suite_module, "_load", lambda *a: reads.append(a[0]) or real(*a))
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    result = CliRunner().invoke(
        app,
        [
            "experiment", "run", "-q", str(folder / "manifest.yaml"),
            str(folder / "suite.yaml"), "--save", str(tmp_path / "r.json"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [p.name for p in reads] == ["suite.yaml"]
    assert suite_module._MEMO.get() is None  # the memo ends with the command


def _run_counting_suite_reads(folder: str, out: str, workers: str) -> tuple[int, list[bool]]:
    """`experiment run` in this (fresh) interpreter; its exit code and, per read of the
    suite file, whether this process did it (reads are logged to a file, which a forked
    reader writes too)."""
    from pathlib import Path

    from typer.testing import CliRunner

    import agenticlens_frames.formats.suite as suite_module
    from agenticlens_frames.cli import app

    os.environ["AGENTICLENS_FRAMES_WORKERS"] = workers
    os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
    log = Path(out) / "reads.txt"
    real = suite_module._load

    def logged(*args):
        with log.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        return real(*args)

    suite_module._load = logged
    args = ["experiment", "run", "-q", f"{folder}/manifest.yaml", f"{folder}/suite.yaml"]
    result = CliRunner().invoke(app, [*args, "--save", f"{out}/r.json"])
    pids = log.read_text().split() if log.exists() else []
    return result.exit_code, [int(pid) == os.getpid() for pid in pids]


def test_a_large_suite_is_read_once_in_a_forked_process_with_the_same_report(tmp_path, isolated):
    """`experiment run` reads a suite of SUITE_AHEAD_BYTES or more in a forked process
    while it imports the analysis; the run then uses that read (no second one here), and
    the report is the one a read in this process gives."""
    import shutil

    from agenticlens_frames.cli import SUITE_AHEAD_BYTES

    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = folder / "suite.yaml"
    suite.write_text("# " + "x" * SUITE_AHEAD_BYTES + "\n" + suite.read_text())
    runs = {}
    for workers in ("2", "1"):
        out = tmp_path / f"out{workers}"
        out.mkdir()
        runs[workers] = isolated(_run_counting_suite_reads, str(folder), str(out), workers)
    assert runs["2"] == (0, [False])  # one read, by another process
    assert runs["1"] == (0, [True])  # AGENTICLENS_FRAMES_WORKERS=1: read here
    assert (tmp_path / "out2" / "r.json").read_bytes() == (
        tmp_path / "out1" / "r.json"
    ).read_bytes()
