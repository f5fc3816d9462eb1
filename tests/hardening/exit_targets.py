"""Targets and evaluators that try to end the run (issue 15, "the run must not end
silently"). The behaviour is chosen by name; case c2 is the one that misbehaves."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from agenticlens_frames.evaluators import EvaluatorRegistry


class Custom(BaseException):
    """Not an Exception: a careless agent's control-flow signal."""


RAISES = {
    "sysexit0": lambda: SystemExit(0),
    "sysexit3": lambda: SystemExit(3),
    "sysexit_text": lambda: SystemExit("bye"),
    "keyboard": lambda: KeyboardInterrupt(),
    "generator_exit": lambda: GeneratorExit(),
    "cancelled": lambda: asyncio.CancelledError(),
    "custom_base": lambda: Custom("custom"),
}

ENDS = {
    "os_exit0": lambda: os._exit(0),
    "os_exit3": lambda: os._exit(3),
    "sigkill_self": lambda: os.kill(os.getpid(), signal.SIGKILL),
    "sigterm_self": lambda: os.kill(os.getpid(), signal.SIGTERM),
    "abort": lambda: os.abort(),
}


def _ok() -> dict:
    return {"output": "refund issued", "trace": {"spans": [{"tool_name": "lookup_order"}]}}


def _misbehave(name: str) -> None:
    if name in RAISES:
        raise RAISES[name]()
    ENDS[name]()


def plain_target(text, case=None):
    return _ok()


def sync_target(text, case=None):
    if case is not None and case.id == "c2":
        _misbehave(os.environ["EXIT_KIND"])
    return _ok()


async def async_target(text, case=None):
    await asyncio.sleep(0)
    if case is not None and case.id == "c2":
        _misbehave(os.environ["EXIT_KIND"])
    return _ok()


def _evaluate(output, case, trace, config):
    if case.id == "c2":
        _misbehave(os.environ["EXIT_KIND"])
    return 1.0, "fine"


registry = EvaluatorRegistry()
registry.register("judge", _evaluate, version="1")


def _logged(variant: str, case, output: str) -> dict:
    with open(os.environ["CALL_LOG"], "a") as f:
        f.write(f"{variant} {case.id if case is not None else '?'}\n")
    return {**_ok(), "output": output}


def logged_target(text, case=None):
    """Answers like plain_target, logging each call to $CALL_LOG."""
    return _logged("v0 or v2", case, "refund issued")


def logged_fatal_target(text, case=None):
    """Answers case c2 with what judge_registry's judge cannot take; logs each call."""
    fatal = case is not None and case.id == "c2"
    return _logged("v1", case, "refund issued (fatal)" if fatal else "refund issued")


def _llm(output, case, trace, config):
    """A judge that ends the run's process (EXIT_KIND) on a fatal answer."""
    if "fatal" in output:
        _misbehave(os.environ["EXIT_KIND"])
    return {"value": 0.9, "explanation": "fine"}


judge_registry = EvaluatorRegistry()
judge_registry.register_judge("llm", _llm, version="1", samples=2)


def _fine(output, case, trace, config):
    return {"value": 0.9, "explanation": "fine"}


def _crash(output, case, trace, config):
    """A plain evaluator that ends the run's process (EXIT_KIND) on a fatal answer."""
    if "fatal" in output:
        _misbehave(os.environ["EXIT_KIND"])
    return 1.0, "fine"


# The case's judge is fine; its plain evaluator ends the process (run again on resume).
evaluator_registry = EvaluatorRegistry()
evaluator_registry.register_judge("llm", _fine, version="1", samples=2)
evaluator_registry.register("crash", _crash, version="1")

# ------------------------------------------------ several attempts in flight at an end


def _mark(event: str, tag: str, case) -> None:
    """One line of $CALL_LOG: ``start|end <variant> <case> <pid>``."""
    with open(os.environ["CALL_LOG"], "a") as f:
        f.write(f"{event} {tag} {case.id} {os.getpid()}\n")


