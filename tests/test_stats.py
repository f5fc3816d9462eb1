"""Tests for agenticlens_frames.stats against independent computations.

Each estimator is checked against something that is not the code under test: a naive
loop written here with Python ints, brute-force enumeration, statistics / numpy / scipy /
statsmodels, and (marked ``differential``) the real agenticlens 0.10 functions.
"""

from __future__ import annotations

import itertools
import math
import statistics
import struct
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from agenticlens_frames import stats

CONFIDENCE_LEVELS = [0.8, 0.9, 0.95, 0.99]


def bits(value: float) -> bytes:
    """The IEEE-754 bytes of a float, so that 0.0 and -0.0 differ and NaNs are equal."""
    return b"nan" if math.isnan(value) else struct.pack("<d", value)


def assert_bit_equal(actual: object, expected: object) -> None:
    got = np.asarray(actual, dtype=np.float64).ravel().tolist()
    want = np.asarray(expected, dtype=np.float64).ravel().tolist()
    mismatches = [
        (i, g, w) for i, (g, w) in enumerate(zip(got, want, strict=True)) if bits(g) != bits(w)
    ]
    assert not mismatches, mismatches[:5]


# --- z_value -------------------------------------------------------------------------


@pytest.mark.parametrize("level", CONFIDENCE_LEVELS)
def test_z_value_matches_scipy(level: float) -> None:
    from scipy.stats import norm

    assert stats.z_value(level) == pytest.approx(norm.ppf(0.5 + level / 2), rel=1e-14)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_z_value_rejects_levels_outside_unit_interval(level: float) -> None:
    with pytest.raises(ValueError, match="confidence_level"):
        stats.z_value(level)


# --- Wilson --------------------------------------------------------------------------


def wilson_by_hand(s: int, n: int, level: float) -> tuple[float, float]:
    """The §9.3 formula, one pair at a time, with Python ints where the spec has them."""
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    p = s / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    lower = 0.0 if s == 0 else (centre - half if centre - half > 0.0 else 0.0)
    upper = 1.0 if s == n else (centre + half if centre + half < 1.0 else 1.0)
    return lower, upper


@pytest.mark.parametrize("level", CONFIDENCE_LEVELS)
def test_wilson_is_bit_equal_to_a_hand_loop(level: float) -> None:
    pairs = [(s, n) for n in range(1, 41) for s in range(n + 1)]
    rng = np.random.default_rng(3)
    big_n = rng.integers(1, 10**9, size=200)
    pairs += [(int(rng.integers(0, n + 1)), int(n)) for n in big_n]
    s, n = np.array(pairs).T
    lower, upper = stats.wilson_interval(s, n, level)
    expected = [wilson_by_hand(a, b, level) for a, b in pairs]
    assert_bit_equal(lower, [e[0] for e in expected])
    assert_bit_equal(upper, [e[1] for e in expected])


