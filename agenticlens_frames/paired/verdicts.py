"""Case-level verdicts: the one line per candidate a person decides on.

Every candidate is compared with the baseline case by case (the paired comparisons of
:mod:`agenticlens_frames.paired.comparisons`), and each (candidate, dimension) row becomes
a verdict in words:

``better`` / ``worse``        significant after the declared multiple-comparison
                              correction, in the direction that is better / worse for
                              the dimension (lower latency and cost are better)
``no detectable difference``  not significant; ``detectable`` says the smallest change
                              this run could have detected (the minimum detectable effect
                              at the run's α and power), or that no change is detectable
                              with this design when that exceeds the scale
``no test``                   fewer than two paired cases (or clusters)
``not judged``                no correction was declared: the paired differences are
                              shown with per-comparison intervals and nothing is called
                              significant (``how_to_declare`` says how to declare one)

A correction chosen after seeing the numbers is not a correction, so none is assumed: an
experiment that declares none gets the quality dimension only, as per-comparison
estimates, and no verdict. The AgenticLens-compatible comparisons (pooled attempts, z
test) are not used here; they treat correlated attempts as independent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._deprecate import keyword_hints
from .._values import format_in_unit
from ..errors import check_proportion
from ..frames import ExperimentRun, require_run
from .settings import (
    BOUNDED_UNITS,
    DIMENSIONS,
    ComparisonsConfig,
    GuardRails,
    run_comparisons,
    with_analysis_level,
)

__all__ = [
    "CORRECTION_NAMES",
    "HOW_TO_DECLARE",
    "NOT_IN_REPORT",
    "REGRESSION_DIMENSIONS",
    "VERDICT_COLUMNS",
    "VERDICT_STYLES",
    "case_verdicts",
    "detectable_cell",
    "detectable_note",
    "empty_verdicts",
    "family_phrase",
    "format_change",
    "format_difference",
    "format_interval",
    "format_p",
    "headline_pass_rates",
    "how_tested",
    "interval_phrase",
    "method_phrase",
    "p_header",
    "p_value_tests",
    "regressions",
    "verdicts_family",
    "verdicts_from_paired",
]

#: Columns of :func:`case_verdicts`, in order.
VERDICT_COLUMNS = [
    "baseline_variant_id",
    "candidate_variant_id",
    "dimension",
    "evaluator",
    "unit",
    "higher_is_better",
    "paired_items",
    "baseline_mean",
    "candidate_mean",
    "mean_difference",
    "ci_low",
    "ci_high",
    "confidence_level",
    "ci_method",
    "p_value",
    "adjusted_p_value",
    "correction",
    "alpha",
    "family_size",
    "declared",
    "significant",
    "verdict",
    "mde",
    "mde_power",
    "detectable",
    "statement",
]

#: What to do when no correction is declared (shown wherever the verdicts would be).
HOW_TO_DECLARE = (
    "No multiple-comparison correction is declared, so no difference is called "
    "significant. Declare one before looking at the numbers: add "
    "`comparisons: {correction: holm}` to the manifest, pass `--correction holm` to "
    "`experiment run` (or to `experiment report`, for a report without verdicts of its "
    "own), or call analyze(run, correction='holm')."
)

#: Dimensions on which a significantly worse candidate is a regression for
#: ``--fail-on-regression``; latency and cost are trade-offs, reported but not gated.
REGRESSION_DIMENSIONS = ("quality", "safety", "reliability")


#: A signed difference per unit, without the unit (see :func:`format_in_unit`).
_SIGNED = {"proportion": "{pp:+.1f}", "ms": "{v:+.0f}", "usd": "{v:+.5f}", "": "{v:+.3f}"}


def _signed(value: float, unit: str) -> str:
    """``value`` with its sign; a nonzero value the format would round away keeps two
    significant digits, but floating-point residue (a bootstrap bound of -1.1e-15 that is
    0 up to rounding) is 0, not a digit that reads as "excludes 0".

    Examples
    --------
    >>> _signed(-1.1e-17, "proportion"), _signed(-0.0003, "ms")
    ('+0.0', '-0.0003')
    """
    if not math.isfinite(value):
        return "n/a"
    if abs(value) < _RESIDUE:
        value = 0.0
    return format_in_unit(value, unit, _SIGNED, keep_nonzero=True)


#: Below this, a difference or bound is taken for floating-point residue (every unit's
#: meaningful values — proportions, ms, USD per attempt — are far larger).
_RESIDUE = 1e-12


def _unit_suffix(unit: str) -> str:
    return {"proportion": " pp", "ms": " ms", "usd": " USD"}.get(unit, "")


#: How a correction is named in words.
CORRECTION_NAMES = {
    "none": "no",
    "bonferroni": "Bonferroni",
    "holm": "Holm",
    "benjamini_hochberg": "Benjamini-Hochberg",
}


def format_p(value: float) -> str:
    """A p-value for a table: three decimals, or scientific below 0.001.

    Examples
    --------
    >>> format_p(0.6347), format_p(1.1e-4), format_p(float("nan"))
    ('0.635', '1.1e-04', 'n/a')
    """
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def p_header(correction: str, *, short: bool = False) -> str:
    """The verdict tables' p column: adjusted under a correction; each comparison's own p
    under a declared ``none`` (not "adjusted").

    Examples
    --------
    >>> p_header("holm"), p_header("holm", short=True), p_header("none")
    ('Adjusted p', 'Adj. p', 'p (not adjusted)')
    """
    if str(correction) == "none":
        return "p (not adjusted)"
    return "Adj. p" if short else "Adjusted p"


def format_difference(value: float, unit: str) -> str:
    """A paired difference in the evaluator's unit (proportions in percentage points).

    Examples
    --------
    >>> format_difference(0.157, "proportion"), format_difference(-12.4, "ms")
    ('+15.7 pp', '-12 ms')
    """
    text = _signed(value, unit)
    return text if text == "n/a" else text + _unit_suffix(unit)


def format_interval(low: float, high: float, unit: str) -> str:
    """``[low, high]`` with signs, in the unit of :func:`format_difference` (not repeated).

    Examples
    --------
    >>> format_interval(-0.001, 0.315, "proportion")
    '[-0.1, +31.5]'
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return "[n/a]"
    return f"[{_signed(low, unit)}, {_signed(high, unit)}]"


