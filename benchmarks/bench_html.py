"""HTML report: file size and time until its figures are drawn, in headless chromium.

Experiment: 4 variants × 5 trials × 1000 cases (``agenticlens_frames.testing.make_synthetic``,
seed 1), or
``--experiment DIR`` with ``manifest.yaml`` and ``suite.yaml``. Goals: at most 10 MB, drawn
within 3 s at 1000 cases (issue 4) and within 2 s at 5000 cases (issue 19: ``--cases 5000``).

Two times per page, from navigation start in the page's own clock (1280 × 900 window):

* ``shown``: every figure in the window on opening is drawn and the controls work (our
  page draws the others as they come into view or in idle time; the script checks, after
  the page says so, that every figure intersecting the window has been drawn by plotly);
* ``all``: every figure of the page is drawn (ours: the last one drawn in idle time).

``--cpu`` traces each load and adds the CPU time of the page's threads until then: on a
loaded machine the wall times mostly measure waiting for a core.

Compared in the same run with two named baselines:

* ``agenticlens-0.10``: the real package's ``--html`` page (static, no figures), time to
  its ``load`` event;
* ``plotly-write_html``: plotly's own ``Figure.to_html`` of the same six figures in one
  page (plotly.js inlined once, the heatmap with every case), time until every plot has
  been laid out;
* ``plotly.js-floor``: plotly.js inlined and one three-point line drawn, nothing else:
  what any page that inlines plotly pays on this machine before drawing anything of its
  own (on a loaded machine this floor alone can pass 2 s; compare against it);
* ``plotly.js-streamed``: the same, with plotly.js started as our page starts it (its text
  run as a ``blob:`` script with V8's compile hint, ``report/assets/loader.js``), so
  compiled off the main thread: the floor for a page built like ours.

``--cpu`` reports the page's main thread and, separately, its other threads (where a
streamed script is compiled): moving work off the main thread only pays with a core free.

With ``--tree DIR`` (repeatable) the page rendered by the package in another source tree
(``git -C MAIN archive HEAD | tar -x -C DIR`` gives main's) is timed in the same run, its
loads alternating with ours; ``--baseline REF`` does the same for a commit of this
repository (unpacked with ``git archive``, as ``bench_recorded.py --baseline`` does).

Run: ``./dev bench`` or ``python benchmarks/bench_html.py [--cases N] [--repeat R]
[--tree DIR] [--baseline REF] [--no-plotly-page] [--no-reference]``.
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

from agenticlens_frames.testing import make_synthetic

REPO = Path(__file__).resolve().parents[1]
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PLOTLY_READY = (
    "Array.from(document.querySelectorAll('.plotly-graph-div'))"
    ".every(gd => gd._fullLayout && gd.querySelector('.main-svg'))"
)
TRACE_CATEGORIES = [
    "toplevel",  # the tasks of the page's other threads (a streamed script compiles there)
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "blink.user_timing",
]
#: The figures of our page intersecting the window that plotly has not drawn (expected: none).
UNDRAWN_IN_VIEW = """[...document.querySelectorAll('.fig')].filter(gd => {
    const r = gd.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight && !gd.querySelector('.main-svg'); })
    .map(gd => gd.id)"""


def _experiment(args: argparse.Namespace, work: Path) -> Path:
    if args.experiment:
        return Path(args.experiment)
    out = work / "experiment"
    make_synthetic(out, variants=4, trials=5, cases=args.cases, seed=1)
    return out


def _plotly_page(analysis: object, path: Path) -> None:
    from agenticlens_frames import viz

    figs = viz.figures(analysis, max_cases=None)  # type: ignore[arg-type]
    parts = [
        fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"fig-{name}")
        for i, (name, fig) in enumerate(figs.items())
    ]
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        + "".join(parts)
        + "</body></html>",
        encoding="utf-8",
    )


def _floor_page(path: Path, streamed: bool = False) -> None:
    """plotly.js and one small line drawn: inline, or ``streamed`` as our page starts it."""
    from agenticlens_frames.report.html import _asset, _plotly_js

    js = _plotly_js()

    draw = (
        "Plotly.newPlot('f', [{y: [1, 3, 2]}]).then(function () {"
        " window.alfDrawnMs = performance.now(); document.body.dataset.ready = 'true'; });"
    )
    scripts = (
        f"<script type='text/plain' id='alf-plotly'>{js}</script>"
        f"<script>{_asset('loader.js')}</script>"
        f"<script>window.alfPlotly.then(function () {{ {draw} }});</script>"
        if streamed
        else f"<script>{js}</script><script>{draw}</script>"
    )
    path.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><div id='f'></div>"
        f"{scripts}</body></html>",
        encoding="utf-8",
    )


def _reference_page(folder: Path, path: Path) -> bool:
    exe = Path(sys.executable).parent / "agenticlens"
    if not exe.exists():
        return False
    command = [str(exe), "experiment", "run", "manifest.yaml", "suite.yaml"]
    command += ["--save", str(path.with_suffix(".json")), "--html", str(path)]
    done = subprocess.run(
        command,
        cwd=folder,
        capture_output=True,
    )
    return path.exists() and done.returncode in (0, 1, 2, 3)


def _tree_page(tree: Path, folder: Path, path: Path) -> None:
    """The page as the package in ``tree`` renders it (e.g. main's, for an A/B in one run)."""
    code = (
        "import sys; from pathlib import Path; "
        "from agenticlens_frames import analyze, load_experiment; "
        "from agenticlens_frames.report.html import render_html; "
        "f = Path(sys.argv[1]); a = analyze(load_experiment(f / 'manifest.yaml', "
        "f / 'suite.yaml')); Path(sys.argv[2]).write_text(render_html(a), encoding='utf-8')"
    )
    # Run from inside the tree: ``python -c`` puts the working folder first on the path.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-c", code, str(folder.resolve()), str(path.resolve())]
    subprocess.run(command, env=env, cwd=tree, check=True)


def _baseline_tree(ref: str, into: Path) -> Path:
    """This repository at ``ref`` (``git archive``), unpacked into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _thread_cpu(trace: bytes, cutoffs: tuple[float, float]) -> dict[str, tuple[float, float]]:
    """CPU seconds the page's main thread (``main``) and its other threads (``other``:
    compositor, raster, script streaming) spent from navigation start to each cutoff
    (seconds in the page's clock), from a chromium trace: on a loaded machine wall times
    swell with waiting for a core, CPU times much less."""
    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    start = next(
        e
        for e in events
        if e.get("name") == "navigationStart"
        and e["args"]["data"].get("documentLoaderURL", "").startswith("file:")
    )
    tasks: dict[str, dict[int, list[tuple[float, float, float]]]] = {"main": {}, "other": {}}
    for e in events:
        if e.get("ph") != "X" or e.get("pid") != start["pid"] or e["ts"] < start["ts"]:
            continue
        if e["tid"] == start["tid"] and e["name"] == "RunTask":
            kind = "main"
        elif e["tid"] != start["tid"] and e["name"].endswith("RunTask"):
            kind = "other"  # ThreadPool_RunTask, ThreadControllerImpl::RunTask
        else:
            continue
        tasks[kind].setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"], e.get("tdur", 0)))
    out: dict[str, tuple[float, float]] = {}
    for kind, threads in tasks.items():
        totals = []
        for cutoff in cutoffs:
            limit, total = start["ts"] + cutoff * 1e6, 0.0
            for spans in threads.values():
                end = 0.0
                for begin, finish, cpu in sorted(spans):
                    if begin >= limit:
                        break
                    if begin >= end:  # a task nested in the previous one is already counted
                        total, end = total + cpu, finish
            totals.append(total / 1e6)
        out[kind] = (totals[0], totals[1])
    return out


def _time_to_draw(
    pages: dict[str, Path], repeat: int, cpu: bool = False
) -> dict[str, dict[str, float]]:
    """Median seconds until each page is shown (window drawn) and until all is drawn, and
    with ``cpu`` the CPU seconds of the page's main thread and of its other threads (``bg``)
    until then: ``{metric: {page: seconds}}``."""
    from playwright.sync_api import sync_playwright

    runs: dict[str, dict[str, list[float]]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        for _ in range(repeat):
            for name, path in pages.items():
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                if cpu:
                    browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
                # Times are from navigation start, in the page's own clock.
                if name == "ours":
                    # The page's CSP forbids playwright's eval-based polling: wait on the
                    # DOM flags its script sets (window drawn, then every figure drawn).
                    page.goto(path.as_uri(), wait_until="commit")
                    page.wait_for_selector("body[data-viewport-drawn='true']", timeout=120_000)
                    undrawn = page.evaluate(UNDRAWN_IN_VIEW)
                    if undrawn:
                        raise SystemExit(f"figures in view not drawn when shown: {undrawn}")
                    page.wait_for_selector("body[data-ready='true']", timeout=120_000)
                    first = page.evaluate("window.alfViewportMs") / 1000
                    last = page.evaluate("window.alfDrawnMs") / 1000
                elif name.startswith("tree "):
                    # Another tree's page: one that draws everything at once sets only
                    # data-ready, so its shown time is its all-drawn time.
                    page.goto(path.as_uri(), wait_until="commit")
                    page.wait_for_selector("body[data-ready='true']", timeout=120_000)
                    last = page.evaluate("window.alfDrawnMs") / 1000
                    first = page.evaluate("window.alfViewportMs || window.alfDrawnMs") / 1000
                elif name.startswith("plotly.js-"):
                    page.goto(path.as_uri(), wait_until="commit")
                    page.wait_for_selector("body[data-ready='true']", timeout=120_000)
                    first = last = page.evaluate("window.alfDrawnMs") / 1000
                elif name == "plotly-write_html":
                    # plotly's page draws every figure as its script runs: shown = all.
                    page.goto(path.as_uri(), wait_until="commit")
                    page.wait_for_function(PLOTLY_READY, timeout=120_000)
                    first = last = page.evaluate("performance.now()") / 1000
                else:  # a static page: drawn when loaded
                    page.goto(path.as_uri(), wait_until="load")
                    first = last = (
                        page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
                        / 1000
                    )
                got = {"shown": first, "all": last}
                if cpu:
                    threads = _thread_cpu(browser.stop_tracing(), (first, last))
                    got["shown cpu"], got["all cpu"] = threads["main"]
                    got["shown cpu bg"], got["all cpu bg"] = threads["other"]
                for metric, value in got.items():
                    runs.setdefault(metric, {}).setdefault(name, []).append(value)
                page.close()
        browser.close()
    return {
        metric: {name: statistics.median(values) for name, values in by_page.items()}
        for metric, by_page in runs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--experiment", help="folder with manifest.yaml and suite.yaml")
    parser.add_argument(
        "--no-reference", action="store_true", help="skip the real package's page (slow)"
    )
    parser.add_argument(
        "--no-plotly-page", action="store_true", help="skip plotly's own to_html page (slow)"
    )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="also trace each load: the page's main-thread CPU seconds until shown and all drawn",
    )
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="also time the page of the package in this source tree (e.g. main's), same data",
    )
    parser.add_argument(
        "--baseline",
        help="also time the page of this git ref of the repository (e.g. main), same data",
    )
    args = parser.parse_args()

    from agenticlens_frames import analyze, load_experiment
    from agenticlens_frames.report.html import render_html

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = _experiment(args, work)
        analysis = analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))
        start = time.perf_counter()
        ours = work / "ours.html"
        ours.write_text(render_html(analysis), encoding="utf-8")
        render_s = time.perf_counter() - start
        pages = {"ours": ours}
        for i, tree in enumerate(args.tree):
            _tree_page(Path(tree), folder, work / f"tree{i}.html")
            pages[f"tree {Path(tree).name}"[:19]] = work / f"tree{i}.html"
        if args.baseline:
            base = _baseline_tree(args.baseline, work / "baseline")
            _tree_page(base, folder, work / "baseline.html")
            pages[f"tree {args.baseline}"[:19]] = work / "baseline.html"
        if not args.no_plotly_page:
            _plotly_page(analysis, work / "plotly.html")
            pages["plotly-write_html"] = work / "plotly.html"
        _floor_page(work / "floor.html")
        pages["plotly.js-floor"] = work / "floor.html"
        _floor_page(work / "streamed.html", streamed=True)
        pages["plotly.js-streamed"] = work / "streamed.html"
        if not args.no_reference and _reference_page(folder, work / "agenticlens.html"):
            pages["agenticlens-0.10"] = work / "agenticlens.html"
        times = _time_to_draw(pages, args.repeat, cpu=args.cpu)
        shown, every = times["shown"], times["all"]

        shape = f"{len(analysis.variants)}×{analysis.info['trial_count']}×{args.cases}"
        print(f"HTML report, {shape} (variants × trials × cases), median of {args.repeat} loads")
        print(f"render_html in Python: {render_s:.2f} s")
        metrics = list(times)
        print(f"{'page':<20}{'size MB':>9}" + "".join(f"{m + ' s':>15}" for m in metrics))
        for name, path in pages.items():
            size = path.stat().st_size
            print(
                f"{name:<20}{size / 1e6:>9.2f}"
                + "".join(f"{times[m][name]:>15.2f}" for m in metrics)
            )
        limit = 2.0 if args.cases >= 5000 else 3.0
        size = ours.stat().st_size
        print(
            f"goals: size ≤ 10 MB {'met' if size <= 10e6 else 'MISSED'} ({size / 1e6:.2f} MB); "
            f"shown (figures in the window drawn, controls live) ≤ {limit:g} s "
            f"{'met' if shown['ours'] <= limit else 'MISSED'} at {shown['ours']:.2f} s; "
            f"every figure drawn at {every['ours']:.2f} s"
        )
        for metric in (m for m in metrics if not m.endswith(" bg")):
            floor = times[metric]["plotly.js-floor"]
            print(
                f"{metric}: the plotly.js floor (same run) {floor:.2f} s; "
                + "; ".join(
                    f"{name} {value - floor:+.2f} s ({value / floor:.2f}×)"
                    for name, value in times[metric].items()
                    if name != "plotly.js-floor"
                )
            )


if __name__ == "__main__":
    main()
