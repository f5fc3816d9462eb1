"""The crash-safe journal of a live run: every finished attempt, as it finishes.

A run folder holds::

    run.json                 what this folder belongs to (manifest, suite and recorded-file
                             hashes), and the journal's checksum (``journal_checksum``);
                             written once, tmp file + fsync + atomic rename
    lock                     held (``flock``) while a process runs in the folder
    journal/000001.jsonl     one append-only JSON-lines segment per session
    journal/000002.jsonl     ...

Each line is one record, appended and ``fsync``-ed before the next batch (group commit:
the records that finished while the disk was busy go in one write). A crash can only
tear the *last* line of the segment being written; readers ignore a torn last line, and
the attempt it described is simply run again. A new session never appends to an old
segment: it starts the next one, so what is on disk is never rewritten.

Each line ends with its record's checksum (``"crc"``, :func:`seal`), checked by the
readers on the line's bytes: a record edited by hand or damaged on disk is refused, even
one that stays well-formed. Every line is made by :func:`encode_record`. A folder started
before checksums (no ``journal_checksum`` in run.json) has lines without one, accepted
there only (:attr:`RunFolder.checksums`).

Records (``"type"``):

``call``     one call of a target (one try): outcome (``ok``, a failure kind or
             ``invalid_payload``), error, elapsed time — every try is kept.
``attempt``  the final outcome of one (variant, trial, case): status, the canonical
             payload (output and raw trace), the error, the number of calls, and the
             scores and checks, so a resumed run rebuilds the tables without calling the
             target or scoring again.
``answered``  the target's reply to an attempt that is about to be judged (its case
             names a registered judge): the ``attempt`` record's fields without the
             scores, and the payload's digest (``payload_sha256``), which its judge
             samples refer to. On disk before the first judge call, so an attempt
             interrupted mid-judging is judged on resume from this reply, without calling
             the target again. Attempts without judges have none.
``judge_sample``  one finished judge sample (a judge call with its retries) of an
             attempt being scored: evaluator entry, sample index, judge name and version,
             the digest of the payload it graded, and its outcome (scores, usage, time,
             errors). Written as each sample finishes, so an attempt interrupted
             mid-judging is resumed from its missing samples (:func:`judge_samples`).
             Recorded variants replayed in the run journal theirs too
             (:class:`ReplaySamples`): each is judged once per run folder.

``judge_ended``  written by the command line's supervisor (``_supervise.py``) when the
             run's process ended, a second time, while an ``answered`` attempt was being
             judged: what ended it. The resumed run judges that attempt from its reply,
             with the judge sample that was in progress unavailable with this error
             rather than judged again (the judge may be what ended the process).

``suspect``  written by the supervisor when the run's process ended while this attempt
             was in flight (it cannot tell an attempt that ended it from an outside
             kill): what ended it. The resumed run calls the unfinished attempts with
             one first, one at a time, each alone until its ``attempt`` record is on
             disk, before any other work; an attempt with a ``suspect`` record in flight
             when the process ends again is the one the supervisor blames (a failed
             ``attempt``, or ``judge_ended``).

``reopen``   written by a session of ``--rerun-failed`` before its first call: from here on
             the target errors and timeouts journaled before it are called again. It
             names its command line (``invocation``, ``INVOCATION_ENV`` in
             ``inflight.py``: the same in every process the supervisor starts for one
             command line), so a run process started again after its process ended
             continues that re-run instead of reopening the failures it already ran
             again. Other readers (a later command line, a load of the folder) skip it:
             to them a failure stands until an attempt record replaces it.

A journal is read by record type and a reader skips the types it does not know, so a
journal with ``answered`` records still resumes under a version without them (which calls
the target of an unfinished attempt again, as it always did), one with ``judge_ended``
records under a version without those judges that sample again, and one with ``suspect``
records under a version without those calls those attempts again with the others (and
one with ``reopen`` records reopens every failure again when a re-run's process is
started again, as it always did).

Scoring happens here, on the journal's thread, so a slow registered evaluator never
stalls the event loop that times the calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

# The directory fsync is the one write_atomic uses: one rule for when a new file is durable.
from .._files import _fsync_dir, write_atomic
from .._plain import plain
from .._secrets import mask_value
from ..errors import InputError, format_location
from ..evaluators import EvaluatorRegistry
from ..formats._io import Invalid, scrub_surrogates
from ..formats.model import CaseSpec
from ..formats.traces import Trace
from ..frames import UNANSWERED_STATUSES, CheckColumns
from ..judges import JUDGE_EVALUATOR_TYPES, SampleBook
from ..scoring import AttemptScore, score_sample

__all__ = [
    "DAMAGED_RECORD",
    "FORMAT",
    "JOURNAL_CHECKSUM",
    "MANIFEST_EXCLUDES",
    "PROCESS_ENDED",
    "RERUNNABLE",
    "JournalWriter",
    "ReplaySamples",
    "RunFolder",
    "checksum_ok",
    "digest",
    "encode_record",
    "journaled_judge_scores",
    "judge_samples",
    "read_segments",
    "replay_checks",
    "seal",
]

#: Written into run.json; a folder of another format is refused.
FORMAT = "agenticlens-frames/live-run/1"
#: What run.json's ``manifest_sha256`` leaves out of the manifest (beyond paths and speed
#: knobs), recorded as ``manifest_sha256_excludes``: the ``comparisons:`` block, which only
#: the final analysis reads, and early stopping through its own record (``stopping``). A
#: folder without the key (an earlier version's) hashed the whole manifest.
MANIFEST_EXCLUDES = ("comparisons",)
#: Written into run.json by this version: every journal line ends with its record's CRC-32
#: (:func:`seal`). A folder without it was started by an earlier version, whose lines have
#: none (those a later session wrote have one, and are verified).
JOURNAL_CHECKSUM = "crc32"
#: The journaled attempt outcomes ``--rerun-failed`` calls again: a target that did not
#: answer.
RERUNNABLE = UNANSWERED_STATUSES
#: How the supervisor's record of an attempt that ended the run's process begins: such an
#: attempt is never called again, not even by ``--rerun-failed`` (it would end the process
#: again, restart after restart).
PROCESS_ENDED = "ProcessEnded:"


#: (second since the epoch, its ``YYYY-MM-DDTHH:MM:SS`` text): formatting a datetime cost
#: two calls per live attempt several microseconds each; within a second only the
#: milliseconds change.
_SECOND: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """UTC now, ISO-8601 with milliseconds and ``Z``.

    Examples
    --------
    >>> stamp = now_iso()
    >>> len(stamp), stamp[10], stamp[-1]
    (24, 'T', 'Z')
    >>> datetime.fromisoformat(stamp).tzinfo
    datetime.timezone.utc
    """
    global _SECOND
    ms = time.time_ns() // 1_000_000
    second, millis = divmod(ms, 1000)
    cached, text = _SECOND
    if second != cached:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _SECOND = (second, text)
    return f"{text}.{millis:03d}Z"


def digest(value: Any) -> str:
    """SHA-256 of a value's canonical JSON (dataclasses and paths included).

    Examples
    --------
    >>> digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})
    True
    """
    text = json.dumps(plain(value), sort_keys=True, ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    write_atomic(path, text)


class RunFolder:
    """A run folder, opened for one session: identity checked, lock held.

    Parameters
    ----------
    path
        The folder (created if missing).
    identity
        What the run is: ``experiment_id``, the hashes of the manifest, suite and recorded
        files, ``invalid_payload`` (how an invalid payload counts) and, for a run (not a
        load of the folder), ``stopping``: its early-stopping settings
        (:meth:`.StopMonitor.settings`, None without early stopping). A folder started
        for a different identity is refused.
    earlier_manifest_sha256
        The manifest's hash as earlier versions wrote it, over the whole manifest
        (:func:`~.live.earlier_manifest_sha256`): a folder whose ``run.json`` has no
        ``manifest_sha256_excludes`` is compared against it, so it resumes when nothing
        changed (a change to its ``comparisons:`` block is still a different manifest to
        it: its hash cannot tell).

    Raises
    ------
    InputError
        The folder belongs to another experiment, manifest or suite, or was started with
        other early-stopping settings (:func:`.check_resumed_stopping`); or another
        process is running in it.
    """

    def __init__(
        self,
        path: str | Path,
        identity: dict[str, Any],
        *,
        earlier_manifest_sha256: str | None = None,
    ) -> None:
        self.path = Path(path)
        self._earlier_manifest = earlier_manifest_sha256
        self.journal = self.path / "journal"
        try:
            self.journal.mkdir(parents=True, exist_ok=True)
            self._lock_file = self._lock()
        except OSError as exc:  # the folder (or journal/) is a file, unwritable, ...
            raise InputError(
                f"cannot use this run folder: {exc.strerror or exc}",
                file=self.path,
                hint="give a folder (it is created if missing)",
            ) from None
        meta = self.path / "run.json"
        if not meta.exists() and self.segments():
            # A journal whose run description is gone cannot be tied to this experiment:
            # reusing it could mix the results of two runs.
            self.close()
            raise InputError(
                "the folder holds a journal but no run.json, so it cannot be tied to this "
                "experiment",
                file=self.path,
                hint="restore run.json, or use a new --run-dir",
            )
        if meta.exists():
            try:
                stored = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                self.close()
                raise InputError(f"unreadable run description ({exc})", file=meta) from None
            self._check(stored, identity, meta)
            #: Whether every journal line must have a checksum: a folder started by an
            #: earlier version (no ``journal_checksum`` in run.json) has lines without.
            self.checksums = stored.get("journal_checksum") == JOURNAL_CHECKSUM
            self.created_at = stored.get("created_at")
            #: The early-stopping settings the run was started with (None: without early
            #: stopping, or a folder of an earlier version): a load needs its planned order.
            self.stopping: Any = stored.get("stopping")
            self._declare(stored, identity, meta)
        else:
            self.created_at = now_iso()
            self.stopping = identity.get("stopping")
            self.checksums = True
            described = {
                "format": FORMAT,
                "journal_checksum": JOURNAL_CHECKSUM,
                **identity,
                "created_at": self.created_at,
            }
            _write_atomic(meta, json.dumps(described, indent=2))

    def _declare(self, stored: dict[str, Any], identity: dict[str, Any], meta: Path) -> None:
        """Record in ``run.json`` the correction a resumed session declares, when it is not
        the recorded one.

        A resume may declare another correction (it is not compared: beyond the split of α,
        which is, it decides no stop), and the session's stopping block names it; a load of
        the folder, which reads it from here when no session journaled a ``stop`` record,
        names the same one. A folder of an earlier version whose ``stopping`` lacks the key
        gets it so; one without ``stopping`` (a load, or a run without early stopping) is
        left as it was.
        """
        recorded, given = stored.get("stopping"), identity.get("stopping")
        if not isinstance(recorded, dict) or not isinstance(given, dict):
            return
        declared = given.get("declared_correction")
        if "declared_correction" in recorded and recorded["declared_correction"] == declared:
            return
        self.stopping = {**recorded, "declared_correction": declared}
        _write_atomic(meta, json.dumps({**stored, "stopping": self.stopping}, indent=2))

    def _lock(self) -> Any:
        handle = open(self.path / "lock", "a+")  # noqa: SIM115 - held for the session
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform
            return handle
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise InputError(
                "another process is running this experiment in the folder",
                file=self.path,
                hint="wait for it to finish, or use another --run-dir",
            ) from None
        return handle

    def _check(self, stored: dict[str, Any], identity: dict[str, Any], meta: Path) -> None:
        if stored.get("format") != FORMAT:
            self.close()
            raise InputError(
                f"not a live-run folder of this version (format {stored.get('format')!r})",
                file=meta,
                hint="use an empty folder for --run-dir",
            )
        checksum = stored.get("journal_checksum")  # absent in folders of earlier versions
        if checksum is not None and checksum != JOURNAL_CHECKSUM:
            self.close()
            raise InputError(
                f"this run folder's journal has checksums of another kind ({checksum!r}): it "
                "was written by a newer version",
                file=meta,
                hint="resume or load it with that version, or start a new --run-dir",
            )
        labels = {
            "experiment_id": "experiment",
            "manifest_sha256": "manifest",
            "suite_sha256": "suite",
            "recorded_sha256": "recorded trials files",
        }
        mode = stored.get("invalid_payload")  # absent in folders of earlier versions
        if mode is not None and mode != identity.get("invalid_payload"):
            self.close()
            raise InputError(
                f"this run folder was started with --invalid-payload {mode}, now "
                f"{identity.get('invalid_payload')}: its recorded invalid payloads would "
                "count differently (a failed trial or one failed case) and change the results",
                file=meta,
                hint=f"resume with --invalid-payload {mode} (in Python, "
                f"invalid_payload={mode!r}), or start a new --run-dir",
            )
        given = dict(identity)
        earlier = "manifest_sha256_excludes" not in stored and "manifest_sha256_excludes" in given
        if earlier:
            # Written by an earlier version: its hash covers the whole manifest.
            given["manifest_sha256"] = self._earlier_manifest
        for key, label in labels.items():
            if stored.get(key) != given.get(key):
                self.close()
                whole = (
                    " (this folder's hash, of an earlier version, covers the manifest's "
                    "comparisons: block too)"
                    if earlier and key == "manifest_sha256"
                    else ""
                )
                raise InputError(
                    f"this run folder was started with a different {label} "
                    f"(stored {_short(stored.get(key))}, now {_short(given.get(key))}){whole}; "
                    "resuming would mix results of two experiments",
                    file=meta,
                    hint="resume with the files the run was started with, or start a new run: "
                    "a new --run-dir (in Python, a new run_id, or none)",
                )
        if "stopping" in stored and "stopping" in identity:
            # Absent from folders of earlier versions (their early-stopping settings are
            # unknown: not compared), and from a load of the folder (which runs nothing).
            from .stopping import check_resumed_stopping

            try:
                check_resumed_stopping(stored["stopping"], identity["stopping"], file=meta)
            except InputError:
                self.close()
                raise

    def segments(self) -> list[Path]:
        """The journal segments, oldest first."""
        return sorted(
            p for p in self.journal.glob("*.jsonl") if p.stem.isascii() and p.stem.isdigit()
        )

    def records(
        self, check: Callable[[dict[str, Any]], None] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every record of the journal, checksums verified as the folder's version wrote
        them (:func:`read_segments`)."""
        return read_segments(self.segments(), check, checksums=self.checksums)

    def new_segment(self) -> Path:
        """Create the next segment (empty) and make its directory entry durable."""
        existing = self.segments()
        number = int(existing[-1].stem) + 1 if existing else 1
        path = self.journal / f"{number:06d}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        os.close(fd)
        _fsync_dir(self.journal)
        return path

    def close(self) -> None:
        """Release the lock."""
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value[:12] if len(value) == 64 else repr(value)
    if isinstance(value, dict):
        return digest(value)[:12]
    return repr(value)