def format_change(row: Mapping[str, Any]) -> str:
    """A comparison row's difference and its interval, in its ``unit``: the cell every
    table of differences shows (``mean_difference``, ``ci_low``, ``ci_high``, ``unit``).

    Examples
    --------
    >>> format_change({"mean_difference": 0.157, "ci_low": -0.001, "ci_high": 0.315,
    ...                "unit": "proportion"})
    '+15.7 pp [-0.1, +31.5]'
    """
    unit = str(row["unit"])
    return (
        f"{format_difference(row['mean_difference'], unit)} "
        f"{format_interval(row['ci_low'], row['ci_high'], unit)}"
    )


def interval_phrase(confidence_level: float, alpha: float, correction: str | None = None) -> str:
    """What the interval beside a declared verdict is, in words: per comparison at its own
    level, while the verdict follows the adjusted p at α — said outright when the level is
    not 1 − α, where an interval crossing 0 can sit beside "better" or "worse". With the
    correction declared as ``"none"`` there is no adjusted p: the verdict follows each
    comparison's own.

    Examples
    --------
    >>> interval_phrase(0.95, 0.05)[-64:]
    'not adjusted for the family; the verdict follows the adjusted p.'
    >>> interval_phrase(0.95, 0.5).split("; ")[1]
    'the verdict follows the adjusted p at α = 0.5, not the interval.'
    >>> interval_phrase(0.95, 0.05, "none").split("; ")[1]
    "no correction is declared, so the verdict follows each comparison's own p."
    """
    level = f"{100 * confidence_level:.3g}%"
    if correction == "none":
        text = (
            f"The interval is per comparison ({level}); no correction is declared, so the "
            "verdict follows each comparison's own p"
        )
        if math.isfinite(alpha) and not math.isclose(alpha, 1 - confidence_level):
            return text + f" at α = {alpha:g}, not the interval."
        return text + "."
    text = f"The interval is per comparison ({level}), not adjusted for the family; the verdict "
    if math.isfinite(alpha) and not math.isclose(alpha, 1 - confidence_level):
        return text + f"follows the adjusted p at α = {alpha:g}, not the interval."
    return text + "follows the adjusted p."


