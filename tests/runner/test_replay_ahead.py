"""The replay done ahead: `experiment run`'s suite-reading process replays recorded
variants while the run imports its modules (runner/recorded.py ``replay_ahead``), the two
taking variants from one claim pool; the run takes that process's tables only when they
are for its own inputs.

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
from types import SimpleNamespace

import pytest

from agenticlens_frames._files import file_key

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")

OUTPUTS = ("r.json", "v.csv", "c.csv")


def _run(
    folder: str, out: str, workers: str, change: bool = False
) -> tuple[int, str, list[tuple[bool, str]]]:
    """`experiment run` in this (fresh) interpreter with ``workers`` processes: its exit
    code, its output, and each replay done, in order: (whether this process did it, the
    variant).

    With ``change``, the trial file of the first variant the ahead process sent back is
    rewritten once that process has sent its tables and before the run checks them (same
    size, same modification time: another output); its id goes to ``out/changed.txt``.
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
    if change:
        real_for = recorded._ahead_for

        def ahead_for(*args):
            ahead = real_for(*args)
            assert ahead is not None, "the ahead replay was not taken"
            result = ahead.result

            def then_change():
                done = result()  # (the ahead process has read every file it took)
                assert done, "the ahead process replayed nothing"
                variant = sorted(done)[0]
                _rewrite_same_size(Path(folder) / "trials" / f"{variant}.json")
                (Path(out) / "changed.txt").write_text(variant)
                return done

            ahead.result = then_change
            return ahead

        recorded._ahead_for = ahead_for
    args = ["experiment", "run", "-q", f"{folder}/manifest.yaml", f"{folder}/suite.yaml"]
    args += ["--save", f"{out}/r.json", "--csv", f"{out}/v.csv", "--cases-csv", f"{out}/c.csv"]
    result = CliRunner().invoke(app, args)
    lines = log.read_text().split("\n") if log.exists() else []
    done = [(int(pid) == os.getpid(), v) for pid, v in (line.split() for line in lines if line)]
    return result.exit_code, result.output, done


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
    """The variants the ahead process shares with the run for ``folder`` (as `experiment
    run` does), in the order of their claim pool."""
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


VARIANTS = ("v00", "v01", "v02", "v03")


def test_the_pooled_replay_is_done_once_and_the_outputs_are_a_one_process_run(
    make_synthetic, isolated, tmp_path
) -> None:
    folder = _copy(make_synthetic(cases=40, seed=11, shape="mixed"), tmp_path / "exp")
    assert sorted(isolated(_claimed, str(folder), "2")) == list(VARIANTS)  # all pooled
    runs = {}
    for workers in ("2", "1"):
        out = tmp_path / f"out{workers}"
        out.mkdir()
        runs[workers] = isolated(_run, str(folder), str(out), workers)
    (code2, output2, done2), (code1, output1, done1) = runs["2"], runs["1"]
    assert (code2, code1) == (0, 0), output2 + output1
    assert sorted(done1) == [(True, v) for v in VARIANTS]
    # Every variant replayed exactly once, by one process or the other (whichever was
    # free when it was next in the pool); the ahead process starts first, so some are its.
    assert sorted(v for _, v in done2) == list(VARIANTS)
    assert any(not here for here, _ in done2)
    assert _outputs(tmp_path / "out2") == _outputs(tmp_path / "out1")


def test_a_trial_file_changed_after_the_ahead_read_is_replayed_again(
    make_synthetic, isolated, tmp_path
) -> None:
    source = make_synthetic(cases=40, seed=12, shape="mixed")
    folder = _copy(source, tmp_path / "exp")
    out = tmp_path / "out2"
    out.mkdir()
    code, output, done = isolated(_run, str(folder), str(out), "2", True)
    assert code == 0, output
    changed = (out / "changed.txt").read_text()
    # The changed file's variant was read by the ahead process, then again here; every
    # other variant once.
    assert (False, changed) in done and (True, changed) in done
    assert sorted(v for _, v in done) == sorted([*VARIANTS, changed])
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


@pytest.mark.parametrize("broken", [["v03"], ["v01", "v03"], ["v00"]])
def test_a_bad_trial_file_raises_the_error_of_a_one_process_run(
    make_synthetic, isolated, tmp_path, broken
) -> None:
    folder = _copy(make_synthetic(cases=10, seed=13, shape="mixed"), tmp_path / "exp")
    for variant in broken:  # (whichever process takes it)
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


def _fake_variant(name: str, path: Path) -> SimpleNamespace:
    return SimpleNamespace(id=name, resolved_target=str(path))


def test_the_run_does_its_idle_work_after_its_first_pooled_variant(tmp_path) -> None:
    from agenticlens_frames._fork import ClaimPool, idle_work
    from agenticlens_frames.runner import recorded

    paths = {}
    for name in VARIANTS:
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(name)
    variants = [_fake_variant(name, paths[name]) for name in VARIANTS]
    pool = ClaimPool()
    pool.fill(2)  # the run claims v03 and v00; the ahead process took v01 and v02
    claim = SimpleNamespace(variant_ids=("v03", "v00", "v01", "v02"))
    sent = {
        "v01": (file_key(paths["v01"]), ["tables of v01"]),
        "v02": (file_key(paths["v02"]), ["tables of v02"]),
    }
    paths["v02"].write_text("v2")  # changed after the ahead process read it: again here
    events: list[str] = []

    def task(variant):
        events.append(variant.id)
        return [f"replayed {variant.id}"]

    ahead = recorded._Ahead(claim, lambda: sent, pool)
    with idle_work(lambda: events.append("idle work")):
        results = recorded._pooled(ahead, variants, 1, task, os.getpid())
    pool.close()
    assert events == ["v03", "idle work", "v00", "v02"]
    assert results == [["replayed v03"], ["replayed v00"], ["tables of v01"], ["replayed v02"]]


def test_a_failed_ahead_process_leaves_its_variants_to_the_run(tmp_path) -> None:
    from agenticlens_frames._fork import ClaimPool
    from agenticlens_frames.runner import recorded

    variants = [_fake_variant(name, tmp_path / name) for name in VARIANTS]
    pool = ClaimPool()
    pool.fill(4)
    for _ in range(3):  # the ahead process took three, then died
        pool.claim()

    def died():
        raise RuntimeError("a worker process ended before sending its result")

    claim = SimpleNamespace(variant_ids=VARIANTS)
    ahead = recorded._Ahead(claim, died, pool)
    results = recorded._pooled(ahead, variants, 1, lambda v: v.id, os.getpid())
    pool.close()
    assert results == ["v03", "v00", "v01", "v02"]


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