def read_segments(
    paths: Iterable[Path],
    check: Callable[[dict[str, Any]], None] | None = None,
    *,
    checksums: bool = False,
) -> Iterator[dict[str, Any]]:
    """Every record of the segments, in order; a torn last line of a segment is skipped.

    Each line's checksum (:func:`seal`) is verified on its bytes, and removed from the
    record. ``checksums``: every line must have one (a folder written by this version,
    :attr:`RunFolder.checksums`); otherwise a line without one (written by an earlier
    version) is taken as it is. ``check`` (a
    :class:`~agenticlens_frames.runner.journal_check.RecordCheck`) is applied to each
    record; what it refuses is an error naming the line and field.

    Raises
    ------
    InputError
        A line other than the last does not parse, a line does not match its checksum or
        lacks one (with ``checksums``), or ``check`` refuses a record: the journal was
        edited or damaged.
    """
    for path in paths:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        # A complete file ends with "\n", so the last element is b"" (or the torn tail).
        for number, line in enumerate(lines, start=1):
            if not line:
                continue
            torn = number == len(lines)  # no newline after it: maybe cut short by a crash
            sealed = checksum_ok(line)
            if sealed is False and not torn:
                raise _damaged(_MISMATCH, path, number)
            try:
                record = json.loads(line)
            except ValueError:
                if torn:
                    break  # torn by a crash mid-write: that attempt runs again
                raise _damaged("not JSON", path, number) from None
            if sealed is False:
                raise _damaged(_MISMATCH, path, number)
            if sealed:
                del record[CHECKSUM]
            elif checksums or (isinstance(record, dict) and CHECKSUM in record):
                # Since checksums, only a line edited by hand has none, or one elsewhere.
                raise _damaged("no checksum at the end of the line", path, number)
            if not isinstance(record, dict):
                continue
            if check is not None:
                try:
                    check(record)
                except Invalid as problem:
                    where = format_location(problem.at)
                    raise _damaged(problem.message, path, number, where) from None
            yield record


