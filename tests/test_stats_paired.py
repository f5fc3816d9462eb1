"""Tests for agenticlens_frames.stats_paired against independent computations.

References: scipy, statsmodels, pingouin, brute-force enumeration written here, and
published worked values (Wilson intervals from research/statistics-practices.md §2.2,
McNemar b = 8, c = 2 from §2.4).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from agenticlens_frames import stats_paired as sp

# --- corrections -----------------------------------------------------------------------

SM_METHODS = {"bonferroni": "bonferroni", "holm": "holm", "benjamini_hochberg": "fdr_bh"}


@pytest.mark.parametrize("correction", list(SM_METHODS))
@pytest.mark.parametrize("seed", range(6))
def test_adjusted_p_values_match_statsmodels(correction: str, seed: int) -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    p = rng.random(m) ** 3
    if m > 3:
        p[1] = p[2]  # ties
    ours = sp.adjust_p_values(p, correction)
    reject, theirs, _, _ = multipletests(p, alpha=0.05, method=SM_METHODS[correction])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=0)
    assert np.array_equal(ours <= 0.05, reject)


def test_adjusted_p_values_leave_missing_tests_out_of_the_family() -> None:
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.01, np.nan, 0.04, 0.03])
    ours = sp.adjust_p_values(p, "holm")
    theirs = multipletests(p[~np.isnan(p)], method="holm")[1]
    assert math.isnan(ours[1])
    np.testing.assert_allclose(ours[[0, 2, 3]], theirs)


def test_no_correction_is_the_identity_and_unknown_names_are_refused() -> None:
    p = [0.2, 0.01]
    assert sp.adjust_p_values(p, "none").tolist() == p
    with pytest.raises(ValueError, match="correction"):
        sp.adjust_p_values(p, "fdr")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sp.adjust_p_values([1.5], "holm")


# --- t and CR1 intervals ---------------------------------------------------------------


@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_t_interval_matches_scipy(level: float) -> None:
    x = np.random.default_rng(1).random(23)
    r = sp.t_interval(x, level)
    low, high = sps.t.interval(level, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert (r.ci_low, r.ci_high) == pytest.approx((low, high), rel=1e-12)
    assert r.standard_error == pytest.approx(sps.sem(x), rel=1e-12)
    assert r.df == len(x) - 1


def test_t_interval_edge_cases() -> None:
    assert sp.t_interval([0.5]).estimate == 0.5
    assert math.isnan(sp.t_interval([0.5]).ci_low)
    r = sp.t_interval([0.4, 0.4, 0.4])
    assert r.ci_low == r.ci_high == pytest.approx(0.4)
    with pytest.raises(ValueError, match="finite"):
        sp.t_interval([0.1, np.nan])


def _statsmodels_cluster(y: np.ndarray, groups: np.ndarray, level: float) -> tuple:
    import statsmodels.api as sm

    fit = sm.OLS(y, np.ones(len(y))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    low, high = fit.conf_int(1 - level)[0]
    return float(fit.bse[0]), float(low), float(high)


@pytest.mark.parametrize("seed", range(4))
def test_cluster_robust_matches_statsmodels_unbalanced(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, size=15)
    groups = np.repeat(np.arange(15), sizes)
    y = (rng.random(len(groups)) < rng.random(15)[groups]).astype(float)
    r = sp.cluster_robust_interval(y, groups, 0.9)
    se, low, high = _statsmodels_cluster(y, groups, 0.9)
    assert r.standard_error == pytest.approx(se, rel=1e-10)
    assert (r.ci_low, r.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert r.n_units == 15 and r.df == 14


def test_cluster_robust_equals_t_on_case_means_when_balanced() -> None:
    rng = np.random.default_rng(7)
    y = rng.random((12, 4))
    groups = np.repeat(np.arange(12), 4)
    cr = sp.cluster_robust_interval(y.ravel(), groups)
    t = sp.t_interval(y.mean(axis=1))
    assert cr.standard_error == pytest.approx(t.standard_error, rel=1e-12)
    assert (cr.ci_low, cr.ci_high) == pytest.approx((t.ci_low, t.ci_high), rel=1e-12)


def test_cluster_labels_may_be_strings_and_one_cluster_gives_no_interval() -> None:
    r = sp.cluster_robust_interval([1, 0, 1], ["a", "a", "a"])
    assert r.n_units == 1 and math.isnan(r.ci_low)
    with pytest.raises(ValueError, match="labels"):
        sp.cluster_robust_interval([1, 0], ["a"])


# --- Wilson, Wilson on n_eff, Jeffreys -----------------------------------------------------

Z95 = sps.norm.ppf(0.975)


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [(17, 20, 0.640, 0.948), (8, 10, 0.490, 0.943), (5, 5, 0.566, 1.0), (0, 30, 0.0, 0.114)],
)
def test_wilson_published_worked_values(x: int, n: int, low: float, high: float) -> None:
    ours = sp.wilson_score_interval(x / n, n, Z95, all_fail=x == 0, all_pass=x == n)
    assert ours == pytest.approx((low, high), abs=6e-4)


@pytest.mark.parametrize("seed", range(3))
def test_wilson_effective_matches_statsmodels_with_the_t_quantile(seed: int) -> None:
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(seed)
    n_cases, attempts = 40, 200
    successes = int(rng.integers(1, attempts))
    n_eff = float(rng.uniform(40, 200))
    q = sps.t.ppf(0.975, n_cases - 1)
    alpha = 2 * sps.norm.sf(q)  # statsmodels' z becomes our t quantile
    want = proportion_confint(successes / attempts * n_eff, n_eff, alpha=alpha, method="wilson")
    ours = sp.wilson_effective_interval(successes, attempts, n_eff, n_cases, 0.95)
    assert ours == pytest.approx(want, rel=1e-10)


def test_wilson_effective_keeps_the_boundary_rules() -> None:
    assert sp.wilson_effective_interval(0, 50, 20.0, 10, 0.95)[0] == 0.0
    assert sp.wilson_effective_interval(50, 50, 20.0, 10, 0.95)[1] == 1.0
    assert all(math.isnan(v) for v in sp.wilson_effective_interval(1, 5, 3.0, 1, 0.95))


def test_jeffreys_matches_statsmodels_inside_and_brown_cai_dasgupta_at_the_edges() -> None:
    from statsmodels.stats.proportion import proportion_confint

    x = np.array([1, 3, 7, 9, 0, 10, 0])
    m = np.array([10, 10, 10, 10, 10, 10, 0])
    low, high = sp.jeffreys_interval(x, m, 0.9)
    want_low, want_high = proportion_confint(x[:4], m[:4], alpha=0.1, method="jeffreys")
    np.testing.assert_allclose(low[:4], want_low, rtol=1e-10)
    np.testing.assert_allclose(high[:4], want_high, rtol=1e-10)
    assert low[4] == 0.0 and high[5] == 1.0
    assert high[4] == pytest.approx(sps.beta.ppf(0.95, 0.5, 10.5))
    assert math.isnan(low[6]) and math.isnan(high[6])


# --- variance components -------------------------------------------------------------------


def test_icc_matches_pingouin_icc1_on_balanced_data() -> None:
    import pingouin as pg

    rng = np.random.default_rng(3)
    p = rng.beta(1, 1, size=30)
    y = (rng.random((30, 6)) < p[:, None]).astype(float)
    long = pd.DataFrame(
        {
            "case": np.repeat(np.arange(30), 6),
            "trial": np.tile(np.arange(6), 30),
            "y": y.ravel(),
        }
    )
    icc = pg.intraclass_corr(long, targets="case", raters="trial", ratings="y")
    want = float(icc.set_index("Type").loc["ICC(1,1)", "ICC"])
    assert want > 0  # pingouin does not truncate a negative ICC; we do (σ_b² ≥ 0)
    vc = sp.variance_components(long["y"], long["case"])
    assert vc.icc == pytest.approx(want, rel=1e-10)
    assert vc.design_effect == pytest.approx(1 + 5 * want, rel=1e-10)
    assert vc.effective_n == pytest.approx(180 / (1 + 5 * want), rel=1e-10)


def test_variance_components_match_statsmodels_anova_when_unbalanced() -> None:
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    rng = np.random.default_rng(5)
    sizes = rng.integers(2, 8, size=20)
    case = np.repeat(np.arange(20), sizes)
    y = rng.normal(size=20)[case] + rng.normal(scale=0.7, size=len(case))
    table = sm.stats.anova_lm(ols("y ~ C(case)", pd.DataFrame({"y": y, "case": case})).fit())
    msw = table.loc["Residual", "mean_sq"]
    msb = table.loc["C(case)", "mean_sq"]
    n_obs = len(case)
    n0 = (n_obs - np.sum(sizes.astype(float) ** 2) / n_obs) / 19
    vc = sp.variance_components(y, case)
    assert vc.within_variance == pytest.approx(msw, rel=1e-10)
    assert vc.between_variance == pytest.approx((msb - msw) / n0, rel=1e-10)
    assert vc.case_mean == pytest.approx(np.mean([y[case == i].mean() for i in range(20)]))


def test_variance_components_simulation_from_the_research_note() -> None:
    # research/statistics-practices.md §2.1: 60 cases × 5 trials, heterogeneous p; the
    # naive SE is about 35 % too small and the case SE equals CR1 when balanced.
    rng = np.random.default_rng(11)
    p = rng.beta(1.0, 1.0, size=60)
    y = (rng.random((60, 5)) < p[:, None]).astype(float)
    vc = sp.variance_components(y.ravel(), np.repeat(np.arange(60), 5))
    naive = y.std(ddof=1) / math.sqrt(300)
    case = sp.t_interval(y.mean(axis=1)).standard_error
    assert naive < 0.8 * case
    assert 0.2 < vc.icc < 0.6
    assert vc.effective_n == pytest.approx(300 / vc.design_effect)


def test_variance_components_conservative_when_nothing_varies() -> None:
    vc = sp.variance_components([1.0] * 8, [0, 0, 1, 1, 2, 2, 3, 3])
    # 0/0: not estimable, said so; the design effect takes the conservative bound ICC = 1
    assert math.isnan(vc.icc) and "not estimable" in vc.note
    assert vc.design_effect == 2.0 and vc.effective_n == 4.0


@pytest.mark.parametrize("trials", [1, 3])
def test_noise_floor_is_the_95th_percentile_of_rerun_differences(trials: int) -> None:
    # Two runs of one configuration on the same 80 cases: |Δ mean| exceeds the floor
    # about 5 % of the time (the floor uses the true within-case variance here).
    rng = np.random.default_rng(2)
    p = rng.beta(2, 2, size=80)
    within = float(np.mean(p * (1 - p)))
    floor = sp.noise_floor(within, 80, trials)
    runs = rng.random((2, 6000, 80, trials)) < p[None, None, :, None]
    diff = np.abs(runs[0].mean(axis=(1, 2)) - runs[1].mean(axis=(1, 2)))
    assert 0.035 < float(np.mean(diff > floor)) < 0.065


# --- McNemar and Bonett–Price ----------------------------------------------------------------


def test_mcnemar_published_example() -> None:
    assert sp.mcnemar_exact(8, 2) == pytest.approx(0.109, abs=5e-4)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 5), (3, 3), (8, 2), (12, 30), (1, 0)])
def test_mcnemar_exact_matches_statsmodels(b: int, c: int) -> None:
    from statsmodels.stats.contingency_tables import mcnemar

    want = mcnemar([[10, b], [c, 10]], exact=True).pvalue
    assert sp.mcnemar_exact(b, c) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("b", "c"), [(8, 2), (5, 5), (0, 4), (13, 21), (1, 0), (0, 0)])
def test_mcnemar_mid_p_by_exact_rational_arithmetic(b: int, c: int) -> None:
    n, m = b + c, min(b, c)
    below = sum(Fraction(math.comb(n, i), 2**n) for i in range(m + 1))
    point = Fraction(math.comb(n, m), 2**n)
    want = float(min(Fraction(1), 2 * (below - point / 2)))
    assert sp.mcnemar_mid_p(b, c) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("b", "c", "n"), [(8, 2, 40), (0, 0, 12), (3, 9, 20), (10, 0, 10), (0, 1, 1), (1, 0, 1)]
)
def test_bonett_price_equals_wald_with_two_pseudo_cases(b: int, c: int, n: int) -> None:
    # Bonett–Price is the plain Wald interval on the n differences plus one +1 and one −1
    # pseudo-difference, with the n + 2 denominator variance.
    d = np.concatenate([np.full(c, 1.0), np.full(b, -1.0), np.zeros(n - b - c), [1.0, -1.0]])
    centre = d.mean()
    se = math.sqrt(((d * d).mean() - centre * centre) / len(d))
    want = (max(-1.0, centre - Z95 * se), min(1.0, centre + Z95 * se))
    assert sp.bonett_price_interval(b, c, n) == pytest.approx(want, rel=1e-12)


# --- sign flip and bootstrap -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_exact_sign_flip_matches_scipy_permutation_test(seed: int) -> None:
    d = np.round(np.random.default_rng(seed).normal(0.1, 0.3, size=11), 2)
    p, how = sp.sign_flip_test(d)
    want = sps.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert p == pytest.approx(want, rel=1e-12)
    assert "exact" in how


def test_clustered_sign_flip_by_enumeration() -> None:
    d = np.array([0.2, 0.4, -0.1, 0.3, 0.0, 0.5, 0.1])
    clusters = np.array(["a", "a", "b", "c", "c", "d", "e"])
    sums = [0.6, -0.1, 0.3, 0.5, 0.1]
    observed = abs(sum(sums))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, sums, strict=True))) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=5)
    )
    p, _ = sp.sign_flip_test(d, clusters=clusters)
    assert p == pytest.approx(hits / 32)


def test_monte_carlo_sign_flip_agrees_with_exact_enumeration() -> None:
    rng = np.random.default_rng(4)
    d = rng.normal(0.15, 0.5, size=18)
    units = d.copy()
    total = 1 << 18
    bits = (np.arange(total)[:, None] >> np.arange(18)) & 1
    exact = float(np.mean(np.abs((1 - 2 * bits) @ units) >= abs(units.sum()) - 1e-12))
    p, how = sp.sign_flip_test(d, n_resamples=20000, rng=1)
    assert "Monte Carlo" in how
    assert p == pytest.approx(exact, abs=0.01)


def test_case_bootstrap_agrees_with_scipy_percentile_bootstrap() -> None:
    d = np.random.default_rng(8).normal(0.05, 0.3, size=40)
    low, high, p = sp.case_bootstrap(d, n_resamples=20000, rng=3)
    ref = sps.bootstrap(
        (d,), np.mean, method="percentile", n_resamples=20000, random_state=5
    ).confidence_interval
    assert low == pytest.approx(ref.low, abs=0.01)
    assert high == pytest.approx(ref.high, abs=0.01)
    # the null-centred bootstrap p-value is close to the t-test's here
    assert p == pytest.approx(sps.ttest_1samp(d, 0).pvalue, abs=0.05)


def test_cluster_bootstrap_is_reproducible_and_wider_with_shared_clusters() -> None:
    rng = np.random.default_rng(9)
    shared = np.repeat(rng.normal(0, 0.3, size=10), 5)
    d = shared + rng.normal(0, 0.05, size=50)
    clusters = np.repeat(np.arange(10), 5)
    a = sp.case_bootstrap(d, clusters=clusters, n_resamples=4000, rng=1)
    b = sp.case_bootstrap(d, clusters=clusters, n_resamples=4000, rng=1)
    naive = sp.case_bootstrap(d, n_resamples=4000, rng=1)
    assert a == b
    assert a[1] - a[0] > 1.5 * (naive[1] - naive[0])


# --- paired_difference --------------------------------------------------------------------------


def test_paired_t_matches_scipy_ttest_rel() -> None:
    rng = np.random.default_rng(12)
    base, cand = rng.random(30), rng.random(30)
    r = sp.paired_difference(cand - base, confidence_level=0.9)
    want = sps.ttest_rel(cand, base)
    assert r.p_value == pytest.approx(want.pvalue, rel=1e-10)
    low, high = want.confidence_interval(0.9)
    assert (r.ci_low, r.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert r.ci_method == "t" and not r.degenerate


def test_paired_degenerate_differences_use_the_exact_sign_flip() -> None:
    r = sp.paired_difference([0.2] * 6)
    assert r.degenerate and r.ci_low == r.ci_high == pytest.approx(0.2)
    assert r.p_value == pytest.approx(2 / 2**6)
    assert "zero variance" in r.p_value_method
    zero = sp.paired_difference([0.0] * 5)
    assert zero.p_value == 1.0 and zero.degenerate


def test_paired_wilcoxon_matches_pingouin() -> None:
    import pingouin as pg

    rng = np.random.default_rng(13)
    d = np.round(rng.normal(0.1, 0.3, size=25), 3)
    d[:3] = 0.0
    r = sp.paired_difference(d, method="wilcoxon")
    want = float(pg.wilcoxon(d[d != 0]).loc["Wilcoxon", "p_val"])
    assert r.p_value == pytest.approx(want, rel=1e-10)
    assert r.ci_method == "t"


def test_paired_wilcoxon_is_no_evidence_for_the_opposite_direction() -> None:
    """Latency up 100 ms on 15 cases and down 5000 ms on one: the signed ranks shift up
    (scipy's two-sided p 0.0029) while the mean falls 219 ms. The two-sided p called the
    fall significant ('better'); the p for the mean's direction is twice scipy's one-sided
    p towards a fall, capped at 1."""
    from scipy import stats as sps

    d = np.array([100.0] * 15 + [-5000.0])
    assert sps.wilcoxon(d).pvalue < 0.01 and d.mean() < 0
    r = sp.paired_difference(d, method="wilcoxon")
    assert r.p_value == min(1.0, 2 * sps.wilcoxon(d, alternative="less").pvalue) == 1.0
    assert "opposite to the mean difference" in r.p_value_method
    # A mean of 0 (float residue 1e-17 here) has no direction, whatever the ranks do
    # (scipy's two-sided p 0.0002 gave a "+0.0 pp" row a verdict).
    level = np.array([0.05] * 20 + [-1.0])
    assert sps.wilcoxon(level).pvalue < 0.001 and abs(level.mean()) < 1e-15
    assert sp.paired_difference(level, method="wilcoxon").p_value == 1.0
    # Ranks and mean agree: scipy's two-sided p, unchanged.
    agree = np.array([100.0] * 15 + [-50.0])
    assert sp.paired_difference(agree, method="wilcoxon").p_value == pytest.approx(
        sps.wilcoxon(agree).pvalue, rel=1e-12
    )


def test_clusters_with_equal_means_get_the_exact_sign_flip_p_not_t() -> None:
    """Two clusters whose mean differences are equal (0.2 each) while the cases' are not:
    the CR1 SE is 0 up to float residue and the t p was 0 ('better' from four cases). The
    exact sign flip over the cluster sums (scipy's permutation test) is 0.5."""
    from scipy import stats as sps

    d = np.array([0.1, 0.3, 0.1, 0.3])
    clusters = np.array(["A", "A", "B", "B"])
    r = sp.paired_difference(d, clusters=clusters)
    sums = np.array([d[clusters == g].sum() for g in ("A", "B")])
    want = sps.permutation_test(
        (sums,), np.sum, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert r.p_value == pytest.approx(want) == 0.5
    assert r.standard_error == 0.0 and r.ci_low == r.ci_high == pytest.approx(0.2)
    assert "over clusters, exact" in r.p_value_method


def test_paired_mcnemar_interval_holds_its_estimate_at_a_low_level() -> None:
    """4 of 4 cases improved at a 50 % level: Bonett-Price by hand, centred on
    (c + 1 - b - 1)/(n + 2) = 2/3, is [0.461, 0.872], beside an estimate of +1 it did not
    hold; the row's interval is widened to it."""
    from scipy import stats as sps

    z = sps.norm.ppf(0.75)
    pb, pc = 1 / 6, 5 / 6
    high = (pc - pb) + z * np.sqrt((pb + pc - (pc - pb) ** 2) / 6)
    assert high == pytest.approx(0.8719073616602325)
    r = sp.paired_difference(
        [1.0] * 4, method="mcnemar", baseline=[0] * 4, candidate=[1] * 4, confidence_level=0.5
    )
    assert r.estimate == 1.0 and r.ci_high == 1.0
    assert r.ci_low == pytest.approx((pc - pb) - z * np.sqrt((pb + pc - (pc - pb) ** 2) / 6))


def test_paired_mcnemar_uses_discordant_counts() -> None:
    base = np.array([1] * 10 + [0] * 4 + [1] * 20 + [0] * 6, dtype=float)
    cand = np.array([0] * 10 + [1] * 4 + [1] * 20 + [0] * 6, dtype=float)
    r = sp.paired_difference(cand - base, method="mcnemar", baseline=base, candidate=cand)
    assert r.p_value == pytest.approx(sp.mcnemar_exact(10, 4))
    assert (r.ci_low, r.ci_high) == sp.bonett_price_interval(10, 4, 40)
    assert r.estimate == pytest.approx((4 - 10) / 40)
    with pytest.raises(ValueError, match="binary"):
        sp.paired_difference([0.5], method="mcnemar", baseline=[0.5], candidate=[1.0])


def test_clustered_paired_difference_matches_statsmodels() -> None:
    rng = np.random.default_rng(14)
    clusters = np.repeat(np.arange(9), rng.integers(1, 5, size=9))
    d = rng.normal(0.1, 0.2, size=len(clusters))
    r = sp.paired_difference(d, clusters=clusters)
    se, low, high = _statsmodels_cluster(d, clusters, 0.95)
    assert r.standard_error == pytest.approx(se, rel=1e-10)
    assert (r.ci_low, r.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert r.p_value == pytest.approx(2 * sps.t.sf(abs(d.mean()) / se, 8), rel=1e-10)
    assert r.n_clusters == 9
    with pytest.raises(ValueError, match="cluster"):
        sp.paired_difference(d, method="wilcoxon", clusters=clusters)


def test_paired_difference_with_too_few_cases() -> None:
    r = sp.paired_difference([0.3])
    assert r.estimate == 0.3 and math.isnan(r.p_value) and math.isnan(r.ci_low)
    assert sp.paired_difference([]).n == 0


# --- power, sample size, MDE ------------------------------------------------------------------


@pytest.mark.parametrize(("effect", "sd", "n"), [(0.05, 0.2, 60), (0.1, 0.3, 25), (2.0, 1.0, 4)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_power_matches_statsmodels(effect: float, sd: float, n: int, alpha: float) -> None:
    from statsmodels.stats.power import NormalIndPower, TTestPower

    t = TTestPower().power(effect_size=effect / sd, nobs=n, alpha=alpha)
    normal = NormalIndPower().power(effect_size=effect / sd, nobs1=n, alpha=alpha, ratio=0)
    assert sp.paired_power(effect, sd, n, alpha) == pytest.approx(t, rel=1e-8)
    assert sp.paired_power(-effect, sd, n, alpha) == pytest.approx(t, rel=1e-8)
    got = sp.paired_power(effect, sd, n, alpha, distribution="normal")
    assert got == pytest.approx(normal, rel=1e-8)


def test_power_survives_huge_noncentrality() -> None:
    assert sp.paired_power(1.0, 0.01, 14, 0.001) == 1.0


@pytest.mark.parametrize(("effect", "sd"), [(0.05, 0.2), (0.1, 0.45), (0.3, 0.5)])
def test_sample_size_and_mde_match_statsmodels_solve_power(effect: float, sd: float) -> None:
    from statsmodels.stats.power import TTestPower

    n_float = TTestPower().solve_power(effect_size=effect / sd, alpha=0.05, power=0.8)
    assert sp.paired_sample_size(effect, sd, 0.05, 0.8) == math.ceil(n_float)
    mde = TTestPower().solve_power(nobs=50, alpha=0.05, power=0.8) * sd
    assert sp.paired_mde(sd, 50) == pytest.approx(mde, rel=1e-6)
    normal = (sps.norm.isf(0.025) + sps.norm.ppf(0.8)) * sd / math.sqrt(50)
    assert sp.paired_mde(sd, 50, distribution="normal") == pytest.approx(normal)


def test_miller_rule_of_thumb_two_point_eight() -> None:
    # research note §2.7: z + z_β = 2.80 for α = .05 and 80 % power.
    assert sps.norm.isf(0.025) + sps.norm.ppf(0.8) == pytest.approx(2.80, abs=0.01)
    assert sp.paired_mde(1.0, 100, distribution="normal") == pytest.approx(0.280, abs=0.001)


# --- trials and cost ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("between", "within", "n", "se"),
    [(0.02, 0.16, 100, 0.02), (0.0, 0.2, 50, 0.03), (0.01, 0.2, 400, 0.01), (0.05, 0.1, 10, 0.01)],
)
def test_trials_for_standard_error_by_brute_force(
    between: float, within: float, n: int, se: float
) -> None:
    ok = [k for k in range(1, 1001) if (between + within / k) / n <= se * se]
    want = ok[0] if ok else None
    assert sp.trials_for_standard_error(between, within, n, se) == want


def test_cost_optimal_trials_by_brute_force_and_near_cochran() -> None:
    between, within, se = 0.03, 0.18, 0.015
    c_case, c_trial = 2.0, 0.25
    best = None
    for k in range(1, 60):
        n = max(2, math.ceil((between + within / k) / se**2 - 1e-9))
        cost = n * (c_case + k * c_trial)
        if best is None or cost < best[2]:
            best = (k, n, cost)
    got = sp.cost_optimal_trials(between, within, se, cost_per_case=c_case, cost_per_trial=c_trial)
    assert got == (best[0], best[1], pytest.approx(best[2]))
    cochran = math.sqrt(within / between * c_case / c_trial)
    assert abs(got[0] - cochran) <= 1.5


@pytest.mark.parametrize(
    "labels",
    [
        np.random.default_rng(0).integers(0, 50, 1000),
        np.array(["case-2", "case-10", "case-1"] * 3),
        np.array([1.0, np.nan, 0.5, 1.0]),
        np.array([1, "1", 2], dtype=object),  # same text: one cluster, as before
    ],
)
def test_cluster_codes_rank_labels_by_their_text(labels) -> None:
    _, expected = np.unique(labels.astype(str), return_inverse=True)
    assert sp.cluster_codes(labels, len(labels)).tolist() == expected.ravel().tolist()


def test_degenerate_sign_flip_p_is_the_exact_enumeration() -> None:
    import itertools

    for units in (3, 8, 11):
        d = np.full(units, 0.4)
        hits = sum(
            abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= abs(sum(d)) - 1e-12
            for signs in itertools.product((-1, 1), repeat=units)
        )
        assert sp.degenerate_sign_flip_p(d, units)[0] == hits / 2**units
    # beyond the enumeration limit too, and never Monte Carlo: the same every call
    big = sp.paired_difference(np.full(40, -0.2))
    assert big.degenerate and big.p_value == 2.0**-39
    assert "exact" in big.p_value_method and sp.paired_difference(np.full(40, -0.2)) == big
    clustered = sp.paired_difference(np.full(40, 0.2), clusters=np.arange(40) % 25)
    assert clustered.p_value == 2.0**-24  # G = 25 clusters
    assert sp.paired_difference(np.zeros(30)).p_value == 1.0


def test_noninferiority_bound_is_bonett_price_for_one_binary_attempt() -> None:
    # b regressions, c improvements among n cases: Bonett & Price's (2012) lower bound
    for b, c, n in ((8, 2, 40), (0, 0, 25), (3, 9, 60)):
        d = np.array([-1.0] * b + [1.0] * c + [0.0] * (n - b - c))
        pb, pc = (b + 1) / (n + 2), (c + 1) / (n + 2)
        delta = pc - pb
        se = math.sqrt((pb + pc - delta * delta) / (n + 2))
        want = min(delta, d.mean()) - sps.t.ppf(0.95, n + 1) * se
        assert float(sp.noninferiority_bound(d, 0.05)) == pytest.approx(want, rel=1e-12)


def test_per_test_alpha_is_what_the_correction_requires_of_the_smallest_p() -> None:
    from statsmodels.stats.multitest import multipletests

    for correction, name in (("holm", "holm"), ("bonferroni", "bonferroni")):
        level = sp.per_test_alpha(0.05, correction, 6)
        p = np.array([level * 0.999, 0.5, 0.6, 0.7, 0.8, 0.9])
        assert multipletests(p, 0.05, name)[0][0]
        p[0] = level * 1.001
        assert not multipletests(p, 0.05, name)[0][0]
    assert sp.per_test_alpha(0.05, "none", 6) == 0.05


@pytest.mark.parametrize("nodes", [16, 7])
def test_beta_binomial_icc_grid_integrates_the_priors_moments(nodes: int) -> None:
    # The stored 16-node grid (and any other computed one) against scipy's roots_jacobi and
    # against the Beta(a, b) prior's raw moments B(a + j, b) / B(a, b), which an n-node
    # Gauss–Jacobi rule integrates exactly up to degree 2n − 1.
    from scipy.special import roots_jacobi

    a, b = sp.BETA_BINOMIAL_ICC_PRIOR
    x, w = sp._bb_icc_grid(nodes)
    rx, rw = roots_jacobi(nodes, b - 1.0, a - 1.0)
    np.testing.assert_allclose(x, (rx + 1.0) / 2.0, rtol=1e-13, atol=0)
    np.testing.assert_allclose(w, rw / rw.sum(), rtol=1e-12, atol=0)
    for j in range(2 * nodes):
        moment = math.exp(
            math.lgamma(a + j) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(a + b + j)
        )
        assert float(np.sum(w * x**j)) == pytest.approx(moment, rel=1e-10)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.uint64])
def test_cluster_codes_of_integers_follow_their_text(dtype) -> None:
    # Integer labels are ranked without making their text; the codes must be the ranks
    # of the text all the same (the order in which CR1 sums its clusters).
    rng = np.random.default_rng(7)
    top = min(np.iinfo(dtype).max, 10**15 - 1)
    for size in (1, 2, 17, 3000):
        edges = np.array([0, 1, 9, 10, 11, 99, 100, 101, top], dtype=np.uint64)
        edges = edges[edges <= np.iinfo(dtype).max].astype(dtype)
        labels = np.concatenate([rng.integers(0, top, size=size).astype(dtype), edges])
        rng.shuffle(labels)
        expected = np.unique(labels.astype(str), return_inverse=True)[1].ravel()
        assert sp.cluster_codes(labels, len(labels)).tolist() == expected.tolist()
    # beyond the shortcut (negative, or 10**15 and more): the text itself is sorted
    for labels in (np.array([-3, 12, -12, 5]), np.array([10**15, 7, 10**16 + 3])):
        expected = np.unique(labels.astype(str), return_inverse=True)[1].ravel()
        assert sp.cluster_codes(labels, len(labels)).tolist() == expected.tolist()


def test_mde_is_zero_when_the_test_rejects_at_least_as_often_as_the_power_asked():
    """alpha ≥ power (a confidence level near 0 gives alpha near 1): a difference of 0 is
    already found with probability alpha, so the smallest detectable one is 0. The root
    finder was given an interval without a sign change (ValueError from brentq)."""
    sd, n, alpha, power = 0.2, 10, 0.9, 0.8
    # Power of the two-sided paired t-test at δ = 0, from scipy: exactly alpha.
    crit = sps.t.isf(alpha / 2, n - 1)
    at_zero = 2 * sps.t.sf(crit, n - 1)
    assert at_zero == pytest.approx(alpha) and at_zero >= power
    assert sp.paired_mde(sd, n, alpha, power) == 0.0
    assert sp.paired_mde(sd, n, 0.05, 0.8) > 0  # the usual case unchanged


def test_grouped_beta_binomial_intervals_match_one_call_per_group() -> None:
    # Groups with different sets of (passes, attempts) pairs, an empty group, cases
    # without attempts, and a group where everything passed (upper bound exactly 1).
    rng = np.random.default_rng(7)
    parts = []
    for group, (n, rate) in enumerate([(12, 0.3), (0, 0.5), (30, 0.8), (5, 1.0), (9, 0.0)]):
        k = rng.integers(0, 5, size=n)
        parts.append((np.full(n, group), rng.binomial(k, rate), k))
    groups, passes, attempts = (np.concatenate(p) for p in zip(*parts, strict=True))
    got = sp.beta_binomial_intervals(passes, attempts, groups, 5, 0.9)
    for group, (_, c, k) in enumerate(parts):
        one = sp.beta_binomial_interval(c, k, 0.9)
        mine = (got.estimate[group], got.low[group], got.high[group], got.sd[group])
        np.testing.assert_allclose(
            mine, (one.estimate, one.ci_low, one.ci_high, one.standard_error), rtol=1e-9
        )
        assert got.n_cases[group] == int(np.sum(k > 0))
        if np.any(k > 0):
            assert got.estimate[group] == pytest.approx(c.sum() / k.sum(), rel=1e-15)
    assert np.isnan(got.low[1]) and got.n_cases[1] == 0
    assert got.high[3] == 1.0 and got.low[4] == 0.0
    with pytest.raises(ValueError, match="groups"):
        sp.beta_binomial_intervals([1], [2], [5], 5)


@pytest.mark.parametrize(
    ("base", "cand"), [([0, 0, 0, 0, 0], [1, 1, 1, 1, 1]), ([1] * 20, [1] * 20)]
)
def test_paired_mcnemar_keeps_its_interval_when_every_case_moved_alike(base, cand) -> None:
    # Every case differing alike made the row degenerate, which replaced Bonett-Price with
    # a zero-width t interval ([+1, +1]; [0, 0] for 20 cases passed by both arms).
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.array(base, dtype=float), np.array(cand, dtype=float)
    r = sp.paired_difference(b - a, method="mcnemar", baseline=a, candidate=b)
    worse, better = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    table = [[int(((a == 1) & (b == 1)).sum()), worse], [better, int(((a == 0) & (b == 0)).sum())]]
    assert r.degenerate and r.ci_method == "Bonett-Price adjusted Wald"
    # Bonett-Price by hand: the Wald interval with one +1 and one -1 pseudo-difference
    d = np.concatenate([b - a, [1.0, -1.0]])
    se = math.sqrt(((d * d).mean() - d.mean() ** 2) / len(d))
    want = (max(-1.0, d.mean() - Z95 * se), min(1.0, d.mean() + Z95 * se))
    assert (r.ci_low, r.ci_high) == pytest.approx(want, rel=1e-12) and r.ci_low < r.ci_high
    assert r.p_value == pytest.approx(mcnemar(table, exact=True).pvalue)


@pytest.mark.parametrize(
    "d",
    [
        [0.5, 1.0],
        [1, 1, 1, 1, 1, 0, 0, 0],
        [0.3, -0.1, 0.4, 0.2, 0.0, 0.5, 0.1, -0.2, 0.6, 0.25],
    ],
)
def test_the_bootstrap_method_tests_with_the_exact_sign_flip(d) -> None:
    """The null-centred bootstrap p fell to 1/(B+1) whenever every difference had one
    sign (1e-4 for two cases; 5e-4 for 5 improved cases of 8, a "better" verdict), as no
    resample reaches the null: the method's test is the sign flip, enumerated here."""
    units = np.asarray(d, dtype=float)
    bits = (np.arange(1 << len(units))[:, None] >> np.arange(len(units))) & 1
    exact = float(np.mean(np.abs((1 - 2 * bits) @ units) >= abs(units.sum()) - 1e-12))
    r = sp.paired_difference(units, method="bootstrap", rng=0)
    assert r.p_value == pytest.approx(exact, rel=1e-12)
    assert "sign-flip" in r.p_value_method and "bootstrap percentile" in r.ci_method
    low, high, _ = sp.case_bootstrap(units, rng=0)
    assert (r.ci_low, r.ci_high) == (low, high)


@pytest.mark.parametrize("method", ["t", "bootstrap", "permutation", "wilcoxon"])
def test_one_case_names_no_method_it_did_not_apply(method) -> None:
    """With one case (or cluster) nothing is computed; the row said "t" whatever method
    was asked for."""
    r = sp.paired_difference([0.3], method=method, rng=0)
    assert r.ci_method == r.p_value_method == "none (one case: no interval or test)"
    assert math.isnan(r.p_value) and math.isnan(r.ci_low)
    if method != "wilcoxon":
        clustered = sp.paired_difference([0.3, 0.1], method=method, clusters=["a", "a"], rng=0)
        assert clustered.p_value_method == "none (one cluster: no interval or test)"


# --- gaps found by mutation testing (each test below failed on a surviving mutant) --------


def test_two_cases_get_the_t_interval_and_p_of_scipy() -> None:
    """Two cases are enough for a t interval (1 df) and a paired t p-value; the boundary
    between "no interval" (one case) and an interval was not tested. d = [0, 2]: mean 1,
    SD √2, SE exactly 1, t = 1 on 1 df, p = 0.5."""
    d = np.array([0.0, 2.0])
    r = sp.t_interval(d, 0.9)
    want = sps.t.interval(0.9, 1, loc=1.0, scale=sps.sem(d))
    assert (r.ci_low, r.ci_high) == pytest.approx(want, rel=1e-12) and r.df == 1.0
    row = sp.paired_difference(d)
    assert row.standard_deviation == pytest.approx(math.sqrt(2), rel=1e-15)
    assert row.standard_error == 1.0
    assert row.p_value == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue, rel=1e-12)
    assert row.p_value == pytest.approx(0.5, rel=1e-12)  # 2 P(T_1 > 1) = 2 (1/4)


def test_cluster_robust_interval_of_no_value_and_of_one_value() -> None:
    empty = sp.cluster_robust_interval([])
    assert math.isnan(empty.estimate) and empty.n_units == 0
    one = sp.cluster_robust_interval([0.7], ["a"])
    assert one.estimate == 0.7 and one.n_units == 1 and math.isnan(one.ci_low)


def test_unequal_clusters_with_equal_means_have_zero_cr1_width() -> None:
    """Clusters of 2 and 1 cases, each with mean difference 0.2 (the cases' are 0.1, 0.3
    and 0.2): every cluster's residual sum is 0 by hand, so SE = 0, and the exact sign
    flip over the cluster sums (0.4, 0.2) is 2 of 4 sign vectors."""
    d = np.array([0.1, 0.3, 0.2])
    clusters = np.array(["a", "a", "b"])
    assert sp.cluster_robust_interval(d, clusters).standard_error == 0.0
    r = sp.paired_difference(d, clusters=clusters)
    hits = sum(abs(s * 0.4 + t * 0.2) >= 0.6 - 1e-12 for s in (1, -1) for t in (1, -1))
    assert r.p_value == pytest.approx(hits / 4) == 0.5


def test_mcnemar_refuses_negative_counts() -> None:
    for b, c in ((-1, 3), (3, -1)):
        with pytest.raises(ValueError, match="negative"):
            sp.mcnemar_exact(b, c)


def test_bonett_price_of_no_case_is_undefined() -> None:
    assert all(math.isnan(v) for v in sp.bonett_price_interval(0, 0, 0))


def test_sign_flip_of_no_case_and_of_one_case() -> None:
    """No case: no test (NaN). One case: its 2 sign vectors give |±d| = |d|, p = 1."""
    p, _ = sp.sign_flip_test([])
    assert math.isnan(p)
    assert sp.sign_flip_test([0.3]) == (1.0, "sign-flip permutation, exact (2 sign vectors)")


def test_sixteen_units_are_still_enumerated_exactly() -> None:
    d = np.round(np.random.default_rng(3).normal(0.1, 0.3, size=16), 2)
    total = 0
    hits = 0
    for signs in itertools.product((1, -1), repeat=16):
        total += 1
        hits += abs(float(np.dot(signs, d))) >= abs(float(d.sum())) - 1e-12
    p, how = sp.sign_flip_test(d, rng=0)
    assert how == "sign-flip permutation, exact (65536 sign vectors)"
    assert p == hits / total


def test_monte_carlo_sign_flip_is_one_when_the_differences_cancel() -> None:
    """20 units summing to 0: every resample's |T*| ≥ |T| = 0, so p = (1 + B)/(1 + B)."""
    p, how = sp.sign_flip_test([1.0] * 10 + [-1.0] * 10, n_resamples=999, rng=2)
    assert "Monte Carlo" in how and p == 1.0


def test_exact_sign_flip_counts_ties_of_large_differences() -> None:
    """Latency differences in ms where three cases cancel exactly (3000.3 + 6000.6 =
    9000.9): several sign vectors tie with the observed |sum| = 500, which float
    arithmetic misses by ~1e-12. Against exact rational enumeration."""
    d = [3000.3, 6000.6, -9000.9, 500.0]
    exact = [Fraction(str(x)) for x in d]
    observed = abs(sum(exact))
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, exact, strict=True))) >= observed
        for signs in itertools.product((1, -1), repeat=4)
    )
    assert sp.sign_flip_test(d)[0] == hits / 16 == 1.0