@pytest.mark.parametrize("level", CONFIDENCE_LEVELS)
def test_wilson_matches_statsmodels(level: float) -> None:
    from statsmodels.stats.proportion import proportion_confint

    n = np.repeat(np.arange(1, 31), 31)
    s = np.tile(np.arange(31), 30)
    keep = s <= n
    s, n = s[keep], n[keep]
    lower, upper = stats.wilson_interval(s, n, level)
    ref_lower, ref_upper = proportion_confint(s, n, alpha=1 - level, method="wilson")
    np.testing.assert_allclose(lower, ref_lower, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(upper, ref_upper, rtol=1e-12, atol=1e-14)


def test_wilson_edges_and_shapes() -> None:
    lower, upper = stats.wilson_interval([0, 5, 0], [5, 5, 0], 0.95)
    assert lower[0] == 0.0 and upper[1] == 1.0
    assert math.isnan(lower[2]) and math.isnan(upper[2])
    scalar_lower, _ = stats.wilson_interval(3, 10, 0.95)
    assert np.ndim(scalar_lower) == 0
    assert bits(float(scalar_lower)) == bits(wilson_by_hand(3, 10, 0.95)[0])
    grid_lower, _ = stats.wilson_interval(np.array([[1], [2]]), np.array([4, 5, 6]), 0.95)
    assert grid_lower.shape == (2, 3)


def test_wilson_score_clips_to_the_unit_interval_without_the_edge_flags() -> None:
    """At a proportion of 0 or 1 the formula's ends land on 0 and 1 up to rounding (below
    0 or above 1 by 1e-17 for many sizes); without ``all_fail`` / ``all_pass`` only the
    clip keeps them inside [0, 1]. Reference: statsmodels' Wilson interval."""
    from statsmodels.stats.proportion import proportion_confint

    for level in CONFIDENCE_LEVELS:
        z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
        for n in range(1, 60):
            for p in (0.0, 1.0):
                low, high = stats.wilson_score(p, float(n), z, all_fail=False, all_pass=False)
                ref_low, ref_high = proportion_confint(int(p * n), n, 1 - level, "wilson")
                assert 0.0 <= float(low) <= float(high) <= 1.0, (level, n, p)
                assert float(low) == pytest.approx(ref_low, abs=1e-15)
                assert float(high) == pytest.approx(ref_high, abs=1e-15)


def test_whole_number_floats_are_counts() -> None:
    # Counts read from a table arrive as floats (3.0); only fractions and NaN are refused.
    lower, upper = stats.wilson_interval(np.array([0.0, 3.0]), np.array([10.0, 10.0]), 0.95)
    expected = [wilson_by_hand(0, 10, 0.95), wilson_by_hand(3, 10, 0.95)]
    assert_bit_equal(lower, [e[0] for e in expected])
    assert_bit_equal(upper, [e[1] for e in expected])
    assert_bit_equal(stats.pass_at_k(np.array([5.0]), np.array([2.0]), 2), [0.7])


@pytest.mark.parametrize(
    ("successes", "trials"), [(3, 2), (-1, 2), (1, -2), (0.5, 2), ("a", 2), (np.nan, 2)]
)
def test_wilson_rejects_bad_counts(successes: object, trials: object) -> None:
    with pytest.raises(ValueError):
        stats.wilson_interval(successes, trials, 0.95)


# --- pass@k and pass^k ---------------------------------------------------------------


def pass_at_k_package_way(n: int, c: int, k: int) -> float:
    if n < k:
        return math.nan
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k_package_way(n: int, c: int, k: int) -> float:
    return math.nan if n < k else math.comb(c, k) / math.comb(n, k)


def enumerate_subsets(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Share of k-subsets of n attempts (c of them passing) with any / all passing."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(outcomes, k))
    any_pass = sum(any(subset) for subset in subsets)
    all_pass = sum(all(subset) for subset in subsets)
    return Fraction(any_pass, len(subsets)), Fraction(all_pass, len(subsets))


def test_pass_at_k_and_pass_hat_k_match_brute_force_enumeration() -> None:
    for n in range(1, 9):
        for k in range(1, n + 1):
            cs = np.arange(n + 1)
            at_k = stats.pass_at_k(np.full(n + 1, n), cs, k)
            hat_k = stats.pass_hat_k(n, cs, k)
            for c in range(n + 1):
                any_share, all_share = enumerate_subsets(n, c, k)
                assert at_k[c] == pytest.approx(float(any_share), abs=1e-15)
                assert hat_k[c] == pytest.approx(float(all_share), abs=1e-15)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 10, 37, 50, 99, 100])
def test_pass_at_k_is_bit_equal_to_python_int_formula_up_to_n_100(k: int) -> None:
    pairs = [(n, c) for n in (1, 3, 5, 10, 64, 99, 100) for c in range(n + 1)]
    n, c = np.array(pairs).T
    assert_bit_equal(stats.pass_at_k(n, c, k), [pass_at_k_package_way(a, b, k) for a, b in pairs])
    assert_bit_equal(stats.pass_hat_k(n, c, k), [pass_hat_k_package_way(a, b, k) for a, b in pairs])


def test_pass_at_k_float_semantics_example_from_spec() -> None:
    assert stats.pass_at_k(3, 1, 1).tolist() == 0.33333333333333337


def test_pass_at_k_is_nan_when_fewer_attempts_than_k() -> None:
    result = stats.pass_at_k([2, 0, 5], [1, 0, 5], 3)
    assert math.isnan(result[0]) and math.isnan(result[1]) and result[2] == 1.0
    assert math.isnan(stats.pass_hat_k(2, 2, 3))


