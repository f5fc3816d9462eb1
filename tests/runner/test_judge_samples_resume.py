"""Judge samples in the run journal: a run killed (SIGKILL) mid-judging resumes from the
samples it had not journaled, calls the judge only for those and no target again (the
replies being judged were journaled first), and reports exactly what an uninterrupted run
reports; a judge whose version changed never reuses old samples."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from rich.console import Console

from agenticlens_frames import analyze
from agenticlens_frames.judge_noise import judge_totals
from agenticlens_frames.report.console import print_summary
from agenticlens_frames.runner import run_experiment

from .conftest import simple_cases, variant
from .test_crash import _report

pytestmark = pytest.mark.slow

# A deterministic judge whose samples differ: sample k of one (case, output) gets value
# VALUES[(seed + k) % 7], k counted from the calls completed so far (in JUDGE_LOG, shared
# by the killed and the resumed process). JUDGE_BLOCK_AT=n makes call n hang (the test
# kills the process there); "tone" is the judge's version, from JUDGE_TONE_VERSION.
JUDGES = """
import os, time
from agenticlens_frames.evaluators import EvaluatorRegistry

VALUES = (0.1, 0.9, 0.4, 0.75, 0.3, 1.0, 0.55)


def _done():
    try:
        with open(os.environ["JUDGE_LOG"]) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def _call(key):
    done = _done()
    if len(done) + 1 == int(os.environ.get("JUDGE_BLOCK_AT", "0")):
        time.sleep(3600)  # the test kills the process here
    k = done.count(key)
    with open(os.environ["JUDGE_LOG"], "a") as f:
        f.write(key + "\\n")
    return k


def registry():
    reg = EvaluatorRegistry()

    def tone(output, case, trace, config):
        key = f"tone|{case.id}|{output}"
        k = _call(key)
        value = VALUES[(sum(map(ord, key)) + k) % 7]
        return {"value": value, "explanation": f"sample {k}",
                "metadata": {"verdict": "good" if value >= 0.5 else "poor",
                             "judge_cost_usd": 0.001, "judge_cost_source": "measured",
                             "judge_input_tokens": 100, "judge_output_tokens": 10,
                             "judge_latency_ms": 5.0}}

    def brief(output, case, trace, config):
        key = f"brief|{case.id}|{output}"
        _call(key)
        return {"value": 1.0 if len(output) < 60 else 0.5,
                "metadata": {"judge_cost_usd": 0.002, "judge_cost_source": "measured",
                             "judge_input_tokens": 50, "judge_output_tokens": 5,
                             "judge_latency_ms": 2.5}}

    reg.register_judge("tone", tone, version=os.environ.get("JUDGE_TONE_VERSION", "1"),
                       samples=3)
    reg.register_judge("brief", brief, version="1")
    return reg
"""

SCRIPT = """
import sys
sys.path.insert(0, sys.argv[4])
import judges_mod
from agenticlens_frames.runner import run_experiment
run_experiment(sys.argv[1], sys.argv[2], run_dir=sys.argv[3], evaluators=judges_mod.registry(),
               progress=False)
