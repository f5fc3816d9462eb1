"""The scipy.special shortcuts equal scipy.stats bit for bit, edges included."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st

from agenticlens_frames import _distributions as d

rng = np.random.default_rng(20261203)
X = np.concatenate([rng.normal(0, 4, 400), [0.0, -0.0, 1e-300, 40.0, -40.0]])
DF = np.concatenate([rng.integers(1, 400, 400), [1, 2, 3, 1000, 10**6]]).astype(float)
NC = np.concatenate([rng.normal(0, 8, 400), [0.0, 30.0, -30.0, 1e-8, 60.0]])
Q = np.concatenate([rng.uniform(0, 1, 400), [1e-300, 1e-12, 0.5, 1 - 1e-12, 0.975]])

CASES = [
    ("t_sf", lambda x, df, nc, q: (x, df), st.t.sf),
    ("t_ppf", lambda x, df, nc, q: (q, df), st.t.ppf),
    ("t_isf", lambda x, df, nc, q: (q, df), st.t.isf),
    ("nct_sf", lambda x, df, nc, q: (x, df, nc), st.nct.sf),
    ("nct_cdf", lambda x, df, nc, q: (x, df, nc), st.nct.cdf),
    ("norm_cdf", lambda x, df, nc, q: (x,), st.norm.cdf),
    ("norm_sf", lambda x, df, nc, q: (x,), st.norm.sf),
    ("norm_ppf", lambda x, df, nc, q: (q,), st.norm.ppf),
    ("norm_isf", lambda x, df, nc, q: (q,), st.norm.isf),
]


def _same(ours: object, theirs: object) -> bool:
    a, b = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize(("name", "pick", "reference"), CASES, ids=[c[0] for c in CASES])
def test_scalars_equal_scipy_stats_exactly(name, pick, reference) -> None:
    ours = getattr(d, name)
    for x, df, nc, q in zip(X, DF, NC, Q, strict=True):
        args = pick(float(x), float(df), float(nc), float(q))
        got, want = ours(*args), reference(*args)
        assert isinstance(got, float)
        assert got == float(want) or (math.isnan(got) and math.isnan(want)), (name, args)


@pytest.mark.parametrize(("name", "pick", "reference"), CASES, ids=[c[0] for c in CASES])
def test_arrays_equal_scipy_stats_exactly(name, pick, reference) -> None:
    args = pick(X, DF, NC, Q)
    assert _same(getattr(d, name)(*args), reference(*args))


@pytest.mark.parametrize(
    "x", [math.nan, math.inf, -math.inf, np.array([0.5, math.nan, math.inf, -math.inf])]
)
@pytest.mark.parametrize("df", [0.0, -1.0, math.nan, 5.0])
def test_edges_follow_scipy_stats(x: object, df: float) -> None:
    assert _same(d.t_sf(x, df), st.t.sf(x, df))
    assert _same(d.nct_sf(x, df, 1.5), st.nct.sf(x, df, 1.5))
    assert _same(d.nct_cdf(x, df, 1.5), st.nct.cdf(x, df, 1.5))
    assert _same(d.norm_sf(x), st.norm.sf(x))


@pytest.mark.parametrize("q", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_probability_edges_follow_scipy_stats(q: float) -> None:
    assert _same(d.t_ppf(q, 7.0), st.t.ppf(q, 7.0))
    assert _same(d.t_isf(q, 7.0), st.t.isf(q, 7.0))
    assert _same(d.norm_ppf(q), st.norm.ppf(q))
    assert _same(d.norm_isf(q), st.norm.isf(q))


# Elements scipy.stats answers NaN for whatever the rest (a NaN argument, df <= 0: a
# one-case experiment's factor effects have df 0), between plain ones.
MIXED_X = np.array([0.5, math.nan, -1.25, 2.0, math.nan, 0.0, 3.5, -0.75])
MIXED_DF = np.array([4.0, 4.0, 0.0, -2.0, math.nan, 9.0, 1.0, 30.0])
MIXED_NC = np.array([1.0, 0.5, -1.0, 2.0, 0.0, math.nan, -3.0, 0.25])
MIXED_Q = np.array([0.975, 0.2, math.nan, 0.5, 0.05, 0.999, math.nan, 0.6])


@pytest.mark.parametrize(("name", "pick", "reference"), CASES, ids=[c[0] for c in CASES])
def test_nan_elements_between_plain_ones_equal_scipy_stats(name, pick, reference) -> None:
    args = pick(MIXED_X, MIXED_DF, MIXED_NC, MIXED_Q)
    got, want = getattr(d, name)(*args), reference(*args)
    assert _same(got, want)
    assert np.isnan(want).any() and not np.isnan(want).all()  # both kinds really met
    # Broadcast against a scalar, and each element alone, as scalars.
    assert _same(
        getattr(d, name)(*(a[:, None] for a in args)), reference(*(a[:, None] for a in args))
    )
    for i in range(len(MIXED_X)):
        one = [float(a[i]) for a in args]
        assert _same(getattr(d, name)(*one), reference(*one)), (name, one)


def test_f_sf_takes_fractional_degrees_of_freedom() -> None:
    """The Greenhouse–Geisser corrected ANOVA p is F on ε-scaled (fractional) df: f_sf
    equals scipy.stats.f.sf there bit for bit, scalars and arrays, edges included."""
    draw = np.random.default_rng(1959)
    x = np.abs(X[:100]) * 2
    dfn = draw.uniform(1.0, 6.0, 100)  # ε·df₁ ≥ 1
    dfd = draw.uniform(1.0, 200.0, 100)
    assert _same(d.f_sf(x, dfn, dfd), st.f.sf(x, dfn, dfd))
    for args in zip(x[:20], dfn[:20], dfd[:20], strict=True):
        got = d.f_sf(*(float(a) for a in args))
        assert isinstance(got, float) and got == float(st.f.sf(*args)), args
    for edge in (math.inf, 0.0, math.nan):
        assert _same(d.f_sf(edge, 1.37, 11.4), st.f.sf(edge, 1.37, 11.4))
    assert _same(d.f_sf(2.0, 0.0, 11.4), st.f.sf(2.0, 0.0, 11.4))


def test_values_that_are_not_numbers_are_left_to_scipy_stats() -> None:
    with pytest.raises(TypeError):
        st.t.sf(None, 5.0)
    with pytest.raises(TypeError):
        d.t_sf(None, 5.0)


@pytest.mark.parametrize("df", [0.0, -1.0, math.nan, np.array([0.0, 0.0, 0.0])])
def test_no_degrees_of_freedom_gives_nan_without_importing_scipy_stats(df) -> None:
    import subprocess
    import sys

    probe = f"""
