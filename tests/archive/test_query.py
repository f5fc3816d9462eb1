"""Slices: every filter against a pandas filter of the whole archive, pruning, and the
round trip back to single-experiment analysis."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.archive import Archive, ArchiveSlice, RunRecord, SliceFilter, run_content_id
from agenticlens_frames.errors import InputError
from agenticlens_frames.frames import ExperimentRun

from ..conftest import EXAMPLE
from .conftest import archived_before_checksums, fill


@pytest.fixture(scope="module")
def everything(shared_archive: Archive) -> pd.DataFrame:
    frame = shared_archive.all().frame("attempts")
    for column in ("run_id", "experiment_id", "variant_id", "case_id", "tags"):
        frame[column] = frame[column].astype(str)
    return frame


def _has_tag(tags: pd.Series, wanted: set[str]) -> pd.Series:
    return tags.map(lambda t: bool(wanted & set(t.split(","))))


def _keys(frame: pd.DataFrame) -> list[tuple]:
    cols = ["run_id", "variant_id", "trial", "case_id"]
    return sorted(map(tuple, frame[cols].astype(str).to_numpy().tolist()))


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (
            {"experiments": "support-agent-upgrade@1"},
            lambda f: f.experiment_id == "support-agent-upgrade@1",
        ),
        (
            {"experiments": "support-agent-upgrade"},
            lambda f: f.experiment_id.str.startswith("support"),
        ),
        ({"experiments": "synthetic-*"}, lambda f: f.experiment_id.str.startswith("synthetic")),
        ({"since": "2026-10-01"}, lambda f: f.run_at >= pd.Timestamp("2026-10-01", tz="UTC")),
        ({"until": "2026-10-20"}, lambda f: f.run_at < pd.Timestamp("2026-10-20", tz="UTC")),
        (
            {"since": "2026-10-20", "until": "2026-10-21"},
            lambda f: f.experiment_id == "support-agent-upgrade@1",
        ),
        ({"variants": ["baseline", "v01"]}, lambda f: f.variant_id.isin(["baseline", "v01"])),
        ({"retrieval": "dense"}, lambda f: f.factor_retrieval == "dense"),
        (
            {"factors": {"factor_model": ["gpt-large", "small"]}},
            lambda f: f.factor_model.isin(["gpt-large", "small"]),
        ),
        (
            {"retrieval": "bm25", "model": "gpt-large"},
            lambda f: (f.factor_retrieval == "bm25") & (f.factor_model == "gpt-large"),
        ),
        ({"memory": "none"}, lambda f: f.factor_memory == "none"),
        ({"tags": "refund"}, lambda f: _has_tag(f.tags, {"refund"})),
        ({"tags": ["refund", "shipping"]}, lambda f: _has_tag(f.tags, {"refund", "shipping"})),
        (
            {"tags": "refund", "retrieval": "dense", "since": "2026-10-01"},
            lambda f: _has_tag(f.tags, {"refund"}) & (f.factor_retrieval == "dense"),
        ),
    ],
)
def test_filters_keep_exactly_the_matching_rows(
    shared_archive: Archive, everything: pd.DataFrame, filters: dict, expected
):
    sl = shared_archive.slice(**filters)
    got = sl.frame("attempts")
    want = everything[expected(everything).fillna(False).to_numpy(bool)]
    assert len(want) > 0
    assert _keys(got) == _keys(want)


def test_where_narrows_like_one_combined_filter(shared_archive: Archive):
    narrowed = (
        shared_archive.slice(since="2026-10-01").where(tags="refund").where(retrieval="dense")
    )
    combined = shared_archive.slice(since="2026-10-01", tags="refund", retrieval="dense")
    assert _keys(narrowed.frame("attempts")) == _keys(combined.frame("attempts"))
    # Two tag groups mean both: a case must carry one tag of each group.
    both = shared_archive.slice(tags="refund").where(tags="billing").frame("attempts")
    tags = both["tags"].astype(str).map(lambda t: set(t.split(",")))
    assert len(both) and all({"refund", "billing"} <= t for t in tags)


def test_catalog_prunes_runs_and_the_reader_prunes_variants(shared_archive: Archive):
    sl = shared_archive.slice(retrieval="dense", since="2026-10-01")
    assert sl.n_runs == 2  # the synthetic run is dated before October
    assert all("support-agent-upgrade" in f for f in sl.files())
    for scan in sl.scans():
        assert scan.selected == ("retrieval-dense",)
    # Reading a run applies its variant selection.
    table = sl.scans()[0].read("attempts", ["variant_id"])
    assert set(table.column("variant_id").to_pylist()) == {"retrieval-dense"}
    assert len(sl) == sum(r.n_attempts for r in sl.records())
    # A level no run has beside one that exists: a warning, the runs of the other kept.
    with pytest.warns(UserWarning, match=r"no archived run has retrieval='nope'.*'dense'"):
        mixed = shared_archive.slice(retrieval=["dense", "nope"]).n_runs
    assert mixed == shared_archive.slice(retrieval="dense").n_runs > 0
    assert shared_archive.slice(tags="no-such-tag").n_runs == 0


def test_a_misspelt_level_beside_a_known_one_warns_with_the_closest(
    shared_archive: Archive,
) -> None:
    with pytest.warns(UserWarning, match=r"did you mean 'dense'\?"):
        assert shared_archive.slice(retrieval=["bm25", "dence"]).n_runs > 0


@pytest.mark.parametrize(
    ("levels", "message", "guess"),
    [
        ("dence", "no archived run has retrieval='dence'", "did you mean 'dense'? "),
        (
            ["dence", "nope"],
            "no archived run has retrieval='dence' or 'nope'",
            "did you mean 'dense' for 'dence'? ",
        ),
    ],
)
def test_a_factor_whose_every_level_is_unknown_is_refused_naming_the_closest(
    shared_archive: Archive, levels, message, guess
) -> None:
    """It only warned, and the slice was empty: every analysis of it an empty frame."""
    sl = shared_archive.slice(retrieval=levels)
    known = sorted(
        {str(v["factors"]["retrieval"]) for r in sl.archive.records() for v in r.variants}
    )
    with pytest.raises(InputError) as info:
        sl.records()
    assert info.value.location == "factors"
    assert info.value.message == message
    assert info.value.hint == guess + "the levels of 'retrieval' are " + ", ".join(map(repr, known))
    # as the where() that narrows a slice to it
    with pytest.raises(InputError, match=message):
        shared_archive.all().where(retrieval=levels).records()


def test_a_variant_id_no_archived_run_has_is_refused_naming_the_closest(
    shared_archive: Archive, everything: pd.DataFrame
) -> None:
    """A misspelt variant id left the slice empty without a word (`analyze()` returned an
    empty analysis), while a misspelt factor level warns: it can only be a mistake, so it
    is refused, naming the closest id and the ids the archive holds (as `--variant`)."""
    with pytest.raises(InputError) as info:
        shared_archive.slice(variants="promt-v2").analyze("numpy")
    assert info.value.location == "variants"
    assert info.value.message == "unknown variant id 'promt-v2'"
    assert info.value.hint.startswith("did you mean 'prompt-v2'? known: ")
    held = set(everything["variant_id"])
    assert len(held) == 8  # baseline and 4 candidates (both support runs), v00-v02 synthetic
    assert set(info.value.hint.split("known: ")[1].split(", ")) == held
    # where() narrows the same way; every unknown id is named, a known one beside is not.
    with pytest.raises(
        InputError, match=r"^variants: unknown variant id 'promt-v2' \(did you mean 'prompt-v2'\?"
    ):
        shared_archive.all().where(variants="promt-v2").records()
    assert repr(shared_archive.slice(variants="promt-v2")).startswith(
        "ArchiveSlice(unusable: unknown variant id 'promt-v2'; "
    )
    with pytest.raises(InputError) as several:
        shared_archive.slice(variants=["prompt-v2", "promt-v2", "nonesuch"]).records()
    assert several.value.message == "unknown variant id: 'promt-v2', 'nonesuch'"
    assert several.value.hint.startswith("did you mean 'prompt-v2' for 'promt-v2'? known: ")


def test_a_variant_id_of_other_experiments_only_is_an_empty_slice(
    tmp_path: Path, shared_archive: Archive
) -> None:
    """An id some runs have is no mistake in a slice of others (nor is one missing from
    some experiments); an archive without runs has no ids to check against."""
    assert shared_archive.slice(experiments="synthetic-*", variants="prompt-v2").n_runs == 0
    assert shared_archive.slice(variants="v01").n_runs == 1
    (tmp_path / "empty").mkdir()
    empty = Archive(tmp_path / "empty").slice(variants="promt-v2")
    assert empty.n_runs == 0 and empty.analyze("numpy").variant_summary.empty


def test_include_baseline_keeps_the_reference_variant(shared_archive: Archive):
    sl = shared_archive.slice(retrieval="dense", include_baseline=True)
    for scan in sl.scans():
        assert "baseline" in scan.selected and "retrieval-dense" in scan.selected
    comparisons = sl.analyze("numpy").comparisons
    assert set(comparisons["candidate_variant_id"]) == {"retrieval-dense"}
    assert len(comparisons) == 2  # one per support run
    assert shared_archive.slice(retrieval="dense").analyze("numpy").comparisons.empty


def test_stray_files_and_staging_folders_are_invisible(tmp_path: Path, runs):
    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(runs["support"], run_at="2026-10-20")
    source = archive.records()[0].file("attempts")
    # A staging folder and a run directory without its record (never published).
    for folder in (
        tmp_path / "arc" / "_staging" / "abc",
        tmp_path / "arc" / "experiment=x" / "run=y",
    ):
        folder.mkdir(parents=True)
        pq.write_table(pq.read_table(source), folder / "attempts.parquet")
    # The run directory without a record is left out of every number, and named: a
    # published run whose record was deleted would otherwise vanish unnoticed.
    with pytest.warns(UserWarning, match="run=y: a run folder without its record"):
        assert archive.all().n_runs == 1
    for engine in ("numpy", "duckdb"):
        with pytest.warns(UserWarning, match="without its record"):
            assert int(archive.all().stats(engine).cases["attempts"].sum()) == len(
                runs["support"].attempts
            )


def test_to_runs_restricts_the_suite_and_feeds_analyze(
    shared_archive: Archive, support_run: ExperimentRun
):
    sl = shared_archive.slice(
        experiments="support-agent-upgrade@1", tags="refund", retrieval="dense"
    )
    run = sl.to_run()
    refund = [c.id for c in support_run.suite.cases if "refund" in c.tags]
    assert list(run.suite.case_ids) == refund
    assert [c.index for c in run.suite.cases] == list(range(len(refund)))
    assert list(run.manifest.variant_ids) == ["baseline", "retrieval-dense"]  # + baseline
    result = analyze(run)
    full = analyze(support_run).cases
    full = full[full["case_id"].astype(str).isin(refund)]
    for vid in ("baseline", "retrieval-dense"):
        mine = result.cases[result.cases["variant_id"] == vid]
        theirs = full[full["variant_id"] == vid]
        np.testing.assert_array_equal(mine["pass_rate"].to_numpy(), theirs["pass_rate"].to_numpy())
        np.testing.assert_array_equal(mine["attempts"].to_numpy(), theirs["attempts"].to_numpy())
    by_run = sl.analyze_runs()
    assert list(by_run) == [run_content_id(support_run)]


def test_variant_info_lists_kept_variants_with_factors(shared_archive: Archive):
    info = shared_archive.slice(model="gpt-large").variant_info()
    assert set(info["variant_id"]) == {"model-large", "large-v2"}
    assert (info["factor_model"] == "gpt-large").all()
    assert list(info["variant_position"]) == [1, 4, 1, 4]


def test_bad_filters_are_input_errors(shared_archive: Archive):
    with pytest.raises(InputError, match="since"):
        shared_archive.slice(since="not a date")
    with pytest.raises(InputError, match="must be after"):
        shared_archive.slice(since="2026-10-02", until="2026-10-01")
    with pytest.raises(InputError, match="empty list"):
        shared_archive.slice(tags=[])
    with pytest.raises(InputError, match="unknown table"):
        shared_archive.all().table("nope")
    with pytest.raises(InputError, match="2 runs"):
        shared_archive.slice(experiments="support-*").to_run()
    assert "retrieval='dense'" in repr(shared_archive.slice(retrieval="dense"))


def test_the_empty_factor_level_is_selected_as_any_other(tmp_path: Path) -> None:
    """A manifest may give a factor the empty string as its level; ``retrieval=""`` was
    refused ("has an empty name", a rule for run id prefixes), so no slice kept it."""
    folder = tmp_path / "support"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8").replace('retrieval: "dense"', 'retrieval: ""')
    manifest.write_text(text, encoding="utf-8")
    run = load_experiment(manifest, folder / "suite.yaml", progress=False)
    archive = Archive(tmp_path / "arc")
    archive.add(run)
    # Independently of the archive: the variants the run gives the empty level.
    on_it = set(run.variants.loc[run.variants["factor_retrieval"] == "", "variant_id"])
    assert on_it == {"retrieval-dense"}
    sl = archive.slice(retrieval="")
    assert set(sl.frame("attempts")["variant_id"].astype(str)) == on_it
    for engine in ("numpy", "duckdb"):
        assert set(sl.analyze(engine).variant_summary["variant_id"].astype(str)) == on_it
    either = archive.slice(factors={"retrieval": ["", "bm25"]})
    assert len(set(either.frame("attempts")["variant_id"].astype(str))) == 5


@pytest.mark.parametrize("when", [1790000000, "05/11/2026", "Oct", "Oct 2026", True])
def test_a_date_that_is_not_iso_8601_is_refused_not_guessed(
    when: object, shared_archive: Archive, tmp_path: Path, support_run: ExperimentRun
) -> None:
    # pandas read 1790000000 as nanoseconds (1970-01-01 00:00:01.79), "05/11/2026" as
    # May 11 and "Oct" as year 1; a run_at read that way was stored for good.
    for name in ("since", "until"):
        with pytest.raises(InputError, match="ISO 8601") as info:
            shared_archive.slice(**{name: when})
        assert info.value.location == name
    fresh = Archive(tmp_path / "a")
    with pytest.raises(InputError, match="ISO 8601"):
        fresh.add(support_run, run_at=when)
    assert not any((tmp_path / "a").rglob("_run.json"))  # nothing archived


def test_duckdb_relation_is_the_slice(shared_archive: Archive):
    sl = shared_archive.slice(tags="refund", retrieval="bm25")
    rel = sl.relation()
    got = rel.aggregate("run_id, count(*) AS n, sum(passed::INT) AS p", "run_id").fetchall()
    frame = sl.frame("attempts")
    want = frame.groupby(frame["run_id"].astype(str))["passed"].agg(["size", "sum"])
    assert sorted(got) == sorted((r, int(n), int(p)) for r, (n, p) in want.iterrows())


def test_an_empty_slice_gives_empty_frames(shared_archive: Archive):
    sl = shared_archive.slice(retrieval="dense", prompt="v2")  # no variant is both
    assert (sl.n_runs, len(sl)) == (0, 0)
    for engine in ("numpy", "duckdb"):
        result = sl.analyze(engine)
        assert result.variant_summary.empty and result.case_matrix.empty


@pytest.mark.parametrize("table", ["attempts", "checks", "trials", "variants", "cases"])
def test_an_empty_slice_has_the_archived_columns_and_types(
    shared_archive: Archive, table: str
) -> None:
    # It answered "no column 'run_id' in archived attempts" when columns were named, and a
    # 0 × 0 frame without: code selecting columns broke on a filter that matched nothing.
    full = shared_archive.all().table(table)
    nothing = shared_archive.slice(retrieval="dense", prompt="v2")  # no variant is both
    empty = nothing.table(table)
    assert empty.num_rows == 0
    unfactored = [f for f in full.schema if not f.name.startswith("factor_")]
    assert list(empty.schema) == unfactored
    some = [f.name for f in unfactored][::3]
    picked = nothing.frame(table, columns=some)
    assert picked.empty and list(picked.columns) == some


@pytest.mark.parametrize(
    ("edit", "location", "message"),
    [
        (
            lambda s: s["manifest"]["variants"][0].update(factors="x"),
            "manifest.variants[0].factors",
            "expected object, got str",
        ),
        (
            lambda s: s["manifest"]["variants"][0]["factors"].update(model="other"),
            None,
            "does not describe run",
        ),
        (lambda s: s["suite"]["cases"].pop(), None, "does not describe run"),
        (
            lambda s: s["suite"]["cases"][0].update(id="renamed"),
            None,
            "case_id 'refund-damaged-item' in the attempts table is not one of the run",
        ),
    ],
)
def test_a_run_spec_edited_by_hand_is_refused_naming_it(
    archive: Archive, support_run: ExperimentRun, edit, location: str | None, message: str
):
    import json

    record = archive.record(run_content_id(support_run))
    _forget_spec_checksum(record.path / "_run.json")  # as in runs archived before it
    path = record.path / "_spec.json"
    spec = json.loads(path.read_text(encoding="utf-8"))
    edit(spec)
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(InputError) as error:
        archive.slice(runs=record.run_id).to_runs()
    assert error.value.file == str(path)
    assert error.value.location == location
    assert error.value.message.startswith(message)
    assert "restore it, or remove the run's folder" in str(error.value)


def _forget_spec_checksum(record_path: Path) -> None:
    """Make a run's record look like one archived before `_spec.json` was checksummed."""
    import json

    data = json.loads(record_path.read_text(encoding="utf-8"))
    del data["sha256"]["_spec.json"]
    del data["record_sha256"]  # nor a digest of the record (6 December 2026)
    record_path.write_text(json.dumps(data), encoding="utf-8")


