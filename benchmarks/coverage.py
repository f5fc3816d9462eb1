"""Coverage, gate and error-rate simulation of the case-level statistics on the full grid.

Data-generating model (docs/statistics.md §10): each case has a pass probability
p_i ~ Beta(μκ, (1 − μ)κ), ICC = 1/(1 + κ), and each of T attempts passes independently
with p_i. The grid is n ∈ {20, 50, 200} cases × T ∈ {3, 5, 10} attempts × μ ∈ {0.5, 0.8,
0.95} × ICC ∈ {0.67, 0.33, 0.09, 0.02, 0}: 135 cells. Every statistic depends on the
data only through the per-case pass counts, so those are drawn directly, R replicates per
cell at once, and every method is evaluated on all replicates in one vectorised call.

Parts:

* coverage of a nominal 95 % interval for the task-distribution mean μ, per method, with
  the share of misses on each side;
* the non-inferiority gate at its boundary: the candidate is worse by exactly δ = 0.05 in
  the task-distribution mean (a shift of the case's logit, solved numerically; for ICC 0
  p = μ − δ), and the share of replicates the gate passes (must be ≤ 5 %);
* the paired test's type-I error (shared difficulty) and the family-wise error of three
  identical candidates with Holm;
* clustering: cases grouped in topics whose mean pass rate varies; coverage of the
  recommended interval with and without ``cluster=``.

Usage::

    python benchmarks/coverage.py                    # R = 20000, writes docs/statistics.md
    python benchmarks/coverage.py --replicates 2000 --no-write

Seeds are fixed per cell, so a cell's numbers do not depend on which others run.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
from scipy import optimize, special
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenticlens_frames import stats_paired  # noqa: E402

NS = (20, 50, 200)
TS = (3, 5, 10)
MUS = (0.5, 0.8, 0.95)
ICCS = (0.67, 0.33, 0.09, 0.02, 0.0)
MARGIN = 0.05
SEED = 20261203
LEVEL = 0.95
Z = float(sps.norm.ppf(0.975))

Cell = tuple[int, int, float, float]


def cells() -> list[Cell]:
    return [(n, t, mu, icc) for mu in MUS for icc in ICCS for n in NS for t in TS]


def draw_p(rng: np.random.Generator, mu: float, icc: float, shape: tuple[int, ...]) -> np.ndarray:
    if icc == 0:
        return np.full(shape, mu)
    kappa = 1 / icc - 1
    return rng.beta(mu * kappa, (1 - mu) * kappa, size=shape)


# --------------------------------------------------------------------------- intervals


def pooled_wilson(counts: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """The package's interval: Wilson on (S, nT) as if attempts were independent."""
    n_total = counts.shape[1] * trials
    s = counts.sum(axis=1)
    return _wilson(s / n_total, float(n_total), Z, s == 0, s == n_total)


def _wilson(p, size, q, all_fail, all_pass):
    d = 1 + q * q / size
    centre = (p + q * q / (2 * size)) / d
    half = q * np.sqrt(p * (1 - p) / size + q * q / (4 * size * size)) / d
    low = np.where(all_fail, 0.0, np.maximum(0.0, centre - half))
    high = np.where(all_pass, 1.0, np.minimum(1.0, centre + half))
    return low, high


