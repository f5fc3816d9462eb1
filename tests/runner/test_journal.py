"""The journal: torn last lines are skipped, damage elsewhere is refused, folders guarded."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats.model import CaseSpec
from agenticlens_frames.formats.traces import normalize_trace
from agenticlens_frames.frames import CheckColumns
from agenticlens_frames.runner.journal import (
    FORMAT,
    JournalWriter,
    RunFolder,
    digest,
    encode_record,
    read_segments,
    replay_checks,
)
from agenticlens_frames.scoring import score_sample

from .conftest import journal_line, variant

IDENTITY = {
    "experiment_id": "x@1",
    "manifest_sha256": "a" * 64,
    "suite_sha256": "b" * 64,
    "recorded_sha256": {},
}


def test_a_torn_last_line_is_skipped(tmp_path):
    segment = tmp_path / "000001.jsonl"
    segment.write_bytes(b'{"type":"call","n":1}\n{"type":"attempt","n":2}\n{"type":"att')
    assert [r["n"] for r in read_segments([segment])] == [1, 2]


def test_a_damaged_line_before_the_end_is_refused(tmp_path):
    segment = tmp_path / "000001.jsonl"
    segment.write_bytes(b'{"n":1}\nnot json\n{"n":3}\n')
    with pytest.raises(InputError, match="damaged journal record") as info:
        list(read_segments([segment]))
    assert info.value.location == "line 2"


def test_run_folder_is_created_once_and_checked_on_reopen(tmp_path):
    folder = RunFolder(tmp_path / "run", IDENTITY)
    stored = json.loads((tmp_path / "run" / "run.json").read_text())
    assert stored["format"] == FORMAT and stored["suite_sha256"] == "b" * 64
    assert folder.new_segment().name == "000001.jsonl"
    assert folder.new_segment().name == "000002.jsonl"
    folder.close()
    with pytest.raises(InputError, match="different suite") as info:
        RunFolder(tmp_path / "run", {**IDENTITY, "suite_sha256": "c" * 64})
    # a hash is named by its first 12 hex digits, any other value as it is
    assert "(stored bbbbbbbbbbbb, now cccccccccccc)" in info.value.message
    with pytest.raises(InputError, match="different experiment") as info:
        RunFolder(tmp_path / "run", {**IDENTITY, "experiment_id": "y@1"})
    assert "(stored 'x@1', now 'y@1')" in info.value.message
    with pytest.raises(InputError, match="different manifest") as info:
        RunFolder(tmp_path / "run", {**IDENTITY, "manifest_sha256": "d" * 64})
    assert "comparisons: block" not in info.value.message  # not an earlier version's hash
    with pytest.raises(InputError, match="different recorded trials files") as info:
        RunFolder(tmp_path / "run", {**IDENTITY, "recorded_sha256": {"t.json": "e" * 64}})
    # a mapping of hashes is named by the first 12 hex digits of its canonical JSON's hash
    now = hashlib.sha256(('{"t.json": "' + "e" * 64 + '"}').encode()).hexdigest()
    stored = hashlib.sha256(b"{}").hexdigest()
    assert f"(stored {stored[:12]}, now {now[:12]})" in info.value.message
    # Only files named by a number are segments: a stray file (notes, a number in other
    # digits) is neither read nor counted.
    (tmp_path / "run" / "journal" / "notes.jsonl").write_text("not a record\n")
    (tmp_path / "run" / "journal" / "\u0663.jsonl").write_text("not a record\n")
    folder = RunFolder(tmp_path / "run", IDENTITY)  # the lock was released
    assert [p.name for p in folder.segments()] == ["000001.jsonl", "000002.jsonl"]
    assert list(folder.records()) == []
    assert folder.new_segment().name == "000003.jsonl"
    folder.close()


def test_a_resume_records_its_declared_correction_in_run_json(tmp_path):
    """run.json's ``stopping`` names the declared correction: a folder of an earlier
    version (without the key) gets it on resume, a resume declaring another one records
    that one, and a load of the folder (no ``stopping`` given) leaves run.json alone."""
    stopping = {
        "stop_when": "decided",
        "cluster": None,
        "alpha": 0.05,
        "correction": "bonferroni",
        "declared_correction": "holm",
        "margin": None,
    }
    meta = tmp_path / "run" / "run.json"
    RunFolder(tmp_path / "run", {**IDENTITY, "stopping": stopping}).close()
    stored = json.loads(meta.read_text())
    del stored["stopping"]["declared_correction"]  # as an earlier version wrote it
    meta.write_text(json.dumps(stored))
    for declared in ("holm", "holm", "by"):
        folder = RunFolder(
            tmp_path / "run",
            {**IDENTITY, "stopping": {**stopping, "declared_correction": declared}},
        )
        folder.close()
        expected = {**stopping, "declared_correction": declared}
        assert folder.stopping == expected == json.loads(meta.read_text())["stopping"]
    before = meta.read_bytes()
    loaded = RunFolder(tmp_path / "run", IDENTITY)
    loaded.close()
    assert meta.read_bytes() == before and loaded.stopping["declared_correction"] == "by"


def test_a_folder_of_another_format_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text('{"format": "something-else"}')
    with pytest.raises(InputError, match="not a live-run folder"):
        RunFolder(tmp_path / "run", IDENTITY)


def test_digest_ignores_key_order_but_not_values():
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})
    # A run folder's stored hashes must read the same in every version: the canonical
    # text, written by hand (keys sorted, non-ASCII escaped, json's default separators).
    text = '{"a": [1, 2.5], "b": "caf\\u00e9"}'
    assert digest({"b": "café", "a": [1, 2.5]}) == hashlib.sha256(text.encode()).hexdigest()


def test_encode_record_refuses_an_empty_record_or_one_with_a_checksum_key():
    # The checksum is the last key of a non-empty object: a record holding one already
    # would be written with two.
    for record in ({}, {"type": "call", "crc": "00000000"}):
        with pytest.raises(ValueError, match="non-empty object without a 'crc' key"):
            encode_record(record)


def test_writer_scores_appends_and_replays_identically(tmp_path):
    case = CaseSpec(id="c1", name="c", index=0, expected_contains=("refund",), max_turns=2)
    trace = normalize_trace({"metadata": {"turn_count": 3}, "total_latency_ms": 4.0})
    segment = tmp_path / "000001.jsonl"
    segment.touch()
    writer = JournalWriter(segment)
    writer.append({"type": "attempt", "case": "c1"}, scoring=(case, "A refund.", trace))
    writer.close()
    (record,) = read_segments([segment])
    # Scored on the writer thread, exactly as scoring the sample directly.
    direct = CheckColumns()
    expected = score_sample(case, "A refund.", trace, direct, 0)
    replayed = CheckColumns()
    assert replay_checks(replayed, 7, record) == expected
    assert replayed.name == direct.name and replayed.value == direct.value
    assert replayed.explanation == direct.explanation and replayed.attempt == [7, 7]


def test_the_writer_keeps_the_scored_output_only_of_records_stored_as_scored(tmp_path):
    # The tables reuse the (output, trace) an attempt was scored with only when the journal
    # holds that very reply: one with a known secret is stored masked, and its tables are
    # built from the stored reply, as a resume builds them.
    from agenticlens_frames._secrets import remember

    remember(["parsed-secret-81d2"])
    case = CaseSpec(id="c1", name="c", index=0, expected_contains=("refund",))
    trace = normalize_trace({"total_latency_ms": 4.0})
    writer = JournalWriter(tmp_path / "000001.jsonl")
    for output in ("A refund.", "A refund parsed-secret-81d2."):
        record = {"type": "attempt", "case": "c1", "payload": {"output": output}}
        writer.append(record, scoring=(case, output, trace))
    writer.close()
    plain, masked = writer.records
    assert masked["payload"]["output"] == "A refund ***."
    assert writer.parsed == {id(plain): (plain, "A refund.", trace)}


def test_writer_error_is_raised_on_close(tmp_path):
    case = CaseSpec(id="c1", name="c", index=0, expected_contains=("x",))
    writer = JournalWriter(None)
    writer.append({"type": "attempt"}, scoring=(case, None, None))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        writer.close()


def _clean(v):
    """A spec value as the former identity computation cleaned it for JSON."""
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def reference_sha256(value) -> str:
    """The run folder's hash of ``value`` as the former computation made it, independent
    of the code under test (test_stopping uses it for folders of earlier versions)."""
    text = json.dumps(_clean(value), sort_keys=True, ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def reference_manifest(manifest) -> dict:
    """``dataclasses.asdict`` of a manifest with what the identity leaves out (its path,
    the speed knobs, resolved targets) removed; ``comparisons:`` kept."""
    m = dataclasses.asdict(manifest)
    m.pop("path")
    m.pop("max_workers")
    for v in m["variants"]:
        v.pop("resolved_target")
        v.pop("concurrency", None)
    return m


def test_run_identity_hashes_what_asdict_gave(tmp_path):
    # The run folder's identity must not change with how the specs are walked (a folder
    # started by an earlier version must still resume): the reference is the former
    # computation, dataclasses.asdict and a cleaning pass.
    from agenticlens_frames.formats import load_manifest, load_suite
    from agenticlens_frames.runner.live import earlier_manifest_sha256, run_identity

    manifest = load_manifest("data/support/manifest.yaml")
    suite = load_suite("data/support/suite.yaml")
    m = reference_manifest(manifest)
    s = dataclasses.asdict(suite)
    s.pop("path")
    identity = run_identity(manifest, suite, {})
    # Folders of earlier versions hold the hash of the whole manifest; this version's
    # leaves out its comparisons: block (which only the analysis and, through run.json's
    # stopping record, early stopping read).
    assert earlier_manifest_sha256(manifest) == reference_sha256(m)
    assert manifest.comparisons is not None
    assert identity["manifest_sha256"] == reference_sha256(
        {k: v for k, v in m.items() if k != "comparisons"}
    )
    assert identity["manifest_sha256_excludes"] == ["comparisons"]
    assert identity["suite_sha256"] == reference_sha256(s)


def test_a_folder_of_an_earlier_manifest_hash_is_compared_in_its_form(tmp_path):
    """run.json without ``manifest_sha256_excludes`` (an earlier version's) holds the hash
    of the whole manifest: compared against that form, given by the caller."""
    new = {**IDENTITY, "manifest_sha256_excludes": ["comparisons"]}
    RunFolder(tmp_path / "run", IDENTITY).close()  # as an earlier version wrote it
    RunFolder(tmp_path / "run", new, earlier_manifest_sha256="a" * 64).close()
    with pytest.raises(InputError, match="covers the manifest's comparisons: block too"):
        RunFolder(tmp_path / "run", new, earlier_manifest_sha256="e" * 64)
    with pytest.raises(InputError, match="different manifest"):
        RunFolder(tmp_path / "run", new)  # no earlier form given: nothing matches it
    # A folder of this version compares this version's hash, never the earlier form.
    RunFolder(tmp_path / "new", new).close()
    RunFolder(tmp_path / "new", new, earlier_manifest_sha256="e" * 64).close()
    with pytest.raises(InputError, match="different manifest"):
        RunFolder(
            tmp_path / "new", {**new, "manifest_sha256": "e" * 64}, earlier_manifest_sha256="a" * 64
        )


@pytest.mark.parametrize("workers", [1, 4])
def test_every_writer_masks_secrets_and_keeps_odd_values(tmp_path, workers):
    # Both writer loops (scoring_workers 1, and above 1 as with judges) mask known secrets
    # and write what json reads back: NaN, huge integers, lone surrogates (as U+FFFD).
    from agenticlens_frames._secrets import remember

    remember(["journal-secret-5f3a9c"])
    segment = tmp_path / "000001.jsonl"
    writer = JournalWriter(segment, scoring_workers=workers)
    records = [
        {"type": "call", "n": 1, "error": "token journal-secret-5f3a9c refused"},
        {"type": "call", "n": 2, "payload": {"x": float("nan"), "big": 2**70}},
        {"type": "call", "n": 3, "payload": {"output": "a" + chr(0xD800)}},
    ]
    for record in records:
        writer.append(record)
    writer.close()
    text = segment.read_text(encoding="utf-8")
    assert "journal-secret-5f3a9c" not in text and "token *** refused" in text
    back = {r["n"]: r for r in read_segments([segment])}
    assert back[2]["payload"]["big"] == 2**70 and back[2]["payload"]["x"] != back[2]["payload"]["x"]
    assert back[3]["payload"]["output"] == "a\ufffd"
    assert [r["n"] for r in writer.records] == [1, 2, 3]


def test_replay_samples_from_many_threads_are_whole_lines_each_once(tmp_path):
    # Judge threads journal recorded samples at once (group commit): every line whole,
    # every sample once, and a second ReplaySamples reuses them by payload digest.
    from concurrent.futures import ThreadPoolExecutor

    from agenticlens_frames.runner.journal import ReplaySamples, judge_samples

    folder = RunFolder(tmp_path / "run", IDENTITY)
    trace = normalize_trace({"total_latency_ms": 1.0})
    replay = ReplaySamples({}, folder)

    def judge(case: int) -> None:
        book = replay.book("v", 1, f"c{case}", f"out {case}", trace)
        for sample in range(4):
            book.record(0, sample, "tone", "1", {"ok": True, "n": case}, attempts=1, ok=True)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(judge, range(200)))
    replay.close()
    folder.close()
    (segment,) = (tmp_path / "run" / "journal").glob("*.jsonl")
    records = list(read_segments([segment]))
    assert segment.read_bytes().endswith(b"\n") and len(records) == 800
    assert len({(r["case"], r["sample"]) for r in records}) == 800
    again = ReplaySamples(judge_samples(records), None)
    book = again.book("v", 1, "c7", "out 7", trace)
    assert book.recall(0, 3, "tone", "1") == {"ok": True, "n": 7}
    # another output of the same attempt is judged afresh
    assert again.book("v", 1, "c7", "out 8", trace).recall(0, 3, "tone", "1") is None


# --------------------------------------------------------------------------- damaged records


def test_record_check_names_the_field_and_skips_unknown_types():
    from agenticlens_frames.formats._io import Invalid
    from agenticlens_frames.runner.journal_check import RecordCheck

    check = RecordCheck(("a", "b", "c"), ("c1", "c2"), trials=2)
    call = {"type": "call", "variant": "a", "trial": 1, "case": "c1", "call": 1, "outcome": "ok"}
    check(call)
    check({"type": "from-a-newer-version", "trial": "anything"})
    ok = {
        "type": "attempt",
        "variant": "b",
        "trial": 2,
        "case": "c2",
        "status": "ok",
        "calls": 1,
        "payload": {"output": "x"},
        "score": [True, 1.0, 1, 1, 1.0, None, None],
        # a registered evaluator's check as journals before judges wrote it (4 fields)
        "checks": [["e", None, 1.0, True, "fine", [True, "e", "1", "code"]]],
    }
    check(ok)
    # an LLM judge's check as journals since judges write it (6 fields: skipped, metadata),
    # its judge unversioned
    judged = [True, "j", None, "llm_judge", False, '{"judge_status": "ok"}']
    check({**ok, "checks": [["j", "j", 0.5, False, "", judged]]})

    def custom(*fields):
        return {**ok, "checks": [["e", None, 1.0, True, "fine", list(fields)]]}

    registered = "not a registered evaluator's check"
    bad = [
        ({**call, "trial": "1"}, ("trial",), "expected int, got str"),
        ({**call, "trial": 3}, ("trial",), "trial 3 is beyond trial_count=2"),
        ({**call, "case": "zz"}, ("case",), "'zz' is not a case of the run"),
        ({**call, "variant": None}, ("variant",), "expected str, got null"),
        (
            {k: v for k, v in call.items() if k != "outcome"},
            (),
            "object missing required field outcome",
        ),
        ({**ok, "score": [True, 1.0, 1, 1]}, ("score",), "expected array of length 7, got 4"),
        ({**ok, "score": None}, ("score",), "an ok attempt needs its score"),
        (
            {**ok, "checks": [["e", None, 1.0, "yes", "fine", None]]},
            ("checks", 0, 3),
            "expected bool, got str",
        ),
        (
            {**ok, "checks": [["e", None, 1.0, True, "fine", [1, 2]]]},
            ("checks", 0, 5),
            "not a registered evaluator's check",
        ),
        # five fields (neither the old nor the new shape), a version or an evaluator name
        # that is not text, a skipped flag that is not a bool
        (custom(True, "e", "1", "code", False), ("checks", 0, 5), registered),
        (custom(True, "e", 5, "code"), ("checks", 0, 5), registered),
        (custom(True, None, "1", "code"), ("checks", 0, 5), registered),
        (custom(True, "j", "1", "llm_judge", "no", None), ("checks", 0, 5), registered),
        ({**ok, "status": "great"}, ("status",), "invalid enum value 'great'"),
        ({"type": "reopen", "invocation": 7}, ("invocation",), "expected str, got int"),
    ]
    for record, at, message in bad:
        with pytest.raises(Invalid) as info:
            check(record)
        assert (info.value.at, info.value.message) == (at, message), record


def test_a_reopen_record_counts_only_for_its_own_command_line():
    """A `reopen` record (`--rerun-failed`) reopens, at its place in the journal, the
    failures recorded before it, for the command line that wrote it: a failure re-run
    after it stands. For any other reader (a load, a later command) it is nothing."""
    from agenticlens_frames.formats import load_suite
    from agenticlens_frames.runner.live import Ledger

    from ..conftest import EXAMPLE

    suite = load_suite(EXAMPLE / "suite.yaml")
    first, second, third = suite.case_ids[:3]

    def attempt(case: str, status: str) -> dict:
        return {"type": "attempt", "variant": "v", "trial": 1, "case": case,
                "status": status, "calls": 1, "error": None, "payload": None}  # fmt: skip

    records = [
        attempt(first, "target_error"),
        attempt(second, "timed_out"),
        attempt(third, "ok"),
        {"type": "reopen", "invocation": "this", "session": "s2"},
        attempt(first, "target_error"),  # ran again after the reopen: failed again
    ]
    ledger = Ledger(suite, "trial", invocation="this")
    for record in records:
        ledger.add(record)
    assert ledger.continues_rerun
    assert sorted(ledger.final) == sorted([("v", 1, first), ("v", 1, third)])
    assert ledger.final[("v", 1, first)] is records[4]
    for invocation in (None, "another"):
        ledger = Ledger(suite, "trial", invocation=invocation)
        for record in records:
            ledger.add(record)
        assert not ledger.continues_rerun
        assert len(ledger.final) == 3 and ledger.final[("v", 1, second)] is records[1]


def test_only_unavailable_judge_scores_reopen_with_the_supervisors_later_records():
    """A finished attempt with an unavailable judge score is handed back to be judged
    (its reply as an `answered` one); one whose judges all answered stays finished, and
    so does one whose judge sample was unavailable because the process ended. The
    supervisor's records written after the attempt record (it was being judged again
    when the process ended) apply to the reopened attempt."""
    from agenticlens_frames.formats import load_suite
    from agenticlens_frames.runner.live import Ledger

    from ..conftest import EXAMPLE

    suite = load_suite(EXAMPLE / "suite.yaml")
    down, fine, ended = suite.case_ids[:3]

    def attempt(case: str, metadata: dict) -> dict:
        check = ["j", "j", 0.0, False, "", [True, "j", None, "llm_judge", False, metadata]]
        return {"type": "attempt", "variant": "v", "trial": 1, "case": case, "status": "ok",
                "calls": 1, "error": None, "payload": {"output": "x"},
                "payload_sha256": "ab", "score": [False, 0.0, 1, 0, 0.0, None, None],
                "checks": [check]}  # fmt: skip

    late = {"variant": "v", "trial": 1, "case": down, "error": "killed"}
    records = [
        attempt(down, {"judge_status": "unavailable", "judge_error": "TimeoutError"}),
        attempt(fine, {"judge_status": "ok"}),
        attempt(ended, {"judge_status": "unavailable", "judge_error": "ProcessEnded: x"}),
        {"type": "suspect", **late},
        {"type": "judge_ended", **late},
    ]
    ledger = Ledger(suite, "trial")
    for record in records:
        ledger.add(record)
    assert ledger.reopen_unavailable() == 1
    key = ("v", 1, down)
    assert sorted(ledger.final) == sorted([("v", 1, fine), ("v", 1, ended)])
    assert ledger.answered[key]["payload_sha256"] == "ab"
    assert "score" not in ledger.answered[key] and "checks" not in ledger.answered[key]
    assert key in ledger.suspects and ledger.judge_ended[key] == "killed"
    assert [c.id for c in ledger.pending("v", 1)][:1] == [down]


def test_the_ledger_reads_a_hand_written_journal_into_what_is_done_and_left():
    """A journal written by hand, and what a resume makes of it, worked out by hand: the
    last attempt record of an attempt wins; the failed calls of an unfinished attempt are
    its earlier tries (a retry budget spent); an invalid payload fails its trial from that
    case on in suite order; supervisor records of unfinished attempts are kept; record
    types the ledger does not know (``stop``, a newer version's) change nothing."""
    from agenticlens_frames.formats import load_suite
    from agenticlens_frames.runner.live import Ledger

    from ..conftest import EXAMPLE

    suite = load_suite(EXAMPLE / "suite.yaml")
    k1, k2, k3, k4, k5, k6 = suite.case_ids[:6]

    def call(trial, case, n, outcome, error=None):
        return {"type": "call", "variant": "v", "trial": trial, "case": case, "call": n,
                "outcome": outcome, "error": error}  # fmt: skip

    def attempt(trial, case, status, error=None):
        return {"type": "attempt", "variant": "v", "trial": trial, "case": case,
                "status": status, "calls": 1, "error": error, "payload": None}  # fmt: skip

    def other(kind, trial, case, **fields):
        return {"type": kind, "variant": "v", "trial": trial, "case": case, **fields}

    sample = {"entry": 0, "sample": 0, "judge": "j", "version": "1", "payload_sha256": "ab",
              "outcome": {"ok": True}}  # fmt: skip
    down = {**sample, "sample": 1, "outcome": {"ok": False, "errors": ["TimeoutError: x"]}}
    last_k1 = attempt(2, k1, "ok")
    late_k2 = other("suspect", 1, k2, error="late")
    records = [
        # trial 1: k1 tried twice, unfinished; k2 done; k3 an invalid payload (the trial
        # fails there); k5, past the failure, had started and failed
        call(1, k1, 1, "timeout", "T1"),
        call(1, k1, 2, "connection", "C1"),
        call(1, k2, 1, "ok"),
        attempt(1, k2, "ok"),
        other("judge_sample", 1, k2, **sample),
        late_k2,  # the supervisor's, after its attempt record: kept aside
        other("answered", 1, k2, status="ok", calls=1, payload={"output": "x"}),
        call(1, k3, 1, "invalid_payload", "bad"),
        attempt(1, k3, "invalid_payload", "bad"),
        attempt(1, k5, "target_error", "E5"),
        {"type": "stop", "session": "s1", "decided": True},
        {"type": "from-a-newer-version", "variant": "v", "trial": 2, "case": k6},
        # trial 2: k1 failed, then done again (a re-run); k2 answered, its judging ended
        # the process; k3 suspect; k4 timed out, and a call after its record; k6 ended
        # the process
        call(2, k1, 1, "http_5xx", "E1"),
        attempt(2, k1, "target_error", "E1"),
        last_k1,
        other("answered", 2, k2, status="ok", calls=1, payload={"output": "x"}),
        other("judge_ended", 2, k2, error="ProcessEnded: boom"),
        other("judge_sample", 2, k2, **sample),
        other("judge_sample", 2, k2, **down),  # unavailable: judged again on resume
        other("suspect", 2, k3, error="killed"),
        call(2, k4, 1, "timeout", "T4"),
        attempt(2, k4, "timed_out", "T4"),
        call(2, k4, 2, "timeout", "late"),
        attempt(2, k6, "target_error", "ProcessEnded: the run's process ended"),
    ]
    ledger = Ledger(suite, "trial")
    for record in records:
        ledger.add(record)
    done = {(1, k2), (1, k3), (1, k5), (2, k1), (2, k4), (2, k6)}
    assert set(ledger.final) == {("v", t, c) for t, c in done}
    assert ledger.final[("v", 2, k1)] is last_k1
    assert ledger.failures == {("v", 1, k1): [("timeout", "T1"), ("connection", "C1")]}
    assert [c.id for c in ledger.pending("v", 1)] == [k1]
    assert [c.id for c in ledger.pending("v", 2)] == [
        c for c in suite.case_ids if c not in (k1, k4, k6)
    ]
    assert (ledger.trial_error("v", 1), ledger.trial_error("v", 2)) == ("bad", None)
    assert set(ledger.answered) == {("v", 2, k2)}
    assert ledger.judge_ended == {("v", 2, k2): "ProcessEnded: boom"}
    assert ledger.suspects == {("v", 2, k3)} and ledger.late == {("v", 1, k2): [late_k2]}
    assert ledger.awaiting_judge() == 1
    # this session's answered replies: one pending (k3), one past the failure (trial 1's
    # k4), one done (trial 1's k2), one of no case of the suite
    extra = [("v", 2, k3), ("v", 1, k4), ("v", 1, k2), ("v", 2, "nope")]
    assert ledger.awaiting_judge(extra) == 2
    kept = {("v", 2, k2): {(0, 0): ("j", "1", "ab", {"ok": True})}}
    assert ledger.unfinished_samples() == kept and ledger.samples == []
    # --rerun-failed: only trial 2's k4 is called again (k5's trial failed, k6 ended the
    # process); its calls start afresh
    assert ledger.reopen_failed() == 1
    assert ("v", 2, k4) not in ledger.final and ("v", 2, k4) not in ledger.failures
    assert [c.id for c in ledger.pending("v", 2)][:3] == [k2, k3, k4]
    # Attempts left to call: live variants only (a recorded one is replayed): trial 1's
    # k1, and trial 2's cases but k1 and k6.
    from types import SimpleNamespace

    from agenticlens_frames.runner.live import ledger_pending

    kinds = {"v": "python", "r": "recorded"}
    manifest = SimpleNamespace(
        variant_ids=("v", "r"),
        trial_count=2,
        random_seed=None,
        variants=[SimpleNamespace(id=v, target_kind=kind) for v, kind in kinds.items()],
    )
    assert ledger_pending(ledger, manifest) == 1 + len(suite.cases) - 2  # type: ignore[arg-type]


def test_an_unavailable_judge_score_among_other_checks_is_judged_again():
    # The attempt's checks as journaled: a built-in one (no evaluator fields), a registered
    # evaluator's from before judges (four fields), then the judge that never answered.
    from agenticlens_frames.formats import load_suite
    from agenticlens_frames.runner.live import Ledger

    from ..conftest import EXAMPLE

    suite = load_suite(EXAMPLE / "suite.yaml")
    down = '{"judge_status": "unavailable", "judge_error": "TimeoutError"}'
    checks = [
        ["exact", "exact", 1.0, True, "ok", None],
        ["e", None, 1.0, True, "fine", [True, "e", "1", "code"]],
        ["j", "j", 0.0, False, "", [True, "j", None, "llm_judge", False, down]],
    ]
    key = ("v", 1, suite.case_ids[0])
    record = {"type": "attempt", "variant": "v", "trial": 1, "case": key[2], "status": "ok",
              "calls": 1, "error": None, "payload": {"output": "x"},
              "score": [False, 0.5, 3, 2, 2.0, None, None], "checks": checks}  # fmt: skip
    ledger = Ledger(suite, "trial")
    ledger.add(record)
    assert ledger.reopen_unavailable() == 1 and key in ledger.answered and not ledger.final


def _live_folder(write_experiment, tmp_path):
    from agenticlens_frames.runner import run_experiment

    manifest, suite = write_experiment([variant("a", "answer")], trial_count=2)
    run_dir = tmp_path / "run"
    assert run_experiment(manifest, suite, progress=False, run_dir=run_dir).complete
    return manifest, suite, run_dir, run_dir / "journal" / "000001.jsonl"


def _edit_record(segment, kind: str, edit, reseal: bool | None = True) -> int:
    """Apply ``edit`` to the first record of type ``kind``; returns its line number.

    ``reseal``: the line gets the checksum of its new content (an edit the checksum cannot
    see: what the record checks catch); False: it keeps its checksum, last; None: it is
    written without one."""
    lines = segment.read_text(encoding="utf-8").splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        record = json.loads(line)
        if record["type"] == kind:
            crc = record.pop("crc", None)  # None: written before checksums
            edit(record)
            if reseal:
                lines[number - 1] = journal_line(record)
            else:
                body = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
                tail = "}" if crc is None or reseal is None else f',"crc":"{crc}"}}'
                lines[number - 1] = f"{body[:-1]}{tail}\n"
            segment.write_text("".join(lines), encoding="utf-8")
            return number
    raise AssertionError(f"no {kind} record")


def test_a_record_edited_by_hand_is_refused_on_resume_and_load(write_experiment, tmp_path):
    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)
    number = _edit_record(segment, "attempt", lambda r: r.update(trial="1"))
    _refused_everywhere(
        manifest, suite, run_dir, segment, number, "expected int, got str", field="trial"
    )
    assert sorted(p.name for p in segment.parent.iterdir()) == [segment.name]


