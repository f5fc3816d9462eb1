r"""Which factor did it? Factor effects of a variant design, the case as the unit (pure).

Variants carry factors (model, prompt, retrieval, …) and a baseline. Each case gives one
outcome per variant (its pass rate over the trials, or its mean score), so the data are a
cases × variants matrix :math:`Y` and the design is a variants × factors table of levels.

Terms are coded against the baseline's levels (treatment coding): a main-effect term
per non-baseline level of each factor, and a two-factor interaction term per pair of
non-baseline levels of two factors. :func:`design_terms` decides which terms the design
can estimate (a term whose column adds nothing to the span of the intercept and the
terms before it cannot be estimated; main effects come first, then interactions), and
says so in words.

Two estimators:

* **Balanced full factorial within cases** (every combination of levels is a variant and
  every case has every variant): :func:`factorial_contrasts`. Main effects are averaged
  over the other factors' levels (the ANOVA definition): per case, the mean of the cells
  at level :math:`\ell` minus the mean at the baseline level, then a one-sample t-test
  over cases (df = cases − 1). An interaction is the per-case difference of differences
  of the two-factor cell means. For two-level factors :math:`t^2` is exactly the
  repeated-measures ANOVA :math:`F` (Maxwell & Delaney, *Designing Experiments and
  Analyzing Data*, ch. 12), which the frame-level code reports beside it
  (:func:`repeated_measures_anova`, its p Greenhouse–Geisser corrected for an effect of
  more than one df; the tests check it against ``pingouin.rm_anova``).
  With clustered cases (cases sharing a topic are not independent) the t-test becomes
  CR1 of the per-case contrasts by cluster with :math:`G-1` df, as the paired t of a
  clustered comparison (:func:`~agenticlens_frames.stats_paired.cluster_robust_interval`).
* **Any other design**: :func:`case_fixed_effects_ols`, the linear model
  :math:`y_{cv} = \alpha_c + x_v^\top\beta + \varepsilon_{cv}` with case fixed effects
  (the within transformation) and CR1 cluster-robust standard errors by case,
  :math:`\hat V = \frac{G}{G-1}\frac{N-1}{N-K}(X^\top X)^{-1}\big(\sum_c X_c^\top e_c
  e_c^\top X_c\big)(X^\top X)^{-1}`, t reference with :math:`G-1` df (Cameron & Miller
  2015, *J. Human Resources* 50(2)); with clustered cases the sums run over the clusters
  (each holding whole cases) and G is their number. A main effect is then the change at
  the baseline's levels of the other factors, and interactions the design cannot
  estimate are assumed 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "DesignTerm",
    "FactorDesign",
    "RepeatedMeasuresEffect",
    "TermEstimate",
    "case_fixed_effects_ols",
    "design_terms",
    "factorial_contrasts",
    "is_full_factorial",
    "repeated_measures_anova",
]

_TOL = 1e-9


@dataclass(frozen=True)
class DesignTerm:
    """One main-effect or two-factor interaction term, coded against the baseline.

    Attributes
    ----------
    kind
        ``"main"`` or ``"interaction"``.
    factors, levels, baseline_levels
        One entry for a main effect, two for an interaction.
    column
        The term's 0/1 indicator over variants.
    estimable
        Whether the design can estimate it.
    carriers
        Variants with every level of the term (for an interaction: the variants that
        combine both non-baseline levels).
    aliased_with
        Labels of earlier terms it is confounded with (non-estimable terms only).
    """

    kind: str
    factors: tuple[str, ...]
    levels: tuple[str, ...]
    baseline_levels: tuple[str, ...]
    column: np.ndarray
    estimable: bool
    carriers: tuple[str, ...]
    aliased_with: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``model: gpt-large vs gpt-small`` or ``model × prompt: gpt-large & v2``."""
        if self.kind == "main":
            return f"{self.factors[0]}: {self.levels[0]} vs {self.baseline_levels[0]}"
        return f"{self.factors[0]} × {self.factors[1]}: {self.levels[0]} & {self.levels[1]}"