def test_wilcoxon_names_an_opposite_shift_only_when_there_is_one() -> None:
    """Ranks that agree with the mean, or balance exactly (scipy's two-sided p = 1), do
    not shift opposite to it: the method must not say so."""
    agree = sp.paired_difference(np.array([100.0] * 15 + [-50.0]), method="wilcoxon")
    assert "opposite" not in agree.p_value_method
    balanced = np.array([1.0, -2.0, -3.0, 4.5])  # W+ = 1 + 4 = W- = 2 + 3, mean +0.125
    assert sps.wilcoxon(balanced).pvalue == 1.0
    r = sp.paired_difference(balanced, method="wilcoxon")
    assert r.p_value == min(1.0, 2 * sps.wilcoxon(balanced, alternative="greater").pvalue)
    assert r.p_value == 1.0 and "opposite" not in r.p_value_method


def _pseudo_case_lower(d: list[float], alpha: float = 0.05) -> float:
    """The gate's lower bound by hand from the cases' differences: one +1 and one -1
    case added, their mean and SD (m denominator), t on n + 1 df, centred on the smaller
    of that mean and the cases' own."""
    augmented = [*d, 1.0, -1.0]
    m = len(augmented)
    centre = sum(augmented) / m
    spread = math.sqrt(sum((x - centre) ** 2 for x in augmented) / m)
    return min(centre, sum(d) / len(d)) - sps.t.ppf(1 - alpha, len(d) + 1) * spread / math.sqrt(m)