def test_pass_at_k_keeps_shape_and_handles_empty_input() -> None:
    n = np.full((2, 3), 4)
    c = np.array([[0, 1, 2], [3, 4, 4]])
    assert stats.pass_at_k(n, c, 2).shape == (2, 3)
    assert stats.pass_hat_k(np.array([], dtype=int), np.array([], dtype=int), 1).shape == (0,)


def test_pass_at_k_sparse_offsets_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Large attempt counts take the np.unique route; shrink the limit to exercise it.
    monkeypatch.setattr(stats, "_DENSE_OFFSETS_LIMIT", 4)
    pairs = [(n, c) for n in (2, 5, 9) for c in range(n + 1)]
    n, c = np.array(pairs).T
    assert_bit_equal(stats.pass_at_k(n, c, 2), [pass_at_k_package_way(a, b, 2) for a, b in pairs])


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (-1, 0, 1), (3, 1, 0), (3, 1, 1.0)])
def test_pass_at_k_rejects_bad_input(n: int, c: int, k: object) -> None:
    with pytest.raises(ValueError):
        stats.pass_at_k(n, c, k)  # type: ignore[arg-type]


# --- means, spreads, order statistics ------------------------------------------------


def random_series(rng: np.random.Generator, count: int) -> list[list[float]]:
    series = []
    for _ in range(count):
        size = int(rng.integers(1, 12))
        kind = rng.integers(0, 3)
        if kind == 0:
            values = rng.random(size)
        elif kind == 1:
            values = rng.lognormal(6.0, 1.0, size)
        else:
            values = rng.integers(0, 5, size) / 4
        series.append(values.tolist())
    return series


def test_fmean_stdev_median_match_statistics() -> None:
    rng = np.random.default_rng(11)
    for values in random_series(rng, 300):
        assert bits(stats.fmean(values)) == bits(statistics.fmean(values))
        assert bits(stats.median(np.array(values))) == bits(statistics.median(values))
        if len(values) > 1:
            assert bits(stats.sample_stdev(values)) == bits(statistics.stdev(values))


def test_fmean_is_exactly_rounded() -> None:
    values = [1e16, 1.0, -1e16, 1.0]
    assert stats.fmean(values) == 0.5  # a naive left-to-right sum gives 0.25


@pytest.mark.parametrize("function", [stats.fmean, stats.median])
def test_empty_input_raises(function: object) -> None:
    with pytest.raises(ValueError):
        function([])  # type: ignore[operator]


def test_sample_stdev_needs_two_values() -> None:
    with pytest.raises(ValueError):
        stats.sample_stdev([1.0])


def percentile_by_hand(values: list[float], q: float) -> float:
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    lo, hi = math.floor(h), math.ceil(h)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (h - lo)


@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.95, 1.0])
def test_percentile_linear_matches_numpy_and_hand_formula(q: float) -> None:
    rng = np.random.default_rng(5)
    for values in random_series(rng, 200):
        got = stats.percentile_linear(values, q)
        assert got == pytest.approx(np.quantile(values, q, method="linear"), rel=1e-14)
        assert bits(got) == bits(percentile_by_hand(values, q))


def test_percentile_linear_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        stats.percentile_linear([], 0.5)
    with pytest.raises(ValueError):
        stats.percentile_linear([1.0], 1.5)


def test_harmonic_mean_matches_statistics() -> None:
    rng = np.random.default_rng(43)
    for _ in range(200):
        counts = rng.integers(1, 9, int(rng.integers(1, 8))).astype(float)
        expected = statistics.harmonic_mean(counts.tolist())
        assert stats.harmonic_mean(counts) == pytest.approx(expected, rel=1e-14)
    # Equal counts give the count itself: n / sum(1/3) is 3.0000000000000004.
    assert repr(stats.harmonic_mean(np.array([3.0] * 5))) == "3.0"
    assert stats.harmonic_mean(np.array([4.0])) == 4.0
    assert math.isnan(stats.harmonic_mean(np.array([])))


