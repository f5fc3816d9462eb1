"""The non-inferiority gate for CI: is each candidate no worse than the baseline by δ?"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .. import stats_paired
from .._deprecate import keyword_hints
from .._suggest import require_known
from ..errors import InputError
from ..formats._io import Invalid
from ..formats.comparisons import DIMENSIONS
from ..stats_paired import sps  # scipy.stats, imported on first use
from .dimensions import BOUNDED_UNITS
from .settings import check_alpha, check_setting

__all__ = [
    "AFTER_STOPPING",
    "GATE_COLUMNS",
    "ONE_SIDED_SEQUENCE_BOUND",
    "SEQUENCE_BOUND",
    "gate_details",
    "gate_passed",
    "gate_statement",
    "noninferiority_failures",
    "noninferiority_gate",
]

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


@keyword_hints
def noninferiority_gate(
    comparisons: pd.DataFrame,
    *,
    margin: float | Mapping[str, float] | Sequence[tuple[str, float]],
    dimension: str = "quality",
    alpha: float = 0.05,
    candidates: Sequence[str] | None = None,
    stopping: Mapping[str, Any] | None = None,
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
    multiplicity correction. A margin of 1 or more on a pass rate or score (a
    difference within [−1, 1]) could never fail: that row fails and says so. Several
    gates (``margin={"quality": 0.02, "latency": 200}``) are one more intersection: every
    (dimension, candidate) must pass, each at level α,
    and the chance of passing a candidate worse than a margin on any gate stays ≤ α.

    In a run an early-stopping rule watched (``stopping``: its ``early_stopping`` block,
    stopped early or watched to the end of its plan) the fixed-sample bound is not valid
    for the pass rate the rule watched: the run could stop when the data looked good. The
    quality gate on ``passed`` then reads an anytime-valid bound instead: the lower end of
    a one-sided confidence sequence at the rule's α (not split across candidates), over
    the cases (or clusters) the rule used in the order it used them, read at its decision
    point (the block's ``gate_lower``, which the runner writes), must be above −δ
    (:data:`ONE_SIDED_SEQUENCE_BOUND`; ``alpha`` then holds that α). A block saved
    without it gives the rule's two-sided sequence's lower end at its per-candidate α
    (:data:`SEQUENCE_BOUND`), as such reports were gated when saved. Rows the
    rule did not watch (latency, cost, another evaluator) keep the fixed-sample bound and
    still gate, marked :data:`AFTER_STOPPING` in ``bound_method``: the stopping time
    depends on the pass rates only, so their bound keeps its level when what they measure
    is independent of the pass rate (docs/statistics.md §13).

    Parameters
    ----------
    comparisons
        From :func:`paired_comparisons`.
    margin
        δ ≥ 0, in the evaluator's units (0.02 = two percentage points of pass rate; 200 ms
        and 0.001 USD per attempt for latency and cost, compared as means per attempt); or
        several gates, ``{dimension: δ}`` or ``(dimension, δ)`` pairs (``dimension`` is
        then not read).
    dimension
        Which dimension gates (with a single margin).
    alpha
        One-sided level.
    candidates
        Candidates that must be present (default: ``comparisons.attrs["candidates"]``).
    stopping
        The run's ``early_stopping`` block (``run.stopping``), or None for a run no rule
        watched.

    Returns
    -------
    pandas.DataFrame
        :data:`GATE_COLUMNS`, one row per (dimension, candidate); ``attrs["passed"]`` is
        True when every row passed.

    Examples
    --------
    >>> frame = pd.DataFrame({"candidate_variant_id": ["b"], "dimension": ["quality"],
    ...     "evaluator": ["passed"], "higher_is_better": [True], "unit": ["proportion"],
    ...     "paired_items": [100], "n_clusters": [100], "mean_difference": [0.01],
    ...     "standard_deviation": [0.1], "standard_error": [0.01], "df": [99.0]})
    >>> gate = noninferiority_gate(frame, margin=0.02)
    >>> round(float(gate.loc[0, "bound"]), 4), bool(gate.loc[0, "passed"])
    (-0.0183, True)
    >>> latency = frame.assign(dimension="latency", evaluator="latency_ms",
    ...     higher_is_better=False, unit="ms", mean_difference=150.0, standard_error=20.0)
    >>> both = noninferiority_gate(pd.concat([frame, latency]),
    ...                            margin={"quality": 0.02, "latency": 200})
    >>> both[["dimension", "passed"]].values.tolist(), both.attrs["passed"]
    ([['quality', True], ['latency', True]], True)
    >>> block = {"alpha_per_candidate": 0.05, "candidates": [{"candidate_variant_id": "b",
    ...          "lower": -0.03, "upper": 0.04}]}
    >>> watched = noninferiority_gate(frame, margin=0.02, stopping=block)
    >>> row = watched.loc[0]
    >>> float(row["bound"]), row["bound_method"], bool(row["passed"])
    (-0.03, 'confidence sequence (anytime-valid) of the early-stopping rule', False)
    >>> block["alpha"] = 0.05  # a block the runner wrote: the gate's own one-sided bound
    >>> block["candidates"][0]["gate_lower"] = -0.015
    >>> row = noninferiority_gate(frame, margin=0.02, stopping=block).loc[0]
    >>> float(row["bound"]), float(row["alpha"]), bool(row["passed"])
    (-0.015, 0.05, True)
    >>> print(*row["bound_method"].split(", "), sep="\n")
    one-sided confidence sequence (anytime-valid) at α = 0.05
    over the cases the early-stopping rule used
    """
    if not isinstance(comparisons, pd.DataFrame):
        # A run passed here (the gate reads paired rows, not attempts) failed with
        # "'ExperimentRun' object is not subscriptable".
        raise InputError(
            "noninferiority_gate() takes the paired-comparisons frame, got "
            f"{type(comparisons).__name__}",
            location="comparisons",
            hint="pass paired_comparisons(run, correction=...), or declare "
            "noninferiority_margin there and read its attrs['noninferiority']",
        )
    if isinstance(margin, (Mapping, Sequence)) and not isinstance(margin, str):
        try:
            gates = check_setting("noninferiority", margin)
        except Invalid as exc:
            raise InputError(exc.message, location="margin", hint=exc.hint) from None
        if not gates:
            raise InputError("no gate given", location="margin", hint="pass {'quality': 0.02}")
        if len(gates) == 1:
            ((dimension, margin),) = gates
            return noninferiority_gate(
                comparisons,
                margin=margin,
                dimension=dimension,
                alpha=alpha,
                candidates=candidates,
                stopping=stopping,
            )
        parts = [
            noninferiority_gate(
                comparisons,
                margin=m,
                dimension=d,
                alpha=alpha,
                candidates=candidates,
                stopping=stopping,
            )
            for d, m in gates
        ]
        gate = pd.concat(parts, ignore_index=True)
        gate.attrs["passed"] = all(part.attrs["passed"] for part in parts)
        return gate
    if not margin >= 0:
        raise InputError(f"the margin must be >= 0, got {margin!r}", location="margin")
    alpha = check_alpha(alpha)
    # A misspelt dimension ("qualty") failed every candidate for "no comparable qualty
    # scores", as if the data were missing.
    require_known("dimension", [dimension], DIMENSIONS, location="dimension")
    if stopping is not None and dimension == _WATCHED[0]:
        from .._stopping_block import check_bounds, expected_at

        # (A run's block is checked when it is read; one passed by hand is checked here,
        # for what the gate reads of it, rather than fail on a missing key: by the one
        # gate that reads it, the quality gate, once however many gates there are.)
        where = check_bounds(stopping)
        if where is not None:
            raise InputError(
                "stopping: not an early-stopping block the gate can read (it needs "
                "alpha_per_candidate, a level between 0 and 1, and each candidate's "
                "candidate_variant_id and lower and upper ends, finite with lower <= upper, "
                "or both null for an empty sequence; with a gate_lower, one too, and alpha, "
                f"a level): there {expected_at('stopping', stopping, where)}",
                location=["stopping", *where],
                hint="pass the run's own block, run.stopping",
            )
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
        # + 0.0: a margin of 0 gives -0.0 for a lower bound, which every surface printed
        # as "margin -0 pp".
        threshold = (-margin if higher else margin) + 0.0
        bound, method, problem = _gate_bound(row, alpha, higher)
        level = alpha
        if stopping is not None:
            bound, method, problem, level = _watched_bound(
                stopping, row, (bound, method, problem, alpha)
            )
        if row.get("unit") in BOUNDED_UNITS and margin >= 1:
            # A difference of proportions or scores lies in [-1, 1]: a margin of the whole
            # scale passes whatever the data (most likely 2 meant 2 pp, i.e. 0.02).
            problem = (
                f"margin {margin:g} is the whole scale of a {row['unit']} difference (at "
                f"most 1), so the gate could not fail; give it as a share (0.02 = 2 pp)"
            )
        if problem:
            passed, reason = False, problem
        else:
            passed = bound > threshold if higher else bound < threshold
            side = "lower" if higher else "upper"
            relation = _RELATION[side, passed]
            reason = (
                f"{side} {_level(level)} bound {bound:+.4g} {relation} {threshold:+.4g}"
                f"{_method_note(method)}"
            )
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
                "alpha": level,
                "bound_method": method,
                "passed": bool(passed),
                "reason": reason,
            }
        )
    gate = pd.DataFrame(out, columns=GATE_COLUMNS)
    gate.attrs["passed"] = bool(len(gate)) and bool(gate["passed"].all())
    return gate


