"""Reading documents, and the small value checks the loaders share.

The converters here (``to_str``, ``to_int``, ...) follow the coercions pydantic 2 applies in
its default lax mode, which is what AgenticLens 0.10 validates its files with, minus a few
inputs that are obviously mistakes (a boolean where a number belongs, a non-finite number).
They raise :class:`Invalid`, which knows what is wrong but not where; :class:`Source` turns it
into an :class:`~agenticlens_frames.errors.InputError` naming the file and the place.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any, NoReturn

import msgspec
import orjson
import yaml

from agenticlens_frames._gc import paused_gc as gc_paused
from agenticlens_frames._limits import MAX_INPUT_BYTES_ENV, MAX_YAML_NODES_ENV, limit
from agenticlens_frames._suggest import close_match
from agenticlens_frames.errors import InputError
from agenticlens_frames.formats._plain_yaml import NOT_PLAIN, load_plain_yaml

__all__ = [
    "FAILED",
    "JSON_REFUSED",
    "REQUIRED",
    "Invalid",
    "Source",
    "convert_checked",
    "describe",
    "is_json_path",
    "iter_json_list",
    "loads_json",
    "loads_scrubbed",
    "read_document",
    "read_input",
    "read_top_mapping",
    "scrub_surrogates",
    "to_bool",
    "to_float",
    "to_int",
    "to_list",
    "to_mapping",
    "to_str",
    "to_str_list",
    "to_str_map",
    "valid",
]

# libyaml's loader is about ten times faster than the pure-Python one, which matters for
# suites of tens of thousands of cases; both build the same Python objects.
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Marks a field without a default in :meth:`Source.take`.
REQUIRED: Any = object()


class _Failed:
    def __repr__(self) -> str:
        return "FAILED"


#: What :class:`Source` gives for a value it refused while collecting problems (see
#: :meth:`Source.collecting`), so that loading goes on; a rule that needs the value skips
#: it (see :func:`valid`). Never returned outside the collecting block.
FAILED: Any = _Failed()

#: How many problems one error lists; it counts the rest.
MOST_LISTED = 20


def valid(*values: Any) -> bool:
    """Whether none of ``values`` is :data:`FAILED`: a rule on them may run.

    Examples
    --------
    >>> valid(3, "a"), valid(3, FAILED)
    (True, False)
    """
    return all(value is not FAILED for value in values)


def is_json_path(path: str | Path) -> bool:
    """Whether ``path`` is read as JSON (extension ``.json``, any case) rather than YAML."""
    return Path(path).suffix.lower() == ".json"


_JSON_DECODER = msgspec.json.Decoder()

#: What :func:`loads_json` raises for a document it does not read (bad syntax, NaN, a
#: number beyond a float, a lone surrogate, nesting deeper than the interpreter's stack).
JSON_REFUSED = (ValueError, RecursionError)

# A run of 19 digits: where an integer beyond 64 bits may be (see loads_json).
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_LONG_DIGITS_TEXT = re.compile(r"[0-9]{19}")


def loads_json(data: bytes | memoryview | str) -> Any:
    """A JSON document's value, exactly as :func:`json.loads` gives it, parsed in C.

    msgspec rather than orjson: orjson (3.13 here) reads an integer beyond 64 bits as a
    float (``123456789012345678901234567890`` as ``1.2345678901234568e+29``), where the
    standard parser, the reference, keeps it exact. Documents this refuses (see
    ``JSON_REFUSED``) go to the standard parser in the callers, for its values (``NaN``,
    lone surrogates) or its error.

    Examples
    --------
    >>> loads_json(b'{"id": 123456789012345678901234567890, "a": 1, "a": 2.5}')
    {'id': 123456789012345678901234567890, 'a': 2.5}
    """
    try:
        return _JSON_DECODER.decode(data)
    except RecursionError:
        # msgspec nests as deep as the interpreter's stack allows, orjson to 1 024 levels
        # whatever the stack: orjson's value does when no integer can be beyond 64 bits
        # (those have 19 digits or more).
        value = orjson.loads(data)
        long_digits = _LONG_DIGITS_TEXT if isinstance(data, str) else _LONG_DIGITS
        if long_digits.search(data) is None:  # type: ignore[arg-type]
            return value
        raise


def read_document(path: str | Path) -> Any:
    """Read a JSON or YAML document.

    A ``.json`` extension (any case) selects JSON; anything else is read as YAML, as
    AgenticLens does.

    Parameters
    ----------
    path
        The file to read.

    Returns
    -------
    Any
        The parsed document (never ``None``).

    Raises
    ------
    InputError
        If the file is missing or unreadable, is not UTF-8 (naming the byte offset), has a
        syntax error (naming the line and column), or holds no document.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "doc.yaml").write_text("name: demo\\nversion: '1'\\n")
    >>> read_document(folder / "doc.yaml")
    {'name': 'demo', 'version': '1'}
    >>> _ = (folder / "bad.json").write_text('{"name": }')
    >>> read_document(folder / "bad.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: .../bad.json: line 1, column 10: invalid JSON: ...
    """
    path = Path(path)
    data = read_input(path)
    if is_json_path(path):
        # The bytes are parsed as they are (the parser checks the UTF-8): no decoded copy
        # of a large recorded file. Whatever it refuses (a byte-order mark, bad bytes,
        # NaN, lone surrogates, an empty file) takes the path below, whose values and
        # messages are the reference.
        try:
            with gc_paused():
                document = loads_json(data)
        except JSON_REFUSED:
            pass
        else:
            if document is None:
                raise InputError("the document is empty (it holds only null)", file=path)
            return document
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x})",
            file=path,
            location=f"byte offset {exc.start} (line {line})",
            hint="save the file as UTF-8",
        ) from None
    del data  # the text is the document now: do not hold a large file twice while parsing
    # Editors on Windows like to prepend a byte-order mark; it carries no content.
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError("the document is empty", file=path)
    with gc_paused():
        if is_json_path(path):
            document = _parse_json(text, path)
        else:
            # The plain subset most suites are written in is read directly; anything else
            # (and every invalid document, with its error) goes to PyYAML.
            document = load_plain_yaml(text)
            if document is NOT_PLAIN:
                document = _parse_yaml_apart(text, path)
            if document is _NOT_APART:
                document = _parse_yaml(text, path)
    if document is None:
        raise InputError("the document is empty (it holds only null)", file=path)
    return document


def iter_json_list(
    path: str | Path,
    key: str,
    element: bytes,
    whole: Callable[[], list[Any]],
    parse: Callable[[memoryview], Any] = loads_json,
) -> Iterator[Any] | None:
    """The items of the list ``document[key]`` of a JSON file, each parsed when reached,
    or None when the file is not laid out for it (then :func:`read_document` it).

    A parsed JSON document takes several times its size in memory; replaying a recorded
    file needs one trial of it at a time. The list is cut at the commas before each item
    that starts with ``element`` (e.g. ``b'{"samples":'``), and each piece is parsed on its
    own, which gives exactly the whole document's items: each piece given out is a
    complete JSON value, so the cuts before it are the list's own commas; the document
    around the list must parse with a marker in its place as a mapping whose ``key`` is
    the marker; and ``key`` is not written again after the list starts (a repeated key's
    last value wins), plainly or with ``\\u`` escapes. When a piece does not parse (an
    unusual layout, or a bad file), the rest of the items come from ``whole()``, which
    reads the whole document and raises its error for a bad file. ``parse`` reads each
    piece (default :func:`loads_json`): it must raise one of ``JSON_REFUSED`` for a piece
    it cannot read, and may give a typed record instead of the parsed value.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "t.json").write_text('{"trials": [{"s": [1]}, {"s": [2, "},{"]}]}')
    >>> whole = lambda: read_document(folder / "t.json")["trials"]
    >>> list(iter_json_list(folder / "t.json", "trials", b'{"s":', whole))
    [{'s': [1]}, {'s': [2, '},{']}]
    """
    path = Path(path)
    if not is_json_path(path):
        return None
    data = read_input(path)
    name = re.escape(key.encode())
    opening = re.search(rb'"' + name + rb'"\s*:\s*\[', data)
    last = _skip_space_back(data, len(data) - 1)
    if opening is None or last < 0 or data[last] != ord("}"):
        return None
    start = opening.end() - 1  # the list's "["
    end = _skip_space_back(data, last - 1)  # its "]"
    if end <= start or data[end] != ord("]") or _skip_space_back(data, end - 1) == start:
        return None  # not this layout, or an empty list: read_document (and its checks)
    again = re.compile(rb'"' + name + rb'"\s*:').search(data, start)
    if again or (data.find(b"\\", start) >= 0 and _ESCAPED_KEY.search(data, start)):
        return None  # the key again (or a key with escapes, which might spell it)
    try:
        # The document with a marker in place of the list: it must be a mapping whose
        # value for ``key`` is the marker (not a later duplicate key, not inside a string).
        outline = orjson.loads(data[:start] + b'"\\u0000list"' + data[end + 1 :])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(outline, dict) or outline.get(key) != "\x00list":
        return None
    cuts = [start]
    at = data.find(element, start + 1, end)
    while at >= 0:
        comma = _skip_space_back(data, at - 1)
        if data[comma] == ord(","):
            cuts.append(comma)
        at = data.find(element, at + len(element), end)
    cuts.append(end)
    return _json_pieces(memoryview(data), cuts, whole, parse)


# A key with a \u escape in it (the last escape, the rest of the key, the colon): only a
# key is followed by a colon in valid JSON.
_ESCAPED_KEY = re.compile(rb'\\u[0-9a-fA-F]{4}[^"\\]*"\s*:')
_JSON_SPACE = b" \t\r\n"


def _json_pieces(
    data: memoryview,
    cuts: list[int],
    whole: Callable[[], list[Any]],
    parse: Callable[[memoryview], Any],
) -> Iterator[Any]:
    for index in range(len(cuts) - 1):
        try:
            with gc_paused():
                item = parse(data[cuts[index] + 1 : cuts[index + 1]])
        except JSON_REFUSED:
            break
        yield item
        del item
    else:
        return
    del data
    # A piece that is not a JSON value: the whole document decides (and names any error).
    items = whole()
    for rest in range(index, len(items)):
        item, items[rest] = items[rest], None
        yield item
        del item


def _skip_space_back(data: bytes, at: int) -> int:
    """The position of the last byte at or before ``at`` that is not JSON whitespace."""
    while at >= 0 and data[at] in _JSON_SPACE:
        at -= 1
    return at


_FILE_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_input(path: str | Path) -> bytes:
    """The bytes of an input file, which must be a regular file within the size limit.

    A FIFO would block forever, ``/dev/zero`` would fill the memory, a directory or a
    symbolic-link loop would raise deep inside; each is refused here, naming the file.

    Raises
    ------
    InputError
        Missing, a directory, not a regular file, a link loop, unreadable, or larger than
        ``AGENTICLENS_FRAMES_MAX_INPUT_BYTES`` (default 2 GiB).

    Examples
    --------
    >>> read_input("/dev/zero")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: /dev/zero: is a character device, not a regular \