def method_phrase(ci_methods: Any) -> str:
    """The tests behind a table of comparisons, in words, from its ``ci_method`` values —
    including a row that fell back to the t test (a McNemar row with more than one
    attempt per arm), which would otherwise be said only in the files.

    Examples
    --------
    >>> method_phrase(["t", "t"])
    'paired t'
    >>> method_phrase(["mcnemar", "t (McNemar needs one binary attempt per arm per case)"])
    'McNemar exact; paired t (McNemar needs one binary attempt per arm per case)'
    """
    from .._choices import METHODS

    said = []
    for text in dict.fromkeys(str(m) for m in ci_methods if isinstance(m, str) and m):
        name, _, why = text.partition(" (")
        info = METHODS.get(name)
        said.append((info.test if info else name) + (f" ({why}" if why else ""))
    return "; ".join(said)


def p_value_tests(p_value_methods: Any) -> list[str]:
    """The tests behind a table's p-values, each once, from its ``p_value_method`` values:
    a test's name without its per-row detail (sign vectors, dropped zeros), with the reason
    kept where a row fell back to another test or had none.

    Examples
    --------
    >>> p_value_tests(["Wilcoxon signed-rank (zero differences dropped)", "t",
    ...             "sign-flip permutation, exact (8 sign vectors)"])
    ['Wilcoxon signed-rank', 't', 'sign-flip permutation, exact']
    >>> p_value_tests(["t (McNemar needs one binary attempt per arm per case)"])
    ['t (McNemar needs one binary attempt per arm per case)']
    """
    names = []
    for text in p_value_methods:
        if isinstance(text, str) and text:
            name, _, why = text.partition(" (")
            names.append(text if "needs" in why or "no interval or test" in why else name)
    return list(dict.fromkeys(names))


def how_tested(verdicts: pd.DataFrame) -> str:
    """The test behind a verdict table's p-values and, when another, its intervals'
    method, in words. The interval's method alone was said as the test: a run with
    ``--paired-method wilcoxon`` (t interval, Wilcoxon p) read "test: paired t", as if the
    option had been ignored.

    Examples
    --------
    >>> v = pd.DataFrame({"ci_method": ["t"]})
    >>> v.attrs["tests"] = ["Wilcoxon signed-rank"]
    >>> how_tested(v)
    'Wilcoxon signed-rank; interval: paired t'
    >>> how_tested(pd.DataFrame({"ci_method": ["t"]}))
    'paired t'
    """
    interval = method_phrase(verdicts.get("ci_method", ()))
    test = method_phrase(verdicts.attrs.get("tests") or ()) or interval
    return test if test == interval or not interval else f"{test}; interval: {interval}"


def family_phrase(correction: str, family_size: int | None, alpha: float) -> str:
    """Which correction decides significance, over which family, at which α, in words:
    what every surface that marks a comparison significant says beside it.

    Examples
    --------
    >>> family_phrase("holm", 19, 0.05)
    'Holm correction over the family of 19 comparisons, α = 0.05'
    >>> family_phrase("bonferroni", 1, 0.05)
    'Bonferroni correction over the family of 1 comparison, α = 0.05'
    >>> family_phrase("none", 19, 0.05)
    'no correction (declared), α = 0.05 per comparison'
    """
    if correction == "none":
        return f"no correction (declared), α = {float(alpha):g} per comparison"
    name = CORRECTION_NAMES.get(correction, correction)
    plural = "" if family_size == 1 else "s"
    family = f" of {int(family_size)} comparison{plural}" if family_size else ""
    return f"{name} correction over the family{family}, α = {float(alpha):g}"


def verdicts_family(verdicts: pd.DataFrame) -> str:
    """:func:`family_phrase` of a declared verdict frame: what the heading of its verdicts
    says on every surface ("no comparison" when no candidate was compared). The console
    built its own ("no correction over the family (α = 0.05)" for a declared ``none``,
    where the summary and the page said "no correction (declared), α = 0.05 per
    comparison", and no family size).

    Examples
    --------
    >>> v = pd.DataFrame({"correction": ["none"], "family_size": [4], "alpha": [0.05]})
    >>> verdicts_family(v)
    'no correction (declared), α = 0.05 per comparison'
    >>> verdicts_family(v.assign(correction="holm"))
    'Holm correction over the family of 4 comparisons, α = 0.05'
    >>> verdicts_family(v.iloc[:0])
    'no comparison'
    """
    if not len(verdicts):
        return "no comparison"
    first = verdicts.iloc[0]
    return family_phrase(str(first["correction"]), int(first["family_size"]), float(first["alpha"]))