def test_a_damaged_journaled_reply_is_refused_naming_its_attempt(write_experiment, tmp_path):
    from agenticlens_frames import load_experiment

    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)
    first = {}

    def damage(record):
        first.update(record)
        record["payload"]["trace"]["spans"] = "none"

    _edit_record(segment, "attempt", damage)
    with pytest.raises(InputError) as info:
        load_experiment(manifest, suite, run_dir=run_dir)
    assert info.value.file == str(segment.parent)
    assert info.value.message.startswith(
        f"the journaled reply of a trial {first['trial']} case {first['case']} is no longer "
        "a valid sample ("
    )


@pytest.mark.parametrize(
    ("edit", "reseal", "problem"),
    [
        (lambda r: r.pop("calls"), True, "object missing required field calls"),
        (lambda r: r["score"].__setitem__(1, -0.5), False, "its checksum does not match"),
    ],
    ids=["field", "checksum"],
)
def test_the_command_line_reports_a_damaged_record_without_a_traceback(
    write_experiment, tmp_path, edit, reseal, problem
):
    import os
    import subprocess
    import sys

    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)
    number = _edit_record(segment, "attempt", edit, reseal)
    kept = segment.read_bytes()
    command = ["experiment", "run", str(manifest), str(suite), "--run-dir", str(run_dir), "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "agenticlens_frames.cli", *command],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert (
        f"{segment}: line {number}: damaged journal record: {problem}" in done.stderr + done.stdout
    )
    assert segment.read_bytes() == kept and len(list(segment.parent.iterdir())) == 1


