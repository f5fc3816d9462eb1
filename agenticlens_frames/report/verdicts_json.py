"""The report's ``verdicts`` block: written from the verdict frame and read back.

The block renders :func:`agenticlens_frames.case_verdicts` (NaN → null);
:func:`verdicts_from_block` turns a saved block back into the frame for re-rendering.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..paired.verdicts import HOW_TO_DECLARE, REGRESSION_DIMENSIONS, VERDICT_COLUMNS
from ..schema import json_ready
from .paired_json import _records  # NaN → null, numpy scalars → Python: the paired blocks' rule

__all__ = ["verdicts_block", "verdicts_from_block"]


def verdicts_block(frame: pd.DataFrame) -> dict[str, Any]:
    """The JSON-ready ``verdicts`` block of the report (NaN → null).

    Keys: ``declared``, ``correction`` (null when not declared), ``how_to_declare``
    (null when declared), ``regression_dimensions``, ``tests`` (the tests behind the
    p-values, :func:`~agenticlens_frames.paired.verdicts.p_value_tests`), ``rows`` (one
    record per row of :func:`case_verdicts`) and ``omitted`` (the comparisons without a
    row and why, the frame's ``attrs["omitted"]``; left out when the frame has none).

    Examples
    --------
    >>> from agenticlens_frames import case_verdicts, load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> block = verdicts_block(case_verdicts(run))
    >>> block["declared"], block["correction"], block["rows"][1]["verdict"]
    (True, 'holm', 'no detectable difference')
    >>> verdicts_from_block(block)["verdict"].iloc[1]
    'no detectable difference'
    """
    declared = bool(frame.attrs.get("declared", False))
    rows = _records(frame)
    correction = frame.attrs.get("correction")
    if correction is None and declared and len(frame):
        correction = str(frame["correction"].iloc[0])
    block: dict[str, Any] = {
        "declared": declared,
        "correction": correction if declared else None,
        "how_to_declare": None if declared else HOW_TO_DECLARE,
        "regression_dimensions": list(REGRESSION_DIMENSIONS),
        "tests": list(frame.attrs.get("tests") or []),
        "rows": rows,
    }
    if "omitted" in frame.attrs:
        # Here, not only in the paired_comparisons block: without declared comparisons
        # there is none, and a loaded report lost which comparisons had no row.
        block["omitted"] = json_ready(list(frame.attrs["omitted"]))
    return block


def verdicts_from_block(block: Mapping[str, Any]) -> pd.DataFrame:
    """The verdict frame back from a saved report's ``verdicts`` block (see
    :func:`verdicts_block`); malformed rows are skipped, malformed values become missing."""
    rows = [r for r in block.get("rows", []) if isinstance(r, Mapping)]
    frame = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    numeric = ("mean_difference", "ci_low", "ci_high", "p_value", "adjusted_p_value", "mde")
    for column in (*numeric, "confidence_level", "alpha", "baseline_mean", "candidate_mean"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(np.float64)
    for column in ("paired_items", "family_size"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0).astype(np.int64)
    for column in ("verdict", "detectable", "statement", "unit", "dimension", "evaluator"):
        frame[column] = frame[column].fillna("").astype(str)
    # A hand-edited report may hold anything here; only true booleans count.
    frame["significant"] = pd.array(
        [v if isinstance(v, bool) else None for v in frame["significant"]], dtype="boolean"
    )
    frame.attrs["declared"] = bool(block.get("declared", False))
    tests = block.get("tests")
    if isinstance(tests, list):  # (absent from reports written before it was kept)
        frame.attrs["tests"] = [t for t in tests if isinstance(t, str)]
    omitted = block.get("omitted")
    if isinstance(omitted, list):  # (absent from reports written before it was kept)
        frame.attrs["omitted"] = [o for o in omitted if isinstance(o, Mapping)]
    if block.get("correction"):
        frame.attrs["correction"] = block["correction"]
    if not frame.attrs["declared"]:
        frame.attrs["how_to_declare"] = block.get("how_to_declare") or HOW_TO_DECLARE
    return frame
