"""The non-inferiority gate for CI: is each candidate no worse than the baseline by δ?"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from ..errors import InputError
from ..stats_paired import sps  # scipy.stats, imported on first use

__all__ = ["GATE_COLUMNS", "gate_passed", "noninferiority_failures", "noninferiority_gate"]

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
    :math:`1-α` confidence bound of candidate − baseline, :math:`\bar d - t_{df,1-α}SE`,
    is above −δ (the TOST form: the lower end of a :math:`1-2α` two-sided interval). For
    lower-is-better evaluators (latency, cost) the upper bound must be below +δ. A
    candidate with no comparable row fails. Each candidate is its own decision; requiring
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
    ...     "evaluator": ["passed"], "higher_is_better": [True], "mean_difference": [0.01],
    ...     "standard_error": [0.01], "df": [99.0]})
    >>> gate = noninferiority_gate(frame, margin=0.02)
    >>> round(float(gate.loc[0, "bound"]), 4), bool(gate.loc[0, "passed"])
    (-0.0066, True)
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
        se, df, est = float(row["standard_error"]), float(row["df"]), float(row["mean_difference"])
        threshold = -margin if higher else margin
        if not (math.isfinite(se) and math.isfinite(df)):
            bound, passed, reason = math.nan, False, "no interval: fewer than two paired cases"
        else:
            q = float(sps.t.ppf(1 - alpha, df))
            bound = est - q * se if higher else est + q * se
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
                "bound_method": f"one-sided t (df={df:g})" if math.isfinite(df) else None,
                "passed": bool(passed),
                "reason": reason,
            }
        )
    gate = pd.DataFrame(out, columns=GATE_COLUMNS)
    gate.attrs["passed"] = bool(len(gate)) and bool(gate["passed"].all())
    return gate


def gate_passed(gate: pd.DataFrame) -> bool:
    """Whether every candidate passed the non-inferiority gate."""
    return bool(len(gate)) and bool(gate["passed"].astype(bool).all())


def noninferiority_failures(gate: pd.DataFrame | None) -> list[str] | None:
    """Candidates that failed the gate (None when no gate was set), for exit status 5.

    Examples
    --------
    >>> noninferiority_failures(None) is None
    True
    >>> noninferiority_failures(pd.DataFrame({"candidate_variant_id": ["b", "c"],
    ...                                       "passed": [False, True]}))
    ['b']
    """
    if gate is None:
        return None
    return [str(c) for c in gate.loc[~gate["passed"].astype(bool), "candidate_variant_id"]]