def test_a_run_spec_edit_consistent_with_its_tables_is_refused_by_its_checksum(
    archive: Archive, support_run: ExperimentRun
):
    """An edit the content checks cannot see (a case's expected text) is caught by the
    SHA-256 the record keeps of `_spec.json`; without it (older runs) it is read."""
    import hashlib
    import json

    record = archive.record(run_content_id(support_run))
    path = record.path / "_spec.json"
    assert record.sha256["_spec.json"] == hashlib.sha256(path.read_bytes()).hexdigest()
    spec = json.loads(path.read_text(encoding="utf-8"))
    case = spec["suite"]["cases"][0]
    case["expected_contains"] = ["something else entirely"]
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(InputError) as error:
        archive.slice(runs=record.run_id).to_runs()
    assert error.value.file == str(path)
    assert "is not the one archived for run" in error.value.message
    _forget_spec_checksum(record.path / "_run.json")
    (run,) = archive.slice(runs=record.run_id).to_runs()
    assert run.suite.cases[0].expected_contains == ("something else entirely",)


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"experiments": "support-*"},
        {"variants": "baseline", "tags": "refund"},
        {"retrieval": "dense", "include_baseline": True},
        {"experiments": "no-such-experiment"},
    ],
)
def test_a_slices_repr_counts_what_it_holds(
    filters: dict, shared_archive: Archive, everything: pd.DataFrame
) -> None:
    sl = shared_archive.slice(**filters)
    held = sl.frame("attempts")  # an empty slice's frame has no column at all
    held = held.reindex(columns=["run_id", "variant_id"]).astype(str)
    runs = held["run_id"].nunique()
    variants = len(held.drop_duplicates())
    text = repr(sl)
    assert text.startswith(f"ArchiveSlice(runs={runs}, variants={variants}, attempts")
    touched = everything[everything["run_id"].isin(set(held["run_id"]))]
    if filters.keys() <= {"experiments"}:  # whole runs: the count is exact
        assert f"attempts={len(held)};" in text
        assert len(held) == len(touched)
    else:  # variants or cases filtered out: the catalog's bound, before row filters
        assert f"attempts<={len(touched)};" in text
        assert len(held) < len(touched)
    assert text.endswith(f"; {sl.filter.describe() or 'no filter'})")
    if not filters:
        assert text.endswith("; no filter)")


