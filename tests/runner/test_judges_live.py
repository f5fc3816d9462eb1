"""Judges in live runs: scored on the journal's thread (async judges too), their scores and
metadata journaled, and a resumed run never judging a journaled attempt again."""

from __future__ import annotations

import json
import threading
from collections import Counter
from hashlib import sha256
from typing import Any

import pandas as pd
import pytest

from agenticlens_frames.evaluators import EvaluatorRegistry
from agenticlens_frames.runner import run_experiment
from agenticlens_frames.runner.journal import read_segments

from .conftest import journal_line, simple_cases, variant


def _registry(calls: list[str]) -> EvaluatorRegistry:
    registry = EvaluatorRegistry()

    @registry.register_judge("tone", version="1", samples=2)
    async def tone(output, case, trace, config):  # type: ignore[no-untyped-def]
        calls.append(case.id)
        value = 1.0 if "async" in output else 0.5
        return {"value": value, "metadata": {"verdict": str(value), "judge_latency_ms": 3.0}}

    @registry.register_judge("n_a")
    def not_applicable(output, case, trace, config):  # type: ignore[no-untyped-def]
        return {"skipped": True, "explanation": "not graded"}

    return registry


def _judged_experiment(write_experiment):  # type: ignore[no-untyped-def]
    """Three cases graded by ``tone`` and ``n_a``, a sync and an async variant, 2 trials."""
    cases = simple_cases(["parcel a", "parcel b", "parcel c"])
    for case in cases:
        case["evaluators"] = [{"name": "tone", "threshold": 0.6}, {"name": "n_a"}]
    return write_experiment(
        [variant("sync", "answer"), variant("async", "answer_async")], cases=cases, trial_count=2
    )


def test_live_judges_are_journaled_and_never_judged_twice(write_experiment, tmp_path):
    manifest, suite = _judged_experiment(write_experiment)
    calls: list[str] = []
    run_dir = tmp_path / "run"
    first = run_experiment(
        manifest,
        suite,
        evaluators=_registry(calls),
        progress=False,
        run_dir=run_dir,
        max_attempts=7,
    )
    assert first.remaining > 0
    assert len(calls) == 2 * 7  # two samples per finished attempt
    done = run_experiment(
        manifest, suite, evaluators=_registry(calls), progress=False, run_dir=run_dir
    )
    attempts = 3 * 2 * 3  # variants (with the filler) x trials x cases
    assert done.complete and len(calls) == 2 * attempts
    checks = done.run.checks
    tone = checks[checks["evaluator"] == "tone"]
    assert len(tone) == attempts
    meta = tone["metadata"].map(json.loads)
    assert (meta.map(lambda m: m["judge_samples"]) == 2).all()
    async_rows = (tone["variant_id"] == "async").to_numpy()
    assert (tone.loc[async_rows, "value"] == 1.0).all() and tone.loc[async_rows, "passed"].all()
    assert not tone.loc[~async_rows, "passed"].any()
    skipped = checks[checks["evaluator"] == "n_a"]
    assert skipped["skipped"].all() and not skipped["required"].any()
    # case scores leave the skipped zeros out: mean of the built-in check and the judge
    att = done.run.attempts.set_index(["variant_id", "trial", "case_id"]).sort_index()
    for (v, t, c), group in checks.groupby(["variant_id", "trial", "case_id"], observed=True):
        live = group.loc[~group["skipped"], "value"]
        assert att.loc[(v, t, c), "score"] == live.sum() / len(live)
    # loading the folder again judges nothing and gives the same tables
    again = run_experiment(
        manifest, suite, evaluators=_registry(calls), progress=False, run_dir=run_dir
    )
    assert len(calls) == 2 * attempts
    pd.testing.assert_frame_equal(again.run.checks, done.run.checks)


