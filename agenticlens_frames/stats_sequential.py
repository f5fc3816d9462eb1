r"""Stop when the answer is known: anytime-valid confidence sequences for paired differences.

After each completed case :math:`i`, a candidate's paired difference against the baseline
is :math:`d_i = \bar y^{cand}_i - \bar y^{base}_i \in [-1, 1]` (case pass rates over their
trials). A **confidence sequence** :math:`(C_t)` covers the mean difference :math:`\mu` at
*every* :math:`t` simultaneously with probability :math:`\ge 1-\alpha`, so the run may be
watched after every case and stopped whenever the answer is clear, without inflating the
error rate (a fixed-sample interval checked after every case would).

We use the **betting** (hedged capital) confidence sequence of Waudby-Smith & Ramdas
(2024, JRSS-B, Theorem 3 with the predictable plug-in bets of their eq. (26)): with
:math:`x_i = (d_i + 1)/2 \in [0, 1]` and a candidate mean :math:`m`,

.. math::

    K_t(m) = \tfrac12\prod_{i\le t}\bigl(1 + \lambda^+_i(m)(x_i - m)\bigr)
           + \tfrac12\prod_{i\le t}\bigl(1 - \lambda^-_i(m)(x_i - m)\bigr),

    \lambda_i = \sqrt{\frac{2\log(2/\alpha)}{\hat\sigma^2_{i-1}\, i\log(1+i)}},\quad
    \lambda^+_i = \min(\lambda_i, c/m),\ \lambda^-_i = \min(\lambda_i, c/(1-m)),

:math:`\hat\mu_i = (\tfrac12 + \sum_{j\le i} x_j)/(i+1)`,
:math:`\hat\sigma^2_i = (\tfrac14 + \sum_{j\le i}(x_j-\hat\mu_j)^2)/(i+1)`, :math:`c = 1/2`.
:math:`K_t(m)` is a nonnegative martingale when the true mean is :math:`m`, so by Ville's
inequality :math:`C_t = \{m : \max_{s \le t} K_s(m) < 1/\alpha\}` is a valid confidence
sequence. It needs no variance assumption (the differences are bounded), and it adapts
to the variance: when candidate and baseline agree on most cases it is nearly as tight
as a fixed-sample interval. It is computed on a grid of :math:`m` (the reported interval
is the hull of the grid points not yet excluded; the decision values 0 and ±δ are on the
grid).

A case that gives one sequence no difference (no evaluated attempt on one of its two
variants) is passed as NaN: that sequence skips it, and :math:`t` counts each sequence's
own cases. With declared case clusters the runner feeds one value per completed cluster
instead, the mean of its cases' differences (also in [-1, 1]; :mod:`.runner.stopping`),
and :math:`t` counts clusters.

**One-sided** (``one_sided=True``, the non-inferiority gate's bound,
:mod:`.paired.gate`): the lower confidence sequence of Waudby-Smith & Ramdas (2024:
a lower CS from the capital that bets on the mean being higher) keeps only the positive
bets, :math:`K^+_t(m) = \prod_{i\le t}(1 + \lambda^+_i(m)(x_i - m))`, with
:math:`\log(1/\alpha)` in place of :math:`\log(2/\alpha)` in :math:`\lambda_i`;
:math:`\{m : \max_{s\le t} K^+_s(m) < 1/\alpha\}` then covers the mean from below at
every :math:`t` with probability :math:`\ge 1-\alpha` (its upper end is 1: only the lower
end says anything). The whole of α goes to the one side a one-sided question asks about.

Decisions: *better* when the lower end is above 0, *worse* when the upper end is below 0,
and, with a margin δ, *within ±δ* when the whole interval lies inside (−δ, δ) (futility:
no difference as large as δ). With several candidates each candidate's α is set by
Bonferroni's split, whatever correction was declared (:func:`applied_correction`):
``none`` → α; ``bonferroni``, ``holm``, ``benjamini_hochberg`` → α/m (valid for all three,
conservative for the latter two, whose step-wise rules are not applied to the sequences).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from ._choices import CORRECTIONS
from .errors import check_proportion

__all__ = [
    "BettingConfidenceSequence",
    "applied_correction",
    "candidate_alpha",
    "decide",
]

#: Grid step on the difference scale [-1, 1]; 0 and every multiple of it are on the grid.
GRID_STEP = 0.0025


def applied_correction(n_candidates: int, correction: str) -> str:
    """The correction the stopping rule applies across candidates, given the declared one:
    ``bonferroni`` (α/m each) for any declared correction but ``none``, with two or more
    candidates; ``none`` otherwise.

    Holm and Benjamini–Hochberg are step-wise rules over a fixed set of p-values; the
    sequences have no p-values to order, so their family is covered by Bonferroni's split,
    which controls both (conservatively).

    Examples
    --------
    >>> applied_correction(2, "holm"), applied_correction(1, "holm"), applied_correction(3, "none")
    ('bonferroni', 'none', 'none')
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}")
    return "none" if correction == "none" or n_candidates <= 1 else "bonferroni"


def candidate_alpha(alpha: float, n_candidates: int, correction: str) -> float:
    """Each candidate's α under the declared correction (see :func:`applied_correction`).

    Examples
    --------
    >>> candidate_alpha(0.05, 4, "holm"), candidate_alpha(0.05, 4, "none")
    (0.0125, 0.05)
    """
    check_proportion(alpha, "alpha")
    if applied_correction(n_candidates, correction) == "none":
        return alpha
    return alpha / n_candidates


