"""Result frames computed from the tidy tables (spec §9): vectorised, one grain each.

Every function takes an :class:`~agenticlens_frames.frames.ExperimentRun` (or frames
derived from one) and returns a tidy :class:`pandas.DataFrame`. :func:`analyze` runs them
all and returns an :class:`ExperimentAnalysis`, which the JSON, CSV, HTML and console
renderers read; they never compute a statistic of their own.

Where AgenticLens computes a number in a particular float order (plain left-to-right sums
per trial, exactly rounded ``fsum`` means across trials and cases), so do we, so that the
reports agree to the last bit.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from . import stats
from ._choices import check_latency_missing
from ._deprecate import class_keyword_hints, keyword_hints, renamed_keywords
from ._values import clip, is_missing
from .errors import InputError, check_count, check_number, check_proportion
from .frames import UNANSWERED_STATUSES, ExperimentRun, factor_column, require_run
from .paired import (
    ComparisonsConfig,
    PairedAnalysis,
    paired_outputs_and_verdicts,
)
from .paired.settings import run_comparisons
from .per_case import case_matrix, category_labels, effective_pass_k
from .schema import COMPARISONS, FACTOR_LEVELS, SUMMARY_METRICS, SUMMARY_STATS

__all__ = [
    "SUMMARY_METRICS",
    "ExperimentAnalysis",
    "analyze",
    "case_matrix",
    "compare_to_baseline",
    "factor_levels",
    "pareto_frontier",
    "pass_at_k",
    "report_warnings",
    "trial_summary",
    "variant_summary",
    "warm_imports",
]

UNSET_FACTOR = "(unset)"

#: Columns of :func:`factor_levels` and :func:`compare_to_baseline`, in order (declared
#: in :mod:`.schema`).
FACTOR_LEVEL_COLUMNS = FACTOR_LEVELS.columns
COMPARISON_COLUMNS = COMPARISONS.columns

LatencyPolicy = Literal["exclude", "zero"]


def _check_confidence(confidence_level: float) -> None:
    check_proportion(confidence_level, "confidence level", location="confidence_level")


#: The result frames the lower-level functions take besides the run: for each, the columns
#: read, the function that makes it and the analysis attribute that holds it.
_RESULT_FRAMES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "summary": (
        (
            "variant_id",
            "trial_success_rate",
            "pass_rate_mean",
            "pass_rate_count",
            "average_score_mean",
            "average_score_count",
            "average_latency_ms_mean",
            "average_latency_ms_count",
            "total_cost_usd_mean",
            "total_cost_usd_count",
        ),
        "variant_summary(run)",
        "variants",
    ),
    "cases": (("variant_id", "case_id", "pass_rate"), "case_matrix(run)", "cases"),
    "comparisons": (
        ("candidate_variant_id",),
        "compare_to_baseline(run, summary, cases)",
        "comparisons",
    ),
}

#: The analysis attribute holding what a function computes, where the names differ.
_HELD_BY_ANALYSIS = {"compare_to_baseline": "comparisons", "report_warnings": "warnings"}


def _require_result_frame(
    value: Any, function: str, argument: str, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """``value`` when it is the result frame ``argument`` names; otherwise an InputError
    naming the function, the argument and the frame to pass.

    An analysis or a run passed where its variant summary belongs failed with "object is
    not subscriptable" or a pandas ``KeyError``, which name neither the argument nor the
    function that makes the frame. ``columns`` are the ones ``function`` reads (default:
    those of :data:`_RESULT_FRAMES`).

    Examples
    --------
    >>> _require_result_frame(pd.DataFrame({"variant_id": ["a"]}), "pareto_frontier", "summary")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: summary: pareto_frontier() takes the variant summary; \
this frame lacks its column(s) trial_success_rate, ... (it has variant_id) (pass \
variant_summary(run), or analysis.variants)
    """
    needed, maker, attribute = _RESULT_FRAMES[argument]
    columns = needed if columns is None else columns
    noun = {"summary": "variant summary", "cases": "case matrix"}.get(argument, f"{argument} frame")
    fix = f"pass {maker}, or analysis.{attribute}"
    if not isinstance(value, pd.DataFrame):
        got = type(value).__name__
        if isinstance(value, ExperimentAnalysis):
            # The analysis already holds what these functions compute.
            held = _HELD_BY_ANALYSIS.get(function, function)
            fix = f"pass analysis.{attribute}, or read analysis.{held}"
        raise InputError(f"{function}() takes the {noun}, got {got}", location=argument, hint=fix)
    missing = [c for c in columns if c not in value.columns]
    if missing:
        raise InputError(
            f"{function}() takes the {noun}; this frame lacks its column(s) "
            + ", ".join(missing)
            + f" (it has {', '.join(map(str, value.columns[:12])) or 'no columns'})",
            location=argument,
            hint=fix,
        )
    return value


def _segments(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of runs of equal keys in already-sorted key arrays."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    return starts, ends


def _sequential_sums(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[float]:
    """Per segment, what the package's per-trial ``sum()`` of the values gives, to the bit.

    numpy's ``sum`` adds pairwise and could differ in the last bit. Up to Python 3.11,
    ``sum()`` of floats adds left to right starting from 0, which is ``np.cumsum`` (a
    strictly sequential accumulate) plus 0.0 (``0 + x`` only turns a -0.0 into 0.0); an
    empty segment sums to the integer 0. Python 3.12 compensates the rounding, so there
    each segment is summed by ``sum()`` itself.
    """
    bounds = zip(starts.tolist(), ends.tolist(), strict=True)
    if sys.version_info >= (3, 12):
        flat = values.tolist()
        return [sum(flat[s:e]) for s, e in bounds]
    values = np.asarray(values, dtype=np.float64)
    return [float(np.cumsum(values[s:e])[-1]) + 0.0 if e > s else 0 for s, e in bounds]


# --------------------------------------------------------------------------- trials


@keyword_hints
def trial_summary(
    run: ExperimentRun, *, latency_missing: LatencyPolicy = "exclude"
) -> pd.DataFrame:
    """One row per (variant, trial): the trial report's summary numbers (spec §6).

    Parameters
    ----------
    run
        The experiment.
    latency_missing
        ``"exclude"`` (default): unknown latencies — a case without a sample, a failed
        call, a trace that recorded none (0 ms) — are left out of ``average_latency_ms``
        (deliberate fix B3). ``"zero"``: count them as 0 ms, as AgenticLens 0.10 does.
        ``average_latency_ms_package`` always holds the latter.

    Returns
    -------
    pandas.DataFrame
        ``variant_id, trial, status, execution_position, total_cases, passed_cases,
        failed_cases, pass_rate, average_score, average_latency_ms,
        average_latency_ms_package, total_cost_usd, priced_cases, successful``; metric
        columns are NaN for failed trials.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> ts = trial_summary(run)
    >>> bool((ts["passed_cases"] + ts["failed_cases"] == ts["total_cases"]).all())
    True
    """
    run = require_run(run, "trial_summary")
    check_latency_missing(latency_missing)
    att = run.attempts
    variant = att["variant_id"].cat.codes.to_numpy()
    trial = att["trial"].to_numpy()
    starts, ends = _segments(variant, trial)
    n = (ends - starts).astype(np.int64)

    passed = np.add.reduceat(att["passed"].to_numpy(np.int64), starts) if len(starts) else n
    status = att["status"].to_numpy()
    ok = status == "ok"
    latency = att["latency_ms"].to_numpy(float)
    # Known: an answered attempt with a measured latency (0 ms is unknown, see
    # frames.measured_latency).
    measured = ok & ~np.isnan(latency)
    known = np.where(measured, latency, 0.0)
    # Compat: every unknown latency of a completed trial contributes 0 ms (adding 0.0
    # leaves a left-to-right sum unchanged, so this is the package's sum).
    lat_package = [s / k for s, k in zip(_sequential_sums(known, starts, ends), n, strict=True)]
    lat_known_sum = _sequential_sums(known[measured], *_masked_segments(measured, starts, ends))
    n_known = np.add.reduceat(measured.astype(np.int64), starts) if len(starts) else n
    lat_exclude = [
        s / k if k else math.nan for s, k in zip(lat_known_sum, n_known.tolist(), strict=True)
    ]

    cost = att["cost_usd"].to_numpy(float)
    has_cost = ~np.isnan(cost)
    priced = np.add.reduceat(has_cost.astype(np.int64), starts) if len(starts) else n
    cost_sums = _sequential_sums(np.where(has_cost, cost, 0.0), starts, ends)

    # Pooled check values per trial (score-weighted mean, spec §6 "average_score").
    chk = run.checks
    k_variant = chk["variant_id"].cat.codes.to_numpy()
    k_trial = chk["trial"].to_numpy()
    k_live = ~chk["skipped"].to_numpy(bool)
    k_values = chk["value"].to_numpy(float)
    live_variant, live_trial = k_variant[k_live], k_trial[k_live]
    kst, ken = _segments(live_variant, live_trial)
    k_sums = _sequential_sums(k_values[k_live], kst, ken)
    k_counts = (ken - kst).tolist()
    k_key = {
        (v, t): (total / count if count else 0.0)
        for v, t, total, count in zip(
            live_variant[kst].tolist(), live_trial[kst].tolist(), k_sums, k_counts, strict=True
        )
    }
    if not len(chk) and len(att):
        # A run made from frames has no checks table: each attempt's score is its one
        # check (score_sum over n_checks), so the pooled mean comes from the attempts
        # (it read 0.0 for every trial).
        sums = att["score_sum"].to_numpy(float)
        counts = att["n_checks"].to_numpy(np.int64)
        scored = ~np.isnan(sums) & (counts > 0)
        top = np.add.reduceat(np.where(scored, sums, 0.0), starts)
        bottom = np.add.reduceat(np.where(scored, counts, 0), starts)
        k_key = {
            (int(variant[s]), int(trial[s])): float(t / b)
            for s, t, b in zip(starts.tolist(), top, bottom, strict=True)
            if b > 0
        }

    tri = run.trials.set_index(["variant_id", "trial"], drop=False)
    rows = []
    for i, s in enumerate(starts.tolist()):
        vcode, t = int(variant[s]), int(trial[s])
        vid = att["variant_id"].cat.categories[vcode]
        info = tri.loc[(vid, t)]
        succeeded = info["status"] == "succeeded"
        total = int(n[i])
        p = int(passed[i])
        row: dict[str, Any] = {
            "variant_id": vid,
            "trial": t,
            "status": info["status"],
            "execution_position": int(info["execution_position"]),
            "total_cases": total,
            "passed_cases": p if succeeded else 0,
            "failed_cases": total - p if succeeded else total,
        }
        if succeeded:
            row["pass_rate"] = p / total
            row["average_score"] = k_key.get((vcode, t), 0.0)
            row["average_latency_ms_package"] = lat_package[i]
            row["average_latency_ms"] = (
                lat_package[i] if latency_missing == "zero" else lat_exclude[i]
            )
            row["total_cost_usd"] = cost_sums[i] if int(priced[i]) == total else math.nan
            row["priced_cases"] = int(priced[i])
            row["successful"] = p == total
        else:
            row.update(
                pass_rate=math.nan,
                average_score=math.nan,
                average_latency_ms_package=math.nan,
                average_latency_ms=math.nan,
                total_cost_usd=math.nan,
                priced_cases=0,
                successful=False,
            )
        rows.append(row)
    out = pd.DataFrame(rows)
    out["variant_id"] = pd.Categorical(out["variant_id"], categories=run.manifest.variant_ids)
    out["status"] = pd.Categorical(out["status"], categories=["succeeded", "failed"])
    cols = [
        "variant_id",
        "trial",
        "status",
        "execution_position",
        "total_cases",
        "passed_cases",
        "failed_cases",
        "pass_rate",
        "average_score",
        "average_latency_ms",
        "average_latency_ms_package",
        "total_cost_usd",
        "priced_cases",
        "successful",
    ]
    return out[cols]


def _masked_segments(
    mask: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Segment offsets of ``values[mask]`` given the segments of ``values``."""
    before = np.concatenate([[0], np.cumsum(mask)])
    return before[starts], before[ends]


