"""JSON report blocks of the frontier bootstrap and the factor effects, and their readers.

``pareto_uncertainty`` and ``factor_effects`` are top-level keys of our own: AgenticLens'
loader ignores them. :mod:`agenticlens_frames.frontier` and
:mod:`agenticlens_frames.factorial` compute the frames; this module only writes them to
JSON-ready dicts (``report/json_report.py``) and reads them back (``report/saved.py``), so
the analysis layer never renders.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._values import is_json_number, is_level
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
    """``value`` is a saved share (a number in [0, 1]) or missing (null; NaN as the
    standard encoder writes it).

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
    if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        raise ValueError(f"n_resamples: expected a whole number ≥ 1 or null, got {n!r}")
    notes = block.get("notes")
    if notes is not None and not (
        isinstance(notes, list) and all(isinstance(note, str) for note in notes)
    ):
        raise TypeError("notes: expected a list of strings")
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
        for column, iv in (v.get("intervals") or {}).items():
            row[f"{column}_boot_ci_low"] = (iv or {}).get("lower")
            row[f"{column}_boot_ci_high"] = (iv or {}).get("upper")
        rows.append(row)
    frame = pd.DataFrame(rows)
    for c in frame.columns[1:]:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
    return frame
