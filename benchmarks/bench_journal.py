"""The run journal's cost, this checkout against a baseline commit: writing and reading it.

A live experiment of 4 variants x 5 trials x N cases with a 0 ms python target (the
targets of bench_live.py) is run into a run folder by each tree, in a fresh interpreter,
the trees alternating (A B, B A, ...). Each run then times, on the journal it wrote:

* ``run``     ``run_experiment`` whole, sequential (concurrency 1): per attempt the
              dispatch, validation, scoring, journal write + ``fsync`` and, at the end, the
              tables;
* ``encode``  the line bytes of every record (``encode_record``), repeated: CPU only;
* ``write``   a ``JournalWriter`` appending every record to a new segment and closing it
              (its thread encodes, writes and ``fsync``-s in batches);
* ``read``    ``read_segments`` over the folder's segments, repeated: what a resume and a
              load parse and check before anything else;
* ``load``    ``load_experiment(..., run_dir=...)``: the folder read back into tables;
* ``resume``  ``run_experiment`` again on the finished folder (nothing left to call).

Then, in one process holding both trees' journal modules, alternating on the records of
this tree's first run: ``encode`` and ``read`` per record (the noise between processes
is as large as the difference).

Each timing inside a run is the fastest of ``--inner`` (``run`` and ``resume``: one), wall
and CPU (all the process's threads). Reported: the median of each over the pairs, per
tree, and ours / baseline; on this shared two-core machine the CPU ratio is the steadier
one. The two trees read their own folders (a baseline tree cannot know what this one
writes).

    python benchmarks/bench_journal.py [--cases 150] [--repeat 5] [--inner 7] [--baseline main]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

# The live experiment is bench_live's, the baseline tree bench_recorded's (this script's
# folder is first on sys.path when it runs).
from bench_live import TRIALS, VARIANTS, _write_experiment
from bench_recorded import _baseline_tree

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, sys, time
from pathlib import Path
from agenticlens_frames import load_experiment
from agenticlens_frames.runner import run_experiment
from agenticlens_frames.runner.journal import JournalWriter, encode_record, read_segments

manifest, suite, run_dir, inner = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
out = {}

def timed(name, work, times=1):
    # The fastest of ``times``: the least disturbed by the other processes on the machine.
    walls, cpus = [], []
    for _ in range(times):
        start, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    out[name], out[name + " cpu"] = min(walls), min(cpus)

result = []
timed("run", lambda: result.append(
    run_experiment(manifest, suite, concurrency=1, run_dir=run_dir, progress=False)))
assert result[0].complete
segments = sorted((run_dir / "journal").glob("*.jsonl"))
records = list(read_segments(segments))
out["records"] = len(records)
out["bytes"] = sum(p.stat().st_size for p in segments)
timed("encode", lambda: [encode_record(r) for r in records], inner)
spare = run_dir.parent / (run_dir.name + "-writer")
spare.mkdir()

def write():
    segment = spare / f"{len(list(spare.iterdir())):06d}.jsonl"
    writer = JournalWriter(segment)
    for record in records:
        writer.append(record)
    writer.close()

timed("write", write, inner)
timed("read", lambda: sum(1 for _ in read_segments(segments)), inner)
timed("load", lambda: load_experiment(manifest, suite, run_dir=run_dir), inner)
timed("resume", lambda: run_experiment(manifest, suite, run_dir=run_dir, progress=False))
print(json.dumps(out))
"""

