"""Frontier bootstrap estimators against naive per-resample loops and known truths."""

from __future__ import annotations

import numpy as np
import pytest

from agenticlens_frames import stats
from agenticlens_frames import stats_frontier as sf


def test_counts_are_draws_of_n_cases_and_independent_of_chunking() -> None:
    full = sf.bootstrap_case_counts(7, 600, seed=3)
    assert full.shape == (600, 7)
    assert (full.sum(axis=1) == 7).all()
    parts = [
        sf.bootstrap_case_counts(7, 600, 3, start=a, stop=b)
        for a, b in [(0, 100), (100, 513), (513, 600)]
    ]
    np.testing.assert_array_equal(np.concatenate(parts), full)
    # Uniform draws: every case is drawn once per resample on average.
    assert abs(float(full.mean()) - 1.0) < 0.05
    assert not np.array_equal(full, sf.bootstrap_case_counts(7, 600, seed=4))


def test_ratio_means_match_a_loop_over_drawn_indices() -> None:
    rng = np.random.default_rng(0)
    n_var, n_trial, n_case = 3, 4, 9
    num = rng.normal(size=(n_var, n_trial, n_case))
    den = rng.integers(0, 3, size=(n_var, n_trial, n_case)).astype(float)
    block = (rng.random((n_var, n_trial, n_case)) < 0.05).astype(float)
    done = rng.random((n_var, n_trial)) < 0.8
    counts = sf.bootstrap_case_counts(n_case, 40, seed=1)
    mean, n = sf.resampled_trial_ratio_means(counts, num, den, done, blocker=block)
    for b in range(len(counts)):
        idx = np.repeat(np.arange(n_case), counts[b].astype(int))  # the drawn cases
        for v in range(n_var):
            values = []
            for t in range(n_trial):
                d = den[v, t, idx].sum()
                if done[v, t] and d > 0 and block[v, t, idx].sum() == 0:
                    values.append(num[v, t, idx].sum() / d)
            assert n[b, v] == len(values)
            if values:
                assert mean[b, v] == pytest.approx(np.mean(values), rel=1e-5, abs=1e-6)
            else:
                assert np.isnan(mean[b, v])


def test_all_pass_rate_matches_a_loop() -> None:
    rng = np.random.default_rng(1)
    failed = (rng.random((2, 5, 6)) < 0.1).astype(float)
    done = rng.random((2, 5)) < 0.8
    tried = np.ones((2, 5), dtype=bool)
    counts = sf.bootstrap_case_counts(6, 30, seed=2)
    got = sf.resampled_all_pass_rate(counts, failed, done, tried)
    for b in range(30):
        idx = np.repeat(np.arange(6), counts[b].astype(int))
        for v in range(2):
            ok = [done[v, t] and failed[v, t, idx].sum() == 0 for t in range(5)]
            assert got[b, v] == pytest.approx(sum(ok) / 5)


def test_batch_front_equals_the_single_front() -> None:
    rng = np.random.default_rng(2)
    # Few distinct values, so ties and equal rows occur.
    values = rng.integers(0, 3, size=(200, 5, 3)).astype(float)
    unknown = rng.random((200, 5, 3)) < 0.1
    maximize = [True, False, True]
    got = sf.pareto_front_batch(values, maximize, unknown)
    for b in range(200):
        np.testing.assert_array_equal(got[b], stats.pareto_front(values[b], maximize, unknown[b]))


def test_p_best_splits_ties_and_intervals_are_percentiles() -> None:
    obj = np.array([[[1.0], [1.0], [0.0]], [[2.0], [1.0], [0.0]]])  # 2 resamples
    res = sf.frontier_probabilities(obj, [True], confidence_level=0.5)
    np.testing.assert_allclose(res.p_best[:, 0], [0.75, 0.25, 0.0])
    np.testing.assert_allclose(res.p_frontier, [1.0, 0.5, 0.0])
    np.testing.assert_allclose(res.ci_low[:, 0], np.quantile(obj[:, :, 0], 0.25, axis=0))


