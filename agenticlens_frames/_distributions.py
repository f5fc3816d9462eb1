"""The distribution functions every run evaluates, without importing scipy.stats.

p-values, power and detectable effects need a handful of t, noncentral-t and normal
tail functions. scipy.stats evaluates each of them with one scipy.special function
(``t.sf(x, df)`` is ``stdtr(df, -x)``, ``norm.ppf(q)`` is ``ndtri(q)``, ...) behind a
generic wrapper that checks the arguments; importing scipy.stats costs most of a second
of every ``experiment run``, scipy.special a fifth of that. These functions call the same
special function on plain arguments — finite values, ``df > 0``, probabilities strictly
between 0 and 1 — so the numbers are the same to the last bit. Where scipy.stats gives
its bad value whatever the rest (an argument that is NaN, or ``df <= 0``: a one-case
experiment has no degrees of freedom), these give NaN too, element by element, without
the import. Anything else goes to scipy.stats itself, whose edge rules (0 or 1 at the
ends of the support, bounds for probabilities 0 and 1) then apply unchanged. Scalars give
a float, arrays an array, as scipy.stats does.

Examples
--------
>>> import scipy.stats
>>> t_sf(2.0, 10) == float(scipy.stats.t.sf(2.0, 10))
True
>>> t_sf(float("inf"), 10), norm_ppf(0.975) == float(scipy.stats.norm.ppf(0.975))
(0.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "brentq",
    "f_sf",
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


def _evaluate(
    compute: Callable[..., Any],
    reference: Callable[..., Any],
    values: tuple[Any, ...],
    *,
    probability: int | None = None,
    df: int | None = None,
) -> Any:
    """``compute(*values)`` (the special function) where every argument is plain — finite,
    ``df > 0``, ``0 < probability < 1`` (``probability`` and ``df`` are positions in
    ``values``) — NaN where scipy.stats gives its bad value whatever the rest (an
    argument NaN, or ``df`` not positive: its ``_argcheck`` fails; a NaN ``nc`` fails
    nct's), and ``reference(*values)`` (scipy.stats) for the whole call when any element
    is neither, or any value is not a number."""
    arrays = [np.asarray(v) for v in values]
    if any(a.dtype.kind not in "biuf" for a in arrays):  # (None, text: scipy.stats says what)
        return _out(reference(*values))
    arrays = [a.astype(float, copy=False) for a in arrays]
    finite = [np.isfinite(a) for a in arrays]
    positive = None if df is None else arrays[df] > 0
    inside = None
    if probability is not None:
        q = arrays[probability]
        inside = (q > 0) & (q < 1)
    # Every element plain, checked per argument (the common case: no broadcasting).
    if (
        all(f.all() for f in finite)
        and (positive is None or positive.all())
        and (inside is None or inside.all())
    ):
        return _out(compute(*values))
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    plain = np.logical_and.reduce([np.broadcast_to(f, shape) for f in finite])
    bad = np.logical_or.reduce([np.broadcast_to(np.isnan(a), shape) for a in arrays])
    if positive is not None:
        plain = plain & positive
        bad = bad | ~positive
    if inside is not None:
        plain = plain & inside
    if not (plain | bad).all():
        return _out(reference(*values))
    out = np.full(shape, np.nan)
    if plain.any():  # the special function is elementwise: the plain elements alone
        out[plain] = compute(*(np.broadcast_to(a, shape)[plain] for a in arrays))
    return _out(out)


def _out(value: Any) -> Any:
    value = np.asarray(value, dtype=float)
    return float(value) if value.ndim == 0 else value


def t_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.t.sf(x, df)``: ``stdtr(df, -x)``."""
    from scipy.special import stdtr

    return _evaluate(
        lambda x, df: stdtr(df, np.negative(x)), lambda x, df: _stats().t.sf(x, df), (x, df), df=1
    )


def f_sf(x: Any, dfn: Any, dfd: Any) -> Any:
    """``scipy.stats.f.sf(x, dfn, dfd)``: ``fdtrc(dfn, dfd, x)`` (a non-positive ``dfd``
    gives NaN from the special function, as from scipy.stats).

    Examples
    --------
    >>> import scipy.stats
    >>> f_sf(3.5, 2, 18) == float(scipy.stats.f.sf(3.5, 2, 18))
    True
    """
    from scipy.special import fdtrc

    return _evaluate(
        lambda x, dfn, dfd: fdtrc(dfn, dfd, x),
        lambda x, dfn, dfd: _stats().f.sf(x, dfn, dfd),
        (x, dfn, dfd),
        df=1,
    )


def t_ppf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.ppf(q, df)``: ``stdtrit(df, q)``."""
    from scipy.special import stdtrit

    return _evaluate(
        lambda q, df: stdtrit(df, q),
        lambda q, df: _stats().t.ppf(q, df),
        (q, df),
        probability=0,
        df=1,
    )


def t_isf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.isf(q, df)``: ``-stdtrit(df, q)``."""
    from scipy.special import stdtrit

    return _evaluate(
        lambda q, df: np.negative(stdtrit(df, q)),
        lambda q, df: _stats().t.isf(q, df),
        (q, df),
        probability=0,
        df=1,
    )


def nct_sf(x: Any, df: Any, nc: Any) -> Any:
    """``scipy.stats.nct.sf(x, df, nc)``: scipy's ``_nct_sf`` clipped to [0, 1]."""
    try:
        from scipy.special._ufuncs import _nct_sf
    except ImportError:  # another scipy: its own stats module decides
        return _out(_stats().nct.sf(x, df, nc))

    def compute(x: Any, df: Any, nc: Any) -> Any:
        with np.errstate(over="ignore"):
            return np.clip(_nct_sf(x, df, nc), 0, 1)

    return _evaluate(compute, lambda x, df, nc: _stats().nct.sf(x, df, nc), (x, df, nc), df=1)


def nct_cdf(x: Any, df: Any, nc: Any) -> Any:
    """``scipy.stats.nct.cdf(x, df, nc)``: ``nctdtr(df, nc, x)``."""
    from scipy.special import nctdtr

    return _evaluate(
        lambda x, df, nc: nctdtr(df, nc, x),
        lambda x, df, nc: _stats().nct.cdf(x, df, nc),
        (x, df, nc),
        df=1,
    )


def norm_cdf(x: Any) -> Any:
    """``scipy.stats.norm.cdf(x)``: ``ndtr(x)``."""
    from scipy.special import ndtr

    return _evaluate(ndtr, lambda x: _stats().norm.cdf(x), (x,))


def norm_sf(x: Any) -> Any:
    """``scipy.stats.norm.sf(x)``: ``ndtr(-x)``."""
    from scipy.special import ndtr

    return _evaluate(lambda x: ndtr(np.negative(x)), lambda x: _stats().norm.sf(x), (x,))


def norm_ppf(q: Any) -> Any:
    """``scipy.stats.norm.ppf(q)``: ``ndtri(q)``."""
    from scipy.special import ndtri

    return _evaluate(ndtri, lambda q: _stats().norm.ppf(q), (q,), probability=0)


def norm_isf(q: Any) -> Any:
    """``scipy.stats.norm.isf(q)``: ``-ndtri(q)``."""
    from scipy.special import ndtri

    return _evaluate(
        lambda q: np.negative(ndtri(q)), lambda q: _stats().norm.isf(q), (q,), probability=0
    )


_RTOL = 4 * np.finfo(float).eps  # scipy.optimize.brentq's default (and smallest) rtol


def brentq(
    f: Callable[[float], float], a: float, b: float, *, xtol: float = 2e-12, maxiter: int = 100
) -> float:
    """``scipy.optimize.brentq(f, a, b, xtol=xtol)``: the same root, to the last bit.

    A detectable effect inverts a power curve; scipy.optimize would cost a few tenths of
    a second to import for that. This is Brent's method step for step as scipy runs it
    (the same interpolation, extrapolation and bisection choices in the same floating
    point operations), so it returns the same float. A bracket without a sign change, a
    NaN value of ``f`` or no convergence within ``maxiter`` steps is handed to scipy,
    which raises its own error.

    Examples
    --------
    >>> import scipy.optimize
    >>> f = lambda x: x**3 - 2 * x - 5
    >>> brentq(f, 2.0, 3.0) == scipy.optimize.brentq(f, 2.0, 3.0)
    True
    """

    def scipy_brentq() -> float:
        from scipy.optimize import brentq as reference

        return float(reference(f, a, b, xtol=xtol, maxiter=maxiter))

    xpre, xcur = float(a), float(b)
    fpre, fcur = float(f(xpre)), float(f(xcur))
    if math.isnan(fpre) or math.isnan(fcur):
        return scipy_brentq()
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1.0, fpre) == math.copysign(1.0, fcur):
        return scipy_brentq()
    xblk = fblk = spre = scur = 0.0
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + _RTOL * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # a good short step
                spre, scur = scur, stry
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = float(f(xcur))
        if math.isnan(fcur):
            return scipy_brentq()
    return scipy_brentq()
