"""Judges in live runs: scored on the journal's thread (async judges too), their scores and
metadata journaled, and a resumed run never judging a journaled attempt again."""

from __future__ import annotations

import json

import pandas as pd

from agenticlens_frames.evaluators import EvaluatorRegistry
from agenticlens_frames.runner import run_experiment

from .conftest import simple_cases, variant


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


def test_live_judges_are_journaled_and_never_judged_twice(write_experiment, tmp_path):
    cases = simple_cases(["parcel a", "parcel b", "parcel c"])
    for case in cases:
        case["evaluators"] = [{"name": "tone", "threshold": 0.6}, {"name": "n_a"}]
    manifest, suite = write_experiment(
        [variant("sync", "answer"), variant("async", "answer_async")], cases=cases, trial_count=2
    )
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