def test_row_fmean_stdev_matches_statistics_row_by_row() -> None:
    # Few distinct values, so rows repeat (also in another order) and share one computation.
    rng = np.random.default_rng(47)
    matrix = rng.integers(0, 4, (80, 5)) / 4
    matrix[rng.random(matrix.shape) < 0.35] = np.nan
    matrix[0] = np.nan
    matrix[1, 1:] = np.nan
    matrix[2, 2:] = np.nan
    matrix[3] = [0.1, 0.2, 0.7, np.nan, 1e16]
    count, mean, sd = stats.row_fmean_stdev(matrix)
    for i, row in enumerate(matrix.tolist()):
        present = [x for x in row if not math.isnan(x)]
        assert count[i] == len(present)
        assert bits(mean[i]) == bits(statistics.fmean(present) if present else math.nan)
        assert bits(sd[i]) == bits(statistics.stdev(present) if len(present) > 1 else math.nan)


def test_row_fmean_stdev_of_no_rows_or_no_columns() -> None:
    for shape in [(0, 3), (2, 0)]:
        count, mean, sd = stats.row_fmean_stdev(np.empty(shape))
        assert count.tolist() == [0] * shape[0]
        assert np.isnan(mean).all() and np.isnan(sd).all() and len(mean) == shape[0]
    # One row, one column: the general path.
    count, mean, sd = stats.row_fmean_stdev([[0.5, 1.0, np.nan]])
    assert (count.tolist(), mean.tolist()) == ([2], [0.75])
    assert sd.tolist() == [statistics.stdev([0.5, 1.0])]
    count, mean, sd = stats.row_fmean_stdev([[0.25], [np.nan]])
    assert count.tolist() == [1, 0] and mean[0] == 0.25 and np.isnan([mean[1], *sd]).all()
    with pytest.raises(ValueError, match="2-D"):
        stats.row_fmean_stdev([1.0, 2.0])


# --- metric_summary ------------------------------------------------------------------


def test_metric_summary_matches_statistics_and_numpy() -> None:
    rng = np.random.default_rng(7)
    z = statistics.NormalDist().inv_cdf(0.975)
    for values in random_series(rng, 100):
        summary = stats.metric_summary(values, 0.95, bounded=False)
        assert summary is not None
        n = len(values)
        sd = statistics.stdev(values) if n > 1 else 0.0
        mean = statistics.fmean(values)
        assert summary["count"] == n
        assert summary["mean"] == mean
        assert summary["median"] == statistics.median(values)
        assert summary["p95"] == pytest.approx(np.percentile(values, 95), rel=1e-14)
        assert summary["standard_deviation"] == sd
        if mean == 0:
            assert summary["coefficient_of_variation"] is None
        else:
            assert summary["coefficient_of_variation"] == sd / mean
        interval = summary["confidence_interval"]
        assert interval["lower"] == pytest.approx(mean - z * sd / math.sqrt(n), rel=1e-14)
        assert interval["upper"] == pytest.approx(mean + z * sd / math.sqrt(n), rel=1e-14)


def test_metric_summary_layout_and_edge_rules() -> None:
    assert stats.metric_summary([], 0.95, bounded=True) is None
    single = stats.metric_summary([0.25], 0.9, bounded=True)
    assert single == {
        "count": 1,
        "mean": 0.25,
        "median": 0.25,
        "p95": 0.25,
        "standard_deviation": 0.0,
        "coefficient_of_variation": 0.0,
        "confidence_interval": {
            "lower": 0.25,
            "upper": 0.25,
            "confidence_level": 0.9,
            "method": "normal_approximation",
        },
    }
    assert list(single) == [
        "count",
        "mean",
        "median",
        "p95",
        "standard_deviation",
        "coefficient_of_variation",
        "confidence_interval",
    ]
    zeros = stats.metric_summary([0.0, 0.0], 0.95, bounded=False)
    assert zeros is not None and zeros["coefficient_of_variation"] is None


def test_metric_summary_clips_only_bounded_series() -> None:
    values = [0.0, 0.0, 1.0, 1.0]
    bounded = stats.metric_summary(values, 0.95, bounded=True)
    unbounded = stats.metric_summary(values, 0.95, bounded=False)
    assert bounded is not None and unbounded is not None
    assert bounded["confidence_interval"]["lower"] == 0.0
    assert bounded["confidence_interval"]["upper"] == 1.0
    assert unbounded["confidence_interval"]["lower"] < 0.0
    assert unbounded["confidence_interval"]["upper"] > 1.0


# --- two-proportion z-test -----------------------------------------------------------


def z_test_with_scipy(s1: int, n1: int, s2: int, n2: int) -> float:
    from scipy.stats import norm

    pooled = (s1 + s2) / (n1 + n2)
    z = (s1 / n1 - s2 / n2) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return float(2 * (1 - norm.cdf(abs(z))))


def test_z_test_matches_scipy_hand_computation() -> None:
    rng = np.random.default_rng(13)
    n1 = rng.integers(1, 2000, 300)
    n2 = rng.integers(1, 2000, 300)
    s1 = (rng.random(300) * (n1 + 1)).astype(int)
    s2 = (rng.random(300) * (n2 + 1)).astype(int)
    result = stats.two_proportion_z_test_array(s1, n1, s2, n2)
    for i in range(300):
        a, b, c, d = int(s1[i]), int(n1[i]), int(s2[i]), int(n2[i])
        if a + c in (0, b + d):
            assert result[i] == 1.0
        else:
            assert result[i] == pytest.approx(z_test_with_scipy(a, b, c, d), abs=1e-14)
        assert stats.two_proportion_z_test(a, b, c, d) == result[i]


def test_z_test_matches_statsmodels_pooled_test() -> None:
    from statsmodels.stats.proportion import proportions_ztest

    _, expected = proportions_ztest([45, 40], [50, 50])
    assert stats.two_proportion_z_test(45, 50, 40, 50) == pytest.approx(expected, rel=1e-12)


def test_z_test_edge_rules() -> None:
    assert stats.two_proportion_z_test(0, 10, 0, 20) == 1.0
    assert stats.two_proportion_z_test(10, 10, 20, 20) == 1.0
    assert stats.two_proportion_z_test(0, 0, 3, 5) is None
    assert stats.two_proportion_z_test(3, 5, 0, 0) is None
    result = stats.two_proportion_z_test_array([0, 1], [0, 4], [0, 2], [3, 4])
    assert math.isnan(result[0]) and 0 < result[1] < 1
    with pytest.raises(ValueError):
        stats.two_proportion_z_test(5, 4, 1, 4)


# --- metric_delta --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("baseline", "candidate", "higher", "expected"),
    [
        (0.8, 0.7, True, (0.7 - 0.8, (0.7 - 0.8) / 0.8, True)),
        (0.8, 0.78, True, (0.78 - 0.8, (0.78 - 0.8) / 0.8, False)),
        (100.0, 106.0, False, (6.0, 0.06, True)),
        (100.0, 105.0, False, (5.0, 0.05, False)),  # strict: exactly +5 % is not a regression
        (-2.0, -1.0, True, (1.0, 0.5, False)),
        (0.0, 0.0, True, (0.0, 0.0, False)),
        (0.0, 3.0, True, (3.0, math.inf, False)),
        (0.0, 3.0, False, (3.0, math.inf, True)),
        (0.0, -3.0, True, (-3.0, -math.inf, True)),
    ],
)
def test_metric_delta(
    baseline: float, candidate: float, higher: bool, expected: tuple[float, float, bool]
) -> None:
    delta = stats.metric_delta(baseline, candidate, higher_is_better=higher, threshold=0.05)
    assert delta == {"absolute": expected[0], "relative": expected[1], "regressed": expected[2]}
    assert isinstance(delta["relative"], float)


# --- Pareto front --------------------------------------------------------------------


def pareto_by_double_loop(
    rows: list[list[float]], maximize: list[bool], unknown: list[list[bool]]
) -> list[bool]:
    front = []
    for i, candidate in enumerate(rows):
        dominated = False
        for j, other in enumerate(rows):
            if i == j:
                continue
            all_not_worse, any_better = True, False
            for m, higher in enumerate(maximize):
                if unknown[i][m] or unknown[j][m]:
                    continue
                a, b = candidate[m], other[m]
                all_not_worse &= b >= a if higher else b <= a
                any_better |= b > a if higher else b < a
            dominated |= all_not_worse and any_better
        front.append(not dominated)
    return front


def test_pareto_matches_double_loop_on_random_tied_data() -> None:
    rng = np.random.default_rng(17)
    maximize = [True, True, True, False, False]
    for _ in range(300):
        size = int(rng.integers(1, 7))
        rows = rng.integers(0, 3, (size, 5)).astype(float)
        unknown = np.zeros((size, 5), dtype=bool)
        unknown[:, 4] = rng.random(size) < 0.3
        rows[unknown] = np.nan
        got = stats.pareto_front(rows, maximize, unknown)
        assert got.tolist() == pareto_by_double_loop(rows.tolist(), maximize, unknown.tolist())


def test_pareto_ties_and_empty_input() -> None:
    same = [[0.5, 10.0], [0.5, 10.0]]
    assert stats.pareto_front(same, [True, False]).tolist() == [True, True]
    assert stats.pareto_front(np.empty((0, 2)), [True, False]).tolist() == []
    # An unknown value neither blocks nor creates dominance.
    rows = [[0.9, 1.0], [0.8, np.nan]]
    unknown = [[False, False], [False, True]]
    assert stats.pareto_front(rows, [True, False], unknown).tolist() == [True, False]


def test_pareto_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError):
        stats.pareto_front([[1.0, 2.0]], [True])
    with pytest.raises(ValueError):
        stats.pareto_front([[1.0, 2.0]], [True, True], [[False]])
    with pytest.raises(ValueError):
        stats.pareto_front([1.0, 2.0], [True, True])


# --- differential: the real agenticlens 0.10 functions -------------------------------


@pytest.mark.differential
def test_differential_pass_at_k_and_pass_hat_k() -> None:
    real = pytest.importorskip("agenticlens.experiments.stats")
    pairs = [(n, c) for n in [*range(1, 21), 50, 100] for c in range(n + 1)]
    n, c = np.array(pairs).T
    for k in [1, 2, 3, 4, 5, 7, 10, 20, 33, 50, 100]:
        eligible = [(a, b) for a, b in pairs if a >= k]
        at_k = stats.pass_at_k(n, c, k)[n >= k]
        hat_k = stats.pass_hat_k(n, c, k)[n >= k]
        assert_bit_equal(at_k, [real.pass_at_k(a, b, k) for a, b in eligible])
        assert_bit_equal(hat_k, [real.pass_hat_k(a, b, k) for a, b in eligible])


@pytest.mark.differential
def test_differential_z_value_and_wilson() -> None:
    real = pytest.importorskip("agenticlens.experiments.stats")
    rng = np.random.default_rng(23)
    pairs = [(s, n) for n in range(1, 61) for s in range(n + 1)]
    big_n = rng.integers(1, 10**8, size=500)
    pairs += [(int(rng.integers(0, n + 1)), int(n)) for n in big_n]
    s, n = np.array(pairs).T
    for level in [*CONFIDENCE_LEVELS, *rng.uniform(0.01, 0.999, 4).tolist()]:
        assert bits(stats.z_value(level)) == bits(real.z_value(level))
        lower, upper = stats.wilson_interval(s, n, level)
        expected = [real.wilson_interval(a, b, level) for a, b in pairs]
        assert_bit_equal(lower, [e[0] for e in expected])
        assert_bit_equal(upper, [e[1] for e in expected])


@pytest.mark.differential
def test_differential_two_proportion_z_test() -> None:
    real = pytest.importorskip("agenticlens.experiments.stats")
    rng = np.random.default_rng(29)
    size = 2000
    n1 = rng.integers(0, 600, size)
    n2 = rng.integers(0, 600, size)
    s1 = (rng.random(size) * (n1 + 1)).astype(int)
    s2 = (rng.random(size) * (n2 + 1)).astype(int)
    # Close proportions and extreme ones, where the tail is small.
    s2[:200] = s1[:200]
    n2[:200] = n1[:200]
    s1[200:400] = n1[200:400]
    s2[200:400] = 0
    result = stats.two_proportion_z_test_array(s1, n1, s2, n2)
    for i in range(size):
        args = (int(s1[i]), int(n1[i]), int(s2[i]), int(n2[i]))
        expected = real.two_proportion_p_value(*args)
        scalar = stats.two_proportion_z_test(*args)
        if expected is None:
            assert scalar is None and math.isnan(result[i])
        else:
            assert bits(scalar) == bits(expected) == bits(float(result[i]))


@pytest.mark.differential
def test_differential_summary_helpers() -> None:
    real_stats = pytest.importorskip("agenticlens.experiments.stats")
    real_comparison = pytest.importorskip("agenticlens.comparison.stats")
    runner = pytest.importorskip("agenticlens.experiments.runner")
    rng = np.random.default_rng(31)
    series = random_series(rng, 400)
    series += [[0.0], [1.0, 1.0], [0.0, 0.0, 0.0], [0.2, 0.0], [1000.9999999999999, 1001.0]]
    for values in series:
        for q in (0.5, 0.95):
            assert bits(stats.percentile_linear(values, q)) == bits(
                real_comparison.percentile(values, q)
            )
        level = float(rng.choice(CONFIDENCE_LEVELS))
        real_lower, real_upper = real_stats.mean_interval(values, level)
        for bounded in (False, True):
            ours = stats.metric_summary(values, level, bounded=bounded)
            theirs = runner._metric_summary(values, confidence_level=level, bounded=bounded)
            assert ours == theirs.model_dump()
            assert list(ours) == list(theirs.model_dump())
            flat = [ours["mean"], ours["median"], ours["p95"], ours["standard_deviation"]]
            ref = [theirs.mean, theirs.median, theirs.p95, theirs.standard_deviation]
            assert [bits(v) for v in flat] == [bits(v) for v in ref]
            interval = ours["confidence_interval"]
            if not bounded:
                assert bits(interval["lower"]) == bits(real_lower)
                assert bits(interval["upper"]) == bits(real_upper)


@pytest.mark.differential
def test_differential_metric_delta() -> None:
    real = pytest.importorskip("agenticlens.comparison.stats")
    rng = np.random.default_rng(37)
    grid = [0.0, -0.0, 1.0, -1.0, 0.05, 0.5, 0.95, 120.0, 1e-9]
    pairs = list(itertools.product(grid, grid)) + rng.normal(0, 2, (300, 2)).tolist()
    for baseline, candidate in pairs:
        for lower_is_better in (False, True):
            for threshold in (0.0, 0.05, 0.2):
                expected = real.metric_delta(
                    baseline, candidate, threshold, lower_is_better=lower_is_better
                )
                got = stats.metric_delta(
                    baseline, candidate, higher_is_better=not lower_is_better, threshold=threshold
                )
                assert bits(got["absolute"]) == bits(expected.absolute)
                assert bits(got["relative"]) == bits(expected.relative)
                assert got["regressed"] is expected.regressed


def fake_variant(variant_id: str, row: list[float], priced: bool) -> SimpleNamespace:
    """The attributes the package's frontier code reads, without building real models."""

    def summary(mean: float) -> SimpleNamespace:
        return SimpleNamespace(mean=mean)

    return SimpleNamespace(
        variant_id=variant_id,
        summary=SimpleNamespace(
            trial_success_rate=row[0],
            pass_rate=summary(row[1]),
            average_score=summary(row[2]),
            average_latency_ms=summary(row[3]),
            total_cost_usd=summary(row[4]) if priced else None,
        ),
    )


@pytest.mark.differential
def test_differential_pareto_front() -> None:
    runner = pytest.importorskip("agenticlens.experiments.runner")
    rng = np.random.default_rng(41)
    maximize = [True, True, True, False, False]
    for _ in range(400):
        size = int(rng.integers(1, 8))
        rows = rng.integers(0, 3, (size, 5)) / 2
        priced = rng.random(size) < 0.7
        variants = [fake_variant(f"v{i}", rows[i].tolist(), priced[i]) for i in range(size)]
        unknown = np.zeros((size, 5), dtype=bool)
        unknown[:, 4] = ~priced
        objectives = np.where(unknown, np.nan, rows)
        got = stats.pareto_front(objectives, maximize, unknown)
        expected = set(runner._pareto_frontier(variants))
        assert got.tolist() == [v.variant_id in expected for v in variants]
