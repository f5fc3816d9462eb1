"""Names a user chooses from for the paired statistics, without the statistics' imports.

The command line builds its option choices from these at import time, so they live
apart from :mod:`agenticlens_frames.stats_paired` (numpy, pandas, scipy), which
re-exports them. The paired methods are a registry (:data:`METHODS`, published as
``agenticlens_frames.paired.METHODS``): the settings' allowed values, ``--paired-method``,
the estimator's check and the docs' table read it, so a new method is one entry here
and its estimator in :mod:`agenticlens_frames.stats_paired`.

Examples
--------
>>> from agenticlens_frames.stats_paired import CORRECTIONS as exported
>>> exported is CORRECTIONS, "holm" in CORRECTIONS
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "COMPARISONS_KEYS",
    "CORRECTIONS",
    "CORRECTION_CONTROLS",
    "INVALID_PAYLOAD_MODES",
    "LATENCY_POLICIES",
    "METHODS",
    "PAIRED_METHODS",
    "Correction",
    "PairedMethodInfo",
    "check_invalid_payload",
    "check_latency_missing",
    "method_names",
]

#: The keys of a ``comparisons:`` block and of a ``comparisons=`` mapping (published as
#: ``formats.comparisons.KEYS``): here, without imports, for the keyword hints of
#: :mod:`agenticlens_frames._deprecate`, which the file readers use.
COMPARISONS_KEYS = (
    "correction",
    "alpha",
    "confidence_level",
    "method",
    "family",
    "cluster",
    "evaluators",
    "noninferiority",
    "power",
    "resamples",
    "seed",
    "limits",
)

#: What a live reply that is not a sample fails: its whole trial (AgenticLens) or its case.
INVALID_PAYLOAD_MODES = ("trial", "case")


def check_invalid_payload(mode: object) -> None:
    """Refuse an ``invalid_payload`` mode that is not one of :data:`INVALID_PAYLOAD_MODES`.

    Examples
    --------
    >>> check_invalid_payload("case")
    >>> check_invalid_payload("cases")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: invalid_payload: must be 'trial' or 'case', got 'cases'
    """
    if mode not in INVALID_PAYLOAD_MODES:
        from .errors import InputError

        raise InputError(f"must be 'trial' or 'case', got {mode!r}", location="invalid_payload")


#: How a missing latency counts in the latency summaries: left out, or as 0 ms.
LATENCY_POLICIES = ("exclude", "zero")


def check_latency_missing(policy: object) -> None:
    """Refuse a ``latency_missing`` policy that is not one of :data:`LATENCY_POLICIES`,
    naming the argument, the value, the closest policy and both (it named neither the
    argument nor the closest).

    Examples
    --------
    >>> check_latency_missing("zero")
    >>> check_latency_missing("zeros")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: latency_missing: unknown latency-missing policy
    'zeros' (did you mean 'zero'? known: exclude, zero)
    """
    if policy not in LATENCY_POLICIES:
        from ._suggest import require_known

        require_known(
            "latency-missing policy", [policy], LATENCY_POLICIES, location="latency_missing"
        )


#: Multiple-comparison corrections a user may declare (there is no default).
CORRECTIONS = ("none", "bonferroni", "holm", "benjamini_hochberg")

#: The ``--correction`` choices of every command that takes one (click lists them in
#: ``--help`` and refuses anything else by option name).
Correction = StrEnum("Correction", {name: name for name in CORRECTIONS})  # type: ignore[misc]

#: What each correction controls, in words shown next to every result.
CORRECTION_CONTROLS = {
    "none": "nothing: p-values are uncorrected, deliberately",
    "bonferroni": "the chance of any false positive across the family (family-wise error rate)",
    "holm": "the chance of any false positive across the family (family-wise error rate), "
    "less conservatively than Bonferroni",
    "benjamini_hochberg": "the expected share of false positives among the significant "
    "findings (false discovery rate)",
}


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
            "sign-flip randomisation",
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


#: Procedures for a paired comparison (interval + test), the default first.
PAIRED_METHODS = method_names()
