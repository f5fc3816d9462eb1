"""Archive writes: layout, catalog, idempotence, crash safety, concurrency, schema evolution."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.archive import Archive, RunRecord, run_content_id
from agenticlens_frames.errors import InputError
from agenticlens_frames.frames import ExperimentRun

from ..conftest import EXAMPLE
from . import _workers
from .conftest import RUN_AT, stopping_block


def test_add_publishes_one_hive_partition_per_run(tmp_path: Path, support_run: ExperimentRun):
    archive = Archive(tmp_path / "arc")
    result = archive.add(support_run, run_at="2026-10-20T10:00:00+02:00")
    assert result.added
    folder = tmp_path / "arc" / "experiment=support-agent-upgrade@1" / f"run={result.run_id}"
    assert result.record.path == folder
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        ["_run.json", "_spec.json"]
        + [f"{t}.parquet" for t in ("attempts", "checks", "trials", "variants", "cases")]
        + ["case_stats.parquet", "trial_stats.parquet"]  # the rollups
    )
    record = archive.records()[0]
    assert record.run_at.isoformat() == "2026-10-20T08:00:00+00:00"
    assert record.counts["attempts"] == len(support_run.attempts) == 350
    assert record.variant_ids == support_run.manifest.variant_ids
    assert record.tags == tuple(sorted({t for c in support_run.suite.cases for t in c.tags}))
    assert not (tmp_path / "arc" / "_staging").exists() or not any(
        (tmp_path / "arc" / "_staging").iterdir()
    )


def test_attempts_carry_query_columns_with_their_own_dictionaries(
    tmp_path: Path, support_run: ExperimentRun
):
    record = Archive(tmp_path / "arc").add(support_run, run_at="2026-10-20").record
    table = pq.read_table(record.file("attempts"))
    for column in ("run_id", "run_at", "tags", "factor_model", "factor_retrieval"):
        assert column in table.column_names
    frame = table.to_pandas()
    # Joined values equal the source tables, row by row.
    tags = support_run.cases.set_index("case_id")["tags"]
    assert (
        frame["tags"].astype(str).to_numpy() == tags.loc[frame["case_id"].astype(str)].to_numpy()
    ).all()
    factor = {v.id: v.factors["retrieval"] for v in support_run.manifest.variants}
    assert (
        frame["factor_retrieval"].astype(str) == frame["variant_id"].astype(str).map(factor)
    ).all()
    # Only this run's case ids in the file's dictionary (no archive-wide dictionary).
    assert len(table.column("case_id").chunk(0).dictionary) == len(support_run.cases)


def test_same_run_twice_is_a_no_op_or_refused(tmp_path: Path, support_run: ExperimentRun):
    archive = Archive(tmp_path / "arc")
    first = archive.add(support_run, run_at="2026-10-20")
    again = archive.add(support_run, run_at="2026-12-01")
    assert (first.added, again.added) == (True, False)
    assert again.record.run_at == first.record.run_at  # the stored record wins
    with pytest.raises(InputError, match="already in the archive"):
        archive.add(support_run, exist_ok=False)
    assert len(archive.records()) == 1


def test_run_id_ignores_location_and_follows_content(tmp_path: Path, support_run: ExperimentRun):
    shutil.copytree(EXAMPLE, tmp_path / "copy")
    moved = load_experiment(tmp_path / "copy" / "manifest.yaml", tmp_path / "copy" / "suite.yaml")
    assert run_content_id(moved) == run_content_id(support_run)
    changed = ExperimentRun(
        support_run.manifest,
        support_run.suite,
        support_run.attempts.assign(latency_ms=support_run.attempts["latency_ms"] + 1.0),
        support_run.checks,
        support_run.trials,
        support_run.variants,
        support_run.cases,
        support_run.evaluator_versions,
    )
    assert run_content_id(changed) != run_content_id(support_run)


def _spawn() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("spawn")


@pytest.mark.parametrize("when", ["mid_write", "before_publish"])
def test_a_crashed_writer_leaves_nothing_visible(
    tmp_path: Path, support_run: ExperimentRun, synthetic_run: ExperimentRun, when: str
):
    archive = Archive(tmp_path / "arc")
    archive.add(synthetic_run, run_at=RUN_AT["synthetic"])
    before = archive.runs()
    saved = support_run.to_parquet(tmp_path / "saved")
    child = _spawn().Process(
        target=_workers.crash_while_adding, args=(str(archive.path), str(saved), when)
    )
    child.start()
    child.join(600)
    assert child.exitcode == 17
    # The half-written run exists only as a staging folder ...
    staging = list((archive.path / "_staging").iterdir())
    assert len(staging) == 1 and any(staging[0].iterdir())
    # ... which no reader sees: the catalog, the tables and every engine are unchanged.
    pd.testing.assert_frame_equal(archive.runs(), before)
    assert len(archive.all().table("attempts")) == len(synthetic_run.attempts)
    for engine in ("numpy", "duckdb"):
        stats = archive.all().stats(engine)
        assert int(stats.cases["attempts"].sum()) == len(synthetic_run.attempts)
    assert archive.clean_staging(older_than=0) == staging
    # The run can be added afterwards as if nothing happened.
    assert archive.add(support_run).added


def test_concurrent_writers_lose_and_duplicate_nothing(
    tmp_path: Path, runs: dict[str, ExperimentRun]
):
    saved = {name: str(run.to_parquet(tmp_path / name)) for name, run in runs.items()}
    archive = Archive(tmp_path / "arc")
    ctx = _spawn()
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    # Both writers add "synthetic" at the same moment; each adds one run of its own.
    jobs = [
        [saved["synthetic"], saved["support"]],
        [saved["synthetic"], saved["support_v2"]],
    ]
    children = [
        ctx.Process(target=_workers.add_runs, args=(str(archive.path), job, barrier, results))
        for job in jobs
    ]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=600) for _ in range(4)]
    for child in children:
        child.join(600)
        assert child.exitcode == 0
    records = archive.records()
    assert sorted(r.run_id for r in records) == sorted(run_content_id(r) for r in runs.values())
    added = [o for o in outcomes if o[0] == "synthetic"]
    assert sorted(a for _, _, a in added) == [False, True]  # exactly one published it
    total = sum(len(r.attempts) for r in runs.values())
    assert int(archive.all().stats("numpy").cases["attempts"].sum()) == total
    assert not any((archive.path / "_staging").iterdir())


def test_new_factor_reads_with_older_runs_through_one_schema(archive: Archive):
    attempts = archive.all().frame("attempts")
    assert "factor_memory" in attempts.columns
    old = attempts["experiment_id"].astype(str) != "support-agent-upgrade@2"
    assert attempts.loc[old, "factor_memory"].isna().all()
    new = attempts.loc[~old]
    assert set(new["factor_memory"].astype(str)) == {"none", "summary"}
    assert (
        new.loc[new["variant_id"].astype(str) == "retrieval-dense", "factor_memory"] == "summary"
    ).all()
    # The same through a factor filter: only the new run has the factor.
    assert archive.slice(memory="summary").n_runs == 1
    info = archive.all().variant_info()
    assert (
        info.loc[info["experiment_id"] == "support-agent-upgrade@1", "factor_memory"].isna().all()
    )


def test_remove_hides_a_run_atomically(archive: Archive, support_run: ExperimentRun):
    run_id = run_content_id(support_run)
    removed = archive.remove(run_id[:6])
    assert removed.run_id == run_id
    assert run_id not in set(archive.runs()["run_id"])
    assert not removed.path.exists()
    with pytest.raises(InputError, match="no run"):
        archive.remove(run_id)


def test_a_damaged_record_names_the_way_out_and_remove_takes_it(
    archive: Archive, support_run: ExperimentRun
):
    # One torn _run.json stopped every read of the archive, with no fix named, and
    # remove() of that run (or of any other) failed on the same error.
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    run_id = run_content_id(support_run)
    others = set(archive.runs()["run_id"]) - {run_id}
    record = archive.record(run_id).path / "_run.json"
    record.write_bytes(record.read_bytes()[:200])
    with pytest.raises(InputError, match="unreadable run record") as info:
        archive.runs()
    # The command to paste, with this archive's path (it said "ARCHIVE").
    assert f"`agenticlens-frames archive remove {archive.path} {run_id}`" in str(info.value)
    done = CliRunner().invoke(app, ["archive", "remove", str(archive.path), run_id[:8]])
    assert done.exit_code == 0, done.output
    assert "Removed run" in done.output and "unreadable" in done.output
    assert set(archive.runs()["run_id"]) == others  # the rest is intact and readable


def test_a_run_folder_without_its_record_is_named_not_dropped_silently(
    archive: Archive, support_run: ExperimentRun
):
    run_id = run_content_id(support_run)
    n = len(archive.runs())
    folder = archive.record(run_id).path
    (folder / "_run.json").unlink()
    with pytest.warns(UserWarning, match="without its record") as caught:
        runs = archive.runs()
    assert len(runs) == n - 1 and run_id in str(caught[0].message)
    assert f"archive remove {archive.path} {run_id}" in str(caught[0].message)
    assert archive.remove(run_id) is None and not folder.exists()
    with pytest.raises(InputError, match="empty name"):
        archive.slice(runs="")  # an empty prefix matched every run


def test_bad_places_and_inputs_are_input_errors(tmp_path: Path, support_run: ExperimentRun):
    with pytest.raises(InputError, match="no archive here"):
        Archive(tmp_path / "missing").runs()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="not an archive"):
        Archive(tmp_path / "busy").add(support_run)
    with pytest.raises(InputError, match="needs an ExperimentRun"):
        Archive(tmp_path / "arc").add("manifest.yaml")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="run_at"):
        Archive(tmp_path / "arc").add(support_run, run_at="last tuesday")


def test_a_bad_run_at_is_refused_when_the_run_is_archived_already(
    tmp_path: Path, support_run: ExperimentRun
):
    """It was read only for a new run, so re-adding one accepted any text silently."""
    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(support_run, run_at="2026-10-20")
    with pytest.raises(InputError, match="run_at: cannot read 'last tuesday'"):
        archive.add(support_run, run_at="last tuesday")
    assert [r.run_at.isoformat() for r in archive.records()] == ["2026-10-20T00:00:00+00:00"]


def test_a_run_folder_copied_or_moved_by_hand_is_refused_not_read_twice(archive: Archive):
    """A copy would be read as a second run: every row counted twice (found by a mutation
    run; ``summarize`` crashed on the duplicate id, ``slice`` wrote the rows twice)."""
    record = archive.records()[0]
    copy = record.path.with_name(record.path.name + " (copy)")
    shutil.copytree(record.path, copy)
    with pytest.raises(InputError) as error:
        archive.records()
    assert error.value.file == str(copy / "_run.json")
    assert f"this record is for run {record.run_id} of {record.experiment_id}" in str(error.value)
    assert "copied, moved or renamed by hand" in str(error.value)
    shutil.rmtree(copy)
    # The same folder under another experiment's folder.
    elsewhere = archive.path / "experiment=other@1" / record.path.name
    shutil.copytree(record.path, elsewhere)
    with pytest.raises(InputError, match="copied, moved or renamed") as error:
        archive.all().stats("numpy")
    assert error.value.file == str(elsewhere / "_run.json")
    shutil.rmtree(elsewhere.parent)
    assert len(archive.records()) == 3


@pytest.mark.parametrize(
    ("edit", "location", "message"),
    [
        (lambda d: d.pop("run_id"), None, "missing required key 'run_id'"),
        (lambda d: d.update(trial_count="x"), "trial_count", "expected an integer >= 1, got 'x'"),
        (lambda d: d.update(pass_k=5), "pass_k", "expected a list, got 5"),
        (lambda d: d.update(counts=[1]), "counts", "expected a mapping, got a list"),
        (lambda d: d["counts"].pop("attempts"), "counts", "missing the 'attempts' count"),
        (lambda d: d["counts"].pop("cases"), "counts", "missing the 'cases' count"),
        (lambda d: d.update(variants=None), "variants", "expected a list, got null"),
        (
            lambda d: d["variants"][1]["factors"].update(model=3),
            "variants[1].factors.model",
            "expected a string, got 3",
        ),
        (
            lambda d: d["variants"][0].update(is_baseline="yes"),
            "variants[0].is_baseline",
            "expected true or false, got 'yes'",
        ),
        (lambda d: d.update(run_at="yesterday"), "run_at", "cannot read 'yesterday'"),
        (lambda d: d["sha256"].update(attempts=5), "sha256.attempts", "expected a string"),
        (lambda d: d.update(format_version=2), None, "format_version 2 is not one this"),
        # Values of the right type that cannot belong together: an edited position read
        # an array out of bounds (IndexError), an edited baseline compared every
        # candidate with another variant than the run's.
        (
            lambda d: d["variants"][2].update(position=7),
            "variants[2].position",
            "expected 2 (the variant's place in the list), got 7",
        ),
        (
            lambda d: d["variants"][2].update(variant_id=d["variants"][1]["variant_id"]),
            "variants[2].variant_id",
            "a second variant with the id",
        ),
        (
            lambda d: d.update(baseline_variant_id=d["variants"][2]["variant_id"]),
            "variants",
            "the baseline variant",
        ),
        (lambda d: d.update(baseline_variant_id="nobody"), "baseline_variant_id", "no variant"),
        (
            lambda d: [v.update(is_baseline=False) for v in d["variants"]],
            "variants",
            "the baseline variant is 'v00' but is_baseline marks none",
        ),
        (
            lambda d: d.update(factor_names=["model"]),
            "factor_names",
            "expected the variants' factor names",
        ),
        # As many names as the variants have, one of them another: or every name, one twice.
        (
            lambda d: d.update(factor_names=["model", "prompt", "memory"]),
            "factor_names",
            "expected the variants' factor names ['model', 'prompt', 'retrieval'], got",
        ),
        (
            lambda d: d.update(factor_names=["model", "prompt", "retrieval", "model"]),
            "factor_names",
            "expected the variants' factor names ['model', 'prompt', 'retrieval'], got",
        ),
    ],
)
def test_a_damaged_run_record_is_refused_naming_the_field(
    archive: Archive, edit, location: str | None, message: str
):
    record = [r for r in archive.records() if r.factor_names == ("model", "prompt", "retrieval")]
    path = record[0].path / "_run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["variants"][1]["factors"]["model"]  # the edits' places exist
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as error:
        archive.all().stats("numpy")
    assert error.value.file == str(path)
    assert error.value.location == location
    assert error.value.message.startswith(message)
    # The way out of a damaged record; "write it as a JSON string: "5"" was no way out
    # for a checksum.
    if not message.startswith("format_version"):  # that one: read it with a newer version
        assert error.value.hint.startswith("the run record was edited or damaged: restore it")


def test_a_record_edited_consistently_is_refused_by_its_digest(archive: Archive):
    """An edit that keeps every field valid and consistent (a count, a run time, a
    variant's name) was trusted: the record holds the SHA-256 of its own content, and a
    record that does not match is refused naming the file and the way out. A record
    without one (archived before 6 December 2026) still reads, and a record written back
    unchanged (other key order, no indentation) still matches."""
    import hashlib

    record = archive.records()[0]
    path = record.path / "_run.json"
    original = path.read_bytes()
    data = json.loads(original)
    content = {k: v for k, v in data.items() if k != "record_sha256"}
    # The digest, computed independently: SHA-256 of the compact JSON with sorted keys.
    text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    assert data["record_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    path.write_text(json.dumps(dict(reversed(data.items()))), encoding="utf-8")
    assert archive.records()[0] == record
    for key, value in [("run_at", "2020" + data["run_at"][4:]), ("counts", {**data["counts"]})]:
        edited = {**data, key: value}
        if key == "counts":
            edited["counts"]["attempts"] += 1
        path.write_text(json.dumps(edited), encoding="utf-8")
        with pytest.raises(InputError) as error:
            archive.all().stats("numpy")
        assert error.value.file == str(path)
        assert "does not match its record_sha256" in error.value.message
        command = f"agenticlens-frames archive remove {archive.path} {record.run_id}"
        assert f"`{command}`" in error.value.hint
        # Without the digest (as archived earlier) the edit is read: the limitation stated.
        del edited["record_sha256"]
        path.write_text(json.dumps(edited), encoding="utf-8")
        assert archive.record(record.run_id).to_json()[key] == edited[key]
    path.write_bytes(original)
    assert archive.records()[0] == record


def test_adding_over_a_run_folder_without_its_record_is_refused(
    archive: Archive, support_run: ExperimentRun
):
    run_id = run_content_id(support_run)
    [record] = [r for r in archive.records() if r.run_id == run_id]
    (record.path / "_run.json").unlink()
    before = sorted(p.name for p in record.path.iterdir())
    with pytest.raises(InputError, match="without its record") as error:
        archive.add(support_run)
    assert error.value.file == str(record.path)
    assert sorted(p.name for p in record.path.iterdir()) == before
    assert list((archive.path / "_staging").iterdir()) == []


def test_catalog_record_is_plain_json(archive: Archive):
    record = archive.records()[0]
    data = json.loads((record.path / "_run.json").read_text())
    assert data["run_id"] == record.run_id
    assert data["format"] == "agenticlens-frames-archive"


def test_a_slice_rebuilds_runs_that_analyze_identically(
    shared_archive: Archive, runs: dict[str, ExperimentRun]
):
    rebuilt = {r.experiment_id: r for r in shared_archive.all().to_runs()}
    for run in runs.values():
        again = rebuilt[run.experiment_id]
        for name in ("attempts", "checks", "trials", "variants", "cases"):
            pd.testing.assert_frame_equal(again.tables[name], run.tables[name], check_exact=True)
        expected, got = analyze(run), analyze(again)
        for name, frame in expected.frames().items():
            pd.testing.assert_frame_equal(got.frames()[name], frame, check_exact=True)
        assert got.pareto_frontier == expected.pareto_frontier
        assert got.warnings == expected.warnings


def test_the_judge_spend_of_failed_trials_is_kept_with_the_run(
    tmp_path: Path, support_run: ExperimentRun
):
    """A run's ``judge_spend_failed_trials`` (its failed trials' judged attempts: billed,
    not in the tables) travels in its parquet tables, but an archive dropped it: the run
    read back from the archive, and its analysis' judge cost lines, said nothing of it.
    It is kept in the run's specification; a slice of some variants keeps their rows."""
    from agenticlens_frames import read_parquet
    from agenticlens_frames.analysis import judge_cost_lines

    rows = [
        {
            "variant_id": variant,
            "attempts": n,
            "judge_scores": n,
            "unavailable_scores": 1,
            "priced_scores": n - 1,
            "spent_cost_usd": 0.0003 * (n - 1),
            "input_tokens": 30 * n,
            "output_tokens": 2 * n,
        }
        for variant, n in (("prompt-v2", 3), ("large-v2", 5))
    ]
    run = dataclasses.replace(support_run, judge_spend_failed_trials=rows)
    tables = run.to_parquet(tmp_path / "run" / "tables")
    archive = Archive(tmp_path / "archive")
    archive.add(read_parquet(tables), run_at=RUN_AT["support"])
    back = archive.all().to_run()
    assert back.judge_spend_failed_trials == rows
    lines = judge_cost_lines(analyze(back, frontier_n_resamples=0))
    assert lines == [
        "Judges · prompt-v2: in failed trials: 3 more score(s), 1 unavailable, $0.000600, "
        "90 / 6 tokens, not analysed",
        "Judges · large-v2: in failed trials: 5 more score(s), 1 unavailable, $0.001200, "
        "150 / 10 tokens, not analysed",
    ]
    only = archive.slice(variants="prompt-v2").to_run()
    assert only.judge_spend_failed_trials == rows[:1]
    # A run without it is stored as before: its specification has no such key.
    plain = Archive(tmp_path / "plain")
    record = plain.add(support_run, run_at=RUN_AT["support"]).record
    assert "judge_spend_failed_trials" not in json.loads((record.path / "_spec.json").read_text())
    assert plain.all().to_run().judge_spend_failed_trials is None


