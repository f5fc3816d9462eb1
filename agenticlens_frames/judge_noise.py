"""Judge noise: how much of a judged metric's variation is the judge's, not the agent's.

With ``samples > 1`` a judge grades the same output several times, so it is itself a
noisy instrument. Per judge, metric and variant :func:`judge_noise` puts the variance
between judge samples of one output next to the variance between the agent's trials of
a case and between cases (a three-level decomposition, see
:mod:`agenticlens_frames.stats_judge`), with the judge's agreement.
:func:`judge_noise_comparisons` says, for each candidate against the baseline, how much of
the paired interval's width (case as the unit) the judge contributes, whether judge noise
rather than agent noise limits what the run can detect, and how many samples per
evaluation would bring the judge's share under 10 %.

Nothing here changes an AgenticLens-compatible number: the results are new frames
(``judge_noise``, ``judge_noise_comparisons``) and a new top-level report key
``judge_noise``, present only when the run has judge scores.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._distributions import t_ppf
from ._values import clip
from .judges import JUDGE_EVALUATOR_TYPES, summarize_judges
from .stats_judge import fleiss_kappa, nested_variance_components

if TYPE_CHECKING:
    from .frames import ExperimentRun

__all__ = [
    "JUDGE_BLOCK_FRAMES",
    "TARGET_JUDGE_SHARE",
    "judge_frames_from_block",
    "judge_noise",
    "judge_noise_comparisons",
    "judge_noise_outputs",
    "judge_samples",
    "judge_totals",
    "judge_unavailable_notes",
    "variant_judge_totals",
]

#: The judge's share of a comparison's interval width that "enough samples" aims under.
TARGET_JUDGE_SHARE = 0.10

_KEYS = ["evaluator", "metric"]


def judge_samples(run: ExperimentRun) -> pd.DataFrame:
    """One row per judge sample of every delivered, non-skipped judge score.

    Columns: ``variant_id``, ``trial``, ``case_id``, ``evaluator``, ``metric``,
    ``sample`` (0-based), ``value``, ``samples`` (of that score), ``agreement`` (the
    score's ``judge_agreement``; NaN for single-sample scores) and ``verdict`` (the
    sample's verdict label when the judge gives one, else None). Unavailable scores are left
    out (they carry no judgement). A judge that one case names twice (two entries, say
    two criteria) grades two things: the second entry's scores are metric ``'<metric> #2'``
    here, not more samples of the first.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> list(judge_samples(run).columns)[:4]
    ['variant_id', 'trial', 'case_id', 'evaluator']
    """
    chk = run.checks
    columns = ["variant_id", "trial", "case_id", "evaluator", "metric", "sample", "value"]
    out: dict[str, list[Any]] = {c: [] for c in [*columns, "samples", "agreement", "verdict"]}
    if "metadata" not in chk or not len(chk):
        return pd.DataFrame(out)
    judged = chk.loc[chk["evaluator_type"].isin(JUDGE_EVALUATOR_TYPES).to_numpy(bool)]
    # The n-th score of one metric in an attempt comes from the judge's n-th entry in the
    # case (skipped and unavailable ones counted, so later entries keep their number):
    # pooled with the first entry's, two criteria's differences read as the judge's noise.
    entry = judged.groupby(
        ["variant_id", "trial", "case_id", "evaluator", "metric"], observed=True, sort=False
    ).cumcount()
    mask = ~judged["skipped"].to_numpy(bool)
    rows = judged.loc[mask, ["variant_id", "trial", "case_id", "evaluator", "metric", "value"]]
    for row, n, text in zip(
        rows.itertuples(index=False),
        entry[mask].tolist(),
        judged.loc[mask, "metadata"].tolist(),
        strict=True,
    ):
        meta = json.loads(text) if isinstance(text, str) else {}
        if meta.get("judge_status") == "unavailable":
            continue
        values = meta.get("judge_sample_values")
        if not isinstance(values, list) or not values:
            values = [row.value]
        agreement = meta.get("judge_agreement")
        verdicts = meta.get("judge_verdicts")
        if not isinstance(verdicts, list) or len(verdicts) != len(values):
            verdicts = [meta.get("verdict")] * len(values)
        for i, value in enumerate(values):
            out["variant_id"].append(row.variant_id)
            out["trial"].append(row.trial)
            out["case_id"].append(row.case_id)
            out["evaluator"].append(row.evaluator)
            out["metric"].append(f"{row.metric} #{n + 1}" if n else row.metric)
            out["sample"].append(i)
            out["value"].append(float(value))
            out["samples"].append(len(values))
            out["agreement"].append(
                float(agreement) if isinstance(agreement, (int, float)) else math.nan
            )
            # A label only: a judge without verdicts votes with its values (no categories).
            out["verdict"].append(verdicts[i] if isinstance(verdicts[i], str) else None)
    frame = pd.DataFrame(out)
    for column in ("variant_id", "case_id", "evaluator", "metric"):
        frame[column] = frame[column].astype(str)
    return frame


def judge_totals(run: ExperimentRun) -> pd.DataFrame:
    """Per variant: what its judges did and cost, over every completed trial.

    Columns: ``variant_id``, ``judge_scores`` (not skipped), ``unavailable_scores``,
    ``retried_scores``, ``priced_scores``, ``cost_usd`` (the package's per-score costs,
    summed over priced scores), ``spent_cost_usd`` (every answered call counted once,
    see docs/judges.md), ``input_tokens``, ``output_tokens``, ``latency_ms``. Judge cost
    is never part of the agent's cost.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> judge_totals(run).empty  # no judges in the example
    True
    """
    chk = run.checks
    columns = list(_TOTALS_DTYPES)
    if "metadata" not in chk or not len(chk):
        return pd.DataFrame(columns=columns)
    mask = chk["evaluator_type"].isin(JUDGE_EVALUATOR_TYPES).to_numpy(bool)
    judged = chk.loc[mask, ["variant_id", "trial", "case_id", "skipped", "metadata"]]
    records = []
    for variant, group in judged.groupby("variant_id", observed=True, sort=False):
        scores = [
            (str(case), bool(skipped), json.loads(text) if isinstance(text, str) else {})
            for case, skipped, text in zip(
                group["case_id"], group["skipped"], group["metadata"], strict=True
            )
        ]
        row = variant_judge_totals(str(variant), scores)
        row["cost_usd"] = _nan(row["cost_usd"])
        row["spent_cost_usd"] = _nan(row["spent_cost_usd"])
        records.append(row)
    return pd.DataFrame(records, columns=columns)


def variant_judge_totals(
    variant_id: str, scores: list[tuple[str, bool, dict[str, Any]]]
) -> dict[str, Any]:
    """One variant's row of :func:`judge_totals` from its judge scores, JSON-ready (an
    unknown cost is None).

    The one count of what judges did and cost: the analysed cases' (:func:`judge_totals`)
    and, after an early stop, those of the attempts that ran past the decision point
    (:func:`~agenticlens_frames.runner.stopping.judge_spend_after_decision`).

    Parameters
    ----------
    variant_id
        The variant the scores are of.
    scores
        ``(case_id, skipped, metadata)`` of each judge score, as
        :func:`~agenticlens_frames.judges.summarize_judges` takes them (not empty).

    Examples
    --------
    >>> row = variant_judge_totals("a", [
    ...     ("c1", False, {"judge_status": "ok", "judge_cost_usd": 0.01,
    ...                    "judge_spent_cost_usd": 0.015, "judge_input_tokens": 90}),
    ...     ("c2", False, {"judge_status": "unavailable"})])
    >>> row["judge_scores"], row["unavailable_scores"], row["spent_cost_usd"], row["input_tokens"]
    (2, 1, 0.015, 90)
    """
    block = summarize_judges(scores)
    assert block is not None
    costs = [
        m["judge_cost_usd"]
        for _, skipped, m in scores
        if not skipped and isinstance(m.get("judge_cost_usd"), (int, float))
    ]
    return {
        "variant_id": variant_id,
        "judge_scores": block["judge_scores"],
        "unavailable_scores": block["unavailable_scores"],
        "retried_scores": block["retried_scores"],
        "priced_scores": block["priced_scores"],
        "cost_usd": float(sum(costs)) if costs else None,
        "spent_cost_usd": block["spent_cost_usd"],
        "input_tokens": block["input_tokens"],
        "output_tokens": block["output_tokens"],
        "latency_ms": block["total_latency_ms"],
    }


#: The columns of :func:`judge_totals` and their dtypes (a loaded report's frame is cast
#: back to them: :func:`judge_frames_from_block`).
_TOTALS_DTYPES = {
    "variant_id": "str",
    "judge_scores": "int64",
    "unavailable_scores": "int64",
    "retried_scores": "int64",
    "priced_scores": "int64",
    "cost_usd": "float64",
    "spent_cost_usd": "float64",
    "input_tokens": "int64",
    "output_tokens": "int64",
    "latency_ms": "float64",
}


def judge_noise(run: ExperimentRun, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per judge, metric and variant: the case / trial / judge-sample variance decomposition.

    Columns: ``evaluator``, ``metric``, ``variant_id``, ``cases``, ``attempts``,
    ``trials`` and ``samples`` (harmonic means per case / per attempt),
    ``case_variance``, ``trial_variance``, ``judge_variance`` (of one judged value),
    ``judge_share`` (judge / the three summed), ``mean_agreement``, ``min_agreement``
    (the modal share, not corrected for chance) and ``verdict_kappa`` (Fleiss' kappa of the
    samples' verdict labels over the attempts, :func:`~agenticlens_frames.stats_judge.\
fleiss_kappa`; NaN without labels or when every label is the same). Variances are NaN
    where they cannot be estimated (one sample: no judge variance).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> judge_noise(run).empty  # the example has no judges
    True
    """
    data = judge_samples(run) if samples is None else samples
    records = []
    for (evaluator, metric, variant), group in data.groupby(
        [*_KEYS, "variant_id"], sort=False, observed=True
    ):
        attempt = group["case_id"] + "\x00" + group["trial"].astype(str)
        v = nested_variance_components(group["value"], group["case_id"], attempt)
        parts = [v.case, v.trial, v.judge]
        total = sum(p for p in parts if p is not None)
        per_score = group.drop_duplicates(["case_id", "trial"])["agreement"].dropna()
        records.append(
            {
                "evaluator": evaluator,
                "metric": metric,
                "variant_id": variant,
                "cases": v.cases,
                "attempts": v.attempts,
                "trials": v.trials,
                "samples": v.samples,
                "case_variance": _nan(v.case),
                "trial_variance": _nan(v.trial),
                "judge_variance": _nan(v.judge),
                "judge_share": (v.judge / total)
                if v.judge is not None and None not in parts and total > 0
                else math.nan,
                "mean_agreement": float(per_score.mean()) if len(per_score) else math.nan,
                "min_agreement": float(per_score.min()) if len(per_score) else math.nan,
                "verdict_kappa": _kappa(group, attempt),
            }
        )
    return pd.DataFrame(records, columns=_NOISE_COLUMNS)


