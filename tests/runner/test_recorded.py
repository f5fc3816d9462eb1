"""Recorded replay in several processes: the same tables and errors as in one."""

from __future__ import annotations

import json
import sys
import threading

import pandas as pd
import pytest

from agenticlens_frames import _fork, load_experiment
from agenticlens_frames.errors import InputError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")


@pytest.fixture
def forks(monkeypatch) -> list[int]:
    """Counts the worker processes forked, so a test knows the split really happened."""
    assert threading.active_count() == 1, threading.enumerate()
    made: list[int] = []
    original = _fork._fork_child

    def counting(*args, **kwargs):
        made.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_fork, "_fork_child", counting)
    return made


def test_split_replay_builds_the_same_tables(make_synthetic, monkeypatch, forks) -> None:
    folder = make_synthetic(cases=40, seed=3, shape="mixed")
    args = (folder / "manifest.yaml", folder / "suite.yaml")
    monkeypatch.setenv(_fork.WORKERS_ENV, "1")
    one = load_experiment(*args)
    assert not forks
    monkeypatch.setenv(_fork.WORKERS_ENV, "3")
    split = load_experiment(*args)
    assert len(forks) == 2
    for name, table in one.tables.items():
        pd.testing.assert_frame_equal(split.tables[name], table, obj=name)


def test_split_replay_raises_the_error_of_the_first_bad_file(
    make_synthetic, monkeypatch, forks, tmp_path
) -> None:
    source = make_synthetic(cases=10, seed=5)
    folder = tmp_path / "exp"
    (folder / "trials").mkdir(parents=True)
    for name in ("manifest.yaml", "suite.yaml"):
        (folder / name).write_text((source / name).read_text())
    for path in (source / "trials").iterdir():
        data = json.loads(path.read_text())
        if path.stem in ("v01", "v03"):  # both in worker processes with 2 workers
            data["trials"][1]["samples"][0]["case_id"] = f"no-such-case-{path.stem}"
        (folder / "trials" / path.name).write_text(json.dumps(data))
    args = (folder / "manifest.yaml", folder / "suite.yaml")
    messages = []
    for workers in ("1", "2"):
        monkeypatch.setenv(_fork.WORKERS_ENV, workers)
        with pytest.raises(InputError) as caught:
            load_experiment(*args)
        messages.append(str(caught.value))
    assert len(forks) == 1
    assert messages[0] == messages[1]
    assert "v01.json: trials[1].samples[0].case_id" in messages[0]
    assert "'no-such-case-v01'" in messages[0]
