"""Result frames from sufficient statistics, checked against the single-experiment
analysis (itself checked against AgenticLens 0.10) and against pandas by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.archive import Archive
from agenticlens_frames.archive.results import factor_levels
from agenticlens_frames.frames import ExperimentRun

from ..conftest import example_without_latency


def _by(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for key in keys:
        out[key] = out[key].astype(str)
    return out.set_index(keys).sort_index()


def _assert_close(mine: pd.DataFrame, theirs: pd.DataFrame, columns: list[str]) -> None:
    assert list(mine.index) == list(theirs.index)
    for column in columns:
        a, b = mine[column], theirs[column]
        numeric = pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b)
        if not numeric or pd.api.types.is_bool_dtype(a) or pd.api.types.is_bool_dtype(b):
            assert a.astype(object).tolist() == b.astype(object).tolist(), column
        else:
            np.testing.assert_allclose(
                a.to_numpy(float), b.to_numpy(float), rtol=1e-9, atol=1e-12, err_msg=column
            )


def _assert_comparisons_match(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The archive's comparisons are the single-experiment analysis' (same rows, deltas,
    relative deltas and flags, NaN and NA where a delta is unknown)."""
    mine = _by(got, ["candidate_variant_id"])
    theirs = _by(expected, ["candidate_variant_id"])
    numeric = [c for c in theirs.columns if c.endswith(("_delta", "_relative"))]
    flags = [c for c in theirs.columns if c.endswith("_regressed")]
    _assert_close(mine, theirs, numeric + flags)
    # The package's pooled z-test, kept as a p-value under a name that says so and
    # starred nowhere: the archive has no file that needs the package's flag.
    np.testing.assert_allclose(
        mine["pooled_p_value"], theirs["case_pass_rate_p_value"], rtol=1e-9, atol=1e-12
    )
    assert not {"statistically_significant", "case_pass_rate_p_value"} & set(mine.columns)
    assert mine["n_regressed_cases"].tolist() == theirs["regressed_case_ids"].map(len).tolist()
    assert mine["n_improved_cases"].tolist() == theirs["improved_case_ids"].map(len).tolist()
    assert mine["n_changed_factors"].tolist() == theirs["changed_factors"].map(len).tolist()


@pytest.mark.parametrize("name", ["support", "synthetic"])
@pytest.mark.parametrize("latency_missing", ["exclude", "zero"])
@pytest.mark.parametrize("engine", ["numpy", "duckdb"])
def test_one_run_matches_the_single_experiment_analysis(
    shared_archive: Archive,
    runs: dict[str, ExperimentRun],
    name: str,
    latency_missing: str,
    engine: str,
):
    run = runs[name]
    expected = analyze(run, latency_missing=latency_missing)
    got = shared_archive.slice(experiments=run.experiment_id).analyze(
        engine, pass_k=expected.pass_k, latency_missing=latency_missing
    )
    shared = [
        c
        for c in expected.cases.columns
        if c in got.case_matrix.columns and c not in ("variant_id", "case_id")
    ]
    _assert_close(
        _by(got.case_matrix, ["variant_id", "case_id"]),
        _by(expected.cases, ["variant_id", "case_id"]),
        shared,
    )
    shared = [
        c
        for c in expected.trials.columns
        if c in got.trial_summary.columns and c not in ("variant_id", "trial")
    ]
    _assert_close(
        _by(got.trial_summary, ["variant_id", "trial"]),
        _by(expected.trials, ["variant_id", "trial"]),
        shared,
    )
    shared = [
        c
        for c in expected.variants.columns
        if c in got.variant_summary.columns and c not in ("variant_id", "factors")
    ]
    assert len(shared) > 50
    _assert_close(
        _by(got.variant_summary, ["variant_id"]), _by(expected.variants, ["variant_id"]), shared
    )

    _assert_comparisons_match(got.comparisons, expected.comparisons)

    # Factor levels: the single-experiment frame drops one-level factors; ours keeps them.
    fl = got.factor_levels.set_index(["factor", "value"])
    ref = expected.factor_levels.set_index(["factor", "value"])
    fl = fl.loc[ref.index]
    pairs = {
        "mean_pass_rate": "mean_pass_rate",
        "mean_average_score": "mean_average_score",
        "mean_latency_ms": "mean_latency_ms",
        "mean_trial_success_rate": "mean_trial_success_rate",
    }
    for mine_col, ref_col in pairs.items():
        np.testing.assert_allclose(fl[mine_col], ref[ref_col], rtol=1e-9, equal_nan=True)
    assert fl["n_variants"].tolist() == ref["n_variants"].tolist()


