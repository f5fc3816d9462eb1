"""Live targets: concurrency across cases *and* trials against the real agenticlens 0.10.0.

Issue 5 asks for: 4 variants x 5 trials x 50 cases (1 000 calls) against targets that take
50 ms per call, python and http. Run the way the package runs it (trials one after
another, cases one at a time) that is at least 1 000 x 50 ms = 50 s; the goal is <= 3 s
at concurrency 32, and the overhead per attempt in ms.

Measured, each in a fresh subprocess that times only the run (not the imports):

* ours at ``--concurrency`` (default 32: 8 per variant) for a sync python target
  (``time.sleep``), an async python target (``asyncio.sleep``) and an http target (a
  small asyncio HTTP/1.1 server in another process that sleeps 50 ms per request), with
  the journal on disk (``--run-dir``);
* the same requests sent by bare ``httpx`` at the same concurrency (one connection per
  client, as the runner spreads them; ``--big-pools`` adds one pool per variant): what
  this machine (two cores shared by client and server) allows without any of our work;
* the same requests over bare asyncio streams (no client library) and the same 50 ms
  sleeps on one bare event loop, ``concurrency`` at a time: the floors of this machine for
  the http and the python targets;
* ours at concurrency 1 with 0 ms targets: the runner's own cost per attempt (dispatch,
  payload validation, scoring, journal write + fsync), with and without a run folder;
* with ``--package``: the real package on the same manifests, ``max_workers`` 1 (its
  default: everything sequential) and 8 (cases concurrent within a trial, trials still
  sequential). That takes about 2 x 60 s.

Issue 19 asks for 10 000 calls (4 variants x 5 trials x 500 cases) at concurrency 256
within 1.3x the ideal ``calls x 50 ms / concurrency`` = 1.95 s (every slot always full),
for the python (async and sync) and the http targets, against bare httpx at the same
concurrency. Each "ours" row times ``run_experiment`` whole: planning, the calls, the
journal (written and fsync-ed as the run goes), and the tables built and written to the
run folder at the end; not the interpreter's start-up and imports::

    python benchmarks/bench_live.py --calls 10000 --concurrency 256 \
        --targets python-async,python-sync,http --no-zero

    python benchmarks/bench_live.py [--calls 1000] [--concurrency 32] [--targets ...] [--package]

To compare with another tree (main's, say) in the same run, alternating, medians of N::

    git -C /path/to/main archive HEAD | tar -x -C /tmp/main-tree
    python benchmarks/bench_live.py --calls 10000 --concurrency 256 --targets python-async \
        --no-zero --baseline-tree /tmp/main-tree --repeat 5
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from statistics import median

VARIANTS, TRIALS, CASES, DELAY = 4, 5, 50, 0.05
GOAL_RATIO = 1.3

TARGETS = """
import asyncio, os, time

DELAY = float(os.environ.get("BENCH_DELAY", "0.05"))

def _payload(text):
    return {"output": f"answer {text}: refund", "trace": {"total_latency_ms": 50.0,
            "estimated_cost_usd": 0.001, "spans": [{"tool_name": "lookup"}]}}

def sleep_sync(text, case=None):
    if DELAY:
        time.sleep(DELAY)
    return _payload(text)

async def sleep_async(text, case=None):
    if DELAY:
        await asyncio.sleep(DELAY)
    return _payload(text)
