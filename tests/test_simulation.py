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


# --------------------------------------------------------------------------- the corners
# The full 135-cell grid is benchmarks/coverage.py; these are its hardest cells, small.


def _counts(rng: np.random.Generator, reps: int, n: int, trials: int, mu: float, icc: float):
    kappa = 1 / icc - 1
    p = rng.beta(mu * kappa, (1 - mu) * kappa, size=(reps, n))
    return p, rng.binomial(trials, p)


def _beta_binomial_coverage(counts: np.ndarray, trials: int, mu: float) -> tuple[float, ...]:
    """Coverage and misses below / above μ of the recommended interval, one call."""
    hist = np.stack([(counts == c).sum(axis=1) for c in range(trials + 1)], axis=1)
    low, high, _ = stats_paired.beta_binomial_bounds(
        hist, np.arange(trials + 1), np.full(trials + 1, trials)
    )
    s, total = counts.sum(axis=1), counts.shape[1] * trials
    low = np.where(s == 0, 0.0, np.minimum(low, s / total))
    high = np.where(s == total, 1.0, np.maximum(high, s / total))
    below, above = float(np.mean(high < mu)), float(np.mean(low > mu))
    return 1 - below - above, below, above


def test_vectorised_beta_binomial_matches_the_per_variant_interval() -> None:
    rng = np.random.default_rng(5)
    _, counts = _counts(rng, 6, 20, 5, 0.8, 0.33)
    hist = np.stack([(counts == c).sum(axis=1) for c in range(6)], axis=1)
    low, high, _ = stats_paired.beta_binomial_bounds(hist, np.arange(6), np.full(6, 5))
    for r in range(6):
        one = stats_paired.beta_binomial_interval(counts[r], np.full(20, 5))
        estimate = counts[r].sum() / 100
        assert one.ci_low == pytest.approx(min(low[r], estimate), abs=1e-12)
        assert one.ci_high == pytest.approx(max(high[r], estimate), abs=1e-12)


def test_recommended_interval_holds_in_the_corner_where_the_neff_wilson_does_not() -> None:
    # μ = 0.95, 20 cases, 10 attempts, ICC 0.67: Wilson on n_eff covers about 89 %
    rng = np.random.default_rng(20261203)
    reps, n, trials, mu = 3000, 20, 10, 0.95
    _, counts = _counts(rng, reps, n, trials, mu, 0.67)
    coverage, _, _ = _beta_binomial_coverage(counts, trials, mu)
    neff = 0
    for row in counts:
        y, cases = attempts_from_counts(row, trials)
        vc = stats_paired.variance_components(y, cases)
        low, high = stats_paired.wilson_effective_interval(
            row.sum(), n * trials, vc.effective_n, n, 0.95
        )
        neff += low <= mu <= high
    assert coverage >= 0.92, coverage
    assert neff / reps < 0.92 - 2 * mcse(0.92, reps), neff / reps


@pytest.mark.parametrize(("n", "trials", "mu", "icc"), [(50, 5, 0.8, 0.33), (20, 10, 0.5, 0.02)])
def test_recommended_interval_is_nominal_with_balanced_misses(
    n: int, trials: int, mu: float, icc: float
) -> None:
    rng = np.random.default_rng(11)
    reps = 3000
    _, counts = _counts(rng, reps, n, trials, mu, icc)
    coverage, below, above = _beta_binomial_coverage(counts, trials, mu)
    slack = 3 * mcse(0.95, reps)
    assert 0.93 - slack <= coverage <= 0.97 + slack, coverage
    # neither side takes much more than half of the misses
    assert abs(below - above) <= 0.02, (below, above)


def test_cluster_robust_interval_covers_with_a_topic_effect_the_case_intervals_do_not() -> None:
    # five topics whose mean pass rate varies: cases within a topic are not independent
    rng = np.random.default_rng(23)
    reps, n, topics, trials, mu = 1000, 200, 5, 5, 0.8
    topic_mu = rng.beta(mu * 10, (1 - mu) * 10, size=(reps, topics))
    labels = np.arange(n) % topics
    p = rng.beta(topic_mu[:, labels] * 2, (1 - topic_mu[:, labels]) * 2)
    counts = rng.binomial(trials, p)
    by_topic = by_case = 0
    for row in counts:
        cr = stats_paired.cluster_robust_interval(row / trials, labels)
        by_topic += cr.ci_low <= mu <= cr.ci_high
        t = stats_paired.t_interval(row / trials)
        by_case += t.ci_low <= mu <= t.ci_high
    assert by_topic / reps >= 0.92, by_topic / reps
    assert by_case / reps < 0.75, by_case / reps  # ignoring the topics: far too narrow


def _boundary_differences(rng, reps, n, trials, mu, icc, margin=0.05):
    """Per-case differences when the candidate is worse by exactly ``margin`` in μ."""
    from scipy.optimize import brentq
    from scipy.special import expit, logit

    kappa = 1 / icc - 1
    u = (np.arange(100_000) + 0.5) / 100_000
    with np.errstate(divide="ignore"):
        lp = logit(sps.beta.ppf(u, mu * kappa, (1 - mu) * kappa))
    shift = brentq(lambda s: np.mean(expit(lp + s)) - (mu - margin), -40, 40, xtol=1e-10)
    p, base = _counts(rng, reps, n, trials, mu, icc)
    with np.errstate(divide="ignore"):
        cand = rng.binomial(trials, expit(logit(p) + shift))
    return (cand - base) / trials


@pytest.mark.parametrize(("n", "trials"), [(20, 10), (200, 5)])
def test_noninferiority_gate_holds_its_error_rate_at_the_boundary(n: int, trials: int) -> None:
    # μ = 0.95, ICC 0.67: the one-sided t passed a candidate worse by δ 20-28 % (n = 20)
    # and 8 % (n = 200) of the time
    rng = np.random.default_rng(41)
    reps = 4000
    d = _boundary_differences(rng, reps, n, trials, 0.95, 0.67)
    passed = float(np.mean(stats_paired.noninferiority_bound(d, 0.05) > -0.05))
    assert passed <= 0.05 + 2 * mcse(0.05, reps), passed
    sd = d.std(axis=1, ddof=1)
    t_bound = d.mean(axis=1) - sps.t.ppf(0.95, n - 1) * sd / math.sqrt(n)
    assert float(np.mean(t_bound > -0.05)) > 0.07  # the old bound, for contrast


def test_zero_variance_row_never_passes_on_a_zero_width_interval() -> None:
    # every attempt of both variants passed: the t interval is [0, 0]
    for n in (5, 20, 50, 200):
        bound = float(stats_paired.noninferiority_bound(np.zeros(n), 0.05))
        # Bonett-Price by hand with no discordant case: p_b = p_c = 1/(n + 2)
        want = -sps.t.ppf(0.95, n + 1) * math.sqrt((2 / (n + 2)) / (n + 2))
        assert bound == pytest.approx(want, rel=1e-12)
        assert bound < 0  # the bound keeps a positive width
    # 20 such cases cannot rule out a 5-point loss; 200 can
    assert float(stats_paired.noninferiority_bound(np.zeros(20), 0.05)) < -0.05
    assert float(stats_paired.noninferiority_bound(np.zeros(200), 0.05)) > -0.05
