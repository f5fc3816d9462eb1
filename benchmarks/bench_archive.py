#!/usr/bin/env python3
"""Archive analysis at scale: every engine against a floor and two baselines, same run.

    python benchmarks/bench_archive.py                      # 1M attempts (about a minute)
    python benchmarks/bench_archive.py --sizes 1M,10M,50M   # the full report
    python benchmarks/bench_archive.py --json out.json      # also write the numbers

For each size an archive of 100k-attempt experiments is generated once (numpy-made tidy
tables written through ``Archive.add``; see benchmarks/make_archive.py) and cached under
``--data``. Then, in this process:

* **floor** — one ``np.sum`` pass over the per-row columns the analysis reads (the
  limit research/perf-limits.md measures every approach against);
* **in memory** — the full analysis (sufficient statistics, case matrix, per-trial
  summaries, variant summary with pass@k / pass^k for k = 1, 5, 10, comparisons, factor
  levels) from the attempts already loaded as an Arrow table, per engine: ``numpy``
  (the default), ``duckdb`` (SQL over the Arrow table in place), ``dask`` (the numpy
  kernel on a 2-worker LocalCluster, threads) and ``pandas`` — the *idiomatic pandas
  groupby* baseline (categorical keys, ``observed=True``) feeding the same derivation;
* **pure Python** — the object-loop baseline (dicts of lists, ``math.comb``,
  ``statistics``) on one experiment, as rows/s;
* **from disk** — the same analysis straight from the parquet archive, whole and for a
  factor-filtered slice (``retrieval="dense"``), per engine; DuckDB also under a memory
  limit smaller than the data.

``--out-of-core 100M`` (a comma list) measures only the DuckDB engine from disk under a
memory limit smaller than the data (``--memory-limit``, default an eighth of the needed
columns' in-memory size), against the **scan floor**: one DuckDB pass summing every
column the attempts scan reads, same files, same threads, same run. It times the full
analysis as the engine runs it (each run's statistics read from its rollups, written at
``archive add`` time), its first call, and once the fallback that aggregates every
attempt (``rollups=False``; ``--skip-scan`` leaves it out), with the peak resident memory
of the whole process for each, and the analysis once more with its case matrix (built
on first use) asked for. ``--breakdown`` also times each query of one block.
``--one-shot N`` first times what a user pays: ``agenticlens-frames archive summarize
ARCHIVE`` and a Python ``analyze(engine="duckdb")`` each in a fresh process, N times
(wall including start-up and imports, CPU of every thread in user and kernel mode, peak
RSS of the process); with ``--baseline-tree PATH`` (an unpacked source tree, e.g.
``git archive main | tar -x -C PATH``) the baseline's code runs the same commands,
alternating with ours; ``--cold`` evicts the archive's files from the page cache before
each of those runs (``posix_fadvise``), so each reads them from the disk.

Times are medians of ``--repeat`` runs after one warm-up; "peak" is the extra resident
memory during one run (``VmHWM`` after a reset, minus the resident size before).
The machine is shared: compare ratios from the same run, not absolute seconds.
Unknown arguments are ignored (``./dev bench`` passes its arguments to every script).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _measure
from make_archive import build

from agenticlens_frames.archive import Archive
from agenticlens_frames.archive.engines import NEEDED_COLUMNS, sufficient_stats
from agenticlens_frames.archive.results import analyze_stats
from agenticlens_frames.archive.sufficient import RunLayout

ROWS_PER_EXPERIMENT = 100_000
PASS_K = (1, 5, 10)


# --------------------------------------------------------------------------- measuring


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _spill_dir() -> str:
    """A folder for DuckDB to spill into, removed when the script ends."""
    path = tempfile.mkdtemp(prefix="alf-duckdb-spill-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _cpu_busy() -> float:
    """Cores in use by everything on the machine over the last minute (load average)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return math.nan


