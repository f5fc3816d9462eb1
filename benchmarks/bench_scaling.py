"""Growth exponents of public entry points along one axis of the experiment, against a
baseline tree in the same run.

For each size of the axis (``--axis cases|variants|trials``) a synthetic experiment is
made (:func:`agenticlens_frames.testing.make_synthetic`, 4 variants × 5 trials × 2000 cases
apart from the axis varied), and every entry point listed in ``ENTRIES`` is timed in a
fresh process per tree (CPU time, the steadier figure on this shared machine: the median
of ``--inner`` calls after a warm-up). Rounds alternate the trees. The script prints per
entry point and tree the CPU time at each size, the growth exponent between consecutive
sizes (log of the time ratio over log of the size ratio: 1 is linear in that axis), and
the baseline/ours ratio at the largest size. Every process also prints a digest of what
each entry point returned, and the script checks the two trees agree.

The entry points are those the scaling audit of 6 December 2026 changed: ``load_report``
(the surrogate walk skipped when there is nothing to scrub), ``read_parquet`` (the run
specification parsed once), ``paired_comparisons`` (the suite hash), and the per-variant
splits of ``case_level_summary``, ``variance_decomposition`` and ``power_analysis``
(quadratic in the number of variants before).

Run: ``python benchmarks/bench_scaling.py [--axis variants] [--sizes 3 8 24] [--baseline
REV | --baseline-tree DIR] [--rounds R] [--inner K]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# A baseline commit is unpacked (and byte-compiled) as bench_recorded unpacks it (this
# script's folder is first on sys.path when it runs).
from bench_analysis import run_worker
from bench_recorded import _baseline_tree

HERE = Path(__file__).resolve().parent.parent

ENTRIES = (
    "load_report",
    "read_parquet",
    "paired_comparisons",
    "case_level_summary",
    "variance_decomposition",
    "power_analysis",
)

# The saved report and parquet folder the readers time, written once per size by this
# tree (their bytes are the same in both trees; the readers are what is compared).
PREPARE = r"""
import sys
from pathlib import Path
import agenticlens_frames as alf

folder = Path(sys.argv[1])
run = alf.load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
(folder / "saved").mkdir()
alf.write_json_report(alf.analyze(run, frontier_n_resamples=0), folder / "saved" / "report.json")
run.to_parquet(folder / "saved" / "parquet")
"""

WORKER = r"""
import hashlib, json, sys, time, warnings
from pathlib import Path
import numpy as np
import agenticlens_frames as alf

folder, inner = Path(sys.argv[1]), int(sys.argv[2])
run = alf.load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
saved = folder / "saved"
large = alf.GuardRails(allow_large=True)
calls = {
    "load_report": lambda: alf.load_report(saved / "report.json").frames(),
    "read_parquet": lambda: alf.read_parquet(saved / "parquet").tables,
    "paired_comparisons": lambda: {
        "": alf.paired_comparisons(run, correction="holm", limits=large)
    },
    "case_level_summary": lambda: {"": alf.case_level_summary(run)},
    "variance_decomposition": lambda: {"": alf.variance_decomposition(run)},
    "power_analysis": lambda: {"": alf.power_analysis(run, effect=0.05)},
}


def digest(frames):
    # Values to the bit, dtypes, attrs (as bench_analysis): not a pickle, whose bytes
    # depend on which strings a process happens to share.
    h = hashlib.sha256()
    for name, frame in sorted(frames.items()):
        h.update(f"{name}|{list(frame.columns)}|{sorted(map(str, frame.attrs.items()))}".encode())
        for column in frame.columns:
            values = frame[column].to_numpy()
            h.update(f"{column}|{frame[column].dtype}".encode())
            if values.dtype.kind == "f":
                h.update(np.ascontiguousarray(values).tobytes())
            else:
                h.update(repr(values.tolist()).encode())
    return h.hexdigest()


out = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a baseline tree may warn where this one does not
    for name in sys.argv[3].split(","):
        result = calls[name]()  # warm-up: lazy imports
        cpu = []
        for _ in range(inner):
            start = time.process_time()
            result = calls[name]()
            cpu.append(time.process_time() - start)
        out[name] = {"cpu": cpu, "digest": digest(result)}
print(json.dumps(out))
"""


def _measure(tree: Path, folder: Path, inner: int) -> dict:
    return run_worker(tree, folder, WORKER, str(inner), ",".join(ENTRIES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--axis", choices=("cases", "variants", "trials"), default="variants")
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 8, 24])
    parser.add_argument("--baseline", default="main", help="git revision of the baseline tree")
    parser.add_argument("--baseline-tree", type=Path, help="an unpacked baseline source tree")
    parser.add_argument("--rounds", type=int, default=2, help="processes per tree and size")
    parser.add_argument("--inner", type=int, default=3, help="timed calls per process")
    args = parser.parse_args()

    from agenticlens_frames.testing import make_synthetic

    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as tmp:
        work = Path(tmp)
        base = args.baseline_tree or _baseline_tree(args.baseline, work / "baseline")
        trees = {"baseline": base.resolve(), "ours": HERE}
        print(f"baseline: {args.baseline_tree or args.baseline}   ours: {HERE}")
        cpu: dict[tuple[str, str, int], float] = {}
        for size in args.sizes:
            shape = {"variants": 4, "trials": 5, "cases": 2000, args.axis: size}
            folder = make_synthetic(work / f"{args.axis}{size}", seed=42, **shape)
            subprocess.run(
                [sys.executable, "-c", PREPARE, str(folder)],
                env={**os.environ, "PYTHONPATH": str(HERE)},
                check=True,
            )
            samples: dict[tuple[str, str], list[float]] = {}
            digests: dict[tuple[str, str], set[str]] = {}
            for r in range(args.rounds):
                for tree in list(trees) if r % 2 == 0 else list(trees)[::-1]:
                    for name, result in _measure(trees[tree], folder, args.inner).items():
                        samples.setdefault((tree, name), []).extend(result["cpu"])
                        digests.setdefault((tree, name), set()).add(result["digest"])
            for name in ENTRIES:
                if digests[("baseline", name)] != digests[("ours", name)]:
                    raise SystemExit(f"{args.axis}={size}: {name} differs between the trees")
                for tree in trees:
                    cpu[(tree, name, size)] = statistics.median(samples[(tree, name)])
        sizes = args.sizes
        print(f"CPU seconds (median of {args.rounds * args.inner}) by {args.axis}: {sizes}")
        for name in ENTRIES:
            for tree in trees:
                times = [cpu[(tree, name, s)] for s in sizes]
                exponents = [
                    math.log(times[i + 1] / times[i]) / math.log(sizes[i + 1] / sizes[i])
                    for i in range(len(sizes) - 1)
                ]
                print(
                    f"{name:24s} {tree:8s} "
                    + " ".join(f"{t:8.3f}" for t in times)
                    + "   exponents "
                    + " ".join(f"{e:5.2f}" for e in exponents)
                )
            largest = sizes[-1]
            ratio = cpu[("baseline", name, largest)] / cpu[("ours", name, largest)]
            print(f"{'':24s} baseline/ours at {args.axis}={largest}: {ratio:.2f}x")
        print("results identical in both trees: True")


if __name__ == "__main__":
    main()
