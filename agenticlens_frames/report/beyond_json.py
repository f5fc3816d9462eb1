"""JSON report blocks of the frontier bootstrap and the factor effects, and their readers.

``pareto_uncertainty`` and ``factor_effects`` are top-level keys of our own: AgenticLens'
loader ignores them. :mod:`agenticlens_frames.frontier` and
:mod:`agenticlens_frames.factorial` compute the frames; this module only writes them to
JSON-ready dicts (``report/json_report.py``) and reads them back (``report/saved.py``), so
the analysis layer never renders.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .._values import clip, ends_in_order, is_json_number, is_level
from ..factorial import ANOVA_NOTE, FACTOR_EFFECT_COLUMNS, FLOAT_COLUMNS, LABEL_COLUMNS
from ..frontier import FRONTIER_OBJECTIVES, METHOD, interval_columns

__all__ = [
    "factor_effects_block",
    "factor_effects_from_block",
    "frontier_block",
    "frontier_frame_from_block",
]


#: What a factor effect's outcome is, in the JSON block.
UNIT = (
    "case (each case's pass rate and mean score over its evaluated attempts: a failed "
    "trial's attempts left out, as in the paired comparisons)"
)


def _effect_number(value: Any) -> Any:
    """A factor-effect cell as JSON: a float, null for None/NaN; a non-number as it is."""
    if value is None:
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return value
    return None if np.isnan(f) else f


def _probability(value: Any) -> float | None:
    """A frontier cell as JSON: a float, or null for anything missing or not a number."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(f) else f


def factor_effects_block(frame: pd.DataFrame | None) -> dict[str, Any] | None:
    """The JSON report's ``factor_effects`` block, or None if there are no terms.

    Examples
    --------
    >>> factor_effects_block(pd.DataFrame(columns=FACTOR_EFFECT_COLUMNS)) is None
    True
    """
    if frame is None or frame.empty:
        return None
    terms = []
    for r in frame.to_dict("records"):
        terms.append(
            {
                k: (
                    list(r[k])
                    if k == "through"
                    else bool(r[k])
                    if k == "estimable"
                    else r[k]
                    if k in LABEL_COLUMNS
                    else _effect_number(r[k])
                )
                for k in FACTOR_EFFECT_COLUMNS
            }
        )
    a = frame.attrs
    return {
        "design": a.get("design"),
        "design_notes": list(a.get("design_notes", [])),
        "correction": a.get("correction"),
        "correction_family": a.get("correction_family"),
        "confidence_level": a.get("confidence_level"),
        "method": a.get("method"),
        "unit": UNIT,
        "anova": ANOVA_NOTE,
        "terms": terms,
    }


#: The text columns of a factor-effect term that may not be null: its name, its metric and
#: its kind.
_NAMED_BY = ("metric", "term", "kind")


#: A factor-effect term's p-values (its own, corrected, and its factor's ANOVA).
_P_VALUES = ("p_value", "p_adjusted", "anova_p")


def _check_order(saved: dict[str, Any], where: str, low_key: str, high_key: str) -> None:
    """Refuse a saved interval (``saved[low_key]``, ``saved[high_key]``) whose low end is
    above its high end, naming it at ``where``; a missing end is for the caller's rule.

    Examples
    --------
    >>> _check_order({"lower": None, "upper": 0.2}, "x", "lower", "upper")
    >>> _check_order({"ci_low": 0.5, "ci_high": 0.1}, "terms[2]", "ci_low", "ci_high")
    Traceback (most recent call last):
    ...
    ValueError: terms[2].ci_low: the interval's low end is above its high end (ci_low 0.5 > \
ci_high 0.1)
    """
    low, high = saved.get(low_key), saved.get(high_key)
    if not ends_in_order(low, high):
        raise ValueError(
            f"{where}.{low_key}: the interval's low end is above its high end "
            f"({low_key} {low!r} > {high_key} {high!r})"
        )


