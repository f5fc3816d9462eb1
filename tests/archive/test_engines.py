"""Engines: each against an independent loop, against each other, and their options."""

from __future__ import annotations

import itertools
import shutil
import sys
from dataclasses import astuple
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from agenticlens_frames.archive import Archive, sufficient_stats
from agenticlens_frames.archive.engines import (
    NEEDED_COLUMNS,
    choose_engine,
    run_partial,
    split_runs,
)
from agenticlens_frames.archive.sufficient import (
    RunLayout,
    assemble,
    from_keyed_frames,
    merge_stats,
)
from agenticlens_frames.errors import InputError
from agenticlens_frames.frames import ExperimentRun

from .conftest import archived_before_checksums, assert_matches_oracle, fill

LOCAL_ENGINES = ["numpy", "pandas", "duckdb"]


def assert_same_stats(a, b) -> None:
    for name in ("cases", "trials"):
        pd.testing.assert_frame_equal(
            getattr(a, name), getattr(b, name), check_exact=False, rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize("rollups", [True, False], ids=["rollups", "attempts"])
@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_engine_matches_a_plain_loop(shared_archive: Archive, engine: str, rollups: bool):
    sl = shared_archive.all()
    stats = sl.stats(engine, rollups=rollups)
    assert stats.info["read"] == ("rollups" if rollups and engine != "pandas" else "attempts")
    assert_matches_oracle(stats, sl.frame("attempts"))


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_engine_matches_a_plain_loop_on_a_filtered_slice(shared_archive: Archive, engine: str):
    sl = shared_archive.slice(tags=["refund", "shipping"], model=["gpt-small", "small"])
    attempts = sl.frame("attempts")
    assert 0 < len(attempts) < len(shared_archive.all().frame("attempts"))
    assert_matches_oracle(sl.stats(engine), attempts)


def test_engines_return_identical_frames(shared_archive: Archive):
    for sl in (shared_archive.all(), shared_archive.slice(tags="refund", since="2026-10-01")):
        reference = sl.stats("numpy")
        for engine in ("pandas", "duckdb"):
            assert_same_stats(sl.stats(engine), reference)
        # Same frames from the attempts already in memory (Arrow or pandas).
        layout = RunLayout.from_scans(sl.scans())
        table = sl.table("attempts")
        for engine in LOCAL_ENGINES:
            assert_same_stats(sufficient_stats(table, engine=engine, layout=layout), reference)
        assert_same_stats(
            sufficient_stats(table.to_pandas(), engine="numpy", layout=layout), reference
        )


def _sparse(run: ExperimentRun, seed: int) -> pa.Table:
    """Attempts with rows dropped and shuffled: neither a complete nor a sorted grid."""
    rng = np.random.default_rng(seed)
    frame = run.attempts.assign(run_id=pd.Categorical(["r"] * len(run.attempts)))
    keep = rng.random(len(frame)) > 0.1
    frame = frame[keep].sample(frac=1.0, random_state=seed)
    return pa.Table.from_pandas(frame, preserve_index=False)


@pytest.mark.parametrize("method", ["grid", "cube", "bincount"])
def test_kernel_methods_agree_with_the_loop(support_run: ExperimentRun, method: str):
    complete = pa.Table.from_pandas(
        support_run.attempts.assign(run_id=pd.Categorical(["r"] * len(support_run.attempts))),
        preserve_index=False,
    )
    sparse = _sparse(support_run, seed=3)
    for table in (complete, sparse):
        if method == "grid" and table is sparse:
            with pytest.raises(InputError, match="grid"):
                run_partial(table, "r", support_run.manifest.variant_ids, method=method)
            continue
        layout = RunLayout(
            ("r",), ("support-agent-upgrade@1",), (support_run.manifest.variant_ids,)
        )
        partial = run_partial(table, "r", support_run.manifest.variant_ids, method=method)
        stats = assemble([partial], layout, "numpy")
        assert_matches_oracle(stats, table.to_pandas())


def _storage_variants(table: pa.Table) -> dict[str, pa.Table]:
    """The same attempts stored the ways Arrow allows: missing floats as NaN values
    instead of nulls, and columns cut into chunks at offsets that are not byte-aligned
    (the kernel reads Arrow's buffers and bitmaps directly)."""
    floats = ("score", "latency_ms", "cost_usd", "score_sum")
    as_nan = table
    for name in floats:
        values = table.column(name).to_numpy()  # nulls become NaN
        index = as_nan.schema.get_field_index(name)
        as_nan = as_nan.set_column(index, name, pa.array(values, from_pandas=False))
    assert as_nan.column("score").null_count == 0 < np.isnan(as_nan.column("score")).sum()
    cuts = [0, 3, 61, 62, 200, table.num_rows]
    chunked = pa.concat_tables([table.slice(a, b - a) for a, b in itertools.pairwise(cuts)])
    assert chunked.column("passed").num_chunks == 5
    return {"nulls": table, "nan": as_nan, "chunked": chunked, "nan_chunked": as_nan.slice(5)}


@pytest.mark.parametrize("method", ["auto", "bincount"])
def test_kernel_reads_every_arrow_storage_of_the_columns(support_run: ExperimentRun, method: str):
    frame = support_run.attempts.assign(run_id=pd.Categorical(["r"] * len(support_run.attempts)))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert table.column("latency_ms").null_count > 0
    layout = RunLayout(("r",), ("support-agent-upgrade@1",), (support_run.manifest.variant_ids,))
    for stored in _storage_variants(table).values():
        partial = run_partial(stored, "r", support_run.manifest.variant_ids, method=method)
        stats = assemble([partial], layout, "numpy")
        assert_matches_oracle(stats, stored.to_pandas())


def test_rows_repeating_a_cell_fall_back_to_bincount(support_run: ExperimentRun):
    frame = support_run.attempts.assign(run_id=pd.Categorical(["r"] * len(support_run.attempts)))
    doubled = pa.Table.from_pandas(pd.concat([frame, frame.iloc[:7]]), preserve_index=False)
    stats = sufficient_stats(doubled, engine="numpy")
    assert_matches_oracle(stats, doubled.to_pandas())


def test_runs_split_from_one_mixed_table(shared_archive: Archive):
    table = shared_archive.all().table("attempts", NEEDED_COLUMNS)
    shuffled = table.take(np.random.default_rng(0).permutation(table.num_rows))
    pieces = split_runs(shuffled)
    assert sorted(pieces) == sorted(r.run_id for r in shared_archive.records())
    assert sum(t.num_rows for t in pieces.values()) == table.num_rows
    layout = RunLayout.from_scans(shared_archive.all().scans())
    assert_same_stats(
        sufficient_stats(shuffled, engine="numpy", layout=layout),
        sufficient_stats(table, engine="numpy", layout=layout),
    )


def test_duckdb_finishes_under_a_small_memory_limit(shared_archive: Archive, tmp_path: Path):
    sl = shared_archive.all()
    limited = sl.stats("duckdb", memory_limit="32MB", threads=1, temp_directory=str(tmp_path))
    assert_same_stats(limited, sl.stats("numpy"))


@pytest.mark.parametrize("tags", [None, "refund"])
def test_duckdb_out_of_memory_under_its_limit_is_an_input_error(
    shared_archive: Archive, tags: str | None
):
    """A limit too small for even one run's hash tables raised DuckDB's
    OutOfMemoryException, which the command line reported as a bug with a traceback."""
    pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    sl = shared_archive.all() if tags is None else shared_archive.slice(tags=tags)
    with pytest.raises(InputError) as error:
        sl.stats("duckdb", memory_limit="1MB", threads=1, rollups=False)
    assert error.value.location == "memory_limit"
    assert error.value.message.startswith("DuckDB ran out of memory under the memory limit 1MB")
    assert error.value.hint.startswith("raise the memory limit")


def test_duckdb_blocks_shrink_with_its_memory_limit():
    """Blocks of attempts hold 40 bytes of DuckDB memory per attempt: 80 MB -> 2M rows,
    and never more than the default block however large the limit."""
    import agenticlens_frames.archive._duckdb as duck

    small = duck.duckdb_connection(memory_limit="80MB")
    big = duck.duckdb_connection(memory_limit="64GB")
    gib = duck.duckdb_connection(memory_limit="1GiB")
    assert duck.block_rows(small) == pytest.approx(80e6 / 40, rel=0.01)
    assert duck.block_rows(big) == duck.DUCKDB_BLOCK_ROWS
    assert duck.block_rows(gib) == duck.DUCKDB_BLOCK_ROWS


def test_missing_extra_names_what_to_install(monkeypatch, shared_archive: Archive):
    # None in sys.modules makes every import of the package fail, as if not installed.
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(ImportError, match=r"agenticlens-frames\[duckdb\]"):
        shared_archive.all().stats("duckdb")
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ImportError, match=r"agenticlens-frames\[dask\]"):
        shared_archive.all().stats("dask")
    # Without DuckDB, "auto" stays in memory even for a huge slice.
    assert choose_engine(10**12, available=10**9) == "numpy"