def _variant_latency_by_hand(run: ExperimentRun) -> dict[str, float]:
    """Each variant's mean over its completed trials of the trial's mean known latency
    (answered attempts with a latency; a trial without one is left out), plain Python."""
    completed = {
        (str(v), int(t))
        for v, t, s in run.trials[["variant_id", "trial", "status"]].itertuples(index=False)
        if s == "succeeded"
    }
    known: dict[tuple[str, int], list[float]] = {key: [] for key in completed}
    rows = run.attempts[["variant_id", "trial", "status", "latency_ms"]].itertuples(index=False)
    for v, t, s, latency in rows:
        if (str(v), int(t)) in completed and s == "ok" and latency == latency:  # not NaN
            known[(str(v), int(t))].append(float(latency))
    means: dict[str, list[float]] = {}
    for (variant, _), values in known.items():
        if values:
            means.setdefault(variant, []).append(math.fsum(values) / len(values))
    return {
        str(v): math.fsum(means[str(v)]) / len(means[str(v)]) if str(v) in means else math.nan
        for v in run.variants["variant_id"]
    }


@pytest.mark.parametrize("unknown", ["prompt-v2", "baseline"])
@pytest.mark.parametrize("engine", ["numpy", "duckdb"])
def test_a_variant_without_a_known_latency_keeps_its_comparison(
    tmp_path: Path, unknown: str, engine: str
) -> None:
    """Fix B3 under the default policy: a variant logged without latencies (the candidate
    prompt-v2, or the baseline) has no known latency. The single-experiment analysis keeps
    its comparisons and leaves only the latency delta unknown (NaN, regressed NA), and
    its unknown latency neutral on the frontier; the archive dropped the comparisons (and
    the variant from the frontier). Now the archive's rows are the analysis', and the
    latency deltas it has equal a hand computation from the attempts."""
    folder = example_without_latency(tmp_path, unknown)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    expected = analyze(run)
    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(run)
    got = archive.all().analyze(engine, pass_k=expected.pass_k)
    assert len(got.comparisons) == len(run.variants) - 1 == len(expected.comparisons)
    _assert_comparisons_match(got.comparisons, expected.comparisons)
    latency = _variant_latency_by_hand(run)
    assert math.isnan(latency[unknown])
    base = str(run.manifest.baseline_variant_id)
    for row in got.comparisons.to_dict("records"):
        candidate = row["candidate_variant_id"]
        if unknown in (base, candidate):
            assert math.isnan(row["average_latency_ms_delta"]), candidate
            assert math.isnan(row["average_latency_ms_delta_relative"]), candidate
            assert pd.isna(row["average_latency_ms_regressed"]), candidate
        else:
            want = latency[candidate] - latency[base]
            assert row["average_latency_ms_delta"] == pytest.approx(want, rel=1e-9)
            assert row["average_latency_ms_regressed"] == (want / latency[base] > 0.05)
        # The other dimensions are compared as for any variant.
        assert not math.isnan(row["pass_rate_delta"]), candidate
    _assert_close(
        _by(got.variant_summary, ["variant_id"]),
        _by(expected.variants, ["variant_id"]),
        ["pareto_optimal", "average_latency_ms_count", "average_latency_ms_mean"],
    )