#: How a terminal table colours a verdict (rich styles; the HTML page has its own classes).
VERDICT_STYLES = {"better": "green", "worse": "red"}


def _magnitude(value: float, unit: str) -> str:
    return format_difference(value, unit).lstrip("+")


#: How the ``detectable`` note of a non-significant row begins: the usual MDE sentence, and
#: the one for an MDE beyond the scale (:func:`detectable_cell` shortens both for tables).
_COULD_NOT_DETECT = "this run could not detect changes smaller than"
_NOT_DETECTABLE = "not detectable with this design"


def detectable_cell(verdict: str, mde: float, unit: str, detectable: str) -> str:
    """The ``detectable`` note of a verdict row, short enough for a table cell.

    The usual sentence becomes its magnitude alone ("44.7 pp"), an MDE beyond the scale
    "beyond the scale"; other notes (no test, no bound) are kept whole. A table that shows
    the cell says once, in its caption, what the magnitude means.

    Examples
    --------
    >>> detectable_cell("no detectable difference", 0.447, "proportion",
    ...                 "this run could not detect changes smaller than 44.7 pp")
    '44.7 pp'
    >>> detectable_cell("worse", 0.1, "proportion", "")
    ''
    """
    if not detectable:
        return ""
    if detectable.startswith(_COULD_NOT_DETECT) and math.isfinite(mde):
        return _magnitude(mde, unit)
    if detectable.startswith(_NOT_DETECTABLE):
        return "beyond the scale"
    return detectable


def detectable_note(mde: float, unit: str, degenerate: bool) -> str:
    """What a comparison without a significant result could have missed, in words.

    Examples
    --------
    >>> detectable_note(0.447, "proportion", False)
    'this run could not detect changes smaller than 44.7 pp'
    >>> detectable_note(float("inf"), "proportion", False)[:31]
    'not detectable with this design'
    """
    if degenerate:
        return "every case differed by the same amount; no detectable-change bound"
    if mde == math.inf:
        # Planning reports an MDE beyond the scale as infinite.
        return f"{_NOT_DETECTABLE} (the smallest detectable change exceeds the scale)"
    if not math.isfinite(mde):
        return "the smallest detectable change could not be estimated"
    if unit in BOUNDED_UNITS and mde > 1.0:
        # A difference of two rates or scores in [0, 1] cannot exceed 1 (100 pp).
        return (
            f"{_NOT_DETECTABLE} (the smallest detectable change, "
            f"{_magnitude(mde, unit)}, exceeds the scale)"
        )
    return f"{_COULD_NOT_DETECT} {_magnitude(mde, unit)}"


def _verdict(declared: bool, significant: Any, difference: float, higher: bool) -> str:
    if not declared:
        return "not judged"
    if significant is None or significant is pd.NA:
        return "no test"
    # An estimate of exactly zero has no direction, whatever its p (a hand-made or degenerate
    # frame can flag one significant): "worse" for a higher-is-better dimension, "better"
    # for latency and cost, said a difference the estimate does not show.
    if not bool(significant) or difference == 0:
        return "no detectable difference"
    return "better" if (difference > 0) == bool(higher) else "worse"


