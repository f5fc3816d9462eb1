"""Pure estimators behind the experiment statistics (AgenticLens 0.10 spec §9).

Everything here takes numbers or numpy arrays, never our tables, and reproduces the
numbers of the real ``agenticlens`` 0.10 package bit for bit: the same formulas, the same
floating-point operation order and the same edge rules (spec §9 and §11). Functions that
run once per case are vectorised; those that run once per variant take plain sequences.

References
----------
.. [1] M. Chen et al., "Evaluating Large Language Models Trained on Code", 2021
   (unbiased pass@k estimator).
.. [2] S. Yao et al., "tau-bench: A Benchmark for Tool-Agent-User Interaction in
   Real-World Domains", 2024 (pass^k).
.. [3] E. B. Wilson, "Probable inference, the law of succession, and statistical
   inference", JASA 22 (1927) (score interval).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .errors import check_proportion

__all__ = [
    "fmean",
    "harmonic_mean",
    "median",
    "metric_delta",
    "metric_summary",
    "pareto_front",
    "pass_at_k",
    "pass_hat_k",
    "percentile_linear",
    "sample_stdev",
    "two_proportion_z_test",
    "two_proportion_z_test_array",
    "wilson_interval",
    "wilson_score",
    "z_value",
]

# Same constant statistics.NormalDist.cdf divides by (sigma * sqrt(2) with sigma = 1.0).
_SQRT2 = math.sqrt(2.0)

# Above this many distinct attempt counts a dense offset table would waste memory.
_DENSE_OFFSETS_LIMIT = 1 << 20


def harmonic_mean(counts: np.ndarray) -> float:
    """The harmonic mean of ``counts`` (NaN for none); exactly the count when they are all
    equal. The mean number of attempts (or samples) per group that variances of group means
    need when the groups differ in size: Σ(1/Kᵢ)/n² = 1/(n·H).

    Examples
    --------
    >>> harmonic_mean(np.array([3.0] * 5)), harmonic_mean(np.array([1.0, 3.0]))
    (3.0, 1.5)
    """
    if not len(counts):
        return math.nan
    if counts.min() == counts.max():
        # n / Σ(1/3) is 3.0000000000000004: a balanced run's "3 trials" read as a fraction.
        return float(counts[0])
    return float(len(counts) / np.sum(1.0 / counts))


def z_value(confidence_level: float) -> float:
    """Two-sided standard-normal quantile for a confidence level.

    Computes Φ⁻¹(0.5 + CL/2) with :class:`statistics.NormalDist`, as the package does.

    Parameters
    ----------
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    float
        The quantile, e.g. 1.9599639845400536 for 0.95.

    Raises
    ------
    ValueError
        If ``confidence_level`` is not strictly between 0 and 1.

    Examples
    --------
    >>> z_value(0.95)
    1.9599639845400536
    """
    check_proportion(confidence_level, "confidence_level")
    return statistics.NormalDist().inv_cdf(0.5 + confidence_level / 2)


def _as_counts(values: ArrayLike, name: str) -> np.ndarray:
    """Return non-negative integral values as an int64 array, or raise ValueError."""
    array = np.asarray(values)
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.floor(array)):
            raise ValueError(f"{name} must hold whole numbers")
    elif array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold whole numbers, got dtype {array.dtype}")
    array = array.astype(np.int64)
    if np.any(array < 0):
        raise ValueError(f"{name} must not be negative")
    return array


def wilson_interval(
    successes: ArrayLike, trials: ArrayLike, confidence_level: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Wilson score interval for binomial proportions, vectorised (spec §9.3).

    With :math:`\hat p = s/N` and :math:`d = 1 + z^2/N`:

    .. math::

        c = \frac{\hat p + z^2/(2N)}{d}, \qquad
        h = \frac{z\sqrt{\hat p(1-\hat p)/N + z^2/(4N^2)}}{d}

    and the interval is :math:`[\max(0, c-h), \min(1, c+h)]`, except that the lower bound
    is exactly 0 when :math:`s = 0` and the upper bound exactly 1 when :math:`s = N`.
    The operation order matches the package, so results are bit-identical.

    Parameters
    ----------
    successes, trials
        Whole numbers (scalars or arrays that broadcast together), 0 ≤ successes ≤ trials.
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    lower, upper : numpy.ndarray
        Float arrays of the broadcast shape (0-d for scalar inputs); NaN where
        ``trials == 0`` (the package refuses an empty sample).

    Raises
    ------
    ValueError
        On negative or fractional counts, ``successes > trials``, or a bad confidence
        level.

    Examples
    --------
    >>> lower, upper = wilson_interval([0, 3, 10], [10, 10, 10], 0.95)
    >>> lower.round(4).tolist(), upper.round(4).tolist()
    ([0.0, 0.1078, 0.7225], [0.2775, 0.6032, 1.0])
    """
    z = z_value(confidence_level)
    s, n = np.broadcast_arrays(_as_counts(successes, "successes"), _as_counts(trials, "trials"))
    if np.any(s > n):
        raise ValueError("successes must not exceed trials")
    # Counts below 2**53 convert to float exactly, and 2N and 4N·N rounded once equal the
    # package's exact Python-int products converted to float, so no int64 overflow risk.
    nf = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower, upper = wilson_score(s / nf, nf, z, all_fail=s == 0, all_pass=s == n)
    empty = n == 0
    lower = np.where(empty, np.nan, lower)
    upper = np.where(empty, np.nan, upper)
    return lower, upper


