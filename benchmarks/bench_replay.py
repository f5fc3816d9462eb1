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

``--report`` measures ``experiment report`` instead: the saved report of ``experiment run
--save`` on the same synthetic experiment (default 4 000 cases; seed 0), and the same
report without the blocks only this package writes (``verdicts``, ``case_level``, …), as
AgenticLens 0.10 saves one, whose verdicts ``experiment report`` computes from the trials'
per-case records. Each run re-renders the console summary, the HTML and both CSVs in a
folder of its own; the peak RSS and CPU time are the process's own (GNU ``time``, see
``_measure.py``). Every
run's outputs, console included, must be byte for byte those of the first baseline run.

    python benchmarks/bench_replay.py --report [--cases 4000] [--repeat 5] [--baseline main]
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

# A baseline commit is unpacked as bench_recorded unpacks it, and every run measured by the
# benchmarks' one helper (this script's folder is first on sys.path when it runs).
import _measure as _measure_mod
from bench_recorded import _baseline_tree

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
        usage = _measure_mod.measure(
            [sys.executable, "-c", _PROBE, str(folder)], stdout=out, env=env, cwd=tree
        )
        if usage is None or usage.returncode != 0:
            raise RuntimeError(f"the replay under {tree} failed")
        out.seek(0)
        result = json.loads(out.read().strip().splitlines()[-1])
    result["peak_mib"] = usage.tree_pss_mib
    return result


#: What ``experiment report`` writes in each run's folder (and the console, captured).
_REPORT_OUTPUTS = ("summary.html", "variants.csv", "cases.csv", "console.txt")
#: The top-level blocks AgenticLens 0.10 does not write (its report has no verdicts).
_OURS_ONLY = (
    "agenticlens_frames",
    "case_level",
    "verdicts",
    "paired_comparisons",
    "pareto_uncertainty",
    "factor_effects",
    "judge_noise",
)
_CLI = "from agenticlens_frames.cli import main; main()"


def _report_run(tree: Path, report: Path, into: Path) -> dict:
    """``experiment report`` of ``report`` under ``tree``, its outputs in ``into``."""
    into.mkdir()
    # A fixed width and relative output paths: the console text is comparable byte for byte.
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "120"}
    command = [sys.executable, "-c", _CLI, "experiment", "report", str(report)]
    command += ["--html", "summary.html", "--csv", "variants.csv", "--cases-csv", "cases.csv"]
    with open(into / "console.txt", "wb") as console:
        # Measured by a small process of its own (_measure.py): a child of this one (which
        # held the parsed report) would count this process's peak as its own.
        usage = _measure_mod.measure(command, stdout=console, env=env, cwd=into, interval=None)
    assert usage is not None  # (no timeout)
    code = usage.returncode
    if code != 0:
        raise RuntimeError(f"experiment report under {tree} exited {code}")
    return {"seconds": usage.seconds, "cpu": usage.cpu, "peak_mib": usage.max_rss_mib}


def _same_outputs(reference: Path, other: Path) -> None:
    for name in _REPORT_OUTPUTS:
        if (reference / name).read_bytes() != (other / name).read_bytes():
            raise SystemExit(f"{other / name} differs from {reference / name}")


def _report_mode(args: argparse.Namespace, baseline: Path, tmp: Path) -> list[tuple]:
    rows = []
    for n in args.cases or [4000]:
        folder = tmp / f"n{n}"
        make_synthetic(folder, variants=4, trials=5, cases=n, seed=0)
        ours = folder / "report.json"
        subprocess.run(
            [sys.executable, "-c", _CLI, "experiment", "run", str(folder / "manifest.yaml"),
             str(folder / "suite.yaml"), "--save", str(ours), "--quiet"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True, cwd=tmp,
        )  # fmt: skip
        data = json.loads(ours.read_text(encoding="utf-8"))
        package = folder / "package.json"
        package.write_text(
            json.dumps({k: v for k, v in data.items() if k not in _OURS_ONLY}, indent=2),
            encoding="utf-8",
        )
        del data
        for label, report in (("ours (verdicts)", ours), ("AgenticLens's (rebuilt)", package)):
            runs: dict[str, list[dict]] = {"baseline": [], "ours": []}
            for i in range(args.repeat):
                for name, tree in (("baseline", baseline), ("ours", ROOT)):
                    into = tmp / f"out-{n}-{report.stem}-{name}-{i}"
                    runs[name].append(_report_run(tree, report, into))
                    _same_outputs(tmp / f"out-{n}-{report.stem}-baseline-0", into)
            med = {
                name: {k: statistics.median(r[k] for r in results) for k in _KEYS}
                for name, results in runs.items()
            }
            rows.append((n, label, med["baseline"], med["ours"]))
            print(
                f"N={n} {label} ({report.stat().st_size / 2**20:.0f} MiB): "
                f"baseline {json.dumps(med['baseline'])} ours {json.dumps(med['ours'])}; "
                "outputs byte-identical",
                flush=True,
            )
    return rows


_KEYS = ("seconds", "cpu", "peak_mib")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=None)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, alternating")
    parser.add_argument("--baseline", default="main", help="git ref of the baseline")
    parser.add_argument(
        "--report", action="store_true", help="measure `experiment report` (see above)"
    )
    args = parser.parse_args()
    if args.report:
        with tempfile.TemporaryDirectory() as tmp:
            baseline = _baseline_tree(args.baseline, Path(tmp) / "baseline")
            rows = _report_mode(args, baseline, Path(tmp))
        _print_table(args, rows, "report")
        return
    args.cases = args.cases or [5000, 20000]
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
    _print_table(args, rows, "run")


def _print_table(args: argparse.Namespace, rows: list[tuple], what: str) -> None:
    print(
        f"\nmedians of {args.repeat} alternating runs; baseline = {args.baseline}\n"
        f"| N | {what} | wall baseline | wall ours | ratio | CPU baseline | CPU ours | ratio "
        "| peak baseline | peak ours | ratio |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, label, old, new in rows:
        print(
            f"| {n} | {label} | {old['seconds']:.2f} s | {new['seconds']:.2f} s | "
            f"{new['seconds'] / old['seconds']:.2f} | {old['cpu']:.2f} s | {new['cpu']:.2f} s | "
            f"{new['cpu'] / old['cpu']:.2f} | {old['peak_mib']:.0f} MiB | "
            f"{new['peak_mib']:.0f} MiB | {new['peak_mib'] / old['peak_mib']:.2f} |"
        )


if __name__ == "__main__":
    main()
