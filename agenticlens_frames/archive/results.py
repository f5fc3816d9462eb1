"""Result frames across archived runs, derived from sufficient statistics.

The same estimands as the single-experiment :mod:`agenticlens_frames.analysis` (spec §9),
keyed by (run, variant[, case | trial]) and computed with whole-array numpy operations
from :class:`~agenticlens_frames.archive.sufficient.SufficientStats`, so they cost the same
whatever engine produced the sums. On one run they agree with ``analyze()`` to 1e-9
(tested); they are not bit-identical, because sums come from the engines rather than
exactly rounded ``fsum``.

Differences from the single-experiment frames, on purpose:

* factors are ``factor_<name>`` columns (not a dict), and the variant summary carries
  ``experiment_id``, ``run_id`` and ``run_at``;
* the case matrix has no ``case_name`` (names live in the ``cases`` table);
* comparisons count regressed / improved cases (``n_regressed_cases``) rather than
  listing their ids, and ``changed_factors`` is text (``"model: a → b"``);
* factor levels keep single-level factors (a slice filtered on a factor has one) and
  average over whatever variants of the slice carry the level, across experiments,
  skipping missing values; they also pool attempts for a Wilson interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .. import stats
from .._choices import check_latency_missing
from .._deprecate import class_keyword_hints, keyword_hints
from .._values import count_noun
from ..errors import InputError, check_pass_k, check_proportion
from ..frames import FACTOR_PREFIX
from ._slots import case_slots, info_slots, slot_of, slots
from .sufficient import SufficientStats

__all__ = [
    "RESULT_FRAMES",
    "ArchiveAnalysis",
    "analyze_stats",
    "case_level_intervals",
    "case_matrix",
    "compare_to_baseline",
    "factor_levels",
    "single_variant_notes",
    "stopped_early_notes",
    "trial_summary",
    "variant_summary",
]

LatencyPolicy = Literal["exclude", "zero"]
UNSET_FACTOR = "(unset)"
#: The result frames of :meth:`ArchiveAnalysis.frames`, in order (the names of the files
#: ``to_parquet`` and the command line write, with ``runs``).
RESULT_FRAMES = (
    "case_matrix",
    "trial_summary",
    "variant_summary",
    "case_level_intervals",
    "paired_differences",
    "comparisons",
    "factor_levels",
)
#: Per-trial series summarised per variant; True = bounded to [0, 1] (clipped CI).
SUMMARY_METRICS: dict[str, bool] = {
    "pass_rate": True,
    "average_score": True,
    "average_latency_ms": False,
    "total_cost_usd": False,
}
_KEYS = ["experiment_id", "run_id", "variant_id"]


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is 0."""
    den = np.asarray(denominator)
    with np.errstate(invalid="ignore", divide="ignore"):
        quotient = np.asarray(np.divide(numerator, den, dtype=np.float64))
    # In place (these columns have a million rows): NaN where the denominator is not > 0.
    np.putmask(quotient, ~(den > 0), np.nan)
    return quotient


# --------------------------------------------------------------------------- cases


