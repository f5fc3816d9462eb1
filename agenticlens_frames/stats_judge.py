"""Estimators for a noisy grader: the three-level variance decomposition case / trial /
judge sample (arrays in, numbers out; used by :mod:`agenticlens_frames.judge_noise`).

A judged score of case *c*, trial *t*, judge sample *s* is modelled as
``y = mu + a_c + b_ct + e_cts``: ``a`` how cases differ, ``b`` how the agent's trials of one
case differ, ``e`` how the judge's samples of one output differ. The components are
estimated by the method of moments of the nested ANOVA (exact for balanced designs;
unbalanced ones use pooled within-group variances and harmonic-mean group sizes),
truncated at 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .stats import harmonic_mean

__all__ = ["NestedVariance", "nested_variance_components"]


@dataclass(frozen=True)
class NestedVariance:
    """Variance components of one judged metric (see the module docstring).

    ``samples`` / ``trials`` are the harmonic means of samples per attempt and trials per
    case; ``judge`` is None when no attempt has two samples, ``trial`` when no case has
    two trials, ``case`` when there are fewer than two cases.
    """

    cases: int
    attempts: int
    trials: float
    samples: float
    case: float | None
    trial: float | None
    judge: float | None


def _pooled(values: np.ndarray, groups: np.ndarray) -> tuple[float | None, np.ndarray, np.ndarray]:
    """Pooled within-group variance (ddof 1 per group), group means and sizes."""
    _, first, inverse, counts = np.unique(
        groups, return_index=True, return_inverse=True, return_counts=True
    )
    # Deviations from each group's first value: a group of equal values (a steady judge's
    # samples, 0.2 three times) is exactly 0, where its mean's rounding left ~1e-33 — a
    # judge "share" of 100% when nothing else varied either.
    shift = values[first][inverse]
    offsets = np.bincount(inverse, weights=values - shift) / counts
    means = values[first] + offsets
    squares = np.bincount(inverse, weights=(values - shift - offsets[inverse]) ** 2)
    dof = int(np.sum(counts - 1))
    return (float(squares.sum() / dof) if dof > 0 else None), means, counts


def nested_variance_components(
    values: ArrayLike, cases: ArrayLike, attempts: ArrayLike
) -> NestedVariance:
    """Case, trial and judge-sample variance of judged values.

    Parameters
    ----------
    values
        One judge sample's value per element.
    cases
        The case of each element (any hashable codes).
    attempts
        The attempt (case × trial) of each element; unique across cases.

    Returns
    -------
    NestedVariance

    Examples
    --------
    Two cases, two trials each, two judge samples per trial:

    >>> v = nested_variance_components(
    ...     [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.5],
    ...     [0, 0, 0, 0, 1, 1, 1, 1],
    ...     [0, 0, 1, 1, 2, 2, 3, 3])
    >>> round(v.judge, 4), round(v.trial, 4), round(v.case, 4)
    (0.1562, 0.0, 0.1562)
    """
    y = np.asarray(values, dtype=np.float64)
    case = np.asarray(cases)
    attempt = np.asarray(attempts)
    if not (len(y) == len(case) == len(attempt)):
        raise ValueError("values, cases and attempts must have the same length")
    if len(y) == 0:
        return NestedVariance(0, 0, math.nan, math.nan, None, None, None)
    judge, attempt_means, samples_per = _pooled(y, attempt)
    # The case of each attempt (the first element's): attempts never span cases.
    _, first = np.unique(attempt, return_index=True)
    attempt_case = case[first]
    within, case_means, trials_per = _pooled(attempt_means, attempt_case)
    m = harmonic_mean(samples_per.astype(float))
    t = harmonic_mean(trials_per.astype(float))
    trial = None if within is None else max(0.0, within - (judge or 0.0) / m)
    n_cases = len(case_means)
    between = float(np.var(case_means, ddof=1)) if n_cases > 1 else None
    case_var = None
    if between is not None:
        case_var = max(0.0, between - (within if within is not None else (judge or 0.0) / m) / t)
    return NestedVariance(
        cases=n_cases,
        attempts=len(attempt_means),
        trials=t,
        samples=m,
        case=case_var,
        trial=trial,
        judge=judge,
    )
