"""Seeded Monte-Carlo checks that the case-level statistics hold their nominal levels.

Data-generating model (research/coverage-sim.md §1.1): each case has a pass probability
p_i ~ Beta(μκ, (1 − μ)κ) and each of T attempts passes independently with p_i, so the
intra-class correlation is 1/(1 + κ). Estimand: the task-distribution mean μ.

The replicate counts keep the file fast on a shared CI machine; with R replicates the
Monte-Carlo standard error of a rate near 5 % (95 %) is sqrt(0.05 · 0.95 / R), and every
band below is at least three of those wide.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from agenticlens_frames import stats, stats_paired

MU, KAPPA = 0.8, 2.0  # ICC = 1/(1 + κ) = 0.33: typical agent suites are this clustered


def draw_counts(rng: np.random.Generator, n: int, trials: int, p: np.ndarray | None = None):
    """Per-case pass probabilities and pass counts for one replicate."""
    if p is None:
        p = rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=n)
    return p, rng.binomial(trials, p)


def attempts_from_counts(counts: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-attempt 0/1 values and their case labels for the given pass counts."""
    y = (np.arange(trials)[None, :] < counts[:, None]).astype(float)
    return y.ravel(), np.repeat(np.arange(len(counts)), trials)


def mcse(rate: float, replicates: int) -> float:
    return math.sqrt(rate * (1 - rate) / replicates)


def test_case_level_intervals_cover_where_the_pooled_wilson_does_not() -> None:
    rng = np.random.default_rng(20261101)
    n, trials, replicates = 50, 10, 1500
    hits = {"t_case_means": 0, "wilson_effective_n": 0, "cr1": 0, "pooled_wilson": 0}
    for _ in range(replicates):
        _, counts = draw_counts(rng, n, trials)
        y, cases = attempts_from_counts(counts, trials)
        t = stats_paired.t_interval(counts / trials)
        hits["t_case_means"] += t.ci_low <= MU <= t.ci_high
        cr = stats_paired.cluster_robust_interval(y, cases)
        hits["cr1"] += cr.ci_low <= MU <= cr.ci_high
        vc = stats_paired.variance_components(y, cases)
        low, high = stats_paired.wilson_effective_interval(
            counts.sum(), n * trials, vc.effective_n, n, 0.95
        )
        hits["wilson_effective_n"] += low <= MU <= high
        low, high = stats.wilson_interval(int(counts.sum()), n * trials, 0.95)
        hits["pooled_wilson"] += float(low) <= MU <= float(high)
    coverage = {k: v / replicates for k, v in hits.items()}
    for method in ("t_case_means", "cr1", "wilson_effective_n"):
        assert 0.93 <= coverage[method] <= 0.97, coverage
    # attempts treated as independent: DEFF = 1 + 9 · 0.33 = 4, so about 2Φ(1.96/2) − 1 = 67 %
    assert coverage["pooled_wilson"] < 0.85, coverage


def _type_one(scenario: str, replicates: int, trials: int) -> tuple[float, float]:
    """Rejection rates of the paired t and the pooled two-proportion z under a null."""
    rng = np.random.default_rng(7 if scenario == "shared" else 8)
    n = 50
    paired = pooled = 0
    for _ in range(replicates):
        p, base = draw_counts(rng, n, trials)
        if scenario == "interaction":
            # same task-distribution mean, but half the cases get a fresh difficulty
            fresh = rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=n)
            p = np.where(rng.random(n) < 0.5, p, fresh)
        _, cand = draw_counts(rng, n, trials, p)
        result = stats_paired.paired_difference((cand - base) / trials)
        paired += result.p_value <= 0.05
        z = stats.two_proportion_z_test_array(cand.sum(), n * trials, base.sum(), n * trials)
        pooled += float(z) <= 0.05
    return paired / replicates, pooled / replicates


@pytest.mark.parametrize("scenario", ["shared", "interaction"])
def test_paired_t_holds_its_level_under_both_nulls(scenario: str) -> None:
    replicates = 2000
    paired, pooled = _type_one(scenario, replicates, trials=5)
    slack = 3 * mcse(0.05, replicates)
    assert 0.05 - slack <= paired <= 0.05 + slack, paired
    if scenario == "interaction":
        # the unpaired pooled z-test ignores case-by-variant interaction: far above 5 %
        assert pooled > 0.10, pooled
    else:
        # and with shared difficulty it is timid (the binomial variance is too large)
        assert pooled < 0.04, pooled


def test_holm_keeps_the_family_wise_error_with_seven_candidates() -> None:
    rng = np.random.default_rng(31)
    n, trials, candidates, replicates = 50, 5, 7, 5000
    p = rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=(replicates, 1, n))
    base = rng.binomial(trials, p[:, 0, :]) / trials
    cand = rng.binomial(trials, np.broadcast_to(p, (replicates, candidates, n))) / trials
    d = cand - base[:, None, :]
    # Vectorised paired t p-values; checked against paired_difference on a sample below.
    sd = d.std(axis=2, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d.mean(axis=2) / (sd / math.sqrt(n))
    pvalues = np.where(sd > 0, 2 * sps.t.sf(np.abs(t), n - 1), 1.0)
    for r in range(50):
        for c in range(candidates):
            want = stats_paired.paired_difference(d[r, c]).p_value
            assert pvalues[r, c] == pytest.approx(want, rel=1e-9, abs=1e-12)
    any_raw = np.mean((pvalues <= 0.05).any(axis=1))
    holm = np.array([stats_paired.adjust_p_values(row, "holm") for row in pvalues])
    bonferroni = np.array([stats_paired.adjust_p_values(row, "bonferroni") for row in pvalues])
    fwer_holm = float(np.mean((holm <= 0.05).any(axis=1)))
    fwer_bonferroni = float(np.mean((bonferroni <= 0.05).any(axis=1)))
    assert any_raw > 0.15  # uncorrected: about one run in four "finds" something
    assert fwer_holm <= 0.05 + 2 * mcse(0.05, replicates), fwer_holm
    # under the complete null Holm rejects exactly when Bonferroni does
    assert fwer_holm == fwer_bonferroni
