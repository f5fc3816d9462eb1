"""Factor-effect estimators against statsmodels, pingouin and hand-computed designs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agenticlens_frames import stats_factorial as sfac
from agenticlens_frames._distributions import f_sf

sm = pytest.importorskip("statsmodels.api", reason="statsmodels comes with the test extra")
smf = pytest.importorskip("statsmodels.formula.api", reason="statsmodels comes with the test extra")


def _panel(seed: int, n_case: int = 40, drop: float = 0.0):
    rng = np.random.default_rng(seed)
    x = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [1, 0]], dtype=float)  # 5 variants
    case = np.repeat(np.arange(n_case), len(x))
    xv = np.tile(x, (n_case, 1))
    y = rng.normal(0, 1, n_case)[case] + xv @ [0.3, -0.2] + rng.normal(0, 0.5, len(case))
    keep = rng.random(len(case)) >= drop
    return y[keep], xv[keep], case[keep]


@pytest.mark.parametrize("drop", [0.0, 0.2])
def test_fixed_effects_cr1_equals_statsmodels(drop: float) -> None:
    y, x, case = _panel(1, drop=drop)
    est = sfac.case_fixed_effects_ols(y, x, case, confidence_level=0.9)
    # Coefficients: statsmodels with explicit case dummies (no within transformation).
    frame = pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1], "case": case})
    dummies = smf.ols("y ~ a + b + C(case)", data=frame).fit()
    np.testing.assert_allclose(est.estimate, dummies.params[["a", "b"]], rtol=1e-9)
    # CR1 errors: statsmodels' cluster covariance on the case-demeaned data.
    demeaned = frame.groupby("case")[["y", "a", "b"]].transform(lambda s: s - s.mean())
    fit = sm.OLS(demeaned["y"], demeaned[["a", "b"]]).fit(
        cov_type="cluster", cov_kwds={"groups": frame["case"]}, use_t=True
    )
    np.testing.assert_allclose(est.se, fit.bse, rtol=1e-9)
    np.testing.assert_allclose(est.p_value, fit.pvalues, rtol=1e-7)
    ci = fit.conf_int(alpha=0.1).to_numpy()
    np.testing.assert_allclose(est.ci_low, ci[:, 0], rtol=1e-7)
    np.testing.assert_allclose(est.ci_high, ci[:, 1], rtol=1e-7)


@pytest.mark.parametrize("drop", [0.0, 0.2])
def test_fixed_effects_cr1_by_cluster_equals_statsmodels(drop: float) -> None:
    """Case fixed effects, CR1 by clusters of cases (8 clusters of 5 cases, unequal after
    dropping rows): statsmodels' cluster covariance by cluster on the case-demeaned data,
    t on G − 1 df."""
    y, x, case = _panel(2, drop=drop)
    cluster = np.array([f"g{c % 8}" for c in case])  # cases 0, 8, 16, … share a cluster
    est = sfac.case_fixed_effects_ols(y, x, case, confidence_level=0.9, clusters=cluster)
    frame = pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1], "case": case})
    demeaned = frame.groupby("case")[["y", "a", "b"]].transform(lambda s: s - s.mean())
    fit = sm.OLS(demeaned["y"], demeaned[["a", "b"]]).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(cluster)[0]}, use_t=True
    )
    np.testing.assert_allclose(est.estimate, fit.params, rtol=1e-9)
    np.testing.assert_allclose(est.se, fit.bse, rtol=1e-9)
    np.testing.assert_allclose(est.p_value, fit.pvalues, rtol=1e-7)
    ci = fit.conf_int(alpha=0.1).to_numpy()
    np.testing.assert_allclose(est.ci_low, ci[:, 0], rtol=1e-7)
    np.testing.assert_allclose(est.ci_high, ci[:, 1], rtol=1e-7)
    assert est.df.tolist() == [7.0, 7.0] and est.n_cases == 40
    # Without clusters, the same call is CR1 by case, as before.
    by_case = sfac.case_fixed_effects_ols(y, x, case, confidence_level=0.9)
    assert by_case.df.tolist() == [39.0, 39.0]
    assert not np.allclose(by_case.se, est.se)


def test_contrasts_with_clusters_equal_statsmodels_cluster_of_a_constant() -> None:
    """A 2 × 3 full factorial over 30 cases in 6 clusters: each term's error is CR1 of its
    per-case contrast by cluster (statsmodels, OLS on a constant), t(5); the estimates are
    those without clusters."""
    rng = np.random.default_rng(5)
    lv = [[m, p] for p in ("1", "2", "3") for m in ("s", "l")]
    d = sfac.design_terms(lv, ["m", "p"], [f"v{i}" for i in range(6)], 0)
    cluster = np.repeat([f"k{i}" for i in range(6)], 5)
    y = rng.normal(0, 1, (30, 6)) + rng.normal(0, 1, (6, 6))[np.repeat(np.arange(6), 5)]
    plain = sfac.factorial_contrasts(y, lv, d, confidence_level=0.9)
    est = sfac.factorial_contrasts(y, lv, d, confidence_level=0.9, clusters=cluster)
    np.testing.assert_array_equal(est.estimate, plain.estimate)
    table = np.asarray(lv, dtype=object)

    def cell(mask: np.ndarray) -> np.ndarray:
        return y[:, mask].mean(axis=1)

    for k, t in enumerate(d.terms):
        at = [table[:, ["m", "p"].index(f)] for f in t.factors]
        if t.kind == "main":
            c = cell(at[0] == t.levels[0]) - cell(at[0] == t.baseline_levels[0])
        else:
            (a, b), (a0, b0) = t.levels, t.baseline_levels
            c = (
                cell((at[0] == a) & (at[1] == b)) - cell((at[0] == a) & (at[1] == b0))
                - cell((at[0] == a0) & (at[1] == b)) + cell((at[0] == a0) & (at[1] == b0))
            )  # fmt: skip
        fit = sm.OLS(c, np.ones(len(c))).fit(
            cov_type="cluster", cov_kwds={"groups": pd.factorize(cluster)[0]}, use_t=True
        )
        assert est.estimate[k] == pytest.approx(fit.params[0], abs=1e-12)
        assert est.se[k] == pytest.approx(fit.bse[0], rel=1e-9)
        assert est.p_value[k] == pytest.approx(fit.pvalues[0], rel=1e-7)
        assert est.ci_low[k] == pytest.approx(fit.conf_int(0.1)[0, 0], rel=1e-7)
        assert est.df[k] == 5


def _long(y: np.ndarray, levels: list[list[str]], names: list[str]) -> pd.DataFrame:
    table = np.asarray(levels, dtype=object)
    return pd.DataFrame(
        {
            "case": np.repeat(np.arange(y.shape[0]), y.shape[1]),
            "y": y.ravel(),
            **{n: np.tile(table[:, j], y.shape[0]) for j, n in enumerate(names)},
        }
    )


def test_two_by_two_contrasts_equal_pingouin_rm_anova() -> None:
    pingouin = pytest.importorskip("pingouin", reason="pingouin is a core dependency")
    rng = np.random.default_rng(3)
    levels = [["s", "1"], ["l", "1"], ["s", "2"], ["l", "2"]]
    y = rng.normal(0, 1, (30, 1)) + rng.normal([0.0, 0.4, 0.1, 0.9], 0.6, (30, 4))
    design = sfac.design_terms(levels, ["model", "prompt"], ["a", "b", "c", "d"], 0)
    est = sfac.factorial_contrasts(y, levels, design)
    aov = pingouin.rm_anova(
        data=_long(y, levels, ["model", "prompt"]),
        dv="y",
        within=["model", "prompt"],
        subject="case",
    ).set_index("Source")
    p_col = "p_unc" if "p_unc" in aov else "p-unc"
    for i, source in enumerate(["model", "prompt", "model * prompt"]):
        assert est.statistic[i] ** 2 == pytest.approx(aov.loc[source, "F"], rel=1e-9)
        assert est.p_value[i] == pytest.approx(aov.loc[source, p_col], rel=1e-7)
    # The interaction is the difference of differences, by hand.
    dd = (y[:, 3] - y[:, 2]) - (y[:, 1] - y[:, 0])
    assert est.estimate[2] == pytest.approx(dd.mean())


def test_three_factor_main_effects_average_over_the_third() -> None:
    pingouin = pytest.importorskip("pingouin", reason="pingouin is a core dependency")
    rng = np.random.default_rng(4)
    levels = [[a, b, c] for c in "xy" for b in "12" for a in "sl"]
    y = rng.normal(0, 1, (25, 1)) + rng.normal(0, 1, (25, 8))
    design = sfac.design_terms(levels, ["m", "p", "r"], [f"v{i}" for i in range(8)], 0)
    assert all(t.estimable for t in design.terms)
    est = sfac.factorial_contrasts(y, levels, design)
    long = _long(y, levels, ["m", "p", "r"])
    cell = long.groupby(["case", "m", "r"], as_index=False)["y"].mean()
    aov = pingouin.rm_anova(data=cell, dv="y", within=["m", "r"], subject="case").set_index(
        "Source"
    )
    labels = [t.label for t in design.terms]
    assert est.statistic[labels.index("m: l vs s")] ** 2 == pytest.approx(aov.loc["m", "F"])
    assert est.statistic[labels.index("m × r: l & y")] ** 2 == pytest.approx(aov.loc["m * r", "F"])


def test_support_like_design_in_words() -> None:
    levels = [
        ["small", "v1", "bm25"],
        ["large", "v1", "bm25"],
        ["small", "v2", "bm25"],
        ["small", "v1", "dense"],
        ["large", "v2", "bm25"],
    ]
    ids = ["baseline", "model-large", "prompt-v2", "retrieval-dense", "large-v2"]
    d = sfac.design_terms(levels, ["model", "prompt", "retrieval"], ids, 0)
    assert [t.estimable for t in d.terms] == [True, True, True, True, False, False]
    assert d.notes[:4] == (
        "model × prompt is estimable only through large-v2.",
        "model × retrieval is not estimable: no variant combines a non-baseline model with "
        "a non-baseline retrieval.",
        "prompt × retrieval is not estimable: no variant combines a non-baseline prompt with "
        "a non-baseline retrieval.",
        "retrieval's interactions are not estimable.",
    )
    assert not sfac.is_full_factorial(levels)


def test_factors_that_always_change_together_are_confounded() -> None:
    levels = [["s", "1"], ["l", "2"], ["l", "2"]]
    d = sfac.design_terms(levels, ["model", "prompt"], ["a", "b", "c"], 0)
    assert [t.estimable for t in d.terms[:2]] == [True, False]
    assert d.notes[0].startswith(
        "prompt: 2 vs 1 is not estimable: it is confounded with model: l vs s"
    )


def test_fixed_effects_of_an_effect_every_case_shares_get_the_exact_sign_flip_p() -> None:
    """Three variants (base, large, prompt b) on 3 cases; large moves every case by exactly
    +1: statsmodels' cluster SE is 0 and its t p 0, certainty from 3 cases. The exact sign
    flip of the per-case effects (scipy) is 0.25; the prompt term keeps its CR1 t."""
    import scipy.stats

    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]] * 3)
    case = np.repeat(np.arange(3), 3)
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    est = sfac.case_fixed_effects_ols(y, x, case)
    per_case = y.reshape(3, 3)[:, 1] - y.reshape(3, 3)[:, 0]
    want = scipy.stats.permutation_test(
        (per_case,), np.mean, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert est.estimate[0] == pytest.approx(1.0) and est.se[0] == 0.0
    assert est.p_value[0] == pytest.approx(want) == 0.25
    # statsmodels' cluster covariance on the case-demeaned data, as the CR1 test above.
    frame = pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1], "case": case})
    demeaned = frame.groupby("case")[["y", "a", "b"]].transform(lambda s: s - s.mean())
    fit = sm.OLS(demeaned["y"], demeaned[["a", "b"]]).fit(
        cov_type="cluster", cov_kwds={"groups": frame["case"]}, use_t=True
    )
    assert fit.bse["a"] < 1e-8 and fit.pvalues["a"] < 1e-12  # residue: t's certainty
    assert est.p_value[1] == pytest.approx(fit.pvalues["b"], rel=1e-7)


def test_fixed_effects_without_rows_estimate_nothing() -> None:
    est = sfac.case_fixed_effects_ols(np.zeros(0), np.zeros((0, 2)), np.zeros(0))
    assert est.n_cases == 0 and est.estimate.shape == (2,)
    assert np.isnan(est.estimate).all() and np.isnan(est.se).all()


def test_a_term_only_unobserved_variants_carry_is_not_estimable() -> None:
    """Every trial of the 2 × 2's large-v2 failed: the interaction only it carries was
    'estimable', a column of zeros the fit reported as 0 with a zero-width interval."""
    levels = [["s", "1"], ["l", "1"], ["s", "2"], ["l", "2"]]
    ids = ["base", "L", "P", "LP"]
    d = sfac.design_terms(levels, ["model", "prompt"], ids, 0, observed=[1, 1, 1, 0])
    assert [t.estimable for t in d.terms] == [True, True, False]
    assert [t.carriers for t in d.terms] == [("L",), ("P",), ()]
    assert d.notes[0] == (
        "model × prompt is not estimable: no variant with outcomes combines a non-baseline "
        "model with a non-baseline prompt."
    )
    # Only the unobserved variant has the non-baseline model: no main effect either.
    d = sfac.design_terms(levels[:3], ["model", "prompt"], ids[:3], 0, observed=[1, 0, 1])
    assert not d.terms[0].estimable
    assert d.notes[0] == "model: l vs s is not estimable: no variant with outcomes has it."
    # Every variant observed: the same design as without the mask.
    same = sfac.design_terms(levels, ["model", "prompt"], ids, 0, observed=[1, 1, 1, 1])
    full = sfac.design_terms(levels, ["model", "prompt"], ids, 0)
    assert same.notes == full.notes
    assert [t.estimable for t in same.terms] == [t.estimable for t in full.terms]


def test_a_column_the_cases_cannot_identify_has_no_estimate() -> None:
    """Variant 'c' is seen only in cases where nothing else is: after the case effects it
    is a column of zeros. The pseudo-inverse reported 0 ± 0 (p = 1) for it."""
    rng = np.random.default_rng(4)
    y, x, case = _panel(2, n_case=12)
    x = np.column_stack([x, np.zeros(len(y))])
    lone = np.arange(100, 104)  # four cases, each with only variant c
    y = np.concatenate([y, rng.normal(size=4)])
    x = np.vstack([x, np.tile([0.0, 0.0, 1.0], (4, 1))])
    case = np.concatenate([case, lone])
    est = sfac.case_fixed_effects_ols(y, x, case)
    assert np.isnan(est.estimate[2]) and np.isnan(est.se[2]) and np.isnan(est.p_value[2])
    # The identified columns: statsmodels with explicit case dummies, c left out.
    frame = pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1], "case": case})
    fit = smf.ols("y ~ a + b + C(case)", data=frame).fit()
    np.testing.assert_allclose(est.estimate[:2], fit.params[["a", "b"]], rtol=1e-9)


def test_a_main_effect_another_is_confounded_with_is_named() -> None:
    levels = [["s", "1", "a"], ["l", "2", "a"], ["s", "1", "b"], ["l", "2", "b"]]
    d = sfac.design_terms(levels, ["model", "prompt", "r"], ["v0", "v1", "v2", "v3"], 0)
    assert d.confounded() == {"model: l vs s": ("prompt: 2 vs 1",)}
    two = [[m, r] for m, _, r in levels]
    full = sfac.design_terms(two, ["model", "r"], ["v0", "v1", "v2", "v3"], 0)
    assert full.confounded() == {}


def _rm_long(y: np.ndarray) -> tuple[pd.DataFrame, list[str]]:
    """(cases, a[, b]) cells as pingouin's long format, and the within factors."""
    index = np.indices(y.shape).reshape(y.ndim, -1)
    long = pd.DataFrame({"case": index[0], "A": index[1], "y": y.ravel()})
    within = ["A"]
    if y.ndim == 3:
        long["B"] = index[2]
        within.append("B")
    return long, within


