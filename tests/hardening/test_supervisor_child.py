"""The child the supervisor of ``experiment run`` watches (``_supervise.py``): forked from
the parent where that is safe, a new interpreter (``python -P -m``) where it is not, and
the same process from the inside either way — its own process group, the parent's signal
handlers and mask as a new interpreter has them, the supervisor's environment, the same
arguments and ``sys.path``, the terminal — and started again from the parent, which never
ran the job, after an attempt that ended it."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agenticlens_frames import _supervise
from agenticlens_frames.runner.inflight import INFLIGHT_ENV

from ._round2 import ROOT, children
from .test_processes import CASES, MODULE

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

#: ``main()`` with another thread running: forking is unsafe, so the child is exec'ed.
WITH_A_THREAD = """
import threading
release = threading.Event()
threading.Thread(target=release.wait, daemon=True).start()
from agenticlens_frames.cli import main
main()
"""

#: How the test starts the CLI, by the kind of child its supervisor should start.
LAUNCH = {
    "forked": ["-m", "agenticlens_frames.cli"],
    "interpreter": ["-c", WITH_A_THREAD],
}
#: The same as code for ``-c``.
LAUNCH_CODE = {
    "forked": "from agenticlens_frames.cli import main\nmain()\n",
    "interpreter": WITH_A_THREAD,
}
#: Started as a shell starts a background job (``cmd &`` in a script): SIGINT ignored.
IGNORING_SIGINT = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"


def _experiment(folder: Path, targets: list[str], cases: list[dict]) -> tuple[Path, Path]:
    variants = [
        {"id": f"v{n}", "name": f"v{n}", "target_kind": "python", "target": target}
        for n, target in enumerate(targets)
    ]
    manifest = {
        "name": "probe",
        "version": "1",
        "baseline_variant_id": "v0",
        "trial_count": 2,
        "random_seed": 3,
        "variants": variants,
    }
    (folder / "m.yaml").write_text(yaml.safe_dump(manifest))
    (folder / "s.yaml").write_text(yaml.safe_dump({"name": "s", "version": "1", "cases": cases}))
    return folder / "m.yaml", folder / "s.yaml"


def _start(
    how: str, folder: Path, targets: list[str], *args: str, cases: list[dict] = CASES, **extra: str
) -> tuple[subprocess.Popen, int]:
    """The CLI in ``folder`` (its working directory), stdout a 40 × 123 terminal."""
    manifest, suite = _experiment(folder, targets, cases)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm-256color", **extra)
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 123, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, *LAUNCH[how], "experiment", "run", str(manifest), str(suite), *args],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(terminal)
    return proc, main


def test_the_child_is_forked_and_looks_like_a_new_interpreter_from_inside(tmp_path):
    running = {}
    for how in LAUNCH:
        folder = tmp_path / how
        folder.mkdir()
        probe = folder / "probe.jsonl"
        running[how] = (
            *_start(
                how,
                folder,
                [f"{MODULE}:{t}" for t in ("plain_target", "probed_target", "plain_target")],
                "-q",
                "--save",
                str(folder / "r.json"),
                EXIT_KIND="os_exit0",  # case c2 of v1 ends the process: restarts
                PROBE_FILE=str(probe),
                PROBE_ENV=json.dumps([_supervise.DONE_ENV, INFLIGHT_ENV]),
            ),
            probe,
        )
    seen = {}
    for how, (proc, terminal, probe) in running.items():
        _, err = proc.communicate(timeout=180)
        os.close(terminal)
        assert proc.returncode == 0, (how, err)
        assert "resuming" in err, (how, err)
        # Both trials' c2 of v1 failed with the reason; every other attempt is there.
        assert (tmp_path / how / "r.json").read_text().count("ProcessEnded") >= 2, how
        lines = [json.loads(line) for line in probe.read_text().splitlines()]
        calls = [f for f in lines if f["event"] == "called"]
        children = {f["pid"] for f in calls}
        assert len(children) >= 2, (how, lines)  # restarted after the attempt that ended it
        imported = {f["pid"] for f in lines if f["event"] == "imported"}
        # Each child imported the target itself: the parent it came from never ran the job.
        assert children <= imported, (how, lines)
        for facts in lines:
            assert facts["ppid"] == proc.pid, (how, facts)  # every child, the parent's
            assert facts["pgid"] == facts["pid"] != facts["parent_pgid"], (how, facts)
            assert all(facts["env"].values()), (how, facts)
            assert facts["blocked"] == "0000000000000000", (how, facts)
            assert str(tmp_path / how) not in facts["path"], (how, facts)
            assert "" not in facts["path"], (how, facts)
            # The command line, and the private run folder the supervisor added.
            folder = tmp_path / how
            given = [str(folder / "m.yaml"), str(folder / "s.yaml"), "-q", "--save"]
            assert facts["argv"][:-1] == [
                "experiment",
                "run",
                *given,
                str(folder / "r.json"),
                "--run-dir",
            ], facts
            if how == "forked":
                assert facts["cmdline"] == facts["parent_cmdline"], facts
            else:
                assert facts["cmdline"][1:4] == ["-P", "-m", "agenticlens_frames.cli"], facts
        seen[how] = lines
    forked, interpreter = seen["forked"][0], seen["interpreter"][0]
    for key in ("handlers", "terminal", "path", "env", "blocked"):
        assert forked[key] == interpreter[key], (key, forked[key], interpreter[key])
    assert forked["terminal"][:2] == [True, 123]


def _start_hanging(how: str, tmp_path: Path, seconds: int) -> tuple[Any, int, Path]:
    """A run whose case c1 answers after ``seconds`` and c2 at once, returned (process,
    terminal, run folder) once the journal holds c2's attempt."""
    run_dir = tmp_path / "run"
    hangs = f"{MODULE.parent / 'fault_targets.py'}:hangs"
    proc, terminal = _start(
        how,
        tmp_path,
        [hangs] * 3,
        "-q",
        "--run-dir",
        str(run_dir),
        cases=[CASES[1], CASES[0]],
        FAULT_HANG_SECONDS=str(seconds),
    )
    deadline = time.monotonic() + 60
    while not any(p.stat().st_size for p in run_dir.glob("journal/*.jsonl")):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            _, err = proc.communicate(timeout=30)
            os.close(terminal)
            pytest.fail(f"no attempt was journaled: {err}")
        time.sleep(0.05)
    return proc, terminal, run_dir


