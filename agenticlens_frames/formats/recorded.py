"""Recorded-trials files: saved samples replayed by ``recorded`` variants (spec §7.1).

AgenticLens validates a recorded file only when a trial of its variant runs, and a bad
sample (unknown or repeated case id, non-string output, invalid trace) then fails every
trial of that variant. We refuse such a file at load time instead, naming the sample.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from agenticlens_frames._limits import MAX_MAGNITUDE
from agenticlens_frames._suggest import close_match
from agenticlens_frames.errors import InputError, check_path, format_location
from agenticlens_frames.formats._io import (
    MOST_LISTED,
    Source,
    describe,
    gc_paused,
    is_json_path,
    iter_json_list,
    loads_json,
    read_document,
)
from agenticlens_frames.formats._recorded_typed import (
    TypedTrial,
    decode_trial,
    run_latency_ms,
)
from agenticlens_frames.formats.model import RecordedTrials, SuiteSpec
from agenticlens_frames.formats.traces import (
    _RUN_KEYS,
    COST_SOURCES,
    Trace,
    normalize_trace_unhinted,
)

from .._deprecate import keyword_hints

__all__ = [
    "RecordedColumns",
    "TrialColumns",
    "iter_recorded_columns",
    "load_recorded",
    "load_recorded_columns",
    "with_every_problem",
]


@keyword_hints
def load_recorded(path: str | Path, suite: SuiteSpec, *, enrich: bool = False) -> RecordedTrials:
    """Load and validate a recorded-trials file against a suite.

    The file is JSON (``.json``) or YAML: a mapping with a non-empty ``trials`` list whose
    entries are ``{"samples": [...]}`` or bare lists of samples; other keys are ignored.
    Each sample needs a ``case_id`` naming a suite case (at most once per trial) and a
    string ``output``; its optional ``trace`` (absent means ``{}``) is validated and
    normalised by :func:`~agenticlens_frames.formats.traces.normalize_trace`.

    Parameters
    ----------
    path
        The recorded-trials file (usually a variant's ``resolved_target``).
    suite
        The suite the samples answer.
    enrich
        Passed to :func:`~agenticlens_frames.formats.traces.normalize_trace`: also build the
        namespaced ``agenticlens.*`` span attributes of Run-shaped traces.

    Returns
    -------
    RecordedTrials
        ``trials[i]`` holds trial *i + 1*'s samples as dicts ``{"case_id": str, "output":
        str, "trace": Trace}``: the trace is already normalised (a
        :class:`~agenticlens_frames.formats.traces.Trace`, not the raw mapping).

    Raises
    ------
    InputError
        For an unreadable file or any invalid entry, e.g.
        ``trials/v01.json: trials[3].samples[17].case_id: ...``.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from agenticlens_frames.formats.model import CaseSpec, SuiteSpec
    >>> suite = SuiteSpec(pathlib.Path("suite.yaml"), "demo", "1",
    ...                   (CaseSpec("c1", "Case 1", 0, expected_contains=("hi",)),))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "v1.json").write_text(json.dumps(
    ...     {"trials": [{"samples": [{"case_id": "c1", "output": "hi there"}]}]}))
    >>> recorded = load_recorded(folder / "v1.json", suite)
    >>> sample = recorded.trials[0][0]
    >>> sample["case_id"], sample["output"], sample["trace"].total_latency_ms
    ('c1', 'hi there', 0.0)
    """
    path = check_path(path, "a recorded-trials file")
    try:
        with gc_paused():
            return _load(path, suite, enrich)
    except InputError as error:
        every = with_every_problem(error, path, suite)
        if every is error:
            raise
        raise every from None


def _load(path: Path, suite: SuiteSpec, enrich: bool) -> RecordedTrials:
    source = Source(path)
    trials = _trials_list(source, read_document(path))
    case_ids = frozenset(suite.case_ids)
    loaded = []
    for index, entry in enumerate(trials):
        loaded.append(_trial(source, entry, index, case_ids, suite, enrich))
        # The parsed entry is done with: dropping it now keeps one copy of the samples in
        # memory (raw + normalised), not two, while a large file loads.
        trials[index] = None
    return RecordedTrials(path=path, trials=tuple(loaded))


def _trial(
    source: Source,
    entry: Any,
    index: int,
    case_ids: frozenset[str],
    suite: SuiteSpec,
    enrich: bool,
) -> tuple[dict[str, Any], ...]:
    items, where = _samples_of(source, entry, index)
    seen: dict[str, int] = {}
    return tuple(
        _sample(source, item, where, position, case_ids, seen, suite, enrich)
        for position, item in enumerate(items)
    )


def _samples_of(source: Source, entry: Any, index: int) -> tuple[list[Any], tuple[str | int, ...]]:
    """A trial entry's list of samples and where it is in the file; an entry that is
    neither a list nor a mapping with a ``samples`` list is refused."""
    if isinstance(entry, dict):
        items = entry.get("samples")
        where: tuple[str | int, ...] = ("trials", index, "samples")
    else:
        items = entry
        where = ("trials", index)
    if not isinstance(items, list):
        if isinstance(entry, dict) and "samples" in entry:
            source.fail(where, f"expected a list of samples, got {describe(items)}")
        # A mapping without 'samples' is named as such: "got a mapping" alone reads as
        # if a mapping were wrong, when only its 'samples' list is missing.
        got = "a mapping without 'samples'" if isinstance(entry, dict) else describe(entry)
        source.fail(
            ("trials", index),
            f"recorded trial {index + 1} must be a list of samples or a mapping with a "
            f"'samples' list, got {got}",
        )
    return items, where


def _sample(
    source: Source,
    item: Any,
    where: tuple[str | int, ...],
    position: int,
    case_ids: frozenset[str],
    seen: dict[str, int],
    suite: SuiteSpec,
    enrich: bool,
) -> dict[str, Any]:
    """One sample of a trial, checked (``seen``: the trial's case ids so far, updated)."""
    if type(item) is not dict and not isinstance(item, dict):
        source.fail((*where, position), f"expected a sample mapping, got {describe(item)}")
    case_id = item.get("case_id")
    if type(case_id) is not str or case_id not in case_ids or case_id in seen:
        _bad_case_id(source, (*where, position), item, case_id, seen, where, suite)
    seen[case_id] = position
    output = item.get("output")
    if type(output) is not str and not isinstance(output, str):
        _bad_output(source, (*where, position), item)
    trace = _sample_trace(source, item.get("trace", _NO_TRACE), (*where, position), enrich)
    return {"case_id": case_id, "output": output, "trace": trace}


def with_every_problem(first: InputError, path: Path, suite: SuiteSpec) -> InputError:
    """``first``, the problem that stopped reading a recorded file, with the file's other
    problems: at most 20 listed, a line each, then how many more (``InputError.of_all``).

    Reading stops at a file's first bad sample (the samples are checked as they are
    streamed into the tables); a file generated with a bug is usually wrong in many
    samples, and fixing them one run at a time is slow. So on this error path only, the
    file is read once more, whole and sample by sample, each sample checked alone. An
    error about something else than this file's entries, or a file whose only problem
    is ``first``, gives ``first`` itself (its text unchanged).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from agenticlens_frames.formats.model import CaseSpec, SuiteSpec
    >>> suite = SuiteSpec(pathlib.Path("suite.yaml"), "demo", "1", (CaseSpec("c1", "Case 1", 0),))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "v1.json"
    >>> _ = path.write_text(json.dumps({"trials": [[{"case_id": "c1", "output": 1}],
    ...                                            [{"case_id": "c1"}]]}))
    >>> print(load_recorded(path, suite))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: .../v1.json: 2 problems:
      .../v1.json: trials[0][0].output: expected a string, got 1 (record the agent's ...)
      .../v1.json: trials[1][0]: missing required key 'output'
    """
    if first.problems or first.file != str(path):
        return first
    source = Source(path)
    problems: list[InputError] = []
    unlisted = 0
    try:
        trials = _trials_list(source, read_document(path))
    except InputError:
        return first
    case_ids = frozenset(suite.case_ids)
    for index, entry in enumerate(trials):
        try:
            items, where = _samples_of(source, entry, index)
        except InputError as error:
            problems.append(error)
            continue
        seen: dict[str, int] = {}
        for position, item in enumerate(items):
            try:
                _sample(source, item, where, position, case_ids, seen, suite, False)
            except InputError as error:
                problems.append(error)
        if len(problems) > MOST_LISTED:
            unlisted += len(problems) - MOST_LISTED
            del problems[MOST_LISTED:]
    if len(problems) + unlisted < 2 or str(first) not in {str(p) for p in problems}:
        return first  # (a reader that saw another problem than this pass: say what it saw)
    return InputError.of_all(problems, unlisted)


_NO_TRACE: Any = object()


def _empty_trace() -> Trace:
    return Trace("", (), (), 0.0, None, None, {}, "eval")


def _sample_trace(source: Source, raw: Any, location: tuple[str | int, ...], enrich: bool) -> Trace:
    """A sample's trace: empty when the key is absent (``_NO_TRACE``), an error when null,
    else normalised; one rule for the per-sample and the column-wise readers."""
    if raw is _NO_TRACE:
        return _empty_trace()
    if raw is None:
        source.fail(
            (*location, "trace"),
            "expected a trace mapping, got null",
            "remove the key when there is no trace",
        )
    return normalize_trace_unhinted(
        raw, file=source.path, location=(*location, "trace"), enrich=enrich
    )


def _bad_case_id(
    source: Source,
    location: tuple[str | int, ...],
    item: dict[str, Any],
    case_id: Any,
    seen: dict[str, int],
    where: tuple[str | int, ...],
    suite: SuiteSpec,
) -> None:
    if "case_id" not in item:
        source.fail(location, "missing required key 'case_id'")
    if not isinstance(case_id, str):
        source.fail((*location, "case_id"), f"expected a string, got {describe(case_id)}")
    if case_id in seen:
        first = format_location((*where, seen[case_id]))
        source.fail(
            (*location, "case_id"),
            f"case {case_id!r} already has a sample in this trial, at {first}",
            "keep one sample per case and trial",
        )
    import unicodedata

    folded = {unicodedata.normalize("NFC", c): c for c in suite.case_ids}
    same = folded.get(unicodedata.normalize("NFC", case_id))
    if same is not None:  # looks identical, but another Unicode spelling (NFD vs NFC)
        hint = (
            f"it differs from the case {same!r} only in Unicode normalization: write the id "
            "with the same code points as the suite (e.g. both NFC)"
        )
    else:
        match = close_match(case_id, suite.case_ids) if len(suite.cases) <= 2000 else None
        hint = f"did you mean {match!r}?" if match else "check that the file answers this suite"
    source.fail(
        (*location, "case_id"),
        f"{case_id!r} is not a case of suite {suite.name!r} ({suite.path})",
        hint,
    )


def _bad_output(source: Source, location: tuple[str | int, ...], item: dict[str, Any]) -> None:
    if "output" not in item:
        source.fail(location, "missing required key 'output'")
    output = item["output"]
    source.fail(
        (*location, "output"),
        f"expected a string, got {describe(output)}",
        "record the agent's answer as text; serialise structured output as a JSON string",
    )


# --------------------------------------------------------------------------- as columns


@dataclass(slots=True)
class TrialColumns:
    """One recorded trial's samples as columns: what the built-in checks and the
    ``attempts`` table read of each sample, without a :class:`Trace` or a dict per sample.

    Entry *j* of every list belongs to the same sample; ``case_index[j]`` is its case's
    position in the suite. The trace fields are those of the sample's normalised
    :class:`Trace` (``tools`` its ``tool_names``, ``turn_count`` its
    ``metadata.get("turn_count")``, unchecked).
    """

    case_index: list[int]
    output: list[str]
    trace_id: list[str]
    tools: list[tuple[str, ...]]
    latency: list[float]
    cost: list[float | None]
    cost_source: list[str | None]
    shape: list[str]
    turn_count: list[Any]

    @classmethod
    def empty(cls) -> TrialColumns:
        """Columns without a sample."""
        return cls([], [], [], [], [], [], [], [], [])

    def append(self, case_index: int, output: str, trace: Trace) -> None:
        """Add one sample from its normalised trace (the reference the loader's fast path
        reproduces)."""
        self.case_index.append(case_index)
        self.output.append(output)
        self.trace_id.append(trace.trace_id)
        self.tools.append(trace.tool_names)
        self.latency.append(trace.total_latency_ms)
        self.cost.append(trace.estimated_cost_usd)
        self.cost_source.append(trace.cost_source)
        self.shape.append(trace.shape)
        self.turn_count.append(trace.metadata.get("turn_count"))

    def __len__(self) -> int:
        return len(self.case_index)

    def in_case_order(self) -> TrialColumns:
        """The same samples sorted by ``case_index`` (unchanged if they already are)."""
        index = self.case_index
        if all(a < b for a, b in pairwise(index)):
            return self
        order = sorted(range(len(index)), key=index.__getitem__)
        return TrialColumns(*([column[j] for j in order] for column in self._columns()))

    def _columns(self) -> tuple[list[Any], ...]:
        return (
            self.case_index,
            self.output,
            self.trace_id,
            self.tools,
            self.latency,
            self.cost,
            self.cost_source,
            self.shape,
            self.turn_count,
        )


@dataclass(frozen=True)
class RecordedColumns:
    """A recorded-trials file read for replay (:func:`load_recorded_columns`).

    ``trials[i]`` is entry *i* (trial *i + 1*): a :class:`TrialColumns` when it has a
    sample for every suite case, else its samples as :func:`load_recorded` gives them.
    """

    path: Path
    trials: tuple[TrialColumns | tuple[dict[str, Any], ...], ...]


def load_recorded_columns(path: str | Path, suite: SuiteSpec) -> RecordedColumns:
    """Load and validate a recorded-trials file like :func:`load_recorded`, keeping every
    complete trial as :class:`TrialColumns`.

    The same file is accepted or refused with the same error; a complete trial's columns
    hold what :func:`load_recorded`'s traces hold (``tests/formats/test_recorded_columns.py``
    checks the two against each other). Made for replaying large files: an ordinary JSON
    sample is read straight into the columns, anything else (YAML, a number written as an
    integer, a bad value) goes through :func:`~agenticlens_frames.formats.traces.normalize_trace`.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from agenticlens_frames.formats.model import CaseSpec, SuiteSpec
    >>> suite = SuiteSpec(pathlib.Path("suite.yaml"), "demo", "1",
    ...                   (CaseSpec("c1", "Case 1", 0), CaseSpec("c2", "Case 2", 1)))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> trace = {"spans": [{"tool_name": "search"}], "total_latency_ms": 5.0}
    >>> _ = (folder / "v1.json").write_text(json.dumps({"trials": [
    ...     [{"case_id": "c2", "output": "b", "trace": trace},
    ...      {"case_id": "c1", "output": "a"}],
    ...     [{"case_id": "c1", "output": "a"}]]}))
    >>> first, second = load_recorded_columns(folder / "v1.json", suite).trials
    >>> first.case_index, first.tools, first.latency
    ([1, 0], [('search',), ()], [5.0, 0.0])
    >>> [sample["case_id"] for sample in second]  # c2 has no sample: kept as samples
    ['c1']
    """
    with gc_paused():
        return RecordedColumns(path=Path(path), trials=tuple(iter_recorded_columns(path, suite)))


def iter_recorded_columns(
    path: str | Path, suite: SuiteSpec
) -> Iterator[TrialColumns | tuple[dict[str, Any], ...]]:
    """:func:`load_recorded_columns`' trials one at a time, each checked as it is reached.

    Replay scores each trial as soon as it is read and then lets it go, so that one
    trial's samples, not the whole file's, stay in memory as Python objects: the outputs
    kept in a trial's columns are the parsed file's own strings, and while any of them
    lives, the memory the parser took around them cannot be given back. A bad entry
    raises the error :func:`load_recorded` raises, when it is reached.
    """
    path = Path(path)
    source = Source(path)

    # A JSON file's trials are parsed one at a time when it is laid out as usual.
    def whole() -> list[Any]:
        return _trials_list(source, read_document(path))

    index_of = {case_id: i for i, case_id in enumerate(suite.case_ids)}

    def parse(piece: memoryview) -> Any:
        # A complete trial in the common layout is decoded typed; any other goes through
        # loads_json and the checks below (which name the error of a bad one).
        typed = decode_trial(piece, index_of) if index_of else None
        return loads_json(piece) if typed is None else typed

    try:
        yield from _columns_of_each(path, source, suite, whole, parse, index_of)
    except InputError as error:
        every = with_every_problem(error, path, suite)
        if every is error:
            raise
        raise every from None


def _columns_of_each(
    path: Path,
    source: Source,
    suite: SuiteSpec,
    whole: Callable[[], list[Any]],
    parse: Callable[[memoryview], Any],
    index_of: dict[str, int],
) -> Iterator[TrialColumns | tuple[dict[str, Any], ...]]:
    """:func:`iter_recorded_columns`' loop: each trial read, checked and given out."""
    entries = iter_json_list(path, "trials", b'{"samples":', whole, parse)
    if entries is None:
        entries = _taken(whole())
    fast = is_json_path(path)  # JSON keys are strings: no need to check each mapping's
    for index, entry in enumerate(entries):
        trial: TrialColumns | tuple[dict[str, Any], ...]
        if type(entry) is TypedTrial:  # decoded and checked by parse
            trial = TrialColumns(*entry.columns)
        else:
            items = entry.get("samples") if isinstance(entry, dict) else entry
            if index_of and isinstance(items, list) and len(items) == len(index_of):
                where: tuple[str | int, ...] = (
                    ("trials", index, "samples") if isinstance(entry, dict) else ("trials", index)
                )
                trial = _trial_columns(source, items, where, index_of, suite, fast)
            else:  # incomplete (or invalid): scored sample by sample, as load_recorded gives
                trial = _trial(source, entry, index, frozenset(index_of), suite, False)
        entry = items = None  # the raw samples go now; the trial holds what is kept
        yield trial
        del trial  # let the caller's copy be the last one


def _taken(items: list[Any]) -> Iterator[Any]:
    """The items of ``items``, each dropped from the list as it is given out."""
    for index in range(len(items)):
        item, items[index] = items[index], None
        yield item
        del item


def _trials_list(source: Source, document: Any) -> list[Any]:
    trials = document.get("trials") if isinstance(document, dict) else None
    if not isinstance(trials, list) or not trials:
        got = describe(trials) if isinstance(document, dict) else describe(document)
        if trials == []:
            got = "an empty list"
        where = "'trials' is" if isinstance(document, dict) else "the top level is"
        source.fail(
            (),
            f"a recorded trials file must define a non-empty 'trials' list ({where} {got})",
            'write {"trials": [{"samples": [...]}, ...]}',
        )
    return trials


_M = MAX_MAGNITUDE


def _trial_columns(
    source: Source,
    items: list[Any],
    where: tuple[str | int, ...],
    index_of: dict[str, int],
    suite: SuiteSpec,
    fast: bool,
) -> TrialColumns:
    """One trial's samples into columns, checked as :func:`_trial` checks them.

    The loop below is :func:`_trial` with :func:`normalize_trace`'s common cases written
    out (an ``EvalTrace`` with ``total_latency_ms``, a Run with a Run key, every number a
    finite float): a sample that is anything else, valid or not, is read by
    :func:`normalize_trace` itself, which gives the same values or raises the reference
    error. ``fast`` is false for YAML (whose mappings may have non-string keys).
    """
    columns = TrialColumns.empty()
    add_case = columns.case_index.append
    add_output = columns.output.append
    add_id = columns.trace_id.append
    add_tools = columns.tools.append
    add_latency = columns.latency.append
    add_cost = columns.cost.append
    add_source = columns.cost_source.append
    add_shape = columns.shape.append
    add_turns = columns.turn_count.append
    first = [-1] * len(index_of)  # position of each case's sample in this trial
    run_keys = _RUN_KEYS
    absent = _NO_TRACE
    for position, item in enumerate(items):
        case = None
        if type(item) is dict:
            case_id = item.get("case_id")
            if type(case_id) is str:
                case = index_of.get(case_id)
        if case is None or first[case] >= 0:
            _bad_sample(source, item, position, where, first, suite)
        first[case] = position
        output = item.get("output")
        if type(output) is not str and not isinstance(output, str):
            _bad_output(source, (*where, position), item)
        raw = item.get("trace", absent)
        done = False
        if fast and type(raw) is dict:
            tools: list[str] = []
            if "total_latency_ms" in raw:  # an EvalTrace (is_run_shaped: False)
                trace_id = raw.get("trace_id", "")
                latency = raw["total_latency_ms"]
                cost = raw.get("estimated_cost_usd")
                cost_source = raw.get("cost_source")
                metadata = raw.get("metadata", absent)
                spans = raw.get("spans", absent)
                done = (
                    type(trace_id) is str
                    and type(latency) is float
                    and -_M <= latency <= _M
                    and (cost is None or (type(cost) is float and -_M <= cost <= _M))
                    and (cost_source is None or cost_source in COST_SOURCES)
                    and (metadata is absent or type(metadata) is dict)
                    and (spans is absent or type(spans) is list)
                )
                if done and spans is not absent:
                    for span in spans:
                        if type(span) is not dict:
                            done = False
                            break
                        name = span.get("tool_name")
                        attributes = span.get("attributes", absent)
                        if (name is not None and type(name) is not str) or (
                            attributes is not absent and type(attributes) is not dict
                        ):
                            done = False
                            break
                        if name:
                            tools.append(name)
                shape = "eval"
            elif not run_keys.isdisjoint(raw):  # a Run (is_run_shaped: True)
                trace_id = raw.get("trace_id", "")
                spans = raw.get("spans") or []
                metadata = raw.get("metadata")
                done = type(trace_id) is str and type(spans) is list
                # Plain left-to-right addition from int 0, as _from_run does.
                total: Any = 0
                priced = bool(spans)
                if done:
                    for span in spans:
                        if type(span) is not dict:
                            done = False
                            break
                        span_cost = span.get("estimated_cost_usd")
                        if span_cost is None:
                            priced = False
                        elif type(span_cost) is float and -_M <= span_cost <= _M:
                            total = total + span_cost
                        else:
                            done = False
                            break
                        name = span.get("tool_name")
                        attributes = span.get("attributes")
                        if (name is not None and type(name) is not str) or (
                            attributes is not None and type(attributes) is not dict
                        ):
                            done = False
                            break
                        if name:
                            tools.append(name)
                latency: Any = 0.0
                if done:
                    started, completed = raw.get("started_at"), raw.get("completed_at")
                    if started is not None and completed is not None:
                        latency = run_latency_ms(started, completed)
                        # None: not text, not ISO 8601, or offsets that differ
                        done = latency is not None
                if metadata is None:
                    metadata = absent
                elif type(metadata) is not dict:
                    done = False
                cost = float(total) if priced else None
                cost_source = None
                if done and cost is not None:
                    # A top-level cost_source key wins even when null or unknown.
                    if "cost_source" in raw:
                        declared = raw["cost_source"]
                    else:
                        declared = None if metadata is absent else metadata.get("cost_source")
                    cost_source = declared if declared in COST_SOURCES else "estimated"
                shape = "run"
            if done:
                add_id(trace_id)
                add_tools(tuple(tools))
                add_latency(latency)
                add_cost(cost)
                add_source(cost_source)
                add_shape(shape)
                add_turns(None if metadata is absent else metadata.get("turn_count"))
        if not done:
            trace = _sample_trace(source, raw, (*where, position), False)
            add_id(trace.trace_id)
            add_tools(trace.tool_names)
            add_latency(trace.total_latency_ms)
            add_cost(trace.estimated_cost_usd)
            add_source(trace.cost_source)
            add_shape(trace.shape)
            add_turns(trace.metadata.get("turn_count"))
        add_case(case)
        add_output(output)
    return columns


def _bad_sample(
    source: Source,
    item: Any,
    position: int,
    where: tuple[str | int, ...],
    first: list[int],
    suite: SuiteSpec,
) -> None:
    """Raise :func:`_trial`'s error for a sample that is not a mapping or whose case id
    is missing, unknown or repeated."""
    if not isinstance(item, dict):
        source.fail((*where, position), f"expected a sample mapping, got {describe(item)}")
    ids = suite.case_ids
    seen = {ids[case]: at for case, at in enumerate(first) if at >= 0}
    _bad_case_id(source, (*where, position), item, item.get("case_id"), seen, where, suite)
