"""The common layout of a recorded trial, decoded by msgspec straight into typed records.

A recorded-trials file written by AgenticLens (or by our own runner) holds, per trial,
``{"samples": [{"case_id", "output", "trace"}, ...]}`` with every trace an EvalTrace or
every trace a Run. Parsing such a trial into dicts and then walking every dict in Python
cost more than the parse itself (0.4 s of Python per 100 000 samples); msgspec checks the
same types in C while it parses and skips what replay never reads (span attributes,
metadata other than ``turn_count`` and ``cost_source``), so decoding a trial costs about
a fifth of ``orjson.loads`` alone.

The schema below accepts a trial **only** when the reference reader
(:func:`agenticlens_frames.formats.recorded._trial_columns` with
:func:`~agenticlens_frames.formats.traces.normalize_trace`) would give the same values
without an error: every type and bound it checks is a constraint here. Anything else —
another trace shape, a bad value, a missing or repeated case, an incomplete trial —
fails to decode or is turned down by :func:`decode_trial`, and the piece goes to the
reference reader, which gives its values or its error. Two encodings of the same number
agree: msgspec reads an integer into a float field as ``float(int)`` would, and both
parsers round decimal text correctly (``tests/formats/test_recorded_typed.py`` checks
these cases against the reference reader).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from agenticlens_frames._limits import MAX_MAGNITUDE
from agenticlens_frames.formats.traces import COST_SOURCES

__all__ = ["TypedTrial", "decode_trial", "run_latency_ms"]

# A number the reference reader takes as it is: finite and within ±MAX_MAGNITUDE (larger
# values overflow to infinity in sums and means). JSON has no NaN or infinity literals.
# An integer read into a float field becomes float(int), as the reference's to_float does.
_Bounded = Annotated[float, Meta(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
# A Run's span costs are summed as written, integers as integers (an integer sum is
# exact): the type of each is kept.
_MOST = int(MAX_MAGNITUDE)
_SpanCost = Annotated[int, Meta(ge=-_MOST, le=_MOST)] | _Bounded
_NO_TIME = (None, UNSET)  # a timestamp absent or null: the Run's latency is 0


class _Mapping(Struct, gc=False):
    """Any JSON object, its content skipped (a span's ``attributes`` must be a mapping)."""


class _Metadata(Struct, gc=False):
    # Only these are read from a trace's metadata, each kept as parsed (Any: the values
    # formats._io.loads_json, the reference reader's parser, gives). A cost source is only
    # compared with the known ones.
    turn_count: Any = None
    cost_source: Any = None


class _Span(Struct, gc=False):
    tool_name: str | None = None
    attributes: _Mapping | UnsetType = UNSET


class _EvalTrace(Struct, gc=False):
    # Required: a trace without total_latency_ms is a Run or an empty EvalTrace, which
    # the reference reader decides.
    total_latency_ms: _Bounded
    trace_id: str = ""
    spans: list[_Span] = []
    estimated_cost_usd: _Bounded | None = None
    cost_source: Literal["measured", "estimated"] | None = None
    metadata: _Metadata | UnsetType = UNSET


class _RunSpan(Struct, gc=False):
    tool_name: str | None = None
    attributes: _Mapping | None = None
    estimated_cost_usd: _SpanCost | None = None


class _RunTrace(Struct, gc=False):
    # A Run has no total_latency_ms key and at least one of the Run keys (formats.traces
    # is_run_shaped): their presence is checked after decoding.
    total_latency_ms: Any = UNSET
    started_at: str | UnsetType | None = UNSET
    completed_at: str | UnsetType | None = UNSET
    application_name: Any = UNSET
    run_id: Any = UNSET
    trace_id: str = ""
    spans: list[_RunSpan] | None = None
    cost_source: Any = UNSET
    metadata: _Metadata | None = None


class _Sample(Struct, gc=False):
    case_id: str
    output: str
    # Absent means an empty trace; null is an error, which the reference reader names.
    trace: _EvalTrace | UnsetType = UNSET


class _RunSample(Struct, gc=False):
    case_id: str
    output: str
    trace: _RunTrace


class _Trial(Struct, gc=False):
    samples: list[_Sample]


class _RunTrial(Struct, gc=False):
    samples: list[_RunSample]


_EVAL = msgspec.json.Decoder(_Trial)
_RUN = msgspec.json.Decoder(_RunTrial)
_fromisoformat = datetime.fromisoformat


class TypedTrial:
    """A complete trial read by :func:`decode_trial`, as the columns of a ``TrialColumns``.

    ``columns`` holds case_index, output, trace_id, tools, latency, cost, cost_source,
    shape and turn_count, in that order; every case of the suite appears exactly once.
    """

    __slots__ = ("columns",)

    def __init__(self, columns: tuple[list[Any], ...]) -> None:
        self.columns = columns


def decode_trial(piece: bytes | memoryview, index_of: dict[str, int]) -> TypedTrial | None:
    """The trial JSON ``piece`` as columns when it is complete and in a common layout
    (every trace an EvalTrace, or every trace a Run), else None: the reference reader
    then parses it, and names any error.

    Examples
    --------
    >>> piece = b'{"samples": [{"case_id": "b", "output": "x"}, {"case_id": "a", "output": "y"}]}'
    >>> decode_trial(piece, {"a": 0, "b": 1}).columns[:2]
    ([1, 0], ['x', 'y'])
    >>> decode_trial(piece, {"a": 0, "b": 1, "c": 2}) is None  # case c has no sample
    True
    """
    try:
        samples: list[Any] = _EVAL.decode(piece).samples
        runs = False
    except (msgspec.MsgspecError, RecursionError):
        try:
            samples = _RUN.decode(piece).samples
            runs = True
        except (msgspec.MsgspecError, RecursionError):
            return None
    if len(samples) != len(index_of):
        return None
    get = index_of.get
    cases = [get(sample.case_id) for sample in samples]
    # Every case once: no unknown id (None), no repeat (then some case would be missing).
    if None in cases or len(set(cases)) != len(cases):
        return None
    traces = [sample.trace for sample in samples]
    outputs = [sample.output for sample in samples]
    columns = _run_columns(traces) if runs else _eval_columns(traces)
    return None if columns is None else TypedTrial((cases, outputs, *columns))


def _eval_columns(traces: list[Any]) -> tuple[list[Any], ...]:
    if any(trace is UNSET for trace in traces):
        # Absent traces read as the empty EvalTrace, like the reference reader's.
        empty = _EvalTrace(total_latency_ms=0.0)
        traces = [empty if trace is UNSET else trace for trace in traces]
    return (
        [trace.trace_id for trace in traces],
        [tuple([span.tool_name for span in trace.spans if span.tool_name]) for trace in traces],
        [trace.total_latency_ms for trace in traces],
        [trace.estimated_cost_usd for trace in traces],
        [trace.cost_source for trace in traces],
        ["eval"] * len(traces),
        [None if trace.metadata is UNSET else trace.metadata.turn_count for trace in traces],
    )


def _run_columns(traces: list[_RunTrace]) -> tuple[list[Any], ...] | None:
    tools: list[tuple[str, ...]] = []
    latency: list[float] = []
    cost: list[float | None] = []
    source: list[str | None] = []
    turns: list[Any] = []
    for trace in traces:
        if trace.total_latency_ms is not UNSET or (
            trace.started_at is UNSET
            and trace.completed_at is UNSET
            and trace.application_name is UNSET
            and trace.run_id is UNSET
        ):
            return None  # not read as a Run
        spans = trace.spans or ()
        # Plain left-to-right addition from int 0, as the reference's _from_run does.
        total: Any = 0
        priced = bool(spans)
        for span in spans:
            span_cost = span.estimated_cost_usd
            if span_cost is None:
                priced = False
            else:
                total = total + span_cost
        started, completed = trace.started_at, trace.completed_at
        elapsed: float | None = 0.0
        if started not in _NO_TIME and completed not in _NO_TIME:
            elapsed = run_latency_ms(started, completed)
            if elapsed is None:
                return None
        metadata = trace.metadata
        if priced:
            # A top-level cost_source key wins even when null or unknown.
            declared = trace.cost_source
            if declared is UNSET:
                declared = None if metadata is None else metadata.cost_source
            source.append(declared if declared in COST_SOURCES else "estimated")
            cost.append(float(total))
        else:
            source.append(None)
            cost.append(None)
        tools.append(tuple([span.tool_name for span in spans if span.tool_name]))
        latency.append(elapsed)
        turns.append(None if metadata is None else metadata.turn_count)
    ids = [trace.trace_id for trace in traces]
    return ids, tools, latency, cost, source, ["run"] * len(traces), turns


def run_latency_ms(started: Any, completed: Any) -> float | None:
    """A Run's latency from its two timestamps as AgenticLens computes it (never below
    0), or None when they are not both ISO 8601 text with comparable offsets (the
    reference reader then names the error).

    Examples
    --------
    >>> run_latency_ms("2026-01-06T08:00:00.000Z", "2026-01-06T08:00:01.171Z")
    1171.0
    >>> run_latency_ms("2026-01-06T08:00:00Z", "2026-01-06T08:00:01") is None  # offsets differ
    True
    """
    try:
        start = _fromisoformat(started[:-1] + "+00:00" if started.endswith("Z") else started)
        end = _fromisoformat(completed[:-1] + "+00:00" if completed.endswith("Z") else completed)
        return max(0.0, (end - start).total_seconds() * 1000)
    except (AttributeError, TypeError, ValueError):
        return None