# --------------------------------------------------------------------------- cases


@renamed_keywords(ks="pass_k", level="per")
def pass_at_k(
    run: ExperimentRun, pass_k: Sequence[int] | None = None, *, per: str = "variant"
) -> pd.DataFrame:
    """pass@k and pass^k in long form, for any list of k.

    Parameters
    ----------
    run
        The experiment.
    pass_k
        The k values (default: the manifest's effective ``pass_k``). Formerly ``ks``,
        still accepted with a ``FutureWarning``.
    per
        The grain of the rows: ``"variant"``, the unweighted mean over cases (spec §9.3),
        or ``"case"``, one row per (variant, case). Formerly ``level``, still accepted
        with a ``FutureWarning`` (``level`` is a confidence level elsewhere).

    Returns
    -------
    pandas.DataFrame
        ``variant_id, [case_id,] k, pass_at_k, pass_hat_k``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> pk = pass_at_k(run, [1, 2, 5])
    >>> bool((pk["pass_hat_k"] <= pk["pass_at_k"]).all())
    True
    """
    from ._suggest import require_known

    run = require_run(run, "pass_at_k")
    # Before the work, named as the argument with the closest choice (it was neither).
    require_known("pass@k grouping", [per], ("variant", "case"), location="per")
    ks = effective_pass_k(run, pass_k)
    cm = case_matrix(run, ks)
    long = pd.concat(
        [
            cm[["variant_id", "case_id"]].assign(
                k=k, pass_at_k=cm[f"pass_at_{k}"], pass_hat_k=cm[f"pass_hat_{k}"]
            )
            for k in ks
        ],
        ignore_index=True,
    )
    if per == "case":
        return long
    rows = []
    for (vid, k), grp in long.groupby(["variant_id", "k"], observed=False, sort=True):
        rows.append(
            {
                "variant_id": vid,
                "k": k,
                "pass_at_k": _fmean_all(grp["pass_at_k"].to_numpy()),
                "pass_hat_k": _fmean_all(grp["pass_hat_k"].to_numpy()),
            }
        )
    out = pd.DataFrame(rows)
    out["variant_id"] = pd.Categorical(out["variant_id"], categories=run.manifest.variant_ids)
    return out


def _fmean_all(values: np.ndarray) -> float:
    """Exact mean if every value is present (the package drops a k otherwise)."""
    if len(values) == 0 or np.isnan(values).any():
        return math.nan
    return math.fsum(values.tolist()) / len(values)


# --------------------------------------------------------------------------- variants