def test_auto_engine_picks_duckdb_beyond_memory():
    assert choose_engine(1_000, available=10**9) == "numpy"
    assert choose_engine(10**9, available=10**9) == "duckdb"


def test_unknown_engine_and_bad_sources_are_input_errors(shared_archive: Archive):
    with pytest.raises(InputError, match="unknown engine"):
        shared_archive.all().stats("spark")
    with pytest.raises(InputError, match="cannot compute"):
        sufficient_stats([1, 2, 3])
    with pytest.raises(InputError, match="lacks column"):
        sufficient_stats(pa.table({"run_id": ["a"]}), engine="numpy")


@pytest.mark.distributed
def test_dask_on_a_two_worker_cluster_matches_numpy(shared_archive: Archive):
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        for sl in (shared_archive.all(), shared_archive.slice(tags="refund", retrieval="dense")):
            reference = sl.stats("numpy")
            assert_same_stats(sl.stats("dask", client=client, block_rows=400), reference)
            table = sl.table("attempts")
            layout = RunLayout.from_scans(sl.scans())
            assert_same_stats(
                sufficient_stats(table, engine="dask", client=client, layout=layout), reference
            )
        assert_matches_oracle(
            shared_archive.all().stats("dask", client=client),
            shared_archive.all().frame("attempts"),
        )


