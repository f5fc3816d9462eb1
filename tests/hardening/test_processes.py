"""Targets, evaluators and their modules that try to end the run (issue 15): each attempt
that does is recorded as failed, with its reason, and the run goes on; the CLI never exits
0 without its report, and a real Ctrl-C still gives 130 with finished work kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from . import exit_targets
from ._round2 import ROOT, assert_refused, cli

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
        ),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text().splitlines()
    assert calls.count("v1 c2") == 1  # answered once, never called again
    assert max(map(calls.count, ("v1 c1", "v1 c3"))) <= 1 and len(calls) <= 9
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
            if case["target_status"] != "ok":
                # Only an attempt whose call was in flight beside the judging may be blamed.
                assert "attempts in flight" in case["target_error"], case
                continue
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


def test_the_supervisor_blames_each_attempt_in_flight_by_what_it_was_doing(tmp_path):
    """A call in flight fails; a reply being judged keeps its reply and ends its judging;
    a reply waiting for its judge is left to be judged on resume (nothing written)."""
    from agenticlens_frames._supervise import _blame
    from agenticlens_frames.runner.inflight import InflightLog, being_judged, in_flight

    journal = tmp_path / "journal"
    journal.mkdir()
    answered = [
        {"type": "answered", "variant": "v", "trial": 1, "case": c, "payload": {"output": "x"}}
        for c in ("judged", "waiting")
    ]
    (journal / "000001.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answered))
    log = InflightLog(tmp_path / "inflight")
    for case in ("calling", "judged", "waiting", "done"):
        log.started("v", 1, case)
    log.judging({"variant": "v", "trial": 1, "case": "judged"})
    log.ended({"type": "attempt", "variant": "v", "trial": 1, "case": "done"})
    log.close()
    suspects = in_flight(tmp_path / "inflight")
    assert suspects == [("v", 1, "calling"), ("v", 1, "judged"), ("v", 1, "waiting")]
    fates = _blame(tmp_path, suspects, "was killed by SIGKILL", being_judged(tmp_path / "inflight"))
    assert fates == [
        ("v trial 1 case calling", "failed"),
        ("v trial 1 case judged", "judging"),
        ("v trial 1 case waiting", "answered"),
    ]
    written = [json.loads(line) for line in (journal / "000002.jsonl").read_text().splitlines()]
    assert [(r["type"], r["case"]) for r in written] == [
        ("call", "calling"),
        ("attempt", "calling"),
        ("judge_ended", "judged"),
    ]
    assert written[1]["status"] == "target_error"
    assert written[2]["error"] == (
        "the run's process was killed by SIGKILL while this attempt was being judged "
        "(one of 3 attempts in flight)"
    )


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