_NOISE_DTYPES = {
    "evaluator": "str",
    "metric": "str",
    "variant_id": "str",
    "cases": "int64",
    "attempts": "int64",
    "trials": "float64",
    "samples": "float64",
    "case_variance": "float64",
    "trial_variance": "float64",
    "judge_variance": "float64",
    "judge_share": "float64",
    "mean_agreement": "float64",
    "min_agreement": "float64",
    "verdict_kappa": "float64",
}
_NOISE_COLUMNS = list(_NOISE_DTYPES)


def _kappa(group: pd.DataFrame, attempt: pd.Series) -> float:
    """Fleiss' kappa of the verdict labels of the attempts whose samples all have one (NaN
    for samples without a ``verdict`` column: a frame built before it was added)."""
    if "verdict" not in group:
        return math.nan
    labelled = group["verdict"].notna()
    complete = labelled.groupby(attempt).transform("all").to_numpy(bool)
    if not complete.any():
        return math.nan
    return fleiss_kappa(
        group.loc[complete, "verdict"].astype(str).to_numpy(), attempt[complete].to_numpy()
    )


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def judge_noise_comparisons(
    run: ExperimentRun,
    *,
    confidence_level: float = 0.95,
    noise: pd.DataFrame | None = None,
    samples: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per judged metric and candidate: the judge's part of the paired interval's width.

    The paired difference of case means (candidate − baseline, cases judged in both) has
    variance ``V`` across cases; the judge's samples add ``J = σ²_judge,b / (m_b T_b) +
    σ²_judge,c / (m_c T_c)`` to it and the agent's trials ``A = σ²_trial,b / T_b +
    σ²_trial,c / T_c``. Columns: ``evaluator``, ``metric``, ``baseline_variant_id``,
    ``candidate_variant_id``, ``cases``, ``mean_difference``, ``ci_half_width`` (t interval
    at ``confidence_level``), ``ci_half_width_without_judge`` (the same with ``J``
    removed), ``judge_width_share`` (1 − the ratio of the two), ``judge_variance_part``
    (J), ``agent_variance_part`` (A), ``judge_limits_detection`` (J > A: the judge, not
    the agent, is the larger noise), ``samples`` (now, per evaluation),
    ``samples_needed`` (to bring the share under :data:`TARGET_JUDGE_SHARE`) and ``note``.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> judge_noise_comparisons(run).empty  # no judges in the example
    True
    """
    data = judge_samples(run) if samples is None else samples
    table = judge_noise(run, data) if noise is None else noise
    baseline = run.manifest.baseline_variant_id
    records = []
    if data.empty:
        return pd.DataFrame(records, columns=_COMPARISON_COLUMNS)
    attempt_means = data.groupby([*_KEYS, "variant_id", "case_id", "trial"], observed=True)[
        "value"
    ].mean()
    case_means = attempt_means.groupby(level=[0, 1, 2, 3], observed=True).mean()
    info = table.set_index([*_KEYS, "variant_id"])
    for (evaluator, metric), per_metric in case_means.groupby(level=[0, 1], observed=True):
        by_variant = per_metric.droplevel([0, 1])
        if baseline not in by_variant.index.get_level_values(0):
            continue
        base = by_variant.loc[baseline]
        for candidate in run.manifest.variant_ids:
            if candidate == baseline or candidate not in by_variant.index.get_level_values(0):
                continue
            cand = by_variant.loc[candidate]
            shared = base.index.intersection(cand.index)
            if len(shared) < 2:
                continue
            diff = (cand.loc[shared] - base.loc[shared]).to_numpy(float)
            n = len(diff)
            variance = float(np.var(diff, ddof=1))
            b = info.loc[(evaluator, metric, baseline)]
            c = info.loc[(evaluator, metric, candidate)]
            judge_part = _part(b, c, "judge_variance", with_samples=True)
            agent_part = _part(b, c, "trial_variance", with_samples=False)
            t = float(t_ppf(0.5 + confidence_level / 2, n - 1))
            width = t * math.sqrt(variance / n)
            rest = _non_judge_part(variance, judge_part, agent_part)
            width_without = t * math.sqrt(rest / n) if not math.isnan(rest) else math.nan
            share = 1 - width_without / width if width > 0 and not math.isnan(rest) else math.nan
            m = float(min(b["samples"], c["samples"]))
            needed = _samples_needed(m, judge_part, rest, variance)
            limits = bool(
                not math.isnan(judge_part)
                and not math.isnan(agent_part)
                and judge_part > agent_part
                and share > TARGET_JUDGE_SHARE
            )
            note = None
            if limits:
                more = _more_samples(needed, m)
                note = (
                    f"Judge noise, not agent noise, limits what this run can detect on "
                    f"{metric!r} ({candidate} vs {baseline}): the judge's sampling noise "
                    f"accounts for {_percent(share)} of the interval's width; {more}."
                )
            records.append(
                {
                    "evaluator": evaluator,
                    "metric": metric,
                    "baseline_variant_id": baseline,
                    "candidate_variant_id": candidate,
                    "cases": n,
                    "mean_difference": float(diff.mean()),
                    "ci_half_width": width,
                    "ci_half_width_without_judge": width_without,
                    "judge_width_share": share,
                    "judge_variance_part": judge_part,
                    "agent_variance_part": agent_part,
                    "judge_limits_detection": limits,
                    "samples": m,
                    "samples_needed": needed,
                    "note": note,
                }
            )
    frame = pd.DataFrame(records, columns=_COMPARISON_COLUMNS)
    frame["samples_needed"] = frame["samples_needed"].astype("Int64")
    return frame


_COMPARISON_DTYPES = {
    "evaluator": "str",
    "metric": "str",
    "baseline_variant_id": "str",
    "candidate_variant_id": "str",
    "cases": "int64",
    "mean_difference": "float64",
    "ci_half_width": "float64",
    "ci_half_width_without_judge": "float64",
    "judge_width_share": "float64",
    "judge_variance_part": "float64",
    "agent_variance_part": "float64",
    "judge_limits_detection": "bool",
    "samples": "float64",
    "samples_needed": "Int64",
    "note": "str",
}
_COMPARISON_COLUMNS = list(_COMPARISON_DTYPES)


def _part(b: pd.Series, c: pd.Series, column: str, *, with_samples: bool) -> float:
    """The variance ``column`` adds to a difference of case means (NaN if unknown)."""
    total = 0.0
    for row in (b, c):
        value = float(row[column])
        if math.isnan(value):
            return math.nan
        divisor = row["trials"] * (row["samples"] if with_samples else 1.0)
        total += value / divisor
    return total


def _non_judge_part(variance: float, judge_part: float, agent_part: float) -> float:
    """The part of the per-case difference's variance that is not the judge's sampling.

    ``V − J`` alone is a difference of two noisy numbers (``V`` has only cases − 1 degrees
    of freedom): when the judge dominates it falls to 0 about half the time, reading as
    "the judge is the whole width". The agent's trial part ``A`` is estimated from every
    case's replicates (many degrees of freedom) and is part of it for certain, so the
    estimate is ``A + max(0, V − J − A)``: the agent's noise plus whatever case-to-case
    difference the data show beyond both.

    Examples
    --------
    >>> _non_judge_part(0.010, 0.012, 0.004), _non_judge_part(0.030, 0.012, 0.004)
    (0.004, 0.018)
    """
    if math.isnan(judge_part):
        return math.nan
    agent = 0.0 if math.isnan(agent_part) else agent_part
    return agent + max(variance - judge_part - agent, 0.0)


def _percent(share: float) -> str:
    """A share over the target, in whole percent unless that reads as the target itself.

    Examples
    --------
    >>> _percent(0.37), _percent(0.104)
    ('37%', '10.4%')
    """
    whole = f"{share:.0%}"
    # "10% of the width; 4 samples would bring it under 10%" read as a contradiction.
    return f"{share:.1%}" if whole == f"{TARGET_JUDGE_SHARE:.0%}" else whole


#: Beyond this many samples per evaluation the note says so instead of giving the number.
MANY_SAMPLES = 50


def _more_samples(needed: int | None, m: float) -> str:
    """The judge-noise note's advice on samples per evaluation (``m`` now).

    Examples
    --------
    >>> _more_samples(17, 3)
    'about 17 samples per evaluation (now 3) would bring it under 10%'
    >>> _more_samples(325, 3).split(":")[0]
    'more than 50 samples per evaluation (now 3) would be needed to bring it under 10%'
    """
    if needed is None:
        return (
            "how many more samples per evaluation would be enough cannot be told from these "
            "cases (they vary no more than the judge's own noise)"
        )
    if needed > MANY_SAMPLES:
        # 325 samples of an LLM judge is not advice: the agent varies too little here for
        # sampling to be the remedy.
        return (
            f"more than {MANY_SAMPLES} samples per evaluation (now {m:g}) would be needed to "
            f"bring it under {TARGET_JUDGE_SHARE:.0%}: the agent varies too little here for "
            "sampling to help; a steadier judge would (a lower temperature, a tighter rubric)"
        )
    share = f"{TARGET_JUDGE_SHARE:.0%}"
    return f"about {needed} samples per evaluation (now {m:g}) would bring it under {share}"


def _samples_needed(m: float, judge_part: float, rest: float, variance: float) -> int | None:
    """Samples per evaluation so that the judge adds under the target share of the width.

    The share is that of the run's interval, whose variance ``V`` (``variance``) holds the
    judge's part ``J``: with m' samples ``V' = V − J + J m / m'``, and the share
    ``1 − sqrt(rest / V')`` is under the target when ``V' ≤ rest / (1 − target)²``.
    (Projected from ``rest + J`` instead, which exceeds ``V`` when ``V < J + A``, the note
    said "10% of the interval's width" and "about 14 samples (now 3) would bring it under
    10%", or sent a 45% share past 50 samples to "a steadier judge".)

    Examples
    --------
    >>> _samples_needed(3, 0.003, 0.009, 0.012), _samples_needed(3, 0.003, 0.0028, 0.0035)
    (5, 4)
    """
    if math.isnan(judge_part) or math.isnan(rest) or rest <= 0 or judge_part <= 0:
        return None
    allowed = rest / (1 - TARGET_JUDGE_SHARE) ** 2 - (variance - judge_part)
    return max(math.ceil(m * judge_part / allowed), int(m))


def judge_noise_outputs(
    run: ExperimentRun, *, confidence_level: float = 0.95
) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Frames and the report block for :func:`~agenticlens_frames.analyze`.

    Both are empty when the run has no judge scores, so reports of runs without judges
    do not change.
    """
    totals = judge_totals(run)
    if totals.empty:
        return {}, {}
    data = judge_samples(run)
    noise = judge_noise(run, data)
    comparisons = judge_noise_comparisons(
        run, confidence_level=confidence_level, noise=noise, samples=data
    )
    block = {
        "judge_noise": {
            "totals": _records(totals),
            "unavailable_notes": judge_unavailable_notes(run, totals),
            "confidence_level": confidence_level,
            "target_judge_share": TARGET_JUDGE_SHARE,
            "decomposition": _records(noise),
            "comparisons": _records(comparisons),
            "notes": [n for n in comparisons["note"].tolist() if isinstance(n, str)],
        }
    }
    frames = {
        "judge_totals": totals,
        "judge_noise": noise,
        "judge_noise_comparisons": comparisons,
    }
    return frames, block


#: Each judge frame, the report block's key that holds it and its columns' dtypes (the
#: JSON report's writer and reader go by it).
JUDGE_BLOCK_FRAMES = {
    "judge_totals": ("totals", _TOTALS_DTYPES),
    "judge_noise": ("decomposition", _NOISE_DTYPES),
    "judge_noise_comparisons": ("comparisons", _COMPARISON_DTYPES),
}


def judge_frames_from_block(block: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """The judge frames an analysis had, from the report's ``judge_noise`` block.

    The block holds every row of ``judge_totals``, ``judge_noise`` and
    ``judge_noise_comparisons`` (missing values as null), so a loaded report gives the
    frames of the analysis that wrote it, column for column and dtype for dtype. A part
    the block lacks (reports written before it was added) gives no frame.

    Parameters
    ----------
    block
        The report's ``judge_noise`` block (as :func:`judge_noise_outputs` writes it).

    Returns
    -------
    dict of str to DataFrame
        ``judge_totals``, ``judge_noise``, ``judge_noise_comparisons``: those the block has.

    Raises
    ------
    TypeError, ValueError
        A row that is not an object, or a value that does not fit its column.

    Examples
    --------
    >>> frames = judge_frames_from_block({"totals": [{"variant_id": "a", "judge_scores": 4,
    ...     "unavailable_scores": 0, "retried_scores": 1, "priced_scores": 0,
    ...     "cost_usd": None, "spent_cost_usd": None, "input_tokens": 0,
    ...     "output_tokens": 0, "latency_ms": 12.5}]})
    >>> list(frames), frames["judge_totals"]["cost_usd"].isna().all()
    (['judge_totals'], np.True_)
    """
    frames = {}
    for name, (key, dtypes) in JUDGE_BLOCK_FRAMES.items():
        if key not in block:
            continue
        rows = block[key]
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise TypeError(f"judge_noise.{key} must be a list of objects")
        frame = pd.DataFrame(rows, columns=list(dtypes))
        if rows:  # the analysis' own empty frames keep pandas' default (object) columns
            # null is a missing number (NaN), never the text "None".
            frame = frame.astype({c: d for c, d in dtypes.items() if d != "str"})
            for column in (c for c, d in dtypes.items() if d == "str"):
                frame[column] = pd.array(
                    [v if isinstance(v, str) else None for v in frame[column]], dtype="str"
                )
        elif "samples_needed" in dtypes:
            frame["samples_needed"] = frame["samples_needed"].astype("Int64")
        frames[name] = frame
    return frames


def judge_unavailable_notes(run: ExperimentRun, totals: pd.DataFrame) -> list[str]:
    """One note per variant with judge scores that are unavailable (no usable judgement
    after every attempt): how many, of which judges, the first error and what they do to
    the results.

    A judge that is down fails every case with value 0: the pass rates and the verdicts
    read as the agent failing, and the console said only "90 unavailable".

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> judge_unavailable_notes(run, judge_totals(run))  # no judges
    []
    """
    if totals.empty or not (totals["unavailable_scores"] > 0).any():
        return []
    chk = run.checks
    judged = chk.loc[
        chk["evaluator_type"].isin(JUDGE_EVALUATOR_TYPES).to_numpy(bool) & ~chk["skipped"]
    ]
    notes = []
    for row in totals.itertuples(index=False):
        if not row.unavailable_scores:
            continue
        group = judged[(judged["variant_id"].astype(str) == row.variant_id).to_numpy()]
        metas = [json.loads(text) if isinstance(text, str) else {} for text in group["metadata"]]
        down = [
            (r, meta)
            for r, meta in zip(group.itertuples(index=False), metas, strict=True)
            if meta.get("judge_status") == "unavailable"
        ]
        per_judge = pd.Series([r.evaluator for r, _ in down]).value_counts(sort=False)
        judges = ", ".join(f"{name!r} {count}" for name, count in per_judge.items())
        first, meta = down[0]
        error = clip(str(meta.get("judge_error", "unknown error")), 160)
        notes.append(
            f"{row.variant_id}: {row.unavailable_scores} of {row.judge_scores} judge scores "
            f"unavailable, no usable judgement after every attempt ({judges}; first: trial "
            f"{first.trial}, case {first.case_id}: {error}). Each counts as 0 in the scores "
            "and, when its entry is required, fails its case in the pass rates and the "
            "verdicts, as if the agent had: fix the judge (its endpoint, or more attempts "
            "in its RetryPolicy) and resume the run from its --run-dir, which judges only "
            "these again, from the journaled replies."
        )
    return notes


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for record in frame.to_dict("records"):
        clean = {}
        for key, value in record.items():
            if value is pd.NA or (isinstance(value, float) and not math.isfinite(value)):
                value = None
            elif isinstance(value, np.generic):
                value = value.item()
            clean[key] = value
        out.append(clean)
    return out