def test_a_runs_early_stopping_block_is_kept_with_the_run(
    tmp_path: Path, support_run: ExperimentRun
):
    """A live run's early-stopping block travels in its parquet tables, but an archive
    dropped it: the run rebuilt from the archive had none, so its fixed-sample verdicts
    read as inferential, and at the default correction and alpha rather than the rule's.
    It is kept in the run's specification and given back; a slice of some variants keeps
    the decisions about those; a slice of some cases is refused, naming the run."""
    from agenticlens_frames import read_parquet

    block = stopping_block()
    run = dataclasses.replace(support_run, stopping=block)
    archive = Archive(tmp_path / "archive")
    record = archive.add(read_parquet(run.to_parquet(tmp_path / "tables")), run_at="2026-11-04")
    back = archive.all().to_run()
    assert back.stopping == block
    analysis = analyze(back, frontier_n_resamples=0)
    assert analysis.extras["early_stopping"] == block
    # The final analysis declares the rule's correction: another one is refused.
    with pytest.raises(InputError, match="early-stopping rule declared"):
        analyze(back, comparisons={"correction": "none"})
    assert archive.all().to_runs()[0].stopping == block
    # Of the candidates, the slice's; the stop and the rule's settings stand.
    only = archive.slice(variants="prompt-v2").to_run().stopping
    assert only is not None
    assert [c["candidate_variant_id"] for c in only["candidates"]] == ["prompt-v2"]
    assert [r["variant_id"] for r in only["judge_spend_after_decision"]] == ["prompt-v2"]
    # The rule split alpha across both candidates: its statement still says so.
    from agenticlens_frames.early_stopping import rule_statement

    assert only.pop("rule_candidates") == 2
    assert rule_statement({**only, "rule_candidates": 2}) == rule_statement(block)
    assert {
        k: v for k, v in only.items() if k not in ("candidates", "judge_spend_after_decision")
    } == {k: v for k, v in block.items() if k not in ("candidates", "judge_spend_after_decision")}
    # The catalog says the run stopped early (the archive's own surfaces read it there).
    assert record.record.stopped_early is True
    assert archive.runs()["stopped_early"].tolist() == [True]
    # Some of its cases: the block does not describe them.
    with pytest.raises(InputError, match="stopped early") as error:
        archive.slice(tags="refund").to_run()
    assert error.value.location == "stopping"
    assert error.value.file == str(record.record.path / "_spec.json")
    # A run without it is stored as before.
    plain = Archive(tmp_path / "plain")
    stored = plain.add(support_run, run_at="2026-11-04").record
    assert "stopping" not in json.loads((stored.path / "_spec.json").read_text())
    assert plain.all().to_run().stopping is None
    assert plain.slice(tags="refund").to_run().stopping is None
    assert stored.stopped_early is None
    assert "stopped_early" not in json.loads((stored.path / "_run.json").read_text())
    # A block no surface could render is refused before anything is written.
    bad = dataclasses.replace(support_run, stopping={**block, "reason": 3})
    with pytest.raises(InputError) as error:
        Archive(tmp_path / "bad").add(bad)
    assert error.value.location == "stopping.reason"
    assert "could not give back: expected text, got 3" in error.value.message
    assert not (tmp_path / "bad").exists()