#: Why a line whose checksum does not match is refused.
_MISMATCH = "its checksum does not match its content (edited, or damaged on disk)"


def _damaged(problem: str, path: Path, number: int, where: str = "") -> InputError:
    """The error refusing line ``number`` of the segment ``path``."""
    return InputError(
        f"damaged journal record: {problem}",
        file=path,
        location=f"line {number}" + (f", {where}" if where else ""),
        hint=DAMAGED_RECORD,
    )


#: How to mend a journal record that no longer reads (named by its line, or its attempt).
DAMAGED_RECORD = (
    "the journal is append-only and this record was edited or damaged; restore the run "
    "folder from a copy, or delete this line to run its attempt again"
)


# --------------------------------------------------------------------------- checks


def checks_to_json(sink: CheckColumns, start: int = 0) -> list[list[Any]]:
    """The checks appended to ``sink`` from row ``start`` on, as JSON-able rows."""
    rows = []
    for i in range(start, len(sink)):
        custom = sink.custom.get(i)
        rows.append(
            [
                sink.name[i],
                sink.metric[i],
                sink.value[i],
                sink.passed[i],
                sink.explanation[i],
                list(custom) if custom is not None else None,
            ]
        )
    return rows


def score_to_json(score: AttemptScore) -> list[Any]:
    return [
        score.passed,
        score.score,
        score.n_checks,
        score.n_checks_passed,
        score.score_sum,
        score.turns,
        score.evaluator_error,
    ]