#: ``bound_method`` of a pass-rate row read from the early-stopping rule's two-sided
#: confidence sequence (at its per-candidate α): a report saved before the runner wrote the
#: gate's own one-sided bound (``gate_lower``) reads it.
SEQUENCE_BOUND = "confidence sequence (anytime-valid) of the early-stopping rule"
#: ``bound_method`` of a pass-rate row read from the gate's one-sided confidence sequence
#: over the cases the rule used (followed by its level and the cases or clusters).
ONE_SIDED_SEQUENCE_BOUND = "one-sided confidence sequence (anytime-valid)"
#: Added to ``bound_method`` of a row the rule did not watch, in a run it watched: its
#: fixed-sample bound was read at a sample size chosen by the pass rates.
AFTER_STOPPING = "fixed-sample, read after optional stopping on pass rate"
#: The evaluator whose per-case pass rate the rule's sequence watches.
_WATCHED = ("quality", "passed")


def _watched_bound(
    block: Mapping[str, Any],
    row: pd.Series,
    fixed: tuple[float, str | None, str, float],
) -> tuple[float, str | None, str, float]:
    """The bound of one gate row in a run an early-stopping rule watched: (bound, method,
    problem, alpha).

    The quality row on ``passed`` measures what the sequence watched (each candidate
    minus the baseline in pass rate over the evaluated attempts, case by case, or with
    clusters averaged within each cluster and then over clusters, as ``method`` then
    says): its bound is the candidate's ``gate_lower`` in the block, the lower end of a
    one-sided confidence sequence at the rule's α, unsplit (:data:`ONE_SIDED_SEQUENCE_BOUND`),
    over the same units in the same order as the rule's sequence, read at the rule's
    decision point. A block without it (saved before the runner wrote it) gives the rule's
    two-sided sequence's lower end at its per-candidate α (:data:`SEQUENCE_BOUND`), valid
    but conservative. Every other row keeps ``fixed`` (the fixed-sample bound, method,
    problem and α), its method marked :data:`AFTER_STOPPING`.
    """
    bound, method, problem, alpha = fixed
    dimension, evaluator = str(row["dimension"]), str(row["evaluator"])
    if (dimension, evaluator) != _WATCHED:
        if method is None:
            return bound, method, problem, alpha
        if dimension == _WATCHED[0]:
            note = f"the rule watched passed, not {evaluator}"
        else:
            note = f"valid only if {evaluator} is independent of pass rate"
        return bound, f"{method}; {AFTER_STOPPING} ({note})", problem, alpha
    cand = str(row["candidate_variant_id"])
    entry = next(
        (c for c in block.get("candidates", []) if str(c.get("candidate_variant_id")) == cand),
        None,
    )
    one_sided = entry is not None and "gate_lower" in entry
    level = float(block["alpha"] if one_sided else block["alpha_per_candidate"])
    if entry is None:
        # (A block restricted to other candidates: no anytime-valid statement to read, and
        # the fixed-sample bound is not valid after the rule watched the run.)
        return (
            math.nan,
            None,
            "no anytime-valid bound: the early-stopping rule's block "
            "has no interval for this candidate",
            level,
        )
    clustered = block.get("unit") == "cluster"
    if one_sided:
        units = f"clusters of {block.get('cluster')!r}" if clustered else "cases"
        method = (
            f"{ONE_SIDED_SEQUENCE_BOUND} at α = {level:g}, over the {units} the "
            "early-stopping rule used"
        )
    else:
        method = SEQUENCE_BOUND + (
            f" over clusters of {block.get('cluster')!r}" if clustered else ""
        )
    if clustered:
        method += " (each cluster weighs the same; the fixed-sample rows weigh each case)"
    bound = entry["gate_lower" if one_sided else "lower"]
    if bound is None or math.isnan(bound):
        # Every value excluded (a sequence can empty, with exchangeable cases at most
        # with probability α): no bound to read, and the fixed-sample one is not valid.
        return (
            math.nan,
            method,
            "no anytime-valid bound: the confidence sequence is empty (no difference fits "
            "the data)",
            level,
        )
    return float(bound), method, "", level


def _level(alpha: float) -> str:
    """A one-sided bound's level in words: ``95%`` (α = 0.05), ``97.5%`` (α = 0.025).

    Examples
    --------
    >>> _level(0.05), _level(0.025), _level(0.0125)
    ('95%', '97.5%', '98.75%')
    """
    return f"{100 * (1 - alpha):.4g}%"


def _method_note(method: Any) -> str:
    """What a gate line adds after its bound in a run an early-stopping rule watched: the
    sequence it read, or that its fixed-sample bound was read after optional stopping (""
    otherwise, and for reports saved before the rule's bound was read).

    Examples
    --------
    >>> _method_note("one-sided t (df=9); " + AFTER_STOPPING + " (valid only if x ...)")
    ' — fixed-sample, read after optional stopping on pass rate (valid only if x ...)'
    >>> _method_note("one-sided t (df=9)"), _method_note(None)
    ('', '')
    """
    text = str(method) if isinstance(method, str) else ""
    if text.startswith((ONE_SIDED_SEQUENCE_BOUND, SEQUENCE_BOUND)):
        return f" — {text}"
    at = text.find(AFTER_STOPPING)
    return f" — {text[at:]}" if at >= 0 else ""


def _gate_bound(row: pd.Series, alpha: float, higher: bool) -> tuple[float, str | None, str]:
    """The gate's one-sided bound for one comparison row: (bound, method, problem).

    Bounded evaluators (pass rates, scores): the pseudo-case bound of
    :func:`~agenticlens_frames.stats_paired.noninferiority_bound_from_summary`, which keeps
    a positive width when every case differed by the same amount; with clustered cases
    the more cautious of it and the CR1 t bound, or, when the CR1 interval has zero width,
    the pseudo-case bound over the cluster means. Unbounded ones (latency, cost): the
    one-sided t bound, refused when its interval has zero width.
    """
    se, df, est = float(row["standard_error"]), float(row["df"]), float(row["mean_difference"])
    n = int(row["paired_items"]) if "paired_items" in row and pd.notna(row["paired_items"]) else 0
    sign = 1.0 if higher else -1.0
    clusters = int(row["n_clusters"]) if "n_clusters" in row else n
    if clusters < 2 <= n:
        # Declared clusters that are all one: the cases are one unit, with no interval (the
        # comparison says "no test"); the pseudo-case bound would count them as independent.
        return math.nan, None, "no interval: the paired cases form one cluster"
    t_bound = math.nan
    if math.isfinite(se) and math.isfinite(df) and se > 0:
        t_bound = est - sign * float(sps.t.ppf(1 - alpha, df)) * se
    if row.get("unit") in BOUNDED_UNITS and n >= 1:
        sd = float(row["standard_deviation"])
        units, unit = n, "cases"
        if clusters < n and se == 0:
            # Zero-width CR1: every cluster's mean difference is the same (the cases' may
            # not be). Over the cases the pseudo-case bound would count them as independent;
            # over the G cluster means (SD 0) it keeps the clusters as the units.
            units, unit, sd = clusters, "clusters", 0.0
        # for a lower-is-better evaluator bound −d from below, then flip back
        pseudo = sign * float(
            stats_paired.noninferiority_bound_from_summary(units, sign * est, sd, alpha)
        )
        method = f"two pseudo-{unit} (+1, -1), one-sided t (df={units + 1}) (Bonett-Price type)"
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
    """Whether every candidate passed the non-inferiority gate (False for an empty gate).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> from agenticlens_frames.paired.comparisons import paired_analysis
    >>> from agenticlens_frames.paired.settings import ComparisonsConfig
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> config = ComparisonsConfig(correction="holm", noninferiority_margin=0.2)
    >>> gate = paired_analysis(run, config).noninferiority
    >>> gate["passed"].tolist(), gate_passed(gate)
    ([True, True, True, True], True)
    >>> gate_passed(gate.iloc[:0])
    False
    """
    return bool(len(gate)) and bool(gate["passed"].astype(bool).all())


