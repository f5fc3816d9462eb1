"""Trace payloads: validate either accepted shape and normalise it into one :class:`Trace`.

AgenticLens 0.10 accepts two trace shapes in recorded samples and live payloads (spec §7):

* the agentic-evals ``EvalTrace`` shape (§7.2): ``trace_id``, ``spans`` of
  ``{tool_name, attributes}``, ``total_latency_ms``, ``estimated_cost_usd``,
  ``cost_source`` and ``metadata``;
* the AgenticLens ``Run`` shape (§7.3): ``started_at``/``completed_at`` timestamps and
  per-span costs, converted into the first shape.

The shape is detected exactly as AgenticLens does, including its quirk (B6): a trace without
``total_latency_ms`` whose spans carry ``span_id`` is read as a Run, so its trace-level cost
is discarded. Keeping the quirk keeps the numbers identical to AgenticLens.

This module is on the hot path of loading recorded trials (tens of thousands of samples), so
it checks values with plain ``type`` tests instead of building validation models.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from agenticlens_frames._limits import MAX_MAGNITUDE
from agenticlens_frames.errors import InputError
from agenticlens_frames.formats._io import Invalid, describe, to_float

from .._deprecate import keyword_hints

__all__ = ["COST_SOURCES", "Trace", "is_run_shaped", "normalize_trace"]

#: The values ``cost_source`` may take besides null.
COST_SOURCES = ("measured", "estimated")

# Top-level keys only a Run has, and span keys only a Run's spans have (spec §7.3).
_RUN_KEYS = frozenset({"started_at", "completed_at", "application_name", "run_id"})
_RUN_SPAN_KEYS = frozenset({"span_type", "estimated_cost_usd", "span_id"})
# Span fields copied into attributes under this prefix, in AgenticLens' order.
_LENS = "agenticlens."
_LENS_SPAN_FIELDS = ("span_type", "name", "agent_name", "status", "span_id", "parent_span_id")
_ABSENT: Any = object()
# json.dumps(value, sort_keys=True, ensure_ascii=True, default=str), built once.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=True, default=str)


@dataclass(slots=True)
class Trace:
    """A validated trace in the ``EvalTrace`` shape, whatever shape it was written in.

    Read-only by convention, not frozen: a frozen dataclass sets each field through
    ``object.__setattr__``, which tripled the cost of making one, and a recorded
    experiment makes one per sample (its dicts make it unhashable either way).

    Attributes
    ----------
    trace_id
        The trace id, ``""`` when not given.
    spans
        ``(tool_name, attributes)`` per span, in order. For Run-shaped traces normalised
        with ``enrich=True`` (:func:`normalize_trace`; loading does not) the attributes
        also hold the namespaced ``agenticlens.*`` copies of the span's own fields.
    tool_names
        The non-empty tool names of the spans, in span order (repeats kept).
    total_latency_ms
        Latency of the whole trace; for Run-shaped traces computed from its timestamps.
    estimated_cost_usd
        Cost of the trace, or None when unknown.
    cost_source
        ``"measured"``, ``"estimated"`` or None.
    metadata
        Trace metadata (``turn_count`` lives here).
    shape
        ``"eval"`` or ``"run"``: the shape the trace was written in.

    Examples
    --------
    >>> from agenticlens_frames import normalize_trace
    >>> trace = normalize_trace({"trace_id": "t1", "total_latency_ms": 120,
    ...                          "spans": [{"tool_name": "search"}, {"tool_name": None}]})
    >>> trace.tool_names, trace.total_latency_ms, trace.estimated_cost_usd, trace.shape
    (('search',), 120.0, None, 'eval')
    """

    trace_id: str
    spans: tuple[tuple[str | None, dict[str, Any]], ...]
    tool_names: tuple[str, ...]
    total_latency_ms: float
    estimated_cost_usd: float | None
    cost_source: str | None
    metadata: dict[str, Any]
    shape: Literal["eval", "run"]

    def as_eval_dict(self) -> dict[str, Any]:
        """The trace as an agentic-evals ``EvalTrace`` dict (for reports and debugging).

        Examples
        --------
        >>> normalize_trace({"spans": [{"tool_name": "search"}]}).as_eval_dict()["spans"]
        [{'tool_name': 'search', 'attributes': {}}]
        """
        return {
            "trace_id": self.trace_id,
            "spans": [
                {"tool_name": name, "attributes": attributes} for name, attributes in self.spans
            ],
            "total_latency_ms": self.total_latency_ms,
            "estimated_cost_usd": self.estimated_cost_usd,
            "cost_source": self.cost_source,
            "metadata": self.metadata,
        }


def is_run_shaped(raw: dict[str, Any]) -> bool:
    """Whether AgenticLens would read ``raw`` as a Run rather than an ``EvalTrace`` (§7.3).

    Examples
    --------
    >>> is_run_shaped({"started_at": "2026-01-01T00:00:00Z"})
    True
    >>> is_run_shaped({"total_latency_ms": 5.0, "run_id": "r1"})
    False
    >>> is_run_shaped({"spans": [{"span_id": "s1", "tool_name": "search"}]})  # quirk B6
    True
    """
    if "total_latency_ms" in raw:
        return False
    if not _RUN_KEYS.isdisjoint(raw):
        return True
    spans = raw.get("spans")
    if not isinstance(spans, list):
        return False
    return any(isinstance(span, dict) and not _RUN_SPAN_KEYS.isdisjoint(span) for span in spans)


@keyword_hints
def normalize_trace(
    raw: Any,
    *,
    file: str | Path | None = None,
    location: tuple[str | int, ...] = (),
    enrich: bool = False,
) -> Trace:
    """Validate a trace payload of either shape and return it as a :class:`Trace`.

    Follows AgenticLens 0.10 (spec §7.2, §7.3): unknown keys are ignored; ``cost_source``
    must be ``measured``, ``estimated`` or null; Run-shaped traces get their latency from
    ``completed_at - started_at`` (``timedelta.total_seconds() * 1000``, clipped at 0) and
    their cost from the sum of the span costs when every span has one. Numbers that are
    booleans or not finite are refused (AgenticLens accepts them).

    Parameters
    ----------
    raw
        The parsed trace (a mapping).
    file, location
        Where the trace is, for error messages: e.g. ``"trials/v01.json"`` and
        ``("trials", 3, "samples", 17, "trace")``.
    enrich
        For Run-shaped traces, also add AgenticLens' namespaced ``agenticlens.*`` copies
        of each span's fields and its input fingerprint to the span attributes. No check
        reads them, so loading skips this work (it was half the cost of a Run trace).

    Returns
    -------
    Trace

    Raises
    ------
    InputError
        Naming the file and the place inside the trace, e.g.
        ``trials/v01.json: trials[3].samples[17].trace.cost_source: ...``.

    Examples
    --------
    >>> trace = normalize_trace(
    ...     {
    ...         "started_at": "2026-01-05T08:00:00.000Z",
    ...         "completed_at": "2026-01-05T08:00:01.001Z",
    ...         "spans": [
    ...             {"tool_name": "search", "estimated_cost_usd": 0.001},
    ...             {"tool_name": None, "estimated_cost_usd": 0.002},
    ...         ],
    ...     }
    ... )
    >>> trace.shape, trace.total_latency_ms, trace.estimated_cost_usd, trace.cost_source
    ('run', 1000.9999999999999, 0.003, 'estimated')
    >>> trace.tool_names
    ('search',)
    >>> normalize_trace({"cost_source": "guessed"}, file="t.json", location=("trace",))
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: t.json: trace.cost_source: expected 'measured', \
'estimated' or null, got 'guessed'
    """
    try:
        if not isinstance(raw, dict):
            raise Invalid(f"expected a trace mapping, got {describe(raw)}")
        if is_run_shaped(raw):
            return _from_run(raw, enrich)
        return _from_eval(raw)
    except Invalid as exc:
        raise InputError(
            exc.message, file=file, location=(*location, *exc.at), hint=exc.hint
        ) from None


#: :func:`normalize_trace` without its keyword hint, for the loaders that call it once per
#: recorded sample or live reply: the hint is for users' calls (``keyword_hints``).
normalize_trace_unhinted = normalize_trace.__wrapped__  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- EvalTrace shape


def _from_eval(raw: dict[str, Any]) -> Trace:
    trace_id = raw.get("trace_id", "")
    if type(trace_id) is not str:
        trace_id = _text(trace_id, "trace_id")

    spans: list[tuple[str | None, dict[str, Any]]] = []
    tools: list[str] = []
    raw_spans = raw.get("spans", _ABSENT)
    if raw_spans is not _ABSENT:
        if not isinstance(raw_spans, list):
            raise Invalid(f"expected a list of spans, got {describe(raw_spans)}", at=("spans",))
        for index, span in enumerate(raw_spans):
            if not isinstance(span, dict):
                raise Invalid(f"expected a span mapping, got {describe(span)}", at=("spans", index))
            name = _add_tool(tools, span, index)
            attributes = span.get("attributes", _ABSENT)
            if attributes is _ABSENT:
                attributes = {}
            else:
                _check_mapping(attributes, "spans", index, "attributes")
            spans.append((name, attributes))

    latency = raw.get("total_latency_ms", 0.0)
    if type(latency) is not float or not -MAX_MAGNITUDE <= latency <= MAX_MAGNITUDE:
        latency = _number(latency, "total_latency_ms")
    cost = raw.get("estimated_cost_usd")
    if cost is not None and (
        type(cost) is not float or not -MAX_MAGNITUDE <= cost <= MAX_MAGNITUDE
    ):
        cost = _number(cost, "estimated_cost_usd")
    source = raw.get("cost_source")
    if source is not None and source not in COST_SOURCES:
        raise Invalid(
            f"expected 'measured', 'estimated' or null, got {describe(source)}",
            at=("cost_source",),
        )
    metadata = raw.get("metadata", _ABSENT)
    if metadata is _ABSENT:
        metadata = {}
    else:
        _check_mapping(metadata, "metadata")
    return Trace(trace_id, tuple(spans), tuple(tools), latency, cost, source, metadata, "eval")


# --------------------------------------------------------------------------- Run shape


def _from_run(raw: dict[str, Any], enrich: bool = False) -> Trace:
    trace_id = raw.get("trace_id", "")
    if type(trace_id) is not str:
        trace_id = _text(trace_id, "trace_id")

    raw_spans = raw.get("spans") or []
    if not isinstance(raw_spans, list):
        raise Invalid(f"expected a list of spans, got {describe(raw_spans)}", at=("spans",))
    spans: list[tuple[str | None, dict[str, Any]]] = []
    tools: list[str] = []
    # Plain left-to-right addition from int 0, as Python 3.11's sum() does: a compensated
    # sum would change the last digit of some costs.
    total: Any = 0
    priced = bool(raw_spans)
    for index, span in enumerate(raw_spans):
        if not isinstance(span, dict):
            raise Invalid(f"expected a span mapping, got {describe(span)}", at=("spans", index))
        span_cost = span.get("estimated_cost_usd")
        if span_cost is None:
            priced = False
        else:
            if type(span_cost) is not float or not -MAX_MAGNITUDE <= span_cost <= MAX_MAGNITUDE:
                span_cost = _span_cost(span_cost, index)
            total = total + span_cost
        name = _add_tool(tools, span, index)
        spans.append(
            (name, _lens_attributes(span, index) if enrich else _own_attributes(span, index))
        )
    cost = float(total) if priced else None

    latency = 0.0
    started, completed = raw.get("started_at"), raw.get("completed_at")
    if started is not None and completed is not None:
        start = _timestamp(started, "started_at")
        end = _timestamp(completed, "completed_at")
        try:
            elapsed = end - start
        except TypeError:
            raise Invalid(
                "cannot subtract started_at from completed_at: one has a UTC offset and "
                "the other does not",
                at=("completed_at",),
                hint="give both timestamps an offset, e.g. a trailing Z",
            ) from None
        latency = max(0.0, elapsed.total_seconds() * 1000)

    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    else:
        _check_mapping(metadata, "metadata")
    source = None
    if cost is not None:
        # A top-level cost_source key wins even when it is null or unknown (-> "estimated").
        declared = raw["cost_source"] if "cost_source" in raw else metadata.get("cost_source")
        source = declared if declared in COST_SOURCES else "estimated"
    enriched = dict(metadata)
    status = raw.get("status")
    if status is not None:
        enriched.setdefault(_LENS + "run_status", status)
    task_success = raw.get("task_success")
    if task_success is not None:
        enriched.setdefault(_LENS + "task_success", task_success)
    return Trace(trace_id, tuple(spans), tuple(tools), latency, cost, source, enriched, "run")


def _own_attributes(span: dict[str, Any], index: int) -> dict[str, Any]:
    """The span's own attributes, validated (shared, not copied: traces are read-only)."""
    own = span.get("attributes")
    if own is None:
        return {}
    _check_mapping(own, "spans", index, "attributes")
    return own


