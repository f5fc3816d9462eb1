"""The recorded replay's plan (runner/replay_plan.py): each trial's position, the trials
of each variant, how many processes replay them, and how the variants are dealt out."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from agenticlens_frames.formats import load_manifest, load_suite
from agenticlens_frames.runner import replay_plan
from agenticlens_frames.runner.replay_plan import deal, replay_shape

from ..conftest import EXAMPLE


def test_replay_shape_lists_each_variants_trials_and_sizes_the_job(monkeypatch) -> None:
    manifest = load_manifest(EXAMPLE / "manifest.yaml")
    suite = load_suite(EXAMPLE / "suite.yaml")
    asked: list[tuple[int, int]] = []

    def worker_count(tasks: int, *, size: int) -> int:
        asked.append((tasks, size))
        return 3

    monkeypatch.setattr(replay_plan, "worker_count", worker_count)
    order = [("baseline", 3), ("model-large", 1), ("baseline", 1)]
    positions, variants, trials, workers = replay_shape(manifest, suite, order)
    assert positions == {("baseline", 3): 0, ("model-large", 1): 1, ("baseline", 1): 2}
    assert tuple(v.id for v in variants) == manifest.variant_ids  # every variant is recorded
    assert trials["baseline"] == [1, 3] and trials["model-large"] == [1]
    assert all(trials[v] == [] for v in manifest.variant_ids[2:])
    # The job's size is in attempts: 3 trials of every case.
    assert asked == [(len(manifest.variant_ids), 3 * len(suite.cases))] and workers == 3
    # A journaled replay (a live run's folder, with judges) has one writer: no fork.
    assert replay_shape(manifest, suite, order, forking=False)[3] == 1


def _variants(tmp_path: Path, sizes: dict[str, int]) -> list[SimpleNamespace]:
    out = []
    for name, size in sizes.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(b"x" * size)
        out.append(SimpleNamespace(id=name, resolved_target=str(path)))
    return out


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        # Largest first, each to the lighter process with room (process 0 takes 3 of 5,
        # process 1 takes 2; ties go to the lower process):
        # A->0 [100,0], B->1 [100,90], C->1 [100,140], D->0 [140,140], E->0 (tie).
        # Shares 0: A D E, 1: B C reversed to C B; task i is share[i % 2][i // 2].
        ({"A": 100, "B": 90, "C": 50, "D": 40, "E": 10}, "ACDBE"),
        # A->0 [100,0], B->1, C->1 [100,20], D and E -> 0 (process 1 is full).
        ({"B": 10, "A": 100, "C": 10, "D": 10, "E": 10}, "ACDBE"),
        # Three processes: counts 2, 2, 1. A->0 [50,0,0], B->1 [50,40,0], C->2 [50,40,30]
        # (full), D->1 [50,60,30], E->0 [70,60,30]. Shares 0: A E, 1: B D -> D B, 2: C.
        ({"A": 50, "B": 40, "C": 30, "D": 20, "E": 20}, "ADCEB"),
    ],
)
def test_deal_balances_bytes_and_orders_each_share(tmp_path, sizes, expected) -> None:
    variants = _variants(tmp_path, sizes)
    workers = 3 if expected == "ADCEB" else 2
    assert "".join(v.id for v in deal(variants, workers)) == expected  # type: ignore[arg-type]