# --------------------------------------------------------------------------- checksums


def _refused_everywhere(
    manifest, suite, run_dir, segment, number: int, message: str, field: str = ""
) -> None:
    """A resume and a load both refuse line ``number`` of ``segment`` (at ``field`` of its
    record, when given); nothing changes."""
    from agenticlens_frames import load_experiment
    from agenticlens_frames.runner import run_experiment

    files = {p: p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}
    for resume in (
        lambda: run_experiment(manifest, suite, progress=False, run_dir=run_dir),
        lambda: load_experiment(manifest, suite, run_dir=run_dir),
    ):
        with pytest.raises(InputError) as info:
            resume()
        assert info.value.file == str(segment)
        assert info.value.location == f"line {number}" + (f", {field}" if field else "")
        assert info.value.message == f"damaged journal record: {message}"
        assert "restore the run folder from a copy" in info.value.hint
        assert "delete this line to run its attempt again" in info.value.hint
    # Nothing recorded is lost or rewritten, and no segment was added.
    assert {p: p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()} == files


MISMATCH = "its checksum does not match its content (edited, or damaged on disk)"


def test_a_well_formed_edit_of_a_score_is_refused_by_its_checksum(write_experiment, tmp_path):
    # docs/reliability.md item 9: a score changed by hand passed every record check.
    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)

    def lower(record):
        record["score"][1] = 0.4 if record["score"][1] != 0.4 else 0.6

    number = _edit_record(segment, "attempt", lower, reseal=False)
    _refused_everywhere(manifest, suite, run_dir, segment, number, MISMATCH)


