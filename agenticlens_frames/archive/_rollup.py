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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ._kernel import (
    CASE_STATS,
    TRIAL_STATS,
    _flag,
    _positions,
    listed_positions,
    looked_up_positions,
    stat_dtype,
)
from ._scan import RunScan
from .sufficient import RunLayout, SufficientStats, _case_frame, _sorted_codes, _trial_frame

__all__ = ["read_rollups", "trial_positions"]

#: Threads reading rollup files (each file is small: the gain is decoding two at once).
READ_THREADS = min(4, os.cpu_count() or 1)


def _row_count(scan: RunScan, name: str) -> int:
    rows = dict(scan.rows).get(name)
    if rows is None:  # a record without counts: the file's footer says
        with pq.ParquetFile(scan.file(name)) as handle:
            rows = handle.metadata.num_rows
    return int(rows)


def _read_all(
    scans: Sequence[RunScan], name: str, columns: dict[str, Any], optional: Sequence[str] = ()
) -> tuple[dict[str, np.ndarray], np.ndarray, list[tuple[pa.Array, np.ndarray]], list[int]]:
    """Every run's rollup ``name`` read into one array per column (sized from the
    catalog's row counts, each file copied into its slice as soon as it is decoded, so
    at most a few files' tables are alive at once and nothing is concatenated), the rows
    per file, each file's case labels (dictionary, codes) if it has them, and which
    files lack one of the ``optional`` columns (their rows hold -1 there)."""
    # The paths, unchecked: each file's checksum is verified by the thread that reads it
    # (hashing releases the GIL, and a first read of the archive waits on the disk).
    paths = [Path(scan.folder) / f"{name}.parquet" for scan in scans]
    rows = np.array([_row_count(scan, name) for scan in scans], np.int64)
    offsets = np.concatenate([[0], np.cumsum(rows)])
    out = {c: np.empty(int(offsets[-1]), dtype=dtype) for c, dtype in columns.items()}
    labels: list[tuple[pa.Array, np.ndarray]] = [(pa.array([], pa.string()), np.zeros(0))] * len(
        paths
    )
    lacking = [False] * len(paths)

    def fill(i: int) -> None:
        table = scans[i].read_file(name)  # verified and decoded from one read
        if table.num_rows != rows[i]:
            raise InputError(
                f"holds {table.num_rows} rows, its run's record says {rows[i]}",
                file=paths[i],
                hint="remove the run and add it again",
            )
        start, stop = offsets[i], offsets[i + 1]
        for column in columns:
            if column in optional and column not in table.column_names:
                out[column][start:stop] = -1
                lacking[i] = True
                continue
            out[column][start:stop] = table.column(column).to_numpy()
        if "case_id" in table.column_names:
            ids = table.column("case_id").combine_chunks()
            if not pa.types.is_dictionary(ids.type):
                ids = ids.dictionary_encode()
            codes = ids.indices.to_numpy(zero_copy_only=False)
            labels[i] = (ids.dictionary.cast(pa.string()), codes)

    _each(fill, len(paths))
    return out, rows, labels, [i for i, flag in enumerate(lacking) if flag]


def _each(task: Callable[[int], Any], n: int) -> list[Any]:
    """``task(i)`` for i in 0..n-1, on a few threads when there are several."""
    if n < 2 or READ_THREADS < 2:
        return [task(i) for i in range(n)]
    with ThreadPoolExecutor(READ_THREADS) as pool:
        return list(pool.map(task, range(n)))  # list(): raise a worker's error


def trial_positions(st: SufficientStats, scans: Sequence[RunScan]) -> None:
    """Set the ``execution_position`` of the trials of ``scans`` in ``st`` (in place) to
    their runs' archived ``trials`` tables, which define it (docs/data-model.md).

    The attempts repeat it on every row as ``run_order``, but runs built with
    ``ExperimentRun.from_frames`` before that was fixed numbered their rows there
    instead, so the engines' per-trial rule (the largest ``run_order`` of a trial's
    rows) gave another number than the single-run analysis. The trials table is the
    reference; a (variant, trial) it lacks keeps the engine's value.
    """
    if not scans or not len(st.trials):
        return
    frame = st.trials
    run = frame["run_id"].cat.codes.to_numpy().astype(np.int64)
    order = np.arange(len(run)) if np.all(run[1:] >= run[:-1]) else np.argsort(run, kind="stable")
    bounds = np.searchsorted(run[order], np.arange(len(st.layout.run_ids) + 1))
    index = {r: i for i, r in enumerate(st.layout.run_ids)}
    vpos = frame["variant_position"].to_numpy()
    trial = frame["trial"].to_numpy()
    position = frame["execution_position"].to_numpy().astype(np.int64)
    tables = _each(
        lambda i: listed_positions(scans[i].read_file("trials"), scans[i].variant_ids), len(scans)
    )
    for scan, table in zip(scans, tables, strict=True):
        code = index.get(scan.run_id)
        if code is None:
            continue
        rows = order[bounds[code] : bounds[code + 1]]
        position[rows] = looked_up_positions(vpos[rows], trial[rows], position[rows], table)
    frame["execution_position"] = stat_dtype("execution_position", position)


