"""Attempts with status ``trial_failed`` are unevaluated wherever they sit: a trial that
failed as a whole in a run missing one of its rows, a trial that failed only in part.
Every engine, from the rollups or the attempts, against the same numbers taken from the
slice's attempts with plain pandas, and against ``analyze(run)`` on the same run."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.stats as sps

from agenticlens_frames import analyze, case_level_summary, load_experiment
from agenticlens_frames.archive import Archive, run_content_id
from agenticlens_frames.archive._scan import ROLLUP_TABLES
from agenticlens_frames.frames import ExperimentRun
from agenticlens_frames.paired.verdicts import headline_pass_rates
from agenticlens_frames.stats_paired import beta_binomial_interval

from .conftest import assert_matches_oracle

ENGINES = ["numpy", "pandas", "duckdb", "dask"]
#: Slices read from the rollups (whole runs, or some variants of them) and from the
#: attempts (a tag filter); the variant filter keeps both runs' baselines.
SLICES = {
    "all": {},
    "variants": {"variants": ["a", "b", "v00", "v01"]},
    "tags": {"tags": "x"},
}


@pytest.fixture(scope="module")
def gap_run(make_synthetic: Callable[..., Path], tmp_path_factory) -> ExperimentRun:
    """3 variants × 3 trials × 20 cases; v01's trial 3 failed as a whole (the runner
    recorded it so), and one attempt row of that trial is absent (the audit's repro:
    a run with gaps, as benchmarks/make_archive.py --drop writes)."""
    folder = tmp_path_factory.mktemp("gap") / "exp"
    shutil.copytree(make_synthetic(variants=3, trials=3, cases=20, seed=3), folder)
    recorded = json.loads((folder / "trials/v01.json").read_text(encoding="utf-8"))
    recorded["trials"] = recorded["trials"][:2]
    (folder / "trials/v01.json").write_text(json.dumps(recorded), encoding="utf-8")
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    a = run.attempts
    drop = (a["variant_id"] == "v01") & (a["trial"] == 3) & (a["case_index"] == 0)
    assert (a.loc[(a["variant_id"] == "v01") & (a["trial"] == 3), "status"] == "trial_failed").all()
    return dataclasses.replace(run, attempts=a[~drop].reset_index(drop=True))


def _failed(variant: str, trial: int, case: int) -> bool:
    """The partial run's failed attempts: part of b's trial 2 and of a's (the baseline's)
    trial 1, and the whole of c's trial 3."""
    return (
        (variant == "b" and trial == 2 and case < 5)
        or (variant == "a" and trial == 1 and case in (3, 7))
        or (variant == "c" and trial == 3)
    )


@pytest.fixture(scope="module")
def partial_run() -> ExperimentRun:
    """A run from frames (3 variants × 3 trials × 12 tagged cases) with trials that failed
    only in part, next to one that failed as a whole."""
    rng = np.random.default_rng(1)
    rows = []
    for variant in "abc":
        for trial in (1, 2, 3):
            for case in range(12):
                failed = _failed(variant, trial, case)
                passed = bool(rng.random() < 0.6) and not failed
                rows.append(
                    {
                        "variant_id": variant,
                        "trial": trial,
                        "case_id": f"c{case}",
                        "passed": passed,
                        "score": np.nan if failed else float(passed),
                        "latency_ms": np.nan if failed else float(rng.uniform(100, 900)),
                        "status": "trial_failed" if failed else "ok",
                    }
                )
    cases = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(12)],
            "tags": ["y" if i % 3 else "x" for i in range(12)],
        }
    )
    return ExperimentRun.from_frames(
        pd.DataFrame(rows), pd.DataFrame({"variant_id": list("abc")}), cases, name="partial"
    )


@pytest.fixture(scope="module")
def failed_archive(tmp_path_factory, gap_run: ExperimentRun, partial_run: ExperimentRun) -> Archive:
    archive = Archive(tmp_path_factory.mktemp("failed") / "arc", durable=False)
    archive.add(gap_run, run_at="2026-11-01")
    archive.add(partial_run, run_at="2026-11-02")
    return archive