def test_a_damaged_early_stopping_block_in_the_archive_is_refused_naming_its_place(
    tmp_path: Path, support_run: ExperimentRun
):
    archive = Archive(tmp_path / "archive", durable=False)
    record = archive.add(dataclasses.replace(support_run, stopping=stopping_block())).record
    spec_path = record.path / "_spec.json"
    spec = json.loads(spec_path.read_text())
    spec["stopping"]["reason"] = 3
    spec_path.write_text(json.dumps(spec))
    # Its checksum follows the edit: the block's own check is what refuses it.
    from agenticlens_frames.archive._scan import file_sha256

    fixed = dataclasses.replace(
        record, sha256={**record.sha256, "_spec.json": file_sha256(spec_path)}, as_read=None
    )
    (record.path / "_run.json").write_text(json.dumps(fixed.to_json()))
    with pytest.raises(InputError) as error:
        archive.all().to_run()
    assert error.value.location == "stopping.reason"
    assert error.value.file == str(spec_path)
    assert "damaged early-stopping record: expected text, got 3" in error.value.message


def test_adding_a_run_again_with_its_run_level_facts_keeps_them(
    tmp_path: Path, support_run: ExperimentRun
):
    """The early-stopping block and the failed trials' judge spend are not part of the
    run's content id: adding the run first without them (an archive written before they
    were kept) and then with them said "already archived" and dropped them. The re-add
    now writes them into the archived copy (same run id, one run), checksummed; another
    value than the archived one is refused."""
    spend = [
        {
            "variant_id": "prompt-v2",
            "judge_scores": 3,
            "unavailable_scores": 1,
            "spent_cost_usd": 0.0006,
            "input_tokens": 90,
            "output_tokens": 6,
        }
    ]
    full = dataclasses.replace(
        support_run, stopping=stopping_block(), judge_spend_failed_trials=spend
    )
    assert run_content_id(full) == run_content_id(support_run)
    archive = Archive(tmp_path / "archive", durable=False)
    first = archive.add(support_run, run_at="2026-11-04")
    stale = archive.all()
    assert len(stale.records()) == 1  # the slice holds the record as it was
    again = archive.add(full)
    assert (again.added, again.run_id) == (False, first.run_id)
    assert again.completed == ("stopping", "judge_spend_failed_trials")
    assert again.record.stopped_early is True
    assert len(archive.records()) == 1
    archive.check()  # the record's checksum names the new specification
    back = archive.all().to_run()
    assert back.stopping == full.stopping
    assert back.judge_spend_failed_trials == spend
    # A slice taken before the re-add reads the new specification too.
    assert stale.to_run().stopping == full.stopping
    # Nothing to add: nothing written.
    spec_bytes = (first.record.path / "_spec.json").read_bytes()
    assert archive.add(full).completed == ()
    assert archive.add(support_run).completed == ()
    assert (first.record.path / "_spec.json").read_bytes() == spec_bytes
    # Another block for the same tables: one of the two is not this run's.
    other = stopping_block()
    other["reason"] = "something else"
    with pytest.raises(InputError, match="archived with another stopping") as error:
        archive.add(dataclasses.replace(support_run, stopping=other))
    assert error.value.location == "stopping"
    assert archive.all().to_run().stopping == full.stopping