def _pass_k_tables(
    n: np.ndarray, c: np.ndarray, ks: Sequence[int]
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """Each case's (n, c) code and, per ``pass_at_<k>`` / ``pass_hat_<k>``, the
    estimator's value for every code (NaN where a code is absent or n < k); None when
    the (n, c) space is too large for a table (then the estimators run per case).

    Cases share a handful of (attempts, passes) pairs, so the estimators (exact integer
    arithmetic in :mod:`~agenticlens_frames.stats`) run once per pair.
    """
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    width = int(n.max()) + 1 if len(n) else 1
    if width * width > max(4 * len(n), 1 << 16):
        return None
    code = n * width
    code += c  # in place: one row-length array, not two
    present = np.flatnonzero(np.bincount(code, minlength=width * width))
    pn, pc = present // width, present % width
    tables = {}
    for k in ks:
        for name, func in ((f"pass_at_{k}", stats.pass_at_k), (f"pass_hat_{k}", stats.pass_hat_k)):
            table = np.full(width * width, np.nan)
            table[present] = func(pn, pc, k)
            tables[name] = table
    return code, tables


def _pass_k_columns(n: np.ndarray, c: np.ndarray, ks: Sequence[int]) -> dict[str, np.ndarray]:
    """pass@k and pass^k per case: one gather per column from :func:`_pass_k_tables`."""
    found = _pass_k_tables(n, c, ks)
    if found is None:
        n = np.asarray(n, dtype=np.int64)
        c = np.asarray(c, dtype=np.int64)
        return {
            name: func(n, c, k)
            for k in ks
            for name, func in (
                (f"pass_at_{k}", stats.pass_at_k),
                (f"pass_hat_{k}", stats.pass_hat_k),
            )
        }
    code, tables = found
    return {name: table[code] for name, table in tables.items()}


def _case_rates(n: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each case's pass rate (0 without attempts) and whether it is consistent."""
    with np.errstate(invalid="ignore", divide="ignore"):
        pass_rate = p / np.maximum(n, 1)
    np.putmask(pass_rate, ~(n > 0), 0.0)  # in place: no third row-length array
    return pass_rate, (p == 0) | (p == n)


def _case_core(st: SufficientStats, ks: Sequence[int]) -> pd.DataFrame:
    """The case matrix's keys, ``attempts, passes, pass_rate, consistent``: all the
    variant summary and the comparisons read per case. At 100M attempts the full case
    matrix is 10M rows of some twenty columns, built only when asked for."""
    c = st.cases
    n = c["attempts"].to_numpy()
    p = c["passes"].to_numpy()
    pass_rate, consistent = _case_rates(n, p)
    frame: dict[str, Any] = {
        name: c[name].array for name in (*_KEYS, "variant_position", "case_id", "case_index")
    }
    frame.update(attempts=n, passes=p, pass_rate=pass_rate, consistent=consistent)
    core = pd.DataFrame(frame, copy=False)
    core.attrs["pass_k"] = tuple(ks)
    return core


def case_matrix(st: SufficientStats, pass_k: Sequence[int] = (1,)) -> pd.DataFrame:
    """One row per (run, variant, case): spec §9.1's case statistics.

    Columns: the keys, ``case_index, attempts, passes, pass_rate, mean_score,
    score_standard_deviation, consistent, scored, mean_latency_ms, mean_cost_usd``, then
    ``pass_at_<k>`` and ``pass_hat_<k>`` per k (NaN where attempts < k).

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = archive.all().stats("numpy")
    >>> cm = case_matrix(st, pass_k=[1, 5])
    >>> len(cm), int(cm["attempts"].sum()), bool((cm["pass_hat_5"] <= cm["pass_at_5"]).all())
    (70, 350, True)
    """
    ks = check_pass_k(pass_k)
    c = st.cases
    n = c["attempts"].to_numpy()
    p = c["passes"].to_numpy()
    scored = c["scored"].to_numpy()
    pass_rate, consistent = _case_rates(n, p)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.where(
            scored > 1, c["score_m2"].to_numpy() / np.maximum(scored - 1, 1), np.nan
        )
    frame: dict[str, Any] = {
        name: c[name].array for name in (*_KEYS, "variant_position", "case_id", "case_index")
    }
    frame.update(
        attempts=n,
        passes=p,
        pass_rate=pass_rate,
        mean_score=_ratio(c["score_sum"].to_numpy(), scored),
        score_standard_deviation=np.sqrt(np.maximum(variance, 0.0)),
        consistent=consistent,
        scored=scored,
        mean_latency_ms=_ratio(c["latency_sum"].to_numpy(), c["latency_count"].to_numpy()),
        mean_cost_usd=_ratio(c["cost_sum"].to_numpy(), c["cost_count"].to_numpy()),
    )
    frame.update(_pass_k_columns(n, p, ks))
    frame = pd.DataFrame(frame, copy=False)
    frame.attrs["pass_k"] = ks
    return frame


# --------------------------------------------------------------------------- trials


def trial_summary(
    st: SufficientStats, *, latency_missing: LatencyPolicy = "exclude"
) -> pd.DataFrame:
    """One row per (run, variant, trial): the trial report's summary numbers (spec §6).

    A trial is ``failed`` when every one of its attempts has status ``trial_failed``
    (how the runner records a trial that produced no report, and how
    ``ExperimentRun.from_frames`` tells one); its metric columns are NaN. A trial with
    only some such attempts completed: they count as cases that did not pass, as in
    ``analyze(run)``.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = archive.all().stats("numpy")
    >>> ts = trial_summary(st)
    >>> ts["status"].value_counts().to_dict()
    {'succeeded': 24, 'failed': 1}
    """
    check_latency_missing(latency_missing)
    t = st.trials
    total = t["attempts"].to_numpy()
    passes = t["passes"].to_numpy()
    failed_attempts = t["failed_attempts"].to_numpy()
    failed = (failed_attempts > 0) & (failed_attempts == total)
    lat_sum = t["latency_ok_sum"].to_numpy()
    package = np.where(failed, np.nan, _ratio(lat_sum, total))
    exclude = np.where(failed, np.nan, _ratio(lat_sum, t["latency_ok_count"].to_numpy()))
    cost_count = t["cost_count"].to_numpy()
    check_count = t["check_count"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        average_score = np.where(
            check_count > 0, t["check_value_sum"].to_numpy() / np.maximum(check_count, 1), 0.0
        )
    passed_cases = np.where(failed, 0, passes)
    frame: dict[str, Any] = {name: t[name].array for name in (*_KEYS, "variant_position", "trial")}
    frame.update(
        status=pd.Categorical.from_codes(failed.astype(np.int8), ["succeeded", "failed"]),
        execution_position=t["execution_position"].to_numpy(),
        total_cases=total,
        passed_cases=passed_cases,
        failed_cases=total - passed_cases,
        pass_rate=np.where(failed, np.nan, _ratio(passes, total)),
        average_score=np.where(failed, np.nan, average_score),
        average_latency_ms=package if latency_missing == "zero" else exclude,
        average_latency_ms_package=package,
        total_cost_usd=np.where(~failed & (cost_count == total), t["cost_sum"].to_numpy(), np.nan),
        priced_cases=np.where(failed, 0, cost_count),
        successful=~failed & (passes == total),
    )
    return pd.DataFrame(frame, copy=False)


# --------------------------------------------------------------------------- variants


def _segments(slot: np.ndarray, size: int) -> Callable[[np.ndarray], np.ndarray]:
    """Per-slot sums: contiguous ``reduceat`` segments when ``slot`` is sorted (the case
    matrix is), else ``bincount``. Integer inputs give exact integer sums."""
    if len(slot) and np.all(slot[1:] >= slot[:-1]):
        starts = np.flatnonzero(np.concatenate([[True], slot[1:] != slot[:-1]]))
        owner = slot[starts]

        def total(values: np.ndarray) -> np.ndarray:
            out = np.zeros(size, dtype=values.dtype)
            out[owner] = np.add.reduceat(values, starts)
            return out

        return total

    def counted(values: np.ndarray) -> np.ndarray:
        summed = np.bincount(slot, weights=values, minlength=size)
        return summed.astype(values.dtype) if values.dtype.kind in "iub" else summed

    return counted


def _group_summary(
    slot: np.ndarray, values: np.ndarray, size: int, z: float, bounded: bool
) -> dict[str, np.ndarray]:
    """metric_summary (spec §9.2) for every group at once; groups with no value get
    count 0 and NaN elsewhere."""
    keep = ~np.isnan(values)
    slot, values = slot[keep], values[keep]
    order = np.lexsort((values, slot))
    s, v = slot[order], values[order]
    count = np.bincount(s, minlength=size)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    has = count > 0
    mean = _ratio(np.bincount(s, weights=v, minlength=size), count)
    deviation = v - mean[s] if len(s) else v
    m2 = np.bincount(s, weights=deviation * deviation, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(count > 1, np.sqrt(m2 / np.maximum(count - 1, 1)), np.where(has, 0.0, np.nan))

    def at(offset: np.ndarray) -> np.ndarray:
        index = np.where(has, start + offset, 0)
        return np.where(has, v[index] if len(v) else np.nan, np.nan)

    half = count // 2
    median = np.where(count % 2 == 1, at(half), (at(np.maximum(half - 1, 0)) + at(half)) / 2)
    position = (count - 1) * 0.95
    below = np.floor(position).astype(np.int64)
    above = np.ceil(position).astype(np.int64)
    low_v, high_v = at(np.maximum(below, 0)), at(np.maximum(above, 0))
    p95 = np.where(below == above, low_v, low_v + (high_v - low_v) * (position - below))
    with np.errstate(invalid="ignore", divide="ignore"):
        margin = np.where(count > 1, z * sd / np.sqrt(np.maximum(count, 1)), 0.0)
        cv = np.where(has & (mean != 0), sd / np.where(mean != 0, mean, 1.0), np.nan)
    low, high = mean - margin, mean + margin
    if bounded:
        low, high = np.where(low > 0.0, low, 0.0), np.where(high < 1.0, high, 1.0)
    return {
        "count": count.astype(np.int64),
        "mean": mean,
        "median": median,
        "p95": p95,
        "standard_deviation": sd,
        "coefficient_of_variation": cv,
        "ci_low": np.where(has, low, np.nan),
        "ci_high": np.where(has, high, np.nan),
    }


def variant_summary(
    st: SufficientStats,
    cases: pd.DataFrame,
    trials: pd.DataFrame,
    variant_info: pd.DataFrame,
    *,
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """One row per (run, variant) of ``variant_info``: spec §9.2–§9.3 per variant.

    ``cases`` and ``trials`` are :func:`case_matrix` and :func:`trial_summary` of the
    same statistics (of the case matrix only the keys, ``attempts``, ``passes``,
    ``consistent`` and ``attrs["pass_k"]`` are read: the pass@k means are computed
    from the attempts and passes, the same numbers as the matrix's columns give).
    Columns follow ``analysis.variant_summary`` (``<metric>_<stat>``
    for the four per-trial metrics, ``case_pass_rate`` with its Wilson interval,
    ``pass_at_<k>`` / ``pass_hat_<k>`` means over cases, NaN unless every case has k
    attempts, ``consistency_rate``, ``pareto_optimal`` within each run) plus the run
    keys, ``run_at`` and the ``factor_<name>`` columns.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = archive.all().stats("numpy")
    >>> cm, ts = case_matrix(st, pass_k=[1]), trial_summary(st)
    >>> vs = variant_summary(st, cm, ts, archive.all().variant_info())
    >>> vs[["variant_id", "case_pass_rate"]].round(3).values.tolist()[:2]
    [['baseline', 0.714], ['model-large', 0.743]]
    """
    check_proportion(confidence_level, "confidence level", location="confidence_level")
    z = stats.z_value(confidence_level)
    offsets, size = slots(st.layout)
    info = variant_info.reset_index(drop=True)
    info_slot = info_slots(st.layout, info, offsets)

    out: dict[str, Any] = {}
    # ---- trials
    tslot = slot_of(trials, offsets)
    done = trials["status"].to_numpy() == "succeeded"
    attempted = np.bincount(tslot, minlength=size)
    completed = np.bincount(tslot, weights=done, minlength=size).astype(np.int64)
    successful = np.bincount(tslot, weights=trials["successful"].to_numpy(), minlength=size)
    out["attempted_trials"] = attempted[info_slot]
    out["completed_trials"] = completed[info_slot]
    out["failed_trials"] = (attempted - completed)[info_slot]
    out["successful_trials"] = successful.astype(np.int64)[info_slot]
    out["trial_success_rate"] = np.where(attempted > 0, successful / np.maximum(attempted, 1), 0.0)[
        info_slot
    ]
    for metric, bounded in SUMMARY_METRICS.items():
        values = np.where(done, trials[metric].to_numpy(np.float64), np.nan)
        summary = _group_summary(tslot, values, size, z, bounded)
        for name, column in summary.items():
            out[f"{metric}_{name}"] = column[info_slot]
    # ---- cases (rows come in slot order, so per-variant sums are contiguous segments)
    cslot = slot_of(cases, offsets)
    segment = _segments(cslot, size)
    # A count per case as a broadcast 1 (no array of ones the length of the cases).
    n_cases = segment(np.broadcast_to(np.int64(1), len(cslot)))
    attempts = segment(cases["attempts"].to_numpy(np.int64))
    passes = segment(cases["passes"].to_numpy(np.int64))
    out["case_attempts"] = attempts[info_slot]
    out["case_passes"] = passes[info_slot]
    out["case_pass_rate"] = _ratio(passes, attempts)[info_slot]
    low, high = stats.wilson_interval(passes[info_slot], attempts[info_slot], confidence_level)
    out["case_pass_rate_ci_low"] = low
    out["case_pass_rate_ci_high"] = high
    ks = cases.attrs.get("pass_k", ())
    found = _pass_k_tables(cases["attempts"].to_numpy(), cases["passes"].to_numpy(), ks)
    if found is not None:
        # The values each case would hold, gathered into one reused buffer (the
        # columns themselves belong to the case matrix, built only when asked for).
        code, tables = found
        buffer = np.empty(len(code), dtype=np.float64)
        flags = np.empty(len(code), dtype=np.int64)
    for k in ks:
        for name in (f"pass_at_{k}", f"pass_hat_{k}"):
            if found is None:
                values = _pass_k_columns(
                    cases["attempts"].to_numpy(), cases["passes"].to_numpy(), [k]
                )[name]
                undefined = np.isnan(values)
                missing = segment(undefined.astype(np.int64))
                total = segment(np.where(undefined, 0.0, values))
            else:
                table = tables[name]
                undefined_table = np.isnan(table)
                # mode="clip": every code is inside its table, and with the default
                # mode ("raise") numpy gathers into a fresh temporary before copying it
                # to ``out`` (10M cases: 80 MB of new pages per gather, twelve times).
                missing = segment(
                    np.take(undefined_table.astype(np.int64), code, out=flags, mode="clip")
                )
                total = segment(
                    np.take(np.where(undefined_table, 0.0, table), code, out=buffer, mode="clip")
                )
            mean = np.where((missing == 0) & (n_cases > 0), _ratio(total, n_cases), np.nan)
            out[name] = mean[info_slot]
    consistent = segment(cases["consistent"].to_numpy().astype(np.int64))
    out["consistency_rate"] = _ratio(consistent, n_cases)[info_slot]
    out["n_cases"] = n_cases[info_slot]
    out["n_flaky_cases"] = (n_cases - consistent)[info_slot]
    out["priced_trials"] = out["total_cost_usd_count"]
    keys = {
        column: pd.Categorical(
            info[column].astype(str).to_numpy(dtype=object), categories=_categories(st, column)
        )
        for column in _KEYS
    }
    frame = pd.concat([info.assign(**keys), pd.DataFrame(out, copy=False)], axis=1)
    frame["pareto_optimal"] = _pareto_by_run(frame)
    frame.attrs.update(confidence_level=confidence_level, pass_k=cases.attrs.get("pass_k", ()))
    return frame


def _categories(st: SufficientStats, column: str) -> list[str]:
    if column == "experiment_id":
        return st.layout.experiment_categories
    if column == "run_id":
        return list(st.layout.run_ids)
    return st.layout.variant_categories


def _pareto_by_run(summary: pd.DataFrame) -> np.ndarray:
    """Pareto membership within each run (spec §9.4), objectives rounded to 12
    significant digits so that last-bit differences between engines never break a tie."""
    # As analysis.pareto_frontier: an unknown latency (fix B3) is neutral, like an unknown
    # cost, so a variant without any known latency is neither dropped nor placed on the
    # frontier by a latency it does not have.
    eligible = ((summary["pass_rate_count"] > 0) & (summary["average_score_count"] > 0)).to_numpy()
    columns = [
        "trial_success_rate",
        "pass_rate_mean",
        "average_score_mean",
        "average_latency_ms_mean",
        "total_cost_usd_mean",
    ]
    values = summary[columns].to_numpy(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(values != 0, 10.0 ** np.floor(np.log10(np.abs(values))), 1.0)
        values = np.where(np.isfinite(values), np.round(values / scale, 11) * scale, values)
    unknown = np.zeros_like(values, dtype=bool)
    unknown[:, 3] = (summary["average_latency_ms_count"] == 0).to_numpy()
    unknown[:, 4] = (summary["total_cost_usd_count"] == 0).to_numpy()
    out = np.zeros(len(summary), dtype=bool)
    runs = summary["run_id"].astype(str).to_numpy()
    for run in pd.unique(runs):
        rows = np.flatnonzero((runs == run) & eligible)
        if len(rows):
            front = stats.pareto_front(
                values[rows], [True, True, True, False, False], unknown[rows]
            )
            out[rows[front]] = True
    return out


# --------------------------------------------------------------------------- comparisons


def _delta(
    base: np.ndarray, cand: np.ndarray, higher_is_better: bool, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """stats.metric_delta, vectorised."""
    absolute = cand - base
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = np.where(
            base != 0,
            absolute / np.abs(np.where(base != 0, base, 1.0)),
            np.where(cand == 0, 0.0, np.copysign(np.inf, absolute)),
        )
    degradation = -relative if higher_is_better else relative
    return absolute, relative, degradation > threshold


def compare_to_baseline(
    summary: pd.DataFrame,
    cases: pd.DataFrame,
    *,
    regression_threshold: float = 0.05,
) -> pd.DataFrame:
    """Each kept non-baseline variant against its run's baseline (spec §9.5).

    Needs the baseline in the slice (``include_baseline=True``); variants whose baseline
    is absent, or that cannot be compared (no completed trial on either side), get no
    row. Columns: ``experiment_id, run_id, baseline_variant_id, candidate_variant_id``;
    ``<metric>_delta / _delta_relative / _regressed`` for ``pass_rate`` (pooled case
    pass rate, as the package), ``average_score``, ``average_latency_ms`` and
    ``total_cost_usd`` (NaN and NA for cost when either side is unpriced, for latency
    when either side has none known, as :func:`agenticlens_frames.compare_to_baseline`);
    ``changed_factors`` (text), ``n_changed_factors``, ``case_pass_rate_delta``,
    ``pooled_p_value``, ``n_compared_cases``, ``n_regressed_cases``,
    ``n_improved_cases``.

    ``pooled_p_value`` is AgenticLens's two-proportion z-test, which takes every attempt
    as independent: with several trials per case it is too small, so nothing is marked
    significant from it here (the single-experiment frame keeps the package's
    ``statistically_significant`` for its files). The comparison to read is
    :func:`~agenticlens_frames.archive.paired.paired_differences`, with cases as the
    unit.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = archive.all().stats("numpy")
    >>> cm, ts = case_matrix(st), trial_summary(st)
    >>> vs = variant_summary(st, cm, ts, archive.all().variant_info())
    >>> compare_to_baseline(vs, cm)["candidate_variant_id"].tolist()
    ['model-large', 'prompt-v2', 'retrieval-dense', 'large-v2']
    """
    s = summary.reset_index(drop=True)
    runs = s["run_id"].astype(str).to_numpy()
    is_base = s["is_baseline"].to_numpy(bool)
    base_row = pd.Series(np.flatnonzero(is_base), index=runs[is_base])
    base_row = base_row[~base_row.index.duplicated()]
    cand = np.flatnonzero(~is_base & pd.Series(runs).isin(base_row.index).to_numpy())
    base = base_row.reindex(runs[cand]).to_numpy(np.int64)

    def comparable(rows: np.ndarray) -> np.ndarray:
        # As analysis.compare_to_baseline: an unknown latency (fix B3) leaves only the
        # latency delta out, as an unknown cost does, not the whole comparison.
        return (s["pass_rate_count"].to_numpy()[rows] > 0) & (
            s["average_score_count"].to_numpy()[rows] > 0
        )

    ok = comparable(cand) & comparable(base)
    cand, base = cand[ok], base[ok]
    variant = s["variant_id"].astype(str).to_numpy(dtype=object)
    out: dict[str, Any] = {
        "experiment_id": s["experiment_id"].array[cand],
        "run_id": s["run_id"].array[cand],
        "baseline_variant_id": variant[base],
        "candidate_variant_id": variant[cand],
    }
    pairs = {
        "pass_rate": ("case_pass_rate", True),
        "average_score": ("average_score_mean", True),
        "average_latency_ms": ("average_latency_ms_mean", False),
        "total_cost_usd": ("total_cost_usd_mean", False),
    }
    for metric, (column, higher) in pairs.items():
        values = s[column].to_numpy(np.float64)
        absolute, relative, regressed = _delta(
            values[base], values[cand], higher, regression_threshold
        )
        regressed_col = pd.array(regressed, dtype="boolean")
        if metric in ("average_latency_ms", "total_cost_usd"):
            # Unknown where either side has no known value (an unpriced variant, or one
            # without any known latency: fix B3).
            counts = s[f"{metric}_count"].to_numpy()
            known = (counts[base] > 0) & (counts[cand] > 0)
            absolute = np.where(known, absolute, np.nan)
            relative = np.where(known, relative, np.nan)
            regressed_col[~known] = pd.NA
        out[f"{metric}_delta"] = absolute
        out[f"{metric}_delta_relative"] = relative
        out[f"{metric}_regressed"] = regressed_col
    changed, n_changed = _changed_factors(s, base, cand)
    out["changed_factors"] = changed
    out["n_changed_factors"] = n_changed
    rate = s["case_pass_rate"].to_numpy(np.float64)
    out["case_pass_rate_delta"] = rate[cand] - rate[base]
    attempts = s["case_attempts"].to_numpy(np.int64)
    passes = s["case_passes"].to_numpy(np.int64)
    p_value = stats.two_proportion_z_test_array(
        passes[base], attempts[base], passes[cand], attempts[cand]
    )
    out["pooled_p_value"] = p_value
    compared, regressed, improved = _case_changes(s, cases, base, cand, regression_threshold)
    out["n_compared_cases"] = compared
    out["n_regressed_cases"] = regressed
    out["n_improved_cases"] = improved
    frame = pd.DataFrame(out, copy=False)
    # Text columns as text even with no comparison (an empty list is read as float or
    # object), so that frames of several slices concatenate without changing dtypes.
    frame = frame.astype(dict.fromkeys(_COMPARISON_TEXT, str))
    frame.attrs.update(regression_threshold=regression_threshold)
    return frame


_COMPARISON_TEXT = ("baseline_variant_id", "candidate_variant_id", "changed_factors")


def _changed_factors(
    s: pd.DataFrame, base: np.ndarray, cand: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """``"name: base → candidate"`` for each differing factor, sorted by name."""
    names = sorted(c for c in s.columns if c.startswith(FACTOR_PREFIX))
    texts: list[list[str]] = [[] for _ in range(len(cand))]
    count = np.zeros(len(cand), dtype=np.int64)
    for column in names:
        values = s[column].to_numpy(dtype=object, na_value=None)
        b, c = values[base], values[cand]
        differ = np.array([x != y for x, y in zip(b, c, strict=True)], dtype=bool)
        count += differ
        label = column.removeprefix(FACTOR_PREFIX)
        for i in np.flatnonzero(differ):
            texts[i].append(f"{label}: {b[i]} → {c[i]}")
    return ["; ".join(t) for t in texts], count


def _case_changes(
    s: pd.DataFrame, cases: pd.DataFrame, base: np.ndarray, cand: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per comparison: cases present on both sides, and how many moved by > threshold
    (absolute change of the case pass rate, as the package)."""
    size = len(cand)
    # The columns as stored (small integer codes, int32), not int64 copies: only the
    # sums below need int64, and they widen as they go.
    run = cases["run_id"].cat.codes.to_numpy()
    vpos = cases["variant_position"].to_numpy()
    case_index = cases["case_index"].to_numpy()
    if not size or not len(run):
        empty = np.zeros(size, dtype=np.int64)
        return empty, empty, empty
    # Dense keys: (run, variant position) slots and (run, case index) cells.
    width = int(max(vpos.max(), s["variant_position"].max())) + 1
    n_runs = len(cases["run_id"].cat.categories)
    s_run = pd.Categorical(
        s["run_id"].astype(str), categories=cases["run_id"].cat.categories
    ).codes.astype(np.int64)
    s_slot = s_run * width + s["variant_position"].to_numpy(np.int64)
    # In place where a row-length temporary can be avoided: at 10M cases each one is
    # 80 MB of freshly mapped pages, and the kernel's page faults cost more than the
    # arithmetic.
    row_slot = run.astype(np.int64)
    row_slot *= width
    row_slot += vpos
    # Rows outside every comparison belong to a spare slot, ``size``: no row is dropped
    # (a boolean compress per column cost more than the whole count).
    owner_of = np.full(n_runs * width, size, dtype=np.int64)
    owner_of[s_slot[cand]] = np.arange(size)
    is_base = np.zeros(n_runs * width, dtype=bool)
    is_base[s_slot[base]] = True
    cells = np.zeros(n_runs, dtype=np.int64)
    if np.all(run[1:] >= run[:-1]):  # the case matrix is in run order
        starts = np.flatnonzero(np.concatenate([[True], run[1:] != run[:-1]]))
        cells[run[starts]] = np.maximum.reduceat(case_index + 1, starts)
    else:
        np.maximum.at(cells, run, case_index + 1)
    cell_offset = np.concatenate([[0], np.cumsum(cells)])
    cell = cell_offset[run]
    cell += case_index
    rate = cases["pass_rate"].to_numpy(np.float64)
    base_rows = is_base[row_slot]
    base_rate = np.full(int(cell_offset[-1]), np.nan)
    base_rate[cell[base_rows]] = rate[base_rows]
    delta = base_rate[cell]
    np.subtract(rate, delta, out=delta)  # NaN where the baseline lacks the case
    # One count per (comparison, kind): 0 not compared, 1 same, 2 regressed, 3 improved
    # (comparisons with NaN are False, so an uncompared case is kind 0).
    kind = owner_of[row_slot]
    kind *= 4
    kind += ~np.isnan(delta)
    kind += delta < -threshold
    improved = delta > threshold
    kind += improved
    kind += improved
    counts = np.bincount(kind, minlength=4 * (size + 1)).reshape(size + 1, 4)[:size]
    return counts[:, 1:].sum(axis=1), counts[:, 2].copy(), counts[:, 3].copy()


# --------------------------------------------------------------------------- factors


def case_level_intervals(
    st: SufficientStats,
    variant_info: pd.DataFrame,
    *,
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """Per (run, variant) of ``variant_info``: the pass rate with cases as the unit.

    The number ``experiment run``'s variant table leads with: the pass rate over the
    evaluated attempts (a failed trial's attempts — an infrastructure failure, not the
    agent's — left out and counted in ``unevaluated_attempts``) with the beta-binomial
    interval (:func:`~agenticlens_frames.stats_paired.beta_binomial_interval`, the
    recommended method of :func:`~agenticlens_frames.case_level_summary`), fitted from
    each case's passes and attempts for every variant in one call. Unlike
    :func:`variant_summary`'s pooled Wilson interval, attempts at one case are not taken
    as independent, so the interval is as wide as the cases allow. Every attempt with
    status ``trial_failed`` is left out, whether its trial failed as a whole or in part
    and whatever other rows the run has: the statistics count them per case.
    ``failed_counted_as_failures`` is always false (kept so that frames keep their
    columns: it marked rows where earlier versions could not tell them apart).

    Returns
    -------
    pandas.DataFrame
        ``experiment_id, run_id, variant_id, pass_rate, ci_low, ci_high,
        standard_error, n_cases, n_attempts, unevaluated_attempts,
        failed_counted_as_failures, method, confidence_level``, in the order of
        ``variant_info``.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = archive.all().stats("numpy")
    >>> ci = case_level_intervals(st, archive.all().variant_info())
    >>> ci[["variant_id", "pass_rate", "ci_low", "ci_high", "unevaluated_attempts"]].round(3)
            variant_id  pass_rate  ci_low  ci_high  unevaluated_attempts
    0         baseline      0.714   0.569    0.819                     0
    1      model-large      0.743   0.563    0.847                     0
    2        prompt-v2      0.871   0.748    0.931                     0
    3  retrieval-dense      0.821   0.686    0.899                    14
    4         large-v2      0.843   0.631    0.927                     0
    """
    from ..stats_paired import beta_binomial_intervals  # lazily: scipy.special

    check_proportion(confidence_level, "confidence level", location="confidence_level")
    offsets, info, info_slot, slot, failed = case_slots(st, variant_info)
    size = int(offsets[-1])
    cases = st.cases
    # The evaluated attempts at each case.
    attempts = cases["attempts"].to_numpy(np.int64) - failed
    r = beta_binomial_intervals(
        cases["passes"].to_numpy(np.int64), attempts, slot, size, confidence_level
    )
    total = np.bincount(slot, weights=attempts, minlength=size).astype(np.int64)
    left_out = np.bincount(slot, weights=failed, minlength=size)
    frame = pd.DataFrame(
        {
            **{column: info[column].astype(str).to_numpy(dtype=object) for column in _KEYS},
            "pass_rate": r.estimate[info_slot],
            "ci_low": r.low[info_slot],
            "ci_high": r.high[info_slot],
            "standard_error": r.sd[info_slot],
            "n_cases": r.n_cases[info_slot],
            "n_attempts": total[info_slot],
            "unevaluated_attempts": left_out.astype(np.int64)[info_slot],
            "failed_counted_as_failures": np.zeros(len(info_slot), dtype=bool),
            "method": "beta_binomial",
            "confidence_level": confidence_level,
        }
    )
    frame.attrs["confidence_level"] = confidence_level
    return frame


def factor_levels(
    summary: pd.DataFrame, *, by: Sequence[str] = (), pass_k: Sequence[int] | None = None
) -> pd.DataFrame:
    """Per factor and level, across runs: means over the variants carrying the level.

    Parameters
    ----------
    summary
        :func:`variant_summary` output.
    by
        Extra grouping keys, e.g. ``("experiment_id",)`` for one row per experiment and
        level.
    pass_k
        Which ``pass_at_<k>`` / ``pass_hat_<k>`` means to include (default: all present).

    Returns
    -------
    pandas.DataFrame
        ``factor, value, [by...], n_variants, n_runs, n_experiments, mean_pass_rate,
        mean_average_score, mean_latency_ms, mean_cost_usd, mean_trial_success_rate,
        mean_pass_at_<k>, mean_pass_hat_<k>, case_attempts, case_passes,
        case_pass_rate, case_pass_rate_ci_low, case_pass_rate_ci_high``, sorted by
        factor, then value. Means skip variants without the metric (NaN when none has
        it); a variant without the factor is ``"(unset)"``. Raw averages over variants:
        confounded unless the design is factorial. ``attrs["notes"]`` says when a level
        pools runs of different suites, of one suite with different cases, or scored by
        different evaluator versions (within each group of ``by``), for a summary from an
        archive analysis (which carries its runs' suites); empty otherwise.

    Examples
    --------
    >>> vs = pd.DataFrame({"experiment_id": ["e", "e", "e"], "run_id": ["r", "r", "r"],
    ...                    "factor_model": ["a", "b", "a"], "pass_rate_mean": [0.5, 0.9, 0.7],
    ...                    "case_attempts": [10, 10, 10], "case_passes": [5, 9, 7]})
    >>> fl = factor_levels(vs)
    >>> fl[["value", "n_variants", "mean_pass_rate", "case_pass_rate"]].round(3).values.tolist()
    [['a', 2, 0.6, 0.6], ['b', 1, 0.9, 0.9]]
    """
    factors = sorted(c for c in summary.columns if c.startswith(FACTOR_PREFIX))
    if pass_k is None:
        pass_k = sorted(
            int(c.removeprefix("pass_at_")) for c in summary.columns if c.startswith("pass_at_")
        )
    means = {
        "mean_pass_rate": "pass_rate_mean",
        "mean_average_score": "average_score_mean",
        "mean_latency_ms": "average_latency_ms_mean",
        "mean_cost_usd": "total_cost_usd_mean",
        "mean_trial_success_rate": "trial_success_rate",
    }
    for k in pass_k:
        means[f"mean_pass_at_{k}"] = f"pass_at_{k}"
        means[f"mean_pass_hat_{k}"] = f"pass_hat_{k}"
    means = {name: source for name, source in means.items() if source in summary.columns}
    confidence = summary.attrs.get("confidence_level", 0.95)
    by_values = [summary[b].astype(str).to_numpy(dtype=object) for b in by]
    runs = pd.factorize(summary["run_id"].astype(str).to_numpy(dtype=object))[0]
    experiments = pd.factorize(summary["experiment_id"].astype(str).to_numpy(dtype=object))[0]
    columns: dict[str, list[Any]] = {
        name: [] for name in ("factor", "value", *by, "n_variants", "n_runs", "n_experiments")
    }
    sums: dict[str, list[np.ndarray]] = {
        name: [] for name in (*means, "case_attempts", "case_passes")
    }
    for column in factors:
        level = summary[column].to_numpy(dtype=object, na_value=UNSET_FACTOR)
        key = pd.MultiIndex.from_arrays([level, *by_values]) if by else pd.Index(level)
        codes, groups = pd.factorize(key, sort=True)
        size = len(groups)

        def distinct(values: np.ndarray, codes: np.ndarray = codes, size: int = size) -> list[int]:
            pairs = np.unique(codes.astype(np.int64) * (int(values.max(initial=0)) + 1) + values)
            width = int(values.max(initial=0)) + 1
            return np.bincount(pairs // width, minlength=size).tolist()

        columns["factor"] += [column.removeprefix(FACTOR_PREFIX)] * size
        if by:
            for i, name in enumerate(("value", *by)):
                columns[name] += list(groups.get_level_values(i))
        else:
            columns["value"] += list(groups)
        columns["n_variants"] += np.bincount(codes, minlength=size).tolist()
        columns["n_runs"] += distinct(runs)
        columns["n_experiments"] += distinct(experiments)
        for name, source in means.items():
            values = summary[source].to_numpy(np.float64)
            known = ~np.isnan(values)
            total = np.bincount(codes[known], weights=values[known], minlength=size)
            sums[name].append(_ratio(total, np.bincount(codes[known], minlength=size)))
        for name in ("case_attempts", "case_passes"):
            weights = summary[name].to_numpy(np.float64)
            sums[name].append(np.bincount(codes, weights=weights, minlength=size))
    frame: dict[str, Any] = dict(columns)
    for name, parts in sums.items():
        values = np.concatenate(parts) if parts else np.zeros(0)
        frame[name] = values.astype(np.int64) if name.startswith("case_") else values
    attempts, passes = frame["case_attempts"], frame["case_passes"]
    frame["case_pass_rate"] = _ratio(passes, attempts)
    low, high = stats.wilson_interval(passes, attempts, confidence)
    frame["case_pass_rate_ci_low"] = np.asarray(low, dtype=np.float64).reshape(-1)
    frame["case_pass_rate_ci_high"] = np.asarray(high, dtype=np.float64).reshape(-1)
    out = pd.DataFrame(frame, copy=False)
    out.attrs["notes"] = _pooling_notes(summary, by)
    return out


#: ``variant_summary.attrs`` key of the suite of each run it holds (the catalog's
#: columns below, run by run), read by :func:`factor_levels` for its notes.
RUN_SUITES = "run_suites"
_SUITE_COLUMNS = ("run_id", "suite_name", "suite_version", "n_cases", "evaluators")


@dataclass(frozen=True, eq=True)
class _RunSuites:
    """The catalog's suite columns of a summary's runs, as ``(column, values)`` pairs."""

    columns: tuple[tuple[str, tuple[Any, ...]], ...]

    def __deepcopy__(self, memo: dict[int, Any]) -> _RunSuites:
        # Immutable: pandas deep-copies attrs on every operation on the summary, which
        # cost 45 ms per filter of a summary of 10 000 runs as a dict of tuples.
        return self


def _pooling_notes(summary: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """:func:`_suite_notes` of the runs ``summary`` holds (a filtered summary: of those it
    kept), within each group of ``by`` (runs in different groups are not pooled), the
    group named first. Empty when the summary does not carry its runs' suites (one built
    without the catalog)."""
    suites = summary.attrs.get(RUN_SUITES)
    if not isinstance(suites, _RunSuites) or not len(summary):
        return []
    catalog = pd.DataFrame(dict(suites.columns)).drop_duplicates("run_id").set_index("run_id")
    # A new frame of plain arrays: grouping the summary itself deep-copies its attrs.
    rows = pd.DataFrame(
        {"_run": summary["run_id"].astype(str).to_numpy(dtype=object)}
        | {b: summary[b].astype(str).to_numpy(dtype=object) for b in by}
    )

    def of(run_ids: pd.Series) -> pd.DataFrame:
        at = catalog.index.get_indexer(pd.unique(run_ids.to_numpy()))
        return catalog.iloc[at[at >= 0]]

    if not by:
        return _suite_notes(of(rows["_run"]))
    notes = []
    for key, group in rows.groupby(list(by), sort=True):
        runs = of(group["_run"])
        label = ", ".join(f"{b}={k}" for b, k in zip(by, key, strict=True))
        notes += [f"{label}: {note}" for note in _suite_notes(runs)]
    return notes


def _suite_notes(runs: pd.DataFrame) -> list[str]:
    """What :func:`factor_levels` pools that is not one set of cases, in words.

    A level's means run over every run's variants. Runs of different suites, or of one
    suite name and version whose cases changed between runs, put pass rates over
    different cases side by side; the frame cannot show it, so its ``attrs["notes"]``
    (and ``archive summarize``) say it.

    Parameters
    ----------
    runs
        Catalog rows of the runs pooled (:meth:`ArchiveSlice.runs`): ``suite_name``,
        ``suite_version``, ``n_cases`` and, when present, ``evaluators`` (runs of one suite
        scored by different versions of a custom evaluator, a judge say, are noted too).

    Returns
    -------
    list of str
        One note per finding, empty when every run has the same suite and cases.

    Examples
    --------
    >>> runs = pd.DataFrame({"suite_name": ["s", "s", "t"], "suite_version": ["1", "1", "1"],
    ...                      "n_cases": [14, 14, 20]})
    >>> _suite_notes(runs)  # doctest: +NORMALIZE_WHITESPACE
    ['the factor levels pool runs of 2 suites (s@1: 2 runs, t@1: 1 run): their means
      and pooled rates average over different cases']
    """
    if not len(runs):
        return []
    suite = runs["suite_name"].astype(str) + "@" + runs["suite_version"].astype(str)
    notes = []
    counts = suite.value_counts(sort=False).sort_index()
    if len(counts) > 1:
        listed = ", ".join(f"{name}: {count_noun(n, 'run')}" for name, n in counts.items())
        notes.append(
            f"the factor levels pool runs of {len(counts)} suites ({listed}): their means and "
            "pooled rates average over different cases"
        )
    for name, cases in runs["n_cases"].groupby(suite, sort=True):
        sizes = sorted(set(cases.astype(int)))
        if len(sizes) > 1:
            notes.append(
                f"suite {name} has {sizes[0]} cases in one run, {sizes[-1]} in another: its "
                "cases changed without a new version, so its runs are not over one set of cases"
            )
    if "evaluators" in runs.columns:
        # Runs archived before records kept their evaluators (null) cannot be told apart.
        for name, used in runs["evaluators"].dropna().groupby(suite, sort=True):
            versions = sorted(set(used))
            if len(versions) > 1:
                notes.append(
                    f"suite {name}'s runs were scored by different evaluator versions "
                    f"({'; '.join(v or 'none' for v in versions)}): their pass rates are not "
                    "on one scale"
                )
    return notes


# --------------------------------------------------------------------------- everything


def single_variant_notes(runs: pd.DataFrame) -> list[str]:
    """The note on the runs of ``runs`` (catalog rows: ``run_id``, ``experiment_id``,
    ``n_variants``) that hold a single variant, or none.

    ``add`` refuses such runs since 6 December 2026, but runs archived before still read,
    and they compare nothing (no paired row, no verdict), which the frames alone leave
    unsaid. The paired differences and the verdicts carry it in ``attrs["notes"]``, as
    the factor levels carry theirs; ``archive summarize`` prints it.

    Examples
    --------
    >>> runs = pd.DataFrame({"run_id": ["0123456789abcdef", "fedcba9876543210"],
    ...                      "experiment_id": ["old@1", "new@1"], "n_variants": [1, 5]})
    >>> print(*single_variant_notes(runs))  # doctest: +NORMALIZE_WHITESPACE
    1 run(s) hold a single variant (01234567 of old@1; archived before such runs were
    refused): they have no paired comparison and no verdict, only their variant's summary
    >>> single_variant_notes(runs.iloc[1:]), single_variant_notes(pd.DataFrame())
    ([], [])
    """
    if "n_variants" not in runs.columns:
        return []  # no catalog rows given (analyze_stats without runs)
    alone = runs[runs["n_variants"].to_numpy() < 2]
    if alone.empty:
        return []
    return [
        f"{len(alone)} run(s) hold a single variant ({_named_runs(alone)}; archived "
        "before such runs were refused): they have no paired comparison and no verdict, "
        "only their variant's summary"
    ]


def _named_runs(runs: pd.DataFrame) -> str:
    """The first three of ``runs`` (catalog rows) as a note names them, and how many more."""
    pairs = zip(runs["run_id"], runs["experiment_id"], strict=True)
    named = [f"{str(run_id)[:8]} of {experiment}" for run_id, experiment in pairs]
    more = f" and {len(named) - 3} more" if len(named) > 3 else ""
    return ", ".join(named[:3]) + more


def stopped_early_notes(runs: pd.DataFrame) -> list[str]:
    """The notes on the runs of ``runs`` (catalog rows: ``run_id``, ``experiment_id``,
    ``stopped_early``) that an early-stopping rule watched: those it stopped, and those it
    watched to the end (``stopped_early`` False); none for runs without a rule (None).

    Either way the rule's statement is the inferential one and the fixed-sample numbers
    are descriptive (as every single-run surface says, from the run's block:
    :mod:`~agenticlens_frames.early_stopping`; a watched run's fixed-sample verdicts,
    leading, gave it a second chance at a false claim, docs/statistics.md §13). The
    archive's own frames pool such runs with the others and cannot lead with each one's
    statement, so the paired differences and the verdicts carry this in
    ``attrs["notes"]``; ``archive summarize`` and ``archive slice`` print it.

    Examples
    --------
    >>> runs = pd.DataFrame({"run_id": ["0123456789abcdef", "fedcba9876543210", "f" * 16],
    ...                      "experiment_id": ["a@1", "b@1", "c@1"],
    ...                      "stopped_early": [True, None, False]})
    >>> for note in stopped_early_notes(runs):  # doctest: +NORMALIZE_WHITESPACE
    ...     print(note)
    1 run(s) stopped early by their early-stopping rule (01234567 of a@1): their
    fixed-sample rows are descriptive after the early stop (their intervals and p-values
    assume a sample size fixed in advance, and the estimates lean away from 0); the
    stopping decision is the inferential statement (slice.to_run() and analyze_runs()
    lead with it)
    1 run(s) ran to the end under an early-stopping rule that never stopped them (ffffffff
    of c@1): their fixed-sample rows are descriptive beside the early-stopping rule (read
    after the rule had watched the data, they would give a second chance at a false
    claim); the rule's final state is the inferential statement (slice.to_run() and
    analyze_runs() lead with it)
    >>> stopped_early_notes(runs.iloc[1:2]), stopped_early_notes(pd.DataFrame())
    ([], [])
    """
    if "stopped_early" not in runs.columns:
        return []  # no catalog rows given (analyze_stats without runs)
    flags = runs["stopped_early"]
    stopped = runs[flags.map(lambda v: v is True).to_numpy(dtype=bool)]
    watched = runs[flags.map(lambda v: v is False).to_numpy(dtype=bool)]
    notes = []
    if not stopped.empty:
        notes.append(
            f"{len(stopped)} run(s) stopped early by their early-stopping rule "
            f"({_named_runs(stopped)}): their fixed-sample rows are descriptive after the "
            "early stop (their intervals and p-values assume a sample size fixed in advance, "
            "and the estimates lean away from 0); the stopping decision is the inferential "
            "statement (slice.to_run() and analyze_runs() lead with it)"
        )
    if not watched.empty:
        notes.append(
            f"{len(watched)} run(s) ran to the end under an early-stopping rule that never "
            f"stopped them ({_named_runs(watched)}): their fixed-sample rows are descriptive "
            "beside the early-stopping rule (read after the rule had watched the data, they "
            "would give a second chance at a false claim); the rule's final state is the "
            "inferential statement (slice.to_run() and analyze_runs() lead with it)"
        )
    return notes


@class_keyword_hints()
@dataclass
class ArchiveAnalysis:
    """Every result frame of an archive slice, computed once from its statistics.

    Attributes
    ----------
    stats
        The engine's sufficient statistics.
    runs
        The catalog rows of the runs involved.
    case_matrix, trial_summary, variant_summary, comparisons, factor_levels,
    case_level_intervals, paired_differences
        Result frames (see the functions of the same names in this module and in
        :mod:`~agenticlens_frames.archive.paired`). ``variant_summary``'s
        ``case_pass_rate_ci_*`` and ``comparisons``' ``pooled_p_value`` pool attempts as
        AgenticLens does; ``case_level_intervals`` and ``paired_differences`` hold the
        interval and the comparison to read, with cases as the unit.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> result = example_archive().all().analyze(engine="numpy")
    >>> result  # doctest: +NORMALIZE_WHITESPACE
    ArchiveAnalysis(engine='numpy', runs=1, variants=5, attempts=350, case_rows=70,
                    pass_k=[1, 3, 5]; no filter; verdicts: the slice's .verdicts())
    >>> result.variant_summary[["variant_id", "n_cases", "pareto_optimal"]]
            variant_id  n_cases  pareto_optimal
    0         baseline       14            True
    1      model-large       14           False
    2        prompt-v2       14            True
    3  retrieval-dense       14           False
    4         large-v2       14            True
    """

    stats: SufficientStats
    runs: pd.DataFrame
    trial_summary: pd.DataFrame
    variant_summary: pd.DataFrame
    comparisons: pd.DataFrame
    factor_levels: pd.DataFrame
    pass_k: tuple[int, ...]
    confidence_level: float
    regression_threshold: float
    latency_missing: LatencyPolicy
    info: dict[str, Any] = field(default_factory=dict)
    _case_matrix: pd.DataFrame | None = field(default=None, repr=False)
    _case_level: pd.DataFrame | None = field(default=None, repr=False)
    _paired: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def case_matrix(self) -> pd.DataFrame:
        """:func:`case_matrix` of the statistics, built on first use and kept (the other
        frames do not need it: at 100M attempts it is 10M rows).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> result = example_archive().slice(variants="baseline").analyze(engine="numpy")
        >>> result.case_matrix[["variant_id", "case_id", "attempts", "passes"]].head(2)
          variant_id              case_id  attempts  passes
        0   baseline  refund-damaged-item         5       1
        1   baseline          track-order         5       2
        """
        if self._case_matrix is None:
            self._case_matrix = case_matrix(self.stats, self.pass_k)
        return self._case_matrix

    @property
    def case_level_intervals(self) -> pd.DataFrame:
        """:func:`case_level_intervals` of the variants in ``variant_summary``, built on
        first use and kept (the model is fitted per variant: about 0.3 ms each).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> sl = example_archive().slice(variants="prompt-v2", include_baseline=True)
        >>> ci = sl.analyze(engine="numpy").case_level_intervals
        >>> ci[["variant_id", "pass_rate", "ci_low", "ci_high", "n_cases"]].round(3)
          variant_id  pass_rate  ci_low  ci_high  n_cases
        0   baseline      0.714   0.569    0.819       14
        1  prompt-v2      0.871   0.748    0.931       14
        """
        if self._case_level is None:
            self._case_level = case_level_intervals(
                self.stats, self.variant_summary, confidence_level=self.confidence_level
            )
        return self._case_level

    @property
    def paired_differences(self) -> pd.DataFrame:
        """:func:`~agenticlens_frames.archive.paired.paired_differences` of the variants in
        ``variant_summary``: each candidate against its run's baseline, case by case.
        Built on first use and kept (one paired t per comparison and dimension). Its
        ``attrs["notes"]`` names the runs that hold a single variant
        (:func:`single_variant_notes`): they have no row here; and the runs their
        early-stopping rule stopped (:func:`stopped_early_notes`): their rows are
        descriptive.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> sl = example_archive().slice(variants="prompt-v2", include_baseline=True)
        >>> d = sl.analyze(engine="numpy").paired_differences
        >>> d[["candidate_variant_id", "dimension", "mean_difference", "paired_cases"]].round(3)
          candidate_variant_id dimension  mean_difference  paired_cases
        0            prompt-v2   quality            0.157            14
        1            prompt-v2   latency            2.243            14
        2            prompt-v2      cost            0.000            14
        """
        if self._paired is None:
            from .paired import paired_differences

            paired = paired_differences(
                self.stats, self.variant_summary, confidence_level=self.confidence_level
            )
            paired.attrs["notes"] = single_variant_notes(self.runs) + stopped_early_notes(self.runs)
            self._paired = paired
        return self._paired

    def frames(self) -> dict[str, pd.DataFrame]:
        """The result frames by name.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> frames = example_archive().all().analyze(engine="numpy").frames()
        >>> {name: len(frame) for name, frame in frames.items()}  # doctest: +ELLIPSIS
        {'case_matrix': 70, 'trial_summary': 25, 'variant_summary': 5, ...}
        """
        return {name: getattr(self, name) for name in RESULT_FRAMES}

    def to_parquet(self, folder: str | Path) -> Path:
        """Write ``<frame>.parquet`` for every result frame (and ``runs.parquet``) into
        ``folder`` (created if needed) and return it.

        Examples
        --------
        >>> import tempfile
        >>> from agenticlens_frames.testing import example_archive
        >>> result = example_archive().all().analyze(engine="numpy")
        >>> folder = result.to_parquet(tempfile.mkdtemp())
        >>> sorted(p.name for p in folder.iterdir())  # doctest: +NORMALIZE_WHITESPACE
        ['case_level_intervals.parquet', 'case_matrix.parquet', 'comparisons.parquet',
         'factor_levels.parquet', 'paired_differences.parquet', 'runs.parquet',
         'trial_summary.parquet', 'variant_summary.parquet']
        """
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in {**self.frames(), "runs": self.runs}.items():
            clean = frame.copy()
            clean.attrs = {}
            for column in clean.columns:
                if clean[column].dtype == object:
                    clean[column] = clean[column].map(
                        lambda v: list(v) if isinstance(v, tuple) else v
                    )
            clean.to_parquet(out / f"{name}.parquet", index=False)
        return out

    def __repr__(self) -> str:
        # What the result holds: runs, variants and attempts (it gave case rows only), the
        # filters of the slice analysed, and where the verdicts are. It holds none: its
        # paired differences are per comparison (a slice is no declared family) and its
        # comparisons AgenticLens's pooled ones, so the display shows neither as a finding
        # and says how to get each run's verdicts under its declared correction.
        attempts = int(self.stats.cases["attempts"].sum()) if len(self.stats.cases) else 0
        filters = self.info.get("filter")
        return (
            f"ArchiveAnalysis(engine={self.stats.engine!r}, runs={len(self.stats.layout.run_ids)}, "
            f"variants={len(self.variant_summary)}, attempts={attempts}, "
            f"case_rows={len(self.stats.cases)}, pass_k={list(self.pass_k)}"
            + ("" if filters is None else f"; {filters}")
            + "; verdicts: the slice's .verdicts())"
        )


@keyword_hints
def analyze_stats(
    st: SufficientStats,
    variant_info: pd.DataFrame,
    *,
    pass_k: Sequence[int] = (1,),
    confidence_level: float = 0.95,
    regression_threshold: float = 0.05,
    latency_missing: LatencyPolicy = "exclude",
    runs: pd.DataFrame | None = None,
) -> ArchiveAnalysis:
    """Every result frame from sufficient statistics (no pass over the attempts).

    Parameters
    ----------
    st
        From :func:`~agenticlens_frames.archive.engines.sufficient_stats`.
    variant_info
        One row per kept (run, variant), from
        :meth:`~agenticlens_frames.archive.query.ArchiveSlice.variant_info`.
    pass_k, confidence_level, regression_threshold, latency_missing
        As for :func:`agenticlens_frames.analyze`.
    runs
        Catalog rows to carry along.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive()
    >>> st = archive.all().stats("numpy")
    >>> result = analyze_stats(st, archive.all().variant_info(), pass_k=[1, 3])
    >>> sorted(result.frames())
    ['case_level_intervals', 'case_matrix', 'comparisons', 'factor_levels', \
'paired_differences', 'trial_summary', 'variant_summary']
    """
    if not regression_threshold >= 0:
        raise InputError(
            f"regression threshold must be ≥ 0, got {regression_threshold}",
            location="regression_threshold",
        )
    ks = check_pass_k(pass_k)
    from .paired import mde_alpha

    # Refused now, not when paired_differences is first read: its MDE's alpha is 1 - this.
    mde_alpha(confidence_level)
    core = _case_core(st, ks)
    ts = trial_summary(st, latency_missing=latency_missing)
    vs = variant_summary(st, core, ts, variant_info, confidence_level=confidence_level)
    comps = compare_to_baseline(vs, core, regression_threshold=regression_threshold)
    if runs is not None:
        # On the summary, so factor_levels(vs, by=...) called by the user notes what
        # the analysis's own factor_levels does: the notes come from the function.
        vs.attrs[RUN_SUITES] = _RunSuites(
            tuple((c, tuple(runs[c])) for c in _SUITE_COLUMNS if c in runs.columns)
        )
    levels = factor_levels(vs, pass_k=ks)
    return ArchiveAnalysis(
        stats=st,
        runs=runs if runs is not None else pd.DataFrame(),
        trial_summary=ts,
        variant_summary=vs,
        comparisons=comps,
        factor_levels=levels,
        pass_k=ks,
        confidence_level=confidence_level,
        regression_threshold=regression_threshold,
        latency_missing=latency_missing,
        # What the engine read (rollups, attempts or both), for the reader of a result.
        info={"engine": st.engine, **({"read": st.info["read"]} if "read" in st.info else {})},
    )
