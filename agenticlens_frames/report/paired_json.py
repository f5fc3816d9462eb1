"""The report's ``case_level`` and ``paired_comparisons`` blocks: written and read back.

The blocks render result frames and plain values of :mod:`agenticlens_frames.paired`
(NaN → null); :func:`paired_frames_from_block` turns a saved block back into frames for
re-rendering a saved report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._values import is_json_number, is_level
from ..paired import GATE_COLUMNS, PAIRED_COLUMNS, PairedAnalysis, gate_passed
from ..schema import json_ready

if TYPE_CHECKING:
    from ..analysis import ExperimentAnalysis

__all__ = ["case_level_block", "paired_block", "paired_frames_from_block", "report_blocks"]


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for record in frame.astype(object).to_dict("records"):
        out.append({str(k): json_ready(v) for k, v in record.items()})
    return out


def paired_block(result: PairedAnalysis) -> dict[str, Any]:
    """The JSON-ready ``paired_comparisons`` block of the report (NaN → null).

    Keys: ``settings`` (correction, alpha, family, method, what the correction
    controls…), ``fingerprint``, ``guard_rails``, ``unevaluated``, ``evaluators``,
    ``comparisons`` (one record per row of
    :func:`~agenticlens_frames.paired.paired_comparisons`), ``omitted`` and
    ``noninferiority`` (``{"passed": bool, "margin", "dimension", "alpha", "candidates":
    [...]}`` or null; with several gates ``margin`` and ``dimension`` are null, ``gates``
    lists ``{"dimension", "margin", "passed"}`` and ``candidates`` has one record per
    (dimension, candidate)).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> from agenticlens_frames.paired import paired_analysis, resolve_comparisons
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> block = paired_block(paired_analysis(run, resolve_comparisons(run.manifest,
    ...                                                               correction="holm")))
    >>> block["settings"]["correction"], block["comparisons"][0]["paired_items"]
    ('holm', 14)
    """
    settings = result.config.settings()
    gate = None
    if result.noninferiority is not None:
        gate = {
            "passed": gate_passed(result.noninferiority),
            "margin": result.config.noninferiority_margin,
            "dimension": result.config.noninferiority_dimension,
            "alpha": result.config.alpha,
            "candidates": _records(result.noninferiority),
        }
        if result.config.noninferiority:
            # Several gates: no one margin or dimension to name (null), and each gate's
            # margin and outcome; a single gate's block keeps exactly its old fields.
            rows = result.noninferiority
            gate["margin"] = gate["dimension"] = None
            gate["gates"] = [
                {
                    "dimension": d,
                    "margin": m,
                    "passed": gate_passed(rows[rows["dimension"].astype(str) == d]),
                }
                for d, m in result.config.noninferiority
            ]
    frame = result.comparisons
    sizes = (
        {str(k): int(v) for k, v in frame.groupby("evaluator")["family_size"].max().items()}
        if result.config.family == "per_evaluator" and len(frame)
        else (int(frame["family_size"].max()) if len(frame) else 0)
    )
    return {
        "settings": json_ready({**settings, "family_size": sizes}),
        "fingerprint": json_ready(result.fingerprint),
        "guard_rails": dict(result.guard_rails),
        "unevaluated": result.unevaluated,
        "evaluators": _records(result.evaluators),
        "comparisons": _records(frame),
        "omitted": json_ready(result.omitted),
        "noninferiority": gate,
    }


def case_level_block(
    confidence_level: float,
    summary: pd.DataFrame,
    variance: pd.DataFrame,
    labels: pd.DataFrame,
    *,
    cases: pd.DataFrame | None = None,
    trials: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The JSON-ready ``case_level`` block: intervals, variance, labels, noise floor.

    Keys: ``summary`` (:func:`~agenticlens_frames.paired.case_level_summary` records),
    ``variance`` (:func:`~agenticlens_frames.paired.variance_decomposition`), ``labels``
    (per variant, the number of cases per stability label), ``flaky_case_ids`` (per
    variant) and, given the case matrix ``cases`` and the trial summary ``trials``,
    ``label_counts``: ``[variant_id, case_id, attempts, passes]`` for each cell whose
    labelled counts are not the matrix's
    (:func:`~agenticlens_frames.paired.case_level.evaluated_counts`; ``[]`` when every
    cell's are), so a loaded report rebuilds ``case_labels`` exactly.
    """
    counts: dict[str, dict[str, int]] = {}
    flaky: dict[str, list[str]] = {}
    for vid, grp in labels.groupby("variant_id", observed=False, sort=False):
        counts[str(vid)] = {str(k): int(v) for k, v in grp["label"].value_counts().items()}
        flaky[str(vid)] = grp.loc[grp["label"] == "flaky", "case_id"].astype(str).tolist()
    block: dict[str, Any] = {
        "confidence_level": confidence_level,
        "summary": _records(summary),
        "variance": _records(variance),
        "labels": counts,
        "flaky_case_ids": flaky,
    }
    if cases is not None and trials is not None:
        block["label_counts"] = _label_counts(labels, cases, trials)
    return block