def test_judge_calls_overlap_under_the_runs_concurrency_limit(write_experiment):
    import threading

    cases = simple_cases([f"parcel {i}" for i in range(4)])
    for case in cases:
        case["evaluators"] = [{"name": "slow_judge", "threshold": 0.5}]
    manifest, suite = write_experiment([variant("sync", "answer")], cases=cases, trial_count=1)
    # Passes only if two judge calls are in flight at once (waits on a condition, not a
    # clock: judged one at a time, the barrier breaks and the score is unavailable).
    barrier = threading.Barrier(2, timeout=30)
    active, peak, lock = [0], [0], threading.Lock()
    waited: set[str] = set()

    registry = EvaluatorRegistry()

    @registry.register_judge("slow_judge")
    def slow_judge(output, case, trace, config):  # type: ignore[no-untyped-def]
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            with lock:
                first = case.id in ("c1", "c2") and case.id not in waited
                waited.add(case.id)
            if first:  # the first calls for c1 and c2 must meet
                barrier.wait()
            return 1.0
        finally:
            with lock:
                active[0] -= 1

    result = run_experiment(manifest, suite, evaluators=registry, progress=False, concurrency=4)
    checks = result.run.checks
    judged = checks[checks["evaluator"] == "slow_judge"]
    assert len(judged) == 3 * 4 and judged["passed"].all(), judged["explanation"].tolist()
    assert 2 <= peak[0] <= 4


def test_the_progress_line_counts_judge_calls_and_unavailable_samples(write_experiment, capsys):
    from agenticlens_frames.evaluators import RetryPolicy

    cases = simple_cases(["parcel a", "parcel b"])
    for case in cases:
        case["evaluators"] = [{"name": "picky", "threshold": 0.5}]
    manifest, suite = write_experiment([variant("sync", "answer")], cases=cases, trial_count=2)
    registry = EvaluatorRegistry()

    @registry.register_judge("picky", samples=2, retry=RetryPolicy(max_attempts=3))
    def picky(output, case, trace, config):  # type: ignore[no-untyped-def]
        if case.id == "c2":
            raise TimeoutError("judge model overloaded")
        return 1.0

    result = run_experiment(manifest, suite, evaluators=registry, progress=True)
    err = capsys.readouterr().err
    attempts = 3 * 2  # variants (with the fillers) x trials, per case
    # c1: two samples of one call each; c2: its first sample fails after three calls and
    # ends the evaluation unavailable.
    calls, unavailable = attempts * 2 + attempts * 3, attempts
    final = [line for line in err.replace("\r", "\n").splitlines() if "100%" in line]
    overall = [line for line in final if line.startswith("live-test")]
    # (captured stderr is no terminal: plain progress lines, the last one at the end)
    assert overall and overall[-1].endswith(f"judge calls {calls} ({unavailable} unavailable)")
    checks = result.run.checks
    meta = checks.loc[checks["evaluator"] == "picky", "metadata"].map(json.loads)
    assert (meta.map(lambda m: m["judge_status"]) == "unavailable").sum() == unavailable


