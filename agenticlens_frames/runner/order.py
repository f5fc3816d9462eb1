"""The (variant, trial) execution order, identical to AgenticLens 0.10 (spec §9.8)."""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["execution_order"]


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