file (give the path of a file)
    >>> read_input("data/support")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: data/support: is a directory, not a file (give the \
path of a file, such as data/support/manifest.yaml, data/support/suite.yaml)
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        # Python does not expand "~" (a shell does): say so, with the path it would be.
        hint = (
            f"'~' is not expanded here: pass {path.expanduser()}"
            if str(path).startswith("~")
            else "check the path"
        )
        raise InputError("file not found", file=path, hint=hint) from None
    except OSError as exc:
        reason = "a loop of symbolic links" if exc.errno == errno.ELOOP else exc.strerror
        raise InputError(f"cannot read the file: {reason or exc}", file=path) from None
    except ValueError as exc:  # an embedded NUL in the name
        raise InputError(f"not a usable file name ({exc})", file=path) from None
    if stat.S_ISDIR(info.st_mode):
        # load_experiment("data/support", ...): name the files it could have meant.
        try:
            inside = sorted(
                p.name
                for p in path.iterdir()
                if p.suffix.lower() in (".yaml", ".yml", ".json") and p.is_file()
            )
        except OSError:
            inside = []
        shown = ", ".join(str(path / name) for name in inside[:5])
        raise InputError(
            "is a directory, not a file",
            file=path,
            hint=f"give the path of a file, such as {shown}"
            if inside
            else "give the path of a file",
        )
    for test, kind in _FILE_KINDS:
        if test(info.st_mode):
            raise InputError(
                f"is {kind}, not a regular file", file=path, hint="give the path of a file"
            )
    most = int(limit(MAX_INPUT_BYTES_ENV))
    if info.st_size > most:
        raise _too_large(path, info.st_size, most)
    try:
        with open(path, "rb") as handle:
            data = handle.read(most + 1)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", file=path) from None
    if len(data) > most:  # grew while we read it (or /proc-like files reporting size 0)
        raise _too_large(path, len(data), most)
    return data