def measure(fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Warm-up, then ``repeat`` timed runs; the peak extra memory of one run."""
    gc.collect()
    began = time.perf_counter()
    fn()
    first = time.perf_counter() - began
    times, cpu = [], []
    for _ in range(repeat):
        gc.collect()
        began, began_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - began)
        cpu.append(time.process_time() - began_cpu)
    gc.collect()
    before = _status_kib("VmRSS")
    peak = math.nan
    if _reset_peak():
        fn()
        peak = (_status_kib("VmHWM") - before) / 1024
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "cpu_median_s": statistics.median(cpu),  # every thread's CPU: steadier under load
        "first_s": first,
        "peak_mib": peak,
        "load": _cpu_busy(),
    }


# --------------------------------------------------------------------------- baselines


def floor_arrays(table: pa.Table) -> list[np.ndarray]:
    """The per-row columns the analysis reads, as the numpy arrays it sums over."""
    out = []
    for name in NEEDED_COLUMNS:
        column = table.column(name).combine_chunks()
        if pa.types.is_dictionary(column.type):
            out.append(column.indices.to_numpy())
        elif pa.types.is_boolean(column.type):
            out.append(column.to_numpy(zero_copy_only=False).view(np.uint8))
        else:
            out.append(column.to_numpy(zero_copy_only=False))
    return out


def floor(arrays: list[np.ndarray]) -> float:
    return float(sum(float(np.sum(a)) for a in arrays))


class Attempt:
    """One attempt as a plain Python object (the object model the baseline stands for)."""

    def __init__(self, *values: Any) -> None:
        (
            self.run_id,
            self.variant_id,
            self.case_id,
            self.trial,
            self.status,
            self.passed,
            self.score,
            self.latency_ms,
            self.cost_usd,
            self.score_sum,
            self.n_checks,
            self.run_order,
        ) = values


def python_attempts(table: pa.Table) -> list[Attempt]:
    names = ["run_id", "variant_id", "case_id", "trial", "status", "passed", "score"]
    names += ["latency_ms", "cost_usd", "score_sum", "n_checks", "run_order"]
    columns = [table.column(n).to_pylist() for n in names]
    return [Attempt(*row) for row in zip(*columns, strict=True)]


def _summary(values: list[float]) -> tuple[float, ...]:
    if not values:
        return (math.nan,) * 4
    ordered = sorted(values)
    position = (len(ordered) - 1) * 0.95
    low, high = math.floor(position), math.ceil(position)
    p95 = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), statistics.median(values), p95, sd


def python_loop(attempts: list[Attempt], ks: tuple[int, ...] = PASS_K) -> dict[str, Any]:
    """The pure-Python baseline: group Attempt objects in dicts of lists, then the same
    statistics with ``math.comb`` and :mod:`statistics` (case matrix, pass@k, trial
    summaries, variant summaries)."""
    by_case: dict[tuple[Any, ...], list[Attempt]] = {}
    by_trial: dict[tuple[Any, ...], list[Attempt]] = {}
    for a in attempts:
        by_case.setdefault((a.run_id, a.variant_id, a.case_id), []).append(a)
        by_trial.setdefault((a.run_id, a.variant_id, a.trial), []).append(a)
    variants: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    for (run, variant, _case), group in by_case.items():
        n = len(group)
        c = sum(a.passed for a in group)
        scores = [a.score for a in group if a.status != "trial_failed" and a.score is not None]
        if scores:
            statistics.fmean(scores)
        if len(scores) > 1:
            statistics.stdev(scores)
        latencies = [a.latency_ms for a in group if a.latency_ms is not None]
        if latencies:
            statistics.fmean(latencies)
        entry = variants.setdefault((run, variant), {"cases": []})
        for k in ks:
            at = math.nan if n < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)
            hat = math.nan if n < k else math.comb(c, k) / math.comb(n, k)
            entry.setdefault(f"at{k}", []).append(at)
            entry.setdefault(f"hat{k}", []).append(hat)
        entry["cases"].append(c / n)
    for (run, variant, _trial), group in by_trial.items():
        if any(a.status == "trial_failed" for a in group):
            continue
        entry = variants[(run, variant)]
        ok = [a.latency_ms for a in group if a.status == "ok" and a.latency_ms is not None]
        checks = sum(a.n_checks for a in group)
        entry.setdefault("pass_rate", []).append(sum(a.passed for a in group) / len(group))
        entry.setdefault("score", []).append(
            sum(a.score_sum for a in group if a.score_sum is not None) / checks if checks else 0.0
        )
        entry.setdefault("latency", []).append(statistics.fmean(ok) if ok else math.nan)
    return {
        key: {name: _summary(values) for name, values in entry.items()}
        for key, entry in variants.items()
    }


# --------------------------------------------------------------------------- the run


def ensure_archive(data: Path, rows: int) -> Archive:
    experiments = max(1, rows // ROWS_PER_EXPERIMENT)
    folder = data / f"archive-{experiments}x100k"
    archive = Archive(folder, durable=False)
    have = len(archive.records()) if folder.exists() else 0
    if have < experiments:
        print(f"generating {experiments} experiments into {folder} ...", file=sys.stderr)
        began = time.perf_counter()
        build(folder, experiments, quiet=False)
        print(f"  done in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    return archive


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if text[-1] in "KM" else text) * scale)


def run_size(archive: Archive, args: argparse.Namespace, client: Any) -> dict[str, Any]:
    whole = archive.all()
    info = whole.variant_info()
    layout = RunLayout.from_scans(whole.scans())
    began = time.perf_counter()
    table = whole.table("attempts", NEEDED_COLUMNS)
    load_s = time.perf_counter() - began
    rows = table.num_rows
    # Fewer repeats for the big sizes: each run already averages over many experiments.
    repeat = args.repeat if rows <= 2_000_000 else 3 if rows <= 20_000_000 else 2
    result: dict[str, Any] = {
        "rows": rows,
        "runs": len(layout.run_ids),
        "table_mib": table.nbytes / 2**20,
        "disk_mib": sum(f.stat().st_size for f in archive.path.rglob("*.parquet")) / 2**20,
        "load_needed_columns_s": load_s,
    }
    arrays = floor_arrays(table)
    result["floor_bytes_per_row"] = sum(a.itemsize for a in arrays)
    result["floor"] = measure(lambda: floor(arrays), max(repeat, 5))
    arrays.clear()

    def full(engine: str, source: Any, **options: Any) -> Callable[[], Any]:
        def go() -> Any:
            st = sufficient_stats(source, engine=engine, layout=layout, **options)
            return analyze_stats(st, info, pass_k=PASS_K)

        return go

    memory: dict[str, Any] = {}
    for engine in args.engines:
        if engine == "dask" and client is None:
            continue
        options = {"client": client} if engine == "dask" else {}
        print(f"  in memory: {engine}", file=sys.stderr)
        memory[engine] = measure(full(engine, table, **options), repeat)
    result["in_memory"] = memory

    one_run = whole.where(runs=layout.run_ids[0]).table("attempts", NEEDED_COLUMNS)
    objects = python_attempts(one_run)
    py = measure(lambda: python_loop(objects), 1)
    result["pure_python"] = {
        **py,
        "rows": len(objects),
        "rows_per_s": len(objects) / py["median_s"],
    }
    objects.clear()

    disk: dict[str, Any] = {}
    dense = archive.slice(retrieval="dense")
    for engine in args.engines:
        if engine == "pandas" or (engine == "dask" and client is None):
            continue
        options = {"client": client} if engine == "dask" else {}
        print(f"  from disk: {engine}", file=sys.stderr)
        disk[engine] = measure(full(engine, whole, **options), max(1, repeat // 2))

        def sliced(engine: str = engine, options: dict[str, Any] = options) -> Any:
            st = sufficient_stats(dense, engine=engine, **options)
            return analyze_stats(st, dense.variant_info(), pass_k=PASS_K)

        disk[f"{engine}_slice_retrieval_dense"] = measure(sliced, max(1, repeat // 2))
    if "duckdb" in args.engines:
        limit_mib = max(64, int(result["table_mib"] / 4))
        spill = _spill_dir()
        print(f"  from disk: duckdb under memory_limit={limit_mib}MB", file=sys.stderr)
        disk["duckdb_memory_limited"] = {
            **measure(
                full(
                    "duckdb", whole, memory_limit=f"{limit_mib}MB", threads=2, temp_directory=spill
                ),
                1,
            ),
            "memory_limit_mib": limit_mib,
        }
    result["slice_retrieval_dense_rows"] = dense.table("attempts", ["run_id"]).num_rows
    result["from_disk"] = disk
    return result


def _column_bytes(scans: Any, columns: list[str]) -> int:
    """Compressed bytes of these columns in the runs' attempts files (parquet footers)."""
    import pyarrow.parquet as pq

    total = 0
    for scan in scans:
        meta = pq.ParquetFile(scan.file("attempts")).metadata
        names = meta.schema.names
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            total += sum(group.column(names.index(c)).total_compressed_size for c in columns)
    return total


def block_breakdown(con: Any, whole: Any, layout: RunLayout) -> dict[str, Any]:
    """Where one block's time goes: each query of the engine on the first block of runs,
    and the earlier single ``GROUP BY run_id, variant_id, case_index`` over the block's
    files (id strings read per row, sorted in DuckDB), CPU of every thread included."""
    from agenticlens_frames.archive import _duckdb as duck

    keys = "_bench_keys"
    con.register(keys, duck._layout_keys(layout))
    codes = {run: code for code, run in enumerate(layout.run_ids)}
    block = duck.run_blocks(whole.scans(), duck.block_rows(con))[0]
    coded = [(codes[s.run_id], s) for s in block]
    source = duck.duckdb_source(con, block)
    queries = {
        "cases per file": duck._BLOCK_SQL.format(
            union=duck._union(coded, duck._FILE_CASE_SQL, "attempts"), keys=keys
        ),
        "trials per file": duck._BLOCK_SQL.format(
            union=duck._union(coded, duck._FILE_TRIAL_SQL, "attempts"), keys=keys
        ),
        "labels from cases tables": duck._union(coded, duck._CASES_LABELS_SQL, "cases"),
    }
    for name, aggregate, inner in (
        ("earlier: cases, one GROUP BY with ids", duck._CASE_SQL, "case_index"),
        ("earlier: trials, one GROUP BY with ids", duck._TRIAL_SQL, "trial"),
    ):
        queries[name] = duck._KEYED_SQL.format(
            aggregate=aggregate.format(source=source, where="TRUE"),
            keys=keys,
            inner=inner,
        )
    out: dict[str, Any] = {"attempts": sum(s.n_attempts for s in block)}
    for name, sql in queries.items():
        out[name] = measure(lambda sql=sql: con.sql(sql).to_arrow_table(), 2)
    return out


def _whole_process(fn: Callable[[], Any]) -> dict[str, float]:
    """One run of ``fn`` from a collected heap: wall, CPU (every thread) and the peak
    resident memory of the whole process during it (``VmHWM`` after a reset; NaN where
    the kernel cannot reset it)."""
    gc.collect()
    reset = _reset_peak()
    began, began_cpu = time.perf_counter(), time.process_time()
    fn()
    out = {"s": time.perf_counter() - began, "cpu_s": time.process_time() - began_cpu}
    out["peak_rss_mib"] = _status_kib("VmHWM") / 1024 if reset else math.nan
    out["rss_after_mib"] = _status_kib("VmRSS") / 1024
    return out


#: The Python API's one-shot analysis, run in a fresh process (argv: archive folder).
_API_ONE_SHOT = (
    "import sys; from agenticlens_frames.archive import Archive; "
    "Archive(sys.argv[1]).all().analyze('duckdb').variant_summary"
)


def _fresh_process(command: list[str], tree: Path) -> dict[str, float]:
    """One run of ``command`` in a fresh Python process importing ``tree``'s package:
    wall time (start-up and imports included), CPU of all its threads in user and kernel
    mode, and its peak resident memory, from the kernel's accounting of the child as a
    small process of its own reports it (``_measure.py``: this process's own ``wait4``
    would count this process's peak, the archive's tables included, as the child's)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
    with tempfile.TemporaryFile() as stderr:
        usage = _measure.measure(
            [sys.executable, *command],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            interval=None,  # (one process: its peak RSS is the figure)
        )
        assert usage is not None  # (no timeout)
        if usage.returncode:
            stderr.seek(0)
            text = stderr.read().decode(errors="replace")
            raise SystemExit(f"{command} failed under {tree}:\n{text[-3000:]}")
    return {
        "s": usage.seconds,
        "user_s": usage.user,
        "sys_s": usage.system,
        "peak_rss_mib": usage.max_rss_mib,
    }


def evict(folder: Path) -> int:
    """Drop the archive's files from the page cache (``POSIX_FADV_DONTNEED``; clean
    pages only, so flushed first), so that the next read comes from the disk: a cold
    start without dropping every cache of the machine. Returns the files evicted."""
    files = [f for f in folder.rglob("*") if f.is_file()]
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return len(files)


def one_shot(archive: Archive, args: argparse.Namespace) -> dict[str, Any]:
    """The command line's ``archive summarize ARCHIVE`` and the API's first
    ``analyze("duckdb")``, each in a fresh process, ``--one-shot`` times, alternating
    with the baseline tree's code when one is given; medians and every run."""
    trees = {"ours": Path(__file__).resolve().parent.parent}
    if args.baseline_tree:
        trees["baseline"] = args.baseline_tree.resolve()
    commands = {
        "cli summarize": [
            "-m",
            "agenticlens_frames.cli",
            "archive",
            "summarize",
            str(archive.path),
        ],
        "api analyze(duckdb)": ["-c", _API_ONE_SHOT, str(archive.path)],
    }
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(args.one_shot):
        for what, command in commands.items():
            for who, tree in trees.items():
                print(f"  one shot: {what}, {who}", file=sys.stderr)
                if args.cold:
                    evict(archive.path)
                runs.setdefault(f"{what}, {who}", []).append(_fresh_process(command, tree))
    out: dict[str, Any] = {"load": _cpu_busy()}
    for name, measured in runs.items():
        out[name] = {
            **{f"median_{k}": statistics.median(m[k] for m in measured) for k in measured[0]},
            "runs": measured,
        }
    return out