def test_factor_levels_across_runs_match_a_pandas_groupby(shared_archive: Archive):
    vs = shared_archive.all().analyze("numpy").variant_summary
    fl = factor_levels(vs).set_index(["factor", "value"])
    for factor in ("model", "retrieval", "memory"):
        column = (
            vs[f"factor_{factor}"].astype(object).where(vs[f"factor_{factor}"].notna(), "(unset)")
        )
        grouped = vs.assign(level=column).groupby("level")
        for level, group in grouped:
            row = fl.loc[(factor, level)]
            assert row["n_variants"] == len(group)
            assert row["n_runs"] == group["run_id"].astype(str).nunique()
            assert row["n_experiments"] == group["experiment_id"].astype(str).nunique()
            assert row["mean_pass_rate"] == pytest.approx(group["pass_rate_mean"].mean(), rel=1e-12)
            assert row["mean_pass_at_1"] == pytest.approx(group["pass_at_1"].mean(), rel=1e-12)
            attempts, passes = group["case_attempts"].sum(), group["case_passes"].sum()
            assert row["case_pass_rate"] == pytest.approx(passes / attempts)
            # Wilson interval by its textbook formula.
            z, p, n = 1.959963984540054, passes / attempts, attempts
            centre = (p + z * z / (2 * n)) / (1 + z * z / n)
            half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
            assert row["case_pass_rate_ci_low"] == pytest.approx(max(0.0, centre - half), rel=1e-9)
            assert row["case_pass_rate_ci_high"] == pytest.approx(min(1.0, centre + half), rel=1e-9)
    by_experiment = factor_levels(vs, by=("experiment_id",))
    assert set(by_experiment.columns) >= {"factor", "value", "experiment_id", "n_variants"}
    assert by_experiment["n_experiments"].eq(1).all()


def test_variant_summary_spans_runs_with_run_keys(shared_archive: Archive):
    result = shared_archive.all().analyze("numpy", pass_k=[1, 2, 4])
    vs = result.variant_summary
    assert len(vs) == sum(len(r.variants) for r in shared_archive.records())
    assert vs.groupby("run_id", observed=True)["pareto_optimal"].any().all()
    assert {"pass_at_4", "pass_hat_4", "run_at", "factor_memory"} <= set(vs.columns)
    # pass@k with k above some cases' attempts is NaN for that variant, as the package does.
    assert vs.loc[vs["attempted_trials"] < 4, "pass_at_4"].isna().all()
    assert list(result.frames()) == [
        "case_matrix",
        "trial_summary",
        "variant_summary",
        "case_level_intervals",
        "paired_differences",
        "comparisons",
        "factor_levels",
    ]
    assert "ArchiveAnalysis(engine='numpy'" in repr(result)