def test_a_bit_flipped_inside_a_string_is_refused(write_experiment, tmp_path):
    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)
    lines = segment.read_bytes().split(b"\n")
    number = next(n for n, line in enumerate(lines, 1) if b'"type":"attempt"' in line)
    line = bytearray(lines[number - 1])
    at = line.index(b'"output":"') + len(b'"output":"')
    line[at] ^= 0x20  # a letter's case: the JSON and every field stay valid
    assert chr(line[at]).isalpha()
    lines[number - 1] = bytes(line)
    segment.write_bytes(b"\n".join(lines))
    _refused_everywhere(manifest, suite, run_dir, segment, number, MISMATCH)


def test_a_line_without_its_checksum_is_refused_in_a_folder_of_this_version(
    write_experiment, tmp_path
):
    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)
    assert json.loads((run_dir / "run.json").read_text())["journal_checksum"] == "crc32"
    number = _edit_record(segment, "call", lambda r: None, reseal=None)
    _refused_everywhere(
        manifest, suite, run_dir, segment, number, "no checksum at the end of the line"
    )


def test_a_folder_of_an_earlier_version_loads_and_resumes_without_checksums(
    write_experiment, tmp_path
):
    # A folder written before checksums: run.json without journal_checksum, lines without
    # the trailing field (exactly the lines before it was appended).
    from agenticlens_frames import load_experiment
    from agenticlens_frames.runner import run_experiment

    manifest, suite, run_dir, segment = _live_folder(write_experiment, tmp_path)
    expected = load_experiment(manifest, suite, run_dir=run_dir)
    meta = json.loads((run_dir / "run.json").read_text())
    del meta["journal_checksum"]
    (run_dir / "run.json").write_text(json.dumps(meta))
    old = [line[: -len(',"crc":"00000000"}')] + b"}" for line in segment.read_bytes().splitlines()]
    segment.write_bytes(b"".join(line + b"\n" for line in old))
    assert all(b'"crc"' not in line for line in old) and len(old) > 10
    loaded = load_experiment(manifest, suite, run_dir=run_dir)
    for table in ("attempts", "checks"):
        pd.testing.assert_frame_equal(getattr(loaded, table), getattr(expected, table))
    # A resume finds nothing to do; its segments (if any) are verified on the next load.
    assert run_experiment(manifest, suite, progress=False, run_dir=run_dir).attempted == 0
    # A checksum that is there is still verified in such a folder.
    number = _edit_record(segment, "attempt", lambda r: None, reseal=True)
    lines = segment.read_bytes().split(b"\n")
    lines[number - 1] = lines[number - 1].replace(b'"calls":', b'"calls": ')  # still JSON
    segment.write_bytes(b"\n".join(lines))
    with pytest.raises(InputError, match="checksum does not match"):
        load_experiment(manifest, suite, run_dir=run_dir)