def test_a_run_of_an_older_archive_reads_and_takes_its_block_on_a_re_add(
    tmp_path: Path, support_run: ExperimentRun
):
    """A run archived by an earlier version (no checksums, no record digest, no block)
    still reads, with no block; adding it again with its block keeps the block, and the
    run reads back whole with it."""
    from .conftest import archived_before_checksums

    archive = Archive(tmp_path / "archive", durable=False)
    run_id = archive.add(support_run, run_at="2026-11-04").run_id
    folder = archived_before_checksums(archive, run_id)
    old = archive.all().to_run()
    assert old.stopping is None
    assert archive.record(run_id).stopped_early is None
    again = archive.add(dataclasses.replace(support_run, stopping=stopping_block()))
    assert (again.added, again.run_id, again.completed) == (False, run_id, ("stopping",))
    back = archive.all().to_run()
    assert back.stopping == stopping_block()
    pd.testing.assert_frame_equal(back.attempts, old.attempts, check_exact=True)
    assert archive.record(run_id).stopped_early is True
    assert folder == archive.record(run_id).path


def test_a_tag_with_a_comma_is_refused_before_anything_is_written(tmp_path: Path):
    """The archive stores a case's tags comma-joined: the tag "refund,billing" read back as
    the two tags "refund" and "billing", so a filter on "refund,billing" kept no row of
    the run it selected, and one on "refund" kept a case that does not carry that tag."""
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = (folder / "suite.yaml").read_text(encoding="utf-8")
    assert suite.count('tags: ["faq"]') == 1
    (folder / "suite.yaml").write_text(
        suite.replace('tags: ["faq"]', 'tags: ["faq", "refund,billing"]'), encoding="utf-8"
    )
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    index = next(i for i, c in enumerate(run.suite.cases) if "refund,billing" in c.tags)
    archive = Archive(tmp_path / "arc", durable=False)
    with pytest.raises(InputError, match="with a comma") as error:
        archive.add(run)
    assert f"suite.yaml: cases[{index}].tags[1]:" in str(error.value)
    assert not (tmp_path / "arc").exists()