def test_a_slice_that_cannot_be_used_still_has_a_repr_saying_why(
    tmp_path: Path, shared_archive: Archive
) -> None:
    sl = Archive(tmp_path / "not-an-archive").slice(variants="baseline")
    with pytest.raises(InputError) as info:
        sl.records()
    assert repr(sl) == f"ArchiveSlice(unusable: {info.value.message}; variants='baseline')"
    typo = shared_archive.slice(retreival="dense")
    assert repr(typo) == (
        "ArchiveSlice(unusable: no archived run has a factor 'retreival'; retreival='dense')"
    )


def test_a_factor_level_spelt_none_or_nan_is_a_level_not_unset(tmp_path: Path):
    """Levels are text: "None" and "nan" are levels like any other. They were read as a
    variant without the factor, so the frames showed them as missing and factor_levels
    pooled them under "(unset)"."""
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    manifest = (folder / "manifest.yaml").read_text(encoding="utf-8")
    manifest = manifest.replace('retrieval: "bm25"}', 'retrieval: "None"}')
    manifest = manifest.replace('prompt: "v2"', 'prompt: "nan"')
    (folder / "manifest.yaml").write_text(manifest, encoding="utf-8")
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(run)
    declared = {v.id: dict(v.factors) for v in run.manifest.variants}
    result = archive.all().analyze(engine="numpy")
    summary = result.variant_summary
    for name in ("retrieval", "prompt"):
        got = dict(zip(summary["variant_id"].astype(str), summary[f"factor_{name}"], strict=True))
        assert got == {vid: factors[name] for vid, factors in declared.items()}
    levels = result.factor_levels.set_index(["factor", "value"])["n_variants"]
    for name in ("retrieval", "prompt"):
        counts = pd.Series([f[name] for f in declared.values()]).value_counts()
        assert levels[name].to_dict() == counts.to_dict()