@pytest.mark.parametrize("how", list(LAUNCH))
def test_ctrl_c_gives_130_and_keeps_finished_work(tmp_path, how):
    proc, terminal, run_dir = _start_hanging(how, tmp_path, 30)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    os.close(terminal)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "resume with --run-dir" in err
    assert '"type":"attempt"' in "".join(p.read_text() for p in run_dir.glob("journal/*.jsonl"))


@pytest.mark.parametrize(
    ("raised", "code", "printed"),
    [
        (SystemExit(None), 0, ""),
        (SystemExit(3), 3, ""),
        (SystemExit("bye"), 1, "bye\n"),
        (ValueError("broken"), 1, "ValueError: broken"),
    ],
)
def test_exit_status_is_the_interpreters(capsys, raised, code, printed):
    def command() -> None:
        raise raised

    assert _supervise._exit_status(command) == code
    err = capsys.readouterr().err
    assert printed in err
    assert ("Traceback" in err) == isinstance(raised, ValueError)


def test_exit_status_of_a_command_that_returns_is_0():
    assert _supervise._exit_status(lambda: None) == 0


def test_forked_child_is_waited_for_as_popen_waits():
    sleeper = os.posix_spawn("/bin/sleep", ["sleep", "30"], os.environ)
    child = _supervise._Forked(sleeper)
    child.send_signal(signal.SIGTERM)
    assert child.wait() == -signal.SIGTERM
    assert child.wait() == -signal.SIGTERM  # reaped once, remembered
    child.send_signal(signal.SIGTERM)  # ended: nothing is sent (its pid may be reused)
    quick = _supervise._Forked(os.posix_spawn("/bin/sh", ["sh", "-c", "exit 3"], os.environ))
    assert quick.wait() == 3


def test_a_signal_to_a_child_that_ended_unreaped_is_not_sent():
    zombie = _supervise._Forked(os.posix_spawn("/bin/true", ["true"], os.environ))
    deadline = time.monotonic() + 30
    while os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    zombie.send_signal(signal.SIGTERM)  # a zombie: not signalled, not reaped
    assert zombie.wait() == 0  # its own status, not the signal's


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; whoever adopted it reaps it


@pytest.mark.parametrize("how", list(LAUNCH))
def test_the_child_dies_with_its_parent(tmp_path, how):
    proc, terminal, _ = _start_hanging(how, tmp_path, 60)
    try:
        (child,) = children(proc.pid)
        assert _alive(child)
        proc.kill()  # SIGKILL: the parent cannot pass anything on
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(child):
            assert time.monotonic() < deadline, "the child outlived its parent"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
        os.close(terminal)


