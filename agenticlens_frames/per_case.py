"""The case matrix: one row per (variant, case), the grain every case-level frame starts from.

Below :mod:`.analysis`, which re-exports :func:`case_matrix`. Its ``pass_rate`` is
AgenticLens's (a failed trial counts as failing every case): the case-as-unit statistics
(:mod:`.paired`, :mod:`.factorial`) take their per-case values over the evaluated attempts
from :func:`~agenticlens_frames.paired.dimensions.evaluation` instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import stats
from ._deprecate import keyword_hints
from ._values import count_noun
from .errors import InputError, check_pass_k
from .frames import ExperimentRun, require_run

__all__ = [
    "EVALUATED_PASS_RATE",
    "case_matrix",
    "category_codes",
    "category_labels",
    "effective_pass_k",
    "evaluated_attempts",
    "evaluated_pass_rate",
]

#: The honest cell colour of the case views (the page's heatmap and case table, the
#: notebook explorer): passes over the evaluated attempts (a failed trial left out, as in
#: the pass rate on the Pareto axis and in the verdicts), not the case matrix's
#: ``pass_rate``, which counts a failed trial as a failed attempt.
EVALUATED_PASS_RATE = "evaluated_pass_rate"


def effective_pass_k(run: ExperimentRun, pass_k: Sequence[int] | None) -> tuple[int, ...]:
    """The pass@k list: ``pass_k`` checked, or the manifest's effective one if None.

    A k above the run's trials is refused, as the manifest refuses it: no case has k
    attempts, so its pass@k and pass^k columns were NaN without a word.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> effective_pass_k(run, [3, 1])
    (1, 3)
    >>> effective_pass_k(run, [1, 10])
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: pass_k: pass_k asks for k = 10, but the run has 5 \
trials per case (pass@k needs k attempts at a case) (choose each k between 1 and 5)
    """
    if pass_k is None:
        return run.manifest.effective_pass_k
    ks = check_pass_k(pass_k)
    trials = run.manifest.trial_count
    if ks[-1] > trials:
        raise InputError(
            f"pass_k asks for k = {ks[-1]}, but the run has {count_noun(trials, 'trial')} "
            "per case (pass@k needs k attempts at a case)",
            location="pass_k",
            hint=f"choose each k between 1 and {trials}",
        )
    return ks


def category_codes(column: pd.Series, labels: Sequence[str]) -> np.ndarray:
    """Position of each row's value (as text) in ``labels``; -1 where it is not there.

    The same as ``pd.Categorical(column.astype(str), categories=labels).codes``, but a
    categorical column (the tidy tables' and the case matrix's id columns) is looked up
    once per category instead of turning every row into text.

    Examples
    --------
    >>> column = pd.Series(pd.Categorical(["b", "a", "b", None]))
    >>> category_codes(column, ["a", "b"]).tolist()
    [1, 0, 1, -1]
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy().astype(np.int64)
        categories = category_labels(column.cat.categories)
        if categories == list(labels):  # the case matrix's own order: the codes already
            return codes
        position = {label: i for i, label in enumerate(labels)}
        lookup = np.array([position.get(c, -1) for c in categories] + [-1], dtype=np.int64)
        return lookup[codes]
    return pd.Index(list(labels), dtype=object).get_indexer(column.astype(str)).astype(np.int64)


def category_labels(categories: pd.Index) -> list[str]:
    """``[str(c) for c in categories]``, without iterating an Arrow-backed index one
    element at a time (``tolist`` converts it in one pass).

    Examples
    --------
    >>> category_labels(pd.Index(["a", "b"])), category_labels(pd.Index([1, 2]))
    (['a', 'b'], ['1', '2'])
    """
    return [v if type(v) is str else str(v) for v in categories.tolist()]


def evaluated_attempts(cases: pd.DataFrame, variants: pd.DataFrame | None = None) -> pd.Series:
    """Per (variant, case): the attempts that were evaluated (completed trials).

    The case matrix's ``scored``; a saved report's case matrix has none, and then each
    case's attempts less its variant's failed trials (``attempted_trials -
    completed_trials`` of ``variants``), a failed trial being one failed attempt of every
    case in the package's counts. NaN when neither is known.

    Examples
    --------
    >>> cm = pd.DataFrame({"variant_id": ["a", "b"], "attempts": [5, 5]})
    >>> vs = pd.DataFrame({"variant_id": ["a", "b"], "attempted_trials": [5, 5],
    ...                    "completed_trials": [5, 3]})
    >>> evaluated_attempts(cm, vs).tolist()
    [5.0, 3.0]
    """
    if "scored" in cases:
        return cases["scored"].astype(float).rename("evaluated")
    if variants is None or not {"attempted_trials", "completed_trials"} <= set(variants):
        return pd.Series(np.nan, index=cases.index, name="evaluated")
    failed = pd.Series(
        (variants["attempted_trials"] - variants["completed_trials"]).to_numpy(float),
        index=variants["variant_id"].astype(str).to_numpy(),
    )
    lost = cases["variant_id"].astype(str).map(failed).to_numpy(float)
    return pd.Series(cases["attempts"].to_numpy(float) - lost, index=cases.index, name="evaluated")


