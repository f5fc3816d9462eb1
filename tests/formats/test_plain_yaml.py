"""The plain-YAML reader against PyYAML (libyaml's safe loader, as read_document uses it).

The property: for any text, :func:`load_plain_yaml` gives NOT_PLAIN or exactly what PyYAML
reads (same types, same key order), and never a value where PyYAML refuses the text.
Documents are generated in every style the reader handles and in styles it must leave to
PyYAML, then mutated character by character.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import read_document
from agenticlens_frames.formats._io import _YAML_LOADER
from agenticlens_frames.formats._plain_yaml import _NO_JSON, NOT_PLAIN, _Reader, load_plain_yaml
from agenticlens_frames.testing import make_synthetic

_REFUSED = object()


def _pyyaml(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except (yaml.YAMLError, ValueError, OverflowError):  # (an impossible date: 2026-01-0T…)
        return _REFUSED


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types, mappings in the same key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(
            _same(k1, k2) and _same(a[k1], b[k2]) for k1, k2 in zip(a, b, strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    return a == b


def _check(text: str) -> Any:
    fast = load_plain_yaml(text)
    reference = _pyyaml(text)
    if fast is not NOT_PLAIN:
        assert reference is not _REFUSED, f"PyYAML refuses {text!r}, the reader gave {fast!r}"
        assert _same(fast, reference), f"{text!r}: reader {fast!r}, PyYAML {reference!r}"
    return fast


# ------------------------------------------------------------------ generated documents

# Scalars that YAML reads in many ways: words, numbers in YAML 1.1's spellings, booleans,
# nulls, dates, and text with the characters that end or start plain scalars.
_WORDS = st.sampled_from(
    [
        "x",
        "refund",
        "in transit",
        "A-10432",
        "yes",
        "No",
        "on",
        "OFF",
        "null",
        "Null",
        "~",
        "true",
        "False",
        "0",
        "-1",
        "+7",
        "3000",
        "012",
        "0x1F",
        "0o17",
        "1_000",
        "1:20",
        "4.5",
        "-0.0",
        ".5",
        "1e3",
        "1.0e+3",
        ".inf",
        "-.Inf",
        ".nan",
        "2026-01-05",
        "2026-01-05T08:00:00Z",
        "a b  c",
        "a:b",
        "a: b",
        "a #b",
        "a#b",
        "#x",
        "-x",
        "- x",
        "?x",
        "&a",
        "*a",
        "!t",
        "|",
        ">",
        "%",
        "@x",
        "`x",
        "[x]",
        "{x}",
        "x,y",
        "it's",
        'say "hi"',
        "back\\slash",
        "tab\there",
        "é",
        "naïve café",
        "\u00a0x",
        "=",
        "<<",
        "...",
        "---",
        "",
        " lead",
        "trail ",
        "(paren)",
        "/path",
        "$5",
        "^x",
        ";x",
    ]
)
_SCALARS = st.one_of(
    _WORDS,
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
)


def _nested(scalars: st.SearchStrategy[Any], keys: st.SearchStrategy[Any]) -> st.SearchStrategy:
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)
        ),
        max_leaves=20,
    )


_VALUES = _nested(_SCALARS, st.one_of(_WORDS, st.integers(0, 3)))
# Documents as suites are written: identifier keys, and text a writer quotes when needed.
_NAME = r"[a-z_][a-z0-9_]{0,6}"
_TAME_KEYS = st.from_regex(_NAME, fullmatch=True)
_TAME_TEXT = st.text(alphabet="abcxyzABC0129 -_.,'\"\\é€😀", max_size=10)
_TAME_VALUES = _nested(
    st.one_of(
        _TAME_TEXT,
        _TAME_TEXT,
        _WORDS,
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
    ),
    _TAME_KEYS,
)
_SAFE_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+)*")


def _scalar_text(value: Any, style: int, flow: bool) -> str:
    if isinstance(value, str):
        if style == 0:
            return value  # plain, whatever YAML makes of it
        if style == 1:
            return "'" + value.replace("'", "''") + "'"
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, bool):
        return (
            ["true", "True", "yes", "on"][style]
            if value
            else ["false", "no", "Off", "FALSE"][style]
        )
    if value is None:
        return ["null", "~", "", "Null"][style] if not flow or style != 2 else "null"
    return repr(value) if isinstance(value, float) else str(value)


@st.composite
def _documents(draw: st.DrawFn) -> str:
    """A value written out as YAML: block or flow per node, quoting and spacing at random."""
    wild = draw(st.integers(0, 2)) == 0
    if wild:
        value = draw(st.dictionaries(_WORDS, _VALUES, min_size=1, max_size=5))
    else:
        value = draw(st.dictionaries(_TAME_KEYS, _TAME_VALUES, min_size=1, max_size=5))

    def style(v: Any) -> int:
        if wild or not isinstance(v, str) or _SAFE_PLAIN.fullmatch(v):
            return draw(st.integers(0, 3))
        return draw(st.integers(1, 3))  # quoted

    step = draw(st.sampled_from([2, 2, 4, 1, 3]))
    indentless = draw(st.booleans())

    def flow(v: Any) -> str:
        space = draw(st.sampled_from([" ", "", "  "]))
        if isinstance(v, dict):
            items = [
                f"{flow(k)}:{' ' if draw(st.booleans()) else ''} {flow(x)}" for k, x in v.items()
            ]
            return "{" + space + ("," + space).join(items) + space + "}"
        if isinstance(v, list):
            return "[" + (", " if draw(st.booleans()) else ",").join(flow(x) for x in v) + "]"
        return _scalar_text(v, style(v), True)

    def comment() -> str:
        return draw(st.sampled_from(["", "", "", "", "", "  # note", " #x", "   "]))

    def block(v: Any, indent: int, lines: list[str], lead: str) -> None:
        """Write ``v`` starting after ``lead`` on a new line at ``indent``."""
        pad = " " * indent
        if isinstance(v, dict) and v and draw(st.integers(0, 3)):
            first = True
            for k, x in v.items():
                head = (lead if first else pad) + f"{flow(k)}:"
                first = False
                nested(x, indent, head, lines, mapping=True)
            return
        if isinstance(v, list) and v and draw(st.integers(0, 3)):
            first = True
            for x in v:
                head = (lead if first else pad) + "-"
                first = False
                nested(x, indent, head, lines, mapping=False)
            return
        lines.append(lead + flow(v) + comment())

    def nested(x: Any, indent: int, head: str, lines: list[str], mapping: bool) -> None:
        if isinstance(x, (dict, list)) and x and draw(st.booleans()):
            if not mapping and isinstance(x, dict) and draw(st.booleans()):
                # "- key: value" with the rest of the mapping below the first key
                block(x, indent + 2, lines, head + " ")
                return
            lines.append(head + comment())
            if draw(st.integers(0, 5)) == 0:
                lines.append(" " * draw(st.integers(0, 8)) + "# between")
            deeper = indent if (mapping and indentless and isinstance(x, list)) else indent + step
            block(x, deeper, lines, " " * deeper)
        else:
            lines.append(head + " " + flow(x) + comment())

    lines: list[str] = []
    if draw(st.integers(0, 9)) == 0:
        lines.append("# a header comment")
    block(value, 0, lines, "")
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


_HYPOTHESIS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_HYPOTHESIS
@given(_documents())
def test_generated_documents_read_as_pyyaml_reads_them(text: str) -> None:
    _check(text)


# Characters that matter to YAML, to insert or put in place of others.
_MUTATIONS = [*" \n\t\r:#-,[]{}'\"\\&*!|>?%@`~.0aY\u2028\ufeff\x00\x85", ": ", " #", "- "]


def _edits(pieces: list[str], min_size: int, max_size: int) -> st.SearchStrategy:
    """Edits for :func:`_mutated`: (where, piece, how) with ``pieces`` to put in."""
    return st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(pieces), st.integers(0, 2)),
        min_size=min_size,
        max_size=max_size,
    )


def _mutated(text: str, edits: list[tuple[int, str, int]]) -> str:
    for where, piece, how in edits:
        at = where % (len(text) + 1)
        if how == 0:
            text = text[:at] + piece + text[at:]  # insert
        elif how == 1:
            text = text[:at] + piece + text[at + 1 :]  # replace
        else:
            text = text[:at] + text[at + 1 :]  # delete
    return text


@_HYPOTHESIS
@given(_documents(), _edits(_MUTATIONS, 1, 4))
def test_mutated_documents_read_as_pyyaml_reads_them_or_fall_back(
    text: str, edits: list[tuple[int, str, int]]
) -> None:
    _check(_mutated(text, edits))


# ------------------------------------------------------------------ flow lines cut at strings


def _same_flow_json(line: str) -> None:
    """The line read cut at its double-quoted scalars (flow_json) is the line tokenised
    whole (flow_json_tokens): both give no JSON, or the same value."""
    reader = _Reader("k: v\n")
    cut, whole = reader.flow_json(line), reader.flow_json_tokens(line)
    if whole is _NO_JSON:
        assert cut is _NO_JSON, f"{line!r}: cut {cut!r}, whole gives no JSON"
    else:
        assert cut is not _NO_JSON and _same(cut, whole), f"{line!r}: {cut!r} != {whole!r}"


@_HYPOTHESIS
@given(_documents(), _edits([*_MUTATIONS, "\\/", "\\u00e9", '""', "''"], 0, 3))
def test_flow_lines_cut_at_their_strings_read_as_tokenised_whole(
    text: str, edits: list[tuple[int, str, int]]
) -> None:
    text = _mutated(text, edits)
    for line in text.split("\n"):
        content = line.strip(" ")
        if content.startswith("- "):
            content = content[2:]
        _, colon, rest = content.partition(": ")
        for candidate in (content, rest if colon else ""):
            if candidate[:1] in ("[", "{"):
                _same_flow_json(candidate)


@pytest.mark.parametrize(
    "line",
    [
        '{id: "case-1", name: "Q 1", input: {question: "about x"}, max_latency_ms: 3000}',
        "['a \"b', 'c \"d']",
        "{k: 'it''s \"x\"', l: \"it's\"}",
        '{a: "x"y}',
        '["a""b"]',
        '{k: "a\\x41"}',
        '{k: "a\\/b"}',
        '{k: "\\u00e9"}',
        '{k: "\\e"}',
        '{k: "\\"}',
        '{"k": v, \'q\': "r", 3: "s"}',
        '[a #b, "c"]',
        '["a", b # c]',
        '{k: "v"} # after',
        '[yes, "no", 0x1F, "1_000", 2026-01-05, .inf, "x"]',
        '[1, "2", 99999999999999999999, "3"]',
        '{"a": 1, "a": "2"}',
        "[]",
        '[""]',
        '{k: ""}',
    ],
)
def test_chosen_flow_lines_cut_at_their_strings_read_as_tokenised_whole(line: str) -> None:
    _same_flow_json(line)
    _check(f"k: {line}\n")


# ------------------------------------------------------------------ chosen cases


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb:\n- x\n- y\nc: {d: [1, 2.5, null, yes]}\n",
        "cases:\n  - id: c1\n    input:\n      q: 'it''s'\n    tags: [a, b]\n  - {id: c2}\n",
        'k: "tab\\tand \\"quotes\\" \\\\ \\n"\n',
        "k: 0x1F\nl: 1_000\nn: 2026-01-05\no: .inf\np: 012\nq: ~\n",
        "yes: no\n1: one\nnull: x\n",
        "a: 1\na: 2\nb: {x: 1, x: 2}\n",
        "- a\n-\n  - b\n- {k: v}\n- \n",
        "k: v   \n  # indented comment\nl: w # comment\n",
        "k: [a b, 'c d', \"e\"]  # after the flow\n",
        "deep:\n    deeper:\n        deepest: [1]\n",
        "{a: 1, 'b': [x]}\n",
        "k:\n  [a, b]\nl:\n  'text'\n",
    ],
)
def test_chosen_documents_are_read_exactly(text: str) -> None:
    assert _check(text) is not NOT_PLAIN


@pytest.mark.parametrize(
    "text",
    [
        "k: |\n  block\n",
        "k: >\n  folded\n",
        "k: a\n  continued\n",
        "k: &a 1\nl: *a\n",
        "k: !!str 1\n",
        "--- \nk: 1\n",
        "%YAML 1.1\n---\nk: 1\n",
        "k: [a,\n  b]\n",
        "k: 'a\n  b'\n",
        'k: "\\x41"\n',
        'k: "\\u00e9"\n',
        "k:\tv\n",
        "k: v\r\n",
        "? k\n: v\n",
        "k: {a}\n",
        "k: [a: 1]\n",
        "k: a: b\n",
        "k: a#b\n",
        "k:v\n",
        "just text\n",
        "# only a comment\n",
        "<<: {a: 1}\n",
    ],
)
def test_other_yaml_is_left_to_pyyaml(text: str) -> None:
    assert _check(text) is NOT_PLAIN


def test_suites_as_generated_take_the_plain_reader(tmp_path: Path) -> None:
    make_synthetic(tmp_path, variants=3, trials=1, cases=50, seed=3)
    here = Path(__file__).resolve().parents[2] / "data" / "support"
    for path in (
        tmp_path / "suite.yaml",
        tmp_path / "manifest.yaml",
        here / "suite.yaml",
        here / "manifest.yaml",
    ):
        text = path.read_text(encoding="utf-8")
        assert _check(text) is not NOT_PLAIN, path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\n b: 2\n", "line 2, column 3"),
        ("a: [1, 2\n", "line 2, column 1"),
        ("a: 'x\n", "line 2, column 1"),
    ],
)
def test_invalid_yaml_is_reported_by_pyyaml_as_before(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    assert load_plain_yaml(text) is NOT_PLAIN
    with pytest.raises(InputError) as info:
        read_document(path)
    assert "invalid YAML" in str(info.value) and message in str(info.value)