@dataclass
class _Records:
    """A catalog of given records (the slice reads nothing else of its archive)."""

    held: list[RunRecord]

    def records(self) -> list[RunRecord]:
        return list(self.held)


def test_a_run_prefix_that_several_runs_share_is_refused(shared_archive: Archive):
    """``runs=`` takes ids or unique prefixes; a prefix two runs start with kept both, so a
    summary of "run 3" pooled two runs without a word."""
    first, second, third = shared_archive.records()
    records = [
        replace(first, run_id="3a00000000000001"),
        replace(second, run_id="3a00000000000002"),
        replace(third, run_id="4b00000000000003"),
    ]
    catalog = _Records(records)
    for runs in ("3", "3a", ["4b", "3a0"]):
        with pytest.raises(InputError, match=r"runs: run id prefix '3a?0?' matches 2 runs"):
            ArchiveSlice(catalog, SliceFilter.build(runs=runs)).records()
    for runs, kept in (("3a00000000000001", 1), ("4", 1), (["3a00000000000002", "4b"], 2)):
        assert ArchiveSlice(catalog, SliceFilter.build(runs=runs)).n_runs == kept


def test_a_missing_run_spec_is_named_with_the_way_out(archive: Archive, support_run: ExperimentRun):
    """Its error gave the file (twice) and no way out."""
    record = archive.record(run_content_id(support_run))
    (record.path / "_spec.json").unlink()
    with pytest.raises(InputError) as error:
        archive.slice(runs=record.run_id).verdicts()
    assert error.value.file == str(record.path / "_spec.json")
    assert error.value.message == "unreadable run specification (No such file or directory)"
    assert "restore it, or remove the run's folder" in str(error.value)