@pytest.mark.parametrize("engine", ["numpy", "duckdb", "pandas"])
def test_case_level_intervals_match_the_single_experiment_headline(
    shared_archive: Archive, runs: dict[str, ExperimentRun], engine: str
):
    """The interval `archive summarize` prints is the one `experiment run` leads with, on
    the same cases, a failed trial's attempts left out by both (retrieval-dense has one);
    and it is the same model on per-case counts taken from the attempts by hand."""
    from agenticlens_frames import case_level_summary
    from agenticlens_frames.paired.verdicts import headline_pass_rates
    from agenticlens_frames.stats_paired import beta_binomial_interval

    support = runs["support"]
    result = shared_archive.all().analyze(engine, confidence_level=0.9)
    got = result.case_level_intervals
    assert result.case_level_intervals is got  # kept
    assert len(got) == len(result.variant_summary)
    assert got["method"].eq("beta_binomial").all() and got["confidence_level"].eq(0.9).all()
    assert not got["failed_counted_as_failures"].any()
    mine = got[got["experiment_id"] == support.experiment_id].set_index("variant_id")
    headline = headline_pass_rates(case_level_summary(support, confidence_level=0.9))
    headline = headline.set_index(headline["variant_id"].astype(str))
    att = support.attempts
    for variant in support.manifest.variant_ids:
        row = mine.loc[variant]
        for column, theirs in (("pass_rate", "estimate"), ("ci_low", "ci_low")):
            assert row[column] == pytest.approx(headline.loc[variant, theirs], rel=1e-12)
        assert row["ci_high"] == pytest.approx(headline.loc[variant, "ci_high"], rel=1e-12)
        assert row["n_attempts"] == headline.loc[variant, "n_attempts"]
        rows = att[att["variant_id"].astype(str) == variant]
        failed = rows["status"].astype(str) == "trial_failed"
        assert row["unevaluated_attempts"] == int(failed.sum())
        rows = rows[~failed]
        passes = rows.groupby(rows["case_id"].astype(str))["passed"].agg(
            lambda s: sum(bool(x) for x in s)
        )
        attempts = rows.groupby(rows["case_id"].astype(str)).size()
        expected = beta_binomial_interval(passes, attempts.loc[passes.index], 0.9)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(
            (expected.ci_low, expected.ci_high), rel=1e-12
        )
        assert row["n_cases"] == len(passes) and row["n_attempts"] == len(rows)
        # wider than the pooled Wilson interval of the same attempts
        vs = result.variant_summary
        same = vs["experiment_id"].astype(str) == support.experiment_id
        pooled = vs[same & (vs["variant_id"] == variant)].iloc[0]
        if not failed.any():  # (otherwise the pooled one counts other attempts)
            assert row["ci_high"] - row["ci_low"] > (
                pooled["case_pass_rate_ci_high"] - pooled["case_pass_rate_ci_low"]
            )
    assert mine.index.tolist() == list(support.manifest.variant_ids)
    assert mine["unevaluated_attempts"].gt(0).any()  # the failed trial was left out


def test_analysis_frames_write_to_parquet(shared_archive: Archive, tmp_path):
    result = shared_archive.slice(tags="refund").analyze("numpy")
    out = result.to_parquet(tmp_path / "frames")
    back = pd.read_parquet(out / "variant_summary.parquet")
    assert len(back) == len(result.variant_summary)
    assert (out / "runs.parquet").exists()


def test_the_case_matrix_is_built_on_first_use_and_the_summary_does_not_need_it(
    shared_archive: Archive,
):
    """The variant summary's case-level numbers (pass@k means, consistency) come from
    attempts and passes, not from the case matrix's columns; against a plain loop over
    the matrix built afterwards."""
    result = shared_archive.all().analyze("numpy", pass_k=[1, 3])
    assert result._case_matrix is None
    cm = result.case_matrix
    assert result.case_matrix is cm  # kept
    vs = result.variant_summary
    for row in vs.itertuples(index=False):
        rows = cm[(cm["run_id"] == row.run_id) & (cm["variant_id"] == row.variant_id)]
        for name in ("pass_at_1", "pass_hat_3"):
            values = rows[name].tolist()
            want = math.fsum(values) / len(values) if not any(map(math.isnan, values)) else None
            got = getattr(row, name)
            assert (want is None and math.isnan(got)) or got == pytest.approx(want, rel=1e-12)
        assert row.consistency_rate == pytest.approx(rows["consistent"].mean(), rel=1e-12)


def test_factor_levels_say_when_they_pool_runs_of_different_suites(
    shared_archive: Archive, support_run: ExperimentRun, tmp_path
):
    """The factor levels average pass rates over every run's variants: over different
    suites, or one suite whose cases changed without a new version, they average over
    different cases. That used to go unsaid."""
    records = shared_archive.records()
    suites = sorted({f"{r.suite_name}@{r.suite_version}" for r in records})
    assert len(suites) == 2  # the example's suite (twice) and the synthetic one
    notes = shared_archive.all().analyze(engine="numpy").factor_levels.attrs["notes"]
    assert len(notes) == 1 and notes[0].startswith(
        f"the factor levels pool runs of {len(suites)} suites"
    )
    assert all(suite in notes[0] for suite in suites)
    one_suite = shared_archive.slice(experiments="support-*").analyze(engine="numpy")
    assert one_suite.factor_levels.attrs["notes"] == []

    # The example's suite again, under its name and version, with only its refund cases.
    archive = Archive(tmp_path / "arc", durable=False)
    archive.add(support_run, run_at="2026-10-20")
    refund = shared_archive.slice(experiments="support-agent-upgrade@1", tags="refund")
    archive.add(refund.to_run(), run_at="2026-10-21")
    cases = sorted(r.counts["cases"] for r in archive.records())
    assert cases[0] < cases[1] == support_run.cases.shape[0]
    (note,) = archive.all().analyze(engine="numpy").factor_levels.attrs["notes"]
    suite = f"{support_run.suite.name}@{support_run.suite.version}"
    assert note.startswith(f"suite {suite} has {cases[0]} cases in one run, {cases[1]} in")


