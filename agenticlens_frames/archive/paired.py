"""Case-level paired comparisons across archived runs, from the per-case rollups.

Each candidate of a run against that run's baseline, case by case: the per-case values of
the two arms (pass rate, mean latency, mean cost) are paired on the case, and the mean of
the differences gets the paired t interval and test of
:func:`~agenticlens_frames.stats_paired.paired_difference` — the estimator
``experiment run`` uses — so three trials of one case count as one piece of evidence, not
three. Per comparison and uncorrected: an archive slice is not a declared family, so
nothing here is called significant. The verdicts of a run, with the correction its
manifest declared over every dimension, come from
:meth:`~agenticlens_frames.archive.query.ArchiveSlice.verdicts`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..errors import InputError, check_proportion
from ._slots import case_slots
from .sufficient import SufficientStats

__all__ = ["ARCHIVE_DIMENSIONS", "PAIRED_DIFFERENCE_COLUMNS", "mde_alpha", "paired_differences"]

#: Each column of :func:`paired_differences`, in order, with its dtype.
_COLUMN_TYPES: dict[str, Any] = {
    "experiment_id": str,
    "run_id": str,
    "baseline_variant_id": str,
    "candidate_variant_id": str,
    "dimension": str,
    "unit": str,
    "higher_is_better": bool,
    "paired_cases": np.int64,
    "baseline_only_cases": np.int64,
    "candidate_only_cases": np.int64,
    "baseline_mean": np.float64,
    "candidate_mean": np.float64,
    "mean_difference": np.float64,
    "standard_error": np.float64,
    "ci_low": np.float64,
    "ci_high": np.float64,
    "confidence_level": np.float64,
    "ci_method": str,
    "p_value": np.float64,
    "p_value_method": str,
    "degenerate": bool,
    "improved_cases": np.int64,
    "regressed_cases": np.int64,
    "mde": np.float64,
    "mde_alpha": np.float64,
    "mde_power": np.float64,
    "unevaluated_attempts": np.int64,
    "failed_counted_as_failures": bool,
}
#: Columns of :func:`paired_differences`, in order.
PAIRED_DIFFERENCE_COLUMNS = list(_COLUMN_TYPES)


class _Dimension(NamedTuple):
    """A per-case value the rollups hold: ``numerator / denominator`` of one case."""

    numerator: str
    denominator: str
    unit: str
    higher_is_better: bool
    #: ``experiment run``'s evaluator of the dimension, for the docs and the tests.
    evaluator: str


#: The dimensions compared, as ``experiment run`` names them; safety and reliability need
#: the checks and the trials of each attempt, which only a run read back whole has.
ARCHIVE_DIMENSIONS: dict[str, _Dimension] = {
    "quality": _Dimension("passes", "attempts", "proportion", True, "passed"),
    "latency": _Dimension("latency_sum", "latency_count", "ms", False, "latency_ms"),
    "cost": _Dimension("cost_sum", "cost_count", "usd", False, "cost_usd"),
}


def _per_case_values(
    numerator: np.ndarray,
    denominator: np.ndarray,
    case_index: np.ndarray,
    rows: np.ndarray,
    size: int,
    failed: np.ndarray | None,
) -> np.ndarray:
    """One arm's per-case means (``failed[row]`` attempts fewer at each case when given),
    laid out by case index (NaN: no value at the case)."""
    out = np.full(size, np.nan)
    count = denominator[rows]  # the arm's rows only: linear in the slice overall
    if failed is not None:
        count = count - failed[rows]
    keep = count > 0
    taken = rows[keep]
    out[case_index[taken]] = numerator[taken] / count[keep]
    return out


def mde_alpha(confidence_level: float, alpha: float | None = None) -> float:
    """The α of the minimum detectable effect: ``alpha``, or 1 − ``confidence_level``;
    in (0, 0.5] as every α of the package (``paired.settings.check_alpha``).

    It took any number in (0, 1): ``alpha=0.95`` (the confidence level given for α) or a
    confidence level of 0.3 gave the effect found at α = 0.95 or 0.7, printed as if
    meant.

    Examples
    --------
    >>> mde_alpha(0.9), mde_alpha(0.95, 0.01)
    (0.1, 0.01)
    >>> mde_alpha(0.95, 0.95)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: alpha: expected a number > 0 and <= 0.5, a \
