"""Anytime-valid confidence sequences: a naive loop, and error rates under peeking."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agenticlens_frames.stats_sequential import (
    BettingConfidenceSequence,
    applied_correction,
    candidate_alpha,
    decide,
)


def _naive_log_capital(d: list[float], value: float, alpha: float, c: float = 0.5) -> float:
    """Waudby-Smith & Ramdas' hedged capital at one mean, written out case by case."""
    m = (value + 1) / 2
    plus = minus = 1.0
    sum_x = sum_sq = 0.0
    var = 0.25
    for t, di in enumerate(d, start=1):
        x = (di + 1) / 2
        lam = math.sqrt(2 * math.log(2 / alpha) / (var * t * math.log(1 + t)))
        plus *= 1 + min(lam, c / m if m > 0 else math.inf) * (x - m)
        minus *= 1 - min(lam, c / (1 - m) if m < 1 else math.inf) * (x - m)
        sum_x += x
        mean = (0.5 + sum_x) / (t + 1)
        sum_sq += (x - mean) ** 2
        var = (0.25 + sum_sq) / (t + 1)
    return math.log(0.5 * plus + 0.5 * minus)


def test_capital_matches_a_naive_loop() -> None:
    rng = np.random.default_rng(0)
    d = rng.choice([-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1], size=60).tolist()
    cs = BettingConfidenceSequence(0.05)
    for x in d:
        cs.update([x])
    for value in (-0.5, 0.0, 0.1, 0.5):
        assert cs.log_capital(value)[0] == pytest.approx(_naive_log_capital(d, value, 0.05))


