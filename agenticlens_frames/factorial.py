"""Which factor did it: factor effects of an experiment's variant design, per case.

:func:`factor_effects` takes one outcome per variant and case — the case's pass rate and
mean score over its evaluated attempts, the per-case values the paired comparisons and
the case-level summary use (:func:`~agenticlens_frames.paired.dimensions.evaluation`), so
a failed trial's placeholder attempts are left out rather than counted as failures — and
the variants' factors, and returns one row per metric and term (main effect of each
non-baseline level, two-factor interaction of each pair of non-baseline levels) with an
interval, a p-value and the p-value adjusted by the declared correction over the
estimable terms of the metric (a family of its own, not the verdicts'). A balanced full
factorial uses per-case contrasts, with the repeated-measures ANOVA F beside them (its p
Greenhouse–Geisser corrected, with the epsilon); any other design uses OLS with case
fixed effects and cluster-robust (CR1) errors by case. With declared clusters of cases
both use CR1 by cluster with G − 1 df, as the paired verdicts do (and the case-level
ANOVA F is left out). The frame's ``attrs`` say, in words, which terms the
design cannot estimate. The estimators live in
:mod:`agenticlens_frames.stats_factorial`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import stats_factorial as sfac
from ._deprecate import keyword_hints
from ._values import count_noun
from .errors import InputError, check_proportion
from .frames import ExperimentRun, factor_column, require_run
from .paired.dimensions import cluster_labels, evaluation, unevaluated_per_variant

__all__ = [
    "ANOVA_NOTE",
    "CORRECTION_FAMILY",
    "FACTOR_EFFECT_COLUMNS",
    "FLOAT_COLUMNS",
    "LABEL_COLUMNS",
    "factor_effects",
]

UNSET_FACTOR = "(unset)"
#: The evaluator of each metric (:func:`~agenticlens_frames.paired.dimensions.evaluation`):
#: its per-case values over the evaluated attempts are the outcome. Not the case matrix's
#: ``pass_rate``, which is AgenticLens's (a failed trial fails every case) and would
#: contradict the verdicts for a variant with a failed trial.
_METRICS = {"pass_rate": "passed", "score": "score"}
#: Which p-values ``p_adjusted`` is corrected over, in words (said wherever it is shown).
CORRECTION_FAMILY = (
    "the estimable factor-effect terms of each metric, a family of its own (not the "
    "verdicts' paired comparisons)"
)

#: Columns of :func:`factor_effects`, in order.
FACTOR_EFFECT_COLUMNS = [
    "metric",
    "term",
    "kind",
    "factor",
    "level",
    "baseline_level",
    "factor_b",
    "level_b",
    "baseline_level_b",
    "estimable",
    "estimate",
    "se",
    "ci_low",
    "ci_high",
    "df",
    "statistic",
    "p_value",
    "p_adjusted",
    "anova_f",
    "anova_p",
    "anova_eps",
    "n_cases",
    "contrast",
    "through",
    "method",
]
#: The text columns among them (``metric`` to ``baseline_level_b``, and ``method``),
#: written to the JSON block as they are (``through`` and ``estimable`` are converted, the
#: rest are numbers).
LABEL_COLUMNS = (*FACTOR_EFFECT_COLUMNS[: FACTOR_EFFECT_COLUMNS.index("estimable")], "method")
#: The float columns among them (``estimate`` to ``anova_eps``): one list for building the
#: frame and for reading it back from a saved report, so the two cannot drift apart.
FLOAT_COLUMNS = tuple(
    FACTOR_EFFECT_COLUMNS[
        FACTOR_EFFECT_COLUMNS.index("estimate") : FACTOR_EFFECT_COLUMNS.index("anova_eps") + 1
    ]
)
#: What ``anova_f`` / ``anova_p`` / ``anova_eps`` are, in words: the JSON block carries
#: it, so a reader of ``anova_p`` there knows it is corrected.
ANOVA_NOTE = (
    "anova_f, anova_p, anova_eps: the repeated-measures ANOVA of the term's whole factor "
    "(or factor pair) over the cases, repeated on each of its levels' rows; anova_p is "
    "Greenhouse–Geisser corrected (F on anova_eps times its degrees of freedom), and "
    "anova_eps is 1 for an effect with one degree of freedom (a two-level factor, where "
    "anova_p equals p_value); null without a balanced full factorial or with case clusters"
)
#: Appended to ``attrs["method"]`` when the frame has the ANOVA columns.
_WITH_ANOVA = " (with the repeated-measures ANOVA F, Greenhouse–Geisser corrected p)"


def _design(run: ExperimentRun) -> tuple[np.ndarray, list[str], list[str], int]:
    variants = run.variants
    names = list(run.factor_names)
    ids = [str(v) for v in variants["variant_id"]]
    if names:
        table = np.column_stack(
            [
                variants[factor_column(n)]
                .astype(object)
                .where(variants[factor_column(n)].notna(), UNSET_FACTOR)
                .astype(str)
                .to_numpy(object)
                for n in names
            ]
        )
    else:
        table = np.zeros((len(ids), 0), dtype=object)
    return table, names, ids, ids.index(run.manifest.baseline_variant_id)


def _outcomes(run: ExperimentRun, ids: list[str], metric: str) -> np.ndarray:
    """(cases, variants in ``ids`` order): each case's mean over its evaluated attempts,
    NaN where it has none (every trial of the variant failed, or nothing was scored)."""
    values = evaluation(run, _METRICS[metric]).values  # (manifest variants, suite cases)
    order = list(run.manifest.variant_ids)
    return values[[order.index(v) for v in ids]].T


def _anova(
    y: np.ndarray, table: np.ndarray, design: sfac.FactorDesign
) -> dict[tuple, sfac.RepeatedMeasuresEffect]:
    """Repeated-measures ANOVA F, Greenhouse–Geisser corrected p and epsilon per effect
    (factor pairs, or one factor) of a balanced full factorial:
    :func:`~agenticlens_frames.stats_factorial.repeated_measures_anova` of the per-case
    cell means. (It was pingouin's ``rm_anova``, whose import cost every such analysis
    over a second; the tests still check the numbers against it.)"""
    names = list(design.factors)
    out: dict[tuple, sfac.RepeatedMeasuresEffect] = {}
    groups: list[tuple[str, ...]] = [(names[0],)] if len(names) == 1 else _pairs(names)
    for group in groups:
        # Averaging over the other factors first gives the same F as the full-design ANOVA
        # for these effects (each effect's error term is its own effect × case interaction).
        codes = []
        for name in group:
            column = table[:, names.index(name)]
            codes.append(np.unique(column, return_inverse=True)[1].ravel())
        shape = tuple(int(c.max()) + 1 for c in codes)
        cells = np.zeros((y.shape[0], *shape))
        count = np.zeros(shape)
        for v in range(y.shape[1]):
            at = tuple(int(c[v]) for c in codes)
            cells[(slice(None), *at)] += y[:, v]
            count[at] += 1
        result = sfac.repeated_measures_anova(cells / count)
        effects = {"A": (group[0],), "B": group[1:], "AB": group}
        for effect, test in result.items():
            out.setdefault(effects[effect], test)
    return out


def _contrast_weights(
    design: sfac.FactorDesign, levels: np.ndarray, balanced: bool, observed: np.ndarray
) -> dict[str, np.ndarray]:
    """Per estimable term: the weight of each variant's mean in the estimate (0 for a
    variant without outcomes)."""
    out: dict[str, np.ndarray] = {}
    names = list(design.factors)
    if balanced:
        for t in design.estimable:
            cols = [names.index(f) for f in t.factors]

            def cell(want: tuple[str, ...], cols: list[int] = cols) -> np.ndarray:
                mask = np.ones(len(levels), dtype=bool)
                for j, level in zip(cols, want, strict=True):
                    mask &= levels[:, j] == level
                return mask / mask.sum()

            if t.kind == "main":
                out[t.label] = cell(t.levels) - cell(t.baseline_levels)
            else:
                (a, b), (a0, b0) = t.levels, t.baseline_levels
                out[t.label] = cell((a, b)) - cell((a, b0)) - cell((a0, b)) + cell((a0, b0))
        return out
    d = np.column_stack([np.ones(len(levels)), design.matrix()])[observed]
    weights = np.zeros((d.shape[1] - 1, len(levels)))
    weights[:, observed] = np.linalg.pinv(d)[1:]
    for t, w in zip(design.estimable, weights, strict=True):
        out[t.label] = np.where(np.abs(w) < 1e-9, 0.0, w)
    return out


def _contrast_text(weights: np.ndarray, ids: list[str]) -> str:
    """``+model-large −baseline`` or ``+0.5·L +0.5·LP −0.5·base −0.5·P``."""
    parts = []
    for w, vid in sorted(zip(weights, ids, strict=True), key=lambda p: (-p[0], p[1])):
        if w == 0:
            continue
        size = abs(float(w))
        scale = "" if abs(size - 1) < 1e-9 else f"{size:.3g}·"
        parts.append(f"{'+' if w > 0 else '−'}{scale}{vid}")
    return " ".join(parts)


def _metric_design(
    design: sfac.FactorDesign,
    table: np.ndarray,
    names: list[str],
    ids: list[str],
    baseline: int,
    observed: np.ndarray,
) -> sfac.FactorDesign:
    """The design of the variants with outcomes for a metric.

    A variant none of whose attempts was evaluated (every trial failed, or nothing scored)
    carries no term: a term only it carried was a column of zeros in the fixed-effects
    fit, which reported 0 with a zero-width interval and p = 1. With no outcome at all
    the full design is kept, and nothing is estimated.
    """
    if observed.all() or not observed.any():
        return design
    return sfac.design_terms(table, names, ids, baseline, observed=observed)


def _missing_note(ids: list[str], observed: np.ndarray) -> str:
    """In words: which variants have no outcome."""
    missing = [v for v, seen in zip(ids, observed, strict=True) if not seen]
    one = len(missing) == 1
    return (
        f"{sfac._join(missing)} {'has' if one else 'have'} no outcome (no evaluated "
        f"attempt): the terms are estimated without {'it' if one else 'them'}, and what "
        f"only {'it' if one else 'they'} carried is not estimable."
    )


def _left_out_note(run: ExperimentRun, ids: list[str]) -> list[str]:
    """In words: the failed trials' attempts the outcomes leave out, per variant (none
    when every trial completed).

    Said in the frame, not only on the page: without it, a reader of the frame or the
    JSON block cannot tell these effects from ones that count a failed trial as failures
    (the case matrix's AgenticLens ``pass_rate``), which differ for such a variant.
    """
    lost = unevaluated_per_variant(run)
    order = list(run.manifest.variant_ids)
    declared = run.manifest.trial_count * len(run.suite.cases)
    parts = [f"{lost[order.index(v)]} of {v}'s {declared}" for v in ids if lost[order.index(v)]]
    if not parts:
        return []
    return [
        "The attempts of failed trials are left out of the outcomes, not counted as "
        f"failures (as in the verdicts): {sfac._join(parts)}."
    ]


def _design_notes(design: sfac.FactorDesign, by_metric: dict[str, list[str]]) -> list[str]:
    """The design's notes, or those of the variants with outcomes when some have none:
    once when every metric lost the same variants (a failed variant), else per metric."""
    if not by_metric:
        return list(design.notes)
    kinds = {tuple(v) for v in by_metric.values()}
    if len(by_metric) == len(_METRICS) and len(kinds) == 1:
        # the same variants missing for every metric (a failed variant): said once
        return list(by_metric["pass_rate"])
    out = list(design.notes)
    for metric, lines in by_metric.items():
        what = "Pass rate" if metric == "pass_rate" else metric.capitalize()
        out += [f"{what}: {line[0].lower()}{line[1:]}" for line in lines]
    return out


def _short_note(metric: str, missing: int, cases: int) -> str:
    """In words: the cases a full factorial's per-case contrasts leave out for a metric.

    Examples
    --------
    >>> print(_short_note("score", 2, 30))  # doctest: +NORMALIZE_WHITESPACE
    Score: 2 of 30 cases lack an outcome for some variant and are left out of the per-case
    contrasts, which need every variant of the full factorial.
    """
    what = "Pass rate" if metric == "pass_rate" else metric.capitalize()
    verb = "lacks" if missing == 1 else "lack"
    pronoun = "is" if missing == 1 else "are"
    return (
        f"{what}: {missing} of {cases} cases {verb} an outcome for some variant and "
        f"{pronoun} left out of the per-case contrasts, which need every variant of the "
        "full factorial."
    )


def _pairs(names: list[str]) -> list[tuple[str, ...]]:
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


@keyword_hints
def factor_effects(
    run: ExperimentRun,
    *,
    correction: str | None = None,
    confidence_level: float = 0.95,
    cluster: str | None = None,
) -> pd.DataFrame:
    """Main effects and two-factor interactions of the variants' factors, per case.

    The outcome of a case is its pass rate (``pass_rate``) or mean score (``score``) over
    its evaluated attempts, as in the paired comparisons: a failed trial's attempts are
    left out, not counted as failures. So when a term's contrast is one candidate minus
    the baseline, its estimate is that paired comparison's mean difference.

    Parameters
    ----------
    run
        The experiment (its attempts, its variants' factors and baseline).
    correction
        The declared multiple-comparison correction (``none``, ``bonferroni``, ``holm``,
        ``benjamini_hochberg``), applied across the estimable terms of each metric — a
        family of its own (:data:`CORRECTION_FAMILY`), so ``p_adjusted`` is not the
        verdicts' adjusted p of the same contrast; None (nothing declared) leaves
        ``p_adjusted`` NaN.
    confidence_level
        For the intervals.
    cluster
        The case metadata field the paired comparisons cluster cases by, if declared.
        The intervals and p-values then use it as the paired verdicts do: CR1 by cluster
        with G − 1 df (for the per-case contrasts of a balanced full factorial as for the
        fixed-effects fit), and ``anova_f`` / ``anova_p`` / ``anova_eps`` are NaN (the
        repeated-measures ANOVA treats the cases as independent); a design note says so.

    Returns
    -------
    pandas.DataFrame
        One row per metric (``pass_rate``, ``score``) and term, columns
        :data:`FACTOR_EFFECT_COLUMNS`; ``through`` lists the variants that carry the
        term's levels. A balanced full factorial also has the repeated-measures ANOVA of
        the term's factor or factor pair: ``anova_f``, ``anova_p`` Greenhouse–Geisser
        corrected, and its epsilon ``anova_eps`` (1 for a two-level factor, where
        ``anova_p`` is the term's ``p_value``); NaN otherwise. ``attrs``: ``design`` (a
        phrase), ``design_notes`` (what cannot be estimated, in words), ``correction``,
        ``correction_family`` (in words), ``confidence_level``, ``method``. Empty when no
        factor has two levels.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> fe = factor_effects(run, correction="holm")
    >>> fe.attrs["design_notes"][0]
    'model × prompt is estimable only through large-v2.'
    >>> dense = fe.set_index(["metric", "term"]).loc[("pass_rate", "retrieval: dense vs bm25")]
    >>> round(float(dense["estimate"]), 4)  # retrieval-dense − baseline, its failed trial left out
    0.1071
    >>> fe.attrs["design_notes"][-1]  # doctest: +NORMALIZE_WHITESPACE
    "The attempts of failed trials are left out of the outcomes, not counted as failures
    (as in the verdicts): 14 of retrieval-dense's 70."
    """
    run = require_run(run, "factor_effects")
    check_proportion(confidence_level, "confidence level", location="confidence_level")
    from .stats_paired import CORRECTIONS, adjust_p_values

    if correction is not None and correction not in CORRECTIONS:
        from ._suggest import close_match

        # The same wording as analyze()'s and paired_comparisons()'s refusal of a typo.
        match = close_match(correction, list(CORRECTIONS))
        raise InputError(
            f"unknown correction {correction!r}",
            hint=(f"did you mean {match!r}? " if match else "")
            + f"choose one of {', '.join(CORRECTIONS)}",
            location="correction",
        )
    # Per case (suite order, as the outcomes' rows): its cluster label, or None.
    clusters = cluster_labels(run, cluster) if cluster else None
    table, names, ids, baseline = _design(run)
    design = sfac.design_terms(table, names, ids, baseline)
    frame = pd.DataFrame(columns=FACTOR_EFFECT_COLUMNS)
    attrs: dict[str, Any] = {
        "design": "no factor with two or more levels",
        "design_notes": [],
        "correction": correction,
        "correction_family": CORRECTION_FAMILY,
        "confidence_level": confidence_level,
        "method": "",
    }
    if not design.terms:
        frame.attrs.update(attrs)
        return frame
    kept = [names.index(f) for f in design.factors]
    levels = table[:, kept]
    full = sfac.is_full_factorial(levels)
    rows = []
    methods = set()
    notes: dict[str, list[str]] = {}
    lost: set[str] = set()
    short: list[str] = []
    for metric in _METRICS:
        y = _outcomes(run, ids, metric)
        observed = ~np.isnan(y).all(axis=0)
        mdesign = _metric_design(design, table, names, ids, baseline, observed)
        if mdesign is not design:
            notes[metric] = [_missing_note(ids, observed), *mdesign.notes]
            lost.update(v for v, seen in zip(ids, observed, strict=True) if not seen)
        # The per-case contrasts (and the ANOVA) need every variant of the full factorial:
        # a case lacking one is left out and said (pingouin's rm_anova deletes it too),
        # rather than the whole metric falling to the fixed-effects fit, whose main effects
        # mean something else (the change at the baseline's levels, not the average over
        # the other factors) under the same labels.
        whole = ~np.isnan(y).any(axis=1)
        balanced = full and int(whole.sum()) > 1
        anova: dict[tuple, sfac.RepeatedMeasuresEffect] = {}
        with_f = balanced and clusters is None
        if balanced:
            if not whole.all():
                short.append(_short_note(metric, int((~whole).sum()), len(whole)))
            est = sfac.factorial_contrasts(
                y[whole],
                levels,
                design,
                confidence_level=confidence_level,
                clusters=None if clusters is None else clusters[whole],
            )
            # The F treats the cases as independent: beside clustered intervals it would
            # disagree with them (t² = F no longer holds), so it is left out.
            anova = _anova(y[whole], levels, design) if with_f else {}
        else:
            have = ~np.isnan(y)
            case_idx, var_idx = np.nonzero(have)
            x = mdesign.matrix()[var_idx]
            est = sfac.case_fixed_effects_ols(
                y[have],
                x,
                case_idx,
                confidence_level=confidence_level,
                clusters=None if clusters is None else clusters[case_idx],
            )
        weights = _contrast_weights(mdesign, levels, balanced, observed | ~observed.any())
        methods.add(est.method + (_WITH_ANOVA if with_f else ""))
        k = 0
        confounded = mdesign.confounded()
        for t in mdesign.terms:
            row: dict[str, Any] = {
                "metric": metric,
                "term": t.label,
                "kind": t.kind,
                "factor": t.factors[0],
                "level": t.levels[0],
                "baseline_level": t.baseline_levels[0],
                "factor_b": t.factors[1] if t.kind == "interaction" else None,
                "level_b": t.levels[1] if t.kind == "interaction" else None,
                "baseline_level_b": t.baseline_levels[1] if t.kind == "interaction" else None,
                # A main effect confounded with another is fitted but not reported: its
                # number is their joint change, which it cannot be credited with.
                "estimable": t.estimable and t.label not in confounded,
                "through": t.carriers,
                "contrast": _contrast_text(weights[t.label], ids) if t.estimable else "",
                "n_cases": est.n_cases,
                "method": est.method if t.estimable else "not estimable",
            }
            if t.label in confounded:
                row.update(contrast="", method="not estimable")
                k += 1
            elif t.estimable:
                i = k if not balanced else design.terms.index(t)
                k += 1
                row.update(
                    estimate=est.estimate[i],
                    se=est.se[i],
                    ci_low=est.ci_low[i],
                    ci_high=est.ci_high[i],
                    df=est.df[i],
                    statistic=est.statistic[i],
                    p_value=est.p_value[i],
                )
                if t.factors in anova:
                    test = anova[t.factors]
                    row.update(anova_f=test.f, anova_p=test.p, anova_eps=test.eps)
            rows.append(row)
    frame = pd.DataFrame(rows, columns=FACTOR_EFFECT_COLUMNS)
    for c in FLOAT_COLUMNS:
        frame[c] = frame[c].astype(float)
    frame["p_adjusted"] = np.nan
    if correction is not None:
        for metric in _METRICS:
            at = (frame["metric"] == metric) & frame["estimable"]
            frame.loc[at, "p_adjusted"] = adjust_p_values(
                frame.loc[at, "p_value"].to_numpy(float), correction
            )
    frame["estimable"] = frame["estimable"].astype(bool)
    n_inter = sum(t.kind == "interaction" and t.estimable for t in design.terms)
    if full:
        phrase = "full factorial of " + " × ".join(
            f"{f} ({len(set(levels[:, j]))} levels)" for j, f in enumerate(design.factors)
        )
    else:
        phrase = (
            f"incomplete design: {count_noun(len(ids), 'variant')} over "
            f"{count_noun(len(design.factors), 'factor')} ({', '.join(design.factors)}), "
            f"{count_noun(n_inter, 'interaction')} estimable"
        )
    if lost:
        phrase += f"; no outcome for {sfac._join(sorted(lost))}"
    design_notes = _design_notes(design, notes) + short + _left_out_note(run, ids)
    if clusters is not None:
        groups = len(set(clusters.tolist()))
        # Said: the intervals are not the cases-as-units ones a reader may expect.
        design_notes.append(
            f"The comparisons declare case clusters ({cluster}, {groups} clusters): the "
            "intervals and p-values are CR1 by cluster with t on clusters − 1 df, as in the "
            "paired verdicts"
            + (
                "; the repeated-measures ANOVA F, which treats the cases as independent, "
                "is left out."
                if full
                else "."
            )
        )
    attrs.update(design=phrase, design_notes=design_notes, method="; ".join(sorted(methods)))
    frame.attrs.update(attrs)
    return frame