@pytest.mark.parametrize("frame", ["comparisons", "paired_differences"])
def test_a_slice_without_comparisons_gives_the_comparison_frames_their_dtypes(
    shared_archive: Archive, frame: str
):
    """A slice that holds no candidate beside its baseline gives empty comparison frames;
    they came back with object (or float) columns, so concatenating them with other
    slices' frames turned floats into objects."""
    full = getattr(shared_archive.all().analyze(engine="numpy"), frame)
    empty = getattr(shared_archive.slice(retrieval="dense").analyze(engine="numpy"), frame)
    assert len(full) and not len(empty)
    assert empty.dtypes.astype(str).to_dict() == full.dtypes.astype(str).to_dict()
    assert "object" not in set(empty.dtypes.astype(str))
    # (categorical run and experiment ids of different slices concatenate as objects, as
    # pandas concatenates any two categoricals of different categories)
    kept = [c for c in full.columns if full[c].dtype != "category"]
    both = pd.concat([empty[kept], full[kept]], ignore_index=True)
    assert both.dtypes.astype(str).to_dict() == full[kept].dtypes.astype(str).to_dict()


def test_factor_levels_say_when_runs_of_one_suite_had_different_evaluator_versions(
    synthetic_run: ExperimentRun, tmp_path
):
    """A custom evaluator (a judge) upgraded between two runs of one suite scores them
    differently; the factor levels pooled both without a word, and nothing in the archive
    said which version had scored which run."""
    from dataclasses import replace

    archive = Archive(tmp_path / "arc", durable=False)
    for day, version in ((1, "1.0"), (2, "2.0")):
        run = replace(synthetic_run, evaluator_versions={"judge": version, "rubric": "3"})
        archive.add(run, run_at=f"2026-11-0{day}")
    assert [r.evaluators for r in archive.records()] == [
        {"judge": "1.0", "rubric": "3"},
        {"judge": "2.0", "rubric": "3"},
    ]
    notes = archive.all().analyze(engine="numpy").factor_levels.attrs["notes"]
    suite = f"{synthetic_run.suite.name}@{synthetic_run.suite.version}"
    assert notes == [
        f"suite {suite}'s runs were scored by different evaluator versions "
        "(judge 1.0, rubric 3; judge 2.0, rubric 3): their pass rates are not on one scale"
    ]
    one = archive.slice(since="2026-11-02").analyze(engine="numpy")
    assert one.factor_levels.attrs["notes"] == []