def test_a_checksum_of_another_kind_is_refused(tmp_path):
    RunFolder(tmp_path / "run", IDENTITY).close()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    (tmp_path / "run" / "run.json").write_text(json.dumps({**meta, "journal_checksum": "xx"}))
    with pytest.raises(InputError, match="checksums of another kind"):
        RunFolder(tmp_path / "run", IDENTITY)


def test_checksummed_lines_are_verified_and_a_torn_last_line_is_still_skipped(tmp_path):
    records = [{"type": "call", "n": n, "note": "é" * n} for n in range(1, 4)]
    segment = tmp_path / "000001.jsonl"
    whole = "".join(journal_line(r) for r in records).encode("utf-8")
    # The package writes what the format says (checked against the line made here).
    assert b"".join(encode_record(r)[1] for r in records) == whole
    start = len(whole) - len(journal_line(records[-1]).encode())
    for cut in range(start, len(whole) - 1):
        segment.write_bytes(whole[:cut])  # a crash anywhere in the last line's write
        got = [r["n"] for r in read_segments([segment], checksums=True)]
        assert got == [1, 2], cut
    segment.write_bytes(whole[:-1])  # all but the newline: the record is whole
    assert [r["n"] for r in read_segments([segment], checksums=True)] == [1, 2, 3]
    segment.write_bytes(whole)
    assert list(read_segments([segment], checksums=True)) == records  # no "crc" key
    # Damage before the last line is refused, with or without required checksums.
    first, second, third = whole.splitlines(keepends=True)
    for damaged, message in (
        (second.replace(b'"n":2', b'"n":5'), MISMATCH),
        # no longer JSON, its checksum still in place: the checksum is what it fails
        (second.replace(b'"n":2', b'"n"!2'), MISMATCH),
        (second.replace(b',"crc":"', b', "crc":"'), "no checksum at the end of the line"),
        (second[:20] + b"\n", "not JSON"),
    ):
        segment.write_bytes(first + damaged + third)
        for required in (True, False):
            with pytest.raises(InputError) as info:
                list(read_segments([segment], checksums=required))
            assert info.value.location == "line 2", damaged
            assert info.value.message == f"damaged journal record: {message}"