def test_a_folder_that_is_not_an_archive_is_refused_not_read_as_empty(archive: Archive):
    """An experiment's or a run's folder given for the archive read as an archive of no
    run: `ls` listed none and every summary said that no run matched."""
    run_folder = archive.records()[0].path
    for folder in (run_folder, run_folder.parent, EXAMPLE):
        with pytest.raises(InputError, match="not an archive") as error:
            Archive(folder).records()
        assert str(folder) in str(error.value)
        with pytest.raises(InputError, match="not an archive"):
            Archive(folder).slice().records()
    assert len(Archive(archive.path).records()) == 3
    (archive.path / "_archive.json").unlink()  # a lost marker: still the runs' archive
    assert len(Archive(archive.path).records()) == 3


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ('{"format": "agenticlens-frames-archive", "format_version": 2}', "format_version 2"),
        ('{"format": "something-else", "format_version": 1}', "not an archive marker"),
        ("{not json", "unreadable archive marker"),
    ],
)
def test_a_marker_of_another_format_or_a_newer_version_is_refused(
    archive: Archive, support_run: ExperimentRun, marker: str, message: str
):
    """The marker was written but never read: an archive a newer version wrote (or a
    damaged marker) was read and added to as if it were this version's."""
    (archive.path / "_archive.json").write_text(marker, encoding="utf-8")
    for action in (
        lambda: Archive(archive.path).records(),
        lambda: Archive(archive.path).slice().records(),
        lambda: Archive(archive.path).add(support_run, run_at="2026-11-01T00:00:00Z"),
    ):
        with pytest.raises(InputError, match=message) as error:
            action()
        assert "_archive.json" in str(error.value)
    (archive.path / "_archive.json").write_text(
        '{"format": "agenticlens-frames-archive", "format_version": 1}', encoding="utf-8"
    )
    assert len(Archive(archive.path).records()) == 3