def noninferiority_failures(gate: pd.DataFrame | None) -> list[str] | None:
    """Candidates that failed the gate (None when no gate was set), for exit status 5;
    with gates on several dimensions, ``candidate (dimension)`` for each failed pair.

    Examples
    --------
    >>> noninferiority_failures(None) is None
    True
    >>> noninferiority_failures(pd.DataFrame({"candidate_variant_id": ["b", "c"],
    ...                                       "passed": [False, True]}))
    ['b']
    >>> noninferiority_failures(pd.DataFrame({"candidate_variant_id": ["b", "b"],
    ...     "dimension": ["quality", "latency"], "passed": [True, False]}))
    ['b (latency)']
    """
    if gate is None:
        return None
    failed = gate.loc[~gate["passed"].astype(bool)]
    if "dimension" not in gate or gate["dimension"].nunique() < 2:
        return [str(c) for c in failed["candidate_variant_id"]]
    return [
        f"{c} ({d})"
        for c, d in zip(failed["candidate_variant_id"], failed["dimension"], strict=True)
    ]


#: (bound side, passed) → how the bound stands to the margin, in the gate's words.
_RELATION = {
    ("lower", True): ">",
    ("lower", False): "<=",
    ("upper", True): "<",
    ("upper", False): ">=",
}

