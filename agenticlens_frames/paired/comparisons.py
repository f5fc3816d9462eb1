"""Paired comparisons of every candidate with the baseline, per evaluator, corrected.

Two variants are compared case by case over the cases both scored; the estimators live in
:mod:`agenticlens_frames.stats_paired`, the methods are named in :mod:`.methods`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import stats_paired
from .._choices import METHODS
from .._deprecate import renamed_keywords
from .._values import format_in_unit, format_power
from ..errors import InputError
from ..frames import ExperimentRun, require_run
from .dimensions import (
    BOUNDED_UNITS,
    Evaluation,
    cluster_labels,
    evaluate,
    unevaluated_per_variant,
)
from .gate import noninferiority_gate
from .lock import comparison_fingerprint, enforce_lock
from .settings import (
    DIMENSIONS,
    ComparisonsConfig,
    GuardRails,
    check_guard_rails,
    evaluator_plan,
    resolve_comparisons,
)

__all__ = [
    "PAIRED_COLUMNS",
    "SMALL_SAMPLE",
    "PairedAnalysis",
    "paired_analysis",
    "paired_comparisons",
]

#: Columns of :func:`paired_comparisons`, in order.
PAIRED_COLUMNS = [
    "baseline_variant_id",
    "candidate_variant_id",
    "dimension",
    "evaluator",
    "evaluator_version",
    "higher_is_better",
    "unit",
    "paired_items",
    "baseline_only_items",
    "candidate_only_items",
    "baseline_mean",
    "candidate_mean",
    "mean_difference",
    "standard_deviation",
    "standard_error",
    "df",
    "ci_low",
    "ci_high",
    "confidence_level",
    "ci_method",
    "p_value",
    "p_value_method",
    "adjusted_p_value",
    "significant",
    "correction",
    "alpha",
    "family",
    "family_size",
    "correction_controls",
    "small_sample",
    "degenerate",
    "n_clusters",
    "improved_items",
    "regressed_items",
    "mde",
    "mde_power",
    "note",
    "unevaluated",
]

#: Fewer paired cases than this: the interval is reported and worth little.
SMALL_SAMPLE = 8


@dataclass
class PairedAnalysis:
    """Everything :func:`paired_analysis` computed, for frames and the JSON report.

    Attributes
    ----------
    comparisons
        The tidy frame (:data:`PAIRED_COLUMNS`), one row per (candidate, evaluator).
    config
        The effective settings.
    fingerprint
        What the comparison is fixed to (see :mod:`.lock`).
    evaluators
        One row per dimension: name, version, direction, unit.
    omitted
        (candidate, dimension) pairs left out, with the reason.
    guard_rails
        Counts checked against the limits.
    unevaluated
        Declared attempts without a score (per experiment).
    noninferiority
        The gate frame when a margin was declared, else None.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> result = paired_analysis(run, ComparisonsConfig(correction="holm"))
    >>> result.guard_rails, result.candidates[:2]
    ({'configurations': 5, 'evaluators': 5, 'case_scores': 1750}, ['model-large', 'prompt-v2'])
    >>> [(o["candidate_variant_id"], o["dimension"]) for o in result.omitted]
    [('retrieval-dense', 'reliability')]
    """

    comparisons: pd.DataFrame
    config: ComparisonsConfig
    fingerprint: dict[str, Any]
    evaluators: pd.DataFrame
    omitted: list[dict[str, Any]]
    guard_rails: dict[str, int]
    unevaluated: int
    noninferiority: pd.DataFrame | None = None
    candidates: list[str] = field(default_factory=list)


#: Why a (candidate, dimension) has no row when no case has a value in both arms, per
#: dimension: what makes a value unknown there.
_NO_SHARED_CASE = {
    "latency": "no case has a known latency in both arms (a missing sample, a failed call or "
    "a trace that recorded none, read as 0 ms by AgenticLens, is unknown)",
    "cost": "no case has a known cost in both arms (unpriced samples)",
    "reliability": "no case has every declared attempt evaluated in both arms (a failed trial)",
}

#: A detectable effect per unit, as the notes write it (see :func:`format_in_unit`).
_EFFECT = {"proportion": "{pp:.1f} pp", "ms": "{v:.0f} ms", "usd": "${v:.4g}", "": "{v:.3g}"}


def unbounded_mde_note(power: float, level: float) -> str:
    """Why a comparison or a plan states no minimum detectable effect at this power.

    A test at level α finds even a zero change with probability α, so a power not above
    α is met by every change: there is no smallest detectable one.

    Examples
    --------
    >>> unbounded_mde_note(0.3, 0.5)
    "no detectable-effect bound: the power asked for (30%) is not above the test's α = 0.5"
    """
    return (
        f"no detectable-effect bound: the power asked for ({format_power(power)}) "
        f"is not above the test's α = {level:.3g}"
    )


def _format_effect(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    return format_in_unit(value, unit, _EFFECT, keep_nonzero=True)


def _mde_alpha(config: ComparisonsConfig, family_size: int) -> float:
    # Bonferroni's per-test level: what Holm and BH require of the smallest p-value, so the
    # MDE is what this run was guaranteed to be able to detect under the declared correction.
    return stats_paired.per_test_alpha(config.alpha, config.correction, family_size)


def paired_analysis(
    run: ExperimentRun,
    config: ComparisonsConfig,
    *,
    lock: str | Path | None = None,
    fingerprint: bool = True,
) -> PairedAnalysis:
    """Paired comparisons of every candidate with the baseline, per evaluator.

    Parameters
    ----------
    run
        The experiment.
    config
        From :func:`~agenticlens_frames.paired.settings.resolve_comparisons` or
        :func:`~agenticlens_frames.paired.settings.parse_comparisons`.
    lock
        Optional lock file: created on first use, and any later change of correction,
        alpha, suite, evaluator versions or candidates is refused.
    fingerprint
        False skips the fingerprint (hashing the suite costs seconds on large suites) for
        a per-comparison look that fixes nothing (:func:`~agenticlens_frames.case_verdicts`
        without a declared correction); it cannot be combined with ``lock``.

    Returns
    -------
    PairedAnalysis

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> result = paired_analysis(run, ComparisonsConfig(correction="holm"))
    >>> quality = result.comparisons[result.comparisons["dimension"] == "quality"]
    >>> quality[["candidate_variant_id", "mean_difference", "adjusted_p_value"]].round(3)
      candidate_variant_id  mean_difference  adjusted_p_value
    0          model-large            0.029             1.000
    1            prompt-v2            0.157             0.635
    2      retrieval-dense            0.107             1.000
    3             large-v2            0.129             1.000
    """
    counts = check_guard_rails(run.manifest, run.suite, config)
    plan = evaluator_plan(run.manifest, run.suite, config)
    declared = set(config.evaluator_map)
    m = run.manifest
    ids = list(m.variant_ids)
    base = ids.index(m.baseline_variant_id)
    candidates = [i for i in range(len(ids)) if i != base]
    if not METHODS[config.method].clusters and config.cluster is not None:
        *others, last = (m.name for m in METHODS.values() if m.clusters)
        raise InputError(
            f"method {config.method!r} cannot use clustered cases",
            location="comparisons.cluster",
            hint=f"use method {', '.join(others)} or {last} with a cluster, or drop the cluster",
        )
    evaluations = []
    for dim, choice in plan.items():
        ev = evaluate(run, dim, choice, declared=dim in declared)
        if ev is not None:
            evaluations.append(ev)
    versions = {}
    for ev in evaluations:
        seen = sorted({v for v in ev.versions if v is not None})
        versions[ev.dimension] = (ev.name, "+".join(seen) if len(seen) == 1 else "|".join(seen))
    if not fingerprint and lock is not None:
        raise InputError("a lock needs the fingerprint", hint="drop fingerprint=False")
    fixed = (
        comparison_fingerprint(
            config,
            suite=run.suite,
            baseline=ids[base],
            candidates=[ids[c] for c in candidates],
            evaluators=versions,
        )
        if fingerprint
        else {}
    )
    if lock is not None:
        enforce_lock(lock, fixed)
    clusters = cluster_labels(run, config.cluster)
    per_variant = unevaluated_per_variant(run)
    unevaluated = int(per_variant.sum())
    # pass^1 and pass@1 are the pass rate itself: testing them beside `passed` would count
    # one comparison twice in the family (with one trial they are the reliability default).
    duplicate = {
        ev.dimension
        for ev in evaluations
        if ev.kind in ("pass_hat", "pass_at") and ev.k == 1
        and any(o.name == "passed" for o in evaluations)
    }  # fmt: skip

    rows: list[dict[str, Any]] = []
    omitted: list[dict[str, Any]] = []
    for dim_pos, ev in enumerate(evaluations):
        for cand in candidates:
            reason = None
            if ev.dimension in duplicate:
                reason = (
                    f"{ev.name} equals the pass rate (k = 1), already compared as `passed`; "
                    "not tested twice"
                )
            elif ev.versions[base] != ev.versions[cand] and None not in (
                ev.versions[base],
                ev.versions[cand],
            ):
                reason = (
                    f"evaluator versions differ: baseline {ev.versions[base]}, "
                    f"candidate {ev.versions[cand]}"
                )
            a, b = ev.values[base], ev.values[cand]
            both = ~np.isnan(a) & ~np.isnan(b)
            if reason is None and not both.any():
                reason = _NO_SHARED_CASE.get(ev.dimension, "no case has a value for both arms")
            if reason is not None:
                omitted.append(
                    {
                        "candidate_variant_id": ids[cand],
                        "dimension": ev.dimension,
                        "evaluator": ev.name,
                        "reason": reason,
                    }
                )
                continue
            row = _paired_row(
                ev,
                base,
                cand,
                ids,
                both,
                config,
                clusters,
                rng=np.random.default_rng([config.seed, cand, dim_pos]),
            )
            row["unevaluated"] = int(per_variant[base] + per_variant[cand])
            rows.append(row)
    frame = pd.DataFrame(rows, columns=PAIRED_COLUMNS)
    _apply_correction(frame, config)
    for column in ("baseline_variant_id", "candidate_variant_id"):
        frame[column] = pd.Categorical(frame[column], categories=ids)
    frame["dimension"] = pd.Categorical(frame["dimension"], categories=list(DIMENSIONS))
    for column in ("paired_items", "baseline_only_items", "candidate_only_items", "n_clusters"):
        frame[column] = frame[column].astype(np.int64)
    for column in ("improved_items", "regressed_items", "family_size", "unevaluated"):
        frame[column] = frame[column].astype(np.int64)
    frame.attrs.update(
        {
            "settings": config.settings(),
            "fingerprint": fixed,
            "omitted": omitted,
            "candidates": [ids[c] for c in candidates],
        }
    )
    evaluators = pd.DataFrame(
        [
            {
                "dimension": ev.dimension,
                "evaluator": ev.name,
                "evaluator_version": versions[ev.dimension][1],
                "kind": ev.kind,
                "higher_is_better": ev.higher_is_better,
                "binary": ev.binary,
                "unit": ev.unit,
            }
            for ev in evaluations
        ],
        columns=[
            "dimension",
            "evaluator",
            "evaluator_version",
            "kind",
            "higher_is_better",
            "binary",
            "unit",
        ],
    )
    result = PairedAnalysis(
        comparisons=frame,
        config=config,
        fingerprint=fixed,
        evaluators=evaluators,
        omitted=omitted,
        guard_rails=counts,
        unevaluated=unevaluated,
        candidates=[ids[c] for c in candidates],
    )
    if config.gates:
        result.noninferiority = noninferiority_gate(
            frame,
            margin=dict(config.gates),
            alpha=config.alpha,
            candidates=result.candidates,
            # A run an early-stopping rule watched: its pass-rate gate reads the rule's
            # anytime-valid bound (the fixed-sample one is not valid after optional stopping).
            stopping=getattr(run, "stopping", None),
        )
    return result


def _paired_row(
    ev: Evaluation,
    base: int,
    cand: int,
    ids: list[str],
    both: np.ndarray,
    config: ComparisonsConfig,
    clusters: np.ndarray | None,
    *,
    rng: np.random.Generator,
) -> dict[str, Any]:
    a, b = ev.values[base], ev.values[cand]
    d = b[both] - a[both]
    method = METHODS[config.method]
    fallback = ""
    if method.single_binary and not (
        ev.binary and np.all(ev.counts[base][both] == 1) and np.all(ev.counts[cand][both] == 1)
    ):
        fallback = f" ({method.label} needs one binary attempt per arm per case)"
        method = METHODS["t"]
    result = stats_paired.paired_difference(
        d,
        method=method.name,  # type: ignore[arg-type]
        confidence_level=config.confidence_level,
        clusters=None if clusters is None else clusters[both],
        baseline=a[both] if method.single_binary else None,
        candidate=b[both] if method.single_binary else None,
        n_resamples=config.resamples,
        rng=rng,
    )
    ci_low, ci_high = result.ci_low, result.ci_high
    if ev.unit in BOUNDED_UNITS:
        # a difference of two values in [0, 1] lies in [-1, 1]
        ci_low, ci_high = _clip_to(ci_low, -1.0, 1.0), _clip_to(ci_high, -1.0, 1.0)
    only_baseline, only_candidate, baseline_mean, candidate_mean = stats_paired.arm_coverage(a, b)
    return {
        "baseline_variant_id": ids[base],
        "candidate_variant_id": ids[cand],
        "dimension": ev.dimension,
        "evaluator": ev.name,
        "evaluator_version": ev.versions[cand] or ev.versions[base],
        "higher_is_better": ev.higher_is_better,
        "unit": ev.unit,
        "paired_items": int(both.sum()),
        "baseline_only_items": only_baseline,
        "candidate_only_items": only_candidate,
        "baseline_mean": baseline_mean,
        "candidate_mean": candidate_mean,
        "mean_difference": result.estimate,
        "standard_deviation": result.standard_deviation,
        "standard_error": result.standard_error,
        "df": result.df,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "confidence_level": config.confidence_level,
        "ci_method": result.ci_method + fallback,
        "p_value": result.p_value,
        "p_value_method": result.p_value_method + fallback,
        "adjusted_p_value": math.nan,
        "significant": None,
        "correction": config.correction,
        "alpha": config.alpha,
        "family": config.family,
        "family_size": 0,
        "correction_controls": config.controls,
        "small_sample": int(both.sum()) < SMALL_SAMPLE,
        "degenerate": result.degenerate,
        "n_clusters": result.n_clusters,
        "improved_items": result.improved if ev.higher_is_better else result.regressed,
        "regressed_items": result.regressed if ev.higher_is_better else result.improved,
        "mde": math.nan,
        "mde_power": config.power,
        "note": "",
        "unevaluated": 0,
    }


def _clip_to(value: float, low: float, high: float) -> float:
    return value if not math.isfinite(value) else min(high, max(low, value))


def _apply_correction(frame: pd.DataFrame, config: ComparisonsConfig) -> None:
    if frame.empty:
        frame["significant"] = pd.array([], dtype="boolean")
        return
    keys = frame["evaluator"] if config.family == "per_evaluator" else pd.Series("all", frame.index)
    adjusted = np.full(len(frame), np.nan)
    sizes = np.zeros(len(frame), dtype=np.int64)
    for _, index in frame.groupby(keys.to_numpy(), sort=False).groups.items():
        positions = frame.index.get_indexer(index)
        p = frame["p_value"].to_numpy(np.float64)[positions]
        adjusted[positions] = stats_paired.adjust_p_values(p, config.correction)
        sizes[positions] = int(np.sum(~np.isnan(p)))
    frame["adjusted_p_value"] = adjusted
    frame["family_size"] = sizes
    significant = pd.array(
        [None if math.isnan(p) else bool(p <= config.alpha) for p in adjusted], dtype="boolean"
    )
    frame["significant"] = significant
    mdes, notes = [], []
    for row, size, sig in zip(frame.itertuples(index=False), sizes, significant, strict=True):
        units = row.n_clusters
        level = _mde_alpha(config, int(size))
        mde = math.nan
        # A test at level α finds even a zero change with probability α: a power not above
        # it is met by every change, so there is no smallest detectable one to state.
        bound = config.power > level
        if bound and units >= 2 and math.isfinite(row.standard_error) and not row.degenerate:
            mde = stats_paired.paired_mde(
                row.standard_error * math.sqrt(units), units, level, config.power
            )
        # No difference of values in [0, 1] exceeds 1: an MDE beyond that means no
        # possible effect is detectable (the MDE does not exist; inf, null in JSON).
        beyond = row.unit in BOUNDED_UNITS and math.isfinite(mde) and mde > 1.0
        mdes.append(math.inf if beyond else mde)
        zero_width = math.isfinite(row.ci_low) and row.ci_low == row.ci_high and not row.degenerate
        if sig is pd.NA:
            note = "no test: fewer than two paired cases (or clusters)"
        elif sig:
            note = ""
        elif row.degenerate:
            note = "every case differed by the same amount; no detectable-effect bound"
        elif zero_width:  # the note starts with why (below); the MDE of a zero SE is none
            note = "no detectable-effect bound"
        elif not bound:
            note = unbounded_mde_note(config.power, level)
        elif beyond:
            note = (
                "not detectable with this design: even the largest possible change "
                f"({_format_effect(1.0, row.unit)}) has less than "
                f"{format_power(config.power)} power at α = {level:.3g}"
            )
        else:
            note = (
                f"this run could not detect effects smaller than "
                f"{_format_effect(mde, row.unit)} ({format_power(config.power)} power at "
                f"α = {level:.3g})"
            )
        if zero_width:
            alike = "zero-width interval (every cluster's mean difference equal): not certainty"
            note = "; ".join(x for x in (alike, note) if x)
        notes.append(note)
    frame["mde"] = mdes
    frame["note"] = notes


@renamed_keywords(ci_method="method", resamples="n_resamples")
def paired_comparisons(
    run: ExperimentRun,
    *,
    correction: str | None,
    alpha: float | None = None,
    confidence_level: float | None = None,
    method: str | None = None,
    evaluators: Mapping[str, str] | None = None,
    cluster: str | None = None,
    family: str | None = None,
    noninferiority_margin: float | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
    power: float | None = None,
    limits: GuardRails | None = None,
    lock: str | Path | None = None,
) -> pd.DataFrame:
    """One row per (candidate, evaluator): the paired difference against the baseline.

    The correction has no default: pass it, or pass ``correction="manifest"`` to use the
    one the manifest declares (a different explicit value is refused — it was fixed with
    the run). Other arguments left as None take the manifest's value or the default
    (alpha 0.05, confidence 0.95, ``method="t"``).

    Parameters
    ----------
    run
        The experiment.
    correction
        ``none``, ``bonferroni``, ``holm``, ``benjamini_hochberg`` or ``manifest``.
    alpha
        Level for the corrected decision ``significant = adjusted_p_value <= alpha``.
    confidence_level
        For ``ci_low`` / ``ci_high``.
    method
        The interval and test method: ``t`` (default), ``bootstrap``, ``permutation``,
        ``wilcoxon`` or ``mcnemar`` (the manifest's ``comparisons.method``). Formerly
        ``ci_method``, still accepted with a ``FutureWarning``.
    evaluators
        Dimension → evaluator name (``name@version`` pins a version); dimensions left out
        keep their defaults.
    cluster
        A case metadata field for cluster-robust (CR1) intervals.
    family
        ``all`` (default: one family) or ``per_evaluator``.
    noninferiority_margin
        Also compute the gate (``frame.attrs["noninferiority"]``).
    n_resamples, seed
        Bootstrap / Monte-Carlo permutation settings (the manifest's
        ``comparisons.resamples`` and ``seed``). ``n_resamples`` was ``resamples``, still
        accepted with a ``FutureWarning``.
    power
        For the minimum detectable effect (default 0.8).
    limits
        Guard rails, checked before any work (default: 8 configurations, 8 evaluators,
        20 000 case-scores); ``GuardRails(allow_large=True)`` lifts them.
    lock
        A lock file that fixes the settings with the run (see :func:`paired_analysis`).

    Returns
    -------
    pandas.DataFrame
        :data:`PAIRED_COLUMNS`; ``attrs`` holds ``settings``, ``fingerprint``, ``omitted``
        (comparisons without a row, with the reason), ``candidates`` (the candidate
        variant ids compared) and, with ``noninferiority_margin``, ``noninferiority``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> pc = paired_comparisons(run, correction="holm")
    >>> sorted(set(pc["dimension"].astype(str)))
    ['cost', 'latency', 'quality', 'reliability', 'safety']
    >>> row = pc.iloc[0]
    >>> str(row["candidate_variant_id"]), int(row["paired_items"]), row["correction"]
    ('model-large', 14, 'holm')
    """
    run = require_run(run, "paired_comparisons")
    config = resolve_comparisons(
        run.manifest,
        correction=correction,
        alpha=alpha,
        confidence_level=confidence_level,
        method=method,
        evaluators=evaluators,
        cluster=cluster,
        family=family,
        noninferiority_margin=noninferiority_margin,
        resamples=n_resamples,
        seed=seed,
        power=power,
        limits=limits,
    )
    result = paired_analysis(run, config, lock=lock)
    frame = result.comparisons
    if result.noninferiority is not None:
        frame.attrs["noninferiority"] = result.noninferiority
    return frame
