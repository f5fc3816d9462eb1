"""Case-level statistics as tidy frames: paired comparisons, intervals, planning, gates.

Every function takes an :class:`~agenticlens_frames.frames.ExperimentRun` and returns a
tidy :class:`pandas.DataFrame` whose columns are named after the estimand. The case is
the unit throughout: a per-case value is the mean over that case's evaluated attempts of
an evaluator's per-attempt value, and two variants are compared case by case over the
cases both scored. The estimators live in :mod:`agenticlens_frames.stats_paired`.

Evaluators (what "value" means), by name:

``passed``            the attempt passed (1/0)                       quality default
``score``             the attempt's score in [0, 1]
``pass_hat_<k>``      unbiased per-case pass^k (k attempts all pass) reliability default
``pass_at_<k>``       unbiased per-case pass@k
``latency_ms``        measured latency (lower is better)             latency default
``cost_usd``          measured cost (lower is better)                cost default
a check metric        e.g. ``forbidden_tool`` (safety default), ``contains``, or a
                      registered evaluator's name: the mean of that metric's check values
                      within the attempt
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import stats, stats_paired
from .comparisons_config import (
    DIMENSIONS,
    ComparisonsConfig,
    EvaluatorChoice,
    GuardRails,
    check_guard_rails,
    comparison_fingerprint,
    enforce_lock,
    evaluator_plan,
    resolve_comparisons,
)
from .errors import InputError
from .frames import ExperimentRun
from .stats_paired import sps  # scipy.stats, imported on first use

__all__ = [
    "PAIRED_COLUMNS",
    "PairedAnalysis",
    "case_labels",
    "case_level_block",
    "case_level_summary",
    "gate_passed",
    "minimum_detectable_effect",
    "noise_floor",
    "noninferiority_failures",
    "noninferiority_gate",
    "paired_analysis",
    "paired_comparisons",
    "paired_frames_from_block",
    "paired_outputs",
    "paired_report_block",
    "power_analysis",
    "report_blocks",
    "trials_for_precision",
    "variance_decomposition",
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

_ATTEMPT_EVALUATORS: dict[str, tuple[str, bool, bool, str]] = {
    # name: (attempts column, higher is better, binary, unit)
    "passed": ("passed", True, True, "proportion"),
    "score": ("score", True, False, "score"),
    "latency_ms": ("latency_ms", False, False, "ms"),
    "cost_usd": ("cost_usd", False, False, "usd"),
}
_MEASURED = "measured"
#: Units whose values lie in [0, 1], so a paired difference lies in [-1, 1].
_BOUNDED_UNITS = ("proportion", "score")


# --------------------------------------------------------------------------- evaluators


@dataclass(frozen=True)
class Evaluation:
    """An evaluator resolved against a run, with its per-case values.

    ``values``, ``counts`` and ``sums`` have shape (variants, cases); ``values`` is NaN
    where a case has no value. ``groups`` / ``attempt_values`` hold the per-attempt values
    (group = variant × cases + case) for variance decompositions.
    """

    dimension: str
    name: str
    kind: str
    higher_is_better: bool
    binary: bool
    unit: str
    k: int | None
    versions: tuple[str | None, ...]
    values: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    groups: np.ndarray
    attempt_values: np.ndarray

    def version(self, variant: int) -> str | None:
        return self.versions[variant]


def _available(run: ExperimentRun) -> list[str]:
    metrics = sorted({str(m) for m in run.checks["metric"].dropna().unique()})
    ks = run.manifest.effective_pass_k
    return [
        *_ATTEMPT_EVALUATORS,
        *(f"pass_hat_{k}" for k in ks),
        *(f"pass_at_{k}" for k in ks),
        *metrics,
    ]


def _parse_pass_k(name: str) -> tuple[str, int] | None:
    for prefix in ("pass_hat_", "pass_at_"):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            k = int(name[len(prefix) :])
            if k >= 1:
                return prefix[:-1], k
    return None


def _check_versions(run: ExperimentRun, mask: np.ndarray | None) -> list[str | None]:
    """Per variant: the evaluator@version set of the checks behind ``mask`` (all if None)."""
    chk = run.checks
    n_var = len(run.manifest.variants)
    codes = chk["variant_id"].cat.codes.to_numpy()
    # Work on category codes: the distinct (evaluator, version) pairs are few, the rows many.
    ev_codes = chk["evaluator"].cat.codes.to_numpy().astype(np.int64)
    ver_codes = chk["evaluator_version"].cat.codes.to_numpy().astype(np.int64)
    ev_names = [str(x) for x in chk["evaluator"].cat.categories]
    ver_names = [str(x) for x in chk["evaluator_version"].cat.categories]
    width = len(ver_names) + 1
    from .scoring import BUILTIN_EVALUATOR

    out: list[str | None] = []
    for v in range(n_var):
        sel = codes == v if mask is None else (codes == v) & mask
        keys = np.unique(ev_codes[sel] * width + (ver_codes[sel] + 1))
        pairs = sorted(
            (ev_names[int(k) // width], "nan" if k % width == 0 else ver_names[int(k) % width - 1])
            for k in keys
        )
        if not pairs:
            out.append(None)
            continue
        parts = [ver for ev, ver in pairs if ev == BUILTIN_EVALUATOR]
        parts += [f"{ev}@{ver}" for ev, ver in pairs if ev != BUILTIN_EVALUATOR]
        out.append("+".join(parts))
    return out


def _evaluate(
    run: ExperimentRun, dimension: str, choice: EvaluatorChoice | str, *, declared: bool = True
) -> Evaluation | None:
    """Resolve ``choice`` against ``run`` and compute its per-case values.

    Returns None for an undeclared (default) evaluator the run has no data for.
    """
    if isinstance(choice, str):
        choice = EvaluatorChoice.parse(choice)
    name = choice.name
    att = run.attempts
    n_var, n_case = len(run.manifest.variants), len(run.suite.cases)
    size = n_var * n_case
    evaluated = (att["status"] != "trial_failed").to_numpy()
    group = att["variant_id"].cat.codes.to_numpy(np.int64) * n_case + att["case_index"].to_numpy(
        np.int64
    )
    pass_k = _parse_pass_k(name)
    k = None
    if name in _ATTEMPT_EVALUATORS or pass_k is not None:
        if pass_k is not None:
            column, higher, binary, unit = "passed", True, False, "proportion"
            kind, k = pass_k[0], pass_k[1]
        else:
            column, higher, binary, unit = _ATTEMPT_EVALUATORS[name]
            kind = "attempt"
        y = att[column].to_numpy(np.float64)
        ok = evaluated & ~np.isnan(y)
        g, y = group[ok], y[ok]
        versions = (
            [_MEASURED] * n_var
            if column in ("latency_ms", "cost_usd")
            else _check_versions(run, None)
        )
    else:
        chk = run.checks
        mask = (chk["metric"].astype(str) == name).to_numpy() & ~chk["skipped"].to_numpy(bool)
        if not mask.any():
            if not declared:
                return None
            available = _available(run)
            from .formats._io import close_match

            match = close_match(name, available)
            raise InputError(
                f"unknown evaluator {name!r} for this run",
                location=f"comparisons.evaluators.{dimension}",
                hint=(f"did you mean {match!r}? " if match else "")
                + "available: "
                + ", ".join(available),
            )
        sub = chk.loc[mask]
        values = sub["value"].to_numpy(np.float64)
        kind, higher, unit = "check", True, "score"
        binary = bool(np.all(np.isin(values, (0.0, 1.0))))
        if binary:
            unit = "proportion"
        width = int(run.attempts["trial"].max()) + 1 if len(run.attempts) else 1
        key = (
            sub["variant_id"].cat.codes.to_numpy(np.int64) * n_case
            + sub["case_id"].cat.codes.to_numpy(np.int64)
        ) * width + sub["trial"].to_numpy(np.int64)
        keys, inverse = np.unique(key, return_inverse=True)
        per_attempt = np.bincount(inverse, weights=values) / np.bincount(inverse)
        g, y = keys // width, per_attempt
        versions = _check_versions(run, mask)
    counts = np.bincount(g, minlength=size)
    sums = np.bincount(g, weights=y, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        values_flat = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    if kind == "pass_hat":
        values_flat = stats.pass_hat_k(counts, np.rint(sums).astype(np.int64), k)
    elif kind == "pass_at":
        values_flat = stats.pass_at_k(counts, np.rint(sums).astype(np.int64), k)
    if choice.version is not None:
        wrong = sorted(
            {v for v, c in zip(versions, counts.reshape(n_var, n_case).sum(1), strict=True) if c}
            - {choice.version}
        )
        if wrong:
            raise InputError(
                f"evaluator {name!r} is pinned to version {choice.version!r} but the run "
                f"scored it with {', '.join(repr(w) for w in wrong if w)}",
                location=f"comparisons.evaluators.{dimension}",
                hint="re-score with the pinned version, or update the pin in a new "
                "experiment version",
            )
    return Evaluation(
        dimension=dimension,
        name=name,
        kind=kind,
        higher_is_better=higher,
        binary=binary,
        unit=unit,
        k=k,
        versions=tuple(versions),
        values=values_flat.reshape(n_var, n_case),
        counts=counts.reshape(n_var, n_case),
        sums=sums.reshape(n_var, n_case),
        groups=g,
        attempt_values=y,
    )


def _cluster_labels(run: ExperimentRun, field_name: str | None) -> np.ndarray | None:
    if field_name is None:
        return None
    labels: list[str] = []
    missing: list[str] = []
    for case_id, text in zip(run.suite.case_ids, run.cases["metadata"].tolist(), strict=True):
        meta = json.loads(text) if isinstance(text, str) and text else {}
        if field_name not in meta or meta[field_name] is None:
            missing.append(case_id)
            labels.append("")
        else:
            labels.append(json.dumps(meta[field_name], sort_keys=True, default=str))
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        raise InputError(
            f"{len(missing)} case(s) have no metadata field {field_name!r}: {shown}",
            location="comparisons.cluster",
            hint="add the field to every case's metadata in the suite, or cluster by another field",
        )
    return np.asarray(labels, dtype=object)


def _unevaluated(run: ExperimentRun) -> int:
    return int(_unevaluated_per_variant(run).sum())


def _unevaluated_per_variant(run: ExperimentRun) -> np.ndarray:
    """Per variant: declared attempts (trials × cases) without a score (failed trials)."""
    declared = run.manifest.trial_count * len(run.suite.cases)
    att = run.attempts
    codes = att["variant_id"].cat.codes.to_numpy(np.int64)
    evaluated = np.bincount(
        codes[(att["status"] != "trial_failed").to_numpy()], minlength=len(run.manifest.variants)
    )
    return np.maximum(0, declared - evaluated)


# --------------------------------------------------------------------------- paired


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
        What the comparison is fixed to (see :mod:`.comparisons_config`).
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


def _format_effect(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    if unit == "proportion":
        return f"{100 * value:.1f} pp"
    if unit == "ms":
        return f"{value:.0f} ms"
    if unit == "usd":
        return f"${value:.4g}"
    return f"{value:.3g}"


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
        From :func:`~agenticlens_frames.comparisons_config.resolve_comparisons` or
        :func:`~agenticlens_frames.comparisons_config.parse_comparisons`.
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
    """
    counts = check_guard_rails(run.manifest, run.suite, config)
    plan = evaluator_plan(run.manifest, run.suite, config)
    declared = set(config.evaluator_map)
    m = run.manifest
    ids = list(m.variant_ids)
    base = ids.index(m.baseline_variant_id)
    candidates = [i for i in range(len(ids)) if i != base]
    if config.method in ("wilcoxon", "mcnemar") and config.cluster is not None:
        raise InputError(
            f"method {config.method!r} cannot use clustered cases",
            location="comparisons.cluster",
            hint="use method t, bootstrap or permutation with a cluster, or drop the cluster",
        )
    evaluations = []
    for dim, choice in plan.items():
        ev = _evaluate(run, dim, choice, declared=dim in declared)
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
    clusters = _cluster_labels(run, config.cluster)
    per_variant = _unevaluated_per_variant(run)
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
                reason = "no case has a value for both arms"
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
    if config.noninferiority_margin is not None:
        result.noninferiority = noninferiority_gate(
            frame,
            margin=config.noninferiority_margin,
            dimension=config.noninferiority_dimension,
            alpha=config.alpha,
            candidates=result.candidates,
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
    method = config.method
    fallback = ""
    if method == "mcnemar" and not (
        ev.binary and np.all(ev.counts[base][both] == 1) and np.all(ev.counts[cand][both] == 1)
    ):
        method, fallback = "t", " (McNemar needs one binary attempt per arm per case)"
    if method == "wilcoxon" and clusters is not None:
        method = "t"
    result = stats_paired.paired_difference(
        d,
        method=method,  # type: ignore[arg-type]
        confidence_level=config.confidence_level,
        clusters=None if clusters is None else clusters[both],
        baseline=a[both] if method == "mcnemar" else None,
        candidate=b[both] if method == "mcnemar" else None,
        n_resamples=config.resamples,
        rng=rng,
    )
    ci_low, ci_high = result.ci_low, result.ci_high
    if ev.unit in _BOUNDED_UNITS:
        # a difference of two values in [0, 1] lies in [-1, 1]
        ci_low, ci_high = _clip_to(ci_low, -1.0, 1.0), _clip_to(ci_high, -1.0, 1.0)
    return {
        "baseline_variant_id": ids[base],
        "candidate_variant_id": ids[cand],
        "dimension": ev.dimension,
        "evaluator": ev.name,
        "evaluator_version": ev.versions[cand] or ev.versions[base],
        "higher_is_better": ev.higher_is_better,
        "unit": ev.unit,
        "paired_items": int(both.sum()),
        "baseline_only_items": int((~np.isnan(a) & np.isnan(b)).sum()),
        "candidate_only_items": int((np.isnan(a) & ~np.isnan(b)).sum()),
        "baseline_mean": float(np.mean(a[both])),
        "candidate_mean": float(np.mean(b[both])),
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
        if units >= 2 and math.isfinite(row.standard_error) and not row.degenerate:
            mde = stats_paired.paired_mde(
                row.standard_error * math.sqrt(units), units, level, config.power
            )
        # No difference of values in [0, 1] exceeds 1: an MDE beyond that means no
        # possible effect is detectable (the MDE does not exist; inf, null in JSON).
        beyond = row.unit in _BOUNDED_UNITS and math.isfinite(mde) and mde > 1.0
        mdes.append(math.inf if beyond else mde)
        zero_width = math.isfinite(row.ci_low) and row.ci_low == row.ci_high and not row.degenerate
        if sig is pd.NA:
            note = "no test: fewer than two paired cases (or clusters)"
        elif sig:
            note = ""
        elif row.degenerate:
            note = "every case differed by the same amount; no detectable-effect bound"
        elif beyond:
            note = (
                "not detectable with this design: even the largest possible change "
                f"({_format_effect(1.0, row.unit)}) has less than {config.power:.0%} power "
                f"at α = {level:.3g}"
            )
        else:
            note = (
                f"this run could not detect effects smaller than "
                f"{_format_effect(mde, row.unit)} ({config.power:.0%} power at α = {level:.3g})"
            )
        if zero_width:
            note = "; ".join(
                x for x in ("zero-width interval (every cluster sum equal): not certainty", note)
                if x
            )  # fmt: skip
        notes.append(note)
    frame["mde"] = mdes
    frame["note"] = notes


def paired_comparisons(
    run: ExperimentRun,
    *,
    correction: str | None,
    alpha: float | None = None,
    confidence_level: float | None = None,
    ci_method: str | None = None,
    evaluators: Mapping[str, str] | None = None,
    cluster: str | None = None,
    family: str | None = None,
    noninferiority_margin: float | None = None,
    resamples: int | None = None,
    seed: int | None = None,
    power: float | None = None,
    limits: GuardRails | None = None,
    lock: str | Path | None = None,
) -> pd.DataFrame:
    """One row per (candidate, evaluator): the paired difference against the baseline.

    The correction has no default: pass it, or pass ``correction="manifest"`` to use the
    one the manifest declares (a different explicit value is refused — it was fixed with
    the run). Other arguments left as None take the manifest's value or the default
    (alpha 0.05, confidence 0.95, ``ci_method="t"``).

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
    ci_method
        ``t`` (default), ``bootstrap``, ``permutation``, ``wilcoxon`` or ``mcnemar``.
    evaluators
        Dimension → evaluator name (``name@version`` pins a version); dimensions left out
        keep their defaults.
    cluster
        A case metadata field for cluster-robust (CR1) intervals.
    family
        ``all`` (default: one family) or ``per_evaluator``.
    noninferiority_margin
        Also compute the gate (``frame.attrs["noninferiority"]``).
    resamples, seed
        Bootstrap / Monte-Carlo permutation settings.
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
        :data:`PAIRED_COLUMNS`; ``attrs`` holds ``settings``, ``fingerprint``, ``omitted``.

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
    config = resolve_comparisons(
        run.manifest,
        correction=correction,
        alpha=alpha,
        confidence_level=confidence_level,
        method=ci_method,
        evaluators=evaluators,
        cluster=cluster,
        family=family,
        noninferiority_margin=noninferiority_margin,
        resamples=resamples,
        seed=seed,
        power=power,
        limits=limits,
    )
    result = paired_analysis(run, config, lock=lock)
    frame = result.comparisons
    if result.noninferiority is not None:
        frame.attrs["noninferiority"] = result.noninferiority
    return frame


# --------------------------------------------------------------------------- gate

GATE_COLUMNS = [
    "candidate_variant_id",
    "dimension",
    "evaluator",
    "mean_difference",
    "bound",
    "bound_side",
    "threshold",
    "margin",
    "alpha",
    "bound_method",
    "passed",
    "reason",
]


def noninferiority_gate(
    comparisons: pd.DataFrame,
    *,
    margin: float,
    dimension: str = "quality",
    alpha: float = 0.05,
    candidates: Sequence[str] | None = None,
) -> pd.DataFrame:
    r"""Non-inferiority gate for CI: is each candidate no worse than the baseline by δ?

    For a higher-is-better evaluator the gate passes when the one-sided lower
    :math:`1-α` confidence bound of candidate − baseline is above −δ (the TOST form: the
    lower end of a :math:`1-2α` two-sided interval). For pass rates and scores the bound
    adds two pseudo-cases, one at +1 and one at −1
    (:func:`~agenticlens_frames.stats_paired.noninferiority_bound_from_summary`), so a row
    where every case differed by the same amount (often: every attempt of both variants
    passed) keeps a positive width instead of passing on a zero-width interval; in the
    coverage grid it passes a candidate truly worse by δ = 0.05 at most 5 % of the time in
    every cell, where the plain t bound passed up to 28 %. For lower-is-better
    evaluators (latency, cost) the one-sided t upper bound must be below +δ, and a
    zero-width interval fails. ``bound_method`` names the bound. A candidate with no
    comparable row fails. Each candidate is its own decision; requiring
    all of them to pass (:func:`gate_passed`) is an intersection-union test and needs no
    multiplicity correction.

    Parameters
    ----------
    comparisons
        From :func:`paired_comparisons`.
    margin
        δ ≥ 0, in the evaluator's units (0.02 = two percentage points of pass rate).
    dimension
        Which dimension gates.
    alpha
        One-sided level.
    candidates
        Candidates that must be present (default: ``comparisons.attrs["candidates"]``).

    Returns
    -------
    pandas.DataFrame
        :data:`GATE_COLUMNS`; ``attrs["passed"]`` is True when every candidate passed.

    Examples
    --------
    >>> frame = pd.DataFrame({"candidate_variant_id": ["b"], "dimension": ["quality"],
    ...     "evaluator": ["passed"], "higher_is_better": [True], "unit": ["proportion"],
    ...     "paired_items": [100], "n_clusters": [100], "mean_difference": [0.01],
    ...     "standard_deviation": [0.1], "standard_error": [0.01], "df": [99.0]})
    >>> gate = noninferiority_gate(frame, margin=0.02)
    >>> round(float(gate.loc[0, "bound"]), 4), bool(gate.loc[0, "passed"])
    (-0.0183, True)
    """
    if not margin >= 0:
        raise InputError(f"the margin must be >= 0, got {margin!r}", location="margin")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, got {alpha!r}", location="alpha")
    rows = comparisons[comparisons["dimension"].astype(str) == dimension]
    wanted = list(candidates if candidates is not None else comparisons.attrs.get("candidates", []))
    for cand in rows["candidate_variant_id"].astype(str):
        if cand not in wanted:
            wanted.append(cand)
    out = []
    for cand in wanted:
        match = rows[rows["candidate_variant_id"].astype(str) == cand]
        if match.empty:
            out.append(
                dict.fromkeys(GATE_COLUMNS, math.nan)
                | {
                    "candidate_variant_id": cand,
                    "dimension": dimension,
                    "evaluator": None,
                    "bound_side": None,
                    "bound_method": None,
                    "margin": margin,
                    "alpha": alpha,
                    "passed": False,
                    "reason": f"no comparable {dimension} scores for this candidate",
                }
            )
            continue
        row = match.iloc[0]
        higher = bool(row["higher_is_better"])
        est = float(row["mean_difference"])
        threshold = -margin if higher else margin
        bound, method, problem = _gate_bound(row, alpha, higher)
        if problem:
            passed, reason = False, problem
        else:
            passed = bound > threshold if higher else bound < threshold
            side = "lower" if higher else "upper"
            relations = {(True, True): ">", (True, False): "<=", (False, True): "<"}
            relation = relations.get((higher, passed), ">=")
            reason = f"{side} {1 - alpha:.0%} bound {bound:+.4g} {relation} {threshold:+.4g}"
        out.append(
            {
                "candidate_variant_id": cand,
                "dimension": dimension,
                "evaluator": row["evaluator"],
                "mean_difference": est,
                "bound": bound,
                "bound_side": "lower" if higher else "upper",
                "threshold": threshold,
                "margin": margin,
                "alpha": alpha,
                "bound_method": method,
                "passed": bool(passed),
                "reason": reason,
            }
        )
    gate = pd.DataFrame(out, columns=GATE_COLUMNS)
    gate.attrs["passed"] = bool(len(gate)) and bool(gate["passed"].all())
    return gate


def _gate_bound(row: pd.Series, alpha: float, higher: bool) -> tuple[float, str | None, str]:
    """The gate's one-sided bound for one comparison row: (bound, method, problem).

    Bounded evaluators (pass rates, scores): the pseudo-case bound of
    :func:`~agenticlens_frames.stats_paired.noninferiority_bound_from_summary`, which keeps
    a positive width when every case differed by the same amount; with clustered cases
    the more cautious of it and the CR1 t bound. Unbounded ones (latency, cost): the
    one-sided t bound, refused when its interval has zero width.
    """
    se, df, est = float(row["standard_error"]), float(row["df"]), float(row["mean_difference"])
    n = int(row["paired_items"]) if "paired_items" in row and pd.notna(row["paired_items"]) else 0
    sign = 1.0 if higher else -1.0
    t_bound = math.nan
    if math.isfinite(se) and math.isfinite(df) and se > 0:
        t_bound = est - sign * float(sps.t.ppf(1 - alpha, df)) * se
    if row.get("unit") in _BOUNDED_UNITS and n >= 1:
        sd = float(row["standard_deviation"])
        # for a lower-is-better evaluator bound −d from below, then flip back
        pseudo = sign * float(
            stats_paired.noninferiority_bound_from_summary(n, sign * est, sd, alpha)
        )
        method = f"two pseudo-cases (+1, -1), one-sided t (df={n + 1}) (Bonett-Price type)"
        clusters = int(row["n_clusters"]) if "n_clusters" in row else n
        if clusters < n and math.isfinite(t_bound):
            pseudo = min(pseudo, t_bound) if higher else max(pseudo, t_bound)
            method += f"; with CR1 t (df={df:g}) when more cautious"
        return pseudo, method, ""
    if not (math.isfinite(se) and math.isfinite(df)):
        return math.nan, None, "no interval: fewer than two paired cases"
    if se == 0:
        return (
            math.nan,
            None,
            "no bound: every case differed by the same amount (a zero-width interval is "
            "not certainty)",
        )
    return t_bound, f"one-sided t (df={df:g})", ""


def gate_passed(gate: pd.DataFrame) -> bool:
    """Whether every candidate passed the non-inferiority gate."""
    return bool(len(gate)) and bool(gate["passed"].astype(bool).all())


def noninferiority_failures(blocks: Mapping[str, Any]) -> list[str] | None:
    """Candidates that failed the gate in report ``blocks`` (None when no gate was set).

    For the command line's exit status 5.

    Examples
    --------
    >>> noninferiority_failures({"case_level": {}}) is None
    True
    >>> noninferiority_failures({"paired_comparisons": {"noninferiority": {"passed": False,
    ...     "candidates": [{"candidate_variant_id": "b", "passed": False}]}}})
    ['b']
    """
    paired = blocks.get("paired_comparisons")
    gate = paired.get("noninferiority") if isinstance(paired, Mapping) else None
    if not gate:
        return None
    return [str(c["candidate_variant_id"]) for c in gate["candidates"] if not c["passed"]]


# --------------------------------------------------------------------------- case level


def _evaluation(run: ExperimentRun, evaluator: str) -> Evaluation:
    ev = _evaluate(run, "quality", evaluator)
    assert ev is not None
    return ev


def case_level_summary(
    run: ExperimentRun,
    *,
    confidence_level: float = 0.95,
    evaluator: str = "passed",
    cluster: str | None = None,
    ks: Sequence[int] | None = None,
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
    ev = _evaluation(run, evaluator)
    ids = list(run.manifest.variant_ids)
    n_case = len(run.suite.cases)
    clusters = _cluster_labels(run, cluster)
    ks = tuple(sorted({int(k) for k in ks})) if ks is not None else run.manifest.effective_pass_k
    rows: list[dict[str, Any]] = []
    bounded = ev.unit in _BOUNDED_UNITS
    recommended = "beta_binomial" if ev.binary and cluster is None else "cr1"
    by = "case" if cluster is None else f"metadata field {cluster!r}"

    def add(variant: str, estimand: str, k: int | None, method: str, **values: Any) -> None:
        zero_width = method in ("t_case_means", "cr1") and (
            math.isfinite(values["ci_low"]) and values["ci_low"] == values["ci_high"]
        )
        note = values.pop("note")
        if zero_width:
            note += "; zero-width interval: every unit had the same value (not certainty)"
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

    def case_interval(values: np.ndarray, present: np.ndarray) -> stats_paired.MeanInterval:
        # per-case values: a t interval over cases, or CR1 over the declared clusters
        if clusters is None:
            return stats_paired.t_interval(values, confidence_level)
        return stats_paired.cluster_robust_interval(values, clusters[present], confidence_level)

    for v, vid in enumerate(ids):
        sel = (ev.groups // n_case) == v
        cases = ev.groups[sel] % n_case
        y = ev.attempt_values[sel]
        present = ev.counts[v] > 0
        case_values = (ev.sums[v] / np.maximum(ev.counts[v], 1))[present]
        n_cases = int(present.sum())
        vc = stats_paired.variance_components(y, cases) if len(y) else None
        common = {
            "n_cases": n_cases,
            "n_attempts": len(y),
            "design_effect": vc.design_effect if vc else math.nan,
            "effective_n": vc.effective_n if vc else math.nan,
        }
        t = case_interval(case_values, present)
        add(
            vid,
            "mean",
            None,
            "t_case_means",
            estimate=t.estimate,
            standard_error=t.standard_error,
            ci_low=_clip(t.ci_low, bounded, low=True),
            ci_high=_clip(t.ci_high, bounded, low=False),
            df=t.df,
            n_clusters=t.n_units,
            note="case-weighted mean; "
            + ("cases are the units" if cluster is None else f"CR1 clustered by {by}"),
            **common,
        )
        labels = cases if clusters is None else clusters[cases]
        cr = stats_paired.cluster_robust_interval(y, labels, confidence_level)
        add(
            vid,
            "mean",
            None,
            "cr1",
            estimate=cr.estimate,
            standard_error=cr.standard_error,
            ci_low=_clip(cr.ci_low, bounded, low=True),
            ci_high=_clip(cr.ci_high, bounded, low=False),
            df=cr.df,
            n_clusters=cr.n_units,
            note=f"trial-weighted mean; CR1 clustered by {by}"
            + (" (recommended)" if recommended == "cr1" else ""),
            **common,
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
                    df=float(n_cases - 1),
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
    columns = [
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
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame["variant_id"] = pd.Categorical(frame["variant_id"], categories=ids)
    frame["k"] = frame["k"].astype("Int64")
    frame["recommended"] = frame["recommended"].astype(bool)
    frame["zero_width"] = frame["zero_width"].astype(bool)
    return frame


def _clip_to(value: float, low: float, high: float) -> float:
    return value if not math.isfinite(value) else min(high, max(low, value))


def _clip(value: float, bounded: bool, *, low: bool) -> float:
    if not bounded or not math.isfinite(value):
        return value
    return max(0.0, value) if low else min(1.0, value)


def variance_decomposition(
    run: ExperimentRun, *, evaluator: str = "passed", confidence_level: float = 0.95
) -> pd.DataFrame:
    """Per variant: within / between case variance, ICC, design effect, effective n.

    The ICC is NaN where it is not estimable, and ``note`` says why (the design effect
    then uses the conservative bound ICC = 1). Also the naive standard error (attempts as
    independent), the case-level one, their ratio, the instability (mean within-case SD),
    the share of flaky cases (binary evaluators: some attempts passed and some failed),
    and the two-run noise floors.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> vd = variance_decomposition(run)
    >>> bool((vd["design_effect"] >= 1).all())
    True
    """
    ev = _evaluation(run, evaluator)
    ids = list(run.manifest.variant_ids)
    n_case = len(run.suite.cases)
    rows = []
    for v, vid in enumerate(ids):
        sel = (ev.groups // n_case) == v
        cases = ev.groups[sel] % n_case
        y = ev.attempt_values[sel]
        vc = stats_paired.variance_components(y, cases)
        present = ev.counts[v] > 0
        means = (ev.sums[v] / np.maximum(ev.counts[v], 1))[present]
        n = int(present.sum())
        naive = float(np.std(y, ddof=1) / math.sqrt(len(y))) if len(y) > 1 else math.nan
        case_se = float(np.std(means, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        counts = ev.counts[v][present]
        within_sd = _within_sd(y, cases, n_case)[present]
        flaky = math.nan
        if ev.binary:
            sums = ev.sums[v][present]
            flaky = float(np.mean((sums > 0) & (sums < counts))) if n else math.nan
        trials = max(1, round(vc.mean_attempts)) if n else 1
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
                "standard_error_ratio": case_se / naive if naive and naive > 0 else math.nan,
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


def _within_sd(y: np.ndarray, cases: np.ndarray, n_case: int) -> np.ndarray:
    counts = np.bincount(cases, minlength=n_case)
    sums = np.bincount(cases, weights=y, minlength=n_case)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
        resid = y - means[cases]
        ss = np.bincount(cases, weights=resid * resid, minlength=n_case)
        return np.where(counts > 1, np.sqrt(ss / (counts - 1)), np.nan)


def noise_floor(
    run: ExperimentRun,
    *,
    evaluator: str = "passed",
    confidence_level: float = 0.95,
    trials: int | None = None,
) -> pd.DataFrame:
    r"""Per variant: how far two runs of the same configuration drift apart by chance.

    :math:`z\sqrt{2\hat σ_w^2/(nK)}` over the same n cases with K attempts per case
    (``trials``; default 1 and the run's own K). A difference between two variants below
    this floor is indistinguishable from re-running one of them.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> nf = noise_floor(run, trials=1)
    >>> list(nf.columns)[:4]
    ['variant_id', 'evaluator', 'within_variance', 'n_cases']
    """
    vd = variance_decomposition(run, evaluator=evaluator, confidence_level=confidence_level)
    out = vd[["variant_id", "evaluator", "within_variance", "n_cases"]].copy()
    k = vd["noise_floor_trials"] if trials is None else pd.Series(trials, index=vd.index)
    out["trials"] = k.astype(np.int64)
    out["noise_floor"] = [
        stats_paired.noise_floor(w, n, t, confidence_level)
        for w, n, t in zip(out["within_variance"], out["n_cases"], out["trials"], strict=True)
    ]
    out["confidence_level"] = confidence_level
    return out


def case_labels(
    run: ExperimentRun,
    *,
    evaluator: str = "passed",
    interval: str = "wilson",
    confidence_level: float = 0.95,
    pass_threshold: float = 0.5,
    fail_threshold: float = 0.5,
) -> pd.DataFrame:
    """Per (variant, case): the pass rate, its interval and a stability label.

    ``stable_pass`` when the interval's lower bound is at least ``pass_threshold``;
    ``stable_fail`` when its upper bound is at most ``fail_threshold``; otherwise
    ``flaky`` when some attempts passed and some failed, and ``undetermined`` when they
    agree but are too few to say (one attempt never decides). The interval is Wilson or
    Jeffreys on the case's own attempts, valid when attempts are independent draws.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> labels = case_labels(run)
    >>> sorted(set(labels["label"])) <= ["flaky", "stable_fail", "stable_pass", "undetermined"]
    True
    """
    if interval not in ("wilson", "jeffreys"):
        raise InputError(
            f"interval must be 'wilson' or 'jeffreys', got {interval!r}", location="interval"
        )
    ev = _evaluation(run, evaluator)
    if not ev.binary:
        raise InputError(
            f"evaluator {evaluator!r} is not pass/fail; stability labels need a binary one",
            location="evaluator",
            hint="use passed or a pass/fail check metric",
        )
    ids = list(run.manifest.variant_ids)
    cases = list(run.suite.case_ids)
    n = ev.counts.ravel()
    x = np.rint(ev.sums.ravel()).astype(np.int64)
    if interval == "wilson":
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
            "interval": interval,
            "confidence_level": confidence_level,
            "flipped": flipped,
            "label": label,
        }
    )
    return frame


# --------------------------------------------------------------------------- planning


def _pair_parts(ev: Evaluation, base: int, cand: int) -> dict[str, float]:
    """Pilot estimates for one candidate: Var(d), ω², σ_A², σ_B², mean attempts."""
    n_case = ev.values.shape[1]
    both = ~np.isnan(ev.values[base]) & ~np.isnan(ev.values[cand])
    d = ev.values[cand][both] - ev.values[base][both]
    parts: dict[str, float] = {"paired_items": int(both.sum())}
    parts["sd_difference"] = float(np.std(d, ddof=1)) if len(d) > 1 else math.nan
    for label, v in (("baseline", base), ("candidate", cand)):
        sel = ev.groups // n_case == v
        cases = ev.groups[sel] % n_case
        keep = both[cases]
        vc = stats_paired.variance_components(ev.attempt_values[sel][keep], cases[keep])
        parts[f"within_variance_{label}"] = vc.within_variance
        parts[f"trials_{label}"] = vc.mean_attempts
    noise = 0.0
    for label, v in (("baseline", base), ("candidate", cand)):
        k = ev.counts[v][both]
        w = parts[f"within_variance_{label}"]
        noise += float(np.mean(w / k)) if len(k) and math.isfinite(w) else 0.0
    var_d = parts["sd_difference"] ** 2
    parts["between_difference_variance"] = (
        max(0.0, var_d - noise) if math.isfinite(var_d) else math.nan
    )
    return parts


def power_analysis(
    run: ExperimentRun,
    *,
    effect: float | None = None,
    alpha: float | None = None,
    power: float = 0.8,
    evaluator: str = "passed",
    trials: int | None = None,
    n_cases: int | None = None,
    family_size: int | None = None,
    distribution: str = "t",
    correction: str | None = None,
) -> pd.DataFrame:
    r"""Power, cases needed and minimum detectable effect for a paired design, from a pilot.

    The pilot (this run) gives, per candidate, the variance of per-case differences and
    its parts (Miller 2024): :math:`ω^2` (between cases) and the within-case variances
    :math:`σ_A^2, σ_B^2`. With K planned attempts per case and arm,
    :math:`σ_d^2 = ω^2 + σ_A^2/K + σ_B^2/K` (the pilot's own :math:`\operatorname{Var}(d)`
    when K is the pilot's).

    Tests are planned at the per-test level the analysis will use
    (:func:`~agenticlens_frames.stats_paired.per_test_alpha`: α / family size for
    Bonferroni, Holm and Benjamini–Hochberg, α for ``none``). When the manifest declares
    ``comparisons:``, α, the correction and the family size default to exactly what
    :func:`paired_comparisons` uses for this run, so a planned MDE is the one the
    analysis reports; otherwise α = 0.05 over a family of the candidates (Bonferroni).

    Returns
    -------
    pandas.DataFrame
        Per candidate: pilot estimates, ``planned_trials``, ``planned_cases``,
        ``planned_sd``, ``alpha_per_test``, ``mde``, and with ``effect``: ``power`` at
        the planned size and ``cases_needed`` for the target power.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> pa = power_analysis(run, effect=0.1)
    >>> bool((pa["cases_needed"] > 0).all())
    True
    """
    if distribution not in ("t", "normal"):
        raise InputError("distribution must be 't' or 'normal'", location="distribution")
    ev = _evaluation(run, evaluator)
    ids = list(run.manifest.variant_ids)
    base = ids.index(run.manifest.baseline_variant_id)
    candidates = [i for i in range(len(ids)) if i != base]
    alpha, correction, m = _planned_family(run, ev.name, alpha, correction, family_size)
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise InputError("alpha and power must be between 0 and 1", location="alpha")
    if m < 1:
        raise InputError(f"family_size must be >= 1, got {m}", location="family_size")
    level = stats_paired.per_test_alpha(alpha, correction, m)
    rows = []
    for cand in candidates:
        parts = _pair_parts(ev, base, cand)
        pilot_k = (parts["trials_baseline"] + parts["trials_candidate"]) / 2
        k = trials if trials is not None else None
        if k is None:
            sd = parts["sd_difference"]
            planned_k = pilot_k
        else:
            wa = parts["within_variance_baseline"]
            wb = parts["within_variance_candidate"]
            wa = 0.0 if not math.isfinite(wa) else wa
            wb = 0.0 if not math.isfinite(wb) else wb
            sd = math.sqrt(parts["between_difference_variance"] + (wa + wb) / k)
            planned_k = float(k)
        n = n_cases if n_cases is not None else int(parts["paired_items"])
        row = {
            "baseline_variant_id": ids[base],
            "candidate_variant_id": ids[cand],
            "evaluator": ev.name,
            **parts,
            "planned_trials": planned_k,
            "planned_cases": n,
            "planned_sd": sd,
            "alpha": alpha,
            "correction": correction,
            "family_size": m,
            "alpha_per_test": level,
            "target_power": power,
            "distribution": distribution,
            "mde": stats_paired.paired_mde(sd, n, level, power, distribution=distribution),
            "effect": math.nan if effect is None else float(effect),
            "power": math.nan,
            "cases_needed": pd.NA,
        }
        if effect is not None:
            row["power"] = stats_paired.paired_power(
                effect, sd, n, level, distribution=distribution
            )
            needed = stats_paired.paired_sample_size(
                effect, sd, level, power, distribution=distribution
            )
            row["cases_needed"] = pd.NA if needed is None else needed
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["cases_needed"] = frame["cases_needed"].astype("Int64")
    for column in ("baseline_variant_id", "candidate_variant_id"):
        frame[column] = pd.Categorical(frame[column], categories=ids)
    return frame


def _planned_family(
    run: ExperimentRun,
    evaluator: str,
    alpha: float | None,
    correction: str | None,
    family_size: int | None,
) -> tuple[float, str, int]:
    """α, correction and family size for planning: the analysis's own when declared."""
    from .comparisons_config import parse_comparisons

    manifest = run.manifest
    if family_size is None and parse_comparisons(manifest.comparisons, file=manifest.path):
        # an α or correction that contradicts the manifest is refused, as in the analysis
        config = resolve_comparisons(
            manifest, correction="manifest" if correction is None else correction, alpha=alpha
        )
        frame = paired_analysis(run, config).comparisons
        if config.family == "per_evaluator":
            frame = frame[frame["evaluator"] == evaluator]
        size = int(frame["family_size"].max()) if len(frame) else 1
        return config.alpha, config.correction, max(size, 1)
    candidates = len(run.manifest.variants) - 1
    return (
        0.05 if alpha is None else alpha,
        "bonferroni" if correction is None else correction,
        candidates if family_size is None else family_size,
    )


def minimum_detectable_effect(
    run: ExperimentRun,
    *,
    alpha: float | None = None,
    power: float = 0.8,
    evaluator: str = "passed",
    trials: int | None = None,
    n_cases: int | None = None,
    family_size: int | None = None,
) -> pd.DataFrame:
    """Per candidate: the smallest true difference a paired design detects with ``power``.

    :func:`power_analysis` without an effect; see it for the variance model.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> mde = minimum_detectable_effect(run, n_cases=200)
    >>> bool((mde["mde"] < minimum_detectable_effect(run)["mde"]).all())
    True
    """
    frame = power_analysis(
        run,
        alpha=alpha,
        power=power,
        evaluator=evaluator,
        trials=trials,
        n_cases=n_cases,
        family_size=family_size,
    )
    keep = [
        "baseline_variant_id",
        "candidate_variant_id",
        "evaluator",
        "paired_items",
        "planned_trials",
        "planned_cases",
        "planned_sd",
        "alpha_per_test",
        "target_power",
        "mde",
    ]
    return frame[keep]


def trials_for_precision(
    run: ExperimentRun,
    *,
    half_width: float,
    confidence_level: float = 0.95,
    evaluator: str = "passed",
    n_cases: int | None = None,
    cost_per_case: float = 0.0,
    cost_per_trial: float | None = None,
    max_trials: int = 1000,
) -> pd.DataFrame:
    r"""Attempts per case that reach a target interval half-width, and at least cost.

    For each variant's mean (``estimand="mean"``: :math:`σ_b^2, σ_w^2`) and each
    candidate's paired difference (``estimand="difference"``: :math:`ω^2` and
    :math:`σ_A^2 + σ_B^2`, two attempts per case-trial), with target
    :math:`SE = h/z`:

    * ``trials_needed``: the fewest K on the fixed suite of ``n_cases`` (default: this
      one) with :math:`(σ_b^2 + σ_w^2/K)/n \le SE^2`; missing when no K suffices (only
      more cases help);
    * ``optimal_trials``, ``optimal_cases``, ``optimal_cost``: the cheapest (n, K) when
      cases can be added, for a cost per case and per attempt (Cochran's two-stage
      optimum :math:`K^* = \sqrt{(σ_w^2/σ_b^2)(c_{case}/c_{trial})}`). The cost per attempt
      defaults to the run's mean measured ``cost_usd``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> plan = trials_for_precision(run, half_width=0.1, cost_per_case=0.05)
    >>> sorted(set(plan["estimand"]))
    ['difference', 'mean']
    """
    if not half_width > 0:
        raise InputError(f"half_width must be > 0, got {half_width!r}", location="half_width")
    if cost_per_case < 0:
        raise InputError("cost_per_case must be >= 0", location="cost_per_case")
    ev = _evaluation(run, evaluator)
    unit = "usd"
    if cost_per_trial is None:
        measured = run.attempts["cost_usd"].to_numpy(np.float64)
        measured = measured[~np.isnan(measured)]
        cost_per_trial = float(np.mean(measured)) if len(measured) else 0.0
        if not cost_per_trial > 0:
            cost_per_trial, unit = 1.0, "attempts"
    elif not cost_per_trial > 0:
        raise InputError("cost_per_trial must be > 0", location="cost_per_trial")
    z = float(sps.norm.ppf(0.5 + confidence_level / 2))
    target = half_width / z
    ids = list(run.manifest.variant_ids)
    n_case = len(run.suite.cases)
    base = ids.index(run.manifest.baseline_variant_id)
    rows = []

    def plan(
        variant: str,
        estimand: str,
        between: float,
        within: float,
        k_now: float,
        n_now: int,
        trial_cost: float,
    ) -> None:
        n = n_cases if n_cases is not None else n_now
        between = 0.0 if not math.isfinite(between) else between
        within = 0.0 if not math.isfinite(within) else within
        now = z * math.sqrt((between + within / max(k_now, 1e-12)) / n_now) if n_now else math.nan
        needed = stats_paired.trials_for_standard_error(
            between, within, n, target, max_trials=max_trials
        )
        best_k, best_n, best_cost = stats_paired.cost_optimal_trials(
            between,
            within,
            target,
            cost_per_case=cost_per_case,
            cost_per_trial=trial_cost,
            max_trials=max_trials,
            min_cases=SMALL_SAMPLE,
        )
        rows.append(
            {
                "variant_id": variant,
                "estimand": estimand,
                "evaluator": ev.name,
                "between_variance": between,
                "within_variance": within,
                "current_cases": n_now,
                "current_trials": k_now,
                "current_half_width": now,
                "target_half_width": half_width,
                "confidence_level": confidence_level,
                "cases": n,
                "trials_needed": pd.NA if needed is None else needed,
                "optimal_trials": best_k,
                "optimal_cases": best_n,
                "optimal_cost": best_cost,
                "cost_per_case": cost_per_case,
                "cost_per_trial": trial_cost,
                "cost_unit": unit,
            }
        )

    for v, vid in enumerate(ids):
        sel = ev.groups // n_case == v
        vc = stats_paired.variance_components(ev.attempt_values[sel], ev.groups[sel] % n_case)
        plan(
            vid,
            "mean",
            vc.between_variance,
            vc.within_variance,
            vc.mean_attempts,
            vc.n_cases,
            cost_per_trial,
        )
    for cand in range(len(ids)):
        if cand == base:
            continue
        parts = _pair_parts(ev, base, cand)
        within = sum(
            parts[f"within_variance_{s}"]
            for s in ("baseline", "candidate")
            if math.isfinite(parts[f"within_variance_{s}"])
        )
        k_now = (parts["trials_baseline"] + parts["trials_candidate"]) / 2
        plan(
            ids[cand],
            "difference",
            parts["between_difference_variance"],
            within,
            k_now,
            int(parts["paired_items"]),
            2 * cost_per_trial,
        )
    frame = pd.DataFrame(rows)
    frame["trials_needed"] = frame["trials_needed"].astype("Int64")
    frame["variant_id"] = pd.Categorical(frame["variant_id"], categories=ids)
    return frame


# --------------------------------------------------------------------------- JSON


def _json_value(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for record in frame.astype(object).to_dict("records"):
        out.append({str(k): _json_value(v) for k, v in record.items()})
    return out


def paired_report_block(
    run: ExperimentRun, config: ComparisonsConfig, *, lock: str | Path | None = None
) -> dict[str, Any]:
    """The JSON-ready ``paired_comparisons`` block of the report (NaN → null).

    Keys: ``settings`` (correction, alpha, family, method, what the correction
    controls…), ``fingerprint``, ``guard_rails``, ``unevaluated``, ``evaluators``,
    ``comparisons`` (one record per row of :func:`paired_comparisons`), ``omitted`` and
    ``noninferiority`` (``{"passed": bool, "candidates": [...]}`` or null).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> from agenticlens_frames.comparisons_config import resolve_comparisons
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> block = paired_report_block(run, resolve_comparisons(run.manifest, correction="holm"))
    >>> block["settings"]["correction"], block["comparisons"][0]["paired_items"]
    ('holm', 14)
    """
    return _block(paired_analysis(run, config, lock=lock))


def _block(result: PairedAnalysis) -> dict[str, Any]:
    settings = result.config.settings()
    gate = None
    if result.noninferiority is not None:
        gate = {
            "passed": gate_passed(result.noninferiority),
            "margin": result.config.noninferiority_margin,
            "dimension": result.config.noninferiority_dimension,
            "alpha": result.config.alpha,
            "candidates": _records(result.noninferiority),
        }
    frame = result.comparisons
    sizes = (
        {str(k): int(v) for k, v in frame.groupby("evaluator")["family_size"].max().items()}
        if result.config.family == "per_evaluator" and len(frame)
        else (int(frame["family_size"].max()) if len(frame) else 0)
    )
    return {
        "settings": _json_value({**settings, "family_size": sizes}),
        "fingerprint": _json_value(result.fingerprint),
        "guard_rails": dict(result.guard_rails),
        "unevaluated": result.unevaluated,
        "evaluators": _records(result.evaluators),
        "comparisons": _records(frame),
        "omitted": _json_value(result.omitted),
        "noninferiority": gate,
    }


def case_level_block(
    run: ExperimentRun, *, confidence_level: float = 0.95, cluster: str | None = None
) -> dict[str, Any]:
    """The JSON-ready ``case_level`` block: intervals, variance, labels, noise floor.

    Keys: ``summary`` (:func:`case_level_summary` records), ``variance``
    (:func:`variance_decomposition`), ``labels`` (per variant, the number of cases per
    stability label), ``flaky_case_ids`` (per variant).
    """
    summary = case_level_summary(run, confidence_level=confidence_level, cluster=cluster)
    variance = variance_decomposition(run, confidence_level=confidence_level)
    labels = case_labels(run, confidence_level=confidence_level)
    return _case_level(confidence_level, summary, variance, labels)


def _case_level(
    confidence_level: float, summary: pd.DataFrame, variance: pd.DataFrame, labels: pd.DataFrame
) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    flaky: dict[str, list[str]] = {}
    for vid, grp in labels.groupby("variant_id", observed=False, sort=False):
        counts[str(vid)] = {str(k): int(v) for k, v in grp["label"].value_counts().items()}
        flaky[str(vid)] = grp.loc[grp["label"] == "flaky", "case_id"].astype(str).tolist()
    return {
        "confidence_level": confidence_level,
        "summary": _records(summary),
        "variance": _records(variance),
        "labels": counts,
        "flaky_case_ids": flaky,
    }


def paired_outputs(
    run: ExperimentRun,
    config: ComparisonsConfig | None = None,
    *,
    confidence_level: float = 0.95,
    lock: str | Path | None = None,
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Frames and JSON blocks in one pass, for :func:`~agenticlens_frames.analyze`.

    Returns
    -------
    frames, blocks
        ``frames``: ``case_level_summary``, ``variance_decomposition``, ``case_labels``
        and, with a config, ``paired_comparisons`` (+ ``noninferiority`` when a margin
        was declared). ``blocks``: the new top-level report keys ``case_level`` and
        ``paired_comparisons``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> frames, blocks = paired_outputs(run)
    >>> sorted(frames), sorted(blocks)
    (['case_labels', 'case_level_summary', 'variance_decomposition'], ['case_level'])
    """
    cluster = config.cluster if config is not None else None
    summary = case_level_summary(run, confidence_level=confidence_level, cluster=cluster)
    variance = variance_decomposition(run, confidence_level=confidence_level)
    labels = case_labels(run, confidence_level=confidence_level)
    frames: dict[str, pd.DataFrame] = {
        "case_level_summary": summary,
        "variance_decomposition": variance,
        "case_labels": labels,
    }
    blocks: dict[str, Any] = {
        "case_level": _case_level(confidence_level, summary, variance, labels)
    }
    if config is not None:
        result = paired_analysis(run, config, lock=lock)
        frames["paired_comparisons"] = result.comparisons
        if result.noninferiority is not None:
            frames["noninferiority"] = result.noninferiority
        blocks["paired_comparisons"] = _block(result)
    return frames, blocks


def report_blocks(
    run: ExperimentRun,
    config: ComparisonsConfig | None = None,
    *,
    confidence_level: float = 0.95,
    lock: str | Path | None = None,
) -> dict[str, Any]:
    """Every new top-level report key: ``case_level`` always, ``paired_comparisons`` when
    a correction was declared (``config`` not None)."""
    out: dict[str, Any] = {"case_level": case_level_block(run, confidence_level=confidence_level)}
    if config is not None:
        out["paired_comparisons"] = paired_report_block(run, config, lock=lock)
    return out


def paired_frames_from_block(block: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Frames back from a saved report's ``paired_comparisons`` block (for re-rendering).

    Returns ``{"paired_comparisons": ..., "noninferiority": ...}`` (the latter only when
    the block has a gate).
    """
    frame = pd.DataFrame(block.get("comparisons", []), columns=PAIRED_COLUMNS)
    for column in ("ci_low", "ci_high", "p_value", "adjusted_p_value", "mde", "standard_error"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(np.float64)
    frame["significant"] = pd.array(frame["significant"].tolist(), dtype="boolean")
    frame.attrs["settings"] = dict(block.get("settings", {}))
    frame.attrs["fingerprint"] = dict(block.get("fingerprint", {}))
    frame.attrs["omitted"] = list(block.get("omitted", []))
    out = {"paired_comparisons": frame}
    gate = block.get("noninferiority")
    if gate:
        g = pd.DataFrame(gate.get("candidates", []), columns=GATE_COLUMNS)
        g.attrs["passed"] = bool(gate.get("passed"))
        out["noninferiority"] = g
    return out