"""

VARIANTS = 3  # a, b and the filler
TRIALS = 2
CASES = 3
ATTEMPTS = VARIANTS * TRIALS * CASES
CALLS_PER_ATTEMPT = 3 + 1  # tone (3 samples), brief (1)
TOTAL_CALLS = ATTEMPTS * CALLS_PER_ATTEMPT
# Five attempts judged, and two of the sixth attempt's three tone samples: call 23 hangs.
BLOCK_AT = 5 * CALLS_PER_ATTEMPT + 3


@pytest.fixture
def judged_experiment(write_experiment, tmp_path, monkeypatch):
    (tmp_path / "judges_mod.py").write_text(JUDGES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("judges_mod", None)
    cases = simple_cases(["parcel 1", "where is parcel 22", "parcel"])
    for case in cases:
        case["evaluators"] = [{"name": "tone", "threshold": 0.5}, {"name": "brief"}]
    # Targets that log each call to $LIVE_CALL_LOG (a file: the run is killed).
    manifest, suite = write_experiment(
        [variant("a", "logged"), variant("b", "logged_async"), variant("c", "logged_plain")],
        cases=cases,
        trial_count=TRIALS,
        random_seed=5,
    )
    yield manifest, suite
    sys.modules.pop("judges_mod", None)


def _records(run_dir: Path, kind: str) -> list[dict]:
    out = []
    for segment in sorted((run_dir / "journal").glob("*.jsonl")):
        *whole, _torn_or_empty = segment.read_bytes().split(b"\n")
        out += [r for line in whole if (r := json.loads(line))["type"] == kind]
    return out


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _kill_mid_judging(
    manifest: Path, suite: Path, run_dir: Path, log: Path, target_log: Path, *, replies: bool
) -> None:
    """Run in a child process until the judge hangs at call BLOCK_AT, then SIGKILL it;
    with ``replies``, not before every attempt's target reply is journaled."""
    env = {
        **os.environ,
        "JUDGE_LOG": str(log),
        "JUDGE_BLOCK_AT": str(BLOCK_AT),
        "LIVE_CALL_LOG": str(target_log),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *map(str, (manifest, suite, run_dir, manifest.parent))],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    # Every completed judge call is journaled before the next one starts (one scoring
    # thread). The targets are not held up by judging: every attempt gets its reply, and
    # with ``replies`` the kill waits until each is journaled (with its call record), so
    # that no target call is in flight when it comes.
    while (
        not (run_dir / "journal").exists()
        or len(_records(run_dir, "judge_sample")) < BLOCK_AT - 1
        or (replies and len(_records(run_dir, "call")) < ATTEMPTS)
    ):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, (
            "the run made no progress, or did not journal the replies being judged"
        )
        time.sleep(0.01)
    process.kill()  # SIGKILL while call BLOCK_AT hangs: no cleanup at all
    process.communicate()


def _expected_tone(run) -> dict[tuple[str, int, str], float]:
    """The tone score of every attempt, from the judge's rule replayed naively in the
    order an uninterrupted one-at-a-time run judges the attempts."""
    import judges_mod

    trials = run.trials.sort_values("execution_position")
    attempts = run.attempts.set_index(["variant_id", "trial", "case_id"])
    seen: dict[str, int] = {}
    expected = {}
    for v, t in zip(trials["variant_id"], trials["trial"], strict=True):
        for c in ["c1", "c2", "c3"]:
            key = f"tone|{c}|{attempts.loc[(v, t, c), 'output']}"
            values = []
            for _ in range(3):
                k = seen.get(key, 0)
                seen[key] = k + 1
                values.append(judges_mod.VALUES[(sum(map(ord, key)) + k) % 7])
            expected[(str(v), int(t), c)] = sum(values) / 3
    return expected


def _summary_text(run) -> list[str]:
    out = io.StringIO()
    print_summary(analyze(run), Console(file=out, width=200))
    return [line for line in out.getvalue().splitlines() if line.startswith("Judges ·")]