@pytest.mark.parametrize("d", [[0.5], [-1.0], [0.0], [0.5, -0.25], [1.0, 1.0]])
def test_noninferiority_bound_of_one_or_two_cases_by_hand(d: list[float]) -> None:
    assert float(sp.noninferiority_bound(d, 0.05)) == pytest.approx(
        _pseudo_case_lower(d), rel=1e-12
    )
    sd = float(np.std(d, ddof=1)) if len(d) > 1 else math.nan  # one case: no SD
    summary = sp.noninferiority_bound_from_summary(len(d), float(np.mean(d)), sd, 0.05)
    assert float(summary) == pytest.approx(_pseudo_case_lower(d), rel=1e-12)
    # a batch of such rows (last axis: the cases) gives one bound per row
    batch = sp.noninferiority_bound(np.tile(d, (2, 3, 1)), 0.05)
    assert batch.shape == (2, 3)
    np.testing.assert_allclose(batch, _pseudo_case_lower(d), rtol=1e-12)


def test_noninferiority_bound_defaults_to_alpha_005_and_refuses_unbounded_differences() -> None:
    d = [-1.0] * 3 + [1.0] * 5 + [0.0] * 22
    assert float(sp.noninferiority_bound(d)) == pytest.approx(_pseudo_case_lower(d), rel=1e-12)
    summary = sp.noninferiority_bound_from_summary(30, np.mean(d), np.std(d, ddof=1))
    assert float(summary) == pytest.approx(_pseudo_case_lower(d), rel=1e-12)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        sp.noninferiority_bound([0.2, 1.5])


