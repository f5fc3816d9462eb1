"""The sufficient statistics' containers: their display."""

from __future__ import annotations

from agenticlens_frames.archive import Archive, RunLayout


def test_a_layout_is_counted_not_listed(shared_archive: Archive) -> None:
    """The dataclass display listed every run id and each run's variant ids: thousands for
    a large slice. The counts, from the catalog here."""
    records = shared_archive.records()
    stats = shared_archive.all().stats("numpy")
    assert repr(stats.layout) == (
        f"RunLayout(runs={len(records)}, "
        f"experiments={len({r.experiment_id for r in records})}, "
        f"variants={sum(len(r.variants) for r in records)})"
    )
    wide = RunLayout(
        tuple(f"r{i}" for i in range(2000)),
        ("e@1",) * 2000,
        tuple((f"a{i}", f"b{i}") for i in range(2000)),
    )
    assert repr(wide) == "RunLayout(runs=2000, experiments=1, variants=4000)"
    empty = Archive(shared_archive.path).slice(experiments="nothing-*").stats("numpy")
    assert repr(empty) == "SufficientStats(engine='numpy', runs=0, case_rows=0, trial_rows=0)"
    assert repr(empty.layout) == "RunLayout(runs=0, experiments=0, variants=0)"
