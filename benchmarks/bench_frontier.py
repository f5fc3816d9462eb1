"""Frontier probabilities: the vectorised joint case bootstrap against a per-resample loop.

Workload (issue 17): 5 variants × 5000 cases × 2000 resamples (3 trials per variant, every
frontier objective: reliability, pass rate, score, latency, cost). Goal: well under a
second for the whole bootstrap (draws, five objectives, frontier, p_best, intervals).

Compared in the same run with a named baseline:

* ``per-resample loop``: the textbook bootstrap: for each resample, draw case indices,
  select those cases with numpy fancy indexing, compute the five objectives per trial and
  variant, then :func:`agenticlens_frames.stats.pareto_front`. Timed on ``--loop-resamples``
  resamples (default 200) and scaled to the full count (it is linear in resamples).

Both compute the same numbers: the script checks that they agree on shared draws.

Run: ``python benchmarks/bench_frontier.py [--cases N] [--resamples B] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from agenticlens_frames import stats
from agenticlens_frames import stats_frontier as sf
from agenticlens_frames.frontier import FRONTIER_OBJECTIVES, FrontierCubes, bootstrap_cubes


def synthetic_cubes(n_var: int, n_trial: int, n_case: int, seed: int = 0) -> FrontierCubes:
    """Cases with a shared difficulty, variants with different quality, latency and cost."""
    rng = np.random.default_rng(seed)
    shape = (n_var, n_trial, n_case)
    difficulty = rng.normal(0, 1, n_case)
    quality = np.linspace(0.5, 1.5, n_var)[:, None, None]
    p = 1 / (1 + np.exp(-(quality - difficulty)))
    passed = (rng.random(shape) < p).astype(float)
    checks = np.full(shape, 3.0)
    score = np.clip(passed * 3 - rng.integers(0, 2, shape) * (1 - passed), 0, 3)
    latency = rng.lognormal(np.log(np.linspace(800, 2000, n_var))[:, None, None], 0.4, shape)
    cost = rng.gamma(2, np.linspace(0.001, 0.004, n_var)[:, None, None], shape)
    present = np.ones(shape)
    return FrontierCubes(
        attempted=np.ones(shape[:2], dtype=bool),
        completed=np.ones(shape[:2], dtype=bool),
        present=present,
        passed=passed,
        score_num=score,
        score_den=checks,
        lat_num=latency,
        lat_den=present,
        cost_num=cost,
        cost_den=present / n_case,
        cost_unknown=np.zeros(shape),
    )


def loop_bootstrap(cubes: FrontierCubes, counts: np.ndarray) -> np.ndarray:
    """The baseline: one resample at a time, cases selected by index. Returns p_frontier."""
    maximize = [h for _, h in FRONTIER_OBJECTIVES.values()]
    on = np.zeros(cubes.n_var)
    for w in counts:
        idx = np.repeat(np.arange(cubes.n_case), w.astype(np.int64))
        sel = lambda a, idx=idx: a[:, :, idx]  # noqa: E731
        passed = sel(cubes.passed)
        objectives = np.column_stack(
            [
                (passed.min(axis=2) == 1).mean(axis=1),
                passed.mean(axis=2).mean(axis=1),
                (sel(cubes.score_num).sum(axis=2) / sel(cubes.score_den).sum(axis=2)).mean(axis=1),
                (sel(cubes.lat_num).sum(axis=2) / sel(cubes.lat_den).sum(axis=2)).mean(axis=1),
                sel(cubes.cost_num).sum(axis=2).mean(axis=1),
            ]
        )
        on += stats.pareto_front(objectives, maximize)
    return on / len(counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=5)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--loop-resamples", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cubes = synthetic_cubes(args.variants, args.trials, args.cases)

    # Wall and CPU time: on a shared machine the wall clock also measures the neighbours.
    times, cpu = [], []
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result, _ = bootstrap_cubes(cubes, args.resamples, seed=1)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    fast, fast_cpu = statistics.median(times), statistics.median(cpu)

    counts = sf.bootstrap_case_counts(args.cases, args.loop_resamples, seed=1)
    scale = args.resamples / args.loop_resamples
    start, start_cpu = time.perf_counter(), time.process_time()
    loop_p = loop_bootstrap(cubes, counts)
    loop = (time.perf_counter() - start) * scale
    loop_cpu = (time.process_time() - start_cpu) * scale
    check, _ = bootstrap_cubes(cubes, args.loop_resamples, seed=1)
    agree = np.allclose(check.p_frontier, loop_p)

    size = f"{args.variants} variants × {args.trials} trials × {args.cases} cases"
    print(f"workload: {size}, {args.resamples} resamples")
    print(
        f"vectorised joint bootstrap : {fast:7.3f} s wall, {fast_cpu:7.3f} s CPU "
        f"(median of {args.repeat})"
    )
    print(
        f"per-resample loop baseline: {loop:7.3f} s wall, {loop_cpu:7.3f} s CPU "
        f"(scaled from {args.loop_resamples} resamples) → {loop_cpu / fast_cpu:.0f}× the CPU"
    )
    print(f"same p_frontier on shared draws: {agree}")
    print("p_frontier:", np.round(result.p_frontier, 3).tolist())


if __name__ == "__main__":
    main()