def _column(aov: pd.DataFrame, name: str) -> str:
    """pingouin's column name: ``p_GG_corr`` since 0.6, ``p-GG-corr`` before."""
    return name if name in aov else name.replace("_", "-")


def _unsphered(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Cells that violate sphericity: a case effect, and noise whose spread grows tenfold
    over A's levels (and B's), so the contrasts' variances differ; plus level effects,
    so F is large enough for the correction to matter."""
    rng = np.random.default_rng(seed)
    scale = np.geomspace(0.3, 3.0, shape[1]).reshape(-1, *([1] * (len(shape) - 2)))
    if len(shape) == 3:
        scale = scale * np.geomspace(0.5, 2.0, shape[2])[None, :]
    shift = np.linspace(0, 1.2, shape[1]).reshape(scale.shape[0], *([1] * (len(shape) - 2)))
    case = rng.normal(0, 1, (shape[0],) + (1,) * (len(shape) - 1))
    return case + shift + scale * rng.normal(0, 1, shape)


def _agrees_with_pingouin(got: dict, y: np.ndarray) -> None:
    pingouin = pytest.importorskip("pingouin", reason="pingouin comes with the test extra")
    long, within = _rm_long(y)
    aov = pingouin.rm_anova(
        data=long, dv="y", within=within, subject="case", correction=True
    ).set_index("Source")
    names = {"A": "A", "B": "B", "AB": "A * B"}
    assert set(got) == ({"A"} if y.ndim == 2 else {"A", "B", "AB"})
    for effect, test in got.items():
        row = aov.loc[names[effect]]
        f, p, eps, df_effect, df_error = test
        assert f == pytest.approx(row["F"], rel=1e-9), effect
        assert (df_effect, df_error) == (row["ddof1"], row["ddof2"]), effect
        assert eps == pytest.approx(row["eps"], rel=1e-9), effect
        # The p reported is the corrected one; F on the uncorrected df is pingouin's p_unc.
        assert p == pytest.approx(row[_column(aov, "p_GG_corr")], rel=1e-7), effect
        assert f_sf(f, df_effect, df_error) == pytest.approx(
            row[_column(aov, "p_unc")], rel=1e-7
        ), effect


@pytest.mark.parametrize(("shape", "seed"), [((12, 3), 0), ((9, 2, 3), 1), ((20, 2, 2), 2)])
def test_repeated_measures_anova_equals_pingouin(shape: tuple[int, ...], seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = shape[0]
    # a case effect and noise, so every F is finite and moderate
    y = rng.normal(0, 1, (n,) + (1,) * (len(shape) - 1)) + rng.normal(0, 0.7, shape)
    _agrees_with_pingouin(sfac.repeated_measures_anova(y), y)


@pytest.mark.parametrize(("shape", "seed"), [((15, 3), 3), ((12, 4), 4)])
def test_one_way_p_is_greenhouse_geisser_corrected_as_pingouins(
    shape: tuple[int, ...], seed: int
) -> None:
    """Three and four levels whose spread over the cases differs tenfold: sphericity
    fails (Mauchly's p < 0.05), epsilon is well below 1, and the p reported is
    pingouin's ``p_GG_corr``, not the uncorrected ``p_unc`` it was."""
    pingouin = pytest.importorskip("pingouin", reason="pingouin comes with the test extra")
    y = _unsphered(shape, seed)
    long, _ = _rm_long(y)
    assert pingouin.sphericity(long, dv="y", within="A", subject="case").pval < 0.05
    got = sfac.repeated_measures_anova(y)
    _agrees_with_pingouin(got, y)
    f, p, eps, df_effect, df_error = got["A"]
    assert eps < 0.8
    assert p > 1.2 * f_sf(f, df_effect, df_error)  # the uncorrected p was too small


@pytest.mark.parametrize(("shape", "seed"), [((14, 3, 3), 5), ((16, 3, 4), 6), ((12, 2, 4), 7)])
def test_two_way_p_is_greenhouse_geisser_corrected_per_effect(
    shape: tuple[int, ...], seed: int
) -> None:
    """Per effect, pingouin's two-way ``eps`` and ``p_GG_corr`` (each main effect from the
    case means over the other factor, the interaction from the Kronecker product of the
    two factors' contrasts); a two-level factor has epsilon 1 and its p unchanged."""
    y = _unsphered(shape, seed)
    got = sfac.repeated_measures_anova(y)
    _agrees_with_pingouin(got, y)
    assert got["AB"].eps < 0.9
    if shape[1] == 2:
        f, p, eps, df_effect, df_error = got["A"]
        assert eps == 1.0 and p == f_sf(f, df_effect, df_error)


def _epsilon_by_hand(y: np.ndarray, effect: str) -> float:
    """Greenhouse–Geisser epsilon with an explicit loop over cases: each case's contrast
    vector from its cells (a contrast basis from scipy's null space of the constant,
    not the code's Helmert one), their covariance, tr(S)² / (d tr(S²))."""
    import scipy.linalg

    n, a, b = y.shape

    def basis(k: int) -> np.ndarray:
        return scipy.linalg.null_space(np.ones((1, k)))  # (k, k − 1) orthonormal

    if effect == "A":
        weights = np.kron(basis(a), np.ones((b, 1)) / b)  # A's contrasts of B-averaged means
    elif effect == "B":
        weights = np.kron(np.ones((a, 1)) / a, basis(b))
    else:
        weights = np.kron(basis(a), basis(b))
    z = np.array([weights.T @ y[s].reshape(-1) for s in range(n)])
    d = z.shape[1]
    centred = z - z.mean(axis=0)
    cov = sum(np.outer(row, row) for row in centred) / (n - 1)
    return float(np.trace(cov) ** 2 / (d * np.trace(cov @ cov)))


@pytest.mark.parametrize("seed", [8, 9])
def test_two_way_epsilon_and_p_equal_a_hand_computation(seed: int) -> None:
    """Independent of pingouin's version: epsilon from a loop over cases, F from
    statsmodels' AnovaRM, p from scipy.stats.f.sf on ε-scaled df."""
    import scipy.stats
    from statsmodels.stats.anova import AnovaRM

    y = _unsphered((13, 3, 4), seed)
    long, _ = _rm_long(y)
    table = AnovaRM(long, "y", "case", within=["A", "B"]).fit().anova_table
    got = sfac.repeated_measures_anova(y)
    for effect, source in {"A": "A", "B": "B", "AB": "A:B"}.items():
        eps = _epsilon_by_hand(y, effect)
        f, df1, df2 = table.loc[source, ["F Value", "Num DF", "Den DF"]]
        assert got[effect].eps == pytest.approx(eps, rel=1e-9), effect
        assert got[effect].f == pytest.approx(f, rel=1e-9), effect
        want = scipy.stats.f.sf(f, eps * df1, eps * df2)
        assert got[effect].p == pytest.approx(want, rel=1e-7), effect


def test_repeated_measures_anova_of_a_constant_outcome_is_nan() -> None:
    f, p, eps, *_ = sfac.repeated_measures_anova(np.ones((5, 3)))["A"]
    assert np.isnan(f) and np.isnan(p) and np.isnan(eps)
    with pytest.raises(ValueError, match="two or more cases"):
        sfac.repeated_measures_anova(np.ones((1, 3)))


def test_two_cases_are_enough_for_a_repeated_measures_anova() -> None:
    """Two cases, the fewest the function takes (found by the mutation run: a guard of
    ``<= 2`` went unnoticed). Two levels: F is the paired t squared and p its p (scipy's
    ttest_rel); three levels: F from statsmodels' AnovaRM, epsilon by the loop over cases
    (the two cases' contrast covariance has rank one: ε = 1/2), p from scipy on ε·df."""
    import scipy.stats
    from statsmodels.stats.anova import AnovaRM

    two = np.array([[0.0, 0.5], [0.2, 0.9]])
    paired = scipy.stats.ttest_rel(two[:, 1], two[:, 0])
    f, p, eps, df_effect, df_error = sfac.repeated_measures_anova(two)["A"]
    assert (eps, df_effect, df_error) == (1.0, 1, 1)
    assert f == pytest.approx(paired.statistic**2, rel=1e-12)
    assert p == pytest.approx(paired.pvalue, rel=1e-9)
    three = np.array([[0.0, 0.5, 0.1], [0.2, 0.9, 0.6]])
    long, _ = _rm_long(three)
    table = AnovaRM(long, "y", "case", within=["A"]).fit().anova_table
    f, p, eps, df_effect, df_error = sfac.repeated_measures_anova(three)["A"]
    want_eps = _epsilon_by_hand(three[:, :, None], "A")
    assert want_eps == pytest.approx(0.5, rel=1e-12)
    assert (df_effect, df_error) == (2, 2)
    assert eps == pytest.approx(want_eps, rel=1e-9)
    assert f == pytest.approx(table.loc["A", "F Value"], rel=1e-9)
    assert p == pytest.approx(scipy.stats.f.sf(f, 2 * want_eps, 2 * want_eps), rel=1e-9)


def test_repeated_measures_anova_of_an_effect_without_error() -> None:
    """Every case moved by the same amount: pingouin's F = inf. With one df the p-value is
    the exact sign flip of the per-case contrasts (scipy's permutation test, 2^(1-n) =
    0.125 for 4 cases; pingouin's 0 claimed certainty from 4 cases), for the ANOVA and the
    term's p_value alike, also when float residue leaves the error term at 1e-32. With
    three levels the same sign flip (pingouin's p = 0); no error covariance leaves epsilon
    undefined, not p."""
    import scipy.stats

    pingouin = pytest.importorskip("pingouin", reason="pingouin comes with the test extra")
    # (every mean exact in binary, so the error term is exactly 0)
    y = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0], [3.0, 4.0]])
    f, p, eps, *_ = sfac.repeated_measures_anova(y)["A"]
    long = pd.DataFrame({"case": np.repeat(np.arange(4), 2), "A": [0, 1] * 4, "y": y.ravel()})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pingouin divides by its zero error term
        aov = pingouin.rm_anova(data=long, dv="y", within="A", subject="case").set_index("Source")
    p_col = "p_unc" if "p_unc" in aov else "p-unc"
    assert f == aov.loc["A", "F"] == np.inf
    assert aov.loc["A", p_col] == 0.0
    exact = scipy.stats.permutation_test(
        (y[:, 1] - y[:, 0],), np.mean, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert p == pytest.approx(exact) == 0.125
    assert eps == 1.0
    levels = [["a"], ["b"]]
    design = sfac.design_terms(levels, ["f"], ["v0", "v1"], 0)
    assert sfac.factorial_contrasts(y, levels, design).p_value.tolist() == [p]
    # Contrasts equal up to float residue (0.3 and 0.30000000000000004: SD 4e-17, t 1e16):
    # the same exact p over the 3 cases, 0.25, not t's 0.
    residue = np.array([[0.1, 0.4], [0.2, 0.5], [0.7, 1.0]])
    fit = sfac.factorial_contrasts(residue, levels, design)
    assert fit.p_value.tolist() == [0.25] and fit.se.tolist() == [0.0]
    assert sfac.repeated_measures_anova(residue)["A"][:2] == (np.inf, 0.25)  # was F 1e32, p 0
    three = np.column_stack([y, y[:, 1] + 1.0])  # (case means exact too)
    f, p, eps, *_ = sfac.repeated_measures_anova(three)["A"]
    assert f == np.inf and p == _sign_flip_p(three) == 0.125 and np.isnan(eps)


def _sign_flip_p(y: np.ndarray) -> float:
    """The exact sign-flip p of a one-way within-case effect, by enumeration: each case's
    differences from its first level as its contrast vector, every assignment of signs to
    the cases, the statistic the squared length of the vectors' mean."""
    import itertools

    vectors = y[:, 1:] - y[:, :1]
    observed = float((vectors.mean(axis=0) ** 2).sum())
    stats = [
        float(((np.array(signs)[:, None] * vectors).mean(axis=0) ** 2).sum())
        for signs in itertools.product([1, -1], repeat=len(y))
    ]
    return float(np.mean([s >= observed * (1 - 1e-12) for s in stats]))


def test_a_many_level_effect_without_error_is_not_certain() -> None:
    """Three cases, each passing on two variants of three and failing on the third (a
    deterministic agent): every case moves alike, the error term is 0 and pingouin's
    p = 0 claimed certainty from 3 cases; the exact sign flip gives 2^(1-3) = 0.25. In
    two factors the same holds for each main effect and the interaction."""
    pingouin = pytest.importorskip("pingouin", reason="pingouin comes with the test extra")
    y = np.array([[1.0, 1.0, 0.0]] * 3)
    f, p, eps, df, _ = sfac.repeated_measures_anova(y)["A"]
    assert (f, df) == (np.inf, 2) and np.isnan(eps) and p == _sign_flip_p(y) == 0.25
    long = pd.DataFrame({"case": np.repeat(np.arange(3), 3), "A": [0, 1, 2] * 3})
    long["y"] = y.ravel()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pingouin divides by its zero error term
        aov = pingouin.rm_anova(data=long, dv="y", within="A", subject="case")
    assert aov.filter(like="unc").iloc[0, 0] == 0.0  # what it was
    cells = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0]]] * 4)
    two = sfac.repeated_measures_anova(cells)
    assert all(two[e].f == np.inf and two[e].p == 2.0**-3 for e in ("A", "B", "AB"))