def wilson_score(
    proportion: ArrayLike,
    n: ArrayLike,
    quantile: float,
    *,
    all_fail: ArrayLike,
    all_pass: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    r"""The Wilson score bounds for observed proportions on (possibly fractional) sizes ``n``.

    The arithmetic of :func:`wilson_interval` (in the package's operation order), for any
    quantile and sample size: the lower bound is exactly 0 where ``all_fail``, the upper
    exactly 1 where ``all_pass``, both clipped to [0, 1].

    Examples
    --------
    >>> low, high = wilson_score(0.85, 20.0, 1.959963984540054, all_fail=False, all_pass=False)
    >>> round(float(low), 3), round(float(high), 3)
    (0.64, 0.948)
    """
    p = np.asarray(proportion, dtype=np.float64)
    nf = np.asarray(n, dtype=np.float64)
    zz = quantile * quantile
    denominator = 1 + zz / nf
    center = (p + zz / (2.0 * nf)) / denominator
    radius = quantile * np.sqrt(p * (1 - p) / nf + zz / (4.0 * nf * nf))
    radius = radius / denominator
    low = center - radius
    high = center + radius
    # Python's max(0.0, x) keeps x only when x > 0.0; min(1.0, x) only when x < 1.0.
    lower = np.where(all_fail, 0.0, np.where(low > 0.0, low, 0.0))
    upper = np.where(all_pass, 1.0, np.where(high < 1.0, high, 1.0))
    return lower, upper


def _pass_at_k_entry(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    # int / int is Python's correctly rounded division of the exact integers.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _pass_hat_k_entry(n: int, c: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k)


def _per_case_lookup(
    n: ArrayLike, c: ArrayLike, k: int, entry: Callable[[int, int, int], float]
) -> np.ndarray:
    """Evaluate ``entry(n, c, k)`` element-wise through one table row per distinct n.

    Cases share few distinct attempt counts, so the exact Python-int arithmetic runs
    Σ(n+1) times in total instead of once per case; the per-case work is a numpy gather.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    k = int(k)
    attempts, passes = np.broadcast_arrays(_as_counts(n, "n"), _as_counts(c, "c"))
    if np.any(passes > attempts):
        raise ValueError("c (passes) must not exceed n (attempts)")
    if attempts.size == 0:
        return np.empty(attempts.shape, dtype=np.float64)
    n_max = int(attempts.max())
    if n_max < _DENSE_OFFSETS_LIMIT:
        distinct = np.flatnonzero(np.bincount(attempts.ravel(), minlength=n_max + 1))
    else:
        distinct = np.unique(attempts)
    rows = []
    for size in distinct.tolist():
        if size < k:
            rows.append(np.full(size + 1, np.nan))
        else:
            rows.append(np.array([entry(size, passed, k) for passed in range(size + 1)]))
    table = np.concatenate(rows)
    starts = np.concatenate(([0], np.cumsum([len(row) for row in rows])[:-1]))
    if n_max < _DENSE_OFFSETS_LIMIT:
        offsets = np.zeros(n_max + 1, dtype=np.int64)
        offsets[distinct] = starts
        row_start = offsets[attempts]
    else:
        row_start = starts[np.searchsorted(distinct, attempts)]
    return table[row_start + passes]


def pass_at_k(n: ArrayLike, c: ArrayLike, k: int) -> np.ndarray:
    r"""Unbiased pass@k per case (Chen et al. 2021; spec §9.1), vectorised.

    .. math:: \text{pass@}k = 1 - \binom{n-c}{k} \Big/ \binom{n}{k}

    and exactly 1.0 when :math:`n - c < k`. The ratio is Python's correctly rounded
    division of the exact binomial coefficients and is subtracted from 1.0 afterwards, as
    in the package (so k = 1, c = 1, n = 3 gives 0.33333333333333337).

    Parameters
    ----------
    n, c
        Attempts and passes per case: whole numbers, broadcastable, 0 ≤ c ≤ n.
    k
        A whole number ≥ 1.

    Returns
    -------
    numpy.ndarray
        Float64 array of the broadcast shape; NaN where ``n < k``.

    Raises
    ------
    ValueError
        On a bad ``k``, negative or fractional counts, or ``c > n``.

    Examples
    --------
    >>> pass_at_k([3, 3, 3, 1], [0, 1, 3, 1], 1).tolist()
    [0.0, 0.33333333333333337, 1.0, 1.0]
    >>> pass_at_k([5, 1], [2, 1], 2).tolist()
    [0.7, nan]
    """
    return _per_case_lookup(n, c, k, _pass_at_k_entry)


def pass_hat_k(n: ArrayLike, c: ArrayLike, k: int) -> np.ndarray:
    r"""Unbiased pass^k per case (Yao et al. 2024, τ-bench; spec §9.1), vectorised.

    .. math:: \text{pass}^k = \binom{c}{k} \Big/ \binom{n}{k}

    the probability that k attempts drawn without replacement all pass (0 when c < k).
    Takes, returns and refuses what :func:`pass_at_k` does.

    Parameters
    ----------
    n, c, k
        As for :func:`pass_at_k`.

    Returns
    -------
    numpy.ndarray
        Float64 array of the broadcast shape; NaN where ``n < k``.

    Examples
    --------
    >>> pass_hat_k([5, 5, 5], [1, 4, 5], 2).tolist()
    [0.0, 0.6, 1.0]
    """
    return _per_case_lookup(n, c, k, _pass_hat_k_entry)


def _float_list(values: Sequence[float] | np.ndarray) -> list[float]:
    return np.asarray(values, dtype=np.float64).ravel().tolist()


def fmean(values: Sequence[float] | np.ndarray) -> float:
    """Mean with an exactly rounded sum, ``math.fsum(values) / len(values)``.

    This is what :func:`statistics.fmean` computes, which the package uses for every
    experiment-level mean (spec §11).

    Raises
    ------
    ValueError
        If ``values`` is empty.

    Examples
    --------
    >>> fmean([0.25, 0.5, 1.0])
    0.5833333333333334
    """
    data = _float_list(values)
    if not data:
        raise ValueError("fmean needs at least one value")
    return math.fsum(data) / len(data)


def sample_stdev(values: Sequence[float] | np.ndarray) -> float:
    """Sample standard deviation (n − 1 denominator), as :func:`statistics.stdev`.

    The sum of squares is exact (rational arithmetic) and the square root correctly
    rounded, so a two-pass float formula may differ in the last bit; this does not.

    Raises
    ------
    ValueError
        With fewer than two values.

    Examples
    --------
    >>> sample_stdev([1.0, 2.0, 3.0, 4.0])
    1.2909944487358056
    """
    data = _float_list(values)
    if len(data) < 2:
        raise ValueError("sample_stdev needs at least two values")
    return statistics.stdev(data)


def percentile_linear(values: Sequence[float] | np.ndarray, q: float) -> float:
    """Percentile by linear interpolation between closest ranks (spec §9.2 ``p95``).

    Sort, take h = (n − 1)·q, return x[⌊h⌋] + (x[⌈h⌉] − x[⌊h⌋])·(h − ⌊h⌋): numpy's
    ``"linear"`` method and Excel's PERCENTILE.INC, in the package's operation order.

    Parameters
    ----------
    values
        At least one value.
    q
        The quantile as a fraction in [0, 1] (0.95 for p95).

    Raises
    ------
    ValueError
        If ``values`` is empty or ``q`` is outside [0, 1].

    Examples
    --------
    >>> percentile_linear([0.5, 0.7, 0.9, 1.0], 0.95)
    0.985
    """
    if not 0 <= q <= 1:
        raise ValueError(f"q must be between 0 and 1, got {q!r}")
    ordered = sorted(_float_list(values))
    if not ordered:
        raise ValueError("percentile_linear needs at least one value")
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = math.ceil(position)
    if below == above:
        return ordered[below]
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def median(values: Sequence[float] | np.ndarray) -> float:
    """Middle value, or the mean ``(a + b) / 2`` of the two middle values for even n.

    Same result as :func:`statistics.median`.

    Raises
    ------
    ValueError
        If ``values`` is empty.

    Examples
    --------
    >>> median([3.0, 1.0, 2.0]), median([4.0, 1.0, 2.0, 3.0])
    (2.0, 2.5)
    """
    ordered = sorted(_float_list(values))
    if not ordered:
        raise ValueError("median needs at least one value")
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def metric_summary(
    values: Sequence[float] | np.ndarray, confidence_level: float, *, bounded: bool
) -> dict[str, Any] | None:
    r"""Summary of one per-trial series (spec §9.2, ``ExperimentMetricSummary``).

    ``mean`` uses :func:`fmean`, ``standard_deviation`` :func:`sample_stdev` (0.0 for one
    value), ``coefficient_of_variation`` = SD / mean (None when the mean is 0), and the
    interval is the normal approximation :math:`\bar x \pm z\,s/\sqrt n` (z, not Student
    t; [mean, mean] for one value). For ``bounded`` series (rates, scores) the interval
    is clipped to [0, 1].

    Parameters
    ----------
    values
        One value per completed trial.
    confidence_level
        Strictly between 0 and 1.
    bounded
        Whether the series lives in [0, 1].

    Returns
    -------
    dict or None
        Keys in order ``count``, ``mean``, ``median``, ``p95``, ``standard_deviation``,
        ``coefficient_of_variation``, ``confidence_interval`` (itself ``lower``,
        ``upper``, ``confidence_level``, ``method``); None for an empty series.

    Examples
    --------
    >>> summary = metric_summary([0.8, 0.9, 1.0], 0.95, bounded=True)
    >>> summary["mean"], summary["confidence_interval"]["upper"]
    (0.9, 1.0)
    >>> metric_summary([], 0.95, bounded=False) is None
    True
    """
    z = z_value(confidence_level)
    data = _float_list(values)
    if not data:
        return None
    count = len(data)
    mean = fmean(data)
    if count > 1:
        deviation = sample_stdev(data)
        margin = z * deviation / math.sqrt(count)
        lower, upper = mean - margin, mean + margin
    else:
        deviation = 0.0
        lower = upper = mean
    if bounded:
        lower = max(0.0, lower)
        upper = min(1.0, upper)
    return {
        "count": count,
        "mean": mean,
        "median": median(data),
        "p95": percentile_linear(data, 0.95),
        "standard_deviation": deviation,
        "coefficient_of_variation": deviation / mean if mean != 0 else None,
        "confidence_interval": {
            "lower": lower,
            "upper": upper,
            "confidence_level": confidence_level,
            "method": "normal_approximation",
        },
    }


def two_proportion_z_test_array(
    s1: ArrayLike, n1: ArrayLike, s2: ArrayLike, n2: ArrayLike
) -> np.ndarray:
    r"""Vectorised pooled two-proportion z-test, two-sided (spec §9.5).

    With :math:`\bar p = (s_1+s_2)/(n_1+n_2)`,
    :math:`z = (s_1/n_1 - s_2/n_2) / \sqrt{\bar p(1-\bar p)(1/n_1 + 1/n_2)}` and
    :math:`p = 2(1 - \Phi(|z|))`; exactly 1.0 when :math:`\bar p` is 0 or 1. No
    continuity correction. Φ is evaluated with :func:`math.erf` like
    :meth:`statistics.NormalDist.cdf`, so results match the package bit for bit.

    Parameters
    ----------
    s1, n1, s2, n2
        Passes and attempts of the two groups: whole numbers, broadcastable.

    Returns
    -------
    numpy.ndarray
        p-values of the broadcast shape; NaN where either group has no attempts.

    Raises
    ------
    ValueError
        On negative or fractional counts, or more passes than attempts.

    Examples
    --------
    >>> two_proportion_z_test_array([45, 0], [50, 50], [40, 0], [50, 50]).round(6).tolist()
    [0.161429, 1.0]
    """
    a_pass, a_total, b_pass, b_total = np.broadcast_arrays(
        _as_counts(s1, "s1"), _as_counts(n1, "n1"), _as_counts(s2, "s2"), _as_counts(n2, "n2")
    )
    if np.any(a_pass > a_total) or np.any(b_pass > b_total):
        raise ValueError("passes must not exceed attempts")
    empty = (a_total == 0) | (b_total == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = (a_pass + b_pass) / (a_total + b_total)
        boundary = (pooled == 0.0) | (pooled == 1.0)
        error = np.sqrt(pooled * (1 - pooled) * (1 / a_total + 1 / b_total))
        z = (a_pass / a_total - b_pass / b_total) / error
    result = np.where(empty, np.nan, 1.0)
    todo = ~empty & ~boundary
    scaled = (np.abs(z[todo]) / _SQRT2).tolist()
    # numpy has no erf and scipy's differs from libm's in the last bits; the package's
    # Φ uses math.erf, so call it per value (this runs per comparison, not per case).
    erf = np.array([math.erf(x) for x in scaled], dtype=np.float64)
    result[todo] = 2 * (1 - 0.5 * (1.0 + erf))
    return result


def two_proportion_z_test(s1: int, n1: int, s2: int, n2: int) -> float | None:
    """Pooled two-proportion z-test p-value for one pair of groups (spec §9.5).

    Scalar form of :func:`two_proportion_z_test_array`: None when either group has no
    attempts, 1.0 when the pooled rate is exactly 0 or 1.

    Examples
    --------
    >>> round(two_proportion_z_test(45, 50, 40, 50), 6)
    0.161429
    >>> two_proportion_z_test(1, 2, 0, 0) is None
    True
    """
    p_value = float(two_proportion_z_test_array(s1, n1, s2, n2))
    return None if math.isnan(p_value) else p_value


def metric_delta(
    baseline: float, candidate: float, *, higher_is_better: bool, threshold: float
) -> dict[str, Any]:
    """Change of one metric from baseline to candidate (spec §9.5 ``MetricDelta``).

    ``absolute`` = candidate − baseline; ``relative`` = absolute / |baseline|, or, for a
    zero baseline, 0.0 when the candidate is 0 too and ±inf (sign of ``absolute``)
    otherwise; ``regressed`` = degradation > ``threshold`` (strict), where degradation is
    −relative when higher is better and +relative when lower is better. Infinity stays a
    Python float here; serialisers write it as null like the package.

    Examples
    --------
    >>> metric_delta(0.8, 0.7, higher_is_better=True, threshold=0.05)["regressed"]
    True
    >>> metric_delta(0.0, 120.0, higher_is_better=False, threshold=0.05)
    {'absolute': 120.0, 'relative': inf, 'regressed': True}
    """
    absolute = candidate - baseline
    if baseline == 0:
        relative = 0.0 if candidate == 0 else math.copysign(math.inf, absolute)
    else:
        relative = absolute / abs(baseline)
    degradation = -relative if higher_is_better else relative
    return {"absolute": absolute, "relative": relative, "regressed": degradation > threshold}


def pareto_front(
    objectives: ArrayLike, maximize: Sequence[bool], unknown: ArrayLike | None = None
) -> np.ndarray:
    """Which candidates no other candidate dominates (spec §9.4).

    Candidate A is dominated by B ≠ A when B is at least as good on every objective and
    strictly better on at least one. Where either side of a pair has an ``unknown`` value
    for an objective, that objective counts as "not worse" and "not strictly better" for
    that pair, so a missing value never creates nor blocks dominance. Identical rows do
    not dominate each other. Comparisons are exact (no tolerance); a NaN that is not
    marked unknown compares false, as in Python.

    Parameters
    ----------
    objectives
        Float array of shape (candidates, objectives).
    maximize
        One flag per objective column: True if higher is better.
    unknown
        Optional bool mask of the same shape, True where the value is missing.

    Returns
    -------
    numpy.ndarray
        Bool array, one per candidate, True for members of the front.

    Raises
    ------
    ValueError
        If the shapes do not agree.

    Examples
    --------
    >>> pareto_front([[0.9, 100.0], [0.8, 120.0], [0.95, 150.0]], [True, False]).tolist()
    [True, False, True]
    """
    values = np.asarray(objectives, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"objectives must be 2-D (candidates, objectives), got {values.shape}")
    higher = np.asarray(maximize, dtype=bool)
    if higher.shape != (values.shape[1],):
        raise ValueError(f"maximize needs {values.shape[1]} flags, got {higher.shape}")
    # Axis 0: the candidate that may be dominated; axis 1: the other candidate.
    candidate = values[:, None, :]
    other = values[None, :, :]
    not_worse = np.where(higher, other >= candidate, other <= candidate)
    strictly_better = np.where(higher, other > candidate, other < candidate)
    if unknown is not None:
        missing = np.asarray(unknown, dtype=bool)
        if missing.shape != values.shape:
            raise ValueError(f"unknown must have shape {values.shape}, got {missing.shape}")
        either = missing[:, None, :] | missing[None, :, :]
        not_worse |= either
        strictly_better &= ~either
    dominates = not_worse.all(axis=2) & strictly_better.any(axis=2)
    np.fill_diagonal(dominates, False)
    return ~dominates.any(axis=1)


def row_fmean_stdev(matrix: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a 2-D array (NaN = absent): count, exact mean, exact sample SD.

    The mean is ``math.fsum(row) / n`` and the SD ``statistics.stdev(row)`` — both exactly
    rounded, so they equal what AgenticLens computes per case. Rows are sorted and
    deduplicated first: each distinct multiset of values is computed once (a suite's case
    scores take few distinct values), so the Python work is per distinct row, not per row.

    Returns
    -------
    count, mean, sd
        ``mean`` is NaN where count is 0; ``sd`` is NaN where count < 2.

    Examples
    --------
    >>> n, m, s = row_fmean_stdev([[1.0, 0.5, np.nan], [0.5, 1.0, np.nan], [np.nan] * 3])
    >>> n.tolist(), m.tolist(), [round(float(x), 6) for x in s[:2]]
    ([2, 2, 0], [0.75, 0.75, nan], [0.353553, 0.353553])
    """
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {values.shape}")
    rows, width = values.shape
    count = np.sum(~np.isnan(values), axis=1)
    mean = np.full(rows, np.nan)
    sd = np.full(rows, np.nan)
    if rows == 0 or width == 0:
        return count, mean, sd
    ordered = np.sort(values, axis=1)  # NaN sorts last
    ordered[np.isnan(ordered)] = np.inf  # a comparable stand-in for "absent"
    keys = np.ascontiguousarray(ordered).view(np.dtype((np.void, 8 * width))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    unique_mean = np.full(len(first), np.nan)
    unique_sd = np.full(len(first), np.nan)
    for slot, row in enumerate(first):
        present = [x for x in ordered[row].tolist() if x != math.inf]
        if present:
            unique_mean[slot] = math.fsum(present) / len(present)
        if len(present) > 1:
            unique_sd[slot] = statistics.stdev(present)
    mean = unique_mean[inverse]
    sd = unique_sd[inverse]
    return count, mean, sd
