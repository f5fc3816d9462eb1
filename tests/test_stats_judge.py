"""The three-level variance decomposition against the nested ANOVA table computed by
naive loops (balanced data), and against known components on simulated data."""

from __future__ import annotations

import numpy as np
import pytest

from agenticlens_frames.stats_judge import nested_variance_components


def _anova_by_loops(y: np.ndarray) -> tuple[float, float, float]:
    """y[case, trial, sample]: method-of-moments components from the mean squares."""
    a, b, n = y.shape
    grand = sum(y[i, j, k] for i in range(a) for j in range(b) for k in range(n)) / (a * b * n)
    case_mean = [sum(y[i, j, k] for j in range(b) for k in range(n)) / (b * n) for i in range(a)]
    cell_mean = [[sum(y[i, j, k] for k in range(n)) / n for j in range(b)] for i in range(a)]
    ss_a = b * n * sum((case_mean[i] - grand) ** 2 for i in range(a))
    ss_b = n * sum((cell_mean[i][j] - case_mean[i]) ** 2 for i in range(a) for j in range(b))
    ss_e = sum(
        (y[i, j, k] - cell_mean[i][j]) ** 2 for i in range(a) for j in range(b) for k in range(n)
    )
    ms_a, ms_b, ms_e = ss_a / (a - 1), ss_b / (a * (b - 1)), ss_e / (a * b * (n - 1))
    return (ms_a - ms_b) / (b * n), (ms_b - ms_e) / n, ms_e


def _long(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, n = y.shape
    cases = np.repeat(np.arange(a), b * n)
    attempts = np.repeat(np.arange(a * b), n)
    return y.ravel(), cases, attempts


def test_balanced_components_equal_the_anova_table() -> None:
    rng = np.random.default_rng(7)
    y = (
        rng.normal(0, 0.3, (12, 1, 1))
        + rng.normal(0, 0.2, (12, 4, 1))
        + rng.normal(0, 0.4, (12, 4, 3))
    )
    case, trial, judge = _anova_by_loops(y)
    got = nested_variance_components(*_long(y))
    assert got.judge == pytest.approx(judge, rel=1e-12)
    assert got.trial == pytest.approx(max(trial, 0.0), rel=1e-12, abs=1e-15)
    assert got.case == pytest.approx(max(case, 0.0), rel=1e-12, abs=1e-15)
    assert (got.cases, got.attempts) == (12, 48)
    assert (got.trials, got.samples) == pytest.approx((4.0, 3.0), rel=1e-12)


def test_large_simulation_recovers_the_true_components() -> None:
    rng = np.random.default_rng(11)
    a, b, n = 800, 4, 4
    y = (
        rng.normal(0, 0.5, (a, 1, 1))  # case variance 0.25
        + rng.normal(0, 0.3, (a, b, 1))  # trial variance 0.09
        + rng.normal(0, 0.2, (a, b, n))  # judge variance 0.04
    )
    got = nested_variance_components(*_long(y))
    assert got.case == pytest.approx(0.25, rel=0.1)
    assert got.trial == pytest.approx(0.09, rel=0.1)
    assert got.judge == pytest.approx(0.04, rel=0.05)


def test_single_samples_leave_the_judge_unknown() -> None:
    got = nested_variance_components([1.0, 0.0, 0.5, 0.5], [0, 0, 1, 1], [0, 1, 2, 3])
    assert got.judge is None
    # trial variance then includes the judge's: pooled var of (1, 0) and (.5, .5)
    assert got.trial == pytest.approx((0.5 + 0.0) / 2)
    with pytest.raises(ValueError, match="same length"):
        nested_variance_components([1.0], [0, 1], [0])


def test_equal_samples_have_exactly_no_judge_variance() -> None:
    """0.2 three times has a mean that rounds (0.20000000000000004): the judge's variance
    came out 1e-33, and with nothing else varying the judge's share read 100%."""
    values = [0.2, 0.2, 0.2] * 4
    cases = np.repeat([0, 1], 6)
    attempts = np.repeat([0, 1, 2, 3], 3)
    v = nested_variance_components(values, cases, attempts)
    assert (v.judge, v.trial, v.case) == (0.0, 0.0, 0.0)


def test_balanced_counts_are_whole_numbers() -> None:
    """Three trials and three samples everywhere: the JSON report's judge-noise block said
    ``"trials": 3.0000000000000004`` (a harmonic mean's rounding)."""
    y = np.arange(5 * 3 * 3, dtype=float).reshape(5, 3, 3) % 7
    got = nested_variance_components(*_long(y))
    assert (got.trials, got.samples) == (3.0, 3.0)
    assert repr(got.trials) == "3.0"
