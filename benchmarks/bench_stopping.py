"""Early stopping: error rate under continuous monitoring, and target calls saved.

Simulated live runs: a baseline and two candidates, every case run for 3 trials per
variant, case difficulty shared by the variants (pass probability p_i ~ Beta(2, 1), mean
2/3; a candidate fixes the same share f = Δ / (1 − 2/3) of every case's failures,
p_i + f (1 − p_i), so its true gain over the case population is exactly Δ and no p leaves
[0, 1]), the suite's cases in random order. The run is watched after every
completed case with the betting confidence sequences of
:mod:`agenticlens_frames.stats_sequential` (α = 0.05, Bonferroni over the two candidates,
the rule ``stop_when="decided"`` uses) and stops once both candidates are decided.

Reported, against named baselines measured in the same run:

* **error rate, Δ = 0** (no true difference): share of runs in which any candidate's
  interval ever excluded 0 — the family-wise error under continuous monitoring. Baseline:
  the same runs watched with the fixed-sample paired t-interval (Bonferroni) from the
  10th case on, which is what peeking at an ordinary report after every case does.
* **calls saved, Δ = +10 pp**: target calls of the stopped run against the fixed design
  (every planned case): 1 − (cases used / cases planned), averaged over runs; every
  case costs variants × trials calls. Baseline: the fixed design (0 % saved).

Also an end-to-end check through :func:`agenticlens_frames.run_experiment` with python
targets (``--live-runs``, default 3): attempts actually run and saved.

Run: ``python benchmarks/bench_stopping.py [--runs R] [--cases N]``; ``--clustered``
gives only the error rate with cases correlated within topics (why ``stop_when`` refuses
declared clusters), ``--widths`` only the sequence's width against the fixed-sample
Hoeffding interval.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from scipy import stats as st

from agenticlens_frames.stats_sequential import BettingConfidenceSequence, candidate_alpha


def simulate(runs: int, cases: int, delta: float, seed: int, trials: int = 3) -> dict:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 1, size=(runs, cases))
    base = rng.binomial(trials, p) / trials
    # p + delta, clipped at 1, gained less than delta (+9.0 pp for +10 pp): a share of
    # each case's failures is fixed instead, exactly delta on average (module docstring).
    share = delta / (1 - 2 / 3)
    cands = [rng.binomial(trials, p + share * (1 - p)) / trials for _ in range(2)]
    diffs = np.stack([c - base for c in cands], axis=1)  # runs × 2 × cases
    alpha = candidate_alpha(0.05, 2, "bonferroni")
    cs = BettingConfidenceSequence(alpha, n=runs * 2)
    wrong = np.zeros(runs, dtype=bool)
    naive_wrong = np.zeros(runs, dtype=bool)
    decided = np.zeros((runs, 2), dtype=bool)
    stopped = np.full(runs, cases)
    done = np.zeros(runs, dtype=bool)
    s1 = np.zeros((runs, 2))
    s2 = np.zeros((runs, 2))
    for i in range(cases):
        d = diffs[:, :, i]
        cs.update(d.reshape(-1))
        low, high = (x.reshape(runs, 2) for x in cs.interval())
        excl = (low > 0) | (high < 0)
        wrong |= excl.any(axis=1) if delta == 0 else False
        decided |= excl
        now = ~done & decided.all(axis=1)
        stopped[now] = i + 1
        done |= now
        s1 += d
        s2 += d * d
        n = i + 1
        if n >= 10:  # from 10 cases on, so that a zero SD at tiny n does not count
            mean = s1 / n
            sd = np.sqrt(np.maximum(s2 / n - mean**2, 0) * n / (n - 1))
            half = st.t.ppf(1 - alpha / 2, n - 1) * sd / np.sqrt(n)
            naive = (mean - half > 0) | (mean + half < 0)
            naive_wrong |= naive.any(axis=1) if delta == 0 else False
    return {
        "error": wrong.mean(),
        "naive_error": naive_wrong.mean(),
        "saved": 1 - stopped.mean() / cases,
        "decided": done.mean(),
        "mean_stop": stopped.mean(),
    }


TARGETS = """
import hashlib


def _u(*parts):
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _agent(shift, name):
    calls = {}

    def call(text, case=None):
        calls[case.id] = calls.get(case.id, 0) + 1  # the trial, in a single session
        p = 0.25 + 0.7 * _u("difficulty", SEED, case.id)  # shared by every variant
        u = _u(name, SEED, case.id, calls[case.id])
        return {"output": "yes" if u < min(p + shift, 1) else "no"}

    return call