@pytest.mark.parametrize(("table", "other"), [("checks", "trials"), ("trials", "checks")])
def test_a_run_without_checksums_rebuilt_from_another_tables_file_is_refused(
    tmp_path: Path, runs: dict[str, ExperimentRun], table: str, other: str
):
    """Rebuilding an old run (no checksums) read whatever file sat in a table's place:
    trials from a checks file gave verdicts without a word, checks from a trials file a
    KeyError. A file without its table's columns is now refused by name; an old checks
    file, without the later ``metadata`` column, still reads."""
    archive = fill(tmp_path / "arc", runs)
    run_id = archive.slice(experiments="support-agent-upgrade@1").records()[0].run_id
    folder = archived_before_checksums(archive, run_id)
    checks = pq.read_table(folder / "checks.parquet")
    pq.write_table(checks.drop_columns(["metadata"]), folder / "checks.parquet")
    assert len(archive.slice(runs=run_id).to_run().checks) == checks.num_rows
    shutil.copyfile(folder / f"{other}.parquet", folder / f"{table}.parquet")
    with pytest.raises(InputError, match=f"lacks the column.* of an archived {table} table"):
        archive.slice(runs=run_id).verdicts()
    with pytest.raises(InputError, match="remove the run and add it again") as error:
        archive.slice(runs=run_id).to_runs()
    assert str(folder / f"{table}.parquet") in str(error.value)