#: A unit as the gate's message gives it: (suffix, scale of a difference). Latency and
#: cost are compared as each case's mean over its attempts: a margin of one attempt's ms or
#: USD, not a trial's total over the suite (the variant table's AgenticLens cost).
_UNIT_TEXT = {
    "proportion": ("pp", 100.0),
    "ms": ("ms per attempt", 1.0),
    "usd": ("USD per attempt", 1.0),
}


def gate_details(gate: pd.DataFrame, units: Mapping[str, str] | None = None) -> list[str]:
    """One line per (candidate, dimension) of a gate: the bound against the margin, in the
    dimension's unit where it is known (pp; ms and USD per attempt), else the gate's
    ``reason`` as is.

    Parameters
    ----------
    gate
        From :func:`noninferiority_gate` (or read back from a saved report).
    units
        Dimension → unit (the comparisons' ``unit`` column): ``proportion`` reads as
        percentage points, ``ms`` and ``usd`` as ms and USD per attempt (the paired latency
        and cost are means per attempt), any other unit as its name.

    Examples
    --------
    >>> gate = pd.DataFrame({"candidate_variant_id": ["b", "c", "d"],
    ...     "dimension": ["latency", "quality", "cost"], "bound": [153.2, -0.031, 0.0123],
    ...     "bound_side": ["upper", "lower", "upper"], "threshold": [200.0, -0.02, 0.01],
    ...     "alpha": [0.05, 0.05, 0.05], "passed": [True, False, False],
    ...     "reason": ["upper 95% bound +153.2 < +200", "lower 95% bound -0.031 <= -0.02",
    ...                "upper 95% bound +0.0123 >= +0.01"]})
    >>> for line in gate_details(gate, {"latency": "ms", "quality": "proportion",
    ...                                 "cost": "usd"}):
    ...     print(line)
    b (latency): upper 95% bound +153.2 ms per attempt < margin +200 ms per attempt
    c (quality): lower 95% bound -3.1 pp <= margin -2 pp
    d (cost): upper 95% bound +0.0123 USD per attempt >= margin +0.01 USD per attempt
    >>> gate_details(gate)[0]  # no unit known: the reason in the evaluator's own numbers
    'b (latency): upper 95% bound +153.2 < +200'
    """
    units = dict(units or {})
    out = []
    for row in gate.to_dict("records"):
        reason = str(row["reason"])
        unit = units.get(str(row["dimension"]))
        bound = float(row["bound"]) if pd.notna(row["bound"]) else math.nan
        # A row the gate could not bound ("no comparable … scores") keeps its reason.
        if unit and math.isfinite(bound):
            suffix, scale = _UNIT_TEXT.get(unit, (unit, 1.0))
            side = str(row["bound_side"])
            reason = (
                f"{side} {_level(float(row['alpha']))} bound {bound * scale:+.4g} {suffix} "
                f"{_RELATION[side, bool(row['passed'])]} margin "
                f"{float(row['threshold']) * scale:+.4g} {suffix}"
                f"{_method_note(row.get('bound_method'))}"
            )
        out.append(f"{row['candidate_variant_id']} ({row['dimension']}): {reason}")
    return out