def test_exit_now_flushes_and_skips_the_teardown():
    probe = (
        "import atexit, sys\n"
        "from agenticlens_frames._supervise import exit_now\n"
        "atexit.register(print, 'teardown')\n"
        "sys.stdout.write('buffered')\n"
        "sys.stderr.write('said')\n"
        "exit_now(5)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (5, "buffered", "said")


# ------------------------------------------------------------------ stop signals

#: The parent asked to stop while its child cannot act on it yet: the child marks three
#: attempts in flight, sends the parent a signal and dies of what the parent passes on.
STOPPED_EARLY = """
import os, signal, sys, time
from agenticlens_frames._supervise import supervise
from agenticlens_frames.runner.inflight import InflightLog

run_dir, calls, name = sys.argv[1:]


def command():
    with open(calls, "a") as f:
        f.write(f"{os.getpid()}\\n")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)  # no handler yet: a signal ends the process
    log = InflightLog.from_env()
    for case in ("c1", "c2", "c3"):
        log.started("v0", 1, case)
    os.kill(os.getppid(), getattr(signal, name))
    time.sleep(60)


sys.exit(supervise(["experiment", "run", "m.yaml", "s.yaml", "--run-dir", run_dir], command))
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_after_passing_a_signal_on_the_parent_never_blames_nor_restarts(tmp_path, name):
    run_dir, calls = tmp_path / "run", tmp_path / "calls"
    done = subprocess.run(
        [sys.executable, "-c", STOPPED_EARLY, str(run_dir), str(calls), name],
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 130, done.stderr
    assert len(calls.read_text().splitlines()) == 1, done.stderr  # not started again
    assert not list(run_dir.glob("journal/*.jsonl")), done.stderr  # nothing blamed
    assert f"Stopped by {name} before the run finished" in done.stderr
    assert f"run again with --run-dir {run_dir} to resume" in done.stderr


def _report(folder: Path, run_dir: Path, how: str, seconds: int) -> dict:
    """`experiment run` of the hanging experiment, to its end, in ``run_dir``."""
    hangs = f"{MODULE.parent / 'fault_targets.py'}:hangs"
    proc, terminal = _start(
        how,
        folder,
        [hangs] * 3,
        *("-q", "--run-dir", str(run_dir), "--save", str(folder / "r.json")),
        cases=[CASES[1], CASES[0]],
        FAULT_HANG_SECONDS=str(seconds),
    )
    _, err = proc.communicate(timeout=180)
    os.close(terminal)
    assert proc.returncode == 0, err
    return json.loads((folder / "r.json").read_text())


#: How the CLI is told to stop: the signal, and whether it was started ignoring SIGINT
#: (a background job of a script, `cmd &`, is).
STOPS = {
    "SIGTERM": (signal.SIGTERM, False),
    "SIGHUP": (signal.SIGHUP, False),
    "SIGTERM, SIGINT ignored": (signal.SIGTERM, True),
}


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("how", list(LAUNCH))
def test_sigterm_and_sighup_stop_the_run_as_ctrl_c_does(tmp_path, how, stop, monkeypatch):
    """What `timeout`, `docker stop` or a CI's cancel sends: exit 130, finished work kept,
    the calls in flight not recorded as failures, resumable; the resumed run reports what
    an uninterrupted one does."""
    from .test_processes import _outcomes

    signum, ignoring = STOPS[stop]
    if ignoring:
        # Started as `sh` starts a background job: SIGINT ignored, in the CLI too.
        monkeypatch.setitem(LAUNCH, how, ["-c", IGNORING_SIGINT + LAUNCH_CODE[how]])
    proc, terminal, run_dir = _start_hanging(how, tmp_path, 30)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    os.close(terminal)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "resume with --run-dir" in err, err
    assert "resuming" not in err, err  # not started again
    journal = "".join(p.read_text() for p in run_dir.glob("journal/*.jsonl"))
    assert '"type":"attempt"' in journal
    assert "ProcessEnded" not in journal and '"suspect"' not in journal
    (tmp_path / "resumed").mkdir()
    resumed = _report(tmp_path / "resumed", run_dir, how, 0)
    (tmp_path / "fresh").mkdir()
    fresh = _report(tmp_path / "fresh", tmp_path / "fresh" / "run", how, 0)
    assert _outcomes(resumed) == _outcomes(fresh)
    assert "ProcessEnded" not in json.dumps(resumed)
