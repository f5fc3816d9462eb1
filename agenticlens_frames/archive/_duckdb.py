"""The DuckDB engine: SQL ``GROUP BY`` over the archive's parquet files (or an Arrow
table in place), out of core under a memory limit, spilling to disk beyond it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from .._optional import require
from ._kernel import NEEDED_COLUMNS
from ._scan import RunScan
from .sufficient import (
    RunLayout,
    Source,
    SufficientStats,
    TableSource,
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


_CASE_SQL = """
SELECT run_id, variant_id, case_index, any_value(case_id) AS case_id,
       count(*) AS attempts,
       sum(CAST(passed AS BIGINT)) AS passes,
       count(score) FILTER (WHERE status <> 'trial_failed') AS scored,
       coalesce(sum(score) FILTER (WHERE status <> 'trial_failed'), 0.0) AS score_sum,
       coalesce(var_pop(score) FILTER (WHERE status <> 'trial_failed')
                * count(score) FILTER (WHERE status <> 'trial_failed'), 0.0) AS score_m2,
       coalesce(sum(latency_ms), 0.0) AS latency_sum,
       count(latency_ms) AS latency_count,
       coalesce(sum(cost_usd), 0.0) AS cost_sum,
       count(cost_usd) AS cost_count
FROM {source} WHERE {where}
GROUP BY run_id, variant_id, case_index
"""
_TRIAL_SQL = """
SELECT run_id, variant_id, trial,
       count(*) AS attempts,
       sum(CAST(passed AS BIGINT)) AS passes,
       count(*) FILTER (WHERE status = 'trial_failed') AS failed_attempts,
       coalesce(sum(latency_ms) FILTER (WHERE status = 'ok'), 0.0) AS latency_ok_sum,
       count(latency_ms) FILTER (WHERE status = 'ok') AS latency_ok_count,
       coalesce(sum(cost_usd), 0.0) AS cost_sum,
       count(cost_usd) AS cost_count,
       coalesce(sum(score_sum), 0.0) AS check_value_sum,
       coalesce(sum(n_checks), 0) AS check_count,
       max(run_order) AS execution_position
FROM {source} WHERE {where}
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
            from_clause, where = "_alf_attempts", "TRUE"
        else:
            if not source.scans:
                return from_keyed_frames(pd.DataFrame(), pd.DataFrame(), layout, "duckdb")
            from_clause, where = duckdb_source(con, source.scans), "TRUE"
        cases = con.sql(_CASE_SQL.format(source=from_clause, where=where)).to_arrow_table()
        trials = con.sql(_TRIAL_SQL.format(source=from_clause, where=where)).to_arrow_table()
    finally:
        if connection is None:
            con.close()
    return from_keyed_frames(_arrow_to_keyed(cases), _arrow_to_keyed(trials), layout, "duckdb")


def _arrow_to_keyed(table: pa.Table) -> pd.DataFrame:
    """DuckDB's result as pandas, string keys as categoricals (mapped per distinct
    value later, never per row)."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            column = column.dictionary_encode()
        columns[name] = column.to_pandas()
    return pd.DataFrame(columns, copy=False)
