"""Recorded replay in several processes: the same tables and errors as in one.

The checks run in a fresh interpreter (``isolated``): replay only forks in a process
without other Python threads, which earlier tests do not leave.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from agenticlens_frames import load_experiment
from agenticlens_frames.errors import InputError

from ..conftest import counting_forks

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux")


def _load(folder: Path, workers: str) -> tuple[object, int]:
    """Load with ``workers`` processes; also say how many were forked."""
    return counting_forks(workers, load_experiment, folder / "manifest.yaml", folder / "suite.yaml")


def _tables(folder: Path, workers: str) -> tuple[dict[str, pd.DataFrame], int]:
    run, forks = _load(folder, workers)
    return run.tables, forks


def test_split_replay_builds_the_same_tables(make_synthetic, isolated) -> None:
    folder = make_synthetic(cases=40, seed=3, shape="mixed")
    one, no_forks = isolated(_tables, folder, "1")
    split, forks = isolated(_tables, folder, "3")
    assert (no_forks, forks) == (0, 2)
    for name, table in one.items():
        pd.testing.assert_frame_equal(split[name], table, obj=name)


def _error(folder: Path, workers: str) -> tuple[str, int]:
    error, forks = _load(folder, workers)
    assert isinstance(error, InputError), error
    return str(error), forks


def test_split_replay_raises_the_error_of_the_first_bad_file(
    make_synthetic, isolated, tmp_path
) -> None:
    source = make_synthetic(cases=10, seed=5)
    folder = tmp_path / "exp"
    (folder / "trials").mkdir(parents=True)
    for name in ("manifest.yaml", "suite.yaml"):
        (folder / name).write_text((source / name).read_text())
    for path in (source / "trials").iterdir():
        data = json.loads(path.read_text())
        if path.stem in ("v01", "v03"):  # both in the worker process with 2 workers
            data["trials"][1]["samples"][0]["case_id"] = f"no-such-case-{path.stem}"
            data["trials"][2]["samples"][4]["output"] = 7
        (folder / "trials" / path.name).write_text(json.dumps(data))
    one, no_forks = isolated(_error, folder, "1")
    split, forks = isolated(_error, folder, "2")
    assert (no_forks, forks) == (0, 1)
    assert one == split
    # Both of the first bad file's problems, listed from the worker's error too.
    lines = one.splitlines()
    assert lines[0].endswith("v01.json: 2 problems:"), one
    assert "v01.json: trials[1].samples[0].case_id" in lines[1] and "'no-such-case-v01'" in one
    assert "v01.json: trials[2].samples[4].output: expected a string, got 7" in lines[2]
    assert "v03" not in one


def test_recorded_trials_overlap_judge_calls_and_keep_the_tables(tmp_path):
    """Cases of one recorded trial are judged on a pool: two first calls must meet at a
    barrier (a condition, not a clock), and the tables equal a one-at-a-time replay."""
    import shutil
    import threading

    import pandas as pd
    import yaml

    from agenticlens_frames import load_experiment
    from agenticlens_frames.evaluators import EvaluatorRegistry

    from ..conftest import EXAMPLE

    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    for case in suite["cases"]:
        case["evaluators"] = [{"name": "j", "threshold": 0.5}]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    first_two = [c["id"] for c in suite["cases"][:2]]
    barrier = threading.Barrier(2, timeout=30)
    waited: set[str] = set()
    lock = threading.Lock()

    def judge(output, case, trace, config):  # type: ignore[no-untyped-def]
        with lock:
            first = case.id in first_two and case.id not in waited
            waited.add(case.id)
        if first:
            barrier.wait()
        return {"value": (len(output) % 7) / 6, "metadata": {"judge_latency_ms": 1.0}}

    def registry(concurrency: int) -> EvaluatorRegistry:
        reg = EvaluatorRegistry()
        reg.register_judge("j", judge)
        reg.judge_concurrency = concurrency
        return reg

    pooled = load_experiment(
        folder / "manifest.yaml", folder / "suite.yaml", evaluators=registry(4)
    )
    statuses = pooled.checks.loc[pooled.checks["evaluator"] == "j", "metadata"]
    assert statuses.str.contains('"judge_status": "ok"').all()
    waited.update(first_two)  # no barrier for the serial replay
    serial = load_experiment(
        folder / "manifest.yaml", folder / "suite.yaml", evaluators=registry(1)
    )
    pd.testing.assert_frame_equal(pooled.checks, serial.checks)
    pd.testing.assert_frame_equal(pooled.attempts, serial.attempts)


def _sample_by_sample(folder: Path) -> dict[str, pd.DataFrame]:
    """The tables the way replay built them before trials were read as columns: every
    file loaded whole (``load_recorded``, a ``Trace`` per sample) and every sample scored
    on its own by ``score_sample`` (no plan)."""
    from agenticlens_frames.formats import load_manifest, load_recorded, load_suite
    from agenticlens_frames.frames import TableBuilder
    from agenticlens_frames.runner.order import execution_order
    from agenticlens_frames.runner.recorded import replay_trial

    manifest = load_manifest(folder / "manifest.yaml")
    suite = load_suite(folder / "suite.yaml")
    builder = TableBuilder(manifest, suite)
    files = {v.id: load_recorded(v.resolved_target, suite) for v in manifest.variants}
    order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
    for position, (variant_id, trial) in enumerate(order):
        replay_trial(builder, suite, variant_id, trial, position, files[variant_id])
    return builder.build({}).tables


def test_column_replay_equals_sample_by_sample(make_synthetic, tmp_path) -> None:
    import shutil

    folder = tmp_path / "experiment"
    shutil.copytree(make_synthetic(cases=30, seed=11, shape="mixed", missing_samples=9), folder)
    # Unicode outputs and trace ids in both shapes, and a variant that recorded fewer
    # trials than the manifest asks for (its last trials fail).
    for name in ("v00.json", "v01.json"):
        path = folder / "trials" / name
        document = json.loads(path.read_text(encoding="utf-8"))
        for trial in document["trials"]:
            sample = trial["samples"][0]
            sample["output"] = "Straße 🙂 " + sample["output"]
            sample["trace"]["trace_id"] = "ид-" + sample["trace"].get("trace_id", "")
        if name == "v01.json":
            del document["trials"][3:]
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    ours = load_experiment(folder / "manifest.yaml", folder / "suite.yaml").tables
    reference = _sample_by_sample(folder)
    statuses = set(ours["attempts"]["status"])
    assert {"ok", "missing_sample", "trial_failed"} <= statuses
    assert set(ours["attempts"]["trace_shape"].dropna()) == {"eval", "run"}
    for name, table in reference.items():
        pd.testing.assert_frame_equal(ours[name], table, obj=name)
