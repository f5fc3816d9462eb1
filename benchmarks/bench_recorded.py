"""Load + score and end-to-end `experiment run` against the real agenticlens 0.10.0.

Issues 2 and 3 ask for: loading and scoring make_synthetic V=4, T=5 at N=5000 (the
package: about 26 s and 1.4 GiB) and end-to-end `experiment run` with every output at
N = 1000, 5000 and 20000 (the package: 8.7 s, 208 s, did not finish in 11 min).

Every measurement runs in a fresh subprocess that reports its own wall time and peak RSS,
so both tools are measured the same way in the same run. The package is run only up to
``--package-max-cases`` (its case lookup is quadratic).

    python benchmarks/bench_recorded.py [--cases 1000 5000 20000] [--package-max-cases 5000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAKE_SYNTHETIC = HERE.parent.parent / "shared" / "tools" / "make_synthetic.py"

# Each probe prints {"seconds": ..., "max_rss_mib": ...} as its last line.
_PROBE = textwrap.dedent(
    """
    import json, resource, sys, time
    folder = sys.argv[1]
    start = time.perf_counter()
    {body}
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({{"seconds": seconds, "max_rss_mib": rss}}))
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


def _cli_body(command: list[str], out: str) -> str:
    args = [
        *command,
        "manifest.yaml",
        "suite.yaml",
        "--save",
        f"{out}/r.json",
        "--html",
        f"{out}/r.html",
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


def _measure(body: str, folder: Path, timeout: float, *, child: bool = False) -> dict | None:
    code = _PROBE.format(body=textwrap.dedent(body).strip())
    if child:  # CLI runs: report the command's peak RSS, not the probe's
        code = code.replace("RUSAGE_SELF", "RUSAGE_CHILDREN")
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(folder)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _fmt(result: dict | None) -> str:
    if result is None:
        return "not run or timed out"
    return f"{result['seconds']:.2f} s, {result['max_rss_mib']:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--package-max-cases", type=int, default=5000)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    bin_dir = Path(sys.executable).parent
    ours_cli = [str(bin_dir / "agenticlens-frames"), "experiment", "run", "-q"]
    package_cli = [str(bin_dir / "agenticlens"), "experiment", "run"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.cases:
            folder = Path(tmp) / f"n{n}"
            subprocess.run(
                [
                    sys.executable,
                    str(MAKE_SYNTHETIC),
                    str(folder),
                    "--variants",
                    "4",
                    "--trials",
                    "5",
                    "--cases",
                    str(n),
                    "--seed",
                    "42",
                ],
                check=True,
                capture_output=True,
            )
            out = Path(tmp) / f"out{n}"
            run_package = n <= args.package_max_cases
            ours_load = _measure(OURS_LOAD, folder, args.timeout)
            pkg_load = _measure(PACKAGE_LOAD, folder, args.timeout) if run_package else None
            ours_e2e = _measure(
                _cli_body(ours_cli, f"{out}/ours"), folder, args.timeout, child=True
            )
            pkg_e2e = (
                _measure(_cli_body(package_cli, f"{out}/pkg"), folder, args.timeout, child=True)
                if run_package
                else None
            )
            rows.append((n, ours_load, pkg_load, ours_e2e, pkg_e2e))
            print(
                f"N={n}: load+score ours {_fmt(ours_load)} | package {_fmt(pkg_load)} || "
                f"experiment run ours {_fmt(ours_e2e)} | package {_fmt(pkg_e2e)}",
                flush=True,
            )
    print(
        "\n| N | load+score ours | package | speed-up | run (all outputs) ours | package | "
        "speed-up |"
    )
    print("|---:|---|---|---:|---|---|---:|")
    for n, ol, pl, oe, pe in rows:
        up1 = f"{pl['seconds'] / ol['seconds']:.0f}×" if pl and ol else "—"
        up2 = f"{pe['seconds'] / oe['seconds']:.0f}×" if pe and oe else "—"
        print(
            f"| {n} | {_fmt(ol)} | {_fmt(pl) if n <= args.package_max_cases else 'not run'} | "
            f"{up1} | {_fmt(oe)} | {_fmt(pe) if n <= args.package_max_cases else 'not run'} | "
            f"{up2} |"
        )


if __name__ == "__main__":
    main()
