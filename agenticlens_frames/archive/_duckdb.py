"""The DuckDB engine: SQL ``GROUP BY`` over the archive's parquet files (or an Arrow
table in place), out of core under a memory limit, spilling to disk beyond it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .._optional import require
from ..errors import InputError
from ._kernel import CASE_STATS, NEEDED_COLUMNS, TRIAL_STATS
from ._scan import RunScan, run_blocks
from .sufficient import (
    RunLayout,
    Source,
    SufficientStats,
    TableSource,
    _case_frame,
    _sorted_codes,
    _trial_frame,
    check_columns,
    from_keyed_frames,
)

__all__ = [
    "duckdb_connection",
    "duckdb_engine",
    "duckdb_source",
    "duckdb_where",
    "sql_string",
]


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def duckdb_where(scans: Sequence[RunScan]) -> str:
    """The slice's tag filter as SQL (one slice, one tag filter: every scan has it)."""
    clauses = []
    for group in scans[0].tags or () if scans else ():
        listed = ", ".join(map(sql_string, group))
        clauses.append(f"list_has_any(string_split(tags, ','), [{listed}])")
    return " AND ".join(clauses) if clauses else "TRUE"


def duckdb_source(con: Any, scans: Sequence[RunScan]) -> str:
    """A FROM-clause subquery holding exactly the slice's attempts.

    The file list is the catalog's pruning (never a glob: staging folders stay
    invisible). When some runs keep only some variants, a semi-join with a small
    registered table of (run, variant) pairs selects them: one hash probe per row,
    however many runs and variant sets the slice has (an OR of per-run IN lists costs
    a comparison per list per row).
    """
    files = ", ".join(sql_string(str(s.file("attempts"))) for s in scans)
    source = f"read_parquet([{files}], union_by_name = true) AS a"
    if any(s.selected is not None for s in scans):
        pairs = [(s.run_id, v) for s in scans for v in (s.selected or s.variant_ids)]
        name = f"_alf_keep_{uuid.uuid4().hex}"
        con.register(
            name,
            pa.table({"run_id": [p[0] for p in pairs], "variant_id": [p[1] for p in pairs]}),
        )
        source += f" SEMI JOIN {name} AS k ON a.run_id = k.run_id AND a.variant_id = k.variant_id"
    return f"(SELECT a.* FROM {source} WHERE {duckdb_where(scans)})"


# Each row's status is compared once, in a projection, not once per aggregate: a FILTER
# clause per aggregate re-evaluated the string comparison four times per row and made the
# case query 2-3x slower.
_CASE_AGGREGATES = """count(*) AS attempts,
       sum(CAST(passed AS BIGINT)) AS passes,
       count(*) FILTER (WHERE failed) AS failed_attempts,
       count(scored_value) AS scored,
       coalesce(sum(scored_value), 0.0) AS score_sum,
       coalesce(var_pop(scored_value) * count(scored_value), 0.0) AS score_m2,
       coalesce(sum(latency_ms), 0.0) AS latency_sum,
       count(latency_ms) AS latency_count,
       coalesce(sum(cost_usd), 0.0) AS cost_sum,
       count(cost_usd) AS cost_count"""
_CASE_ROWS = """SELECT {keys}, passed, latency_ms, cost_usd,
           status = 'trial_failed' AS failed,
           CASE WHEN NOT failed THEN score END AS scored_value"""
_TRIAL_AGGREGATES = """count(*) AS attempts,
       sum(CAST(passed AS BIGINT)) AS passes,
       count(*) FILTER (WHERE failed) AS failed_attempts,
       coalesce(sum(ok_latency), 0.0) AS latency_ok_sum,
       count(ok_latency) AS latency_ok_count,
       coalesce(sum(cost_usd), 0.0) AS cost_sum,
       count(cost_usd) AS cost_count,
       coalesce(sum(score_sum), 0.0) AS check_value_sum,
       coalesce(sum(n_checks), 0) AS check_count,
       max(run_order) AS execution_position"""
_TRIAL_ROWS = """SELECT {keys}, passed, cost_usd, score_sum, n_checks, run_order,
           status = 'trial_failed' AS failed,
           CASE WHEN status = 'ok' THEN latency_ms END AS ok_latency"""
_CASE_SQL = f"""
SELECT run_id, variant_id, case_index, any_value(case_id) AS case_id,
       {_CASE_AGGREGATES}
FROM ({_CASE_ROWS.format(keys="run_id, variant_id, case_index, case_id")}
      FROM {{source}} WHERE {{where}})
GROUP BY run_id, variant_id, case_index
"""
_TRIAL_SQL = f"""
SELECT run_id, variant_id, trial,
       {_TRIAL_AGGREGATES}
FROM ({_TRIAL_ROWS.format(keys="run_id, variant_id, trial")}
      FROM {{source}} WHERE {{where}})
GROUP BY run_id, variant_id, trial
"""