def run_out_of_core(archive: Archive, args: argparse.Namespace) -> dict[str, Any]:
    """DuckDB from disk under a memory limit, against a DuckDB scan of the same columns.

    Measured, in this order, in one process: the scan floor; the full analysis as the
    engine runs it by default (each run's statistics from its rollups, written at
    ``archive add`` time), first call (checksums of the files verified) and then
    ``--repeat`` times; the same analysis with ``rollups=False`` (the fallback: DuckDB
    aggregates every attempt), once. Peak RSS is the whole process's.
    """
    import duckdb

    from agenticlens_frames.archive._duckdb import duckdb_connection, duckdb_source

    whole = archive.all()
    info = whole.variant_info()
    layout = RunLayout.from_scans(whole.scans())
    rows = sum(r.n_attempts for r in archive.records())
    table_mib = rows * 69 / 2**20  # the needed columns in memory (bench floor: 69 B/row)
    limit_mib = args.memory_limit or max(64, int(table_mib / 8))
    spill = _spill_dir()
    con = duckdb_connection(memory_limit=f"{limit_mib}MB", threads=2, temp_directory=spill)
    # The scan floor: one pass summing every column the DuckDB engine reads from the
    # attempts (it names runs by a literal per file and cases from the cases tables, so
    # run_id and case_id strings are not among them), same files, same threads.
    numeric = ["case_index", "trial", "score", "latency_ms", "cost_usd", "score_sum"]
    numeric += ["n_checks", "run_order", "CAST(passed AS INTEGER)"]
    strings = ["variant_id", "status"]
    scan_sql = "SELECT count(*), " + ", ".join(
        [f"sum({c})" for c in numeric] + [f"max(length({c}))" for c in strings]
    )
    source = duckdb_source(con, whole.scans())
    read_columns = ["case_index", "trial", "score", "latency_ms", "cost_usd", "score_sum"]
    read_columns += ["n_checks", "run_order", "passed", "variant_id", "status"]
    repeat = max(1, min(args.repeat, 3))
    rollup_runs = sum(scan.has_rollups for scan in whole.scans())
    print(f"  out of core: {rows} rows, memory_limit={limit_mib}MB", file=sys.stderr)
    result: dict[str, Any] = {
        "rows": rows,
        "runs": len(layout.run_ids),
        "runs_with_rollups": rollup_runs,
        "disk_mib": sum(f.stat().st_size for f in archive.path.rglob("*.parquet")) / 2**20,
        "rollup_disk_mib": sum(
            f.stat().st_size
            for name in ("case_stats", "trial_stats")
            for f in archive.path.rglob(f"{name}.parquet")
        )
        / 2**20,
        "memory_limit_mib": limit_mib,
        "duckdb": duckdb.__version__,
        "load_at_start": _cpu_busy(),
    }
    result["read_bytes_per_row"] = _column_bytes(whole.scans(), read_columns) / rows
    if args.one_shot:
        # First, before this process has read anything: each run is a fresh process.
        result["one_shot"] = one_shot(archive, args)
        if args.one_shot_only:
            return result
    result["scan_floor"] = measure(lambda: con.sql(f"{scan_sql} FROM {source}").fetchall(), repeat)
    if args.breakdown:
        result["block"] = block_breakdown(con, whole, layout)
    con.close()
    options = {"memory_limit": f"{limit_mib}MB", "threads": 2, "temp_directory": spill}

    def analysis(**extra: Any) -> Callable[[], Any]:
        def go() -> Any:
            st = sufficient_stats(whole, engine="duckdb", layout=layout, **options, **extra)
            go.read = st.info.get("read")  # type: ignore[attr-defined]
            go.case_rows = len(st.cases)  # type: ignore[attr-defined]
            return analyze_stats(st, info, pass_k=PASS_K)

        return go

    print("  default engine (rollups where archived)", file=sys.stderr)
    default = analysis()
    result["default_first"] = _whole_process(default)
    result["default"] = measure(default, repeat)
    result["default_whole_process"] = _whole_process(default)
    result["default_read"] = default.read  # type: ignore[attr-defined]
    # The case matrix (10M rows at 100M attempts) is built when first asked for.
    result["with_case_matrix_whole_process"] = _whole_process(lambda: default().case_matrix)
    result["case_rows"] = default.case_rows  # type: ignore[attr-defined]
    if not args.skip_scan:
        print("  fallback: rollups=False (every attempt aggregated)", file=sys.stderr)
        fallback = analysis(rollups=False)
        result["scan_whole_process"] = _whole_process(fallback)
        result["scan_read"] = fallback.read  # type: ignore[attr-defined]
    result["load_at_end"] = _cpu_busy()
    return result


