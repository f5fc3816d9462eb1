"""The (variant, trial) execution order, identical to AgenticLens 0.10 (spec §9.8), and
which cases of a failed trial are past its failure (:class:`FailedTrials`)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from .._deprecate import keyword_hints

__all__ = ["FailedTrials", "execution_order"]


@keyword_hints
def execution_order(
    variant_ids: Sequence[str], trial_count: int, random_seed: int | None
) -> list[tuple[str, int]]:
    """Work items in run order: variant-major, trials 1..T, shuffled when seeded.

    The package shuffles its work list in place with ``random.Random(seed).shuffle``; we
    are CPython too, so the same call gives the same Mersenne Twister order.

    Examples
    --------
    >>> order = execution_order(["A", "B", "C"], 3, 7)
    >>> ", ".join(f"{v}#{t}" for v, t in order)
    'A#2, C#1, C#2, B#2, A#1, C#3, B#1, A#3, B#3'
    >>> execution_order(["A", "B", "C"], 1, None)
    [('A', 1), ('B', 1), ('C', 1)]
    """
    items = [(v, t) for v in variant_ids for t in range(1, trial_count + 1)]
    if random_seed is not None:
        random.Random(random_seed).shuffle(items)
    return items


class FailedTrials:
    """Where each trial an invalid payload failed failed, and which of its cases are past it.

    The one rule for a failed trial (``invalid_payload="trial"``), used by the scheduler
    (what it still calls), the ledger (what a resumed run still calls, the failing case's
    error) and early stopping's sequence (which attempts are data): a trial fails at its
    first invalid payload in the run's **planned order** of the cases, and its cases after
    that one in that order are past the failure — not called if not started yet, and not
    data if they were (started before the failure was known). The planned order is the
    suite's (AgenticLens' rule: its later cases are not called) or, with early stopping,
    the seeded order the cases run in (:attr:`.StopMonitor.rank`). Defined in the suite's
    order under early stopping, which cases of a failed trial ran (and so what the
    sequence saw) depended on which attempt finished first, and on a crash.

    Parameters
    ----------
    position
        Case id → planned position.

    Examples
    --------
    >>> failed = FailedTrials({"a": 0, "b": 1, "c": 2})
    >>> failed.fail("v", 1, "c"); failed.fail("v", 1, "b"); failed.fail("v", 1, "c")
    >>> failed.failed_at("v", 1), [failed.past("v", 1, c) for c in "abc"]
    ('b', [False, False, True])
    >>> failed.past("v", 2, "c"), ("v", 1) in failed
    (False, True)
    """

    def __init__(self, position: Mapping[str, int]) -> None:
        self.position = position
        #: (variant, trial) → the case it failed at: its first invalid payload, planned order.
        self.first: dict[tuple[str, int], str] = {}

    def fail(self, variant: str, trial: int, case_id: str) -> None:
        """An invalid payload of ``(variant, trial)`` on ``case_id``."""
        key = (variant, trial)
        first = self.first.get(key)
        if first is None or self.position[case_id] < self.position[first]:
            self.first[key] = case_id

    def failed_at(self, variant: str, trial: int) -> str | None:
        """The case the trial failed at (None: it has not failed)."""
        return self.first.get((variant, trial))

    def past(self, variant: str, trial: int, case_id: str) -> bool:
        """Whether the trial failed at a case planned before ``case_id``."""
        first = self.first.get((variant, trial))
        return first is not None and self.position[case_id] > self.position[first]

    def __contains__(self, key: object) -> bool:
        return key in self.first

    def copy(self) -> FailedTrials:
        """A copy with its own failures (the same planned order)."""
        other = FailedTrials(self.position)
        other.first = dict(self.first)
        return other
