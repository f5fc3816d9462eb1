"""Targets, evaluators and their modules that try to end the run (issue 15): each attempt
that does is recorded as failed, with its reason, and the run goes on; the CLI never exits
0 without its report, and a real Ctrl-C still gives 130 with finished work kept."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from . import exit_targets
from ._round2 import ROOT, assert_refused, children, cli

HERE = Path(__file__).resolve().parent
MODULE = HERE / "exit_targets.py"
CASES = [
    {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["refund"]}
    for i in (1, 2, 3)
]


def _experiment(folder: Path, target: str, *, judge: bool = False) -> tuple[Path, Path]:
    variants = [
        {"id": f"v{n}", "name": f"v{n}", "target_kind": "python", "target": f"{MODULE}:{t}"}
        for n, t in enumerate(["plain_target", target, "plain_target"])
    ]
    manifest = {
        "name": "exits",
        "version": "1",
        "baseline_variant_id": "v0",
        "trial_count": 2,
        "random_seed": 3,
        "variants": variants,
    }
    cases = [dict(c, evaluators=[{"name": "judge"}]) if judge else c for c in CASES]
    (folder / "m.yaml").write_text(yaml.safe_dump(manifest))
    (folder / "s.yaml").write_text(yaml.safe_dump({"name": "s", "version": "1", "cases": cases}))
    return folder / "m.yaml", folder / "s.yaml"


def _run_argv(manifest: Path, suite: Path, *options: str) -> list[str]:
    """`experiment run` of the experiment in a new interpreter (under its supervisor)."""
    argv = [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run"]
    return [*argv, str(manifest), str(suite), "-q", *options]


@pytest.mark.parametrize("kind", sorted(exit_targets.RAISES))
@pytest.mark.parametrize("target", ["sync_target", "async_target"])
def test_a_target_raising_a_base_exception_fails_only_its_attempt(
    tmp_path, monkeypatch, kind, target
):
    monkeypatch.setenv("EXIT_KIND", kind)
    manifest, suite = _experiment(tmp_path, target)
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    text = (tmp_path / "r.json").read_text()
    name = type(exit_targets.RAISES[kind]()).__name__
    assert f"{name}" in text  # the attempt's error names what the target raised
    data = json.loads(text)
    v1 = next(v for v in data["variants"] if v["variant_id"] == "v1")
    assert [t["status"] for t in v1["trials"]] == ["succeeded", "succeeded"]
    for trial in v1["trials"]:
        statuses = {c["case_id"]: c["target_status"] for c in trial["report"]["cases"]}
        assert statuses == {"c1": "ok", "c2": "error", "c3": "ok"}


@pytest.mark.parametrize("kind", sorted(exit_targets.RAISES))
def test_an_evaluator_raising_a_base_exception_fails_only_its_check(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("EXIT_KIND", kind)
    manifest, suite = _experiment(tmp_path, "plain_target", judge=True)
    result = cli(
        "experiment",
        "run",
        manifest,
        suite,
        "-q",
        "--save",
        tmp_path / "r.json",
        "--evaluators",
        "tests.hardening.exit_targets:registry",
    )
    assert result.exit_code == 0, result.output
    name = type(exit_targets.RAISES[kind]()).__name__
    assert f"raised {name}" in (tmp_path / "r.json").read_text()


@pytest.mark.parametrize("kind", sorted(exit_targets.RAISES))
@pytest.mark.parametrize("where", ["target", "evaluators"])
def test_a_module_raising_at_import_is_an_input_error(tmp_path, monkeypatch, kind, where):
    import importlib
    import sys as _sys

    monkeypatch.setenv("EXIT_AT_IMPORT", kind)
    monkeypatch.delitem(_sys.modules, "tests.hardening.exit_targets", raising=False)
    for name in list(_sys.modules):
        if name.startswith("_agenticlens_frames_target_exit_targets"):
            monkeypatch.delitem(_sys.modules, name)
    importlib.invalidate_caches()
    manifest, suite = _experiment(tmp_path, "sync_target")
    extra = (
        ["--evaluators", "tests.hardening.exit_targets:registry"] if where == "evaluators" else []
    )
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json", *extra)
    name = type(exit_targets.RAISES[kind]()).__name__
    assert_refused(result, name, "--evaluators" if where == "evaluators" else "m.yaml")
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "spec",
    [
        "os:system",
        "os:getcwd",
        "builtins:print",
        "json:loads",
        "subprocess:Popen",
        "os:environ",
        "os:_exit",
    ],
)
def test_evaluators_option_calls_only_registry_factories(tmp_path, spec):
    manifest, suite = _experiment(tmp_path, "sync_target")
    result = cli("experiment", "run", manifest, suite, "-q", "--evaluators", spec)
    assert_refused(result, "--evaluators", "not an EvaluatorRegistry")


# ------------------------------------------------------------------ process level

PROCESS_CASES = {
    # name: (target, env, expected exit code, expected words)
    "os_exit0": ("sync_target", {"EXIT_KIND": "os_exit0"}, 0, ["exited with status 0"]),
    "os_exit3": ("sync_target", {"EXIT_KIND": "os_exit3"}, 0, ["exited with status 3"]),
    "sigkill": ("sync_target", {"EXIT_KIND": "sigkill_self"}, 0, ["SIGKILL"]),
    "abort": ("sync_target", {"EXIT_KIND": "abort"}, 0, ["SIGABRT"]),
    "async_os_exit": ("async_target", {"EXIT_KIND": "os_exit0"}, 0, ["exited with status 0"]),
    "import_os_exit": ("sync_target", {"EXIT_AT_IMPORT": "os_exit0"}, 7, ["ended before"]),
}


def test_processes_ending_the_run_are_caught_by_the_supervisor(tmp_path):
    running = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    for name, (target, extra, _, _) in PROCESS_CASES.items():
        folder = tmp_path / name
        folder.mkdir()
        manifest, suite = _experiment(folder, target)
        running[name] = subprocess.Popen(
            _run_argv(manifest, suite, "--save", str(folder / "r.json")),
            env={**env, **extra},
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    for name, proc in running.items():
        out, err = proc.communicate(timeout=180)
        _, _, code, words = PROCESS_CASES[name]
        text = out + err
        assert "Traceback" not in text, (name, text)
        assert proc.returncode == code, (name, proc.returncode, text)
        for word in words:
            assert word in text, (name, word, text)
        report = tmp_path / name / "r.json"
        if code == 0:
            # Both trials' c2 failed with the reason; every other attempt is there.
            assert report.read_text().count("ProcessEnded") >= 2, name
            # The restarts were said as they happened; no --run-dir was given, so no
            # "Resumed from --run-dir <the supervisor's private folder>" either.
            assert "resuming (" in err and "--run-dir" not in err, (name, err)
        else:
            assert not report.exists()
        assert not list((tmp_path / name).glob(".r.json*"))


def test_real_ctrl_c_still_gives_130_and_keeps_finished_work(tmp_path):
    manifest, suite = _experiment(tmp_path, "sync_target")
    doc = yaml.safe_load(manifest.read_text())
    for variant in doc["variants"]:
        variant["target"] = f"{HERE / 'fault_targets.py'}:hangs"
        variant["timeout_seconds"] = 30
    manifest.write_text(yaml.safe_dump(doc))
    (tmp_path / "s.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "version": "1",
                "cases": [dict(CASES[1], id="c2"), dict(CASES[0], id="c1")],
            }
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAULT_HANG_SECONDS": "30"}
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        _run_argv(manifest, suite, "--run-dir", str(run_dir)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(run_dir.glob("journal/*.jsonl")) or not any(
        p.stat().st_size for p in run_dir.glob("journal/*.jsonl")
    ):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert "resume with --run-dir" in out + err
    journal = "".join(p.read_text() for p in run_dir.glob("journal/*.jsonl"))
    assert '"type":"attempt"' in journal


def _judged_run(tmp_path: Path, kind: str, registry: str, evaluators: list[str]) -> tuple:
    """Run a judged experiment under the supervisor; v1's answer to c2 is the fatal one.
    Returns the process, the target calls logged and the report."""
    manifest, suite = _experiment(tmp_path, "logged_target")
    doc = yaml.safe_load(suite.read_text())
    for case in doc["cases"]:
        case["evaluators"] = [{"name": name, "threshold": 0.5} for name in evaluators]
    suite.write_text(yaml.safe_dump(doc))
    doc = yaml.safe_load(manifest.read_text())
    doc["trial_count"] = 1
    for variant in doc["variants"]:
        name = "logged_fatal_target" if variant["id"] == "v1" else "logged_target"
        variant["target"] = f"{MODULE}:{name}"
    manifest.write_text(yaml.safe_dump(doc))
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "200",
        "EXIT_KIND": kind,
        "CALL_LOG": str(log),
    }
    done = subprocess.run(
        _run_argv(
            manifest,
            suite,
            *("--concurrency", "1", "--save", str(tmp_path / "r.json")),
            *("--evaluators", f"tests.hardening.exit_targets:{registry}"),
            *("--run-dir", str(tmp_path / "run")),
        ),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = Counter(log.read_text().splitlines())
    assert calls["v1 c2"] == 1  # answered once, never called again
    # Another call in flight when the process ended (with the judging) is called again,
    # alone: once for each such end (its `suspect` records).
    again = Counter(
        f"{'v1' if r['variant'] == 'v1' else 'v0 or v2'} {r['case']}"
        for segment in (tmp_path / "run" / "journal").glob("*.jsonl")
        for r in map(json.loads, segment.read_text().splitlines())
        if r["type"] == "suspect"
    )
    for call, count in calls.items():
        assert count <= (1 if call.startswith("v1") else 2) + again[call], (calls, again)
    return done, json.loads((tmp_path / "r.json").read_text())


@pytest.mark.parametrize("kind", ["os_exit0", "sigkill_self"])
def test_a_judge_ending_the_process_costs_the_agent_nothing(tmp_path, kind):
    """The target answered; its judge ended the process: the reply is kept (the target is
    not called again) and the judge sample in progress is unavailable, not a failed
    attempt of the agent."""
    done, data = _judged_run(tmp_path, kind, "judge_registry", ["llm"])
    assert "the judging of v1 trial 1 case c2: its reply kept" in done.stderr, done.stderr
    seen = 0
    for v in data["variants"]:
        for case in v["trials"][0]["report"]["cases"]:
            # An attempt whose call was in flight beside the judging is called again.
            assert case["target_status"] == "ok", case
            (score,) = [s for s in case["scores"] if s["name"] == "llm"]
            meta = score["metadata"]
            if (v["variant_id"], case["case_id"]) == ("v1", "c2"):
                assert meta["judge_status"] == "unavailable"  # the agent's answer stands
                assert "ProcessEnded" in meta["judge_error"]
                assert "while this attempt was being judged" in meta["judge_error"]
                assert score["value"] == 0 and not score["passed"]
                seen += 1
            else:  # answered ones waiting for the judge were judged on resume
                assert meta["judge_status"] == "ok" and score["value"] == 0.9, meta
    assert seen == 1


def test_an_evaluator_ending_the_process_while_judged_fails_the_attempt_once_resumed(tmp_path):
    """A plain evaluator beside a judge ends the process: resumed once from the reply (the
    judge's samples reused), it ends it again, and the attempt fails as any would."""
    done, data = _judged_run(tmp_path, "os_exit0", "evaluator_registry", ["llm", "crash"])
    first = done.stderr.index("the judging of v1 trial 1 case c2: its reply kept")
    assert done.stderr.index("v1 trial 1 case c2: recorded as a failed attempt") > first
    (v1,) = [v for v in data["variants"] if v["variant_id"] == "v1"]
    (c2,) = [c for c in v1["trials"][0]["report"]["cases"] if c["case_id"] == "c2"]
    assert c2["target_status"] == "error"
    assert c2["target_error"].startswith("ProcessEnded: the run's process exited with status 0")


def _in_flight(folder: Path, calling: list[str], judged: list[str], waiting: list[str]) -> tuple:
    """An in-flight log, and journaled replies for the attempts ``judged`` and ``waiting``
    (cases of variant v, trial 1): the suspects and those being judged, as the supervisor
    reads them after an end of the process."""
    from agenticlens_frames.runner.inflight import InflightLog, being_judged, in_flight

    journal = folder / "journal"
    journal.mkdir(exist_ok=True)
    answered = [
        {"type": "answered", "variant": "v", "trial": 1, "case": c, "payload": {"output": "x"}}
        for c in judged + waiting
    ]
    number = len(list(journal.glob("*.jsonl"))) + 1
    (journal / f"{number:06d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answered))
    log = InflightLog(folder / "inflight")
    for case in [*calling, *judged, *waiting, "done"]:
        log.started("v", 1, case)
    for case in judged:
        log.judging({"variant": "v", "trial": 1, "case": case})
    log.ended({"type": "attempt", "variant": "v", "trial": 1, "case": "done"})
    log.close()
    suspects, judging = in_flight(folder / "inflight"), being_judged(folder / "inflight")
    (folder / "inflight").unlink()
    return suspects, judging


def _written(folder: Path) -> list[tuple[str, str, str]]:
    """The records of the journal's last segment: (type, case, error)."""
    from agenticlens_frames.runner.journal import read_segments

    (last, *_) = sorted((folder / "journal").glob("*.jsonl"), reverse=True)
    # Each line has its checksum, as a run folder of this version needs.
    records = read_segments([last], checksums=True)
    return [(r["type"], r["case"], r.get("error")) for r in records]


def test_the_supervisor_blames_only_an_attempt_the_evidence_points_at(tmp_path):
    """Of several attempts in flight (calling, or being judged) none is blamed: each gets a
    `suspect` record (called again alone, first); a reply waiting for its judge is left to
    be judged on resume (nothing written)."""
    from agenticlens_frames._supervise import _blame

    suspects, judging = _in_flight(tmp_path, ["calling"], ["judged"], ["waiting"])
    assert suspects == [("v", 1, "calling"), ("v", 1, "judged"), ("v", 1, "waiting")]
    fates = _blame(tmp_path, suspects, "was killed by SIGKILL", judging)
    assert fates == [
        ("v trial 1 case calling", "suspect"),
        ("v trial 1 case judged", "suspect"),
        ("v trial 1 case waiting", "answered"),
    ]
    error = "the run's process was killed by SIGKILL while this attempt was one of 2 in flight"
    assert _written(tmp_path) == [("suspect", "calling", error), ("suspect", "judged", error)]


def test_the_supervisor_blames_an_attempt_in_flight_at_a_second_end(tmp_path):
    """Even the only attempt in flight is a suspect at first (the process may have been
    killed from outside); in flight at a second end, it is blamed: a call fails, a
    judging keeps its reply and ends its judge sample in progress."""
    from agenticlens_frames._supervise import _blame

    suspects, judging = _in_flight(tmp_path, ["calling"], [], ["waiting"])
    fates = _blame(tmp_path, suspects, "was killed by SIGKILL", judging)
    assert fates == [("v trial 1 case calling", "suspect"), ("v trial 1 case waiting", "answered")]
    first = (
        "the run's process was killed by SIGKILL while this attempt was the only attempt in flight"
    )
    assert _written(tmp_path) == [("suspect", "calling", first)]
    suspects, judging = _in_flight(tmp_path, ["calling"], [], [])
    assert _blame(tmp_path, suspects, "exited with status 0", judging) == [
        ("v trial 1 case calling", "failed")
    ]
    error = (
        "ProcessEnded: the run's process exited with status 0 during this attempt (the only "
        "attempt in flight; in flight when it ended before too)"
    )
    assert _written(tmp_path) == [("call", "calling", error), ("attempt", "calling", error)]

    for _ in range(2):
        suspects, judging = _in_flight(tmp_path, [], ["judged"], [])
        fates = _blame(tmp_path, suspects, "exited with status 0", judging)
    assert fates == [("v trial 1 case judged", "judging")]
    assert _written(tmp_path) == [
        (
            "judge_ended",
            "judged",
            "the run's process exited with status 0 while this attempt was being judged (the "
            "only attempt in flight; in flight when it ended before too)",
        )
    ]
    # Judged again from its reply, without that sample, it ends the process again: failed.
    suspects, judging = _in_flight(tmp_path, [], ["judged"], [])
    assert _blame(tmp_path, suspects, "exited with status 0", judging) == [
        ("v trial 1 case judged", "failed")
    ]


def test_the_supervisor_blames_an_attempt_in_flight_at_two_ends(tmp_path):
    """A suspect in flight at a second end, even with others, is blamed; the others are
    suspects (an attempt journaled since is no suspect)."""
    from agenticlens_frames._supervise import _blame

    suspects, _ = _in_flight(tmp_path, ["a", "b", "c"], [], [])
    fates = _blame(tmp_path, suspects, "was killed by SIGKILL")
    assert [fate for _, fate in fates] == ["suspect"] * 3
    suspects, _ = _in_flight(tmp_path, ["b", "d"], [], [])
    assert _blame(tmp_path, suspects, "was killed by SIGKILL") == [
        ("v trial 1 case b", "failed"),
        ("v trial 1 case d", "suspect"),
    ]
    error = (
        "ProcessEnded: the run's process was killed by SIGKILL during this attempt (one of 2 "
        "in flight; in flight when it ended before too)"
    )
    assert _written(tmp_path)[:2] == [("call", "b", error), ("attempt", "b", error)]
    assert _written(tmp_path)[2][:2] == ("suspect", "d")
    # b is journaled now: in flight again (a stale mark), it is no suspect.
    assert _blame(tmp_path, [("v", 1, "b"), ("v", 1, "c")], "was killed by SIGKILL") == [
        ("v trial 1 case c", "failed")
    ]


# ------------------------------------------- several attempts in flight when the process ends


MAX_WORKERS = 4


def _gated_experiment(
    folder: Path, targets: list[str], *, limit: int | None = None
) -> tuple[Path, Path]:
    """3 variants (v0, v1, v2: ``targets`` of exit_targets.py) x 2 trials x 4 cases, each
    variant at most ``limit`` calls in flight."""
    variants = [
        {
            "id": f"v{n}",
            "name": f"v{n}",
            "target_kind": "python",
            "target": f"{MODULE}:{target}",
            **({"concurrency": limit} if limit else {}),
        }
        for n, target in enumerate(targets)
    ]
    manifest = {
        "name": "gated",
        "version": "1",
        "baseline_variant_id": "v0",
        "trial_count": 2,
        "random_seed": 11,
        "max_workers": MAX_WORKERS,
        "variants": variants,
    }
    cases = [
        {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["refund"]}
        for i in (1, 2, 3, 4)
    ]
    (folder / "m.yaml").write_text(yaml.safe_dump(manifest))
    (folder / "s.yaml").write_text(yaml.safe_dump({"name": "s", "version": "1", "cases": cases}))
    return folder / "m.yaml", folder / "s.yaml"


def _gated_run(
    folder: Path, targets: list[str], *options: str, limit: int | None = None, **env: str
) -> subprocess.Popen:
    """`experiment run` of :func:`_gated_experiment` in ``folder`` (its calls logged to
    calls.log, the gate at ``gate``), writing r.json and v.csv there."""
    folder.mkdir(exist_ok=True)
    manifest, suite = _gated_experiment(folder, targets, limit=limit)
    outputs = ("--save", str(folder / "r.json"), "--csv", str(folder / "v.csv"))
    return subprocess.Popen(
        _run_argv(manifest, suite, "--run-dir", str(folder / "run"), *outputs, *options),
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "COLUMNS": "200",
            "CALL_LOG": str(folder / "calls.log"),
            "GATE": str(folder / "gate"),
            **env,
        },
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _uninterrupted(folder: Path, *options: str) -> dict:
    """The reference: the same deterministic targets, never stopped (gate open)."""
    folder.mkdir()
    (folder / "gate").write_text("")
    proc = _gated_run(folder, ["gated_v0", "gated_v1", "gated_v2"], *options)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    assert "resuming" not in err
    return json.loads((folder / "r.json").read_text())


def _outcomes(report: dict) -> dict[tuple[str, int, str], tuple]:
    """(variant, trial, case) -> what the report says of that attempt."""
    return {
        (v["variant_id"], t["trial_index"], c["case_id"]): (
            c["target_status"],
            c["target_error"],
            c["passed"],
            c["output"],
            [(s["name"], s["value"], s["passed"]) for s in c["scores"]],
        )
        for v in report["variants"]
        for t in v["trials"]
        for c in t["report"]["cases"]
    }


def _marks(log: Path) -> list[tuple[str, str, str, int]]:
    """The call log: (start or end, variant, case, process id), in order."""
    return [
        (event, tag, case, int(pid))
        for event, tag, case, pid in (line.split() for line in log.read_text().splitlines())
    ]


def _journaled_once(run_dir: Path) -> None:
    """No attempt is journaled (scored) twice."""
    keys = [
        (r["variant"], r["trial"], r["case"])
        for segment in sorted((run_dir / "journal").glob("*.jsonl"))
        for r in map(json.loads, segment.read_text().splitlines())
        if r["type"] == "attempt"
    ]
    assert len(keys) == len(set(keys)) == 24, sorted(keys)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_kill_from_outside_fails_no_attempt_and_changes_no_number(tmp_path):
    """The run's process is SIGKILLed from outside (the OOM killer, `kill -9`) while 4
    attempts are in flight: none is recorded as failed; each is called again alone, before
    other work, and the run reports what an uninterrupted run reports."""
    reference = _uninterrupted(tmp_path / "reference", "--concurrency", "4")
    folder = tmp_path / "killed"
    proc = _gated_run(folder, ["gated_v0", "gated_v1", "gated_v2"], "--concurrency", "4")
    log = folder / "calls.log"
    deadline = time.monotonic() + 60
    # The gate is closed: the first 4 calls wait in flight.
    while not log.exists() or len(_marks(log)) < 4:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    (child,) = children(proc.pid)
    assert {pid for *_, pid in _marks(log)} == {child}
    os.kill(child, signal.SIGKILL)
    (folder / "gate").write_text("")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, out + err
    assert "4 attempts, each to be called again alone" in err, err
    assert "recorded as a failed attempt" not in err, err
    report = json.loads((folder / "r.json").read_text())
    assert "ProcessEnded" not in json.dumps(report)
    assert _outcomes(report) == _outcomes(reference)
    assert (folder / "v.csv").read_text() == (tmp_path / "reference" / "v.csv").read_text()
    _journaled_once(folder / "run")
    marks = _marks(log)
    first = [(tag, case) for event, tag, case, pid in marks if pid == child]
    assert len(first) == 4  # four starts, no end: killed in flight
    later = [(event, (tag, case)) for event, tag, case, pid in marks if pid != child]
    # The four, one at a time (each ends before the next starts), before any other call.
    alone = later[:8]
    assert [event for event, _ in alone] == ["start", "end"] * 4, alone
    keys = [key for _, key in alone]
    assert keys[0::2] == keys[1::2], alone
    assert sorted(keys[0::2]) == sorted(first), (alone, first)
    # Every other attempt is called once: 24 attempts, 4 of them twice.
    assert len([m for m in marks if m[0] == "start"]) == 24 + 4


@pytest.mark.parametrize("kind", ["sigkill_self", "os_exit0"])
def test_a_target_ending_the_process_among_others_is_found_alone(tmp_path, kind):
    """v1's case c2 ends the process while v0's and v2's calls are in flight: they are
    called again, alone, and answer; c2 then ends the process alone and is the only
    attempt recorded as failed. Every other attempt reports what an uninterrupted run
    reports, and none is journaled twice."""
    reference = _outcomes(_uninterrupted(tmp_path / "reference", "--concurrency", "4"))
    folder = tmp_path / "culprit"
    proc = _gated_run(
        folder,
        ["gated_v0", "fatal_among_others", "gated_v2"],
        *("--concurrency", "4"),
        limit=1,
        EXIT_KIND=kind,
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert "Traceback" not in err
    # The first end: v0's, v1's and v2's calls in flight (and v1's c1, if its record was
    # still on its way to disk), none failed.
    first = err.split("resuming")[0]
    assert re.search(r"\b[34] attempts, each to be called again alone", first), err
    assert "recorded as a failed attempt" not in first, err
    outcomes = _outcomes(json.loads((folder / "r.json").read_text()))
    culprits = {key for key in outcomes if key[0] == "v1" and key[2] == "c2"}
    assert len(culprits) == 2
    for key in culprits:
        status, error, *_ = outcomes[key]
        assert status == "error" and error.startswith("ProcessEnded: the run's process"), key
        assert f"{key[0]} trial {key[1]} case c2: recorded as a failed attempt" in err
    assert "ProcessEnded" not in json.dumps([outcomes[k] for k in outcomes if k not in culprits])
    assert {k: outcomes[k] for k in outcomes if k not in culprits} == {
        k: reference[k] for k in reference if k not in culprits
    }
    _journaled_once(folder / "run")
    # An attempt is called again once for each end it was in flight at with others (its
    # `suspect` records), never otherwise.
    again = Counter(
        (r["variant"], r["case"])
        for segment in (folder / "run" / "journal").glob("*.jsonl")
        for r in map(json.loads, segment.read_text().splitlines())
        if r["type"] == "suspect"
    )
    assert again[("v0", "c1")] and again[("v2", "c1")]
    marks = _marks(folder / "calls.log")
    calls = Counter((tag, case) for event, tag, case, _ in marks if event == "start")
    # (2 trials each)
    assert all(calls[key] <= 2 + again[key] for key in calls), (calls, again)


def test_the_run_still_ends_when_every_call_ends_the_process(tmp_path):
    """Each end costs a restart, blamed or not: the restarts run out and the CLI says what
    ended the run and how to resume (exit 7), with no report."""
    proc = _gated_run(
        tmp_path / "ends",
        ["always_ends"] * 3,
        *("--concurrency", "4"),
        EXIT_KIND="os_exit0",
        AGENTICLENS_FRAMES_MAX_RESTARTS="3",
    )
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 7, out + err
    assert "(3 of at most 3 restarts" in err, err
    assert "The run ended before writing its outputs" in err
    assert f"run again with --run-dir {tmp_path / 'ends' / 'run'} to resume" in err
    assert not (tmp_path / "ends" / "r.json").exists()
    journal = "".join(p.read_text() for p in (tmp_path / "ends" / "run").glob("journal/*"))
    assert "ProcessEnded" in journal  # the suspects called alone were blamed


def test_a_journal_damaged_when_the_process_ends_is_named_with_its_line_and_fix(tmp_path):
    """The supervisor took a journal it could not read as "no attempt to blame" and said
    only "run again with --run-dir ... to resume"; that resume was then refused for the
    damage. Now the end names the damaged line and its fix at once (exit 7), records
    nothing, and the resume gives the same error."""
    manifest, suite = _experiment(tmp_path, "damages_journal_target")
    run_dir = tmp_path / "run"
    argv = _run_argv(manifest, suite, "--run-dir", str(run_dir), "--save", str(tmp_path / "r.json"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "RUN_DIR": str(run_dir)}
    ended = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert ended.returncode == 7, ended.stderr
    assert "Traceback" not in ended.stderr
    segment = run_dir / "journal" / "000001.jsonl"
    # Independently: the line the target wrote, counted in the file.
    line = segment.read_bytes().split(b"\n").index(b"this line is no record") + 1
    text = " ".join(ended.stderr.split())
    assert (
        f"its journal cannot be read to resume: {segment}: line {line}: damaged journal "
        "record: not JSON (" in text
    ), text
    assert "delete this line to run its attempt again" in text
    assert f"once the journal is mended, run again with --run-dir {run_dir} to resume" in text
    assert sorted(p.name for p in (run_dir / "journal").iterdir()) == ["000001.jsonl"]
    assert not (tmp_path / "r.json").exists()
    resumed = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert resumed.returncode == 1
    assert f"{segment}: line {line}: damaged journal record: not JSON" in resumed.stderr


def test_an_earlier_failure_called_again_is_no_finished_attempt(tmp_path):
    """With --rerun-failed an earlier target error is called again; in flight when the
    process ends it was taken as finished (it had an attempt record), so it was never
    blamed and the run restarted until its limit. Finished means recorded by the session
    that ended, or an outcome no session calls again; an attempt the supervisor recorded
    as having ended the process is never called again, --rerun-failed or not."""
    from agenticlens_frames._supervise import _blame
    from agenticlens_frames.runner.live import Ledger

    journal = tmp_path / "journal"
    journal.mkdir()

    def attempt(case: str, status: str, error: str | None = None) -> dict:
        return {"type": "attempt", "variant": "v", "trial": 1, "case": case,
                "status": status, "calls": 1, "error": error, "payload": None}  # fmt: skip

    earlier = [attempt("again", "target_error"), attempt("ok", "ok")]
    (journal / "000001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in earlier))
    (journal / "000002.jsonl").write_text(json.dumps(attempt("now", "ok")) + "\n")  # the session
    suspects = [("v", 1, "again"), ("v", 1, "ok"), ("v", 1, "now")]
    assert _blame(tmp_path, suspects, "was killed by SIGKILL") == [
        ("v trial 1 case again", "suspect")
    ]

    from agenticlens_frames.formats import load_suite

    suite = load_suite(ROOT / "data" / "support" / "suite.yaml")
    first, second = suite.case_ids[:2]
    ledger = Ledger(suite, "trial")
    ledger.add(attempt(first, "target_error", "ProcessEnded: the run's process ..."))
    ledger.add(attempt(second, "timed_out", "TimeoutError"))
    assert ledger.reopen_failed() == 1 and list(ledger.final) == [("v", 1, first)]


def test_rerun_failed_restarted_does_not_reopen_what_it_ran_again(tmp_path):
    """`--rerun-failed` under the supervisor: the run's process ends after re-running
    three of six failures (each failed again, on disk). The restarted child belongs to the
    same command line, so it continues that re-run (the journal's `reopen` record) instead
    of reopening the failures again: each failure is called once more, and the one in
    flight at the end twice (it is called again alone). It was reopened again, and the three
    re-run before the end called a third time."""
    manifest, suite = _experiment(tmp_path, "still_failing")
    run_dir = tmp_path / "run"
    log = tmp_path / "calls.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CALL_LOG": str(log), "RUN_DIR": str(run_dir)}
    argv = _run_argv(manifest, suite, "--run-dir", str(run_dir), "--concurrency", "1")
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(log.read_text().splitlines()) == 6  # v1: 3 cases x 2 trials, all failed
    log.unlink()
    again = subprocess.run(
        [*argv, "--rerun-failed", "--save", str(tmp_path / "r.json")],
        env={**env, "END_ONCE": str(tmp_path / "ended")},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming (1 of at most" in again.stderr, again.stderr
    calls = [line.split() for line in log.read_text().splitlines()]
    assert len({pid for _, pid in calls}) == 2  # the ended process, the restarted one
    assert sorted(Counter(case for case, _ in calls).values()) == [2, 2, 3], calls
    assert len(calls) == 7, calls
    outcomes = _outcomes(json.loads((tmp_path / "r.json").read_text()))
    v1 = {key: value[:2] for key, value in outcomes.items() if key[0] == "v1"}
    assert v1 and all(v == ("error", "RuntimeError: still broken") for v in v1.values()), v1


def test_attempts_finished_before_an_output_fails_are_kept_without_run_dir(tmp_path):
    """A live run without --run-dir journals into a temporary folder; when an output then
    cannot be written, that folder was deleted with every finished (paid-for) attempt."""
    manifest, suite = _experiment(tmp_path, "plain_target")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp)}
    failed = subprocess.run(
        _run_argv(manifest, suite, "--save", "/dev/full"),  # no space left: written last
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert failed.returncode == 1, failed.stderr
    assert "Traceback" not in failed.stderr
    kept = [p / "run" for p in temp.glob("agenticlens-frames-*") if (p / "run").is_dir()]
    assert len(kept) == 1, failed.stderr
    assert f"run again with --run-dir {kept[0]}" in " ".join(failed.stderr.split())
    report = tmp_path / "r.json"
    again = subprocess.run(
        _run_argv(manifest, suite, "--save", str(report), "--run-dir", str(kept[0])),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(report.read_text())["experiment_name"] == "exits"


@pytest.mark.parametrize("supervised", ["1", "0"])
def test_rerun_failed_without_a_run_folder_is_refused_before_any_call(tmp_path, supervised):
    """Without --run-dir there is no earlier run whose failures to call again: the option
    was ignored (the supervisor's private folder stood in) and every attempt called as new."""
    manifest, suite = _experiment(tmp_path, "still_failing")
    log = tmp_path / "calls.log"
    done = subprocess.run(
        _run_argv(manifest, suite, "--rerun-failed"),
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "CALL_LOG": str(log),
            "AGENTICLENS_FRAMES_SUPERVISE": supervised,
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    # A usage error (exit 2), said before any file is read, under the supervisor or not.
    assert done.returncode == 2, done.stdout + done.stderr
    said = re.sub(r"[│\s]+", " ", done.stderr)
    refusal = "'--rerun-failed': it calls again the failed attempts journaled in a run folder"
    assert said.count(refusal) == 1, said  # (once: it was said twice under the supervisor)
    assert "Traceback" not in done.stderr and not log.exists()


def test_a_live_runs_progress_in_a_pipe_is_plain_lines(monkeypatch):
    """stderr in a CI log or a pipe: tqdm's bars, redrawn with carriage returns and cursor
    moves (one per variant too), left about a hundred half-lines in 5 s; now a plain line
    every 10 s and one at the end."""
    import io

    from agenticlens_frames import _progress
    from agenticlens_frames.runner import live

    stream = io.StringIO()
    # What stderr is when it is not a terminal (and pytest -s may give one).
    assert _progress.wants_log_lines(stream)
    monkeypatch.setattr(live, "wants_log_lines", lambda: True)
    progress = live._Progress(True, "exp · 2 in flight", {"a": 2, "b": 2}, overall=4)
    progress.overall.stream = stream
    for variant in ("a", "b", "a", "b"):
        progress.update(variant)
    progress.judged(3, 0, 1)
    progress.close()
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text and not progress.bars
    want = "exp · 2 in flight: 4/4 attempts (100%) · 0 s · judge calls 3 (1 reused)"
    assert text.splitlines() == [want], text


def test_an_attempt_judged_again_on_resume_is_not_finished_to_the_supervisor(tmp_path):
    """A finished attempt with an unavailable judge score is judged again on resume
    (``Ledger.reopen_unavailable``); when that judging ends the process, its earlier
    ``attempt`` record made the supervisor take it as finished, record nothing and start
    the run again, which judged it again: a restart loop to the limit. It is a suspect,
    then blamed as any judging is (its reply kept)."""
    from agenticlens_frames._supervise import _blame

    journal = tmp_path / "journal"
    journal.mkdir()
    earlier = [
        {"type": "answered", "variant": "v", "trial": 1, "case": "again", "payload": {}},
        {"type": "attempt", "variant": "v", "trial": 1, "case": "again", "status": "ok"},
    ]
    (journal / "000001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in earlier))
    suspects, judging = _in_flight(tmp_path, [], ["again"], [])
    assert _blame(tmp_path, suspects, "was killed by SIGKILL", judging) == [
        ("v trial 1 case again", "suspect")
    ]
    suspects, judging = _in_flight(tmp_path, [], ["again"], [])
    assert _blame(tmp_path, suspects, "exited with status 0", judging) == [
        ("v trial 1 case again", "judging")
    ]
    assert [kind for kind, _, _ in _written(tmp_path)] == ["judge_ended"]