def replay_checks(sink: CheckColumns, attempt: int, record: dict[str, Any]) -> AttemptScore:
    """Append a journaled attempt's checks to ``sink`` and return its score (no re-scoring).

    Examples
    --------
    >>> sink = CheckColumns()
    >>> record = {"checks": [["exact_match", "exact_match", 1.0, True, "ok", None]],
    ...           "score": [True, 1.0, 1, 1, 1.0, None, None]}
    >>> replay_checks(sink, 0, record).passed, sink.name
    (True, ['exact_match'])
    """
    for name, metric, value, passed, explanation, custom in record["checks"]:
        if custom is None:
            sink.add(attempt, name, metric, passed, explanation, value)
        else:
            required, evaluator, version, kind = custom[:4]
            # journals written before judges hold four fields (never skipped, no metadata)
            skipped, metadata = custom[4:6] if len(custom) > 4 else (False, None)
            sink.add_custom(
                attempt,
                name,
                value,
                passed,
                explanation,
                required=required,
                evaluator=evaluator,
                evaluator_version=version,
                evaluator_type=kind,
                metric=metric,
                skipped=skipped,
                metadata=metadata,
            )
    passed, score, n, n_passed, score_sum, turns, evaluator_error = record["score"]
    return AttemptScore(
        passed=passed,
        score=score,
        n_checks=n,
        n_checks_passed=n_passed,
        score_sum=score_sum,
        turns=turns,
        evaluator_error=evaluator_error,
    )


def journaled_judge_scores(record: dict[str, Any]) -> list[tuple[str, bool, dict[str, Any]]]:
    """``(case_id, skipped, metadata)`` of each judge score of a journaled ``attempt``
    record, in check order: what :func:`~agenticlens_frames.judges.summarize_judges` takes.

    A check row's sixth field holds ``[required, evaluator, version, type, skipped,
    metadata]`` for a registered evaluator (:func:`checks_to_json`); the metadata is the
    score's JSON text.

    Examples
    --------
    >>> record = {"case": "c1", "checks": [
    ...     ["exact_match", "exact_match", 1.0, True, "ok", None],
    ...     ["j", "j", 0.5, False, "", [True, "j", "1", "llm_judge", False,
    ...                                 '{"judge_cost_usd": 0.01}']]]}
    >>> journaled_judge_scores(record)
    [('c1', False, {'judge_cost_usd': 0.01})]
    """
    scores = []
    for check in record.get("checks") or ():
        custom = check[5]
        # (journals written before judges hold four fields: never a judge score)
        if custom is None or len(custom) < 6 or custom[3] not in JUDGE_EVALUATOR_TYPES:
            continue
        metadata = custom[5]
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        scores.append(
            (str(record["case"]), bool(custom[4]), metadata if isinstance(metadata, dict) else {})
        )
    return scores


#: (variant, trial, case) → journaled judge samples: (entry, sample) → (judge, version,
#: payload digest, outcome).
JudgeSamples = dict[
    tuple[str, int, str], dict[tuple[int, int], tuple[str, str | None, str, dict[str, Any]]]
]


def judge_samples(
    records: Iterable[dict[str, Any]], *, keep_unavailable: bool = False
) -> JudgeSamples:
    """The ``judge_sample`` records, indexed by attempt; a later record of the same
    sample (judged again after a judge changed version, or by a resume) wins.

    A sample that ended unavailable (every attempt failed) is left out, so a resumed run
    judges it again; one the supervisor made unavailable because the run's process ended
    while it was judged (``ProcessEnded``) is kept, as judging it again could end the
    process again. ``keep_unavailable`` keeps every unavailable sample: loading a run
    folder reads it as it is, calling no judge (the resume is what judges again).

    Examples
    --------
    >>> book = judge_samples([{"type": "judge_sample", "variant": "a", "trial": 1,
    ...     "case": "c1", "entry": 0, "sample": 1, "judge": "tone", "version": "1",
    ...     "payload_sha256": "ab", "outcome": {"ok": True}},
    ...     {"type": "judge_sample", "variant": "a", "trial": 1, "case": "c1", "entry": 0,
    ...     "sample": 2, "judge": "tone", "version": "1", "payload_sha256": "ab",
    ...     "outcome": {"ok": False, "errors": ["TimeoutError"]}}])
    >>> book[("a", 1, "c1")]
    {(0, 1): ('tone', '1', 'ab', {'ok': True})}
    """
    out: JudgeSamples = {}
    for r in records:
        if r.get("type") != "judge_sample":
            continue
        outcome = r["outcome"]
        if (
            not keep_unavailable
            and not outcome.get("ok")
            and not any(
                str(error).startswith(PROCESS_ENDED) for error in outcome.get("errors") or ()
            )
        ):
            continue
        key = (r["variant"], int(r["trial"]), r["case"])
        out.setdefault(key, {})[(int(r["entry"]), int(r["sample"]))] = (
            r["judge"],
            r.get("version"),
            r["payload_sha256"],
            r["outcome"],
        )
    return out


