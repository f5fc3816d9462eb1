"""Rollups: each run's sufficient statistics written at ``Archive.add`` time, read instead
of its attempts when a slice allows it, with the scan of the attempts as the fallback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from agenticlens_frames.archive import Archive
from agenticlens_frames.archive._scan import ROLLUP_TABLES
from agenticlens_frames.errors import InputError
from agenticlens_frames.frames import ExperimentRun

from .conftest import archived_before_checksums, assert_matches_oracle, fill, naive_stats

ENGINES = ["numpy", "duckdb", "dask"]


def strip_rollups(archive: Archive) -> None:
    """Make every run look archived before rollups existed: no files, no checksums."""
    for record in archive.records():
        for name in ROLLUP_TABLES:
            (record.path / f"{name}.parquet").unlink()
        path = record.path / "_run.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        for key in ("sha256", "counts"):
            for name in ROLLUP_TABLES:
                data[key].pop(name, None)
        data.pop("record_sha256")  # nor a digest of the record (6 December 2026)
        path.write_text(json.dumps(data), encoding="utf-8")


def assert_same(a, b, exact: bool) -> None:
    for name in ("cases", "trials"):
        if exact:
            pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
        else:
            pd.testing.assert_frame_equal(
                getattr(a, name), getattr(b, name), check_exact=False, rtol=1e-9, atol=1e-12
            )


def test_add_writes_rollups_that_equal_a_plain_loop(shared_archive: Archive):
    """The rollup files themselves, read with pyarrow, against the oracle's loop over the
    attempts (not against the kernel that wrote them)."""
    attempts = shared_archive.all().frame("attempts")
    cases, trials = naive_stats(attempts)
    for record in shared_archive.records():
        assert set(ROLLUP_TABLES) <= set(record.sha256)
        variants = record.variant_ids
        # Each rollup file, its rows keyed as the oracle keys them: by case, by trial.
        for table, oracle, key in (
            ("case_stats", cases, lambda row: str(row.case_id)),
            ("trial_stats", trials, lambda row: int(row.trial)),
        ):
            got = pq.read_table(record.path / f"{table}.parquet").to_pandas()
            assert len(got) == sum(1 for k in oracle if k[0] == record.run_id)
            for row in got.itertuples(index=False):
                want = oracle[(record.run_id, variants[row.variant_position], key(row))]
                for name, value in want.items():
                    assert getattr(row, name) == pytest.approx(value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_rollups_and_the_scan_give_the_same_numbers(shared_archive: Archive, engine: str):
    """Whole archive and a variant-filtered slice: rollups read, the same frames as the
    scan (bit for bit from the numpy kernel, which wrote them; to 1e-9 from DuckDB's)."""
    for sl in (shared_archive.all(), shared_archive.slice(model=["gpt-small", "small"])):
        rolled = sl.stats(engine)
        scanned = sl.stats(engine, rollups=False)
        assert rolled.info["read"] == "rollups"
        assert scanned.info["read"] == "attempts"
        assert_same(rolled, scanned, exact=engine != "duckdb")
        assert_same(rolled, sl.stats("numpy", rollups=False), exact=True)
        assert_matches_oracle(rolled, sl.frame("attempts"))
        a = sl.analyze(engine)
        b = sl.analyze(engine, rollups=False)
        assert (a.info["read"], b.info["read"]) == ("rollups", "attempts")
        for name, frame in a.frames().items():
            pd.testing.assert_frame_equal(frame, b.frames()[name], rtol=1e-9, obj=name)


@pytest.mark.parametrize("variants", [["v02", "prompt-v2"], ["v00", "baseline"], ["v01"]])
def test_a_variant_filter_on_the_rollups_keeps_exactly_those_variants(
    shared_archive: Archive, variants: list[str]
):
    """Each run's kept variants in one table of (run, variant position) slots: a run's
    last variant kept next to the following run's first variant dropped (the slots meet
    there) keeps its rows, and the counts are a plain groupby of the whole archive's
    attempts."""
    stats = shared_archive.slice(variants=variants).stats("numpy")
    assert stats.info["read"] == "rollups"
    everything = shared_archive.all().frame("attempts")
    everything = everything.astype({"run_id": str, "variant_id": str, "case_id": str})
    kept = everything[everything["variant_id"].isin(variants)]
    want = kept.groupby(["run_id", "variant_id", "case_id"]).agg(
        attempts=("passed", "size"), passes=("passed", "sum")
    )
    got = stats.cases.astype({"run_id": str, "variant_id": str, "case_id": str})
    got = got.set_index(["run_id", "variant_id", "case_id"])[["attempts", "passes"]]
    pd.testing.assert_frame_equal(
        got.sort_index().astype("int64"), want.sort_index().astype("int64"), check_names=False
    )
    assert_matches_oracle(stats, kept)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tag_filter_reads_the_attempts(shared_archive: Archive, engine: str):
    """A trial's sums run over all its cases, so a tag filter cannot use the rollups."""
    sl = shared_archive.slice(tags="refund")
    stats = sl.stats(engine)
    assert stats.info["read"] == "attempts"
    assert_matches_oracle(stats, sl.frame("attempts"))


@pytest.mark.parametrize("engine", ENGINES)
def test_archives_without_rollups_read_the_same(
    tmp_path: Path, shared_archive: Archive, runs: dict[str, ExperimentRun], engine: str
):
    """Runs archived before rollups existed are scanned, alone or next to runs with
    rollups (numpy and dask read each run as it can; DuckDB scans every run then)."""
    old = fill(tmp_path / "old", runs)
    strip_rollups(old)
    assert old.all().stats(engine).info["read"] == "attempts"
    reference = shared_archive.all().stats("numpy", rollups=False)
    assert_same(old.all().stats(engine), reference, exact=engine != "duckdb")
    # Mixed: one run re-archived with rollups next to two without.
    mixed = fill(tmp_path / "mixed", runs)
    strip_rollups(mixed)
    first = mixed.records()[0]
    shutil.rmtree(first.path)
    again = next(r for r in runs.values() if r.experiment_id == first.experiment_id)
    assert mixed.add(again, run_at=first.run_at).added
    assert [r.run_id for r in mixed.records()] == [r.run_id for r in old.records()]
    stats = mixed.all().stats(engine)
    assert stats.info["read"] == "mixed"
    assert_same(stats, reference, exact=engine != "duckdb")


def test_a_damaged_rollup_is_refused_by_name(tmp_path: Path, runs: dict[str, ExperimentRun]):
    archive = fill(tmp_path / "arc", runs)
    record = archive.records()[0]
    path = record.path / "case_stats.parquet"
    path.write_bytes(path.read_bytes()[:-7] + b"garbage")
    with pytest.raises(InputError, match=r"case_stats\.parquet"):
        archive.all().stats("numpy")
    # Forcing the scan does not open the rollups.
    archive.all().stats("numpy", rollups=False)


def test_a_rollup_disagreeing_with_its_record_is_refused_by_name(
    tmp_path: Path, runs: dict[str, ExperimentRun]
):
    """Row counts in ``_run.json`` size the read buffers; a file that does not match
    them (a record edited by hand) is an error naming the file, not a wrong number."""
    archive = fill(tmp_path / "arc", runs)
    record = archive.records()[0]
    path = record.path / "_run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["counts"]["case_stats"] += 1
    del data["record_sha256"]  # as archived before records had a digest (it would refuse)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=r"case_stats\.parquet") as error:
        archive.all().stats("duckdb")
    assert "rows" in str(error.value)
    assert archive.all().stats("duckdb", rollups=False).info["read"] == "attempts"


def test_add_rollups_upgrades_runs_archived_before_them(
    tmp_path: Path, shared_archive: Archive, runs: dict[str, ExperimentRun]
):
    """Rollups written later for old runs hold the numbers ``add`` would have stored
    (bit for bit), are then read, and a second call writes nothing."""
    old = fill(tmp_path / "old", runs)
    strip_rollups(old)
    before = {r.run_id: r for r in old.records()}
    assert old.all().stats("numpy").info["read"] == "attempts"
    done = old.add_rollups()
    assert sorted(r.run_id for r in done) == sorted(before)
    for record in old.records():
        assert set(ROLLUP_TABLES) <= set(record.sha256)
        assert {k: v for k, v in record.sha256.items() if k not in ROLLUP_TABLES} == (
            before[record.run_id].sha256
        )
    for engine in ENGINES:
        stats = old.all().stats(engine)
        assert stats.info["read"] == "rollups"
        assert_same(stats, shared_archive.all().stats("numpy"), exact=True)
    assert old.add_rollups() == []
    assert not [p for p in old.path.rglob(".*") if p.is_file() and p.name != ".keep"]


def test_read_file_verifies_the_bytes_it_decodes(tmp_path: Path, runs: dict[str, ExperimentRun]):
    """``RunScan.read_file`` hashes and decodes one read of the file: the table is the
    file's (pyarrow's own read), and a file that is not the archived one (another run's
    valid rollup copied over it, or none at all) is refused naming the file."""
    archive = fill(tmp_path / "arc", runs)
    first, second = archive.all().scans()[:2]
    for name in ROLLUP_TABLES:
        path = Path(first.folder) / f"{name}.parquet"
        assert first.read_file(name).equals(pq.read_table(path))
        # A second read, now that the file is verified, decodes the same table.
        assert first.read_file(name, ["variant_position"]).equals(
            pq.read_table(path, columns=["variant_position"])
        )
    copied = Path(second.folder) / "case_stats.parquet"
    shutil.copyfile(Path(first.folder) / "case_stats.parquet", copied)
    with pytest.raises(InputError, match=r"not the one archived") as error:
        second.read_file("case_stats")
    assert "case_stats.parquet" in str(error.value)
    copied.unlink()
    with pytest.raises(InputError, match=r"missing or unreadable") as error:
        second.read_file("case_stats")
    assert "case_stats.parquet" in str(error.value)
    assert "remove the run and add it again" in str(error.value)  # the way out
    with pytest.raises(InputError, match=r"missing or unreadable") as error:
        second.file("case_stats")
    assert "remove the run and add it again" in str(error.value)


def test_add_rollups_names_an_attempts_file_that_is_another_table(
    tmp_path: Path, runs: dict[str, ExperimentRun]
):
    """A run archived before checksums whose attempts file is another table's: writing
    its rollups ended in a KeyError with a traceback; now the file is named, and the run
    is left as it was."""
    archive = fill(tmp_path / "arc", runs)
    run_id = archive.slice(experiments="support-agent-upgrade@1").records()[0].run_id
    folder = archived_before_checksums(archive, run_id)
    shutil.copyfile(folder / "checks.parquet", folder / "attempts.parquet")
    record = (folder / "_run.json").read_bytes()
    with pytest.raises(InputError, match="lacks the column") as error:
        archive.add_rollups()
    assert str(folder / "attempts.parquet") in str(error.value)
    assert "remove the run and add it again" in str(error.value)
    assert (folder / "_run.json").read_bytes() == record
    assert not [p.name for p in folder.iterdir() if "stats" in p.name]


@pytest.mark.parametrize("table", ["attempts", "trials"])
def test_add_rollups_refuses_an_attempts_or_trials_file_that_is_not_the_archived_one(
    tmp_path: Path, runs: dict[str, ExperimentRun], table: str
):
    """A run archived with checksums but before rollups, whose attempts (or trials) file
    is another run's with the same variants and cases: its rollups would hold the other
    run's numbers; the file is refused by name, and the run left as it was."""
    archive = fill(tmp_path / "arc", runs)
    strip_rollups(archive)
    by_experiment = {r.experiment_id: r for r in archive.records()}
    target = by_experiment["support-agent-upgrade@1"]
    source = by_experiment["support-agent-upgrade@2"]
    assert target.variant_ids == source.variant_ids
    path = target.path / f"{table}.parquet"
    shutil.copyfile(source.path / f"{table}.parquet", path)
    record = (target.path / "_run.json").read_bytes()
    with pytest.raises(InputError, match="not the one archived") as error:
        archive.add_rollups()
    assert str(path) in str(error.value)
    assert (target.path / "_run.json").read_bytes() == record
    assert not [p.name for p in target.path.iterdir() if "stats" in p.name]
