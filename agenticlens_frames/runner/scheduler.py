"""Calling live targets concurrently, in the experiment's order, within limits.

Every (variant, trial, case) still to do is one :class:`WorkItem`. Items are started in
the order AgenticLens would call them — the (variant, trial) execution order of the
manifest's ``random_seed``, cases in suite order — as fast as two limits allow: a global
one (``concurrency``) and one per variant (its ``concurrency``, else the manifest's
``max_workers``). When a variant is at its limit, the next item of another variant goes
first, so one slow target never idles the others. With both limits at 1 the calls are
made exactly in AgenticLens' order, one at a time.

Unlike AgenticLens, which runs one trial at a time, the limits apply across cases *and*
trials: trial 2 of a variant can start while trial 1 is still running.

Each item is tried under its variant's :class:`~.retry.RetryPolicy`; every call and the
final outcome go to the :class:`~.journal.JournalWriter` as they finish.

Items marked ``isolated`` (attempts that were in flight when the run's process ended: see
``_supervise.py``) go before all others, one at a time: each starts alone and the next
item, isolated or not, starts only once its ``attempt`` record is on disk
(:meth:`Scheduler.settled`). If one of them ends the process, it was the only attempt in
flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..formats.model import CaseSpec
from .inflight import InflightLog
from .journal import JournalWriter, now_iso
from .order import FailedTrials
from .payload import DEFAULT_MAX_OUTPUT_CHARS, InvalidPayload, canonical_payload, validate_payload
from .retry import RetryPolicy, TargetFailure, describe_error

__all__ = ["Scheduler", "Target", "VariantPlan", "WorkItem", "final_status", "take_interrupt"]


class Target(Protocol):
    """What the scheduler calls: one raw payload per case, or a TargetFailure."""

    async def call(self, case: CaseSpec) -> Any: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class VariantPlan:
    """How to call one live variant."""

    target: Target
    limit: int
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: Pass payloads through JSON first (Python targets; HTTP replies already are JSON).
    canonicalize: bool = True
    #: Longest accepted ``output``; longer ones are recorded as invalid payloads.
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One (variant, trial, case) to run."""

    seq: int
    variant_id: str
    trial: int
    case: CaseSpec
    #: Failed calls already journaled by an earlier session: (kind, error) each.
    prior_failures: tuple[tuple[str, str], ...] = ()
    #: The ``answered`` record of an earlier session that was judging this attempt when it
    #: ended: the attempt is judged from it, without calling the target again.
    answered: dict[str, Any] | None = None
    #: Run alone, before the others (a suspect of the supervisor's: see the module).
    isolated: bool = False


