"""Resource limits: replaying recorded files holds one variant's file at a time.

Peak memory is measured with tracemalloc (allocations, not wall-clock): three times as
many recorded variants of the same size must not come near three times the peak, because
each file is parsed, scored and released before the next is read.
"""

from __future__ import annotations

import re
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


def test_the_reliability_page_gives_each_limit_its_default() -> None:
    """docs/reliability.md's limits table names each variable with the default the code uses."""
    from agenticlens_frames import _limits, _supervise

    page = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text("utf-8")
    rows = {
        env: row
        for row in page.split("### Limits", 1)[1].split("\n\nAlso", 1)[0].splitlines()
        for env in re.findall(r"`(AGENTICLENS_FRAMES_\w+)`", row)
    }
    expected = {
        _limits.MAX_INPUT_BYTES_ENV: f"{_limits.limit(_limits.MAX_INPUT_BYTES_ENV) / 2**30:g} GiB",
        _limits.MAX_YAML_NODES_ENV: f"{_limits.limit(_limits.MAX_YAML_NODES_ENV):,.0f}",
        _limits.REGEX_TIMEOUT_ENV: f"{_limits.limit(_limits.REGEX_TIMEOUT_ENV):g} s",
        _limits.MAX_TRIALS_ENV: f"{_limits.limit(_limits.MAX_TRIALS_ENV):,.0f}",
        _supervise.MAX_RESTARTS_ENV: "20",
    }
    assert set(rows) == set(expected)
    for env, default in expected.items():
        assert f"| {default.replace(',', ' ')} |" in rows[env], (env, default)