def _label_counts(
    labels: pd.DataFrame, cases: pd.DataFrame, trials: pd.DataFrame
) -> list[list[Any]]:
    """The cells of ``labels`` whose counts the case matrix does not give: few or none
    (the attempts no check judged, e.g. the Python API's plain inputs), not the grid."""
    from ..paired.case_level import evaluated_counts

    ids = [str(v) for v in labels["variant_id"].cat.categories]
    case_ids = [str(c) for c in labels["case_id"].cat.categories]
    attempts, passes = evaluated_counts(cases, trials, ids, case_ids)
    mine_n = labels["attempts"].to_numpy(np.int64)
    mine_x = labels["passes"].to_numpy(np.int64)
    v = labels["variant_id"].cat.codes.to_numpy(np.int64)
    c = labels["case_id"].cat.codes.to_numpy(np.int64)
    at = v * len(case_ids) + c
    differ = np.flatnonzero((mine_n != attempts[at]) | (mine_x != passes[at]))
    return [[ids[v[i]], case_ids[c[i]], int(mine_n[i]), int(mine_x[i])] for i in differ.tolist()]


#: variance_decomposition's count columns (the rest but the ids and the note are floats).
_VARIANCE_COUNTS = ("n_cases", "n_attempts")


def variance_frame_from_block(
    records: list[dict[str, Any]], variant_ids: list[str]
) -> pd.DataFrame:
    """:func:`~agenticlens_frames.paired.variance_decomposition` back from a saved report's
    ``case_level.variance`` records, in its column types (null → NaN).

    Examples
    --------
    >>> frame = variance_frame_from_block(
    ...     [{"variant_id": "b", "evaluator": "passed", "n_cases": 3, "icc": None, "note": ""}],
    ...     ["a", "b"])
    >>> frame["variant_id"].cat.categories.tolist(), frame["n_cases"].dtype, frame["icc"].isna()[0]
    (['a', 'b'], dtype('int64'), np.True_)
    """
    frame = pd.DataFrame.from_records(records)
    for column in frame.columns:
        if column in ("variant_id", "evaluator", "note"):
            continue
        values = pd.to_numeric(frame[column], errors="raise")
        frame[column] = (
            values.astype(np.int64) if column in _VARIANCE_COUNTS else values.astype(np.float64)
        )
    if "variant_id" in frame:
        frame["variant_id"] = pd.Categorical(frame["variant_id"], categories=variant_ids)
    for column in ("evaluator", "note"):
        if column in frame:
            frame[column] = frame[column].astype("str")
    return frame