def test_pooled_judging_journals_every_sample_and_a_lost_attempt_reuses_them(
    write_experiment, tmp_path
):
    """Judge samples written from several scoring threads are whole lines; an attempt
    whose record was lost (the crash came after its samples) is scored again from its
    journaled reply and samples, calling neither its target nor the judge."""
    manifest, suite = _judged_experiment(write_experiment)
    calls: list[str] = []
    run_dir = tmp_path / "run"
    first = run_experiment(
        manifest,
        suite,
        evaluators=_registry(calls),
        progress=False,
        run_dir=run_dir,
        concurrency=3,
    )
    attempts = 3 * 2 * 3
    assert first.complete and len(calls) == attempts * 2  # tone: two samples each
    (segment,) = (run_dir / "journal").glob("*.jsonl")
    records = list(read_segments([segment], checksums=True))
    samples = [r for r in records if r["type"] == "judge_sample"]
    # two tone samples and the n_a judge's one call per attempt, each journaled once
    keys = {(r["variant"], r["trial"], r["case"], r["entry"], r["sample"]) for r in samples}
    assert len(samples) == len(keys) == attempts * 3
    # every reply was journaled before its judging, with the digest its samples refer to
    answered = {
        (r["variant"], r["trial"], r["case"]): r for r in records if r["type"] == "answered"
    }
    assert len(answered) == attempts
    for r in samples:
        reply = answered[(r["variant"], r["trial"], r["case"])]
        canonical = json.dumps(reply["payload"], sort_keys=True, ensure_ascii=True)
        assert (
            r["payload_sha256"] == reply["payload_sha256"] == sha256(canonical.encode()).hexdigest()
        )
    # Lose four attempt records, as a crash after their samples but before them would.
    lost = [r for r in records if r["type"] == "attempt"][-4:]
    lost_keys = {(r["variant"], r["trial"], r["case"]) for r in lost}
    # One of them as if its samples had graded another answer: those are judged again.
    regraded = (lost[0]["variant"], lost[0]["trial"], lost[0]["case"])
    for r in samples:
        if (r["variant"], r["trial"], r["case"]) == regraded:
            r["payload_sha256"] = "0" * 64
    segment.write_text("".join(journal_line(r) for r in records if r not in lost), encoding="utf-8")
    calls.clear()
    resumed = run_experiment(
        manifest,
        suite,
        evaluators=_registry(calls),
        progress=False,
        run_dir=run_dir,
        concurrency=3,
    )
    assert resumed.complete and resumed.attempted == 4
    # every other sample of the lost attempts came from the journal...
    assert calls == [regraded[2]] * 2
    # ...and their replies too: each target was called once per attempt, in all.
    assert len(resumed.calls) == attempts and set(resumed.calls["outcome"]) == {"ok"}
    (_, second) = sorted((run_dir / "journal").glob("*.jsonl"))
    again = list(read_segments([second], checksums=True))
    assert {r["type"] for r in again} == {"attempt", "judge_sample"}
    assert {(r["variant"], r["trial"], r["case"]) for r in again} == lost_keys
    for r in again:
        if r["type"] == "attempt":  # the attempt as its reply came: first session's timing
            key = (r["variant"], r["trial"], r["case"])
            assert {k: r[k] for k in answered[key] if k != "type"} == {
                k: v for k, v in answered[key].items() if k != "type"
            }
    pd.testing.assert_frame_equal(resumed.run.attempts, first.run.attempts)
    # The same checks; the re-judged attempt's unsampled judge measured its own time.
    checks, before = resumed.run.checks, first.run.checks
    judged_again = (
        (checks["variant_id"] == regraded[0])
        & (checks["trial"] == regraded[1])
        & (checks["case_id"] == regraded[2])
    ).to_numpy()
    pd.testing.assert_frame_equal(checks[~judged_again], before[~judged_again])
    assert len(checks) == len(before)
    same = ["name", "value", "passed", "skipped", "explanation"]
    pd.testing.assert_frame_equal(checks.loc[judged_again, same], before.loc[judged_again, same])


def test_only_judged_attempts_journal_their_reply_before_judging(write_experiment, tmp_path):
    # c2 names no judge, c3 only a plain evaluator: neither writes an ``answered`` record.
    cases = simple_cases(["parcel a", "parcel b", "parcel c"])
    cases[0]["evaluators"] = [{"name": "tone", "threshold": 0.6}]
    cases[2]["evaluators"] = [{"name": "plain"}]
    manifest, suite = write_experiment(
        [variant("sync", "answer"), variant("async", "answer_async")], cases=cases, trial_count=2
    )
    registry = _registry([])
    registry.register("plain", lambda *args: 1.0, version="1")
    run_dir = tmp_path / "run"
    run_experiment(manifest, suite, evaluators=registry, progress=False, run_dir=run_dir)
    (segment,) = (run_dir / "journal").glob("*.jsonl")
    records = list(read_segments([segment], checksums=True))
    answered = [r for r in records if r["type"] == "answered"]
    assert sorted((r["variant"], r["trial"], r["case"]) for r in answered) == sorted(
        (v, t, "c1") for v in ("sync", "async", "filler2") for t in (1, 2)
    )
    for reply in answered:
        key = (reply["variant"], reply["trial"], reply["case"])
        of_key = [r for r in records if (r["variant"], r["trial"], r["case"]) == key]
        # its call, its reply, its judge's two samples, then the attempt with its scores
        kinds = [r["type"] for r in of_key]
        assert kinds == ["call", "answered", "judge_sample", "judge_sample", "attempt"]
        attempt = of_key[-1]
        assert {k: v for k, v in attempt.items() if k not in ("score", "checks")} == {
            **reply,
            "type": "attempt",
        }
    unjudged = [r for r in records if r["type"] == "attempt" and r["case"] != "c1"]
    assert len(unjudged) == 12 and not any("payload_sha256" in r for r in unjudged)
    # Without judges in the registry, no record of the kind at all.
    plain_only = EvaluatorRegistry()
    plain_only.register("plain", lambda *args: 1.0, version="1")
    plain_only.register("tone", lambda *args: 1.0, version="1")
    run_experiment(manifest, suite, evaluators=plain_only, progress=False, run_dir=tmp_path / "p")
    text = "".join(p.read_text() for p in (tmp_path / "p" / "journal").glob("*.jsonl"))
    assert '"answered"' not in text and "payload_sha256" not in text


