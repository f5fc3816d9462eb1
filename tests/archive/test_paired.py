"""Case-level paired comparisons across archived runs, checked against scipy's paired t
test and statsmodels' power solver on per-case rates taken from the attempts by hand, and
against ``experiment run``'s per-comparison numbers on the same run."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps
from statsmodels.stats.power import TTestPower

from agenticlens_frames.archive import Archive
from agenticlens_frames.archive.paired import (
    ARCHIVE_DIMENSIONS,
    PAIRED_DIFFERENCE_COLUMNS,
    mde_alpha,
    paired_differences,
)
from agenticlens_frames.frames import ExperimentRun


def _case_rates(run: ExperimentRun, variant: str) -> pd.Series:
    """The case pass rate by case id: passes over the evaluated attempts (a failed trial's
    left out)."""
    att = run.attempts[run.attempts["variant_id"].astype(str) == variant]
    att = att[att["status"].astype(str) != "trial_failed"]
    passed = att["passed"].map(lambda x: bool(x) if x is not None and x == x else False)
    return passed.groupby(att["case_id"].astype(str)).mean()


def _quality(st, info, **options) -> pd.DataFrame:
    """The pass-rate rows of :func:`paired_differences`."""
    frame = paired_differences(st, info, **options)
    return frame[frame["dimension"] == "quality"].reset_index(drop=True)


def _failed_trials(run: ExperimentRun, variant: str) -> int:
    att = run.attempts
    rows = att[(att["variant_id"].astype(str) == variant)]
    return int(rows.loc[rows["status"].astype(str) == "trial_failed", "trial"].nunique())


@pytest.mark.parametrize("engine", ["numpy", "duckdb", "pandas"])
def test_every_comparison_matches_a_paired_t_test_on_case_rates_by_hand(
    shared_archive: Archive, runs: dict[str, ExperimentRun], engine: str
):
    result = shared_archive.all().analyze(engine, confidence_level=0.9)
    got = result.paired_differences
    assert result.paired_differences is got  # kept
    assert list(got.columns) == PAIRED_DIFFERENCE_COLUMNS
    assert set(got["dimension"]) == set(ARCHIVE_DIMENSIONS)
    got = got[got["dimension"] == "quality"]
    by_id = {run.experiment_id: run for run in runs.values()}
    expected_rows = sum(len(r.manifest.variant_ids) - 1 for r in runs.values())
    assert len(got) == expected_rows
    degenerate_seen = 0
    for row in got.to_dict("records"):
        run = by_id[row["experiment_id"]]
        base = _case_rates(run, row["baseline_variant_id"])
        cand = _case_rates(run, row["candidate_variant_id"])
        both = base.index.intersection(cand.index)
        d = (cand.loc[both] - base.loc[both]).to_numpy()
        n = len(d)
        assert row["paired_cases"] == n == len(run.suite.cases)
        assert row["mean_difference"] == pytest.approx(d.mean(), abs=1e-12)
        assert row["baseline_mean"] == pytest.approx(base.loc[both].mean(), abs=1e-12)
        assert row["improved_cases"] == int((d > 0).sum())
        assert row["regressed_cases"] == int((d < 0).sum())
        if np.all(d == d[0]):
            degenerate_seen += 1
            assert row["degenerate"]
            assert row["p_value"] == (1.0 if d[0] == 0 else 2.0 ** (1 - n))
            continue
        test = sps.ttest_rel(cand.loc[both], base.loc[both])
        assert row["p_value"] == pytest.approx(test.pvalue, rel=1e-9)
        se = d.std(ddof=1) / math.sqrt(n)
        q = sps.t.ppf(0.95, n - 1)
        assert row["ci_low"] == pytest.approx(max(-1.0, d.mean() - q * se), abs=1e-12)
        assert row["ci_high"] == pytest.approx(min(1.0, d.mean() + q * se), abs=1e-12)
        # The smallest true difference found with 80% power at α = 1 − 0.9, one-sample
        # t power (the paired test is a one-sample test of the differences).
        effect = TTestPower().solve_power(nobs=n, alpha=0.1, power=0.8)
        # (statsmodels' root finder stops at a relative error of a few 1e-6)
        assert row["mde"] == pytest.approx(effect * d.std(ddof=1), rel=2e-5)
    assert got["confidence_level"].eq(0.9).all() and got.attrs["correction"] == "none"
    assert got["ci_method"].eq("t").all() and got["mde_alpha"].eq(0.1).all()
    assert degenerate_seen < len(got)  # the t branch ran


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_it_equals_experiment_runs_per_comparison_numbers(
    shared_archive: Archive, support_run: ExperimentRun, level: float
):
    """``experiment run``'s paired comparisons without a correction (per comparison), for
    the evaluators of the three dimensions: the same estimator on the same cases, a failed
    trial's attempts left out by both (retrieval-dense has one)."""
    from agenticlens_frames import paired_comparisons

    got = shared_archive.slice(experiments=support_run.experiment_id).analyze(
        "numpy", confidence_level=level
    )
    mine = got.paired_differences.set_index(["candidate_variant_id", "dimension"])
    run = replace(support_run, manifest=replace(support_run.manifest, comparisons=None))
    evaluators = {name: d.evaluator for name, d in ARCHIVE_DIMENSIONS.items()}
    theirs = paired_comparisons(
        run,
        correction="none",
        alpha=round(1 - level, 12),
        confidence_level=level,
        evaluators=evaluators,
    )
    theirs = theirs[theirs["dimension"].astype(str).isin(list(evaluators))]
    theirs = theirs.set_index(
        [theirs["candidate_variant_id"].astype(str), theirs["dimension"].astype(str)]
    )
    assert sorted(mine.index) == sorted(theirs.index) and len(mine) == 12
    for key in theirs.index:
        for column in ("mean_difference", "ci_low", "ci_high", "p_value", "mde"):
            assert mine.loc[key, column] == pytest.approx(
                theirs.loc[key, column], rel=1e-12, abs=1e-15
            ), (key, column)
        for column in ("paired_cases", "improved_cases", "regressed_cases"):
            other = column.replace("cases", "items")
            assert mine.loc[key, column] == theirs.loc[key, other], (key, column)
        assert not mine.loc[key, "failed_counted_as_failures"]
        variant = key[0]
        trials = len(support_run.suite.cases) * (
            _failed_trials(support_run, variant)
            + _failed_trials(support_run, support_run.manifest.baseline_variant_id)
        )
        assert mine.loc[key, "unevaluated_attempts"] == trials
    assert mine["unevaluated_attempts"].gt(0).any()  # the failed trial was left out
    latency = mine.xs("latency", level="dimension")
    assert not latency["higher_is_better"].any() and latency["unit"].eq("ms").all()


