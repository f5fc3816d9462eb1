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

__all__ = ["NestedVariance", "fleiss_kappa", "nested_variance_components"]


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


def fleiss_kappa(labels: ArrayLike, subjects: ArrayLike) -> float:
    """Fleiss' kappa of repeated categorical judgements: chance-corrected agreement.

    Each subject (one output the judge graded) gets several labels (its samples'
    verdicts); subjects may have different numbers of labels (Fleiss' statistic with the
    per-subject agreement averaged, as Fleiss 1971 for a constant number). Subjects with
    fewer than two labels are left out. The modal share (``judge_agreement``) is high for
    a judge that says "good" to nearly everything whatever the output; kappa is 0 for
    agreement at the rate chance gives, 1 for perfect agreement.

    Parameters
    ----------
    labels
        One label per judgement (any hashable values).
    subjects
        The subject of each judgement.

    Returns
    -------
    float
        Kappa, or NaN when no subject has two labels or every label is the same
        (chance agreement is then 1 and kappa undefined).

    Examples
    --------
    >>> round(fleiss_kappa(["a", "a", "b", "b", "a", "b"], [0, 0, 1, 1, 2, 2]), 4)
    0.3333
    """
    label = np.asarray(labels)
    subject = np.asarray(subjects)
    if len(label) != len(subject):
        raise ValueError("labels and subjects must have the same length")
    _, s_index = np.unique(subject, return_inverse=True)
    _, l_index = np.unique(label, return_inverse=True)
    counts = np.zeros(
        (s_index.max() + 1 if len(s_index) else 0, l_index.max() + 1 if len(l_index) else 0)
    )
    np.add.at(counts, (s_index, l_index), 1)
    n = counts.sum(axis=1)
    counts, n = counts[n >= 2], n[n >= 2]
    if not len(n):
        return math.nan
    agreement = ((counts**2).sum(axis=1) - n) / (n * (n - 1))
    shares = counts.sum(axis=0) / n.sum()
    chance = float((shares**2).sum())
    if chance >= 1.0:
        return math.nan
    return (float(agreement.mean()) - chance) / (1.0 - chance)
