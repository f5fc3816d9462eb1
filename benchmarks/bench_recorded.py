"""Load + score and end-to-end `experiment run` against the real agenticlens 0.10.0.

Issues 2 and 3 ask for: loading and scoring a synthetic experiment
(``agenticlens_frames.testing.make_synthetic``) V=4, T=5 at N=5000 (the
package: about 26 s and 1.4 GiB) and end-to-end `experiment run` with every output at
N = 1000, 5000 and 20000 (the package: 8.7 s, 208 s, did not finish in 11 min).

Issue 19 adds the floor: the same job reduced to its unavoidable part, in one fresh
interpreter — parse every input JSON file with orjson and write as many bytes as our run
wrote, to the same number of files. Ours is then reported as a ratio to the package
(speed-up) and to the floor (how close we are to the parse-and-write limit). Ours and the
floor run ``--repeat`` times, alternately (A B A B), and the medians are compared, so a
drift in the shared machine's speed hits both.

Two measurements say what that floor leaves out, in the same rotation: the floor with each
output file fsync-ed (ours writes every output atomically: flushed, fsync-ed, renamed),
and our run on a one-case experiment of the same shape — the part of every run that does
not grow with its size (interpreter start, command-line parsing, imports, a few files).
``(ours - one case) / floor`` then compares the part that grows with the size.

Every measurement runs in a fresh subprocess that reports its own wall time and CPU time;
its memory is measured by ``_measure.py``: the largest process's peak RSS (from the kernel,
through a small process of its own, so that none of this benchmark's memory is counted)
and, in brackets, the peak proportional set size of all its processes together, sampled
every 50 ms. Both tools are measured the same way in the same run. The package is run only up to
``--package-max-cases`` (its case lookup is quadratic).

``--baseline REF`` also runs the same command from another commit of this repository
(unpacked with ``git archive`` and put first on ``PYTHONPATH``) in the same rotation
(ours, baseline, floor), so a change is measured A/B against, say, ``main``.
``--package-max-cases 0`` leaves the package out (the floor ratio alone).

    python benchmarks/bench_recorded.py [--cases 1000 5000 20000] [--package-max-cases 5000]
        [--repeat 3] [--html] [--skip-load] [--baseline main] [--sample-interval 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import _measure as _measure_mod

from agenticlens_frames.testing import make_synthetic

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Each probe prints {"seconds": ..., "cpu": ...} as its last line: the wall time of its
# body, and the CPU time of the probe and of every process it waited for (on a loaded
# machine, CPU time is the steadier A/B measure; the probe is fresh, so nothing earlier is
# in it). Peak memory is not the probe's to say: a process started by this one would count
# this one's peak as its own (see _measure.py), so the probe runs under _measure.measure,
# which reports the largest process's peak RSS and samples the whole process tree's PSS
# (our runs fork worker processes).
_PROBE = textwrap.dedent(
    """
    import json, resource, sys, time
    folder = sys.argv[1]
    start = time.perf_counter()
    {body}
    seconds = time.perf_counter() - start
    # (dict.fromkeys: once each, also where RUSAGE_SELF was replaced by RUSAGE_CHILDREN)
    who = dict.fromkeys((resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    usage = [resource.getrusage(w) for w in who]
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)  # the probe's and every process waited for
    print(json.dumps({{"seconds": seconds, "cpu": cpu}}))
    """
)


OURS_LOAD = """
import agenticlens_frames as alf
run = alf.load_experiment(folder + "/manifest.yaml", folder + "/suite.yaml")
assert len(run.attempts) > 0
"""

PACKAGE_LOAD = """
from pathlib import Path
from agenticlens.experiments.runner import (
    _trial_runner, _work_items, load_experiment_suite, load_manifest)
manifest = load_manifest(Path(folder) / "manifest.yaml")
suite = load_experiment_suite(Path(folder) / "suite.yaml")
run_trial = _trial_runner(manifest, suite, None)
reports = [run_trial(variant, trial) for trial, variant in _work_items(manifest)]
assert reports
"""


# The floor: read and parse every input JSON file, then write the given byte counts (one
# file each, in 1 MiB blocks, as a streaming writer would) — nothing our run could skip.
FLOOR = """
import os
import orjson
from pathlib import Path
sizes = {sizes!r}
parsed = 0
for path in sorted(Path(folder).rglob("*.json")):  # one file in memory at a time, as ours
    parsed += len(orjson.loads(path.read_bytes()))
assert parsed
block = b"x" * (1 << 20)
Path({out!r}).mkdir(parents=True, exist_ok=True)
for i, size in enumerate(sizes):
    with open(Path({out!r}) / f"floor{{i}}.out", "wb") as handle:
        while size > 0:
            handle.write(block[: min(size, len(block))])
            size -= len(block)
        if {durable!r}:  # as each of our outputs is written: flushed and fsync-ed
            handle.flush()
            os.fsync(handle.fileno())
"""


def _cli_body(command: list[str], out: str, html: bool = True) -> str:
    args = [
        *command,
        "manifest.yaml",
        "suite.yaml",
        "--save",
        f"{out}/r.json",
        *(["--html", f"{out}/r.html"] if html else []),
        "--csv",
        f"{out}/v.csv",
        "--cases-csv",
        f"{out}/c.csv",
    ]
    return f"""
import os, subprocess
os.chdir(folder)
done = subprocess.run({args!r}, capture_output=True)
assert done.returncode == 0, done.stderr[-2000:]
"""


#: How often the process tree is sampled (``--sample-interval``).
_SAMPLING = {"interval": _measure_mod.INTERVAL}


def _measure(
    body: str,
    folder: Path,
    timeout: float,
    *,
    child: bool = False,
    env: dict | None = None,
    interval: float | None = None,
) -> dict | None:
    """One fresh probe running ``body``: its seconds and CPU (see _PROBE), the largest
    process's peak RSS (``max_rss_mib``) and the process tree's sampled PSS
    (``tree_pss_mib``, sampled every ``interval`` seconds: default ``--sample-interval``),
    both from :func:`_measure.measure`."""
    code = _PROBE.format(body=textwrap.dedent(body).strip())
    if child:  # CLI runs: the command's CPU, not the probe's start-up
        code = code.replace("RUSAGE_SELF", "RUSAGE_CHILDREN")
    # The previous measurement's writes still in the page cache (the floor does not
    # fsync; 965 MiB at 20 000 cases) would otherwise be written back during this one.
    os.sync()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        usage = _measure_mod.measure(
            [sys.executable, "-c", code, str(folder)],
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, **(env or {})},
            timeout=timeout,
            interval=interval or _SAMPLING["interval"],
        )
        if usage is None:
            return None
        stdout.seek(0)
        stderr.seek(0)
        if usage.returncode != 0:
            raise RuntimeError(stderr.read()[-3000:])
        result = json.loads(stdout.read().strip().splitlines()[-1])
    # The probe's own peak (a Python interpreter's, for a command line run) is in the
    # largest process's too; it is far below any command's measured here.
    result["max_rss_mib"] = usage.max_rss_mib
    result["tree_pss_mib"] = usage.tree_pss_mib
    result["pss_samples"] = usage.samples
    return result


def _baseline_tree(ref: str, into: Path) -> Path:
    """This repository at ``ref``, unpacked into ``into``, byte-compiled like this checkout.

    Both trees are compiled here: with ``PYTHONDONTWRITEBYTECODE`` set (as on this
    machine), a tree without ``__pycache__`` compiles every module on every run, about
    0.3 s that an A/B would count against it (a fresh ``git archive`` never has them).
    """
    import compileall

    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    for tree in (into, ROOT):
        compileall.compile_dir(tree / "agenticlens_frames", quiet=1)
    return into


def _fmt(result: dict | None) -> str:
    if result is None:
        return "not run or timed out"
    text = f"{result['seconds']:.2f} s, {result['max_rss_mib']:.0f} MiB"
    if result.get("tree_pss_mib"):
        text += f" ({result['tree_pss_mib']:.0f} MiB all processes)"
    return text


def _median(results: list[dict]) -> dict:
    """The run of median wall time (its memory figures with it)."""
    ordered = sorted(results, key=lambda r: r["seconds"])
    return ordered[(len(ordered) - 1) // 2]


def _peaks(runs: list[dict | None]) -> str:
    """Each run's peak for all processes, and (in brackets) what sampling 5 times less
    often would have seen of it: the median run's figure is one run's, the goal's is every
    run's."""
    return " ".join(
        f"{r['tree_pss_mib']:.0f} ({max(r['pss_samples'][::5], default=0):.0f})"
        for r in runs
        if r and r.get("tree_pss_mib")
    )


def _rss(runs: list[dict | None]) -> str:
    return " ".join(f"{r['max_rss_mib']:.0f}" for r in runs if r)


def _cpu_ratio(ours: list[dict], base: list[dict]) -> str:
    """Median CPU seconds of each, and their ratio."""
    a = statistics.median(r["cpu"] for r in ours)
    b = statistics.median(r["cpu"] for r in base)
    return f"{a:.2f} s / {b:.2f} s = {a / b:.2f}"


def _ratio(a: dict | None, b: dict | None) -> str:
    return f"{a['seconds'] / b['seconds']:.2f}" if a and b else "—"


def _beyond(ours: dict | None, fixed: dict | None, floor: dict | None) -> str:
    """(ours − fixed) / floor: how the size-dependent part of our run compares."""
    if not (ours and fixed and floor):
        return "—"
    return f"{(ours['seconds'] - fixed['seconds']) / floor['seconds']:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--package-max-cases", type=int, default=5000)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of ours and of the floor (medians)"
    )
    parser.add_argument(
        "--html", action="store_true", help="also write the HTML report (issue 19: JSON + CSVs)"
    )
    parser.add_argument(
        "--skip-load", action="store_true", help="skip the load+score-only measurements"
    )
    parser.add_argument(
        "--baseline", help="git ref whose `experiment run` is also timed, A/B with ours"
    )
    parser.add_argument(
        "--sample-interval",
        type=float,
        default=_measure_mod.INTERVAL,
        help="seconds between samples of the process tree's memory (default %(default)s)",
    )
    args = parser.parse_args()
    _SAMPLING["interval"] = args.sample_interval
    bin_dir = Path(sys.executable).parent
    ours_cli = [str(bin_dir / "agenticlens-frames"), "experiment", "run", "-q"]
    package_cli = [str(bin_dir / "agenticlens"), "experiment", "run"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base_env = None
        if args.baseline:
            tree = _baseline_tree(args.baseline, Path(tmp) / "baseline")
            # The console script imports the package from PYTHONPATH first: the baseline's.
            base_env = {"PYTHONPATH": str(tree)}
        # The fixed part of a run: the same command on a one-case experiment.
        one_case = make_synthetic(Path(tmp) / "n1", variants=4, trials=5, cases=1, seed=42)
        for n in args.cases:
            folder = Path(tmp) / f"n{n}"
            make_synthetic(folder, variants=4, trials=5, cases=n, seed=42)
            out = Path(tmp) / f"out{n}"
            run_package = n <= args.package_max_cases
            ours_load = pkg_load = None
            if not args.skip_load:
                ours_load = _measure(OURS_LOAD, folder, args.timeout)
                pkg_load = _measure(PACKAGE_LOAD, folder, args.timeout) if run_package else None
            ours_runs, floor_runs, base_runs = [], [], []

            def run_cli(
                name: str, env: dict[str, str] | None = None, out: Path = out, folder: Path = folder
            ) -> dict | None:
                shutil.rmtree(out / name, ignore_errors=True)
                body = _cli_body(ours_cli, f"{out}/{name}", args.html)
                return _measure(body, folder, args.timeout, child=True, env=env)

            durable_runs, fixed_runs = [], []

            def run_floor(durable: bool, out: Path = out, folder: Path = folder) -> dict | None:
                sizes = [p.stat().st_size for p in sorted((out / "ours").iterdir())]
                shutil.rmtree(out / "floor", ignore_errors=True)
                body = FLOOR.format(sizes=sizes, out=f"{out}/floor", durable=durable)
                return _measure(body, folder, args.timeout)

            for _ in range(max(1, args.repeat)):
                if base_env is not None:
                    base_runs.append(run_cli("base", base_env))
                ours_runs.append(run_cli("ours"))
                floor_runs.append(run_floor(durable=False))
                durable_runs.append(run_floor(durable=True))
                shutil.rmtree(out / "fixed", ignore_errors=True)
                fixed_body = _cli_body(ours_cli, f"{out}/fixed", args.html)
                fixed_runs.append(_measure(fixed_body, one_case, args.timeout, child=True))
            ours_e2e, floor = _median(ours_runs), _median(floor_runs)
            durable, fixed = _median(durable_runs), _median(fixed_runs)
            # The same run in one process: what the forked workers add (or cost).
            ours_one = _measure(
                _cli_body(ours_cli, f"{out}/ours1", args.html),
                folder,
                args.timeout,
                child=True,
                env={"AGENTICLENS_FRAMES_WORKERS": "1"},
            )
            pkg_e2e = (
                _measure(
                    _cli_body(package_cli, f"{out}/pkg", args.html),
                    folder,
                    args.timeout,
                    child=True,
                )
                if run_package
                else None
            )
            if base_runs:
                base = _median(base_runs)
                print(
                    f"N={n}: baseline {args.baseline} {_fmt(base)} | ours {_fmt(ours_e2e)} | "
                    f"ours/baseline {_ratio(ours_e2e, base)}, baseline/floor {_ratio(base, floor)}"
                    f" || CPU median ours/baseline {_cpu_ratio(ours_runs, base_runs)}"
                    " || ours/baseline per run: "
                    + " ".join(_ratio(o, b) for o, b in zip(ours_runs, base_runs, strict=True))
                    # The memory goal is every run's peak, the baseline's as well as ours.
                    + f" || baseline, all processes per run, MiB (every 5th sample): "
                    f"{_peaks(base_runs)}; largest process per run: {_rss(base_runs)}",
                    flush=True,
                )
            written = sum(p.stat().st_size for p in (out / "ours").iterdir()) / 2**20
            # What the goal's floor leaves out: our outputs are fsync-ed (atomic, durable
            # writes), and a run starts an interpreter, parses its command line and imports
            # its modules whatever its size (measured on a one-case experiment).
            print(
                f"N={n}: floor with every output fsync-ed {_fmt(durable)} | ours on one case "
                f"(start-up, imports, tiny outputs) {_fmt(fixed)} || ours/durable floor "
                f"{_ratio(ours_e2e, durable)} | one case/floor {_ratio(fixed, floor)} | "
                f"(ours - one case)/floor {_beyond(ours_e2e, fixed, floor)}",
                flush=True,
            )
            rows.append((n, ours_load, pkg_load, ours_e2e, pkg_e2e, floor))
            print(
                f"N={n}: load+score ours {_fmt(ours_load)} | package {_fmt(pkg_load)} || "
                f"experiment run ours {_fmt(ours_e2e)} (one process: {_fmt(ours_one)}) | "
                f"package {_fmt(pkg_e2e)} | floor (parse + write {written:.0f} MiB) "
                f"{_fmt(floor)} || ours/floor per run: "
                + " ".join(_ratio(o, f) for o, f in zip(ours_runs, floor_runs, strict=True))
                + f" || ours, all processes per run, MiB (every 5th sample): {_peaks(ours_runs)}"
                + f"; largest process per run: {_rss(ours_runs)}",
                flush=True,
            )
    print(
        "\n| N | load+score ours | package | speed-up | run ours | package | floor | "
        "package/ours | ours/floor |"
    )
    print("|---:|---|---|---:|---|---|---|---:|---:|")
    for n, ol, pl, oe, pe, fl in rows:
        up1 = f"{pl['seconds'] / ol['seconds']:.0f}×" if pl and ol else "—"
        up2 = f"{pe['seconds'] / oe['seconds']:.0f}×" if pe and oe else "—"
        print(
            f"| {n} | {_fmt(ol)} | {_fmt(pl)} | {up1} | {_fmt(oe)} | {_fmt(pe)} | {_fmt(fl)} | "
            f"{up2} | {_ratio(oe, fl)}× |"
        )


if __name__ == "__main__":
    main()
