"""Case-level summaries of each variant: intervals, variance parts, noise floor, labels.

Intervals here treat the case as the unit (attempts of one case are not independent);
the pooled Wilson interval AgenticLens reports is kept beside them for comparison only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import stats, stats_paired
from .._deprecate import keyword_hints, renamed_keywords
from ..errors import InputError, check_count, check_number, check_proportion
from ..frames import ExperimentRun, require_run
from .dimensions import BOUNDED_UNITS, Evaluation, cluster_labels, evaluation

__all__ = [
    "SUMMARY_COLUMNS",
    "case_labels",
    "case_level_from_counts",
    "case_level_summary",
    "evaluated_counts",
    "labels_from_counts",
    "noise_floor",
    "variance_decomposition",
]

#: The columns of :func:`case_level_summary`, in order.
SUMMARY_COLUMNS = (
    "variant_id",
    "evaluator",
    "estimand",
    "k",
    "method",
    "estimate",
    "standard_error",
    "ci_low",
    "ci_high",
    "confidence_level",
    "df",
    "n_cases",
    "n_attempts",
    "n_clusters",
    "design_effect",
    "effective_n",
    "note",
    "recommended",
    "zero_width",
)


@renamed_keywords(ks="pass_k")
def case_level_summary(
    run: ExperimentRun,
    *,
    confidence_level: float = 0.95,
    evaluator: str = "passed",
    cluster: str | None = None,
    pass_k: Sequence[int] | None = None,
    evaluated: Evaluation | None = None,
) -> pd.DataFrame:
    """Per variant: the mean and pass@k / pass^k with intervals that treat cases as units.

    Methods (one row each, ``method`` column; ``recommended`` marks the one to lead with):

    ``beta_binomial``        binary evaluators, no ``cluster``: the posterior interval of a
                             beta-binomial model with a weak prior (the recommended
                             pass-rate interval; see
                             :func:`~agenticlens_frames.stats_paired.beta_binomial_interval`)
    ``t_case_means``         mean of case means ± t_{n−1}·SE (Miller); with ``cluster``,
                             CR1 of the case means clustered by that field (t_{G−1})
    ``cr1``                  trial-weighted mean with CR1 errors clustered by case, or by
                             the ``cluster`` metadata field (t_{G−1}); recommended when
                             ``cluster`` is given, and for non-binary evaluators
    ``wilson_effective_n``   binary evaluators, no ``cluster``: Wilson on n_eff = N/DEFF
                             with t_{n−1} (the previous recommendation; under-covers at
                             high pass rates with few cases)
    ``pooled_wilson``        binary evaluators: Wilson on all N attempts, as AgenticLens
                             does; assumes independent attempts and is too narrow when
                             cases differ (kept for comparison only)

    With ``cluster`` every interval but the labelled AgenticLens one uses the clusters;
    the beta-binomial and n_eff intervals cannot, so they are left out. pass@k and pass^k
    rows (``estimand`` ``pass_at_k`` / ``pass_hat_k``) use the unbiased per-case
    estimators over evaluated attempts and a t interval over the cases that have at least
    k attempts (CR1 by cluster with ``cluster``), clipped to [0, 1]. ``zero_width`` flags
    a t/CR1 interval of zero width (every case, or cluster, had the same value): an
    arithmetic artefact, not certainty.

    ``pass_k``: the k values of the pass@k / pass^k rows (default: the manifest's
    effective ``pass_k``); formerly ``ks``, still accepted with a ``FutureWarning``.

    ``evaluated``: the evaluation of ``evaluator`` on ``run`` when the caller already has
    it (:func:`~agenticlens_frames.paired.dimensions.evaluation`; skips recomputing it).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> s = case_level_summary(run)
    >>> sorted(set(s["method"]))
    ['beta_binomial', 'cr1', 'pooled_wilson', 't_case_means', 'wilson_effective_n']
    >>> s.loc[s["recommended"], "method"].unique().tolist()
    ['beta_binomial']
    """
    run = require_run(run, "case_level_summary")
    ev = _evaluated(run, evaluator, evaluated)
    ids = list(run.manifest.variant_ids)
    clusters = cluster_labels(run, cluster)
    ks = (
        tuple(sorted({int(k) for k in pass_k}))
        if pass_k is not None
        else run.manifest.effective_pass_k
    )
    rows: list[dict[str, Any]] = []
    bounded = ev.unit in BOUNDED_UNITS
    recommended = "beta_binomial" if ev.binary and cluster is None else "cr1"
    by = "case" if cluster is None else f"metadata field {cluster!r}"

    def add(variant: str, estimand: str, k: int | None, method: str, **values: Any) -> None:
        zero_width = method in ("t_case_means", "cr1") and (
            math.isfinite(values["ci_low"]) and values["ci_low"] == values["ci_high"]
        )
        note = values.pop("note")
        if zero_width:
            note += "; zero-width interval: every unit had the same value (not certainty)"
        units = "cases" if cluster is None else "clusters"
        if values["n_clusters"] == 0:
            # Nothing to estimate (e.g. pass@k with no case holding k evaluated attempts).
            note += f"; no estimate: no {units} qualify"
        elif values["n_clusters"] < 2 and not math.isfinite(values["ci_low"]):
            # One case (or cluster) has no spread to measure: say why the bounds are NaN.
            note += f"; no interval: fewer than two {units}"
        rows.append(
            {
                "variant_id": variant,
                "evaluator": ev.name,
                "estimand": estimand,
                "k": k,
                "method": method,
                "confidence_level": confidence_level,
                **values,
                "note": note,
                "recommended": estimand == "mean" and method == recommended,
                "zero_width": zero_width,
            }
        )

    def add_mean_interval(
        variant: str,
        method: str,
        r: stats_paired.MeanInterval,
        note: str,
        common: dict[str, Any],
    ) -> None:
        # The t-over-cases and the CR1 rows are one shape of row (an interval clipped to
        # the metric's bounds), so they are built in one place.
        add(
            variant,
            "mean",
            None,
            method,
            estimate=r.estimate,
            standard_error=r.standard_error,
            ci_low=_clip(r.ci_low, bounded, low=True),
            ci_high=_clip(r.ci_high, bounded, low=False),
            df=r.df,
            n_clusters=r.n_units,
            note=note,
            **common,
        )

    def case_interval(values: np.ndarray, present: np.ndarray) -> stats_paired.MeanInterval:
        # per-case values: a t interval over cases, or CR1 over the declared clusters
        if clusters is None:
            return stats_paired.t_interval(values, confidence_level)
        return stats_paired.cluster_robust_interval(values, clusters[present], confidence_level)

    for v, vid in enumerate(ids):
        y, cases = ev.attempts_of(v)
        present, case_values = ev.attempt_means(v)
        n_cases = int(present.sum())
        vc = stats_paired.variance_components(y, cases) if len(y) else None
        common = {
            "n_cases": n_cases,
            "n_attempts": len(y),
            "design_effect": vc.design_effect if vc else math.nan,
            "effective_n": vc.effective_n if vc else math.nan,
        }
        add_mean_interval(
            vid,
            "t_case_means",
            case_interval(case_values, present),
            "case-weighted mean; "
            + ("cases are the units" if cluster is None else f"CR1 clustered by {by}"),
            common,
        )
        labels = cases if clusters is None else clusters[cases]
        add_mean_interval(
            vid,
            "cr1",
            stats_paired.cluster_robust_interval(y, labels, confidence_level),
            f"trial-weighted mean; CR1 clustered by {by}"
            + (" (recommended)" if recommended == "cr1" else ""),
            common,
        )
        if ev.binary and vc is not None:
            successes, total = float(np.sum(y)), float(len(y))
            if cluster is None:
                passes = np.rint(ev.sums[v][present]).astype(np.int64)
                bb = stats_paired.beta_binomial_interval(
                    passes, ev.counts[v][present], confidence_level
                )
                add(
                    vid,
                    "mean",
                    None,
                    "beta_binomial",
                    estimate=bb.estimate,
                    standard_error=bb.standard_error,
                    ci_low=bb.ci_low,
                    ci_high=bb.ci_high,
                    df=math.nan,
                    n_clusters=n_cases,
                    note="beta-binomial posterior interval, weak prior; cases are the units "
                    "(recommended)",
                    **common,
                )
                low, high = stats_paired.wilson_effective_interval(
                    successes, total, vc.effective_n, n_cases, confidence_level
                )
                add(
                    vid,
                    "mean",
                    None,
                    "wilson_effective_n",
                    estimate=successes / total,
                    standard_error=math.nan,
                    ci_low=low,
                    ci_high=high,
                    df=float(n_cases - 1) if n_cases >= 2 else math.nan,
                    n_clusters=n_cases,
                    note="Wilson on n_eff = N/DEFF with a t quantile; too narrow at high "
                    "pass rates with few cases",
                    **common,
                )
            plow, phigh = stats.wilson_interval(int(successes), int(total), confidence_level)
            add(
                vid,
                "mean",
                None,
                "pooled_wilson",
                estimate=successes / total,
                standard_error=math.nan,
                ci_low=float(plow),
                ci_high=float(phigh),
                df=math.inf,
                n_clusters=n_cases,
                note="AgenticLens-compatible: assumes independent attempts (ignores cases "
                "and clusters); too narrow when cases differ",
                **common,
            )
        if ev.kind == "attempt" and ev.name == "passed":
            n = ev.counts[v]
            c = np.rint(ev.sums[v]).astype(np.int64)
            for k in ks:
                for estimand, fn in (
                    ("pass_at_k", stats.pass_at_k),
                    ("pass_hat_k", stats.pass_hat_k),
                ):
                    values = fn(n, c, k)
                    has = ~np.isnan(values)
                    t = case_interval(values[has], has)
                    add(
                        vid,
                        estimand,
                        k,
                        "t_case_means",
                        estimate=t.estimate,
                        standard_error=t.standard_error,
                        ci_low=_clip(t.ci_low, True, low=True),
                        ci_high=_clip(t.ci_high, True, low=False),
                        df=t.df,
                        n_clusters=t.n_units,
                        note=f"unbiased per-case estimator over cases with >= {k} attempts"
                        + ("" if cluster is None else f"; CR1 clustered by {by}"),
                        n_cases=int(has.sum()),
                        n_attempts=int(n[n >= k].sum()),
                        design_effect=math.nan,
                        effective_n=math.nan,
                    )
    frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    frame["variant_id"] = pd.Categorical(frame["variant_id"], categories=ids)
    frame["k"] = frame["k"].astype("Int64")
    frame["recommended"] = frame["recommended"].astype(bool)
    frame["zero_width"] = frame["zero_width"].astype(bool)
    return frame


def case_level_from_counts(
    cases: pd.DataFrame, trials: pd.DataFrame, *, confidence_level: float = 0.95
) -> pd.DataFrame:
    """The recommended pass-rate rows of :func:`case_level_summary` from per-case counts.

    For a saved report that has the case matrix but no case-level block (one AgenticLens
    0.10 wrote): per variant, the beta-binomial interval with cases as the unit over the
    **evaluated** attempts — a case's attempts less the variant's failed trials, each of
    which counts every case as a failed attempt in AgenticLens's matrix — so the numbers
    are those :func:`case_level_summary` gives on the run itself.

    Parameters
    ----------
    cases
        ``variant_id, case_id, attempts, passes`` per (variant, case).
    trials
        ``variant_id, status`` per trial (``failed`` trials are taken out).
    confidence_level
        Strictly between 0 and 1.

    Returns
    -------
    pandas.DataFrame
        :data:`SUMMARY_COLUMNS`, one ``beta_binomial`` row per variant, ``recommended``.

    Examples
    --------
    >>> cases = pd.DataFrame({"variant_id": ["a"] * 3 + ["b"] * 3,
    ...                       "case_id": ["x", "y", "z"] * 2,
    ...                       "attempts": [3] * 6, "passes": [3, 0, 3, 2, 1, 2]})
    >>> trials = pd.DataFrame({"variant_id": ["a"] * 3 + ["b"] * 3,
    ...                        "status": ["succeeded"] * 3 + ["succeeded"] * 2 + ["failed"]})
    >>> s = case_level_from_counts(cases, trials)
    >>> s[["variant_id", "estimate", "n_attempts"]].round(3).values.tolist()
    [['a', 0.667, 9], ['b', 0.833, 6]]
    """
    check_proportion(confidence_level, "confidence level", location="confidence_level")
    variant = cases["variant_id"]
    ids = (
        [str(v) for v in variant.cat.categories]
        if isinstance(variant.dtype, pd.CategoricalDtype)
        else list(dict.fromkeys(variant.astype(str)))
    )
    codes = pd.Categorical(variant.astype(str), categories=ids).codes.astype(np.int64)
    evaluated = _evaluated_attempts(cases, trials, ids, codes)
    r = stats_paired.beta_binomial_intervals(
        cases["passes"].to_numpy(np.int64), evaluated, codes, len(ids), confidence_level
    )
    n_attempts = np.bincount(codes, weights=evaluated, minlength=len(ids)).astype(np.int64)
    frame = pd.DataFrame(
        {
            "variant_id": pd.Categorical(ids, categories=ids),
            "evaluator": "passed",
            "estimand": "mean",
            "k": pd.array([None] * len(ids), dtype="Int64"),
            "method": "beta_binomial",
            "estimate": r.estimate,
            "standard_error": r.sd,
            "ci_low": r.low,
            "ci_high": r.high,
            "confidence_level": confidence_level,
            "df": math.nan,
            "n_cases": r.n_cases,
            "n_attempts": n_attempts,
            "n_clusters": r.n_cases,
            "design_effect": math.nan,
            "effective_n": math.nan,
            "note": "beta-binomial posterior interval, weak prior; cases are the units "
            "(recommended); from the report's per-case counts",
            "recommended": True,
            "zero_width": False,
        },
        columns=list(SUMMARY_COLUMNS),
    )
    return frame


def _evaluated(run: ExperimentRun, evaluator: str, evaluated: Evaluation | None) -> Evaluation:
    """``evaluator`` on ``run``, or ``evaluated`` when the caller already computed it (the
    frames of :func:`~agenticlens_frames.paired.outputs.paired_outputs` share one)."""
    if evaluated is None:
        return evaluation(run, evaluator)
    if evaluated.name != evaluator:
        raise ValueError(f"evaluated is {evaluated.name!r}, not {evaluator!r}")
    return evaluated


def _clip(value: float, bounded: bool, *, low: bool) -> float:
    if not bounded or not math.isfinite(value):
        return value
    return max(0.0, value) if low else min(1.0, value)


@keyword_hints
def variance_decomposition(
    run: ExperimentRun,
    *,
    evaluator: str = "passed",
    confidence_level: float = 0.95,
    evaluated: Evaluation | None = None,
) -> pd.DataFrame:
    """Per variant: within / between case variance, ICC, design effect, effective n.

    The ICC is NaN where it is not estimable, and ``note`` says why (the design effect
    then uses the conservative bound ICC = 1). Also the naive standard error (attempts as
    independent), the case-level one, their ratio, the instability (mean within-case SD),
    the share of flaky cases (binary evaluators: some attempts passed and some failed),
    and the two-run noise floors with the attempts per case the run's floor is read at
    (``noise_floor_trials``: their harmonic mean; NaN, as the floors, for a variant with no
    evaluated case).

    ``evaluated``: the evaluation of ``evaluator`` on ``run`` when the caller already has
    it (:func:`~agenticlens_frames.paired.dimensions.evaluation`; skips recomputing it).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> vd = variance_decomposition(run)
    >>> bool((vd["design_effect"] >= 1).all())
    True
    """
    run = require_run(run, "variance_decomposition")
    ev = _evaluated(run, evaluator, evaluated)
    ids = list(run.manifest.variant_ids)
    n_case = len(run.suite.cases)
    rows = []
    for v, vid in enumerate(ids):
        y, cases = ev.attempts_of(v)
        vc = stats_paired.variance_components(y, cases)
        present, means = ev.attempt_means(v)
        n = int(present.sum())
        naive = float(np.std(y, ddof=1) / math.sqrt(len(y))) if len(y) > 1 else math.nan
        case_se = float(np.std(means, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        counts = ev.counts[v][present]
        within_sd = _within_sd(y, cases, n_case)[present]
        flaky = math.nan
        if ev.binary:
            sums = ev.sums[v][present]
            flaky = float(np.mean((sums > 0) & (sums < counts))) if n else math.nan
        # Harmonic: the case means' within-case variance is σ²_w Σ(1/K_i)/n² (the rounded
        # mean of K_i understated it, by √(6/1.8) for cases of 1 and 10 attempts). No
        # evaluated case has no K, as it has no σ²_w (1.0 read as one attempt per case).
        trials = stats.harmonic_mean(counts.astype(float)) if n else math.nan
        rows.append(
            {
                "variant_id": vid,
                "evaluator": ev.name,
                "n_cases": n,
                "n_attempts": len(y),
                "mean_attempts": vc.mean_attempts,
                "mean": vc.mean,
                "case_mean": vc.case_mean,
                "within_variance": vc.within_variance,
                "between_variance": vc.between_variance,
                "icc": vc.icc,
                "design_effect": vc.design_effect,
                "effective_n": vc.effective_n,
                "naive_standard_error": naive,
                "case_standard_error": case_se,
                # NaN (one attempt) and 0 (every attempt alike) both fail `> 0`: no ratio.
                "standard_error_ratio": case_se / naive if naive > 0 else math.nan,
                "instability": float(np.nanmean(within_sd)) if np.any(counts > 1) else math.nan,
                "flaky_share": flaky,
                "noise_floor_single_trial": stats_paired.noise_floor(
                    vc.within_variance, n, 1, confidence_level
                ),
                "noise_floor_run": stats_paired.noise_floor(
                    vc.within_variance, n, trials, confidence_level
                ),
                "noise_floor_trials": trials,
                "note": vc.note,
            }
        )
    frame = pd.DataFrame(rows)
    frame["variant_id"] = pd.Categorical(frame["variant_id"], categories=ids)
    return frame


def _evaluated_attempts(
    cases: pd.DataFrame, trials: pd.DataFrame, ids: list[str], codes: np.ndarray
) -> np.ndarray:
    """Each case-matrix row's evaluated attempts: its attempts less its variant's failed
    trials (AgenticLens's matrix counts each as a failed attempt of every case)."""
    failed_by_variant = (
        trials.loc[trials["status"].astype(str) == "failed", "variant_id"]
        .astype(str)
        .value_counts()
    )
    failed = failed_by_variant.reindex(ids, fill_value=0).to_numpy(np.int64)
    return np.maximum(cases["attempts"].to_numpy(np.int64) - failed[codes], 0)


def evaluated_counts(
    cases: pd.DataFrame, trials: pd.DataFrame, variant_ids: list[str], case_ids: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Per (variant, case), variant-major in suite order: the evaluated attempts and passes
    of ``passed`` that the case matrix's counts give (its attempts less the variant's
    failed trials; its passes), as :func:`case_level_from_counts` reads them.

    They are what :func:`case_labels` counts unless an attempt no check judged (a plain
    input of the Python API) is among them: the saved report lists those cells
    (``case_level.label_counts``, :mod:`agenticlens_frames.report.paired_json`).

    Examples
    --------
    >>> cases = pd.DataFrame({"variant_id": ["b", "a"], "case_id": ["x", "x"],
    ...                       "attempts": [3, 3], "passes": [1, 2]})
    >>> trials = pd.DataFrame({"variant_id": ["a"], "status": ["failed"]})
    >>> [a.tolist() for a in evaluated_counts(cases, trials, ["a", "b"], ["x"])]
    [[2, 3], [2, 1]]
    """
    width = len(case_ids)
    # -1 for an id outside the report's (a Categorical of it warns, and in pandas 4 raises,
    # before the check below can name it)
    v = pd.Index(variant_ids).get_indexer(cases["variant_id"].astype(str))
    c = pd.Index(case_ids).get_indexer(cases["case_id"].astype(str))
    if (v < 0).any() or (c < 0).any():
        raise ValueError("a case-matrix row names a variant or case outside the report's")
    position = v.astype(np.int64) * width + c
    attempts = np.zeros(len(variant_ids) * width, dtype=np.int64)
    passes = np.zeros_like(attempts)
    attempts[position] = _evaluated_attempts(cases, trials, variant_ids, v.astype(np.int64))
    passes[position] = cases["passes"].to_numpy(np.int64)
    return attempts, passes


def _within_sd(y: np.ndarray, cases: np.ndarray, n_case: int) -> np.ndarray:
    counts = np.bincount(cases, minlength=n_case)
    sums = np.bincount(cases, weights=y, minlength=n_case)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
        resid = y - means[cases]
        ss = np.bincount(cases, weights=resid * resid, minlength=n_case)
        return np.where(counts > 1, np.sqrt(ss / (counts - 1)), np.nan)


@keyword_hints
def noise_floor(
    run: ExperimentRun,
    *,
    evaluator: str = "passed",
    confidence_level: float = 0.95,
    trials: int | None = None,
) -> pd.DataFrame:
    r"""Per variant: how far two runs of the same configuration drift apart by chance.

    :math:`z\sqrt{2\hat σ_w^2/(nK)}` over the same n cases with K attempts per case
    (``trials``; default the run's own K, the harmonic mean of its attempts per case when
    they differ, NaN for a variant with no evaluated case). A difference between two
    variants below this floor is indistinguishable from re-running one of them; a variant
    with no evaluated case has no floor (NaN).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> nf = noise_floor(run, trials=1)
    >>> list(nf.columns)[:4]
    ['variant_id', 'evaluator', 'within_variance', 'n_cases']
    """
    run = require_run(run, "noise_floor")
    vd = variance_decomposition(run, evaluator=evaluator, confidence_level=confidence_level)
    out = vd[["variant_id", "evaluator", "within_variance", "n_cases"]].copy()
    if trials is not None:
        check_count(trials, "trials", location="trials")
    k = vd["noise_floor_trials"] if trials is None else pd.Series(trials, index=vd.index)
    out["trials"] = k.astype(np.float64)
    out["noise_floor"] = [
        stats_paired.noise_floor(w, n, t, confidence_level)
        for w, n, t in zip(out["within_variance"], out["n_cases"], out["trials"], strict=True)
    ]
    out["confidence_level"] = confidence_level
    return out


@renamed_keywords(interval="method")
def case_labels(
    run: ExperimentRun,
    *,
    evaluator: str = "passed",
    method: str = "wilson",
    confidence_level: float = 0.95,
    pass_threshold: float = 0.5,
    fail_threshold: float = 0.5,
    evaluated: Evaluation | None = None,
) -> pd.DataFrame:
    """Per (variant, case): the pass rate, its interval and a stability label.

    ``stable_pass`` when the interval's lower bound is at least ``pass_threshold``;
    ``stable_fail`` when its upper bound is at most ``fail_threshold``; otherwise
    ``flaky`` when some attempts passed and some failed, and ``undetermined`` when they
    agree but are too few to say (one attempt never decides). The interval is Wilson or
    Jeffreys on the case's own attempts, valid when attempts are independent draws.

    ``method`` chooses it: ``"wilson"`` (default) or ``"jeffreys"`` (the ``interval``
    column says which). It was ``interval``, still accepted with a ``FutureWarning``.

    ``evaluated``: the evaluation of ``evaluator`` on ``run`` when the caller already has
    it (:func:`~agenticlens_frames.paired.dimensions.evaluation`; skips recomputing it).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> labels = case_labels(run)
    >>> sorted(set(labels["label"])) <= ["flaky", "stable_fail", "stable_pass", "undetermined"]
    True
    """
    run = require_run(run, "case_labels")
    if method not in ("wilson", "jeffreys"):
        raise InputError(
            f"method must be 'wilson' or 'jeffreys', got {method!r}", location="method"
        )
    for name, threshold in (("pass_threshold", pass_threshold), ("fail_threshold", fail_threshold)):
        # A bound outside [0, 1] would make its label silently impossible (or certain).
        if not 0 <= check_number(threshold, name, location=name) <= 1:
            raise InputError(f"{name} must lie in [0, 1], got {threshold!r}", location=name)
    ev = _evaluated(run, evaluator, evaluated)
    if not ev.binary:
        raise InputError(
            f"evaluator {evaluator!r} is not pass/fail; stability labels need a binary one",
            location="evaluator",
            hint="use passed or a pass/fail check metric",
        )
    return labels_from_counts(
        list(run.manifest.variant_ids),
        list(run.suite.case_ids),
        ev.counts.ravel(),
        np.rint(ev.sums.ravel()).astype(np.int64),
        method=method,
        confidence_level=confidence_level,
        pass_threshold=pass_threshold,
        fail_threshold=fail_threshold,
    )


def labels_from_counts(
    variant_ids: list[str],
    case_ids: list[str],
    attempts: np.ndarray,
    passes: np.ndarray,
    *,
    method: str = "wilson",
    confidence_level: float = 0.95,
    pass_threshold: float = 0.5,
    fail_threshold: float = 0.5,
) -> pd.DataFrame:
    """:func:`case_labels` from each (variant, case)'s evaluated attempts and passes,
    variant-major in suite order (a saved report's are enough to give its frame).

    Examples
    --------
    >>> frame = labels_from_counts(["a"], ["x", "y", "z"], np.array([5, 5, 1]),
    ...                            np.array([5, 2, 1]))
    >>> frame["label"].tolist()
    ['stable_pass', 'flaky', 'undetermined']
    """
    ids, cases = variant_ids, case_ids
    n = np.asarray(attempts, dtype=np.int64)
    x = np.asarray(passes, dtype=np.int64)
    if method == "wilson":
        low, high = stats.wilson_interval(x, n, confidence_level)
    else:
        low, high = stats_paired.jeffreys_interval(x, n, confidence_level)
    flipped = (x > 0) & (x < n)
    label = np.where(
        n == 0,
        "unscored",
        np.where(
            low >= pass_threshold,
            "stable_pass",
            np.where(
                high <= fail_threshold, "stable_fail", np.where(flipped, "flaky", "undetermined")
            ),
        ),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, x / np.maximum(n, 1), np.nan)
    frame = pd.DataFrame(
        {
            "variant_id": pd.Categorical.from_codes(
                np.repeat(np.arange(len(ids)), len(cases)), categories=ids
            ),
            "case_id": pd.Categorical.from_codes(
                np.tile(np.arange(len(cases)), len(ids)), categories=cases
            ),
            "attempts": n,
            "passes": x,
            "pass_rate": rate,
            "ci_low": low,
            "ci_high": high,
            "interval": method,
            "confidence_level": confidence_level,
            "flipped": flipped,
            "label": label,
        }
    )
    return frame