def t_case_means(counts: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """(a): mean of case means ± t_{n−1}·sd/√n (= CR1 by case with t), clipped."""
    n = counts.shape[1]
    m = counts / trials
    mean, sd = m.mean(axis=1), m.std(axis=1, ddof=1)
    half = special.stdtrit(n - 1, 0.975) * sd / math.sqrt(n)
    return np.maximum(0.0, mean - half), np.minimum(1.0, mean + half)


def anova_icc(counts: np.ndarray, trials: int) -> np.ndarray:
    """One-way ANOVA ICC per replicate; NaN when every outcome is identical."""
    n = counts.shape[1]
    msb = trials * (counts / trials).var(axis=1, ddof=1)
    msw = (counts * (trials - counts) / trials).sum(axis=1) / (n * (trials - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        icc = (msb - msw) / (msb + (trials - 1) * msw)
    return np.clip(icc, 0.0, 1.0)


def wilson_neff_t(counts: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """(c′): Wilson on n_eff = nT/DEFF with a t_{n−1} quantile (ICC not estimable → 1)."""
    n = counts.shape[1]
    n_total = n * trials
    icc = np.nan_to_num(anova_icc(counts, trials), nan=1.0)
    n_eff = n_total / (1 + (trials - 1) * icc)
    s = counts.sum(axis=1)
    q = float(special.stdtrit(n - 1, 0.975))
    return _wilson(s / n_total, n_eff, q, s == 0, s == n_total)


def plus_two_t(counts: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """(g): t on the case means plus one all-pass and one all-fail pseudo-case."""
    n = counts.shape[1]
    m = np.concatenate([counts / trials, np.ones((len(counts), 1)), np.zeros((len(counts), 1))], 1)
    mean, sd = m.mean(axis=1), m.std(axis=1, ddof=1)
    half = special.stdtrit(n + 1, 0.975) * sd / math.sqrt(n + 2)
    est = counts.mean(axis=1) / trials
    return np.maximum(0.0, np.minimum(est, mean - half)), np.minimum(
        1.0, np.maximum(est, mean + half)
    )


def beta_binomial(counts: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """The package's recommended interval, through its vectorised kernel."""
    hist = np.stack([(counts == c).sum(axis=1) for c in range(trials + 1)], axis=1)
    unique, inverse = np.unique(hist, axis=0, return_inverse=True)
    passes = np.arange(trials + 1)
    low, high, _ = stats_paired.beta_binomial_bounds(
        unique, passes, np.full(trials + 1, trials), LEVEL
    )
    low, high = low[inverse.ravel()], high[inverse.ravel()]
    # The same finishing rules as beta_binomial_interval: contain S/N, Wilson's edge rules.
    s = counts.sum(axis=1)
    total = counts.shape[1] * trials
    est = s / total
    low = np.where(s == 0, 0.0, np.minimum(low, est))
    high = np.where(s == total, 1.0, np.maximum(high, est))
    return low, high


INTERVALS: dict[str, tuple[str, Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]]] = {
    "beta_binomial": ("beta-binomial posterior (recommended)", beta_binomial),
    "wilson_effective_n": ("Wilson on n_eff, t quantile (c′)", wilson_neff_t),
    "t_case_means": ("t on case means (a) = CR1 by case", t_case_means),
    "plus_two_t": ("t with two pseudo-cases (g)", plus_two_t),
    "pooled_wilson": ("pooled Wilson (AgenticLens)", pooled_wilson),
}


# --------------------------------------------------------------------------- gate


@cache
def logit_shift(mu: float, icc: float, delta: float) -> float:
    """Shift s of logit(p_i) with E[expit(logit(p) + s)] = μ + delta under the Beta law."""
    if icc == 0:
        return math.nan
    kappa = 1 / icc - 1
    u = (np.arange(200_000) + 0.5) / 200_000
    p = sps.beta.ppf(u, mu * kappa, (1 - mu) * kappa)
    with np.errstate(divide="ignore"):
        lp = special.logit(p)

    def gap(s: float) -> float:
        return float(np.mean(special.expit(lp + s))) - (mu + delta)

    return float(optimize.brentq(gap, -40.0, 40.0, xtol=1e-10))


def shifted(p: np.ndarray, mu: float, icc: float, shift: float, delta: float) -> np.ndarray:
    if icc == 0:
        return np.full(p.shape, mu + delta)
    with np.errstate(divide="ignore"):
        return special.expit(special.logit(p) + shift)


def gate_t(d: np.ndarray) -> np.ndarray:
    """The old gate's bound: d̄ − t_{n−1, 0.95}·s/√n."""
    n = d.shape[1]
    return d.mean(axis=1) - special.stdtrit(n - 1, 0.95) * d.std(axis=1, ddof=1) / math.sqrt(n)


def gate_pseudo(d: np.ndarray) -> np.ndarray:
    """The package's gate bound (stats_paired.noninferiority_bound), vectorised."""
    return stats_paired.noninferiority_bound(d, 0.05)


GATES = {
    "noninferiority_bound": ("pseudo-case bound (new)", gate_pseudo),
    "t": ("one-sided t (old)", gate_t),
}


# --------------------------------------------------------------------------- tests


def paired_t_p(d: np.ndarray) -> np.ndarray:
    """Two-sided paired t p-values over the last axis; 1 where every difference is equal."""
    n = d.shape[-1]
    sd = d.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d.mean(axis=-1) / (sd / math.sqrt(n))
    p = 2 * sps.t.sf(np.abs(t), n - 1)
    return np.where(sd > 1e-12, p, np.where(np.abs(d.mean(axis=-1)) > 0, 2.0 ** (1 - n), 1.0))


# --------------------------------------------------------------------------- runner


def run_cell(cell: Cell, replicates: int, index: int) -> dict[str, object]:
    n, trials, mu, icc = cell
    rng = np.random.default_rng([SEED, index])
    p = draw_p(rng, mu, icc, (replicates, n))
    counts = rng.binomial(trials, p)
    out: dict[str, object] = {}
    for key, (_, fn) in INTERVALS.items():
        low, high = fn(counts, trials)
        below = float(np.mean(high < mu - 1e-9))  # the interval lies below μ
        above = float(np.mean(low > mu + 1e-9))
        out[f"cov:{key}"] = (1 - below - above, below, above)
    # gate at the boundary: candidate worse by exactly MARGIN
    shift = logit_shift(mu, icc, -MARGIN)
    base = counts
    cand = rng.binomial(trials, shifted(p, mu, icc, shift, -MARGIN))
    d = (cand - base) / trials
    for key, (_, fn) in GATES.items():
        out[f"gate:{key}"] = float(np.mean(fn(d) > -MARGIN))
    out["gate:zero_variance_share"] = float(np.mean(np.all(d == 0, axis=1)))
    # type-I (one candidate, shared difficulty) and FWER of three with Holm
    cands = rng.binomial(trials, np.broadcast_to(p[:, None, :], (replicates, 3, n)))
    pv = paired_t_p((cands - base[:, None, :]) / trials)
    out["type1"] = float(np.mean(pv[:, 0] <= 0.05))
    holm = np.sort(pv, axis=1) * np.array([3, 2, 1])
    out["fwer_holm"] = float(np.mean(holm[:, 0] <= 0.05))
    out["fwer_raw"] = float(np.mean((pv <= 0.05).any(axis=1)))
    return out


def run_clusters(replicates: int) -> list[tuple[str, float, float, float]]:
    """Topics: a topic's mean ~ Beta around μ (topic ICC 0.09), cases Beta around it."""
    rows = []
    for index, (n, topics, mu) in enumerate(
        [(50, 5, 0.8), (200, 5, 0.8), (200, 10, 0.8), (200, 5, 0.5), (200, 20, 0.5)]
    ):
        rng = np.random.default_rng([SEED, 1000 + index])
        trials, topic_kappa, case_kappa = 5, 10.0, 2.0
        topic_mu = rng.beta(mu * topic_kappa, (1 - mu) * topic_kappa, size=(replicates, topics))
        topic_of = np.arange(n) % topics
        tm = topic_mu[:, topic_of]
        p = rng.beta(tm * case_kappa, (1 - tm) * case_kappa)
        counts = rng.binomial(trials, p)
        bb_low, bb_high = beta_binomial(counts, trials)
        bb = float(np.mean((bb_low <= mu) & (mu <= bb_high)))
        # CR1 by topic on the case values (what case_level_summary recommends with cluster=)
        values = counts / trials
        mean = values.mean(axis=1)
        sums = np.stack(
            [(values[:, topic_of == g] - mean[:, None]).sum(axis=1) for g in range(topics)], 1
        )
        se = np.sqrt(topics / (topics - 1) * (sums**2).sum(axis=1)) / n
        q = float(special.stdtrit(topics - 1, 0.975))
        cr1 = float(np.mean(np.abs(mean - mu) <= q * se))
        t_low, t_high = t_case_means(counts, trials)
        t_cov = float(np.mean((t_low <= mu) & (mu <= t_high)))
        rows.append((f"n={n}, {topics} topics, μ={mu}", bb, t_cov, cr1))
    return rows


# --------------------------------------------------------------------------- report


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def render(
    results: dict[Cell, dict[str, object]], clusters, replicates: int, seconds: float
) -> str:
    lines = [
        f"Generated by `python benchmarks/coverage.py` with R = {replicates} replicates per "
        f"cell (seed {SEED}; {seconds:.0f} s). Monte-Carlo standard error "
        f"{100 * math.sqrt(0.05 * 0.95 / replicates):.2f} pp at 95 % or 5 %. Corner = μ = "
        "0.95 with n ≤ 50.",
        "",
        "**Coverage of a nominal 95 % interval for μ** (min / median / max over cells, %):",
        "",
        "| method | all 135 cells | outside the corner | corner | cells in [93, 97] outside "
        "the corner | misses below / above μ (mean over cells) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    corner = {c for c in results if c[2] == 0.95 and c[0] <= 50}
    for key, (label, _) in INTERVALS.items():
        cov = {c: r[f"cov:{key}"] for c, r in results.items()}
        allv = [v[0] for v in cov.values()]
        out = [cov[c][0] for c in cov if c not in corner]
        cor = [cov[c][0] for c in cov if c in corner] or [math.nan]
        inside = sum(0.93 <= v <= 0.97 for v in out)
        below = np.mean([v[1] for v in cov.values()])
        above = np.mean([v[2] for v in cov.values()])
        lines.append(
            f"| {label} | {_mmm(allv)} | {_mmm(out)} | {_mmm(cor)} | {inside}/{len(out)} | "
            f"{pct(below)} / {pct(above)} |"
        )
    lines += [
        "",
        "**Non-inferiority gate at its boundary** (true difference −5 pp = −δ; share of "
        "replicates that pass, %, must be ≤ 5):",
        "",
        "| bound | max over cells | median | cells above 5 % |",
        "|---|---:|---:|---:|",
    ]
    for key, (label, _) in GATES.items():
        v = [r[f"gate:{key}"] for r in results.values()]
        lines.append(
            f"| {label} | {pct(max(v))} | {pct(float(np.median(v)))} | {sum(x > 0.05 for x in v)} |"
        )
    t1 = [r["type1"] for r in results.values()]
    fh = [r["fwer_holm"] for r in results.values()]
    fr = [r["fwer_raw"] for r in results.values()]
    lines += [
        "",
        "**Paired t, shared-difficulty null** (%): type-I error "
        f"{_mmm(t1)} (min / median / max); three identical candidates: family-wise error "
        f"{_mmm(fr)} uncorrected, {_mmm(fh)} with Holm.",
        "",
        "**Clustered cases** (T = 5; topic ICC 0.09, case ICC 0.33 within topic): coverage %",
        "",
        "| design | beta-binomial, cluster ignored | t on case means, cluster ignored | "
        "CR1 by topic (recommended with `cluster=`) |",
        "|---|---:|---:|---:|",
    ]
    for label, bb, tc, cr in clusters:
        lines.append(f"| {label} | {pct(bb)} | {pct(tc)} | {pct(cr)} |")
    lines += [
        "",
        "**Every cell.** Coverage % of the recommended interval / Wilson on n_eff (c′), "
        "then the gate's boundary pass rate % new / old, then the paired t type-I %.",
        "",
        "| μ | ICC | n | T=3 | T=5 | T=10 |",
        "|---|---|---|---|---|---|",
    ]
    for mu in MUS:
        for icc in ICCS:
            for n in NS:
                parts = []
                for t in TS:
                    r = results.get((n, t, mu, icc))
                    if r is None:
                        parts.append("")
                        continue
                    parts.append(
                        f"{pct(r['cov:beta_binomial'][0])} / {pct(r['cov:wilson_effective_n'][0])}"
                        f" · {pct(r['gate:noninferiority_bound'])} / {pct(r['gate:t'])}"
                        f" · {pct(r['type1'])}"
                    )
                lines.append(f"| {mu} | {icc} | {n} | " + " | ".join(parts) + " |")
    worst = sorted(results, key=lambda c: results[c]["cov:beta_binomial"][0])[:5]
    lines += [
        "",
        "Worst cells for the recommended interval: "
        + "; ".join(
            f"n={c[0]}, T={c[1]}, μ={c[2]}, ICC {c[3]}: {pct(results[c]['cov:beta_binomial'][0])} %"
            for c in worst
        )
        + ".",
    ]
    return "\n".join(lines) + "\n"


def _mmm(values: list[float]) -> str:
    v = [x for x in values if not math.isnan(x)]
    if not v:
        return "–"
    return f"{pct(min(v))} / {pct(float(np.median(v)))} / {pct(max(v))}"


START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"


def write_docs(table: str, path: Path, start: str = START, end: str = END) -> None:
    """Replace the block between ``start`` and ``end`` in ``path`` (append it if absent)."""
    text = path.read_text(encoding="utf-8")
    block = f"{start}\n{table}{end}"
    if start in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text += f"\n{block}\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20_000)
    parser.add_argument("--no-write", action="store_true", help="print, do not edit docs")
    parser.add_argument("--cells", default="", help="only cells matching n,T,mu,icc (regex)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = {}
    for index, cell in enumerate(cells()):
        if args.cells and not re.search(args.cells, ",".join(map(str, cell))):
            continue
        results[cell] = run_cell(cell, args.replicates, index)
        r = results[cell]
        print(
            cell,
            " ".join(
                f"{k}={100 * (v[0] if isinstance(v, tuple) else v):.1f}" for k, v in r.items()
            ),
            flush=True,
        )
    clusters = run_clusters(args.replicates)
    table = render(results, clusters, args.replicates, time.perf_counter() - started)
    print(table)
    if not args.no_write:
        write_docs(table, ROOT / "docs" / "statistics.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
