"""Run an experiment with live targets: concurrent, crash-safe and resumable.

:func:`run_experiment` runs every (variant, trial, case) of a manifest whose variants are
``python``, ``http`` or ``recorded`` (mixed freely) and returns the same tidy tables as
:func:`~agenticlens_frames.load_experiment` does for recorded ones:

1. everything is checked before the first call: manifest, suite, recorded files, python
   targets imported (once per run, fix B10), ``${ENV}`` header references set;
2. with a run folder, its journal is read back: attempts already done are neither called
   nor scored again (:mod:`.journal`);
3. the rest is called concurrently in AgenticLens' order (:mod:`.scheduler`), each
   finished attempt scored and journaled as it completes;
4. the tables are built from the journal (plus recorded replays) by the one code path
   used for fresh and resumed runs alike, so a resumed run reports exactly what an
   uninterrupted one would (for deterministic targets).

Failure semantics follow AgenticLens 0.10 (spec §4.4, §8): a target that raises, times
out or returns an HTTP error fails that case (``target_error`` / ``timed_out``); a payload
that is not a sample fails the whole trial (``invalid_payload="trial"``, the default) or,
with ``invalid_payload="case"``, only that case.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import hashlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from .._choices import check_invalid_payload
from .._deprecate import class_keyword_hints, keyword_hints
from .._gc import paused_gc
from .._progress import LogLines, progress_bar, wants_log_lines
from .._secrets import remember, remember_environment, without_password
from .._suggest import require_known
from .._values import count_noun
from ..errors import InputError
from ..evaluators import EvaluatorRegistry, as_registry
from ..formats import load_manifest, load_recorded, load_suite
from ..formats.model import CaseSpec, ManifestSpec, SuiteSpec
from ..formats.suite import with_suite_problems
from ..formats.traces import Trace
from ..frames import (
    CheckColumns,
    ExperimentRun,
    TableBuilder,
    measured_latency,
    run_attribute_error,
    table_turns,
)
from ..scoring import score_unavailable
from .http_client import Transport, open_transport, trust_context
from .http_target import (
    DEFAULT_MAX_REPLY_BYTES,
    HttpTarget,
    check_headers,
    expand_headers,
    header_variables,
)
from .inflight import INVOCATION_ENV, InflightLog
from .journal import (
    DAMAGED_RECORD,
    MANIFEST_EXCLUDES,
    PROCESS_ENDED,
    RERUNNABLE,
    JournalWriter,
    JudgeSamples,
    ReplaySamples,
    RunFolder,
    digest,
    journaled_judge_scores,
    judge_samples,
    now_iso,
    plain,
    replay_checks,
)
from .journal_check import RecordCheck
from .order import FailedTrials, execution_order
from .payload import DEFAULT_MAX_OUTPUT_CHARS, InvalidPayload, validate_payload
from .python_target import SPARE_THREADS, PythonTarget, load_callable
from .recorded import check_recorded_files, replay_recorded
from .retry import RETRY_KEYS, RetryPolicy, parse_retry
from .scheduler import Scheduler, Target, VariantPlan, WorkItem, take_interrupt
from .stopping import (
    StopMonitor,
    StopRule,
    check_stop_request,
    declared_in_folder,
    declared_rule,
    judge_spend_after_decision,
    no_margin_note,
    recorded_monitor,
    recorded_rank,
    sub_suite,
)

if TYPE_CHECKING:  # the paired settings load with the first run that declares them
    from ..paired.settings import ComparisonsConfig

__all__ = ["LiveRunResult", "arun_live", "run_experiment", "run_live"]

InvalidPayloadMode = Literal["trial", "case"]

_LOG = logging.getLogger(__name__)

#: Columns of :attr:`LiveRunResult.calls`.
CALL_COLUMNS = (
    "variant_id",
    "trial",
    "case_id",
    "call",
    "outcome",
    "error",
    "elapsed_ms",
    "started_at",
    "session",
    # more than the package records: the first bytes of an HTTP error reply or of one that
    # is not JSON, the exception type
    "detail",
)


@class_keyword_hints()
@dataclass(frozen=True)
class LiveRunResult:
    """What a (possibly partial) live run produced.

    Attributes
    ----------
    run
        The tidy tables of every *finished* trial: all recorded trials, and each live
        trial whose cases are all done (or that failed). Trials still in progress are left
        out until they finish, so every table keeps its grain.
    remaining
        Live (variant, trial, case) attempts still to run; 0 when the run is complete.
    remaining_cases
        The cases those attempts belong to (a case with any attempt left).
    awaiting_judge
        Of ``remaining``, the attempts whose target answered (the reply is journaled) and
        whose judging has not finished: judged on resume, their target not called again.
        The progress line counts them as done; :attr:`remaining_text` names both.
    attempted
        Attempts finished by this call (not counting earlier sessions).
    from_journal
        Live attempts this call took as finished from the run folder's journal (earlier
        sessions'), neither called nor scored again; 0 for a new folder or without one.
    interrupted
        Stopped by Ctrl-C, at any moment of the run (what finished is kept).
    run_dir
        The run folder, if any.
    calls
        One row per target call (every retry included): ``variant_id, trial, case_id,
        call, outcome, error, elapsed_ms, started_at, session``.
    stopping
        With ``stop_when="decided"``: the early-stopping record (also journaled).

    Examples
    --------
    Three python targets (always "no", always "yes" twice) on 40 cases, run 50 attempts
    at a time in a run folder, then resumed:

    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "agents.py").write_text(
    ...     "def base(text):\\n    return {'output': 'no'}\\n"
    ...     "def good(text):\\n    return {'output': 'yes'}\\n"
    ...     "best = good\\n")
    >>> _ = (folder / "manifest.json").write_text(json.dumps({
    ...     "name": "stop", "version": "1", "baseline_variant_id": "base", "trial_count": 1,
    ...     "variants": [{"id": v, "name": v, "target_kind": "python", "target": f"agents.py:{v}"}
    ...                  for v in ("base", "good", "best")]}))
    >>> _ = (folder / "suite.json").write_text(json.dumps({"name": "s", "version": "1", "cases": [
    ...     {"id": f"c{i}", "name": f"case {i}", "input": f"q{i}", "expected_contains": ["yes"]}
    ...     for i in range(40)]}))
    >>> args = (folder / "manifest.json", folder / "suite.json")
    >>> first = run_experiment(*args, run_dir=folder / "run", max_attempts=50, progress=False)
    >>> first.complete, first.remaining, first.remaining_cases, first.attempted
    (False, 70, 40, 50)
    >>> rest = run_experiment(*args, run_dir=folder / "run", progress=False)
    >>> rest.complete, rest.attempted, len(rest.run.attempts)
    (True, 70, 120)
    >>> rest.calls.columns.tolist()[:5]
    ['variant_id', 'trial', 'case_id', 'call', 'outcome']
    >>> rest  # doctest: +ELLIPSIS
    LiveRunResult(complete, attempted=70, remaining=0, calls=120, run_dir='.../run')
    """

    run: ExperimentRun
    remaining: int
    attempted: int
    interrupted: bool
    run_dir: Path | None
    calls: pd.DataFrame
    #: With ``stop_when``: when and why the run stopped, and the attempts it saved
    #: (JSON-ready; see :mod:`.stopping`). None otherwise.
    stopping: dict[str, Any] | None = None
    remaining_cases: int = 0
    awaiting_judge: int = 0
    from_journal: int = 0

    @property
    def complete(self) -> bool:
        """Every attempt is done (``remaining`` is 0).

        Examples
        --------
        >>> result = run_experiment("data/support/manifest.yaml", "data/support/suite.yaml",
        ...                         progress=False)  # recorded variants: nothing to call
        >>> result.complete, result.remaining
        (True, 0)
        """
        return self.remaining == 0

    @property
    def remaining_text(self) -> str:
        """What is left, in words: the attempts still to call, then those answered and
        awaiting a judge (the live progress line counts these as done).

        Examples
        --------
        >>> from agenticlens_frames.runner.live import LiveRunResult
        >>> def left(remaining: int, awaiting: int) -> str:
        ...     return LiveRunResult(None, remaining, 0, True, None, None,
        ...                          awaiting_judge=awaiting).remaining_text
        >>> to_call, to_judge = left(12, 4).split(", ", 1)
        >>> to_call
        '8 attempts still to call'
        >>> to_judge
        '4 answered and awaiting a judge (judged on resume, not called again)'
        >>> left(4, 4)
        '4 attempts answered and awaiting a judge (judged on resume, not called again)'
        >>> left(3, 0), left(1, 0), left(1, 1), left(0, 0)
        ('3 attempts still to call', '1 attempt still to call', '1 attempt answered and \
awaiting a judge (judged on resume, not called again)', 'every attempt is done')
        """
        to_call = self.remaining - self.awaiting_judge
        parts = [f"{count_noun(to_call, 'attempt')} still to call"] if to_call else []
        if self.awaiting_judge:
            # After the attempts still to call, the noun is understood ("8 attempts still
            # to call, 4 answered ...").
            judged = (
                str(self.awaiting_judge) if parts else count_noun(self.awaiting_judge, "attempt")
            )
            parts.append(
                f"{judged} answered and awaiting a judge (judged on resume, not called again)"
            )
        return ", ".join(parts) or "every attempt is done"

    def __getattr__(self, name: str) -> Any:
        # Called only for a missing attribute: point a run's (``to_parquet``, ``attempts``)
        # at ``result.run``. Dunder look-ups (copy, pickle) get the plain error.
        if name.startswith("__"):
            raise AttributeError(name)
        raise run_attribute_error(self, name)

    def __repr__(self) -> str:
        # One line: the generated repr printed the whole ``calls`` frame and every table.
        state = "interrupted" if self.interrupted else "complete" if self.complete else "partial"
        stopped = ", stopped early" if (self.stopping or {}).get("stopped_early") else ""
        folder = f", run_dir={str(self.run_dir)!r}" if self.run_dir is not None else ""
        return (
            f"LiveRunResult({state}{stopped}, attempted={self.attempted}, "
            f"remaining={self.remaining}, calls={0 if self.calls is None else len(self.calls)}"
            f"{folder})"
        )


# --------------------------------------------------------------------------- ledger


def _record_check(manifest: ManifestSpec, suite: SuiteSpec) -> RecordCheck:
    return RecordCheck(manifest.variant_ids, suite.case_ids, manifest.trial_count)


class Ledger:
    """The journal's records, indexed: what is done, what failed, what is left.

    ``position`` is the run's planned position of each case (early stopping's
    :attr:`.StopMonitor.rank`; None: suite order, AgenticLens'): a failed trial's cases
    after its failing case in that order are not run (:class:`~.order.FailedTrials`).
    """

    def __init__(
        self,
        suite: SuiteSpec,
        mode: InvalidPayloadMode,
        invocation: str | None = None,
        position: Mapping[str, int] | None = None,
    ) -> None:
        self.suite = suite
        self.mode = mode
        #: The command line this ledger is read for (:data:`INVOCATION_ENV`): its own
        #: ``reopen`` record, met while reading, reopens the failures journaled before it.
        self.invocation = invocation
        #: Whether that record was met: this process continues its command line's re-run.
        self.continues_rerun = False
        #: The run folder's journal the records came from (named in errors), if any.
        self.journal: Path | None = None
        self.case_index = {c.id: c.index for c in suite.cases}
        self.final: dict[tuple[str, int, str], dict[str, Any]] = {}
        self.failures: dict[tuple[str, int, str], list[tuple[str, str]]] = {}
        #: Trials failed by an invalid payload ("trial" mode), in the planned order.
        self.failed = FailedTrials(self.case_index if position is None else position)
        self.calls: list[dict[str, Any]] = []
        #: ``judge_sample`` records (kept until read by :meth:`unfinished_samples`).
        self.samples: list[dict[str, Any]] = []
        #: ``answered`` records of attempts not journaled as finished: replies that were
        #: being judged when their session ended, judged on resume without a call.
        self.answered: dict[tuple[str, int, str], dict[str, Any]] = {}
        #: ``judge_ended`` records (the supervisor's): why the process judging an
        #: answered attempt ended; its judge sample in progress is then unavailable.
        self.judge_ended: dict[tuple[str, int, str], str] = {}
        #: Unfinished attempts with a ``suspect`` record (the supervisor's): in flight when
        #: the run's process ended, they are called again alone, first.
        self.suspects: set[tuple[str, int, str]] = set()
        #: ``suspect`` / ``judge_ended`` records written after an attempt's ``attempt``
        #: record: the supervisor's, about a session that was judging again a finished
        #: attempt whose judge was unavailable (:meth:`reopen_unavailable`).
        self.late: dict[tuple[str, int, str], list[dict[str, Any]]] = {}

    def add(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        # Calls and attempts first: all but a few of a run's records (each kind is looked
        # at once; 20 000 records are added after a 10 000-call run).
        if kind == "call":
            key = (record["variant"], int(record["trial"]), record["case"])
            self.calls.append(record)
            if record["outcome"] not in ("ok", "invalid_payload") and key not in self.final:
                self.failures.setdefault(key, []).append((record["outcome"], record["error"]))
        elif kind == "attempt":
            key = (record["variant"], int(record["trial"]), record["case"])
            # The last outcome wins: a later session may re-run a failed attempt
            # (``rerun_failed``); otherwise an attempt is journaled once.
            self.final[key] = record
            self.failures.pop(key, None)
            if self.late:
                self.late.pop(key, None)
            if self.answered:
                # Judged (or failed by the supervisor) since: a re-run calls the target.
                self.answered.pop(key, None)
            if self.judge_ended:
                self.judge_ended.pop(key, None)
            self.suspects.discard(key)
            if record["status"] == "invalid_payload" and self.mode == "trial":
                self.failed.fail(*key)
        elif kind == "judge_sample":
            self.samples.append(record)
        elif kind == "reopen":
            if self.invocation is not None and record.get("invocation") == self.invocation:
                # At its place: the failures re-run after it stand (they ran again once).
                self.reopen_failed()
                self.continues_rerun = True
        elif kind in ("answered", "judge_ended", "suspect"):
            key = (record["variant"], int(record["trial"]), record["case"])
            if key in self.final:
                if kind != "answered":
                    self.late.setdefault(key, []).append(record)
                return
            if kind == "answered":
                self.answered[key] = record
            elif kind == "suspect":
                self.suspects.add(key)
            else:
                self.judge_ended[key] = str(record.get("error", "the run's process ended"))
        # Any other kind (e.g. an early-stopping ``stop`` record) is not the ledger's.

    def unfinished_samples(self, *, keep_unavailable: bool = False) -> JudgeSamples:
        """Judge samples of attempts not journaled as finished (the only ones that can be
        scored again); the records are dropped from memory. ``keep_unavailable``: see
        :func:`~.journal.judge_samples` (loading keeps them, a resume judges them again)."""
        open_ = [
            r for r in self.samples if (r["variant"], int(r["trial"]), r["case"]) not in self.final
        ]
        self.samples = []
        return judge_samples(open_, keep_unavailable=keep_unavailable)

    def reopen_failed(self) -> int:
        """Forget target errors and timeouts so they are called again; returns how many.
        An attempt that ended the run's process (the supervisor's record) stays failed, and
        so do the failures of a trial an invalid payload failed: that trial stays failed
        whatever they answer now, so calling them again would only cost calls."""
        failed = [
            k
            for k, r in self.final.items()
            if r["status"] in RERUNNABLE
            and not str(r.get("error") or "").startswith(PROCESS_ENDED)
            and k[:2] not in self.failed
        ]
        for key in failed:
            del self.final[key]
            self.failures.pop(key, None)
        return len(failed)

    def reopen_unavailable(self) -> int:
        """Hand back to be judged again the finished attempts with an unavailable judge
        score (the judge never answered); returns how many.

        Their target answered, so its journaled reply is judged again, as an ``answered``
        attempt is after a crash: the target is not called, the judge samples that were
        delivered are reused (a score is never judged twice) and only the missing ones —
        the unavailable sample and the ones after it — are judged. An attempt whose judging
        ended the run's process (``ProcessEnded``, the supervisor's record) keeps its scores:
        judging it again could end the process again.
        """
        reopened = [k for k, r in self.final.items() if _judge_unavailable(r) is True]
        for key in reopened:
            record = self.final.pop(key)
            self.answered[key] = {k: v for k, v in record.items() if k not in ("score", "checks")}
            for late in self.late.pop(key, ()):
                self.add(late)
        return len(reopened)

    def pending(self, variant_id: str, trial: int) -> list[CaseSpec]:
        """Cases of a live trial still to run (none past the trial's failure)."""
        return [
            c
            for c in self.suite.cases
            if (variant_id, trial, c.id) not in self.final
            and not self.failed.past(variant_id, trial, c.id)
        ]

    def awaiting_judge(self, answered: Iterable[tuple[str, int, str]] = ()) -> int:
        """Attempts still to run (:meth:`pending`) whose target's reply is journaled: judged
        on resume from it, their target not called again. ``answered`` adds this session's
        (:attr:`~.journal.JournalWriter.answered`) to the earlier sessions' read here."""
        count = 0
        for key in {*self.answered, *answered}:
            if key[2] in self.case_index and key not in self.final and not self.failed.past(*key):
                count += 1
        return count

    def trial_error(self, variant_id: str, trial: int) -> str | None:
        case_id = self.failed.failed_at(variant_id, trial)
        if case_id is None:
            return None
        return self.final[(variant_id, trial, case_id)]["error"]

    def release(self) -> None:
        """Forget every record (the tables are built): see :func:`arun_live`."""
        self.final.clear()
        self.failures.clear()
        self.calls.clear()
        self.samples.clear()
        self.answered.clear()
        self.judge_ended.clear()
        self.suspects.clear()
        self.late.clear()

    def calls_frame(self) -> pd.DataFrame:
        calls = self.calls
        nan = float("nan")
        # Column by column: a frame built from row tuples went through object arrays.
        columns = {
            "variant_id": _texts([r["variant"] for r in calls]),
            "trial": np.array([int(r["trial"]) for r in calls], dtype=np.int32),
            "case_id": _texts([r["case"] for r in calls]),
            "call": np.array([int(r["call"]) for r in calls], dtype=np.int32),
            "outcome": pd.array([r["outcome"] for r in calls], dtype="str"),
            "error": pd.array([r.get("error") for r in calls], dtype="str"),
            "elapsed_ms": np.array([r.get("elapsed_ms", nan) for r in calls], dtype=float),
            "started_at": pd.array([r.get("started_at") for r in calls], dtype="str"),
            "session": pd.array([r.get("session") for r in calls], dtype="str"),
            "detail": pd.array([r.get("detail") for r in calls], dtype="str"),
        }
        return pd.DataFrame(columns, columns=list(CALL_COLUMNS))


def _judge_unavailable(record: dict[str, Any]) -> bool | None:
    """Whether a journaled attempt has an unavailable judge score: True, False, or None when
    one of them is unavailable because the run's process ended while judging it.

    Examples
    --------
    >>> def attempt(*metadata):
    ...     return {"checks": [["j", "j", 0.0, False, "", [True, "j", None, "llm_judge", False,
    ...                         m]] for m in metadata]}
    >>> _judge_unavailable(attempt({"judge_status": "ok"}))
    False
    >>> down = '{"judge_status": "unavailable", "judge_error": "TimeoutError"}'
    >>> _judge_unavailable(attempt({"judge_status": "ok"}, down))
    True
    >>> _judge_unavailable(attempt({"judge_status": "unavailable",
    ...                             "judge_error": "ProcessEnded: the run's process ended"}))
    """
    found = False
    for check in record.get("checks") or ():
        custom = check[5]
        metadata = custom[5] if custom is not None and len(custom) > 5 else None
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except ValueError:
                continue
        if not isinstance(metadata, dict) or metadata.get("judge_status") != "unavailable":
            continue
        if str(metadata.get("judge_error", "")).startswith(PROCESS_ENDED):
            return None
        found = True
    return found


def _texts(values: list[str]) -> Any:
    """Strings as pandas infers them from rows: the ``str`` dtype, object when empty."""
    return pd.array(values, dtype="str") if values else np.array([], dtype=object)


# --------------------------------------------------------------------------- building


def _journaled_payload(
    record: dict[str, Any], case: CaseSpec, journal: Path | None
) -> tuple[str, Trace]:
    """The output and trace of a journaled ``ok`` attempt's reply.

    It was a valid sample when it was journaled; one that no longer is was edited or
    damaged on disk, and is refused naming the attempt and the journal.
    """
    try:
        return validate_payload(record["payload"], case.id)
    except InvalidPayload as exc:
        raise InputError(
            f"the journaled reply of {record['variant']} trial {record['trial']} case "
            f"{case.id} is no longer a valid sample ({exc})",
            file=journal,
            hint=DAMAGED_RECORD,
        ) from None


def _add_live_attempt(
    builder: TableBuilder,
    variant_id: str,
    trial: int,
    case: CaseSpec,
    record: dict[str, Any],
    parsed: Mapping[int, tuple[dict[str, Any], str, Trace]],
    journal: Path | None = None,
) -> None:
    status = record["status"]
    calls = int(record["calls"])
    row = builder.next_attempt
    if status == "ok":
        known = parsed.get(id(record))
        if known is not None and known[0] is record:  # scored in this session
            output, trace = known[1], known[2]
        else:
            output, trace = _journaled_payload(record, case, journal)
        score = replay_checks(builder.checks, row, record)
        builder.add_attempt(
            variant_id, trial, case, "ok", score, output=output, trace=trace, target_attempts=calls
        )
        return
    # A failed call (or, in "case" mode, an invalid payload): the package's target_call row.
    status = "target_error" if status == "invalid_payload" else status
    error = record["error"]
    result = score_unavailable(
        builder.checks, row, status=status, error=error, target_attempts=calls
    )
    builder.add_attempt(
        variant_id, trial, case, status, result, output="", target_attempts=calls, error=error
    )


class _Succeeded:
    """Succeeded live attempts with built-in checks only, added to a builder column by
    column: what :func:`_add_live_attempt` adds one attempt at a time (``add_attempt`` and
    ``replay_checks``), in bulk. :meth:`flush` before adding any row another way keeps
    the rows in the same order."""

    def __init__(
        self, builder: TableBuilder, manifest: ManifestSpec, journal: Path | None = None
    ) -> None:
        self.builder = builder
        self.journal = journal
        self.variant_pos = {v.id: i for i, v in enumerate(manifest.variants)}
        #: (variant position, trial, case, record, output, trace)
        self.rows: list[tuple[int, int, CaseSpec, dict[str, Any], str, Trace]] = []

    def add(
        self,
        variant_id: str,
        trial: int,
        case: CaseSpec,
        record: dict[str, Any],
        parsed: Mapping[int, tuple[dict[str, Any], str, Trace]],
    ) -> bool:
        """Take an attempt if it is ``ok`` with built-in checks only; else False."""
        if record["status"] != "ok" or any(check[5] is not None for check in record["checks"]):
            return False
        known = parsed.get(id(record))
        if known is not None and known[0] is record:  # scored in this session
            output, trace = known[1], known[2]
        else:
            output, trace = _journaled_payload(record, case, self.journal)
        self.rows.append((self.variant_pos[variant_id], trial, case, record, output, trace))
        return True

    def flush(self) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        first = self.builder.next_attempt
        records = [r[3] for r in rows]
        scores = [r["score"] for r in records]
        traces = [r[5] for r in rows]
        costs = [t.estimated_cost_usd for t in traces]
        tools = [t.tool_names for t in traces]
        # add_attempt's values: score fields from the journaled score, trace fields from
        # the trace, the evaluator error in ``error``.
        self.builder.extend_attempts(
            {
                "variant": [r[0] for r in rows],
                "trial": [r[1] for r in rows],
                "case_index": [r[2].index for r in rows],
                "status": ["ok"] * len(rows),
                "passed": [bool(s[0]) for s in scores],
                "score": [s[1] for s in scores],
                "n_checks": [s[2] for s in scores],
                "n_checks_passed": [s[3] for s in scores],
                "score_sum": [s[4] for s in scores],
                "latency_ms": [measured_latency(t.total_latency_ms) for t in traces],
                "cost_usd": costs,
                "cost_source": [
                    t.cost_source if c is not None else None
                    for t, c in zip(traces, costs, strict=True)
                ],
                "output": [r[4] for r in rows],
                "trace_id": [t.trace_id for t in traces],
                "trace_shape": [t.shape for t in traces],
                "tools": [",".join(names) for names in tools],
                "n_tool_calls": [len(names) for names in tools],
                "turns": [table_turns(s[5]) for s in scores],
                "target_attempts": [int(r["calls"]) for r in records],
                "error": [s[6] for s in scores],
            }
        )
        # replay_checks' values (a built-in check's value defaults to its pass as 1.0/0.0)
        checks = [
            (first + row, check) for row, record in enumerate(records) for check in record["checks"]
        ]
        sink = CheckColumns()
        sink.attempt = [row for row, _ in checks]
        sink.name = [c[0] for _, c in checks]
        sink.metric = [c[1] for _, c in checks]
        sink.value = [c[2] if c[2] is not None else (1.0 if c[3] else 0.0) for _, c in checks]
        sink.passed = [c[3] for _, c in checks]
        sink.explanation = [c[4] for _, c in checks]
        self.builder.checks.extend(sink)


def _redacted(manifest: ManifestSpec) -> ManifestSpec:
    # Header values may be secrets (or name them), and so is the password of an http URL
    # (sent as basic auth): nothing downstream — tables, parquet metadata, reports — gets
    # them.
    variants = []
    for variant in manifest.variants:
        if variant.headers:
            variant = dataclasses.replace(
                variant, headers=dict.fromkeys(variant.headers, "<redacted>")
            )
        if variant.target_kind == "http" and without_password(variant.target) != variant.target:
            url = without_password(variant.target)
            variant = dataclasses.replace(variant, target=url, resolved_target=url)
        variants.append(variant)
    return dataclasses.replace(manifest, variants=tuple(variants))


def build_run(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    ledger: Ledger,
    registry: EvaluatorRegistry | None = None,
    *,
    progress: bool = False,
    parsed: Mapping[int, tuple[dict[str, Any], str, Trace]] | None = None,
    journaled: ReplaySamples | None = None,
) -> tuple[ExperimentRun, int, int]:
    """The tables of every finished trial, the number of attempts still to run, and the
    number of cases they belong to.

    ``parsed`` (:attr:`~.journal.JournalWriter.parsed`) holds the output and trace of the
    attempts scored in this session, so their payloads are not validated again.
    ``journaled`` (a run folder's, with judges) holds the judge samples of recorded
    replays: reused, and new ones journaled.

    Recorded variants are replayed one file at a time (memory follows one file, as in
    :func:`~agenticlens_frames.load_experiment`); rows may arrive in any order, the
    builder sorts them and each trial keeps its execution position.
    """
    builder = TableBuilder(_redacted(manifest), suite)
    order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
    kinds = {v.id: v.target_kind for v in manifest.variants}
    remaining = 0
    open_cases: set[str] = set()
    parsed = parsed or {}
    succeeded = _Succeeded(builder, manifest, ledger.journal)
    failed: set[tuple[str, int]] = set()
    with paused_gc():
        for position, (variant_id, trial) in enumerate(order):
            if kinds[variant_id] == "recorded":
                continue
            pending = ledger.pending(variant_id, trial)
            if pending:
                remaining += len(pending)
                open_cases.update(c.id for c in pending)
                continue
            error = ledger.trial_error(variant_id, trial)
            if error is not None:
                succeeded.flush()
                builder.add_failed_trial(variant_id, trial, position, error)
                failed.add((variant_id, trial))
                continue
            builder.add_trial(variant_id, trial, "succeeded", position)
            for case in suite.cases:
                record = ledger.final[(variant_id, trial, case.id)]
                if not succeeded.add(variant_id, trial, case, record, parsed):
                    succeeded.flush()
                    _add_live_attempt(
                        builder, variant_id, trial, case, record, parsed, ledger.journal
                    )
        succeeded.flush()
        if "recorded" in kinds.values():
            replay_recorded(
                builder, manifest, suite, order, registry, progress=progress, journaled=journaled
            )
        used = sorted({ref.name for case in suite.cases for ref in case.evaluators})
        versions = {name: registry[name].version for name in used} if registry else {}
        run = builder.build(versions)
    # A failed trial has no scores in the tables (AgenticLens' rule), yet its attempts that
    # answered were judged and billed, those run before the failure and those started
    # before it was known alike: counted apart, or the judges' cost lines read low.
    # (Only with failed trials: the walk would visit every attempt's record.)
    spend = (
        judge_spend_after_decision(
            manifest.variant_ids,
            (
                (key[0], scores)
                for key, record in ledger.final.items()
                if key[:2] in failed and (scores := journaled_judge_scores(record))
            ),
        )
        if failed
        else []
    )
    if spend:
        run.judge_spend_failed_trials = spend
    return run, remaining, len(open_cases)


# --------------------------------------------------------------------------- planning


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hashed_manifest(manifest: ManifestSpec) -> dict[str, Any]:
    """The manifest as its identity hashes it, ``comparisons:`` included: paths left out
    (a moved folder still resumes), and the knobs that only change speed (``max_workers``,
    per-variant ``concurrency``)."""
    m = plain(manifest)
    m.pop("path")
    m.pop("max_workers")
    for v in m["variants"]:
        v.pop("resolved_target")
        v.pop("concurrency", None)
    return m


def run_identity(
    manifest: ManifestSpec, suite: SuiteSpec, recorded_paths: Mapping[str, str]
) -> dict[str, Any]:
    """What a run folder belongs to: hashes of everything that decides the results.

    The manifest's hash leaves out what :func:`_hashed_manifest` does, and its
    ``comparisons:`` block (``manifest_sha256_excludes``): the block's settings are read by
    the final analysis, recomputed at the end of every session, and by early stopping only
    through what its ``stopping`` record holds (:meth:`.StopMonitor.settings`: the cluster,
    α and the correction's split), which a resume compares by name. A folder of an earlier
    version hashed the whole manifest (:func:`earlier_manifest_sha256`).

    Examples
    --------
    >>> import dataclasses
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> m = load_manifest("data/support/manifest.yaml")
    >>> s = load_suite("data/support/suite.yaml")
    >>> edited = dataclasses.replace(m, comparisons={"correction": "holm", "alpha": 0.1})
    >>> run_identity(m, s, {}) == run_identity(edited, s, {})
    True
    >>> earlier_manifest_sha256(m) == earlier_manifest_sha256(edited)
    False
    """
    m = _hashed_manifest(manifest)
    m.pop("comparisons")
    s = plain(suite)
    s.pop("path")
    return {
        "experiment_id": f"{manifest.name}@{manifest.version}",
        "manifest_sha256": digest(m),
        "manifest_sha256_excludes": list(MANIFEST_EXCLUDES),
        "suite_sha256": digest(s),
        "recorded_sha256": {v: _file_sha256(p) for v, p in sorted(recorded_paths.items())},
    }


def earlier_manifest_sha256(manifest: ManifestSpec) -> str:
    """The manifest's hash as versions before ``manifest_sha256_excludes`` wrote it (over
    the whole manifest, ``comparisons:`` included): their folders resume when it matches."""
    return digest(_hashed_manifest(manifest))


def _policies(
    manifest: ManifestSpec, retry: RetryPolicy | Mapping[str, Any] | None
) -> dict[str, RetryPolicy]:
    live = [v for v in manifest.variants if v.target_kind != "recorded"]
    if isinstance(retry, Mapping) and _one_policy(retry, [v.id for v in live]):
        # A retry block as a manifest writes one ({"attempts": 2}): it was read as variant
        # ids ("unknown live variant id 'attempts'"). One policy for every live variant.
        retry = parse_retry(retry, location=("retry",))
    if isinstance(retry, Mapping):
        # Keyed by live variant ids (or pass one RetryPolicy for all).
        require_known("live variant id", sorted(retry), [v.id for v in live], location="retry")
    out = {}
    for index, v in enumerate(manifest.variants):
        if v.target_kind == "recorded":
            continue
        if isinstance(retry, RetryPolicy):
            out[v.id] = retry
        elif isinstance(retry, Mapping) and v.id in retry:
            out[v.id] = parse_retry(retry[v.id], location=("retry", v.id))
        else:
            raw = getattr(v, "retry", None) or None  # the manifest key, once the loader has it
            out[v.id] = parse_retry(raw, file=manifest.path, location=("variants", index, "retry"))
    return out


def _one_policy(retry: Mapping[str, Any], variant_ids: list[str]) -> bool:
    """Whether ``retry`` is one retry block (its keys a block's, none a variant id) rather
    than a mapping of variant id to policy.

    Examples
    --------
    >>> _one_policy({"attempts": 2}, ["a", "b"]), _one_policy({"a": {"attempts": 2}}, ["a"])
    (True, False)
    """
    keys = {str(k) for k in retry}
    return bool(keys) and keys <= set(RETRY_KEYS) and not keys & set(variant_ids)


def _limits(manifest: ManifestSpec, overrides: Mapping[str, int] | None) -> dict[str, int]:
    overrides = dict(overrides or {})
    out = {}
    for v in manifest.variants:
        if v.target_kind == "recorded":
            continue
        limit = overrides.pop(v.id, None) or getattr(v, "concurrency", None) or manifest.max_workers
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InputError(f"concurrency of variant {v.id!r} must be a positive integer")
        out[v.id] = limit
    if overrides:
        require_known(
            "live variant id", sorted(overrides), list(out), location="variant_concurrency"
        )
    return out


def concurrency_plan(
    manifest: ManifestSpec,
    concurrency: int | None,
    limits: Mapping[str, int],
    own: Collection[str] | None = None,
) -> tuple[int, str | None]:
    """The most live calls that can really be in flight, and a note when ``concurrency``
    asks for more than the per-variant limits allow.

    Each variant calls at most its own limit at once (``concurrency`` on the variant, else
    the manifest's ``max_workers``, default 1), so the overall limit is capped by their sum.
    ``own`` names the variants whose limit is their own rather than ``max_workers`` (the
    note's suggested ``max_workers`` lifts only the others).

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest
    >>> m = load_manifest("data/support/manifest.yaml")
    >>> concurrency_plan(m, None, {"a": 1, "b": 1})
    (1, None)
    >>> effective, note = concurrency_plan(m, 32, {"a": 1, "b": 1})
    >>> effective, note.split(":")[0]
    (2, 'concurrency 32 is capped at 2 calls in flight')
    >>> concurrency_plan(m, 32, {"a": 2, "b": 4, "c": 2}, own={"b"})[1].split("To use 32, ")[1]
    'set max_workers: 14 in the manifest, or concurrency: N on each variant'
    """
    ceiling = sum(limits.values())
    if concurrency is None:
        return max(limits.values(), default=1), None
    if not limits or concurrency <= ceiling:
        return concurrency, None
    per_variant = sorted(set(limits.values()))
    each = (
        f"{count_noun(per_variant[0], 'call')} per variant"
        if len(per_variant) == 1
        else "the per-variant limits " + ", ".join(f"{v}={n}" for v, n in limits.items())
    )
    # Raising max_workers lifts only the variants that take it; those with a limit of
    # their own keep it, so the value that reaches `concurrency` counts only the former.
    shared = [v for v in limits if v not in set(own or ())]
    own_total = sum(n for v, n in limits.items() if v not in shared)
    fix = (
        f"set max_workers: {-(-(concurrency - own_total) // len(shared))} in the manifest, or "
        "concurrency: N on each variant"
        if shared
        else "raise concurrency: on the variants"
    )
    return ceiling, (
        f"concurrency {concurrency} is capped at {ceiling} calls in flight: "
        f"{count_noun(len(limits), 'live variant')} at {each} "
        f"(max_workers: {manifest.max_workers} in {manifest.path}). "
        f"To use {concurrency}, {fix}"
    )


def judge_postfix(calls: int, unavailable: int, reused: int) -> str:
    """The judge part of the live progress line.

    Examples
    --------
    >>> judge_postfix(12, 1, 4)
    'judge calls 12 (1 unavailable, 4 reused)'
    >>> judge_postfix(3, 0, 0)
    'judge calls 3'
    """
    extra = [f"{unavailable} unavailable"] if unavailable else []
    extra += [f"{reused} reused"] if reused else []
    return f"judge calls {calls}" + (f" ({', '.join(extra)})" if extra else "")


def _replay_samples(
    manifest: ManifestSpec,
    registry: EvaluatorRegistry | None,
    samples: JudgeSamples,
    folder: RunFolder | None,
    *,
    offline: str | None = None,
) -> ReplaySamples | None:
    """The judge samples of recorded replays in a run folder (None: nothing to journal or
    reuse, so a replay judges every sample). ``offline`` (loading a run folder, which
    calls no judge): see :class:`~.journal.ReplaySamples`."""
    if registry is None or not registry.has_judges:
        return None
    if all(v.target_kind != "recorded" for v in manifest.variants):
        return None
    if folder is None and not samples and offline is None:
        return None
    return ReplaySamples(samples, folder, offline=offline)


def _note_changed_judges(samples: JudgeSamples, registry: EvaluatorRegistry | None) -> None:
    """Say when journaled judge samples are not reused because their judge changed.

    Samples are bound to the judge's name and version: a changed judge (new prompt or
    model) must not finish an evaluation begun by the old one, so those evaluations are
    judged again from their first sample (by :class:`~agenticlens_frames.judges.SampleBook`).
    """
    stale: dict[tuple[str, str | None, str | None], int] = {}
    for by_sample in samples.values():
        for judge, version, _, _ in by_sample.values():
            now = registry[judge].version if registry is not None and judge in registry else None
            if registry is None or judge not in registry or now != version:
                stale[(judge, version, now)] = stale.get((judge, version, now), 0) + 1
    for (judge, version, now), count in stale.items():
        _LOG.warning(
            "Note: %s of judge %r (version %r) not reused: the judge is now %s; those "
            "evaluations are judged again from their first sample",
            count_noun(count, "journaled sample"),
            judge,
            version,
            f"version {now!r}" if registry is not None and judge in registry else "not registered",
        )


class _NoBar:
    """What :class:`_Progress` updates when progress is off."""

    def update(self, n: int = 1) -> None:
        """Nothing to draw."""

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """Nothing to draw."""

    def close(self) -> None:
        """Nothing to close."""


class _Progress:
    """tqdm.auto bars: one for the experiment, one per live variant (terminal or notebook);
    with judges, the experiment's bar also shows the judge calls made (:func:`judge_postfix`),
    and, once a target left an attempt unanswered, how many it left (an outage shows while
    it lasts, not only in the summary at the end).
    """

    def __init__(self, enabled: bool, title: str, totals: dict[str, int], *, overall: int) -> None:
        self.bars: dict[str, Any] = {}
        self._lock = threading.Lock()
        #: Judge calls made, samples unavailable, samples reused from the journal.
        self.judge = [0, 0, 0]
        self._judging = False
        #: Attempts of this session whose target never answered (errors, timeouts).
        self.unanswered = 0
        if not enabled:  # no bars at all (a disabled tqdm still costs its import)
            self.overall = _NoBar()
            return
        if wants_log_lines():
            # A log or a pipe: a plain line now and then, not bars redrawn in place.
            self.overall = LogLines(total=overall, desc=title, unit="attempt")
            return
        self.overall = progress_bar(
            total=overall,
            desc=title,
            unit="attempt",
            disable=not enabled,
            dynamic_ncols=True,
        )
        if len(totals) > 1:
            width = max(len(v) for v in totals)
            for variant_id, total in totals.items():
                self.bars[variant_id] = progress_bar(
                    total=total,
                    desc=f"  {variant_id:<{width}}",
                    unit="attempt",
                    disable=not enabled,
                    dynamic_ncols=True,
                )

    def judged(self, calls: int, unavailable: int, reused: int) -> None:
        """Add one scored attempt's judge calls to the line (called from judge threads)."""
        with self._lock:
            self.judge[0] += calls
            self.judge[1] += unavailable
            self.judge[2] += reused
            self._judging = True
            self.overall.set_postfix_str(self._postfix(), refresh=False)

    def update(self, variant_id: str, unanswered: int = 0) -> None:
        """One more attempt of ``variant_id`` done; ``unanswered`` so far this session."""
        if unanswered != self.unanswered:
            with self._lock:
                self.unanswered = unanswered
                self.overall.set_postfix_str(self._postfix(), refresh=False)
        self.overall.update()
        bar = self.bars.get(variant_id)
        if bar is not None:
            bar.update()

    def _postfix(self) -> str:
        """The end of the experiment's line: the judge calls, then the attempts unanswered."""
        parts = [judge_postfix(*self.judge)] if self._judging else []
        if self.unanswered:
            parts.append(f"{self.unanswered} unanswered")
        return " · ".join(parts)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.overall.close()


# --------------------------------------------------------------------------- running


@keyword_hints
def run_experiment(
    manifest_path: str | Path,
    suite_path: str | Path,
    *,
    evaluators: EvaluatorRegistry | str | None = None,
    run_dir: str | Path | None = None,
    concurrency: int | None = None,
    max_attempts: int | None = None,
    progress: bool = True,
    retry: RetryPolicy | Mapping[str, Any] | None = None,
    variant_concurrency: Mapping[str, int] | None = None,
    invalid_payload: InvalidPayloadMode = "trial",
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
    environ: Mapping[str, str] | None = None,
    rerun_failed: bool = False,
    stop_when: str | None = None,
    stop_rule: StopRule | None = None,
    comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
) -> LiveRunResult:
    """Run an experiment whose variants may be python, http or recorded targets.

    Parameters
    ----------
    manifest_path, suite_path
        The experiment manifest and the suite (YAML, or JSON by extension).
    evaluators
        Registered Python evaluators the suite may name: a registry, or a
        ``"module:attr"`` spec as for ``--evaluators``.
    run_dir
        A folder for the journal (and, at the end, the parquet tables under
        ``tables/``). If it holds an earlier run of the same experiment, that run is
        resumed: finished attempts are neither called nor scored again. Without it,
        nothing is persisted.
    concurrency
        Most target calls in flight overall. Default: the largest per-variant limit (so a
        manifest with the default ``max_workers: 1`` calls one case at a time, like
        AgenticLens).
    max_attempts
        Start at most this many (variant, trial, case) attempts, then stop; the result's
        ``remaining`` says how many are left. Resume with the same ``run_dir``.
    progress
        Show tqdm progress bars (terminal or notebook).
    retry
        A :class:`~.retry.RetryPolicy` for every live variant, or a mapping variant id →
        policy (or ``retry`` mapping); overrides the manifest. Default: one call.
    variant_concurrency
        Variant id → most calls in flight to its target; overrides the manifest (variant
        ``concurrency``, else ``max_workers``).
    invalid_payload
        ``"trial"`` (AgenticLens): a payload that is not a sample fails its whole trial.
        ``"case"``: it fails only its case, as a ``target_error``.
    max_reply_bytes
        Largest HTTP reply read (bigger replies fail the case).
    max_output_chars
        Longest ``output`` accepted from one attempt (default 4 000 000 characters; None:
        no limit). A longer one is an invalid payload whose error names the limit.
    environ
        Where ``${NAME}`` in http headers comes from; default ``os.environ``.
    rerun_failed
        When resuming, call again the attempts that ended in a target error or timeout
        (e.g. after restarting a server that died); their new outcome replaces the old
        one. Invalid payloads are not re-run: they are target bugs.
    stop_when
        ``"decided"``: run the cases one at a time in a seeded random order and stop
        starting attempts once every candidate's anytime-valid interval against the
        baseline is decided (:mod:`.stopping`); the tables then hold the cases used. With
        declared case clusters (``comparisons``' ``cluster``) the clusters run one at a
        time and the sequence is fed once per completed cluster. Every variant must be
        live. None (default): run everything.
    stop_rule
        Level, declared correction and optional margin for ``stop_when``; an unset level
        or correction is the one ``comparisons`` (or the manifest) declares, another is
        refused (default: the declared ones, else α = 0.05 and no correction — allowed
        only with one candidate). The run's final analysis (``analyze(result)``) declares
        the rule's correction and α, and the cluster of ``comparisons``.
    comparisons
        The paired-comparison settings the run will be judged under (default: the
        manifest's ``comparisons:``; see
        :func:`~agenticlens_frames.paired.settings.effective_comparisons`). When there are
        any, their guard rails (configurations, evaluators, case-scores) are checked before
        the first call, not after paying for the scoring.

    Returns
    -------
    LiveRunResult

    Raises
    ------
    InputError
        Before any call: invalid files, an unimportable python target, a header naming an
        unset variable, a run folder of another experiment.

    Examples
    --------
    >>> result = run_experiment("data/support/manifest.yaml", "data/support/suite.yaml",
    ...                         progress=False)
    >>> result.complete, len(result.run.trials) == 5 * result.run.manifest.trial_count
    (True, True)
    """
    registry = as_registry(evaluators)
    try:
        manifest = load_manifest(manifest_path)
    except InputError as exc:
        raise with_suite_problems(exc, suite_path, known_evaluators=tuple(registry)) from None
    suite = load_suite(suite_path, known_evaluators=tuple(registry))
    return run_live(
        manifest,
        suite,
        registry=registry,
        run_dir=run_dir,
        concurrency=concurrency,
        max_attempts=max_attempts,
        progress=progress,
        retry=retry,
        variant_concurrency=variant_concurrency,
        invalid_payload=invalid_payload,
        max_reply_bytes=max_reply_bytes,
        max_output_chars=max_output_chars,
        environ=environ,
        rerun_failed=rerun_failed,
        stop_when=stop_when,
        stop_rule=stop_rule,
        comparisons=comparisons,
    )


def run_live(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    *,
    registry: EvaluatorRegistry | None = None,
    targets: Mapping[str, Target] | None = None,
    **options: Any,
) -> LiveRunResult:
    """:func:`run_experiment` on loaded specs, from synchronous code.

    ``targets`` supplies ready-made targets by variant id (the Python API's agents);
    other live variants are built from the manifest. Works in a notebook too: inside a
    running event loop the run gets a thread and a loop of its own.

    Examples
    --------
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> result = run_live(load_manifest("data/support/manifest.yaml"),
    ...                   load_suite("data/support/suite.yaml"), progress=False)
    >>> result.complete, len(result.run.attempts)
    (True, 350)
    """
    return run_coroutine(
        lambda: arun_live(manifest, suite, registry=registry, targets=targets, **options)
    )


def run_coroutine(factory: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine to completion from sync code, with or without a running loop.

    Ctrl-C cancels it; the coroutine decides what cancellation means (the live runner
    stops, keeps what is done and returns).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        kept: dict[str, Any] = {}

        async def keep() -> None:
            # The value stays out of the task's result: asyncio.Runner, restoring the
            # SIGINT handler, formats the old handler (which holds the task) into an
            # error message it then discards, and that repr'd a whole run's tables.
            kept["value"] = await factory()

        with asyncio.Runner() as runner:
            runner.run(keep())
        return kept["value"]
    holder: dict[str, Any] = {}
    started = threading.Event()

    async def main() -> Any:
        holder["loop"] = asyncio.get_running_loop()
        holder["task"] = asyncio.current_task()
        started.set()
        return await factory()

    def work() -> None:
        try:
            holder["value"] = asyncio.run(main())
        except BaseException as exc:  # re-raised in the caller's thread
            holder["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=work, name="agenticlens-frames-run", daemon=True)
    thread.start()
    started.wait()
    while thread.is_alive():
        try:
            thread.join(0.1)
        except KeyboardInterrupt:
            loop, task = holder.get("loop"), holder.get("task")
            if loop is not None and task is not None:
                loop.call_soon_threadsafe(task.cancel)
    if "error" in holder:
        raise holder["error"]
    return holder.get("value")


def _each(
    *callbacks: Callable[[dict[str, Any]], None] | None,
) -> Callable[[dict[str, Any]], None] | None:
    """One journal callback calling every given one in turn (None when none is given)."""
    given = [c for c in callbacks if c is not None]
    if len(given) <= 1:
        return given[0] if given else None

    def call(record: dict[str, Any]) -> None:
        for callback in given:
            callback(record)

    return call


async def arun_live(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    *,
    registry: EvaluatorRegistry | None = None,
    targets: Mapping[str, Target] | None = None,
    run_dir: str | Path | None = None,
    concurrency: int | None = None,
    max_attempts: int | None = None,
    progress: bool = True,
    retry: RetryPolicy | Mapping[str, Any] | None = None,
    variant_concurrency: Mapping[str, int] | None = None,
    invalid_payload: InvalidPayloadMode = "trial",
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
    environ: Mapping[str, str] | None = None,
    rerun_failed: bool = False,
    stop_when: str | None = None,
    stop_rule: StopRule | None = None,
    comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
) -> LiveRunResult:
    """The live runner as a coroutine (see :func:`run_experiment` for the parameters).

    Examples
    --------
    >>> import asyncio
    >>> from agenticlens_frames.formats import load_manifest, load_suite
    >>> manifest = load_manifest("data/support/manifest.yaml")
    >>> suite = load_suite("data/support/suite.yaml")
    >>> result = asyncio.run(arun_live(manifest, suite, progress=False))
    >>> result.complete, result.run.experiment_id
    (True, 'support-agent-upgrade@1')
    """
    check_invalid_payload(invalid_payload)
    if concurrency is not None and (isinstance(concurrency, bool) or concurrency < 1):
        raise InputError(f"concurrency must be at least 1, got {concurrency}")
    if max_attempts is not None and max_attempts < 0:
        raise InputError(f"max_attempts must not be negative, got {max_attempts}")
    env: Mapping[str, str] = os.environ if environ is None else environ
    targets = dict(targets or {})
    _remember_secrets(manifest, env)
    monitor = _stop_monitor(manifest, suite, stop_when, stop_rule, invalid_payload, comparisons)

    # 1. Everything that can be checked before the first call.
    from ..paired.settings import check_run_guard_rails

    check_run_guard_rails(manifest, suite, _judged_under(manifest, monitor, comparisons))
    limits = _limits(manifest, variant_concurrency)
    policies = _policies(manifest, retry)
    recorded_paths = {
        v.id: v.resolved_target for v in manifest.variants if v.target_kind == "recorded"
    }
    if len(recorded_paths) < len(manifest.variants):
        # Live calls cost time and money: a broken recorded file must stop the run first.
        # (Checked one file at a time, then dropped; the replay reads them again.)
        check_recorded_files(manifest)
        for path in recorded_paths.values():
            load_recorded(path, suite)
    functions = _load_functions(manifest, targets, env)
    own = {v.id for v in manifest.variants if getattr(v, "concurrency", None)}
    global_limit, capped = concurrency_plan(
        manifest, concurrency, limits, own=own | set(variant_concurrency or ())
    )
    # Said once the run folder is known to resume (step 2): a note about a run that is
    # then refused is noise before its refusal.
    notes = (
        [capped] if capped and any(v.target_kind != "recorded" for v in manifest.variants) else []
    )

    # 2. The run folder: identity, lock, what is already done.
    # One command line's processes share an id (the supervisor's); a call from Python is
    # its own command line.
    invocation = (os.environ.get(INVOCATION_ENV) or uuid.uuid4().hex) if rerun_failed else None
    # Under early stopping a failed trial's cases are run, or not, in the planned order.
    ledger = Ledger(suite, invalid_payload, invocation, monitor.rank if monitor else None)
    folder: RunFolder | None = None
    if run_dir is not None:
        folder = RunFolder(
            run_dir,
            {
                **run_identity(manifest, suite, recorded_paths),
                "invalid_payload": invalid_payload,
                # Compared on resume: another order or rule would mix two designs.
                "stopping": monitor.settings() if monitor is not None else None,
            },
            earlier_manifest_sha256=earlier_manifest_sha256(manifest),
        )
    try:
        if folder is not None:
            ledger.journal = folder.journal
            for record in folder.records(_record_check(manifest, suite)):
                ledger.add(record)
        # A process started again for the same command line continues its re-run (its
        # ``reopen`` record was met above): reopened again, the failures it already ran
        # again would be called a third time.
        reopen = rerun_failed and not ledger.continues_rerun and ledger.reopen_failed() > 0
        if registry is not None and registry.has_judges and monitor is None:
            # Judge scores that are unavailable (the judge never answered) are judged again
            # from the journaled reply; delivered samples are reused, never judged twice.
            # Not under early stopping: the stopping decision was taken on those outcomes,
            # in their order; judging them again changed the sequence (and the cases used).
            again = ledger.reopen_unavailable()
            if again:
                _LOG.warning(
                    "Note: %s with an unavailable judge score judged again from the "
                    "journaled reply (the targets are not called again)",
                    count_noun(again, "attempt"),
                )
        # Counted from the journal, not as the run's attempts less this session's: a failed
        # trial's cases were never called, yet they are attempts of the run.
        from_journal = len(ledger.final)
        samples = ledger.unfinished_samples()
        _note_changed_judges(samples, registry)
        if monitor is not None:
            # A resumed run replays what is done into the same sequence, then continues.
            for record in ledger.final.values():
                monitor.add(record)
        if monitor is not None and not monitor.rule.margin and not monitor.should_stop:
            # Before the calls, not after them: the commonest case (no change) is the one a
            # rule without a margin never decides. (A run decided already calls nothing.)
            notes.append(no_margin_note(monitor.rule.margin))
        for note in notes:
            # Said once per run (logging's last-resort handler prints it on stderr when the
            # caller configured nothing, e.g. the command line).
            _LOG.warning("Note: %s", note)
        items = _work_items(
            manifest,
            suite,
            ledger,
            monitor.rank if monitor is not None else None,
        )
        if monitor is not None and monitor.should_stop:
            items = []
        totals: dict[str, int] = {v: 0 for v in limits}
        for item in items:
            totals[item.variant_id] += 1

        # 3. Call what is left.
        session = f"{now_iso()}-{os.getpid()}"
        bars = _Progress(
            progress and bool(items),
            f"{manifest.name} · {global_limit} in flight",
            totals,
            overall=len(items) if max_attempts is None else min(max_attempts, len(items)),
        )
        # Judge calls (slow, remote) are scored under the run's concurrency limit.
        judged = registry is not None and registry.has_judges
        inflight = InflightLog.from_env() if folder is not None else None
        writer = JournalWriter(
            folder.new_segment() if folder is not None and items else None,
            registry,
            on_record=_each(
                None if inflight is None else inflight.ended,
                monitor.add if monitor is not None else None,
            ),
            scoring_workers=global_limit if judged else 1,
            samples=samples,
            on_judge=bars.judged if judged else None,
            on_judging=inflight.judging if inflight is not None and judged else None,
        )
        # Young collections stay rare until the run's records are released: a collection
        # between the calls and the tables (closing the targets, the journal) would walk
        # every record of the run (50-75 ms at 10 000 attempts), and so would the first one
        # after the tables unless the records are let go first (below).
        cwd = os.getcwd()
        with _fewer_collections():
            clients: list[Transport] = []
            plans: dict[str, VariantPlan] = {}
            interrupted = False
            try:
                plans = _plans(
                    manifest,
                    limits,
                    policies,
                    functions,
                    targets,
                    env,
                    max_reply_bytes,
                    clients,
                    max_output_chars=max_output_chars,
                )
                scheduler = Scheduler(
                    plans,
                    items,
                    concurrency=global_limit,
                    journal=writer,
                    session=session,
                    budget=max_attempts,
                    stop_trial_on_invalid=invalid_payload == "trial",
                    failed=ledger.failed.copy(),
                    # (`scheduler` is bound before the first attempt is done)
                    on_done=lambda variant_id: bars.update(variant_id, scheduler.unanswered),
                    should_stop=(lambda: monitor.should_stop) if monitor is not None else None,
                    admit=monitor.admits(global_limit) if monitor is not None else None,
                    # A few waves of calls: a healthy writer catches up between waves (one
                    # wave was too few: its scoring outlasts 50 ms calls, and the calls
                    # waited). Judged replies are on disk before their judge is called.
                    backlog=None if judged else 4 * global_limit,
                )
                scheduler.inflight = inflight
                if reopen:
                    # Before any attempt record (records without scoring keep their order).
                    writer.append({"type": "reopen", "invocation": invocation, "session": session})
                # Each suspect runs alone until its record is on disk, and the calls wait
                # for a writer that fell behind (Scheduler.settled).
                writer.on_record = _each(writer.on_record, scheduler.settled)
                if monitor is not None:
                    monitor.on_advance = scheduler.wake_threadsafe
                await scheduler.run()
                interrupted = scheduler.interrupted
                if monitor is not None and monitor.should_stop and items:
                    done = len(ledger.final) + scheduler.finished
                    writer.append({"type": "stop", "session": session, **monitor.summary(done)})
            finally:
                for plan in plans.values():
                    plan.target.close()
                _restore_cwd(cwd)
                for transport in clients:
                    interrupted = await _until_interrupted(transport.aclose()) or interrupted
                try:
                    interrupted = await _close_journal(writer, interrupted)
                finally:
                    if inflight is not None:
                        inflight.close()
                    # After the writer: the last attempts' judge calls are still counted.
                    bars.close()

            # 4. The tables, from everything journaled (this session's records included).
            # Our own objects only, none in a cycle: a collection here would walk every record
            # of the run again (a full young-and-middle pass took ~0.1 s after 10 000 attempts).
            with paused_gc():
                for record in writer.records:
                    ledger.add(record)
                if monitor is not None and _sequence_ended(monitor, ledger, manifest):
                    run, remaining, open_cases, awaiting = _sequence_run(
                        manifest,
                        suite,
                        ledger,
                        monitor,
                        registry,
                        invalid_payload,
                        progress=progress,
                        parsed=writer.parsed,
                        answered=writer.answered,
                    )
                else:
                    replays = _replay_samples(manifest, registry, samples, folder)
                    try:
                        run, remaining, open_cases = build_run(
                            manifest,
                            suite,
                            ledger,
                            registry,
                            progress=progress,
                            parsed=writer.parsed,
                            journaled=replays,
                        )
                    finally:
                        if replays is not None:
                            replays.close()
                    awaiting = ledger.awaiting_judge(writer.answered)
                if folder is not None:
                    run.to_parquet(folder.path / "tables")
                # A Ctrl-C while the tables were built (no await there) is an interrupt too.
                interrupted = await _until_interrupted(asyncio.sleep(0)) or interrupted
                result = LiveRunResult(
                    run=run,
                    remaining=remaining,
                    remaining_cases=open_cases,
                    awaiting_judge=awaiting,
                    attempted=scheduler.finished,
                    from_journal=from_journal,
                    interrupted=interrupted,
                    run_dir=folder.path if folder is not None else None,
                    calls=ledger.calls_frame(),
                    stopping=run.stopping,
                )
                # The records are in the tables now. Let them go while the collector is still
                # paused: freed by reference counting, they are no longer there for the first
                # collection after it resumes to walk (that pass, over every record of the run
                # kept since the live run's young collections, took 50-110 ms at 10 000 attempts).
                ledger.release()
                writer.release()
            return result
    finally:
        if folder is not None:
            folder.close()


def _sequence_ended(monitor: StopMonitor, ledger: Ledger, manifest: ManifestSpec) -> bool:
    """The early-stopping sequence is over: every candidate is decided, or every attempt
    ran. Its tables are then :func:`_sequence_run`'s (with the stopping block)."""
    return monitor.should_stop or not ledger_pending(ledger, manifest)


def _sequence_run(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    ledger: Ledger,
    monitor: StopMonitor,
    registry: EvaluatorRegistry | None,
    invalid_payload: InvalidPayloadMode,
    *,
    progress: bool = False,
    parsed: Mapping[int, tuple[dict[str, Any], str, Trace]] | None = None,
    answered: Iterable[tuple[str, int, str]] = (),
) -> tuple[ExperimentRun, int, int, int]:
    """The tables of an early-stopping run whose sequence is over (:func:`_sequence_ended`),
    its stopping block attached as :attr:`~agenticlens_frames.frames.ExperimentRun.stopping`.

    ``monitor`` has been fed every finished attempt of ``ledger`` (the run's, or a run
    folder's replayed). The tables hold the cases the sequence used (all of them if it
    never stopped). One function for the live run, its resume and a load of its folder
    (:func:`load_run_folder`): each gives the same tables and block. ``parsed`` and
    ``answered`` are the session's (:class:`~.journal.JournalWriter`), when there is one.

    Returns
    -------
    run, remaining, open_cases, awaiting
        As :func:`build_run`, and the attempts of the cases used that await their judge.
    """
    stopping = monitor.summary(len(ledger.final))
    used = set(monitor.used_cases()) if monitor.should_stop else set(suite.case_ids)
    # The attempts that ran past the decision point are not in the tables, but their
    # judges were paid: counted apart, with every session's.
    spend = judge_spend_after_decision(
        manifest.variant_ids,
        (
            (str(r["variant"]), journaled_judge_scores(r))
            for key, r in ledger.final.items()
            if key[2] not in used
        ),
    )
    if spend:
        stopping["judge_spend_after_decision"] = spend
    small = sub_suite(suite, used)
    sub_ledger = Ledger(small, invalid_payload, position=monitor.rank)
    for record in [*ledger.calls, *ledger.final.values()]:
        if record["case"] in used:
            sub_ledger.add(record)
    run, remaining, open_cases = build_run(
        manifest, small, sub_ledger, registry, progress=progress, parsed=parsed
    )
    awaiting = sub_ledger.awaiting_judge([*ledger.answered, *answered])
    sub_ledger.release()
    run.stopping = stopping
    return run, remaining, open_cases, awaiting


def _restore_cwd(cwd: str) -> None:
    """Undo a target's ``os.chdir``, saying so: the run folder's tables and the caller's
    relative paths (the reports, the manifest read again) are where the run started; they
    went to the target's folder, and the command line then could not find its manifest.

    Examples
    --------
    >>> import os, tempfile
    >>> here = os.getcwd()
    >>> os.chdir(tempfile.gettempdir())
    >>> _restore_cwd(here)
    >>> os.getcwd() == here
    True
    """
    with contextlib.suppress(OSError):  # (a target that removed its folder: go back too)
        if os.getcwd() == cwd:
            return
    _LOG.warning("Note: a python target changed the working directory; back to %s", cwd)
    os.chdir(cwd)


async def _until_interrupted(step: Awaitable[Any]) -> bool:
    """Await ``step``; True if Ctrl-C came meanwhile, or while the task ran without yielding
    before it (the cancellation it causes takes effect at the next ``await``). The
    cancellation is then withdrawn (:func:`~.scheduler.take_interrupt`): the caller stops
    the run as the scheduler does, rather than let it end in a bare ``KeyboardInterrupt``
    with what it had done unsaid."""
    try:
        await step
    except asyncio.CancelledError:
        take_interrupt()
        return True
    return False


async def _close_journal(writer: JournalWriter, interrupted: bool) -> bool:
    """Write what is left and stop the journal; return whether the run was interrupted
    (before, or during this).

    The judge calls of the last replies (minutes with a slow judge, every target answered)
    are awaited, not blocked on, so a Ctrl-C meanwhile is an interrupt like any other: the
    judgings not started are left to the resume, which judges them from their journaled
    replies without calling the targets. (Blocked on, the loop saw the Ctrl-C only after
    the whole queue was judged, and the run then ended in a bare ``KeyboardInterrupt``.)
    """
    if not interrupted:
        interrupted = await _until_interrupted(writer.drained())
    # Interrupted: replies waiting for a judge stay journaled for the resume, rather than
    # holding a cancelled run (a CI's grace period) on the judge.
    writer.close(abandon_judging=interrupted)
    return interrupted


def load_run_folder(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    run_dir: str | Path,
    registry: EvaluatorRegistry | None = None,
    *,
    invalid_payload: InvalidPayloadMode = "trial",
    progress: bool = False,
) -> ExperimentRun:
    """The results a live run journaled in ``run_dir``, without calling any target; its
    recorded variants replayed with the judge samples journaled there.

    A run with early stopping whose sequence is over (every candidate decided, or every
    attempt run) loads as the run returned it (:func:`_sequence_run`): the cases the
    sequence used, with its stopping block as
    :attr:`~agenticlens_frames.frames.ExperimentRun.stopping`.

    Raises
    ------
    InputError
        No run was recorded there, the folder belongs to another experiment, or some
        attempts have not run yet (the message says how to resume); a run with early
        stopping that is neither decided nor complete is refused so too.
    """
    path = Path(run_dir)
    how = (
        f"run it with `agenticlens-frames experiment run {manifest.path} {suite.path} "
        f"--run-dir {path}`"
    )
    if path.exists() and not path.is_dir():
        # "no run was recorded in this folder" about a file sent the user looking for a run.
        raise InputError(
            "run_dir names an existing file, not a run folder",
            file=path,
            hint="give the --run-dir folder of the run to load",
        )
    if not (path / "run.json").is_file():
        live = any(v.target_kind != "recorded" for v in manifest.variants)
        raise InputError(
            f"no {'live run' if live else 'run'} was recorded in this folder", file=path, hint=how
        )
    recorded_paths = {
        v.id: v.resolved_target for v in manifest.variants if v.target_kind == "recorded"
    }
    folder = RunFolder(
        path,
        {**run_identity(manifest, suite, recorded_paths), "invalid_payload": invalid_payload},
        earlier_manifest_sha256=earlier_manifest_sha256(manifest),
    )
    # Run with early stopping, a failed trial's cases were called, or not, in its order.
    try:
        rank = recorded_rank(manifest, suite, folder.stopping)
    except InputError:
        folder.close()
        raise
    ledger = Ledger(suite, invalid_payload, position=rank)
    ledger.journal = folder.journal
    # The declared correction the stopping block names (and the final analysis declares):
    # the session that stopped the run journaled it, and run.json records it beside the
    # applied one (declared_in_folder).
    stop_record: dict[str, Any] | None = None
    try:
        for record in folder.records(_record_check(manifest, suite)):
            if record.get("type") == "stop":
                stop_record = record
            ledger.add(record)
        monitor = recorded_monitor(
            manifest,
            suite,
            folder.stopping,
            trial_mode=invalid_payload == "trial",
            declared=declared_in_folder(
                folder.stopping, stop_record, _declared_correction(manifest)
            ),
            file=path / "run.json",
        )
    finally:
        folder.close()
    resume = how.removeprefix("run it with ")
    replays: ReplaySamples | None = None
    if monitor is not None:
        # The run's sequence, replayed as its resume replays it: a run it decided (or that
        # ran every attempt) loads as the run returned it, the cases it used and its
        # stopping block; its attempts never called are not attempts still to run.
        for record in ledger.final.values():
            monitor.add(record)
    if monitor is not None and _sequence_ended(monitor, ledger, manifest):
        # (Every variant is live under early stopping: no recorded replay.)
        run, remaining, _, _ = _sequence_run(
            manifest, suite, ledger, monitor, registry, invalid_payload, progress=progress
        )
    else:
        # Recorded replays read the judge samples journaled by the run, unavailable ones
        # too, and call no judge: a load costs nothing, needs no network or key, and gives
        # the same tables every time. Judging again is the resume's (which journals what
        # it gets).
        judged = registry is not None and any(registry.judges(case) for case in suite.cases)
        replays = _replay_samples(
            manifest,
            registry,
            ledger.unfinished_samples(keep_unavailable=True),
            None,
            # (Only when a case names a judge: without one, the replay may fork as before.
            # No path in the score's error: it goes into reports; the note below has them.)
            offline="not judged in this run folder, and loading calls no judge: resume the "
            "run to judge it"
            if judged
            else None,
        )
        run, remaining, _ = build_run(
            manifest, suite, ledger, registry, progress=progress, journaled=replays
        )
    if remaining:
        raise InputError(
            f"{count_noun(remaining, 'attempt')} of the live variants not run yet",
            file=path,
            hint=f"resume: {resume}",
        )
    if replays is not None and replays.missing:
        # Not refused: what the folder holds is loaded; the gap is said, and shows in the
        # scores (unavailable, NotJudged) and the unavailable-judge notes.
        _LOG.warning(
            "Note: %s of the recorded variants not in run folder %s (a "
            "replay interrupted, or a judge whose version changed): they are unavailable in "
            "this load, which calls no judge; to judge them, resume: %s",
            count_noun(replays.missing, "judge sample"),
            path,
            resume,
        )
    return run


#: Allocations between two young-generation collections during a live run (Python's
#: default is 700).
YOUNG_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect the young generation every :data:`YOUNG_GC_THRESHOLD` allocations, not 700.

    A live attempt allocates dozens of objects (task, futures, handles, records) and keeps
    its records: at the default threshold 10 000 attempts at concurrency 256 ran ~560
    collections, a third of the run's CPU time on a loaded machine (bench_live.py).
    Collection is not turned off: a target that leaves cyclic garbage behind on every
    call is still collected, only in bigger batches.
    """
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_GC_THRESHOLD), middle, old)
    try:
        yield
    finally:
        current = gc.get_threshold()
        if current[0] == max(young, YOUNG_GC_THRESHOLD):  # unless changed meanwhile
            gc.set_threshold(young, current[1], current[2])


def _remember_secrets(manifest: ManifestSpec, env: Mapping[str, str]) -> None:
    """Register every secret this run knows of, so that no record or message shows it."""
    values: list[str] = []
    for variant in manifest.variants:
        expanded = expand_headers(variant.headers, env)
        values += expanded.values()
        if variant.target_kind == "http":
            url = urlsplit(variant.target)
            if url.password is not None:  # sent as basic auth: base64 of "user:password"
                values += [url.password, f"{url.username or ''}:{url.password}"]
        for template in variant.headers.values():
            values += [env.get(name, "") for name in header_variables(template)]
    remember(values)
    remember_environment(env, [manifest.path.parent])


def _load_functions(
    manifest: ManifestSpec, targets: Mapping[str, Target], env: Mapping[str, str]
) -> dict[str, Callable[..., Any]]:
    """Import every python target and check every http header, before any call."""
    functions: dict[str, Callable[..., Any]] = {}
    for index, v in enumerate(manifest.variants):
        if v.id in targets or v.target_kind == "recorded":
            continue
        try:
            if v.target_kind == "python":
                # As written: load_callable resolves a relative file against the folder.
                functions[v.id] = load_callable(v.target, base_dir=manifest.path.parent)
            else:
                check_headers(
                    v.headers,
                    env,
                    variant_id=v.id,
                    file=manifest.path,
                    location=("variants", index),
                )
        except InputError as exc:
            raise InputError(
                exc.message,
                file=exc.file or manifest.path,
                location=exc.location or ("variants", index, "target"),
                hint=exc.hint,
            ) from None
    return functions


def _plans(
    manifest: ManifestSpec,
    limits: dict[str, int],
    policies: dict[str, RetryPolicy],
    functions: dict[str, Callable[..., Any]],
    targets: Mapping[str, Target],
    env: Mapping[str, str],
    max_reply_bytes: int,
    clients: list[Any],
    *,
    max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
) -> dict[str, VariantPlan]:
    """How to call each live variant; http transports are appended to ``clients`` to close."""
    plans: dict[str, VariantPlan] = {}
    tls: Any = None
    for v in manifest.variants:
        if v.id not in limits:
            continue
        target: Target
        if v.id in targets:
            target = targets[v.id]
        elif v.target_kind == "python":
            target = PythonTarget(
                functions[v.id],
                timeout_seconds=v.timeout_seconds,
                threads=limits[v.id] + SPARE_THREADS,
                name=f"target-{v.id}",
            )
        else:
            # One pool per variant, sized to its limit (our client; httpx behind a proxy).
            # The variants share one TLS context (creating one costs ~40 ms).
            if tls is None and v.resolved_target.lower().startswith("https:"):
                tls = trust_context()
            transport = open_transport(
                v.resolved_target,
                size=limits[v.id],
                timeout=v.timeout_seconds,
                tls=tls,
            )
            clients.append(transport)
            target = HttpTarget(
                v.resolved_target,
                transport=transport,
                timeout_seconds=v.timeout_seconds,
                headers=v.headers,
                environ=env,
                max_reply_bytes=max_reply_bytes,
            )
        plans[v.id] = VariantPlan(
            target=target,
            limit=limits[v.id],
            retry=policies[v.id],
            canonicalize=v.target_kind != "http",
            max_output_chars=max_output_chars,
        )
    return plans


def _work_items(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    ledger: Ledger,
    case_rank: Mapping[str, int] | None = None,
) -> list[WorkItem]:
    """Items in AgenticLens' order, or case by case (``case_rank``: early stopping's planned
    position of each case, :attr:`.StopMonitor.rank`)."""
    order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
    kinds = {v.id: v.target_kind for v in manifest.variants}
    n = len(suite.cases)
    items = []
    for position, (variant_id, trial) in enumerate(order):
        if kinds[variant_id] == "recorded":
            continue
        for case in ledger.pending(variant_id, trial):
            prior = tuple(ledger.failures.get((variant_id, trial, case.id), ()))
            seq = (
                position * n + case.index
                if case_rank is None
                else case_rank[case.id] * len(order) + position
            )
            answered = ledger.answered.get((variant_id, trial, case.id))
            ended = ledger.judge_ended.get((variant_id, trial, case.id))
            if answered is not None and ended is not None:
                # Judged from the reply without the judge sample that ended the process.
                answered = {**answered, "judge_ended": ended}
            key = (variant_id, trial, case.id)
            isolated = key in ledger.suspects
            items.append(WorkItem(seq, variant_id, trial, case, prior, answered, isolated))
    return items


def _stop_monitor(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    stop_when: str | None,
    rule: StopRule | None,
    invalid_payload: str,
    comparisons: ComparisonsConfig | Mapping[str, Any] | None,
) -> StopMonitor | None:
    if stop_when is None:
        return None
    from ..paired.settings import effective_comparisons, names_setting

    config = effective_comparisons(manifest, comparisons)
    # An α the settings leave at its default is no declaration: the rule's stands (the
    # final analysis fills an unset α with the rule's, paired.settings.run_comparisons).
    declared_alpha = (
        config.alpha if config and names_setting(manifest, comparisons, "alpha") else None
    )
    rule = declared_rule(rule, config.correction if config else None, declared_alpha)
    check_stop_request(manifest, stop_when, rule)
    # With declared clusters the sequence's unit is the cluster (its cases run together).
    return StopMonitor(
        manifest,
        suite,
        rule,
        trial_mode=invalid_payload == "trial",
        cluster=config.cluster if config else None,
    )


def _judged_under(
    manifest: ManifestSpec,
    monitor: StopMonitor | None,
    comparisons: ComparisonsConfig | Mapping[str, Any] | None,
) -> ComparisonsConfig | Mapping[str, Any] | None:
    """The comparisons the run's final analysis will declare: ``comparisons``, or with a
    stopping rule whose correction was given only by ``stop_rule``, that correction
    (:func:`~agenticlens_frames.paired.settings.run_comparisons`), so that its guard rails
    are checked before the first call rather than refuse the analysis after the run."""
    declared = monitor.rule.correction if monitor is not None else None
    if (
        declared is None
        or comparisons is not None
        or (manifest.comparisons or {}).get("correction") == declared
    ):
        return comparisons
    return {"correction": declared}


def _declared_correction(manifest: ManifestSpec) -> str | None:
    """The correction the manifest's ``comparisons:`` declares, if any."""
    from ..paired.settings import effective_comparisons

    config = effective_comparisons(manifest, None)
    return config.correction if config is not None else None


def ledger_pending(ledger: Ledger, manifest: ManifestSpec) -> int:
    """Live attempts still to run according to the ledger."""
    order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
    kinds = {v.id: v.target_kind for v in manifest.variants}
    return sum(len(ledger.pending(v, t)) for v, t in order if kinds[v] != "recorded")
