"""The distribution functions every run evaluates, without importing scipy.stats.

p-values, power and detectable effects need a handful of t, noncentral-t and normal
tail functions. scipy.stats evaluates each of them with one scipy.special function
(``t.sf(x, df)`` is ``stdtr(df, -x)``, ``norm.ppf(q)`` is ``ndtri(q)``, ...) behind a
generic wrapper that checks the arguments; importing scipy.stats costs most of a second
of every ``experiment run``, scipy.special a fifth of that. These functions call the same
special function on plain arguments — finite values, ``df > 0``, probabilities strictly
between 0 and 1 — so the numbers are the same to the last bit; anything else goes to
scipy.stats itself, whose edge rules (NaN, 0 or 1 at the ends of the support) then
apply unchanged. Scalars give a float, arrays an array, as scipy.stats does.

Examples
--------
>>> import scipy.stats
>>> t_sf(2.0, 10) == float(scipy.stats.t.sf(2.0, 10))
True
>>> t_sf(float("inf"), 10), norm_ppf(0.975) == float(scipy.stats.norm.ppf(0.975))
(0.0, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "nct_cdf",
    "nct_sf",
    "norm_cdf",
    "norm_isf",
    "norm_ppf",
    "norm_sf",
    "t_isf",
    "t_ppf",
    "t_sf",
]


def _stats() -> Any:
    import scipy.stats

    return scipy.stats


def _plain(*values: Any, probability: Any = None, df: Any = None) -> bool:
    """Every value finite, ``df > 0`` and ``0 < probability < 1`` where given."""
    arrays = [np.asarray(v, dtype=float) for v in values]
    ok = all(bool(np.isfinite(a).all()) for a in arrays)
    if ok and df is not None:
        ok = bool((np.asarray(df, dtype=float) > 0).all())
    if ok and probability is not None:
        q = np.asarray(probability, dtype=float)
        ok = bool(((q > 0) & (q < 1)).all())
    return ok


def _out(value: Any) -> Any:
    value = np.asarray(value, dtype=float)
    return float(value) if value.ndim == 0 else value


def t_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.t.sf(x, df)``: ``stdtr(df, -x)``."""
    if _plain(x, df, df=df):
        from scipy.special import stdtr

        return _out(stdtr(df, np.negative(x)))
    return _out(_stats().t.sf(x, df))


def t_ppf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.ppf(q, df)``: ``stdtrit(df, q)``."""
    if _plain(q, df, probability=q, df=df):
        from scipy.special import stdtrit

        return _out(stdtrit(df, q))
    return _out(_stats().t.ppf(q, df))


def t_isf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.isf(q, df)``: ``-stdtrit(df, q)``."""
    if _plain(q, df, probability=q, df=df):
        from scipy.special import stdtrit

        return _out(np.negative(stdtrit(df, q)))
    return _out(_stats().t.isf(q, df))


def nct_sf(x: Any, df: Any, nc: Any) -> Any:
    """``scipy.stats.nct.sf(x, df, nc)``: scipy's ``_nct_sf`` clipped to [0, 1]."""
    if _plain(x, df, nc, df=df):
        try:
            from scipy.special._ufuncs import _nct_sf
        except ImportError:  # another scipy: its own stats module decides
            return _out(_stats().nct.sf(x, df, nc))
        with np.errstate(over="ignore"):
            return _out(np.clip(_nct_sf(x, df, nc), 0, 1))
    return _out(_stats().nct.sf(x, df, nc))


def nct_cdf(x: Any, df: Any, nc: Any) -> Any:
    """``scipy.stats.nct.cdf(x, df, nc)``: ``nctdtr(df, nc, x)``."""
    if _plain(x, df, nc, df=df):
        from scipy.special import nctdtr

        return _out(nctdtr(df, nc, x))
    return _out(_stats().nct.cdf(x, df, nc))


def norm_cdf(x: Any) -> Any:
    """``scipy.stats.norm.cdf(x)``: ``ndtr(x)``."""
    if _plain(x):
        from scipy.special import ndtr

        return _out(ndtr(x))
    return _out(_stats().norm.cdf(x))


def norm_sf(x: Any) -> Any:
    """``scipy.stats.norm.sf(x)``: ``ndtr(-x)``."""
    if _plain(x):
        from scipy.special import ndtr

        return _out(ndtr(np.negative(x)))
    return _out(_stats().norm.sf(x))


def norm_ppf(q: Any) -> Any:
    """``scipy.stats.norm.ppf(q)``: ``ndtri(q)``."""
    if _plain(q, probability=q):
        from scipy.special import ndtri

        return _out(ndtri(q))
    return _out(_stats().norm.ppf(q))


def norm_isf(q: Any) -> Any:
    """``scipy.stats.norm.isf(q)``: ``-ndtri(q)``."""
    if _plain(q, probability=q):
        from scipy.special import ndtri

        return _out(np.negative(ndtri(q)))
    return _out(_stats().norm.isf(q))
