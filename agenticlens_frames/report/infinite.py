"""Infinite numbers of our report blocks, kept beside them (JSON has no infinity).

A paired t with zero variance has ``df`` = inf, a change no sample size can detect has
``mde`` = inf (and a judge-noise variance may overflow): the blocks write them null, as
every JSON encoder must, and a loaded report read NaN ("unknown") where the analysis
said "none". The report's own ``agenticlens_frames`` block lists each such value under
``infinite_values`` — its place (a path of keys and indices) and ``"Infinity"`` or
``"-Infinity"`` — and :func:`restore_infinite` puts them back before the blocks are read.
Only our blocks are listed: AgenticLens's fields keep its own rule (null), and a report
written before the list (or by AgenticLens) reads null as NaN, as it always did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = ["INFINITE_KEY", "OUR_BLOCKS", "infinite_values", "restore_infinite"]

#: The key of the list in the report's ``agenticlens_frames`` block.
INFINITE_KEY = "infinite_values"

#: The top-level blocks the list may name: ours, never AgenticLens's fields. (Our other
#: blocks hold no number that can be infinite: ``pareto_uncertainty`` has probabilities
#: and bootstrap quantiles of finite means, the early-stopping bounds lie in [-1, 1].)
OUR_BLOCKS = ("case_level", "verdicts", "paired_comparisons", "factor_effects", "judge_noise")

_TOKENS = {"Infinity": math.inf, "-Infinity": -math.inf}


def infinite_values(
    report: Mapping[str, Any], tables: Iterable[tuple[Sequence[str], pd.DataFrame | None]]
) -> list[dict[str, Any]]:
    """Every infinite cell of ``tables`` as a ``{"path", "value"}`` entry of the report.

    Parameters
    ----------
    report
        The report as built (its blocks already JSON-ready: the infinities are null).
    tables
        ``(path, frame)`` pairs: the list of records at ``path`` in ``report`` was
        written from ``frame``, record ``i`` from row ``i`` (a path the report does not
        have, or a None frame, is skipped).

    Returns
    -------
    list of dict
        ``{"path": [*path, row, column], "value": "Infinity" | "-Infinity"}``, in the
        tables' order, row by row.

    Examples
    --------
    >>> frame = pd.DataFrame({"df": [3.0, np.inf], "mde": [-np.inf, 0.1]})
    >>> report = {"case_level": {"summary": [{"df": 3.0, "mde": None},
    ...                                      {"df": None, "mde": 0.1}]}}
    >>> infinite_values(report, [(("case_level", "summary"), frame)])
    [{'path': ['case_level', 'summary', 0, 'mde'], 'value': '-Infinity'}, \
{'path': ['case_level', 'summary', 1, 'df'], 'value': 'Infinity'}]
    """
    out: list[dict[str, Any]] = []
    for path, frame in tables:
        records: Any = report
        for key in path:
            records = records.get(key) if isinstance(records, Mapping) else None
        if frame is None or not isinstance(records, list) or not len(frame):
            continue
        numeric = frame.select_dtypes(include=["number"])
        values = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
        for row, col in zip(*np.nonzero(np.isinf(values)), strict=True):
            column = str(numeric.columns[col])
            if column not in records[row]:
                continue  # a column the block does not write
            sign = "Infinity" if values[row, col] > 0 else "-Infinity"
            out.append({"path": [*path, int(row), column], "value": sign})
    return out


def restore_infinite(data: dict[str, Any], file: Path) -> None:
    """Put the infinities the report lists (:func:`infinite_values`) back in place.

    Each entry is ``{"path": [...], "value": "Infinity" | "-Infinity"}`` with a path under
    one of :data:`OUR_BLOCKS`; anything else is a damaged report, refused naming the
    entry. An entry whose place holds no null (a block edited by hand since) is passed
    over: the value the report holds there stands.

    Examples
    --------
    >>> data = {"agenticlens_frames": {"infinite_values": [
    ...     {"path": ["verdicts", "rows", 0, "mde"], "value": "Infinity"}]},
    ...     "verdicts": {"rows": [{"mde": None}]}}
    >>> restore_infinite(data, Path("r.json"))
    >>> data["verdicts"]["rows"][0]["mde"]
    inf
    """
    block = data.get("agenticlens_frames")
    entries = block.get(INFINITE_KEY) if isinstance(block, dict) else None
    if entries is None:
        return  # an earlier report, or AgenticLens's: null reads NaN
    where: list[str | int] = ["agenticlens_frames", INFINITE_KEY]
    if not isinstance(entries, list):
        _damaged(file, where, "expected a list of {path, value} entries")
    for n, entry in enumerate(entries):
        here = [*where, n]
        value = entry.get("value") if isinstance(entry, dict) else None
        if not (isinstance(value, str) and value in _TOKENS):
            _damaged(file, here, 'expected {"path": [...], "value": "Infinity" or "-Infinity"}')
        path = entry.get("path")
        if (
            not isinstance(path, list)
            or len(path) < 2
            or path[0] not in OUR_BLOCKS
            or not all(isinstance(k, str | int) and not isinstance(k, bool) for k in path)
        ):
            _damaged(file, here, f"expected a path into one of {', '.join(OUR_BLOCKS)}")
        holder: Any = data
        for key in path[:-1]:
            holder = _step(holder, key)
        last = path[-1]
        if _step(holder, last, missing=_MISSING) is not None:
            # A hand-edited block (rows removed, a number typed in): its own value stands,
            # as the blocks' readers keep what an edit left (report/verdicts_json.py).
            continue
        holder[last] = _TOKENS[value]


_MISSING = object()


def _step(holder: Any, key: str | int, missing: Any = None) -> Any:
    """``holder[key]`` for a dict and a text key or a list and an index; else ``missing``."""
    if isinstance(holder, dict) and isinstance(key, str):
        return holder.get(key, missing)
    if isinstance(holder, list) and isinstance(key, int) and 0 <= key < len(holder):
        return holder[key]
    return missing


def _damaged(file: Path, where: list[str | int], message: str) -> NoReturn:
    raise InputError(
        message,
        file=file,
        location=where,
        hint="is this an experiment report written by `experiment run --save`?",
    )