def test_reading_a_table_of_a_run_without_checksums_refuses_another_tables_file(
    tmp_path: Path, runs: dict[str, ExperimentRun]
):
    """``slice.table()`` (and ``archive slice``) or ``slice.relation()`` of an old run
    whose attempts file was a checks file gave the checks rows as attempts, their other
    columns null."""
    archive = fill(tmp_path / "arc", runs)
    run_id = archive.slice(experiments="support-agent-upgrade@1").records()[0].run_id
    folder = archived_before_checksums(archive, run_id)
    shutil.copyfile(folder / "checks.parquet", folder / "attempts.parquet")
    with pytest.raises(InputError, match="of an archived attempts table") as error:
        archive.all().table("attempts", columns=["run_id", "passed"])
    assert str(folder / "attempts.parquet") in str(error.value)
    with pytest.raises(InputError, match="of an archived attempts table"):
        archive.all().relation()  # DuckDB's union by name would mix the two tables
    others = [r.run_id for r in archive.records() if r.run_id != run_id]
    expected = sum(r.n_attempts for r in archive.records() if r.run_id in others)
    assert archive.slice(runs=others).table("attempts").num_rows == expected


@pytest.mark.parametrize("experiments", ["support-agent-upgrade@1", "synthetic-*", "*"])
def test_nullable_integer_columns_keep_one_dtype_whatever_runs_a_slice_holds(
    shared_archive: Archive, runs: dict[str, ExperimentRun], experiments: str
):
    """``turns`` and ``target_attempts`` may be null: a loaded run holds them as Int32.
    A slice gave int32 when its runs had no null there and float64 (nulls as NaN) when
    one had, so the same column changed dtype with the filter."""
    frame = shared_archive.slice(experiments=experiments).frame("attempts")
    assert len(frame)
    for column in ("turns", "target_attempts"):
        assert str(frame[column].dtype) == "Int32", column
        got: dict[tuple[str, str, int, str], object] = {}
        for key, value in zip(_keys_unsorted(frame), frame[column].tolist(), strict=True):
            got[key] = None if value is pd.NA else value
        expected = {}
        for run in runs.values():
            if run_content_id(run) not in set(frame["run_id"].astype(str)):
                continue
            own = run.attempts
            values = [None if pd.isna(v) else int(v) for v in own[column].tolist()]
            run_id = run_content_id(run)
            for key, value in zip(_keys_unsorted(own.assign(run_id=run_id)), values, strict=True):
                expected[key] = value
        assert got == expected, column


def _keys_unsorted(frame: pd.DataFrame) -> list[tuple]:
    cols = ["run_id", "variant_id", "trial", "case_id"]
    return list(map(tuple, frame[cols].astype(str).to_numpy().tolist()))


def test_the_documented_external_reads_keep_factors_only_later_runs_have(
    shared_archive: Archive, runs: dict[str, ExperimentRun]
):
    """docs/archives.md's DuckDB and pyarrow recipes for reading the archive without this
    toolkit: the ``memory`` factor only the example's version 2 has is read, with a value
    on exactly that run's attempts (DuckDB's and pyarrow's default, the first file's
    schema, leaves the column out)."""
    import glob

    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    duckdb = pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    pattern = str(shared_archive.path / "experiment=*" / "run=*" / "attempts.parquet")
    v2 = runs["support_v2"]
    with_memory = {v.id for v in v2.manifest.variants if "memory" in v.factors}
    expected = int(v2.attempts["variant_id"].astype(str).isin(with_memory).sum())
    total = sum(len(run.attempts) for run in runs.values())
    assert expected > 0
    counted = duckdb.sql(
        f"SELECT count(*), count(factor_memory) FROM read_parquet('{pattern}', "
        "hive_partitioning = true, union_by_name = true)"
    ).fetchall()
    assert counted == [(total, expected)]
    files = sorted(glob.glob(pattern))
    table = ds.dataset(files, schema=pa.unify_schemas([pq.read_schema(f) for f in files]))
    memory = table.to_table(columns=["factor_memory"]).column(0)
    assert (len(memory), len(memory) - memory.null_count) == (total, expected)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        # a ValueError from dict(): a traceback
        ({"factors": "model"}, "factors must be a mapping of factor names to values"),
        # None matched nothing, without a word: an empty slice
        ({"model": None}, "factor 'model' must be a string or a list of strings, got None"),
        ({"factors": {"model": None}}, "factor 'model' must be a string or a list of strings"),
        # None inside a list was read as the text 'None'
        ({"variants": ["baseline", None]}, "variants holds None"),
        ({"tags": [None]}, "tags holds None"),
    ],
)
def test_slice_filters_of_the_wrong_kind_are_refused(
    shared_archive: Archive, filters: dict, message: str
):
    with pytest.raises(InputError) as error:
        shared_archive.slice(**filters).records()
    assert error.value.message.startswith(message)