@pytest.mark.distributed
@pytest.mark.slow
def test_dask_worker_processes_pickle_the_block_tasks(shared_archive: Archive):
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        sl = shared_archive.slice(since="2026-10-01")
        assert_same_stats(sl.stats("dask", client=client, block_rows=1), sl.stats("numpy"))


def test_every_registered_engine_is_offered_documented_and_runs(shared_archive: Archive):
    """One list of engines: the CLI's choices, the docs table and the dispatch agree."""
    from agenticlens_frames.archive.cli import EngineChoice
    from agenticlens_frames.archive.engine_registry import ENGINE_ENTRIES, ENGINES, engines_table

    assert [c.value for c in EngineChoice] == list(ENGINES) == ["auto", *LOCAL_ENGINES, "dask"]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "archives.md").read_text()
    assert engines_table() in docs
    assert all(
        e.extra is None or f"agenticlens-frames[{e.extra}]" in docs or e.extra in docs
        for e in ENGINE_ENTRIES
    )
    sl = shared_archive.all()
    for name in LOCAL_ENGINES:
        assert sl.stats(name).engine == name


def test_duckdb_in_blocks_of_runs_matches_one_query(monkeypatch, shared_archive: Archive):
    """Out of core, DuckDB aggregates blocks of whole runs one query at a time; the blocks'
    results come back in layout order even when it is not the slice's run order."""
    import agenticlens_frames.archive._duckdb as duck

    sl = shared_archive.slice(tags="refund")
    reference = sl.stats("numpy")
    layout = RunLayout.from_scans(sl.scans())
    backwards = RunLayout(*(tuple(reversed(part)) for part in astuple(layout)))
    monkeypatch.setattr(duck, "DUCKDB_BLOCK_ROWS", 1)  # one run per block
    assert len(duck.run_blocks(sl.scans(), duck.DUCKDB_BLOCK_ROWS)) == len(layout.run_ids) > 1
    assert_same_stats(sl.stats("duckdb"), reference)
    assert_same_stats(
        sufficient_stats(sl, engine="duckdb", layout=backwards),
        sufficient_stats(sl, engine="numpy", layout=backwards),
    )
    assert_matches_oracle(
        sufficient_stats(sl, engine="duckdb", layout=backwards), sl.frame("attempts")
    )


