"""Evaluation suites: load and validate an agentic-evals ``TestSuite`` file (spec §5).

Same fields, defaults and rules as agentic-evals 0.9, plus checks it makes only while
running (or never): unknown keys are refused with a suggestion, a case naming an evaluator
that is not registered is refused, and ``output_json_schema`` is checked here (deliberate
fix B8) instead of failing every trial.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from agenticlens_frames._suggest import close_match
from agenticlens_frames.errors import InputError, check_path, is_recursion
from agenticlens_frames.formats._io import (
    FAILED,
    Invalid,
    Source,
    describe,
    gc_paused,
    read_input,
    read_top_mapping,
    to_bool,
    to_float,
    to_int,
    to_list,
    to_mapping,
    to_str,
    to_str_list,
    valid,
)
from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef, SuiteSpec

from .._deprecate import keyword_hints

__all__ = [
    "JSON_SCHEMA_DIALECT",
    "load_suite",
    "read_for_memo",
    "remember",
    "suite_memo",
    "with_suite_problems",
]

#: The only JSON Schema dialect ``output_json_schema`` may declare (a trailing ``#`` is
#: accepted too).
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_SUITE_KEYS = dict.fromkeys(("name", "version", "description", "cases", "metadata"))
_EVALUATOR_KEYS = dict.fromkeys(("name", "threshold", "required", "config"))
_NO_EVALUATORS: tuple[EvaluatorRef, ...] = ()


def _optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def optional(value: Any) -> Any:
        return None if value is None else convert(value)

    return optional


def _keep(value: Any) -> Any:
    return value


def _tool_argument_names(value: Any) -> dict[str, tuple[str, ...]]:
    mapping = to_mapping(value)
    result = {}
    for tool, names in mapping.items():
        try:
            result[tool] = to_str_list(names)
        except Invalid as exc:
            raise exc.inside(tool) from None
    return result


def _tool_argument_values(value: Any) -> dict[str, dict[str, Any]]:
    mapping = to_mapping(value)
    for tool, arguments in mapping.items():
        try:
            to_mapping(arguments)
        except Invalid as exc:
            raise exc.inside(tool) from None
    return dict(mapping)


# Case fields in agentic-evals' declaration order (the order errors are looked for), each
# with its converter. ``evaluators`` is handled apart: it needs the place of each entry.
_CASE_FIELDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("id", partial(to_str, nonempty=True)),
    ("name", to_str),
    ("input", _keep),
    ("expected_output", _optional(to_str)),
    ("expected_contains", to_str_list),
    ("output_json_schema", _optional(to_mapping)),
    ("required_output_fields", to_str_list),
    ("required_tools", to_str_list),
    ("forbidden_tools", to_str_list),
    ("required_tool_arguments", _tool_argument_names),
    ("expected_tool_arguments", _tool_argument_values),
    ("required_tool_order", to_str_list),
    ("max_latency_ms", _optional(partial(to_float, gt=0))),
    ("max_cost_usd", _optional(partial(to_float, ge=0))),
    ("max_turns", _optional(partial(to_int, minimum=1))),
    ("evaluators", _keep),
    ("tags", to_str_list),
    ("metadata", to_mapping),
)
_CASE_KEYS = dict.fromkeys(name for name, _ in _CASE_FIELDS)
# The fields of which a case needs at least one (agentic-evals' rule). None/empty = unset.
#: The case fields that count as an expectation (a case needs at least one).
EXPECTATION_KEYS = _EXPECTATIONS = (
    "expected_output",
    "expected_contains",
    "output_json_schema",
    "required_output_fields",
    "required_tools",
    "forbidden_tools",
    "required_tool_arguments",
    "expected_tool_arguments",
    "required_tool_order",
    "max_latency_ms",
    "max_cost_usd",
    "max_turns",
    "evaluators",
)
# These count when not None (so "" and {} count); the others when non-empty.
_SET_WHEN_NOT_NONE = frozenset(
    {"expected_output", "output_json_schema", "max_latency_ms", "max_cost_usd", "max_turns"}
)


def with_suite_problems(
    error: InputError, path: str | Path, *, known_evaluators: Collection[str] = ()
) -> InputError:
    """``error`` (the manifest's, read first) and the problems of the suite at ``path``, in
    one error naming each file: a user fixing the manifest should not meet the suite's
    only on the next run. ``error`` itself when the suite has none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "suite.yaml").write_text("name: s\\nversion: 1\\ncases: []\\n")
    >>> bad = InputError("unknown key 'trials'", file=folder / "manifest.yaml")
    >>> print(with_suite_problems(bad, folder / "suite.yaml"))  # doctest: +ELLIPSIS
    3 problems:
      .../manifest.yaml: unknown key 'trials'
      .../suite.yaml: version: expected a string, got 1 (quote it: version: "1")
      .../suite.yaml: cases: test suite must contain at least one case
    >>> with_suite_problems(bad, "data/support/suite.yaml") is bad
    True
    """
    try:
        load_suite(path, known_evaluators=known_evaluators)
    except InputError as suite_error:
        return InputError(
            error.message,
            location=error.location,
            hint=error.hint,
            problems=[*(error.problems or [error]), *(suite_error.problems or [suite_error])],
            unlisted=error.unlisted + suite_error.unlisted,
        )
    return error


@keyword_hints
def load_suite(path: str | Path, *, known_evaluators: Collection[str] = ()) -> SuiteSpec:
    """Load and validate an evaluation suite.

    Parameters
    ----------
    path
        The suite file: JSON if its extension is ``.json`` (any case), else YAML.
    known_evaluators
        Names of the registered evaluators a case may list under ``evaluators``. A case
        naming any other evaluator is refused.

    Returns
    -------
    SuiteSpec
        With one :class:`~agenticlens_frames.formats.model.CaseSpec` per case, in file
        order (``CaseSpec.index`` is the position).

    Raises
    ------
    InputError
        Naming the file, the place (``cases[3].max_turns``) and, where useful, a fix: for
        unknown keys, wrong types, a case without expectations, duplicate case ids, an
        unregistered evaluator, or an ``output_json_schema`` that is not a valid Draft
        2020-12 schema or refers outside itself. A suite with several problems gets one
        error listing each (the first 20, and how many more; see
        ``InputError.problems``); a rule whose fields are wrong is not checked.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "suite.yaml").write_text(
    ...     'name: demo\\nversion: "1"\\n'
    ...     "cases:\\n  - {id: c1, name: Greets, expected_contains: [hello]}\\n"
    ... )
    >>> suite = load_suite(folder / "suite.yaml")
    >>> suite.case_ids, suite.cases[0].expected_contains
    (('c1',), ('hello',))
    >>> _ = (folder / "typo.yaml").write_text(
    ...     'name: demo\\nversion: "1"\\ncases:\\n  - {id: c1, name: x, required_tool: [a]}\\n'
    ... )
    >>> load_suite(folder / "typo.yaml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: .../typo.yaml: cases[0]: unknown key \
'required_tool' (did you mean 'required_tools'?)
    """
    path = check_path(path, "an evaluation suite")
    memo = _MEMO.get()
    key = None if memo is None else _memo_key(path, known_evaluators)
    if key is not None and key in memo:  # type: ignore[operator]
        return memo[key]  # type: ignore[index]
    with gc_paused():
        suite = _load(path, known_evaluators)
    if key is not None:
        memo[key] = suite  # type: ignore[index]
    return suite


_MemoKey = tuple[str, bytes, frozenset[str]]

#: Suites read inside :func:`suite_memo`, by the path as given, the file's bytes and the
#: evaluators a case may name; None outside it. The bytes decide, not the file's time
#: stamp: a file rewritten with other content is read again.
_MEMO: ContextVar[dict[_MemoKey, SuiteSpec] | None] = ContextVar("suite_memo", default=None)


@contextmanager
def suite_memo() -> Iterator[None]:
    """Within the block, :func:`load_suite` of a file it already read (same bytes, same
    evaluators) returns the suite read then.

    ``experiment run`` reads the suite for the comparisons' guard rails and then for the
    run; a 5 000-case suite takes a tenth of a second or more to read. Scoped to a block,
    not the process: outside it every call reads the file, so two callers never share one
    suite's mappings, and nothing is kept alive after the command.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> text = 'name: demo\\nversion: "1"\\ncases:\\n'
    >>> text += '  - {id: c1, name: x, expected_contains: [a]}\\n'
    >>> _ = (folder / "suite.yaml").write_text(text)
    >>> with suite_memo():
    ...     load_suite(folder / "suite.yaml") is load_suite(folder / "suite.yaml")
    True
    >>> load_suite(folder / "suite.yaml") is load_suite(folder / "suite.yaml")
    False
    """
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def read_for_memo(
    path: str | Path, *, known_evaluators: Collection[str] = ()
) -> tuple[_MemoKey | None, SuiteSpec]:
    """:func:`load_suite` of ``path`` outside any memo, with the key of the bytes it read:
    what :func:`remember` needs to give a :func:`suite_memo` of another process (a
    forked one read it) this suite. Raises as :func:`load_suite` does.

    Examples
    --------
    >>> key, suite = read_for_memo("data/support/suite.yaml")
    >>> with suite_memo():
    ...     remember(key, suite)
    ...     load_suite("data/support/suite.yaml") is suite
    True
    """
    path = Path(path)
    key = _memo_key(path, known_evaluators)
    with gc_paused():
        return key, _load(path, known_evaluators)


def remember(key: _MemoKey | None, suite: SuiteSpec) -> None:
    """Within :func:`suite_memo`, let :func:`load_suite` return ``suite`` for the file,
    bytes and evaluators of ``key`` (from :func:`read_for_memo`): a file whose bytes
    changed since is read again. Outside the block (or with no key), nothing happens."""
    memo = _MEMO.get()
    if memo is not None and key is not None:
        memo[key] = suite


def _memo_key(path: Path, known_evaluators: Collection[str]) -> _MemoKey | None:
    try:
        data = read_input(path)  # a regular file within the size limit, or an error
    except InputError:
        return None  # raised again, in its place, by _load
    digest = hashlib.blake2b(data, digest_size=32).digest()
    return str(path), digest, frozenset(known_evaluators)


def _load(path: Path, known_evaluators: Collection[str]) -> SuiteSpec:
    source, document = read_top_mapping(
        path, "suite", "evaluation suite", "cases", "experiment manifest", "variants"
    )
    with source.collecting():
        source.check_keys(document, _SUITE_KEYS, ())
        name = source.take(document, "name", (), to_str)
        version = source.take(document, "version", (), to_str)
        description = source.take(document, "description", (), to_str, "")
        raw_cases = source.take(document, "cases", (), to_list)
        cases = tuple(
            _case(source, raw, index)
            for index, raw in enumerate(raw_cases if valid(raw_cases) else ())
        )
        metadata = source.take(document, "metadata", (), to_mapping, {})
        # The suite's rules look at the cases whose id was read (their messages name it).
        _check_cases(
            source,
            [case for case in cases if valid(case) and valid(case.id)],
            frozenset(known_evaluators),
        )
        if valid(raw_cases) and not cases:
            source.report(("cases",), "test suite must contain at least one case")
    return SuiteSpec(
        path=path,
        name=name,
        version=version,
        cases=cases,
        description=description,
        metadata=metadata,
    )


def _check_cases(source: Source, cases: list[CaseSpec], known: frozenset[str]) -> None:
    """The rules across cases: unique ids, registered evaluators, valid JSON schemas."""
    first_index: dict[str, int] = {}
    for case in cases:
        if case.id in first_index:
            source.report(
                ("cases", case.index, "id"),
                "test case IDs must be unique",
                f"{case.id!r} is also the id of cases[{first_index[case.id]}]",
            )
        else:
            first_index[case.id] = case.index
    checked_schemas: dict[str, int] = {}
    for case in cases:
        for position, evaluator in enumerate(case.evaluators if valid(case.evaluators) else ()):
            if valid(evaluator) and valid(evaluator.name) and evaluator.name not in known:
                _unknown_evaluator(source, case, position, evaluator.name, known)
        if valid(case.output_json_schema) and case.output_json_schema is not None:
            _check_schema(source, case, checked_schemas)


def _case(source: Source, raw: Any, index: int) -> CaseSpec:
    """The case at ``cases[index]``; while collecting, :data:`FAILED` for one that is not
    a mapping, and FAILED in each field that was refused."""
    location: tuple[str | int, ...] = ("cases", index)
    if not isinstance(raw, dict):
        source.report(location, f"expected a case mapping, got {describe(raw)}")
        return FAILED
    source.check_keys(raw, _CASE_KEYS, location)
    values: dict[str, Any] = {}
    for key in ("id", "name"):
        if key not in raw:
            source.report_missing(location, key)
            values[key] = FAILED
    for key, convert in _CASE_FIELDS:
        if key in raw:
            value = raw[key]
            try:
                values[key] = convert(value)
            except Invalid as exc:
                if value is None and exc.hint is None:
                    # A case's id and name are required: removing them is no way out.
                    exc.hint = (
                        f"give the case its {key}"
                        if key in ("id", "name")
                        else "remove the key if the case has no such expectation"
                    )
                values[key] = source.refuse((*location, key), exc)
    if "evaluators" in values:
        values["evaluators"] = _evaluators(source, values["evaluators"], location)
    # A refused expectation (FAILED, which is not None and true) counts as one: the rule
    # would only repeat its problem; so does a misspelt one. Its message names the case
    # by its id, which must have been read.
    if valid(values["id"]) and not any(
        ((values.get(key) is not None) if key in _SET_WHEN_NOT_NONE else bool(values.get(key)))
        or source.misspelt(location, key)
        for key in _EXPECTATIONS
    ):
        source.report(
            location,
            "test case must define at least one expectation",
            f"case {values['id']!r}: add e.g. expected_output, expected_contains, "
            "required_tools or max_latency_ms",
        )
    return CaseSpec(index=index, **values)


def _evaluators(
    source: Source, value: Any, location: tuple[str | int, ...]
) -> tuple[EvaluatorRef, ...]:
    """The case's evaluator references; while collecting, :data:`FAILED` for a list that
    is not one, and in place of an entry that is not a mapping."""
    where = (*location, "evaluators")
    try:
        entries = to_list(value)
    except Invalid as exc:
        return source.refuse(where, exc)
    if not entries:
        return _NO_EVALUATORS
    refs = []
    for position, entry in enumerate(entries):
        at = (*where, position)
        if not isinstance(entry, dict):
            source.report(at, f"expected an evaluator mapping, got {describe(entry)}")
            refs.append(FAILED)
            continue
        source.check_keys(entry, _EVALUATOR_KEYS, at)
        refs.append(
            EvaluatorRef(
                name=source.take(entry, "name", at, partial(to_str, nonempty=True)),
                threshold=source.take(entry, "threshold", at, partial(to_float, ge=0, le=1), 1.0),
                required=source.take(entry, "required", at, to_bool, True),
                config=source.take(entry, "config", at, to_mapping, {}),
            )
        )
    return tuple(refs)


def _unknown_evaluator(
    source: Source, case: CaseSpec, position: int, name: str, known: frozenset[str]
) -> None:
    if known:
        match = close_match(name, sorted(known))
        hint = (f"did you mean {match!r}? " if match else "") + (
            "register it before loading the suite, or use one of: " + ", ".join(sorted(known))
        )
    else:
        hint = "no evaluators are registered; register it before loading the suite"
    source.report(
        ("cases", case.index, "evaluators", position, "name"),
        f"case {case.id!r} names evaluator {name!r}, which is not registered",
        hint,
    )


# --------------------------------------------------------------------------- JSON Schema

# Keywords whose values are data, not subschemas: a "$ref" key inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
# Keywords whose values map names to subschemas (the names themselves are not keywords).
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


def _check_schema(source: Source, case: CaseSpec, checked: dict[str, int]) -> None:
    """Refuse a case's ``output_json_schema`` that :func:`_schema_problems` finds wrong.

    Large suites tend to repeat one schema, and checking one is slow (~ms): ``checked``
    keeps how many problems each schema met so far has; a valid one is not checked again,
    a wrong one only while its problems are still listed (each names its case).
    """
    schema = case.output_json_schema
    assert schema is not None
    try:
        key = json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        key = None
    seen = None if key is None else checked.get(key)
    if seen == 0 or (seen is not None and source.counted(seen)):
        return
    before = source.found
    _schema_problems(source, case, schema)
    if key is not None:
        checked[key] = source.found - before


def _schema_problems(source: Source, case: CaseSpec, schema: dict[str, Any]) -> None:
    """Report a schema of another dialect, invalid, or with a ``$ref`` that does not
    resolve inside it or loops: the checks after the first problem (but the ``$ref``
    checks, one per reference) would judge a schema already known to be wrong."""
    where: tuple[str | int, ...] = ("cases", case.index, "output_json_schema")
    dialect = schema.get("$schema", JSON_SCHEMA_DIALECT)
    if dialect not in (JSON_SCHEMA_DIALECT, JSON_SCHEMA_DIALECT + "#"):
        source.report(
            (*where, "$schema"),
            f"case {case.id!r} declares the JSON Schema dialect {describe(dialect)}; only "
            "Draft 2020-12 is supported",
            f'set "$schema" to "{JSON_SCHEMA_DIALECT}" (and update the keywords) or remove it',
        )
        return
    # jsonschema is imported only for suites that use it (it adds to every start-up).
    from jsonschema import Draft202012Validator, SchemaError
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    try:
        with warnings.catch_warnings():
            # Checking a "pattern" compiles it with re, which warns "Possible nested set"
            # for a "[" in a set; scoring reads such a pattern as re does (as_re_reads).
            warnings.simplefilter("ignore", FutureWarning)
            Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        source.report(
            (*where, *exc.absolute_path),
            f"case {case.id!r} has an invalid JSON Schema: {exc.message}",
        )
        return
    resolver = Registry().resolver_with_root(DRAFT202012.create_resource(schema))
    resolved = True
    for place, ref, base in _references(schema, (), ""):
        target = urljoin(base, ref) if base else ref
        try:
            resolver.lookup(target)
        except Exception:
            inside = ref.startswith("#")
            resolved = False
            source.report(
                (*where, *place),
                f"case {case.id!r}: $ref {ref!r} "
                + (
                    "does not resolve inside the schema"
                    if inside
                    else "points outside the schema; remote references are not supported"
                ),
                None
                if inside
                else "copy the referenced schema under $defs and refer to it as '#/$defs/<name>'",
            )
    if resolved:
        _check_ref_loops(source, case, where, schema)


def _check_ref_loops(
    source: Source, case: CaseSpec, where: tuple[str | int, ...], schema: dict[str, Any]
) -> None:
    """Refuse a schema whose ``$ref`` chain reaches itself without consuming the output
    (``{"$ref": "#"}``): validating anything with it recurses without end."""
    from jsonschema import Draft202012Validator
    from referencing import Registry

    validator = Draft202012Validator(schema, registry=Registry())
    for probe in (None, {}, [], "", 0, {"a": {}}, [[]]):
        try:
            next(validator.iter_errors(probe), None)
        except BaseException as exc:
            if is_recursion(exc):
                source.report(
                    where,
                    f"case {case.id!r}: the JSON Schema's $ref references loop back to "
                    "themselves without consuming any part of the output",
                    "make every cycle of references pass through properties or items",
                )
                return
            if not isinstance(exc, Exception):
                raise
            return  # other problems surface when scoring, as failed checks


def _references(
    node: Any, place: tuple[str | int, ...], base: str
) -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """Every ``$ref`` in a schema: its place, its value and the base URI it resolves against."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _references(item, (*place, index), base)
        return
    if not isinstance(node, dict):
        return
    node_id = node.get("$id")
    if isinstance(node_id, str):
        base = urljoin(base, node_id) if base else node_id
    ref = node.get("$ref")
    if isinstance(ref, str):
        yield (*place, "$ref"), ref, base
    for key, value in node.items():
        if key in _DATA_KEYWORDS or key == "$ref":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, subschema in value.items():
                yield from _references(subschema, (*place, key, name), base)
        else:
            yield from _references(value, (*place, key), base)