def _failed_from_attempts(scan: RunScan, vpos: np.ndarray, case_index: np.ndarray) -> np.ndarray:
    """How many of a run's attempts at each (variant position, case index) have status
    ``trial_failed``, read from its archived attempts (three columns)."""
    table = scan.read_file("attempts", ["variant_id", "case_index", "status"])
    if not len(vpos) or not table.num_rows:
        return np.zeros(len(vpos), dtype=np.int64)
    positions = _positions(
        table.column("variant_id"), {v: i for i, v in enumerate(scan.variant_ids)}
    )
    failed = _flag(table.column("status"), "trial_failed") & (positions >= 0)
    cases = table.column("case_index").to_numpy().astype(np.int64)
    width = int(max(cases.max(), case_index.max())) + 1
    counts = np.bincount(
        positions[failed] * width + cases[failed], minlength=len(scan.variant_ids) * width
    )
    return counts[vpos.astype(np.int64) * width + case_index.astype(np.int64)]


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


def _labels(
    labels: list[tuple[pa.Array, np.ndarray]], keep: np.ndarray | None
) -> tuple[np.ndarray, Any]:
    """Each row's code into the sorted case labels its rows use: every file's dictionary
    encoded together (a run's ~1k labels, not a string per row), then one gather."""
    dictionaries = [d for d, _ in labels]
    offsets = np.concatenate([[0], np.cumsum([len(d) for d in dictionaries])])
    every = pa.concat_arrays(dictionaries) if dictionaries else pa.array([], pa.string())
    codes, values = _sorted_codes(every)
    # File by file into one array: no list of shifted copies to concatenate, then gather
    # (at 10M case rows each of those is 80 MB of new pages).
    row_codes = np.empty(sum(len(c) for _, c in labels), dtype=np.int64)
    start = 0
    for i, (_, file_codes) in enumerate(labels):
        stop = start + len(file_codes)
        np.take(codes, file_codes.astype(np.int64) + offsets[i], out=row_codes[start:stop])
        start = stop
    if keep is not None:
        row_codes = row_codes[keep]
    # Only the labels the kept rows use, as when the attempts are read.
    used = np.zeros(len(values) + 1, dtype=bool)
    used[row_codes] = True
    rank = np.cumsum(used[:-1]) - 1
    return rank[row_codes], values[used[:-1]] if len(values) else values


def read_rollups(scans: Sequence[RunScan], layout: RunLayout, engine: str) -> SufficientStats:
    """The slice's sufficient statistics from its runs' rollups (every scan must have
    them: :attr:`RunScan.has_rollups`), the same frames as reading the attempts.

    Rollups written before the case rollups counted each case's ``failed_attempts``
    are completed here: a run none of whose trials failed has none; the
    others count them in their attempts' status column. Such runs' execution positions
    are taken from their ``trials`` tables (:func:`trial_positions`).
    """
    index = {run: i for i, run in enumerate(layout.run_ids)}
    scans = sorted(scans, key=lambda s: index[s.run_id])
    codes = np.array([index[s.run_id] for s in scans], dtype=np.int64)
    read = {}
    for name, inner, stat_names in (
        ("case_stats", "case_index", CASE_STATS),
        ("trial_stats", "trial", TRIAL_STATS),
    ):
        columns = {"variant_position": np.int32, inner: np.int32}
        columns.update({n: stat_dtype(n, np.zeros(0)).dtype for n in stat_names})
        optional = ("failed_attempts",) if name == "case_stats" else ()
        read[name] = _read_all(scans, name, columns, optional)
    older = read["case_stats"][3]
    if older:
        _complete_older(scans, older, read["case_stats"], read["trial_stats"])
    frames = {}
    for name, inner in (("case_stats", "case_index"), ("trial_stats", "trial")):
        values, rows, labels, _ = read[name]
        run_code = np.repeat(codes, rows)
        vpos = values.pop("variant_position")
        keep = _kept(scans, run_code, vpos, layout)
        if keep is not None:
            run_code, vpos = run_code[keep], vpos[keep]
            values = {n: v[keep] for n, v in values.items()}
        inner_values = values.pop(inner)
        if name == "case_stats":
            label_codes, categories = _labels(labels, keep)
            frames[name] = _case_frame(
                layout, run_code, vpos, inner_values, label_codes, categories, values
            )
        else:
            frames[name] = _trial_frame(layout, run_code, vpos, inner_values, values)
    stats = SufficientStats(
        cases=frames["case_stats"],
        trials=frames["trial_stats"],
        layout=layout,
        engine=engine,
        info={"read": "rollups"},
    )
    if older:
        trial_positions(stats, [scans[i] for i in older])
    return stats


def _complete_older(
    scans: Sequence[RunScan], older: Sequence[int], cases: tuple, trials: tuple
) -> None:
    """Fill in the per-case ``failed_attempts`` of runs whose case rollups lack it (in
    place, in the rows :func:`_read_all` read)."""
    case_values, case_rows = cases[0], cases[1]
    trial_values, trial_rows = trials[0], trials[1]
    case_offsets = np.concatenate([[0], np.cumsum(case_rows)])
    trial_offsets = np.concatenate([[0], np.cumsum(trial_rows)])
    failed = case_values["failed_attempts"]

    def complete(i: int) -> None:
        start, stop = case_offsets[i], case_offsets[i + 1]
        trial_failed = trial_values["failed_attempts"][trial_offsets[i] : trial_offsets[i + 1]]
        if not trial_failed.any():  # no failed attempt in the run
            failed[start:stop] = 0
            return
        failed[start:stop] = _failed_from_attempts(
            scans[i],
            case_values["variant_position"][start:stop],
            case_values["case_index"][start:stop],
        )

    _each(lambda k: complete(older[k]), len(older))