significance level such as 0.05 (1 - confidence), got 0.95
    >>> mde_alpha(0.3)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: confidence_level: the minimum detectable effect's \
alpha, 1 - confidence level, would be 0.7 (give a confidence level of at least 0.5, such as \
0.95, or the alpha itself)
    """
    from ..paired.settings import check_alpha  # lazily: the archive's import stays light

    check_proportion(confidence_level, "confidence level", location="confidence_level")
    if alpha is not None:
        return check_alpha(alpha)
    derived = round(1.0 - confidence_level, 12)
    if derived > 0.5:
        raise InputError(
            f"the minimum detectable effect's alpha, 1 - confidence level, would be {derived:g}",
            location="confidence_level",
            hint="give a confidence level of at least 0.5, such as 0.95, or the alpha itself",
        )
    return derived


def paired_differences(
    st: SufficientStats,
    variant_info: pd.DataFrame,
    *,
    confidence_level: float = 0.95,
    alpha: float | None = None,
    power: float = 0.8,
) -> pd.DataFrame:
    """Each candidate minus its run's baseline, case by case: pass rate, latency, cost.

    For every run of ``variant_info`` whose baseline it holds, one row per other variant
    and dimension (a dimension no case has on both arms, such as an unpriced cost, gets
    none). The per-case values are ``experiment run``'s: the pass rate over the attempts
    that were evaluated — every attempt with status ``trial_failed`` (an infrastructure
    failure, not the agent's; its trial failed as a whole or in part) is left out and
    counted in ``unevaluated_attempts`` — and the mean latency and cost over the attempts
    that have one. Cases are paired when both arms have a value.
    ``failed_counted_as_failures`` is always false (kept so that frames keep their
    columns: it marked rows where earlier versions could not tell failed attempts apart).

    The interval and p-value are the paired t over cases (the degenerate case — every
    difference equal — gets the exact sign-flip p-value); ``mde`` is the smallest true
    difference this comparison would find with ``power`` at ``alpha`` on its own,
    uncorrected (NaN when ``power`` is not above ``alpha``: then no difference is the
    smallest). These equal ``experiment run``'s per-comparison numbers for the
    ``passed``, ``latency_ms`` and ``cost_usd`` evaluators (tested).

    Parameters
    ----------
    st
        The slice's sufficient statistics.
    variant_info
        The kept (run, variant) rows (``variant_summary`` or
        :meth:`~agenticlens_frames.archive.query.ArchiveSlice.variant_info`).
    confidence_level
        For the interval.
    alpha, power
        For the minimum detectable effect (``alpha`` defaults to 1 − confidence level, as
        the per-comparison look of :func:`~agenticlens_frames.case_verdicts`).

    Returns
    -------
    pandas.DataFrame
        :data:`PAIRED_DIFFERENCE_COLUMNS`, runs in slice order, candidates in manifest
        order, then the dimensions of :data:`ARCHIVE_DIMENSIONS`.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> sl = example_archive().all()
    >>> diffs = paired_differences(sl.stats("numpy"), sl.variant_info())
    >>> quality = diffs[diffs["dimension"] == "quality"]
    >>> quality[["candidate_variant_id", "paired_cases", "mean_difference", "ci_low"]].round(3)
      candidate_variant_id  paired_cases  mean_difference  ci_low
    0          model-large            14            0.029  -0.178
    3            prompt-v2            14            0.157  -0.001
    6      retrieval-dense            14            0.107  -0.054
    9             large-v2            14            0.129  -0.134
    >>> diffs.loc[1, ["dimension", "unit"]].tolist(), bool(diffs.loc[1, "higher_is_better"])
    (['latency', 'ms'], False)
    """
    from ..stats_paired import arm_coverage, paired_difference, paired_mde  # lazily: scipy

    alpha = mde_alpha(confidence_level, alpha)
    check_proportion(power, "power", location="power")
    bounded = power > alpha
    offsets, info, info_slot, slot, failed = case_slots(st, variant_info)
    cases = st.cases
    # Rows grouped by slot once, each comparison then reads only its two arms' rows. The
    # engines give them in slot order already (checked: no sort of 10M rows then).
    order = (
        np.arange(len(slot)) if np.all(slot[1:] >= slot[:-1]) else np.argsort(slot, kind="stable")
    )
    bounds = np.searchsorted(slot[order], np.arange(int(offsets[-1]) + 1))
    columns = {
        name: cases[name].to_numpy(np.float64)
        for d in ARCHIVE_DIMENSIONS.values()
        for name in (d.numerator, d.denominator)
    }
    case_index = cases["case_index"].to_numpy(np.int64)
    is_base = info["is_baseline"].to_numpy(bool)
    runs, experiments, variants = (
        info[c].astype(str).to_numpy(dtype=object)
        for c in ("run_id", "experiment_id", "variant_id")
    )
    baseline_of = {runs[i]: i for i in np.flatnonzero(is_base)}
    rows: list[dict[str, Any]] = []
    for cand in np.flatnonzero(~is_base):
        base = baseline_of.get(runs[cand])
        if base is None:  # the slice left the run's baseline out
            continue
        slots = (info_slot[base], info_slot[cand])
        arms = [order[bounds[s] : bounds[s + 1]] for s in slots]
        size = int(max((case_index[a].max() + 1 for a in arms if len(a)), default=0))
        left_out = sum(int(failed[r].sum()) for r in arms)
        for name, dim in ARCHIVE_DIMENSIONS.items():
            # A failed trial's attempts have no latency or cost: only the pass rate's
            # denominator counts them.
            skip = failed if name == "quality" else None
            a, b = (
                _per_case_values(
                    columns[dim.numerator], columns[dim.denominator], case_index, r, size, skip
                )
                for r in arms
            )
            both = ~np.isnan(a) & ~np.isnan(b)
            if not both.any():
                continue
            r = paired_difference(b[both] - a[both], method="t", confidence_level=confidence_level)
            mde = math.nan
            # A power not above alpha has no smallest detectable difference (a zero change
            # is "found" that often): NaN, as experiment run's comparisons and the plans.
            if bounded and r.n >= 2 and not r.degenerate and math.isfinite(r.standard_error):
                mde = paired_mde(r.standard_error * math.sqrt(r.n), r.n, alpha, power)
            low, high = r.ci_low, r.ci_high
            if dim.unit == "proportion":
                # A difference of two rates lies in [-1, 1] (NaN stays NaN); an MDE beyond
                # that means no effect is detectable.
                low, high = float(np.clip(low, -1.0, 1.0)), float(np.clip(high, -1.0, 1.0))
                mde = math.inf if math.isfinite(mde) and mde > 1.0 else mde
            better, worse = (
                (r.improved, r.regressed) if dim.higher_is_better else (r.regressed, r.improved)
            )
            only_baseline, only_candidate, baseline_mean, candidate_mean = arm_coverage(a, b)
            rows.append(
                {
                    "experiment_id": experiments[cand],
                    "run_id": runs[cand],
                    "baseline_variant_id": variants[base],
                    "candidate_variant_id": variants[cand],
                    "dimension": name,
                    "unit": dim.unit,
                    "higher_is_better": dim.higher_is_better,
                    "paired_cases": r.n,
                    "baseline_only_cases": only_baseline,
                    "candidate_only_cases": only_candidate,
                    "baseline_mean": baseline_mean,
                    "candidate_mean": candidate_mean,
                    "mean_difference": r.estimate,
                    "standard_error": r.standard_error,
                    "ci_low": low,
                    "ci_high": high,
                    "confidence_level": confidence_level,
                    "ci_method": r.ci_method,
                    "p_value": r.p_value,
                    "p_value_method": r.p_value_method,
                    "degenerate": r.degenerate,
                    "improved_cases": better,
                    "regressed_cases": worse,
                    "mde": mde,
                    "mde_alpha": alpha,
                    "mde_power": power,
                    "unevaluated_attempts": int(left_out),
                    "failed_counted_as_failures": False,
                }
            )
    # Typed column by column: without a row (no candidate beside its baseline) every
    # column was object, and frames of several slices then concatenated into objects.
    frame = pd.DataFrame(rows, columns=PAIRED_DIFFERENCE_COLUMNS).astype(_COLUMN_TYPES)
    frame.attrs.update(confidence_level=confidence_level, correction="none")
    return frame