@pytest.mark.parametrize("correction", list(SM_METHODS))
def test_adjusted_p_values_of_a_family_of_one_and_at_the_ends(correction: str) -> None:
    """A family of one is its own adjusted p; p = 0 and p = 1 (a Wilcoxon row's p is
    often exactly 1) are p-values like any other."""
    from statsmodels.stats.multitest import multipletests

    assert sp.adjust_p_values([0.03], correction).tolist() == [0.03]
    assert sp.adjust_p_values([np.nan, 0.03], correction)[1] == 0.03
    p = np.array([0.0, 1.0, 0.02, 1.0])
    want = multipletests(p, method=SM_METHODS[correction])[1]
    np.testing.assert_allclose(sp.adjust_p_values(p, correction), want, rtol=1e-12)


def test_mcnemar_needs_both_arms_one_outcome_per_case() -> None:
    d = [1.0, 0.0]
    with pytest.raises(ValueError, match="needs the per-case baseline and candidate"):
        sp.paired_difference(d, method="mcnemar", baseline=[0.0, 1.0])
    with pytest.raises(ValueError, match="needs the per-case baseline and candidate"):
        sp.paired_difference(d, method="mcnemar", candidate=[1.0, 1.0])
    with pytest.raises(ValueError, match="one outcome per case"):
        sp.paired_difference(d, method="mcnemar", baseline=[0.0, 1.0], candidate=[1.0])
    with pytest.raises(ValueError, match="one outcome per case"):
        sp.paired_difference(d, method="mcnemar", baseline=[0.0], candidate=[1.0, 1.0])