def _check_ranges(term: dict[str, Any], n: int) -> None:
    """Refuse a factor-effect term's number the analysis cannot give (its types already
    checked): a negative standard error, degrees of freedom that are negative or
    infinite, a negative ANOVA F, a Greenhouse–Geisser epsilon outside (0, 1], a p-value
    outside [0, 1], an interval whose low end is above its high end, a case count that is
    not a whole number ≥ 0. Null (NaN by the standard encoder) stays: a term that cannot
    be estimated, or a test that does not apply, holds it.

    ``statistic`` is the term's t (its estimate over its standard error), negative for a
    negative effect and ±inf with a zero standard error, so it is not range-checked; the
    F is ``anova_f``, inf over a zero error term (restored from ``infinite_values``).

    Examples
    --------
    >>> _check_ranges({"se": None, "p_value": float("nan"), "ci_low": None}, 0)
    >>> _check_ranges({"df": 0.0, "statistic": -3.0, "anova_eps": 0.5, "n_cases": 2.0}, 1)
    >>> _check_ranges({"se": 0.1, "p_value": 1.5}, 3)
    Traceback (most recent call last):
    ...
    ValueError: terms[3].p_value: expected a p-value between 0 and 1 or null, got 1.5
    >>> _check_ranges({"anova_eps": 1.2}, 4)
    Traceback (most recent call last):
    ...
    ValueError: terms[4].anova_eps: expected a Greenhouse–Geisser epsilon in (0, 1] or \
null, got 1.2
    """
    # Each is said as it stands (a table's "se -0.1", "p 1.5", "[+0.3, +0.1]"), and the
    # forest plot drew a reversed interval as if it were one.
    se = term.get("se")
    if is_json_number(se) and se < 0:
        raise ValueError(f"terms[{n}].se: expected a number ≥ 0 or null, got {se!r}")
    # The t's df: cases − 1 or clusters − 1 (0 with one case, whose t is null), never
    # infinite; NaN (null) where the term is not estimated.
    df = term.get("df")
    if is_json_number(df) and not (df != df or 0 <= df < math.inf):
        raise ValueError(f"terms[{n}].df: expected a finite number ≥ 0 or null, got {df!r}")
    # A ratio of two sums of squares over their df: never negative (inf over a zero
    # error term).
    f = term.get("anova_f")
    if is_json_number(f) and f < 0:
        raise ValueError(f"terms[{n}].anova_f: expected an F ≥ 0 or null, got {f!r}")
    # Greenhouse–Geisser: tr(S)² / (d tr(S²)) lies in [1/d, 1] (stats_factorial), 1/d
    # exactly with two cases; d (the factor's levels − 1) is not in the term, so only
    # what no effect can give, 0 or below and above 1, is refused.
    eps = term.get("anova_eps")
    if is_json_number(eps) and not (eps != eps or 0 < eps <= 1):
        raise ValueError(
            f"terms[{n}].anova_eps: expected a Greenhouse–Geisser epsilon in (0, 1] or "
            f"null, got {eps!r}"
        )
    # Written as a float (14.0) by the block's number rule; 0 when a metric has no outcome.
    cases = term.get("n_cases")
    if not (cases is None or cases != cases or _whole(cases, 0, written_as_float=True)):
        raise ValueError(
            f"terms[{n}].n_cases: expected a whole number ≥ 0 or null, got {clip(repr(cases), 60)}"
        )
    for column in _P_VALUES:
        value = term.get(column)
        if not _share_or_null(value):
            raise ValueError(
                f"terms[{n}].{column}: expected a p-value between 0 and 1 or null, got {value!r}"
            )
    _check_order(term, f"terms[{n}]", "ci_low", "ci_high")