def test_replay_checks_reads_the_checks_of_every_journal_version():
    # A built-in check, a registered evaluator's as journals before judges wrote it (four
    # fields: never skipped, no metadata) and a judge's (six): the rows as written by hand.
    sink = CheckColumns()
    record = {
        "checks": [
            ["exact", "exact", 1.0, True, "ok", None],
            ["e", None, 0.5, False, "meh", [True, "e", "1", "code"]],
            ["j", "j", 0.0, False, "", [False, "j", None, "llm_judge", True, '{"a": 1}']],
        ],
        "score": [False, 0.5, 3, 1, 1.5, 2, None],
    }
    score = replay_checks(sink, 7, record)
    assert list(sink.attempt) == [7, 7, 7] and list(sink.name) == ["exact", "e", "j"]
    assert list(sink.metric) == ["exact", "e", "j"] and list(sink.value) == [1.0, 0.5, 0.0]
    assert sink.custom == {
        1: (True, "e", "1", "code", False, None),
        2: (False, "j", None, "llm_judge", True, '{"a": 1}'),
    }
    assert dataclasses.astuple(score) == (False, 0.5, 3, 1, 1.5, 2, None)


def test_judge_samples_keep_the_delivered_and_the_process_ended_ones():
    # A resume judges again a sample that ended unavailable, except one the supervisor
    # made unavailable because the process ended while it was judged (judging it again
    # could end the process again); a load keeps every sample as it is.
    from agenticlens_frames.runner.journal import judge_samples

    def sample(n: int, outcome: dict) -> dict:
        return {"type": "judge_sample", "variant": "a", "trial": 1, "case": "c1",
                "entry": 0, "sample": n, "judge": "j", "version": None,
                "payload_sha256": "ab", "outcome": outcome}  # fmt: skip

    outcomes = {
        0: {"ok": True},
        1: {"ok": False, "errors": ["TimeoutError: slow"]},
        2: {"ok": False, "errors": ["TimeoutError: slow", "ProcessEnded: killed"]},
        3: {"ok": False},
    }
    records = [sample(n, o) for n, o in outcomes.items()]
    records.append({"type": "attempt", "variant": "a", "trial": 1, "case": "c1"})
    kept = judge_samples(records)
    assert kept == {("a", 1, "c1"): {(0, n): ("j", None, "ab", outcomes[n]) for n in (0, 2)}}
    every = judge_samples(records, keep_unavailable=True)
    assert sorted(every[("a", 1, "c1")]) == [(0, 0), (0, 1), (0, 2), (0, 3)]