def test_killed_mid_judging_resumes_from_the_missing_samples(
    judged_experiment, tmp_path, monkeypatch, capsys
):
    manifest, suite = judged_experiment
    run_dir, log = tmp_path / "run", tmp_path / "calls.log"
    targets = tmp_path / "targets.log"
    _kill_mid_judging(manifest, suite, run_dir, log, targets, replies=True)
    assert _lines(targets) == ATTEMPTS
    # The journal as the previous version wrote it (no ``answered`` records), and the
    # judge's log as at the kill: resumed at the end.
    old, old_log = tmp_path / "old-run", tmp_path / "old-calls.log"
    shutil.copytree(run_dir, old)
    shutil.copy(log, old_log)
    for segment in (old / "journal").glob("*.jsonl"):
        lines = segment.read_bytes().splitlines(keepends=True)
        segment.write_bytes(b"".join(x for x in lines if not x.startswith(b'{"type":"answered"')))

    journaled = _records(run_dir, "judge_sample")
    finished = {(r["variant"], r["trial"], r["case"]) for r in _records(run_dir, "attempt")}
    open_samples = [r for r in journaled if (r["variant"], r["trial"], r["case"]) not in finished]
    assert len(journaled) == BLOCK_AT - 1 == _lines(log)
    # Attempt records are written once scored (in batches): the samples of attempts not
    # yet journaled are the ones a resumed run reuses. Calls are judged in order, so the
    # last attempt had two of its three tone samples.
    assert len(open_samples) == BLOCK_AT - 1 - CALLS_PER_ATTEMPT * len(finished) >= 2
    last = [(r["entry"], r["sample"], r["judge"], r["version"]) for r in open_samples[-2:]]
    assert last == [(0, 0, "tone", "1"), (0, 1, "tone", "1")]
    # Each reply being (or waiting to be) judged is on disk, with the digest its samples
    # refer to.
    answered = {(r["variant"], r["trial"], r["case"]): r for r in _records(run_dir, "answered")}
    assert len(answered) == ATTEMPTS
    for r in open_samples:
        key = (r["variant"], r["trial"], r["case"])
        assert r["payload_sha256"] == answered[key]["payload_sha256"]

    import judges_mod

    monkeypatch.setenv("JUDGE_LOG", str(log))
    monkeypatch.setenv("LIVE_CALL_LOG", str(targets))
    capsys.readouterr()
    resumed = run_experiment(
        manifest, suite, evaluators=judges_mod.registry(), progress=True, run_dir=run_dir
    )
    assert resumed.complete
    # The judge is called only for the samples never journaled...
    calls_after_resume = _lines(log) - len(journaled)
    assert calls_after_resume == TOTAL_CALLS - len(journaled)
    # ...and the progress line says so (captured stderr is no terminal: plain lines).
    err = capsys.readouterr().err.splitlines()
    overall = [line for line in err if line.startswith("live-test") and "(100%)" in line]
    assert overall[-1].endswith(f"judge calls {calls_after_resume} ({len(open_samples)} reused)"), (
        overall[-1]
    )
    assert len(_records(run_dir, "judge_sample")) == TOTAL_CALLS
    # No target was called again: every attempt's target was called exactly once.
    assert _lines(targets) == ATTEMPTS
    assert Counter(targets.read_text().splitlines()) == {
        f"{name} c{i}": TRIALS
        for name in ("logged", "logged_async", "logged_plain")
        for i in range(1, CASES + 1)
    }
    assert len(resumed.calls) == ATTEMPTS

    monkeypatch.setenv("JUDGE_LOG", str(tmp_path / "fresh.log"))
    monkeypatch.setenv("LIVE_CALL_LOG", str(tmp_path / "fresh-targets.log"))
    fresh = run_experiment(manifest, suite, evaluators=judges_mod.registry(), progress=False)
    assert _lines(tmp_path / "fresh.log") == TOTAL_CALLS
    assert _lines(tmp_path / "fresh-targets.log") == ATTEMPTS
    for table in ("attempts", "checks", "trials"):
        pd.testing.assert_frame_equal(getattr(resumed.run, table), getattr(fresh.run, table))
    assert _report(resumed.run) == _report(fresh.run)

    # The journal without ``answered`` records resumes as it always did: the unfinished
    # attempts call their targets again (these answer the same), the judge is called for
    # the same missing samples, and the run is the same.
    monkeypatch.setenv("JUDGE_LOG", str(old_log))
    monkeypatch.setenv("LIVE_CALL_LOG", str(tmp_path / "old-targets.log"))
    again = run_experiment(
        manifest, suite, evaluators=judges_mod.registry(), progress=False, run_dir=old
    )
    assert again.complete
    assert _lines(tmp_path / "old-targets.log") == ATTEMPTS - len(finished)
    assert _lines(old_log) == TOTAL_CALLS
    for table in ("attempts", "checks", "trials"):
        pd.testing.assert_frame_equal(getattr(again.run, table), getattr(fresh.run, table))

    # Independently: each tone score is the mean of its three samples, in judging order...
    checks = resumed.run.checks
    tone = checks[checks["evaluator"] == "tone"]
    got = {
        (str(v), int(t), str(c)): value
        for v, t, c, value in zip(
            tone["variant_id"], tone["trial"], tone["case_id"], tone["value"], strict=True
        )
    }
    assert got == pytest.approx(_expected_tone(resumed.run), rel=1e-12)
    # ...and the judge cost counts each sample once: 6 attempts per variant, three tone
    # samples at $0.001 and one brief call at $0.002 each.
    totals = judge_totals(resumed.run).set_index("variant_id")
    assert totals["spent_cost_usd"].tolist() == pytest.approx([6 * (3 * 0.001 + 0.002)] * 3)
    assert totals["input_tokens"].tolist() == [6 * (3 * 100 + 50)] * 3
    lines = _summary_text(resumed.run)
    assert len(lines) == VARIANTS and all("cost $0.030000" in line for line in lines)
    assert lines == _summary_text(fresh.run)