# Archives are aggregated file by file: a run is one file and one row group, so within a
# file the run is a constant (its code is a literal: no run id string is read per row)
# and the hash table holds one run's ~10k (variant, case) groups, small enough to stay in
# cache. One GROUP BY over many files' (run, variant, case) keys built a hash table of a
# million groups per 10M rows and took twice as long. Case labels are not read from the
# attempts (a string per row) but from each run's small ``cases`` table.
_FILE_CASE_SQL = f"""
SELECT {{run_code}} AS run_code, variant_id::VARCHAR AS variant_id, case_index,
       {_CASE_AGGREGATES}
FROM ({_CASE_ROWS.format(keys="variant_id, case_index")}
      FROM read_parquet({{file}}) WHERE {{where}})
GROUP BY variant_id, case_index
"""
_FILE_TRIAL_SQL = f"""
SELECT {{run_code}} AS run_code, variant_id::VARCHAR AS variant_id, trial,
       {_TRIAL_AGGREGATES}
FROM ({_TRIAL_ROWS.format(keys="variant_id, trial")}
      FROM read_parquet({{file}}) WHERE {{where}})
GROUP BY variant_id, trial
"""
_FILE_LABELS_SQL = """
SELECT {run_code} AS run_code, case_index, any_value(case_id::VARCHAR) AS case_id
FROM read_parquet({file}) GROUP BY case_index
"""
#: Labels from a run's ``cases`` table (a module constant so tests can take some away).
_CASES_LABELS_SQL = _FILE_LABELS_SQL
#: A block's per-file aggregates keyed by variant position (a join on the aggregated
#: rows). Not sorted here: sorting the wide result and joining the labels in DuckDB cost
#: half as much again as the aggregation; numpy does both on integer keys.
_BLOCK_SQL = """
SELECT a.run_code, k.vpos, a.* EXCLUDE (run_code, variant_id)
FROM ({union}) AS a LEFT JOIN {keys} AS k USING (run_code, variant_id)
"""


def duckdb_connection(
    *,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | None = None,
) -> Any:
    """A DuckDB connection configured for out-of-core aggregation."""
    duckdb = require("duckdb", "the duckdb engine")
    config: dict[str, Any] = {"preserve_insertion_order": False}
    if memory_limit:
        config["memory_limit"] = memory_limit
    if threads:
        config["threads"] = int(threads)
    if temp_directory:
        config["temp_directory"] = temp_directory
    return duckdb.connect(config=config)


#: The aggregates keyed by layout position and sorted in DuckDB: a join with the small
#: table of (run, variant) -> (run code, variant position) on the aggregated rows (not on
#: the attempts), so no string key is mapped, factorised or sorted in Python.
_KEYED_SQL = """
SELECT k.run_code, k.vpos, a.* EXCLUDE (run_id, variant_id)
FROM ({aggregate}) AS a LEFT JOIN {keys} AS k USING (run_id, variant_id)
ORDER BY k.run_code, k.vpos, a.{inner}
"""


def _layout_keys(layout: RunLayout) -> pa.Table:
    run_ids, variant_ids, run_codes, positions = [], [], [], []
    for code, (run, variants) in enumerate(zip(layout.run_ids, layout.variant_ids, strict=True)):
        for position, variant in enumerate(variants):
            run_ids.append(run)
            variant_ids.append(variant)
            run_codes.append(code)
            positions.append(position)
    return pa.table(
        {
            "run_id": pa.array(run_ids, pa.string()),
            "variant_id": pa.array(variant_ids, pa.string()),
            "run_code": pa.array(run_codes, pa.int32()),
            "vpos": pa.array(positions, pa.int32()),
        }
    )