def factor_effects_from_block(block: dict[str, Any]) -> pd.DataFrame:
    """Inverse of :func:`factor_effects_block`, for a saved report.

    Examples
    --------
    >>> factor_effects_from_block({"terms": []}).columns.tolist() == FACTOR_EFFECT_COLUMNS
    True
    """
    terms = block.get("terms", [])
    if not isinstance(terms, list) or not all(isinstance(t, dict) for t in terms):
        raise TypeError("expected 'terms' to be a list of objects")
    text = [c for c in FACTOR_EFFECT_COLUMNS if c not in FLOAT_COLUMNS]
    text = [c for c in text if c not in ("estimable", "n_cases", "through")]
    for n, term in enumerate(terms):
        # Rendered as they are (tables, figure labels): a hand-edited report is refused
        # here, naming the term, rather than crash a renderer.
        through = term.get("through") or []
        if not isinstance(through, list) or not all(isinstance(t, str) for t in through):
            raise TypeError(f"terms[{n}].through: expected a list of variant ids")
        for column in text:
            value = term.get(column)
            if column in _NAMED_BY:
                # What names the row and picks its table (null was shown as "nan").
                if not isinstance(value, str):
                    raise TypeError(f"terms[{n}].{column}: expected a string, got {value!r}")
            # null in the file; NaN when written by the standard encoder (json.dumps)
            elif not (value is None or isinstance(value, str) or value != value):
                raise TypeError(f"terms[{n}].{column}: expected a string or null")
        # (Text read as true, and a number's text as NaN, with no word said.)
        if not isinstance(term.get("estimable"), bool):
            raise TypeError(f"terms[{n}].estimable: expected true or false")
        for column in FLOAT_COLUMNS:
            value = term.get(column)
            if not (value is None or is_json_number(value)):
                raise TypeError(f"terms[{n}].{column}: expected a number or null, got {value!r}")
        _check_ranges(term, n)
    # Said under the table line by line, and in the correction's statement.
    notes = block.get("design_notes")
    if notes is not None and not (
        isinstance(notes, list) and all(isinstance(note, str) for note in notes)
    ):
        raise TypeError("design_notes: expected a list of strings")
    from ..paired.verdicts import CORRECTION_NAMES

    correction = block.get("correction")
    if correction is not None and not (
        isinstance(correction, str) and correction in CORRECTION_NAMES
    ):
        raise ValueError(
            f"correction: expected one of {', '.join(CORRECTION_NAMES)} or null, got {correction!r}"
        )
    level = block.get("confidence_level")
    if level is not None and not is_level(level):
        raise ValueError(f"confidence_level: expected a number between 0 and 1, got {level!r}")
    frame = pd.DataFrame(terms, columns=FACTOR_EFFECT_COLUMNS)
    frame["through"] = [tuple(t or ()) for t in frame["through"]]
    for c in FLOAT_COLUMNS:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
    frame["estimable"] = frame["estimable"].astype(bool)
    # Whole numbers (written as 14.0): int64 as in the analysis, unless one is missing.
    cases = pd.to_numeric(frame["n_cases"], errors="coerce")
    frame["n_cases"] = cases.astype(np.int64) if cases.notna().all() else cases
    frame.attrs.update(
        {
            k: block.get(k)
            for k in ("design", "correction", "correction_family", "confidence_level", "method")
        },
        design_notes=list(block.get("design_notes") or []),
    )
    return frame