def test_a_changed_judge_version_never_reuses_old_samples(
    judged_experiment, tmp_path, monkeypatch, caplog
):
    manifest, suite = judged_experiment
    run_dir, log = tmp_path / "run", tmp_path / "calls.log"
    _kill_mid_judging(manifest, suite, run_dir, log, tmp_path / "targets.log", replies=False)
    finished = {(r["variant"], r["trial"], r["case"]) for r in _records(run_dir, "attempt")}
    open_samples = [
        r["judge"]
        for r in _records(run_dir, "judge_sample")
        if (r["variant"], r["trial"], r["case"]) not in finished
    ]
    stale = open_samples.count("tone")
    assert stale >= 2

    import judges_mod

    monkeypatch.setenv("JUDGE_LOG", str(tmp_path / "after.log"))
    monkeypatch.setenv("JUDGE_TONE_VERSION", "2")
    with caplog.at_level(logging.WARNING, logger="agenticlens_frames.runner.live"):
        resumed = run_experiment(
            manifest, suite, evaluators=judges_mod.registry(), progress=False, run_dir=run_dir
        )
    assert resumed.complete
    # The unfinished attempts are judged again from their first tone sample; the
    # unchanged judge's samples are reused.
    reused = open_samples.count("brief")
    assert _lines(tmp_path / "after.log") == (
        TOTAL_CALLS - len(finished) * CALLS_PER_ATTEMPT - reused
    )
    assert [r.getMessage() for r in caplog.records if "not reused" in r.getMessage()] == [
        f"Note: {stale} journaled sample{'s' * (stale != 1)} of judge 'tone' (version '1') "
        "not reused: "
        "the judge is now version '2'; those evaluations are judged again from their first "
        "sample"
    ]
    tone = resumed.run.checks[resumed.run.checks["evaluator"] == "tone"]
    assert len(tone) == ATTEMPTS