def test_differences_all_alike_have_a_standard_deviation_of_zero() -> None:
    """Every case differed by 0.1 (+ float residue from averaging): SD 0 by hand — the
    gate's pseudo-case bound reads this column."""
    d = np.array([0.1 + 0.2, 0.3, 0.3, 0.1 + 0.2])
    r = sp.paired_difference(d)
    assert r.degenerate and r.standard_deviation == 0.0


def test_no_case_gives_an_empty_result_and_zero_differences_count_neither_way() -> None:
    empty = sp.paired_difference([])
    assert (empty.n, empty.n_clusters, empty.improved, empty.regressed) == (0, 0, 0, 0)
    assert not empty.degenerate and math.isnan(empty.p_value) and math.isnan(empty.estimate)
    r = sp.paired_difference([0.2, 0.0, -0.1, 0.0, 0.3])
    assert (r.improved, r.regressed) == (2, 1)


def test_the_bootstrap_interval_names_what_it_resampled() -> None:
    d = [0.3, -0.1, 0.4, 0.2, 0.0, 0.5]
    cases = sp.paired_difference(d, method="bootstrap", n_resamples=199, rng=0)
    assert cases.ci_method == "case bootstrap percentile (199 resamples)"
    clustered = sp.paired_difference(
        d, method="bootstrap", clusters=[1, 1, 2, 2, 3, 3], n_resamples=199, rng=0
    )
    assert clustered.ci_method == "cluster bootstrap percentile (199 resamples)"