#: Attempts per DuckDB query when reading an archive (whole runs per block).
DUCKDB_BLOCK_ROWS = 5_000_000
#: Bytes of DuckDB memory per attempt of a block: its per-file hash tables and its result
#: (a case row per ~10 attempts) live together until the result is fetched. A 5M block
#: needed more than 82 MB; 2M fitted.
_BYTES_PER_BLOCK_ROW = 40
_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_UNITS.update({"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40})


def block_rows(con: Any) -> int:
    """Attempts per block under the connection's memory limit (at most
    :data:`DUCKDB_BLOCK_ROWS`)."""
    setting = str(con.sql("SELECT current_setting('memory_limit')").fetchall()[0][0]).split()
    try:
        limit = float(setting[0]) * _UNITS[setting[1]]
    except (IndexError, KeyError, ValueError):
        return DUCKDB_BLOCK_ROWS
    return max(1, min(DUCKDB_BLOCK_ROWS, int(limit / _BYTES_PER_BLOCK_ROW)))


def _file_where(scan: RunScan) -> str:
    """The slice's row filters on one run's file, as SQL."""
    where = duckdb_where([scan])
    if scan.selected is not None:
        listed = ", ".join(map(sql_string, scan.selected))
        where += f" AND variant_id IN ({listed})"
    return where


def _union(block: Sequence[tuple[int, RunScan]], per_file: str, table: str) -> str:
    return " UNION ALL ".join(
        per_file.format(
            run_code=code, file=sql_string(str(scan.file(table))), where=_file_where(scan)
        )
        for code, scan in block
    )


def _archive_stats(
    con: Any, scans: Sequence[RunScan], layout: RunLayout, keys: str
) -> tuple[pa.Table, pa.Table, np.ndarray, pd.Index | list[str]]:
    """Case and trial aggregates of archived runs, each sorted in layout order, and the
    case rows' label codes and sorted labels.

    One pair of queries per block of whole runs bounds what a query holds (one query
    over a 100M-attempt archive spilled its 10M case groups to disk).
    """
    codes = {run: code for code, run in enumerate(layout.run_ids)}
    case_parts, trial_parts, label_parts = [], [], []
    for block in run_blocks(scans, block_rows(con)):
        coded = []
        for scan in block:
            if scan.run_id not in codes:
                raise InputError(f"engine returned run {scan.run_id}, which is outside the slice")
            # DuckDB's error for a damaged file would name neither the run nor the way out.
            scan.file_with("attempts", _ATTEMPTS_COLUMNS)
            scan.file_with("cases", _LABEL_COLUMNS)
            coded.append((codes[scan.run_id], scan))
        for parts, per_file in ((case_parts, _FILE_CASE_SQL), (trial_parts, _FILE_TRIAL_SQL)):
            sql = _BLOCK_SQL.format(union=_union(coded, per_file, "attempts"), keys=keys)
            parts.append(_block_query(con, sql, block, "attempts"))
        labels = _block_query(con, _union(coded, _CASES_LABELS_SQL, "cases"), block, "cases")
        label_parts.append(labels.combine_chunks())
    # One chunk per column: DuckDB returns a chunk per 2048-row vector, and numpy
    # conversions of thousands of chunks cost more than the aggregation's own sort.
    cases = _key_order(pa.concat_tables(case_parts).combine_chunks(), "case_index")
    trials = _key_order(pa.concat_tables(trial_parts).combine_chunks(), "trial")
    found = _label_rows(cases, pa.concat_tables(label_parts))
    if found is None:
        # A run whose cases table does not name every case index of its attempts (not
        # written by this toolkit): take the labels from the attempts instead.
        coded = [(codes[s.run_id], s) for s in scans]
        labels = con.sql(_union(coded, _FILE_LABELS_SQL, "attempts")).to_arrow_table()
        labels = labels.combine_chunks()
        found = _label_rows(cases, labels)
        assert found is not None  # every case row comes from an attempt with its label
    label_codes, categories = found
    return cases, trials, label_codes, categories


#: The columns the per-file queries read of a run's attempts (``tags`` under a tag filter;
#: every archived attempts file has them all), and of its ``cases`` table.
_ATTEMPTS_COLUMNS = (*NEEDED_COLUMNS, "tags")
_LABEL_COLUMNS = ("case_index", "case_id")


def _block_query(con: Any, sql: str, block: Sequence[RunScan], table: str) -> pa.Table:
    """One block's query. When DuckDB cannot read a file, the files no checksum vouches
    for (runs archived before checksums existed) are read with pyarrow, whose error names
    the damaged one and the way out; otherwise DuckDB's error stands."""
    duckdb = require("duckdb", "the duckdb engine")
    try:
        return con.sql(sql).to_arrow_table()
    except duckdb.Error:
        columns = _ATTEMPTS_COLUMNS if table == "attempts" else _LABEL_COLUMNS
        for scan in block:
            if table not in dict(scan.sha256):
                scan.read(table, columns, required=True)
        raise


def _key_order(table: pa.Table, inner: str) -> pa.Table:
    """Rows sorted by (run code, variant position, ``inner``): one stable sort of a
    packed integer key (per-file results arrive in runs that are already sorted)."""
    _run_codes(table)
    run = _numbers(table, "run_code").astype(np.int64)
    vpos = _numbers(table, "vpos").astype(np.int64)
    last = _numbers(table, inner).astype(np.int64)
    if len(run) and (vpos.max() >= 1 << 12 or last.min() < 0 or last.max() >= 1 << 31):
        order = np.lexsort((last, vpos, run))
    else:
        key = (run << 43) | (vpos << 31) | last
        if len(key) < 2 or np.all(key[1:] >= key[:-1]):
            return table
        order = np.argsort(key, kind="stable")
    return table.take(pa.array(order)).combine_chunks()


def _label_rows(
    cases: pa.Table, labels: pa.Table
) -> tuple[np.ndarray, pd.Index | list[str]] | None:
    """Each case row's label code into the sorted labels of the rows (None if a row's
    (run, case index) has no label): a gather through a table of slots per run."""
    l_run = _numbers(labels, "run_code").astype(np.int64)
    l_case = _numbers(labels, "case_index").astype(np.int64)
    run = _numbers(cases, "run_code").astype(np.int64)
    case = _numbers(cases, "case_index").astype(np.int64)
    n_runs = int(max(l_run.max(initial=-1), run.max(initial=-1))) + 1
    width = np.zeros(n_runs, dtype=np.int64)
    np.maximum.at(width, l_run, l_case + 1)
    offset = np.concatenate([[0], np.cumsum(width)])
    slot = np.full(int(offset[-1]) + 1, -1, dtype=np.int64)  # the last slot: "no label"
    slot[offset[l_run] + l_case] = np.arange(len(l_run))
    inside = (case >= 0) & (case < width[run])
    row = slot[np.where(inside, offset[run] + case, offset[-1])]
    if (row < 0).any():
        return None
    all_codes, all_values = _sorted_codes(labels.column("case_id").combine_chunks())
    row_codes = all_codes[row]
    if (row_codes < 0).any():  # a null label in a cases table
        return None
    # Keep only the labels the rows use (a tag filter leaves some cases without rows).
    used = np.zeros(len(all_values) + 1, dtype=bool)
    used[row_codes] = True
    rank = np.cumsum(used[:-1]) - 1
    values = all_values[used[:-1]] if len(all_values) else all_values
    return rank[row_codes], values


def _numbers(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


def _run_codes(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    if table.column("run_code").null_count or table.column("vpos").null_count:
        raise InputError("engine returned a run or variant outside the slice")
    return _numbers(table, "run_code"), _numbers(table, "vpos")


def duckdb_engine(
    source: Source,
    layout: RunLayout,
    *,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | None = None,
    connection: Any = None,
    **_: Any,
) -> SufficientStats:
    duckdb = require("duckdb", "the duckdb engine")
    con = connection or duckdb_connection(
        memory_limit=memory_limit, threads=threads, temp_directory=temp_directory
    )
    try:
        keys = f"_alf_keys_{uuid.uuid4().hex}"
        con.register(keys, _layout_keys(layout))
        if isinstance(source, TableSource):
            check_columns(source.table)
            con.register("_alf_attempts", source.table.select(list(NEEDED_COLUMNS)))
            cases, trials = (
                con.sql(
                    _KEYED_SQL.format(
                        aggregate=aggregate.format(source="_alf_attempts", where="TRUE"),
                        keys=keys,
                        inner=inner,
                    )
                ).to_arrow_table()
                for aggregate, inner in ((_CASE_SQL, "case_index"), (_TRIAL_SQL, "trial"))
            )
            label_codes, categories = _sorted_codes(cases.column("case_id").combine_chunks())
        elif not source.scans:
            return from_keyed_frames(pd.DataFrame(), pd.DataFrame(), layout, "duckdb")
        else:
            cases, trials, label_codes, categories = _archive_stats(con, source.scans, layout, keys)
    except duckdb.OutOfMemoryException as exc:
        # A limit too small for one block's hash tables is the caller's setting to change,
        # not a bug (DuckDB spills what it can, and this it cannot).
        limit = f"the memory limit {memory_limit}" if memory_limit else "its memory limit"
        raise InputError(
            f"DuckDB ran out of memory under {limit} ({str(exc).splitlines()[0]})",
            location="memory_limit",
            hint="raise the memory limit (in Python, fewer threads also help: threads=1 "
            "needs the least)",
        ) from None
    finally:
        if connection is None:
            con.close()
    run_code, vpos = _run_codes(cases)
    case_frame = _case_frame(
        layout,
        run_code,
        vpos,
        _numbers(cases, "case_index"),
        label_codes,
        categories,
        {n: _numbers(cases, n) for n in CASE_STATS},
    )
    t_run, t_vpos = _run_codes(trials)
    trial_frame = _trial_frame(
        layout,
        t_run,
        t_vpos,
        _numbers(trials, "trial"),
        {n: _numbers(trials, n) for n in TRIAL_STATS},
    )
    return SufficientStats(
        cases=case_frame,
        trials=trial_frame,
        layout=layout,
        engine="duckdb",
        info={"read": "attempts"},
    )
