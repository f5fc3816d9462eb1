"""Shared fixtures: generated experiments and the real agenticlens package as a reference."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from agenticlens_frames.testing import make_synthetic as generate

# Property tests draw the same examples on every run: a change lands on one CI run, which
# must not pass or fail by the draw, and a failure is reproduced by running it again.
# HYPOTHESIS_PROFILE=explore draws new examples (and remembers failing ones) when hunting.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
EXAMPLE = DATA / "support"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def example_without_latency(folder: Path, variant: str = "prompt-v2") -> Path:
    """A copy of the bundled example in ``folder`` whose ``variant`` recorded no latency:
    its traces lose ``total_latency_ms`` (AgenticLens reads each as 0 ms)."""
    target = folder / "no-latency"
    shutil.copytree(EXAMPLE, target)
    path = target / "trials" / f"{variant}.json"
    data = json.loads(path.read_text())
    for trial in data["trials"]:
        for sample in trial["samples"]:
            del sample["trace"]["total_latency_ms"]
    path.write_text(json.dumps(data))
    return target


def _require(condition: bool, reason: str) -> None:
    """Skip locally, but fail in CI, where every prerequisite must be installed."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must provide it)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def isolated() -> Callable[..., object]:
    """Run a module-level function in a fresh interpreter (spawned), return its result.

    Code that forks only does so when no other Python thread runs; earlier tests leave
    daemon threads behind (abandoned python-target calls), so such tests run alone.
    Exceptions come back and are raised here.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")

    def run(function: Callable[..., object], *args: object) -> object:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            return pool.submit(function, *args).result(timeout=600)

    return run


def counting_forks(workers: str, call: Callable[..., object], *args: object):
    """``call(*args)`` with ``workers`` worker processes (``"1"``: no forking); returns its
    result, or the :class:`~agenticlens_frames.errors.InputError` it raised, and how many
    processes were forked. Meant to run in an ``isolated`` interpreter (it sets the
    environment and patches ``_fork`` for the rest of that process)."""
    from agenticlens_frames import _fork
    from agenticlens_frames.errors import InputError

    os.environ[_fork.WORKERS_ENV] = workers
    made = []
    original = _fork._fork_child

    def counting(*a: object, **k: object) -> object:
        made.append(1)
        return original(*a, **k)

    _fork._fork_child = counting
    try:
        return call(*args), len(made)
    except InputError as exc:
        return exc, len(made)
    finally:
        _fork._fork_child = original


@pytest.fixture(scope="session")
def make_synthetic(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """Generate (once per argument set) an experiment with agenticlens_frames.testing."""
    cache: dict[tuple, Path] = {}
    root = tmp_path_factory.mktemp("synthetic")

    def make(
        *,
        variants: int = 4,
        trials: int = 5,
        cases: int = 20,
        seed: int = 1,
        shape: str = "mixed",
        pass_k: str | None = None,
        missing_samples: int = 0,
    ) -> Path:
        key = (variants, trials, cases, seed, shape, pass_k, missing_samples)
        if key not in cache:
            cache[key] = generate(
                root / "-".join(str(k) for k in key),
                variants=variants,
                trials=trials,
                cases=cases,
                seed=seed,
                shape=shape,  # type: ignore[arg-type]
                pass_k=pass_k,
                missing_samples=missing_samples,
            )
        return cache[key]

    return make


class Reference:
    """Outputs of the real ``agenticlens experiment run`` on one experiment folder."""

    def __init__(self, folder: Path, out: Path, completed: subprocess.CompletedProcess) -> None:
        self.folder = folder
        self.out = out
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    @property
    def report(self) -> dict:
        return json.loads((self.out / "report.json").read_text(encoding="utf-8"))

    @property
    def variants_csv(self) -> bytes:
        return (self.out / "variants.csv").read_bytes()

    @property
    def cases_csv(self) -> bytes:
        return (self.out / "cases.csv").read_bytes()


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Reference]:
    """Run the real agenticlens 0.10.0 CLI (installed by ./dev test) on an experiment."""
    exe = Path(sys.executable).parent / "agenticlens"
    _require(exe.exists() or shutil.which("agenticlens") is not None, "agenticlens not installed")
    command = str(exe) if exe.exists() else "agenticlens"
    cache: dict[tuple, Reference] = {}
    root = tmp_path_factory.mktemp("reference")

    def run(
        folder: Path,
        manifest: str = "manifest.yaml",
        suite: str = "suite.yaml",
        *extra: str,
    ) -> Reference:
        key = (str(folder), manifest, suite, extra)
        if key not in cache:
            out = root / f"r{len(cache)}"
            out.mkdir()
            args = [
                command,
                "experiment",
                "run",
                manifest,
                suite,
                "--save",
                str(out / "report.json"),
            ]
            args += ["--csv", str(out / "variants.csv"), "--cases-csv", str(out / "cases.csv")]
            args += list(extra)
            completed = subprocess.run(
                args,
                cwd=folder,
                capture_output=True,
                text=True,
                env={**os.environ, "COLUMNS": "200"},
            )
            cache[key] = Reference(folder, out, completed)
        return cache[key]

    return run


# --------------------------------------------------------------------------- browser

#: Debian's chromium, driven through playwright (never `playwright install`).
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """A headless chromium for the browser tests of one module (as before: a browser
    kept across modules would hold playwright's event loop while other tests run)."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} not found (CI must install Debian's chromium)")
        pytest.skip(
            f"browser tests need Debian's chromium at {CHROMIUM}, not installed here "
            "(apt-get install chromium; ./dev test installs it, CI fails without it)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield b
        b.close()


def stopping_block() -> dict[str, Any]:
    """An early-stopping block as a live run's (stop_when="decided") carries it: stopped
    after 9 of 14 cases, two candidates decided, the rule at alpha 0.1 under holm."""
    return {
        "stop_when": "decided",
        "stopped_early": True,
        "cases_used": 9,
        "cases_planned": 14,
        "attempts_planned": 350,
        "attempts_run": 225,
        "attempts_saved": 125,
        "reason": "every candidate decided after 9 of 14 cases",
        "alpha": 0.1,
        "correction": "bonferroni",
        "declared_correction": "holm",
        "alpha_per_candidate": 0.025,
        "margin": None,
        "method": "betting confidence sequence",
        "candidates": [
            {
                "candidate_variant_id": variant,
                "decision": "better",
                "lower": 0.01,
                "upper": 0.3,
                "paired_cases": 9,
            }
            for variant in ("prompt-v2", "large-v2")
        ],
        "judge_spend_after_decision": [
            {
                "variant_id": variant,
                "judge_scores": 2,
                "unavailable_scores": 0,
                "spent_cost_usd": 0.001,
                "input_tokens": 20,
                "output_tokens": 2,
            }
            for variant in ("prompt-v2", "large-v2")
        ],
    }


def latency_upper_bounds(run: Any) -> dict[str, float]:
    """Each candidate of the bundled example: the one-sided 95% upper bound of its per-case
    mean latency difference against the baseline (paired t over the cases; failed trials
    and unknown latencies left out), computed with scipy, as a non-inferiority gate on
    latency reads it."""
    from scipy import stats

    attempts = run.attempts
    ok = attempts[(attempts["status"] != "trial_failed") & attempts["latency_ms"].notna()]
    latency = ok.groupby(["variant_id", "case_id"], observed=True)["latency_ms"].mean()
    bounds = {}
    for candidate in ("model-large", "prompt-v2", "retrieval-dense", "large-v2"):
        d = (latency[candidate] - latency["baseline"]).dropna()
        half = stats.t.ppf(0.95, len(d) - 1) * d.std(ddof=1) / len(d) ** 0.5
        bounds[candidate] = float(d.mean() + half)
    return bounds
