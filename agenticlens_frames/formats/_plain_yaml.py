"""An exact, fast reader for the plain subset of YAML that suites and manifests are written in.

libyaml composes a node per value and PyYAML's constructor, written in Python, turns each
node into its value: a 5 000-case suite took about 0.3 s, most of it in the constructor.
Generated and hand-written suites use a small part of YAML — block mappings and sequences,
one-line flow collections, quoted and plain one-line scalars, comments — which this module
reads line by line into the same values.

It gives :data:`NOT_PLAIN` for anything outside that part, valid or not: multi-line
scalars, anchors, aliases, tags, document markers, directives, tabs, carriage returns,
escapes other than JSON's plainest ones, characters YAML refuses, and any layout it does
not recognise. :func:`~agenticlens_frames.formats._io.read_document` then parses the text
with PyYAML as before, so an invalid file is reported exactly as it was. Plain scalars are
resolved by PyYAML's own implicit resolvers and built by its own constructors, so ``yes``,
``0x1F``, ``1_000``, ``.inf`` or ``2026-01-05`` come out as PyYAML makes them.
``tests/formats/test_plain_yaml.py`` checks the two against each other on generated
documents and on mutations of them.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson
import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

__all__ = ["NOT_PLAIN", "load_plain_yaml"]

#: Returned when the text is not in the subset this module reads.
NOT_PLAIN: Any = object()


_NO_JSON: Any = object()


class _NotPlain(Exception):
    """Raised inside the reader: the text is not (or not surely) in the subset."""


# Characters that make the text fall back: tabs (indentation rules), every line break but
# "\n" (YAML folds them), a byte-order mark inside the text, and what YAML refuses
# (PyYAML's and libyaml's set of printable characters).
_FALL_BACK = re.compile(
    "[\t\r\x85\u2028\u2029\ufeff]|[^\x0a\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)

# A block mapping key: a double-quoted key with JSON's plainest escapes, or a plain key
# of letters, digits and ``_ . - /``; then ": " or ":" at the end of the line.
_KEY = re.compile(
    r'(?:"((?:[^"\\]|\\["\\bfnrt])*)"|\'((?:[^\']|\'\')*)\'|([A-Za-z0-9_][A-Za-z0-9_./-]*)):(?= |$)'
)
_DOUBLE = re.compile(r'"((?:[^"\\]|\\["\\bfnrt])*)"')
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
# Plain scalars: no ':' or '#' at all, no flow indicators (none of ",[]{}" in a flow
# collection), single spaces or runs of them between words, nothing that starts a tag,
# an anchor, an alias, a block scalar, a directive or a complex key. "-" starts one only
# before a digit or a dot (a negative number).
_START = r"(?:[A-Za-z0-9_.(/+~$^;)\u00a0-\U0010ffff]|-(?=[0-9.]))"
_PLAIN_BLOCK = re.compile(_START + r"(?:[^\s#:\[\]{}]| +(?=[^\s#:\[\]{}]))*")
_PLAIN_FLOW = re.compile(_START + r"(?:[^\s#:\[\]{},'\"]| +(?=[^\s#:\[\]{},'\"]))*")
_SPACES = re.compile(" *")
# A one-line flow collection as tokens (each atomic: the tokens are the ones a left-to-right
# reading finds), to be rewritten as JSON: a double-quoted scalar (already JSON), a
# single-quoted one, an indicator, a plain scalar, or ": " (no space before the colon).
_TOKEN_PARTS = (
    r'"(?:[^"\\]|\\["\\bfnrt])*"',  # double-quoted, kept as written
    r"'((?:[^']|'')*)'",  # single-quoted: its text is the group
    r"[\[\]{},]",
    _PLAIN_FLOW.pattern,
)


def _tokens(capture: bool) -> str:
    if capture:
        double, single, indicator, plain = _TOKEN_PARTS
        return rf" *(?:({double})|{single}|({indicator})|({plain}))|(: )"
    # Each token atomic and without groups (Python 3.11's re cannot mix the two).
    single = _TOKEN_PARTS[1].replace("((?:", "(?:(?:")
    return " *(?:" + "|".join((_TOKEN_PARTS[0], single, *_TOKEN_PARTS[2:])) + ")|: "


_FLOW_TOKENS = re.compile(_tokens(True))
_FLOW_LINE = re.compile(f"(?:(?>{_tokens(False)}))*+ *")
# The double-quoted scalars the tokens keep as written, to split a line at (see
# _Reader.flow_json): the text between two of them repeats from line to line.
_KEPT_STRINGS = re.compile(f"({_TOKEN_PARTS[0]})")
_ESCAPES = re.compile(r"\\(.)")
_ESCAPED = {'"': '"', "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# libyaml refuses simple keys longer than this; well below it, nothing to decide.
_LONGEST_KEY = 1000

_STR = "tag:yaml.org,2002:str"
_BUILT = ("int", "float", "bool", "null", "timestamp")
_CONSTRUCTORS = {
    f"tag:yaml.org,2002:{name}": SafeConstructor.yaml_constructors[f"tag:yaml.org,2002:{name}"]
    for name in _BUILT
}
_RESOLVERS = Resolver.yaml_implicit_resolvers
# Resolvers for every first character (none in PyYAML) would have to be tried too.
_ONLY_BY_FIRST = None not in _RESOLVERS


def load_plain_yaml(text: str) -> Any:
    """The document ``text`` holds, as PyYAML's safe loader reads it, or :data:`NOT_PLAIN`
    when ``text`` is not in the subset this module reads.

    Examples
    --------
    >>> load_plain_yaml('name: demo\\ncases:\\n  - {id: "a", max_turns: 3, tags: [x, y]}\\n')
    {'name': 'demo', 'cases': [{'id': 'a', 'max_turns': 3, 'tags': ['x', 'y']}]}
    >>> load_plain_yaml("text: |\\n  a block scalar\\n") is NOT_PLAIN
    True
    """
    if not _ONLY_BY_FIRST or _FALL_BACK.search(text):
        return NOT_PLAIN
    try:
        return _Reader(text).document()
    except _NotPlain:
        return NOT_PLAIN
    except RecursionError:
        return NOT_PLAIN


class _Reader:
    """One pass over the document's lines (blank and comment-only lines left out)."""

    def __init__(self, text: str) -> None:
        lines: list[tuple[int, str]] = []
        for line in text.split("\n"):
            content = line.lstrip(" ")
            if content and content[0] != "#":
                lines.append((len(line) - len(content), content))
        self.lines = lines
        self.constructor = SafeConstructor()
        self.plain_values: dict[str, Any] = {}
        self.plain_texts: dict[str, str | None] = {}
        self.between: dict[str, str | None] = {}  # see flow_json

    def document(self) -> Any:
        lines = self.lines
        if not lines:
            raise _NotPlain  # empty, or comments only: PyYAML says what that means
        value, at = self.block(0, lines[0][0])
        if at != len(lines):
            raise _NotPlain
        return value

    # ------------------------------------------------------------------ block context

    def block(self, at: int, indent: int) -> tuple[Any, int]:
        """The block node whose first line is ``lines[at]``, at ``indent``."""
        content = self.lines[at][1]
        if content == "-" or content.startswith("- "):
            return self.sequence(at, indent)
        if content[0] in "[{\"'" and not _KEY.match(content):
            # A node on a line of its own: the next line must belong to an outer node.
            value = self.line_value(content)
            at += 1
            if at < len(self.lines) and self.lines[at][0] >= indent:
                raise _NotPlain
            return value, at
        return self.mapping(at, indent, content)

    def after_line(self, at: int, indent: int) -> int:
        """The next line, which must not be more indented than ``indent`` (a value on the
        line before ended there: a deeper line would continue it, or be an error)."""
        at += 1
        if at < len(self.lines) and self.lines[at][0] > indent:
            raise _NotPlain
        return at

    def nested(self, at: int, indent: int, key: bool) -> tuple[Any, int]:
        """The value of a key (``key``) or an entry whose line ended after its indicator:
        a deeper block, a sequence at the key's own indent, or null."""
        lines = self.lines
        at += 1
        if at < len(lines):
            deeper, content = lines[at]
            if deeper > indent:
                return self.block(at, deeper)
            if key and deeper == indent and (content == "-" or content.startswith("- ")):
                return self.sequence(at, indent)
        return None, at

    def mapping(self, at: int, indent: int, first: str) -> tuple[dict[Any, Any], int]:
        """A block mapping at ``indent`` from ``lines[at]``, whose content is ``first``
        (an entry's line after its "- ", for a mapping that starts inside an entry)."""
        lines = self.lines
        out: dict[Any, Any] = {}
        content = first
        while True:
            match = _KEY.match(content)
            if match is None or match.end() > _LONGEST_KEY:
                raise _NotPlain
            double, single, plain = match.groups()
            if plain is not None:
                key = self.plain(plain)
            elif single is not None:
                key = single.replace("''", "'")
            else:
                key = _unescape(double)
            rest = content[_SPACES.match(content, match.end()).end() :]
            if not rest or rest[0] == "#":
                out[key], at = self.nested(at, indent, True)
            else:
                out[key] = self.line_value(rest)
                at = self.after_line(at, indent)
            if at == len(lines):
                return out, at
            deeper, content = lines[at]
            if deeper < indent:
                return out, at
            if deeper > indent:
                raise _NotPlain

    def sequence(self, at: int, indent: int) -> tuple[list[Any], int]:
        """A block sequence at ``indent`` from ``lines[at]``."""
        lines = self.lines
        out: list[Any] = []
        while at < len(lines):
            deeper, content = lines[at]
            if deeper < indent or not (content == "-" or content.startswith("- ")):
                break
            if deeper > indent:
                raise _NotPlain
            spaces = _SPACES.match(content, 1).end()
            rest = content[spaces:]
            if not rest or rest[0] == "#":
                value, at = self.nested(at, indent, False)
            elif rest == "-" or rest.startswith("- "):
                raise _NotPlain  # "- - x": an entry that is a sequence
            elif _KEY.match(rest):
                value, at = self.mapping(at, indent + spaces, rest)
            else:
                value = self.line_value(rest)
                at = self.after_line(at, indent)
            out.append(value)
        return out, at

    def line_value(self, text: str) -> Any:
        """A one-line value (a flow collection or a scalar) and at most a comment after it."""
        first = text[0]
        if first == "[" or first == "{":
            value = self.flow_json(text)
            if value is not _NO_JSON:
                return value
            value, end = self.flow(text, 0)
        elif first == '"':
            value, end = _double(text, 0)
        elif first == "'":
            value, end = _single(text, 0)
        else:
            match = _PLAIN_BLOCK.match(text)
            if match is None:
                raise _NotPlain
            value, end = self.plain(match.group()), match.end()
        if end != len(text):
            spaces = _SPACES.match(text, end).end()
            if spaces < len(text) and (spaces == end or text[spaces] != "#"):
                raise _NotPlain  # not a comment: more of the value, or an error
        return value

    # ------------------------------------------------------------------ flow context

    def flow_json(self, text: str) -> Any:
        """A line that is one flow collection, read as the JSON it is rewritten to, or
        ``_NO_JSON`` (then :meth:`flow` reads it: a comment after it, a key that is not a
        string, a value JSON cannot hold).

        YAML's flow collections with these tokens are JSON's arrays and objects with
        other spellings of the same scalars; whatever JSON's grammar refuses (an entry
        without a value, a comma before the end, a single-pair mapping in a sequence)
        falls back, and orjson keeps the last of repeated keys as PyYAML does.

        The line is first cut at its double-quoted scalars (kept as written) and the
        text between them rewritten once per distinct text: a suite's case lines repeat
        the same keys and indicators between their strings, so most of a line is looked
        up instead of tokenised. When every piece between them is a run of whole tokens
        (so holds no double quote: a string the cut did not take is not a token either),
        the tokens of the line are exactly those of the pieces and the strings (no other
        token holds a double quote), so the JSON is the same; anything else is tokenised
        whole (:meth:`flow_json_tokens`).
        """
        parts = _KEPT_STRINGS.split(text)
        between = self.between
        for at in range(0, len(parts), 2):
            piece = parts[at]
            try:
                json = between[piece]
            except KeyError:
                json = None
                if _FLOW_LINE.fullmatch(piece) is not None:
                    json = self._tokens_json(piece)
                between[piece] = json
            if json is None:
                return self.flow_json_tokens(text)
            parts[at] = json
        try:
            return orjson.loads("".join(parts))
        except orjson.JSONDecodeError:
            return _NO_JSON  # (so would the whole line be: its JSON is the same)

    def flow_json_tokens(self, text: str) -> Any:
        """:meth:`flow_json`, tokenising the whole line."""
        if _FLOW_LINE.fullmatch(text) is None:
            return _NO_JSON
        json = self._tokens_json(text)
        if json is None:
            return _NO_JSON
        try:
            return orjson.loads(json)
        except orjson.JSONDecodeError:
            return _NO_JSON

    def _tokens_json(self, text: str) -> str | None:
        """The JSON of ``text``, a run of whole flow tokens (``_FLOW_LINE``), or None when
        a plain scalar in it has no JSON spelling."""
        pieces: list[str] = []
        add = pieces.append
        for match in _FLOW_TOKENS.finditer(text):
            kind = match.lastindex
            if kind == 1 or kind == 3:
                add(match.group(kind))
            elif kind == 5:
                add(":")
            elif kind == 2:
                add(orjson.dumps(match.group(2).replace("''", "'")).decode())
            else:
                piece = self.plain_json(match.group(4))
                if piece is None:
                    return None
                add(piece)
        return "".join(pieces)

    def plain_json(self, text: str) -> str | None:
        """A plain scalar's value written as JSON, or None when JSON cannot hold it
        exactly (a date, an infinity, an integer past 64 bits)."""
        try:
            return self.plain_texts[text]
        except KeyError:
            pass
        value = self.plain(text)
        piece: str | None = None
        if type(value) is str or value is None or type(value) is bool:
            piece = orjson.dumps(value).decode()
        elif type(value) is int:
            piece = str(value) if -(2**63) <= value < 2**64 else None
        elif type(value) is float and math.isfinite(value):
            piece = repr(value)
            back = orjson.loads(piece)
            if not (back == value and repr(back) == piece):
                piece = None
        self.plain_texts[text] = piece
        return piece

    def flow(self, text: str, at: int) -> tuple[Any, int]:
        """The flow collection starting at ``text[at]`` and the position after it."""
        closing = "]" if text[at] == "[" else "}"
        mapping = closing == "}"
        out: Any = {} if mapping else []
        at = _SPACES.match(text, at + 1).end()
        if at < len(text) and text[at] == closing:
            return out, at + 1
        while True:
            if mapping:
                key, at = self.flow_item(text, at, key=True)
                if not text.startswith(": ", at):
                    raise _NotPlain
                value, at = self.flow_item(text, _SPACES.match(text, at + 2).end())
                out[key] = value
            else:
                value, at = self.flow_item(text, at)
                out.append(value)
            at = _SPACES.match(text, at).end()
            if at >= len(text):
                raise _NotPlain  # continued on the next line
            if text[at] == closing:
                return out, at + 1
            if text[at] != ",":
                raise _NotPlain
            at = _SPACES.match(text, at + 1).end()
            if at < len(text) and text[at] in ",]}":
                raise _NotPlain  # an empty entry, or a comma before the end

    def flow_item(self, text: str, at: int, key: bool = False) -> tuple[Any, int]:
        if at >= len(text):
            raise _NotPlain
        first = text[at]
        if first == '"':
            return _double(text, at)
        if first == "'":
            return _single(text, at)
        if (first == "[" or first == "{") and not key:
            return self.flow(text, at)
        match = _PLAIN_FLOW.match(text, at)
        if match is None:
            raise _NotPlain
        return self.plain(match.group()), match.end()

    # ------------------------------------------------------------------ scalars

    def plain(self, text: str) -> Any:
        """A plain scalar's value: PyYAML's implicit resolvers pick its type, PyYAML's
        constructors build it."""
        try:
            return self.plain_values[text]
        except KeyError:
            pass
        tag = _STR
        for candidate, pattern in _RESOLVERS.get(text[0], ()):
            if pattern.match(text):
                tag = candidate
                break
        if tag == _STR:
            value: Any = text
        else:
            build = _CONSTRUCTORS.get(tag)
            if build is None:
                raise _NotPlain  # a merge key or a value tag
            try:
                value = build(self.constructor, yaml.ScalarNode(tag, text))
            except (yaml.YAMLError, ValueError, OverflowError):
                raise _NotPlain from None
        self.plain_values[text] = value
        return value


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _ESCAPES.sub(lambda m: _ESCAPED[m.group(1)], text)


def _double(text: str, at: int) -> tuple[str, int]:
    match = _DOUBLE.match(text, at)
    if match is None:
        raise _NotPlain  # continued on the next line, or an escape left to PyYAML
    return _unescape(match.group(1)), match.end()


def _single(text: str, at: int) -> tuple[str, int]:
    match = _SINGLE.match(text, at)
    if match is None:
        raise _NotPlain
    return match.group(1).replace("''", "'"), match.end()