def _earlier_writer_options(table: str, schema: pa.Schema) -> dict:
    """The keywords archives were written with before continuous columns were split:
    every column dictionary-encoded."""
    return {
        "compression": "zstd",
        "row_group_size": 1 << 20,
        "use_dictionary": True,
        "write_statistics": True,
    }


def _encodings(archive: Archive, column: str) -> set[str]:
    out = set()
    for path in archive.path.rglob("attempts.parquet"):
        meta = pq.ParquetFile(path).metadata
        index = meta.schema.names.index(column)
        out.update(meta.row_group(0).column(index).encodings)
    return out


def test_archives_written_before_split_columns_read_and_analyse_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: dict[str, ExperimentRun]
):
    from agenticlens_frames.archive import store

    new = fill(tmp_path / "new", runs)
    monkeypatch.setattr(store, "parquet_options", _earlier_writer_options)
    old = fill(tmp_path / "old", runs)
    monkeypatch.undo()
    assert "BYTE_STREAM_SPLIT" in _encodings(new, "latency_ms")
    assert "BYTE_STREAM_SPLIT" not in _encodings(old, "latency_ms")
    assert "RLE_DICTIONARY" in _encodings(old, "latency_ms")
    assert old.all().table("attempts").equals(new.all().table("attempts"))
    reference = new.all().stats("numpy")
    for engine in LOCAL_ENGINES:
        assert_same_stats(old.all().stats(engine), reference)
    assert_matches_oracle(old.all().stats("duckdb"), old.all().frame("attempts"))


def test_duckdb_labels_cases_from_the_attempts_when_the_cases_table_lacks_some(
    monkeypatch: pytest.MonkeyPatch, shared_archive: Archive, support_run: ExperimentRun
):
    """DuckDB names each case from the run's small cases table; a run whose cases table
    misses a case its attempts have (a file not written by this toolkit, simulated by
    reading only part of it) still gets every label, read from the attempts."""
    import agenticlens_frames.archive._duckdb as duck

    sl = shared_archive.slice(experiments=support_run.experiment_id)
    cut = duck._FILE_LABELS_SQL.replace("GROUP BY", "WHERE case_index >= 2 GROUP BY")
    monkeypatch.setattr(duck, "_CASES_LABELS_SQL", cut)
    stats = sl.stats("duckdb")
    assert_same_stats(stats, sl.stats("numpy"))
    # Against a naive pandas group-by of the attempts, by case label.
    attempts = sl.frame("attempts")
    naive = (
        attempts.assign(passed=attempts["passed"].astype(int))
        .groupby(["variant_id", "case_id"], observed=True)
        .agg(attempts=("trial", "size"), passes=("passed", "sum"), latency=("latency_ms", "sum"))
    )
    got = stats.cases.set_index(["variant_id", "case_id"]).sort_index()
    naive = naive.reindex(got.index)
    assert got["attempts"].tolist() == naive["attempts"].tolist()
    assert got["passes"].tolist() == naive["passes"].tolist()
    np.testing.assert_allclose(got["latency_sum"], naive["latency"], rtol=1e-12)
    assert set(got.index.get_level_values("case_id")) == set(support_run.suite.case_ids)


@pytest.mark.parametrize("engine", ["numpy", "duckdb"])
@pytest.mark.parametrize("rollups", [True, False])
def test_key_columns_of_the_frames_are_writable_arrays(
    shared_archive: Archive, engine: str, rollups: bool
):
    """The integer key columns are not copied when the engine already owns them, but a
    column never wraps an engine's read-only buffer (DuckDB's Arrow results): a frame a
    caller edits in place stays editable, whatever the engine read."""
    st = shared_archive.all().stats(engine, rollups=rollups)
    for frame, inner in ((st.cases, "case_index"), (st.trials, "trial")):
        for column in ("variant_position", inner):
            assert frame[column].dtype == np.int32
            before = int(frame[column].iloc[0])
            # pandas writes into the column's array: a read-only one raises here.
            frame.loc[0, column] = before + 1
            assert int(frame[column].iloc[0]) == before + 1


