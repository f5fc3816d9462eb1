"""Coverage of the frontier bootstrap's intervals and calibration of its p_frontier.

The package's frontier bootstrap (``frontier.bootstrap_cubes``, what ``analyze`` and
``frontier_uncertainty`` call: 2000 resamples, seed 0) run on simulated experiments whose
true variant parameters are known (docs/statistics.md §11).

Data-generating model (the case-level model of ``benchmarks/coverage.py``, plus latency):

* six variants share the suite's cases. A case's pass probability for the twins is
  p_i ~ Beta(μ₀κ, (1 − μ₀)κ) with μ₀ = 0.72 and ICC = 1/(1 + κ)
  (``coverage.draw_p``); every other variant's is the same case with its logit shifted so
  that its task-distribution mean is exactly its μ (``coverage.logit_shift``), so a hard
  case is hard for every variant, as in a real suite;
* each of T attempts passes independently with its case's probability;
* latency per attempt is lognormal: log L = log(median_v) + u_i + e, with a per-case
  effect u_i ~ N(0, ICC·σ²) shared by all variants (a slow case is slow for everyone) and
  e ~ N(0, (1 − ICC)·σ²), σ = 0.5; the true mean is median_v · exp(σ²/2);
* one check per attempt (its pass), so the score objective equals the pass rate; no cost
  recorded (unknown cost is neutral in the dominance rule).

Variants (μ, median latency in ms): A (0.85, 2000) and B (0.60, 1000) are the true
frontier's ends; C (0.50, 2400) is clearly dominated (by A and B); F (0.80, 2200) is
narrowly dominated (by A only); D and E are identical twins (0.72, 1500) on the true
frontier between A and B.

Parts, per cell n ∈ {10, 20, 40, 100} cases × T ∈ {3, 5} trials × ICC ∈ {0.67, 0.33, 0.09}:

* (a) coverage of the nominal 95 % percentile intervals of the pass rate and the latency
  for the variant's true task-distribution mean, with the share of misses on each side
  (below: the whole interval is under the truth); the package's recommended pass-rate
  interval (beta-binomial, ``case_level_summary``) on the same data for reference;
* (b) the mean p_frontier of each variant, next to the share of data sets in which the
  point estimate puts it on the frontier.

Clustered part (``--part clusters``): the suite is G topics of M cases each, and a topic's
cases resemble each other — each case's latent difficulty (the normal score behind its
Beta draw) and its latency effect are ``√ρ·u_topic + √(1 − ρ)·e_case`` with standard
normal u and e, a Gaussian copula that keeps every case's marginal law (so each variant's
true mean is the one above) while cases of a topic are correlated ρ on that scale. Each
data set is bootstrapped twice: by case (the topics ignored) and by topic
(``bootstrap_cubes(..., clusters=)``, what a declared ``cluster`` does), and the coverage
of both is reported per G ∈ {5, 10, 20, 40} at ρ = 0.5 and, as the control where the
topics do not matter, ρ = 0.

Usage::

    python benchmarks/coverage_frontier.py                 # R = 200, writes docs/statistics.md
    python benchmarks/coverage_frontier.py --replicates 300   # the run in the docs
    python benchmarks/coverage_frontier.py --replicates 50 --no-write
    python benchmarks/coverage_frontier.py --part clusters   # the clustered table only

Every replicate is one full bootstrap (2000 resamples: 20–30 ms on an idle core, about
twice that on a busy one), so the run is linear in R: 24 cells × R = 200 is 4 800
bootstraps, 2–3 minutes idle (R = 300 took 561 s on a 2-core machine busy with other
jobs). Seeds are fixed per cell, so a cell's numbers do
not depend on which others run.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from scipy import special
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenticlens_frames import stats_frontier as sf  # noqa: E402
from agenticlens_frames.frontier import (  # noqa: E402
    FRONTIER_OBJECTIVES,
    FrontierCubes,
    bootstrap_cubes,
)


def _load_grid() -> ModuleType:
    """benchmarks/coverage.py, by path: ``import coverage`` could find coverage.py the tool."""
    spec = importlib.util.spec_from_file_location("_coverage_grid", ROOT / "benchmarks/coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


grid = _load_grid()

NS = (10, 20, 40, 100)
TS = (3, 5)
ICCS = (0.67, 0.33, 0.09)
SEED = 20261205
LEVEL = 0.95
RESAMPLES = 2000  # frontier_uncertainty's and analyze's default
BOOT_SEED = 0  # analyze's default frontier_seed
MU0 = 0.72  # the twins' mean: the Beta law the other variants are logit shifts of
SIGMA = 0.5  # total sd of log latency
#: An interval end within this of the truth covers it (float32 case sums in the bootstrap).
TOL = 1e-6


@dataclass(frozen=True)
class Variant:
    """A simulated variant with known truth."""

    name: str
    mu: float  # task-distribution mean pass rate
    median_ms: float  # median latency per attempt
    on_frontier: bool  # true frontier membership (pass rate ↑, latency ↓)
    role: str


VARIANTS = (
    Variant("A", 0.85, 2000.0, True, "frontier end (accurate)"),
    Variant("B", 0.60, 1000.0, True, "frontier end (fast)"),
    Variant("C", 0.50, 2400.0, False, "clearly dominated"),
    Variant("F", 0.80, 2200.0, False, "narrowly dominated (by A)"),
    Variant("D", 0.72, 1500.0, True, "twin"),
    Variant("E", 0.72, 1500.0, True, "twin"),
)

Cell = tuple[int, int, float]
NAMES = list(FRONTIER_OBJECTIVES)
PASS, LATENCY = NAMES.index("pass_rate"), NAMES.index("latency")


def cells() -> list[Cell]:
    """Every (n, T, ICC) cell, in a fixed order (a cell's index seeds it)."""
    return [(n, t, icc) for icc in ICCS for n in NS for t in TS]


def true_latency_mean(v: Variant) -> float:
    """E[L] of the lognormal law: written from the model, not estimated."""
    return v.median_ms * math.exp(SIGMA**2 / 2)


def simulate(
    rng: np.random.Generator, replicates: int, n: int, trials: int, icc: float
) -> tuple[np.ndarray, np.ndarray]:
    """Pass flags and latencies, each ``(replicates, variants, trials, cases)``."""
    base = grid.draw_p(rng, MU0, icc, (replicates, n))
    p = np.stack(
        [
            grid.shifted(base, MU0, icc, grid.logit_shift(MU0, icc, v.mu - MU0), v.mu - MU0)
            for v in VARIANTS
        ],
        axis=1,
    )
    shape = (replicates, len(VARIANTS), trials, n)
    passed = (rng.random(shape) < p[:, :, None, :]).astype(np.float64)
    case_effect = rng.normal(0.0, SIGMA * math.sqrt(icc), (replicates, 1, 1, n))
    noise = rng.normal(0.0, SIGMA * math.sqrt(1 - icc), shape)
    median = np.array([v.median_ms for v in VARIANTS])[None, :, None, None]
    return passed, median * np.exp(case_effect + noise)


def cubes_of(passed: np.ndarray, latency: np.ndarray) -> FrontierCubes:
    """One data set as the cubes ``frontier_uncertainty`` builds from a run: every attempt
    present and ok, one 0/1 check per attempt, no cost recorded."""
    n_var, n_trial, n_case = passed.shape
    present = np.ones_like(passed)
    done = np.ones((n_var, n_trial), dtype=bool)
    return FrontierCubes(
        attempted=done,
        completed=done,
        present=present,
        passed=passed,
        score_num=passed,
        score_den=present,
        lat_num=latency,
        lat_den=present,
        cost_num=np.zeros_like(passed),
        cost_den=present / n_case,
        cost_unknown=present,
    )


def point_front(passed: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """Per replicate, the point-estimate frontier ``(replicates, variants)``.

    The objectives at unit case weights (reliability: share of trials with every case
    passed; pass rate = score; latency; cost unknown), through the package's dominance
    rule (``pareto_front_batch``, tested equal to ``stats.pareto_front``)."""
    reliability = passed.min(axis=3).mean(axis=2)
    rate = passed.mean(axis=(2, 3))
    values = np.stack(
        [reliability, rate, rate, latency.mean(axis=(2, 3)), np.zeros_like(rate)], axis=2
    )
    unknown = np.zeros(values.shape, dtype=bool)
    unknown[:, :, NAMES.index("cost")] = True
    maximize = [FRONTIER_OBJECTIVES[k][1] for k in NAMES]
    return sf.pareto_front_batch(values, maximize, unknown)


def misses(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """``(3, variants)``: coverage, share below (interval under the truth), share above."""
    below = np.mean(high < truth - TOL, axis=0)
    above = np.mean(low > truth + TOL, axis=0)
    return np.stack([1 - below - above, below, above])


def run_cell(cell: Cell, replicates: int, index: int, resamples: int) -> dict[str, np.ndarray]:
    """Simulate one cell and bootstrap each of its data sets.

    Returns
    -------
    dict
        ``pass``, ``latency``, ``beta_binomial``: ``(3, variants)`` coverage and misses
        below / above (:func:`misses`); ``p_frontier``: mean p_frontier per variant;
        ``point_front``: share of data sets whose point estimate has the variant on the
        frontier.
    """
    n, trials, icc = cell
    rng = np.random.default_rng([SEED, index])
    passed, latency = simulate(rng, replicates, n, trials, icc)
    n_var = len(VARIANTS)
    lows = np.empty((replicates, n_var, len(NAMES)))
    highs = np.empty_like(lows)
    p_frontier = np.empty((replicates, n_var))
    for r in range(replicates):
        result, _ = bootstrap_cubes(
            cubes_of(passed[r], latency[r]), resamples, BOOT_SEED, confidence_level=LEVEL
        )
        lows[r], highs[r], p_frontier[r] = result.ci_low, result.ci_high, result.p_frontier
    mu = np.array([v.mu for v in VARIANTS])
    lat = np.array([true_latency_mean(v) for v in VARIANTS])
    counts = passed.sum(axis=2).astype(np.int64)  # (replicates, variants, cases)
    bb = [grid.beta_binomial(counts[:, j], trials) for j in range(n_var)]
    return {
        "pass": misses(lows[:, :, PASS], highs[:, :, PASS], mu),
        "latency": misses(lows[:, :, LATENCY], highs[:, :, LATENCY], lat),
        "beta_binomial": misses(
            np.stack([lo for lo, _ in bb], 1), np.stack([hi for _, hi in bb], 1), mu
        ),
        "p_frontier": p_frontier.mean(axis=0),
        "point_front": point_front(passed, latency).mean(axis=0),
    }


# --------------------------------------------------------------------------- clusters

CLUSTER_GS = (5, 10, 20, 40)
CLUSTER_SIZE = 5  # cases per topic
CLUSTER_RHOS = (0.5, 0.0)
CLUSTER_TRIALS = 3
CLUSTER_ICC = 0.33
ClusterCell = tuple[int, float]  # (topics G, within-topic correlation ρ)


def cluster_cells() -> list[ClusterCell]:
    """Every (G, ρ) cell, in a fixed order (a cell's index seeds it)."""
    return [(g, rho) for rho in CLUSTER_RHOS for g in CLUSTER_GS]


def topic_scores(
    rng: np.random.Generator, replicates: int, topics: int, size: int, rho: float
) -> np.ndarray:
    """Standard normal scores ``(replicates, topics·size)``, correlated ρ within a topic."""
    shared = rng.standard_normal((replicates, topics, 1))
    own = rng.standard_normal((replicates, topics, size))
    return (math.sqrt(rho) * shared + math.sqrt(1 - rho) * own).reshape(replicates, -1)


def simulate_clustered(
    rng: np.random.Generator, replicates: int, cell: ClusterCell
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`simulate`'s model with topics (see the module docstring), same shapes."""
    topics, rho = cell
    kappa = 1 / CLUSTER_ICC - 1
    # The copula: a case's Beta(μ₀κ, (1 − μ₀)κ) draw is the quantile of its normal score.
    uniform = special.ndtr(topic_scores(rng, replicates, topics, CLUSTER_SIZE, rho))
    base = sps.beta.ppf(uniform, MU0 * kappa, (1 - MU0) * kappa)
    p = np.stack(
        [
            grid.shifted(
                base, MU0, CLUSTER_ICC, grid.logit_shift(MU0, CLUSTER_ICC, v.mu - MU0), v.mu - MU0
            )
            for v in VARIANTS
        ],
        axis=1,
    )
    n = topics * CLUSTER_SIZE
    shape = (replicates, len(VARIANTS), CLUSTER_TRIALS, n)
    passed = (rng.random(shape) < p[:, :, None, :]).astype(np.float64)
    case_effect = (
        SIGMA * math.sqrt(CLUSTER_ICC) * topic_scores(rng, replicates, topics, CLUSTER_SIZE, rho)
    )
    noise = rng.normal(0.0, SIGMA * math.sqrt(1 - CLUSTER_ICC), shape)
    median = np.array([v.median_ms for v in VARIANTS])[None, :, None, None]
    return passed, median * np.exp(case_effect[:, None, None, :] + noise)


def run_cluster_cell(
    cell: ClusterCell, replicates: int, index: int, resamples: int
) -> dict[str, np.ndarray]:
    """Coverage of the case and of the cluster bootstrap on the same clustered data sets.

    Returns
    -------
    dict
        ``{bootstrap}:{objective}`` for bootstrap ``cases`` / ``clusters`` and objective
        ``pass`` / ``latency``: ``(3, variants)`` as :func:`misses`.
    """
    rng = np.random.default_rng([SEED, 5000 + index])
    passed, latency = simulate_clustered(rng, replicates, cell)
    codes = np.repeat(np.arange(cell[0]), CLUSTER_SIZE)
    truth = {
        "pass": np.array([v.mu for v in VARIANTS]),
        "latency": np.array([true_latency_mean(v) for v in VARIANTS]),
    }
    out = {}
    for label, clusters in (("cases", None), ("clusters", codes)):
        lows = np.empty((replicates, len(VARIANTS), len(NAMES)))
        highs = np.empty_like(lows)
        for r in range(replicates):
            result, _ = bootstrap_cubes(
                cubes_of(passed[r], latency[r]),
                resamples,
                BOOT_SEED,
                confidence_level=LEVEL,
                clusters=clusters,
            )
            lows[r], highs[r] = result.ci_low, result.ci_high
        for name, column in (("pass", PASS), ("latency", LATENCY)):
            out[f"{label}:{name}"] = misses(lows[:, :, column], highs[:, :, column], truth[name])
    return out


def render_clusters(
    results: dict[ClusterCell, dict[str, np.ndarray]],
    replicates: int,
    resamples: int,
    seconds: float,
) -> str:
    command = f"python benchmarks/coverage_frontier.py --part clusters --replicates {replicates}"
    if resamples != RESAMPLES:
        command += f" --resamples {resamples}"
    lines = [
        f"Generated by `{command}`: R = {replicates} data sets per cell, {CLUSTER_SIZE} "
        f"cases per topic, T = {CLUSTER_TRIALS}, case ICC {CLUSTER_ICC}, each data set "
        f"bootstrapped both ways with B = {resamples} (seed {BOOT_SEED}); simulation seed "
        f"{SEED}; {seconds:.0f} s.",
        "",
        "**Coverage of the nominal 95 % intervals with topics**: % (misses below / above the "
        "truth %), averaged over the six variants; ρ is the correlation of a topic's cases.",
        "",
        "| ρ | topics G | cases | pass rate, case bootstrap | pass rate, cluster bootstrap "
        "| latency, case bootstrap | latency, cluster bootstrap |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (g, rho), r in results.items():
        lines.append(
            f"| {rho} | {g} | {g * CLUSTER_SIZE} | {_cov(r['cases:pass'])} "
            f"| {_cov(r['clusters:pass'])} | {_cov(r['cases:latency'])} "
            f"| {_cov(r['clusters:latency'])} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- report


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _cov(m: np.ndarray, columns: list[int] | None = None) -> str:
    """Coverage (below / above) in %, averaged over the given variants."""
    sel = m if columns is None else m[:, columns]
    cov, below, above = sel.mean(axis=1)
    return f"{pct(cov)} ({pct(below)} / {pct(above)})"


def _mmm(values: list[float]) -> str:
    return f"{pct(min(values))} / {pct(float(np.median(values)))} / {pct(max(values))}"


def render(
    results: dict[Cell, dict[str, np.ndarray]], replicates: int, resamples: int, seconds: float
) -> str:
    a = [j for j, v in enumerate(VARIANTS) if v.name == "A"]
    mcse = 100 * math.sqrt(0.05 * 0.95 / replicates)
    command = f"python benchmarks/coverage_frontier.py --replicates {replicates}"
    if resamples != RESAMPLES:
        command += f" --resamples {resamples}"
    lines = [
        f"Generated by `{command}`: R = {replicates} data sets per cell, each bootstrapped "
        f"with B = {resamples} resamples (seed {BOOT_SEED}, as `analyze`); simulation seed "
        f"{SEED}; {seconds:.0f} s. Monte-Carlo standard error of one variant's coverage "
        f"near 95 %: {mcse:.1f} pp.",
        "",
        "**Coverage of the nominal 95 % percentile intervals by suite size** (%, min / "
        "median / max over the cells of that n; pass rate and latency averaged over the six "
        "variants; A is the variant nearest 1, μ = 0.85):",
        "",
        "| n | pass rate | pass rate, A | beta-binomial (`case_level_summary`), same data "
        "| latency |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in NS:
        rows = [r for c, r in results.items() if c[0] == n]
        if not rows:
            continue
        lines.append(
            f"| {n} | {_mmm([r['pass'][0].mean() for r in rows])} "
            f"| {_mmm([r['pass'][0, a].mean() for r in rows])} "
            f"| {_mmm([r['beta_binomial'][0].mean() for r in rows])} "
            f"| {_mmm([r['latency'][0].mean() for r in rows])} |"
        )
    lines += [
        "",
        "**Every cell**: coverage % (misses below / above the truth %), averaged over the six "
        "variants unless marked A.",
        "",
        "| ICC | n | T | pass rate | pass rate, A | beta-binomial | latency |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (n, t, icc), r in results.items():
        lines.append(
            f"| {icc} | {n} | {t} | {_cov(r['pass'])} | {_cov(r['pass'], a)} "
            f"| {_cov(r['beta_binomial'])} | {_cov(r['latency'])} |"
        )
    header = " | ".join(f"{v.name}: {v.role}" for v in VARIANTS)
    truth = " | ".join("on" if v.on_frontier else "off" for v in VARIANTS)
    lines += [
        "",
        "**p_frontier by true membership**: mean p_frontier over the data sets (in brackets "
        "the share of data sets whose point estimate puts the variant on the frontier), %.",
        "",
        f"| ICC | n | T | {header} |",
        "|---:|---:|---:|" + "---:|" * len(VARIANTS),
        f"| | | truth | {truth} |",
    ]
    for (n, t, icc), r in results.items():
        cells_ = " | ".join(
            f"{pct(p)} [{pct(q)}]" for p, q in zip(r["p_frontier"], r["point_front"], strict=True)
        )
        lines.append(f"| {icc} | {n} | {t} | {cells_} |")
    return "\n".join(lines) + "\n"


START, END = "<!-- coverage-frontier:start -->", "<!-- coverage-frontier:end -->"
CLUSTER_START = "<!-- coverage-frontier-clusters:start -->"
CLUSTER_END = "<!-- coverage-frontier-clusters:end -->"


def _run_cells(
    all_cells: list[Any],
    pattern: str,
    run_one: Callable[[Any, int], dict[str, np.ndarray]],
    describe: Callable[[dict[str, np.ndarray]], str],
) -> dict[Any, dict[str, np.ndarray]]:
    """Run the cells matching ``pattern`` (each seeded by its index in ``all_cells``),
    printing each as it is done."""
    results = {}
    for index, cell in enumerate(all_cells):
        if pattern and not re.search(pattern, ",".join(map(str, cell))):
            continue
        results[cell] = run_one(cell, index)
        print(cell, describe(results[cell]), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200, help="data sets per cell")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples")
    parser.add_argument("--no-write", action="store_true", help="print, do not edit docs")
    parser.add_argument("--cells", default="", help="only cells matching n,T,icc or G,rho (regex)")
    parser.add_argument(
        "--part", choices=("all", "cases", "clusters"), default="all", help="which tables to make"
    )
    args = parser.parse_args(argv)
    docs = ROOT / "docs" / "statistics.md"
    if args.part in ("all", "cases"):
        started = time.perf_counter()
        results = _run_cells(
            cells(),
            args.cells,
            lambda cell, index: run_cell(cell, args.replicates, index, args.resamples),
            lambda r: (
                f"pass={_cov(r['pass'])} A={_cov(r['pass'], [0])} bb={_cov(r['beta_binomial'])} "
                f"latency={_cov(r['latency'])} "
                f"p_frontier={np.round(r['p_frontier'], 3).tolist()}"
            ),
        )
        table = render(results, args.replicates, args.resamples, time.perf_counter() - started)
        print(table)
        if not args.no_write:
            grid.write_docs(table, docs, START, END)
    if args.part in ("all", "clusters"):
        started = time.perf_counter()
        clustered = _run_cells(
            cluster_cells(),
            args.cells,
            lambda cell, index: run_cluster_cell(cell, args.replicates, index, args.resamples),
            lambda r: " ".join(f"{k}={_cov(v)}" for k, v in r.items()),
        )
        table = render_clusters(
            clustered, args.replicates, args.resamples, time.perf_counter() - started
        )
        print(table)
        if not args.no_write:
            grid.write_docs(table, docs, CLUSTER_START, CLUSTER_END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