def test_an_interrupted_run_leaves_queued_judging_to_the_resume(write_experiment, tmp_path):
    """Ctrl-C (a CI's cancel) stops judge calls too: replies waiting for a judge are not
    judged before the run returns (the queue of a fast agent and a slow judge took 14 s),
    and the resumed run judges them from their journaled reply without calling the target."""
    import os
    import signal
    import threading
    import time

    cases = simple_cases([f"parcel {i}" for i in range(40)])
    for case in cases:
        case["evaluators"] = [{"name": "slow_judge", "threshold": 0.5}]
    # A target slow enough that the interrupt comes while calls are still being made.
    module = tmp_path / "paced.py"
    module.write_text(
        "import time\n\n\ndef answer(text, case=None):\n"
        "    time.sleep(0.02)\n    return {'output': 'refund ' + text}\n"
    )
    manifest, suite = write_experiment(
        [variant("sync", f"{module}:answer")], cases=cases, trial_count=1
    )
    calls: list[str] = []
    lock = threading.Lock()

    def registry(interrupt_at: int | None) -> EvaluatorRegistry:
        judges = EvaluatorRegistry()

        @judges.register_judge("slow_judge")
        def slow_judge(output, case, trace, config):  # type: ignore[no-untyped-def]
            with lock:
                calls.append(case.id)
                if len(calls) == interrupt_at:
                    os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # slower than the target: replies queue up for the judge
            return 1.0

        return judges

    run_dir = tmp_path / "run"
    first = run_experiment(
        manifest, suite, evaluators=registry(10), progress=False, run_dir=run_dir, concurrency=2
    )
    assert first.interrupted
    assert len(calls) < 25  # not the whole queue of answered replies
    second = run_experiment(
        manifest, suite, evaluators=registry(None), progress=False, run_dir=run_dir
    )
    attempts = 3 * 40  # the fixture adds two filler variants
    assert second.complete and len(calls) == attempts  # each attempt judged once
    # Every journaled call of both sessions: only calls cancelled in flight were made twice,
    # never one whose reply was waiting for the judge.
    assert len(second.calls) <= attempts + 2


