#!/usr/bin/env python3
"""Write big synthetic trial archives fast: numpy-made tidy tables, no JSON in between.

    python benchmarks/make_archive.py OUT --experiments 100 [--cases 1250] [--variants 8]
                                          [--trials 10] [--seed 20240601]

Each experiment is one run of 8 variants x 10 trials x 1,250 cases (100k attempts), the
shape of research/perf-limits.md: 2% target errors, 0.5% missing samples, 3% unknown
costs, 1% of trials failed, case ids drawn from a 100k pool. Like every run this toolkit
writes, each (variant, trial, case) has one attempt row; ``--drop 0.005`` removes 0.5% of
the rows instead (perf-limits' "dropped attempts": n per case 7-10, pass@10 sometimes
undefined), which sends the engines down their general, scattered path. Factors
``model`` (4 levels), ``prompt`` (2) and ``retrieval`` (3: bm25, dense, hybrid); every
other experiment adds a ``memory`` factor (schema evolution). Cases carry one or two of
eight topic tags. Runs are dated one day apart from 2026-01-01 and spread over ten
experiment names.

The runs go through :meth:`Archive.add`, so the files are exactly what the toolkit
writes (content hash, staging, rename). The ``checks`` table is left empty to keep
50M-attempt archives quick to write; every engine statistic comes from ``attempts``.
Same arguments -> same archive content (and run ids).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from agenticlens_frames.archive import Archive
from agenticlens_frames.formats.model import CaseSpec, ManifestSpec, SuiteSpec, VariantSpec
from agenticlens_frames.frames import (
    ATTEMPT_STATUSES,
    CHECKS_SCHEMA,
    ExperimentRun,
    cases_frame,
    variants_frame,
)

MODELS = ("gpt-small", "gpt-large", "gpt-medium", "gpt-tiny")
PROMPTS = ("v1", "v2")
RETRIEVAL = ("bm25", "dense", "hybrid")
MEMORY = ("none", "summary")
TOPICS = ("refund", "billing", "shipping", "account", "order", "warranty", "privacy", "escalation")
CASE_POOL = 100_000
START = datetime(2026, 1, 1, tzinfo=UTC)


def _variants(rng: np.random.Generator, n: int, with_memory: bool) -> tuple[VariantSpec, ...]:
    out = []
    for i in range(n):
        factors = {
            "model": MODELS[i % len(MODELS)],
            "prompt": PROMPTS[(i // len(MODELS)) % len(PROMPTS)],
            "retrieval": RETRIEVAL[int(rng.integers(len(RETRIEVAL))) if i else 0],
        }
        if with_memory:
            factors["memory"] = MEMORY[i % 2]
        out.append(
            VariantSpec(
                id=f"v{i:02d}",
                name=f"variant {i}",
                target_kind="recorded",
                target=f"trials/v{i:02d}.json",
                resolved_target=f"trials/v{i:02d}.json",
                factors=factors,
            )
        )
    return tuple(out)


def make_run(
    index: int, *, variants: int, trials: int, cases: int, seed: int, drop: float = 0.0
) -> ExperimentRun:
    """One synthetic experiment run, built column-wise with numpy."""
    rng = np.random.default_rng([seed, index])
    with_memory = index % 2 == 1
    m = ManifestSpec(
        path=Path("manifest.yaml"),
        name=f"support-{index % 10}",
        version=str(index // 10 + 1),
        baseline_variant_id="v00",
        variants=_variants(rng, variants, with_memory),
        trial_count=trials,
        random_seed=seed + index,
        pass_k=(1, 5, 10),
        minimum_trials=min(5, trials),
    )
    pool = np.sort(rng.choice(CASE_POOL, size=cases, replace=False))
    n_tags = rng.integers(1, 3, size=cases)
    tag_a = rng.integers(len(TOPICS), size=cases)
    tag_b = (tag_a + rng.integers(1, len(TOPICS), size=cases)) % len(TOPICS)
    case_specs = tuple(
        CaseSpec(
            id=f"case-{pool[i]:05d}",
            name=f"Case {pool[i]}",
            index=i,
            input={"message": "synthetic"},
            tags=(TOPICS[tag_a[i]],) if n_tags[i] == 1 else (TOPICS[tag_a[i]], TOPICS[tag_b[i]]),
        )
        for i in range(cases)
    )
    s = SuiteSpec(path=Path("suite.yaml"), name="support-desk", version="1", cases=case_specs)

    v, t, c = np.meshgrid(
        np.arange(variants), np.arange(1, trials + 1), np.arange(cases), indexing="ij"
    )
    v, t, c = v.ravel(), t.ravel(), c.ravel()
    keep = rng.random(len(v)) >= drop
    v, t, c = v[keep], t[keep], c[keep]
    n = len(v)
    quality = rng.normal(0.6, 0.15, size=variants)
    difficulty = rng.normal(0.0, 1.0, size=cases)
    p_check = 1 / (1 + np.exp(-(2.5 * quality[v] - 0.8 * difficulty[c])))
    checks_passed = rng.binomial(3, p_check).astype(np.int32)
    failed_trial = rng.random((variants, trials + 1)) < 0.01
    failed_trial[0, :] = False  # keep the baseline comparable
    tf = failed_trial[v, t]
    draw = rng.random(n)
    errored = ~tf & (draw < 0.02)
    missing = ~tf & (draw >= 0.02) & (draw < 0.025)
    # ATTEMPT_STATUSES codes: ok 0, missing_sample 1, target_error 2, trial_failed 4.
    status = np.where(tf, 4, np.where(errored, 2, np.where(missing, 1, 0))).astype(np.int8)
    ok = status == 0
    n_checks = np.where(tf, 0, np.where(errored | missing, 1, 3)).astype(np.int32)
    n_passed = np.where(ok, checks_passed, 0).astype(np.int32)
    score_sum = np.where(tf, np.nan, n_passed.astype(np.float64))
    score = np.where(tf, np.nan, np.where(ok, n_passed / 3.0, 0.0))
    latency = np.where(ok, rng.lognormal(np.log(2000.0), 0.35, size=n), np.nan)
    cost = np.where(ok & (rng.random(n) >= 0.03), rng.gamma(2.0, 0.005, size=n), np.nan)
    order = rng.permutation(variants * trials).reshape(variants, trials)
    run_order = order[v, t - 1].astype(np.int32)

    def cat(codes: np.ndarray, categories: tuple[str, ...] | list[str]) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=list(categories))

    null_text = pd.array([None] * n, dtype="str")
    attempts = pd.DataFrame(
        {
            "experiment_id": cat(np.zeros(n, np.int8), [f"{m.name}@{m.version}"]),
            "variant_id": cat(v, m.variant_ids),
            "trial": t.astype(np.int32),
            "case_id": cat(c, s.case_ids),
            "case_index": c.astype(np.int32),
            "status": cat(status, ATTEMPT_STATUSES),
            "passed": ok & (n_passed == 3),
            "score": score,
            "n_checks": n_checks,
            "n_checks_passed": n_passed,
            "score_sum": score_sum,
            "latency_ms": latency,
            "cost_usd": cost,
            "cost_source": cat(np.where(np.isnan(cost), -1, 0), ["measured", "estimated"]),
            "output": null_text,
            "trace_id": null_text,
            "trace_shape": cat(np.where(ok, 0, -1), ["eval", "run"]),
            "tools": null_text,
            "n_tool_calls": np.where(ok, 2, 0).astype(np.int32),
            "turns": pd.array(np.where(ok, 2, 0), dtype="Int32"),
            "target_attempts": pd.array([pd.NA] * n, dtype="Int32"),
            "error": null_text,
            "run_order": run_order,
        }
    )
    trial_v, trial_t = np.meshgrid(np.arange(variants), np.arange(1, trials + 1), indexing="ij")
    failed = failed_trial[trial_v.ravel(), trial_t.ravel()]
    trials_frame = pd.DataFrame(
        {
            "variant_id": cat(trial_v.ravel(), m.variant_ids),
            "trial": trial_t.ravel().astype(np.int32),
            "status": cat(failed.astype(np.int8), ["succeeded", "failed"]),
            "error_message": pd.array(
                np.where(failed, "recorded trial missing", None), dtype="str"
            ),
            "execution_position": order.ravel().astype(np.int32),
        }
    )
    checks = CHECKS_SCHEMA.empty_table().to_pandas()
    return ExperimentRun(
        manifest=m,
        suite=s,
        attempts=attempts,
        checks=checks,
        trials=trials_frame,
        variants=variants_frame(m),
        cases=cases_frame(s),
    )


def build(
    out: Path,
    experiments: int,
    *,
    variants: int = 8,
    trials: int = 10,
    cases: int = 1250,
    seed: int = 20240601,
    drop: float = 0.0,
    quiet: bool = False,
) -> Archive:
    """Add ``experiments`` synthetic runs to the archive at ``out`` (existing ones kept)."""
    archive = Archive(out, durable=False)
    began = time.perf_counter()
    for i in range(experiments):
        run = make_run(i, variants=variants, trials=trials, cases=cases, seed=seed, drop=drop)
        archive.add(run, run_at=START + timedelta(days=i))
        if not quiet and (i + 1) % 10 == 0:
            rate = (i + 1) / (time.perf_counter() - began)
            print(f"  {i + 1}/{experiments} runs ({rate:.1f} runs/s)", file=sys.stderr)
    return archive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--experiments", type=int, default=10)
    parser.add_argument("--variants", type=int, default=8)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--cases", type=int, default=1250)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--drop", type=float, default=0.0, help="share of rows to drop")
    args = parser.parse_args()
    # Each refused value made an archive that only looked like a benchmark's: fewer than
    # three variants (AgenticLens' minimum), no case, or every row dropped.
    for name, least in (("experiments", 1), ("variants", 3), ("trials", 1), ("cases", 1)):
        if getattr(args, name) < least:
            parser.error(f"--{name} must be at least {least}, got {getattr(args, name)}")
    if not 0 <= args.drop < 1:
        parser.error(f"--drop is a share of the rows, in [0, 1), got {args.drop}")
    build(
        args.out,
        args.experiments,
        variants=args.variants,
        trials=args.trials,
        cases=args.cases,
        seed=args.seed,
        drop=args.drop,
    )


if __name__ == "__main__":
    main()