def _evaluated(attempts: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """The evaluated attempts keyed by (run, variant, case) as strings, and how many
    attempts each (run, variant) left unevaluated."""
    att = attempts.assign(
        run=attempts["run_id"].astype(str),
        variant=attempts["variant_id"].astype(str),
        case=attempts["case_id"].astype(str),
        ok=attempts["passed"].astype(bool),
        failed=attempts["status"].astype(str) == "trial_failed",
    )
    unevaluated = att.groupby(["run", "variant"])["failed"].sum()
    return att[~att["failed"]], unevaluated


def _case_rates(evaluated: pd.DataFrame) -> pd.Series:
    return evaluated.groupby(["run", "variant", "case"])["ok"].mean()


@pytest.mark.parametrize("where", list(SLICES))
@pytest.mark.parametrize("rollups", [True, False], ids=["rollups", "attempts"])
@pytest.mark.parametrize("engine", ENGINES)
def test_case_level_intervals_leave_out_every_failed_attempt(
    failed_archive: Archive, engine: str, rollups: bool, where: str
):
    sl = failed_archive.slice(**SLICES[where])
    result = sl.analyze(engine, rollups=rollups, confidence_level=0.9)
    if where != "tags" and rollups and engine != "pandas":
        assert result.info["read"] == "rollups"
    got = result.case_level_intervals
    evaluated, unevaluated = _evaluated(sl.frame("attempts"))
    assert unevaluated.gt(0).sum() >= 2 and len(got) == len(unevaluated)
    for row in got.to_dict("records"):
        key = (row["run_id"], row["variant_id"])
        mine = evaluated[(evaluated["run"] == key[0]) & (evaluated["variant"] == key[1])]
        by_case = mine.groupby("case")["ok"]
        assert row["unevaluated_attempts"] == unevaluated.loc[key], key
        assert row["n_attempts"] == len(mine), key
        assert row["n_cases"] == by_case.ngroups, key
        assert row["pass_rate"] == pytest.approx(mine["ok"].mean(), rel=1e-12), key
        expected = beta_binomial_interval(by_case.sum(), by_case.size(), 0.9)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(
            (expected.ci_low, expected.ci_high), rel=1e-12
        ), key
    assert not got["failed_counted_as_failures"].any()  # (it never is now)


@pytest.mark.parametrize("where", list(SLICES))
@pytest.mark.parametrize("rollups", [True, False], ids=["rollups", "attempts"])
@pytest.mark.parametrize("engine", ENGINES)
def test_paired_differences_leave_out_every_failed_attempt(
    failed_archive: Archive, engine: str, rollups: bool, where: str
):
    sl = failed_archive.slice(**SLICES[where])
    every = sl.analyze(engine, rollups=rollups).paired_differences
    got = every[every["dimension"] == "quality"].set_index(["run_id", "candidate_variant_id"])
    evaluated, unevaluated = _evaluated(sl.frame("attempts"))
    rates = _case_rates(evaluated)
    baselines = {r.run_id: r.baseline_variant_id for r in sl.records()}
    expected_rows = 0
    for (run, variant), _ in unevaluated.items():
        base = baselines[run]
        if variant == base:
            continue
        expected_rows += 1
        row = got.loc[(run, variant)]
        a, b = rates.loc[(run, base)], rates.loc[(run, variant)]
        both = a.index.intersection(b.index)
        d = (b.loc[both] - a.loc[both]).to_numpy()
        assert row["paired_cases"] == len(d), (run, variant)
        assert row["mean_difference"] == pytest.approx(d.mean(), abs=1e-12), (run, variant)
        assert row["unevaluated_attempts"] == (
            unevaluated.loc[(run, base)] + unevaluated.loc[(run, variant)]
        )
        assert row["p_value"] == pytest.approx(
            sps.ttest_rel(b.loc[both], a.loc[both]).pvalue, rel=1e-9
        )
    assert len(got) == expected_rows > 0
    assert not every["failed_counted_as_failures"].any()  # (it never is now)


def test_the_audit_repro_gives_the_complete_runs_numbers(
    failed_archive: Archive, gap_run: ExperimentRun
):
    """v01's pass rate over its 40 evaluated attempts (0.7000), its 19 failed attempts
    unevaluated: not 0.4746 over 59 as when they counted as failures."""
    row = failed_archive.slice(variants="v01").analyze("numpy").case_level_intervals.iloc[0]
    att = gap_run.attempts
    v01 = att[(att["variant_id"] == "v01") & (att["status"] != "trial_failed")]
    assert (row["n_attempts"], row["unevaluated_attempts"]) == (40, 19)
    assert row["pass_rate"] == pytest.approx(v01["passed"].mean(), rel=1e-12)


def _keyed(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for key in keys:
        out[key] = out[key].astype(str)
    return out.set_index(keys).sort_index()


@pytest.mark.parametrize("rollups", [True, False], ids=["rollups", "attempts"])
@pytest.mark.parametrize("engine", ENGINES)
def test_trials_and_variants_match_the_single_run_analysis(
    failed_archive: Archive,
    gap_run: ExperimentRun,
    partial_run: ExperimentRun,
    engine: str,
    rollups: bool,
):
    """A trial failed as a whole (every one of its rows trial_failed, some rows absent or
    not) is failed; one failed in part completed, its failed attempts counted as cases
    that did not pass, as ``analyze(run)`` counts them; the case-level headline is
    ``experiment run``'s."""
    # A run from frames has no checks table: analyze(run) gives its trials an average
    # check value of 0 where the archive takes Σ score_sum / Σ n_checks (and the Pareto
    # front follows). That difference is not about failed trials; it is left out here.
    unchecked = ("average_score", "pareto_optimal")
    for run in (gap_run, partial_run):
        expected = analyze(run)
        got = failed_archive.slice(experiments=run.experiment_id).analyze(
            engine, rollups=rollups, pass_k=expected.pass_k
        )
        trials = _keyed(got.trial_summary, ["variant_id", "trial"])
        theirs = _keyed(expected.trials, ["variant_id", "trial"])
        assert list(trials.index) == list(theirs.index)
        att = run.attempts.assign(failed=run.attempts["status"] == "trial_failed")
        whole = att.groupby(
            [att["variant_id"].astype(str), att["trial"].astype(str)], observed=True
        )["failed"].all()
        assert (trials["status"] == "failed").tolist() == whole.reindex(trials.index).tolist()
        for column in theirs.columns:
            if column in trials.columns and not (
                column.startswith(unchecked) and run is partial_run
            ):
                a, b = trials[column], theirs[column]
                if pd.api.types.is_float_dtype(b):
                    np.testing.assert_allclose(a, b, rtol=1e-9, err_msg=column)
                else:
                    assert a.astype(str).tolist() == b.astype(str).tolist(), column
        variants = _keyed(got.variant_summary, ["variant_id"])
        theirs = _keyed(expected.variants, ["variant_id"])
        shared = [
            c
            for c in theirs.columns
            if c in variants.columns
            and c not in ("factors", "flaky_case_ids")
            and pd.api.types.is_numeric_dtype(theirs[c])
            and not (c.startswith(unchecked) and run is partial_run)
        ]
        assert {"completed_trials", "failed_trials", "pass_rate_mean", "case_pass_rate"} <= set(
            shared
        )
        np.testing.assert_allclose(
            variants[shared].to_numpy(float), theirs[shared].to_numpy(float), rtol=1e-9
        )
        assert len(shared) > 40
        headline = headline_pass_rates(case_level_summary(run))
        headline = headline.set_index(headline["variant_id"].astype(str))
        mine = got.case_level_intervals.set_index("variant_id")
        for variant in run.manifest.variant_ids:
            assert mine.loc[variant, "pass_rate"] == pytest.approx(
                headline.loc[variant, "estimate"], rel=1e-12
            )
            assert mine.loc[variant, "n_attempts"] == headline.loc[variant, "n_attempts"]


def _written_before_the_case_count(table_name: str, table: pa.Table) -> pa.Table:
    return table.drop_columns(["failed_attempts"]) if table_name == "case_stats" else table


def archive_with_older_rollups(
    folder: Path, monkeypatch: pytest.MonkeyPatch, runs: dict[str, ExperimentRun]
) -> Archive:
    """An archive whose rollups are as written before the case rollups counted failed
    attempts: no ``failed_attempts`` column in ``case_stats``, and each trial's execution
    position as the kernel took it from the attempts."""
    from agenticlens_frames.archive import store

    original = store.rollup_tables
    monkeypatch.setattr(
        store,
        "rollup_tables",
        lambda partial: {
            name: _written_before_the_case_count(name, table)
            for name, table in original(partial).items()
        },
    )
    monkeypatch.setattr(store, "with_listed_positions", lambda partial, *_: partial)
    archive = Archive(folder, durable=False)
    for i, run in enumerate(runs.values()):
        archive.add(run, run_at=f"2026-11-0{i + 1}")
    monkeypatch.undo()
    for record in archive.records():
        assert "failed_attempts" not in pq.read_schema(record.path / "case_stats.parquet").names
    return archive


@pytest.mark.parametrize("engine", ["numpy", "duckdb", "dask"])
def test_rollups_written_before_the_case_count_read_the_same(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gap_run: ExperimentRun,
    partial_run: ExperimentRun,
    synthetic_run: ExperimentRun,
    failed_archive: Archive,
    engine: str,
):
    """Runs archived before the fix are still read correctly: the rollups of a run with no
    failed attempt say it has none; the others' counts are taken from their attempts
    (only theirs); alone, or next to runs with current rollups or none ("mixed")."""
    from agenticlens_frames.archive import _rollup

    runs = {"gap": gap_run, "partial": partial_run, "clean": synthetic_run}
    old = archive_with_older_rollups(tmp_path / "old", monkeypatch, runs)
    read: list[str] = []
    counted = _rollup._failed_from_attempts
    monkeypatch.setattr(
        _rollup,
        "_failed_from_attempts",
        lambda scan, *args: read.append(scan.run_id) or counted(scan, *args),
    )
    stats = old.all().stats(engine)
    assert stats.info["read"] == "rollups"
    ids = {name: run_content_id(run) for name, run in runs.items()}
    assert sorted(read) == sorted([ids["gap"], ids["partial"]])  # not the clean run's
    assert_matches_oracle(stats, old.all().frame("attempts"))
    for where in ("all", "variants"):
        sl = old.slice(**SLICES[where])
        pd.testing.assert_frame_equal(
            sl.analyze(engine).case_level_intervals,
            sl.analyze(engine, rollups=False).case_level_intervals,
            rtol=1e-9,
        )
    current = failed_archive.all().analyze(engine)
    older = old.slice(runs=[r.run_id for r in failed_archive.records()]).analyze(engine)
    for name in ("case_level_intervals", "paired_differences", "trial_summary"):
        pd.testing.assert_frame_equal(
            _plain(getattr(older, name)), _plain(getattr(current, name)), rtol=1e-9, obj=name
        )
    # Mixed: the gap run with current rollups, the partial one with none, the clean one
    # with older rollups.
    mixed = archive_with_older_rollups(tmp_path / "mixed", monkeypatch, runs)
    records = {r.run_id: r for r in mixed.records()}
    shutil.rmtree(records[ids["gap"]].path)
    assert mixed.add(gap_run, run_at=records[ids["gap"]].run_at).added
    _strip_rollups_of(records[ids["partial"]].path)
    stats = mixed.all().stats(engine)
    assert stats.info["read"] == "mixed"
    assert_matches_oracle(stats, mixed.all().frame("attempts"))
    for name in ("case_level_intervals", "paired_differences", "trial_summary"):
        pd.testing.assert_frame_equal(
            _plain(getattr(mixed.all().analyze(engine), name)),
            _plain(getattr(mixed.all().analyze("numpy", rollups=False), name)),
            rtol=1e-9,
            obj=name,
        )


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """A result frame with its keys as text, rows in key order (slices of different
    archives number their runs differently)."""
    out = frame.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype):
            out[column] = out[column].astype(str)
    keys = [
        c
        for c in ("run_id", "variant_id", "candidate_variant_id", "dimension", "trial")
        if c in out.columns
    ]
    return out.sort_values(keys, kind="stable").reset_index(drop=True)


def _strip_rollups_of(folder: Path) -> None:
    """One run as archived before rollups existed (no files, no checksums)."""
    for name in ROLLUP_TABLES:
        (folder / f"{name}.parquet").unlink()
    path = folder / "_run.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("sha256", "counts"):
        for name in ROLLUP_TABLES:
            data[key].pop(name, None)
    data.pop("record_sha256")  # nor a digest of the record (6 December 2026)
    path.write_text(json.dumps(data), encoding="utf-8")