def _answer(tag: str, case) -> dict:
    """Deterministic, and not the same for every attempt (so the numbers compared differ
    between variants and cases)."""
    word = "refund" if sum(map(ord, tag + case.id)) % 3 else "no"
    trace = {"spans": [{"tool_name": "lookup_order"}], "total_latency_ms": 10.0}
    return {"output": f"{word} issued", "trace": trace}


def _wait_for_gate() -> None:
    """Wait until the file $GATE exists (at most a minute). A gate naming this process was
    opened by the call that is ending it: wait on, for the end."""
    import time

    gate = os.environ["GATE"]
    for _ in range(6000):
        if os.path.exists(gate):
            break
        time.sleep(0.01)
    with open(gate) as f:
        if f.read() == str(os.getpid()):
            time.sleep(60)


def _gated(tag: str, case) -> dict:
    _mark("start", tag, case)
    _wait_for_gate()
    _mark("end", tag, case)
    return _answer(tag, case)


def gated_v0(text, case=None):
    """Answers once $GATE exists; logs its start and end to $CALL_LOG."""
    return _gated("v0", case)


def gated_v1(text, case=None):
    return _gated("v1", case)


def gated_v2(text, case=None):
    return _gated("v2", case)


def always_ends(text, case=None):
    """Ends the process (EXIT_KIND) on every call."""
    _misbehave(os.environ["EXIT_KIND"])


def fatal_among_others(text, case=None):
    """Answers at once, but case c2 ends the process (EXIT_KIND): the first time once two
    other calls of this process are in flight, opening $GATE for later processes (the
    calls of this one wait on)."""
    import time

    _mark("start", "v1", case)
    gate = os.environ["GATE"]
    if case.id == "c2":
        if not os.path.exists(gate):
            for _ in range(3000):
                with open(os.environ["CALL_LOG"]) as f:
                    marks = [line.split() for line in f]
                mine = [m[0] for m in marks if m[3] == str(os.getpid())]
                if mine.count("start") - mine.count("end") >= 3:
                    break
                time.sleep(0.01)
            with open(gate + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.replace(gate + ".tmp", gate)
        _misbehave(os.environ["EXIT_KIND"])
    _mark("end", "v1", case)
    return _answer("v1", case)


_CALLS_HERE: list[str] = []


def still_failing(text, case=None):
    """Fails every call (a target error), logging it to $CALL_LOG as ``<case> <pid>``. With
    $END_ONCE naming a file that does not exist yet, the fourth call of a process waits
    until the journal in $RUN_DIR holds the three failures before it, creates that file
    and ends the process: calls re-run before the end are on disk, one is in flight."""
    import glob
    import time

    with open(os.environ["CALL_LOG"], "a") as f:
        f.write(f"{case.id} {os.getpid()}\n")
    _CALLS_HERE.append(case.id)
    marker = os.environ.get("END_ONCE")
    if marker and not os.path.exists(marker) and len(_CALLS_HERE) == 4:
        for _ in range(3000):
            newest = sorted(glob.glob(os.path.join(os.environ["RUN_DIR"], "journal", "*")))[-1]
            with open(newest) as f:
                if f.read().count('"type":"attempt"') >= 3:
                    break
            time.sleep(0.01)
        open(marker, "w").close()
        os._exit(0)
    raise RuntimeError("still broken")


if os.environ.get("EXIT_AT_IMPORT"):
    _misbehave(os.environ["EXIT_AT_IMPORT"])
    sys.exit(0)  # not reached


def leaky_target(text, case=None):
    """Puts the secrets it can find into its output or its error, in various encodings."""
    import json as _json
    import urllib.parse as _parse
    from pathlib import Path as _Path

    key = os.environ.get("LEAK_API_KEY", "")
    dotenv = (_Path(os.environ.get("LEAK_DOTENV_DIR", ".")) / ".env").read_text()
    line = dotenv.splitlines()[0]
    which = case.id if case is not None else "c1"
    if which == "c1":
        raise RuntimeError(f"auth failed with key {key!r} (from {line})")
    if which == "c2":
        return {"output": f"echo {_parse.quote(key, safe='')} {_json.dumps(key)} {key.strip()}"}
    return {"output": "refund", "trace": {"metadata": {"echo": key, "line": line}}}


ODD_TEXT = {
    "lone_high": "refund \ud800 x",
    "lone_low": "refund \udfff x",
    "reversed_pair": "refund \udc00\ud800",
    "nul": "refund \x00 x",
    "bidi": "refund \u202e evil \u2066",
    "zero_width": "refund \u200b\u200d\ufeff",
    "nonchar": "refund \uffff \U0010ffff",
    "combining": "refund " + "e\u0301" * 500,
    "astral": "refund 😀" * 100,
    "long_cjk": "refund " + "漢" * 20000,
}


def odd_text_target(text, case=None):
    """Returns odd text in the output, the trace and an error, chosen by ODD_KIND."""
    odd = ODD_TEXT[os.environ["ODD_KIND"]]
    which = case.id if case is not None else "c1"
    if which == "c1":
        raise ValueError(f"failed on {odd}")
    return {
        "output": odd,
        "trace": {"spans": [{"tool_name": odd[:50]}], "metadata": {odd[:20]: odd}},
    }


async def ignores_cancellation(text, case=None):
    """Swallows every cancellation and keeps going (for a while)."""
    import time as _time

    end = _time.monotonic() + float(os.environ.get("STUBBORN_SECONDS", "20"))
    while _time.monotonic() < end:
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            continue
    return _ok()


async def blocks_its_loop(text, case=None):
    """An async target that calls time.sleep: blocks whatever loop runs it."""
    import time as _time

    _time.sleep(float(os.environ.get("STUBBORN_SECONDS", "20")))
    return _ok()


def sleeps(text, case=None):
    import time as _time

    _time.sleep(float(os.environ.get("STUBBORN_SECONDS", "20")))
    return _ok()


# ------------------------------------------------------------------ the run's process

_CHILD_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


def _process_facts(event: str) -> dict:
    """What a run's process looks like from inside (for the supervisor's child tests)."""
    import json as _json

    def cmdline(pid: int) -> list[str]:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode().split("\0")[:-1]

    with open("/proc/self/status") as f:
        blocked = next(line.split()[1] for line in f if line.startswith("SigBlk:"))
    handlers = {}
    for name in _CHILD_SIGNALS:
        handler = signal.getsignal(getattr(signal, name))
        handler = getattr(handler, "func", handler)  # asyncio's is a partial of a method
        handlers[name] = getattr(handler, "__qualname__", str(handler))
    try:
        from rich.console import Console

        console = Console()
        terminal = [console.is_terminal, console.width, console.color_system]
    except Exception as exc:  # reported, compared by the test
        terminal = [repr(exc)]
    return {
        "event": event,
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "pgid": os.getpgrp(),
        "parent_pgid": os.getpgid(os.getppid()),
        "cmdline": cmdline(os.getpid()),
        "parent_cmdline": cmdline(os.getppid()),
        "argv": sys.argv[1:],
        "path": sys.path,
        "env": {k: os.environ.get(k) is not None for k in _json.loads(os.environ["PROBE_ENV"])},
        "blocked": blocked,
        "handlers": handlers,
        "terminal": terminal,
    }


def _probe(event: str) -> None:
    import json as _json

    if os.environ.get("PROBE_FILE"):
        with open(os.environ["PROBE_FILE"], "a") as f:
            f.write(_json.dumps(_process_facts(event)) + "\n")


_probe("imported")  # once per process that imports this module


def probed_target(text, case=None):
    """Records its process on case c1, misbehaves (EXIT_KIND) on case c2."""
    if case is not None and case.id == "c1":
        _probe("called")
    return sync_target(text, case)


def damages_journal_target(text, case=None):
    """Case c2 damages a record of the run's journal (a line that is not JSON, not the
    torn last one) and ends the process: the supervisor then cannot read the journal."""
    if case is not None and case.id == "c2":
        journal = os.path.join(os.environ["RUN_DIR"], "journal")
        newest = max(name for name in os.listdir(journal) if name.endswith(".jsonl"))
        with open(os.path.join(journal, newest), "ab") as segment:
            segment.write(b"this line is no record\n")
        os._exit(0)
    return _ok()