def decide(lower: float, upper: float, margin: float | None = None) -> str | None:
    """``better``, ``worse``, ``within ±δ`` (with a margin) or None (not decided yet).

    Examples
    --------
    >>> decide(0.01, 0.2), decide(-0.2, 0.1), decide(-0.02, 0.03, margin=0.05)
    ('better', None, 'within ±δ')
    """
    if lower > 0:
        return "better"
    if upper < 0:
        return "worse"
    if margin is not None and lower > -margin and upper < margin:
        return "within ±δ"
    return None


@dataclass
class BettingConfidenceSequence:
    """Betting confidence sequences for the means of bounded differences, many at once.

    Parameters
    ----------
    alpha
        Error level of each sequence (after the correction, see :func:`candidate_alpha`).
    n
        How many independent sequences to run side by side (one per candidate, or one per
        simulated run).
    c
        Largest bet (1/2, as recommended by Waudby-Smith & Ramdas).
    one_sided
        A lower confidence sequence at level α (positive bets only; the upper end stays
        1), instead of the two-sided one at α (α/2 a side).

    Examples
    --------
    >>> cs = BettingConfidenceSequence(alpha=0.05)
    >>> for _ in range(200):
    ...     cs.update([0.5])
    >>> low, high = cs.interval()
    >>> bool(low[0] > 0.3), bool(high[0] >= 0.5)
    (True, True)
    >>> lower = BettingConfidenceSequence(alpha=0.05, one_sided=True)
    >>> for _ in range(200):
    ...     lower.update([0.5])
    >>> bool(lower.interval()[0][0] >= low[0]), float(lower.interval()[1][0])
    (True, 1.0)
    """

    alpha: float
    n: int = 1
    c: float = 0.5
    one_sided: bool = False
    grid: np.ndarray = field(init=False)
    #: Cases seen by each sequence (a NaN difference is not a case for its sequence).
    t: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        check_proportion(self.alpha, "alpha")
        steps = round(2 / GRID_STEP)
        self.grid = np.linspace(-1.0, 1.0, steps + 1)
        self._m = (self.grid + 1) / 2
        shape = (self.n, len(self.grid))
        self._log_plus = np.zeros(shape)
        self._log_minus = np.zeros(shape)
        self._excluded = np.zeros(shape, dtype=bool)
        self._sum_x = np.zeros(self.n)
        self._sum_sq = np.zeros(self.n)
        self._var = np.full(self.n, 0.25)
        self.t = np.zeros(self.n, dtype=np.int64)
        self._threshold = math.log(1 / self.alpha)
        # The bet size's log(2/α) (two-sided: α/2 a side) or log(1/α) (one side).
        self._log_level = math.log((1 if self.one_sided else 2) / self.alpha)
        with np.errstate(divide="ignore"):
            self._cap_plus = np.where(self._m > 0, self.c / self._m, np.inf)
            self._cap_minus = np.where(self._m < 1, self.c / (1 - self._m), np.inf)

    def update(self, differences: ArrayLike) -> None:
        """Add one case: its difference in [-1, 1] for each of the ``n`` sequences, or NaN
        for a sequence the case gives no difference (that sequence skips it).

        Examples
        --------
        >>> cs = BettingConfidenceSequence(alpha=0.05, n=2)
        >>> cs.update([0.5, float("nan")])
        >>> cs.t.tolist()
        [1, 0]
        """
        d = np.asarray(differences, dtype=float).reshape(self.n)
        seen = ~np.isnan(d)
        if np.any(np.abs(d[seen]) > 1 + 1e-12):
            raise ValueError("differences must lie in [-1, 1] (NaN: no difference)")
        if not seen.any():
            return
        # Every sequence: views, not copies of the capital arrays.
        rows: np.ndarray | slice = slice(None) if seen.all() else seen
        x = (np.clip(d[rows], -1, 1) + 1) / 2
        t = self.t[rows] + 1
        var = self._var[rows]
        lam = np.sqrt(2 * self._log_level / (var * t * np.log(1 + t)))
        lam_plus = np.minimum(lam[:, None], self._cap_plus[None, :])
        gap = x[:, None] - self._m[None, :]
        log_plus = self._log_plus[rows] + np.log1p(lam_plus * gap)
        self._log_plus[rows] = log_plus
        if not self.one_sided:
            lam_minus = np.minimum(lam[:, None], self._cap_minus[None, :])
            log_minus = self._log_minus[rows] + np.log1p(-lam_minus * gap)
            self._log_minus[rows] = log_minus
        self._excluded[rows] |= self._log_capital(rows) >= self._threshold
        # Predictable estimates for the next bet (they include this case's x).
        sum_x = self._sum_x[rows] + x
        mean = (0.5 + sum_x) / (t + 1)
        sum_sq = self._sum_sq[rows] + (x - mean) ** 2
        self._sum_x[rows] = sum_x
        self._sum_sq[rows] = sum_sq
        self._var[rows] = (0.25 + sum_sq) / (t + 1)
        self.t[rows] = t

    def _log_capital(self, rows: np.ndarray | slice) -> np.ndarray:
        """log K_t of the sequences ``rows`` at every grid value: the hedged capital, or
        one-sided the positive bets' alone."""
        if self.one_sided:
            return self._log_plus[rows]
        return np.logaddexp(self._log_plus[rows], self._log_minus[rows]) - math.log(2)

    def log_capital(self, value: float) -> np.ndarray:
        """log K_t at a difference ``value`` on the grid (for tests), one per sequence."""
        j = int(np.argmin(np.abs(self.grid - value)))
        return self._log_capital(slice(None))[:, j]

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ends (hull of the grid values not excluded so far)."""
        alive = ~self._excluded
        any_alive = alive.any(axis=1)
        first = np.argmax(alive, axis=1)
        last = len(self.grid) - 1 - np.argmax(alive[:, ::-1], axis=1)
        low = np.where(any_alive, self.grid[first], np.nan)
        high = np.where(any_alive, self.grid[last], np.nan)
        return low, high