def _too_large(path: Path, size: int, most: int) -> InputError:
    return InputError(
        f"is {size:,} bytes, over the limit of {most:,} bytes for an input file",
        file=path,
        hint=f"set {MAX_INPUT_BYTES_ENV} to a larger number of bytes if the file is right",
    )


def _parse_json(text: str, path: Path) -> Any:
    # loads_json parses recorded-trial files 2-3x faster; anything it refuses (NaN
    # constants, numbers beyond a float, bad syntax) goes through the standard parser,
    # whose values and error messages are the reference.
    try:
        return loads_json(text)
    except JSON_REFUSED:
        pass
    try:
        # The standard parser accepts lone surrogate escapes ("\ud800"), which no UTF-8
        # output (report, parquet, journal) can hold: they become U+FFFD here.
        return loads_scrubbed(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg}", file=path, location=f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", file=path) from None


_SURROGATE = re.compile("[\ud800-\udfff]")
# Where a document decoded from UTF-8 can hold a lone surrogate after parsing: only a
# \uD800-\uDFFF escape (any case); strict UTF-8 decoding never yields one itself.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def loads_scrubbed(text: str) -> Any:
    r"""``json.loads(text)`` with every lone surrogate in its strings replaced by U+FFFD.

    The same value as ``scrub_surrogates(json.loads(text))`` for a ``text`` decoded
    (strictly) from UTF-8, as every caller's is. Walking every string of the parsed value
    was most of the time of reading a large report (4.6 of 6 s for 100 MB); it is skipped
    when the text holds no surrogate escape, which one scan of the text (0.1 s) tells.

    Raises
    ------
    json.JSONDecodeError, RecursionError
        As :func:`json.loads`.

    Examples
    --------
    >>> loads_scrubbed('{"a": "x\\ud800", "b": "\\u00e9"}') == {"a": "x\ufffd", "b": "\u00e9"}
    True
    >>> loads_scrubbed('["\\uD83D\\uDE00"]')  # a pair is one character, kept
    ['\U0001f600']
    """
    value = json.loads(text)
    return scrub_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def scrub_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD.

    Examples
    --------
    >>> scrub_surrogates({"a" + chr(0xD800): ["x" + chr(0xDFFF), 1]}) == {"a\ufffd": ["x\ufffd", 1]}
    True
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_surrogates(v) for v in value]
    if isinstance(value, tuple):
        return tuple(scrub_surrogates(v) for v in value)
    return value


