"""The tidy tables: grains, schemas, completeness and the parquet round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from agenticlens_frames import InputError, load_experiment, read_parquet
from agenticlens_frames.frames import SCHEMAS

from .conftest import EXAMPLE, stopping_block


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def test_grains_are_complete(run) -> None:
    m, s = run.manifest, run.suite
    assert len(run.attempts) == len(m.variants) * m.trial_count * len(s.cases)
    keys = run.attempts[["variant_id", "trial", "case_id"]].astype(str)
    assert not keys.duplicated().any()
    assert len(run.trials) == len(m.variants) * m.trial_count
    assert list(run.variants["variant_id"].astype(str)) == list(m.variant_ids)
    assert list(run.cases["case_id"].astype(str)) == list(s.case_ids)
    # every check belongs to an attempt and n_checks counts them
    per_attempt = run.checks.groupby(["variant_id", "trial", "case_id"], observed=True).size()
    scored = run.attempts.set_index(["variant_id", "trial", "case_id"])["n_checks"]
    assert per_attempt.reindex(scored.index, fill_value=0).tolist() == scored.tolist()


def test_data_situations_of_the_example_are_visible(run) -> None:
    att = run.attempts
    # README of data/: retrieval-dense lacks trial 5; prompt-v2 trial 3 lacks warranty-question
    failed = run.trials[run.trials["status"] == "failed"]
    assert failed[["variant_id", "trial"]].astype(str).values.tolist() == [["retrieval-dense", "5"]]
    assert failed["error_message"].iloc[0] == "recorded target has 4 trial(s); trial 5 is missing"
    missing = att[att["status"] == "missing_sample"]
    assert missing[["variant_id", "trial", "case_id"]].astype(str).values.tolist() == [
        ["prompt-v2", "3", "warranty-question"]
    ]
    assert missing["latency_ms"].isna().all() and missing["cost_usd"].isna().all()
    assert (att.loc[att["status"] == "trial_failed", "score"].isna()).all()


def test_scores_equal_the_mean_of_their_checks(run) -> None:
    sums = run.checks.groupby(["variant_id", "trial", "case_id"], observed=True)["value"].mean()
    att = run.attempts.set_index(["variant_id", "trial", "case_id"])
    scored = att[att["status"] != "trial_failed"]["score"]
    assert scored.tolist() == pytest.approx(sums.reindex(scored.index).tolist(), rel=1e-15)


def test_execution_order_is_recorded(run) -> None:
    from agenticlens_frames import execution_order

    order = execution_order(run.manifest.variant_ids, run.manifest.trial_count, 2611)
    trials = run.trials.sort_values("execution_position")
    assert list(zip(trials["variant_id"].astype(str), trials["trial"], strict=True)) == order
    first = run.attempts.drop_duplicates(["variant_id", "trial"]).set_index(["variant_id", "trial"])
    positions = run.trials.set_index(["variant_id", "trial"])["execution_position"]
    assert first["run_order"].tolist() == positions.reindex(first.index).tolist()


def test_tables_conform_to_their_arrow_schemas(run) -> None:
    for name in SCHEMAS:
        table = run.to_arrow(name)
        schema = run.schema(name)
        assert table.schema.remove_metadata().equals(schema), name
    factor_cols = [c for c in run.variants.columns if c.startswith("factor_")]
    assert factor_cols == ["factor_model", "factor_prompt", "factor_retrieval"]


@pytest.mark.parametrize("method", ["schema", "to_arrow", "to_pandas"])
def test_an_unknown_table_name_is_an_input_error_naming_the_tables(run, method: str) -> None:
    # schema and to_arrow raised a bare KeyError('attempt') where to_pandas named the fix
    with pytest.raises(InputError, match=r"unknown table 'attempt'.*did you mean 'attempts'"):
        getattr(run, method)("attempt")


def test_parquet_round_trip_is_exact(run, tmp_path: Path) -> None:
    run.to_parquet(tmp_path)
    back = read_parquet(tmp_path)
    assert back.manifest == run.manifest
    assert back.suite == run.suite
    for name, frame in run.tables.items():
        pd.testing.assert_frame_equal(back.tables[name], frame, check_exact=True, obj=name)


def test_to_parquet_syncs_each_file_before_its_rename_and_the_folder_once(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each table's data is on disk before it replaces the old file, and the renames are
    synced by one fsync of the folder after the last (one per file cost 3-8 ms each)."""
    import os
    import stat

    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        events.append(("fsync", kind))
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        events.append(("replace", Path(dst).name))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    run.to_parquet(tmp_path / "tables")
    names = [f"{name}.parquet" for name in SCHEMAS]
    expected = [e for name in names for e in (("fsync", "file"), ("replace", name))]
    assert events == [*expected, ("fsync", "dir")]
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(names)