def test_a_resumed_run_judges_again_only_the_unavailable_judge_scores(write_experiment, tmp_path):
    """An unavailable judge score (the judge never answered) is judged again when the run is
    resumed from its folder; delivered samples are reused and no target is called again."""
    from agenticlens_frames.evaluators import RetryPolicy

    cases = simple_cases(["parcel a", "parcel b"])
    for case in cases:
        case["evaluators"] = [{"name": "tone", "threshold": 0.5}]
    manifest, suite = write_experiment([variant("sync", "answer")], cases=cases, trial_count=1)
    calls: list[tuple[str, int]] = []
    down = {"c2": True}

    def registry() -> EvaluatorRegistry:
        reg = EvaluatorRegistry()

        @reg.register_judge("tone", version="1", samples=2, retry=RetryPolicy(max_attempts=2))
        def tone(output, case, trace, config):  # type: ignore[no-untyped-def]
            calls.append((case.id, len(calls)))
            # While the judge is down, each of c2's evaluations (judged one at a time:
            # concurrency 1) gets its first sample, then its second fails on both attempts.
            if down.get(case.id) and sum(c == case.id for c, _ in calls) % 3 != 1:
                raise TimeoutError("judge overloaded")
            return {"value": 1.0, "metadata": {"verdict": "good", "judge_latency_ms": 1.0}}

        return reg

    run_dir = tmp_path / "run"

    def run() -> Any:
        return run_experiment(
            manifest, suite, evaluators=registry(), progress=False, run_dir=run_dir, concurrency=1
        )

    first = run()
    attempts = 3 * 1  # variants (with the fillers) x trials, per case
    tone = first.run.checks[first.run.checks["evaluator"] == "tone"]
    meta = tone["metadata"].map(json.loads)
    assert (meta.map(lambda m: m["judge_status"]) == "unavailable").sum() == attempts
    target_calls = len(first.calls)
    judged_before = Counter(c for c, _ in calls)
    # c1: 2 samples per attempt; c2: sample 1, then sample 2 fails twice (per attempt).
    assert judged_before == {"c1": 2 * attempts, "c2": 3 * attempts}
    down["c2"] = False
    calls.clear()
    again = run()
    # Only c2's missing sample (its second) is judged, once per attempt; c1 not at all.
    assert Counter(c for c, _ in calls) == {"c2": attempts}
    assert len(again.calls) == target_calls  # no target called again
    tone = again.run.checks[again.run.checks["evaluator"] == "tone"]
    meta = tone["metadata"].map(json.loads)
    assert len(tone) == 2 * attempts
    assert (meta.map(lambda m: m["judge_status"]) == "ok").all()
    assert (meta.map(lambda m: m["judge_samples"]) == 2).all()
    assert tone["passed"].all()
    # A third session finds nothing unavailable: nothing is judged again.
    calls.clear()
    run()
    assert calls == []


def test_loading_a_run_folder_never_calls_the_judge_and_reads_what_the_resume_judged(
    tmp_path, monkeypatch, caplog
):
    """A run folder whose judge was down (unavailable scores, recorded and live variants)
    loads with zero judge calls and its scores unavailable with their recorded error; the
    resume judges them again and journals them, and later loads read those, still with
    zero calls. (Old code judged every unavailable recorded sample again at each load.)"""
    import logging

    import yaml

    from agenticlens_frames import load_experiment
    from agenticlens_frames.evaluators import RetryPolicy
    from agenticlens_frames.testing import make_synthetic

    folder = make_synthetic(tmp_path / "exp", variants=3, trials=2, cases=3, seed=2)
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    recorded_only = folder / "manifest_recorded.yaml"
    recorded_only.write_bytes(manifest.read_bytes())
    doc = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    doc["variants"].append(
        variant("live", "answer", factors={**doc["variants"][0]["factors"], "model": "live"})
    )
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    doc = yaml.safe_load(suite.read_text(encoding="utf-8"))
    for case in doc["cases"]:
        case["evaluators"] = [{"name": "tone", "threshold": 0.5}]
    suite.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    down_case = doc["cases"][0]["id"]
    calls: list[str] = []
    down = [True]

    def registry(version: str = "1") -> EvaluatorRegistry:
        reg = EvaluatorRegistry()

        @reg.register_judge("tone", version=version, samples=2, retry=RetryPolicy(max_attempts=1))
        def tone(output, case, trace, config):  # type: ignore[no-untyped-def]
            calls.append(case.id)
            if down[0] and case.id == down_case:
                raise TimeoutError("judge down")
            return {"value": 0.75, "metadata": {"verdict": "good", "judge_latency_ms": 1.0}}

        return reg

    def statuses(run: Any) -> Counter[str]:
        tone = run.checks[run.checks["evaluator"] == "tone"]
        return Counter(tone["metadata"].map(lambda m: json.loads(m)["judge_status"]))

    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, evaluators=registry(), progress=False, run_dir=run_dir)
    evaluations = 4 * 2 * 3  # variants (3 recorded, 1 live) x trials x cases
    down_evaluations = 4 * 2  # those of the case the judge never answers
    # each evaluation of the down case: its first sample fails (one attempt), sampling stops
    assert len(calls) == 2 * (evaluations - down_evaluations) + down_evaluations
    assert statuses(first.run) == {"ok": evaluations - down_evaluations, "unavailable": 8}

    calls.clear()
    for _ in range(2):
        loaded = load_experiment(manifest, suite, evaluators=registry(), run_dir=run_dir)
        assert calls == []  # no judge call, at every load
        pd.testing.assert_frame_equal(loaded.checks, first.run.checks)
    tone = loaded.checks[loaded.checks["evaluator"] == "tone"]
    lost = tone[tone["case_id"] == down_case]["metadata"].map(json.loads)
    assert len(lost) == down_evaluations
    assert all(m["judge_error"] == "TimeoutError: judge down" for m in lost)

    # The explicit resume judges them again (both samples: the first had failed)...
    down[0] = False
    resumed = run_experiment(
        manifest, suite, evaluators=registry(), progress=False, run_dir=run_dir
    )
    assert Counter(calls) == {down_case: 2 * down_evaluations}
    assert statuses(resumed.run) == {"ok": evaluations}
    # ...and what it judged is in the folder: a load reads it, calling nothing.
    calls.clear()
    down[0] = True  # (a load that called the judge would find it down again)
    after = load_experiment(manifest, suite, evaluators=registry(), run_dir=run_dir)
    assert calls == []
    pd.testing.assert_frame_equal(after.checks, resumed.run.checks)
    assert (after.checks.loc[after.checks["evaluator"] == "tone", "value"] == 0.75).all()

    # A judge at another version finds no sample of its own: still no call; the recorded
    # evaluations are unavailable (NotJudged) and a note counts them.
    with caplog.at_level(logging.WARNING):
        changed = load_experiment(manifest, suite, evaluators=registry("2"), run_dir=run_dir)
    assert calls == []
    recorded = 3 * 2 * 3
    tone = changed.checks[changed.checks["evaluator"] == "tone"]
    meta = tone.loc[(tone["variant_id"] != "live").to_numpy(), "metadata"].map(json.loads)
    assert len(meta) == recorded
    assert all(m["judge_error"].startswith("NotJudged: not judged in this run") for m in meta)
    notes = [r.getMessage() for r in caplog.records if "not in run folder" in r.getMessage()]
    assert len(notes) == 1 and notes[0].startswith(f"Note: {recorded} judge samples of the")

    # Without a run folder there is nowhere to keep scores: the load judges, and says so.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_experiment(recorded_only, suite, evaluators=registry())
    assert len(calls) > 0
    assert any(
        "load_experiment without run_dir calls the judge(s) 'tone'" in r.getMessage()
        for r in caplog.records
    )


