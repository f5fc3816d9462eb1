"""What a live target must answer: ``{"output": str, "trace": {...}}`` (spec §4.2, §4.3).

Rules, as AgenticLens 0.10 except where marked:

* the payload is an object; ``case_id`` in it is ignored (the case is known);
* ``output`` is a string;
* ``trace`` is an ``EvalTrace``- or ``Run``-shaped object (§7), validated and normalised
  by :func:`~agenticlens_frames.formats.normalize_trace`. A payload **without** ``trace``
  is scored with an empty trace, as recorded samples are (fix B11: AgenticLens refuses
  it, failing the whole trial); ``trace: null`` is still refused, as in recorded files.

Python targets may return any Python objects; the payload is first passed through JSON
(:func:`canonical_payload`) so that a Python target and an HTTP target returning the same
thing are scored the same, and so the journal can replay it exactly.
"""

from __future__ import annotations

from typing import Any

from .._values import json_copy_checked
from ..errors import InputError, describe_error
from ..formats.traces import Trace, normalize_trace_unhinted

__all__ = ["DEFAULT_MAX_OUTPUT_CHARS", "InvalidPayload", "canonical_payload", "validate_payload"]

#: Longest ``output`` accepted from one live attempt (characters); longer ones are refused
#: as invalid payloads, naming the limit, so one runaway target cannot fill memory or the
#: reports. ``run_experiment(max_output_chars=...)`` changes it.
DEFAULT_MAX_OUTPUT_CHARS = 4_000_000


class InvalidPayload(Exception):
    """A target answered with something that is not a sample (a target bug, not retried).

    Parameters
    ----------
    message
        The attempt's error, in the package's wording.
    detail
        What the package does not record (the first bytes of a reply that is not JSON),
        for the call's ``detail`` column.
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail

    def __reduce__(self) -> tuple[Any, ...]:
        return (InvalidPayload, (str(self), self.detail))


def canonical_payload(value: Any, case_id: str = "?") -> Any:
    """``value`` as JSON would carry it: tuples become lists, other objects ``str()``.

    Raises
    ------
    InvalidPayload
        When JSON cannot carry it (a key that is not a string or a number, two keys of
        one dict that JSON writes alike, ``1`` and ``"1"``, a reference cycle, nesting too
        deep, an object whose ``str()`` raises): the target answered
        with something that is not a sample, a target bug as a reply that is not JSON is,
        not a call that went unanswered (which a retry policy or ``--rerun-failed`` would
        call again).

    Examples
    --------
    >>> canonical_payload({"output": "x", "trace": {"spans": ({"tool_name": "a"},)}})
    {'output': 'x', 'trace': {'spans': [{'tool_name': 'a'}]}}
    >>> canonical_payload({"output": "x", "n": float("inf"), 1: 2**70})
    {'output': 'x', 'n': inf, '1': 1180591620717411303424}
    >>> canonical_payload({"output": "x", (1, 2): "pair"}, "c1")
    Traceback (most recent call last):
    ...
    agenticlens_frames.runner.payload.InvalidPayload: live target payload for case 'c1' \
cannot be passed through JSON: TypeError: keys must be str, int, float, bool or None, not tuple
    >>> canonical_payload({"output": "x", "trace": {1: "a", "1": "b"}}, "c1")
    Traceback (most recent call last):
    ...
    agenticlens_frames.runner.payload.InvalidPayload: live target payload for case 'c1' \
cannot be passed through JSON: keys 1 and '1' are both "1" in JSON, in the dict at ['trace']
    """
    try:
        copy, clash = json_copy_checked(value)
    except Exception as exc:  # the target's objects (RecursionError too), not our bug
        raise InvalidPayload(
            f"live target payload for case {case_id!r} cannot be passed through JSON: "
            f"{describe_error(exc)}"
        ) from None
    # JSON keeps one of two keys it writes alike: the journal, a resume and a load would
    # then score a payload other than the one the target gave, without a word.
    if clash is not None:
        raise InvalidPayload(
            f"live target payload for case {case_id!r} cannot be passed through JSON: {clash}"
        )
    return copy


def validate_payload(
    payload: Any,
    case_id: str,
    *,
    raw_type: str | None = None,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
) -> tuple[str, Trace]:
    """Check one payload and return its output and normalised trace.

    Parameters
    ----------
    payload
        The canonical payload.
    case_id
        For messages.
    raw_type
        The Python type name of the payload before canonicalisation, for the message
        AgenticLens gives when it is not an object.
    max_output_chars
        Refuse longer outputs (None: no limit).

    Raises
    ------
    InvalidPayload
        With the message the trial (or, in ``invalid_payload="case"`` mode, the case)
        records.

    Examples
    --------
    >>> output, trace = validate_payload({"output": "hi"}, "c1")
    >>> output, trace.total_latency_ms
    ('hi', 0.0)
    >>> validate_payload([1], "c1")
    Traceback (most recent call last):
    ...
    agenticlens_frames.runner.payload.InvalidPayload: live target returned list for case \
'c1'; expected an object with output and trace
    """
    if not isinstance(payload, dict):
        kind = raw_type or type(payload).__name__
        # AgenticLens' wording, so a failed trial reads the same.
        raise InvalidPayload(
            f"live target returned {kind} for case {case_id!r}; "
            "expected an object with output and trace"
        )
    if "output" not in payload:
        raise InvalidPayload(f"live target payload for case {case_id!r} has no 'output'")
    output = payload["output"]
    if not isinstance(output, str):
        got = "null" if output is None else type(output).__name__
        raise InvalidPayload(
            f"live target payload for case {case_id!r}: 'output' must be a string, got {got}"
        )
    if max_output_chars is not None and len(output) > max_output_chars:
        raise InvalidPayload(
            f"live target payload for case {case_id!r}: 'output' has {len(output)} characters, "
            f"over the limit of {max_output_chars} (max_output_chars)"
        )
    if "trace" not in payload:
        return output, normalize_trace_unhinted({})
    raw = payload["trace"]
    if raw is None:
        raise InvalidPayload(
            f"live target payload for case {case_id!r}: 'trace' is null "
            "(leave the key out when there is no trace)"
        )
    try:
        trace = normalize_trace_unhinted(raw, location=("trace",))
    except InputError as exc:
        raise InvalidPayload(f"live target payload for case {case_id!r}: {exc}") from None
    return output, trace
