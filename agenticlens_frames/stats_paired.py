r"""Pure estimators that treat the case as the unit: paired tests, corrections, planning.

Attempts on one case are correlated (a hard case fails every trial), so an interval that
counts attempts as independent draws is too narrow, and an unpaired test on two variants
that ran the same cases throws away the pairing. The functions here take numpy arrays
(per-case values, per-case differences, counts), never our tables; :mod:`.paired` turns
an experiment's tables into those arrays.

Notation: cases :math:`i = 1..n`, attempts :math:`j = 1..K_i`, per-attempt value
:math:`y_{ij}`, case mean :math:`\bar y_i`, :math:`N = \sum_i K_i`, per-case paired
difference :math:`d_i = \bar y_i^{B} - \bar y_i^{A}` (candidate minus baseline).

References
----------
.. [1] E. Miller, "Adding Error Bars to Evals: A Statistical Approach to Language Model
   Evaluations", arXiv:2411.00640 (2024): case-clustered errors, paired differences,
   power analysis.
.. [2] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J.
   Statist. 6 (1979); Y. Benjamini and Y. Hochberg, "Controlling the false discovery
   rate", JRSS-B 57 (1995).
.. [3] L. Kish, *Survey Sampling* (1965) (design effect); W. G. Cochran, *Sampling
   Techniques*, 3rd ed. (1977), §10.6 (cost-optimal two-stage sampling).
.. [4] D. G. Bonett and R. M. Price, "Adjusted Wald confidence interval for a difference
   of binomial proportions based on paired data", J. Educ. Behav. Stat. 37 (2012);
   M. W. Fagerland, S. Lydersen and P. Laake, Stat. Med. 33 (2014).
.. [5] A. C. Cameron and D. L. Miller, "A practitioner's guide to cluster-robust
   inference", J. Human Resources 50 (2015) (CR1).
.. [6] L. D. Brown, T. T. Cai and A. DasGupta, "Interval estimation for a binomial
   proportion", Statist. Sci. 16 (2001) (Wilson, Jeffreys).
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._choices import CORRECTION_CONTROLS, CORRECTIONS, PAIRED_METHODS
from ._distributions import (
    brentq,
    nct_cdf,
    nct_sf,
    norm_cdf,
    norm_isf,
    norm_ppf,
    norm_sf,
    t_isf,
    t_sf,
)
from .errors import check_proportion
from .stats import wilson_score

__all__ = [
    "BETA_BINOMIAL_ICC_PRIOR",
    "CORRECTIONS",
    "CORRECTION_CONTROLS",
    "PAIRED_METHODS",
    "GroupIntervals",
    "MeanInterval",
    "PairedResult",
    "VarianceComponents",
    "adjust_p_values",
    "arm_coverage",
    "beta_binomial_bounds",
    "beta_binomial_interval",
    "beta_binomial_intervals",
    "bonett_price_interval",
    "case_bootstrap",
    "cluster_robust_interval",
    "cost_optimal_trials",
    "degenerate_sign_flip_p",
    "jeffreys_interval",
    "mcnemar_exact",
    "mcnemar_mid_p",
    "noise_floor",
    "noninferiority_bound",
    "noninferiority_bound_from_summary",
    "paired_difference",
    "paired_mde",
    "paired_power",
    "paired_sample_size",
    "per_test_alpha",
    "sign_flip_test",
    "t_interval",
    "trials_for_standard_error",
    "variance_components",
    "wilson_effective_interval",
    "wilson_score_interval",
]

# CORRECTIONS, CORRECTION_CONTROLS and PAIRED_METHODS live in _choices (imported above):
# the command line reads them without loading numpy and pandas.

PairedMethod = Literal["t", "bootstrap", "permutation", "wilcoxon", "mcnemar"]

#: Sign vectors are enumerated exactly up to this many units (2**16 rows).
_EXACT_SIGN_FLIP_LIMIT = 16
#: Rows × units per chunk of a resampling matrix (bounds memory to a few tens of MB).
_CHUNK_CELLS = 1 << 22


# --------------------------------------------------------------------------- helpers


class _LazyScipy:
    """scipy.stats / scipy.optimize on first use: importing them costs most of a second,
    and the configuration code that imports this module's constants needs neither."""

    def __getattr__(self, name: str) -> object:
        if name in _OPTIMIZE:  # scipy.optimize alone costs half of scipy.stats
            from scipy import optimize

            return getattr(optimize, name)
        from scipy import optimize, stats

        return getattr(stats, name) if hasattr(stats, name) else getattr(optimize, name)


_OPTIMIZE = frozenset({"brentq", "brenth", "bisect", "root_scalar", "minimize_scalar"})


sps = _LazyScipy()


def _check_level(confidence_level: float) -> None:
    check_proportion(confidence_level, "confidence_level")


def _check_alpha(alpha: float) -> None:
    check_proportion(alpha, "alpha")


