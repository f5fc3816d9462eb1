"""Code that runs in child processes (importable under the ``spawn`` start method)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agenticlens_frames.archive import Archive
from agenticlens_frames.frames import read_parquet


def add_runs(archive: str, folders: list[str], barrier: Any, results: Any) -> None:
    """Wait for the other writer, then add each saved run; report (run_id, added)."""
    runs = [read_parquet(folder) for folder in folders]
    barrier.wait(timeout=600)
    store = Archive(archive)
    for folder, run in zip(folders, runs, strict=True):
        result = store.add(run, run_at="2026-10-01")
        results.put((Path(folder).name, result.run_id, result.added))


def crash_while_adding(archive: str, folder: str, when: str) -> None:
    """Start adding a run, then die abruptly (no cleanup, no exception handlers)."""
    import pyarrow.parquet as pq

    from agenticlens_frames.archive import store

    run = read_parquet(folder)
    if when == "mid_write":
        real_write = pq.write_table
        written = []

        def write_then_die(*args: Any, **kwargs: Any) -> None:
            real_write(*args, **kwargs)
            written.append(1)
            if len(written) == 2:
                os._exit(17)

        store.pq.write_table = write_then_die  # type: ignore[attr-defined]
    else:  # everything written, killed just before the publishing rename

        def die(*_: Any) -> None:
            os._exit(17)

        store.os.rename = die  # type: ignore[attr-defined]
    Archive(archive).add(run, run_at="2026-10-01")
    os._exit(0)  # not reached