def _recorded_tone_experiment(tmp_path):  # type: ignore[no-untyped-def]
    """A recorded-only experiment (3 variants x 2 trials x 2 cases) graded by ``tone``."""
    import yaml

    from agenticlens_frames.testing import make_synthetic

    folder = make_synthetic(tmp_path / "exp", variants=3, trials=2, cases=2, seed=4)
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    doc = yaml.safe_load(suite.read_text(encoding="utf-8"))
    for case in doc["cases"]:
        case["evaluators"] = [{"name": "tone", "threshold": 0.5}]
    suite.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return manifest, suite


class _Billed(Exception):
    """A failed judge attempt that reports its usage."""

    def __init__(self, usage: dict[str, Any]) -> None:
        super().__init__("429 slow down")
        self.usage = usage


def test_a_sample_with_nan_infinity_or_a_tuple_in_its_reply_is_journaled_and_never_paid_twice(
    tmp_path,
):
    """A judge sample whose reply JSON did not give back exactly (NaN or an infinity in
    its metadata or its failed attempt's usage, a tuple, a key 1) was never journaled: a
    load of the run folder showed it NotJudged where the run had a score, and every resume
    paid the judge again. Now the run scores what the journal keeps (NaN and infinities
    exactly, a tuple as a list, a key as "1", as the checks table writes them anyway): the
    load and the resume reuse every sample, calling nothing, and give the run's tables."""
    from agenticlens_frames import load_experiment
    from agenticlens_frames.evaluators import RetryPolicy

    manifest, suite = _recorded_tone_experiment(tmp_path)
    calls: list[str] = []
    billed: set[tuple[str, str]] = set()
    lock = threading.Lock()

    def registry() -> EvaluatorRegistry:
        reg = EvaluatorRegistry()

        @reg.register_judge(
            "tone", version="1", retry=RetryPolicy(max_attempts=2, retry_on=(_Billed,))
        )
        def tone(output, case, trace, config):  # type: ignore[no-untyped-def]
            calls.append(case.id)
            with lock:  # (judge calls overlap on threads)
                first_call = (case.id, trace.trace_id) not in billed
                billed.add((case.id, trace.trace_id))
            if first_call:  # every first call of an evaluation is billed and retried
                raise _Billed({"judge_cost_usd": float("nan"), "judge_latency_ms": 2.0})
            metadata = {
                "verdict": "good",
                "logprob": float("nan"),
                "margin": float("inf"),
                "floor": float("-inf"),
                "span": (1, 2),
                1: "a",
                "judge_latency_ms": 1.0,
            }
            return {"value": 0.75, "metadata": metadata}

        return reg

    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, evaluators=registry(), progress=False, run_dir=run_dir)
    evaluations = 3 * 2 * 2
    assert len(calls) == 2 * evaluations
    tone = first.run.checks[first.run.checks["evaluator"] == "tone"]
    assert len(tone) == evaluations and (tone["value"] == 0.75).all()
    # The checks table writes the reply as JSON text (tokens Python's json reads back).
    text = tone["metadata"].iloc[0]
    for written in ('"logprob": NaN', '"margin": Infinity', '"floor": -Infinity'):
        assert written in text
    assert '"span": [1, 2]' in text and '"1": "a"' in text
    assert json.loads(text)["judge_attempts"] == 2

    calls.clear()
    loaded = load_experiment(manifest, suite, evaluators=registry(), run_dir=run_dir)
    assert calls == []
    pd.testing.assert_frame_equal(loaded.checks, first.run.checks)
    assert "NotJudged" not in "".join(loaded.checks["metadata"].dropna())
    resumed = run_experiment(
        manifest, suite, evaluators=registry(), progress=False, run_dir=run_dir
    )
    assert calls == []  # nothing judged, nothing paid again
    pd.testing.assert_frame_equal(resumed.run.checks, first.run.checks)


