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
targets (``--live-runs``, default 3): attempts saved (never called) and those started
before the stop took effect (they ran: not saved).

Run: ``python benchmarks/bench_stopping.py [--runs R] [--cases N]``; ``--clustered``
gives only the error rate and power with cases correlated within topics, of the
case-level sequence (wrong there) and of the cluster-level one ``stop_when`` runs with
declared clusters, and the family-wise error of ``StopMonitor`` itself fed records with
declared clusters (``--monitor-runs``); ``--widths`` only the sequence's width against
the fixed-sample Hoeffding interval; ``--final`` only the share of watched runs that end
with a false better or worse by either route (the sequence's decision, or in a run never
stopped the fixed-sample verdicts at the end, as they led before), against the rule's
statement alone and an α split, and their power (:func:`final_rates`,
docs/statistics.md §13); ``--gate`` only the non-inferiority gate in watched runs: how
often it passes a candidate truly worse by the margin (and one truly equal) with the
fixed-sample bound read after the stop, with the rule's two-sided confidence sequence's
lower end and with the gate's own one-sided sequence's (its bound now), and
a latency gate read after the same stops (:func:`gate_rates`).
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


def _unit_means(diffs: np.ndarray, size: np.ndarray | None) -> np.ndarray:
    """runs × candidates × units: each unit's mean difference (the cases themselves
    without clusters; with ``size``, runs × clusters of consecutive cases, each cluster's
    mean, as :class:`~agenticlens_frames.runner.stopping.StopMonitor` feeds it)."""
    if size is None:
        return diffs
    ends = np.cumsum(size, axis=1)
    starts = ends - size
    csum = np.concatenate([np.zeros((*diffs.shape[:2], 1)), np.cumsum(diffs, axis=2)], axis=2)
    runs, k = diffs.shape[:2]
    r = np.arange(runs)[:, None, None]
    j = np.arange(k)[None, :, None]
    total = csum[r, j, ends[:, None, :]] - csum[r, j, starts[:, None, :]]
    return total / size[:, None, :]


def final_claims(
    diffs: np.ndarray,
    alpha: float = 0.05,
    size: np.ndarray | None = None,
    split: float = 1.0,
) -> dict[str, np.ndarray]:
    """Which candidates a watched run claims better or worse, by either route.

    ``diffs`` (runs × candidates × cases, the cases in their planned order) are watched by
    the sequence ``stop_when`` runs (Bonferroni across candidates at ``split`` · α, case by
    case or, with ``size`` (runs × clusters, consecutive cases), cluster by cluster); a run
    stops once every candidate is decided. A run that never stopped is then analysed as the
    headline verdicts analyse it: the project's paired t (CR1 by cluster with clusters,
    :func:`~agenticlens_frames.stats_paired.paired_difference`) on every case, Holm over the
    candidates (:func:`~agenticlens_frames.stats_paired.adjust_p_values`), significant at
    (1 − ``split``) · α, or at α when ``split`` is 1 (the fixed-sample verdicts as they led
    before a watched run led with the rule's statement).

    Returns runs × candidates arrays: ``seq`` (the sequence's decision, +1 better, −1
    worse, 0 none), ``fixed`` (the fixed-sample verdict of a run that never stopped, same
    coding; 0 after a stop) and ``stopped`` (runs).
    """
    from agenticlens_frames.stats_paired import adjust_p_values, paired_difference

    runs, k, _ = diffs.shape
    units = _unit_means(diffs, size)
    cs = BettingConfidenceSequence(candidate_alpha(split * alpha, k, "bonferroni"), n=runs * k)
    seq = np.zeros((runs, k), dtype=int)
    for g in range(units.shape[2]):
        cs.update(units[:, :, g].reshape(-1))
        low, high = (x.reshape(runs, k) for x in cs.interval())
        seq = np.where(seq != 0, seq, np.where(low > 0, 1, np.where(high < 0, -1, 0)))
    stopped = (seq != 0).all(axis=1)
    fixed = np.zeros((runs, k), dtype=int)
    level = alpha if split == 1.0 else (1 - split) * alpha
    for r in np.flatnonzero(~stopped):
        codes = None if size is None else np.repeat(np.arange(size.shape[1]), size[r])
        results = [paired_difference(diffs[r, j], method="t", clusters=codes) for j in range(k)]
        adjusted = adjust_p_values([x.p_value for x in results], "holm")
        for j, (x, p) in enumerate(zip(results, adjusted, strict=True)):
            if p <= level:
                fixed[r, j] = 1 if x.estimate > 0 else -1
    return {"seq": seq, "fixed": fixed, "stopped": stopped}