def final_status(failures: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> str:
    """``timed_out`` if every call timed out (AgenticLens' rule), else ``target_error``.

    Examples
    --------
    >>> final_status([("timeout", "a"), ("timeout", "b")])
    'timed_out'
    >>> final_status([("timeout", "a"), ("http_5xx", "b")])
    'target_error'
    """
    return "timed_out" if all(kind == "timeout" for kind, _ in failures) else "target_error"


class Scheduler:
    """Runs work items under global and per-variant limits.

    Parameters
    ----------
    plans
        Variant id → how to call it.
    items
        What to run, any order (they are started by ``seq``).
    concurrency
        Most calls in flight overall.
    journal
        Where every call and outcome goes.
    budget
        Most items to start (``--max-attempts``); None for all.
    stop_trial_on_invalid
        AgenticLens' rule: an invalid payload fails the whole trial, so the trial's later
        cases that have not started are not called.
    failed
        The trials failed so far (updated), in the run's planned order of the cases: the
        suite's, or early stopping's (the order ``items`` are started in); which cases are
        past a failure is its rule. None: none yet, suite order.
    on_done
        Called with the variant id each time an item finishes (for progress bars).
    should_stop
        Asked before each start: True stops starting items (early stopping); items in
        flight finish.
    admit
        Asked for the next item of each variant: False holds it back until
        :meth:`wake_threadsafe` is called (early stopping runs only a few cases ahead of
        the last decision).
    backlog
        Most finished attempts whose record is not on disk yet (:meth:`settled` counts
        them there); None for no limit. The journal's writer scores and writes behind the
        calls: a slow evaluator let it fall hundreds of attempts behind, all called again
        after a crash. At the limit no item starts until it catches up.
    """

    def __init__(
        self,
        plans: dict[str, VariantPlan],
        items: list[WorkItem],
        *,
        concurrency: int,
        journal: JournalWriter,
        session: str,
        budget: int | None = None,
        stop_trial_on_invalid: bool = True,
        failed: FailedTrials | None = None,
        on_done: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        admit: Callable[[WorkItem], bool] | None = None,
        backlog: int | None = None,
    ) -> None:
        self.plans = plans
        self.backlog = backlog
        #: Attempt records on disk (counted on the journal's thread, its only writer).
        self.durable = 0
        #: No item started because of ``backlog``: :meth:`settled` wakes the run.
        self._behind = False
        self.should_stop = should_stop
        self.admit = admit
        self._held = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.queues: dict[str, deque[WorkItem]] = {v: deque() for v in plans}
        #: Items run alone, before the queues (see the module).
        self.isolated: deque[WorkItem] = deque()
        for item in sorted(items, key=lambda i: i.seq):
            (self.isolated if item.isolated else self.queues[item.variant_id]).append(item)
        #: Isolated items started whose ``attempt`` record is not on disk yet.
        self._unsettled: set[tuple[str, int, str]] = set()
        self.concurrency = max(1, concurrency)
        self.journal = journal
        self.session = session
        self.budget = budget
        self.stop_trial_on_invalid = stop_trial_on_invalid
        self.failed = (
            failed if failed is not None else FailedTrials({i.case.id: i.case.index for i in items})
        )
        self.on_done = on_done
        self.running: dict[str, int] = dict.fromkeys(plans, 0)
        self.in_flight = 0
        self.started = 0
        self.finished = 0
        self.skipped = 0
        #: Attempts finished failed: their target never answered (errors, timeouts).
        self.unanswered = 0
        self.interrupted = False
        self.error: Exception | None = None
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        #: Marks for a supervising process (None when not supervised).
        self.inflight: InflightLog | None = None

    # ------------------------------------------------------------------ picking

    def _skip(self, item: WorkItem) -> bool:
        if not self.stop_trial_on_invalid:
            return False
        return self.failed.past(item.variant_id, item.trial, item.case.id)

    def _pick(self) -> WorkItem | None:
        self._behind = False
        if self.in_flight >= self.concurrency:
            return None
        if self.budget is not None and self.started >= self.budget:
            return None
        if self.should_stop is not None and self.should_stop():
            return None
        if self._journal_behind():
            self._behind = True
            return None
        if self.isolated or self._unsettled:
            isolated = self._pick_isolated()
            if isolated is not None or self.isolated or self._unsettled:
                return isolated
        best: WorkItem | None = None
        self._held = False
        # Only a failed trial has cases to skip: none failed (the common case), no queue's
        # head is looked up in it (two lookups per variant on every pick, ~3 us a call).
        skipping = self.stop_trial_on_invalid and bool(self.failed.first)
        for variant_id, pending in self.queues.items():
            while skipping and pending and self._skip(pending[0]):
                pending.popleft()
                self.skipped += 1
                if self.on_done is not None:  # resolved without a call: progress moves on
                    self.on_done(variant_id)
            if not pending or self.running[variant_id] >= self.plans[variant_id].limit:
                continue
            if self.admit is not None and not self.admit(pending[0]):
                self._held = True
                continue
            if best is None or pending[0].seq < best.seq:
                best = pending[0]
        if best is not None:
            self.queues[best.variant_id].popleft()
        return best

    def _pick_isolated(self) -> WorkItem | None:
        """The next isolated item, if nothing is in flight or unsettled."""
        if self.in_flight or self._unsettled:
            return None
        while self.isolated and self._skip(self.isolated[0]):
            item = self.isolated.popleft()
            self.skipped += 1
            if self.on_done is not None:
                self.on_done(item.variant_id)
        if not self.isolated:
            return None
        item = self.isolated.popleft()
        self._unsettled.add((item.variant_id, item.trial, item.case.id))
        return item

    def _journal_behind(self) -> bool:
        """Whether ``backlog`` finished attempts are still waiting for the disk (never when
        the journal has failed: no record will come)."""
        return (
            self.backlog is not None
            and self.finished - self.durable >= self.backlog
            and getattr(self.journal, "error", None) is None
        )

    def settled(self, record: dict[str, Any]) -> None:
        """A journal record is on disk (called from the journal's thread): an isolated
        item's ``attempt`` record lets the next item start, and any attempt record
        shortens the backlog."""
        if record.get("type") != "attempt" or self._loop is None:
            return
        self.durable += 1
        if not (self._unsettled or self._behind):
            return  # nothing waits for it (one wake-up per record would cost the loop)
        key = (record["variant"], int(record["trial"]), record["case"])
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits
            self._loop.call_soon_threadsafe(self._settle, key)

    def _settle(self, key: tuple[str, int, str]) -> None:
        if key in self._unsettled:
            self._unsettled.discard(key)
            self._wake.set()
        if self._behind:
            self._wake.set()

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Run until every item is done, the budget is spent, or the task is cancelled."""
        self._loop = asyncio.get_running_loop()
        tasks = self._tasks
        try:
            while True:
                if self.error is not None:
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise self.error
                if self._unsettled and getattr(self.journal, "error", None) is not None:
                    self._unsettled.clear()  # the journal failed: no record will come
                self._fill()
                # in_flight, not ``tasks``: a finished task leaves ``tasks`` one loop
                # iteration after it wakes us.
                if (
                    self.in_flight == 0
                    and not self._unsettled
                    and not self._behind
                    and not (self._held and not (self.should_stop and self.should_stop()))
                ):
                    return
                self._wake.clear()
                if self._unsettled or self._behind:
                    # An isolated attempt's record is on its way to disk; a journal that
                    # fails never sends it (looked at above every half second). A record
                    # written while the backlog was being checked wakes nobody: looked at
                    # again soon.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), 0.05 if self._behind else 0.5)
                else:
                    await self._wake.wait()
        except asyncio.CancelledError:
            # Ctrl-C: stop starting work, cancel what is running, keep what is done.
            self.interrupted = True
            take_interrupt()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _fill(self) -> None:
        """Start items until a limit (or the budget, or early stopping) says stop."""
        while True:
            item = self._next()
            if item is None:
                return
            task = asyncio.create_task(self._attempt(item))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _next(self) -> WorkItem | None:
        """The next item to start, counted as started (None: nothing may start now)."""
        item = self._pick()
        if item is not None:
            self.started += 1
            self.in_flight += 1
            self.running[item.variant_id] += 1
        return item

    def wake_threadsafe(self) -> None:
        """Look at the queues again (from any thread): held items may now be admitted."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake.set)

    def _release(self, item: WorkItem) -> None:
        self.in_flight -= 1
        self.running[item.variant_id] -= 1
        self._wake.set()

    async def _attempt(self, item: WorkItem | None) -> None:
        """Run ``item``, then the items its slot frees, one after another in this task."""
        while item is not None:
            try:
                await self._run_item(item)
            except Exception as exc:  # a bug of ours: stop the run and show it
                self.error = exc
                return
            finally:
                self._release(item)
            self.finished += 1
            if self.on_done is not None:
                self.on_done(item.variant_id)
            if self.interrupted or self.error is not None:
                return
            # The freed slot's next item starts now, in this task and loop turn: a new
            # task would start it a turn later (after every other attempt finishing in
            # this turn), and at hundreds of calls in flight every turn between a call's
            # end and the next call's start delays a whole wave.
            item = self._next()
            # Any other item the limits now allow (e.g. one held back until now).
            self._fill()

    def _base(self, item: WorkItem) -> dict[str, Any]:
        return {
            "variant": item.variant_id,
            "trial": item.trial,
            "case": item.case.id,
            "session": self.session,
        }

    async def _run_item(self, item: WorkItem) -> None:
        if item.answered is not None and self._judge_answered(item, item.answered):
            return
        plan = self.plans[item.variant_id]
        policy = plan.retry
        failures = list(item.prior_failures)
        started_at = now_iso()
        # A resumed item whose last journaled call ended it (no retry left) is finished
        # without calling again.
        if failures and not policy.retries(failures[-1][0], len(failures)):
            self._finish_failed(item, failures, started_at, 0.0)
            return
        total_ms = 0.0
        if self.inflight is not None:
            self.inflight.started(item.variant_id, item.trial, item.case.id)
        # The attempt's fields of its records, made once (each record copies them).
        base = self._base(item)
        while True:
            call_no = len(failures) + 1
            # (one clock reading for the attempt and its first call)
            call_started = started_at if call_no == 1 else now_iso()
            t0 = time.perf_counter()
            outcome: str
            error: str | None = None
            detail: str | None = None
            retry_after: float | None = None
            payload: Any = None
            try:
                raw = await plan.target.call(item.case)
                raw_type = type(raw).__name__
                payload = canonical_payload(raw, item.case.id) if plan.canonicalize else raw
                output, trace = validate_payload(
                    payload,
                    item.case.id,
                    raw_type=raw_type,
                    max_output_chars=plan.max_output_chars,
                )
                outcome = "ok"
            except TargetFailure as failure:
                outcome, error, detail = failure.kind, failure.message, failure.detail
                retry_after = failure.retry_after
            except InvalidPayload as exc:
                outcome, error, detail = "invalid_payload", str(exc), exc.detail
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a target wrapper's own bug: record it, keep running
                outcome, error = "error", describe_error(exc)
            elapsed = (time.perf_counter() - t0) * 1000.0
            total_ms += elapsed
            self.journal.append(
                {
                    "type": "call",
                    **base,
                    "call": call_no,
                    "outcome": outcome,
                    "error": error,
                    "elapsed_ms": elapsed,
                    "started_at": call_started,
                    **({"detail": detail} if detail is not None else {}),
                }
            )
            if outcome == "ok":
                self.journal.append(
                    {
                        "type": "attempt",
                        **base,
                        "status": "ok",
                        "calls": call_no,
                        "error": None,
                        "payload": payload,
                        "elapsed_ms": total_ms,
                        "started_at": started_at,
                    },
                    scoring=(item.case, output, trace),
                )
                return
            assert error is not None
            if outcome == "invalid_payload":
                if self.stop_trial_on_invalid:
                    self.failed.fail(item.variant_id, item.trial, item.case.id)
                self.journal.append(
                    {
                        "type": "attempt",
                        **base,
                        "status": "invalid_payload",
                        "calls": call_no,
                        "error": error,
                        "payload": _jsonable(payload),
                        "elapsed_ms": total_ms,
                        "started_at": started_at,
                    }
                )
                return
            failures.append((outcome, error))
            if not policy.retries(outcome, call_no):
                self._finish_failed(item, failures, started_at, total_ms)
                return
            delay = policy.wait(call_no, retry_after)
            if delay > 0:
                await asyncio.sleep(delay)

    def _judge_answered(self, item: WorkItem, answered: dict[str, Any]) -> bool:
        """Hand a reply journaled by an earlier session to the journal, to be judged;
        False (the target is called instead) if it is no longer a valid sample."""
        # The attempt as it was when its reply came: same calls, timing and session.
        record = {**answered, "type": "attempt"}
        try:
            # Accepted once already, under that session's output limit.
            output, trace = validate_payload(record["payload"], item.case.id, max_output_chars=None)
        except InvalidPayload:
            return False
        if self.inflight is not None:
            self.inflight.started(item.variant_id, item.trial, item.case.id)
        self.journal.append(record, scoring=(item.case, output, trace))
        return True

    def _finish_failed(
        self,
        item: WorkItem,
        failures: list[tuple[str, str]],
        started_at: str,
        total_ms: float,
    ) -> None:
        self.unanswered += 1
        self.journal.append(
            {
                "type": "attempt",
                **self._base(item),
                "status": final_status(failures),
                "calls": len(failures),
                "error": failures[-1][1],
                "payload": None,
                "elapsed_ms": total_ms,
                "started_at": started_at,
            }
        )


def take_interrupt() -> None:
    """Withdraw the cancellation of the running task that Ctrl-C caused, once the code that
    caught its ``CancelledError`` has stopped the run: the run then returns what is done.

    Left pending, a task that ends normally still ends cancelled, and ``asyncio.Runner``
    turns that into a bare ``KeyboardInterrupt`` (the run's result lost).
    """
    current = asyncio.current_task()
    if current is not None:
        current.uncancel()


def _jsonable(value: Any) -> Any:
    try:
        return canonical_payload(value)
    except InvalidPayload:
        return repr(value)
