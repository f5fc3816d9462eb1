"""The replay phase (manifest + suite + recorded files -> tables) against a baseline tree.

``load_experiment`` on a synthetic 4 variants x 5 trials x N cases experiment
(``agenticlens_frames.testing.make_synthetic``): read the manifest and the suite, replay and
score every recorded trial, build the tables. Nothing is written. Each run is a fresh
interpreter that reports its wall time, CPU time (its own and its forked workers') and the
peak of its whole process tree (proportional set size sampled every 50 ms, so pages shared
after a fork count once).

The baseline is the same code at another commit (default ``main``), unpacked with
``git archive`` and put first on ``PYTHONPATH``; ours is this checkout. The two run
alternately (A B A B ...) in the same invocation, once with forking off
(``AGENTICLENS_FRAMES_WORKERS=1``) and once as a default run, and medians are compared, so a
drift in the shared machine's speed hits both.

    python benchmarks/bench_replay.py [--cases 5000 20000] [--repeat 5] [--baseline main]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The whole process tree's memory is measured as bench_recorded measures it (this script's
# folder is first on sys.path when it runs).
from bench_recorded import _baseline_tree, _tree_pss_mib

from agenticlens_frames.testing import make_synthetic

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

_PROBE = """
import json, os, resource, sys, time
folder = sys.argv[1]
wall, cpu = time.perf_counter(), time.process_time()
from agenticlens_frames import load_experiment
run = load_experiment(folder + "/manifest.yaml", folder + "/suite.yaml")
assert len(run.attempts) > 0
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "seconds": time.perf_counter() - wall,
    "cpu": time.process_time() - cpu + children.ru_utime + children.ru_stime,
}))
"""


def _measure(tree: Path, folder: Path, workers: str | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("AGENTICLENS_FRAMES_WORKERS", None)
    if workers:
        env["AGENTICLENS_FRAMES_WORKERS"] = workers
    with tempfile.TemporaryFile("w+") as out:
        probe = subprocess.Popen(
            [sys.executable, "-c", _PROBE, str(folder)], stdout=out, env=env, cwd=tree
        )
        peak = 0.0
        while probe.poll() is None:
            peak = max(peak, _tree_pss_mib(probe.pid))
            time.sleep(0.05)
        if probe.returncode != 0:
            raise RuntimeError(f"the replay under {tree} failed")
        out.seek(0)
        result = json.loads(out.read().strip().splitlines()[-1])
    result["peak_mib"] = peak
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, alternating")
    parser.add_argument("--baseline", default="main", help="git ref of the baseline")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        baseline = _baseline_tree(args.baseline, Path(tmp) / "baseline")
        for n in args.cases:
            folder = Path(tmp) / f"n{n}"
            make_synthetic(folder, variants=4, trials=5, cases=n, seed=42)
            for workers in ("1", None):
                runs: dict[str, list[dict]] = {"baseline": [], "ours": []}
                for _ in range(args.repeat):
                    runs["baseline"].append(_measure(baseline, folder, workers))
                    runs["ours"].append(_measure(ROOT, folder, workers))
                med = {
                    name: {
                        key: statistics.median(r[key] for r in results)
                        for key in ("seconds", "cpu", "peak_mib")
                    }
                    for name, results in runs.items()
                }
                label = "one process" if workers else "default (forked workers)"
                rows.append((n, label, med["baseline"], med["ours"]))
                print(
                    f"N={n} {label}: baseline {json.dumps(med['baseline'])} "
                    f"ours {json.dumps(med['ours'])}",
                    flush=True,
                )
    print(
        f"\nmedians of {args.repeat} alternating runs; baseline = {args.baseline}\n"
        "| N | run | wall baseline | wall ours | ratio | CPU baseline | CPU ours | ratio "
        "| peak baseline | peak ours |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, label, old, new in rows:
        print(
            f"| {n} | {label} | {old['seconds']:.2f} s | {new['seconds']:.2f} s | "
            f"{new['seconds'] / old['seconds']:.2f} | {old['cpu']:.2f} s | {new['cpu']:.2f} s | "
            f"{new['cpu'] / old['cpu']:.2f} | {old['peak_mib']:.0f} MiB | "
            f"{new['peak_mib']:.0f} MiB |"
        )


if __name__ == "__main__":
    main()
