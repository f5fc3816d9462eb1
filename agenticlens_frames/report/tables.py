"""Parquet export of an analysis: the tidy tables and every result frame."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .._files import atomic_write
from ..analysis import ExperimentAnalysis

__all__ = ["frame_for_parquet", "write_parquet_outputs"]


def frame_for_parquet(frame: pd.DataFrame) -> pd.DataFrame:
    """Make object cells storable: tuples become lists, dicts become JSON text.

    Examples
    --------
    >>> df = pd.DataFrame({"ids": [("a", "b")], "f": [{"m": ["x", "y"]}]})
    >>> frame_for_parquet(df).iloc[0].tolist()
    [['a', 'b'], '{"m": ["x", "y"]}']
    """
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype != object:
            continue
        sample = next((v for v in out[column] if v is not None), None)
        if isinstance(sample, tuple):
            out[column] = out[column].map(lambda v: list(v) if v is not None else None)
        elif isinstance(sample, dict):
            out[column] = out[column].map(lambda v: json.dumps(v) if v is not None else None)
    out.attrs = {}
    return out


def write_parquet_outputs(analysis: ExperimentAnalysis, folder: str | Path) -> Path:
    """Write ``tables/`` (the tidy tables, restorable with ``read_parquet``) and
    ``results/<frame>.parquet`` for each result frame."""
    base = Path(folder)
    if analysis.run is not None:
        analysis.run.to_parquet(base / "tables")
    results = base / "results"
    results.mkdir(parents=True, exist_ok=True)
    for name, frame in analysis.frames().items():
        with atomic_write(results / f"{name}.parquet") as handle:
            frame_for_parquet(frame).to_parquet(handle, index=False)
    return base