def _statement(row: Mapping[str, Any], degenerate: bool = True) -> str:
    head = (
        f"{row['candidate_variant_id']} vs {row['baseline_variant_id']}, {row['dimension']} "
        f"({row['evaluator']}): {format_change(row)}"
    )
    level = row["confidence_level"]
    low, high = float(row["ci_low"]), float(row["ci_high"])
    # "[+100.0, +100.0] (95% CI)" beside "no detectable difference" reads as a contradiction:
    # a zero-width interval is arithmetic (every case moved alike), so it is named as such.
    zero_width = math.isfinite(low) and low == high
    # Not degenerate: CR1 over clusters whose mean differences are equal (the cases' not).
    alike = "every case differed" if degenerate else "every cluster's mean differed"
    interval = (
        f"zero-width interval: {alike} by the same amount, not certainty"
        if zero_width
        else f"{level:.0%} CI"
    )
    if not row["declared"]:
        kind = interval if zero_width else f"{level:.0%} per-comparison interval"
        text = f"{head} ({kind}); not judged: no correction declared"
        # The smallest detectable change too (docs/statistics.md §0: "with their intervals
        # and the MDE at α"): the console's column had it, the sentence every other
        # surface shows (the notebook's display, Comparator.summary) did not.
        return f"{text}; {row['detectable']}" if row["detectable"] else text
    p = format_p(row["adjusted_p_value"])
    if row["correction"] == "none":
        text = f"{head} ({interval}), p = {p} (no correction, as declared): {row['verdict']}"
    else:
        name = CORRECTION_NAMES.get(str(row["correction"]), str(row["correction"]))
        text = f"{head} ({interval}), {name}-adjusted p = {p}: {row['verdict']}"
    return f"{text}; {row['detectable']}" if row["detectable"] else text


def verdicts_from_paired(paired: pd.DataFrame, *, declared: bool) -> pd.DataFrame:
    """Verdict rows from a :func:`~agenticlens_frames.paired_comparisons` frame.

    Parameters
    ----------
    paired
        One row per (candidate, evaluator), as :func:`paired_comparisons` returns it.
    declared
        Whether its correction was declared by the user. When False the rows are
        per-comparison estimates: ``significant`` is NA and ``verdict`` is ``not judged``.

    Returns
    -------
    pandas.DataFrame
        :data:`VERDICT_COLUMNS`; ``attrs["declared"]`` and, when not declared,
        ``attrs["how_to_declare"]``.

    Examples
    --------
    >>> row = {"baseline_variant_id": "b", "candidate_variant_id": "c",
    ...        "dimension": "quality", "evaluator": "passed", "unit": "proportion",
    ...        "higher_is_better": True, "paired_items": 14, "baseline_mean": 0.7,
    ...        "candidate_mean": 0.5, "mean_difference": -0.2, "ci_low": -0.3,
    ...        "ci_high": -0.1, "confidence_level": 0.95, "ci_method": "t",
    ...        "p_value": 0.001, "adjusted_p_value": 0.004, "correction": "holm",
    ...        "alpha": 0.05, "family_size": 4, "significant": True, "mde": 0.1,
    ...        "mde_power": 0.8, "degenerate": False}
    >>> v = verdicts_from_paired(pd.DataFrame([row]), declared=True)
    >>> v.loc[0, "verdict"], v.loc[0, "detectable"]
    ('worse', '')
    """
    frame = pd.DataFrame(index=paired.index)
    for column in VERDICT_COLUMNS:
        if column in paired:
            frame[column] = paired[column]
    frame["declared"] = bool(declared)
    degenerate = (
        paired["degenerate"].fillna(False).astype(bool).to_numpy()
        if "degenerate" in paired
        else np.zeros(len(paired), dtype=bool)
    )
    if not declared:
        frame["adjusted_p_value"] = np.nan
        frame["correction"] = "not declared"
        frame["family_size"] = 0
        frame["significant"] = pd.array([pd.NA] * len(paired), dtype="boolean")
    significant = frame["significant"].tolist() if "significant" in frame else [pd.NA] * len(paired)
    frame["verdict"] = [
        _verdict(declared, s, float(d), bool(h))
        for s, d, h in zip(
            significant, frame["mean_difference"], frame["higher_is_better"], strict=True
        )
    ]
    frame["detectable"] = [
        ""
        if verdict in ("better", "worse")
        else (
            "fewer than two paired cases (or clusters)"
            if verdict == "no test"
            else detectable_note(float(m), str(u), bool(g))
        )
        for verdict, m, u, g in zip(
            frame["verdict"], frame["mde"], frame["unit"], degenerate, strict=True
        )
    ]
    frame = frame.reindex(columns=VERDICT_COLUMNS[:-1]).reset_index(drop=True)
    frame["statement"] = [
        _statement(r, bool(g)) for r, g in zip(frame.to_dict("records"), degenerate, strict=True)
    ]
    frame["significant"] = pd.array(frame["significant"].tolist(), dtype="boolean")
    for column in ("paired_items", "family_size"):
        frame[column] = pd.to_numeric(frame[column]).fillna(0).astype(np.int64)
    frame.attrs["declared"] = bool(declared)
    if "p_value_method" in paired:
        frame.attrs["tests"] = p_value_tests(paired["p_value_method"])
    # The comparisons that have no row, and why: a table without them must say so.
    frame.attrs["omitted"] = list(paired.attrs.get("omitted", []))
    if not declared:
        frame.attrs["how_to_declare"] = HOW_TO_DECLARE
    return frame


