r"""How sure is the Pareto frontier? A joint case bootstrap, vectorised (pure estimators).

A variant is on the Pareto frontier or not; this module says how sure that is. Cases are
resampled with replacement **jointly across variants** (one draw of case indices serves
every variant, so the pairing of variants on the same case is kept), every frontier
objective is recomputed from the resampled cases exactly as the point estimate computes
it, and the frontier is recomputed in each resample. Then

.. math::

    p_\text{frontier}(v) = \frac{1}{B}\sum_{b=1}^{B} \mathbf 1[v \in \text{front}_b]

and, per objective :math:`k`, :math:`p_\text{best}(v, k)` is the share of resamples in which
:math:`v` has the best value (ties split equally, so the column sums to 1 over eligible
variants), among the resamples in which some variant has a value of :math:`k` (none
when no variant has one: a run that recorded no cost has no cheapest variant).

Every per-trial objective of the frontier is a ratio of case sums
(:math:`\sum_c w_c a_{vtc} / \sum_c w_c d_{vtc}`) or an "all cases passed" indicator
(:math:`\sum_c w_c f_{vtc} = 0`), where :math:`w_c` is how often case :math:`c` was drawn.
So one resample is a vector of case counts and a whole batch of resamples is one matrix
product ``counts @ values`` — no Python loop over resamples (see
``benchmarks/bench_frontier.py`` for the measured speed against a per-resample loop).

When the cases are clustered (cases on one topic are not independent), a resample draws
clusters instead, and every case of a drawn cluster is drawn with it: :math:`w_c` is then
how often the cluster of case :math:`c` was drawn, and nothing else changes.

References: Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 6 (the case
bootstrap); Cameron, Gelbach & Miller (2008), "Bootstrap-based improvements for inference
with clustered errors", *Rev. Econ. Stat.* 90(3) (the pairs cluster bootstrap, and how
rough it is with few clusters); the joint bootstrap of a Pareto frontier follows
evalstats' ``pareto`` module (P(non-dominated) per model).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "FrontierBootstrap",
    "all_pass_rate",
    "bootstrap_case_counts",
    "case_sums",
    "frontier_probabilities",
    "pareto_front_batch",
    "resampled_all_pass_rate",
    "resampled_trial_ratio_means",
    "trial_ratio_means",
    "unique_rows",
]

#: Resamples drawn per matrix product: bounds memory at ``chunk × cases`` floats.
_CHUNK = 256


def bootstrap_case_counts(
    n_cases: int,
    n_resamples: int,
    seed: int | None,
    *,
    start: int = 0,
    stop: int | None = None,
    clusters: ArrayLike | None = None,
) -> np.ndarray:
    """How often each case is drawn in each resample: ``(resamples, cases)`` float32 counts.

    Resample ``b`` draws ``n_cases`` case indices uniformly with replacement. The draw of
    resamples ``start:stop`` is the same whatever the chunking, because every block of 256
    resamples is drawn from a child seed of its own (``SeedSequence(seed).spawn``).

    With ``clusters`` (a cluster code 0 … G−1 per case) a resample draws G cluster indices
    with replacement instead, and every case of a drawn cluster gets its cluster's count:
    the cluster bootstrap (Cameron, Gelbach & Miller 2008), whose resampled suites have as
    many clusters as the suite but not always as many cases.

    Parameters
    ----------
    n_cases
        Cases in the suite (≥ 1).
    n_resamples
        Total resamples of the bootstrap.
    seed
        Seed of the bootstrap (None: fresh entropy, not reproducible).
    start, stop
        The slice of resamples to return (default: all).
    clusters
        Optional ``(n_cases,)`` integer cluster codes, every code 0 … G−1 used.

    Examples
    --------
    >>> counts = bootstrap_case_counts(4, 3, seed=1)
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((3, 4), [4.0, 4.0, 4.0])
    >>> pairs = bootstrap_case_counts(4, 3, seed=1, clusters=[0, 0, 1, 1])
    >>> bool((pairs[:, 0] == pairs[:, 1]).all()), pairs.sum(axis=1).tolist()
    (True, [4.0, 4.0, 4.0])
    """
    if n_cases < 1:
        raise ValueError(f"need at least one case, got {n_cases}")
    if clusters is not None:
        codes = np.asarray(clusters, dtype=np.intp)
        if codes.shape != (n_cases,) or codes.min() < 0:
            raise ValueError(f"clusters must hold one code ≥ 0 per case ({n_cases})")
        # The same draws as a case bootstrap of G "cases", spread to each cluster's cases.
        per_cluster = bootstrap_case_counts(
            int(codes.max()) + 1, n_resamples, seed, start=start, stop=stop
        )
        return per_cluster[:, codes]
    stop = n_resamples if stop is None else stop
    # One child generator per fixed-size block of resamples: chunked and unchunked calls
    # give identical draws, so results do not depend on the chunk size.
    blocks = range(start // _CHUNK, (stop - 1) // _CHUNK + 1) if stop > start else range(0)
    children = np.random.SeedSequence(seed).spawn(-(-n_resamples // _CHUNK))
    parts = []
    for block in blocks:
        rng = np.random.default_rng(children[block])
        b0 = block * _CHUNK
        b1 = min(b0 + _CHUNK, n_resamples)
        draws = rng.integers(0, n_cases, size=(b1 - b0, n_cases), dtype=np.int32)
        lo, hi = max(start, b0) - b0, min(stop, b1) - b0
        draws = draws[lo:hi]
        # One bincount per resample, straight into the float32 block: no (resamples ×
        # cases) int64 offsets or counts in between (half the time of one flat bincount).
        counts = np.empty((len(draws), n_cases), dtype=np.float32)
        for row, drawn in enumerate(draws):
            counts[row] = np.bincount(drawn, minlength=n_cases)
        parts.append(counts)
    if not parts:
        return np.zeros((0, n_cases), dtype=np.float32)
    # One block (as every chunk of the frontier's bootstrap) is returned as it is: a copy
    # would be 20 MB more at 20 000 cases.
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` for a few wide rows, faster.

    The same distinct rows in the same (lexicographic) order and the same inverse, so a
    product over them is bit for bit the one over ``np.unique``'s result. ``np.unique``
    sorts the rows as structured records (one field per column), slow for thousands of
    columns; here exact duplicates are merged by their bytes and the few distinct rows are
    sorted by comparing each pair at its first differing column. Rows with NaN, or two
    rows that differ in their bytes but compare equal (-0.0 and 0.0), go to ``np.unique``
    itself, so the result never depends on this shortcut.

    Examples
    --------
    >>> rows = np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])
    >>> u, inv = unique_rows(rows)
    >>> u.tolist(), inv.tolist()
    ([[0.0, 5.0], [1.0, 2.0]], [1, 0, 1])
    """
    values = np.asarray(rows)
    if values.ndim != 2:
        raise ValueError(f"rows must be 2-D, got shape {values.shape}")
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse = np.empty(len(values), dtype=np.intp)
    for i, row in enumerate(values):
        j = seen.setdefault(row.tobytes(), len(first))
        if j == len(first):
            first.append(i)
        inverse[i] = j
    # The distinct rows are read in place, by their first rows' numbers, and copied once,
    # sorted (a copy of the rows is 33 MB at 20 000 cases, in the run's process).
    if values.dtype.kind == "f" and any(np.isnan(values[i]).any() for i in first):
        return _np_unique_rows(values)

    class _Tie(Exception):
        pass

    def compare(a: int, b: int) -> int:
        row_a, row_b = values[first[a]], values[first[b]]
        differ = np.flatnonzero(row_a != row_b)
        if len(differ) == 0:
            raise _Tie
        col = differ[0]
        return -1 if row_a[col] < row_b[col] else 1

    try:
        order = sorted(range(len(first)), key=functools.cmp_to_key(compare))
    except _Tie:
        return _np_unique_rows(values)
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return values[np.asarray(first, dtype=np.intp)[order]], rank[inverse]