# --- mutation-test follow-ups: intervals, bootstrap, power ------------------------------------


def test_wilson_and_effective_wilson_without_attempts_are_nan() -> None:
    """n = 0 (or no attempts) has no interval; n > 0 is required, not n >= 0."""
    assert all(
        math.isnan(v) for v in sp.wilson_score_interval(0.0, 0, Z95, all_fail=True, all_pass=True)
    )
    assert all(math.isnan(v) for v in sp.wilson_effective_interval(0, 0, 5.0, 10, 0.95))


def test_wilson_of_at_most_one_effective_attempt_matches_statsmodels() -> None:
    """Two cases are the fewest with a t quantile (1 df); an effective sample size (or a
    pooled count) of one attempt or less still has an interval: only n = 0 has none."""
    from statsmodels.stats.proportion import proportion_confint

    q = sps.t.ppf(0.975, 1)
    alpha = 2 * sps.norm.sf(q)  # statsmodels' z becomes our t quantile
    want = proportion_confint(3 / 8 * 0.8, 0.8, alpha=alpha, method="wilson")
    assert sp.wilson_effective_interval(3, 8, 0.8, 2, 0.95) == pytest.approx(want, rel=1e-10)
    low, _ = proportion_confint(1.0, 1.0, alpha=alpha, method="wilson")
    assert sp.wilson_effective_interval(1, 1, 1.0, 2, 0.95) == pytest.approx((low, 1.0), rel=1e-10)
    # one success is not none: the lower bound is Wilson's, not the all-fail 0
    alpha_9 = 2 * sps.norm.sf(sps.t.ppf(0.975, 9))
    want = proportion_confint(1 / 50 * 20.0, 20.0, alpha=alpha_9, method="wilson")
    assert sp.wilson_effective_interval(1, 50, 20.0, 10, 0.95) == pytest.approx(want, rel=1e-10)
    want = proportion_confint(0.5 * 0.6, 0.6, alpha=0.05, method="wilson")
    ours = sp.wilson_score_interval(0.5, 0.6, Z95, all_fail=False, all_pass=False)
    assert ours == pytest.approx(want, rel=1e-10)