def omitted_statement(verdicts: pd.DataFrame) -> str:
    """One sentence naming the comparisons a verdict table leaves out, and why ("" when
    none is): every surface that shows the verdicts says it under them.

    Examples
    --------
    >>> v = pd.DataFrame()
    >>> v.attrs["omitted"] = [{"candidate_variant_id": "b", "dimension": "latency",
    ...                        "evaluator": "latency_ms", "reason": "no case has a known "
    ...                        "latency in both arms"}]
    >>> omitted_statement(v)
    'Not compared: b on latency (latency_ms): no case has a known latency in both arms.'
    """
    parts = [text for _, text in omitted_parts(verdicts)]
    return f"Not compared: {'; '.join(parts)}." if parts else ""


def omitted_parts(verdicts: pd.DataFrame) -> list[tuple[str, str]]:
    """Each comparison a verdict table leaves out: (candidate, what and why), the parts of
    :func:`omitted_statement` (the page tags each with its candidate for its filters).

    Examples
    --------
    >>> v = pd.DataFrame()
    >>> v.attrs["omitted"] = [{"candidate_variant_id": "b", "dimension": "cost",
    ...                        "evaluator": "cost_usd", "reason": "unpriced"}]
    >>> omitted_parts(v)
    [('b', 'b on cost (cost_usd): unpriced')]
    """
    return [
        (
            str(o["candidate_variant_id"]),
            f"{o['candidate_variant_id']} on {o['dimension']} ({o['evaluator']}): {o['reason']}",
        )
        for o in verdicts.attrs.get("omitted") or []
    ]


def _undeclared_config(confidence_level: float) -> ComparisonsConfig:
    # Quality only, unadjusted, never limited: a per-comparison look, not a decision.
    return ComparisonsConfig(
        correction="none",
        alpha=round(1.0 - confidence_level, 12),
        confidence_level=confidence_level,
        without=tuple(d for d in DIMENSIONS if d != "quality"),
        limits=GuardRails(allow_large=True),
    )