@keyword_hints
def variant_summary(
    run: ExperimentRun,
    *,
    confidence_level: float = 0.95,
    pass_k: Sequence[int] | None = None,
    latency_missing: LatencyPolicy = "exclude",
    trials: pd.DataFrame | None = None,
    cases: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per variant with every field of spec §9.2–§9.3.

    The four metric summaries are flattened to ``<metric>_<stat>`` columns
    (``pass_rate_mean``, ``average_latency_ms_ci_low``, …; ``count`` is 0 and the rest NaN
    when the variant has no value for that metric). The pooled case pass rate comes with its
    Wilson interval (``case_pass_rate_ci_low`` / ``_ci_high``).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> vs = variant_summary(run)
    >>> bool(((vs["case_pass_rate_ci_low"] <= vs["case_pass_rate"])
    ...       & (vs["case_pass_rate"] <= vs["case_pass_rate_ci_high"])).all())
    True
    """
    run = require_run(run, "variant_summary")
    _check_confidence(confidence_level)
    ks = effective_pass_k(run, pass_k)
    ts = trials if trials is not None else trial_summary(run, latency_missing=latency_missing)
    cm = cases if cases is not None else case_matrix(run, ks)
    # The case matrix's columns as arrays once; each variant takes its rows by a mask (not
    # a filtered copy of the whole frame per variant).
    cm_attempts = cm["attempts"].to_numpy()
    cm_passes = cm["passes"].to_numpy()
    cm_consistent = cm["consistent"].to_numpy(bool)
    cm_pass_k = {
        f"pass_{kind}_{k}": cm[f"pass_{kind}_{k}"].to_numpy(float)
        for k in ks
        for kind in ("at", "hat")
    }
    rows = []
    for vid in run.manifest.variant_ids:
        t = ts[ts["variant_id"] == vid]
        done = t[t["status"] == "succeeded"]
        successful = int(done["successful"].sum())
        spec = run.manifest.variant(vid)
        row: dict[str, Any] = {
            "variant_id": vid,
            "variant_name": spec.name,
            "target_kind": spec.target_kind,
            "factors": dict(spec.factors),
            "is_baseline": vid == run.manifest.baseline_variant_id,
            "attempted_trials": len(t),
            "completed_trials": len(done),
            "failed_trials": len(t) - len(done),
            "successful_trials": successful,
            "trial_success_rate": successful / len(t) if len(t) else 0.0,
        }
        for metric, bounded in SUMMARY_METRICS.items():
            values = done[metric].to_numpy(float)
            values = values[~np.isnan(values)]
            summary = stats.metric_summary(
                values.tolist(), confidence_level=confidence_level, bounded=bounded
            )
            row.update(_flatten_summary(metric, summary))
        mine = (cm["variant_id"] == vid).to_numpy(bool)
        n_cases = int(mine.sum())
        attempts = int(cm_attempts[mine].sum())
        passes = int(cm_passes[mine].sum())
        row["case_attempts"] = attempts
        row["case_passes"] = passes
        row["case_pass_rate"] = passes / attempts if attempts else math.nan
        if attempts:
            low, high = stats.wilson_interval(passes, attempts, confidence_level)
            row["case_pass_rate_ci_low"], row["case_pass_rate_ci_high"] = float(low), float(high)
        else:
            row["case_pass_rate_ci_low"] = row["case_pass_rate_ci_high"] = math.nan
        for k in ks:
            row[f"pass_at_{k}"] = _fmean_all(cm_pass_k[f"pass_at_{k}"][mine])
            row[f"pass_hat_{k}"] = _fmean_all(cm_pass_k[f"pass_hat_{k}"][mine])
        consistent = cm_consistent[mine]
        row["consistency_rate"] = int(consistent.sum()) / n_cases if n_cases else math.nan
        row["flaky_case_ids"] = tuple(_strings(cm["case_id"], np.flatnonzero(mine)[~consistent]))
        row["n_flaky_cases"] = int((~consistent).sum())
        row["priced_trials"] = row["total_cost_usd_count"]
        rows.append(row)
    out = pd.DataFrame(rows)
    out["variant_id"] = pd.Categorical(out["variant_id"], categories=run.manifest.variant_ids)
    front = pareto_frontier(out)
    out["pareto_optimal"] = out["variant_id"].isin(front)
    out.attrs.update(confidence_level=confidence_level, pass_k=ks, latency_missing=latency_missing)
    return out


def _strings(column: pd.Series, rows: np.ndarray) -> list[str]:
    """``column.iloc[rows].astype(str)`` as a list; a categorical column's labels are
    converted once per category, not once per row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()[rows]
        if len(codes) == 0 or codes.min() >= 0:
            return category_labels(column.cat.categories.take(codes))
    return column.iloc[rows].astype(str).tolist()


def _flatten_summary(metric: str, summary: dict[str, Any] | None) -> dict[str, Any]:
    if summary is None:
        return {f"{metric}_count": 0} | {f"{metric}_{s}": math.nan for s in SUMMARY_STATS[1:]}
    ci = summary["confidence_interval"]
    cv = summary["coefficient_of_variation"]
    return {
        f"{metric}_count": summary["count"],
        f"{metric}_mean": summary["mean"],
        f"{metric}_median": summary["median"],
        f"{metric}_p95": summary["p95"],
        f"{metric}_standard_deviation": summary["standard_deviation"],
        f"{metric}_coefficient_of_variation": math.nan if cv is None else cv,
        f"{metric}_ci_low": ci["lower"],
        f"{metric}_ci_high": ci["upper"],
    }


@keyword_hints
def pareto_frontier(summary: pd.DataFrame) -> list[str]:
    """Variant ids on the Pareto frontier, in manifest order (spec §9.4).

    Objectives: trial success rate ↑, completed-trial pass rate ↑, score ↑, latency ↓,
    cost ↓; a variant needs ≥ 1 completed trial to be eligible, and an unknown latency or
    cost neither blocks nor creates dominance.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> pareto_frontier(variant_summary(run))
    ['baseline', 'prompt-v2', 'large-v2']
    """
    # AgenticLens also requires a latency summary; with 0 ms counted as 0 (its rule) every
    # completed trial has one. Unknown latency (fix B3) is neutral instead, like an unknown
    # cost, so a variant whose traces recorded no latency is neither dropped nor placed on
    # the frontier by a latency it does not have.
    summary = _require_result_frame(summary, "pareto_frontier", "summary")
    eligible = ((summary["pass_rate_count"] > 0) & (summary["average_score_count"] > 0)).to_numpy()
    if not eligible.any():
        return []
    sub = summary[eligible]
    objectives = sub[
        [
            "trial_success_rate",
            "pass_rate_mean",
            "average_score_mean",
            "average_latency_ms_mean",
            "total_cost_usd_mean",
        ]
    ].to_numpy(float)
    unknown = np.zeros_like(objectives, dtype=bool)
    unknown[:, 3] = (sub["average_latency_ms_count"] == 0).to_numpy()
    unknown[:, 4] = (sub["total_cost_usd_count"] == 0).to_numpy()
    front = stats.pareto_front(objectives, [True, True, True, False, False], unknown)
    return [str(v) for v in sub["variant_id"].to_numpy()[front]]


# --------------------------------------------------------------------------- comparisons


def changed_factors(base: dict[str, str], cand: dict[str, str]) -> dict[str, list[str | None]]:
    """Factors whose value differs, sorted by name: ``{name: [baseline, candidate]}``.

    Examples
    --------
    >>> changed_factors({"model": "a", "prompt": "v1"}, {"model": "b", "prompt": "v1"})
    {'model': ['a', 'b']}
    """
    names = sorted(set(base) | set(cand))
    return {n: [base.get(n), cand.get(n)] for n in names if base.get(n) != cand.get(n)}


@keyword_hints
def compare_to_baseline(
    run: ExperimentRun,
    summary: pd.DataFrame,
    cases: pd.DataFrame,
    *,
    confidence_level: float = 0.95,
    regression_threshold: float = 0.05,
) -> pd.DataFrame:
    """One row per non-baseline variant with a comparison (spec §9.5).

    Columns: ``baseline_variant_id, candidate_variant_id``; for each of ``pass_rate``,
    ``average_score``, ``average_latency_ms``, ``total_cost_usd``: ``<m>_delta``,
    ``<m>_delta_relative`` and ``<m>_regressed`` (NA for cost when either side is
    unpriced, for latency when either side has none known); ``changed_factors`` (dict),
    ``case_pass_rate_delta``, ``case_pass_rate_p_value`` (pooled two-proportion z-test),
    ``statistically_significant``, ``regressed_case_ids``, ``improved_case_ids`` and
    ``warnings`` (tuples).

    Variants that cannot be compared (no completed trial on either side) get no row; see
    :func:`report_warnings`.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> c = compare_to_baseline(run, variant_summary(run), case_matrix(run))
    >>> c[["candidate_variant_id", "pass_rate_delta", "pass_rate_regressed"]].round(3)
      candidate_variant_id  pass_rate_delta  pass_rate_regressed
    0          model-large            0.029                False
    1            prompt-v2            0.157                False
    2      retrieval-dense           -0.057                 True
    3             large-v2            0.129                False
    >>> c.loc[1, "changed_factors"]
    {'prompt': ['v1', 'v2']}
    """
    run = require_run(run, "compare_to_baseline")
    _check_confidence(confidence_level)
    summary = _require_result_frame(summary, "compare_to_baseline", "summary")
    cases = _require_result_frame(cases, "compare_to_baseline", "cases")
    m = run.manifest
    by_id = summary.set_index(summary["variant_id"].astype(str))
    base_id = m.baseline_variant_id
    base = by_id.loc[base_id]
    base_spec = m.variant(base_id)
    case_pass_rate = _case_pass_rates(cases, base_id)

    def comparable(row: pd.Series) -> bool:
        # AgenticLens also needs a latency summary, which every completed trial has under
        # its rule (0 ms counted); an unknown latency (fix B3) leaves only the latency
        # delta out, as an unknown cost does.
        return bool(row["pass_rate_count"] > 0 and row["average_score_count"] > 0)

    rows = []
    for spec in m.variants:
        if spec.id == base_id:
            continue
        cand = by_id.loc[spec.id]
        if not (comparable(base) and comparable(cand)):
            continue
        row: dict[str, Any] = {"baseline_variant_id": base_id, "candidate_variant_id": spec.id}
        pairs = {
            "pass_rate": (base["case_pass_rate"], cand["case_pass_rate"], True),
            "average_score": (base["average_score_mean"], cand["average_score_mean"], True),
        }
        if base["average_latency_ms_count"] > 0 and cand["average_latency_ms_count"] > 0:
            pairs["average_latency_ms"] = (
                base["average_latency_ms_mean"],
                cand["average_latency_ms_mean"],
                False,
            )
        if base["total_cost_usd_count"] > 0 and cand["total_cost_usd_count"] > 0:
            pairs["total_cost_usd"] = (
                base["total_cost_usd_mean"],
                cand["total_cost_usd_mean"],
                False,
            )
        for metric in SUMMARY_METRICS:
            if metric in pairs:
                b, c, higher = pairs[metric]
                d = stats.metric_delta(
                    float(b), float(c), higher_is_better=higher, threshold=regression_threshold
                )
                row[f"{metric}_delta"] = d["absolute"]
                row[f"{metric}_delta_relative"] = d["relative"]
                row[f"{metric}_regressed"] = d["regressed"]
            else:
                row[f"{metric}_delta"] = math.nan
                row[f"{metric}_delta_relative"] = math.nan
                row[f"{metric}_regressed"] = pd.NA
        changed = changed_factors(base_spec.factors, spec.factors)
        row["changed_factors"] = changed
        row["case_pass_rate_delta"] = float(cand["case_pass_rate"]) - float(base["case_pass_rate"])
        p = stats.two_proportion_z_test(
            int(base["case_passes"]),
            int(base["case_attempts"]),
            int(cand["case_passes"]),
            int(cand["case_attempts"]),
        )
        row["case_pass_rate_p_value"] = math.nan if p is None else p
        row["statistically_significant"] = pd.NA if p is None else p < 1 - confidence_level
        ids, cand_rate, base_rate = case_pass_rate(spec.id)
        change = cand_rate - base_rate
        row["regressed_case_ids"] = tuple(ids[change < -regression_threshold])
        row["improved_case_ids"] = tuple(ids[change > regression_threshold])
        warnings = [
            f"Variant {vid!r} completed {int(s['completed_trials'])} trial(s), fewer than the "
            f"minimum of {m.minimum_trials}; treat this delta as exploratory."
            for vid, s in ((base_id, base), (spec.id, cand))
            if s["completed_trials"] < m.minimum_trials
        ]
        if len(changed) > 1:
            warnings.append(
                f"{len(changed)} factors changed at once ({', '.join(changed)}); "
                "the delta cannot be attributed to one of them."
            )
        row["warnings"] = tuple(warnings)
        rows.append(row)
    out = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    for metric in SUMMARY_METRICS:
        out[f"{metric}_regressed"] = out[f"{metric}_regressed"].astype("boolean")
    out["statistically_significant"] = out["statistically_significant"].astype("boolean")
    out.attrs.update(confidence_level=confidence_level, regression_threshold=regression_threshold)
    return out


def _case_pass_rates(
    cases: pd.DataFrame, base_id: str
) -> Callable[[str], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For a candidate: its case ids (text), its per-case pass rates and the baseline's on
    the same cases (NaN where the baseline has none), in the candidate's row order.

    The baseline's rates are matched by case-id category code when ``case_id`` is a
    categorical without missing or repeated baseline cases (the case matrix), otherwise
    by the case ids' text.
    """
    is_base = (cases["variant_id"] == base_id).to_numpy(bool)
    column = cases["case_id"]
    rates = cases["pass_rate"].to_numpy()
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        base_codes = codes[is_base]
        if (codes >= 0).all() and len(np.unique(base_codes)) == len(base_codes):
            by_code = np.full(len(column.cat.categories), np.nan)
            by_code[base_codes] = rates[is_base].astype(float)

            def by_category(vid: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                mine = (cases["variant_id"] == vid).to_numpy(bool)
                ids = np.array(category_labels(column.cat.categories.take(codes[mine])), object)
                return ids, rates[mine], by_code[codes[mine]]

            return by_category
    base = pd.Series(rates[is_base], index=column[is_base].astype(str))

    def by_text(vid: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        mine = (cases["variant_id"] == vid).to_numpy(bool)
        text = column[mine].astype(str)
        return text.to_numpy(), rates[mine], base.reindex(text).to_numpy(float)

    return by_text


# --------------------------------------------------------------------------- factors


@keyword_hints
def factor_levels(run: ExperimentRun, summary: pd.DataFrame) -> pd.DataFrame:
    """Per factor and level, unweighted means over the member variants (spec §9.7).

    Factors with fewer than two distinct values are omitted; a variant without the factor
    is grouped under ``"(unset)"``. A level's mean is NaN if any member lacks the summary.
    These are raw averages over variants: confounded unless the design is factorial.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> fl = factor_levels(run, variant_summary(run))
    >>> fl[["factor", "value", "n_variants", "mean_pass_rate"]].round(3)
          factor      value  n_variants  mean_pass_rate
    0      model  gpt-large           2           0.793
    1      model  gpt-small           3           0.802
    2     prompt         v1           3           0.760
    3     prompt         v2           2           0.857
    4  retrieval       bm25           4           0.793
    5  retrieval      dense           1           0.821
    """
    run = require_run(run, "factor_levels")
    summary = _require_result_frame(summary, "factor_levels", "summary")
    by_id = summary.set_index(summary["variant_id"].astype(str))
    variants = run.variants
    rows = []
    for name in sorted(run.factor_names):
        values = variants[factor_column(name)].fillna(UNSET_FACTOR).astype(str)
        groups: dict[str, list[str]] = {}
        for vid, value in zip(variants["variant_id"].astype(str), values, strict=True):
            groups.setdefault(value, []).append(vid)
        if len(groups) < 2:
            continue
        for value in sorted(groups):
            members = by_id.loc[groups[value]]

            def mean_of(column: str, count: str, members: pd.DataFrame = members) -> float:
                if (members[count] == 0).any():
                    return math.nan
                return math.fsum(members[column].tolist()) / len(members)

            rows.append(
                {
                    "factor": name,
                    "value": value,
                    "variant_ids": tuple(groups[value]),
                    "n_variants": len(groups[value]),
                    "mean_pass_rate": mean_of("pass_rate_mean", "pass_rate_count"),
                    "mean_average_score": mean_of("average_score_mean", "average_score_count"),
                    "mean_latency_ms": mean_of(
                        "average_latency_ms_mean", "average_latency_ms_count"
                    ),
                    "mean_cost_usd": mean_of("total_cost_usd_mean", "total_cost_usd_count"),
                    "mean_trial_success_rate": math.fsum(members["trial_success_rate"].tolist())
                    / len(members),
                }
            )
    return pd.DataFrame(rows, columns=FACTOR_LEVEL_COLUMNS)


# --------------------------------------------------------------------------- warnings


@keyword_hints
def report_warnings(
    run: ExperimentRun, summary: pd.DataFrame, comparisons: pd.DataFrame
) -> list[str]:
    """Report-level warnings in the package's order and wording (spec §9.6).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> vs = variant_summary(run)
    >>> for w in report_warnings(run, vs, compare_to_baseline(run, vs, case_matrix(run))):
    ...     print(w[:72])
    1 variant(s) completed fewer than 5 trials (retrieval-dense); intervals
    Case-level pass-rate intervals and p-values treat each case attempt as i
    """
    run = require_run(run, "report_warnings")
    summary = _require_result_frame(
        summary, "report_warnings", "summary", ("variant_id", "completed_trials")
    )
    comparisons = _require_result_frame(comparisons, "report_warnings", "comparisons")
    m = run.manifest
    compared = set(comparisons["candidate_variant_id"].astype(str))
    out = [
        f"Variant {vid!r} was not compared with the baseline: one of them has no completed trials."
        for vid in m.variant_ids
        if vid != m.baseline_variant_id and vid not in compared
    ]
    completed = dict(
        zip(summary["variant_id"].astype(str), summary["completed_trials"], strict=True)
    )
    under = [vid for vid in m.variant_ids if completed[vid] < m.minimum_trials]
    if under:
        out.append(
            f"{len(under)} variant(s) completed fewer than {m.minimum_trials} trials "
            f"({', '.join(under)}); intervals and deltas are exploratory."
        )
    if m.trial_count > 1:
        out.append(ATTEMPTS_AS_INDEPENDENT)
    return out


#: The package's warning about its own pooled intervals and z-test (spec §9.6). It stays in
#: the JSON report's ``warnings``; the console and the page say it where those numbers are
#: shown (the AgenticLens-compatible section), not beside the case-level headline numbers.
ATTEMPTS_AS_INDEPENDENT = (
    "Case-level pass-rate intervals and p-values treat each case attempt as "
    "independent; attempts on the same case are correlated, so read them as "
    "approximate."
)


def headline_warnings(warnings: list[str]) -> list[str]:
    """The report warnings the console and the page list with the headline results: all
    but :data:`ATTEMPTS_AS_INDEPENDENT`, which their compatible-numbers section states.

    Examples
    --------
    >>> headline_warnings(["a", ATTEMPTS_AS_INDEPENDENT])
    ['a']
    """
    return [w for w in warnings if w != ATTEMPTS_AS_INDEPENDENT]


def judge_noise_notes(analysis: ExperimentAnalysis) -> list[str]:
    """The judges' notes (docs/judges.md, "Judge noise"): judge scores that are
    unavailable, then where a judge's sampling noise, not the agent's, limits what the run
    can detect. Said on the console, the page and the Markdown summary alike (the page and
    the summary had left them out).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> judge_noise_notes(analyze(run, frontier_n_resamples=0))  # no judges
    []
    """
    block = analysis.judge_noise
    return [*block.get("unavailable_notes", []), *block.get("notes", [])]


def judge_verdict_note(analysis: ExperimentAnalysis) -> str:
    """What the judges' noise does to the verdicts, said beside them ("" without judges).

    The verdicts' intervals come from the cases' observed differences, so the judges'
    sampling noise is already in them (nothing is added or subtracted); where the judge's
    part of a judged metric's interval is the larger noise (``judge_noise_comparisons``),
    the note names the metric, the candidates and the largest share. Without it the
    verdicts said nothing of the judges: the judge-noise notes came last, after every
    table, on the console.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> a = analyze(run, frontier_n_resamples=0)
    >>> judge_verdict_note(a)  # no judges
    ''
    >>> a.judge_noise = {"totals": [{"variant_id": "a"}], "comparisons": [
    ...     {"metric": "tone", "candidate_variant_id": "b", "judge_limits_detection": True,
    ...      "judge_width_share": 0.412}]}
    >>> print(judge_verdict_note(a))  # doctest: +NORMALIZE_WHITESPACE
    LLM judges graded these cases: where their scores count (the pass decisions, a judged
    metric) the intervals come from the cases' observed differences, so they already
    include the judges' sampling noise. Judge noise, not the agent's, is the larger noise
    on 'tone' (b; up to 41% of the interval's width): see the judge notes.
    >>> a.judge_noise["decomposition"] = [
    ...     {"evaluator": "tone", "metric": "tone", "variant_id": v, "samples": 3.0,
    ...      "verdict_kappa": k} for v, k in (("a", 0.62), ("b", 0.4149))]
    >>> print(judge_verdict_note(a).split("notes. ")[1])  # doctest: +NORMALIZE_WHITESPACE
    Judge agreement beyond chance (Fleiss' κ of the samples' verdicts; 0 = chance, 1 =
    perfect): 'tone' κ = 0.41 (b) to 0.62 (a) over 3 samples.
    """
    block = analysis.judge_noise
    if not block.get("totals"):
        return ""
    note = (
        "LLM judges graded these cases: where their scores count (the pass decisions, a "
        "judged metric) the intervals come from the cases' observed differences, so they "
        "already include the judges' sampling noise."
    )
    limited: dict[str, list[tuple[str, float]]] = {}
    for row in block.get("comparisons", []):
        if row.get("judge_limits_detection"):
            share = row.get("judge_width_share")
            limited.setdefault(str(row["metric"]), []).append(
                (str(row["candidate_variant_id"]), float(share) if share is not None else 0.0)
            )
    if limited:
        parts = [
            f"{metric!r} ({', '.join(c for c, _ in rows)}; up to "
            f"{max(share for _, share in rows):.0%} of the interval's width)"
            for metric, rows in limited.items()
        ]
        note += (
            " Judge noise, not the agent's, is the larger noise on "
            + "; ".join(parts)
            + ": see the judge notes."
        )
    if agreement := _judge_kappa_text(block.get("decomposition", [])):
        note += (
            " Judge agreement beyond chance (Fleiss' κ of the samples' verdicts; 0 = chance, "
            f"1 = perfect): {agreement}."
        )
    return note


def _judge_kappa_text(decomposition: list[dict[str, Any]]) -> str:
    """Each verdict judge's ``verdict_kappa`` (the ``judge_noise`` rows), for the line under
    the verdicts: one value, or the lowest and highest with their variants, and the samples.

    Judges without verdict labels (kappa NaN, or None in a saved report) are left out:
    their noise is in the variances. "" when no judge has a kappa.

    Examples
    --------
    >>> _judge_kappa_text([{"evaluator": "j", "metric": "j", "variant_id": "a",
    ...                     "samples": 3.0, "verdict_kappa": 0.615}])
    "'j' κ = 0.61 over 3 samples"
    >>> _judge_kappa_text([{"evaluator": "j", "metric": "j", "variant_id": "a",
    ...                     "samples": 1.0, "verdict_kappa": None}])
    ''
    """
    found: dict[tuple[str, str], list[tuple[float, str, float]]] = {}
    for row in decomposition:
        kappa = row.get("verdict_kappa")
        if not isinstance(kappa, (int, float)) or not math.isfinite(kappa):
            continue
        found.setdefault((str(row["evaluator"]), str(row["metric"])), []).append(
            (float(kappa), str(row["variant_id"]), float(row.get("samples") or math.nan))
        )
    parts = []
    for (_, metric), rows in found.items():
        low, high = min(rows), max(rows)
        if f"{low[0]:.2f}" == f"{high[0]:.2f}":
            kappa_text = f"κ = {low[0]:.2f}"
        else:
            kappa_text = f"κ = {low[0]:.2f} ({low[1]}) to {high[0]:.2f} ({high[1]})"
        # (the harmonic mean per attempt: a whole number unless sample counts differed)
        counts = sorted({round(m, 2) for _, _, m in rows if math.isfinite(m)})
        if not counts:
            parts.append(f"{metric!r} {kappa_text}")
            continue
        many = f"{counts[0]:g}" if len(counts) == 1 else f"{counts[0]:g}–{counts[-1]:g}"
        parts.append(f"{metric!r} {kappa_text} over {many} samples")
    return "; ".join(parts)


def judge_cost_lines(analysis: ExperimentAnalysis) -> list[str]:
    """One line per variant with judge scores: how many, how many unavailable, what the
    judges cost (every answered call once) and their tokens — apart from the agent's cost.

    The console, the page and the saved report's ``agenticlens_frames.judge_costs`` say
    these same lines (the console alone had said them). Read from the ``judge_noise``
    block's ``totals``, so a loaded report says them as the run did. After an early stop
    the same line adds what the judges of the attempts that ran past the decision point
    did and cost (the ``early_stopping`` block's ``judge_spend_after_decision``): paid
    for, not in the tables, so not analysed; so does, for a run with failed trials (an
    invalid payload), what the judges of their answered attempts did and cost
    (``extras["judge_spend_failed_trials"]``: a failed trial has no scores in the tables).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> a = analyze(run, frontier_n_resamples=0)
    >>> judge_cost_lines(a)  # no judges
    []
    >>> a.judge_noise = {"totals": [{"variant_id": "a", "judge_scores": 4,
    ...     "unavailable_scores": 1, "priced_scores": 3, "spent_cost_usd": 0.0021,
    ...     "input_tokens": 300, "output_tokens": 30}]}
    >>> judge_cost_lines(a)
    ['Judges · a: 4 score(s), 1 unavailable, cost $0.002100 (3 of 4 priced), 300 input / \
30 output tokens']
    >>> a.extras["early_stopping"] = {"judge_spend_after_decision": [{"variant_id": "a",
    ...     "attempts": 1, "judge_scores": 2, "unavailable_scores": 0, "priced_scores": 2,
    ...     "spent_cost_usd": 0.0004, "input_tokens": 40, "output_tokens": 10}]}
    >>> judge_cost_lines(a)[0].split("tokens; ")[1]
    'after the stop: 2 more score(s), 0 unavailable, $0.000400, 40 / 10 tokens, not analysed'
    >>> a.extras["judge_spend_failed_trials"] = [{"variant_id": "b", "attempts": 3,
    ...     "judge_scores": 3, "unavailable_scores": 0, "priced_scores": 3,
    ...     "spent_cost_usd": 0.0009, "input_tokens": 90, "output_tokens": 6}]
    >>> judge_cost_lines(a)[1]
    'Judges · b: in failed trials: 3 more score(s), 0 unavailable, $0.000900, 90 / 6 tokens, \
not analysed'
    """
    extras = analysis.extras or {}
    apart = {
        words: _by_variant(rows)
        for words, rows in (
            ("in failed trials", extras.get("judge_spend_failed_trials")),
            (
                "after the stop",
                (extras.get("early_stopping") or {}).get("judge_spend_after_decision"),
            ),
        )
    }
    lines = []
    for row in analysis.judge_noise.get("totals", []):
        line = (
            f"Judges · {row['variant_id']}: {row['judge_scores']} score(s), "
            f"{row['unavailable_scores']} unavailable, cost {_spent(row)} "
            f"({row['priced_scores']} of {row['judge_scores']} priced), "
            f"{row['input_tokens']} input / {row['output_tokens']} output tokens"
        )
        line += "".join(_apart(apart, str(row["variant_id"]), "; "))
        lines.append(line)
    # A variant whose judges graded only attempts not analysed (a failed trial's, past the
    # decision point).
    left = dict.fromkeys(variant for rows in apart.values() for variant in rows)
    for variant in left:
        lines.append(f"Judges · {variant}: " + "; ".join(_apart(apart, variant, "")))
    return lines


def _by_variant(rows: Any) -> dict[str, Mapping[str, Any]]:
    return {str(row["variant_id"]): row for row in rows or ()}


def _apart(apart: dict[str, dict[str, Mapping[str, Any]]], variant: str, lead: str) -> list[str]:
    """The variant's judge spend not analysed, each kind in the words of
    :func:`judge_cost_lines` (taken out of ``apart``: said once)."""
    return [
        f"{lead}{_not_analysed(words, more)}"
        for words, rows in apart.items()
        if (more := rows.pop(variant, None)) is not None
    ]


def _not_analysed(words: str, row: Mapping[str, Any]) -> str:
    """What the judges of a variant's attempts that are not analysed (``words``: in failed
    trials, after the stop) did and cost, in the words of :func:`judge_cost_lines`."""
    return (
        f"{words}: {row['judge_scores']} more score(s), {row['unavailable_scores']} "
        f"unavailable, {_spent(row)}, {row['input_tokens']} / {row['output_tokens']} tokens, "
        "not analysed"
    )


def _spent(row: Mapping[str, Any]) -> str:
    """A judges' totals row's ``spent_cost_usd`` in the cost lines' words (None: unpriced)."""
    spent = row["spent_cost_usd"]
    return "unpriced" if spent is None else f"${spent:.6f}"


def target_failure_warnings(analysis: ExperimentAnalysis) -> list[str]:
    """One warning per variant with attempts its target never answered (``target_error``,
    ``timed_out``): how many, the commonest error, and that they count as failed cases.

    Without it a live run's HTTP 500s read as the agent's failures: the pass rates and the
    verdicts count them, and nothing on the console or the page said so. For an analysis
    without its run (loaded from a report), the notes the report recorded
    (``agenticlens_frames.target_failures``, written by the JSON report).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> target_failure_warnings(analyze(run, frontier_n_resamples=0))
    []
    """
    if analysis.run is None:
        # Loaded from a report: the notes its run wrote (``agenticlens_frames.target_failures``).
        return list(analysis.extras.get("target_failures", ()))
    attempts = analysis.run.attempts
    failed = attempts[attempts["status"].isin(UNANSWERED_STATUSES).to_numpy()]
    if failed.empty:  # the common case: one pass over the statuses, nothing more
        return []
    counts = unanswered_counts(analysis)
    notes = []
    for variant_id, group in failed.groupby(failed["variant_id"].astype(str), sort=False):
        total = counts[variant_id][1]
        errors = group["error"].dropna().astype(str)
        first = f", first: {clip(errors.iloc[0], 160)}" if len(errors) else ""
        notes.append(
            f"{variant_id}: {len(group)} of {total} attempts got no answer from the target "
            f"({_status_counts(group)}{first}). They count as failed cases in the pass "
            "rates and the verdicts; after fixing the target, call them again "
            "(--rerun-failed with the run's --run-dir, rerun_failed=True in Python; a run "
            "made without --run-dir is run again whole)."
        )
    return notes


def unanswered_counts(analysis: ExperimentAnalysis) -> dict[str, tuple[int, int]]:
    """Per variant with any, in the manifest's order: (attempts its target never answered,
    its attempts outside failed trials) — what :func:`target_failure_warnings` words, as
    numbers (``--max-unanswered`` gates on them). A failed trial's attempts were never
    called as cases, so they would only dilute the share (3 of 8 calls unanswered in the one
    trial that ran is not 3 of 24). For an analysis loaded from a report, the counts its
    trials' ``summary.live`` blocks give (read by
    :func:`~agenticlens_frames.report.saved.load_report`).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> unanswered_counts(analyze(run, frontier_n_resamples=0))  # recorded: every reply there
    {}
    """
    if analysis.run is None:
        return dict(analysis.info.get("unanswered_counts", {}))
    attempts = analysis.run.attempts
    unanswered = attempts["status"].isin(UNANSWERED_STATUSES).to_numpy()
    if not unanswered.any():
        return {}
    # By the variant column's categories (the manifest's order): the gate names the
    # variants in the order a saved report lists them, so that both say the same line.
    variant = attempts["variant_id"]
    totals = variant[(attempts["status"] != "trial_failed").to_numpy()].value_counts(sort=False)
    missing = variant[unanswered].value_counts(sort=False)
    return {str(v): (int(missing[v]), int(totals[v])) for v in missing.index if missing[v]}


def _status_counts(group: pd.DataFrame) -> str:
    """``"3 target_error, 1 timed_out"`` for a variant's unanswered attempts."""
    counts = group["status"].astype(str).value_counts()
    return ", ".join(f"{int(counts[s])} {s}" for s in UNANSWERED_STATUSES if s in counts)


def failed_trials(analysis: ExperimentAnalysis) -> pd.DataFrame:
    """The failed trials of an analysis and why: ``variant_id``, ``trial``,
    ``error_message`` (None when nothing was said), in the trials' order.

    Read from the run's ``trials`` table, or, for an analysis loaded from a report, its
    ``trials`` frame; empty when neither records the messages.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> failed_trials(analyze(run, frontier_n_resamples=0)).to_dict("records")  # doctest: +ELLIPSIS
    [{'variant_id': 'retrieval-dense', 'trial': 5, 'error_message': 'recorded target has 4 ...'}]
    """
    frame = analysis.run.trials if analysis.run is not None else analysis.trials
    if "error_message" not in frame:
        return pd.DataFrame(columns=["variant_id", "trial", "error_message"])
    failed = frame.loc[
        frame["status"].astype(str) == "failed", ["variant_id", "trial", "error_message"]
    ]
    return pd.DataFrame(
        {
            "variant_id": failed["variant_id"].astype(str).tolist(),
            "trial": failed["trial"].astype(int).tolist(),
            "error_message": [
                None if is_missing(m) else str(m) for m in failed["error_message"].tolist()
            ],
        }
    )


# --------------------------------------------------------------------------- everything

#: Every result frame :meth:`ExperimentAnalysis.frames` may give, in the order it gives
#: them: AgenticLens's, the case-level ones, the judge frames, the verdicts, the factor
#: effects. One list, so an analysis and its loaded report (whose blocks are read in
#: another order) list their frames alike.
RESULT_FRAMES = (
    "trial_summary",
    "case_matrix",
    "variant_summary",
    "comparisons",
    "factor_levels",
    "case_level_summary",
    "variance_decomposition",
    "case_labels",
    "paired_comparisons",
    "noninferiority",
    "judge_totals",
    "judge_noise",
    "judge_noise_comparisons",
    "verdicts",
    "factor_effects",
)


@class_keyword_hints()
@dataclass
class ExperimentAnalysis:
    """Every result frame of one experiment, computed once; renderers read these.

    Make one with :func:`analyze` (or :func:`~agenticlens_frames.load_report` from a saved
    JSON report).

    Attributes
    ----------
    run
        The experiment's tidy tables; None for an analysis loaded from a saved report.
    trials, cases, variants, comparisons, factor_levels
        Result frames (:func:`trial_summary`, :func:`case_matrix`, :func:`variant_summary`,
        :func:`compare_to_baseline`, :func:`factor_levels`).
    pareto_frontier
        Variant ids on the frontier, manifest order.
    warnings
        Report-level warnings.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> a = analyze(run)
    >>> a
    ExperimentAnalysis('support-agent-upgrade@1', variants=5, correction='holm',
                       verdicts='6 worse, 13 no detectable difference',
                       frontier=['baseline', 'prompt-v2', 'large-v2'], warnings=2)
    >>> a.variants[["variant_id", "case_pass_rate", "pareto_optimal"]].round(3)
            variant_id  case_pass_rate  pareto_optimal
    0         baseline           0.714            True
    1      model-large           0.743           False
    2        prompt-v2           0.871            True
    3  retrieval-dense           0.657           False
    4         large-v2           0.843            True
    >>> a.verdicts.query("dimension == 'cost'")[["candidate_variant_id", "verdict"]]
       candidate_variant_id                   verdict
    15          model-large                     worse
    16            prompt-v2  no detectable difference
    17      retrieval-dense                     worse
    18             large-v2                     worse
    """

    run: ExperimentRun | None
    confidence_level: float
    regression_threshold: float
    pass_k: tuple[int, ...]
    latency_missing: LatencyPolicy
    trials: pd.DataFrame
    cases: pd.DataFrame
    variants: pd.DataFrame
    comparisons: pd.DataFrame
    factor_levels: pd.DataFrame
    pareto_frontier: list[str]
    warnings: list[str]
    #: Experiment-level facts the renderers need (names, versions, baseline, seed,
    #: execution order, case ids); kept here so a saved report can be re-rendered
    #: without the tables.
    info: dict[str, Any] = field(default_factory=dict)
    #: Run-level facts for the report's ``agenticlens_frames`` block that are not statistics
    #: (``early_stopping``: when and why a live run stopped).
    extras: dict[str, Any] = field(default_factory=dict)
    #: The paired comparisons when a correction was declared (None otherwise, and for an
    #: analysis loaded from a saved report, whose frames are in ``paired_frames``).
    paired: PairedAnalysis | None = None
    #: Case-level frames: case_level_summary, variance_decomposition, case_labels, and
    #: paired_comparisons / noninferiority when declared.
    paired_frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: One verdict per candidate and dimension (:func:`~agenticlens_frames.case_verdicts`):
    #: what the console, the page and the explorer lead with.
    verdicts: pd.DataFrame = field(default_factory=lambda: _empty_verdicts())
    #: The report's ``judge_noise`` block, JSON-ready, when the run has judge scores
    #: (:func:`~agenticlens_frames.judge_noise.judge_noise_outputs`); empty otherwise.
    judge_noise: dict[str, Any] = field(default_factory=dict)
    #: Main effects and two-factor interactions of the variants' factors, the case as the
    #: unit (:func:`agenticlens_frames.factor_effects`); empty without two-level factors.
    factor_effects: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def pass_rates(self) -> pd.DataFrame:
        """The pass rate every surface leads with, per variant: over the evaluated
        attempts, its interval with cases as the unit (the console's variant table, the
        page's, the explorer's) — not ``variants``' AgenticLens columns, whose intervals
        pool attempts.

        ``variant_id, estimate, ci_low, ci_high, confidence_level, method, n_cases,
        n_attempts`` (:func:`~agenticlens_frames.paired.verdicts.headline_pass_rates`);
        empty for a report that has no case-level numbers (one AgenticLens wrote).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
        >>> row = a.pass_rates.set_index("variant_id").loc["baseline"]
        >>> f"{row['estimate']:.1%} [{row['ci_low']:.0%}–{row['ci_high']:.0%}]", row["method"]
        ('71.4% [57%–82%]', 'beta_binomial')
        """
        from .paired.verdicts import headline_pass_rates

        return headline_pass_rates((self.paired_frames or {}).get("case_level_summary"))

    @property
    def execution_order(self) -> list[tuple[str, int]]:
        """(variant id, trial) pairs in the order they ran.

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
        >>> a.execution_order[:3], len(a.execution_order)
        ([('retrieval-dense', 1), ('model-large', 1), ('large-v2', 4)], 25)
        """
        return [tuple(item) for item in self.info["execution_order"]]  # type: ignore[misc]

    def frames(self) -> dict[str, pd.DataFrame]:
        """The result frames by name (for parquet export and notebooks).

        The case-level frames (``case_level_summary``, ``variance_decomposition``,
        ``case_labels``, and ``paired_comparisons`` / ``noninferiority`` when declared),
        the judge frames (with judge scores), ``verdicts`` and ``factor_effects`` (when
        the variants have two-level factors) come after the AgenticLens ones, in the
        order of :data:`RESULT_FRAMES` for an analysis and a loaded report alike.

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
        >>> list(a.frames())  # doctest: +NORMALIZE_WHITESPACE
        ['trial_summary', 'case_matrix', 'variant_summary', 'comparisons', 'factor_levels',
         'case_level_summary', 'variance_decomposition', 'case_labels', 'paired_comparisons',
         'verdicts', 'factor_effects']
        """
        found = {
            "trial_summary": self.trials,
            "case_matrix": self.cases,
            "variant_summary": self.variants,
            "comparisons": self.comparisons,
            "factor_levels": self.factor_levels,
            **self.paired_frames,
            "verdicts": self.verdicts,
            **({"factor_effects": self.factor_effects} if not self.factor_effects.empty else {}),
        }
        ordered = {name: found.pop(name) for name in RESULT_FRAMES if name in found}
        # A frame put in paired_frames by hand (no name of the list) comes last.
        return {**ordered, **found}

    def to_pandas(self, name: str) -> pd.DataFrame:
        """One result frame by name (a key of :meth:`frames`).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
        >>> a.to_pandas("variant_summary") is a.variants
        True
        >>> a.to_pandas("variants")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        agenticlens_frames.errors.InputError: name: unknown result frame 'variants' (...)
        """
        from ._suggest import require_known

        frames = self.frames()
        # A loaded report may lack a frame its analysis had: said, with why (load_report).
        missing = self.info.get("unavailable_frames", {})
        if name in missing and name not in frames:
            raise InputError(
                f"result frame {name!r} is not available: {missing[name]}", location="name"
            )
        require_known("result frame", [name], frames, location="name")
        return frames[name]

    def to_polars(self, name: str) -> Any:
        """One result frame as a polars DataFrame, through Arrow (``pip install
        'agenticlens-frames[polars]'``).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
        >>> a.to_polars("variant_summary").height  # doctest: +SKIP
        5
        """
        import pyarrow as pa

        from .frames import arrow_to_polars

        frame = self.to_pandas(name)
        return arrow_to_polars(pa.Table.from_pandas(frame, preserve_index=False))

    def __repr__(self) -> str:
        from ._repr import analysis_repr

        return analysis_repr(self, *self._lead_said())

    def _lead_said(self) -> tuple[str | None, tuple[bool, str, list[str]] | None]:
        """What a one-line display says before the verdicts: the early stop's reason (None
        in a run no rule watched) and the gates (:meth:`_gate_said`). Read by this repr and
        by ``ExperimentResult``'s, which lead alike."""
        from .early_stopping import early_stopping, sequence_leads

        # In a run the rule watched (stopped early or not) the stopping decision leads, as
        # on every other surface; a failed gate then comes before the verdicts.
        reason = str(early_stopping(self)["reason"]) if sequence_leads(self) else None
        return reason, self._gate_said()

    def _gate_said(self) -> tuple[bool, str, list[str]] | None:
        """The non-inferiority gates in the console's words (passed, headline, one line
        per row), or None without gates: both notebook displays say them."""
        from .paired.gate import gate_statement

        frames = self.paired_frames or {}
        gate = frames.get("noninferiority")
        if gate is None:
            return None
        return gate_statement(gate, frames.get("paired_comparisons"), every=True)

    def _repr_html_(self) -> str:
        from ._repr import analysis_repr_html
        from .early_stopping import (
            descriptive_title,
            sequence_leads,
            stopped_early,
            stopping_section_html,
        )
        from .paired.verdicts import omitted_statement

        headline = self.pass_rates
        # In a run the rule watched (stopped early or not) the stopping decision is the
        # inferential statement: it leads, in the page's section, and the fixed-sample
        # verdicts under it are titled descriptive, as on every other surface.
        stopped = (
            (
                stopping_section_html(self),
                descriptive_title(
                    "Verdicts against the baseline (case-level)", stopped_early(self)
                ),
            )
            if sequence_leads(self)
            else None
        )
        return analysis_repr_html(
            self,
            headline if len(headline) else None,
            omitted_statement(self.verdicts),
            stopped,
            # The non-inferiority gates (a failed one leads the verdicts): the display
            # said nothing of a gate that blocks shipping.
            self._gate_said(),
            judge_verdict_note(self),
        )


def require_analysis(value: Any, function: str) -> ExperimentAnalysis:
    """``value`` when it is an analysis; otherwise an InputError naming ``function``, what
    it got and what to pass instead.

    The report writers read ``analysis.info`` / ``analysis.run`` first: a run passed where
    the analysis belongs (the commonest slip: ``write_json_report(run, ...)``) failed with an
    AttributeError that named neither the argument nor :func:`analyze`.

    Examples
    --------
    >>> require_analysis("report.json", "write_html_report")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: analysis: write_html_report() takes an
    ExperimentAnalysis, got str 'report.json' (...)
    """
    if isinstance(value, ExperimentAnalysis) or (
        hasattr(value, "info") and hasattr(value, "verdicts") and hasattr(value, "variants")
    ):
        return value  # type: ignore[no-any-return]
    if isinstance(value, ExperimentRun) or isinstance(getattr(value, "run", None), ExperimentRun):
        rest = ", path" if function.startswith("write_") else ""
        hint = f"analyse it first: {function}(alf.analyze(run){rest})"
    elif isinstance(value, (str, Path)):
        hint = "for a saved JSON report, pass alf.load_report(path)"
    else:
        hint = "pass alf.analyze(run) or alf.load_report(path)"
    raise InputError(
        f"{function}() takes an ExperimentAnalysis, got {type(value).__name__}"
        + (f" {str(value)!r}" if isinstance(value, (str, Path)) else ""),
        location="analysis",
        hint=hint,
    )


def _as_run(value: Any) -> ExperimentRun:
    """The run of ``value``: itself, or the ``.run`` of what :func:`~agenticlens_frames.api.run`
    and the live runner return; anything else refused naming what to pass
    (:func:`~agenticlens_frames.frames.require_run`)."""
    inner = getattr(value, "run", None)
    return inner if isinstance(inner, ExperimentRun) else require_run(value, "analyze")


@renamed_keywords(frontier_resamples="frontier_n_resamples")
def analyze(
    run: ExperimentRun,
    *,
    confidence_level: float = 0.95,
    regression_threshold: float = 0.05,
    pass_k: Sequence[int] | None = None,
    latency_missing: LatencyPolicy = "exclude",
    comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
    comparisons_lock: str | None = None,
    frontier_n_resamples: int = 2000,
    frontier_seed: int | None = 0,
    correction: str | None = None,
) -> ExperimentAnalysis:
    """Compute every result frame of an experiment (spec §9).

    Parameters
    ----------
    run
        From :func:`~agenticlens_frames.load_experiment`, :func:`~agenticlens_frames.read_parquet`
        or a live run (what :func:`~agenticlens_frames.api.run` returns is taken too).
    confidence_level
        For the normal and Wilson intervals and the significance flag.
    regression_threshold
        Relative for the four metric deltas, absolute for per-case regressions (as the
        package does).
    pass_k
        The k values (default: the manifest's effective list).
    latency_missing
        ``"exclude"`` (default, fix B3) or ``"zero"`` (the package's numbers).
    comparisons
        Paired-comparison settings (a :class:`~agenticlens_frames.ComparisonsConfig` or a
        mapping such as ``{"correction": "holm"}``); None takes the manifest's
        ``comparisons:``. Settings that decide significance and that the manifest fixed
        (correction, alpha, method, family, cluster, evaluators, non-inferiority,
        resamples, seed) cannot be changed here: a contradicting value is refused.
    comparisons_lock
        A lock file (``experiment run --comparisons-lock``): created on first use; any
        later change of the settings it records is refused.
    correction
        Shorthand for ``comparisons={"correction": correction}`` (as ``viz`` and
        ``explore`` take it); not with ``comparisons``.
    frontier_n_resamples, frontier_seed
        Case-bootstrap resamples and seed of the frontier probabilities (``p_frontier``,
        ``p_best_*`` in ``variants``; see :func:`~agenticlens_frames.frontier_uncertainty`,
        whose ``n_resamples`` and ``seed`` they are); 0 resamples leaves them out. With a
        declared ``cluster`` the bootstrap draws the clusters of cases instead of cases.
        ``frontier_n_resamples`` was ``frontier_resamples``, still accepted with a
        ``FutureWarning``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> result = analyze(load_experiment("data/support/manifest.yaml",
    ...                                  "data/support/suite.yaml"))
    >>> set(result.pareto_frontier) <= set(result.variants["variant_id"].astype(str))
    True
    """
    run = _as_run(run)
    if correction is not None:
        if comparisons is not None:
            raise InputError(
                "give either correction= or comparisons=, not both",
                location="correction",
                hint="put the correction inside comparisons: {'correction': ...}",
            )
        comparisons = {"correction": correction}
    _check_confidence(confidence_level)
    if run.attempts.empty:
        raise InputError(
            "the run has no finished trial to analyse",
            hint="finish the run first (experiment run --run-dir DIR resumes it)",
        )
    threshold = check_number(
        regression_threshold, "regression threshold", location="regression_threshold"
    )
    if not threshold >= 0:
        raise InputError(
            f"regression threshold must be ≥ 0, got {regression_threshold}",
            location="regression_threshold",
        )
    # The manifest's declaration, given settings only where they agree or it left one
    # open: a correction chosen after the run is refused (before any work) as on the
    # command line.
    comparisons = run_comparisons(run, comparisons)
    ks = effective_pass_k(run, pass_k)
    ts = trial_summary(run, latency_missing=latency_missing)
    cm = case_matrix(run, ks)
    vs = variant_summary(
        run,
        confidence_level=confidence_level,
        pass_k=ks,
        latency_missing=latency_missing,
        trials=ts,
        cases=cm,
    )
    # 0 turns the frontier bootstrap off (checked here: frontier_uncertainty names its own
    # keyword, n_resamples, and a negative count was read as on).
    frontier_n_resamples = check_count(
        frontier_n_resamples, "frontier_n_resamples", location="frontier_n_resamples", minimum=0
    )
    if frontier_n_resamples:
        from .frontier import frontier_uncertainty, merge_frontier_columns

        fu = frontier_uncertainty(
            run,
            n_resamples=frontier_n_resamples,
            seed=frontier_seed,
            confidence_level=confidence_level,
            latency_missing=latency_missing,
            # Declared clusters of cases are resampled whole, as the verdicts treat them.
            cluster=comparisons.cluster if comparisons is not None else None,
        )
        # The bootstrap settings travel with the summary, in attrs["frontier"].
        vs = merge_frontier_columns(vs, fu, dict(fu.attrs))
    comps = compare_to_baseline(
        run,
        vs,
        cm,
        confidence_level=confidence_level,
        regression_threshold=regression_threshold,
    )
    paired_frames, paired, verdicts = paired_outputs_and_verdicts(
        run, comparisons, confidence_level=confidence_level, lock=comparisons_lock
    )
    from .factorial import factor_effects

    effects = factor_effects(
        run,
        correction=comparisons.correction if comparisons is not None else None,
        confidence_level=confidence_level,
        cluster=comparisons.cluster if comparisons is not None else None,
    )
    # Judge noise (new frames and report key, only when the run has judge scores).
    from .judge_noise import judge_noise_outputs

    noise_frames, noise_block = judge_noise_outputs(run, confidence_level=confidence_level)
    paired_frames = {**paired_frames, **noise_frames}
    return ExperimentAnalysis(
        factor_effects=effects,
        judge_noise=noise_block.get("judge_noise", {}),
        paired=paired,
        paired_frames=paired_frames,
        verdicts=verdicts,
        run=run,
        confidence_level=confidence_level,
        regression_threshold=regression_threshold,
        pass_k=ks,
        latency_missing=latency_missing,
        trials=ts,
        cases=cm,
        variants=vs,
        comparisons=comps,
        factor_levels=factor_levels(run, vs),
        pareto_frontier=[str(v) for v in vs.loc[vs["pareto_optimal"], "variant_id"]],
        warnings=report_warnings(run, vs, comps),
        info=run_info(run),
        # A live run stopped by its rule (or run under one) carries its stopping block: the
        # one place every surface (notebook display, viz, explorer, reports) reads it from,
        # so the stopping decision leads and the fixed-sample verdicts read as descriptive.
        # (A copy: the analysis is the caller's to edit, the run's record is not.)
        extras={
            **(
                {"early_stopping": copy.deepcopy(run.stopping)}
                if getattr(run, "stopping", None) is not None
                else {}
            ),
            # What the judges of failed trials cost (not in the tables): the cost lines'.
            **(
                {"judge_spend_failed_trials": copy.deepcopy(spend)}
                if (spend := getattr(run, "judge_spend_failed_trials", None))
                else {}
            ),
        },
    )


def warm_imports() -> None:
    """Import now what :func:`analyze` imports on its first use: scipy.special, for the
    case-level intervals' t quantile (``stats_paired._t_quantile``). Its array-API layer
    touches every numpy submodule (0.1–0.25 s), so ``experiment run`` calls this while
    it waits for its forked replay workers, when this process would otherwise idle.

    Examples
    --------
    >>> warm_imports()
    """
    import scipy.special  # noqa: F401  (the import is the point)


def _empty_verdicts() -> pd.DataFrame:
    from .paired.verdicts import empty_verdicts

    return empty_verdicts()


def run_info(run: ExperimentRun) -> dict[str, Any]:
    """The experiment-level facts renderers need, from the run's specs and trials."""
    m, s = run.manifest, run.suite
    t = run.trials.sort_values("execution_position")
    return {
        "experiment_name": m.name,
        "experiment_version": m.version,
        "suite_name": s.name,
        "suite_version": s.version,
        "baseline_variant_id": m.baseline_variant_id,
        "trial_count": m.trial_count,
        "random_seed": m.random_seed,
        "minimum_trials": m.minimum_trials,
        "execution_order": list(
            zip(t["variant_id"].astype(str), t["trial"].astype(int).tolist(), strict=True)
        ),
        "case_ids": list(s.case_ids),
    }