def evaluated_pass_rate(cases: pd.DataFrame, variants: pd.DataFrame | None = None) -> pd.Series:
    """Per (variant, case): passes over the evaluated attempts (:func:`evaluated_attempts`),
    NaN where none was evaluated. A failed trial never passes, so ``passes`` needs no
    correction.

    Examples
    --------
    >>> cm = pd.DataFrame({"passes": [4, 0], "attempts": [5, 5], "scored": [4, 0]})
    >>> evaluated_pass_rate(cm).tolist()
    [1.0, nan]
    """
    evaluated = evaluated_attempts(cases, variants)
    return (cases["passes"] / evaluated.where(evaluated > 0)).rename(EVALUATED_PASS_RATE)


@keyword_hints
def case_matrix(run: ExperimentRun, pass_k: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per (variant, case), always complete: every variant × every case.

    Columns follow spec §9.1: ``attempts`` (trials, failed ones included), ``passes``,
    ``pass_rate``, ``mean_score`` and ``score_standard_deviation`` (over completed trials,
    exactly as ``statistics.fmean`` / ``stdev``), ``consistent``, then ``pass_at_<k>`` and
    ``pass_hat_<k>`` per k (NaN where k > attempts), plus ``case_name``, ``case_index``,
    ``scored`` (completed trials), ``mean_latency_ms`` and ``mean_cost_usd`` over attempts
    whose value is known.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> cm = case_matrix(run)
    >>> len(cm) == len(run.variants) * len(run.cases)
    True
    """
    run = require_run(run, "case_matrix")
    ks = effective_pass_k(run, pass_k)
    att = run.attempts
    variant_ids = list(run.manifest.variant_ids)
    case_ids = list(run.suite.case_ids)
    n_var, n_case = len(variant_ids), len(case_ids)
    size = n_var * n_case
    g = att["variant_id"].cat.codes.to_numpy(np.int64) * n_case + att["case_index"].to_numpy(
        np.int64
    )
    attempts = np.bincount(g, minlength=size)
    passes = np.bincount(g, weights=att["passed"].to_numpy(float), minlength=size).astype(np.int64)

    completed = (att["status"] != "trial_failed").to_numpy()
    width = int(att["trial"].max()) if len(att) else 0
    scores = np.full((size, max(width, 1)), np.nan)
    scores[g[completed], att["trial"].to_numpy()[completed] - 1] = att["score"].to_numpy(float)[
        completed
    ]
    scored, mean_score, sd = stats.row_fmean_stdev(scores)

    latency = att["latency_ms"].to_numpy(float)
    cost = att["cost_usd"].to_numpy(float)

    def known_mean(values: np.ndarray) -> np.ndarray:
        ok = ~np.isnan(values)
        total = np.bincount(g[ok], weights=values[ok], minlength=size)
        count = np.bincount(g[ok], minlength=size)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)

    with np.errstate(invalid="ignore", divide="ignore"):
        pass_rate = np.where(attempts > 0, passes / np.maximum(attempts, 1), 0.0)
    frame = pd.DataFrame(
        {
            "variant_id": pd.Categorical.from_codes(
                np.repeat(np.arange(n_var), n_case), categories=variant_ids
            ),
            "case_id": pd.Categorical.from_codes(
                np.tile(np.arange(n_case), n_var), categories=case_ids
            ),
            "case_name": np.tile(run.cases["case_name"].to_numpy(), n_var),
            "case_index": np.tile(np.arange(n_case, dtype=np.int32), n_var),
            "attempts": attempts,
            "passes": passes,
            "pass_rate": pass_rate,
            "mean_score": mean_score,
            "score_standard_deviation": sd,
            "consistent": (passes == 0) | (passes == attempts),
            "scored": scored,
            "mean_latency_ms": known_mean(latency),
            "mean_cost_usd": known_mean(cost),
        }
    )
    for k in ks:
        frame[f"pass_at_{k}"] = stats.pass_at_k(attempts, passes, k)
        frame[f"pass_hat_{k}"] = stats.pass_hat_k(attempts, passes, k)
    frame.attrs["pass_k"] = ks
    return frame