@pytest.mark.parametrize("seed", [0, 1])
def test_two_way_anova_of_cell_means_equals_the_three_way_design(seed: int) -> None:
    """A 3 × 3 × 2 within-case design: averaging over the third factor first gives the
    full three-way repeated-measures ANOVA's F and p for A, B and A × B (statsmodels'
    AnovaRM on every cell), as factorial._anova's comment says."""
    from statsmodels.stats.anova import AnovaRM

    rng = np.random.default_rng(seed)
    y = rng.normal(0, 1, (8, 1, 1, 1)) + rng.normal(0, 0.8, (8, 3, 3, 2))
    index = np.indices(y.shape).reshape(4, -1)
    long = pd.DataFrame({"case": index[0], "A": index[1], "B": index[2], "D": index[3]})
    long["y"] = y.ravel()
    full = AnovaRM(long, "y", "case", within=["A", "B", "D"]).fit().anova_table
    got = sfac.repeated_measures_anova(y.mean(axis=3))
    for effect, source in {"A": "A", "B": "B", "AB": "A:B"}.items():
        f, _, _, df_effect, df_error = got[effect]
        assert f == pytest.approx(full.loc[source, "F Value"], rel=1e-9)
        # AnovaRM's p is uncorrected: F on the uncorrected df
        assert f_sf(f, df_effect, df_error) == pytest.approx(full.loc[source, "Pr > F"], rel=1e-7)
        assert (df_effect, df_error) == tuple(full.loc[source, ["Num DF", "Den DF"]])


