"""One experiment, the same frames whichever way they are reached (docs/data-model.md).

The tidy tables of a generated experiment (with missing samples) are compared, column
by column with their dtypes, categories and attrs, between ``load_experiment``,
``ExperimentRun.from_frames`` fed the run's own tables, ``to_parquet``/``read_parquet``,
``to_polars`` (through Arrow), an archive (``to_run`` and ``frame``), and a live run of
python targets against ``load_experiment(run_dir=...)``; the result frames of
``analyze`` against those of its saved report, lean and full. Every difference the
docs list (a column without a JSON key, one only a loaded report has) is named here.
"""

from __future__ import annotations

import math
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from agenticlens_frames import ExperimentRun, analyze, load_experiment, load_report, read_parquet
from agenticlens_frames.archive import Archive
from agenticlens_frames.report.json_report import write_json_report

from .conftest import EXAMPLE, FIXTURES

TABLES = ("attempts", "checks", "trials", "variants", "cases")

#: Result-frame columns the docs say only one side has (docs/data-model.md: a column
#: without a JSON key is left out of a loaded report, unless the report holds what
#: rebuilds it, as for the trials' ``execution_position``, ``successful`` and
#: ``average_latency_ms_package``; ``error_message`` is read only).
ANALYSIS_ONLY = {
    "case_matrix": {"scored", "mean_latency_ms", "mean_cost_usd"},
}
REPORT_ONLY = {"trial_summary": {"error_message"}}


def assert_same(left: pd.DataFrame, right: pd.DataFrame, what: str) -> None:
    """Frames equal to the bit, dtypes and categories included, and the same attrs."""
    pd.testing.assert_frame_equal(left, right, check_exact=True, check_categorical=True, obj=what)
    assert left.attrs.keys() == right.attrs.keys(), what


@pytest.fixture(scope="module")
def run(make_synthetic: Callable[..., Path]) -> ExperimentRun:
    folder = make_synthetic(variants=3, trials=3, cases=5, seed=3, missing_samples=4)
    out = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    # The fixture must exercise the statuses and nulls the tables can hold.
    assert (out.attempts["status"] == "missing_sample").sum() == 4
    return out


def test_parquet_polars_and_archive_give_the_run_s_tables(run, tmp_path):
    back = read_parquet(run.to_parquet(tmp_path / "tables"))
    archive = Archive(tmp_path / "archive", durable=False)
    archive.add(run)
    whole = archive.all()
    rebuilt = whole.to_run()
    for name in TABLES:
        table = getattr(run, name)
        assert_same(table, getattr(back, name), f"read_parquet {name}")
        assert_same(table, getattr(rebuilt, name), f"archive to_run {name}")
        frame = whole.frame(name)
        # The archive adds its run columns (run_id, …) in front: the rest is the table.
        assert_same(table, frame[list(table.columns)], f"archive frame {name}")
        # polars holds no unused category (docs/data-model.md): the values agree.
        pytest.importorskip("polars", reason="to_polars needs the optional polars extra")
        assert run.to_polars(name).to_arrow().to_pylist() == run.to_arrow(name).to_pylist()


@pytest.mark.parametrize("which", ["synthetic", "example"])
def test_from_frames_fed_the_run_s_own_tables_gives_them_back(run, example, which):
    run = run if which == "synthetic" else example
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the run's own columns are not "unread" ones
        again = ExperimentRun.from_frames(
            run.attempts,
            run.variants,
            run.cases,
            name=run.manifest.name,
            version=run.manifest.version,
            random_seed=run.manifest.random_seed,
        )
    # What from_frames reads comes back as it was; what the checks, traces and recorded
    # files gave is rebuilt (docs/data-model.md lists it), with the declared dtypes.
    read = ["experiment_id", "variant_id", "trial", "case_id", "case_index", "status"]
    read += ["passed", "score", "latency_ms", "cost_usd", "cost_source", "output", "error"]
    read += ["target_attempts"]  # (null here: a recorded run made no call)
    # The fixtures exercise an estimated cost (read as measured before) and no cost.
    assert "estimated" in set(run.attempts["cost_source"].dropna())
    assert run.attempts["cost_source"].isna().any()
    assert_same(run.attempts[read], again.attempts[read], "from_frames attempts")
    assert (again.attempts.dtypes == run.attempts.dtypes).all()
    # The example's lost trial has an error_message: its attempts' error gives it back.
    assert which == "synthetic" or run.trials["error_message"].notna().any()
    # (Not execution_position: from_frames replays no seed, docs/data-model.md.)
    kept = ["variant_id", "trial", "status", "error_message"]
    assert_same(run.trials[kept], again.trials[kept], "from_frames trials")
    assert_same(
        run.variants.drop(columns="target"), again.variants.drop(columns="target"), "variants"
    )
    assert (again.cases.dtypes == run.cases.dtypes).all()
    assert (again.cases["n_expectations"] == 1).all()
    # The inputs as JSON text, read back as the JSON they hold (not encoded twice).
    kept = ["case_id", "case_index", "case_name", "tags", "input", "metadata"]
    assert_same(run.cases[kept], again.cases[kept], "from_frames cases")


