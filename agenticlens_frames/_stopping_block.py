"""The checks of an ``early_stopping`` block (when and why a live run stopped), before
any surface renders it: a saved report's, and a run's carried through parquet metadata.

Imports nothing of ours but :mod:`~agenticlens_frames.errors` and
:mod:`~agenticlens_frames._values`:
:mod:`agenticlens_frames.frames` reads it, and the statement's words
(:mod:`agenticlens_frames.early_stopping`) sit above the paired verdicts, which read the
frames.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._values import clip, ends_in_order, is_json_number, is_level, is_missing
from .errors import InputError

__all__ = [
    "check_block",
    "check_bounds",
    "check_spend",
    "checked_record",
    "declared_correction",
    "expected_at",
    "is_clustered",
    "rule_settings",
]

#: The block's fields the renderers read, with their JSON types (a saved report's block is
#: checked against them before it is shown).
_FIELDS: dict[str, tuple[type, ...]] = {
    "stopped_early": (bool,),
    "reason": (str,),
    "attempts_planned": (int,),
    "attempts_run": (int,),
    "attempts_saved": (int,),
    "alpha": (int, float),
    "alpha_per_candidate": (int, float),
    "method": (str,),
    "candidates": (list,),
}
#: With ``unit: "cluster"`` (a sequence run at the cluster level), the fields the cluster
#: statement reads; per candidate ``paired_clusters``.
_CLUSTER_FIELDS: dict[str, tuple[type, ...]] = {
    "cluster": (str,),
    "clusters_used": (int,),
    "clusters_planned": (int,),
}
#: The fields of each ``judge_spend_after_decision`` row the judges' lines read.
_SPEND_FIELDS: dict[str, tuple[type, ...]] = {
    "variant_id": (str,),
    "judge_scores": (int,),
    "unavailable_scores": (int,),
    "spent_cost_usd": (int, float, type(None)),
    "input_tokens": (int,),
    "output_tokens": (int,),
}
_CANDIDATE_FIELDS: dict[str, tuple[type, ...]] = {
    "candidate_variant_id": (str,),
    "decision": (str, type(None)),
    # null: an empty sequence (every value excluded; the report writes its NaN as null).
    "lower": (int, float, type(None)),
    "upper": (int, float, type(None)),
}


#: What the value at a place the checks name must be, by the place's last key: a key
#: means the same wherever the checks look for it, so one table serves every path (an
#: index — a candidate or a spend row — must be an object).
_EXPECTED: dict[str | int, str] = {
    "stopped_early": "true or false",
    "reason": "text",
    "attempts_planned": "a whole number",
    "attempts_run": "a whole number",
    "attempts_saved": "a whole number",
    "alpha": "a level between 0 and 1 (exclusive)",
    "alpha_per_candidate": "a level between 0 and 1 (exclusive)",
    "method": "text",
    "candidates": "a list of objects",
    "cluster": "text (the metadata field the sequence ran by)",
    "clusters_used": "a whole number",
    "clusters_planned": "a whole number",
    "rule_candidates": "a whole number",
    "paired_clusters": "a whole number",
    "candidate_variant_id": "text",
    "decision": "text or null",
    "lower": "an interval end not above `upper` (finite, or null with `upper` null for an "
    "empty sequence)",
    "upper": "an interval end not below `lower` (finite, or null with `lower` null for an "
    "empty sequence)",
    "gate_lower": "an interval end (finite, or null for an empty sequence)",
    "judge_spend_after_decision": "a list of objects",
    "variant_id": "text",
    "judge_scores": "a whole number",
    "unavailable_scores": "a whole number",
    "spent_cost_usd": "a number or null",
    "input_tokens": "a whole number",
    "output_tokens": "a whole number",
}
#: What a whole record of each kind must be (the place its checks name as ``[]``).
_ROOTS = {"stopping": "an object", "judge_spend_failed_trials": "a list of objects"}
#: Characters of the offending value a refusal shows (a block can be long).
_SHOWN = 60


def expected_at(kind: str, record: Any, where: Sequence[str | int]) -> str:
    """What the value at ``where`` (a path the checks return) in ``record``, a saved
    record of ``kind`` (``"stopping"`` or ``"judge_spend_failed_trials"``), must be, and
    what it is: ``"expected …, got …"``, the value's repr clipped.

    Examples
    --------
    >>> block = {"candidates": [{"lower": 0.3, "upper": 0.1}]}
    >>> expected_at("stopping", block, ["candidates", 0, "lower"])
    'expected an interval end not above `upper` (finite, or null with `upper` null for an \
empty sequence), got 0.3'
    >>> expected_at("stopping", {}, ["alpha_per_candidate"])
    'expected a level between 0 and 1 (exclusive), got nothing (the key is missing)'
    >>> expected_at("judge_spend_failed_trials", "x" * 100, [])[:40]
    "expected a list of objects, got 'xxxxxxx"
    """
    value = record
    for key in where:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return f"expected {_expected(kind, where)}, got nothing (the key is missing)"
    return f"expected {_expected(kind, where)}, got {clip(repr(value), _SHOWN)}"


def _expected(kind: str, where: Sequence[str | int]) -> str:
    """The words of :data:`_EXPECTED` (or :data:`_ROOTS`) for the place ``where``."""
    if not where:
        return _ROOTS[kind]
    last = where[-1]
    # (A key the table lacks still gets a refusal, not a KeyError: the test of this module
    # keeps the table complete.)
    return "an object" if isinstance(last, int) else _EXPECTED.get(last, "a valid value")


#: Each candidate's interval ends: the gate of a run the rule watched reads ``lower`` as
#: its bound, so each must be a finite number.
_ENDS = ("lower", "upper")


def _has(value: Any, types: tuple[type, ...]) -> bool:
    """``value`` is of one of the JSON ``types`` (a boolean is not a number here, though
    Python's ``bool`` is an ``int``)."""
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def check_block(block: Any) -> list[str | int] | None:
    """Where a saved ``early_stopping`` block is not one this module can render (a path of
    keys), or None when it is.

    Beyond the types, each α must be a level and each candidate's interval end a finite
    number: a run's gate reads them (:func:`~agenticlens_frames.paired.gate.noninferiority_gate`
    in a run the rule watched), and a level of 2 or a NaN bound would be said as a "-100%
    bound" or "+nan" rather than refused.

    Examples
    --------
    >>> check_block({"stopped_early": True, "reason": 3})
    ['reason']
    >>> check_block({"stopped_early": True, "reason": "", "attempts_planned": True})
    ['attempts_planned']
    """
    if not isinstance(block, Mapping):
        return []
    for key, types in _FIELDS.items():
        if not _has(block.get(key), types):
            return [key]
    if not is_level(block["alpha"]):
        return ["alpha"]
    clustered = is_clustered(block)
    for key, types in _CLUSTER_FIELDS.items() if clustered else ():
        if not _has(block.get(key), types):
            return [key]
    # Kept by an archive slice of some candidates: how many the rule split α across.
    if "rule_candidates" in block and (
        not isinstance(block["rule_candidates"], int) or isinstance(block["rule_candidates"], bool)
    ):
        return ["rule_candidates"]
    for i, c in enumerate(block["candidates"]):
        if not isinstance(c, Mapping):
            return ["candidates", i]
        for key, types in _CANDIDATE_FIELDS.items():
            if not _has(c.get(key), types):
                return ["candidates", i, key]
        # Rendered beside the paired cases when present (blocks without clusters lack it).
        if "paired_clusters" in c and not isinstance(c["paired_clusters"], int):
            return ["candidates", i, "paired_clusters"]
    where = check_bounds(block)
    if where is not None:
        return where
    # Said in the judges' cost lines when present (a run whose judges graded attempts past
    # the decision point).
    spend = block.get("judge_spend_after_decision")
    if spend is not None:
        where = check_spend(spend)
        if where is not None:
            return ["judge_spend_after_decision", *where]
    return None


def _end(value: Any) -> bool:
    """``value`` is an interval end as a sequence gives it: a finite number, or none (null
    or NaN) when the sequence is empty — every value excluded, which a betting sequence
    can reach (with exchangeable cases at most with probability α) and then keeps.

    Examples
    --------
    >>> [_end(v) for v in (-0.1, None, float("nan"), float("inf"), True, "0.1")]
    [True, True, True, False, False, False]
    """
    if value is None:
        return True
    return is_json_number(value) and not math.isinf(value)


def check_bounds(block: Any) -> list[str | int] | None:
    """Where an ``early_stopping`` block is not one a run's non-inferiority gate can read
    (a path of keys), or None when it is: ``alpha_per_candidate`` a level (0 < α < 1, the
    level of the gate's bound) and each candidate's ``candidate_variant_id`` text and
    ``lower`` and ``upper`` interval ends (:func:`_end`: finite, or none for an empty
    sequence; ``lower`` is the gate's bound in a block saved before ``gate_lower``), both
    none or ``lower`` ≤ ``upper``; a candidate's ``gate_lower``, when present, an end too,
    and ``alpha``, its level, a level.

    Part of :func:`check_block`; alone, the check of a block passed to
    :func:`~agenticlens_frames.paired.gate.noninferiority_gate`, which reads no more.

    Examples
    --------
    >>> check_bounds({"alpha_per_candidate": 0.025,
    ...               "candidates": [{"candidate_variant_id": "b", "lower": -0.1,
    ...                               "upper": float("inf")}]})
    ['candidates', 0, 'upper']
    >>> check_bounds({"alpha_per_candidate": 2, "candidates": []})
    ['alpha_per_candidate']
    >>> check_bounds({"alpha_per_candidate": 0.025,
    ...               "candidates": [{"candidate_variant_id": "b", "lower": 0.3, "upper": 0.1}]})
    ['candidates', 0, 'lower']
    """
    if not isinstance(block, Mapping):
        return []
    level = block.get("alpha_per_candidate")
    if not is_level(level):
        return ["alpha_per_candidate"]
    candidates = block.get("candidates")
    if not isinstance(candidates, list):
        return ["candidates"]
    for i, c in enumerate(candidates):
        if not isinstance(c, Mapping):
            return ["candidates", i]
        if not isinstance(c.get("candidate_variant_id"), str):
            return ["candidates", i, "candidate_variant_id"]
        for key in _ENDS:
            if key not in c or not _end(c[key]):
                return ["candidates", i, key]
        # The hull of the values the sequence has not excluded: empty (both ends none) or
        # lower ≤ upper; a reversed or half-empty one was said as "[+30.0, +10.0] pp", and
        # a gate read its lower end as a bound.
        if not ends_in_order(c["lower"], c["upper"]):
            return ["candidates", i, "lower"]
        if is_missing(c["lower"]) != is_missing(c["upper"]):
            return ["candidates", i, "lower" if is_missing(c["lower"]) else "upper"]
        # ``gate_lower`` is not checked against ``upper``: it is the end of another
        # sequence (one-sided, at α unsplit), which can pass the two-sided upper end
        # while both are non-empty (one of them then misses the mean, as either may).
        # The gate's own one-sided bound, at ``alpha``, when present (blocks saved before
        # the runner wrote it lack it, and the gate then reads ``lower``).
        if "gate_lower" in c:
            if not _end(c["gate_lower"]):
                return ["candidates", i, "gate_lower"]
            alpha = block.get("alpha")
            if not is_level(alpha):
                return ["alpha"]
    return None


def check_spend(rows: Any) -> list[str | int] | None:
    """Where saved judge-spend rows (the stopping block's ``judge_spend_after_decision``, a
    run's ``judge_spend_failed_trials``) are not ones the judges' cost lines can say (a
    path of keys below them), or None when they are.

    Examples
    --------
    >>> check_spend([{"variant_id": "a", "judge_scores": "2"}])
    [0, 'judge_scores']
    >>> check_spend([]) is None
    True
    """
    if not isinstance(rows, list):
        return []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            return [i]
        for key, types in _SPEND_FIELDS.items():
            value = row.get(key)
            if not isinstance(value, types) or isinstance(value, bool):
                return [i, key]
    return None


def is_clustered(block: Mapping[str, Any]) -> bool:
    """The sequence ran at the cluster level (declared case clusters).

    Examples
    --------
    >>> is_clustered({"unit": "cluster"}), is_clustered({})
    (True, False)
    """
    return block.get("unit") == "cluster"


def declared_correction(block: Mapping[str, Any]) -> str | None:
    """The correction the run declared (the one its fixed-sample verdicts use), of a
    stopping block or of ``run.json``'s recorded settings; None when nothing was declared.

    ``declared_correction``, or in a block written before that key, ``correction`` (which
    then held the declared one). Recorded settings written before it hold only the applied
    one in ``correction``: read them with ``"declared_correction" in settings`` first.

    Examples
    --------
    >>> declared_correction({"correction": "bonferroni", "declared_correction": "holm"})
    'holm'
    >>> declared_correction({"correction": "holm"})  # a block of an earlier version
    'holm'
    >>> declared_correction({"correction": "none", "declared_correction": None}) is None
    True
    """
    value = (
        block["declared_correction"] if "declared_correction" in block else block.get("correction")
    )
    return value if isinstance(value, str) else None


def rule_settings(block: Mapping[str, Any]) -> dict[str, Any]:
    """The comparison settings an early-stopping rule decided with, of a stopping block or
    of ``run.json``'s recorded settings: ``correction`` (the declared one,
    :func:`declared_correction`), ``alpha`` and ``cluster`` (the case metadata field the
    sequence ran by); None where the block says none (no correction was declared, the
    sequence ran case by case, or a hand-made block without α).

    The final analysis of the run declares them
    (:func:`~agenticlens_frames.paired.settings.run_comparisons`).

    Examples
    --------
    >>> rule_settings({"alpha": 0.1, "correction": "bonferroni", "declared_correction": "holm",
    ...                "unit": "cluster", "cluster": "topic"})
    {'correction': 'holm', 'alpha': 0.1, 'cluster': 'topic'}
    >>> rule_settings({"alpha": 0.05, "correction": "none", "declared_correction": None})
    {'correction': None, 'alpha': 0.05, 'cluster': None}
    """
    alpha = block.get("alpha")
    cluster = block.get("cluster")
    return {
        "correction": declared_correction(block),
        "alpha": (
            float(alpha)
            if isinstance(alpha, (int, float)) and not isinstance(alpha, bool)
            else None
        ),
        # (A block without clusters has no "cluster" key; run.json's settings hold None.)
        "cluster": cluster if isinstance(cluster, str) else None,
    }


#: What each saved run-level record is called in its refusal, and its check.
_RECORDS = {
    "stopping": ("early-stopping record", check_block),
    "judge_spend_failed_trials": ("judge spend of failed trials", check_spend),
}


def checked_record(
    kind: str,
    value: Any,
    *,
    file: str | Path,
    location: Sequence[str | int],
    hint: str,
    where: str = "",
) -> Any:
    """``value``, a saved run-level record of ``kind`` (``"stopping"``: an early-stopping
    block, ``"judge_spend_failed_trials"``), once checked as every surface reads it; a
    damaged one is refused naming ``file`` and the place below ``location``.

    One refusal for a report, a run's parquet metadata and an archive's specification
    (``where`` says in which part of the file); it says what the value there must be and
    what it is (:func:`expected_at`).

    Examples
    --------
    >>> checked_record("judge_spend_failed_trials", [], file="r.json", location=[], hint="")
    []
    >>> checked_record("judge_spend_failed_trials", [{"variant_id": 1}], file="r.json",
    ...                location=["x"], hint="write it again")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: r.json: x[0].variant_id: damaged judge spend of \
failed trials: expected text, got 1 (write it again)
    """
    what, check = _RECORDS[kind]
    bad = check(value)
    if bad is not None:
        raise InputError(
            f"damaged {what}{where}: {expected_at(kind, value, bad)}",
            file=file,
            location=[*location, *bad],
            hint=hint,
        )
    return value