def encode_record(record: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """One journal line (newline included) for ``record``, and the record as stored: lone
    surrogates (text no UTF-8 file can hold) made U+FFFD. Every journal line is made here.

    orjson writes the line when it writes exactly what :mod:`json` would read back (checked
    by reading it back: orjson writes NaN and infinities as ``null``, and refuses integers
    beyond 64 bits, non-string keys and surrogates); otherwise :mod:`json` writes it. The
    line ends with the record's checksum (:func:`seal`); the stored record has none.

    Examples
    --------
    >>> encode_record({"a": 1.5, "b": [None, "é"]})[1].decode().strip()
    '{"a":1.5,"b":[null,"é"],"crc":"7f59b34e"}'
    >>> encode_record({"a": float("nan")})[1].strip()
    b'{"a":NaN,"crc":"bc8354ff"}'
    >>> stored, line = encode_record({"a": "x" + chr(0xD800)})
    >>> back = json.loads(line)
    >>> back.pop("crc") == line[-11:-3].decode() and back == stored == {"a": "x" + chr(0xFFFD)}
    True
    """
    if not record or CHECKSUM in record:
        # The checksum is the last key of a non-empty object (see seal).
        raise ValueError(f"a journal record is a non-empty object without a {CHECKSUM!r} key")
    try:
        data = orjson.dumps(record)
        if orjson.loads(data) == record:
            return record, seal(data)
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        return record, seal(text.encode("utf-8"))
    except UnicodeEncodeError:
        stored = scrub_surrogates(record)
        text = json.dumps(stored, ensure_ascii=False, separators=(",", ":"))
        return stored, seal(text.encode("utf-8"))


#: The key of a record's checksum; always the last one of its line.
CHECKSUM = "crc"
#: How the checksum field begins: ``,"crc":"`` then 8 hex digits and ``"}``.
_SEAL = b',"' + CHECKSUM.encode() + b'":"'
#: Bytes from the checksum field's comma to the line's end (without the newline).
_SEALED = len(_SEAL) + 8 + 2


def seal(body: bytes) -> bytes:
    """The journal line of a record's compact JSON ``body``: a last field ``crc`` appended,
    the CRC-32 of the line's bytes before that field (``body`` without its closing brace),
    then a newline.

    The checksum covers the line's bytes as written, so a reader checks it on them
    (:func:`checksum_ok`), without writing the record again. CRC-32 finds every change of
    up to 32 adjacent bits and all but one in 2**32 of other changes: a byte damaged on
    disk, or an edit by hand. It is not a signature: whoever recomputes it can edit a
    record unnoticed.

    Examples
    --------
    >>> import zlib
    >>> line = seal(b'{"score":0.6}')
    >>> line
    b'{"score":0.6,"crc":"6629a601"}\\n'
    >>> int(line[-11:-3], 16) == zlib.crc32(b'{"score":0.6')
    True
    """
    head = memoryview(body)[:-1]
    return b'%b%b%08x"}\n' % (head, _SEAL, zlib.crc32(head))


def checksum_ok(line: bytes) -> bool | None:
    """Whether a journal line (without its newline) matches its checksum: None if it has
    none where :func:`seal` puts it (a line of an earlier version, or a line edited).

    Examples
    --------
    >>> line = seal(b'{"score":0.6}').rstrip()
    >>> checksum_ok(line), checksum_ok(line.replace(b"0.6", b"0.4")), checksum_ok(b'{"a":1}')
    (True, False, None)
    """
    head = len(line) - _SEALED
    if head < 1 or not line.startswith(_SEAL, head) or not line.endswith(b'"}'):
        return None
    # Over a view of the line: a reply of megabytes is not copied to be checked.
    return b"%08x" % zlib.crc32(memoryview(line)[:head]) == line[-10:-2]


def sample_book(
    key: tuple[str, int, str],
    earlier: dict[tuple[int, int], tuple[str, str | None, str, dict[str, Any]]],
    payload_digest: Callable[[], str],
    write: Callable[[dict[str, Any]], None],
    ended: str | None = None,
    offline: Callable[[], str] | None = None,
) -> SampleBook:
    """The judge samples of one attempt: those journaled earlier for the payload it is
    judged on (reused), and the ``judge_sample`` records of new ones (handed to ``write``).

    Parameters
    ----------
    key
        (variant, trial, case) of the attempt.
    earlier
        Its journaled samples (:func:`judge_samples`).
    payload_digest
        The digest of what is judged; called at most once, and only when needed.
    write
        Journals one record.
    ended
        Why the session judging it ended, if the supervisor journaled that
        (``judge_ended``): see :class:`~agenticlens_frames.judges.SampleBook`.
    offline
        Set when loading a run folder: no judge is called for a sample not recalled (see
        :class:`~agenticlens_frames.judges.SampleBook`).

    Examples
    --------
    >>> written = []
    >>> book = sample_book(("a", 1, "c1"), {(0, 0): ("tone", "1", "ab", {"ok": True}),
    ...                                     (0, 1): ("tone", "1", "cd", {"ok": True})},
    ...                    lambda: "ab", written.append)
    >>> book.recall(0, 0, "tone", "1"), book.recall(0, 1, "tone", "1")
    ({'ok': True}, None)
    >>> book.record(0, 1, "tone", "1", {"ok": False}, attempts=1, ok=False)
    >>> written[0]["sample"], written[0]["payload_sha256"]
    (1, 'ab')
    """
    found: list[str] = []

    def graded() -> str:
        # The payload's digest binds a sample to the output it graded (a target called
        # again after a crash may answer differently).
        if not found:
            found.append(payload_digest())
        return found[0]

    recalled = {
        at: (judge, version, outcome)
        for at, (judge, version, sha, outcome) in earlier.items()
        if sha == graded()
    }

    def journal(
        entry: int, sample: int, judge: str, version: str | None, outcome: dict[str, Any]
    ) -> None:
        write(
            {
                "type": "judge_sample",
                "variant": key[0],
                "trial": key[1],
                "case": key[2],
                "entry": entry,
                "sample": sample,
                "judge": judge,
                "version": version,
                "payload_sha256": graded(),
                "outcome": outcome,
            }
        )

    return SampleBook(recalled, journal, ended, offline)


def _append(handle: Any, lines: list[bytes], segment: Path | None) -> None:
    """Write ``lines`` to the open segment and ``fsync`` it; a failing disk is an
    :class:`InputError` saying how to resume."""
    try:
        handle.write(b"".join(lines))
        handle.flush()
        os.fsync(handle.fileno())
    except OSError as exc:
        raise _unwritable(exc, segment) from None


def _unwritable(exc: OSError, segment: Path | None) -> InputError:
    # Disk full, quota, removed folder: the run stops with a message, not a traceback;
    # every record written before stays (a torn last line is skipped).
    return InputError(
        f"cannot write the run journal: {exc.strerror or exc}",
        file=segment,
        hint="free space, then run again with the same --run-dir to resume",
    )


class ReplaySamples:
    """Judge samples of recorded replays: reused from the journal, new ones journaled.

    A recorded sample never changes (the run folder is tied to the recorded files'
    hashes), so each of its judge samples is needed once per run folder: a replay killed
    mid-judging, resumed, or loaded again calls the judge only for samples not journaled.

    Parameters
    ----------
    samples
        Journaled judge samples (:func:`judge_samples`); those of recorded attempts are
        used.
    folder
        Where new samples go (a segment of its journal, made on the first one); None
        journals nothing.
    offline
        Loading a finished run: no judge is called, a sample the journal does not hold is
        unavailable (:class:`~agenticlens_frames.judges.NotJudged`) and counted in
        :attr:`missing`, with ``offline`` as its error message. ``samples`` should then
        hold the unavailable samples too (``judge_samples(..., keep_unavailable=True)``),
        so that they load as they were recorded.
    """

    def __init__(
        self, samples: JudgeSamples, folder: RunFolder | None, *, offline: str | None = None
    ) -> None:
        self.samples = samples
        self.folder = folder
        self.offline = offline
        #: Samples not in the journal, left unavailable by an offline load.
        self.missing = 0
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        #: Lines written, and lines known durable (the last fsync began after them).
        self._written = 0
        self._synced = 0
        self._file: Any = None
        self._segment: Path | None = None

    def book(
        self, variant_id: str, trial: int, case_id: str, output: str, trace: Trace
    ) -> SampleBook:
        """The samples of one recorded attempt, bound to its output and trace."""
        key = (variant_id, trial, case_id)
        return sample_book(
            key,
            self.samples.get(key, {}),
            lambda: digest({"output": output, "trace": trace}),
            self._write,
            offline=None if self.offline is None else self._missed,
        )

    def _missed(self) -> str:
        # Called from judge threads, for each sample an offline load finds missing.
        with self._lock:
            self.missing += 1
        return str(self.offline)

    def _write(self, record: dict[str, Any]) -> None:
        # Called from judge threads; an error is kept for close() (a judge must not see it).
        if self.folder is None or self.error is not None:
            return
        try:
            line = encode_record(mask_value(record))[1]
            with self._lock:
                if self._file is None:
                    self._segment = self.folder.new_segment()
                    self._file = open(self._segment, "ab")  # noqa: SIM115 - closed by close()
                self._file.write(line)
                self._file.flush()
                self._written += 1
                mine = self._written
            # Group commit: the threads whose lines one fsync covered do not sync again
            # (a replay judges several cases at once; one fsync per sample serialised them).
            with self._sync_lock:
                if self._synced < mine:
                    with self._lock:
                        upto = self._written
                    os.fsync(self._file.fileno())
                    self._synced = upto
        except OSError as exc:
            self.error = _unwritable(exc, self._segment)
        except BaseException as exc:  # re-raised by close()
            self.error = exc

    def close(self) -> None:
        """Close the segment; re-raise a write's error."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.error is not None:
            raise self.error


# --------------------------------------------------------------------------- writer

_STOP = object()
#: Queued by :meth:`JournalWriter.abandon_judging`: the judgings not started are dropped.
_ABANDON = object()


def _cancel_unstarted(futures: list[Future[None]]) -> int:
    """Cancel the futures that have not started; return how many were cancelled.

    Examples
    --------
    >>> from concurrent.futures import Future
    >>> running = Future()
    >>> running.set_running_or_notify_cancel()
    True
    >>> _cancel_unstarted([Future(), running])
    1
    """
    return sum(future.cancel() for future in futures)


class _Scored:
    """A record scored on the pool (or the error scoring it raised)."""

    __slots__ = ("error", "record")

    def __init__(self, record: dict[str, Any], error: BaseException | None) -> None:
        self.record = record
        self.error = error


class JournalWriter:
    """Scores finished attempts and appends their records, on one background thread.

    Parameters
    ----------
    segment
        The file to append to, or None to keep records in memory only (a run without a
        run folder).
    registry
        For scoring.
    on_record
        Called (on the writer thread) with each record once it is durable.
    scoring_workers
        Attempts scored at once. Above 1 (runs with LLM judges pass the run's concurrency
        limit) attempts are scored on a thread pool as they arrive, so slow judge calls
        overlap, and each record is written once scored. A journal file and judges in the
        registry use the pool too, at any size: an attempt's reply is written (an
        ``answered`` record) before its judges are called.
    samples
        Judge samples journaled by earlier sessions (:func:`judge_samples`): reused when
        the same attempt, entry and sample are scored again with the same judge version
        and payload, instead of calling the judge.
    on_judge
        Called (on a scoring thread) after each attempt is scored with its judge calls
        made, samples ending unavailable, and samples reused.
    on_judging
        Called (on a scoring thread) with an attempt's record just before it is scored on
        the pool (the supervisor's in-flight log: which attempts were being judged).
    """

    def __init__(
        self,
        segment: Path | None,
        registry: EvaluatorRegistry | None = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
        scoring_workers: int = 1,
        samples: JudgeSamples | None = None,
        on_judge: Callable[[int, int, int], None] | None = None,
        on_judging: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.segment = segment
        self.on_judging = on_judging
        self.registry = registry
        self.on_record = on_record
        self.scoring_workers = max(1, int(scoring_workers))
        self.samples = samples or {}
        self.on_judge = on_judge
        self._write_lock = threading.Lock()
        self.records: list[dict[str, Any]] = []
        #: id() of a stored ``attempt`` record -> (that record, the output and trace it was
        #: scored with), so the tables are built without validating its payload a second
        #: time (:func:`~.live.build_run`, which checks the record is the same object).
        #: Only records stored as scored (nothing masked or scrubbed) are listed.
        self.parsed: dict[int, tuple[dict[str, Any], str, Trace]] = {}
        self.error: BaseException | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        #: Records appended during the current turn of the appending event loop.
        self._pending: list[tuple[dict[str, Any], Any]] = []
        self._file = open(segment, "ab") if segment is not None else None  # noqa: SIM115
        #: Journal each judged attempt's reply before judging it: only with a file (nothing
        #: else can resume) and judges (an attempt without any has no judging to survive).
        self._answers = segment is not None and registry is not None and registry.has_judges
        #: Set by :meth:`abandon_judging` (an interrupted run): judgings not started are
        #: dropped, and none starts any more.
        self._abandon = False
        #: (variant, trial, case) of each ``answered`` record written (its reply is on disk):
        #: the run counts those not judged since (:meth:`~.live.Ledger.awaiting_judge`).
        self.answered: list[tuple[str, int, str]] = []
        self._stopping = False
        #: Done when the thread has written everything and stopped (:meth:`drained`); marked
        #: running so that a cancelled wait for it cannot cancel it.
        self._ended: Future[None] = Future()
        self._ended.set_running_or_notify_cancel()
        self._thread = threading.Thread(target=self._work, name="journal", daemon=True)
        self._thread.start()

    def append(
        self, record: dict[str, Any], scoring: tuple[CaseSpec, str, Trace] | None = None
    ) -> None:
        """Queue a record; with ``scoring`` = (case, output, trace) it is scored first.

        From an event loop (the scheduler's), the records appended during one turn of the
        loop are handed over together at its end: one wake-up of the writer per turn, not
        per record. From other code each record is handed over at once.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._queue.put([(record, scoring)])
            return
        self._pending.append((record, scoring))
        if len(self._pending) == 1:
            loop.call_soon(self._hand_over)

    def _hand_over(self) -> None:
        """Queue the records appended during the loop turn (on the loop's thread)."""
        pending, self._pending = self._pending, []
        if pending:
            self._queue.put(pending)

    def _score(self, record: dict[str, Any], scoring: tuple[CaseSpec, str, Trace]) -> None:
        case, output, trace = scoring
        sink = CheckColumns()
        judged = self.registry is not None and self.registry.has_judges
        # Set by the ledger on an attempt whose judging ended its process: not stored.
        ended = record.pop("judge_ended", None)
        book = self._book(record, ended) if judged else None
        score = score_sample(case, output, trace, sink, 0, self.registry, judge_samples=book)
        record["score"] = score_to_json(score)
        record["checks"] = checks_to_json(sink)
        if book is not None and self.on_judge is not None:
            self.on_judge(*book.counts())

    def _book(self, record: dict[str, Any], ended: str | None = None) -> SampleBook:
        """The judge samples of this attempt: journaled ones to reuse, new ones journaled
        (``ended``: see :class:`~agenticlens_frames.judges.SampleBook`)."""
        key = (record["variant"], int(record["trial"]), record["case"])
        # An ``answered`` record computed the payload's digest already.
        known = record.get("payload_sha256")
        return sample_book(
            key,
            self.samples.get(key, {}),
            lambda: known or digest(record.get("payload")),
            self._write_now,
            ended,
        )

    def _write_now(self, record: dict[str, Any]) -> None:
        """Write one record at once (a judge sample: a crash must not lose it)."""
        if self.error is not None or self._file is None:
            return  # failed already, or a run without a folder: nothing to resume from
        try:
            self._write([encode_record(mask_value(record))[1]])
        except BaseException as exc:  # re-raised by close()
            self.error = exc

    def _answered(
        self, record: dict[str, Any], case: CaseSpec
    ) -> tuple[dict[str, Any], bytes] | None:
        """The ``answered`` record to write before judging ``record`` and its line, or None
        (no judges for this case, no journal file, or the reply was journaled by an earlier
        session: ``record`` then carries its ``payload_sha256`` already)."""
        if not self._answers or "payload_sha256" in record or self.registry is None:
            return None
        if not self.registry.judges(case):
            return None
        # The attempt record keeps the digest too, so its judge samples can be tied to it.
        record["payload_sha256"] = digest(record.get("payload"))
        answered = {**record, "type": "answered"}
        return answered, encode_record(mask_value(answered))[1]

    def _work(self) -> None:
        try:
            self._run()
        finally:
            self._ended.set_result(None)

    def _run(self) -> None:
        # Judged attempts are scored on the pool even with one worker: this thread then
        # keeps journaling the replies (and calls) that come in while a judge is slow.
        # Scored here, every later reply would wait in memory, and a crash lose it.
        if self.scoring_workers > 1 or self._answers:
            self._run_pooled()
            return
        stop = False
        while not stop:
            batch = self._next_batch()
            done = []
            for item in batch:
                if item is _STOP:
                    stop = True
                    continue
                if item is _ABANDON:
                    continue  # nothing here waits for a judge: every attempt is scored in turn
                record, scoring = item
                if self.error is not None:
                    continue  # keep draining so close() returns; nothing more is written
                try:
                    if scoring is not None:
                        self._score(record, scoring)
                    # The journal is the boundary every table and report is built from.
                    done.append(encode_record(mask_value(record)))
                    if scoring is not None:
                        self._remember(record, done[-1][0], scoring)
                except BaseException as exc:  # re-raised by close()
                    self.error = exc
            if done and self.error is None:
                self._deliver(done)

    def _run_pooled(self) -> None:
        """As :meth:`_run`, with attempts scored on a pool as they arrive (slow judges
        overlap); each record is written once scored, in the order scoring finishes.

        An attempt about to be judged has its ``answered`` record written first, with the
        other records of its batch (its calls among them): one write, and then its judges
        are called."""
        from concurrent.futures import ThreadPoolExecutor

        def score(record: dict[str, Any], scoring: tuple[CaseSpec, str, Trace]) -> None:
            try:
                if self.on_judging is not None:
                    self.on_judging(record)
                self._score(record, scoring)
            except BaseException as exc:  # handed to the writer thread
                self._queue.put(_Scored(record, exc))
            else:
                self._queue.put(_Scored(record, None))

        in_flight = 0
        stopping = False
        # Judgings not started yet whose replies are on disk: an interrupted run drops them.
        resumable: list[Future[None]] = []
        with ThreadPoolExecutor(self.scoring_workers, thread_name_prefix="judge") as pool:
            while not stopping or in_flight:
                batch = self._next_batch()
                done = []
                answers: list[tuple[dict[str, Any], bytes]] = []
                judged: list[tuple[dict[str, Any], tuple[CaseSpec, str, Trace]]] = []
                for item in batch:
                    if item is _STOP:
                        stopping = True
                    elif item is _ABANDON:
                        in_flight -= _cancel_unstarted(resumable)
                    elif isinstance(item, _Scored):
                        in_flight -= 1
                        if item.error is not None and self.error is None:
                            self.error = item.error
                        elif self.error is None:
                            self._prepare(item.record, done)
                    elif self.error is None:
                        record, scoring = item
                        if scoring is None:
                            self._prepare(record, done)
                            continue
                        try:
                            answer = self._answered(record, scoring[0])
                        except BaseException as exc:  # re-raised by close()
                            self.error = exc
                            continue
                        if answer is not None:
                            answers.append(answer)
                            judged.append((record, scoring))
                        elif "payload_sha256" in record:
                            # Its reply was journaled by an earlier session: an interrupted
                            # run leaves it to the resume as well.
                            judged.append((record, scoring))
                        else:
                            in_flight += 1
                            pool.submit(score, record, scoring)
                if (done or answers) and self.error is None:
                    self._deliver(done, answers)
                if self.error is None and not self._abandon:
                    # Their replies are on disk now: a crash while judging loses no call.
                    # (Abandoned, they are left to the resume, as the queued ones are.)
                    resumable = [f for f in resumable if not f.done()]
                    for record, scoring in judged:
                        in_flight += 1
                        resumable.append(pool.submit(score, record, scoring))

    def _next_batch(self) -> list[Any]:
        """Wait for one item, then take all that is queued already: both writer loops write
        what has piled up in one go, so a burst of attempts costs one write, not many."""
        batch: list[Any] = []
        item = self._queue.get()
        while True:
            # appended records arrive in lists (one per loop turn)
            if isinstance(item, list):
                batch.extend(item)
            else:
                batch.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return batch

    def _prepare(self, record: dict[str, Any], done: list[tuple[dict[str, Any], bytes]]) -> None:
        """Mask and encode a scored record into ``done`` (the error is kept for close())."""
        try:
            done.append(encode_record(mask_value(record)))
        except BaseException as exc:  # re-raised by close()
            self.error = exc

    def _remember(
        self,
        record: dict[str, Any],
        stored: dict[str, Any],
        scoring: tuple[CaseSpec, str, Trace],
    ) -> None:
        """Keep the (output, trace) a record was scored with, if it is stored as scored."""
        if stored is record or stored.get("payload") == record.get("payload"):
            self.parsed[id(stored)] = (stored, scoring[1], scoring[2])

    def _deliver(
        self,
        done: list[tuple[dict[str, Any], bytes]],
        answers: list[tuple[dict[str, Any], bytes]] | None = None,
    ) -> None:
        """Write a batch of (stored record, line), then keep and announce the records; both
        writer loops end each turn here so a record is only kept (and shown) once it is on
        disk. ``answers`` (``answered`` records and lines) are written after them, named in
        :attr:`answered` and not announced: only a later session resumes from them, and
        only for an attempt whose ``attempt`` record never came."""
        lines = [line for _, line in done]
        if answers:
            lines += [line for _, line in answers]
        try:
            self._write(lines)
        except BaseException as exc:  # re-raised by close()
            self.error = exc
            return
        if answers:
            self.answered.extend((r["variant"], int(r["trial"]), r["case"]) for r, _ in answers)
        records = [record for record, _ in done]
        self.records.extend(records)
        if self.on_record is not None:
            for record in records:
                self.on_record(record)

    def _write(self, lines: list[bytes]) -> None:
        if self._file is None:
            return
        # Judge samples are written from the scoring threads, records from this one.
        with self._write_lock:
            _append(self._file, lines, self.segment)

    def release(self) -> None:
        """Forget the records kept in memory (after :meth:`close`, once they are used)."""
        self.records.clear()
        self.parsed.clear()
        self.answered.clear()

    def abandon_judging(self) -> None:
        """Judge no more (an interrupted run): attempts whose reply is journaled and whose
        judging has not started are not judged now, and none starts; a resumed run judges
        them from the reply, without calling the target. Judgings already started finish.
        May be called while :meth:`drained` is awaited."""
        self._abandon = True
        self._queue.put(_ABANDON)

    def _stop(self) -> None:
        """Queue what this loop turn appended, then the end (once; on the loop's thread)."""
        if not self._stopping:
            self._stopping = True
            self._hand_over()
            self._queue.put(_STOP)

    async def drained(self) -> None:
        """Stop taking records and wait, without blocking the event loop, until everything
        appended is scored and written (the last replies' judge calls: minutes with a slow
        judge); then :meth:`close`. Cancelled meanwhile (Ctrl-C), the writer goes on:
        :meth:`abandon_judging`, then :meth:`close`, leave the rest to the resume."""
        self._stop()
        await asyncio.wrap_future(self._ended)

    def close(self, abandon_judging: bool = False) -> None:
        """Write everything queued, stop the thread, close the file; re-raise its error.

        ``abandon_judging``: :meth:`abandon_judging` first (an interrupted run).
        """
        if abandon_judging:
            self.abandon_judging()
        self._stop()
        self._thread.join()
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.error is not None:
            raise self.error