# An anchor (``&name``) where YAML allows one: only then can aliases expand anything.
_ANCHOR = re.compile(r"(?:^|[\s\[{,:?-])&[^\s\[\]{},]", re.MULTILINE)


def _load_yaml(text: str, path: Path) -> Any:
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text and _ANCHOR.search(text):
            _check_expansion(node, path)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: Any, path: Path) -> None:
    """Refuse a document whose aliases expand it past the node limit, or into itself.

    Aliases are shared nodes in the composed graph; counting each node once per path that
    reaches it gives the size the document stands for (a billion-laughs file: 10**9).
    """
    most = limit(MAX_YAML_NODES_ENV)
    sizes: dict[int, float] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            value = node.value if isinstance(node.value, list) else []
            total = 1.0
            for item in value:
                for child in item if isinstance(item, tuple) else (item,):
                    total += sizes[id(child)]
            sizes[key] = total
            if total > most:
                raise InputError(
                    f"aliases expand this YAML document to more than {int(most):,} nodes",
                    file=path,
                    location=f"line {node.start_mark.line + 1}",
                    hint=f"write the values out, or set {MAX_YAML_NODES_ENV} higher if "
                    "the file is right",
                )
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise InputError(
                "a YAML alias refers to a node that contains it (a recursive document)",
                file=path,
                location=f"line {node.start_mark.line + 1}",
            )
        on_path.add(key)
        stack.append((node, True))
        if isinstance(node.value, list):
            for item in node.value:
                for child in item if isinstance(item, tuple) else (item,):
                    if id(child) not in sizes:
                        stack.append((child, False))


#: YAML documents of this many characters or more are parsed in a forked process.
_YAML_APART_CHARS = 1 << 20
_NOT_APART: Any = object()