def out_of_core_report(results: dict[str, Any]) -> str:
    lines = [
        "| size | runs (with rollups) | memory_limit MiB | scan floor s (CPU) | analysis s (CPU), "
        "reads | × scan floor | first call s | peak RSS MiB | rollups=False s (CPU) | "
        "its peak RSS MiB | with the case matrix s, peak MiB | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size, r in results.items():
        if "default" not in r:  # --one-shot-only
            continue
        scan = r["scan_floor"]["median_s"]
        d = r["default"]
        fallback = r.get("scan_whole_process")
        lines.append(
            f"| {size} | {r['runs']} ({r['runs_with_rollups']}) | {r['memory_limit_mib']} | "
            f"{scan:.2f} ({r['scan_floor']['cpu_median_s']:.1f}) | "
            f"{d['median_s']:.2f} ({d['cpu_median_s']:.1f}), {r['default_read']} | "
            f"{d['median_s'] / scan:.2f} | {r['default_first']['s']:.2f} | "
            f"{r['default_whole_process']['peak_rss_mib']:.0f} | "
            + (
                f"{fallback['s']:.2f} ({fallback['cpu_s']:.1f}) | {fallback['peak_rss_mib']:.0f} | "
                if fallback
                else "not run | | "
            )
            + f"{r['with_case_matrix_whole_process']['s']:.2f}, "
            f"{r['with_case_matrix_whole_process']['peak_rss_mib']:.0f} | "
            f"{r['load_at_start']:.1f}-{r['load_at_end']:.1f} |"
        )
    for size, r in results.items():
        shots = r.get("one_shot")
        if not shots:
            continue
        lines.append(
            f"\n{size}, a fresh process per run, medians: "
            "wall s | user s | kernel s | peak RSS MiB | every run's wall s"
        )
        for name, m in shots.items():
            if isinstance(m, dict):
                walls = ", ".join(f"{x['s']:.2f}" for x in m["runs"])
                lines.append(
                    f"  {name}: {m['median_s']:.2f} | {m['median_user_s']:.2f} | "
                    f"{m['median_sys_s']:.2f} | {m['median_peak_rss_mib']:.0f} | {walls}"
                )
        lines.append(f"  load average at the end: {shots['load']:.1f}")
    for size, r in results.items():
        block = r.get("block", {})
        if block:
            lines.append(f"\n{size}, first block ({block['attempts']} attempts): wall s (CPU s)")
        for name, m in block.items():
            if isinstance(m, dict):
                lines.append(f"  {name}: {m['median_s']:.2f} ({m['cpu_median_s']:.2f})")
    return "\n".join(lines)


def ratios(result: dict[str, Any]) -> dict[str, float]:
    floor_s = result["floor"]["median_s"]
    memory = result["in_memory"]
    out = {}
    for engine, m in memory.items():
        out[f"{engine}_x_floor"] = m["median_s"] / floor_s
        out[f"{engine}_peak_over_table"] = m["peak_mib"] / result["table_mib"]
    if "numpy" in memory and "pandas" in memory:
        out["pandas_over_numpy"] = memory["pandas"]["median_s"] / memory["numpy"]["median_s"]
    py_rate = result["pure_python"]["rows_per_s"]
    for engine, m in memory.items():
        out[f"{engine}_x_python"] = result["rows"] / m["median_s"] / py_rate
    return out


def report(results: dict[str, Any]) -> str:
    lines = [
        "| size | engine | where | median s | first s | peak MiB | × floor | × pure Python |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, r in results.items():
        floor_s = r["floor"]["median_s"]
        py_rate = r["pure_python"]["rows_per_s"]
        lines.append(
            f"| {size} | np.sum floor ({r['floor_bytes_per_row']} B/row) | memory | "
            f"{floor_s:.4f} | | | 1 | |"
        )
        for where, group in (("memory", r["in_memory"]), ("disk", r["from_disk"])):
            for engine, m in group.items():
                speed = r["rows"] / m["median_s"] / py_rate
                lines.append(
                    f"| {size} | {engine} | {where} | {m['median_s']:.3f} | {m['first_s']:.3f} | "
                    f"{m['peak_mib']:.0f} | {m['median_s'] / floor_s:.0f} | {speed:.0f} |"
                )
        lines.append(
            f"| {size} | pure Python loop ({r['pure_python']['rows']} rows) | memory | "
            f"{r['rows'] / py_rate:.1f} (extrapolated) | | | "
            f"{r['rows'] / py_rate / floor_s:.0f} | 1 |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1M", help="comma list, e.g. 1M,10M,50M")
    parser.add_argument("--engines", default="numpy,duckdb,dask,pandas")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--data", type=Path, default=Path(tempfile.gettempdir()) / "alf-bench-archives"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the numbers here")
    parser.add_argument(
        "--out-of-core", default="", help="only DuckDB from disk, e.g. 100M (comma list)"
    )
    parser.add_argument("--memory-limit", type=int, default=0, help="DuckDB limit, MiB")
    parser.add_argument(
        "--skip-scan", action="store_true", help="out of core: skip the rollups=False run"
    )
    parser.add_argument(
        "--breakdown", action="store_true", help="out of core: time each query of one block"
    )
    parser.add_argument(
        "--one-shot",
        type=int,
        default=0,
        help="out of core: time summarize / analyze in a fresh process, this many times",
    )
    parser.add_argument(
        "--baseline-tree", type=Path, default=None, help="one shot: also run this source tree"
    )
    parser.add_argument(
        "--one-shot-only", action="store_true", help="out of core: only the one-shot runs"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="one shot: evict the archive's files from the page cache before each run",
    )
    # Strict: a misspelt option (--size for --sizes) ran the defaults without a word.
    args = parser.parse_args()
    if args.out_of_core:
        args.data.mkdir(parents=True, exist_ok=True)
        results = {}
        for size in args.out_of_core.split(","):
            print(f"size {size} (out of core)", file=sys.stderr)
            results[size] = run_out_of_core(ensure_archive(args.data, parse_size(size)), args)
        print(out_of_core_report(results))
        if args.json:
            args.json.write_text(json.dumps({"out_of_core": results}, indent=1))
        return
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    args.data.mkdir(parents=True, exist_ok=True)

    client = cluster = None
    if "dask" in args.engines:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        )
        client = Client(cluster)
    results: dict[str, Any] = {}
    try:
        for size in args.sizes.split(","):
            print(f"size {size}", file=sys.stderr)
            archive = ensure_archive(args.data, parse_size(size))
            results[size] = run_size(archive, args, client)
            results[size]["ratios"] = ratios(results[size])
    finally:
        if client is not None:
            client.close()
            cluster.close()
    meta = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pyarrow": pa.__version__,
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    print(report(results))
    for size, r in results.items():
        print(f"\n{size}: " + ", ".join(f"{k}={v:.2f}" for k, v in r["ratios"].items()))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