def test_without_a_journal_file_ctrl_c_drops_no_judging_of_an_attempt_handed_over():
    # Without a run folder no reply is journaled before judging (nothing could resume from
    # it): an attempt handed to the writer in the loop turn Ctrl-C abandons judging in is
    # still judged and kept, never left to a resume that cannot happen.
    from agenticlens_frames.evaluators import EvaluatorRegistry
    from agenticlens_frames.formats.model import EvaluatorRef

    registry = EvaluatorRegistry()
    registry.register_judge("tone", lambda output, case, trace, config: 1.0, version="1")
    case = CaseSpec(id="c1", name="c1", index=0, evaluators=(EvaluatorRef(name="tone"),))
    trace = normalize_trace({"total_latency_ms": 1.0})
    writer = JournalWriter(None, registry=registry, scoring_workers=2)
    record = {"type": "attempt", "variant": "v", "trial": 1, "case": "c1", "payload": "x"}

    async def interrupted_turn() -> None:
        # The writer receives the record at this turn's end, after abandon_judging.
        writer.append(record, scoring=(case, "A reply.", trace))
        writer.abandon_judging()

    asyncio.run(interrupted_turn())
    writer.close()
    # Kept, and judged: its one check is the judge's 1.0.
    assert writer.records == [record]
    assert [(check[0], check[2]) for check in record["checks"]] == [("tone", 1.0)]
    assert writer.answered == [] and "payload_sha256" not in record