def report_blocks(analysis: ExperimentAnalysis) -> dict[str, Any]:
    """Every new top-level report key: ``case_level`` always, ``paired_comparisons`` when
    a correction was declared.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> sorted(report_blocks(a))  # the example declares correction: holm
    ['case_level', 'paired_comparisons']
    """
    frames = analysis.paired_frames
    out: dict[str, Any] = {
        "case_level": case_level_block(
            analysis.confidence_level,
            frames["case_level_summary"],
            frames["variance_decomposition"],
            frames["case_labels"],
            cases=analysis.cases,
            trials=analysis.trials,
        )
    }
    if analysis.paired is not None:
        out["paired_comparisons"] = paired_block(analysis.paired)
    return out


def paired_frames_from_block(block: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Frames back from a saved report's ``paired_comparisons`` block (for re-rendering).

    Returns ``{"paired_comparisons": ..., "noninferiority": ...}`` (the latter only when
    the block has a gate).
    """
    frame = pd.DataFrame(block.get("comparisons", []), columns=PAIRED_COLUMNS)
    for column in ("ci_low", "ci_high", "p_value", "adjusted_p_value", "mde", "standard_error"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(np.float64)
    frame["significant"] = pd.array(frame["significant"].tolist(), dtype="boolean")
    frame.attrs["settings"] = dict(block.get("settings", {}))
    frame.attrs["fingerprint"] = dict(block.get("fingerprint", {}))
    frame.attrs["omitted"] = list(block.get("omitted", []))
    out = {"paired_comparisons": frame}
    gate = block.get("noninferiority")
    if gate:
        _check_gate(gate)
        g = pd.DataFrame(gate.get("candidates", []), columns=GATE_COLUMNS)
        g.attrs["passed"] = gate["passed"]
        out["noninferiority"] = g
    return out


#: A saved gate row's keys the gate's lines and --fail-on-regression read, with what each
#: must hold (bound null: a row the gate could not bound; bound_method null or absent: a
#: row or report without one).
_GATE_ROW: dict[str, tuple[str, Any]] = {
    "candidate_variant_id": ("a string", lambda v: isinstance(v, str)),
    "dimension": ("a string", lambda v: isinstance(v, str)),
    "bound": ("a number or null", lambda v: v is None or is_json_number(v)),
    "bound_side": ("'lower' or 'upper'", lambda v: v in ("lower", "upper")),
    "threshold": ("a finite number", lambda v: is_json_number(v) and np.isfinite(v)),
    "alpha": ("a level between 0 and 1", is_level),
    "bound_method": ("a string or null", lambda v: v is None or isinstance(v, str)),
    "passed": ("true or false", lambda v: isinstance(v, bool)),
    "reason": ("a string", lambda v: isinstance(v, str)),
}


def _check_gate(gate: Any) -> None:
    """Refuse a saved ``noninferiority`` block the gate's lines or its exit status would
    misread (the reader names ``paired_comparisons`` and this says where below it): a
    ``passed`` of ``"false"`` passed the gate (any text is true), a bound side or bound
    of another type crashed the rendering, an α of null or 7 was said as a "nan%" or
    "-600%" bound.

    Examples
    --------
    >>> _check_gate({"passed": "false", "candidates": []})
    Traceback (most recent call last):
    ...
    TypeError: noninferiority.passed: expected true or false, got 'false'
    """
    if not isinstance(gate, Mapping):
        raise TypeError(f"noninferiority: expected an object, got {type(gate).__name__}")
    if not isinstance(gate.get("passed"), bool):
        raise TypeError(
            f"noninferiority.passed: expected true or false, got {gate.get('passed')!r}"
        )
    rows = gate.get("candidates", [])
    if not isinstance(rows, list):
        raise TypeError(f"noninferiority.candidates: expected a list, got {type(rows).__name__}")
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"noninferiority.candidates[{i}]: expected an object")
        for key, (what, ok) in _GATE_ROW.items():
            if key == "bound_method" and key not in row:
                continue
            value = row.get(key)
            if not ok(value):
                raise TypeError(
                    f"noninferiority.candidates[{i}].{key}: expected {what}, got {value!r}"
                )