def _np_unique_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    unique, inverse = np.unique(values, axis=0, return_inverse=True)
    return unique, inverse.reshape(-1)


def _as_cases_last(values: ArrayLike, name: str) -> tuple[np.ndarray, tuple[int, ...]]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim < 1:
        raise ValueError(f"{name} must have a case axis (last), got a scalar")
    return arr.reshape(-1, arr.shape[-1]), arr.shape[:-1]


def resampled_trial_ratio_means(
    counts: np.ndarray,
    numerator: ArrayLike,
    denominator: ArrayLike,
    completed: ArrayLike,
    *,
    blocker: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Per resample and variant: the mean over trials of a per-trial ratio of case sums.

    Trial :math:`t` of variant :math:`v` has value
    :math:`r_{vt} = \sum_c w_c a_{vtc} / \sum_c w_c d_{vtc}`; it counts when the trial
    completed, its denominator is positive and (if ``blocker`` is given) no drawn case
    has a positive blocker (e.g. an unpriced case makes the trial's cost unknown). The
    variant's value is the mean of the trials that count (NaN if none).

    Parameters
    ----------
    counts
        ``(resamples, cases)`` draw counts (:func:`bootstrap_case_counts`).
    numerator, denominator
        ``(variants, trials, cases)`` arrays :math:`a` and :math:`d`.
    completed
        ``(variants, trials)`` bool: trials that finished (padding trials are False).
    blocker
        Optional ``(variants, trials, cases)`` non-negative array.

    Returns
    -------
    mean, n_trials
        ``(resamples, variants)`` float mean and the number of trials that counted.

    Examples
    --------
    >>> a = np.array([[[1.0, 0.0], [1.0, 1.0]]])  # one variant, two trials, two cases
    >>> m, n = resampled_trial_ratio_means(np.ones((1, 2)), a, np.ones_like(a),
    ...                                    np.array([[True, True]]))
    >>> m.tolist(), n.tolist()
    ([[0.75]], [[2]])
    """
    num, shape = _as_cases_last(numerator, "numerator")
    den, _ = _as_cases_last(denominator, "denominator")
    done = np.asarray(completed, dtype=bool)
    if len(shape) != 2 or done.shape != shape or den.shape != num.shape:
        raise ValueError(
            "numerator, denominator must be (variants, trials, cases); completed (variants, trials)"
        )
    w = np.asarray(counts, dtype=np.float32)
    blocked = None
    if blocker is not None:
        block, _ = _as_cases_last(blocker, "blocker")
        blocked = case_sums(w, block) > 0
    return trial_ratio_means(case_sums(w, num), case_sums(w, den), done, blocked=blocked)


def case_sums(counts: np.ndarray, values: ArrayLike) -> np.ndarray:
    """``counts @ values.T``: per resample, the count-weighted sum over cases of each row.

    ``values`` is ``(rows, cases)``; the result ``(resamples, rows)`` float64. The product
    runs in float32 (counts are exact there; the relative rounding, about 1e-7, is far
    below bootstrap noise) on a contiguous copy, the fast path of the BLAS.

    Examples
    --------
    >>> case_sums(np.array([[2.0, 0.0, 1.0]]), np.array([[1.0, 5.0, 3.0]])).tolist()
    [[5.0]]
    """
    values = np.asarray(values)
    # Cast and transposed in one copy (not a float32 copy and then its transpose).
    rows = np.empty(values.shape[::-1], dtype=np.float32)
    rows[...] = values.T
    return (np.asarray(counts, dtype=np.float32) @ rows).astype(np.float64)


def trial_ratio_means(
    top: np.ndarray, bottom: np.ndarray, completed: ArrayLike, *, blocked: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`resampled_trial_ratio_means` from already computed :func:`case_sums`.

    ``top``, ``bottom`` and ``blocked`` are ``(resamples, variants × trials)`` (trials
    fastest); ``completed`` is ``(variants, trials)``.

    Examples
    --------
    >>> m, n = trial_ratio_means(np.array([[1.0, 4.0]]), np.array([[2.0, 4.0]]), [[True, True]])
    >>> m.tolist(), n.tolist()
    ([[0.75]], [[2]])
    """
    done = np.asarray(completed, dtype=bool)
    n_var, n_trial = done.shape
    ok = (bottom > 0) & done.reshape(-1)[None, :]
    if blocked is not None:
        ok &= ~blocked
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(ok, top / np.where(ok, bottom, 1.0), 0.0)
    ratio = ratio.reshape(len(top), n_var, n_trial)
    ok = ok.reshape(len(top), n_var, n_trial)
    n = ok.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, ratio.sum(axis=2) / np.maximum(n, 1), np.nan)
    return mean, n


def resampled_all_pass_rate(
    counts: np.ndarray, failed: ArrayLike, completed: ArrayLike, attempted: ArrayLike
) -> np.ndarray:
    r"""Per resample and variant: the share of attempted trials in which every drawn case passed.

    A completed trial succeeds in a resample when no drawn case failed
    (:math:`\sum_c w_c f_{vtc} = 0`); a trial that did not complete never succeeds.

    Parameters
    ----------
    counts
        ``(resamples, cases)`` draw counts.
    failed
        ``(variants, trials, cases)``: 1 where the attempt failed.
    completed, attempted
        ``(variants, trials)`` bool masks (padding trials are not attempted).

    Returns
    -------
    numpy.ndarray
        ``(resamples, variants)``; NaN for a variant with no attempted trial.

    Examples
    --------
    >>> f = np.array([[[0.0, 1.0]]])
    >>> resampled_all_pass_rate(np.array([[2.0, 0.0], [1.0, 1.0]]), f, [[True]], [[True]]).tolist()
    [[1.0], [0.0]]
    """
    fail, _ = _as_cases_last(failed, "failed")
    return all_pass_rate(case_sums(counts, fail), completed, attempted)


def all_pass_rate(failures: np.ndarray, completed: ArrayLike, attempted: ArrayLike) -> np.ndarray:
    """:func:`resampled_all_pass_rate` from the :func:`case_sums` of the failure flags.

    Examples
    --------
    >>> all_pass_rate(np.array([[0.0, 2.0]]), [[True, True]], [[True, True]]).tolist()
    [[0.5]]
    """
    done = np.asarray(completed, dtype=bool)
    tried = np.asarray(attempted, dtype=bool)
    success = (failures == 0) & done.reshape(-1)[None, :]
    success = success.reshape(len(failures), *done.shape)
    n = tried.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, success.sum(axis=2) / np.maximum(n, 1), np.nan)


