"""`experiment run` of this checkout against a baseline commit, alternated, CPU and wall.

A synthetic 4 variants x 5 trials x N cases experiment
(``agenticlens_frames.testing.make_synthetic``) is run with ``-q --save --csv --cases-csv``
by this checkout and by the same command from a baseline tree (``git archive`` of a ref,
default ``main``, first on ``PYTHONPATH``), in pairs whose order alternates (A B, B A,
...), each run a fresh interpreter. Reported: the median wall time and the median CPU
time of all the run's processes (on a shared, loaded machine CPU time is the steadier
measure), and their ratios. ``--one-process`` runs without the supervising parent and
without forked workers; ``--comparisons`` declares ``comparisons: {correction: holm}``
in the manifest (the suite is then needed for the guard rails too).

    python benchmarks/bench_run_ab.py [--cases 5000] [--repeat 7] [--baseline main]
        [--one-process] [--comparisons]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

# A baseline commit is unpacked as bench_recorded unpacks it, and each run measured by the
# benchmarks' one helper (this script's folder is first on sys.path when it runs).
import _measure as _measure_mod
from bench_recorded import _baseline_tree

from agenticlens_frames.testing import make_synthetic

ROOT = Path(__file__).resolve().parent.parent


def _run(tree: Path, folder: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (this run's processes: the command and all it waited for)."""
    command = [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run", "-q"]
    command += ["manifest.yaml", "suite.yaml", "--save", str(out / "r.json")]
    command += ["--csv", str(out / "v.csv"), "--cases-csv", str(out / "c.csv")]
    usage = _measure_mod.measure(
        command, cwd=folder, env={**env, "PYTHONPATH": str(tree)}, interval=None
    )
    if usage is None or usage.returncode != 0:
        raise SystemExit(f"experiment run under {tree} failed")
    wall, cpu = usage.seconds, usage.cpu
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=7, help="pairs of runs")
    parser.add_argument("--baseline", default="main", help="git ref of the baseline")
    parser.add_argument("--one-process", action="store_true")
    parser.add_argument("--comparisons", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.one_process:
        env |= {"AGENTICLENS_FRAMES_WORKERS": "1", "AGENTICLENS_FRAMES_SUPERVISE": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"baseline": _baseline_tree(args.baseline, Path(tmp) / "baseline"), "ours": ROOT}
        folder = make_synthetic(Path(tmp) / "exp", variants=4, trials=5, cases=args.cases, seed=42)
        if args.comparisons:
            manifest = folder / "manifest.yaml"
            text = manifest.read_text(encoding="utf-8")
            manifest.write_text(
                text + "comparisons: {correction: holm, limits: {allow_large: true}}\n",
                encoding="utf-8",
            )
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for i in range(args.repeat):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for name in order:
                runs[name].append(_run(trees[name], folder, Path(tmp), env))
        med = {
            name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
            for name, r in runs.items()
        }
    for name, r in runs.items():
        print(f"{name}: wall {[round(w, 2) for w, _ in r]} cpu {[round(c, 2) for _, c in r]}")
    (bw, bc), (ow, oc) = med["baseline"], med["ours"]
    mode = "one process" if args.one_process else "default (supervised, forked replay)"
    print(
        f"N={args.cases} {mode}{', comparisons' if args.comparisons else ''}, medians of "
        f"{args.repeat} pairs: {args.baseline} wall {bw:.2f} s CPU {bc:.2f} s | ours wall "
        f"{ow:.2f} s CPU {oc:.2f} s | ours/{args.baseline}: wall {ow / bw:.3f}, CPU {oc / bc:.3f}"
    )


if __name__ == "__main__":
    main()