@keyword_hints
def case_verdicts(
    run: ExperimentRun,
    comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
    *,
    confidence_level: float = 0.95,
    paired: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One verdict per candidate and dimension: the case-level paired comparison in words.

    Parameters
    ----------
    run
        The experiment.
    comparisons
        The declared settings (a :class:`ComparisonsConfig` or a manifest-style mapping
        such as ``{"correction": "holm"}``); None takes the manifest's ``comparisons:``.
        When neither declares a correction, the quality dimension is shown with
        per-comparison intervals and ``verdict`` is ``not judged``.
    confidence_level
        For the per-comparison intervals, unless the declared settings name a level.
    paired
        The paired comparisons already computed with ``comparisons`` (skips recomputing).

    Returns
    -------
    pandas.DataFrame
        :data:`VERDICT_COLUMNS`, one row per (candidate, dimension), quality first;
        ``attrs`` holds ``declared``, ``omitted`` (comparisons without a row, with the
        reason) and ``correction`` when one is declared, ``how_to_declare`` when none is.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> v = case_verdicts(run)
    >>> v.loc[v["candidate_variant_id"] == "prompt-v2", "verdict"].iloc[0]
    'no detectable difference'
    >>> case_verdicts(run, {"correction": "holm"}).attrs["declared"]
    True
    """
    run = require_run(run, "case_verdicts")
    from .comparisons import paired_analysis  # lazily: scipy.stats

    check_proportion(confidence_level, "confidence level", location="confidence_level")
    config = with_analysis_level(
        run_comparisons(run, comparisons),
        run.manifest,
        comparisons,
        confidence_level,
    )
    declared = config is not None
    if paired is None:
        used = config if config is not None else _undeclared_config(confidence_level)
        paired = paired_analysis(run, used, fingerprint=declared).comparisons
    frame = verdicts_from_paired(paired, declared=declared)
    if declared:
        frame.attrs["correction"] = config.correction  # type: ignore[union-attr]
    return frame


def regressions(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The rows that make ``--fail-on-regression`` fail: declared, significantly worse, on
    a dimension in :data:`REGRESSION_DIMENSIONS`.

    Examples
    --------
    >>> frame = pd.DataFrame({"declared": [True, True], "verdict": ["worse", "worse"],
    ...                       "dimension": ["quality", "cost"]})
    >>> regressions(frame)["dimension"].tolist()
    ['quality']
    """
    if verdicts.empty:
        return verdicts
    mask = (
        verdicts["declared"].astype(bool)
        & (verdicts["verdict"] == "worse")
        & verdicts["dimension"].astype(str).isin(REGRESSION_DIMENSIONS)
    )
    return verdicts[mask]


#: Shown instead of the verdicts for a saved report that has none and no per-case records.
NOT_IN_REPORT = (
    "This report has no case-level verdicts, and its trials hold no per-case records to "
    "compute them from (a --lean report of an older version): run the experiment with "
    "`agenticlens-frames experiment run` to get them. The pass rates' intervals come from "
    "the report's per-case counts with cases as the unit; AgenticLens's own numbers, "
    "labelled, treat attempts as independent."
)


def empty_verdicts(*, missing: bool = False) -> pd.DataFrame:
    """An empty verdict frame; ``missing``: rebuilt from a report that has none."""
    frame = pd.DataFrame(columns=VERDICT_COLUMNS)
    frame.attrs["declared"] = False
    if missing:
        frame.attrs["missing"] = NOT_IN_REPORT
    return frame


# --------------------------------------------------------------------------- headline


def headline_pass_rates(summary: pd.DataFrame | None) -> pd.DataFrame:
    """Per variant, the recommended case-level interval for the mean pass rate.

    Reads :func:`~agenticlens_frames.case_level_summary` (or its saved records) and keeps
    the row marked recommended: a ``recommended`` column when the frame has one, else the
    ``wilson_effective_n`` method. The estimate is over evaluated attempts (a failed
    trial is left out, not counted as failing every case), with cases as the unit.

    Returns
    -------
    pandas.DataFrame
        ``variant_id``, ``estimate``, ``ci_low``, ``ci_high``, ``confidence_level``,
        ``method``, ``n_cases``, ``n_clusters`` (the interval's units: fewer than
        ``n_cases`` under a declared cluster), ``n_attempts``, ``note`` (the summary's,
        which says why a row has no interval:
        :func:`~agenticlens_frames._values.missing_interval_reason`); empty when
        ``summary`` is None or empty.

    Examples
    --------
    >>> from agenticlens_frames import case_level_summary, load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> h = headline_pass_rates(case_level_summary(run))
    >>> round(float(h.loc[h["variant_id"] == "retrieval-dense", "estimate"].iloc[0]), 3)
    0.821
    """
    columns = [
        "variant_id",
        "estimate",
        "ci_low",
        "ci_high",
        "confidence_level",
        "method",
        "n_cases",
        "n_clusters",
        "n_attempts",
        "note",
    ]
    needed = {"variant_id", "estimand", "method", "estimate", "ci_low", "ci_high"}
    if summary is None or len(summary) == 0 or not needed <= set(summary.columns):
        return pd.DataFrame(columns=columns)
    rows = summary[summary["estimand"].astype(str) == "mean"]
    if "evaluator" in rows:
        rows = rows[rows["evaluator"].astype(str) == "passed"]
    if "recommended" in rows:
        rows = rows[rows["recommended"].fillna(False).astype(bool)]
    else:
        rows = rows[rows["method"].astype(str) == "wilson_effective_n"]
    out = rows.reindex(columns=columns).copy()
    out["variant_id"] = out["variant_id"].astype(str)
    for column in ("estimate", "ci_low", "ci_high"):
        out[column] = pd.to_numeric(out[column], errors="coerce").astype(np.float64)
    return out.reset_index(drop=True)