def _parse_yaml_apart(text: str, path: Path) -> Any:
    """:func:`_parse_yaml` in a forked process, the document sent back pickled; or
    ``_NOT_APART`` for a small document, where forking is off (see :mod:`.._fork`) or
    the document is bad (the caller then parses it here, raising its error).

    libyaml's node graph takes about thirty times the text's size, and the parsed values
    are the nodes' own strings: while the document lives, the memory around them cannot
    be given back. A 4 MB suite left 130 MB behind for the whole run, in every forked
    worker's count too; unpickled here, the same document takes its own size.
    """
    from agenticlens_frames._fork import run_tasks, worker_count

    if len(text) < _YAML_APART_CHARS or worker_count(2, size=len(text), threshold=0) < 2:
        return _NOT_APART

    def parse() -> tuple[bool, Any]:
        try:
            return True, _parse_yaml(text, path)
        except Exception:  # said by the parse here, with the same message
            return False, None

    try:
        _, (parsed, document) = run_tasks([lambda: (False, None), parse], 2)
    except Exception:  # the process could not be made or did not answer: parse here
        return _NOT_APART
    return document if parsed else _NOT_APART


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        return _load_yaml(text, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        location = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = exc.problem or exc.context or "syntax error"
        if exc.context and exc.problem:
            # PyYAML words some errors as "<context> but <problem>".
            if exc.problem.startswith("but "):
                problem = f"{exc.context}, {exc.problem}"
            else:
                problem = f"{problem} ({exc.context})"
        raise InputError(f"invalid YAML: {problem}", file=path, location=location) from None
    except yaml.reader.ReaderError as exc:
        # Raised for characters YAML forbids; it knows a character offset, not a line.
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise InputError(
            f"invalid YAML: unacceptable character #x{exc.character:04x}: {exc.reason}"
            if isinstance(exc.character, int)
            else f"invalid YAML: {exc.reason}",
            file=path,
            location=f"line {line}, column {column}",
        ) from None
    except yaml.YAMLError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"invalid YAML: {first_line}", file=path) from None
    except RecursionError:
        raise InputError("invalid YAML: nested too deeply", file=path) from None
    except InputError:
        raise  # already said (the alias limits): not the date case below, a ValueError too
    except (ValueError, OverflowError) as exc:
        # PyYAML resolves a scalar shaped like a date or timestamp to one, then builds it:
        # an impossible one (2026-02-30) fails there, outside its own errors, unplaced.
        raise InputError(
            f"invalid YAML: a value written as a date or timestamp is not one ({exc}); "
            "quote it to keep it as text",
            file=path,
        ) from None


# --------------------------------------------------------------------------- value checks


class Invalid(Exception):
    """A value failed a check.

    ``at`` is the place of the offending part *inside* the value (a list index, a key);
    ``quote`` marks a scalar that should have been written as a string.
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        at: tuple[str | int, ...] = (),
        quote: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.at = at
        self.quote = quote

    def inside(self, *parts: str | int) -> Invalid:
        """The same problem, one level further out (``parts`` prepended to ``at``)."""
        self.at = (*parts, *self.at)
        return self


def describe(value: Any) -> str:
    """Name a parsed value the way a user would recognise it in the file.

    Examples
    --------
    >>> describe(2), describe(2026.1), describe(True), describe(None), describe([1])
    ('2', '2026.1', 'true', 'null', 'a list')
    >>> describe("x"), describe({"a": 1})
    ("'x'", 'a mapping')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return repr(shown)
    if isinstance(value, datetime):
        return f"the timestamp {value.isoformat()}"
    if isinstance(value, date):
        return f"the date {value.isoformat()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def convert_checked(value: Any, kind: Any, *, dec_hook: Any = None) -> Any:
    """``msgspec.convert(value, kind)``; a value that does not fit is :class:`Invalid`
    at its place inside ``value``.

    For this package's own saved forms (typed by their dataclasses or structs), where
    msgspec's wording ("expected int, got str") is precise enough.

    Examples
    --------
    >>> convert_checked([[1], [2, "x"]], list[list[int]])
    Traceback (most recent call last):
    ...
    agenticlens_frames.formats._io.Invalid: expected int, got str
    >>> try:
    ...     convert_checked([[1], [2, "x"]], list[list[int]])
    ... except Invalid as problem:
    ...     problem.at
    (1, 1)
    """
    try:
        return msgspec.convert(value, kind, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        # msgspec says "Expected `int`, got `str` - at `$.variants[0].id`".
        text, _, path = str(exc).partition(" - at `$")
        message = text.replace("`", "")
        raise Invalid(message[:1].lower() + message[1:], at=_msgspec_place(path)) from None


def _msgspec_place(path: str) -> tuple[str | int, ...]:
    """``.checks[2][5]`` as ``("checks", 2, 5)``; a mapping's key, which msgspec shows
    as ``[...]``, is left out (the place is then the mapping)."""
    parts: list[str | int] = []
    for piece in path.rstrip("`").replace("[...]", "").replace("[", ".[").split("."):
        if piece.startswith("[") and piece.endswith("]"):
            parts.append(int(piece[1:-1]))
        elif piece:
            parts.append(piece)
    return tuple(parts)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (bool, int, float, date))


def to_str(value: Any, *, nonempty: bool = False) -> str:
    """A string, as written (pydantic does not turn numbers into strings either)."""
    if type(value) is str or isinstance(value, str):
        if nonempty and not value:
            raise Invalid("must not be empty")
        return value
    raise Invalid(f"expected a string, got {describe(value)}", quote=_is_scalar(value))


