"""Retry policies for live targets, and the failure kinds a target call can end in.

A live call either returns a payload or fails with a :class:`TargetFailure` of one *kind*:

``timeout``     the call did not finish within the variant's ``timeout_seconds``
``connection``  an HTTP target could not be reached, or dropped the connection
``http_5xx``    an HTTP target answered 500-599
``http_429``    an HTTP target answered 429 Too Many Requests
``error``       anything else: the Python target raised, another HTTP status, a reply
                larger than the size cap

A :class:`RetryPolicy` says how many times one (variant, trial, case) may be called and
which kinds are worth another try. The default is one attempt, as in AgenticLens 0.10.
An invalid payload is never retried: it is a target bug, not a transient failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._deprecate import class_keyword_hints
from ..errors import InputError, describe_error

__all__ = [
    "FAILURE_KINDS",
    "RETRY_KEYS",
    "RetryPolicy",
    "TargetFailure",
    "describe_error",
    "parse_retry",
]

#: Every way a target call can fail (see the module docstring).
FAILURE_KINDS = ("timeout", "connection", "http_5xx", "http_429", "error")

_RETRY_KEYS = ("attempts", "backoff_seconds", "backoff_multiplier", "max_backoff_seconds")
#: Every key of a ``retry:`` block (a manifest variant's, or one given for all variants).
RETRY_KEYS = (*_RETRY_KEYS, "retry_on")


class TargetFailure(Exception):
    """A target call that failed in a way the run records (never a bug of ours).

    Parameters
    ----------
    kind
        One of :data:`FAILURE_KINDS`.
    message
        What the attempt's ``error`` column will say (``Type: message``), in AgenticLens'
        wording.
    detail
        More than the package records (an HTTP error reply's first bytes); kept in the
        call's journal record and the ``calls`` table's ``detail`` column only.
    retry_after
        Seconds the server asked to wait before calling again (an HTTP reply's
        ``Retry-After``), if it said.

    Examples
    --------
    >>> failure = TargetFailure("timeout", "TimeoutError: Python target timed out after 2 s")
    >>> failure.kind, str(failure)
    ('timeout', 'TimeoutError: Python target timed out after 2 s')
    """

    def __init__(
        self,
        kind: str,
        message: str,
        detail: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        if kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {kind!r}")
        self.kind = kind
        self.message = message
        self.detail = detail
        self.retry_after = retry_after
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (TargetFailure, (self.kind, self.message, self.detail, self.retry_after))


@class_keyword_hints(skip=("delay", "wait", "retries"))
@dataclass(frozen=True)
class RetryPolicy:
    """At most ``attempts`` calls per (variant, trial, case), with exponential backoff.

    The wait before retry *n* (1 for the second call) is
    ``backoff_seconds * backoff_multiplier ** (n - 1)``, capped at
    ``max_backoff_seconds`` (the rule and defaults of agentic-evals' ``RetryPolicy``);
    longer when the server's reply asked for longer (``Retry-After``, :meth:`wait`).
    Only failures whose kind is in ``retry_on`` are retried.

    Examples
    --------
    >>> policy = RetryPolicy(attempts=3, backoff_seconds=0.5)
    >>> [policy.delay(n) for n in (1, 2)]
    [0.5, 1.0]
    >>> policy.retries("timeout", 1), policy.retries("timeout", 3)
    (True, False)
    >>> RetryPolicy(attempts=3, retry_on=frozenset({"http_5xx"})).retries("error", 1)
    False
    """

    attempts: int = 1
    backoff_seconds: float = 0.0
    backoff_multiplier: float = 2.0
    max_backoff_seconds: float = 30.0
    retry_on: frozenset[str] = frozenset(FAILURE_KINDS)

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise InputError(f"retry attempts must be an integer, got {self.attempts!r}")
        if self.attempts < 1:
            raise InputError(f"retry attempts must be at least 1, got {self.attempts}")
        if self.backoff_seconds < 0 or self.max_backoff_seconds < 0:
            raise InputError("retry backoff seconds must not be negative")
        if self.backoff_multiplier < 1:
            raise InputError("retry backoff_multiplier must be at least 1")
        unknown = set(self.retry_on) - set(FAILURE_KINDS)
        if unknown:
            raise InputError(
                f"unknown failure kind(s) in retry_on: {', '.join(sorted(unknown))}",
                hint="use " + ", ".join(FAILURE_KINDS),
            )

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the second call).

        Examples
        --------
        >>> policy = RetryPolicy(attempts=4, backoff_seconds=1, max_backoff_seconds=3)
        >>> [policy.delay(n) for n in (1, 2, 3)]
        [1.0, 2.0, 3.0]
        """
        wait = self.backoff_seconds * self.backoff_multiplier ** (retry - 1)
        return float(min(wait, self.max_backoff_seconds))

    def wait(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry``: :meth:`delay`, or longer when
        the server asked for longer (``Retry-After``), up to ``max_backoff_seconds``.

        Examples
        --------
        >>> policy = RetryPolicy(attempts=3, backoff_seconds=0.5, max_backoff_seconds=10)
        >>> policy.wait(1), policy.wait(1, retry_after=2), policy.wait(1, retry_after=60)
        (0.5, 2.0, 10.0)
        >>> policy.wait(2, retry_after=0)  # never shorter than the policy's own wait
        1.0
        """
        wait = self.delay(retry)
        if retry_after is not None:
            wait = max(wait, min(float(retry_after), float(self.max_backoff_seconds)))
        return wait

    def retries(self, kind: str, calls_made: int) -> bool:
        """Whether a failure of ``kind`` after ``calls_made`` calls earns another call.

        Examples
        --------
        >>> policy = RetryPolicy(attempts=2, retry_on=frozenset({"timeout", "http_5xx"}))
        >>> policy.retries("http_5xx", 1), policy.retries("http_5xx", 2)
        (True, False)
        >>> policy.retries("http_4xx", 1)  # not in retry_on
        False
        """
        return kind in self.retry_on and calls_made < self.attempts


def parse_retry(
    raw: Mapping[str, Any] | RetryPolicy | None,
    *,
    file: str | Path | None = None,
    location: tuple[str | int, ...] = (),
) -> RetryPolicy:
    """Validate a manifest's ``retry`` mapping into a :class:`RetryPolicy`.

    The mapping takes ``attempts``, ``backoff_seconds``, ``backoff_multiplier``,
    ``max_backoff_seconds`` and ``retry_on`` (a list of failure kinds; default: all).

    Examples
    --------
    >>> parse_retry({"attempts": 3, "backoff_seconds": 0.2, "retry_on": ["timeout"]})
    RetryPolicy(attempts=3, backoff_seconds=0.2, backoff_multiplier=2.0, \
max_backoff_seconds=30.0, retry_on=frozenset({'timeout'}))
    >>> parse_retry({"attempts": 0}, file="m.yaml", location=("variants", 1, "retry"))
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: m.yaml: variants[1].retry: retry attempts must be \
at least 1, got 0
    """
    if raw is None:
        return RetryPolicy()
    if isinstance(raw, RetryPolicy):
        return raw
    try:
        if not isinstance(raw, Mapping):
            raise InputError(f"expected a mapping, got {type(raw).__name__}")
        unknown = set(raw) - {*_RETRY_KEYS, "retry_on"}
        if unknown:
            raise InputError(
                f"unknown retry key(s): {', '.join(sorted(map(str, unknown)))}",
                hint="use " + ", ".join((*_RETRY_KEYS, "retry_on")),
            )
        numbers: dict[str, Any] = {}
        for key in _RETRY_KEYS:
            if key in raw:
                value = raw[key]
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise InputError(f"{key} must be a number, got {value!r}")
                numbers[key] = value
        kinds = raw.get("retry_on", FAILURE_KINDS)
        if isinstance(kinds, str) or not isinstance(kinds, Iterable):
            raise InputError(f"retry_on must be a list of failure kinds, got {kinds!r}")
        return RetryPolicy(**numbers, retry_on=frozenset(str(k) for k in kinds))
    except InputError as exc:
        raise InputError(exc.message, file=file, location=location, hint=exc.hint) from None
