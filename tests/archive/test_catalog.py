"""Catalog records (``_run.json``): their display."""

from __future__ import annotations

from agenticlens_frames.archive import Archive, RunRecord
from agenticlens_frames.frames import ExperimentRun


def test_a_record_is_one_line_whatever_its_variants(
    shared_archive: Archive, runs: dict[str, ExperimentRun]
) -> None:
    """The dataclass display printed every field: each variant's dict with its factors and
    every file's checksum, 2,500 characters for the five variants of the example and more
    with each variant. One line of what the run holds, counted here from the run."""
    for record in shared_archive.records():
        (name,) = [n for n, r in runs.items() if r.experiment_id == record.experiment_id]
        run = runs[name]
        assert repr(record) == (
            f"RunRecord({record.run_id!r}, experiment={run.experiment_id!r}, "
            f"run_at={record.run_at:%Y-%m-%dT%H:%M:%SZ}, variants={len(run.variants)}, "
            f"cases={len(run.cases)}, trials={run.manifest.trial_count}, "
            f"attempts={len(run.attempts)})"
        )
    many = RunRecord(
        **{
            **{f: getattr(record, f) for f in record.__dataclass_fields__},
            "variants": tuple(
                {**record.variants[0], "variant_id": f"v{i}", "position": i} for i in range(500)
            ),
        }
    )
    assert len(repr(many)) < 200