#: Both trees' journal modules in one process, alternating on the same records: the cost
#: per record of making a line and of reading one back, without the noise between
#: processes (a few microseconds either way from one process to the next here).
SAME_PROCESS = """
import json, sys, timeit
from pathlib import Path

def journal_of(tree):
    for name in [m for m in sys.modules if m.startswith("agenticlens_frames")]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        import agenticlens_frames.runner.journal as module
    finally:
        sys.path.remove(tree)
    return module

trees = {"baseline": journal_of(sys.argv[1]), "ours": journal_of(sys.argv[2])}
records = list(trees["ours"].read_segments(sorted(Path(sys.argv[3]).glob("*.jsonl"))))
folder, repeat = Path(sys.argv[4]), int(sys.argv[5])
segments = {}
for name, journal in trees.items():
    segments[name] = folder / f"{name}.jsonl"
    segments[name].write_bytes(b"".join(journal.encode_record(r)[1] for r in records))
best = {(name, what): [] for name in trees for what in ("encode", "read")}
for _ in range(repeat):
    for name, journal in trees.items():
        encode = lambda: [journal.encode_record(r) for r in records]
        read = lambda: sum(1 for _ in journal.read_segments([segments[name]]))
        best[(name, "encode")].append(min(timeit.repeat(encode, number=1, repeat=3)))
        best[(name, "read")].append(min(timeit.repeat(read, number=1, repeat=3)))
print(json.dumps({f"{name} {what}": min(got) / len(records) * 1e6
                  for (name, what), got in best.items()}))
"""

#: Shown in this order, with what each measures per record or per attempt.
METRICS = ("run", "encode", "write", "read", "load", "resume")


def _run(tree: Path, folder: Path, run_dir: Path, inner: int) -> dict[str, float]:
    script = [sys.executable, "-c", textwrap.dedent(SCRIPT)]
    done = subprocess.run(
        [*script, "python-sync-w1.json", "suite.json", str(run_dir), str(inner)],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree), "BENCH_DELAY": "0"},
        timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(f"the run under {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=150, help="cases (x 20 attempts)")
    parser.add_argument("--repeat", type=int, default=5, help="pairs of runs")
    parser.add_argument("--inner", type=int, default=7, help="timings kept inside a run")
    parser.add_argument("--baseline", default="main", help="git ref of the baseline")
    args = parser.parse_args()
    for name in ("cases", "repeat", "inner"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"baseline": _baseline_tree(args.baseline, Path(tmp) / "baseline"), "ours": ROOT}
        folder = Path(tmp) / "exp"
        _write_experiment(folder, 0, args.cases)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for i in range(args.repeat):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for name in order:
                run_dir = folder / f"run-{name}-{i}"
                runs[name].append(_run(trees[name], folder, run_dir, args.inner))
        script = [sys.executable, "-c", textwrap.dedent(SAME_PROCESS), str(trees["baseline"])]
        journal = folder / "run-ours-0" / "journal"
        same = subprocess.run(
            [*script, str(ROOT), str(journal), tmp, str(args.inner)],
            capture_output=True,
            text=True,
            check=True,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        alternated = json.loads(same.stdout.strip().splitlines()[-1])
    attempts = VARIANTS * TRIALS * args.cases
    first = runs["ours"][0]
    print(
        f"{attempts} attempts, {first['records']} records, journal "
        f"{first['bytes'] / 1e6:.2f} MB (baseline {runs['baseline'][0]['bytes'] / 1e6:.2f} "
        f"MB); medians of {args.repeat} pairs, each the fastest of {args.inner} in its run "
        "(run, resume: 1)"
    )
    head = f"{'':<8} {'wall ' + args.baseline:>12} {'ours':>8} {'ratio':>6}"
    print(f"{head}  {'CPU ' + args.baseline:>12} {'ours':>8} {'ratio':>6}  us/record (CPU, ours)")
    for metric in METRICS:
        cells = []
        for key in (metric, metric + " cpu"):
            base = statistics.median(r[key] for r in runs["baseline"])
            ours = statistics.median(r[key] for r in runs["ours"])
            cells.append(f"{base:>12.4f} {ours:>8.4f} {ours / base:>6.3f}")
        per = statistics.median(r[metric + " cpu"] for r in runs["ours"]) / first["records"]
        print(f"{metric:<8} {cells[0]}  {cells[1]}  {per * 1e6:>8.1f}")
    print(f"one process, both trees alternating, the fastest of {args.inner} x 3, per record:")
    for what in ("encode", "read"):
        base, ours = alternated[f"baseline {what}"], alternated[f"ours {what}"]
        print(
            f"  {what:<7} {args.baseline} {base:.2f} us, ours {ours:.2f} us: "
            f"{ours / base:.3f}x, {ours - base:+.2f} us"
        )


if __name__ == "__main__":
    main()
