"""Time the JSON report writer and reader of this tree against a baseline, in one run.

Generates one synthetic recorded experiment (agenticlens_frames.testing.make_synthetic),
then, for this tree and for the baseline (``git archive`` of ``--baseline``, default
``main``), runs one process per tree per round (rounds alternate the trees, so load on a
shared machine hits both alike). Each process loads and analyses the experiment once
(untimed), then times ``write_json_report`` (full and ``--lean``) and ``load_report`` of
the full report ``--repeat`` times and reports the best wall and CPU time of each (CPU
time, all threads, is the steadier figure on a loaded machine). The written bytes of
both trees are compared too: the writer must not change a byte.

Within this tree's process, three more are timed in the same alternation: the full report
by the records path (a dict per case dumped by orjson, as before issue 19: ``records``),
by the columns (``columns``, the default), and the floor: writing the same bytes, already
in memory, to a file the same way (atomic replace, fsync).

    python benchmarks/bench_json_writer.py --cases 5000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import hashlib, json, os, sys, time
os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
from agenticlens_frames import analyze, load_experiment, load_report
from agenticlens_frames.report.json_report import write_json_report
folder, out, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
analysis = analyze(load_experiment(f"{folder}/manifest.yaml", f"{folder}/suite.yaml"))
path = f"{out}/report.json"

def best(action):
    wall = cpu = float("inf")
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        action()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return {"seconds": wall, "cpu": cpu}

result = {}
for lean in (True, False):
    result["lean" if lean else "full"] = best(lambda: write_json_report(analysis, path, lean=lean))
    data = open(path, "rb").read()
    result["lean" if lean else "full"].update(
        mib=len(data) / 2**20, sha256=hashlib.sha256(data).hexdigest()
    )
result["read full"] = best(lambda: load_report(path)) | {"mib": len(data) / 2**20, "sha256": ""}

from agenticlens_frames.report import json_report
if hasattr(json_report, "_write_report"):  # this tree: records path, columns, floor
    from agenticlens_frames._files import atomic_write

    def floor():
        with atomic_write(path) as out:
            out.write(data)

    kinds = {
        "records": lambda: json_report._write_report(analysis, path, lean=False, columns=False),
        "columns": lambda: json_report._write_report(analysis, path, lean=False),
        "floor": floor,
    }
    for kind in kinds:
        result[kind] = {"seconds": float("inf"), "cpu": float("inf")}
    for _ in range(repeat):  # alternated, so a drift in the machine's speed hits all
        for kind, action in kinds.items():
            w, c = time.perf_counter(), time.process_time()
            action()
            kept = result[kind]
            kept["seconds"] = min(kept["seconds"], time.perf_counter() - w)
            kept["cpu"] = min(kept["cpu"], time.process_time() - c)
            if kind != "floor":
                written = open(path, "rb").read()
                kept["sha256"] = hashlib.sha256(written).hexdigest()
                kept["same"] = written == data
print(json.dumps(result))
"""


def _export(ref: str, target: Path) -> Path:
    """The baseline tree: ``git archive`` of ``ref`` unpacked into ``target``."""
    archive = target / "tree.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), ref], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(target / "tree", filter="data")
    return target / "tree"


def _run(tree: Path, folder: Path, out: Path, repeat: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(out), str(repeat)],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", default="main", help="git ref to compare against")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from agenticlens_frames.testing import make_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        folder = make_synthetic(
            base / "experiment",
            variants=args.variants,
            trials=args.trials,
            cases=args.cases,
            seed=7,
            missing_samples=5,
        )
        trees = {"baseline": _export(args.baseline, base), "this tree": ROOT}
        best: dict[str, dict[str, dict]] = {}
        for round_ in range(args.rounds):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for name in order:
                got = _run(trees[name], folder, base / "out" / name, args.repeat)
                for kind, value in got.items():
                    kept = best.setdefault(name, {}).setdefault(kind, value)
                    kept["seconds"] = min(kept["seconds"], value["seconds"])
                    kept["cpu"] = min(kept["cpu"], value["cpu"])
                    if "same" in value:
                        kept["same"] = kept["same"] and value["same"]
    print(
        f"{args.variants} variants x {args.trials} trials x {args.cases} cases; "
        f"best of {args.rounds} rounds x {args.repeat} writes (baseline: {args.baseline})"
    )
    for kind in ("full", "lean", "read full"):
        old, new = best["baseline"][kind], best["this tree"][kind]
        same = "identical bytes" if old["sha256"] == new["sha256"] else "BYTES DIFFER"
        same = same if old["sha256"] else ""
        print(
            f"  {kind:9}  {new['mib']:8.1f} MiB  baseline {old['seconds']:6.3f} s  "
            f"this tree {new['seconds']:6.3f} s  ({new['seconds'] / old['seconds']:.2f}x); "
            f"CPU {old['cpu']:6.3f} s -> {new['cpu']:6.3f} s "
            f"({new['cpu'] / old['cpu']:.2f}x)  {same}"
        )
    mine = best["this tree"]
    if "columns" in mine:
        floor = mine["floor"]
        print("  this tree, same process, alternated (floor: the same bytes written from memory):")
        for kind in ("records", "columns", "floor"):
            got = mine[kind]
            same = (
                ""
                if kind == "floor"
                else ("identical bytes" if got.get("same") else "BYTES DIFFER")
            )
            print(
                f"    {kind:8}  {got['seconds']:6.3f} s (CPU {got['cpu']:6.3f} s)  "
                f"{got['seconds'] / floor['seconds']:5.2f}x floor  {same}"
            )
        old, new = mine["records"], mine["columns"]
        print(
            f"    records/columns: wall {old['seconds'] / new['seconds']:.2f}x, "
            f"CPU {old['cpu'] / new['cpu']:.2f}x"
        )


if __name__ == "__main__":
    main()
