"""Where rows sit in an archive slice's dense (run, variant position) slots.

Shared by the result frames (:mod:`.results`) and the paired comparisons (:mod:`.paired`):
each (run, variant) of a slice is one slot, numbered run by run in the layout's order, so
per-variant sums are ``bincount``s and per-variant lookups are array indexing.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .sufficient import RunLayout, SufficientStats

__all__ = ["CaseSlots", "case_slots", "failed_per_case", "info_slots", "slot_of", "slots"]


def slots(layout: RunLayout) -> tuple[np.ndarray, int]:
    """Offset of each run's first variant in the dense (run, variant position) space."""
    sizes = [len(v) for v in layout.variant_ids]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return offsets, int(offsets[-1])


def info_slots(layout: RunLayout, info: pd.DataFrame, offsets: np.ndarray) -> np.ndarray:
    """The (run, variant position) slot of each row of a variant-info frame."""
    if not len(info):
        return np.zeros(0, np.int64)
    run_index = {r: i for i, r in enumerate(layout.run_ids)}
    runs = offsets[[run_index[r] for r in info["run_id"].astype(str)]]
    return runs + info["variant_position"].to_numpy(np.int64)


def slot_of(frame: pd.DataFrame, offsets: np.ndarray) -> np.ndarray:
    """The slot of each row of a keyed frame (``run_id`` categorical, ``variant_position``)."""
    # Gathered by the small run codes as they are, the positions added in place: no
    # int64 copy of either (80 MB of new pages each at 10M cases).
    slot = offsets[frame["run_id"].cat.codes.to_numpy()]
    slot += frame["variant_position"].to_numpy()
    return slot


class CaseSlots(NamedTuple):
    """Where a variant-info frame's rows and the case rows sit in the (run, variant)
    slots, and each case row's failed attempts (:func:`failed_per_case`)."""

    offsets: np.ndarray
    info: pd.DataFrame
    info_slot: np.ndarray
    slot: np.ndarray
    failed: np.ndarray


def case_slots(st: SufficientStats, variant_info: pd.DataFrame) -> CaseSlots:
    """:class:`CaseSlots` of a slice's statistics and its kept variants.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> sl = example_archive().all()
    >>> where = case_slots(sl.stats("numpy"), sl.variant_info())
    >>> where.info_slot.tolist()
    [0, 1, 2, 3, 4]
    >>> np.bincount(where.slot, weights=where.failed).tolist()  # retrieval-dense: a failed trial
    [0.0, 0.0, 0.0, 14.0, 0.0]
    """
    offsets, _ = slots(st.layout)
    info = variant_info.reset_index(drop=True)
    return CaseSlots(
        offsets,
        info,
        info_slots(st.layout, info, offsets),
        slot_of(st.cases, offsets),
        failed_per_case(st),
    )


def failed_per_case(st: SufficientStats) -> np.ndarray:
    """Per case row of ``st``: how many of its attempts have status ``trial_failed``.

    Those attempts were never evaluated (the trial failed: an infrastructure failure,
    not the agent's), wherever they sit — a trial that failed as a whole or in part, in
    a run with every attempt row or with some missing — so the case-level pass rates
    leave them out, as the single-run analysis does.
    """
    return st.cases["failed_attempts"].to_numpy(np.int64)
