"""Sufficient statistics of archived attempts, computed by interchangeable engines.

Every result frame of an archive (case matrix, variant summary, pass@k, comparisons,
factor levels) is a function of two small tables of sums, which this module computes:

``cases``   one row per (run, variant, case): ``attempts, passes, failed_attempts,
            scored, score_sum, score_m2, latency_sum, latency_count, cost_sum,
            cost_count``
``trials``  one row per (run, variant, trial): ``attempts, passes, failed_attempts,
            latency_ok_sum, latency_ok_count, cost_sum, cost_count, check_value_sum,
            check_count, execution_position``

``score_m2`` is the sum of squared deviations from the group mean (Σ(x − x̄)²), not Σx²:
it is what a two-pass or Welford variance produces, it merges across partitions with
Chan et al.'s formula, and it does not cancel catastrophically for the near-constant
scores agent cases have (Σx² − (Σx)²/n would give a spurious SD of ~1e-8).

The engines (numpy, pandas, duckdb, dask, and ``auto``: duckdb when the slice would not
fit in memory, else numpy) all return identical frames (to 1e-9; tested against each
other and a plain loop). They are declared once, in :mod:`.engine_registry`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from .._deprecate import keyword_hints
from .._optional import available as installed
from .._optional import require
from ..errors import InputError, check_count
from ._kernel import (
    CASE_STATS,
    NEEDED_COLUMNS,
    TRIAL_STATS,
    RunPartial,
    partials_for_scans,
    run_partial,
    split_runs,
)
from ._rollup import read_rollups, trial_positions
from ._scan import run_blocks
from .engine_registry import AUTO, ENGINES, check_engine_settings, engine_function
from .sufficient import (
    RunLayout,
    ScanSource,
    Source,
    SufficientStats,
    TableSource,
    as_source,
    assemble,
    check_columns,
    from_keyed_frames,
    merge_stats,
)

__all__ = [
    "CASE_STATS",
    "ENGINES",
    "NEEDED_COLUMNS",
    "TRIAL_STATS",
    "choose_engine",
    "sufficient_stats",
]

#: An engine name: one of :data:`ENGINES` (declared in :mod:`.engine_registry`).
Engine = str

#: Rows per Dask task: whole runs adding up to about this many attempts (perf-limits.md:
#: 1M-row blocks keep group tables in cache; single-experiment blocks pay overheads).
BLOCK_ROWS = 1_000_000


# --------------------------------------------------------------------------- numpy kernel


# --------------------------------------------------------------------------- engines


def _numpy_engine(source: Source, layout: RunLayout, **_: Any) -> SufficientStats:
    if isinstance(source, TableSource):
        check_columns(source.table)
        runs = split_runs(source.table.select(list(NEEDED_COLUMNS)))
        partials = [
            run_partial(runs[r], r, layout.variant_ids[i])
            for i, r in enumerate(layout.run_ids)
            if r in runs
        ]
    else:
        partials = partials_for_scans(source.scans)
    return assemble(partials, layout, "numpy")


def _dask_engine(
    source: Source,
    layout: RunLayout,
    *,
    client: Any = None,
    block_rows: int = BLOCK_ROWS,
    **_: Any,
) -> SufficientStats:
    dask = require("dask", "the dask engine")
    if isinstance(source, TableSource):
        check_columns(source.table)
        runs = split_runs(source.table.select(list(NEEDED_COLUMNS)))
        jobs = [
            (runs[r], r, layout.variant_ids[i]) for i, r in enumerate(layout.run_ids) if r in runs
        ]
        if client is not None:
            # Ship the data once (scatter), not inside the task graph.
            tables = client.scatter([job[0] for job in jobs])
            futures = client.map(
                run_partial, tables, [j[1] for j in jobs], [j[2] for j in jobs], pure=False
            )
            results: Any = client.gather(futures)
        else:
            results = dask.compute(*(dask.delayed(run_partial)(*job) for job in jobs))
    else:
        tasks = [
            dask.delayed(partials_for_scans)(block)
            for block in run_blocks(source.scans, block_rows)
        ]
        if client is not None:
            results = client.gather(client.compute(tasks))
        else:
            # With no client given, dask uses the default scheduler: a distributed Client
            # created earlier in the session if there is one, else local threads.
            results = dask.compute(*tasks)
    partials: list[RunPartial] = []
    for result in results:
        partials.extend(result if isinstance(result, list) else [result])
    return assemble(partials, layout, "dask")


def _pandas_engine(source: Source, layout: RunLayout, **_: Any) -> SufficientStats:
    if isinstance(source, TableSource):
        check_columns(source.table)
        tables = [source.table.select(list(NEEDED_COLUMNS))]
    else:
        tables = [s.read("attempts", NEEDED_COLUMNS, required=True) for s in source.scans]
    case_parts, trial_parts = [], []
    for table in tables:
        frame = table.to_pandas()
        completed = (frame["status"] != "trial_failed").to_numpy()
        ok = (frame["status"] == "ok").to_numpy()
        frame = frame.assign(
            scored_value=frame["score"].where(completed),
            passed_int=frame["passed"].astype(np.int64),
            failed_int=(~completed).astype(np.int64),
            ok_latency=frame["latency_ms"].where(ok),
        )
        by_case = frame.groupby(["run_id", "variant_id", "case_index"], observed=True, sort=False)
        cases = by_case.agg(
            case_id=("case_id", "first"),
            attempts=("passed", "size"),
            passes=("passed_int", "sum"),
            failed_attempts=("failed_int", "sum"),
            scored=("scored_value", "count"),
            score_sum=("scored_value", "sum"),
            latency_sum=("latency_ms", "sum"),
            latency_count=("latency_ms", "count"),
            cost_sum=("cost_usd", "sum"),
            cost_count=("cost_usd", "count"),
        )
        cases["score_m2"] = (
            by_case["scored_value"].var(ddof=0).fillna(0.0).to_numpy() * cases["scored"]
        )
        case_parts.append(cases.reset_index())
        by_trial = frame.groupby(["run_id", "variant_id", "trial"], observed=True, sort=False)
        trials = by_trial.agg(
            attempts=("passed", "size"),
            passes=("passed_int", "sum"),
            failed_attempts=("failed_int", "sum"),
            latency_ok_sum=("ok_latency", "sum"),
            latency_ok_count=("ok_latency", "count"),
            cost_sum=("cost_usd", "sum"),
            cost_count=("cost_usd", "count"),
            check_value_sum=("score_sum", "sum"),
            check_count=("n_checks", "sum"),
            execution_position=("run_order", "max"),
        )
        trial_parts.append(trials.reset_index())
    cases = _concat_frames(case_parts)
    trials = _concat_frames(trial_parts)
    return from_keyed_frames(cases, trials, layout, "pandas")


def _concat_frames(parts: list[pd.DataFrame]) -> pd.DataFrame:
    for part in parts:
        for column in ("run_id", "variant_id", "case_id"):
            if column in part:
                part[column] = part[column].astype(str)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


#: Bytes per attempt the in-memory engines hold: the needed columns plus temporaries.
_BYTES_PER_ROW = 160


def _available_memory() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def choose_engine(n_rows: int, *, available: int | None = None) -> str:
    """``duckdb`` when ``n_rows`` attempts would not fit in half the free memory (and
    DuckDB is installed), else ``numpy``.

    Examples
    --------
    >>> choose_engine(1_000, available=10**9)
    'numpy'
    """
    free = _available_memory() if available is None else available
    if n_rows * _BYTES_PER_ROW <= free // 2:
        return "numpy"
    # numpy streams one run at a time; only its outputs grow
    return "duckdb" if installed("duckdb") else "numpy"


def _check_memory_limit(memory_limit: str) -> None:
    """Refuse a DuckDB memory limit DuckDB cannot read, whatever is read afterwards: runs
    read from their rollups (or the numpy engine) never open DuckDB, so ``"lots"`` was
    accepted without a word and ignored."""
    from ._duckdb import duckdb_connection

    try:
        duckdb_connection(memory_limit=memory_limit).close()
    except InputError:
        raise
    except Exception as exc:  # duckdb's own error types
        raise InputError(
            f"DuckDB cannot use memory limit {memory_limit!r} ({str(exc).splitlines()[0]})",
            location="memory_limit",
            hint="give an amount such as 2GB or 500MB, or a share of the memory such as 50%",
        ) from None


@keyword_hints
def sufficient_stats(
    source: Any,
    *,
    engine: Engine | str = "auto",
    client: Any = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | None = None,
    block_rows: int | None = None,
    layout: RunLayout | None = None,
    rollups: bool = True,
) -> SufficientStats:
    """Per (run, variant, case) and (run, variant, trial) sums of archived attempts.

    Parameters
    ----------
    source
        An :class:`~agenticlens_frames.archive.query.ArchiveSlice` (files on disk), or an
        attempts table in memory (``pyarrow.Table`` / ``pandas.DataFrame`` with the
        archive's columns, :data:`NEEDED_COLUMNS`).
    engine
        One of :data:`ENGINES` (see :mod:`.engine_registry`), ``"auto"`` by default.
    client
        A ``dask.distributed.Client`` for ``engine="dask"`` (default: the current one);
        refused with another engine, which would ignore it.
    memory_limit, threads, temp_directory
        DuckDB settings (e.g. ``"2GB"``; ``threads`` a whole number ≥ 1); it spills to
        ``temp_directory`` beyond the limit. Refused with the numpy, pandas and dask
        engines, which would ignore them (``auto`` hands them to DuckDB when it picks it).
    block_rows
        Attempts per Dask task (whole runs; default :data:`BLOCK_ROWS`). Refused with
        another engine, like ``client``.
    layout
        The runs and their variants (default: from the slice's catalog, or for a table
        from the table itself: runs in first-seen order, variants in dictionary order, or
        first seen for text ids, however the table is chunked).
    rollups
        Read each run's sufficient statistics as archived (``case_stats`` /
        ``trial_stats``, written by ``Archive.add``) instead of its attempts when the
        slice allows it (no tag filter). The numbers are the same; ``False`` forces the
        scan of the attempts. ``st.info["read"]`` says what was read. The ``pandas``
        baseline always scans.

    Returns
    -------
    SufficientStats

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = sufficient_stats(archive.all(), engine="numpy")
    >>> int(st.cases["attempts"].sum()) == archive.records()[0].n_attempts
    True
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}", hint=f"choose one of {', '.join(ENGINES)}")
    check_engine_settings(
        engine,
        {
            "memory_limit": memory_limit,
            "threads": threads,
            "temp_directory": temp_directory,
            "client": client,
            "block_rows": block_rows,
        },
    )
    if memory_limit is not None:
        _check_memory_limit(memory_limit)
    if threads is not None:
        # Read by DuckDB only when it scans: "many" (or 0, "as many as cores" to duckdb's
        # `if threads`) was accepted whenever the runs were read from their rollups.
        check_count(threads, "threads", location="threads")
    if block_rows is not None:
        # Checked whatever is read: runs read from their rollups never form blocks.
        check_count(block_rows, "block_rows", location="block_rows")
    src = as_source(source)
    layout = layout or src.layout()
    if engine == AUTO:
        engine = choose_engine(src.n_rows)
    function = engine_function(engine)
    options = {
        "client": client,
        "memory_limit": memory_limit,
        "threads": threads,
        "temp_directory": temp_directory,
        "block_rows": BLOCK_ROWS if block_rows is None else block_rows,
    }
    # One rule for every engine but the pandas baseline (which always groups the
    # attempts): runs with rollups are read from them, the engine scans the rest.
    use = rollups and engine != "pandas" and isinstance(src, ScanSource)
    rolled = tuple(s for s in src.scans if s.has_rollups) if use else ()  # type: ignore[union-attr]
    if not rolled:
        st = function(src, layout, **options)
        if isinstance(src, ScanSource):
            trial_positions(st, src.scans)  # archived runs: from their trials tables
        st.info["read"] = "attempts"
        return st
    if engine in ("duckdb", "dask"):
        require(engine, f"the {engine} engine")  # the same error whatever is read
    stats = read_rollups(rolled, layout, engine)
    rest = tuple(s for s in src.scans if not s.has_rollups)  # type: ignore[union-attr]
    if not rest:
        return stats
    # Runs archived before rollups next to runs with them: the engine scans only those.
    scanned = function(ScanSource(rest), layout, **options)
    trial_positions(scanned, rest)
    merged = merge_stats([stats, scanned], layout, engine)
    merged.info["read"] = "mixed"
    return merged