def independent_diffs(
    runs: int, cases: int, candidates: int, delta: float, seed: int, trials: int = 3
) -> np.ndarray:
    """runs × candidates × cases differences of :func:`simulate`'s design; a negative
    ``delta`` breaks the same share −Δ / (2/3) of every case's passes instead,
    p_i (1 + Δ / (2/3)), so the candidate is truly worse by exactly −Δ."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 1, size=(runs, cases))
    base = rng.binomial(trials, p) / trials
    if delta >= 0:
        share = delta / (1 - 2 / 3)
        cand_p = p + share * (1 - p)
    else:
        cand_p = p * (1 + delta / (2 / 3))
    cands = [rng.binomial(trials, cand_p) / trials for _ in range(candidates)]
    return np.stack([c - base for c in cands], axis=1)


def clustered_diffs(
    runs: int,
    topics: int,
    sizes: tuple[int, int],
    effect: float,
    spread: float,
    seed: int,
    trials: int = 3,
) -> tuple[np.ndarray, np.ndarray]:
    """One candidate, :func:`clustered`'s design: (runs × 1 × cases differences, padded
    with nothing: every run gets the same case count, runs × topics sizes).

    To keep one array, each run's topic sizes are drawn so they add up to the same total:
    the sizes are drawn as in :func:`clustered` for the first run and permuted for the
    others (the topics stay exchangeable, the order random)."""
    rng = np.random.default_rng(seed)
    first = rng.integers(sizes[0], sizes[1] + 1, topics)
    size = np.stack([rng.permutation(first) for _ in range(runs)])
    n = int(first.sum())
    u = rng.normal(effect, spread, (runs, topics))
    topic_of = np.stack([np.repeat(np.arange(topics), s) for s in size])
    shift = np.take_along_axis(u, topic_of, axis=1)
    p = rng.beta(2, 1, (runs, n))
    cand = rng.binomial(trials, np.clip(p + shift / 2, 0, 1)) / trials
    base = rng.binomial(trials, np.clip(p - shift / 2, 0, 1)) / trials
    return (cand - base)[:, None, :], size


def final_rates(
    diffs: np.ndarray, size: np.ndarray | None = None, alpha: float = 0.05
) -> dict[str, float]:
    """False-claim (any candidate claimed better or worse: read under no true difference)
    and power (the share of candidates claimed better: read under a true gain) of three
    ways to state a watched run's result:

    * ``both``: as before — the sequence's decisions, and in a run that never stopped the
      fixed-sample verdicts at α as well (they led there);
    * ``sequence``: the sequence's final state alone (what a watched run leads with now);
    * ``split``: the sequence at α/2, and in a run that never stopped the fixed-sample
      verdicts at α/2 (an α split declared up front; not offered).
    """
    full = final_claims(diffs, alpha, size)
    half = final_claims(diffs, alpha, size, split=0.5)
    out: dict[str, float] = {"stopped": float(full["stopped"].mean())}
    for name, seq, fixed in (
        ("both", full["seq"], full["fixed"]),
        ("sequence", full["seq"], np.zeros_like(full["seq"])),
        ("split", half["seq"], half["fixed"]),
    ):
        claim = np.where(seq != 0, seq, fixed)
        out[f"{name}_false"] = float((claim != 0).any(axis=1).mean())
        out[f"{name}_better"] = float((claim == 1).mean())
    out["sequence_only_false"] = float((full["seq"] != 0).any(axis=1).mean())
    out["fixed_false"] = float((full["fixed"] != 0).any(axis=1).mean())
    return out


def gate_rates(
    diffs: np.ndarray,
    margin: float,
    alpha: float = 0.05,
    rule_margin: float | None = None,
    latency_slope: float | None = None,
    seed: int = 0,
    trials: int = 3,
    gate_alpha: float | None = None,
) -> dict[str, float]:
    """How often the non-inferiority gate at ``margin`` passes one candidate in watched runs.

    ``diffs`` (runs × 1 × cases, planned order) are watched by the sequence ``stop_when``
    runs at ``alpha`` (one candidate: no split), deciding ``within ±δ`` too with
    ``rule_margin``; a run stops once its candidate is decided and is gated on the cases
    used (every case when it never stopped), as the report's tables are:

    * ``fixed``: the gate as it read such a run before: the fixed-sample pseudo-case
      lower bound (:func:`~agenticlens_frames.stats_paired.noninferiority_bound_from_summary`,
      one-sided α) above −δ;
    * ``sequence``: the rule's two-sided sequence's lower end at the stop (or the end)
      above −δ (what the gate read from the merge of the watched-run gate until the gate
      got its own bound; a report saved without ``gate_lower`` still reads it);
    * ``one_sided``: the gate's own bound (now): the lower end of a one-sided confidence
      sequence at ``gate_alpha`` (default ``alpha``; no split across candidates) over the
      same differences in the same order, read at the rule's stop, above −δ.

    ``alpha`` is the rule's per-candidate α (the two-sided sequence's level): pass α/m to
    see a candidate of m under Bonferroni (its own stop only; the run's stop waits for
    every candidate, which only adds cases).

    With ``latency_slope`` β also a latency gate (lower is better, margin 0.1 SD of an
    attempt's latency) on the same stopped runs: an attempt's latency is N(0, 1) plus β
    when it failed, so a case's latency difference is ``shift − β d + noise`` (noise
    N(0, 2/trials)), ``shift`` set so the candidate is slower by exactly the margin. Its
    fixed-sample one-sided t upper bound is read at the stop (``latency``): β = 0 is
    latency independent of pass rate.

    Returns shares of runs: ``fixed``, ``sequence``, ``one_sided``, ``stopped`` (and
    ``latency``).
    """
    from agenticlens_frames.stats_paired import noninferiority_bound_from_summary
    from agenticlens_frames.stats_sequential import decide

    d = diffs[:, 0, :]
    runs, cases = d.shape
    cs = BettingConfidenceSequence(alpha, n=runs)
    gate_cs = BettingConfidenceSequence(
        alpha if gate_alpha is None else gate_alpha, n=runs, one_sided=True
    )  # (the gate's α; the fixed-sample bound below uses it too)
    used = np.full(runs, cases)
    done = np.zeros(runs, dtype=bool)
    for i in range(cases):
        # A stopped run's sequences take no more cases (NaN: skipped), as the runner's.
        x = np.where(done, np.nan, d[:, i])
        cs.update(x)
        gate_cs.update(x)
        low, high = cs.interval()
        decided = np.array(
            [decide(lo, hi, rule_margin) is not None for lo, hi in zip(low, high, strict=True)]
        )
        now = ~done & decided
        used[now] = i + 1
        done |= now
    lower, gate_lower = low, gate_cs.interval()[0]
    rows = np.arange(runs)

    def at_stop(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and SD (n − 1) of each run's first ``used`` values of x."""
        s1 = np.cumsum(x, axis=1)[rows, used - 1]
        s2 = np.cumsum(x**2, axis=1)[rows, used - 1]
        mean = s1 / used
        var = np.maximum(s2 - used * mean**2, 0) / np.maximum(used - 1, 1)
        return mean, np.sqrt(var)

    mean, sd = at_stop(d)
    level = alpha if gate_alpha is None else gate_alpha  # the gate's α
    fixed = noninferiority_bound_from_summary(used, mean, sd, level) > -margin
    out = {
        "fixed": float(fixed.mean()),
        "sequence": float((lower > -margin).mean()),
        "one_sided": float((gate_lower > -margin).mean()),
        "stopped": float(done.mean()),
    }
    if latency_slope is not None:
        rng = np.random.default_rng(seed)
        lat_margin = 0.1
        shift = lat_margin + latency_slope * float(d.mean())  # true difference: the margin
        lat = shift - latency_slope * d + rng.normal(0, np.sqrt(2 / trials), d.shape)
        lat_mean, lat_sd = at_stop(lat)
        upper = lat_mean + st.t.ppf(1 - alpha, used - 1) * lat_sd / np.sqrt(used)
        out["latency"] = float((upper < lat_margin).mean())
    return out


