"""Resource limits: replaying recorded files holds one variant's file at a time.

Peak memory is measured with tracemalloc (allocations, not wall-clock): three times as
many recorded variants of the same size must not come near three times the peak, because
each file is parsed, scored and released before the next is read.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from agenticlens_frames import load_experiment


def _peak_bytes(folder: Path) -> int:
    tracemalloc.start()
    try:
        load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_replay_memory_grows_with_one_file_not_the_experiment(make_synthetic):
    small = make_synthetic(variants=3, trials=5, cases=150, seed=3)
    large = make_synthetic(variants=9, trials=5, cases=150, seed=3)
    files = sorted((large / "trials").iterdir())
    assert len(files) == 9
    peak_small, peak_large = _peak_bytes(small), _peak_bytes(large)
    # Measured: x1.3 for x3 the data. Everything held at once would be about x3.
    assert peak_large < 2.0 * peak_small, (peak_small, peak_large)
