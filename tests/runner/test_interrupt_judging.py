"""Ctrl-C while a live run is judging: an interrupt like any other, with the same counts.

When every target has answered and the judge calls of the last replies are still being
made (the final judge drain), a Ctrl-C stops the run as at any other moment: what finished
is journaled, the judgings not started are left to the resume (which judges them from
their journaled replies: no target and no judge is called twice), and the result or the
message says what is left. The counts are checked against the journal, read here with
plain ``json``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from agenticlens_frames.evaluators import EvaluatorRegistry
from agenticlens_frames.runner import run_experiment

from ..judge_fakes import SLOW_JUDGE_LOG, SLOW_JUDGE_SECONDS
from .conftest import simple_cases, variant

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: Variants x cases of the Python-API experiment below (one trial).
API_ATTEMPTS = 2 * 10

#: The Python API (no supervisor): an instant agent whose output names its variant, the
#: slow judge of tests/judge_fakes.py; prints what the run returned.
API_SCRIPT = """
import json, sys
from agenticlens_frames import Comparator, Experiment, Variant
from agenticlens_frames.api import run
from tests.judge_fakes import slow_registry


class Agent:
    def __init__(self, variant):
        self.name = variant.name

    def run(self, text):
        return f"{self.name}: {text}"


judged = [{"name": "slow_judge", "threshold": 0.5}]
experiment = Experiment(
    name="drain",
    variants=[Variant("a"), Variant("b")],
    dataset=[{"input": f"question {i}", "evaluators": judged} for i in range(10)],
)
result = run(experiment, Agent, run_dir=sys.argv[1], evaluators=slow_registry(),
             concurrency=2, progress=False)
live = result.live
print(json.dumps({"interrupted": live.interrupted, "remaining": live.remaining,
                  "awaiting_judge": live.awaiting_judge, "text": live.remaining_text,
                  "summary": Comparator().summary(result)}))