base = _agent(0.0, "base")
cand_a = _agent(0.10, "a")
cand_b = _agent(0.10, "b")
"""


def live_runs(n_runs: int, cases: int) -> list[dict]:
    from agenticlens_frames import StopRule, run_experiment

    out = []
    for seed in range(n_runs):
        folder = Path(tempfile.mkdtemp())
        (folder / "agents.py").write_text(f"SEED = {seed}\n" + TARGETS)
        manifest = {
            "name": "stop-bench",
            "version": "1",
            "baseline_variant_id": "base",
            "trial_count": 3,
            "random_seed": seed,
            "variants": [
                {"id": v, "name": v, "target_kind": "python", "target": f"agents.py:{v}"}
                for v in ("base", "cand_a", "cand_b")
            ],
        }
        suite = {
            "name": "s",
            "version": "1",
            "cases": [
                {"id": f"c{i}", "name": f"c{i}", "input": f"q{i}", "expected_contains": ["yes"]}
                for i in range(cases)
            ],
        }
        (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
        (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
        result = run_experiment(
            folder / "manifest.yaml",
            folder / "suite.yaml",
            progress=False,
            stop_when="decided",
            stop_rule=StopRule(alpha=0.05, correction="bonferroni"),
        )
        out.append(result.stopping)
    return out


def clustered_null(
    runs: int, topics: int = 10, per_topic: int = 20, spread: float = 0.15, seed: int = 4
) -> float:
    """Share of runs one candidate is decided (better or worse) when the cases are
    correlated within topics: the candidate's effect is a topic effect u ~ N(0, spread²),
    mean 0 over the population of topics, the cases in random order, 3 trials. Why
    ``stop_when`` refuses declared case clusters: the sequence takes each case as an
    independent draw."""
    rng = np.random.default_rng(seed)
    cs = BettingConfidenceSequence(0.05, n=runs)
    wrong = np.zeros(runs, dtype=bool)
    u = rng.normal(0, spread, (runs, topics))
    topic = np.repeat(np.arange(topics), per_topic)
    order = np.array([rng.permutation(topics * per_topic) for _ in range(runs)])
    p = rng.beta(2, 1, (runs, topics * per_topic))
    rows = np.arange(runs)
    for i in range(topics * per_topic):
        base = p[rows, order[:, i]]
        cand = np.clip(base + u[rows, topic[order[:, i]]], 0, 1)
        cs.update(rng.binomial(3, cand) / 3 - rng.binomial(3, base) / 3)
        low, high = cs.interval()
        wrong |= (low > 0) | (high < 0)
    return float(wrong.mean())


def widths(runs: int = 200, seed: int = 0) -> list[tuple[str, int, float, float]]:
    """Median width of the betting sequence (α = 0.05, one candidate) against the
    fixed-sample Hoeffding interval at the same case count, on the difference scale:
    differences of ±1 (the most variable) and mostly 0 (10 % of cases ±1).

    Returns (data, cases, betting width, Hoeffding width) rows."""
    rng = np.random.default_rng(seed)
    draws = {
        "±1": lambda: rng.choice([-1.0, 1.0], runs),
        "mostly 0": lambda: np.where(rng.random(runs) < 0.1, rng.choice([-1.0, 1.0], runs), 0.0),
    }
    out = []
    for name, draw in draws.items():
        cs = BettingConfidenceSequence(0.05, n=runs)
        for t in range(1, 401):
            cs.update(draw())
            if t in (50, 100, 400):
                low, high = cs.interval()
                hoeffding = 4 * np.sqrt(np.log(2 / 0.05) / (2 * t))  # width on [-1, 1]
                out.append((name, t, float(np.median(high - low)), float(hoeffding)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--live-runs", type=int, default=3)
    parser.add_argument(
        "--clustered",
        action="store_true",
        help="only the error rate with cases correlated within 10 topics (1000 runs)",
    )
    parser.add_argument(
        "--widths",
        action="store_true",
        help="only the sequence's width against the fixed-sample Hoeffding interval",
    )
    args = parser.parse_args()
    if args.widths:
        for name, t, bet, hoeffding in widths():
            print(
                f"{name:>8}, {t:3d} cases: betting {bet:.3f}, "
                f"fixed-sample Hoeffding {hoeffding:.3f}"
            )
        return
    if args.clustered:
        print(
            "10 topics × 20 cases, topic effects N(0, 0.15²), one candidate, α = 0.05: "
            f"decided in {clustered_null(1000):.1%} of 1000 runs"
        )
        return
    start = time.perf_counter()
    null = simulate(args.runs, args.cases, 0.0, seed=1)
    alt = simulate(args.runs, args.cases, 0.10, seed=2)
    mc = np.sqrt(0.05 * 0.95 / args.runs)
    print(f"{args.runs} simulated runs × {args.cases} cases × 3 trials, 2 candidates, α = 0.05")
    print(
        f"Δ = 0   : family-wise error under continuous monitoring {null['error']:.2%} "
        f"(MC s.e. ≤ {mc:.2%}); peeking with fixed-sample t intervals: {null['naive_error']:.1%}"
    )
    print(
        f"Δ = +10 pp: stopped with both candidates decided in {alt['decided']:.1%} of runs; "
        f"target calls saved vs the fixed design: {alt['saved']:.1%} on average "
        f"(stopped after {alt['mean_stop']:.0f} cases on average)"
    )
    print(f"(simulation {time.perf_counter() - start:.1f} s)")
    if args.live_runs:
        stops = live_runs(args.live_runs, args.cases)
        saved = [s["attempts_saved"] / s["attempts_planned"] for s in stops]
        print(
            f"live runs through run_experiment (python targets, {args.live_runs} seeds): "
            f"cases used {[s['cases_used'] for s in stops]}, attempts saved "
            f"{np.mean(saved):.1%} on average, decisions "
            f"{[[c['decision'] for c in s['candidates']] for s in stops]}"
        )


if __name__ == "__main__":
    main()