@pytest.fixture(scope="module")
def example() -> ExperimentRun:
    # Declares its comparisons: the report holds the paired_comparisons block too.
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.mark.parametrize("which", ["synthetic", "example"])
@pytest.mark.parametrize("lean", [True, False], ids=["lean", "full"])
def test_a_loaded_report_gives_the_analysis_frames(run, example, tmp_path, lean, which):
    analysis = analyze(run if which == "synthetic" else example, frontier_n_resamples=0)
    loaded = load_report(write_json_report(analysis, tmp_path / "report.json", lean=lean))
    ours, theirs = analysis.frames(), loaded.frames()
    if which == "example":
        # The example has an infinite df (a paired t with zero variance) and mde (a change
        # no sample size detects): JSON has none, the report's list keeps them.
        assert ours["case_level_summary"]["df"].eq(math.inf).any()
        assert ours["verdicts"]["mde"].eq(math.inf).any()
    # Every frame, case_labels too (from the case matrix and case_level.label_counts), in
    # the same order.
    assert list(ours) == list(theirs)
    if lean:
        # A lean report has no per-case records: a trial's 0-counted mean is the written
        # 0.0 where no latency is known (ours unknown), and cannot be told from ours where
        # some are known (docs/data-model.md): missing there.
        trials = ours["trial_summary"].copy()
        unknown = trials["average_latency_ms"].isna() & (trials["status"] == "succeeded")
        trials["average_latency_ms_package"] = trials["average_latency_ms_package"].where(unknown)
        ours["trial_summary"] = trials
        assert which == "example" or trials["average_latency_ms_package"].isna().any()
    for name, frame in theirs.items():
        mine = ours[name].drop(columns=list(ANALYSIS_ONLY.get(name, ())))
        frame = frame.drop(columns=list(REPORT_ONLY.get(name, ())))
        assert_same(mine, frame, name)


def test_a_live_run_and_its_run_folder_give_the_same_tables(tmp_path):
    from agenticlens_frames.runner import run_experiment

    for name in ("manifest_compat.yaml", "suite.yaml", "targets.py"):
        shutil.copy(FIXTURES / "live" / name, tmp_path / name)
    manifest, suite = tmp_path / "manifest_compat.yaml", tmp_path / "suite.yaml"
    live = run_experiment(manifest, suite, progress=False, run_dir=tmp_path / "run").run
    # The fixture's targets raise, and return an invalid payload: failed trials too.
    assert {"target_error", "trial_failed"} <= set(live.attempts["status"])
    loaded = load_experiment(manifest, suite, run_dir=tmp_path / "run")
    saved = read_parquet(tmp_path / "run" / "tables")
    archive = Archive(tmp_path / "archive", durable=False)
    archive.add(live)
    archived = archive.all().to_run()
    for name in TABLES:
        assert_same(getattr(live, name), getattr(loaded, name), f"run_dir {name}")
        assert_same(getattr(live, name), getattr(saved, name), f"run_dir tables {name}")
        assert_same(getattr(live, name), getattr(archived, name), f"live archived {name}")
        # Arrow keeps the declared schema (dictionary keys, int32, large_string).
        assert live.to_arrow(name).schema == live.schema(name)
        assert isinstance(live.to_arrow(name), pa.Table)


def test_to_polars_keys_keep_their_categories_and_order(run, example):
    pl = pytest.importorskip("polars", reason="to_polars needs the optional polars extra")
    attempts = run.to_polars("attempts")
    for column in ("variant_id", "case_id", "status", "trace_shape", "cost_source"):
        # Every category, unused ones too (no attempt failed its trial here).
        want = list(run.attempts[column].cat.categories)
        assert attempts.schema[column].categories.to_list() == want, column
    assert "trial_failed" not in set(run.attempts["status"].astype(str))
    # Sorted by key as pandas sorts a categorical: manifest / suite order, not text order
    # (the example's variants and cases are not in alphabetical order).
    assert list(example.manifest.variant_ids) != sorted(example.manifest.variant_ids)
    keys = ["case_id", "variant_id"]
    by_polars = example.to_polars("attempts").sort(keys, maintain_order=True)
    by_pandas = example.attempts.sort_values(keys, kind="stable")
    for column in (*keys, "trial"):
        assert by_polars[column].to_list() == by_pandas[column].tolist(), column
    assert isinstance(attempts.schema["variant_id"], pl.Enum)


def test_a_loaded_report_gives_the_case_labels_of_inputs_nothing_judged(tmp_path):
    """Plain inputs of the Python API (no expectation): an answered attempt passes only by
    AgenticLens's vacuous rule and a failed call is an error, so case_labels counts
    neither, while the case matrix counts both; the report lists those cells
    (case_level.label_counts)."""
    import json

    from agenticlens_frames.api import Experiment, Variant
    from agenticlens_frames.api import run as run_api

    class Agent:
        def __init__(self, variant):
            self.down = variant.name == "b"

        def run(self, text):
            if self.down and text == "q2":
                raise ConnectionError("unavailable")
            return "ok"

    experiment = Experiment(
        name="plain",
        variants=[Variant(name="a"), Variant(name="b")],
        dataset=[{"input": "q0", "expected_output": "ok"}, "q1", "q2"],
    )
    result = run_api(experiment, Agent, progress=False, trials=2, run_dir=tmp_path / "run")
    analysis = analyze(result.run, frontier_n_resamples=0)
    path = write_json_report(analysis, tmp_path / "report.json", lean=True)
    listed = json.loads(path.read_text())["case_level"]["label_counts"]
    cases = list(analysis.paired_frames["case_labels"]["case_id"].cat.categories)
    # The two plain inputs of each variant: no evaluated attempt (the first is judged).
    assert sorted(map(tuple, listed)) == sorted((v, c, 0, 0) for v in "ab" for c in cases[1:])
    loaded = load_report(path)
    ours = analysis.paired_frames["case_labels"]
    assert set(ours["label"]) == {"undetermined", "unscored"}  # (2 of 2: too few to say)
    assert_same(ours, loaded.paired_frames["case_labels"], "case_labels")