def test_factor_levels_called_on_the_summary_notes_what_it_pools(shared_archive: Archive):
    """``factor_levels(result.variant_summary, by=...)`` — the call docs/archives.md shows
    for one row per experiment — attached no note, while the analysis's own frame did:
    the notes now come from factor_levels, for the runs (and groups) it is given."""
    from collections import Counter

    records = shared_archive.records()
    suite_of = {r.run_id: f"{r.suite_name}@{r.suite_version}" for r in records}
    counts = Counter(suite_of.values())
    assert len(counts) == 2
    listed = ", ".join(f"{s}: {n} run" + "s" * (n != 1) for s, n in sorted(counts.items()))
    pooled = (
        f"the factor levels pool runs of 2 suites ({listed}): their means and pooled rates "
        "average over different cases"
    )
    vs = shared_archive.all().analyze(engine="numpy").variant_summary
    assert factor_levels(vs).attrs["notes"] == [pooled]
    # One suite per experiment (from the catalog): split by experiment, nothing is pooled.
    per_experiment = {r.experiment_id: set() for r in records}
    for r in records:
        per_experiment[r.experiment_id].add(suite_of[r.run_id])
    assert all(len(s) == 1 for s in per_experiment.values())
    assert factor_levels(vs, by=("experiment_id",)).attrs["notes"] == []
    # Split by a column every run has both values of: each group pools both suites.
    notes = factor_levels(vs, by=("is_baseline",)).attrs["notes"]
    assert notes == [f"is_baseline=False: {pooled}", f"is_baseline=True: {pooled}"]
    # A summary filtered to one suite's runs pools nothing.
    support = vs[vs["experiment_id"].astype(str).str.startswith("support-")]
    assert factor_levels(support).attrs["notes"] == []


def test_the_python_api_notes_old_single_variant_runs_as_summarize_does(
    tmp_path, support_run: ExperimentRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`archive summarize` names the runs archived before add refused single-variant runs
    (they compare nothing); the Python API gave the same frames without a word. The paired
    differences and the verdicts now say it in ``attrs["notes"]``, as the factor levels
    and the verdicts say theirs."""
    from agenticlens_frames.archive import store

    archive = Archive(tmp_path / "arc")
    archive.add(support_run, run_at="2026-10-01")
    one = archive.slice(variants="baseline").to_run()
    assert len(one.manifest.variants) == 1
    monkeypatch.setattr(store, "_check_shape", lambda run: None)  # as add was before
    old = archive.add(one, run_at="2026-08-01").record
    said = (
        f"1 run(s) hold a single variant ({old.run_id[:8]} of {old.experiment_id}; archived "
        "before such runs were refused): they have no paired comparison and no verdict, "
        "only their variant's summary"
    )
    paired = archive.all().analyze(engine="numpy").paired_differences
    assert paired.attrs["notes"] == [said]
    assert old.run_id not in set(paired["run_id"].astype(str))  # no row: it compares nothing
    assert archive.all().verdicts().attrs["notes"] == [said]
    # A slice without it says nothing.
    full = archive.slice(runs=[r.run_id for r in archive.records() if r.run_id != old.run_id])
    assert full.analyze(engine="numpy").paired_differences.attrs["notes"] == []
    assert full.verdicts().attrs["notes"] == []


def test_the_result_display_says_what_was_analysed_and_where_the_verdicts_are(
    shared_archive: Archive, runs: dict[str, ExperimentRun], tmp_path: Path
) -> None:
    """It gave the engine, runs, variants and case rows: not the attempts analysed, not
    the slice's filters, and not that it holds no verdict (its paired differences are per
    comparison, its comparisons AgenticLens's pooled ones) nor where they are. An empty
    slice's result says the same, with zeros."""
    support = runs["support"]
    sl = shared_archive.slice(
        experiments=support.experiment_id, variants="prompt-v2", include_baseline=True
    )
    result = sl.analyze(engine="numpy")
    kept = support.attempts["variant_id"].astype(str).isin(["baseline", "prompt-v2"])
    assert repr(result) == (
        f"ArchiveAnalysis(engine='numpy', runs=1, variants=2, attempts={int(kept.sum())}, "
        f"case_rows={2 * len(support.cases)}, pass_k={sorted(support.manifest.pass_k)}; "
        f"experiments={support.experiment_id!r}, variants='prompt-v2', include_baseline=True; "
        "verdicts: the slice's .verdicts())"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert repr(Archive(empty).all().analyze(engine="numpy")) == (
        "ArchiveAnalysis(engine='numpy', runs=0, variants=0, attempts=0, case_rows=0, "
        "pass_k=[1]; no filter; verdicts: the slice's .verdicts())"
    )