def test_a_candidate_whose_baseline_is_not_in_the_slice_gets_no_row(shared_archive: Archive):
    sl = shared_archive.slice(retrieval="dense")
    assert sl.analyze("numpy").paired_differences.empty
    kept = shared_archive.slice(retrieval="dense", include_baseline=True).analyze("numpy")
    pp = kept.paired_differences
    pp = pp[pp["dimension"] == "quality"]
    assert set(pp["candidate_variant_id"]) == {"retrieval-dense"}
    assert len(pp) == 2  # one per support run


def test_cases_only_one_arm_attempted_are_counted_and_left_out(
    shared_archive: Archive, support_run: ExperimentRun
):
    """A case is paired only when both arms have attempts there: drop the baseline's rows
    of two cases and they move to ``candidate_only_cases``."""
    sl = shared_archive.slice(experiments=support_run.experiment_id)
    st = sl.stats("numpy")
    info = sl.variant_info()
    full = _quality(st, info)
    cases = st.cases
    base_rows = cases["variant_id"].astype(str) == support_run.manifest.baseline_variant_id
    dropped = base_rows & cases["case_index"].isin([0, 3])
    st.cases = cases[~dropped].reset_index(drop=True)
    fewer = _quality(st, info)
    assert (fewer["paired_cases"] == full["paired_cases"] - 2).all()
    assert (fewer["candidate_only_cases"] == 2).all() and (fewer["baseline_only_cases"] == 0).all()
    assert not np.allclose(fewer["mean_difference"], full["mean_difference"])


def test_bad_levels_are_refused(shared_archive: Archive):
    from agenticlens_frames.errors import InputError

    sl = shared_archive.all()
    with pytest.raises(InputError, match="power"):
        _quality(sl.stats("numpy"), sl.variant_info(), power=1.0)


def test_case_rows_in_any_order_give_the_same_comparisons(shared_archive: Archive):
    """The engines give case rows in (run, variant) order; shuffled rows take the sorting
    path and must pair the same cases."""
    sl = shared_archive.all()
    st = sl.stats("numpy")
    info = sl.variant_info()
    ordered = _quality(st, info)
    st.cases = st.cases.sample(frac=1.0, random_state=3).reset_index(drop=True)
    shuffled = _quality(st, info)
    numeric = ["mean_difference", "ci_low", "ci_high", "p_value", "mde"]
    np.testing.assert_allclose(shuffled[numeric], ordered[numeric], rtol=1e-12)
    assert shuffled["paired_cases"].tolist() == ordered["paired_cases"].tolist()