@pytest.mark.parametrize("by_cluster", [False, True])
def test_fixed_effects_leave_out_cases_with_one_outcome(by_cluster: bool) -> None:
    """10 of 30 cases have one outcome each (every other variant's trials failed there):
    they add nothing to the estimates or the scores, but were counted in G, N and the
    df (29 for 20 informative cases, an interval too narrow and a p too small). The
    reference is statsmodels' cluster covariance on the case-demeaned informative cases."""
    y, x, case = _panel(4, n_case=30)
    keep = (case < 20) | (np.arange(len(case)) % 5 == 0)  # cases 20..29: one row each
    y, x, case = y[keep], x[keep], case[keep]
    topic = case % 7  # clusters of cases
    est = sfac.case_fixed_effects_ols(
        y, x, case, confidence_level=0.9, clusters=topic if by_cluster else None
    )
    frame = pd.DataFrame({"y": y, "a": x[:, 0], "b": x[:, 1], "case": case, "topic": topic})
    frame = frame[frame["case"] < 20]
    demeaned = frame.groupby("case")[["y", "a", "b"]].transform(lambda s: s - s.mean())
    groups = frame["topic"] if by_cluster else frame["case"]
    fit = sm.OLS(demeaned["y"], demeaned[["a", "b"]]).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    np.testing.assert_allclose(est.estimate, fit.params, rtol=1e-9)
    np.testing.assert_allclose(est.se, fit.bse, rtol=1e-9)
    np.testing.assert_allclose(est.p_value, fit.pvalues, rtol=1e-7)
    ci = fit.conf_int(alpha=0.1).to_numpy()
    np.testing.assert_allclose(est.ci_low, ci[:, 0], rtol=1e-7)
    np.testing.assert_allclose(est.ci_high, ci[:, 1], rtol=1e-7)
    assert est.n_cases == 20
    assert (est.df == groups.nunique() - 1).all()


def test_a_pass_rate_factor_of_three_levels_is_corrected_as_pingouins() -> None:
    """Each case's pass rate over three attempts (multiples of 1/3) on three levels: the
    error sum of squares is below 1, as pass rates make it, and epsilon and the corrected
    p are still pingouin's (the data of the other tests have error sums above 1)."""
    rng = np.random.default_rng(0)
    y = rng.binomial(3, [0.5, 0.6, 0.8], size=(6, 3)) / 3
    got = sfac.repeated_measures_anova(y)
    resid = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0) + y.mean()
    assert 0 < float((resid**2).sum()) < 1
    assert 0 < got["A"].eps < 1 and not math.isnan(got["A"].p)
    _agrees_with_pingouin(got, y)