def _plain_loop_bootstrap(d: list[float], seed: int, resamples: int, level: float):
    """The documented scheme written out: a (resamples × n) matrix of case indices drawn
    with ``numpy.random.default_rng(seed).integers``; per row the resample's mean; its
    percentile interval; and the null-centred p counted in exact rational arithmetic."""
    from fractions import Fraction

    n = len(d)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    exact = [Fraction(str(v)) for v in d]
    observed = sum(exact) / n
    means, hits = [], 0
    for row in idx:
        total = 0.0
        for i in row:
            total += d[i]
        means.append(total / n)
        hits += abs(sum(exact[i] for i in row) / n - observed) >= abs(observed)
    alpha = 1 - level
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high), (1 + hits) / (1 + resamples)


def test_case_bootstrap_is_the_documented_resampling_scheme_by_default() -> None:
    """Default 9999 resamples; the p counts a resample exactly as far from the observed mean
    as the null (here a resample with mean exactly 2 × the observed) as a hit even when
    floating point puts it one ulp short: 56169.899999999994 against 2 × 28084.95. Its
    tolerance scales with the size of the values (latencies in ms)."""
    d = [-41973.0, 41973.0, 69132.3, 43207.5]
    low, high, p = sp.case_bootstrap(d, rng=4)
    want = _plain_loop_bootstrap(d, 4, 9999, 0.95)
    assert (low, high) == pytest.approx(want[:2], rel=1e-12)
    assert p == pytest.approx(want[2], rel=1e-12)


@pytest.mark.parametrize("clusters", [None, [1, 1, 2, 2]])
def test_case_bootstrap_of_two_units_has_an_interval(clusters) -> None:
    """Two cases (or two clusters) can be resampled: only one unit has no interval."""
    d = [0.1, 0.7] if clusters is None else [0.1, 0.7, 0.2, 0.5]
    low, high, _ = sp.case_bootstrap(d, clusters=clusters, n_resamples=999, rng=0)
    # the resampled means of two units can only be unit 1's, unit 2's or their mean
    units = [0.1, 0.7] if clusters is None else [0.4, 0.35]
    assert min(units) <= low <= high <= max(units) and low < high
    assert all(math.isnan(v) for v in sp.case_bootstrap([0.3], n_resamples=999, rng=0))
    one = sp.case_bootstrap([0.1, 0.7], clusters=[1, 1], n_resamples=999, rng=0)
    assert all(math.isnan(v) for v in one)


def test_power_defaults_to_alpha_005_and_is_nan_without_spread_or_cases() -> None:
    from statsmodels.stats.power import TTestPower

    assert sp.paired_power(0.1, 0.3, 25) == pytest.approx(
        TTestPower().power(effect_size=0.1 / 0.3, nobs=25, alpha=0.05), rel=1e-8
    )
    # two cases are the fewest with a test (one degree of freedom)
    assert sp.paired_power(0.5, 0.3, 2, 0.1) == pytest.approx(
        TTestPower().power(effect_size=0.5 / 0.3, nobs=2, alpha=0.1), rel=1e-8
    )
    # the lower tail's noncentral t underflows (NaN) here: it adds nothing, not 1
    shift = 7.55 / math.sqrt(2)
    assert sp.paired_power(shift, 1.0, 2, 0.001) == pytest.approx(
        TTestPower().power(effect_size=shift, nobs=2, alpha=0.001), rel=1e-8
    )
    mde = TTestPower().solve_power(nobs=2, alpha=0.1, power=0.8) * 0.3
    assert sp.paired_mde(0.3, 2, 0.1) == pytest.approx(mde, rel=1e-6)
    for sd, n in ((0.0, 25), (0.3, 1)):
        assert math.isnan(sp.paired_power(0.1, sd, n))
        assert math.isnan(sp.paired_mde(sd, n))