def _damage_column(path: Path, column: str) -> None:
    """Flip the bytes of the end of one column's data: the footer stays readable."""
    chunks = pq.ParquetFile(path).metadata.row_group(0)
    (chunk,) = [
        chunks.column(i)
        for i in range(chunks.num_columns)
        if chunks.column(i).path_in_schema == column
    ]
    data = bytearray(path.read_bytes())
    start, size = chunk.data_page_offset, chunk.total_compressed_size
    for i in range(start + size // 3, start + size - 2):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["checks file copied over it", "data", "garbage"])
@pytest.mark.parametrize("engine", [*LOCAL_ENGINES, "dask"])
def test_a_damaged_attempts_file_of_a_run_without_checksums_is_named(
    tmp_path: Path, runs: dict[str, ExperimentRun], engine: str, damage: str
):
    """A run archived before checksums has nothing vouching for its files: another table's
    file copied over its attempts, or damaged bytes, ended in a KeyError or a DuckDB
    exception with a traceback. Now every engine names the file and the way out, and a
    slice without that run reads as before."""
    archive = fill(tmp_path / "arc", runs)
    victim = archive.slice(experiments="support-agent-upgrade@1").records()[0]
    folder = archived_before_checksums(archive, victim.run_id)
    attempts = folder / "attempts.parquet"
    if damage == "data":
        _damage_column(attempts, "status")
    elif damage == "garbage":
        attempts.write_bytes(b"PAR1" + bytes(range(256)) * 8)
    else:
        shutil.copyfile(folder / "checks.parquet", attempts)
    with pytest.raises(InputError) as error:
        archive.all().stats(engine)
    assert str(attempts) in str(error.value)
    assert "remove the run and add it again" in str(error.value)
    others = [r.run_id for r in archive.records() if r.run_id != victim.run_id]
    expected = archive.slice(runs=others).frame("attempts")
    assert_matches_oracle(archive.slice(runs=others).stats(engine), expected)


@pytest.mark.parametrize("engine", ["numpy", "pandas", "dask"])
@pytest.mark.parametrize(
    ("setting", "value"), [("memory_limit", "2GB"), ("threads", 2), ("temp_directory", "/tmp")]
)
def test_duckdb_settings_with_another_engine_are_refused(
    shared_archive: Archive, engine: str, setting: str, value: object
):
    """They bound DuckDB alone, and were ignored without a word with another engine (the
    command line refused --memory-limit there); the analysis refuses them the same way."""
    sl = shared_archive.all()
    for call in (
        lambda: sl.stats(engine, **{setting: value}),
        lambda: sl.analyze(engine, **{setting: value}),
    ):
        with pytest.raises(InputError) as error:
            call()
        assert error.value.location == setting
        assert error.value.message == f"applies to the duckdb engine, not {engine}"


@pytest.mark.parametrize("engine", ["auto", "numpy", "pandas", "duckdb"])
@pytest.mark.parametrize(("setting", "value"), [("client", object()), ("block_rows", 1000)])
def test_dask_settings_with_another_engine_are_refused(
    shared_archive: Archive, engine: str, setting: str, value: object
):
    """Only the dask engine reads client= and block_rows=; any other (auto never picks
    dask) ignored them without a word (block_rows until 6 December 2026)."""
    sl = shared_archive.all()
    for call in (
        lambda: sl.stats(engine, **{setting: value}),
        lambda: sl.analyze(engine, **{setting: value}),
    ):
        with pytest.raises(InputError) as error:
            call()
        assert error.value.location == setting
        assert error.value.message == f"applies to the dask engine, not {engine}"


@pytest.mark.parametrize("block_rows", [0, -5, 2.5, "1M", True])
def test_dask_block_rows_must_be_a_whole_number(shared_archive: Archive, block_rows: object):
    """A block size that is no count is refused naming it, whatever is read (runs read
    from their rollups never split the attempts into blocks)."""
    pytest.importorskip("dask")
    with pytest.raises(InputError, match="block_rows must be a whole number"):
        shared_archive.all().stats("dask", block_rows=block_rows)


def test_a_misspelt_engine_setting_is_named_with_the_closest(shared_archive: Archive):
    """sl.stats / sl.analyze(memory_limt=...) raised a bare TypeError."""
    for call in (shared_archive.all().stats, shared_archive.all().analyze):
        with pytest.raises(InputError) as error:
            call("duckdb", memory_limt="2GB")
        assert error.value.message == "unknown engine setting 'memory_limt'"
        assert error.value.hint.startswith("did you mean 'memory_limit'?")


@pytest.mark.parametrize("threads", ["many", 0, 1.5, True])
def test_duckdb_threads_must_be_a_whole_number(shared_archive: Archive, threads: object):
    """Read only when DuckDB scans: a slice read from its rollups accepted threads="many"
    (and DuckDB reads 0 as "no setting") without a word."""
    with pytest.raises(InputError) as error:
        shared_archive.all().stats("duckdb", threads=threads)
    assert error.value.location == "threads"
    assert f"threads must be a whole number ≥ 1, got {threads!r}" == error.value.message


@pytest.mark.parametrize("engine", LOCAL_ENGINES)
def test_an_empty_slice_has_empty_statistics_on_every_engine(shared_archive: Archive, engine: str):
    """No run before 2026: no row, and the columns every engine returns for runs."""
    stats = shared_archive.slice(until="2026-01-01").stats(engine)
    reference = shared_archive.all().stats(engine)
    for name in ("cases", "trials"):
        frame = getattr(stats, name)
        assert frame.empty
        assert list(frame.columns) == list(getattr(reference, name).columns)


@pytest.mark.parametrize("keys", ["category", "str"])
def test_keyed_frames_of_an_engine_read_back_whether_categorical_or_text(
    shared_archive: Archive, keys: str
):
    """``from_keyed_frames`` (what a registered engine returns through) takes key columns
    as text or as categoricals, in any row order: the frames come back as the plain loop
    computes them."""
    sl = shared_archive.all()
    stats = sl.stats("numpy")
    cases, trials = (
        getattr(stats, name)
        .astype({k: keys for k in ("run_id", "variant_id", "case_id") if k in getattr(stats, name)})
        .iloc[::-1]
        .reset_index(drop=True)
        for name in ("cases", "trials")
    )
    back = from_keyed_frames(cases, trials, stats.layout, "custom")
    assert_matches_oracle(back, sl.frame("attempts"))
    assert_same_stats(back, stats)


@pytest.mark.parametrize("keys", ["category", "str"])
@pytest.mark.parametrize("value", ["nonesuch", None])
@pytest.mark.parametrize("column", ["run_id", "variant_id"])
def test_keyed_frames_naming_a_run_or_variant_outside_the_slice_are_refused(
    shared_archive: Archive, column: str, value: str | None, keys: str
):
    """A registered engine's row of another run or variant (or of none) is no row of this
    slice: it is refused, not counted under whichever (run, variant) slot its codes
    happen to reach."""
    stats = shared_archive.all().stats("numpy")
    cases = stats.cases.copy()
    if value is not None:
        cases[column] = cases[column].cat.add_categories([value])
    cases.loc[len(cases) - 1, column] = value
    cases = cases.astype({column: keys})
    with pytest.raises(InputError, match=r"^engine returned a run or variant outside the slice"):
        from_keyed_frames(cases, stats.trials, stats.layout, "custom")


def test_keyed_frames_giving_a_run_a_variant_of_another_run_are_refused(
    shared_archive: Archive,
):
    stats = shared_archive.all().stats("numpy")
    cases = stats.cases.astype({"run_id": str, "variant_id": str, "case_id": str})
    support = cases.index[cases["variant_id"] == "baseline"][0]
    cases.loc[support, "variant_id"] = "v00"  # the synthetic run's variant
    with pytest.raises(InputError, match=r"^engine returned a variant outside its run"):
        from_keyed_frames(cases, stats.trials, stats.layout, "custom")


def _expected_layout(frame: pd.DataFrame, manifest_order: bool) -> tuple[tuple, tuple, tuple]:
    """Runs in first-seen order, each run's experiment and its variants, from pandas alone:
    variants in the categorical's (manifest) order, or first seen for text ids."""
    runs = list(pd.unique(frame["run_id"]))
    groups = {r: frame[frame["run_id"] == r] for r in runs}
    experiments = tuple(str(groups[r]["experiment_id"].iloc[0]) for r in runs)
    variants = tuple(
        tuple(
            [str(v) for v in frame["variant_id"].cat.categories if v in set(g["variant_id"])]
            if manifest_order
            else [str(v) for v in pd.unique(g["variant_id"])]
        )
        for g in groups.values()
    )
    return tuple(runs), experiments, variants


@pytest.mark.parametrize("variant_keys", ["category", "str"])
def test_an_attempts_table_without_a_layout_gives_its_own(
    support_run: ExperimentRun, variant_keys: str
):
    """``sufficient_stats`` of an attempts table and no layout reads the layout from the
    table: each run's experiment from its rows, and only the variants the run has (a
    categorical's unused categories are not variants of it), on every local engine; a
    run of one attempt is a run too."""
    attempts = support_run.attempts
    two = attempts[attempts["variant_id"].isin(["prompt-v2", "baseline"])]
    frame = pd.concat(
        [
            two.assign(run_id="r1"),
            attempts.iloc[[len(attempts) - 1]].assign(run_id="r2", experiment_id="other@3"),
        ],
        ignore_index=True,
    )
    frame = frame.astype({"variant_id": variant_keys, "experiment_id": str})
    expected = _expected_layout(frame, manifest_order=variant_keys == "category")
    assert expected[2][0] == (("baseline", "prompt-v2")) and len(expected[2][1]) == 1
    table = pa.Table.from_pandas(frame, preserve_index=False)
    reference = sufficient_stats(table, engine="numpy")
    for engine in LOCAL_ENGINES:
        stats = sufficient_stats(table, engine=engine)
        layout = stats.layout
        assert (layout.run_ids, layout.experiment_ids, layout.variant_ids) == expected
        assert_matches_oracle(stats, frame)
        assert_same_stats(stats, reference)
        by_run = stats.cases.groupby("run_id", observed=True)["experiment_id"].unique()
        assert {r: list(map(str, e)) for r, e in by_run.items()} == {
            "r1": ["support-agent-upgrade@1"],
            "r2": ["other@3"],
        }


def test_statistics_of_two_sets_of_runs_merged_equal_those_of_all(shared_archive: Archive):
    """``merge_stats`` of two disjoint sets of runs (other case ids in each, in either
    order) gives the plain loop's numbers over all attempts, in the layout's run order."""
    sl = shared_archive.all()
    layout = RunLayout.from_scans(sl.scans())
    attempts = sl.frame("attempts")
    table = sl.table("attempts")
    first = pc.is_in(table.column("run_id"), pa.array(list(layout.run_ids[:1])))
    halves = [
        sufficient_stats(table.filter(first), engine="numpy", layout=layout),
        sufficient_stats(table.filter(pc.invert(first)), engine="numpy", layout=layout),
    ]
    assert {str(c) for c in halves[0].cases["case_id"]}.isdisjoint(
        {str(c) for c in halves[1].cases["case_id"]}
    )
    whole = sufficient_stats(table, engine="numpy", layout=layout)
    for parts in (halves, halves[::-1]):
        merged = merge_stats(parts, layout, "numpy")
        assert_matches_oracle(merged, attempts)
        runs = merged.cases["run_id"].astype(str)
        assert list(pd.unique(runs)) == [r for r in layout.run_ids if r in set(runs)]
        assert list(merged.cases["case_id"].cat.categories) == sorted(
            attempts["case_id"].astype(str).unique()
        )
        assert_same_stats(merged, whole)


@pytest.mark.parametrize("rows", [37, 1])
def test_an_attempts_table_in_many_chunks_keeps_its_case_ids(support_run: ExperimentRun, rows: int):
    """A pandas categorical's codes are int8: the kernel offset each chunk's codes into
    the concatenated dictionaries in int8, so past 127 (ten chunks of 14 cases) they
    wrapped to null case ids, or to another case's id. Every engine: the plain loop's
    numbers under the right case ids, as from the same table in one chunk."""
    frame = support_run.attempts.iloc[::-1].assign(run_id="r").reset_index(drop=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    assert table.column("case_id").type.index_type == pa.int8()
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=rows))
    assert chunked.column("case_id").num_chunks >= 10
    layout = RunLayout(("r",), (support_run.experiment_id,), (support_run.manifest.variant_ids,))
    whole = sufficient_stats(table, engine="numpy", layout=layout)
    for engine in LOCAL_ENGINES:
        stats = sufficient_stats(chunked, engine=engine, layout=layout)
        assert stats.cases["case_id"].notna().all()
        assert_matches_oracle(stats, frame)
        assert_same_stats(stats, whole)