def pareto_front_batch(
    objectives: ArrayLike, maximize: Sequence[bool], unknown: ArrayLike | None = None
) -> np.ndarray:
    """:func:`agenticlens_frames.stats.pareto_front` for a batch of candidate sets at once.

    Parameters
    ----------
    objectives
        ``(batch, candidates, objectives)`` floats.
    maximize
        One flag per objective.
    unknown
        Optional bool mask of the same shape: a missing value neither creates nor blocks
        dominance, as in :func:`~agenticlens_frames.stats.pareto_front`.

    Returns
    -------
    numpy.ndarray
        ``(batch, candidates)`` bool, True on the front.

    Examples
    --------
    >>> pareto_front_batch([[[0.9, 100.0], [0.8, 120.0]], [[0.7, 100.0], [0.8, 90.0]]],
    ...                    [True, False]).tolist()
    [[True, False], [False, True]]
    """
    values = np.asarray(objectives, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(
            f"objectives must be 3-D (batch, candidates, objectives), got {values.shape}"
        )
    higher = np.asarray(maximize, dtype=bool)
    # Axis 1: the candidate that may be dominated; axis 2: the other candidate.
    candidate = values[:, :, None, :]
    other = values[:, None, :, :]
    not_worse = np.where(higher, other >= candidate, other <= candidate)
    strictly_better = np.where(higher, other > candidate, other < candidate)
    if unknown is not None:
        missing = np.asarray(unknown, dtype=bool)
        either = missing[:, :, None, :] | missing[:, None, :, :]
        not_worse |= either
        strictly_better &= ~either
    dominates = not_worse.all(axis=3) & strictly_better.any(axis=3)
    n = values.shape[1]
    dominates[:, np.arange(n), np.arange(n)] = False
    return ~dominates.any(axis=2)


@dataclass(frozen=True)
class FrontierBootstrap:
    """Result of :func:`frontier_probabilities`.

    Attributes
    ----------
    p_frontier
        ``(candidates,)`` share of resamples on the front (NaN for ineligible candidates).
    p_best
        ``(candidates, objectives)`` share of resamples with the best value, ties split,
        among the resamples in which some candidate has a value (NaN when none has).
    ci_low, ci_high
        ``(candidates, objectives)`` percentile interval of each objective.
    n_resamples
        Resamples used.
    """

    p_frontier: np.ndarray
    p_best: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_resamples: int


def frontier_probabilities(
    objectives: ArrayLike,
    maximize: Sequence[bool],
    *,
    unknown: ArrayLike | None = None,
    eligible: ArrayLike | None = None,
    confidence_level: float = 0.95,
) -> FrontierBootstrap:
    """Frontier and best-value probabilities from bootstrap objective values.

    Parameters
    ----------
    objectives
        ``(resamples, candidates, objectives)``: each objective recomputed per resample.
    maximize
        One flag per objective.
    unknown
        Optional mask (same shape): the value is missing in that resample (it neither
        creates nor blocks dominance, and cannot be the best).
    eligible
        Optional ``(resamples, candidates)`` bool: candidates that may be on the front in
        that resample (default all). Ineligible candidates are left out of the front.
    confidence_level
        For the percentile intervals.

    Returns
    -------
    FrontierBootstrap

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> obj = rng.normal([0.9, 0.5], 0.01, size=(200, 2))[:, :, None]  # 2 candidates, 1 objective
    >>> res = frontier_probabilities(obj, [True])
    >>> res.p_frontier.round(2).tolist(), res.p_best[:, 0].round(2).tolist()
    ([1.0, 0.0], [1.0, 0.0])
    """
    values = np.asarray(objectives, dtype=np.float64)
    if values.ndim != 3:
        raise ValueError(
            f"objectives must be 3-D (resamples, candidates, objectives), got {values.shape}"
        )
    n_boot, n_cand, n_obj = values.shape
    higher = np.asarray(maximize, dtype=bool)
    if higher.shape != (n_obj,):
        raise ValueError(f"maximize needs {n_obj} flags, got {higher.shape}")
    missing = (
        np.isnan(values) if unknown is None else np.asarray(unknown, dtype=bool) | np.isnan(values)
    )
    ok = np.ones((n_boot, n_cand), dtype=bool) if eligible is None else np.asarray(eligible, bool)
    # Ineligible candidates: every objective unknown and never counted on the front, so
    # they neither dominate nor are reported.
    front = pareto_front_batch(values, higher, missing | ~ok[:, :, None]) & ok
    # A candidate that is never eligible has no probability, not a zero one.
    ever = ok.any(axis=0)
    p_frontier = np.where(ever, front.sum(axis=0) / np.maximum(ok.sum(axis=0), 1), np.nan)

    signed = np.where(higher, values, -values)
    signed = np.where(missing | ~ok[:, :, None], -np.inf, signed)
    best = signed.max(axis=1, keepdims=True)
    at_best = (signed == best) & np.isfinite(best)
    share = at_best / np.maximum(at_best.sum(axis=1, keepdims=True), 1)
    # Over the resamples in which some candidate has a value: one with none has no best,
    # and counting it gave every candidate a share of 0 — "P(best cost) 0 %" for every
    # variant of a run that recorded no cost, and columns that did not sum to 1.
    decided = np.isfinite(best[:, 0, :]).sum(axis=0)
    with np.errstate(invalid="ignore"):
        p_best = share.sum(axis=0) / decided
    p_best = np.where(ever[:, None] & (decided > 0), p_best, np.nan)

    tail = (1 - confidence_level) / 2
    with np.errstate(invalid="ignore"):
        masked = np.where(missing | ~ok[:, :, None], np.nan, values)
        all_nan = np.isnan(masked).all(axis=0)
        safe = np.where(all_nan[None], 0.0, masked)
        low = np.nanquantile(safe, tail, axis=0)
        high = np.nanquantile(safe, 1 - tail, axis=0)
    low[all_nan] = np.nan
    high[all_nan] = np.nan
    return FrontierBootstrap(p_frontier, p_best, low, high, n_boot)
