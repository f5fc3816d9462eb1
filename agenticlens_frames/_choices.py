"""Names a user chooses from for the paired statistics, without the statistics' imports.

The command line builds its option choices from these at import time, so they live
apart from :mod:`agenticlens_frames.stats_paired` (numpy, pandas, scipy), which
re-exports them.

Examples
--------
>>> from agenticlens_frames.stats_paired import CORRECTIONS as exported
>>> exported is CORRECTIONS, "holm" in CORRECTIONS
(True, True)
"""

from __future__ import annotations

__all__ = ["CORRECTIONS", "CORRECTION_CONTROLS", "PAIRED_METHODS"]

#: Multiple-comparison corrections a user may declare (there is no default).
CORRECTIONS = ("none", "bonferroni", "holm", "benjamini_hochberg")

#: What each correction controls, in words shown next to every result.
CORRECTION_CONTROLS = {
    "none": "nothing: p-values are uncorrected, deliberately",
    "bonferroni": "the chance of any false positive across the family (family-wise error rate)",
    "holm": "the chance of any false positive across the family (family-wise error rate), "
    "less conservatively than Bonferroni",
    "benjamini_hochberg": "the expected share of false positives among the significant "
    "findings (false discovery rate)",
}

#: Procedures for a paired comparison: interval + test.
PAIRED_METHODS = ("t", "bootstrap", "permutation", "wilcoxon", "mcnemar")