# Recorded replays: a judge whose value is a function of the case and output (the replay
# judges several cases at once), logging each call; call REPLAY_BLOCK_AT hangs.
REPLAY_JUDGES = """
import os, time
from agenticlens_frames.evaluators import EvaluatorRegistry


def registry():
    reg = EvaluatorRegistry()
    reg.judge_concurrency = 1  # one call at a time: the kill comes at a known call

    def tone(output, case, trace, config):
        with open(os.environ["JUDGE_LOG"]) as f:
            done = len(f.read().splitlines())
        if done + 1 == int(os.environ.get("JUDGE_BLOCK_AT", "0")):
            time.sleep(3600)  # the test kills the process here
        with open(os.environ["JUDGE_LOG"], "a") as f:
            f.write(case.id + "\\n")
        value = (sum(map(ord, case.id + output)) % 10) / 10
        return {"value": value, "metadata": {"judge_cost_usd": 0.001,
                                             "judge_cost_source": "measured",
                                             "judge_latency_ms": 4.0}}

    reg.register_judge("tone", tone, version="1", samples=2)
    return reg
"""


def _replay_judged(tmp_path: Path, monkeypatch, *, live: bool) -> tuple[Path, Path, Any]:
    """A synthetic recorded experiment (3 variants, 2 trials, 4 cases) whose cases name
    the REPLAY_JUDGES judge ``tone``, with a live variant too when ``live``; returns the
    manifest, the suite and the imported judges module."""
    import yaml

    from agenticlens_frames.testing import make_synthetic

    folder = make_synthetic(tmp_path / "exp", variants=3, trials=2, cases=4, seed=2)
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    if live:
        doc = yaml.safe_load(manifest.read_text(encoding="utf-8"))
        factors = {**doc["variants"][0]["factors"], "model": "live"}
        doc["variants"].append(variant("live", "answer", factors=factors))
        manifest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    doc = yaml.safe_load(suite.read_text(encoding="utf-8"))
    for case in doc["cases"]:
        case["evaluators"] = [{"name": "tone", "threshold": 0.5}]
    suite.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    (tmp_path / "judges_mod.py").write_text(REPLAY_JUDGES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("judges_mod", None)
    import judges_mod

    return manifest, suite, judges_mod


REPLAY_ATTEMPTS = 4 * 2 * 4  # variants (three recorded, one live) x trials x cases
REPLAY_CALLS = REPLAY_ATTEMPTS * 2
LIVE_CALLS = 2 * 4 * 2  # the live variant's, judged before the replay
REPLAY_BLOCK_AT = LIVE_CALLS + 14


def test_a_recorded_replay_killed_mid_judging_pays_only_for_missing_samples(tmp_path, monkeypatch):
    from agenticlens_frames import load_experiment

    # A live variant too: the replay is judged after the live variant's attempts.
    manifest, suite, judges_mod = _replay_judged(tmp_path, monkeypatch, live=True)

    run_dir, log = tmp_path / "run", tmp_path / "calls.log"
    log.touch()
    env = {**os.environ, "JUDGE_LOG": str(log), "JUDGE_BLOCK_AT": str(REPLAY_BLOCK_AT)}
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *map(str, (manifest, suite, run_dir, tmp_path))],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    # Each sample is journaled before the next call starts (one call at a time); the
    # live variant's attempts are judged first, then the recorded ones are replayed.
    while not (run_dir / "journal").exists() or len(_records(run_dir, "judge_sample")) < (
        REPLAY_BLOCK_AT - 1
    ):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the replay journaled no judge samples"
        time.sleep(0.01)
    process.kill()  # SIGKILL while call REPLAY_BLOCK_AT hangs
    process.communicate()
    assert _lines(log) == REPLAY_BLOCK_AT - 1
    assert any(r["variant"] != "live" for r in _records(run_dir, "judge_sample"))  # replaying

    monkeypatch.setenv("JUDGE_LOG", str(log))
    resumed = run_experiment(
        manifest, suite, evaluators=judges_mod.registry(), progress=False, run_dir=run_dir
    )
    # The judge is called only for the samples never journaled, each once in all.
    assert _lines(log) == REPLAY_CALLS
    assert len(_records(run_dir, "judge_sample")) == REPLAY_CALLS
    assert Counter(log.read_text().splitlines()) == {
        f"case-0000{i}": REPLAY_CALLS // 4 for i in range(4)
    }
    assert len(resumed.calls) == REPLAY_ATTEMPTS // 4  # the live variant's, each once

    fresh_log = tmp_path / "fresh.log"
    fresh_log.touch()
    monkeypatch.setenv("JUDGE_LOG", str(fresh_log))
    fresh = run_experiment(manifest, suite, evaluators=judges_mod.registry(), progress=False)
    assert _lines(fresh_log) == REPLAY_CALLS
    for table in ("attempts", "checks", "trials"):
        pd.testing.assert_frame_equal(getattr(resumed.run, table), getattr(fresh.run, table))
    assert _report(resumed.run) == _report(fresh.run)
    # Independently: every judge score is the judge's rule for its case and output.
    tone = resumed.run.checks[resumed.run.checks["evaluator"] == "tone"]
    outputs = resumed.run.attempts.set_index(["variant_id", "trial", "case_id"])["output"]
    assert len(tone) == REPLAY_ATTEMPTS
    for v, t, c, value in zip(
        tone["variant_id"], tone["trial"], tone["case_id"], tone["value"], strict=True
    ):
        assert value == (sum(map(ord, str(c) + outputs[(v, t, c)])) % 10) / 10

    # The run folder, run or loaded again, pays the judge nothing more.
    monkeypatch.setenv("JUDGE_LOG", str(log))
    again = run_experiment(
        manifest, suite, evaluators=judges_mod.registry(), progress=False, run_dir=run_dir
    )
    loaded = load_experiment(manifest, suite, evaluators=judges_mod.registry(), run_dir=run_dir)
    assert _lines(log) == REPLAY_CALLS
    for run in (again.run, loaded):
        pd.testing.assert_frame_equal(run.checks, fresh.run.checks)
    sys.modules.pop("judges_mod", None)