"""

OURS = """
import json, sys, time
from agenticlens_frames.runner import run_experiment
manifest, suite, concurrency, run_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
limits = {{f"v{{i}}": max(1, concurrency // {variants}) for i in range({variants})}}
start, cpu = time.perf_counter(), time.process_time()
result = run_experiment(manifest, suite, concurrency=concurrency, variant_concurrency=limits,
                        run_dir=run_dir or None, progress=False)
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
ok = int((result.run.attempts["status"] == "ok").sum())
print(json.dumps({{"seconds": seconds, "cpu": cpu, "attempts": len(result.run.attempts),
                  "ok": ok}}))
"""

PACKAGE = """
import json, sys, time
from pathlib import Path
from agenticlens.experiments.runner import load_manifest, load_experiment_suite, run_experiment
manifest = load_manifest(Path(sys.argv[1]))
suite = load_experiment_suite(Path(sys.argv[2]))
start = time.perf_counter()
report = run_experiment(manifest, suite)
seconds = time.perf_counter() - start
ok = sum(c.target_status == "ok" for v in report.variants for t in v.trials if t.report
         for c in t.report.cases)
print(json.dumps({"seconds": seconds, "ok": ok}))
"""


# A minimal keep-alive HTTP/1.1 server on asyncio: the benchmark measures the client.
SERVER = """
import asyncio, json, sys

async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            length = 0
            for line in head.split(b"\\r\\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = json.loads(await reader.readexactly(length))
            await asyncio.sleep(float(sys.argv[1]))
            reply = json.dumps({"output": f"answer {body['input']}: refund",
                                "trace": {"total_latency_ms": 50.0, "estimated_cost_usd": 0.001,
                                          "spans": [{"tool_name": "lookup"}]}}).encode()
            writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\n"
                         b"Content-Length: " + str(len(reply)).encode() + b"\\r\\n\\r\\n" + reply)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""

HTTPX = """
import asyncio, json, sys, time
import httpx

async def main(url, concurrency, n, pools):
    # ``concurrency`` workers, each sending its requests one after another over a client
    # (pool) of ``concurrency // pools`` connections; pools = concurrency is one connection
    # per client, as the runner spreads them (httpx scans a pool on every request).
    per = max(1, concurrency // pools)
    limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
    tls = httpx.create_ssl_context()
    clients = [httpx.AsyncClient(limits=limits, verify=tls) for _ in range(pools)]
    todo = iter(range(n))

    async def worker(client):
        for i in todo:
            body = json.dumps({"input": i, "case_id": str(i)})
            r = await client.post(url, content=body)
            r.json()

    start = time.perf_counter()
    await asyncio.gather(*(worker(clients[w % pools]) for w in range(per * pools)))
    seconds = time.perf_counter() - start
    for client in clients:
        await client.aclose()
    return seconds

seconds = asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
print(json.dumps({"seconds": seconds}))
"""

# The same requests sent by bare aiohttp (one connection per session, as for httpx above):
# the other mainstream asyncio client, measured to see whether it would lift the bound.
AIOHTTP = """
import asyncio, json, sys, time
import aiohttp

async def main(url, concurrency, n):
    todo = iter(range(n))

    async def worker(session):
        for i in todo:
            body = json.dumps({"input": i, "case_id": str(i)})
            async with session.post(url, data=body,
                                    headers={"Content-Type": "application/json"}) as r:
                json.loads(await r.read())

    sessions = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
                for _ in range(concurrency)]
    start = time.perf_counter()
    await asyncio.gather(*(worker(s) for s in sessions))
    seconds = time.perf_counter() - start
    for s in sessions:
        await s.close()
    return seconds

print(json.dumps({"seconds": asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))}))
"""

# The same requests over bare asyncio streams (keep-alive HTTP/1.1, no client library): what
# the machine and the server allow at all.
STREAMS = """
import asyncio, json, sys, time
from urllib.parse import urlsplit

async def main(url, concurrency, n):
    u = urlsplit(url)
    todo = iter(range(n))

    async def worker():
        reader, writer = await asyncio.open_connection(u.hostname, u.port)
        for i in todo:
            body = json.dumps({"input": i, "case_id": str(i)}).encode()
            writer.write(b"POST " + u.path.encode() + b" HTTP/1.1\\r\\nHost: x\\r\\n"
                         b"Content-Type: application/json\\r\\nContent-Length: "
                         + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\\r\\n")
                          if line.lower().startswith(b"content-length:"))
            json.loads(await reader.readexactly(length))
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start

print(json.dumps({"seconds": asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))}))
"""

# The python targets' floor: the same sleeps on one event loop, ``concurrency`` at a time.
SLEEPS = """
import asyncio, json, sys, time

async def main(concurrency, n):
    todo = iter(range(n))

    async def worker():
        for _ in todo:
            await asyncio.sleep(0.05)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start

print(json.dumps({"seconds": asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))}))
"""


# The sync python target's floor: the same sleeps on a plain thread pool of ``concurrency``
# threads (started before the clock, as a pool that has run a while has them), each result
# handed back to an event loop as ``run_in_executor`` does.
THREADS = """
import asyncio, json, sys, time
from concurrent.futures import ThreadPoolExecutor

async def main(concurrency, n):
    pool = ThreadPoolExecutor(concurrency)
    list(pool.map(time.sleep, [0.0] * concurrency * 4))  # start the threads
    loop = asyncio.get_running_loop()
    todo = iter(range(n))

    async def worker():
        for _ in todo:
            await loop.run_in_executor(pool, time.sleep, 0.05)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    seconds = time.perf_counter() - start
    pool.shutdown()
    return seconds

print(json.dumps({"seconds": asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))}))
"""


def _write_experiment(folder: Path, port: int, cases: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "targets.py").write_text(TARGETS)
    cases = [
        {
            "id": f"c{i}",
            "name": f"case {i}",
            "input": f"question {i}",
            "expected_contains": ["refund"],
        }
        for i in range(cases)
    ]
    (folder / "suite.json").write_text(
        json.dumps({"name": "bench", "version": "1", "cases": cases})
    )
    targets = {
        "python-sync": ("python", "targets.py:sleep_sync"),
        "python-async": ("python", "targets.py:sleep_async"),
        "http": ("http", f"http://127.0.0.1:{port}/agent"),
    }
    for name, (kind, target) in targets.items():
        for workers in (1, 8):
            manifest = {
                "name": f"bench-{name}",
                "version": "1",
                "baseline_variant_id": "v0",
                "trial_count": TRIALS,
                "random_seed": 1,
                "max_workers": workers,
                "variants": [
                    {"id": f"v{i}", "name": f"v{i}", "target_kind": kind, "target": target}
                    for i in range(VARIANTS)
                ],
            }
            (folder / f"{name}-w{workers}.json").write_text(json.dumps(manifest))


def _measure(code: str, args: list[str], cwd: Path, env: dict | None = None) -> dict:
    import os

    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--calls",
        type=int,
        default=VARIANTS * TRIALS * CASES,
        help=f"total calls, a multiple of {VARIANTS * TRIALS} (variants x trials)",
    )
    parser.add_argument(
        "--targets",
        default="python-sync,python-async,http",
        help="comma-separated subset of python-sync, python-async, http",
    )
    parser.add_argument("--no-zero", action="store_true", help="skip the 0 ms overhead runs")
    parser.add_argument(
        "--big-pools",
        action="store_true",
        help="also bare httpx with one pool per variant (the runner's layout before issue 19)",
    )
    parser.add_argument("--package", action="store_true", help="also run agenticlens 0.10.0")
    parser.add_argument(
        "--baseline-tree",
        metavar="DIR",
        help="also run ours from another source tree (e.g. main's, from `git archive`), "
        "alternating with this one, and compare medians",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each 'ours' row (medians shown)"
    )
    parser.add_argument(
        "--no-http-clients",
        action="store_true",
        help="skip bare httpx and aiohttp (slow); '/ httpx' is then left blank",
    )
    args = parser.parse_args()
    cases = max(1, args.calls // (VARIANTS * TRIALS))
    attempts = VARIANTS * TRIALS * cases
    targets = [t for t in args.targets.split(",") if t]
    sequential = attempts * DELAY
    # The ideal: every call 50 ms, the slots always full (no rounding up).
    ideal = attempts * DELAY / args.concurrency
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(DELAY)], stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(server.stdout.readline().split()[1])
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            _write_experiment(folder, port, cases)
            ours = OURS.format(variants=VARIANTS)
            print(
                f"{VARIANTS} variants x {TRIALS} trials x {cases} cases = {attempts} calls of "
                f"{DELAY * 1000:.0f} ms; sequential lower bound {sequential:.0f} s, ideal at "
                f"concurrency {args.concurrency}: {ideal:.2f} s"
            )
            print()
            # Bare httpx first (one connection per client): every row below is also given
            # as a ratio to it.
            url = f"http://127.0.0.1:{port}/agent"
            pools = [str(args.concurrency), str(attempts)]
            bare = (
                None
                if args.no_http_clients
                else _measure(HTTPX, [url, *pools, str(args.concurrency)], folder)["seconds"]
            )
            head = f"{'run':<44} {'seconds':>8} {'vs seq.':>8} {'/ ideal':>8} {'/ httpx':>8}"
            print(f"{head} {'overhead ms/attempt':>20}")

            def row(label: str, seconds: float) -> None:
                overhead = (seconds - ideal) / attempts * 1000 * args.concurrency
                versus = f"{seconds / bare:>8.2f}" if bare else f"{'':>8}"
                print(
                    f"{label:<44} {seconds:>8.2f} {sequential / seconds:>7.1f}x "
                    f"{seconds / ideal:>8.2f} {versus} {overhead:>20.2f}"
                )

            if bare is not None:
                row(f"bare httpx, concurrency {args.concurrency}", bare)
            if args.big_pools and bare is not None:
                big = _measure(HTTPX, [url, *pools, str(VARIANTS)], folder)["seconds"]
                row(f"bare httpx, {VARIANTS} pools of {args.concurrency // VARIANTS}", big)
            try:
                import aiohttp  # noqa: F401  (only measured when installed)
            except ImportError:
                print(f"{'bare aiohttp':<44} skipped: aiohttp is not installed")
            else:
                if bare is not None:
                    got = _measure(AIOHTTP, [url, str(args.concurrency), str(attempts)], folder)
                    row(f"bare aiohttp, concurrency {args.concurrency}", got["seconds"])
            streams = _measure(STREAMS, [url, str(args.concurrency), str(attempts)], folder)
            row(f"bare asyncio streams, concurrency {args.concurrency}", streams["seconds"])
            sleeps = _measure(SLEEPS, [str(args.concurrency), str(attempts)], folder)
            row(f"bare asyncio.sleep, concurrency {args.concurrency}", sleeps["seconds"])
            if "python-sync" in targets:
                floor = [
                    _measure(THREADS, [str(args.concurrency), str(attempts)], folder)["seconds"]
                    for _ in range(max(1, args.repeat))
                ]
                label = f"bare thread pool time.sleep, {args.concurrency} threads"
                row(label + (f" (median of {len(floor)})" if len(floor) > 1 else ""), median(floor))
            # This checkout, whatever the environment's PYTHONPATH says.
            trees = {"ours": str(Path(__file__).resolve().parents[1])}
            if args.baseline_tree:
                trees["baseline"] = str(Path(args.baseline_tree).resolve())
            for name in targets:
                times: dict[str, list[float]] = {tree: [] for tree in trees}
                cpus: dict[str, list[float]] = {tree: [] for tree in trees}
                for _ in range(max(1, args.repeat)):
                    for tree, source in trees.items():  # alternating: load drifts
                        run_dir = str(folder / f"run-{name}-{tree}-{len(times[tree])}")
                        r = _measure(
                            ours,
                            [f"{name}-w8.json", "suite.json", str(args.concurrency), run_dir],
                            folder,
                            env={"PYTHONPATH": source},
                        )
                        assert r["ok"] == attempts, r
                        times[tree].append(r["seconds"])
                        cpus[tree].append(r["cpu"])
                for tree, got in times.items():
                    runs = f" (median of {len(got)})" if len(got) > 1 else ""
                    row(f"{tree} {name}, concurrency {args.concurrency}{runs}", median(got))
                    # The run's process only (all its threads), not the server's.
                    cpu = median(cpus[tree])
                    print(
                        f"{'':<44} CPU {cpu:.2f} s, {cpu / attempts * 1000:.3f} ms per call; "
                        f"runs {', '.join(f'{t:.2f}' for t in got)} s"
                    )
                if args.baseline_tree:
                    ratio = median(times["baseline"]) / median(times["ours"])
                    print(f"{'':<44} ours is {ratio:.2f}x faster than the baseline tree")
            if len(targets) and args.concurrency:
                print(
                    f"goal (issue 19): within {GOAL_RATIO}x the ideal {ideal:.2f} s, "
                    f"i.e. <= {GOAL_RATIO * ideal:.2f} s"
                )
            for journal in () if args.no_zero else (False, True):
                run_dir = str(folder / f"run-zero-{journal}") if journal else ""
                r = _measure(
                    ours,
                    ["python-sync-w1.json", "suite.json", "1", run_dir],
                    folder,
                    env={"BENCH_DELAY": "0"},
                )
                label = f"ours 0 ms target, sequential, journal {'on' if journal else 'off'}"
                print(
                    f"{label:<44} {r['seconds']:>8.2f} {'':>8} "
                    f"{r['seconds'] / attempts * 1000:>20.3f}"
                )
            if args.package:
                for name in ("python-sync", "http"):
                    for workers in (1, 8):
                        r = _measure(PACKAGE, [f"{name}-w{workers}.json", "suite.json"], folder)
                        print(
                            f"{'agenticlens 0.10.0 ' + name + f', max_workers {workers}':<44} "
                            f"{r['seconds']:>8.2f} {sequential / r['seconds']:>7.1f}x"
                        )
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