@pytest.mark.parametrize("n", [10, 60])
def test_mde_at_a_power_beyond_one_minus_alpha_over_two_matches_statsmodels(n: int) -> None:
    """99 % power at α = 0.05: z_power exceeds z_(α/2), the case the root search's first
    bracket (z_(α/2) + z_power)/√n must not get wrong. statsmodels' power at our MDE is
    the power asked for (its own solve_power stops 2e-7 short of it at n = 10)."""
    from statsmodels.stats.power import TTestPower

    mde = sp.paired_mde(0.4, n, 0.05, 0.99)
    assert mde > 0
    assert TTestPower().power(effect_size=mde / 0.4, nobs=n, alpha=0.05) == pytest.approx(
        0.99, abs=1e-9
    )


@pytest.mark.parametrize(
    ("passes", "attempts", "level"), [(7, 10, 0.95), (1, 40, 0.9), (150_000, 200_000, 0.95)]
)
def test_beta_binomial_of_one_attempt_per_case_is_the_beta_posterior(
    passes: int, attempts: int, level: float
) -> None:
    """With one attempt per case the ICC drops out of the likelihood, so μ's posterior under
    the uniform prior is Beta(S + 1, N − S + 1) in closed form. 200 000 cases make the
    posterior a few grid bins wide, which the refined grid must still resolve."""
    low, high, sd = sp.beta_binomial_bounds([[attempts - passes, passes]], [0, 1], [1, 1], level)
    exact = sps.beta(passes + 1, attempts - passes + 1)
    width = exact.isf((1 - level) / 2) - exact.ppf((1 - level) / 2)
    assert low[0] == pytest.approx(exact.ppf((1 - level) / 2), abs=1e-3 * width)
    assert high[0] == pytest.approx(exact.isf((1 - level) / 2), abs=1e-3 * width)
    assert sd[0] == pytest.approx(exact.std(), rel=1e-3)


def _beta_binomial_posterior_bounds(
    passes: np.ndarray, attempts: np.ndarray, level: float
) -> tuple[float, float]:
    """The posterior of μ by brute force: the ICC integrated out by Gauss–Legendre over the
    Beta(0.3, 0.8) prior's quantile function (no Gauss–Jacobi), the beta-binomial written
    with scipy's betaln, on a 1000-point grid of μ."""
    from scipy.special import betaln, gammaln, roots_legendre

    pairs, counts = np.unique(np.stack([passes, attempts], axis=1), axis=0, return_counts=True)
    c, k = (pairs[:, j].astype(float)[:, None, None] for j in (0, 1))
    x, weight = roots_legendre(200)
    rho = np.clip(sps.beta(0.3, 0.8).ppf((x + 1) / 2), 1e-15, 1 - 1e-15)
    kappa = (1 / rho - 1)[None, None, :]
    mu = ((np.arange(1000) + 0.5) / 1000)[None, :, None]
    comb = gammaln(k + 1) - gammaln(c + 1) - gammaln(k - c + 1)
    mixed = (
        comb
        + betaln(c + mu * kappa, k - c + (1 - mu) * kappa)
        - betaln(mu * kappa, (1 - mu) * kappa)
    )
    # κ beyond 1e7 is the binomial limit (betaln of huge arguments loses the difference)
    binomial = comb + c * np.log(mu) + (k - c) * np.log1p(-mu)
    log_lik = (counts[:, None, None] * np.where(kappa > 1e7, binomial, mixed)).sum(axis=0)
    density = np.exp(log_lik - log_lik.max()) @ weight
    cdf = np.concatenate([[0.0], np.cumsum(density) / density.sum()])
    edges = np.arange(1001) / 1000
    tail = (1 - level) / 2
    return float(np.interp(tail, cdf, edges)), float(np.interp(1 - tail, cdf, edges))


@pytest.mark.parametrize(
    ("passes", "attempts", "level"),
    [
        ([3, 3, 3, 3, 3, 0, 2, 2, 1, 3], [3] * 10, 0.95),
        ([0, 1, 2, 4, 5, 1], [5, 5, 2, 4, 7, 3], 0.95),
        ([1, 0, 0, 0, 0, 0, 0, 0], [4] * 8, 0.8),
    ],
)
def test_beta_binomial_bounds_match_a_brute_force_posterior(
    passes: list[int], attempts: list[int], level: float
) -> None:
    c, k = np.array(passes), np.array(attempts)
    pairs, counts = np.unique(np.stack([c, k], axis=1), axis=0, return_counts=True)
    low, high, _ = sp.beta_binomial_bounds(counts[None, :], pairs[:, 0], pairs[:, 1], level)
    assert (low[0], high[0]) == pytest.approx(
        _beta_binomial_posterior_bounds(c, k, level), abs=2e-5
    )


def test_beta_binomial_bounds_refuse_mismatched_or_impossible_counts() -> None:
    good = ([[1, 2]], [0, 1], [1, 1])
    sp.beta_binomial_bounds(*good)
    for weights, passes, attempts in (
        ([[1, 2, 3]], [0, 1], [1, 1]),  # a weight without its pair
        ([[1, 2]], [0, 1], [1, 1, 1]),  # passes and attempts of different lengths
        ([[1, 2]], [-1, 1], [1, 1]),
        ([[1, 2]], [0, 2], [1, 1]),
        ([[1, 2]], [0, 0], [1, 0]),
        ([[1, -2]], [0, 1], [1, 1]),
    ):
        with pytest.raises(ValueError, match=r"weights|passes"):
            sp.beta_binomial_bounds(weights, passes, attempts)


def test_beta_binomial_interval_of_one_case_and_of_none() -> None:
    one = sp.beta_binomial_interval([2], [3])
    low, high = _beta_binomial_posterior_bounds(np.array([2]), np.array([3]), 0.95)
    assert (one.ci_low, one.ci_high) == pytest.approx((min(low, 2 / 3), max(high, 2 / 3)), abs=2e-5)
    assert one.n_units == 1 and one.estimate == pytest.approx(2 / 3)
    # one pass in all: the posterior's lower bound, not the all-fail 0
    low, high = _beta_binomial_posterior_bounds(np.array([1, 0, 0]), np.array([3, 3, 3]), 0.95)
    few = sp.beta_binomial_interval([1, 0, 0], [3, 3, 3])
    assert (few.ci_low, few.ci_high) == pytest.approx((min(low, 1 / 9), high), abs=2e-5)
    assert few.ci_low > 0
    # single attempts: the closed-form Beta(S + 1, N - S + 1) posterior
    single = sp.beta_binomial_interval([1, 0, 1, 1], [1, 1, 1, 1])
    exact = sps.beta(4, 2)
    assert (single.ci_low, single.ci_high) == pytest.approx(
        (exact.ppf(0.025), exact.isf(0.025)), abs=1e-4
    )
    for passes, attempts in (([], []), ([0, 0], [0, 0])):
        none = sp.beta_binomial_interval(passes, attempts)
        assert none.n_units == 0 and math.isnan(none.estimate) and math.isnan(none.ci_low)


def test_beta_binomial_of_a_narrow_posterior_at_the_top_of_the_scale() -> None:
    """199 999 of 200 000 single attempts passed: the refined grid around the posterior
    must stop at μ = 1 (beyond it the likelihood is undefined). Closed form as above."""
    low, high, _ = sp.beta_binomial_bounds([[1, 199_999]], [0, 1], [1, 1])
    exact = sps.beta(200_000, 2)
    width = exact.isf(0.025) - exact.ppf(0.025)
    assert low[0] == pytest.approx(exact.ppf(0.025), abs=0.02 * width)
    assert high[0] == pytest.approx(exact.isf(0.025), abs=0.02 * width)
    assert high[0] <= 1.0