def gate_report(runs: int) -> None:
    """Print :func:`gate_rates`: a candidate truly worse by exactly δ = 0.05 (false pass)
    and a truly equal one (power), 100 and 400 cases, the rule without a margin and with
    ``--stop-margin`` 2δ, and one of two candidates (the rule at α/2) without a margin;
    the fixed-sample bound, the rule's two-sided sequence and the gate's one-sided one;
    then the latency gate read after the same stops."""

    def rate(x: float, n: int) -> str:
        return f"{x:.2%} ± {np.sqrt(max(x * (1 - x), 1e-12) / n):.2%}"

    delta = 0.05
    print(
        f"Non-inferiority gate δ = {delta} on pass rate in watched runs (3 trials, pass "
        "rates ~0.67, gate at α = 0.05, the rule's two-sided sequence at α/m for one of m "
        "candidates; rate ± simulation s.e.)"
    )
    # (candidates m, rule margin): the rule's two-sided sequence at α/m (Bonferroni), the
    # gate's one-sided one at α whatever m (an intersection-union test needs no split).
    designs = [(1, None), (1, 2 * delta), (2, None)]
    for cases in (100, 400):
        n = runs if cases == 100 else max(runs // 2, 1)
        for m, rule_margin in designs:
            rule = "no --stop-margin" if rule_margin is None else f"--stop-margin {rule_margin:g}"
            if m > 1:
                rule += f", one of {m} candidates (rule at α/{m})"
            r = {
                name: gate_rates(
                    independent_diffs(n, cases, 1, truth, seed=seed + cases),
                    delta,
                    0.05 / m,
                    rule_margin,
                    gate_alpha=0.05,
                )
                for name, truth, seed in (("worse", -delta, 40), ("equal", 0.0, 41))
            }
            print(f"{cases} cases, {rule}, {n} runs:")
            for name, what in (("worse", "truly worse by δ (false pass)"),
                               ("equal", "truly equal (power)")):  # fmt: skip
                x = r[name]
                print(
                    f"  {what}: fixed-sample {rate(x['fixed'], n)}, two-sided sequence at "
                    f"α/{m} (before) {rate(x['sequence'], n)}, one-sided sequence at α (now) "
                    f"{rate(x['one_sided'], n)}; stopped {x['stopped']:.1%}"
                )
    n = runs
    print(
        f"Latency gate (margin 0.1 SD, candidate slower by exactly it) after the rule's stops "
        f"(candidate +10 pp on pass rate, 100 cases, no --stop-margin, {n} runs):"
    )
    for slope in (0.0, 1.0, -1.0):
        r = gate_rates(
            independent_diffs(n, 100, 1, 0.10, seed=50),
            delta,
            0.05,
            None,
            latency_slope=slope,
            seed=51,
        )
        print(
            f"  a failed attempt {slope:+.0f} SD slower: fixed-sample latency gate passed "
            f"{rate(r['latency'], n)} (stopped {r['stopped']:.1%})"
        )


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


def clustered(
    runs: int,
    topics: int,
    sizes: tuple[int, int],
    effect: float = 0.0,
    spread: float = 0.15,
    seed: int = 4,
    trials: int = 3,
) -> dict:
    """One candidate against the baseline with cases correlated within topics, watched by
    the case-level sequence (every case a unit: what ``stop_when`` did before it honoured
    clusters) and by the cluster-level one (one observation per completed topic, the mean
    of its cases' differences: what it does now), α = 0.05.

    Each topic has a size drawn uniformly from ``sizes`` and an effect
    u ~ N(effect, spread²) shared by its cases; a case has a difficulty p ~ Beta(2, 1) and
    pass probabilities clip(p + u/2) for the candidate and clip(p − u/2) for the baseline,
    ``trials`` attempts each. With ``effect`` = 0 the difference is symmetric about 0
    (u and −u swap the two variants), so both the mean over topics and the mean over
    cases of the true difference are exactly 0: any decision is an error. Topics are i.i.d.,
    so running them in index order is running them in a random order.

    Returns the share of runs decided (better, worse) by each sequence, and for the
    cluster-level one the mean cases and topics used (a run stops at its first decision).
    """
    rng = np.random.default_rng(seed)
    size = rng.integers(sizes[0], sizes[1] + 1, (runs, topics))
    u = rng.normal(effect, spread, (runs, topics))
    per_case = BettingConfidenceSequence(0.05, n=runs)
    per_cluster = BettingConfidenceSequence(0.05, n=runs)
    out = {
        key: np.zeros(runs, dtype=bool)
        for key in ("case_better", "case_worse", "cluster_better", "cluster_worse")
    }
    stop_cases = size.sum(axis=1).astype(float)
    stop_topics = np.full(runs, float(topics))
    done = np.zeros(runs, dtype=bool)
    cases_so_far = np.zeros(runs)
    for g in range(topics):
        total = np.zeros(runs)
        for k in range(sizes[1]):
            present = k < size[:, g]
            p = rng.beta(2, 1, runs)
            cand = rng.binomial(trials, np.clip(p + u[:, g] / 2, 0, 1)) / trials
            base = rng.binomial(trials, np.clip(p - u[:, g] / 2, 0, 1)) / trials
            d = np.where(present, cand - base, np.nan)
            per_case.update(d)
            low, high = per_case.interval()
            out["case_better"] |= low > 0
            out["case_worse"] |= high < 0
            total += np.where(present, cand - base, 0.0)
        per_cluster.update(total / size[:, g])
        cases_so_far += size[:, g]
        low, high = per_cluster.interval()
        out["cluster_better"] |= low > 0
        out["cluster_worse"] |= high < 0
        now = ~done & ((low > 0) | (high < 0))
        stop_cases[now] = cases_so_far[now]
        stop_topics[now] = g + 1
        done |= now
    rates = {key: float(v.mean()) for key, v in out.items()}
    return {
        **rates,
        "case_decided": float((out["case_better"] | out["case_worse"]).mean()),
        "cluster_decided": float((out["cluster_better"] | out["cluster_worse"]).mean()),
        "cases_planned": float(size.sum(axis=1).mean()),
        "mean_cases": float(stop_cases.mean()),
        "mean_topics": float(stop_topics.mean()),
    }


def monitor_null(
    runs: int, topics: int = 100, sizes: tuple[int, int] = (1, 5), spread: float = 0.30
) -> dict:
    """The rule end to end at the monitor: :class:`~agenticlens_frames.runner.stopping.StopMonitor`
    with declared clusters fed journal-like attempt records (baseline and two candidates,
    3 trials, Holm declared, so Bonferroni α/2 each), in its own planned order, one
    manifest seed per run. No true difference: every variant has its own topic effects
    N(0, spread²/2), pass probabilities clip(p + effect), so each candidate and the
    baseline are exchangeable within a topic and differ by N(0, spread²). Returns the
    share of runs in which any candidate was ever decided (family-wise error) and the mean
    clusters seen."""
    import dataclasses

    from agenticlens_frames.formats import load_manifest, load_suite
    from agenticlens_frames.runner.stopping import StopMonitor, StopRule

    rng = np.random.default_rng(11)
    folder = Path(tempfile.mkdtemp())
    size = rng.integers(sizes[0], sizes[1] + 1, topics)
    topic = np.repeat(np.arange(topics), size)
    variants = ("base", "cand_a", "cand_b")
    manifest = {
        "name": "stop-bench",
        "version": "1",
        "baseline_variant_id": "base",
        "trial_count": 3,
        "variants": [
            {"id": v, "name": v, "target_kind": "python", "target": f"agents.py:{v}"}
            for v in variants
        ],
    }
    suite = {
        "name": "s",
        "version": "1",
        "cases": [
            {
                "id": f"c{i}",
                "name": f"c{i}",
                "input": "q",
                "expected_contains": ["yes"],
                "metadata": {"topic": f"t{g}"},
            }
            for i, g in enumerate(topic)
        ],
    }
    (folder / "agents.py").write_text("")
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
    spec = load_manifest(folder / "manifest.yaml")
    cases = load_suite(folder / "suite.yaml")
    wrong = np.zeros(runs, dtype=bool)
    seen = np.zeros(runs)
    rule = StopRule(alpha=0.05, correction="holm")
    for r in range(runs):
        monitor = StopMonitor(
            dataclasses.replace(spec, random_seed=r), cases, rule, cluster="topic"
        )
        # Every variant (the baseline too) gets its own topic effects: a candidate and the
        # baseline are exchangeable, so their difference is symmetric about 0 (an exact
        # null), correlated within a topic, with spread `spread` per topic.
        w = rng.normal(0, spread / np.sqrt(2), (len(variants), topics))
        p = rng.beta(2, 1, len(topic))
        for case_id in monitor.order:
            i = int(case_id[1:])
            probs = {v: np.clip(p[i] + w[k, topic[i]], 0, 1) for k, v in enumerate(variants)}
            for v in variants:
                for t in (1, 2, 3):
                    passed = bool(rng.random() < probs[v])
                    monitor.add(
                        {
                            "type": "attempt",
                            "variant": v,
                            "trial": t,
                            "case": case_id,
                            "status": "ok",
                            "score": [passed, float(passed), 1, int(passed), float(passed)],
                        }
                    )
            wrong[r] |= any(d is not None for d in monitor.decisions)
            if monitor.should_stop:
                break
        seen[r] = monitor.units_used
    return {"error": float(wrong.mean()), "clusters_seen": float(seen.mean())}


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


def final_report(runs: int) -> None:
    """Print :func:`final_rates` for the independent design (one and three candidates, 100
    and 400 cases) and the clustered designs of ``--clustered`` (one candidate; 2000 runs
    at most, the 300-topic designs being slow), Δ = 0 and a true gain."""

    def line(name: str, r: dict[str, float], n: int, null: bool) -> None:
        what = "false" if null else "better"
        mc = np.sqrt(0.05 * 0.95 / n)
        print(
            f"{name}: {'false claim' if null else 'claimed better'} — verdicts leading "
            f"(before) {r['both_' + what]:.2%}, the rule's statement (now) "
            f"{r['sequence_' + what]:.2%}, "
            f"α split {r['split_' + what]:.2%}"
            + (
                f" (sequence decided {r['sequence_only_false']:.2%}, fixed-sample verdict of "
                f"a run never stopped {r['fixed_false']:.2%}; MC s.e. at 5 %: {mc:.2%})"
                if null
                else f" (stopped {r['stopped']:.1%})"
            )
        )

    print(f"Watched runs, α = 0.05, 3 trials; {runs} runs (independent cases)")
    for k in (1, 3):
        for cases in (100, 400):
            for delta in (0.0, 0.10):
                r = final_rates(
                    independent_diffs(runs, cases, k, delta, seed=10 + k + round(delta * 100))
                )
                line(f"{k} candidate(s), {cases} cases, Δ = {delta:+.2f}", r, runs, delta == 0)
    clustered_runs = min(runs, 2000)
    designs = [
        ("10 topics × 20 cases, N(0, 0.15²)", 10, (20, 20), 0.0, 0.15),
        ("60 topics of 1-10 cases, N(0, 0.30²)", 60, (1, 10), 0.0, 0.30),
        ("300 topics of 1-3 cases, N(0, 0.30²)", 300, (1, 3), 0.0, 0.30),
        ("60 topics of 1-10 cases, N(+0.15, 0.15²)", 60, (1, 10), 0.15, 0.15),
        ("300 topics of 1-3 cases, N(+0.10, 0.15²)", 300, (1, 3), 0.10, 0.15),
    ]
    print(f"Clustered, one candidate, {clustered_runs} runs")
    for seed, (name, topics, sizes, effect, spread) in enumerate(designs, start=20):
        diffs, size = clustered_diffs(clustered_runs, topics, sizes, effect, spread, seed)
        line(name, final_rates(diffs, size), clustered_runs, effect == 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--cases", type=int, default=400)
    parser.add_argument("--live-runs", type=int, default=3)
    parser.add_argument(
        "--clustered",
        action="store_true",
        help="only the case- and cluster-level sequences with cases correlated within "
        "topics: error rate and power (2000 runs unless --runs)",
    )
    parser.add_argument(
        "--monitor-runs",
        type=int,
        default=2000,
        help="with --clustered: runs of the end-to-end StopMonitor check",
    )
    parser.add_argument(
        "--widths",
        action="store_true",
        help="only the sequence's width against the fixed-sample Hoeffding interval",
    )
    parser.add_argument(
        "--final",
        action="store_true",
        help="only the false-claim rate and power of a watched run by either route (the "
        "sequence's decision, or the fixed-sample verdicts of a run never stopped), against "
        "the sequence alone and an alpha split (4000 runs unless --runs)",
    )
    parser.add_argument(
        "--gate",
        action="store_true",
        help="only the non-inferiority gate in watched runs: how often it passes a "
        "candidate truly worse by the margin, and one truly equal, with the fixed-sample "
        "bound and with the confidence sequence (2000 runs, 1000 at 400 cases, unless --runs)",
    )
    args = parser.parse_args()
    if args.gate:
        gate_report(args.runs if args.runs != 500 else 2000)
        return
    if args.final:
        final_report(args.runs if args.runs != 500 else 4000)
        return
    if args.widths:
        for name, t, bet, hoeffding in widths():
            print(
                f"{name:>8}, {t:3d} cases: betting {bet:.3f}, "
                f"fixed-sample Hoeffding {hoeffding:.3f}"
            )
        return
    if args.clustered:
        runs = args.runs if args.runs != 500 else 2000
        check = monitor_null(args.monitor_runs)
        print(
            f"StopMonitor with declared clusters, fed records ({args.monitor_runs} runs, 100 "
            "topics of 1-5 cases, two null candidates, Holm declared): family-wise error "
            f"{check['error']:.1%} (MC s.e. at 5 %: "
            f"{np.sqrt(0.05 * 0.95 / args.monitor_runs):.1%}), "
            f"{check['clusters_seen']:.1f} clusters seen on average"
        )
        mc = np.sqrt(0.05 * 0.95 / runs)
        print(f"Cases correlated within topics, one candidate, α = 0.05, {runs} runs each")
        designs = [
            ("10 topics × 20 cases, topic effects N(0, 0.15²)", 10, (20, 20), 0.0, 0.15),
            ("60 topics of 1-10 cases, topic effects N(0, 0.30²)", 60, (1, 10), 0.0, 0.30),
            ("300 topics of 1-3 cases, topic effects N(0, 0.30²)", 300, (1, 3), 0.0, 0.30),
            ("60 topics of 1-10 cases, topic effects N(+0.15, 0.15²)", 60, (1, 10), 0.15, 0.15),
            ("300 topics of 1-3 cases, topic effects N(+0.10, 0.15²)", 300, (1, 3), 0.10, 0.15),
        ]
        for seed, (name, topics, sizes, effect, spread) in enumerate(designs, start=4):
            r = clustered(runs, topics, sizes, effect, spread, seed=seed)
            print(f"{name} ({r['cases_planned']:.0f} cases planned on average):")
            print(
                f"  case-level sequence (the old rule): decided in {r['case_decided']:.1%} "
                f"(better {r['case_better']:.1%}, worse {r['case_worse']:.1%})"
            )
            print(
                f"  cluster-level sequence (stop_when with clusters): decided in "
                f"{r['cluster_decided']:.1%} (better {r['cluster_better']:.1%}, worse "
                f"{r['cluster_worse']:.1%}; MC s.e. at 5 %: {mc:.1%}); cases used "
                f"{r['mean_cases']:.0f}, topics {r['mean_topics']:.1f} of {topics}, on "
                "average (an undecided run uses them all)"
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
            f"{[s['attempts_saved'] for s in stops]} of {stops[0]['attempts_planned']} "
            f"({np.mean(saved):.1%} on average), started before the stop took effect and "
            f"run (not saved) {[s['attempts_after_decision'] for s in stops]}, decisions "
            f"{[[c['decision'] for c in s['candidates']] for s in stops]}"
        )


if __name__ == "__main__":
    main()