def gate_statement(
    gate: pd.DataFrame, comparisons: pd.DataFrame | None = None, *, every: bool = False
) -> tuple[bool, str, list[str]]:
    """The gate in words, as stderr, the ``--summary``, the console and the HTML page say
    it: (passed, headline, one line per (candidate, dimension)).

    A failed gate names each failing (candidate, dimension) and, unless ``every``, details
    only those; a passed one details every row. ``comparisons`` (the paired frame) gives
    each dimension's unit for :func:`gate_details`.

    Examples
    --------
    >>> gate = pd.DataFrame({"candidate_variant_id": ["b", "b"],
    ...     "dimension": ["quality", "latency"], "bound": [-0.01, 250.0],
    ...     "bound_side": ["lower", "upper"], "alpha": [0.05, 0.05],
    ...     "threshold": [-0.02, 200.0], "passed": [True, False],
    ...     "reason": ["lower 95% bound -0.01 > -0.02", "upper 95% bound +250 >= +200"]})
    >>> units = pd.DataFrame({"dimension": ["quality", "latency"], "unit": ["proportion", "ms"]})
    >>> passed, headline, details = gate_statement(gate, units)
    >>> passed, headline
    (False, 'Non-inferiority gate failed: b (latency)')
    >>> details
    ['b (latency): upper 95% bound +250 ms per attempt >= margin +200 ms per attempt']
    """
    failed = noninferiority_failures(gate) or []
    units = (
        dict(
            zip(comparisons["dimension"].astype(str), comparisons["unit"].astype(str), strict=True)
        )
        if comparisons is not None and "unit" in comparisons
        else {}
    )
    rows = gate.loc[~gate["passed"].astype(bool)] if failed and not every else gate
    details = gate_details(rows, units)
    if failed:
        return False, f"Non-inferiority gate failed: {', '.join(failed)}", details
    return True, "Non-inferiority gate passed:", details