@pytest.mark.parametrize(
    "filters",
    [
        {"tags": "refund", "include_baseline": True},
        {"retrieval": "dense", "include_baseline": True, "tags": "refund"},
        {"model": "gpt-large", "include_baseline": True},
        {"variants": ["baseline", "prompt-v2"], "since": "2026-10-01"},
        {"experiments": "synthetic*"},
    ],
)
@pytest.mark.parametrize("engine", ["numpy", "duckdb"])
def test_any_slice_matches_a_groupby_of_its_own_attempts(
    shared_archive: Archive, filters: dict, engine: str
):
    """Whatever the slice (a tag filter makes the engines read attempts, not rollups), each
    comparison is the paired t test of the evaluated per-case pass rates of the slice's
    own attempts, taken with a pandas groupby."""
    sl = shared_archive.slice(**filters)
    got = sl.analyze(engine).paired_differences
    got = got[got["dimension"] == "quality"]
    att = sl.frame("attempts")
    att = att[att["status"].astype(str) != "trial_failed"]
    att = att.assign(ok=att["passed"].fillna(False).astype(bool))
    rates = att.groupby(
        [att["run_id"].astype(str), att["variant_id"].astype(str), att["case_id"].astype(str)]
    )["ok"].mean()
    baselines = {r.run_id: r.baseline_variant_id for r in sl.records()}
    expected = 0
    for run_id, base in baselines.items():
        for variant in rates.loc[run_id].index.get_level_values(0).unique():
            if variant == base or base not in rates.loc[run_id].index.get_level_values(0):
                continue
            expected += 1
            row = got[(got["run_id"] == run_id) & (got["candidate_variant_id"] == variant)]
            assert len(row) == 1
            row = row.iloc[0]
            a, b = rates.loc[(run_id, base)], rates.loc[(run_id, variant)]
            both = a.index.intersection(b.index)
            d = (b.loc[both] - a.loc[both]).to_numpy()
            assert row["paired_cases"] == len(d)
            assert row["mean_difference"] == pytest.approx(d.mean(), abs=1e-12)
            if len(d) > 1 and not np.all(d == d[0]):
                test = sps.ttest_rel(b.loc[both], a.loc[both])
                assert row["p_value"] == pytest.approx(test.pvalue, rel=1e-9)
    assert len(got) == expected > 0


@pytest.mark.parametrize("alpha", [0.95, 0.6, 0.0])
def test_an_alpha_outside_the_packages_rule_is_refused(shared_archive: Archive, alpha: float):
    """The MDE's alpha took any number in (0, 1), though every other alpha of the package
    must lie in (0, 0.5]: alpha=0.95, the confidence level given for alpha, gave the effect
    found at alpha 0.95."""
    from agenticlens_frames.errors import InputError

    sl = shared_archive.all()
    with pytest.raises(InputError, match=r"^alpha: expected a number > 0 and <= 0\.5"):
        _quality(sl.stats("numpy"), sl.variant_info(), alpha=alpha)


def test_the_largest_alpha_is_a_half(shared_archive: Archive):
    sl = shared_archive.all()
    got = _quality(sl.stats("numpy"), sl.variant_info(), alpha=0.5)
    assert got["mde_alpha"].eq(0.5).all() and got["mde"].notna().any()
    # the lowest confidence level the archive commands take (0.5) gives that alpha too
    assert mde_alpha(0.5) == 0.5


def test_a_power_not_above_alpha_has_no_mde(shared_archive: Archive):
    """A power of 30 % at alpha 0.5 gave every MDE as 0.0 (the root search's "a zero
    change is found that often"), where experiment run's comparisons and the plans give
    none (NaN). The same slice at 80 % power has MDEs, each solving statsmodels' power."""
    sl = shared_archive.all()
    low = _quality(sl.stats("numpy"), sl.variant_info(), alpha=0.5, power=0.3)
    assert len(low) > 0 and low["mde"].isna().all()
    assert _quality(sl.stats("numpy"), sl.variant_info(), alpha=0.5, power=0.5)["mde"].isna().all()
    usual = _quality(sl.stats("numpy"), sl.variant_info(), alpha=0.5, power=0.8)
    row = usual[np.isfinite(usual["mde"])].iloc[0]
    sd = row["standard_error"] * math.sqrt(row["paired_cases"])
    reached = TTestPower().power(
        effect_size=row["mde"] / sd, nobs=row["paired_cases"], alpha=0.5, alternative="two-sided"
    )
    assert reached == pytest.approx(0.8, abs=1e-6)


def test_a_confidence_level_below_a_half_is_refused_for_the_mdes_alpha(
    shared_archive: Archive,
):
    """analyze(confidence_level=0.3) gave every MDE at alpha 0.7 (1 - the level)."""
    from agenticlens_frames.errors import InputError

    with pytest.raises(InputError) as caught:
        shared_archive.all().analyze(engine="numpy", confidence_level=0.3)
    assert caught.value.location == "confidence_level"
    assert "alpha, 1 - confidence level, would be 0.7" in str(caught.value)