"""


def _records(run_dir: Path) -> list[dict]:
    """Every journal record of the run folder (a clean stop leaves whole lines only)."""
    records = []
    for segment in sorted((run_dir / "journal").glob("*.jsonl")):
        text = segment.read_text(encoding="utf-8")
        assert not text or text.endswith("\n"), segment
        records += [json.loads(line) for line in text.splitlines()]
    return records


def _keys(records: list[dict], kind: str) -> set[tuple[str, int, str]]:
    return {(r["variant"], r["trial"], r["case"]) for r in records if r["type"] == kind}


def _left(run_dir: Path, total: int) -> tuple[int, int]:
    """(attempts without an ``attempt`` record, those of them with an ``answered`` one)."""
    records = _records(run_dir)
    finished = _keys(records, "attempt")
    return total - len(finished), len(_keys(records, "answered") - finished)


def _wait(process: subprocess.Popen, ready, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while not ready():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.01)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _answered_all(run_dir: Path, total: int, log: Path, judged_before: int) -> bool:
    """Every target has answered (its reply journaled) and a judge call of this session
    has started: the run is in its final judge drain."""
    if not any(run_dir.glob("journal/*.jsonl")):
        return False
    records = _records_so_far(run_dir)
    return len(_keys(records, "answered")) == total and len(_lines(log)) > judged_before


def _records_so_far(run_dir: Path) -> list[dict]:
    """The journal while it is written: a last line may be torn."""
    records = []
    for segment in sorted((run_dir / "journal").glob("*.jsonl")):
        *whole, _torn_or_empty = segment.read_text(encoding="utf-8").split("\n")
        records += [json.loads(line) for line in whole]
    return records


def _api_session(run_dir: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", API_SCRIPT, str(run_dir)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ctrl_c_during_the_final_judge_drain_of_a_python_api_run(tmp_path):
    """It raised out of asyncio.Runner as a bare KeyboardInterrupt, after judging the whole
    queue anyway; now the run returns ``interrupted``, leaving the judgings not started to
    the resume. Interrupted twice (the second time while judging the replies the first
    session left), then finished: every reply judged once, every target called once."""
    run_dir, log = tmp_path / "run", tmp_path / "judge.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), SLOW_JUDGE_LOG: str(log)}
    for session in (1, 2):
        judged_before = len(_lines(log))
        process = _api_session(run_dir, {**env, SLOW_JUDGE_SECONDS: "0.5"})
        _wait(
            process,
            lambda: _answered_all(run_dir, API_ATTEMPTS, log, judged_before),  # noqa: B023
            "judging every reply",
        )
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert "Traceback" not in err, err
        summary = json.loads(out.strip().splitlines()[-1])
        remaining, awaiting = _left(run_dir, API_ATTEMPTS)
        assert summary["interrupted"] is True, session
        assert (summary["remaining"], summary["awaiting_judge"]) == (remaining, awaiting)
        # Every target had answered: what is left only waits for its judge, and the
        # judgings not started were left to the resume (those started finished).
        assert 0 < awaiting == remaining
        assert len(_lines(log)) < API_ATTEMPTS
        assert summary["text"] == (
            f"{awaiting} attempt{'s' * (awaiting != 1)} answered and awaiting a judge "
            "(judged on resume, not called again)"
        )
        # The Comparator's summary says the same (it counted them as "remaining")
        assert f"Incomplete: {summary['text']}" in summary["summary"]
    process = _api_session(run_dir, {**env, SLOW_JUDGE_SECONDS: "0"})
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1])["remaining"] == 0
    judged = Counter(_lines(log))
    assert len(judged) == API_ATTEMPTS and set(judged.values()) == {1}, judged
    records = _records(run_dir)
    assert sum(r["type"] == "call" for r in records) == API_ATTEMPTS  # no target called twice


def test_ctrl_c_during_the_final_judge_drain_of_experiment_run(write_experiment, tmp_path):
    """The command line exited 130 without a word (typer turned the KeyboardInterrupt into
    its exit code) after judging the whole queue; now it says what is left and how to
    resume, in the counts of the progress line and the journal."""
    cases = simple_cases([f"parcel {i}" for i in range(8)])
    for case in cases:
        case["evaluators"] = [{"name": "slow_judge", "threshold": 0.5}]
    manifest, suite = write_experiment([variant("a", "answer")], cases=cases, trial_count=1)
    total = 3 * 8  # the fixture adds two filler variants
    run_dir, log = tmp_path / "run", tmp_path / "judge.log"
    argv = [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run"]
    process = subprocess.Popen(
        [
            *argv,
            *(str(manifest), str(suite), "--run-dir", str(run_dir), "--concurrency", "2"),
            *("--evaluators", "tests.judge_fakes:slow_registry"),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300", SLOW_JUDGE_LOG: str(log)},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait(process, lambda: _answered_all(run_dir, total, log, 0), "judging every reply")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, out + err
    assert "Traceback" not in out + err
    remaining, awaiting = _left(run_dir, total)
    assert 0 < awaiting == remaining
    assert (
        f"Interrupted: {awaiting} attempt{'s' * (awaiting != 1)} answered and awaiting a "
        f"judge (judged on resume, not called again); resume with --run-dir {run_dir}"
    ) in err
    # The progress line counted the answered attempts as done: all of them.
    done = re.findall(r": (\d+)/(\d+) attempts", err)
    assert done and done[-1] == (str(total), str(total)), err


def test_the_interrupt_counts_agree_with_the_journal_and_the_progress_line(
    write_experiment, tmp_path, capsys
):
    """Interrupted while calls are still made: the attempts still to call are the progress
    line's missing ones, those answered and awaiting a judge are counted apart."""
    cases = simple_cases([f"parcel {i}" for i in range(60)])
    for case in cases:
        case["evaluators"] = [{"name": "slow_judge", "threshold": 0.5}]
    module = tmp_path / "paced.py"
    module.write_text(
        "import time\n\n\ndef answer(text, case=None):\n"
        "    time.sleep(0.02)\n    return {'output': 'refund ' + text}\n"
    )
    manifest, suite = write_experiment(
        [variant("sync", f"{module}:answer")], cases=cases, trial_count=1
    )
    total = 3 * 60  # the fixture adds two filler variants
    calls: list[str] = []
    lock = threading.Lock()
    judges = EvaluatorRegistry()

    @judges.register_judge("slow_judge")
    def slow_judge(output, case, trace, config):  # type: ignore[no-untyped-def]
        with lock:
            calls.append(case.id)
            if len(calls) == 10:
                os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)  # slower than the target: replies queue up for the judge
        return 1.0

    run_dir = tmp_path / "run"
    result = run_experiment(
        manifest, suite, evaluators=judges, progress=True, run_dir=run_dir, concurrency=2
    )
    assert result.interrupted
    remaining, awaiting = _left(run_dir, total)
    assert (result.remaining, result.awaiting_judge) == (remaining, awaiting)
    to_call = remaining - awaiting
    assert to_call > 0 and awaiting > 0
    assert result.remaining_text == (
        f"{to_call} attempt{'s' * (to_call != 1)} still to call, {awaiting} answered and "
        "awaiting a judge (judged on resume, not called again)"
    )
    done, of = map(int, re.findall(r": (\d+)/(\d+) attempts", capsys.readouterr().err)[-1])
    assert (of, of - done) == (total, to_call)