def _simulate(rng: np.random.Generator, n_case: int, truth: list[tuple[float, float]]) -> tuple:
    """One trial per variant: pass ~ Bernoulli(p), latency ~ Normal(mu, 150) per case."""
    difficulty = rng.normal(0, 0.05, n_case)  # shared case effect (paired design)
    passed = np.stack(
        [(rng.random(n_case) < np.clip(p + difficulty, 0, 1)).astype(float) for p, _ in truth]
    )[:, None, :]
    latency = np.stack([rng.normal(mu, 150, n_case) for _, mu in truth])[:, None, :]
    return passed, latency


def _frontier(passed: np.ndarray, latency: np.ndarray, seed: int) -> sf.FrontierBootstrap:
    n_var, _, n_case = passed.shape
    counts = sf.bootstrap_case_counts(n_case, 1000, seed)
    done = np.ones((n_var, 1), dtype=bool)
    ones = np.ones_like(passed)
    pr, _ = sf.resampled_trial_ratio_means(counts, passed, ones, done)
    la, _ = sf.resampled_trial_ratio_means(counts, latency, ones, done)
    return sf.frontier_probabilities(np.stack([pr, la], axis=2), [True, False])


def test_known_truth_far_inside_is_never_on_the_frontier_and_twins_share() -> None:
    # a: accurate and slow; b: fast, less accurate; c: far inside (worse on both);
    # d and e: the same true variant, between a and b.
    truth = [(0.85, 2000.0), (0.6, 1000.0), (0.5, 2400.0), (0.72, 1500.0), (0.72, 1500.0)]
    rng = np.random.default_rng(11)
    p = np.array([_frontier(*_simulate(rng, 400, truth), seed=s).p_frontier for s in range(20)])
    mean = p.mean(axis=0)
    assert mean[2] < 0.01  # far inside: p ≈ 0
    assert mean[0] > 0.95 and mean[1] > 0.95  # the true frontier ends
    # The twins: equal on average (each one's p is bootstrap-noisy per data set).
    assert abs(mean[3] - mean[4]) < 0.1
    assert 0.2 < mean[3] < 0.95