def _lens_attributes(span: dict[str, Any], index: int) -> dict[str, Any]:
    """The span's attributes plus namespaced copies of its Run fields (never overwriting)."""
    own = span.get("attributes")
    if own is None:
        attributes: dict[str, Any] = {}
    else:
        _check_mapping(own, "spans", index, "attributes")
        attributes = dict(own)
    for field in _LENS_SPAN_FIELDS:
        value = span.get(field)
        if value is not None:
            attributes.setdefault(_LENS + field, value)
    reference = span.get("input_reference")
    if reference:
        fingerprint: str | None = f"ref:{reference}"
    elif span.get("input_data") is not None:
        fingerprint = _fingerprint(span["input_data"], index, "input_data")
    elif attributes.get("tool_args") is not None:
        fingerprint = _fingerprint(attributes["tool_args"], index, "attributes", "tool_args")
    else:
        fingerprint = None
    if fingerprint is not None:
        attributes.setdefault(_LENS + "input_fingerprint", fingerprint)
    if span.get("span_type") == "retrieval":
        retrieved = span.get("output_data")
        if retrieved is not None:
            attributes.setdefault(_LENS + "retrieved", retrieved)
    return attributes


def _fingerprint(value: Any, index: int, *at: str) -> str:
    # The same canonical JSON as AgenticLens, so equal arguments get equal fingerprints.
    try:
        encoded = _CANONICAL_JSON.encode(value)
    except (TypeError, ValueError) as exc:
        raise Invalid(f"cannot be fingerprinted as JSON: {exc}", at=("spans", index, *at)) from None
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()[:16]