def test_ctrl_c_while_the_tables_are_written_is_an_interrupt_too(
    write_experiment, tmp_path, monkeypatch
):
    """After the last attempt, the run builds and writes its tables without yielding to the
    event loop: a Ctrl-C then took effect only as the run ended, as a bare
    KeyboardInterrupt with the finished run's result lost."""
    from agenticlens_frames.frames import ExperimentRun

    manifest, suite = write_experiment([variant("a", "answer")], trial_count=1)
    write = ExperimentRun.to_parquet

    def interrupted_while_written(run: ExperimentRun, folder: str | Path) -> Path:
        os.kill(os.getpid(), signal.SIGINT)  # on this (the main) thread: handled right away
        return write(run, folder)

    monkeypatch.setattr(ExperimentRun, "to_parquet", interrupted_while_written)
    try:
        result = run_experiment(manifest, suite, progress=False, run_dir=tmp_path / "run")
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C while the tables were written raised KeyboardInterrupt")
    assert result.interrupted and result.complete
    assert result.remaining_text == "every attempt is done"
    assert (tmp_path / "run" / "tables").is_dir()


def test_experiment_run_interrupted_after_the_last_attempt_stops(
    write_experiment, tmp_path, monkeypatch
):
    """The same Ctrl-C on the command line: exit 130 and the message, not the outputs (and
    no longer a silent 130)."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import EXIT_INTERRUPTED, app
    from agenticlens_frames.frames import ExperimentRun

    manifest, suite = write_experiment([variant("a", "answer")], trial_count=1)
    write = ExperimentRun.to_parquet

    def interrupted_while_written(run: ExperimentRun, folder: str | Path) -> Path:
        os.kill(os.getpid(), signal.SIGINT)
        return write(run, folder)

    monkeypatch.setattr(ExperimentRun, "to_parquet", interrupted_while_written)
    run_dir, report = tmp_path / "run", tmp_path / "r.json"
    argv = ["experiment", "run", str(manifest), str(suite), "-q", "--run-dir", str(run_dir)]
    result = CliRunner().invoke(app, [*argv, "--save", str(report)])
    assert result.exit_code == EXIT_INTERRUPTED, result.output
    assert f"Interrupted: every attempt is done; resume with --run-dir {run_dir}" in result.output
    assert not report.exists()