def test_load_experiment_of_a_recorded_only_run_folder_reuses_its_judge_samples(
    tmp_path, monkeypatch
):
    from agenticlens_frames import load_experiment
    from agenticlens_frames.errors import InputError

    manifest, suite, judges_mod = _replay_judged(tmp_path, monkeypatch, live=False)

    log = tmp_path / "calls.log"
    log.touch()
    monkeypatch.setenv("JUDGE_LOG", str(log))
    run_dir = tmp_path / "run"
    calls = 3 * 2 * 4 * 2  # variants x trials x cases x samples, each judged once
    done = run_experiment(
        manifest, suite, evaluators=judges_mod.registry(), progress=False, run_dir=run_dir
    )
    assert _lines(log) == calls == len(_records(run_dir, "judge_sample"))

    loaded = load_experiment(manifest, suite, evaluators=judges_mod.registry(), run_dir=run_dir)
    assert _lines(log) == calls  # the folder's samples: no judge call
    pd.testing.assert_frame_equal(loaded.checks, done.run.checks)
    # Independently: each score is the judge's rule for its case and output.
    tone = loaded.checks[loaded.checks["evaluator"] == "tone"]
    outputs = loaded.attempts.set_index(["variant_id", "trial", "case_id"])["output"]
    assert len(tone) == calls // 2
    for v, t, c, value in zip(
        tone["variant_id"], tone["trial"], tone["case_id"], tone["value"], strict=True
    ):
        assert value == (sum(map(ord, str(c) + outputs[(v, t, c)])) % 10) / 10

    # Without the folder the recorded variants are judged again, as documented.
    again = load_experiment(manifest, suite, evaluators=judges_mod.registry())
    assert _lines(log) == 2 * calls
    pd.testing.assert_frame_equal(again.checks, done.run.checks)
    # A folder that holds no run is refused, not silently ignored.
    with pytest.raises(InputError, match="no run was recorded in this folder"):
        load_experiment(
            manifest, suite, evaluators=judges_mod.registry(), run_dir=tmp_path / "empty"
        )
    sys.modules.pop("judges_mod", None)