def test_counts_match_a_naive_count_of_each_blocks_draws() -> None:
    # The documented draw: one child generator per block of 256 resamples, each drawing
    # (resamples in block, cases) int32 case indices; counted here with a Python Counter.
    from collections import Counter

    n_case, n_boot, seed = 11, 600, 9
    got = sf.bootstrap_case_counts(n_case, n_boot, seed)
    children = np.random.SeedSequence(seed).spawn(-(-n_boot // 256))
    rows = []
    for block, child in enumerate(children):
        size = min(256, n_boot - block * 256)
        draws = np.random.default_rng(child).integers(0, n_case, (size, n_case), dtype=np.int32)
        for drawn in draws.tolist():
            seen = Counter(drawn)
            rows.append([seen[c] for c in range(n_case)])
    np.testing.assert_array_equal(got, np.array(rows, dtype=np.float32))
    assert got.dtype == np.float32


@pytest.mark.parametrize("seed", range(6))
def test_unique_rows_is_np_unique(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_rows, n_cols = int(rng.integers(1, 60)), int(rng.integers(1, 300))
    base = rng.integers(0, 3, size=(max(1, n_rows // 3), n_cols)).astype(float)
    base[::2] *= rng.random(n_cols)  # some integer rows, some real ones
    rows = base[rng.integers(0, len(base), n_rows)]
    if seed == 4:
        rows[0, 0], rows[-1, 0] = -0.0, 0.0  # equal but not identical bytes
    if seed == 5:
        rows[0, -1] = np.nan
    expected, inverse = np.unique(rows, axis=0, return_inverse=True)
    got, got_inverse = sf.unique_rows(rows)
    assert got.tobytes() == expected.tobytes()
    np.testing.assert_array_equal(got_inverse, inverse.reshape(-1))
    np.testing.assert_array_equal(got[got_inverse], rows)


def test_p_best_of_an_objective_no_candidate_has_is_nan_and_else_sums_to_one() -> None:
    """A run that recorded no cost has no cheapest variant: every p_best_cost was 0 (shown
    as 0 %), and a resample in which no drawn case had a value counted as a loss for all."""
    rng = np.random.default_rng(3)
    obj = rng.normal(size=(300, 4, 2))
    obj[:, :, 1] = np.nan  # nobody has this objective
    obj[:100, :, 0] = np.nan  # nobody has a value in the first 100 resamples
    obj[150:, 2, 0] = np.nan  # candidate 2 unknown in the last half
    res = sf.frontier_probabilities(obj, [True, False])
    assert np.isnan(res.p_best[:, 1]).all()
    assert res.p_best[:, 0].sum() == pytest.approx(1.0)
    # Independent: the argmax among the known values of the 200 resamples that have one.
    best = np.nanargmax(obj[100:, :, 0], axis=1)
    np.testing.assert_allclose(res.p_best[:, 0], np.bincount(best, minlength=4) / 200)


def _naive_counts(n_case: int, n_boot: int, seed: int) -> np.ndarray:
    """The documented draw, counted with a Counter: one child generator per block of 256
    resamples, each drawing (resamples in block, cases) int32 case indices."""
    from collections import Counter

    children = np.random.SeedSequence(seed).spawn(-(-n_boot // 256))
    rows = []
    for block, child in enumerate(children):
        size = min(256, n_boot - block * 256)
        draws = np.random.default_rng(child).integers(0, n_case, (size, n_case), dtype=np.int32)
        for drawn in draws.tolist():
            seen = Counter(drawn)
            rows.append([seen[c] for c in range(n_case)])
    return np.array(rows, dtype=np.float32).reshape(n_boot, n_case)


@pytest.mark.parametrize(("n_case", "n_boot"), [(1, 5), (4, 256), (6, 400)])
def test_counts_of_one_case_one_full_block_and_two_blocks(n_case: int, n_boot: int) -> None:
    got = sf.bootstrap_case_counts(n_case, n_boot, seed=12)
    np.testing.assert_array_equal(got, _naive_counts(n_case, n_boot, 12))
    # Any slice, also one that ends on a block boundary, is that slice of the draw.
    for start, stop in [(0, 255), (0, 256), (250, n_boot), (3, 3)]:
        if start <= stop <= n_boot:
            part = sf.bootstrap_case_counts(n_case, n_boot, 12, start=start, stop=stop)
            np.testing.assert_array_equal(part, got[start:stop])
            assert part.shape == (stop - start, n_case)


def test_cluster_counts_are_a_case_bootstrap_of_the_clusters_spread_to_their_cases() -> None:
    # Clusters 0 … 3 over 7 cases: G = 4 cluster indices drawn per resample, and every case
    # gets the count of its cluster; each resample has G draws, not 7.
    codes = np.array([2, 0, 0, 1, 3, 3, 3])
    got = sf.bootstrap_case_counts(7, 300, seed=5, clusters=codes)
    per_cluster = _naive_counts(4, 300, 5)
    np.testing.assert_array_equal(got, per_cluster[:, codes])
    assert (got[:, 1] == got[:, 2]).all() and (got[:, 4] == got[:, 6]).all()
    for bad in ([0, 1, 2], [0, 0, 1, 1, 2, 2, -1]):
        with pytest.raises(ValueError, match="clusters"):
            sf.bootstrap_case_counts(len(bad) if len(bad) == 7 else 7, 10, 1, clusters=bad)
    with pytest.raises(ValueError, match="at least one case"):
        sf.bootstrap_case_counts(0, 10, 1)


def test_ratio_means_refuse_mismatched_shapes() -> None:
    a = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="variants, trials, cases"):
        sf.resampled_trial_ratio_means(np.ones((1, 4)), a, np.ones((2, 3, 5)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="variants, trials, cases"):
        sf.resampled_trial_ratio_means(np.ones((1, 4)), a, a, np.ones((2, 2)))
    with pytest.raises(ValueError, match="variants, trials, cases"):
        sf.resampled_trial_ratio_means(np.ones((1, 4)), a[0], a[0], np.ones(3))


def test_variants_with_one_or_no_trial() -> None:
    # Variant 0: one completed trial; variant 1: its only trial did not complete (padding
    # in the second slot). Counts: case 0 drawn twice, case 1 once.
    counts = np.array([[2.0, 1.0, 0.0]])
    num = np.array([[[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]], [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]])
    den = np.ones_like(num)
    done = np.array([[True, False], [False, False]])
    mean, n = sf.resampled_trial_ratio_means(counts, num, den, done)
    assert mean[0, 0] == pytest.approx(2 / 3) and n.tolist() == [[1, 0]]
    assert np.isnan(mean[0, 1])
    # All passed: variant 0's one attempted trial failed only on the undrawn case 2.
    failed = np.array([[[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]] * 2])
    tried = np.array([[True, False], [False, False]])
    rate = sf.resampled_all_pass_rate(counts, failed, done, tried)
    assert rate[0, 0] == 1.0 and np.isnan(rate[0, 1])
    rate = sf.resampled_all_pass_rate(np.array([[1.0, 1.0, 1.0]]), failed, done, tried)
    assert rate[0, 0] == 0.0


def _frontier_by_loops(
    values: np.ndarray, maximize: list[bool], unknown: np.ndarray, eligible: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """P(front) and P(best) resample by resample: a double loop for dominance among the
    eligible candidates (unknown values skipped), the best known value with ties split."""
    n_boot, n_cand, n_obj = values.shape
    on_front, times = np.zeros(n_cand), np.zeros(n_cand)
    best_share, decided = np.zeros((n_cand, n_obj)), np.zeros(n_obj)
    for b in range(n_boot):
        live = [i for i in range(n_cand) if eligible[b, i]]
        for i in live:
            times[i] += 1
            dominated = False
            for j in live:
                if j == i:
                    continue
                not_worse, better = True, False
                for k in range(n_obj):
                    if unknown[b, i, k] or unknown[b, j, k]:
                        continue
                    mine, theirs = values[b, i, k], values[b, j, k]
                    not_worse &= theirs >= mine if maximize[k] else theirs <= mine
                    better |= theirs > mine if maximize[k] else theirs < mine
                dominated |= not_worse and better
            on_front[i] += not dominated
        for k in range(n_obj):
            known = [i for i in live if not unknown[b, i, k]]
            if not known:
                continue
            decided[k] += 1
            pick = max if maximize[k] else min
            top = pick(values[b, i, k] for i in known)
            winners = [i for i in known if values[b, i, k] == top]
            for i in winners:
                best_share[i, k] += 1 / len(winners)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_front = np.where(times > 0, on_front / times, np.nan)
        p_best = np.where((times > 0)[:, None] & (decided > 0), best_share / decided, np.nan)
    return p_front, p_best


def test_frontier_probabilities_with_unknowns_eligibility_and_minimised_objectives() -> None:
    rng = np.random.default_rng(8)
    n_boot, n_cand, n_obj = 60, 3, 4  # more objectives than candidates
    values = rng.integers(0, 3, (n_boot, n_cand, n_obj)).astype(float)  # ties
    unknown = rng.random(values.shape) < 0.15
    unknown[1:, :, 3] = True  # objective 3 is known in one resample only
    eligible = rng.random((n_boot, n_cand)) < 0.85
    eligible[:, 2] = False
    eligible[7, 2] = True  # candidate 2 is eligible once, and then best on every objective
    values[7, 2], unknown[7, 2] = [3.0, -1.0, -1.0, 3.0], False
    maximize = [True, False, False, True]
    res = sf.frontier_probabilities(values, maximize, unknown=unknown, eligible=eligible)
    p_front, p_best = _frontier_by_loops(values, maximize, unknown, eligible)
    np.testing.assert_allclose(res.p_frontier, p_front, rtol=1e-12)
    np.testing.assert_allclose(res.p_best, p_best, rtol=1e-12)
    assert res.n_resamples == n_boot
    # The same unknowns written as NaN give the same probabilities.
    as_nan = sf.frontier_probabilities(
        np.where(unknown, np.nan, values), maximize, eligible=eligible
    )
    np.testing.assert_allclose(as_nan.p_best, p_best, rtol=1e-12)