def test_one_column_named_as_a_string_is_read_as_that_column(shared_archive: Archive):
    # "passed" was read as the columns 'p', 'a', 's', …: "no column 'p' in archived attempts".
    sl = shared_archive.slice(experiments="support-agent-upgrade@1")
    frame = sl.frame("attempts", "passed")
    assert list(frame.columns) == ["passed"]
    assert frame["passed"].tolist() == sl.frame("attempts", ["passed"])["passed"].tolist()
    assert sl.table("attempts", "passed").column_names == ["passed"]


def test_where_refuses_factors_that_are_not_a_mapping(shared_archive: Archive):
    with pytest.raises(InputError, match="factors must be a mapping of factor names"):
        shared_archive.all().where(factors=["model"])


@pytest.mark.parametrize("value", ["yes", "no", 1, None])
def test_include_baseline_takes_a_bool_only(shared_archive: Archive, value: object):
    """ "no" was read as true by its truthiness, whatever was meant."""
    with pytest.raises(InputError) as error:
        shared_archive.slice(variants="x", include_baseline=value)
    assert error.value.location == "include_baseline"
    assert f"must be True or False, got {value!r}" in error.value.message
    with pytest.raises(InputError, match="include_baseline"):
        shared_archive.all().where(include_baseline=value)
    assert shared_archive.slice(include_baseline=np.True_).filter.include_baseline is True