def test_a_path_starting_with_a_tilde_is_refused_not_made_a_folder(
    tmp_path: Path, support_run: ExperimentRun, monkeypatch: pytest.MonkeyPatch
):
    """Python does not expand '~': Archive('~/runs').add(run) made a folder named '~' in the
    working directory."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="'~' is not expanded here"):
        Archive("~/runs").add(support_run)
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("read", ["numpy", "duckdb", "frame"])
def test_a_slice_read_after_its_run_was_removed_says_to_slice_again(archive: Archive, read: str):
    """A slice is a snapshot of the catalog. Reading it after one of its runs was removed
    said the run's file was missing and to restore it from a backup, or to remove the run
    and add it again: the run had just been removed on purpose."""
    if read == "duckdb":
        pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    sl = archive.all()
    gone = sl.records()[0]
    archive.remove(gone.run_id)
    with pytest.raises(InputError) as error:
        sl.frame("attempts") if read == "frame" else sl.analyze(read)
    assert error.value.message.startswith(
        f"run {gone.run_id} is no longer in the archive (removed after this slice read"
    )
    assert error.value.file is not None and error.value.file.startswith(str(gone.path))
    assert error.value.hint == "slice the archive again: a slice is a snapshot of its catalog"
    assert len(archive.all().records()) == 2  # a new slice reads the others


def _kept(run: ExperimentRun, variants: set[str], cases: set[str]) -> ExperimentRun:
    """``run`` built straight from its specs with only these variants and cases."""
    manifest = dataclasses.replace(
        run.manifest, variants=tuple(v for v in run.manifest.variants if v.id in variants)
    )
    suite = dataclasses.replace(run.suite, cases=tuple(c for c in run.suite.cases if c.id in cases))

    def keep(frame: pd.DataFrame) -> pd.DataFrame:
        for column, wanted in (("variant_id", variants), ("case_id", cases)):
            if column in frame:
                frame = frame[frame[column].astype(str).isin(wanted)]
        return frame.reset_index(drop=True)

    tables = (run.attempts, run.checks, run.trials, run.variants, run.cases)
    return ExperimentRun(manifest, suite, *map(keep, tables), run.evaluator_versions)


def test_add_refuses_runs_with_fewer_variants_or_cases_than_the_project_allows(
    tmp_path: Path, support_run: ExperimentRun
):
    """A one-variant run (nothing to compare) or a run of no case, built straight from
    specs, was archived; ExperimentRun.from_frames refuses both, and so does add."""
    variants = [v.id for v in support_run.manifest.variants]
    cases = {c.id for c in support_run.suite.cases}
    archive = Archive(tmp_path / "arc")
    with pytest.raises(InputError) as one:
        archive.add(_kept(support_run, {variants[0]}, cases))
    assert one.value.location == "manifest.variants"
    assert "a comparison needs at least two variants" in one.value.message
    with pytest.raises(InputError) as none:
        archive.add(_kept(support_run, set(variants), set()))
    assert none.value.location == "suite.cases" and "has no case" in none.value.message
    assert not (tmp_path / "arc").exists()  # refused before anything was written
    # The same minimum as from_frames: two variants and one case are archived.
    first = support_run.suite.cases[0].id  # index 0, as a one-case suite numbers it
    two = archive.add(_kept(support_run, set(variants[:2]), {first}))
    assert two.added and len(two.record.variants) == 2 and two.record.counts["cases"] == 1


def test_the_archive_display_says_what_it_holds_and_never_raises(
    shared_archive: Archive, runs: dict[str, ExperimentRun], tmp_path: Path
) -> None:
    """``Archive``'s display named the folder only; ``AddResult``'s printed the whole run
    record (every variant's dict and the checksums, 2,500 characters). The archive says
    its runs, experiments and attempts, counted here from the runs themselves; a folder
    that is no archive, empty or with a run folder that lost its record, says so."""
    shown = repr(shared_archive)
    attempts = sum(len(run.attempts) for run in runs.values())
    experiments = len({run.experiment_id for run in runs.values()})
    assert shown == (
        f"Archive({str(shared_archive.path)!r}; runs={len(runs)}, "
        f"experiments={experiments}, attempts={attempts})"
    )
    assert repr(Archive(tmp_path / "none")) == (
        f"Archive({str(tmp_path / 'none')!r}; no runs: no archive here)"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert repr(Archive(empty)) == f"Archive({str(empty)!r}; runs=0, experiments=0, attempts=0)"
    # A run folder without its record: counted, not warned about on every display.
    archive = Archive(tmp_path / "arc", durable=False)
    added = archive.add(runs["support"])
    (added.record.path / "_run.json").unlink()
    assert repr(archive).endswith("runs=0, experiments=0, attempts=0; 1 warning(s), see records())")
    # The add's result: one short line, the record's counts from the run.
    support = runs["support"]
    line = repr(Archive(tmp_path / "other", durable=False).add(support))
    assert len(line) < 250, line
    assert line.startswith(f"AddResult(record=RunRecord({added.run_id!r}, "), line
    assert (
        f"variants={len(support.variants)}, cases={len(support.cases)}, "
        f"trials={support.manifest.trial_count}, attempts={len(support.attempts)})"
    ) in line
    assert line.endswith("added=True, completed=())"), line


def test_a_re_add_refuses_to_complete_a_specification_that_was_changed_by_hand(
    tmp_path: Path, support_run: ExperimentRun
):
    """Completing a run's facts rewrites its specification and the checksum naming it: an
    archived specification no longer the one archived must be refused first, not be
    blessed with a new checksum. It is refused as every read of the run refuses it (it
    was called "unreadable", with the path twice and two hints)."""
    archive = Archive(tmp_path / "archive", durable=False)
    record = archive.add(support_run, run_at="2026-11-04").record
    spec = record.path / "_spec.json"
    # The same JSON, other bytes: only the checksum can tell.
    spec.write_bytes(spec.read_bytes() + b"\n")
    edited = spec.read_bytes()
    run_file = (record.path / "_run.json").read_bytes()
    with pytest.raises(InputError) as error:
        archive.add(dataclasses.replace(support_run, stopping=stopping_block()))
    assert error.value.file == str(spec)
    assert error.value.message.startswith(
        f"this file is not the one archived for run {record.run_id} (SHA-256 "
    )
    assert spec.read_bytes() == edited
    assert (record.path / "_run.json").read_bytes() == run_file
    with pytest.raises(InputError) as read:
        archive.all().to_run()
    assert (read.value.message, read.value.hint) == (error.value.message, error.value.hint)


def test_staging_folders_older_than_an_hour_are_stale_and_only_they_are_cleaned(
    tmp_path: Path, support_run: ExperimentRun, monkeypatch: pytest.MonkeyPatch
):
    """A live writer's staging folder is younger than the hour: cleaning must leave it."""
    archive = Archive(tmp_path / "archive", durable=False)
    archive.add(support_run)
    now = 1_800_000_000
    monkeypatch.setattr(time, "time", lambda: now)
    staging = tmp_path / "archive" / "_staging"
    ages = {"live": 0, "recent": 1800, "exactly-an-hour": 3600, "killed": 5400}
    for name, age in ages.items():
        (staging / name).mkdir(parents=True)
        os.utime(staging / name, (now - age, now - age))
    stale = {staging / "exactly-an-hour", staging / "killed"}
    assert set(archive.stale_staging()) == stale
    assert set(archive.stale_staging(older_than=1800)) == stale | {staging / "recent"}
    assert set(archive.clean_staging()) == stale
    assert sorted(p.name for p in staging.iterdir()) == ["live", "recent"]
    assert len(archive.records()) == 1


def test_an_archive_folder_whose_parents_do_not_exist_yet_is_created(
    tmp_path: Path, support_run: ExperimentRun
):
    archive = Archive(tmp_path / "new" / "nested" / "archive", durable=False)
    assert archive.add(support_run).added
    assert [r.run_id for r in archive.records()] == [run_content_id(support_run)]


def test_records_are_listed_by_run_time_then_by_when_they_were_added(
    tmp_path: Path, runs: dict[str, ExperimentRun]
):
    """Not in the order the runs were added, nor by id: by ``run_at``, ties by ``added_at``."""
    archive = Archive(tmp_path / "archive", durable=False)
    archive.add(runs["support"], run_at="2026-10-20")
    archive.add(runs["support_v2"], run_at="2026-10-20")
    archive.add(runs["synthetic"], run_at="2026-09-01")
    ids = {name: run_content_id(run) for name, run in runs.items()}
    assert ids["support_v2"] < ids["support"]  # by id, the tie would go the other way
    expected = [ids["synthetic"], ids["support"], ids["support_v2"]]
    assert [r.run_id for r in archive.records()] == expected
    assert archive.runs()["run_id"].tolist() == expected


def test_a_record_reads_back_evaluator_versions_and_zero_counts(archive: Archive):
    """A version left unset is null in the record, and a table may have no row (a run
    without checks): both read back as written, not refused nor dropped."""
    record = archive.records()[0]
    evaluators = {"judge": "2.0", "rubric": None}
    counts = {**record.counts, "checks": 0}
    data = dataclasses.replace(record, evaluators=evaluators, counts=counts).to_json()
    assert data["evaluators"] == {"judge": "2.0", "rubric": None}
    back = RunRecord.from_json(json.loads(json.dumps(data)), record.path)
    assert back.evaluators == {"judge": "2.0", "rubric": None}
    assert back.counts["checks"] == 0
    assert back.counts["attempts"] == record.counts["attempts"]


def test_the_catalog_frame_of_an_empty_archive_has_utc_times(tmp_path: Path):
    """As a frame of runs has: a filter ``runs()[runs().run_at >= some UTC time]`` works
    on both."""
    frame = Archive(tmp_path).runs()
    assert frame.empty
    for column in ("run_at", "added_at"):
        assert isinstance(frame[column].dtype, pd.DatetimeTZDtype)
        assert str(frame[column].dtype.tz) == "UTC"
    assert frame[frame["run_at"] >= pd.Timestamp("2026-10-01", tz="UTC")].empty


def test_a_tag_slice_rebuilds_a_run_of_only_those_cases_renumbered(
    shared_archive: Archive, support_run: ExperimentRun
):
    """``to_run`` of a tag slice: the attempts of the tagged cases only (pandas filter of
    the original run), each case's index its position among them in suite order."""
    chosen = [c.id for c in support_run.suite.cases if "refund" in c.tags]
    assert 0 < len(chosen) < len(support_run.suite.cases)
    back = shared_archive.slice(experiments="support-agent-upgrade@1", tags="refund").to_run()
    assert [c.id for c in back.suite.cases] == chosen
    original = support_run.attempts
    expected = original[original["case_id"].astype(str).isin(chosen)]
    got = back.attempts
    assert len(got) == len(expected)
    keys = ["variant_id", "trial", "case_id"]
    merged = got.astype({"variant_id": str, "case_id": str}).merge(
        expected.astype({"variant_id": str, "case_id": str}),
        on=keys,
        suffixes=("", "_original"),
        validate="one_to_one",
    )
    assert len(merged) == len(expected)
    assert (merged["case_index"] == merged["case_id"].map(chosen.index)).all()
    pd.testing.assert_series_equal(merged["passed"], merged["passed_original"], check_names=False)