def test_to_parquet_over_an_existing_file_is_refused_naming_it(run, tmp_path: Path) -> None:
    """run.to_parquet("run.parquet") where that file exists was a FileExistsError."""
    target = tmp_path / "run.parquet"
    target.write_bytes(b"mine")
    with pytest.raises(InputError, match="is a file; to_parquet writes a folder") as info:
        run.to_parquet(target)
    assert str(target) in str(info.value)
    assert target.read_bytes() == b"mine"


def test_read_parquet_errors_name_the_file(tmp_path: Path, run) -> None:
    with pytest.raises(InputError, match=r": an empty folder: it holds neither attempts\.parquet"):
        read_parquet(tmp_path)
    run.to_parquet(tmp_path)
    (tmp_path / "trials.parquet").unlink()
    with pytest.raises(InputError, match=r"trials\.parquet: file not found \(a run folder holds"):
        read_parquet(tmp_path)
    run.to_parquet(tmp_path)
    (tmp_path / "checks.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError) as info:
        read_parquet(tmp_path / "checks.parquet")
    assert str(info.value).startswith(f"{tmp_path / 'checks.parquet'}: not a folder (")
    with pytest.raises(InputError, match=r"checks\.parquet: not a readable parquet file"):
        read_parquet(tmp_path)
    pa_table = pa.table({"x": [1]})
    import pyarrow.parquet as pq

    pq.write_table(pa_table, tmp_path / "checks.parquet")
    with pytest.raises(InputError, match="no agenticlens_frames metadata"):
        read_parquet(tmp_path)


def _saved_spec(run) -> dict:
    from agenticlens_frames.frames import spec_to_json

    return json.loads(json.dumps(spec_to_json(run.manifest, run.suite)))


def test_a_saved_spec_reads_back_equal(run) -> None:
    from agenticlens_frames.frames import spec_from_json

    assert spec_from_json(_saved_spec(run)) == (run.manifest, run.suite)
    spec = _saved_spec(run)  # integers where floats are saved (an older writer) still read
    spec["manifest"]["variants"][0]["timeout_seconds"] = 30
    manifest, _ = spec_from_json(spec)
    assert manifest.variants[0].timeout_seconds == 30.0
    assert type(manifest.variants[0].timeout_seconds) is float


def _swap_first_cases(spec: dict) -> None:
    cases = spec["suite"]["cases"]
    cases[0], cases[1] = cases[1], cases[0]


@pytest.mark.parametrize(
    ("edit", "location", "message"),
    [
        (
            lambda s: s["manifest"]["variants"][0].update(factors="x"),
            "manifest.variants[0].factors",
            "expected object, got str",
        ),
        (
            lambda s: s["suite"]["cases"][1].pop("id"),
            "suite.cases[1]",
            "object missing required field id",
        ),
        (
            lambda s: s["manifest"].update(trial_count="5"),
            "manifest.trial_count",
            "expected int, got str",
        ),
        (lambda s: s["suite"].update(path=5), "suite.path", "expected a path, got 5"),
        (
            lambda s: s["manifest"]["variants"][1].update(id="baseline"),
            "manifest.variants[1].id",
            "variant id 'baseline' is empty or repeated",
        ),
        (
            lambda s: s["manifest"].update(baseline_variant_id="nope"),
            "manifest.baseline_variant_id",
            "'nope' is not one of the variants",
        ),
        (
            lambda s: s["manifest"].update(pass_k=[1, 99]),
            "manifest.pass_k[1]",
            "expected a k between 1 and trial_count=5, got 99",
        ),
        (
            _swap_first_cases,
            "suite.cases[0].index",
            "expected 0 (cases are saved in index order), got 1",
        ),
        (
            lambda s: s["suite"]["cases"][2].update(id="refund-damaged-item"),
            "suite.cases[2].id",
            "case id 'refund-damaged-item' is empty or repeated",
        ),
        (lambda s: s.pop("suite"), None, "missing required key 'suite'"),
    ],
)
def test_a_damaged_saved_spec_is_refused_naming_the_place(
    run, edit, location: str | None, message: str
) -> None:
    from agenticlens_frames.frames import spec_from_json

    spec = _saved_spec(run)
    edit(spec)
    with pytest.raises(InputError) as error:
        spec_from_json(spec)
    assert (error.value.location, error.value.message) == (location, message)


def _rewrite_spec(folder: Path, edit) -> None:
    """Edit the run specification in every table's metadata, as a hand edit would."""
    import pyarrow.parquet as pq

    for name in SCHEMAS:
        table = pq.read_table(folder / f"{name}.parquet")
        meta = dict(table.schema.metadata)
        spec = json.loads(meta[b"agenticlens_frames"])
        edit(spec)
        meta[b"agenticlens_frames"] = json.dumps(spec).encode()
        pq.write_table(table.replace_schema_metadata(meta), folder / f"{name}.parquet")


def test_read_parquet_refuses_tables_of_different_runs(tmp_path: Path, run) -> None:
    # The specification is parsed from attempts.parquet only: every other file must hold
    # the same bytes, or the file that differs is named.
    import pyarrow.parquet as pq

    folder = run.to_parquet(tmp_path / "a")
    table = pq.read_table(folder / "cases.parquet")
    meta = dict(table.schema.metadata)
    meta[b"agenticlens_frames"] += b" "  # the same JSON value, other bytes
    pq.write_table(table.replace_schema_metadata(meta), folder / "cases.parquet")
    with pytest.raises(InputError) as error:
        read_parquet(folder)
    assert error.value.file == str(folder / "cases.parquet")
    assert "differs from attempts.parquet's" in error.value.message


def test_read_parquet_refuses_a_damaged_or_foreign_spec(tmp_path: Path, run) -> None:
    folder = run.to_parquet(tmp_path / "a")
    _rewrite_spec(folder, lambda s: s["manifest"]["variants"][0].update(factors="x"))
    with pytest.raises(InputError) as error:
        read_parquet(folder)
    assert error.value.file == str(folder / "attempts.parquet")
    assert "manifest.variants[0].factors: expected object, got str" in error.value.message
    # Well-typed, but not the spec of these tables: a case renamed.
    folder = run.to_parquet(tmp_path / "b")
    _rewrite_spec(folder, lambda s: s["suite"]["cases"][0].update(id="renamed"))
    with pytest.raises(InputError) as error:
        read_parquet(folder)
    assert error.value.file == str(folder)
    assert error.value.message == (
        "case_id 'refund-damaged-item' in the attempts table is not one of the run specification's"
    )


def test_a_runs_stopping_block_travels_through_parquet(tmp_path: Path, run) -> None:
    """A live run's early-stopping block (ExperimentRun.stopping) is kept by to_parquet /
    read_parquet (the run folder's tables/ are written so); a run without one writes the
    metadata it wrote before; a damaged block is refused naming its place."""
    import dataclasses

    import pyarrow.parquet as pq

    block = stopping_block()
    stopped = dataclasses.replace(run, stopping=block)
    assert read_parquet(stopped.to_parquet(tmp_path / "stopped")).stopping == block
    plain = run.to_parquet(tmp_path / "plain")
    assert read_parquet(plain).stopping is None
    meta = pq.read_table(plain / "attempts.parquet").schema.metadata
    assert "stopping" not in json.loads(meta[b"agenticlens_frames"])
    folder = stopped.to_parquet(tmp_path / "damaged")
    _rewrite_spec(folder, lambda s: s["stopping"].update(reason=3))
    with pytest.raises(InputError) as error:
        read_parquet(folder)
    assert error.value.location == "stopping.reason"
    assert error.value.file == str(folder / "attempts.parquet")


def test_suite_inputs_and_metadata_are_kept_as_json(run) -> None:
    first = run.cases.iloc[0]
    assert json.loads(first["input"]) == run.suite.cases[0].input
    assert json.loads(first["metadata"]) == run.suite.cases[0].metadata


def test_parquet_written_before_the_metadata_column_reads_it_as_null(tmp_path) -> None:
    import pyarrow.parquet as pq

    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    folder = run.to_parquet(tmp_path / "pq")
    table = pq.read_table(folder / "checks.parquet")
    assert "metadata" in table.column_names
    pq.write_table(table.drop(["metadata"]), folder / "checks.parquet")
    old = read_parquet(folder)
    assert old.checks["metadata"].isna().all()
    assert old.checks.drop(columns="metadata").equals(run.checks.drop(columns="metadata"))


def _spec_by_asdict(manifest, suite) -> dict:
    """The parquet metadata's spec as it was first written: dataclasses.asdict, then paths
    as text and tuples as lists (an independent computation for the one-walk version)."""
    from dataclasses import asdict

    def clean(value):
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return {"manifest": clean(asdict(manifest)), "suite": clean(asdict(suite))}


def test_spec_metadata_is_written_as_asdict_wrote_it(run) -> None:
    import dataclasses

    from agenticlens_frames.frames import spec_to_json

    # Keys json.dumps writes differently from str() (True -> "true", None -> "null"),
    # tuples nested in lists and dicts, and paths, in case input and metadata.
    odd = {True: ("a", Path("p")), None: [("x", 1.5)], 3: {"k": (None, False)}}
    cases = list(run.suite.cases)
    cases[0] = dataclasses.replace(cases[0], input={"q": ("t", [Path("in")])}, metadata=odd)
    suite = dataclasses.replace(run.suite, cases=tuple(cases))
    for manifest, s in ((run.manifest, run.suite), (run.manifest, suite)):
        expected = json.dumps(_spec_by_asdict(manifest, s))
        assert json.dumps(spec_to_json(manifest, s)) == expected
    assert '"true": ["a", "p"], "null": [["x", 1.5]], "3": {"k": [null, false]}' in expected


@pytest.mark.parametrize("with_custom", [False, True])
def test_evaluator_columns_of_built_in_and_registered_checks(with_custom) -> None:
    # Built-in checks only take a shortcut to the evaluator columns; both ways must give
    # what a categorical of the values, in first-seen order, gives.
    from agenticlens_frames.formats.model import CaseSpec, ManifestSpec, SuiteSpec, VariantSpec
    from agenticlens_frames.frames import TableBuilder
    from agenticlens_frames.scoring import score_unavailable

    cases = tuple(CaseSpec(f"c{i}", f"C{i}", i) for i in range(3))
    suite = SuiteSpec(Path("s.yaml"), "s", "1", cases)
    v = VariantSpec(
        id="a", name="A", target_kind="recorded", target="a.json", resolved_target="a.json"
    )
    m = ManifestSpec(
        path=Path("m.yaml"), name="x", version="1", baseline_variant_id="a", variants=(v,)
    )
    builder = TableBuilder(m, suite)
    builder.add_trial("a", 1, "succeeded", 0)
    case_of_row = {}
    for case in reversed(cases):  # rows arrive out of order: build sorts them
        row = builder.next_attempt
        case_of_row[row] = case.index
        builder.checks.add(row, "exact", "exact", True, "ok")
        if with_custom and case.id == "c1":
            builder.checks.add_custom(
                row, "judge", 0.5, False, "meh", required=False, evaluator="j",
                evaluator_version=None, evaluator_type="judge", skipped=True, metadata="{}",
            )  # fmt: skip
        builder.add_attempt("a", 1, case, "ok", score_unavailable(builder.checks, row))
    # The columns as lists, in the built table's order (case, then emission order).
    listed = builder.checks.columns()
    order = sorted(range(len(listed["attempt"])), key=lambda i: case_of_row[listed["attempt"][i]])
    want = {name: [values[i] for i in order] for name, values in listed.items()}
    assert ("j" in want["evaluator"]) == with_custom
    checks = builder.build().checks
    for column in ("evaluator", "evaluator_version", "evaluator_type"):
        values = want[column]
        categories = list(dict.fromkeys(x for x in values if x is not None))
        reference = pd.Categorical(values, categories=categories)
        got = checks[column]
        assert isinstance(got.dtype, pd.CategoricalDtype)
        assert got.cat.categories.tolist() == categories
        assert got.cat.codes.tolist() == reference.codes.tolist()
    assert checks["required"].tolist() == want["required"]
    assert checks["skipped"].tolist() == want["skipped"]
    assert [None if pd.isna(x) else x for x in checks["metadata"]] == want["metadata"]
    assert str(checks["metadata"].dtype) == "str"


def test_a_case_input_json_cannot_hold_is_kept_as_text(tmp_path: Path) -> None:
    """The Python API takes any object as a case input; a run folder (or to_parquet) with
    a numpy scalar among them failed with "Object of type float32 is not JSON
    serializable" after every attempt had run. Saved as its text, as the archive does."""
    import numpy as np

    from agenticlens_frames.api import Experiment, Variant
    from agenticlens_frames.api import run as run_api

    class Agent:
        def __init__(self, variant):
            pass

        def run(self, value):
            return str(value)

    inputs = ["s", np.float32(0.5), np.arange(2)]
    experiment = Experiment(name="np", variants=[Variant("a"), Variant("b")], dataset=inputs)
    result = run_api(experiment, Agent, progress=False, run_dir=tmp_path / "run")
    assert result.complete and len(result.attempts) == 6
    back = read_parquet(result.run.to_parquet(tmp_path / "tables"))
    assert [c.input for c in back.suite.cases] == ["s", str(np.float32(0.5)), str(np.arange(2))]


def test_a_recorded_turn_count_beyond_int32_is_unknown_in_the_table(tmp_path) -> None:
    # 3 000 000 000 turns crashed the load (ArrowInvalid into the int32 `turns` column).
    folder = tmp_path / "exp"
    import shutil

    shutil.copytree(EXAMPLE, folder)
    path = folder / "trials" / "baseline.json"
    data = json.loads(path.read_text())
    sample = data["trials"][0]["samples"][0]
    assert sample["case_id"] == "refund-damaged-item"  # max_turns: 4 in the suite
    sample["trace"]["metadata"]["turn_count"] = 3_000_000_000
    path.write_text(json.dumps(data))
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    att = run.attempts.astype({"variant_id": str, "case_id": str})
    key = (att["variant_id"] == "baseline") & (att["trial"] == 1)
    row = att[key & (att["case_id"] == "refund-damaged-item")].iloc[0]
    assert pd.isna(row["turns"]) and not row["passed"]
    checks = run.checks.astype({"variant_id": str, "case_id": str})
    turn = checks[
        (checks["variant_id"] == "baseline")
        & (checks["trial"] == 1)
        & (checks["case_id"] == "refund-damaged-item")
        & (checks["metric"].astype(str) == "turn_count_threshold")
    ]
    assert turn["passed"].tolist() == [False]
    assert "3000000000" in turn["explanation"].iloc[0]


def test_read_parquet_of_a_missing_folder_says_the_folder_is_missing(tmp_path: Path) -> None:
    """It said "<folder>/attempts.parquet: file not found (write it with
    ExperimentRun.to_parquet())", as if the folder existed and lacked one file."""
    missing = tmp_path / "nowhere"
    with pytest.raises(InputError) as info:
        read_parquet(missing)
    assert str(info.value) == (
        f"{missing}: folder not found (a run folder holds attempts.parquet, checks.parquet, "
        "trials.parquet, variants.parquet and cases.parquet, as ExperimentRun.to_parquet() "
        "and `experiment run --parquet` write them)"
    )


def test_read_parquet_of_a_live_run_folder_reads_its_tables(tmp_path: Path, run) -> None:
    """run_experiment(run_dir=...) keeps the tables under tables/: the folder itself was
    "<folder>/attempts.parquet: file not found". It is read as `archive add` reads it; one
    whose run crashed before its first session ended (no tables/) says so, and how to
    resume it."""
    run.to_parquet(tmp_path / "exp" / "tables")
    pd.testing.assert_frame_equal(
        read_parquet(tmp_path / "exp").attempts, read_parquet(tmp_path / "exp" / "tables").attempts
    )
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    (crashed / "run.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_parquet(crashed)
    text = str(info.value)
    assert text.startswith(f"{crashed}: a run folder without tables/: its run crashed")
    assert f"--run-dir {crashed}" in text and "attempts.parquet: file not found" not in text


def test_read_parquet_of_an_experiment_folder_points_to_load_experiment() -> None:
    with pytest.raises(InputError) as info:
        read_parquet(EXAMPLE)
    assert "no tables here, but manifest.yaml, suite.yaml" in str(info.value)
    assert "load_experiment(manifest_path, suite_path)" in str(info.value)