def test_slice_and_filter_displays_are_short_and_never_raise(
    shared_archive: Archive, tmp_path: Path
) -> None:
    """A slice and its filter say what they hold and which filters made them, on one short
    line: a filter of hundreds of run ids was printed whole (by the slice, and by the
    filter's dataclass display with every empty field), and an empty or missing archive
    says so instead of raising."""
    records = shared_archive.records()
    ids = [f"{i:016x}" for i in range(300)] + [r.run_id for r in records]
    wide = shared_archive.slice(runs=ids)
    shown = repr(wide)
    assert len(shown) < 400, shown
    assert shown.startswith(
        f"ArchiveSlice(runs={len(records)}, variants={sum(len(r.variants) for r in records)}, "
        f"attempts={sum(r.n_attempts for r in records)}; runs=['{ids[0]}', "
    ), shown
    assert f"({len(wide.filter.describe())} characters in all: describe() has them)" in shown
    narrow = shared_archive.slice(runs=[r.run_id for r in records[:1]])
    assert repr(narrow) == (
        f"ArchiveSlice(runs=1, variants={len(records[0].variants)}, "
        f"attempts={records[0].n_attempts}; runs={records[0].run_id!r})"
    )
    filters = SliceFilter.build(runs=ids, tags="refund")
    assert len(repr(filters)) < 300
    assert repr(SliceFilter()) == "SliceFilter(no filter)"
    assert repr(SliceFilter.build(tags="refund", factors={"model": ["a", "b"]})) == (
        "SliceFilter(tags='refund', model=['a', 'b'])"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert repr(Archive(empty).all()) == "ArchiveSlice(runs=0, variants=0, attempts=0; no filter)"
    assert repr(Archive(tmp_path / "none").slice(tags="x")) == (
        "ArchiveSlice(unusable: no archive here; tags='x')"
    )


def test_an_empty_run_or_variant_name_is_refused_not_read_as_every_run(
    shared_archive: Archive,
) -> None:
    """``runs=""`` is a prefix of every run id: read as given it kept the whole archive."""
    for key in ("runs", "variants", "experiments", "tags"):
        with pytest.raises(InputError, match=f"^{key} has an empty name"):
            shared_archive.slice(**{key: ""})
        with pytest.raises(InputError, match=f"^{key} has an empty name"):
            shared_archive.slice(**{key: ["support-agent-upgrade@1", ""]})


def test_since_equal_to_until_is_refused_not_an_empty_slice(shared_archive: Archive) -> None:
    """``run_at >= since and < until`` holds for no run when they are equal."""
    with pytest.raises(InputError, match="must be after since") as info:
        shared_archive.slice(since="2026-10-20", until="2026-10-20")
    assert info.value.location == "until"
    # A microsecond apart is a range, and holds the run dated at its start.
    sl = shared_archive.slice(since="2026-10-20T00:00:00", until="2026-10-20T00:00:00.000001")
    assert sl.n_runs == 1  # the support run is dated 2026-10-20T00:00:00Z


def test_where_keeps_include_baseline_from_either_side(
    shared_archive: Archive, everything: pd.DataFrame
) -> None:
    """``include_baseline`` asked for in ``where()`` (or in the slice narrowed) holds."""
    later = shared_archive.slice(retrieval="dense").where(include_baseline=True)
    first = shared_archive.slice(retrieval="dense", include_baseline=True).where(tags="refund")
    assert later.filter.include_baseline and first.filter.include_baseline
    dense_runs = set(everything.loc[everything["factor_retrieval"] == "dense", "run_id"])
    want = everything[
        everything["run_id"].isin(dense_runs)
        & ((everything["factor_retrieval"] == "dense") | (everything["variant_id"] == "baseline"))
    ]
    assert set(want["variant_id"]) == {"baseline", "retrieval-dense"}
    assert _keys(later.frame("attempts")) == _keys(want)


def test_a_factor_filter_on_an_archive_without_runs_is_an_empty_slice(tmp_path: Path) -> None:
    """No run has any factor yet: there is nothing to check the name against."""
    (tmp_path / "empty").mkdir()
    empty = Archive(tmp_path / "empty").slice(model="large", variants="x")
    assert empty.n_runs == 0 and empty.records() == []


def test_an_unknown_factor_name_lists_the_archives_factors(shared_archive: Archive) -> None:
    with pytest.raises(InputError) as info:
        shared_archive.slice(colour="red").records()
    assert info.value.location == "factors"
    # The factor names of the fixture runs, written out by hand (memory: support v2 only).
    assert info.value.hint == "the archive's factors are 'memory', 'model', 'prompt', 'retrieval'"


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ({"since": "2026-09-01"}, {"since": "2026-10-01"}),
        ({"since": "2026-10-01"}, {"since": "2026-09-01"}),
        ({"until": "2026-11-01"}, {"until": "2026-10-01"}),
        ({"until": "2026-10-01"}, {"until": "2026-11-01"}),
    ],
)
def test_two_time_bounds_keep_the_narrower(
    shared_archive: Archive, everything: pd.DataFrame, first: dict, then: dict
) -> None:
    """``where`` narrows: of two ``since`` the later holds, of two ``until`` the earlier."""
    got = shared_archive.slice(**first).where(**then).frame("attempts")
    since = [pd.Timestamp(d[k], tz="UTC") for d in (first, then) for k in d if k == "since"]
    until = [pd.Timestamp(d[k], tz="UTC") for d in (first, then) for k in d if k == "until"]
    keep = np.ones(len(everything), bool)
    for moment in since:
        keep &= (everything["run_at"] >= moment).to_numpy()
    for moment in until:
        keep &= (everything["run_at"] < moment).to_numpy()
    assert keep.any() and not keep.all()
    assert _keys(got) == _keys(everything[keep])


def test_the_same_factor_narrowed_twice_keeps_the_levels_of_both(
    shared_archive: Archive, everything: pd.DataFrame
) -> None:
    """``where(model=…)`` on a slice of some models keeps the models named by both."""
    sl = shared_archive.slice(model=["gpt-large", "small"]).where(model=["small", "medium"])
    assert sl.filter.factors == (("model", ("small",)),)
    want = everything[everything["factor_model"] == "small"]
    assert len(want) and _keys(sl.frame("attempts")) == _keys(want)


def test_a_shared_prefix_names_five_runs_and_then_an_ellipsis(shared_archive: Archive) -> None:
    first = shared_archive.records()[0]
    for n, tail in ((5, ""), (6, ", …")):
        ids = [f"3a{i:014d}" for i in range(n)]
        catalog = _Records([replace(first, run_id=run_id) for run_id in ids])
        with pytest.raises(InputError) as info:
            ArchiveSlice(catalog, SliceFilter.build(runs="3a")).records()
        shown = ", ".join(ids[:5])
        assert info.value.message == f"run id prefix '3a' matches {n} runs ({shown}{tail})"


def test_an_unknown_level_names_at_most_twenty_levels(shared_archive: Archive) -> None:
    """A factor of many levels is named by its first twenty, sorted, not all of them."""
    first = shared_archive.records()[0]
    levels = [f"l{i:02d}" for i in range(25)]
    variants = tuple(
        {**first.variants[0], "variant_id": level, "factors": {"k": level}} for level in levels
    )
    catalog = _Records([replace(first, variants=variants)])
    with pytest.raises(InputError) as refused:
        ArchiveSlice(catalog, SliceFilter.build(factors={"k": "zz"})).n_runs  # noqa: B018
    shown = ", ".join(repr(level) for level in levels[:20])
    assert (refused.value.message, refused.value.hint) == (
        "no archived run has k='zz'",
        f"the levels of 'k' are {shown}",
    )
