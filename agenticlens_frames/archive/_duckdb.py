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
_CASE_SQL = """
SELECT run_id, variant_id, case_index, any_value(case_id) AS case_id,
       count(*) AS attempts,
       sum(CAST(passed AS BIGINT)) AS passes,
       count(scored_value) AS scored,
       coalesce(sum(scored_value), 0.0) AS score_sum,
       coalesce(var_pop(scored_value) * count(scored_value), 0.0) AS score_m2,
       coalesce(sum(latency_ms), 0.0) AS latency_sum,
       count(latency_ms) AS latency_count,
       coalesce(sum(cost_usd), 0.0) AS cost_sum,
       count(cost_usd) AS cost_count
FROM (
    SELECT run_id, variant_id, case_index, case_id, passed, latency_ms, cost_usd,
           CASE WHEN status <> 'trial_failed' THEN score END AS scored_value
    FROM {source} WHERE {where}
)
GROUP BY run_id, variant_id, case_index
"""
_TRIAL_SQL = """
SELECT run_id, variant_id, trial,
       count(*) AS attempts,
       sum(CAST(passed AS BIGINT)) AS passes,
       count(*) FILTER (WHERE failed) AS failed_attempts,
       coalesce(sum(ok_latency), 0.0) AS latency_ok_sum,
       count(ok_latency) AS latency_ok_count,
       coalesce(sum(cost_usd), 0.0) AS cost_sum,
       count(cost_usd) AS cost_count,
       coalesce(sum(score_sum), 0.0) AS check_value_sum,
       coalesce(sum(n_checks), 0) AS check_count,
       max(run_order) AS execution_position
FROM (
    SELECT run_id, variant_id, trial, passed, cost_usd, score_sum, n_checks, run_order,
           status = 'trial_failed' AS failed,
           CASE WHEN status = 'ok' THEN latency_ms END AS ok_latency
    FROM {source} WHERE {where}
)
GROUP BY run_id, variant_id, trial
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


def _in_run_order(table: pa.Table) -> pa.Table:
    """Blocks' results, each sorted, in layout run order (blocks follow the slice's run
    order, which is the layout's unless the caller passed another layout)."""
    run_code = table.column("run_code").to_numpy(zero_copy_only=False)
    if len(run_code) < 2 or np.all(run_code[1:] >= run_code[:-1]):
        return table
    return table.take(pa.array(np.argsort(run_code, kind="stable")))


def _numbers(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy()


def _run_codes(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    if table.column("run_code").null_count:
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
    con = connection or duckdb_connection(
        memory_limit=memory_limit, threads=threads, temp_directory=temp_directory
    )
    try:
        if isinstance(source, TableSource):
            check_columns(source.table)
            con.register("_alf_attempts", source.table.select(list(NEEDED_COLUMNS)))
            blocks = ["_alf_attempts"]
        elif not source.scans:
            return from_keyed_frames(pd.DataFrame(), pd.DataFrame(), layout, "duckdb")
        else:
            # Blocks of whole runs, one query each: a run's groups never span blocks, so
            # each hash table holds one block's groups and stays within the memory limit
            # (one query over all of a 100M-attempt archive spilled its 10M case groups
            # to disk; see docs/performance.md).
            blocks = [duckdb_source(con, b) for b in run_blocks(source.scans, DUCKDB_BLOCK_ROWS)]
        keys = f"_alf_keys_{uuid.uuid4().hex}"
        con.register(keys, _layout_keys(layout))
        case_parts, trial_parts = [], []
        for block in blocks:
            for parts, aggregate, inner in (
                (case_parts, _CASE_SQL, "case_index"),
                (trial_parts, _TRIAL_SQL, "trial"),
            ):
                sql = _KEYED_SQL.format(
                    aggregate=aggregate.format(source=block, where="TRUE"), keys=keys, inner=inner
                )
                parts.append(con.sql(sql).to_arrow_table())
        cases = _in_run_order(pa.concat_tables(case_parts))
        trials = _in_run_order(pa.concat_tables(trial_parts))
    finally:
        if connection is None:
            con.close()
    run_code, vpos = _run_codes(cases)
    label_codes, categories = _sorted_codes(cases.column("case_id").combine_chunks())
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
    return SufficientStats(cases=case_frame, trials=trial_frame, layout=layout, engine="duckdb")
