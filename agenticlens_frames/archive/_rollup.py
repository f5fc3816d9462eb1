"""Reading the rollups of many runs at once: per-run sufficient statistics written at
``Archive.add`` time (:func:`~._kernel.rollup_tables`), concatenated into the two frames
every engine returns, with no pass over the attempts.

A run's rollup rows are already in the engines' order (variant position, then case
index or trial), so the frames are the files read in layout order, their columns
concatenated and the slice's variant filter applied as one mask. Files are read by a few
threads (Arrow decodes without holding the GIL); case labels are encoded once across all
runs from each file's small dictionary.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from ._kernel import CASE_STATS, TRIAL_STATS, stat_dtype
from ._scan import RunScan, read_parquet_file
from .sufficient import RunLayout, SufficientStats, _case_frame, _sorted_codes, _trial_frame

__all__ = ["read_rollups"]

#: Threads reading rollup files (each file is small: the gain is decoding two at once).
READ_THREADS = min(4, os.cpu_count() or 1)


def _read_all(scans: Sequence[RunScan], name: str) -> list[pa.Table]:
    paths = [scan.file(name) for scan in scans]  # checksums verified here, in order
    if len(paths) < 2 or READ_THREADS < 2:
        return [read_parquet_file(p) for p in paths]
    with ThreadPoolExecutor(READ_THREADS) as pool:
        return list(pool.map(read_parquet_file, paths))


def _column(tables: list[pa.Table], name: str) -> np.ndarray:
    parts = [c.to_numpy() for t in tables for c in t.column(name).chunks]
    return np.concatenate(parts) if parts else np.zeros(0)


def _kept(
    scans: Sequence[RunScan], run_code: np.ndarray, vpos: np.ndarray, layout: RunLayout
) -> np.ndarray | None:
    """Rows of the slice's variants (None: every row), one lookup per row in a table of
    (run, variant position) slots."""
    if all(scan.selected is None for scan in scans):
        return None
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in layout.variant_ids])])
    keep = np.zeros(int(offsets[-1]), dtype=bool)
    index = {run: i for i, run in enumerate(layout.run_ids)}
    for scan in scans:
        base = offsets[index[scan.run_id]]
        for position, variant in enumerate(scan.variant_ids):
            keep[base + position] = scan.selected is None or variant in scan.selected
    return keep[offsets[run_code] + vpos]


def _labels(tables: list[pa.Table], keep: np.ndarray | None) -> tuple[np.ndarray, object]:
    """Each row's code into the sorted case labels its rows use: every file's dictionary
    encoded together (a run's ~1k labels, not a string per row), then one gather."""
    dictionaries, indices, offset = [], [], 0
    for table in tables:
        for chunk in table.column("case_id").chunks:
            if not pa.types.is_dictionary(chunk.type):
                chunk = chunk.dictionary_encode()
            dictionaries.append(chunk.dictionary.cast(pa.string()))
            indices.append(chunk.indices.to_numpy(zero_copy_only=False).astype(np.int64) + offset)
            offset += len(chunk.dictionary)
    every = pa.concat_arrays(dictionaries) if dictionaries else pa.array([], pa.string())
    codes, values = _sorted_codes(every)
    row_codes = codes[np.concatenate(indices)] if indices else np.zeros(0, np.int64)
    if keep is not None:
        row_codes = row_codes[keep]
    # Only the labels the kept rows use, as when the attempts are read.
    used = np.zeros(len(values) + 1, dtype=bool)
    used[row_codes] = True
    rank = np.cumsum(used[:-1]) - 1
    return rank[row_codes], values[used[:-1]] if len(values) else values


def read_rollups(scans: Sequence[RunScan], layout: RunLayout, engine: str) -> SufficientStats:
    """The slice's sufficient statistics from its runs' rollups (every scan must have
    them: :attr:`RunScan.has_rollups`), the same frames as reading the attempts."""
    index = {run: i for i, run in enumerate(layout.run_ids)}
    scans = sorted(scans, key=lambda s: index[s.run_id])
    codes = np.array([index[s.run_id] for s in scans], dtype=np.int64)
    frames = {}
    for name, inner, stat_names in (
        ("case_stats", "case_index", CASE_STATS),
        ("trial_stats", "trial", TRIAL_STATS),
    ):
        tables = _read_all(scans, name)
        run_code = np.repeat(codes, [t.num_rows for t in tables])
        vpos = _column(tables, "variant_position").astype(np.int64)
        keep = _kept(scans, run_code, vpos, layout)

        def pick(values: np.ndarray, keep: np.ndarray | None = keep) -> np.ndarray:
            return values if keep is None else values[keep]

        stats = {n: stat_dtype(n, pick(_column(tables, n))) for n in stat_names}
        inner_values = pick(_column(tables, inner))
        if name == "case_stats":
            label_codes, categories = _labels(tables, keep)
            frames[name] = _case_frame(
                layout, pick(run_code), pick(vpos), inner_values, label_codes, categories, stats
            )
        else:
            frames[name] = _trial_frame(layout, pick(run_code), pick(vpos), inner_values, stats)
    return SufficientStats(
        cases=frames["case_stats"],
        trials=frames["trial_stats"],
        layout=layout,
        engine=engine,
        info={"read": "rollups"},
    )
