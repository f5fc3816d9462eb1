"""The analysis phase of ``experiment run``: :func:`agenticlens_frames.analyze` against a
baseline tree, timed in the same run.

Workload (issue 19): a synthetic experiment of 4 variants × 5 trials × N cases (default
N = 5000 and 20000), loaded once per process; ``analyze`` (trial and case summaries, the
frontier bootstrap of 2000 resamples, paired and case-level frames, verdicts, factor
effects) is then timed ``--inner`` times after one warm-up call (which pays the lazy
imports). The baseline is another source tree of the package — by default ``main``'s
committed tree, unpacked with ``git archive`` — run in its own interpreter with
``PYTHONPATH`` pointing at it. Rounds alternate the two trees (the machine is shared and
noisy) and the medians of wall and CPU time are compared (CPU time, which includes the
BLAS threads, is the steadier of the two on a busy machine). Every process also prints a
digest of every result frame (values to the bit, dtypes, attrs), and the script checks
that the two trees agree.

Run: ``python benchmarks/bench_analysis.py [--cases N ...] [--baseline REV | --baseline-tree
DIR] [--rounds R] [--inner K]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# A baseline commit is unpacked (and byte-compiled) as bench_recorded unpacks it (this
# script's folder is first on sys.path when it runs).
from bench_recorded import _baseline_tree

HERE = Path(__file__).resolve().parent.parent

WORKER = r"""
import hashlib, json, sys, time
import numpy as np
from agenticlens_frames import load_experiment
from agenticlens_frames.analysis import analyze

folder, inner = sys.argv[1], int(sys.argv[2])
run = load_experiment(folder + "/manifest.yaml", folder + "/suite.yaml")
result = analyze(run)  # warm-up: lazy imports
times, cpu = [], []
for _ in range(inner):
    start, start_cpu = time.perf_counter(), time.process_time()
    result = analyze(run)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
digest = hashlib.sha256()
for name, frame in sorted(result.frames().items()):
    digest.update(f"{name}|{list(frame.columns)}|{sorted(map(str, frame.attrs.items()))}".encode())
    for column in frame.columns:
        values = frame[column].to_numpy()
        digest.update(f"{column}|{frame[column].dtype}".encode())
        if values.dtype.kind == "f":
            digest.update(np.ascontiguousarray(values).tobytes())
        else:
            digest.update(repr(values.tolist()).encode())
digest.update(repr((result.pareto_frontier, result.warnings, result.judge_noise)).encode())
print(json.dumps({"times": times, "cpu": cpu, "digest": digest.hexdigest()}))
"""


def run_worker(tree: Path, folder: Path, code: str, *args: str) -> dict:
    """Run ``code`` in a fresh interpreter importing the package from ``tree``, in
    ``folder``, and return the JSON of its last line of output (bench_scaling's too)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(folder), *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=str(folder),
    )
    if proc.returncode != 0:
        raise SystemExit(f"worker failed for {tree}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _measure(tree: Path, folder: Path, inner: int) -> dict:
    return run_worker(tree, folder, WORKER, str(inner))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--baseline", default="main", help="git revision of the baseline tree")
    parser.add_argument("--baseline-tree", type=Path, help="an unpacked baseline source tree")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree and N")
    parser.add_argument("--inner", type=int, default=3, help="timed analyze calls per process")
    args = parser.parse_args()

    from agenticlens_frames.testing import make_synthetic

    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        work = Path(tmp)
        base = args.baseline_tree or _baseline_tree(args.baseline, work / "baseline")
        trees = {"baseline": base.resolve(), "ours": HERE}
        print(f"baseline: {args.baseline_tree or args.baseline}   ours: {HERE}")
        for n_cases in args.cases:
            folder = work / f"n{n_cases}"
            make_synthetic(folder, variants=4, trials=5, cases=n_cases, seed=42)
            times: dict[str, list[float]] = {name: [] for name in trees}
            cpu: dict[str, list[float]] = {name: [] for name in trees}
            digests: dict[str, set[str]] = {name: set() for name in trees}
            for r in range(args.rounds):
                order = list(trees) if r % 2 == 0 else list(trees)[::-1]
                for name in order:
                    result = _measure(trees[name], folder, args.inner)
                    times[name] += result["times"]
                    cpu[name] += result["cpu"]
                    digests[name].add(result["digest"])
            med = {name: statistics.median(ts) for name, ts in times.items()}
            med_cpu = {name: statistics.median(ts) for name, ts in cpu.items()}
            same = digests["baseline"] == digests["ours"] and len(digests["ours"]) == 1
            print(
                f"N={n_cases:>6}  analyze wall: baseline {med['baseline']:.3f} s, "
                f"ours {med['ours']:.3f} s ({med['baseline'] / med['ours']:.2f}x); "
                f"CPU: baseline {med_cpu['baseline']:.3f} s, ours {med_cpu['ours']:.3f} s "
                f"({med_cpu['baseline'] / med_cpu['ours']:.2f}x)  "
                f"(medians of {len(times['ours'])}; results identical: {same})"
            )
            if not same:
                raise SystemExit("the two trees computed different results")


if __name__ == "__main__":
    main()
