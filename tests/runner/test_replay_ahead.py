"""The replay done ahead: `experiment run`'s suite-reading process replays a worker's
share of the recorded variants while the run imports its modules (runner/recorded.py
``replay_ahead``); the run takes those tables only when they are for its own inputs.

Each check runs `experiment run` in a fresh interpreter (``isolated``): forking needs a
process without other Python threads. Replays are logged to a file with the pid that did
them, so a check sees which process replayed which variant.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from agenticlens_frames._files import file_key

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

OUTPUTS = ("r.json", "v.csv", "c.csv")


def _run(
    folder: str, out: str, workers: str, change: str | None = None
) -> tuple[int, str, dict[str, bool]]:
    """`experiment run` in this (fresh) interpreter with ``workers`` processes: its exit
    code, its output, and for each replayed variant whether this process replayed it.

    ``change`` names a trial file to rewrite once the ahead process has sent its tables
    and before the run checks them (same size, same modification time: another output).
    """
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app
    from agenticlens_frames.runner import recorded

    os.environ["AGENTICLENS_FRAMES_WORKERS"] = workers
    os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
    log = Path(out) / "replays.txt"
    real = recorded._replay_streamed

    def logged(builder, suite, variant, *args):
        real(builder, suite, variant, *args)
        with log.open("a") as handle:
            handle.write(f"{os.getpid()} {variant.id}\n")

    recorded._replay_streamed = logged
    if change is not None:
        real_for = recorded._ahead_for

        def ahead_for(*args):
            ahead = real_for(*args)
            assert ahead is not None, "the ahead replay was not taken"
            result = ahead.result

            def then_change():
                done = result()  # (the ahead process has read every file of its share)
                _rewrite_same_size(Path(change))
                return done

            ahead.result = then_change
            return ahead

        recorded._ahead_for = ahead_for
    args = ["experiment", "run", "-q", f"{folder}/manifest.yaml", f"{folder}/suite.yaml"]
    args += ["--save", f"{out}/r.json", "--csv", f"{out}/v.csv", "--cases-csv", f"{out}/c.csv"]
    result = CliRunner().invoke(app, args)
    lines = log.read_text().split("\n") if log.exists() else []
    here = {v: int(pid) == os.getpid() for pid, v in (line.split() for line in lines if line)}
    return result.exit_code, result.output, here


def _rewrite_same_size(path: Path) -> None:
    """The first sample's output made of other characters (it then fails its checks),
    the same byte count and modification time."""
    before = path.stat()
    data = path.read_text()
    start = re.search(r'"output":\s*"', data).end()  # type: ignore[union-attr]
    end = data.index('"', start)
    data = data[:start] + "#" * (end - start) + data[end:]
    path.write_text(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def _claimed(folder: str, workers: str) -> tuple[str, ...]:
    """The variants the ahead process takes for ``folder`` (as `experiment run` does)."""
    from agenticlens_frames.formats import load_suite
    from agenticlens_frames.runner.replay_plan import claim_ahead

    os.environ["AGENTICLENS_FRAMES_WORKERS"] = workers
    claim = claim_ahead(Path(folder) / "manifest.yaml", load_suite(Path(folder) / "suite.yaml"))
    return () if claim is None else claim.variant_ids


def _copy(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder)
    return folder


def _outputs(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def test_the_ahead_share_is_taken_and_the_outputs_are_a_one_process_run(
    make_synthetic, isolated, tmp_path
) -> None:
    folder = _copy(make_synthetic(cases=40, seed=11, shape="mixed"), tmp_path / "exp")
    claimed = isolated(_claimed, str(folder), "2")
    assert len(claimed) == 2
    runs = {}
    for workers in ("2", "1"):
        out = tmp_path / f"out{workers}"
        out.mkdir()
        runs[workers] = isolated(_run, str(folder), str(out), workers)
    (code2, output2, here2), (code1, output1, here1) = runs["2"], runs["1"]
    assert (code2, code1) == (0, 0), output2 + output1
    assert here1 == dict.fromkeys(["v00", "v01", "v02", "v03"], True)
    # The claimed share was replayed by another process, the rest by the run itself.
    assert here2 == {v: v not in claimed for v in ("v00", "v01", "v02", "v03")}
    assert _outputs(tmp_path / "out2") == _outputs(tmp_path / "out1")


def test_a_trial_file_changed_after_the_ahead_read_is_replayed_again(
    make_synthetic, isolated, tmp_path
) -> None:
    source = make_synthetic(cases=40, seed=12, shape="mixed")
    folder = _copy(source, tmp_path / "exp")
    claimed = isolated(_claimed, str(folder), "2")
    changed = folder / "trials" / f"{claimed[0]}.json"
    out = tmp_path / "out2"
    out.mkdir()
    code, output, here = isolated(_run, str(folder), str(out), "2", str(changed))
    assert code == 0, output
    # The changed file's variant was replayed here; the other claimed one was taken.
    assert here[claimed[0]] is True and here[claimed[1]] is False
    # The outputs are those of the changed file, read in one process ...
    out1 = tmp_path / "out1"
    out1.mkdir()
    code1, output1, _ = isolated(_run, str(folder), str(out1), "1")
    assert code1 == 0, output1
    assert _outputs(out) == _outputs(out1)
    # ... which are not those of the file the ahead process read.
    before = tmp_path / "before"
    before.mkdir()
    original = _copy(source, tmp_path / "original")
    isolated(_run, str(original), str(before), "1")
    assert _outputs(before)["c.csv"] != _outputs(out1)["c.csv"]  # (a case now fails)


@pytest.mark.parametrize("bad", ["claimed", "both"])
def test_a_bad_trial_file_raises_the_error_of_a_one_process_run(
    make_synthetic, isolated, tmp_path, bad
) -> None:
    folder = _copy(make_synthetic(cases=10, seed=13, shape="mixed"), tmp_path / "exp")
    claimed = isolated(_claimed, str(folder), "2")
    broken = [claimed[-1]]
    if bad == "both":  # and one of the run's own share, first in manifest order
        broken.append(min({"v00", "v01", "v02", "v03"} - set(claimed)))
    for variant in broken:
        path = folder / "trials" / f"{variant}.json"
        data = json.loads(path.read_text())
        data["trials"][1]["samples"][0]["case_id"] = f"no-such-case-{variant}"
        path.write_text(json.dumps(data))
    runs = {}
    for workers in ("2", "1"):
        out = tmp_path / f"out{workers}"
        out.mkdir()
        runs[workers] = isolated(_run, str(folder), str(out), workers)[:2]
    assert runs["2"] == runs["1"]
    code, output = runs["1"]
    assert code == 1
    first = min(broken)
    assert f"{first}.json" in output and f"no-such-case-{first}" in output


def test_the_file_key_sees_a_same_size_rewrite_that_keeps_the_modification_time(
    tmp_path,
) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"trials": [{"samples": [{"output": "abc"}]}]}')
    key = file_key(path)
    assert key is not None and key[-1]  # just written: compared by content too
    assert file_key(path, content=True) == key  # nothing changed
    _rewrite_same_size(path)
    assert file_key(path, content=True) != key
    assert file_key(tmp_path / "missing.json") is None


def test_an_old_file_is_keyed_by_its_status_without_reading_it(tmp_path, monkeypatch) -> None:
    from agenticlens_frames import _files

    path = tmp_path / "t.json"
    path.write_text("{}")
    monkeypatch.setattr(_files, "RECENT_CHANGE_NS", 0)  # as if changed long before
    key = file_key(path)
    assert key is not None and key[-1] == b""
    status = path.stat()
    assert key[:5] == (
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )
