"""Misbehaving live python targets for the fault tests (deterministic in the case id)."""

from __future__ import annotations

import math
import os
import time


def _ok(case_id: str) -> dict:
    return {
        "output": f"refund for {case_id}",
        "trace": {"spans": [{"tool_name": "lookup_order"}], "total_latency_ms": 10.0},
    }


def hangs(text, case=None):
    """Never answers in time on the first case."""
    if case is not None and case.id == "c1":
        time.sleep(float(os.environ.get("FAULT_HANG_SECONDS", "5")))
    return _ok(case.id if case else "?")


def crashes(text, case=None):
    if case is not None and case.id == "c2":
        raise MemoryError("simulated crash inside the agent")
    return _ok(case.id if case else "?")


GARBAGE = [
    b"\x00\xff bytes",
    None,
    42,
    float("nan"),
    ["a", "list"],
    {"output": 12},
    {"output": "x", "trace": "not a trace"},
    {"output": "x", "trace": {"total_latency_ms": math.inf}},
    {"output": "x", "trace": {"spans": [[[[[]]]]]}},
    object(),
]


def garbage(text, case=None):
    index = int(case.id[1:]) if case is not None else 0
    return GARBAGE[index % len(GARBAGE)]


def huge_output(text, case=None):
    return {"output": "x" * int(os.environ.get("FAULT_OUTPUT_CHARS", "5000")), "trace": {}}


def good(text, case=None):
    return _ok(case.id if case else "?")


def exits_hard(text, case=None):
    """Ends the whole process on case c2, as a careless agent might."""
    if case is not None and case.id == "c2":
        os._exit(int(os.environ.get("FAULT_EXIT_STATUS", "0")))
    return _ok(case.id if case else "?")
