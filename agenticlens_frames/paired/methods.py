"""The paired methods by name: what each computes, and what it needs of the data.

One entry per method. The settings' allowed values, the docs' table and the dispatch in
:mod:`agenticlens_frames.paired.comparisons` read :data:`METHODS`, so a new method is
one entry here, its estimator in :mod:`agenticlens_frames.stats_paired` and its name in
:data:`agenticlens_frames._choices.PAIRED_METHODS` (which ``--paired-method`` reads without
loading numpy; a test holds the two equal).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METHODS", "PairedMethodInfo", "method_names"]


@dataclass(frozen=True)
class PairedMethodInfo:
    """One paired method.

    Attributes
    ----------
    name
        The value of ``method`` / ``--paired-method``.
    label
        The method's name in a sentence (``McNemar``).
    interval, test
        The interval and the p-value it gives, in words (docs and help).
    clusters
        Whether it accepts clustered cases (``cluster:``); one that does not is refused
        with a cluster, before any work.
    single_binary
        Whether it needs exactly one binary attempt per arm and case; where a row has
        not, the row falls back to ``t`` and says so.
    """

    name: str
    label: str
    interval: str
    test: str
    clusters: bool = True
    single_binary: bool = False


#: Every paired method, the default first.
METHODS: dict[str, PairedMethodInfo] = {
    m.name: m
    for m in (
        PairedMethodInfo("t", "t", "d̄ ± t₍ₙ₋₁₎·sd(d)/√n (CR1 with clusters)", "paired t"),
        PairedMethodInfo(
            "bootstrap",
            "bootstrap",
            "case (or cluster) bootstrap percentile",
            "null-centred bootstrap",
        ),
        PairedMethodInfo("permutation", "permutation", "t interval", "sign-flip randomisation"),
        PairedMethodInfo(
            "wilcoxon", "Wilcoxon", "t interval", "Wilcoxon signed-rank", clusters=False
        ),
        PairedMethodInfo(
            "mcnemar",
            "McNemar",
            "Bonett–Price adjusted Wald",
            "McNemar exact",
            clusters=False,
            single_binary=True,
        ),
    )
}


def method_names() -> tuple[str, ...]:
    """The method names, the default first.

    Examples
    --------
    >>> method_names()
    ('t', 'bootstrap', 'permutation', 'wilcoxon', 'mcnemar')
    """
    return tuple(METHODS)