def frontier_block(variants: pd.DataFrame, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON report's ``pareto_uncertainty`` block from the variant summary, or None.

    ``settings`` are the bootstrap's ``attrs`` (resamples, seed, confidence level,
    method, the unit resampled — ``cases`` or ``clusters`` — the cluster field and count,
    and notes in words).

    Examples
    --------
    >>> frontier_block(pd.DataFrame({"variant_id": ["a"]}), {}) is None
    True
    """
    if "p_frontier" not in variants:
        return None
    rows = []
    for v in variants.to_dict("records"):
        rows.append(
            {
                "variant_id": str(v["variant_id"]),
                "p_frontier": _probability(v["p_frontier"]),
                "p_best": {n: _probability(v[f"p_best_{n}"]) for n in FRONTIER_OBJECTIVES},
                "intervals": {
                    column: {
                        "lower": _probability(v[f"{column}_boot_ci_low"]),
                        "upper": _probability(v[f"{column}_boot_ci_high"]),
                    }
                    for column in interval_columns()
                },
            }
        )
    return {
        "method": settings.get("method", METHOD),
        "n_resamples": settings.get("n_resamples"),
        "seed": settings.get("seed"),
        "confidence_level": settings.get("confidence_level"),
        # A report written before clusters were resampled drew cases.
        "resampled": settings.get("resampled", "cases"),
        "cluster": settings.get("cluster"),
        "n_clusters": settings.get("n_clusters"),
        "notes": list(settings.get("notes") or []),
        "objectives": {
            n: {"column": c, "higher_is_better": h} for n, (c, h) in FRONTIER_OBJECTIVES.items()
        },
        "variants": rows,
    }


def _share_or_null(value: Any) -> bool:
    """``value`` is a saved share or probability (a number in [0, 1]) or missing (null;
    NaN as the standard encoder writes it).

    Examples
    --------
    >>> [_share_or_null(v) for v in (0.5, None, float("nan"), 1.5, "0.5", True)]
    [True, True, True, False, False, False]
    """
    if value is None:
        return True
    if not is_json_number(value):
        return False
    # (A mean of shares, ties split, may round a hair past 1; never below 0.)
    return value != value or 0 <= value <= 1 + 1e-9


def _whole(value: Any, least: int, *, written_as_float: bool = False) -> bool:
    """``value`` is a whole JSON number ≥ ``least`` (not a boolean, not 2.0 unless
    ``written_as_float``: a block whose counts the writer gives as floats, 14.0).

    Examples
    --------
    >>> [_whole(v, 0) for v in (2, 2.0, -1, True)]
    [True, False, False, False]
    >>> [_whole(v, 0, written_as_float=True) for v in (2, 2.0, 2.5, -1.0, float("inf"))]
    [True, True, False, False, False]
    """
    if written_as_float and isinstance(value, float) and value.is_integer():
        return value >= least
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_frontier_settings(block: dict[str, Any]) -> None:
    """Refuse frontier-bootstrap settings this version does not write: a confidence level
    that is not a level, a seed that is not a whole number ≥ 0, an unknown unit resampled
    (with clusters, their field and count too; with cases, a cluster field or count), a
    method that is not text. Each may be null or absent, as in a report written before it
    was kept.

    Examples
    --------
    >>> _check_frontier_settings({"method": METHOD, "confidence_level": 0.95, "seed": 0})
    >>> _check_frontier_settings({"confidence_level": 7})
    Traceback (most recent call last):
    ...
    ValueError: confidence_level: expected a number between 0 and 1 or null, got 7
    >>> _check_frontier_settings({"resampled": "cases", "cluster": "topic"})
    Traceback (most recent call last):
    ...
    ValueError: cluster: expected null beside a case bootstrap (resampled 'cases'), got 'topic'
    """
    # Kept in the variants' attrs and said in the frontier section ("seed 0; the 4 clusters
    # of cases by topic drawn …"), and written again by a report of the loaded analysis.
    level = block.get("confidence_level")
    if level is not None and not is_level(level):
        raise ValueError(
            f"confidence_level: expected a number between 0 and 1 or null, got {level!r}"
        )
    seed = block.get("seed")
    if seed is not None and not _whole(seed, 0):
        raise ValueError(f"seed: expected a whole number ≥ 0 or null, got {seed!r}")
    # (A report written before clusters were resampled has no "resampled": cases.)
    resampled = block.get("resampled")
    if resampled == "clusters":
        cluster, groups = block.get("cluster"), block.get("n_clusters")
        if not isinstance(cluster, str):
            raise ValueError(
                f"cluster: expected the metadata field the clusters were drawn by, got {cluster!r}"
            )
        if not _whole(groups, 1):
            raise ValueError(f"n_clusters: expected a whole number ≥ 1, got {groups!r}")
    elif resampled in (None, "cases"):
        # A case bootstrap draws no clusters: we write both null beside it, and the frontier
        # section would name a field and count that were never drawn.
        for key in ("cluster", "n_clusters"):
            value = block.get(key)
            if value is not None:
                raise ValueError(
                    f"{key}: expected null beside a case bootstrap (resampled "
                    f"{resampled!r}), got {clip(repr(value), 60)}"
                )
    else:
        raise ValueError(f"resampled: expected 'cases', 'clusters' or null, got {resampled!r}")
    # The method is words said as they stand (escaped on the page), not read: another
    # version's wording loads; only a value that is not text is refused.
    method = block.get("method")
    if method is not None and not isinstance(method, str):
        raise ValueError(
            f"method: expected the bootstrap's method in words or null, got {method!r}"
        )


def _frontier_intervals(variant: dict[str, Any], i: int) -> dict[str, dict[str, Any]]:
    """The saved bootstrap intervals of the ``i``-th variant of a frontier block, by
    column (none when it holds none), once checked: each an object or null, its ``lower``
    and ``upper`` numbers or null (NaN as the standard encoder writes it), not reversed.

    They are drawn as the frontier plot's error bars and shown beside each variant: text
    was read as NaN with no word said, and a reversed interval drawn as if it were one.

    Examples
    --------
    >>> _frontier_intervals({"intervals": {"cost": {"lower": None, "upper": 0.2}}}, 0)
    {'cost': {'lower': None, 'upper': 0.2}}
    >>> _frontier_intervals({"intervals": {"cost": {"lower": 0.3, "upper": 0.2}}}, 1)
    Traceback (most recent call last):
    ...
    ValueError: variants[1].intervals.cost.lower: the interval's low end is above its high \
end (lower 0.3 > upper 0.2)
    """
    intervals = variant.get("intervals")
    if intervals is None:
        return {}
    if not isinstance(intervals, dict):
        raise TypeError(
            f"variants[{i}].intervals: expected an object or null, got {clip(repr(intervals), 60)}"
        )
    out = {}
    for column, iv in intervals.items():
        where = f"variants[{i}].intervals.{column}"
        if iv is None:
            iv = {}
        if not isinstance(iv, dict):
            raise TypeError(f"{where}: expected an object or null, got {clip(repr(iv), 60)}")
        for end in ("lower", "upper"):
            value = iv.get(end)
            if not (value is None or is_json_number(value)):
                raise TypeError(
                    f"{where}.{end}: expected a number or null, got {clip(repr(value), 60)}"
                )
        _check_order(iv, where, "lower", "upper")
        out[str(column)] = iv
    return out


def frontier_frame_from_block(block: dict[str, Any]) -> pd.DataFrame:
    """Inverse of :func:`frontier_block`: the per-variant columns, for a saved report.

    Examples
    --------
    >>> block = {"variants": [{"variant_id": "a", "p_frontier": 0.5}]}
    >>> frontier_frame_from_block(block).loc[0, "p_frontier"]
    np.float64(0.5)
    >>> frontier_frame_from_block({"variants": [{"variant_id": "a", "p_frontier": 59}]})
    Traceback (most recent call last):
    ...
    ValueError: variants[0].p_frontier: expected a share between 0 and 1 or null, got 59
    """
    # Said in the Pareto note and the page's frontier section ("the share of 2000
    # case-bootstrap resamples"): "many" or -5 was said as it stood.
    n = block.get("n_resamples")
    if n is not None and not _whole(n, 1):
        raise ValueError(f"n_resamples: expected a whole number ≥ 1 or null, got {n!r}")
    notes = block.get("notes")
    if notes is not None and not (
        isinstance(notes, list) and all(isinstance(note, str) for note in notes)
    ):
        raise TypeError("notes: expected a list of strings")
    _check_frontier_settings(block)
    rows = []
    for i, v in enumerate(block.get("variants", [])):
        row: dict[str, Any] = {"variant_id": v["variant_id"], "p_frontier": v.get("p_frontier")}
        for n in FRONTIER_OBJECTIVES:
            row[f"p_best_{n}"] = (v.get("p_best") or {}).get(n)
        # Shown as percentages beside each Pareto flag (a hand edit of 59 for 59% read as
        # "5900%", text as a share): anything but a share or null is refused, naming it.
        for key, value in row.items():
            if key != "variant_id" and not _share_or_null(value):
                where = f"p_best.{key[len('p_best_') :]}" if key != "p_frontier" else key
                raise ValueError(
                    f"variants[{i}].{where}: expected a share between 0 and 1 or null, "
                    f"got {value!r}"
                )
        for column, iv in _frontier_intervals(v, i).items():
            row[f"{column}_boot_ci_low"] = iv.get("lower")
            row[f"{column}_boot_ci_high"] = iv.get("upper")
        rows.append(row)
    frame = pd.DataFrame(rows)
    for c in frame.columns[1:]:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
    return frame