def _simulate(runs: int, cases: int, delta: float, seed: int, alpha: float = 0.05):
    """Paired per-case pass rates over 3 trials; case difficulty shared by both variants."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 1, size=(runs, cases))
    base = rng.binomial(3, p) / 3
    cand = rng.binomial(3, np.clip(p + delta, 0, 1)) / 3
    cs = BettingConfidenceSequence(alpha, n=runs)
    ever_wrong = np.zeros(runs, dtype=bool)
    stopped = np.full(runs, cases)
    decided = np.zeros(runs, dtype=bool)
    for i in range(cases):
        cs.update(cand[:, i] - base[:, i])
        low, high = cs.interval()
        # The true mean difference is 0 under the null: any exclusion of 0 is an error.
        ever_wrong |= (low > 0) | (high < 0)
        now = ~decided & ((low > 0) | (high < 0))
        stopped[now] = i + 1
        decided |= now
    return ever_wrong, stopped, decided


def test_error_rate_under_continuous_monitoring_stays_below_alpha() -> None:
    # 300 runs × 150 cases, checked after every case: a fixed-sample 95 % interval
    # checked this often would exclude the truth in far more than 5 % of runs.
    wrong, _, _ = _simulate(300, 150, 0.0, seed=1)
    assert wrong.mean() <= 0.05


def test_a_true_difference_stops_early() -> None:
    _, stopped, decided = _simulate(200, 300, 0.10, seed=2)
    assert decided.mean() > 0.9
    assert stopped.mean() <= 0.6 * 300  # at least 40 % of the planned cases saved


def test_decisions_and_alpha() -> None:
    assert candidate_alpha(0.05, 3, "bonferroni") == pytest.approx(0.05 / 3)
    assert decide(-0.01, 0.01, margin=0.02) == "within ±δ"
    assert decide(-0.01, 0.03, margin=0.02) is None
    with pytest.raises(ValueError):
        BettingConfidenceSequence(0.05).update([1.5])


def test_a_nan_difference_is_skipped_by_its_sequence_only() -> None:
    # A case with no evaluated attempt on one side is not a paired case for that
    # candidate: its sequence must be exactly the sequence of its own paired cases.
    rng = np.random.default_rng(5)
    a = rng.choice([-1, -0.5, 0, 0.5, 1], size=40)
    b = rng.choice([-1, -0.5, 0, 0.5, 1], size=40)
    b[::3] = np.nan
    both = BettingConfidenceSequence(0.05, n=2)
    for x, y in zip(a, b, strict=True):
        both.update([x, y])
    alone = BettingConfidenceSequence(0.05)
    for y in b[~np.isnan(b)]:
        alone.update([y])
    assert both.t.tolist() == [40, int((~np.isnan(b)).sum())]
    for value in (-0.5, 0.0, 0.25):
        assert both.log_capital(value)[1] == pytest.approx(
            _naive_log_capital(b[~np.isnan(b)].tolist(), value, 0.05)
        )
        assert both.log_capital(value)[0] == pytest.approx(
            _naive_log_capital(a.tolist(), value, 0.05)
        )
    low, high = both.interval()
    assert (low[1], high[1]) == tuple(x[0] for x in alone.interval())
    # No paired case at all: nothing excluded, so nothing can be decided.
    empty = BettingConfidenceSequence(0.05)
    empty.update([np.nan])
    assert empty.t.tolist() == [0] and [x[0] for x in empty.interval()] == [-1.0, 1.0]


def _naive_lower(d: list[float], alpha: float, c: float = 0.5) -> float:
    """The one-sided lower confidence sequence of Waudby-Smith & Ramdas, written out case
    by case: at each grid mean m, the capital betting on the mean being higher,
    prod (1 + min(lam_i, c/m) (x_i - m)) with lam_i's log(1/alpha); m is excluded once that
    capital has reached 1/alpha; the bound is the smallest grid value never excluded."""
    grid = [-1 + 0.0025 * k for k in range(801)]
    for value in grid:
        m = (value + 1) / 2
        capital, sum_x, sum_sq, var, excluded = 1.0, 0.0, 0.0, 0.25, False
        for t, di in enumerate(d, start=1):
            x = (di + 1) / 2
            lam = math.sqrt(2 * math.log(1 / alpha) / (var * t * math.log(1 + t)))
            capital *= 1 + min(lam, c / m if m > 0 else math.inf) * (x - m)
            excluded |= capital >= 1 / alpha
            sum_x += x
            mean = (0.5 + sum_x) / (t + 1)
            sum_sq += (x - mean) ** 2
            var = (0.25 + sum_sq) / (t + 1)
        if not excluded:
            return value
    return math.nan


def test_the_one_sided_lower_sequence_matches_a_naive_loop() -> None:
    rng = np.random.default_rng(7)
    weights = np.array([1, 1, 2, 6, 2, 1, 1]) / 14
    d = rng.choice([-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1], size=80, p=weights).tolist()
    lower = BettingConfidenceSequence(0.05, one_sided=True)
    two = BettingConfidenceSequence(0.05)
    for x in d:
        lower.update([x])
        two.update([x])
    low, high = lower.interval()
    assert low[0] == pytest.approx(_naive_lower(d, 0.05), abs=1e-9) and high[0] == 1.0
    # The whole of alpha on one side: at least as high as the two-sided sequence's lower end.
    assert low[0] >= two.interval()[0][0]
    for value in (-0.5, 0.0, 0.1):
        m = (value + 1) / 2
        expected = sum(
            math.log1p(min(lam, 0.5 / m) * ((x + 1) / 2 - m))
            for x, lam in zip(d, _naive_bets(d, 0.05), strict=True)
        )
        assert lower.log_capital(value)[0] == pytest.approx(expected)


def _naive_bets(d: list[float], alpha: float) -> list[float]:
    """The one-sided predictable plug-in bets lam_i (before the cap c/m), case by case."""
    bets, sum_x, sum_sq, var = [], 0.0, 0.0, 0.25
    for t, di in enumerate(d, start=1):
        bets.append(math.sqrt(2 * math.log(1 / alpha) / (var * t * math.log(1 + t))))
        sum_x += (di + 1) / 2
        sum_sq += ((di + 1) / 2 - (0.5 + sum_x) / (t + 1)) ** 2
        var = (0.25 + sum_sq) / (t + 1)
    return bets


def test_the_one_sided_lower_sequence_misses_at_most_alpha_under_peeking() -> None:
    # Watched after every case (400 runs x 150 cases, true difference 0 with case
    # difficulty shared): the lower end ever above the truth in at most alpha of runs,
    # and it does go there sometimes (it spends its alpha on the one side).
    rng = np.random.default_rng(11)
    p = rng.beta(2, 1, size=(400, 150))
    d = rng.binomial(3, p) / 3 - rng.binomial(3, p) / 3
    lower = BettingConfidenceSequence(0.05, n=400, one_sided=True)
    missed = np.zeros(400, dtype=bool)
    for i in range(150):
        lower.update(d[:, i])
        missed |= lower.interval()[0] > 0
    assert 0 < missed.mean() <= 0.05


def _naive_interval(d: list[float], alpha: float, c: float = 0.5) -> tuple[float, float]:
    """The two-sided sequence's ends, written out: at each grid value, the hedged capital
    case by case; the value is excluded once that capital has reached 1/alpha; the ends
    are the smallest and largest grid values never excluded."""
    alive = []
    for k in range(801):
        value = -1 + 0.0025 * k
        m = (value + 1) / 2
        plus = minus = 1.0
        sum_x = sum_sq = 0.0
        var, excluded = 0.25, False
        for t, di in enumerate(d, start=1):
            x = (di + 1) / 2
            lam = math.sqrt(2 * math.log(2 / alpha) / (var * t * math.log(1 + t)))
            plus *= 1 + min(lam, c / m if m > 0 else math.inf) * (x - m)
            minus *= 1 - min(lam, c / (1 - m) if m < 1 else math.inf) * (x - m)
            excluded |= 0.5 * plus + 0.5 * minus >= 1 / alpha
            sum_x += x
            mean = (0.5 + sum_x) / (t + 1)
            sum_sq += (x - mean) ** 2
            var = (0.25 + sum_sq) / (t + 1)
        if not excluded:
            alive.append(value)
    return min(alive), max(alive)


def test_the_two_sided_ends_match_a_naive_grid_loop() -> None:
    # A positive mean difference, so both ends lie inside (-1, 1) after 60 cases.
    rng = np.random.default_rng(13)
    d = rng.choice(
        [-1, -1 / 3, 0, 1 / 3, 2 / 3, 1], size=60, p=np.array([1, 2, 5, 3, 2, 2]) / 15
    ).tolist()
    cs = BettingConfidenceSequence(0.05)
    for x in d:
        cs.update([x])
    low, high = cs.interval()
    want_low, want_high = _naive_interval(d, 0.05)
    assert -1 < want_low < want_high < 1
    assert (low[0], high[0]) == pytest.approx((want_low, want_high), abs=1e-9)


def test_capital_near_the_ends_of_the_grid_matches_a_naive_loop() -> None:
    # Near m = 0 or 1 the caps c/m and c/(1-m) are large, so the first bets are the
    # plug-in lambda_1 itself, set by the prior variance 1/4.
    rng = np.random.default_rng(17)
    d = rng.choice([-1, 0, 1], size=30).tolist()
    cs = BettingConfidenceSequence(0.05)
    for x in d:
        cs.update([x])
    for value in (-0.995, -0.95, 0.95, 0.995):
        assert cs.log_capital(value)[0] == pytest.approx(_naive_log_capital(d, value, 0.05))


def test_decisions_need_an_end_strictly_past_zero_or_inside_the_margin() -> None:
    """0 and ±δ are grid points, so an end can sit exactly on them: an end at 0 has not
    excluded 0, and an end at ±δ has not excluded a difference as large as δ."""
    assert decide(0.0025, 0.3) == "better"
    assert decide(-0.3, -0.0025) == "worse"
    assert decide(0.0, 0.3) is None
    assert decide(-0.3, 0.0) is None
    assert decide(-0.0475, 0.0475, margin=0.05) == "within ±δ"
    assert decide(-0.05, 0.01, margin=0.05) is None
    assert decide(-0.01, 0.05, margin=0.05) is None
    assert decide(-0.01, 0.01) is None


@pytest.mark.parametrize(
    ("n_candidates", "correction", "expected"),
    [
        (1, "holm", "none"),
        (1, "bonferroni", "none"),
        (2, "holm", "bonferroni"),
        (2, "benjamini_hochberg", "bonferroni"),
        (3, "none", "none"),
        (2, "none", "none"),
    ],
)
def test_the_correction_across_candidates_is_bonferroni_from_two(
    n_candidates: int, correction: str, expected: str
) -> None:
    assert applied_correction(n_candidates, correction) == expected
    alpha = candidate_alpha(0.05, n_candidates, correction)
    assert alpha == (0.05 / n_candidates if expected == "bonferroni" else 0.05)
