"""What a journal record must hold before a resumed run (or a load of the folder) uses it.

The journal is written only by this package, but a folder can be edited by hand or
damaged in ways that leave valid JSON (a value retyped, a key removed): such a record used
to end the run's process with a bare traceback, which the supervisor then reported as a
target exiting. :class:`RecordCheck` refuses it instead, naming the field; the reader
(:func:`~agenticlens_frames.runner.journal.read_segments`) names the file and line.

Record types this version does not know are not checked (they are skipped by the
readers, so that a journal written by a newer version still resumes).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from ..formats._io import Invalid, convert_checked, describe

__all__ = ["RecordCheck"]

_Trial = Annotated[int, msgspec.Meta(ge=1)]
_Count = Annotated[int, msgspec.Meta(ge=0)]


class _Keyed(msgspec.Struct, kw_only=True):
    variant: str
    trial: _Trial
    case: str
    session: str | None = None


class _Call(_Keyed):
    call: _Trial
    outcome: str
    error: str | None = None
    elapsed_ms: float | None = None
    started_at: str | None = None


class _Answered(_Keyed):
    status: Literal["ok", "invalid_payload", "target_error", "timed_out"]
    calls: _Count
    error: str | None = None
    payload: Any = None
    elapsed_ms: float | None = None
    started_at: str | None = None


#: ``[passed, score, n_checks, n_checks_passed, score_sum, turns, evaluator_error]``
#: (journal.score_to_json).
_Score = tuple[bool, float | None, _Count, _Count, float, int | None, str | None]
#: ``[name, metric, value, passed, explanation, custom]`` (journal.checks_to_json).
_Check = tuple[str, str | None, float | None, bool, str | None, list[Any] | None]


class _Attempt(_Answered):
    score: _Score | None = None
    checks: list[_Check] | None = None


class _JudgeEnded(_Keyed):
    error: str | None = None


class _Suspect(_Keyed):
    error: str | None = None


class _JudgeSample(_Keyed):
    entry: _Count
    sample: _Count
    judge: str
    payload_sha256: str
    outcome: dict[str, Any]
    version: str | None = None


class _Reopen(msgspec.Struct, kw_only=True):
    invocation: str
    session: str | None = None


_SHAPES: dict[str, type[msgspec.Struct]] = {
    "call": _Call,
    "attempt": _Attempt,
    "answered": _Answered,
    "judge_ended": _JudgeEnded,
    "suspect": _Suspect,
    "judge_sample": _JudgeSample,
}


class RecordCheck:
    """Checks journal records against the run they belong to.

    Parameters
    ----------
    variants, cases
        The manifest's variant ids and the suite's case ids.
    trials
        The manifest's ``trial_count``.

    Examples
    --------
    >>> check = RecordCheck(("a", "b", "c"), ("c1",), trials=2)
    >>> check({"type": "call", "variant": "a", "trial": 1, "case": "c1", "call": 1,
    ...        "outcome": "ok"})
    >>> check({"type": "call", "variant": "a", "trial": "1", "case": "c1", "call": 1,
    ...        "outcome": "ok"})
    Traceback (most recent call last):
    ...
    agenticlens_frames.formats._io.Invalid: expected int, got str
    """

    def __init__(self, variants: tuple[str, ...], cases: tuple[str, ...], trials: int) -> None:
        self.variants = frozenset(variants)
        self.cases = frozenset(cases)
        self.trials = trials

    def __call__(self, record: dict[str, Any]) -> None:
        """Raise :class:`~agenticlens_frames.formats._io.Invalid` (with the field's place)
        if ``record`` cannot be used."""
        shape = _SHAPES.get(record.get("type"))  # type: ignore[arg-type]
        if shape is None:
            if record.get("type") == "reopen":  # not an attempt's: nothing to look up
                convert_checked(record, _Reopen)
            return
        convert_checked(record, shape)
        if record["variant"] not in self.variants:
            raise Invalid(
                f"{describe(record['variant'])} is not a variant of the run", at=("variant",)
            )
        if record["case"] not in self.cases:
            raise Invalid(f"{describe(record['case'])} is not a case of the run", at=("case",))
        if record["trial"] > self.trials:
            raise Invalid(
                f"trial {record['trial']} is beyond trial_count={self.trials}", at=("trial",)
            )
        if record["type"] == "attempt":
            _check_scored(record)


def _check_scored(record: dict[str, Any]) -> None:
    if record["status"] != "ok":
        return
    for key in ("score", "checks"):
        if record.get(key) is None:
            raise Invalid(f"an ok attempt needs its {key}", at=(key,))
    for index, check in enumerate(record["checks"]):
        custom = check[5]
        if custom is None:
            continue
        # [required, evaluator, version, kind] (+ [skipped, metadata] since judges).
        if len(custom) not in (4, 6) or not (
            isinstance(custom[0], bool)
            and isinstance(custom[1], str)
            and (custom[2] is None or isinstance(custom[2], str))
            and isinstance(custom[3], str)
            and (len(custom) == 4 or isinstance(custom[4], bool))
        ):
            raise Invalid("not a registered evaluator's check", at=("checks", index, 5))
