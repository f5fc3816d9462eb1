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