@pytest.mark.parametrize("variant_keys", ["category", "str"])
def test_an_attempts_table_in_chunks_gives_the_layout_of_one_chunk(
    support_run: ExperimentRun, variant_keys: str
):
    """However the table is chunked (parquet row groups, concatenated tables), a run's
    variants come in the categorical's (manifest) order, or first seen for text ids:
    rows of the last variant in the first chunk do not make it the run's first variant."""
    frame = support_run.attempts.iloc[::-1].assign(run_id="r")
    frame = frame.astype({"variant_id": variant_keys}).reset_index(drop=True)
    expected = _expected_layout(frame, manifest_order=variant_keys == "category")
    if variant_keys == "category":
        assert expected[2] == (support_run.manifest.variant_ids,)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=37))
    assert chunked.column("variant_id").num_chunks > 1
    whole = sufficient_stats(table, engine="numpy")
    for engine in LOCAL_ENGINES:
        stats = sufficient_stats(chunked, engine=engine)
        layout = stats.layout
        assert (layout.run_ids, layout.experiment_ids, layout.variant_ids) == expected
        assert_same_stats(stats, whole)
        assert_matches_oracle(stats, frame)


@pytest.mark.parametrize("rows", [None, 1])
def test_an_attempts_table_lists_its_runs_in_the_order_of_their_first_row(
    support_run: ExperimentRun, rows: int | None
):
    """Runs come in first-seen order as documented, whether the table is one chunk or
    many: a categorical ``run_id`` whose categories sort the other way gave them in
    category order in one chunk, in first-seen order in several."""
    attempts = support_run.attempts.iloc[:20]
    frame = pd.concat(
        [attempts.assign(run_id="zeta"), attempts.assign(run_id="alpha")], ignore_index=True
    )
    frame["run_id"] = pd.Categorical(frame["run_id"], categories=["alpha", "zeta"])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    if rows is not None:
        table = pa.Table.from_batches(table.to_batches(max_chunksize=rows))
    expected = tuple(pd.unique(frame["run_id"].astype(str)))
    assert expected == ("zeta", "alpha")
    for engine in LOCAL_ENGINES:
        stats = sufficient_stats(table, engine=engine)
        assert stats.layout.run_ids == expected
        assert tuple(pd.unique(stats.cases["run_id"].astype(str))) == expected
        assert_matches_oracle(stats, frame)


@pytest.mark.parametrize("column", ["run_id", "variant_id"])
def test_an_attempts_table_with_a_row_of_no_run_or_variant_is_refused(
    support_run: ExperimentRun, column: str
):
    """A null run or variant id ended in an IndexError or TypeError traceback; now an
    error naming the column, on every engine, with or without a layout."""
    frame = support_run.attempts.assign(run_id="r").astype({"variant_id": str})
    frame.loc[3, column] = None
    table = pa.Table.from_pandas(frame, preserve_index=False)
    layout = RunLayout(("r",), (support_run.experiment_id,), (support_run.manifest.variant_ids,))
    for engine in LOCAL_ENGINES:
        for given in (None, layout):
            with pytest.raises(InputError, match=rf"1 row\(s\) without a {column}"):
                sufficient_stats(table, engine=engine, layout=given)