@dataclass(frozen=True)
class FactorDesign:
    """The terms of a design and what can be said about them in words."""

    factors: tuple[str, ...]
    terms: tuple[DesignTerm, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def estimable(self) -> list[DesignTerm]:
        """The terms the design can estimate, main effects first."""
        return [t for t in self.terms if t.estimable]

    def confounded(self) -> dict[str, tuple[str, ...]]:
        """Estimable main effects that a later main effect is confounded with.

        Such a term stays in the fit (the others need its column), but its estimate is
        the joint change of the factors that move with it, not its own: ``model`` would
        be credited with what ``prompt`` may have done. Label → the confounded terms.

        Examples
        --------
        >>> d = design_terms([["s", "1"], ["l", "2"]], ["model", "prompt"], ["a", "b"], 0)
        >>> d.confounded()
        {'model: l vs s': ('prompt: 2 vs 1',)}
        """
        out: dict[str, tuple[str, ...]] = {}
        for t in self.terms:
            if t.kind == "main" and not t.estimable:
                for label in t.aliased_with:
                    out[label] = (*out.get(label, ()), t.label)
        return out

    def matrix(self) -> np.ndarray:
        """(variants, estimable terms) 0/1 design matrix, without the intercept."""
        cols = [t.column for t in self.estimable]
        n = len(self.terms[0].column) if self.terms else 0
        return np.column_stack(cols) if cols else np.zeros((n, 0))


def _rank(matrix: np.ndarray) -> int:
    return int(np.linalg.matrix_rank(matrix, tol=1e-8)) if matrix.size else 0


def _join(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def design_terms(
    levels: Sequence[Sequence[str]],
    factors: Sequence[str],
    variant_ids: Sequence[str],
    baseline: int,
    *,
    observed: Sequence[bool] | None = None,
) -> FactorDesign:
    """Main effects and two-factor interactions of a variant design, and what is estimable.

    Parameters
    ----------
    levels
        ``(variants, factors)`` level names (use a placeholder such as ``"(unset)"`` for a
        variant without the factor).
    factors
        Factor names, one per column of ``levels``; factors with one level are dropped.
    variant_ids
        Variant ids, one per row.
    baseline
        Row of the baseline variant: its levels are the reference levels.
    observed
        Optional, one flag per variant: which variants have outcomes (default all). The
        terms are those of every variant's levels, but only the observed variants carry
        them, so a term that only an unobserved variant carries (every trial of it
        failed) is not estimable rather than a column the data cannot fill.

    Returns
    -------
    FactorDesign
        Terms in order (main effects by factor, then interactions by factor pair) with
        estimability, and notes in words about what the design cannot estimate.

    Examples
    --------
    >>> d = design_terms([["s", "1"], ["l", "1"], ["s", "2"], ["l", "2"]],
    ...                  ["model", "prompt"], ["base", "L", "P", "LP"], baseline=0)
    >>> [(t.label, t.estimable) for t in d.terms]  # doctest: +NORMALIZE_WHITESPACE
    [('model: l vs s', True), ('prompt: 2 vs 1', True), ('model × prompt: l & 2', True)]
    >>> d.notes[0]
    'model × prompt is estimable only through LP.'
    >>> lost = design_terms([["s", "1"], ["l", "1"], ["s", "2"], ["l", "2"]],
    ...                     ["model", "prompt"], ["base", "L", "P", "LP"], baseline=0,
    ...                     observed=[True, True, True, False])
    >>> [t.estimable for t in lost.terms]
    [True, True, False]
    >>> print(lost.notes[0])  # doctest: +NORMALIZE_WHITESPACE
    model × prompt is not estimable: no variant with outcomes combines a non-baseline model
    with a non-baseline prompt.
    """
    table = np.asarray(levels, dtype=object)
    ids = [str(v) for v in variant_ids]
    if table.ndim != 2 or table.shape != (len(ids), len(factors)):
        raise ValueError("levels must be (variants, factors), one row per variant id")
    keep = [j for j in range(len(factors)) if len(set(table[:, j])) > 1]
    names = tuple(str(factors[j]) for j in keep)
    table = table[:, keep]
    base = table[baseline]
    n = len(ids)
    seen = np.ones(n) if observed is None else np.asarray(observed, dtype=bool).astype(float)
    if seen.shape != (n,):
        raise ValueError("observed must hold one flag per variant")
    # Rows without outcomes are zero in every column, the intercept's too: the ranks are
    # then those of the observed rows, and such a row carries no term.
    basis = seen.reshape(n, 1)
    basis_labels: list[str] = ["(intercept)"]
    terms: list[DesignTerm] = []

    def add(
        kind: str, fs: tuple[str, ...], lv: tuple[str, ...], bl: tuple[str, ...], column: np.ndarray
    ) -> None:
        nonlocal basis
        carriers = tuple(v for v, on in zip(ids, column, strict=True) if on)
        label_term = DesignTerm(kind, fs, lv, bl, column, False, carriers)
        if not column.any():
            terms.append(label_term)
            return
        trial = np.column_stack([basis, column])
        if _rank(trial) > _rank(basis):
            basis = trial
            basis_labels.append(label_term.label)
            terms.append(DesignTerm(kind, fs, lv, bl, column, True, carriers))
            return
        coef, *_ = np.linalg.lstsq(basis, column, rcond=None)
        aliased = tuple(
            lab
            for lab, c in zip(basis_labels, coef, strict=True)
            if abs(c) > 1e-8 and lab != "(intercept)"
        )
        terms.append(DesignTerm(kind, fs, lv, bl, column, False, carriers, aliased))

    for j, name in enumerate(names):
        for level in sorted(set(table[:, j]) - {base[j]}, key=str):
            add(
                "main",
                (name,),
                (str(level),),
                (str(base[j]),),
                (table[:, j] == level) * seen,
            )
    for j, k in itertools.combinations(range(len(names)), 2):
        for a in sorted(set(table[:, j]) - {base[j]}, key=str):
            for b in sorted(set(table[:, k]) - {base[k]}, key=str):
                column = ((table[:, j] == a) & (table[:, k] == b)) * seen
                add(
                    "interaction",
                    (names[j], names[k]),
                    (str(a), str(b)),
                    (str(base[j]), str(base[k])),
                    column,
                )
    return FactorDesign(names, tuple(terms), tuple(_notes(names, terms, partial=not seen.all())))


def _notes(names: tuple[str, ...], terms: list[DesignTerm], *, partial: bool = False) -> list[str]:
    """What the design cannot estimate, in words; ``partial``: some variants have no
    outcome (a term only they carry is said to have no variant *with outcomes*)."""
    notes: list[str] = []
    with_outcomes = " with outcomes" if partial else ""
    for t in terms:
        if t.kind == "main" and not t.estimable and not t.column.any():
            notes.append(f"{t.label} is not estimable: no variant{with_outcomes} has it.")
        elif t.kind == "main" and not t.estimable:
            notes.append(
                f"{t.label} is not estimable: it is confounded with {_join(t.aliased_with)} "
                "(they change together), so their effects cannot be separated and none of "
                "them is estimated on its own."
            )
    blocked: dict[str, list[bool]] = {n: [] for n in names}
    pairs: dict[tuple[str, str], list[DesignTerm]] = {}
    for t in terms:
        if t.kind == "interaction":
            pairs.setdefault(t.factors, []).append(t)  # type: ignore[arg-type]
    for (f, g), ts in pairs.items():
        ok = [t for t in ts if t.estimable]
        for name in (f, g):
            blocked[name].append(bool(ok))
        if ok:
            through = sorted({v for t in ok for v in t.carriers})
            some = "" if len(ok) == len(ts) else f" (for {len(ok)} of {len(ts)} level pairs)"
            notes.append(f"{f} × {g} is estimable only through {_join(through)}{some}.")
        elif not any(t.column.any() for t in ts):
            notes.append(
                f"{f} × {g} is not estimable: no variant{with_outcomes} combines a "
                f"non-baseline {f} with a non-baseline {g}."
            )
        else:
            aliased = sorted({a for t in ts for a in t.aliased_with})
            notes.append(
                f"{f} × {g} is not estimable: the variants that combine them are needed for "
                f"{_join(aliased)}."
            )
    for name, flags in blocked.items():
        if flags and not any(flags):
            notes.append(f"{name}'s interactions are not estimable.")
    if any(t.kind == "interaction" and not t.estimable for t in terms):
        notes.append(
            "Interactions that are not estimable are assumed to be zero in the other "
            "estimates; each main effect is the change at the baseline's levels of the "
            "other factors."
        )
    return notes


def is_full_factorial(levels: Sequence[Sequence[str]]) -> bool:
    """True when the variants are every combination of the factors' levels, once each.

    Factors with one level are ignored.

    Examples
    --------
    >>> is_full_factorial([["a", "x"], ["b", "x"], ["a", "y"], ["b", "y"]])
    True
    >>> is_full_factorial([["a", "x"], ["b", "x"], ["a", "y"]])
    False
    """
    table = np.asarray(levels, dtype=object)
    if table.ndim != 2 or len(table) < 2:
        return False
    keep = [j for j in range(table.shape[1]) if len(set(table[:, j])) > 1]
    if not keep:
        return False
    rows = {tuple(r) for r in table[:, keep].tolist()}
    sizes = [len(set(table[:, j])) for j in keep]
    return len(rows) == len(table) == int(np.prod(sizes))


@dataclass(frozen=True)
class TermEstimate:
    """Estimates of a list of terms: arrays aligned with the terms."""

    estimate: np.ndarray
    se: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    p_value: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_cases: int
    method: str


def _t_inference(
    estimate: np.ndarray,
    se: np.ndarray,
    df: np.ndarray,
    confidence_level: float,
    units: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    from ._distributions import t_ppf, t_sf  # scipy.stats' numbers, not its import time

    with np.errstate(invalid="ignore", divide="ignore"):
        t = estimate / se
        p = 2 * t_sf(np.abs(t), df)
        q = t_ppf(0.5 + confidence_level / 2, df)
    # A zero standard error with a zero estimate is no evidence either way.
    p = np.where((se == 0) & (estimate == 0), 1.0, p)
    if units is not None:
        # Every unit's contrast the same nonzero value: t is infinite (p 0, certainty from
        # three cases); the exact sign flip over the G units gives 2^(1-G), as the paired
        # verdicts do for the same data.
        p = np.where((se == 0) & (estimate != 0), 2.0 ** (1 - units), p)
    return t, p, estimate - q * se, estimate + q * se


def factorial_contrasts(
    y: ArrayLike,
    levels: Sequence[Sequence[str]],
    design: FactorDesign,
    *,
    confidence_level: float = 0.95,
    clusters: ArrayLike | None = None,
) -> TermEstimate:
    """Main effects and interactions of a balanced full factorial, per-case contrasts.

    Parameters
    ----------
    y
        ``(cases, variants)`` outcomes, no missing value.
    levels
        ``(variants, factors)`` levels, factors in the order of ``design.factors`` after
        dropping one-level factors (pass the same table as to :func:`design_terms`).
    design
        From :func:`design_terms` on the same variants (every term estimable).
    confidence_level
        For the t intervals.
    clusters
        Optional cluster label per case (a case metadata field): the standard errors are
        then CR1 of the per-case contrasts by cluster, df = clusters − 1.

    Returns
    -------
    TermEstimate
        One entry per term of ``design.terms``; t-test over cases, df = cases − 1.

    Examples
    --------
    >>> lv = [["s", "1"], ["l", "1"], ["s", "2"], ["l", "2"]]
    >>> d = design_terms(lv, ["m", "p"], ["a", "b", "c", "e"], 0)
    >>> y = np.array([[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0]])
    >>> factorial_contrasts(y, lv, d).estimate.round(3).tolist()
    [0.667, 0.0, 0.0]
    >>> factorial_contrasts(y, lv, d, clusters=["x", "x", "z"]).df.tolist()
    [1.0, 1.0, 1.0]
    """
    values = np.asarray(y, dtype=float)
    table = np.asarray(levels, dtype=object)
    keep = [j for j in range(table.shape[1]) if len(set(table[:, j])) > 1]
    table = table[:, keep]
    n_case = values.shape[0]
    names = list(design.factors)

    def marginal(cols: list[int], want: tuple[str, ...]) -> np.ndarray:
        # Per case: the mean over variants at these levels (balanced: equal weights).
        mask = np.ones(len(table), dtype=bool)
        for j, level in zip(cols, want, strict=True):
            mask &= table[:, j] == level
        return values[:, mask].mean(axis=1)

    contrasts = []
    for t in design.terms:
        cols = [names.index(f) for f in t.factors]
        if t.kind == "main":
            c = marginal(cols, t.levels) - marginal(cols, t.baseline_levels)
        else:
            (a, b), (a0, b0) = t.levels, t.baseline_levels
            c = (
                marginal(cols, (a, b))
                - marginal(cols, (a, b0))
                - marginal(cols, (a0, b))
                + marginal(cols, (a0, b0))
            )
        contrasts.append(c)
    d = np.column_stack(contrasts) if contrasts else np.zeros((n_case, 0))
    estimate = d.mean(axis=0)
    if clusters is not None:
        # The paired t's clustered interval, term by term: CR1 of the per-case contrasts
        # by cluster, t with G − 1 df (NaN with one cluster).
        from .stats_paired import cluster_robust_interval

        fits = [cluster_robust_interval(c, clusters, confidence_level) for c in d.T]
        groups = fits[0].n_units if fits else len(set(np.asarray(clusters).tolist()))
        se = np.array([f.standard_error for f in fits], dtype=float)
        df = np.array([f.df for f in fits], dtype=float)
        t, p, low, high = _t_inference(estimate, se, df, confidence_level, groups)
        return TermEstimate(
            estimate, se, t, df, p, low, high, n_case,
            f"per-case factorial contrasts, CR1 by cluster ({groups} clusters), t over "
            "clusters",
        )  # fmt: skip
    se = d.std(axis=0, ddof=1) / np.sqrt(n_case) if n_case > 1 else np.full(d.shape[1], np.nan)
    from .stats_paired import all_equal

    # Equal contrasts up to float residue (means of attempts) have no spread, not 1e-17.
    se = np.where([all_equal(c) for c in d.T], 0.0, se) if n_case > 1 else se
    df = np.full(d.shape[1], float(n_case - 1))
    t, p, low, high = _t_inference(estimate, se, df, confidence_level, n_case)
    return TermEstimate(
        estimate, se, t, df, p, low, high, n_case, "per-case factorial contrasts, t over cases"
    )


def case_fixed_effects_ols(
    y: ArrayLike,
    x: ArrayLike,
    cases: ArrayLike,
    *,
    confidence_level: float = 0.95,
    clusters: ArrayLike | None = None,
) -> TermEstimate:
    """OLS with case fixed effects (within transformation), CR1 standard errors by case,
    or by cluster of cases.

    Parameters
    ----------
    y
        ``(n,)`` outcomes, one per (case, variant) with data.
    x
        ``(n, k)`` term indicators of each row's variant (no intercept: the case effects
        absorb it).
    cases
        ``(n,)`` case labels (the fixed effects, and the clusters unless ``clusters``).
    confidence_level
        For the t intervals (df = clusters − 1: cases − 1 without ``clusters``).
    clusters
        Optional ``(n,)`` cluster label of each row's case (rows of one case share it):
        the CR1 sums and G run over these clusters instead of the cases.

    Returns
    -------
    TermEstimate
        ``n_cases`` is the number of cases with two or more outcomes, whichever the
        clusters: a case with one has no within-case variation and is left out (it
        counted in G and the df while adding nothing to the estimates).

    Examples
    --------
    >>> y = np.array([0.2, 0.5, 0.4, 0.9, 0.1, 0.3])
    >>> est = case_fixed_effects_ols(y, [[0], [1], [0], [1], [0], [1]], [0, 0, 1, 1, 2, 2])
    >>> round(float(est.estimate[0]), 6)  # the mean paired difference
    0.333333
    >>> by_pair = case_fixed_effects_ols(y, [[0], [1], [0], [1], [0], [1]], [0, 0, 1, 1, 2, 2],
    ...                                  clusters=["a", "a", "a", "a", "b", "b"])
    >>> by_pair.df.tolist(), by_pair.n_cases
    ([1.0], 3)
    """
    yv = np.asarray(y, dtype=float)
    xm = np.asarray(x, dtype=float)
    xm = xm if xm.ndim == 2 else xm.reshape(len(yv), -1)
    n, k = xm.shape
    method = "OLS with case fixed effects, CR1 by case"
    if clusters is not None:
        method = "OLS with case fixed effects, CR1 by cluster"
        clusters = np.asarray(clusters).reshape(-1)
        if len(clusters) != n:
            raise ValueError(f"clusters has {len(clusters)} labels for {n} rows")
    if n:
        # A case with one outcome has no within-case variation: it adds nothing to the
        # estimates or the CR1 scores, but counted among the cases (or clusters) it gave
        # the df and the small-sample factor of cases carrying no information (df 19 for
        # 10 informative cases of 20). Left out, as reghdfe drops singletons.
        labels = np.asarray(cases).reshape(-1)
        first = np.unique(labels, return_inverse=True)[1].reshape(-1)
        keep = np.bincount(first)[first] > 1
        if not keep.all():
            yv, xm, cases = yv[keep], xm[keep], labels[keep]
            clusters = None if clusters is None else clusters[keep]
            n = len(yv)
    if n == 0:
        # No outcome at all (no case has a pass/fail, or none was scored): nothing is
        # estimated, rather than the zeros a pseudo-inverse of nothing would give.
        nan = np.full(k, np.nan)
        return TermEstimate(nan, nan, nan, nan, nan, nan, nan, 0, method)
    codes = np.unique(np.asarray(cases), return_inverse=True)[1].reshape(-1)
    n_case = int(codes.max()) + 1
    size = np.bincount(codes, minlength=n_case)
    # The CR1 clusters: the cases themselves, or the declared clusters of cases.
    groups = codes if clusters is None else np.unique(clusters, return_inverse=True)[1].reshape(-1)
    g = int(groups.max()) + 1
    if clusters is not None:
        method += f" ({g} clusters)"

    def case_sums(a: np.ndarray, by: np.ndarray = codes) -> np.ndarray:
        # Per case (or cluster), the rows' sum in row order: a weighted bincount adds in
        # the same order as np.add.at (to the bit), column by column, many times faster.
        m = int(by.max()) + 1
        if a.ndim == 1:
            return np.bincount(by, weights=a, minlength=m)
        out = np.empty((m, a.shape[1]))
        for j in range(a.shape[1]):
            out[:, j] = np.bincount(by, weights=a[:, j], minlength=m)
        return out

    def within(a: np.ndarray) -> np.ndarray:
        return a - (case_sums(a) / size.reshape(-1, *([1] * (a.ndim - 1))))[codes]

    yd, xd = within(yv), within(xm)
    gram = xd.T @ xd
    xtx_inv = np.linalg.pinv(gram)
    beta = xtx_inv @ xd.T @ yd
    resid = yd - xd @ beta
    scores = case_sums(xd * resid[:, None], groups).reshape(g, k)
    meat = scores.T @ scores
    factor = g / (g - 1) * (n - 1) / (n - k) if g > 1 and n > k else np.nan
    cov = factor * xtx_inv @ meat @ xtx_inv
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    # A column every case gives the same effect has no spread: the exact sign flip below
    # (2^(1-G)), not t's 0. Float residue in the covariance is ~1e-17, its root ~1e-9
    # (statsmodels gives 2e-9 for such a column); below 1e-8 of the effect t is past 1e8.
    se = np.where(se <= 1e-8 * np.maximum(1.0, np.abs(beta)), 0.0, se)
    # A column no case can tell apart from its case effect or the other columns (a
    # variant seen only in cases where nothing else was) has no estimate: the
    # pseudo-inverse gave it 0 with a zero standard error, read as "exactly no effect".
    identified = np.abs(np.diag(xtx_inv @ gram) - 1) < 1e-6
    beta = np.where(identified, beta, np.nan)
    se = np.where(identified, se, np.nan)
    df = np.full(k, float(g - 1))
    t, p, low, high = _t_inference(beta, se, df, confidence_level, g)
    return TermEstimate(beta, se, t, df, p, low, high, n_case, method)


class RepeatedMeasuresEffect(NamedTuple):
    r"""One effect of :func:`repeated_measures_anova`.

    Attributes
    ----------
    f
        The F ratio (uncorrected: the correction changes only its degrees of freedom).
    p
        The Greenhouse–Geisser corrected p: F on ``eps * df_effect`` and
        ``eps * df_error`` degrees of freedom.
    eps
        The Greenhouse–Geisser epsilon, in :math:`[1/\text{df}_\text{effect}, 1]`;
        exactly 1 for an effect with one degree of freedom, NaN when the effect's
        contrasts do not vary over the cases (no error variance to estimate it from).
    df_effect, df_error
        The uncorrected degrees of freedom.
    """

    f: float
    p: float
    eps: float
    df_effect: int
    df_error: int


def _orthonormal_contrasts(k: int) -> np.ndarray:
    """(k, k − 1) Helmert contrasts scaled to unit length: orthonormal, each orthogonal to
    the constant (any such basis gives the same epsilon)."""
    out = np.zeros((k, k - 1))
    for j in range(1, k):
        out[:j, j - 1] = 1.0
        out[j, j - 1] = -float(j)
        out[:, j - 1] /= math.sqrt(j * (j + 1))
    return out


def _gg_epsilon(z: np.ndarray) -> float:
    r"""Greenhouse–Geisser epsilon of (cases, d) orthonormal contrasts: with :math:`S`
    their covariance over the cases, :math:`\operatorname{tr}(S)^2 / (d
    \operatorname{tr}(S^2))`; 1 when d = 1, NaN when :math:`S = 0`."""
    d = z.shape[1]
    if d <= 1:  # (d = 0: a factor of one level, no effect)
        return 1.0 if d == 1 else math.nan
    s = np.cov(z, rowvar=False)
    trace, trace_sq = float(np.trace(s)), float((s * s).sum())  # S symmetric: tr(S²) = ΣS²
    if not trace_sq > 0:
        return math.nan
    # ≤ 1 by Cauchy–Schwarz on S's eigenvalues; min() only absorbs the rounding.
    return min(trace**2 / (d * trace_sq), 1.0)


def repeated_measures_anova(cells: ArrayLike) -> dict[str, RepeatedMeasuresEffect]:
    r"""Repeated-measures ANOVA of a one- or two-factor within-case design, one value per
    case and cell: F, its Greenhouse–Geisser corrected p, and epsilon.

    Each effect is tested against its own interaction with the cases (the textbook
    error terms): for factors A (:math:`a` levels) and B (:math:`b`) over :math:`n`
    cases, :math:`SS_A = nb\sum_i(\bar y_{i\cdot\cdot} - \bar y)^2` against
    :math:`SS_{A\times S} = b\sum_{s,i}(\bar y_{is\cdot} - \bar y_{i\cdot\cdot} - \bar
    y_{\cdot\cdot s} + \bar y)^2` with :math:`(a-1)` and :math:`(a-1)(n-1)` degrees of
    freedom, likewise B, and the A × B interaction against the three-way residual with
    :math:`(a-1)(b-1)` and :math:`(a-1)(b-1)(n-1)`.

    That F is F-distributed only under sphericity (the effect's orthonormal contrasts
    equally variable and uncorrelated over the cases), which an effect with more than
    one degree of freedom need not meet (one level far more variable over the cases than
    the others breaks it), and then the uncorrected p is too small. So p is
    Greenhouse–Geisser corrected (Greenhouse & Geisser 1959, *Psychometrika* 24(2)): F on
    :math:`\varepsilon\,df_1` and :math:`\varepsilon\,df_2` degrees of freedom, with

    .. math:: \varepsilon = \frac{\operatorname{tr}(S)^2}{d\,\operatorname{tr}(S^2)},
       \qquad S = \operatorname{cov}_s(C^\top \bar y_s),

    where :math:`\bar y_s` are case :math:`s`'s means over the effect's levels (A's
    :math:`a` means averaged over B; for A × B its :math:`a \times b` cells, vectorised),
    :math:`C` orthonormal contrasts of them (for A × B, the Kronecker product of A's and
    B's), and :math:`d` the effect's df. :math:`1/d \le \varepsilon \le 1`, and
    :math:`\varepsilon = 1` exactly for one df (a two-level factor: p is the paired t's).
    F is unchanged. A 0 / 0 ratio (the outcome does not vary) is NaN; an effect over a
    zero error term is F = inf, with p = :math:`2^{1-n}` for any df: every case has the
    same contrast vector, and the exact sign flip of those vectors over the :math:`n`
    cases reaches their mean's length only with all signs alike (epsilon is NaN past one
    df: no error covariance).

    Parameters
    ----------
    cells
        Shape (cases, a) for one factor or (cases, a, b) for two, no missing value.

    Returns
    -------
    dict
        ``{"A": RepeatedMeasuresEffect}``, or ``{"A": …, "B": …, "AB": …}`` for two
        factors; each unpacks as ``f, p, eps, df_effect, df_error``.

    Examples
    --------
    Two levels: F is the square of the paired t of the differences (0.6, 0.5, 0.3, 0.6:
    mean 0.5, standard error 0.1 / √2, t = 7.07), and epsilon is 1.

    >>> y = [[0.0, 0.6], [0.2, 0.7], [0.1, 0.4], [0.3, 0.9]]
    >>> f, p, eps, *df = repeated_measures_anova(y)["A"]
    >>> round(f, 6), round(p, 4), eps, df
    (50.0, 0.0058, 1.0, [1, 3])

    Three levels, the third far more variable over the cases than the first two:
    sphericity fails, epsilon is well below 1, and p (on 2ε and 10ε df) is larger than
    the uncorrected one on 2 and 10.

    >>> y = [[1.0, 1.2, 1.0], [1.1, 1.4, 4.0], [0.9, 1.1, 1.5], [1.0, 1.3, 5.0],
    ...      [1.2, 1.5, 3.5], [0.8, 1.0, 5.5]]
    >>> effect = repeated_measures_anova(y)["A"]
    >>> round(effect.f, 3), round(effect.eps, 3), round(effect.p, 4)
    (9.39, 0.501, 0.0279)
    >>> from agenticlens_frames._distributions import f_sf
    >>> round(f_sf(effect.f, effect.df_effect, effect.df_error), 4)  # uncorrected
    0.0051
    """
    from ._distributions import f_sf  # scipy.stats' numbers, not its import time
    from .stats_paired import all_equal

    y = np.asarray(cells, dtype=float)
    if y.ndim not in (2, 3) or len(y) < 2:
        raise ValueError("cells must be (cases, a) or (cases, a, b) with two or more cases")
    if y.ndim == 2:
        y = y[:, :, None]
    n, a, b = y.shape
    grand = y.mean()
    by_a, by_b = y.mean(axis=(0, 2)), y.mean(axis=(0, 1))
    by_case = y.mean(axis=(1, 2))
    case_a, case_b, a_b = y.mean(axis=2), y.mean(axis=1), y.mean(axis=0)
    con_a, con_b = _orthonormal_contrasts(a), _orthonormal_contrasts(b)

    def test(
        ss: float, df: int, ss_error: float, df_error: int, contrasts: np.ndarray
    ) -> RepeatedMeasuresEffect:
        # Every case the same contrast vector, up to the float residue of averaging
        # attempts (1/3 is not exact): no error variance, whatever residue ss_error holds
        # (F = 1e32 would pass for evidence); a common vector of zeros is no effect.
        if contrasts.size and all(all_equal(column) for column in contrasts.T):
            ss_error = 0.0
            if np.abs(contrasts).max() <= 1e-12 * max(1.0, float(np.abs(y).max())):
                ss = 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            f = float(np.float64(ss / df) / np.float64(ss_error / df_error))
        # Past one df, epsilon is estimated from the error covariance: none (ss_error =
        # 0) leaves it undefined, whatever rounding the contrasts' covariance picked up.
        eps = _gg_epsilon(contrasts) if ss_error > 0 or df <= 1 else math.nan
        # An effect with no error variance (every case moved by the same amount) has
        # F = inf, and every case the same contrast vector. Its p is the exact sign flip
        # of those vectors over the n cases (statistic: the squared length of their mean,
        # largest only with all signs alike), 2^(1-n), for any df: pingouin's 0 is
        # certainty from a few cases (3 cases passing on two variants of three and failing
        # on the third). With one df it is the per-case contrast's p beside it. Only
        # 0 / 0 (nothing varies) is no evidence, NaN.
        if math.isnan(f) or (math.isnan(eps) and f != math.inf):
            p = math.nan
        elif f == math.inf:
            p = 2.0 ** (1 - n)
        else:
            p = float(f_sf(f, eps * df, eps * df_error))
        return RepeatedMeasuresEffect(f, p, eps, df, df_error)

    out = {}
    resid_a = case_a - by_a - by_case[:, None] + grand
    out["A"] = test(
        n * b * float(((by_a - grand) ** 2).sum()), a - 1,
        b * float((resid_a**2).sum()), (a - 1) * (n - 1), case_a @ con_a,
    )  # fmt: skip
    if b > 1:
        resid_b = case_b - by_b - by_case[:, None] + grand
        out["B"] = test(
            n * a * float(((by_b - grand) ** 2).sum()), b - 1,
            a * float((resid_b**2).sum()), (b - 1) * (n - 1), case_b @ con_b,
        )  # fmt: skip
        inter = a_b - by_a[:, None] - by_b[None, :] + grand
        resid = (
            y - a_b[None] - case_a[:, :, None] - case_b[:, None, :]
            + by_a[None, :, None] + by_b[None, None, :] + by_case[:, None, None] - grand
        )  # fmt: skip
        # Each case's interaction contrasts: A's contrasts ⊗ B's applied to its cells.
        contrasts = np.einsum("sij,ik,jl->skl", y, con_a, con_b).reshape(n, -1)
        out["AB"] = test(
            n * float((inter**2).sum()), (a - 1) * (b - 1),
            float((resid**2).sum()), (a - 1) * (b - 1) * (n - 1), contrasts,
        )  # fmt: skip
    return out