def _timestamp(value: Any, key: str) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        text = value[:-1] + "+00:00" if value.endswith("Z") else value
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    raise Invalid(
        f"expected an ISO-8601 timestamp, got {describe(value)}",
        at=(key,),
        hint="e.g. 2026-01-05T08:00:00.000Z",
    )


# --------------------------------------------------------------------------- value checks


def _text(value: Any, *at: str | int, nullable: bool = False) -> str:
    if isinstance(value, str):
        return value
    expected = "a string or null" if nullable else "a string"
    raise Invalid(f"expected {expected}, got {describe(value)}", at=at)


def _number(value: Any, *at: str | int) -> float:
    try:
        number = to_float(value)
    except Invalid as exc:
        raise exc.inside(*at) from None
    if abs(number) > MAX_MAGNITUDE:
        # Sums and means of such values overflow to infinity.
        raise Invalid(
            f"expected a number between -{MAX_MAGNITUDE:g} and {MAX_MAGNITUDE:g}, got {number:g}",
            at=at,
        )
    return number


def _span_cost(value: Any, index: int) -> float:
    # Span costs are summed as written, so only real numbers qualify (not numeric strings).
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= MAX_MAGNITUDE
    ):
        return value
    raise Invalid(
        f"expected a finite number or null, got {describe(value)}",
        at=("spans", index, "estimated_cost_usd"),
    )


def _add_tool(tools: list[str], span: dict[str, Any], index: int) -> str | None:
    """The span's tool name (validated), appended to ``tools`` when not empty."""
    name = span.get("tool_name")
    if name is not None:
        if type(name) is not str:
            name = _text(name, "spans", index, "tool_name", nullable=True)
        if name:
            tools.append(name)
    return name


def _check_mapping(value: Any, *at: str | int) -> None:
    if not isinstance(value, dict):
        raise Invalid(f"expected a mapping, got {describe(value)}", at=at)
    for key in value:
        if type(key) is not str and not isinstance(key, str):
            raise Invalid(
                f"keys must be strings, got the key {describe(key)}",
                at=at,
                hint=f'quote the key: "{key}"',
            )
