"""A trial's execution position is the run's ``trials`` table's (docs/data-model.md):
every engine gives it, from the rollups or the attempts, whatever the slice, equal to
``analyze(run)`` — for runs built with ``ExperimentRun.from_frames`` (whose attempts
once numbered their rows in ``run_order``) as for any other."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from agenticlens_frames import analyze
from agenticlens_frames.archive import Archive, run_content_id, sufficient_stats
from agenticlens_frames.archive.engines import NEEDED_COLUMNS, run_partial
from agenticlens_frames.archive.sufficient import RunLayout, assemble
from agenticlens_frames.frames import ExperimentRun

from .test_failed_attempts import archive_with_older_rollups

ENGINES = ["numpy", "pandas", "duckdb", "dask"]
SLICES = {"all": {}, "tags": {"tags": "x"}, "variants": {"variants": ["b", "c"]}}


@pytest.fixture(scope="module")
def frames_run() -> ExperimentRun:
    """The audit's repro, a little larger: 3 variants × 2 trials × 4 tagged cases."""
    rng = np.random.default_rng(0)
    rows = [
        {"variant_id": v, "trial": t, "case_id": f"c{i}", "passed": bool(rng.random() < 0.6)}
        for v in "abc"
        for t in (1, 2)
        for i in range(4)
    ]
    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(4)], "tags": ["x", "y", "x", "y"]})
    return ExperimentRun.from_frames(
        pd.DataFrame(rows), pd.DataFrame({"variant_id": list("abc")}), cases, name="positions"
    )


@pytest.fixture(scope="module")
def legacy_run(frames_run: ExperimentRun) -> ExperimentRun:
    """The same run as ``from_frames`` built it before the fix: ``run_order`` numbering
    the rows (0, 1, 2, …) rather than repeating each trial's execution position."""
    att = frames_run.attempts
    legacy = att.assign(run_order=np.arange(len(att), dtype=np.int32))
    return dataclasses.replace(frames_run, attempts=legacy)


def _expected(runs: dict[str, ExperimentRun]) -> dict[tuple[str, str, int], int]:
    """(run id, variant, trial) -> execution position, from ``analyze(run)``."""
    out = {}
    for run in runs.values():
        trials = analyze(run).trials
        run_id = run_content_id(run)
        for row in trials.itertuples(index=False):
            out[(run_id, str(row.variant_id), int(row.trial))] = int(row.execution_position)
    return out


def _got(trial_summary: pd.DataFrame) -> dict[tuple[str, str, int], int]:
    return {
        (str(r.run_id), str(r.variant_id), int(r.trial)): int(r.execution_position)
        for r in trial_summary.itertuples(index=False)
    }


@pytest.fixture(scope="module")
def runs(frames_run: ExperimentRun, legacy_run: ExperimentRun) -> dict[str, ExperimentRun]:
    return {"frames": frames_run, "legacy": legacy_run}


@pytest.fixture(scope="module")
def positions_archive(tmp_path_factory, runs: dict[str, ExperimentRun]) -> Archive:
    archive = Archive(tmp_path_factory.mktemp("positions") / "arc", durable=False)
    for i, run in enumerate(runs.values()):
        archive.add(run, run_at=f"2026-11-0{i + 1}")
    return archive


@pytest.mark.parametrize("where", list(SLICES))
@pytest.mark.parametrize("rollups", [True, False], ids=["rollups", "attempts"])
@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gives_the_single_run_position(
    positions_archive: Archive,
    runs: dict[str, ExperimentRun],
    engine: str,
    rollups: bool,
    where: str,
):
    expected = _expected(runs)
    got = _got(
        positions_archive.slice(**SLICES[where]).analyze(engine, rollups=rollups).trial_summary
    )
    assert len(got) == (len(expected) if where != "variants" else len(expected) * 2 // 3)
    assert got == {key: expected[key] for key in got}


@pytest.mark.parametrize("engine", ["numpy", "duckdb", "dask"])
def test_rollups_written_before_the_fix_give_it_too(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runs: dict[str, ExperimentRun],
    engine: str,
):
    """Rollups that took the position from a legacy run's ``run_order`` (the first row of
    the trial there) are corrected from the run's trials table when read."""
    old = archive_with_older_rollups(tmp_path / "old", monkeypatch, runs)
    expected = _expected(runs)
    for where in ("all", "variants"):
        result = old.slice(**SLICES[where]).analyze(engine)
        assert result.info["read"] == "rollups"
        got = _got(result.trial_summary)
        assert got == {key: expected[key] for key in got}


def test_add_rollups_takes_it_from_the_trials_table(tmp_path: Path, runs: dict[str, ExperimentRun]):
    from .test_rollups import strip_rollups

    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(runs["legacy"], run_at="2026-11-01")
    strip_rollups(archive)
    assert len(archive.add_rollups()) == 1
    result = archive.all().analyze("numpy")
    assert result.info["read"] == "rollups"
    assert _got(result.trial_summary) == _expected({"legacy": runs["legacy"]})


def _largest(source: pa.Table) -> pd.Series:
    """The largest ``run_order`` of each (variant, trial)'s rows, by pandas."""
    rows = source.to_pandas()
    return rows.groupby([rows["variant_id"].astype(str), "trial"])["run_order"].max()


def _positions(trials: pd.DataFrame) -> pd.Series:
    index = [trials["variant_id"].astype(str), trials["trial"]]
    return trials.set_index(index)["execution_position"]


def test_attempts_in_memory_take_the_largest_run_order_of_each_trial(legacy_run: ExperimentRun):
    """Without a trials table (an attempts table in memory), every engine and kernel
    method applies one rule: the largest ``run_order`` of the trial's rows."""
    frame = legacy_run.attempts.assign(run_id=pd.Categorical(["r"] * len(legacy_run.attempts)))
    table = pa.Table.from_pandas(frame, preserve_index=False).select(list(NEEDED_COLUMNS))
    # Rows shuffled and one dropped: neither a complete nor a sorted grid.
    sparse = table.take(np.random.default_rng(1).permutation(table.num_rows)[1:])
    for source in (table, sparse):
        want = _largest(source)
        assert want.tolist() != want.groupby(level=0).cumcount().tolist()  # not 0, 1, ...
        for engine in ENGINES:
            got = _positions(sufficient_stats(source, engine=engine).trials)
            assert got.tolist() == want.reindex(got.index).tolist(), engine
    layout = RunLayout(("r",), (legacy_run.experiment_id,), (legacy_run.manifest.variant_ids,))
    for method, source in (("grid", table), ("cube", sparse), ("bincount", sparse)):
        partial = run_partial(source, "r", legacy_run.manifest.variant_ids, method=method)
        got = _positions(assemble([partial], layout, "numpy").trials)
        assert got.tolist() == _largest(source).reindex(got.index).tolist(), method