import math, sys
import numpy as np
from numpy import array, nan
from agenticlens_frames import _distributions as d
df = {df!r}
values = [d.t_sf(np.array([0.4, nan, 1.0]), df), d.t_ppf(0.975, df), d.t_isf(0.025, df),
          d.nct_sf(1.0, df, 0.5), d.nct_cdf(1.0, df, 0.5), d.norm_ppf(nan), d.norm_cdf(nan)]
assert all(np.isnan(v).all() for v in values), values
print("scipy.stats" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def _power_gap(sd: float, n: int, alpha: float, power: float):
    from agenticlens_frames.stats_paired import paired_power

    return lambda delta: paired_power(delta, sd, n, alpha) - power


@pytest.mark.parametrize("seed", range(4))
def test_brentq_finds_scipys_root_exactly(seed: int) -> None:
    from scipy.optimize import brentq

    rng = np.random.default_rng(seed)
    for _ in range(50):
        # the power curves a detectable effect inverts ...
        sd, n = float(rng.uniform(0.01, 1.0)), int(rng.integers(2, 5000))
        alpha, power = float(rng.choice([0.05, 0.01, 0.1 / 7])), float(rng.uniform(0.5, 0.99))
        f = _power_gap(sd, n, alpha, power)
        upper = 0.01
        while f(upper) < 0:
            upper *= 2
        assert d.brentq(f, 0.0, upper, xtol=1e-12) == brentq(f, 0.0, upper, xtol=1e-12)
        # ... and cubics with up to three roots in the bracket
        c = rng.normal(size=4)

        def cubic(x: float, c: np.ndarray = c) -> float:
            return float(((c[0] * x + c[1]) * x + c[2]) * x + c[3])

        if np.sign(cubic(-10.0)) != np.sign(cubic(10.0)):
            for xtol in (2e-12, 1e-5):
                assert d.brentq(cubic, -10.0, 10.0, xtol=xtol) == brentq(
                    cubic, -10.0, 10.0, xtol=xtol
                )


def test_brentq_leaves_bad_brackets_to_scipy() -> None:
    with pytest.raises(ValueError, match="different signs"):
        d.brentq(lambda x: x * x + 1, -1.0, 1.0)
    with pytest.raises(ValueError):
        d.brentq(lambda x: math.nan, -1.0, 1.0)
