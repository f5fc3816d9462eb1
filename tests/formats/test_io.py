"""read_document and the shared value converters."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from agenticlens_frames._suggest import close_match, require_known
from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import _io, read_document
from agenticlens_frames.formats._io import Invalid, to_bool, to_float, to_int, to_str


def test_json_by_extension_any_case(write):
    # YAML would read this as a mapping too, but "1.0" stays a float only in JSON's eyes:
    # JSON keeps the string "01" as written, YAML 1.1 would read 01 as an int.
    path = write("doc.JSON", '{"a": "01", "b": 1.0}')
    assert read_document(path) == {"a": "01", "b": 1.0}


def test_other_extensions_are_yaml(write):
    assert read_document(write("doc.yml", "a: 01\n")) == {"a": 1}
    assert read_document(write("doc.txt", "- x\n")) == ["x"]
    # A YAML file may hold JSON, which is YAML.
    assert read_document(write("doc.yaml", '{"a": [1, 2]}')) == {"a": [1, 2]}


def test_uses_libyaml_when_available():
    if hasattr(yaml, "CSafeLoader"):
        assert _io._YAML_LOADER is yaml.CSafeLoader


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        read_document(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: file not found (check the path)"


def test_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        read_document(tmp_path)


def test_not_utf8_names_the_byte_offset(write):
    path = write("doc.yaml", b"name: ok\nversion: caf\xe9\n")
    with pytest.raises(InputError) as info:
        read_document(path)
    assert str(info.value) == (
        f"{path}: byte offset 21 (line 2): not valid UTF-8 (byte 0xe9) (save the file as UTF-8)"
    )


def test_yaml_syntax_error_has_line_and_column(write):
    path = write("doc.yaml", "name: ok\nitems: [1, 2\nother: 3\n")
    with pytest.raises(InputError) as info:
        read_document(path)
    assert info.value.location == "line 3, column 6"
    assert str(info.value).startswith(f"{path}: line 3, column 6: invalid YAML: ")


@pytest.mark.parametrize("value", ["2026-02-30", "2026-01-0T08:00:00Z", "2026-13-01 10:00:00"])
def test_impossible_dates_are_refused_naming_the_file(write, value):
    # PyYAML reads these as dates and fails building them (a ValueError, not its own).
    path = write("suite.yaml", f"cases:\n  - id: c1\n    when: {value}\n")
    with pytest.raises(InputError) as info:
        read_document(path)
    assert str(info.value).startswith(f"{path}: invalid YAML: ")
    assert "quote it" in str(info.value)


def test_json_syntax_error_has_line_and_column(write):
    path = write("doc.json", '{\n  "a": 1,\n  "b": \n}')
    with pytest.raises(InputError) as info:
        read_document(path)
    assert str(info.value) == f"{path}: line 4, column 1: invalid JSON: Expecting value"


def test_yaml_control_character_has_line_and_column(write):
    path = write("doc.yaml", "a: 1\nb: x\x07\n")
    with pytest.raises(InputError) as info:
        read_document(path)
    assert str(info.value) == (
        f"{path}: line 2, column 5: invalid YAML: unacceptable character #x0007: "
        "control characters are not allowed"
    )


def test_multiple_yaml_documents_are_refused(write):
    with pytest.raises(InputError) as info:
        read_document(write("doc.yaml", "a: 1\n---\nb: 2\n"))
    assert info.value.location == "line 2, column 1"
    assert info.value.message == (
        "invalid YAML: expected a single document in the stream, but found another document"
    )


@pytest.mark.parametrize("content", ["", "  \n\n", "# only a comment\n", "null\n", "---\n"])
def test_empty_documents(write, content):
    with pytest.raises(InputError, match="the document is empty"):
        read_document(write("doc.yaml", content))


def test_empty_json(write):
    with pytest.raises(InputError, match="the document is empty"):
        read_document(write("doc.json", "null"))


def test_byte_order_mark_is_ignored(write):
    assert read_document(write("doc.json", '\ufeff{"a": 1}')) == {"a": 1}


JSON_EDGES = [
    # integers beyond 64 bits stay exact (orjson 3.13 gives floats for them)
    '{"id": 123456789012345678901234567890, "n": [-9223372036854775809, 18446744073709551616]}',
    '{"in range": [9223372036854775807, -9223372036854775808, 18446744073709551615]}',
    '{"a": 1, "b": 2, "a": [3]}',  # the last of repeated keys, in the first one's place
    "[-0.0, 1e-400, 5e-324, 0.1, 1.7976931348623157e308, 1E2, -0]",
    '["\\u0000", "\\ud83d\\ude42", "\\/", "é"]',
    '{"deep": ' + "[" * 900 + "]" * 900 + "}",
    # what only the standard parser reads: NaN, infinity, beyond a float, a lone surrogate
    '{"x": NaN, "y": -Infinity, "z": 1e400}',
    '["\\ud800"]',
]


@pytest.mark.parametrize("text", JSON_EDGES, ids=range(len(JSON_EDGES)))
def test_json_values_are_the_standard_parsers(write, text):
    # repr: 0 and 0.0, -0.0 and 0.0, an int and a float of the same value differ
    expected = json.loads(text)
    if "ud800" in text:  # no UTF-8 output holds a lone surrogate: read as U+FFFD
        expected = _io.scrub_surrogates(expected)
    assert repr(read_document(write("doc.json", text))) == repr(expected)


@pytest.mark.parametrize("n_known", [30, 31])
def test_require_known_lists_thirty_known_names_then_how_many(n_known: int) -> None:
    known = [f"id{i:02d}" for i in range(n_known)]
    with pytest.raises(InputError) as info:
        require_known("variant id", ["zzz"], known, location="variants")
    listed = ", ".join(known[:30])
    tail = f" … ({n_known} in all)" if n_known > 30 else ""
    assert info.value.hint == f"known: {listed}{tail}"
    assert info.value.location == "variants"


@pytest.mark.parametrize("n_unknown", [5, 6])
def test_require_known_names_five_unknown_names_then_how_many(n_unknown: int) -> None:
    unknown = [f"zz{i}" for i in range(n_unknown)]
    with pytest.raises(InputError) as info:
        require_known("case id", [*unknown, "a", unknown[0]], ["a", "b"])
    named = ", ".join(repr(name) for name in unknown[:5])
    tail = f" … ({n_unknown} in all)" if n_unknown > 5 else ""
    assert info.value.message == f"unknown case id: {named}{tail}"


def test_close_match():
    assert close_match("trials", ["minimum_trials", "trial_count"]) == "trial_count"
    assert close_match("timout_seconds", ["timeout_seconds", "target"]) == "timeout_seconds"
    assert close_match("tool", ["name", "version"]) is None
    # An alias only applies when its target is a valid choice.
    assert close_match("seed", ["name"]) is None


# pydantic 2 lax-mode coercions, restated from its conversion table, minus our refusals.
@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, 3), (3.0, 3), ("3", 3), (" 3 ", 3), ("+3", 3), ("3.00", 3), ("1_000", 1000), (-0.0, 0)],
)
def test_to_int_accepts(value, expected):
    assert to_int(value) == expected
    assert type(to_int(value)) is int


@pytest.mark.parametrize("value", [True, False, 3.5, "3.5", "1e3", "x", "", None, [3], math.inf])
def test_to_int_refuses(value):
    with pytest.raises(Invalid):
        to_int(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, 3.0), (2.5, 2.5), ("2.5", 2.5), (" 1e3 ", 1000.0), (".5", 0.5), ("1_0", 10.0)],
)
def test_to_float_accepts(value, expected):
    assert to_float(value) == expected
    assert type(to_float(value)) is float


@pytest.mark.parametrize(
    "value", [True, "abc", "", "0x10", None, [1], math.inf, -math.inf, math.nan, "nan", "١٢"]
)
def test_to_float_refuses(value):
    with pytest.raises(Invalid):
        to_float(value)


def test_to_float_bounds():
    assert to_float(0, ge=0) == 0.0
    with pytest.raises(Invalid, match="expected a number > 0, got 0"):
        to_float(0, gt=0)
    with pytest.raises(Invalid, match=r"expected a number >= 0 and <= 1, got 1\.5"):
        to_float(1.5, ge=0, le=1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (0, False), (1.0, True), ("yes", True), ("Off", False), ("t", True)],
)
def test_to_bool_accepts(value, expected):
    assert to_bool(value) is expected


@pytest.mark.parametrize("value", [2, 0.5, "maybe", " true", None, []])
def test_to_bool_refuses(value):
    with pytest.raises(Invalid):
        to_bool(value)


def test_to_str_marks_scalars_for_a_quote_hint():
    with pytest.raises(Invalid) as info:
        to_str(2026.1)
    assert info.value.quote
    assert info.value.message == "expected a string, got 2026.1"
    with pytest.raises(Invalid) as info:
        to_str([1])
    assert not info.value.quote


@pytest.mark.differential
@pytest.mark.parametrize("kind", ["int", "float", "bool", "str"])
def test_converters_match_pydantic(kind):
    """Everything pydantic accepts we accept with the same value, bar documented refusals."""
    pydantic = pytest.importorskip("pydantic")
    python_type = {"int": int, "float": float, "bool": bool, "str": str}[kind]
    ours = {"int": to_int, "float": to_float, "bool": to_bool, "str": to_str}[kind]
    adapter = pydantic.TypeAdapter(python_type)
    pool = [
        0, 1, 2, -7, 3.0, 2.5, -0.0, 1e300, True, False, None, "", "a", "3", " 3 ", "3.0",
        "3.5", "+4", "-4", "1e3", "1_000", "_1", "0x10", "yes", "no", "on", "off", "t", "f",
        "TRUE", "inf", "nan", math.inf, math.nan, [], {}, [1], {"a": 1},
    ]  # fmt: skip
    for value in pool:
        try:
            expected = adapter.validate_python(value)
        except pydantic.ValidationError:
            with pytest.raises(Invalid):
                ours(value)
            continue
        refused_on_purpose = (isinstance(value, bool) and kind in ("int", "float")) or (
            kind == "float" and not math.isfinite(expected)
        )
        if refused_on_purpose:
            with pytest.raises(Invalid):
                ours(value)
        else:
            assert ours(value) == expected, value
            assert type(ours(value)) is type(expected), value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "x\\ud800y"}', {"a": "x\ufffdy"}),
        ('["\\uDBFF", "\\uDc00"]', ["\ufffd", "\ufffd"]),  # any case of the hex digits
        ('{"\\udfff": 1}', {"\ufffd": 1}),  # in a key
        ('["\\ud83d"]', ["\ufffd"]),  # half a pair
        ('["\\ud83d\\ude42", "é", "\\u00e9"]', ["\U0001f642", "é", "é"]),  # a pair is kept
        ('["\\\\ud800"]', ["\\ud800"]),  # an escaped backslash: the text \ud800, no surrogate
        ('{"plain": [1, "two", null]}', {"plain": [1, "two", None]}),
    ],
)
def test_loads_scrubbed_replaces_exactly_the_lone_surrogates(text, expected):
    # The fast path (no surrogate escape in the text: no walk over the value) and the
    # scrubbing one give the values written here by hand.
    assert _io.loads_scrubbed(text) == expected