def _finite(values: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (drop missing cases first)")
    return array


def all_equal(values: np.ndarray) -> bool:
    """Whether two or more values are all the same up to float noise from averaging
    attempts (a spread of at most 1e-12 of their size): such differences have no spread,
    and a standard error of 1e-17 from the residue would read as certainty.

    Examples
    --------
    >>> all_equal(np.array([0.1 + 0.2, 0.3])), all_equal(np.array([0.3, 0.31]))
    (True, False)
    """
    if len(values) < 2:
        return False
    spread = float(np.max(values) - np.min(values))
    return spread <= 1e-12 * max(1.0, float(np.max(np.abs(values))))


def cluster_codes(clusters: ArrayLike | None, n: int) -> np.ndarray:
    """Integer codes 0..G-1 of ``n`` values' cluster labels, in the sorted order of the
    labels' text (each value its own cluster when ``clusters`` is None).

    Examples
    --------
    >>> cluster_codes(["b", "a", "b", 10, 9], 5).tolist()  # "10" sorts before "9"
    [3, 2, 3, 0, 1]
    >>> cluster_codes(None, 3).tolist()
    [0, 1, 2]
    """
    if clusters is None:
        return np.arange(n)
    labels = np.asarray(clusters).ravel()
    if len(labels) != n:
        raise ValueError(f"clusters has {len(labels)} labels for {n} values")
    # Codes of the labels' text in sorted order (as np.unique(labels.astype(str)) gives),
    # hashing the labels first so only the distinct ones are turned into text and sorted.
    first, distinct = pd.factorize(labels, use_na_sentinel=False)
    if isinstance(distinct, np.ndarray) and distinct.dtype.kind in "iu":
        rank = _decimal_text_rank(distinct)
        if rank is not None:
            return rank[first]
        # Other integers are turned into text by numpy in one pass (what str() gives).
        text = distinct.astype(str)
    else:
        text = np.asarray([str(v) for v in distinct], dtype=str)
    _, rank = np.unique(text, return_inverse=True)
    return rank.ravel()[first]


#: 10, 100, … 10**15: the digit counts :func:`_decimal_text_rank` works with.
_POWERS_OF_TEN = 10 ** np.arange(1, 16, dtype=np.int64)


def _decimal_text_rank(values: np.ndarray) -> np.ndarray | None:
    """The rank of each of the distinct ``values`` (non-negative integers below
    10**15) in the sorted order of their decimal text, without making the text; None for
    other values.

    Text sorts digit by digit, a prefix before what extends it: padding every number
    with zeros on the right to the same number of digits, then ordering equal padded
    values by their own digit count, is that order ("1" < "10" < "100" < "11" < "2").

    Examples
    --------
    >>> _decimal_text_rank(np.array([2, 10, 1, 100, 11])).tolist()
    [4, 1, 0, 2, 3]
    """
    if len(values) == 0 or values.min() < 0 or values.max() >= _POWERS_OF_TEN[-1]:
        return None
    numbers = values.astype(np.int64)
    digits = 1 + np.searchsorted(_POWERS_OF_TEN, numbers, side="right")
    padded = numbers * 10 ** (digits.max() - digits)
    rank = np.empty(len(numbers), dtype=np.intp)
    rank[np.lexsort((digits, padded))] = np.arange(len(numbers))
    return rank


# --------------------------------------------------------------------------- corrections


def adjust_p_values(p_values: ArrayLike, correction: str) -> np.ndarray:
    r"""Adjusted p-values for a family of tests (NaN entries are not in the family).

    With :math:`m` non-missing p-values sorted :math:`p_{(1)} \le \dots \le p_{(m)}`:

    ================== ==========================================================
    ``none``           :math:`\tilde p_i = p_i`
    ``bonferroni``     :math:`\tilde p_i = \min(1, m p_i)`
    ``holm``           :math:`\tilde p_{(i)} = \max_{j \le i} \min(1, (m-j+1) p_{(j)})`
    ``benjamini_hochberg`` :math:`\tilde p_{(i)} = \min_{j \ge i} \min(1, m p_{(j)}/j)`
    ================== ==========================================================

    A test is significant at level α when :math:`\tilde p \le α`; this equals
    ``statsmodels.stats.multitest.multipletests`` (``bonferroni``, ``holm``, ``fdr_bh``).

    Parameters
    ----------
    p_values
        Raw p-values in [0, 1]; NaN for comparisons that have no test.
    correction
        One of :data:`CORRECTIONS`.

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, NaN where the input is NaN.

    Examples
    --------
    >>> adjust_p_values([0.01, 0.04, 0.03], "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_p_values([0.01, 0.04, 0.03], "benjamini_hochberg").round(4).tolist()
    [0.03, 0.04, 0.04]
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    p = np.asarray(p_values, dtype=np.float64).ravel()
    present = ~np.isnan(p)
    if np.any((p[present] < 0) | (p[present] > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(p.shape, np.nan)
    values = p[present]
    m = len(values)
    if m == 0:
        return out
    if correction == "none":
        adjusted = values.copy()
    elif correction == "bonferroni":
        adjusted = np.minimum(1.0, m * values)
    else:
        order = np.argsort(values, kind="mergesort")
        ranked = values[order]
        if correction == "holm":
            steps = np.maximum.accumulate((m - np.arange(m)) * ranked)
        else:
            steps = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(1.0, steps)
    out[present] = adjusted
    return out


def per_test_alpha(alpha: float, correction: str, family_size: int) -> float:
    """The level a single test must reach to be significant under a correction.

    Bonferroni's α/m, which is also what Holm and Benjamini–Hochberg demand of the
    smallest p-value; α itself for ``none``. Planning (power, MDE) and analysis both use
    this, so a planned detectable effect is the one the analysis can declare.

    Examples
    --------
    >>> per_test_alpha(0.05, "holm", 4), per_test_alpha(0.05, "none", 4)
    (0.0125, 0.05)
    """
    _check_alpha(alpha)
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    if correction == "none" or family_size < 1:
        return alpha
    return alpha / family_size


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class MeanInterval:
    """A mean with its standard error and a two-sided interval.

    ``df`` is the Student-t degrees of freedom (inf for a normal reference); ``n_units``
    the number of independent units (cases, or clusters when clustered).
    """

    estimate: float
    standard_error: float
    df: float
    ci_low: float
    ci_high: float
    n_units: int


def _t_quantile(confidence_level: float, df: float) -> float:
    # scipy.special's stdtrit is what scipy.stats.t.ppf evaluates, without the ~0.6 s import
    # of scipy.stats that every report would otherwise pay for its case-level intervals.
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence_level / 2))


def _estimate_only(estimate: float, n_units: int) -> MeanInterval:
    """Fewer than two units: no spread to measure, so no error, interval or df."""
    nan = math.nan
    return MeanInterval(estimate, nan, nan, nan, nan, n_units)


def _t_based(mean: float, se: float, n_units: int, confidence_level: float) -> MeanInterval:
    """``mean ± t(n_units − 1) · se``."""
    q = _t_quantile(confidence_level, n_units - 1)
    return MeanInterval(mean, se, float(n_units - 1), mean - q * se, mean + q * se, n_units)


def t_interval(values: ArrayLike, confidence_level: float = 0.95) -> MeanInterval:
    r"""Student-t interval for the mean of per-case values (the case as the unit).

    :math:`\hat\mu \pm t_{n-1,\,1-α/2}\, s/\sqrt n`, with :math:`s` the sample SD of the
    case values. For per-case means of repeated attempts this is Miller's case-clustered
    interval; it equals CR1 with a :math:`t_{n-1}` reference when every case has the
    same number of attempts.

    Parameters
    ----------
    values
        One finite value per case.
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    MeanInterval
        NaN standard error and bounds with fewer than two cases.

    Examples
    --------
    >>> r = t_interval([0.2, 0.4, 0.6, 0.8], 0.95)
    >>> round(r.estimate, 3), round(r.ci_low, 4), round(r.ci_high, 4)
    (0.5, 0.0891, 0.9109)
    """
    _check_level(confidence_level)
    x = _finite(values, "values")
    n = len(x)
    if n < 2:
        return _estimate_only(float(np.mean(x)) if n else math.nan, n)
    sd = 0.0 if all_equal(x) else float(np.std(x, ddof=1))
    return _t_based(float(np.mean(x)), sd / math.sqrt(n), n, confidence_level)


def cluster_robust_interval(
    values: ArrayLike, clusters: ArrayLike | None = None, confidence_level: float = 0.95
) -> MeanInterval:
    r"""CR1 cluster-robust interval for the plain mean of ``values``.

    .. math::

        \hat\mu = \frac1N\sum_u y_u, \qquad
        SE_{CR1} = \frac1N \sqrt{\frac{G}{G-1}\sum_g \Big(\sum_{u\in g}(y_u-\hat\mu)\Big)^2}

    with a :math:`t_{G-1}` reference (Cameron & Miller 2015). ``values`` are attempts
    with ``clusters`` their cases (Miller's trial-weighted estimator), or per-case values
    with ``clusters`` a case metadata field (passage, topic, repository). Identical to
    statsmodels' OLS-on-a-constant cluster covariance with ``use_correction=True`` and
    ``use_t``.

    Parameters
    ----------
    values
        Finite values, one per unit.
    clusters
        A label per unit; ``None`` makes every unit its own cluster.
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    MeanInterval
        ``n_units`` is the number of clusters G; NaN bounds when G < 2.

    Examples
    --------
    >>> r = cluster_robust_interval([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"])
    >>> round(r.estimate, 4), round(r.standard_error, 4), r.df
    (0.5, 0.2887, 2.0)
    """
    _check_level(confidence_level)
    y = _finite(values, "values")
    n = len(y)
    if n == 0:
        return _estimate_only(math.nan, 0)
    codes = cluster_codes(clusters, n)
    groups = int(codes.max()) + 1
    mean = float(np.mean(y))
    if groups < 2:
        return _estimate_only(mean, groups)
    sums = np.bincount(codes, weights=y - mean, minlength=groups)
    se = math.sqrt(groups / (groups - 1) * float(np.sum(sums * sums))) / n
    # Every cluster's mean equal (every value equal among them) makes each sum 0: float
    # residue (1e-17) would otherwise give a tiny SE and an infinite t.
    if all_equal(np.bincount(codes, weights=y, minlength=groups) / np.bincount(codes)):
        se = 0.0
    return _t_based(mean, se, groups, confidence_level)


def wilson_score_interval(
    proportion: float, n: float, quantile: float, *, all_fail: bool, all_pass: bool
) -> tuple[float, float]:
    r"""Wilson score interval for a proportion with a (possibly fractional) sample size.

    :math:`(\hat p + q^2/2n \pm q\sqrt{\hat p(1-\hat p)/n + q^2/4n^2})/(1 + q^2/n)`,
    clipped to [0, 1], with the lower bound exactly 0 when every outcome failed and the
    upper bound exactly 1 when every outcome passed (Wilson 1927; the rule of
    :func:`agenticlens_frames.stats.wilson_interval`).

    Examples
    --------
    >>> low, high = wilson_score_interval(0.85, 20, 1.959963984540054,
    ...                                   all_fail=False, all_pass=False)
    >>> round(low, 3), round(high, 3)
    (0.64, 0.948)
    """
    if not n > 0:
        return math.nan, math.nan
    low, high = wilson_score(proportion, n, quantile, all_fail=all_fail, all_pass=all_pass)
    return float(low), float(high)


def wilson_effective_interval(
    successes: float, attempts: float, effective_n: float, n_cases: int, confidence_level: float
) -> tuple[float, float]:
    r"""Wilson interval on the effective sample size, with a :math:`t_{n-1}` quantile.

    The pooled rate :math:`\hat p = S/N` of repeated attempts is put into the Wilson
    formula with :math:`N` replaced by :math:`n_{eff} = N/\mathrm{DEFF}` and the normal
    quantile replaced by :math:`t_{n-1,\,1-α/2}` (n = cases). In the team's coverage study
    (research/coverage-sim.md, method c′) it covers 94.3–97.5 % outside the corner of a
    95 % pass rate with ≤ 50 cases, where the pooled Wilson on N attempts falls to 53 %.

    Parameters
    ----------
    successes, attempts
        Passes and attempts pooled over the cases.
    effective_n
        :math:`n_{eff}` from :func:`variance_components`.
    n_cases
        Number of cases (sets the t degrees of freedom).
    confidence_level
        Strictly between 0 and 1.

    Examples
    --------
    >>> low, high = wilson_effective_interval(240, 300, 128.0, 60, 0.95)
    >>> round(low, 3), round(high, 3)
    (0.721, 0.861)
    """
    _check_level(confidence_level)
    if attempts <= 0 or n_cases < 2 or not effective_n > 0:
        return math.nan, math.nan
    q = _t_quantile(confidence_level, n_cases - 1)
    return wilson_score_interval(
        successes / attempts,
        effective_n,
        q,
        all_fail=successes == 0,
        all_pass=successes == attempts,
    )


def jeffreys_interval(
    successes: ArrayLike, trials: ArrayLike, confidence_level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    r"""Equal-tailed Jeffreys interval, vectorised: Beta(x + ½, m − x + ½) quantiles.

    Same numbers as ``statsmodels.stats.proportion.proportion_confint(method="jeffreys")``
    for 0 < x < m; at the boundaries we follow Brown, Cai & DasGupta (2001) and set the
    lower bound to 0 at x = 0 and the upper bound to 1 at x = m (statsmodels keeps the
    Beta quantile there). NaN where m = 0.

    Examples
    --------
    >>> low, high = jeffreys_interval([0, 4, 5], [5, 5, 5])
    >>> low.round(3).tolist(), high.round(3).tolist()
    ([0.0, 0.371, 0.621], [0.379, 0.977, 1.0])
    """
    _check_level(confidence_level)
    x = np.asarray(successes, dtype=np.float64)
    m = np.asarray(trials, dtype=np.float64)
    x, m = np.broadcast_arrays(x, m)
    alpha = 1 - confidence_level
    with np.errstate(invalid="ignore", divide="ignore"):
        low = sps.beta.ppf(alpha / 2, x + 0.5, m - x + 0.5)
        high = sps.beta.isf(alpha / 2, x + 0.5, m - x + 0.5)
    low = np.where(x == 0, 0.0, low)
    high = np.where(x == m, 1.0, high)
    empty = m == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


# --------------------------------------------------------------------------- beta-binomial

#: Prior of the beta-binomial interval: μ ~ Uniform(0, 1), ICC ρ ~ Beta(0.3, 0.8) (see
#: docs/statistics.md §4 for why these; benchmarks/coverage.py measures them).
BETA_BINOMIAL_ICC_PRIOR = (0.3, 0.8)
#: Grid of the posterior: mean-pass-rate bins on [0, 1] × Gauss–Jacobi nodes in the ICC.
_BB_MU_POINTS = 1000
_BB_ICC_NODES = 16
#: A posterior narrower than this many bins is recomputed on a finer grid around it.
_BB_MIN_SPAN_BINS = 30
#: Rows of the (rows × grid) posterior evaluated at once (bounds memory to ~30 MB).
_BB_CHUNK_CELLS = 1 << 22


#: The grid of :func:`_bb_icc_grid` for 16 nodes and the Beta(0.3, 0.8) prior, as exact
#: float hex: ``scipy.special.roots_jacobi`` (what it was computed with) needs
#: scipy.linalg, a twentieth of a second of every ``experiment run`` otherwise. Checked
#: against ``roots_jacobi`` and against the prior's moments in tests/test_stats_paired.py.
_BB_ICC_TABLE: dict[tuple[int, tuple[float, float]], tuple[tuple[str, ...], tuple[str, ...]]] = {
    (16, (0.3, 0.8)): (
        (
            "0x1.5ced0a451f200p-10", "0x1.2dee64caaad50p-6", "0x1.b9d44dea076d8p-5",
            "0x1.b4197835e679cp-4", "0x1.6468023fc41cep-3", "0x1.041f0373ec8eep-2",
            "0x1.5fa6765e238f8p-2", "0x1.c14b77c768b52p-2", "0x1.12a9ae687a2a3p-1",
            "0x1.43f6136ce5154p-1", "0x1.72a8eea1e769bp-1", "0x1.9cf9af6028e90p-1",
            "0x1.c14aa1905ada4p-1", "0x1.de38bebb7cac5p-1", "0x1.f2a95535a78a8p-1",
            "0x1.fdd5f12709662p-1",
        ),
        (
            "0x1.b3704525cf8cfp-3", "0x1.e6ea1ace83dabp-4", "0x1.8300127b2ef12p-4",
            "0x1.4bb3381747086p-4", "0x1.2585743a12209p-4", "0x1.07e33758e49a6p-4",
            "0x1.de291302ec131p-5", "0x1.b24fbc6f76ae7p-5", "0x1.89e72fd350406p-5",
            "0x1.635dbbce5a6e3p-5", "0x1.3d7e72c630afcp-5", "0x1.173304d3d4575p-5",
            "0x1.de96eea9029a7p-6", "0x1.88505e5d73f30p-6", "0x1.25c070ded072cp-6",
            "0x1.4dbedf80aadbfp-7",
        ),
    ),
}  # fmt: skip


def _bb_icc_grid(
    nodes: int | None = None, prior: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """ICC nodes and normalised weights of Gauss–Jacobi quadrature for the Beta prior.

    Gauss–Jacobi integrates the prior's ρ^(a−1)(1−ρ)^(b−1) factor exactly, so the
    singular density at ρ = 0 is no problem for the quadrature. The default grid is read
    from :data:`_BB_ICC_TABLE`; any other is computed with scipy.
    """
    nodes = _BB_ICC_NODES if nodes is None else nodes
    prior = BETA_BINOMIAL_ICC_PRIOR if prior is None else prior
    table = _BB_ICC_TABLE.get((nodes, prior))
    if table is not None:
        x_hex, w_hex = table
        return np.array([float.fromhex(v) for v in x_hex]), np.array(
            [float.fromhex(v) for v in w_hex]
        )
    from scipy.special import roots_jacobi

    a, b = prior
    x, w = roots_jacobi(nodes, b - 1.0, a - 1.0)
    return (x + 1.0) / 2.0, w / w.sum()


def _bb_log_pmf(
    passes: np.ndarray, attempts: np.ndarray, mu: np.ndarray, kappa: np.ndarray
) -> np.ndarray:
    """log BetaBinomial(c; K, μκ, (1−μ)κ) for P (c, K) pairs × G grid points."""
    from scipy.special import gammaln

    c = passes.astype(np.float64)[:, None]
    k = attempts.astype(np.float64)[:, None]
    a = (mu * kappa)[None, :]
    b = ((1.0 - mu) * kappa)[None, :]
    s = kappa[None, :]
    return (
        gammaln(k + 1) - gammaln(c + 1) - gammaln(k - c + 1)
        + gammaln(c + a) - gammaln(a)
        + gammaln(k - c + b) - gammaln(b)
        + gammaln(s) - gammaln(k + s)
    )  # fmt: skip


def _bb_posterior_bounds(
    weights: np.ndarray,
    passes: np.ndarray,
    attempts: np.ndarray,
    confidence_level: float,
    low_edge: float = 0.0,
    high_edge: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Equal-tailed posterior bounds of μ, posterior SD, and the 1e-9 tail span, per row.

    ``weights`` (rows × P) counts the cases with each (passes, attempts) pair. μ is
    restricted to [low_edge, high_edge] (the posterior mass outside is negligible when a
    caller zooms in).
    """
    width = (high_edge - low_edge) / _BB_MU_POINTS
    mu = low_edge + (np.arange(_BB_MU_POINTS) + 0.5) * width
    rho, rho_weights = _bb_icc_grid()
    kappa = 1.0 / rho - 1.0
    grid_mu = np.repeat(mu, len(rho))
    table = _bb_log_pmf(passes, attempts, grid_mu, np.tile(kappa, len(mu)))
    log_prior = np.tile(np.log(rho_weights), len(mu))
    alpha = 1.0 - confidence_level
    rows = weights.shape[0]
    low, high = np.empty(rows), np.empty(rows)
    sd, span = np.empty(rows), np.empty(rows)
    edges = low_edge + np.arange(_BB_MU_POINTS + 1) * width
    step = max(1, _BB_CHUNK_CELLS // table.shape[1])
    for start in range(0, rows, step):
        part = weights[start : start + step].astype(np.float64)
        log_post = part @ table + log_prior
        log_post -= log_post.max(axis=1, keepdims=True)
        mass = np.exp(log_post).reshape(len(part), len(mu), len(rho)).sum(axis=2)
        mass /= mass.sum(axis=1, keepdims=True)
        cdf = np.concatenate([np.zeros((len(part), 1)), np.cumsum(mass, axis=1)], axis=1)
        out = slice(start, start + len(part))
        low[out] = _cdf_quantile(cdf, edges, alpha / 2)
        high[out] = _cdf_quantile(cdf, edges, 1 - alpha / 2)
        mean = mass @ mu
        sd[out] = np.sqrt(np.maximum(mass @ (mu * mu) - mean * mean, 0.0))
        span[out] = _cdf_quantile(cdf, edges, 1 - 1e-9) - _cdf_quantile(cdf, edges, 1e-9)
    return low, high, sd, span


def _cdf_quantile(cdf: np.ndarray, edges: np.ndarray, q: float) -> np.ndarray:
    """Per row, the point where a piecewise-linear CDF on ``edges`` reaches ``q``."""
    rows = np.arange(cdf.shape[0])
    above = np.argmax(cdf >= q, axis=1)  # first edge with CDF >= q (never edge 0: CDF 0)
    above = np.maximum(above, 1)
    before, after = cdf[rows, above - 1], cdf[rows, above]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(after > before, (q - before) / (after - before), 0.0)
    return edges[above - 1] + frac * (edges[above] - edges[above - 1])


def beta_binomial_bounds(
    weights: ArrayLike,
    passes: ArrayLike,
    attempts: ArrayLike,
    confidence_level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Posterior interval of the mean pass rate under a beta-binomial model, vectorised.

    Model: case i passes each of its :math:`K_i` attempts independently with probability
    :math:`p_i \sim \mathrm{Beta}(μκ, (1-μ)κ)`, so the ICC is :math:`ρ = 1/(1+κ)`.
    Prior: :math:`μ \sim U(0, 1)` and :math:`ρ \sim \mathrm{Beta}(0.3, 0.8)`
    (:data:`BETA_BINOMIAL_ICC_PRIOR`). The posterior of μ is computed on a grid
    (1000 bins × 16 Gauss–Jacobi nodes in ρ, refined around narrow posteriors) and the
    equal-tailed :math:`(1-α/2)` quantiles are returned.

    Each row of ``weights`` is one data set: the number of its cases with
    ``passes[j]`` passes out of ``attempts[j]`` attempts (the likelihood depends on the
    cases only through these counts), so one call evaluates many data sets at once.

    Parameters
    ----------
    weights
        (rows, P) non-negative counts of cases per (passes, attempts) pair.
    passes, attempts
        (P,) the pairs.
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    low, high, sd
        Per row: the bounds and the posterior standard deviation of μ.

    Examples
    --------
    >>> low, high, _ = beta_binomial_bounds([[2, 3, 5]], [0, 2, 3], [3, 3, 3])
    >>> round(float(low[0]), 3), round(float(high[0]), 3)
    (0.434, 0.856)
    """
    _check_level(confidence_level)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    c = np.asarray(passes, dtype=np.int64).ravel()
    k = np.asarray(attempts, dtype=np.int64).ravel()
    if w.shape[1] != len(c) or len(c) != len(k):
        raise ValueError("weights must have one column per (passes, attempts) pair")
    if np.any((c < 0) | (c > k) | (k < 1)) or np.any(w < 0):
        raise ValueError("need 0 <= passes <= attempts, attempts >= 1 and weights >= 0")
    low, high, sd, span = _bb_posterior_bounds(w, c, k, confidence_level)
    # A posterior only a few bins wide (thousands of cases) is recomputed on a grid
    # spanning its own 1e-9 tails, so the bin width never limits the precision.
    narrow = np.flatnonzero(span < _BB_MIN_SPAN_BINS / _BB_MU_POINTS)
    for row in narrow.tolist():
        centre, reach = (low[row] + high[row]) / 2, max(span[row], 1e-12)
        lo_edge, hi_edge = max(0.0, centre - reach), min(1.0, centre + reach)
        fine = _bb_posterior_bounds(w[row : row + 1], c, k, confidence_level, lo_edge, hi_edge)
        low[row], high[row], sd[row] = fine[0][0], fine[1][0], fine[2][0]
    return low, high, sd


def beta_binomial_interval(
    passes: ArrayLike, attempts: ArrayLike, confidence_level: float = 0.95
) -> MeanInterval:
    r"""Interval for a variant's mean pass rate from per-case pass counts (beta-binomial).

    The recommended pass-rate interval when cases are not clustered further: the
    equal-tailed posterior interval of :func:`beta_binomial_bounds`, widened if needed so
    that it contains the estimate :math:`\hat p = S/N`, with the lower bound exactly 0
    when nothing passed and the upper bound exactly 1 when everything passed (as Wilson).
    In the 135-cell coverage grid (benchmarks/coverage.py) it covers 94–97 % everywhere
    outside a 95 % pass rate with ≤ 50 cases and ≥ 92 % inside it, where the Wilson on
    n_eff falls to 89 %.

    Parameters
    ----------
    passes, attempts
        Per case: passes and evaluated attempts (cases with no attempt are ignored).
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    MeanInterval
        ``estimate`` S/N, ``standard_error`` the posterior SD, ``df`` NaN (not a t
        interval), ``n_units`` the number of cases. NaN bounds without any attempt.

    Examples
    --------
    >>> r = beta_binomial_interval([3, 3, 3, 3, 3, 0, 2, 2, 1, 3], [3] * 10)
    >>> round(r.estimate, 3), round(r.ci_low, 3), round(r.ci_high, 3)
    (0.767, 0.522, 0.9)
    """
    c = _as_whole(passes, "passes")
    k = _as_whole(attempts, "attempts")
    if c.shape != k.shape:
        raise ValueError("passes and attempts must have one entry per case")
    if len(k) == 0 or not np.any(k > 0):
        return _estimate_only(math.nan, 0)
    r = beta_binomial_intervals(c, k, np.zeros(len(k), dtype=np.int64), 1, confidence_level)
    return MeanInterval(
        float(r.estimate[0]), float(r.sd[0]), math.nan, float(r.low[0]), float(r.high[0]),
        int(r.n_cases[0]),
    )  # fmt: skip


@dataclass(frozen=True)
class GroupIntervals:
    """Per group, :func:`beta_binomial_intervals`' results (arrays of one length)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    sd: np.ndarray
    n_cases: np.ndarray


def beta_binomial_intervals(
    passes: ArrayLike,
    attempts: ArrayLike,
    groups: ArrayLike,
    n_groups: int,
    confidence_level: float = 0.95,
) -> GroupIntervals:
    """:func:`beta_binomial_interval` for many variants at once, one call of the model.

    Parameters
    ----------
    passes, attempts
        Per case: passes and evaluated attempts (cases with no attempt are ignored).
    groups
        Per case, its group (a variant, a run's variant) as an integer in
        ``[0, n_groups)``.
    n_groups
        How many groups; a group without any attempt gets NaN bounds.
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    GroupIntervals
        Per group: ``estimate`` S/N, ``low``/``high`` (the posterior interval widened to
        hold the estimate, exactly 0 / 1 when nothing / everything passed), ``sd`` the
        posterior SD, ``n_cases`` the cases with an attempt.

    Examples
    --------
    >>> r = beta_binomial_intervals([3, 3, 0, 3, 1], [3, 3, 3, 3, 3], [0, 0, 0, 1, 1], 3)
    >>> r.estimate.round(3).tolist(), r.n_cases.tolist()
    ([0.667, 0.667, nan], [3, 2, 0])
    >>> bool(r.low[0] == beta_binomial_interval([3, 3, 0], [3, 3, 3]).ci_low)
    True
    """
    c = _as_whole(passes, "passes")
    k = _as_whole(attempts, "attempts")
    g = np.asarray(groups, dtype=np.int64).ravel()
    if not (c.shape == k.shape == g.shape):
        raise ValueError("passes, attempts and groups must have one entry per case")
    if len(g) and (g.min() < 0 or g.max() >= n_groups):
        raise ValueError("groups must lie in [0, n_groups)")
    keep = k > 0
    c, k, g = c[keep], k[keep], g[keep]
    if np.any(c > k):
        raise ValueError("passes must not exceed attempts")
    n_cases = np.bincount(g, minlength=n_groups).astype(np.int64)
    total = np.bincount(g, weights=k, minlength=n_groups)
    passed = np.bincount(g, weights=c, minlength=n_groups)
    nan = np.full(n_groups, np.nan)
    estimate, low, high, sd = nan.copy(), nan.copy(), nan.copy(), nan.copy()
    seen = np.flatnonzero(n_cases > 0)
    if len(seen):
        # The distinct (passes, attempts) pairs in lexicographic order (one integer key
        # per pair, attempts varying fastest), and per group how many cases have each:
        # the likelihood depends on the cases only through these counts.
        width = int(k.max()) + 1
        keys, code = np.unique(c * width + k, return_inverse=True)
        pairs = np.stack([keys // width, keys % width], axis=1)
        counts = np.bincount(g * len(keys) + code.ravel(), minlength=n_groups * len(keys))
        weights = counts.reshape(n_groups, len(keys))[seen]
        lo, hi, spread = beta_binomial_bounds(weights, pairs[:, 0], pairs[:, 1], confidence_level)
        est = passed[seen] / total[seen]
        estimate[seen], sd[seen] = est, spread
        low[seen] = np.where(passed[seen] == 0, 0.0, np.minimum(lo, est))
        high[seen] = np.where(passed[seen] == total[seen], 1.0, np.maximum(hi, est))
    return GroupIntervals(estimate, low, high, sd, n_cases)


def _as_whole(values: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(array)) or np.any(array != np.round(array)) or np.any(array < 0):
        raise ValueError(f"{name} must be non-negative whole numbers")
    return array.astype(np.int64)


# --------------------------------------------------------------------------- variance


@dataclass(frozen=True)
class VarianceComponents:
    r"""One-way random-effects decomposition of per-attempt values by case.

    Attributes
    ----------
    n_cases, n_attempts
        n and N.
    mean
        Trial-weighted mean :math:`\sum y/N`.
    case_mean
        Case-weighted mean :math:`\frac1n\sum_i \bar y_i`.
    within_variance
        :math:`\hat\sigma_w^2` = ANOVA mean square within (pooled within-case variance).
    between_variance
        :math:`\hat\sigma_b^2 = \max(0, (MS_B - MS_W)/n_0)`.
    icc
        :math:`\rho = \sigma_b^2/(\sigma_b^2+\sigma_w^2)`; NaN when not estimable (fewer
        than two cases, no case with two attempts, or every value identical: 0/0).
    design_effect
        :math:`1 + (\tilde K - 1)\rho` with :math:`\tilde K = \sum K_i^2/N` (= K when
        balanced); when the ICC is not estimable, the conservative bound ρ = 1 (each case
        counts once).
    effective_n
        :math:`N/\mathrm{DEFF}`.
    mean_attempts
        :math:`\bar K = N/n`.
    """

    n_cases: int
    n_attempts: int
    mean: float
    case_mean: float
    within_variance: float
    between_variance: float
    icc: float
    design_effect: float
    effective_n: float
    mean_attempts: float
    note: str = ""


def variance_components(values: ArrayLike, cases: ArrayLike) -> VarianceComponents:
    r"""Within / between case variance, ICC, design effect and effective sample size.

    One-way ANOVA estimators (Kish 1965; Miller 2024 §"resampling") with unbalanced
    cases allowed:

    .. math::

        MS_W = \frac{\sum_i\sum_j (y_{ij}-\bar y_i)^2}{N-n},\quad
        MS_B = \frac{\sum_i K_i(\bar y_i-\bar y)^2}{n-1},\quad
        n_0 = \frac{N - \sum_i K_i^2/N}{n-1}

    :math:`\hat\sigma_w^2 = MS_W`, :math:`\hat\sigma_b^2 = \max(0, (MS_B-MS_W)/n_0)`. For
    balanced cases the ICC equals pingouin's ``ICC1``. Needs at least two cases and one
    case with two attempts (otherwise the variances are NaN), and some variation (when
    every value is identical the ICC is 0/0). Where it is not estimable the ICC is NaN,
    ``note`` says why, and the design effect uses the conservative bound ρ = 1 (each
    case counts once).

    Parameters
    ----------
    values
        One finite value per attempt.
    cases
        The attempt's case label.

    Examples
    --------
    >>> vc = variance_components([1, 1, 1, 0, 0, 0, 1, 0], [0, 0, 1, 1, 2, 2, 3, 3])
    >>> round(vc.within_variance, 3), round(vc.between_variance, 3), round(vc.icc, 3)
    (0.25, 0.042, 0.143)
    """
    y = _finite(values, "values")
    codes = cluster_codes(cases, len(y))
    n_attempts = len(y)
    if n_attempts == 0:
        nan = math.nan
        return VarianceComponents(0, 0, nan, nan, nan, nan, nan, nan, nan, nan, "no attempts")
    n = int(codes.max()) + 1
    k = np.bincount(codes, minlength=n).astype(np.float64)
    sums = np.bincount(codes, weights=y, minlength=n)
    case_means = sums / k
    grand = float(np.mean(y))
    resid = y - case_means[codes]
    ss_within = float(np.sum(resid * resid))
    ss_between = float(np.sum(k * (case_means - grand) ** 2))
    k_tilde = float(np.sum(k * k)) / n_attempts
    within = between = icc = math.nan
    note = ""
    if n < 2:
        note = "ICC not estimable: fewer than two cases"
    elif n_attempts == n:
        note = "ICC not estimable: no case has two attempts"
    else:
        within = ss_within / (n_attempts - n)
        ms_between = ss_between / (n - 1)
        n0 = (n_attempts - float(np.sum(k * k)) / n_attempts) / (n - 1)
        between = max(0.0, (ms_between - within) / n0)
        total = between + within
        if total > 0:
            icc = between / total
        else:
            note = "ICC not estimable: every value is identical (0/0)"
    if note:
        note += "; the design effect uses the conservative bound ICC = 1"
    deff = 1.0 + (k_tilde - 1.0) * (1.0 if math.isnan(icc) else icc)
    return VarianceComponents(
        n_cases=n,
        n_attempts=n_attempts,
        mean=grand,
        case_mean=float(np.mean(case_means)),
        within_variance=within,
        between_variance=between,
        icc=icc,
        design_effect=deff,
        effective_n=n_attempts / deff,
        mean_attempts=n_attempts / n,
        note=note,
    )


def noise_floor(
    within_variance: float, n_cases: int, trials: float = 1, confidence_level: float = 0.95
) -> float:
    r"""Two-run noise floor: the difference two runs of the *same* configuration exceed
    only with probability 1 − CL, :math:`z\sqrt{2\hat\sigma_w^2/(nK)}`.

    With unbalanced cases K is the harmonic mean of the attempts per case: the mean of case
    means then has within-case variance :math:`\hat\sigma_w^2\sum_i K_i^{-1}/n^2`.

    It is conditional on the suite (both runs see the same cases), so it measures re-run
    noise only; a difference between two variants smaller than this is indistinguishable
    from running one of them twice.

    Examples
    --------
    >>> round(noise_floor(0.16, 50), 4)
    0.1568
    """
    _check_level(confidence_level)
    if n_cases < 1 or trials < 1 or not within_variance >= 0:
        return math.nan
    z = statistics.NormalDist().inv_cdf(0.5 + confidence_level / 2)  # no scipy.stats import
    return z * math.sqrt(2 * within_variance / (n_cases * trials))


# --------------------------------------------------------------------------- paired tests


def mcnemar_exact(regressions: int, improvements: int) -> float:
    r"""McNemar's exact (conditional binomial) two-sided p-value.

    With b regressions (baseline passed, candidate failed) and c improvements:
    :math:`p = \min(1, 2\,P(X \le \min(b,c)))`, :math:`X \sim \mathrm{Bin}(b+c, ½)`;
    1 when there is no discordant case.

    Examples
    --------
    >>> round(mcnemar_exact(8, 2), 3)
    0.109
    """
    b, c = int(regressions), int(improvements)
    if b < 0 or c < 0:
        raise ValueError("counts must not be negative")
    if b + c == 0:
        return 1.0
    return float(min(1.0, 2.0 * sps.binom.cdf(min(b, c), b + c, 0.5)))


def mcnemar_mid_p(regressions: int, improvements: int) -> float:
    r"""McNemar mid-p: the exact p minus the point probability of the observed count.

    :math:`2[P(X \le m) - ½P(X = m)]`, m = min(b, c); less conservative than the exact
    test and recommended by Fagerland, Lydersen & Laake (2013).

    Examples
    --------
    >>> round(mcnemar_mid_p(8, 2), 4)
    0.0654
    """
    b, c = int(regressions), int(improvements)
    if b + c == 0:
        return 1.0
    m = min(b, c)
    return float(
        min(1.0, 2.0 * (sps.binom.cdf(m, b + c, 0.5) - 0.5 * sps.binom.pmf(m, b + c, 0.5)))
    )


def bonett_price_interval(
    regressions: int, improvements: int, n: int, confidence_level: float = 0.95
) -> tuple[float, float]:
    r"""Bonett–Price adjusted Wald interval for a paired difference of proportions.

    :math:`\tilde p_{b} = (b+1)/(n+2)`, :math:`\tilde p_{c} = (c+1)/(n+2)`,
    :math:`(\tilde p_c - \tilde p_b) \pm z\sqrt{(\tilde p_b + \tilde p_c - (\tilde p_c -
    \tilde p_b)^2)/(n+2)}`, truncated to [−1, 1]: Fagerland et al.'s (2014) recommended
    interval for candidate − baseline with one binary attempt per arm.

    Examples
    --------
    >>> low, high = bonett_price_interval(8, 2, 40)
    >>> round(low, 4), round(high, 4)
    (-0.2986, 0.0129)
    """
    _check_level(confidence_level)
    if n <= 0:
        return math.nan, math.nan
    z = float(sps.norm.ppf(0.5 + confidence_level / 2))
    pb = (regressions + 1) / (n + 2)
    pc = (improvements + 1) / (n + 2)
    delta = pc - pb
    se = math.sqrt((pb + pc - delta * delta) / (n + 2))
    return max(-1.0, delta - z * se), min(1.0, delta + z * se)


def _chunks(total: int, width: int) -> list[int]:
    rows = max(1, _CHUNK_CELLS // max(width, 1))
    return [min(rows, total - start) for start in range(0, total, rows)]


def sign_flip_test(
    differences: ArrayLike,
    *,
    clusters: ArrayLike | None = None,
    n_resamples: int = 9999,
    rng: np.random.Generator | int | None = None,
) -> tuple[float, str]:
    r"""Two-sided sign-flip (randomisation) test of a zero mean difference.

    The statistic is :math:`T = |\sum_g s_g D_g|` over random signs :math:`s_g = \pm1`,
    with :math:`D_g` the per-case differences (or their sums per cluster). With at most
    16 units every sign vector is enumerated (exact; equals
    ``scipy.stats.permutation_test(..., permutation_type="samples")``); otherwise
    :math:`p = (1 + \#\{T^* \ge T\})/(1 + B)`, valid at any B.

    Returns
    -------
    p_value, method
        ``method`` names exact or Monte-Carlo and the number of resamples.

    Examples
    --------
    >>> p, how = sign_flip_test([0.2, 0.4, 0.1, 0.3, 0.5])
    >>> p, how
    (0.0625, 'sign-flip permutation, exact (32 sign vectors)')
    """
    d = _finite(differences, "differences")
    codes = cluster_codes(clusters, len(d))
    if len(d) == 0:
        return math.nan, "sign-flip permutation"
    units = np.bincount(codes, weights=d)
    g = len(units)
    observed = abs(float(np.sum(units)))
    tolerance = 1e-12 * max(1.0, float(np.sum(np.abs(units))))
    if g <= _EXACT_SIGN_FLIP_LIMIT:
        total = 1 << g
        bits = (np.arange(total)[:, None] >> np.arange(g)) & 1
        null = np.abs((1 - 2 * bits) @ units)
        p = float(np.mean(null >= observed - tolerance))
        return p, f"sign-flip permutation, exact ({total} sign vectors)"
    generator = np.random.default_rng(rng)
    hits = 0
    for rows in _chunks(n_resamples, g):
        signs = generator.integers(0, 2, size=(rows, g), dtype=np.int8) * 2 - 1
        hits += int(np.sum(np.abs(signs @ units) >= observed - tolerance))
    p = (1 + hits) / (1 + n_resamples)
    return float(p), f"sign-flip permutation, Monte Carlo ({n_resamples} resamples)"


def degenerate_sign_flip_p(differences: ArrayLike, units: int) -> tuple[float, str]:
    r"""Exact sign-flip p-value when every per-case difference is the same value c.

    Every unit's sum (a case, or a cluster of cases) then has the sign of c, so
    :math:`|\sum_g s_g D_g| \ge |\sum_g D_g|` only when all signs agree: :math:`p = 2^{1-G}`
    for G units, and 1 when c = 0. Closed form, so exact at any G (the t statistic is
    undefined with zero variance).

    Examples
    --------
    >>> degenerate_sign_flip_p([0.2] * 20, 20)[0] == 2.0 ** -19
    True
    >>> degenerate_sign_flip_p([0.0] * 5, 5)
    (1.0, 'exact: every difference is 0')
    """
    d = _finite(differences, "differences")
    if not all_equal(d):
        raise ValueError("the differences are not all equal; use sign_flip_test")
    if float(np.max(np.abs(d))) == 0.0:
        return 1.0, "exact: every difference is 0"
    return (
        float(2.0 ** (1 - units)),
        f"sign-flip permutation, exact (2^(1-G), G={units}: every difference equal; "
        "t undefined with zero variance)",
    )


def case_bootstrap(
    differences: ArrayLike,
    *,
    clusters: ArrayLike | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    rng: np.random.Generator | int | None = None,
) -> tuple[float, float, float]:
    r"""Percentile bootstrap over cases (or clusters of cases), carrying their attempts.

    Resamples units with replacement and recomputes the mean difference
    :math:`\sum D^*_g / \sum n^*_g`. Only cases are resampled: the per-case value already
    contains the attempt-to-attempt noise (Davison & Hinkley 1997 §3.8). The p-value
    inverts a null-centred bootstrap, :math:`(1 + \#\{|\bar d^* - \bar d| \ge |\bar d|\})
    /(1 + B)`; it is far too small in small samples whose differences share one sign (no
    resample reaches the null), so :func:`paired_difference` tests with the sign flip
    instead and uses only the interval.

    Returns
    -------
    ci_low, ci_high, p_value

    Examples
    --------
    >>> low, high, p = case_bootstrap([0.2, 0.4, 0.1, 0.3, 0.5, 0.0, 0.2], rng=0)
    >>> bool(0.0 < low < 0.243 < high < 0.5), p < 0.01
    (True, True)
    """
    _check_level(confidence_level)
    d = _finite(differences, "differences")
    if len(d) < 2:
        return math.nan, math.nan, math.nan
    codes = cluster_codes(clusters, len(d))
    sums = np.bincount(codes, weights=d)
    sizes = np.bincount(codes).astype(np.float64)
    g = len(sums)
    if g < 2:
        return math.nan, math.nan, math.nan
    observed = float(np.sum(sums) / np.sum(sizes))
    generator = np.random.default_rng(rng)
    means = np.empty(n_resamples)
    start = 0
    for rows in _chunks(n_resamples, g):
        idx = generator.integers(0, g, size=(rows, g))
        means[start : start + rows] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
        start += rows
    alpha = 1 - confidence_level
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    tolerance = 1e-12 * max(1.0, abs(observed))
    hits = int(np.sum(np.abs(means - observed) >= abs(observed) - tolerance))
    p = (1 + hits) / (1 + n_resamples)
    return float(low), float(high), float(min(1.0, p))


@dataclass(frozen=True)
class PairedResult:
    """One paired comparison: the mean difference, its interval and its test."""

    n: int
    estimate: float
    standard_deviation: float
    standard_error: float
    df: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_value: float
    p_value_method: str
    degenerate: bool
    n_clusters: int
    improved: int
    regressed: int


def _t_p_value(estimate: float, se: float, df: float) -> float:
    if se == 0:
        return 1.0 if estimate == 0 else 0.0
    return 2 * t_sf(abs(estimate) / se, df)


def _wilcoxon_toward(differences: np.ndarray, estimate: float) -> tuple[float, str]:
    r"""Wilcoxon signed-rank p-value for a shift in the direction of the mean ``estimate``:
    :math:`\min(1, 2p_{dir})`, with :math:`p_{dir}` the one-sided p towards the sign of the
    mean (zero differences dropped).

    That is scipy's two-sided p whenever the ranks shift the way the mean does (scipy's is
    twice the smaller one-sided p). When skewed differences make them shift the other way
    (a small rise on most cases, one large fall), the test is no evidence for the mean's
    direction and the p-value is 1: the two-sided p called the mean's direction
    significant, a verdict the test's own evidence contradicts. A mean of 0 has no
    direction: p = 1.

    Examples
    --------
    >>> d = np.array([100.0] * 15 + [-5000.0])
    >>> round(float(sps.wilcoxon(d).pvalue), 4), _wilcoxon_toward(d, float(d.mean()))[0]
    (0.0029, 1.0)
    """
    nonzero = differences[differences != 0]
    name = "Wilcoxon signed-rank (zero differences dropped)"
    if not len(nonzero):
        # All-zero differences: no evidence either way (scipy refuses an empty sample).
        return 1.0, name
    if abs(estimate) <= 1e-12 * float(np.max(np.abs(nonzero))):
        # A mean of 0 (up to float residue, 1e-17 for 20 × 0.05 and one −1) has no
        # direction: ranks that shift anyway called a "+0.0 pp" row better or worse.
        return 1.0, name + "; the mean difference is 0, so no direction to test"
    side = "greater" if estimate > 0 else "less"
    p = min(1.0, 2 * float(sps.wilcoxon(nonzero, alternative=side).pvalue))
    if p >= 1.0 and float(sps.wilcoxon(nonzero).pvalue) < 1.0:
        name += (
            "; its ranks shift opposite to the mean difference, so p = 1 for the mean's direction"
        )
    return p, name


def arm_coverage(baseline: np.ndarray, candidate: np.ndarray) -> tuple[int, int, float, float]:
    """Two arms' per-case values (NaN: the arm has none for the case): how many cases only
    the baseline has, only the candidate has, and each arm's mean over the cases both have —
    what every paired row reports beside its difference.

    Examples
    --------
    >>> arm_coverage(np.array([1.0, 0.0, np.nan]), np.array([1.0, 1.0, 0.5]))
    (0, 1, 0.5, 1.0)
    """
    has_a, has_b = ~np.isnan(baseline), ~np.isnan(candidate)
    both = has_a & has_b
    return (
        int((has_a & ~has_b).sum()),
        int((~has_a & has_b).sum()),
        float(np.mean(baseline[both])),
        float(np.mean(candidate[both])),
    )


def paired_difference(
    differences: ArrayLike,
    *,
    method: PairedMethod = "t",
    confidence_level: float = 0.95,
    clusters: ArrayLike | None = None,
    baseline: ArrayLike | None = None,
    candidate: ArrayLike | None = None,
    n_resamples: int = 9999,
    rng: np.random.Generator | int | None = None,
) -> PairedResult:
    r"""Mean of per-case differences (candidate − baseline) with an interval and a test.

    ============== ============================================ ==========================
    method         interval                                     p-value
    ============== ============================================ ==========================
    ``t``          :math:`\bar d \pm t_{n-1} s_d/\sqrt n`        paired t (= ``ttest_rel``)
    ``bootstrap``  case-bootstrap percentile                    sign-flip randomisation
    ``permutation`` t interval                                  sign-flip randomisation
    ``wilcoxon``   t interval                                   Wilcoxon signed-rank
    ``mcnemar``    Bonett–Price adjusted Wald                   McNemar exact
    ============== ============================================ ==========================

    With ``clusters`` (a case metadata field) the t interval and test become CR1 with
    :math:`t_{G-1}`, the bootstrap resamples clusters and the sign flips act on cluster
    sums. ``mcnemar`` needs ``baseline`` and ``candidate`` as the single binary outcome
    of each case.

    When every difference is the same (``degenerate``), the t interval has zero width for
    an arithmetic reason, not certainty; the p-value then comes from the exact sign-flip
    test (:math:`2^{1-n}`, or 1 when every difference is 0), because the t statistic is
    undefined. ``mcnemar`` keeps its own interval and exact test, which need no variance
    (its p-value is that same number).

    Parameters
    ----------
    differences
        Per-case differences over the cases both arms scored.
    method
        One of :data:`PAIRED_METHODS`.
    confidence_level
        For the interval.
    clusters
        Optional cluster label per case.
    baseline, candidate
        Per-case binary outcomes (``mcnemar`` only).
    n_resamples, rng
        For ``bootstrap`` and Monte-Carlo ``permutation``.

    Examples
    --------
    >>> r = paired_difference([0.2, 0.0, 0.4, 0.2, -0.2, 0.2, 0.4, 0.0])
    >>> round(r.estimate, 3), round(r.p_value, 4), r.ci_method
    (0.15, 0.0796, 't')
    """
    _check_level(confidence_level)
    if method not in PAIRED_METHODS:
        raise ValueError(f"method must be one of {PAIRED_METHODS}, got {method!r}")
    d = _finite(differences, "differences")
    n = len(d)
    if method == "mcnemar":
        if baseline is None or candidate is None:
            raise ValueError("mcnemar needs the per-case baseline and candidate outcomes")
        outcomes_a = np.asarray(baseline, dtype=np.float64).ravel()
        outcomes_b = np.asarray(candidate, dtype=np.float64).ravel()
        if outcomes_a.shape != d.shape or outcomes_b.shape != d.shape:
            raise ValueError("baseline and candidate must have one outcome per case")
        if not np.all(np.isin(outcomes_a, (0.0, 1.0)) & np.isin(outcomes_b, (0.0, 1.0))):
            raise ValueError("mcnemar needs binary outcomes (one attempt per arm)")
    improved, regressed = int(np.sum(d > 0)), int(np.sum(d < 0))
    codes = None if clusters is None else cluster_codes(clusters, n)
    if codes is None:
        base = t_interval(d, confidence_level) if n else None
    else:
        if method in ("wilcoxon", "mcnemar"):
            raise ValueError(f"method {method!r} does not support clustered cases")
        base = cluster_robust_interval(d, codes, confidence_level) if n else None
    groups = n if codes is None else (int(codes.max()) + 1 if n else 0)
    if base is None:
        nan = math.nan
        return PairedResult(0, nan, nan, nan, nan, nan, nan, method, nan, method, False, 0, 0, 0)
    sd = float(np.std(d, ddof=1)) if n > 1 else math.nan
    degenerate = all_equal(d)
    if degenerate:
        sd = 0.0
    t_name = "t" if codes is None else f"CR1 t (G={groups} clusters)"
    ci_low, ci_high, ci_method = base.ci_low, base.ci_high, t_name
    if n < 2 or groups < 2:
        # Nothing computed: named so, not as the t test (whatever method was asked for).
        unit = "case" if codes is None else "cluster"
        ci_method = p_method = f"none (one {unit}: no interval or test)"
        p = math.nan
    elif degenerate and method != "mcnemar":
        # McNemar's exact test and the Bonett-Price interval need no variance: an arm
        # that passed (or failed) every case keeps its real interval, not a zero width.
        p, p_method = degenerate_sign_flip_p(d, groups)
    elif method == "t" and base.standard_error == 0:
        # CR1 of clusters whose means are all equal (the differences are not): zero width
        # by arithmetic, t undefined. Every cluster sum has the mean's sign, so the exact
        # sign flip over clusters gives 2^(1-G), or 1 at a mean of 0 (the t p was 0).
        p, _ = degenerate_sign_flip_p(np.full(groups, base.estimate), groups)
        p_method = (
            f"sign-flip permutation over clusters, exact (2^(1-G), G={groups}: every "
            "cluster's mean difference equal; CR1 t undefined with zero variance)"
        )
    elif method == "t":
        p, p_method = _t_p_value(base.estimate, base.standard_error, base.df), t_name
    elif method == "permutation":
        p, p_method = sign_flip_test(d, clusters=codes, n_resamples=n_resamples, rng=rng)
    elif method == "bootstrap":
        ci_low, ci_high, _ = case_bootstrap(
            d,
            clusters=codes,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            rng=rng,
        )
        unit = "case" if codes is None else "cluster"
        ci_method = f"{unit} bootstrap percentile ({n_resamples} resamples)"
        # Not the null-centred bootstrap's p: when every difference has one sign (or is 0)
        # no resample reaches the null, and p fell to 1/(B+1) at any n (1e-4 for two
        # cases, 5e-4 for 5 improved of 8, where the exact sign-flip p is 0.0625).
        p, p_method = sign_flip_test(d, clusters=codes, n_resamples=n_resamples, rng=rng)
    elif method == "wilcoxon":
        p, p_method = _wilcoxon_toward(d, base.estimate)
    else:  # mcnemar (outcomes validated above)
        worse = int(np.sum((outcomes_a == 1) & (outcomes_b == 0)))
        better = int(np.sum((outcomes_a == 0) & (outcomes_b == 1)))
        p = mcnemar_exact(worse, better)
        p_method = f"McNemar exact (b={worse} regressions, c={better} improvements)"
        ci_low, ci_high = bonett_price_interval(worse, better, n, confidence_level)
        # Centred on (c - b)/(n + 2), pulled towards 0: at a low level (50 %) it can miss
        # the estimate (c - b)/n itself (4 of 4 improved: [0.46, 0.87] beside +1), so it
        # is widened to hold it, as the beta-binomial interval is.
        ci_low, ci_high = min(ci_low, base.estimate), max(ci_high, base.estimate)
        ci_method = "Bonett-Price adjusted Wald"
    return PairedResult(
        n=n,
        estimate=base.estimate,
        standard_deviation=sd,
        standard_error=base.standard_error,
        df=base.df,
        ci_low=ci_low,
        ci_high=ci_high,
        ci_method=ci_method,
        p_value=p,
        p_value_method=p_method,
        degenerate=degenerate,
        n_clusters=groups,
        improved=improved,
        regressed=regressed,
    )


# --------------------------------------------------------------------------- gate bound


def noninferiority_bound_from_summary(
    n: ArrayLike, mean: ArrayLike, sd: ArrayLike, alpha: float = 0.05
) -> np.ndarray:
    r"""One-sided lower bound for a mean paired difference in [−1, 1], from its summaries.

    Two pseudo-cases are added, one that improved by the whole scale (+1) and one that
    regressed by it (−1) — Bonett & Price's (2012) adjustment for paired proportions,
    which this equals when every case has one binary attempt per arm, applied to per-case
    mean differences. With :math:`m = n + 2`, :math:`\tilde d = \sum d_i/m` and
    :math:`\tilde s^2 = (\sum d_i^2 + 2)/m - \tilde d^2`:

    .. math:: L = \min(\tilde d, \bar d) - t_{n+1,\,1-α}\,\tilde s/\sqrt m

    (the minimum: the pseudo-cases pull the mean towards 0, which must never help a
    worse candidate pass; Bonett–Price use :math:`\tilde d` and z).

    The pseudo-cases keep the bound below the estimate when every case differed by the
    same amount (a zero-width t interval), and they widen it most where the plug-in t is
    least trustworthy (few cases, pass rates near 1). In the coverage grid
    (benchmarks/coverage.py) a gate on this bound passes a candidate that is truly worse
    by the margin at most 5 % of the time in every cell; the one-sided t passed up to 28 %.

    Parameters
    ----------
    n, mean, sd
        Paired cases, mean difference and its sample SD (n − 1 denominator; 0 or NaN
        for a single case), broadcastable.
    alpha
        One-sided level.

    Returns
    -------
    numpy.ndarray
        The lower bounds (NaN where n < 1).

    Examples
    --------
    >>> noninferiority_bound_from_summary(20, 0.0, 0.0).round(4).tolist()
    -0.1106
    """
    _check_alpha(alpha)
    count = np.asarray(n, dtype=np.float64)
    mean_d = np.asarray(mean, dtype=np.float64)
    spread = np.nan_to_num(np.asarray(sd, dtype=np.float64), nan=0.0)
    total = count + 2.0
    sum_d = count * mean_d
    sum_sq = np.maximum(count - 1.0, 0.0) * spread * spread + count * mean_d * mean_d
    with np.errstate(invalid="ignore", divide="ignore"):
        shrunk = sum_d / total
        variance = np.maximum((sum_sq + 2.0) / total - shrunk * shrunk, 0.0)
        from scipy.special import stdtrit

        q = stdtrit(count + 1.0, 1.0 - alpha)
        # The pseudo-cases pull the mean towards 0, which for a candidate that is worse
        # (d̄ < 0) would move the bound towards passing: never let them.
        bound = np.minimum(shrunk, mean_d) - q * np.sqrt(variance / total)
    return np.where(count >= 1, bound, np.nan)


def noninferiority_bound(differences: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    r""":func:`noninferiority_bound_from_summary` of per-case differences (last axis).

    Examples
    --------
    >>> float(noninferiority_bound([0.0] * 200).round(4))
    -0.0116
    """
    d = np.asarray(differences, dtype=np.float64)
    if np.any(np.abs(d) > 1 + 1e-12):
        raise ValueError("differences must lie in [-1, 1] (a bounded evaluator)")
    n = d.shape[-1]
    sd = d.std(axis=-1, ddof=1) if n > 1 else np.zeros(d.shape[:-1])
    return noninferiority_bound_from_summary(n, d.mean(axis=-1), sd, alpha)


# --------------------------------------------------------------------------- planning

Distribution = Literal["t", "normal"]


def paired_power(
    effect: float,
    sd: float,
    n: int,
    alpha: float = 0.05,
    *,
    distribution: Distribution = "t",
) -> float:
    r"""Power of the two-sided paired test to detect a true mean difference ``effect``.

    ``"t"``: exact for the paired t-test with normal differences, noncentral t with
    :math:`n-1` df and noncentrality :math:`δ\sqrt n/σ_d` (as statsmodels'
    ``TTestPower``). ``"normal"``: Miller's approximation
    :math:`Φ(|δ|\sqrt n/σ_d - z_{1-α/2}) + Φ(-|δ|\sqrt n/σ_d - z_{1-α/2})`.

    Parameters
    ----------
    effect
        The true difference, in the evaluator's units.
    sd
        SD of per-case differences :math:`σ_d` (from a pilot, or
        :math:`\sqrt{ω^2 + σ_A^2/K_A + σ_B^2/K_B}`).
    n
        Paired cases.
    alpha
        Per-test level (divide by the family size for a Bonferroni/Holm plan).

    Examples
    --------
    >>> round(paired_power(0.05, 0.2, 128, 0.05, distribution="normal"), 3)
    0.807
    """
    _check_alpha(alpha)
    if n < 2 or not sd > 0:
        return math.nan
    shift = abs(effect) * math.sqrt(n) / sd
    if distribution == "normal":
        z = norm_isf(alpha / 2)
        return norm_cdf(shift - z) + norm_cdf(-shift - z)
    df = n - 1
    crit = t_isf(alpha / 2, df)
    upper = nct_sf(crit, df, shift)
    # The far tail underflows to NaN in scipy's noncentral t for large shifts; it is 0.
    lower = nct_cdf(-crit, df, shift)
    if math.isnan(upper):
        upper = norm_sf(crit - shift)
    return min(1.0, upper + (0.0 if math.isnan(lower) else lower))


def paired_sample_size(
    effect: float,
    sd: float,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    distribution: Distribution = "t",
    max_n: int = 10_000_000,
) -> int | None:
    r"""Smallest number of paired cases whose power reaches ``power``.

    Normal form (Miller): :math:`n = (z_{1-α/2} + z_{power})^2 σ_d^2/δ^2`, rounded up;
    the t form searches upward from there. None if it exceeds ``max_n`` or δ = 0.

    Examples
    --------
    >>> paired_sample_size(0.05, 0.2, 0.05, 0.8, distribution="normal")
    126
    >>> paired_sample_size(0.05, 0.2, 0.05, 0.8)
    128
    """
    _check_alpha(alpha)
    check_proportion(power, "power")
    if effect == 0 or not sd > 0:
        return None
    z = float(sps.norm.isf(alpha / 2) + sps.norm.ppf(power))
    n = max(2, math.ceil((z * sd / abs(effect)) ** 2))
    if distribution == "normal":
        while n > 2 and paired_power(effect, sd, n - 1, alpha, distribution="normal") >= power:
            n -= 1
        while paired_power(effect, sd, n, alpha, distribution="normal") < power:
            n += 1
        return n if n <= max_n else None
    while n <= max_n and paired_power(effect, sd, n, alpha) < power:
        n += max(1, n // 50) if n > 1000 else 1
    if n > max_n:
        return None
    while n > 2 and paired_power(effect, sd, n - 1, alpha) >= power:
        n -= 1
    return n


def paired_mde(
    sd: float,
    n: int,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    distribution: Distribution = "t",
) -> float:
    r"""Minimum detectable effect: the true difference found with probability ``power``.

    Normal form (Bloom 1995; Miller 2024): :math:`(z_{1-α/2} + z_{power})\,σ_d/\sqrt n`.
    The t form solves :func:`paired_power` = ``power`` for δ (statsmodels'
    ``TTestPower.solve_power`` gives the same). NaN with fewer than two cases or σ_d = 0.

    Examples
    --------
    >>> round(paired_mde(0.2, 128, distribution="normal"), 4)
    0.0495
    >>> round(paired_mde(0.2, 128), 4)
    0.0499
    """
    _check_alpha(alpha)
    check_proportion(power, "power")
    if n < 2 or not sd > 0:
        return math.nan
    if distribution == "normal":
        return (norm_isf(alpha / 2) + norm_ppf(power)) * sd / math.sqrt(n)
    # The power depends on δ/σ_d alone, so the MDE is σ_d times the one for σ_d = 1: one
    # root search per (n, α, power), however many comparisons share them (an archive's
    # hundreds of comparisons of equal-sized runs cost one).
    return sd * _standard_mde(n, float(alpha), float(power))


@functools.lru_cache(maxsize=4096)
def _standard_mde(n: int, alpha: float, power: float) -> float:
    """:func:`paired_mde` (t form) for σ_d = 1."""
    if paired_power(0.0, 1.0, n, alpha) >= power:
        # No effect at all is "detected" this often (alpha ≥ power): nothing to solve for.
        return 0.0
    upper = (norm_isf(alpha / 2) + norm_ppf(power)) / math.sqrt(n)
    while paired_power(upper, 1.0, n, alpha) < power:
        upper *= 2
    return float(
        brentq(lambda delta: paired_power(delta, 1.0, n, alpha) - power, 0.0, upper, xtol=1e-13)
    )


def trials_for_standard_error(
    between_variance: float,
    within_variance: float,
    n_cases: int,
    target_se: float,
    *,
    max_trials: int = 1000,
) -> int | None:
    r"""Fewest attempts per case K with :math:`(σ_b^2 + σ_w^2/K)/n \le SE^2` on a fixed suite.

    None when even unlimited attempts cannot reach the target (:math:`σ_b^2/n > SE^2`:
    only more cases help) or when it needs more than ``max_trials``.

    Examples
    --------
    >>> trials_for_standard_error(0.02, 0.16, 100, 0.02)
    8
    >>> trials_for_standard_error(0.05, 0.16, 100, 0.02) is None
    True
    """
    if n_cases < 1 or not target_se > 0:
        return None
    room = n_cases * target_se * target_se - between_variance
    if room <= 0:
        return None
    if within_variance <= 0:
        return 1
    k = max(1, math.ceil(within_variance / room - 1e-12))
    return k if k <= max_trials else None


def cost_optimal_trials(
    between_variance: float,
    within_variance: float,
    target_se: float,
    *,
    cost_per_case: float,
    cost_per_trial: float,
    max_trials: int = 1000,
    min_cases: int = 2,
) -> tuple[int, int, float]:
    r"""Cases and attempts per case that reach ``target_se`` at least total cost.

    Minimises :math:`n(c_{case} + K c_{trial})` subject to
    :math:`(σ_b^2 + σ_w^2/K)/n \le SE^2` over whole numbers, by evaluating every
    K ≤ ``max_trials`` with :math:`n = \max(n_{min}, \lceil(σ_b^2+σ_w^2/K)/SE^2\rceil)`.
    Cochran's
    continuous optimum :math:`K^* = \sqrt{(σ_w^2/σ_b^2)(c_{case}/c_{trial})}` lies next to
    the answer.

    Returns
    -------
    trials, cases, cost

    Examples
    --------
    >>> cost_optimal_trials(0.02, 0.16, 0.02, cost_per_case=1.0, cost_per_trial=0.5)
    (4, 150, 450.0)
    """
    if not target_se > 0 or cost_per_trial <= 0 or cost_per_case < 0:
        raise ValueError("target_se and cost_per_trial must be positive, cost_per_case >= 0")
    k = np.arange(1, max_trials + 1, dtype=np.float64)
    variance = max(between_variance, 0.0) + max(within_variance, 0.0) / k
    # A floor on cases: with too few, σ_b² cannot even be estimated (a pilot's σ_b² of 0
    # would otherwise send every attempt to one case).
    cases = np.maximum(max(1, min_cases), np.ceil(variance / (target_se * target_se) - 1e-9))
    cost = cases * (cost_per_case + k * cost_per_trial)
    best = int(np.argmin(cost))
    return best + 1, int(cases[best]), float(cost[best])
