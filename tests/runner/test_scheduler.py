"""The scheduler's decisions for one attempt: how many calls, what is journaled, and when.

Each test runs one :class:`WorkItem` against a scripted target, a journal that keeps
what it is given, and (where timing is recorded) a fake clock, so the expected records
are written out by hand from the retry policy, with no wall-clock assertion.
"""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace
from typing import Any

import pytest

from agenticlens_frames.formats.model import CaseSpec
from agenticlens_frames.runner import scheduler
from agenticlens_frames.runner.retry import RetryPolicy, TargetFailure
from agenticlens_frames.runner.scheduler import Scheduler, VariantPlan, WorkItem

CASE = CaseSpec(id="c1", name="c1", index=0)


class ScriptedTarget:
    """Raises the scripted failures in turn, then answers ``{"output": "hi"}``."""

    def __init__(self, failures: list[TargetFailure]) -> None:
        self.failures = list(failures)
        self.calls = 0

    async def call(self, case: CaseSpec) -> Any:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"output": "hi"}

    def close(self) -> None:
        pass


class KeptJournal:
    """Keeps every appended record (the scheduler's only use of the journal)."""

    error: BaseException | None = None

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def append(self, record: dict[str, Any], scoring: Any = None) -> None:
        self.records.append(record)


def _run(target: ScriptedTarget, policy: RetryPolicy, item: WorkItem) -> tuple[Scheduler, list]:
    journal = KeptJournal()
    plans = {"v": VariantPlan(target=target, limit=1, retry=policy)}
    sched = Scheduler(plans, [item], concurrency=1, journal=journal, session="s1")  # type: ignore[arg-type]
    asyncio.run(sched.run())
    return sched, journal.records


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Timestamps "t1", "t2", ... and perf_counter readings 0, 0.25, 1, 1.5, 2, 3 s."""
    stamps = (f"t{n}" for n in itertools.count(1))
    monkeypatch.setattr(scheduler, "now_iso", lambda: next(stamps))
    readings = iter([0.0, 0.25, 1.0, 1.5, 2.0, 3.0])
    monkeypatch.setattr(scheduler, "time", SimpleNamespace(perf_counter=lambda: next(readings)))


def test_a_target_failing_twice_then_answering_is_called_three_times(clock):
    failures = [TargetFailure("http_5xx", "HTTPError: 502", detail="bad gateway")]
    failures.append(TargetFailure("http_5xx", "HTTPError: 503"))
    target = ScriptedTarget(failures)
    policy = RetryPolicy(attempts=4, retry_on=frozenset({"http_5xx"}))
    sched, records = _run(target, policy, WorkItem(0, "v", 1, CASE))
    # Two retryable failures within 4 attempts: the third call answers, and is the last.
    assert target.calls == 3
    base = {"variant": "v", "trial": 1, "case": "c1", "session": "s1"}
    assert records == [
        # elapsed: (0.25 - 0) s, (1.5 - 1) s, (3 - 2) s, in ms
        {"type": "call", **base, "call": 1, "outcome": "http_5xx", "error": "HTTPError: 502"}
        | {"elapsed_ms": 250.0, "started_at": "t1", "detail": "bad gateway"},
        # no detail: no key
        {"type": "call", **base, "call": 2, "outcome": "http_5xx", "error": "HTTPError: 503"}
        | {"elapsed_ms": 500.0, "started_at": "t2"},
        {"type": "call", **base, "call": 3, "outcome": "ok", "error": None}
        | {"elapsed_ms": 1000.0, "started_at": "t3"},
        # the attempt started with its first call; its time is the three calls' sum
        {"type": "attempt", **base, "status": "ok", "calls": 3, "error": None}
        | {"payload": {"output": "hi"}, "elapsed_ms": 1750.0, "started_at": "t1"},
    ]
    assert sched.unanswered == 0


def test_a_target_failing_every_call_is_called_as_often_as_the_policy_allows():
    target = ScriptedTarget([TargetFailure("timeout", f"TimeoutError: {n}") for n in range(5)])
    policy = RetryPolicy(attempts=3)
    sched, records = _run(target, policy, WorkItem(0, "v", 1, CASE))
    assert target.calls == 3
    attempt = records[-1]
    assert (attempt["type"], attempt["status"], attempt["calls"]) == ("attempt", "timed_out", 3)
    assert attempt["error"] == "TimeoutError: 2"
    assert sched.unanswered == 1


def test_a_resumed_attempt_with_a_retry_left_is_called_once_more():
    # Three calls of an earlier session failed; the last (http_5xx) is retried, the
    # timeout before it would not be: only the last one decides.
    prior = (("http_5xx", "HTTPError: 500"), ("timeout", "TimeoutError"), ("http_5xx", "HTTPError"))
    target = ScriptedTarget([])
    policy = RetryPolicy(attempts=5, retry_on=frozenset({"http_5xx"}))
    sched, records = _run(target, policy, WorkItem(0, "v", 1, CASE, prior_failures=prior))
    assert target.calls == 1
    assert [(r["type"], r["call"]) for r in records[:-1]] == [("call", 4)]
    assert (records[-1]["status"], records[-1]["calls"]) == ("ok", 4)
    assert sched.unanswered == 0


@pytest.mark.parametrize(
    ("prior", "status"),
    [
        # the budget is spent: 3 calls of 3
        ((("timeout", "a"), ("http_5xx", "b"), ("timeout", "TimeoutError: c")), "target_error"),
        # a failure the policy does not retry, with calls left
        ((("timeout", "TimeoutError: c"),), "timed_out"),
    ],
)
def test_a_resumed_attempt_with_no_retry_left_is_finished_without_a_call(prior, status):
    target = ScriptedTarget([])
    policy = RetryPolicy(attempts=3, retry_on=frozenset({"http_5xx"}))
    sched, records = _run(target, policy, WorkItem(0, "v", 1, CASE, prior_failures=prior))
    assert target.calls == 0
    [attempt] = records
    assert attempt["type"] == "attempt" and attempt["status"] == status
    assert attempt["calls"] == len(prior) and attempt["error"] == "TimeoutError: c"
    assert attempt["elapsed_ms"] == 0.0 and attempt["payload"] is None
    assert sched.unanswered == 1


def test_a_journaled_reply_is_judged_without_a_call_unless_it_is_no_longer_valid():
    answered = {"variant": "v", "trial": 1, "case": "c1", "session": "s0", "status": "ok"}
    answered |= {"calls": 2, "error": None, "elapsed_ms": 7.0, "started_at": "t0"}
    ok = answered | {"type": "answered", "payload": {"output": "earlier"}}
    target = ScriptedTarget([])
    _, records = _run(target, RetryPolicy(), WorkItem(0, "v", 1, CASE, answered=ok))
    assert target.calls == 0
    assert records == [{**ok, "type": "attempt"}]
    # An output that is not a string is no sample: the target is called instead.
    bad = answered | {"type": "answered", "payload": {"output": 5}}
    _, records = _run(target, RetryPolicy(), WorkItem(0, "v", 1, CASE, answered=bad))
    assert target.calls == 1
    assert [(r["type"], r["calls" if r["type"] == "attempt" else "call"]) for r in records] == [
        ("call", 1),
        ("attempt", 1),
    ]
    assert records[-1]["payload"] == {"output": "hi"} and records[-1]["session"] == "s1"


class SettlingJournal(KeptJournal):
    """Tells the scheduler each record is on disk as it is appended (as the writer does)."""

    scheduler: Scheduler

    def append(self, record: dict[str, Any], scoring: Any = None) -> None:
        super().append(record, scoring)
        self.scheduler.settled(record)


def test_a_suspect_is_called_when_an_invalid_payload_fails_only_its_case():
    # invalid_payload="case": no trial is failed, so no item is skipped, isolated or not.
    target = ScriptedTarget([])
    journal = SettlingJournal()
    plans = {"v": VariantPlan(target=target, limit=1)}
    item = WorkItem(0, "v", 1, CASE, isolated=True)
    sched = Scheduler(
        plans,
        [item],
        concurrency=1,
        journal=journal,  # type: ignore[arg-type]
        session="s1",
        stop_trial_on_invalid=False,
    )
    journal.scheduler = sched
    asyncio.run(sched.run())
    assert target.calls == 1 and sched.skipped == 0
    assert [r["type"] for r in journal.records] == ["call", "attempt"]


class FailingJournal(KeptJournal):
    """Raises (a bug of ours) on the attempt record of case ``c1``."""

    def append(self, record: dict[str, Any], scoring: Any = None) -> None:
        if record["type"] == "attempt" and record["case"] == "c1":
            raise RuntimeError("journal bug")
        super().append(record, scoring)


def test_a_bug_of_ours_stops_the_run_before_any_further_call():
    # c1 and c2 start together (concurrency 2); c1's record raises. c2, already running,
    # finishes, but its freed slot starts nothing: c3 is never called.
    cases = [CaseSpec(id=f"c{n}", name=f"c{n}", index=n - 1) for n in (1, 2, 3)]
    target = ScriptedTarget([])
    plans = {"v": VariantPlan(target=target, limit=2)}
    items = [WorkItem(n, "v", 1, case) for n, case in enumerate(cases)]
    sched = Scheduler(plans, items, concurrency=2, journal=FailingJournal(), session="s1")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="journal bug"):
        asyncio.run(sched.run())
    assert target.calls == 2 and sched.started == 2