_INT_TEXT = re.compile(r"\s*[+-]?\d+(?:_\d+)*(?:\.0+)?\s*")


def _bound_text(minimum: float | None, gt: float | None, ge: float | None, le: float | None) -> str:
    parts = []
    if minimum is not None:
        parts.append(f">= {minimum:g}")
    if gt is not None:
        parts.append(f"> {gt:g}")
    if ge is not None:
        parts.append(f">= {ge:g}")
    if le is not None:
        parts.append(f"<= {le:g}")
    return " and ".join(parts)


def to_int(value: Any, *, minimum: int | None = None) -> int:
    """An integer; also accepts integral floats (``5.0``) and integer strings (``"5"``).

    Booleans are refused although pydantic reads ``true`` as 1: it is never what was meant.
    """
    what = "an integer" + (f" >= {minimum}" if minimum is not None else "")
    if type(value) is int:
        number = value
    elif isinstance(value, bool):
        raise Invalid(f"expected {what}, got {describe(value)}")
    elif isinstance(value, int) or (
        # pydantic takes integral floats only within the 64-bit range.
        isinstance(value, float) and value.is_integer() and -(2.0**63) <= value < 2.0**63
    ):
        number = int(value)
    elif isinstance(value, str) and _INT_TEXT.fullmatch(value):
        number = int(value.strip().split(".")[0])
    else:
        raise Invalid(f"expected {what}, got {describe(value)}")
    if minimum is not None and number < minimum:
        raise Invalid(f"expected {what}, got {describe(value)}")
    return number


def to_float(
    value: Any,
    *,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
) -> float:
    """A finite number as a float; also accepts numeric strings (``"1.5"``), like pydantic.

    Booleans and non-finite numbers (``.inf``, ``NaN``) are refused.
    """
    bounds = _bound_text(None, gt, ge, le)
    what = "a number" + (f" {bounds}" if bounds else "")
    if type(value) is float:
        number = value
    elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise Invalid(f"expected {what}, got {describe(value)}")
    elif isinstance(value, str):
        number = _float_from_text(value, what)
    else:
        try:
            number = float(value)
        except OverflowError:
            raise Invalid(f"expected {what}, got a number too large for a float") from None
    if not math.isfinite(number):
        raise Invalid(f"expected {what}, got {describe(value)}", hint="use a finite number")
    if (
        (gt is not None and not number > gt)
        or (ge is not None and not number >= ge)
        or (le is not None and not number <= le)
    ):
        raise Invalid(f"expected {what}, got {describe(value)}")
    return number


def _float_from_text(text: str, what: str) -> float:
    # float() also reads non-ASCII digits, which pydantic refuses; stay with ASCII.
    if text.isascii():
        try:
            return float(text)
        except ValueError:
            pass
    raise Invalid(f"expected {what}, got {describe(text)}")


_TRUE_TEXT = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE_TEXT = frozenset({"0", "off", "f", "false", "n", "no"})


def to_bool(value: Any) -> bool:
    """A boolean; also accepts 0/1 and the strings pydantic reads as booleans (``"yes"``)."""
    if value is True or value is False:
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in _TRUE_TEXT:
            return True
        if lowered in _FALSE_TEXT:
            return False
    raise Invalid(f"expected true or false, got {describe(value)}")


def to_list(value: Any) -> list[Any]:
    """A list (not converted element-wise)."""
    if isinstance(value, list):
        return value
    raise Invalid(f"expected a list, got {describe(value)}")


def to_str_list(value: Any, *, nonempty_items: bool = False) -> tuple[str, ...]:
    """A list of strings, as a tuple."""
    items = to_list(value)
    for index, item in enumerate(items):
        if type(item) is not str:
            try:
                to_str(item)
            except Invalid as exc:
                raise exc.inside(index) from None
        elif nonempty_items and not item:
            raise Invalid("must not be empty", at=(index,))
    return tuple(items)


def to_mapping(value: Any) -> dict[str, Any]:
    """A mapping with string keys (values unchecked)."""
    if not isinstance(value, dict):
        raise Invalid(f"expected a mapping, got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise Invalid(
                f"keys must be strings, got the key {describe(key)}",
                hint=f'quote the key: "{key}"',
            )
    return value


def to_str_map(value: Any) -> dict[str, str]:
    """A mapping of strings to strings, in insertion order."""
    mapping = to_mapping(value)
    for key, item in mapping.items():
        if type(item) is not str:
            try:
                to_str(item)
            except Invalid as exc:
                raise exc.inside(key) from None
    return dict(mapping)


# --------------------------------------------------------------------------- errors in place