@pytest.mark.parametrize(
    ("samples", "metadata", "said"),
    [
        (1, {(1, 2): "pair"}, "returned metadata JSON cannot hold for case"),
        (1, {"n": {2: "int", "2": "str"}}, """keys 2 and '2' are both "2" in JSON"""),
        (2, {"verdict": ("good", 1)}, "returned a verdict of type tuple for case"),
    ],
)
def test_a_reply_json_cannot_keep_is_an_invalid_reply_in_the_run_and_its_load(
    tmp_path, samples, metadata, said
):
    """Metadata JSON cannot write (a tuple key; two keys JSON writes alike, of which it
    keeps one; a tuple verdict, which JSON gives back as an unhashable list) is an
    invalid judge reply: the score is unavailable with an error
    saying what the judge returned and why, in the run and in the load of its folder
    alike (the tuple key failed the table build after the judge was paid; the tuple
    verdict was scored in the run and never journaled)."""
    from agenticlens_frames import load_experiment

    manifest, suite = _recorded_tone_experiment(tmp_path)
    calls: list[str] = []

    def registry() -> EvaluatorRegistry:
        reg = EvaluatorRegistry()

        @reg.register_judge("tone", version="1", samples=samples)
        def tone(output, case, trace, config):  # type: ignore[no-untyped-def]
            calls.append(case.id)
            return {"value": 0.75, "metadata": {**metadata, "judge_latency_ms": 1.0}}

        return reg

    run_dir = tmp_path / "run"
    first = run_experiment(manifest, suite, evaluators=registry(), progress=False, run_dir=run_dir)
    evaluations = 3 * 2 * 2
    assert len(calls) == evaluations  # one call each: its first sample failed, sampling stops
    tone = first.run.checks[first.run.checks["evaluator"] == "tone"]
    meta = tone["metadata"].map(json.loads)
    assert (meta.map(lambda m: m["judge_status"]) == "unavailable").all()
    assert all(said in m["judge_error"] for m in meta)
    assert all("a verdict must be a string or number" in m["judge_error"] or
               "use string keys and JSON values" in m["judge_error"] for m in meta)  # fmt: skip
    calls.clear()
    loaded = load_experiment(manifest, suite, evaluators=registry(), run_dir=run_dir)
    assert calls == []
    pd.testing.assert_frame_equal(loaded.checks, first.run.checks)


def test_the_judges_of_a_failed_trial_are_billed_and_counted_apart(write_experiment, tmp_path):
    """An invalid payload fails its whole trial, which then has no scores in the tables
    (AgenticLens' rule); but the trial's attempts that answered were judged and billed —
    those before the failing case, and those past it that had started before the failure
    was known (here all of them: the failing case answers last). The judges' cost lines,
    which count the analysed scores, said nothing of them. They now end with "in failed
    trials: N more score(s) …, not analysed" on every surface (the run, its load, its
    tables, its saved report), N counted here from the judge's own calls."""
    from agenticlens_frames import InputError, analyze, load_experiment, load_report, read_parquet
    from agenticlens_frames.analysis import judge_cost_lines
    from agenticlens_frames.report.html import judges_section_html
    from agenticlens_frames.report.json_report import write_json_report

    agents = tmp_path / "agents.py"
    agents.write_text(
        "import time\n"
        "def ok(text):\n    return {'output': 'parcel ok ' + text}\n"
        "def late(text):\n"
        "    if text == 'parcel 2':\n"
        "        time.sleep(1.0)  # the later cases answer first\n"
        "        return 'not a payload'\n"
        "    return {'output': 'parcel late ' + text}\n"
    )
    cases = simple_cases([f"parcel {i}" for i in range(1, 7)])
    for case in cases:
        case["evaluators"] = [{"name": "grader"}]
    manifest, suite = write_experiment(
        [variant("base", f"{agents}:ok"), variant("late", f"{agents}:late")],
        cases=cases,
        trial_count=1,
        max_workers=8,
    )
    outputs: list[str] = []
    registry = EvaluatorRegistry()

    @registry.register_judge("grader", version="1")
    def grader(output, case, trace, config):  # type: ignore[no-untyped-def]
        outputs.append(output)
        usage = {"judge_cost_usd": 0.001, "judge_input_tokens": 10, "judge_output_tokens": 2}
        return {"value": 1.0, "metadata": usage}

    run_dir = tmp_path / "run"
    result = run_experiment(
        manifest, suite, evaluators=registry, progress=False, run_dir=run_dir, concurrency=8
    )
    assert set(result.run.attempts.loc[result.run.attempts["variant_id"] == "late", "status"]) == {
        "trial_failed"
    }
    n = sum("late" in output for output in outputs)
    # c1 before the failing case, c3-c6 past it: every one that answered was judged.
    assert n == 5
    expected = (
        f"Judges · late: in failed trials: {n} more score(s), 0 unavailable, "
        f"${0.001 * n:.6f}, {10 * n} / {2 * n} tokens, not analysed"
    )
    analysis = analyze(result.run, frontier_n_resamples=0)
    assert expected in judge_cost_lines(analysis)
    assert f"<li>{expected}</li>" in judges_section_html(analysis)  # the page, the explorer
    loaded = load_experiment(manifest, suite, run_dir=run_dir, evaluators=registry)
    assert expected in judge_cost_lines(analyze(loaded, frontier_n_resamples=0))
    tables = read_parquet(run_dir / "tables")
    assert expected in judge_cost_lines(analyze(tables, frontier_n_resamples=0))
    report = write_json_report(analysis, tmp_path / "report.json")
    assert expected in json.loads(report.read_text())["agenticlens_frames"]["judge_costs"]
    assert expected in judge_cost_lines(load_report(report))
    # A saved report whose rows were damaged is refused, naming the place.
    saved = json.loads(report.read_text())
    saved["agenticlens_frames"]["judge_spend_failed_trials"][0]["judge_scores"] = "5"
    report.write_text(json.dumps(saved))
    with pytest.raises(InputError) as refused:
        load_report(report)
    location = "agenticlens_frames.judge_spend_failed_trials[0].judge_scores"
    assert refused.value.location == location
    assert len(outputs) == n + 6 + 6  # nothing judged again by the loads