class Source:
    """A document being validated: turns problems into errors that name the file and place.

    Each problem is raised at once, unless inside :meth:`collecting`.

    Parameters
    ----------
    path
        The file, as it should be shown to the user.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._as_written: Any = None  # the document as written, for hints (_raw_scalar)
        # While collecting: the problems listed so far, how many more there were, and the
        # keys an unknown key was taken for a misspelling of (by location).
        self._problems: list[InputError] | None = None
        self._unlisted = 0
        self._suggested: set[tuple[tuple[str | int, ...], str]] = set()

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """Within the block, every problem :meth:`take`, :meth:`check_keys`,
        :meth:`report` and :meth:`refuse` find is recorded and loading goes on; at its end
        they are raised as one :class:`~agenticlens_frames.errors.InputError` (see
        ``InputError.of_all``): the problem itself when there is one, so a file with one
        problem gives the error it gave when loading stopped at the first.

        The values refused are :data:`FAILED`; rules that need them skip them. An
        InputError raised inside the block (a problem loading could not go past) is the
        last problem.

        Examples
        --------
        >>> source = Source("m.yaml")
        >>> with source.collecting():
        ...     source.check_keys({"trials": 2, "seed": 1}, ["trial_count", "random_seed"], ())
        ...     name = source.take({"name": 2}, "name", (), to_str)
        ...     version = source.take({"name": 2}, "version", (), to_str)
        Traceback (most recent call last):
        ...
        agenticlens_frames.errors.InputError: m.yaml: 4 problems:
          m.yaml: unknown key 'trials' (did you mean 'trial_count'?)
          m.yaml: unknown key 'seed' (did you mean 'random_seed'?)
          m.yaml: name: expected a string, got 2 (quote it so that YAML reads it as text)
          m.yaml: missing required key 'version'
        """
        self._problems, self._unlisted = [], 0
        cause: Exception | None = None
        try:
            yield
        except InputError as error:
            self._problem(error)
        except Exception as error:
            # A rule ran on a value an earlier problem left invalid (a dependent check that
            # was not skipped): those problems are what the user must fix, and the failure
            # stays attached as their cause. Without a problem, it is a bug: raised as it is.
            if not self._problems:
                raise
            cause = error
        finally:
            problems, unlisted = self._problems, self._unlisted
            self._problems, self._unlisted = None, 0
            self._suggested.clear()
        if problems:
            raise InputError.of_all(problems, unlisted) from cause

    @property
    def found(self) -> int:
        """How many problems were found so far while collecting (listed or not)."""
        return 0 if self._problems is None else len(self._problems) + self._unlisted

    def counted(self, number: int) -> bool:
        """Count ``number`` more problems without finding them again, if they would not be
        listed anyway (collecting, the list full); whether it did. For a slow check whose
        outcome is known (a JSON schema repeated across thousands of cases)."""
        if self._problems is None or len(self._problems) < MOST_LISTED:
            return False
        self._unlisted += number
        return True

    def _problem(self, error: InputError) -> None:
        """Raise ``error``, or while collecting record it."""
        if self._problems is None:
            raise error from None
        if len(self._problems) < MOST_LISTED:
            self._problems.append(error)
        else:
            self._unlisted += 1

    def error(
        self, location: tuple[str | int, ...], message: str, hint: str | None = None
    ) -> InputError:
        """An error at ``location``."""
        return InputError(message, file=self.path, location=location, hint=hint)

    def fail(
        self, location: tuple[str | int, ...], message: str, hint: str | None = None
    ) -> NoReturn:
        """Raise :meth:`error`, even while collecting: for a problem loading cannot go past."""
        raise self.error(location, message, hint)

    def report(
        self, location: tuple[str | int, ...], message: str, hint: str | None = None
    ) -> None:
        """Raise :meth:`error`, or while collecting record it and return."""
        self._problem(self.error(location, message, hint))

    def misspelt(self, location: tuple[str | int, ...], key: str) -> bool:
        """Whether, while collecting, an unknown key in the mapping at ``location`` was
        taken for a misspelling of ``key`` (which the mapping lacks): a rule about ``key``
        there would say the same problem again."""
        return (location, key) in self._suggested

    def report_missing(self, location: tuple[str | int, ...], key: str) -> None:
        """:meth:`report` that the mapping at ``location`` lacks the required ``key``, unless
        it is :meth:`misspelt` there."""
        if not self.misspelt(location, key):
            self.report(location, f"missing required key {key!r}")

    def invalid(self, location: tuple[str | int, ...], problem: Invalid) -> InputError:
        """The error for ``problem`` found in the value at ``location``."""
        where = (*location, *problem.at)
        hint = problem.hint
        if problem.quote and hint is None:
            hint = self._quote_hint(where)
        return InputError(problem.message, file=self.path, location=where, hint=hint)

    def refuse(self, location: tuple[str | int, ...], problem: Invalid) -> Any:
        """Raise :meth:`invalid`, or while collecting record it and return :data:`FAILED`."""
        self._problem(self.invalid(location, problem))
        return FAILED

    def take(
        self,
        mapping: dict[Any, Any],
        key: str,
        location: tuple[str | int, ...],
        convert: Callable[[Any], Any],
        default: Any = REQUIRED,
    ) -> Any:
        """``convert(mapping[key])``, or ``default`` when the key is absent.

        A key that is present with a null value is *not* absent: it goes through
        ``convert``, which refuses it unless the field is nullable (as pydantic does).
        While collecting, a refused or missing value is :data:`FAILED`.
        """
        if key not in mapping:
            if default is REQUIRED:
                self.report_missing(location, key)
                return FAILED
            return default
        value = mapping[key]
        try:
            return convert(value)
        except Invalid as exc:
            if value is None and default is not REQUIRED and exc.hint is None:
                exc.hint = "remove the key to use the default"
            problem = exc
        return self.refuse((*location, key), problem)

    def check_keys(
        self, mapping: dict[Any, Any], allowed: Collection[str], location: tuple[str | int, ...]
    ) -> None:
        """Refuse keys outside ``allowed``, suggesting the closest allowed one."""
        if len(mapping) <= len(allowed) and all(key in allowed for key in mapping):
            return
        for key in mapping:
            if key not in allowed:
                match = close_match(key, allowed)
                if self._problems is not None and match and match not in mapping:
                    self._suggested.add((location, match))
                hint = (
                    f"did you mean {match!r}?"
                    if match
                    else "remove it; the known keys are " + ", ".join(allowed)
                )
                self.report(location, f"unknown key {key!r}", hint)

    def _quote_hint(self, where: tuple[str | int, ...]) -> str:
        key = next((part for part in reversed(where) if isinstance(part, str)), None)
        raw = self._raw_scalar(where)
        if is_json_path(self.path):
            return f'write it as a JSON string: "{raw}"' if raw else "write it as a JSON string"
        if raw is None:
            return "quote it so that YAML reads it as text"
        prefix = f"{key}: " if isinstance(where[-1], str) and key else ""
        return f'quote it: {prefix}"{raw}"'

    def _raw_scalar(self, where: tuple[str | int, ...]) -> str | None:
        """The scalar at ``where`` as written in the file (``2026.10``, not ``2026.1``)."""
        try:
            if self._as_written is None:
                # Kept: a file with many problems is read once for all their hints.
                text = self.path.read_text(encoding="utf-8-sig")
                json_file = is_json_path(self.path)
                self._as_written = (
                    json.loads(text) if json_file else yaml.compose(text, Loader=_YAML_LOADER)
                )
            node: Any = self._as_written
            if is_json_path(self.path):
                for part in where:
                    node = node[part]
                return json.dumps(node) if not isinstance(node, (dict, list)) else None
            for part in where:
                node = _yaml_child(node, part)
            return node.value if isinstance(node, yaml.ScalarNode) else None
        except Exception:
            # Only used to word a hint; the error itself is already known.
            return None


def read_top_mapping(
    path: Path, fields: str, kind: str, own_key: str, other_kind: str, other_key: str
) -> tuple[Source, dict[str, Any]]:
    """Read a manifest or a suite: the document and its :class:`Source`, refusing a top
    level that is not a mapping, or that is the other kind of file (given in swapped order).

    The manifest and the suite are opened the same way, so the two are checked in one place
    and their messages stay alike. ``fields`` words the mapping ("manifest"), ``kind`` and
    ``other_kind`` name the two files, ``own_key`` and ``other_key`` are the key only each
    of them has.
    """
    source = Source(path)
    document = read_document(path)
    if not isinstance(document, dict):
        source.fail(
            (), f"expected a mapping of {fields} fields at the top level, got {describe(document)}"
        )
    if other_key in document and own_key not in document:
        source.fail(
            (),
            f"this is an {other_kind} (it has {other_key!r}), not an {kind}",
            # Said to both callers: the command line and load_experiment / run_experiment.
            "give the manifest first and the suite second: experiment run MANIFEST SUITE, "
            "load_experiment(manifest_path, suite_path)",
        )
    return source, document


def _yaml_child(node: Any, part: str | int) -> Any:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(part):
                return value_node
        raise KeyError(part)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int):
        return node.value[part]
    raise KeyError(part)
