"""Synthetic AgenticLens 0.10 experiments for tests, benchmarks and demonstrations.

:func:`make_synthetic` writes a complete recorded experiment — ``manifest.yaml``,
``suite.yaml`` and one recorded-trials file per variant under ``trials/`` — that both
this package and the real ``agenticlens`` 0.10 read. The scoring it exercises is cheap
but real: every case asks for one keyword in the output (``expected_contains``), one
tool in the trace (``required_tools``) and a latency limit (``max_latency_ms``), and
whether each holds is drawn from a per-variant skill and speed against a per-case
difficulty, so variants differ, some cases are hard and some are flaky.

The same arguments always give byte-identical files (numpy's PCG64 generator, seeded;
no clock, no hash order), so a test may generate once per session and cache the folder.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from agenticlens_frames.testing import make_synthetic
>>> folder = make_synthetic(Path(tempfile.mkdtemp()) / "exp", variants=3, trials=2, cases=4)
>>> sorted(p.name for p in folder.iterdir())
['manifest.yaml', 'suite.yaml', 'trials']
>>> sorted(p.name for p in (folder / "trials").iterdir())
['v00.json', 'v01.json', 'v02.json']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from .archive import Archive

__all__ = ["SHAPES", "example_archive", "make_synthetic"]

#: Trace shapes a variant's recorded samples can take (see ``shape`` below).
SHAPES: tuple[str, ...] = ("mixed", "eval", "run")

# Words, not code: kept as text so the lists read as the data they are.
_TOOL_NAMES = (
    "search_kb lookup_order track_shipment create_ticket update_address send_reset_email "
    "escalate_to_human"
)
_TOPIC_WORDS = (
    "refund invoice shipping password warranty discount delivery exchange receipt account "
    "voucher tracking billing upgrade"
)
_TOOLS = tuple(_TOOL_NAMES.split())
_TOPICS = tuple(_TOPIC_WORDS.split())
_MODELS = ("large", "small", "medium", "tiny")
_PROMPTS = ("v1", "v2")
_RETRIEVAL = ("bm25", "dense", "hybrid")
_LATENCY_LIMIT_MS = 3000
#: Recorded runs start here (run-shaped traces carry timestamps; no wall clock is read).
_EPOCH = datetime(2026, 1, 5, 8, 0, 0, tzinfo=UTC)


def make_synthetic(
    folder: str | Path,
    *,
    variants: int = 4,
    trials: int = 5,
    cases: int = 20,
    seed: int = 1,
    shape: Literal["mixed", "eval", "run"] = "mixed",
    pass_k: Sequence[int] | str | None = None,
    missing_samples: int = 0,
    indent: bool = False,
) -> Path:
    """Write a recorded experiment in AgenticLens 0.10 formats and return its folder.

    Parameters
    ----------
    folder
        Where to write; created if needed. Existing files of the same names are replaced.
    variants
        Number of variants, at least 3 (AgenticLens' minimum). ``v00`` is the baseline;
        each variant has the factors ``model``, ``prompt`` and ``retrieval``.
    trials
        ``trial_count`` of the manifest and the number of recorded trials per variant.
    cases
        Number of suite cases (``case-00000`` …), each with three checks.
    seed
        Seeds the data and is the manifest's ``random_seed``.
    shape
        Trace shape of the recorded samples: ``"eval"`` (agentic-evals EvalTrace:
        ``total_latency_ms`` and a trace-level cost), ``"run"`` (AgenticLens Run: latency
        from ``started_at``/``completed_at``, cost summed over span costs), or
        ``"mixed"``: even-numbered variants eval-shaped, odd-numbered ones run-shaped.
    pass_k
        The manifest's ``pass_k`` (a sequence or a comma list such as ``"1,3,5"``);
        default ``1``, ``min(3, trials)`` and ``trials``.
    missing_samples
        Leave out this many recorded samples, chosen by ``seed`` among the non-baseline
        variants' trials (AgenticLens scores a missing sample as a failed case).
    indent
        Pretty-print the trial files (larger; the default is compact JSON).

    Returns
    -------
    Path
        ``folder``, holding ``manifest.yaml``, ``suite.yaml`` and ``trials/vNN.json``.

    Raises
    ------
    ValueError
        Fewer than three variants, no trials or cases, an unknown shape, a ``pass_k``
        outside ``1..trials``, or more missing samples than recorded ones.

    Examples
    --------
    >>> import tempfile
    >>> from agenticlens_frames import load_experiment
    >>> folder = make_synthetic(tempfile.mkdtemp(), variants=3, trials=2, cases=5, seed=4)
    >>> run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    >>> len(run.attempts)  # 3 variants x 2 trials x 5 cases
    30
    >>> run.manifest.baseline_variant_id, run.manifest.pass_k
    ('v00', (1, 2))
    """
    if variants < 3:
        raise ValueError(f"variants={variants}: AgenticLens needs at least three variants")
    if trials < 1 or cases < 1:
        raise ValueError(f"trials={trials}, cases={cases}: both must be at least 1")
    if shape not in SHAPES:
        raise ValueError(f"shape={shape!r}: expected one of {', '.join(SHAPES)}")
    ks = _pass_k(pass_k, trials)
    if missing_samples < 0 or missing_samples > (variants - 1) * trials * cases:
        raise ValueError(f"missing_samples={missing_samples}: between 0 and the samples recorded")

    root = Path(folder)
    (root / "trials").mkdir(parents=True, exist_ok=True)
    name = f"synthetic-v{variants}-t{trials}-n{cases}-s{seed}"
    rng = np.random.default_rng(seed)
    case_table = _cases(cases, rng)
    profiles = [_profile(index) for index in range(variants)]
    dropped = _dropped(missing_samples, variants, trials, cases, rng)

    (root / "suite.yaml").write_text(_suite_text(name, case_table), encoding="utf-8")
    (root / "manifest.yaml").write_text(
        _manifest_text(name, profiles, trials, seed, ks), encoding="utf-8"
    )
    for index, profile in enumerate(profiles):
        trace_shape = shape if shape != "mixed" else ("eval" if index % 2 == 0 else "run")
        # One generator per variant: a variant's file does not change when others are added.
        variant_rng = np.random.default_rng([seed, index])
        document = {
            "variant_id": profile["id"],
            "trials": _recorded_trials(
                profile, case_table, trials, trace_shape, variant_rng, dropped.get(index, set())
            ),
        }
        text = (
            json.dumps(document, indent=1)
            if indent
            else json.dumps(document, separators=(",", ":"))
        )
        (root / "trials" / f"{profile['id']}.json").write_text(text + "\n", encoding="utf-8")
    return root


#: The repository's bundled example (absent from an installed wheel).
_BUNDLED = Path(__file__).resolve().parents[1] / "data" / "support"


def example_archive(
    experiment: str | Path | None = None,
    *,
    folder: str | Path | None = None,
    run_at: str | None = None,
) -> Archive:
    """An archive (in a new temporary folder unless given) holding one recorded experiment.

    For examples and tests of the archive: ``experiment`` is a folder with
    ``manifest.yaml`` and ``suite.yaml``. By default the repository's bundled example,
    wherever the call is made from (it was ``data/support`` relative to the working
    directory), or — installed without the repository — a :func:`make_synthetic` one.

    Examples
    --------
    >>> archive = example_archive(run_at="2026-11-04")
    >>> [r.experiment_id for r in archive.records()]
    ['support-agent-upgrade@1']
    """
    import tempfile

    from .archive import Archive
    from .loading import load_experiment

    if experiment is not None:
        source = Path(experiment)
    elif (_BUNDLED / "manifest.yaml").is_file():
        source = _BUNDLED
    else:
        source = make_synthetic(Path(tempfile.mkdtemp(prefix="alf-example-")), seed=1)
    archive = Archive(folder if folder is not None else tempfile.mkdtemp(prefix="alf-archive-"))
    run = load_experiment(source / "manifest.yaml", source / "suite.yaml")
    archive.add(run, run_at=run_at)
    return archive


def _pass_k(pass_k: Sequence[int] | str | None, trials: int) -> list[int]:
    if pass_k is None:
        return sorted({1, min(3, trials), trials})
    values = [int(k) for k in pass_k.split(",")] if isinstance(pass_k, str) else list(pass_k)
    if not values or any(k < 1 or k > trials for k in values):
        raise ValueError(f"pass_k={pass_k!r}: every k must be between 1 and trials={trials}")
    return sorted(set(values))


def _cases(n: int, rng: np.random.Generator) -> dict[str, Any]:
    """The suite's cases and their hidden difficulty and slowness (column-wise)."""
    topics = rng.integers(0, len(_TOPICS), size=n)
    return {
        "keyword": [f"{_TOPICS[t]}-{i:05d}" for i, t in enumerate(topics)],
        "tool": [_TOOLS[i % len(_TOOLS)] for i in range(n)],
        # mostly easy cases and a long tail of hard ones
        "difficulty": rng.beta(1.0, 8.0, size=n),
        "slowness": rng.lognormal(0.0, 0.2, size=n),
    }


def _profile(index: int) -> dict[str, Any]:
    """A variant's id, factors and hidden skill, speed and price (spread, not monotone)."""
    return {
        "id": f"v{index:02d}",
        "name": "Baseline" if index == 0 else f"Variant {index}",
        "factors": {
            "model": _MODELS[((index + 1) // 2) % len(_MODELS)],
            "prompt": _PROMPTS[index % len(_PROMPTS)],
            "retrieval": _RETRIEVAL[(index // 3) % len(_RETRIEVAL)],
        },
        "skill": 0.96 - 0.035 * ((index * 4) % 7),
        "speed": 0.8 + 0.12 * ((index * 3 + 1) % 5),
        "price": 0.0005 + 0.0003 * ((index * 2 + 1) % 5),
    }


def _dropped(
    count: int, variants: int, trials: int, cases: int, rng: np.random.Generator
) -> dict[int, set[tuple[int, int]]]:
    """``count`` distinct (variant ≥ 1, trial, case) samples to leave out."""
    per_variant = trials * cases
    chosen = rng.choice((variants - 1) * per_variant, size=count, replace=False)
    dropped: dict[int, set[tuple[int, int]]] = {}
    for flat in sorted(int(x) for x in chosen):
        variant, rest = divmod(flat, per_variant)
        dropped.setdefault(variant + 1, set()).add(divmod(rest, cases))
    return dropped


def _recorded_trials(
    profile: dict[str, Any],
    case_table: dict[str, Any],
    trials: int,
    shape: str,
    rng: np.random.Generator,
    dropped: set[tuple[int, int]],
) -> list[dict[str, Any]]:
    n = len(case_table["keyword"])
    margin = profile["skill"] - case_table["difficulty"]
    p_keyword = np.clip(margin + 0.05, 0.02, 0.995)
    p_tool = np.clip(margin + 0.08, 0.05, 0.998)
    clock = _EPOCH + timedelta(days=int(profile["id"][1:]))
    out = []
    for trial in range(trials):
        says = rng.random(n) < p_keyword
        calls = rng.random(n) < p_tool
        latency = np.rint(
            1000 * profile["speed"] * case_table["slowness"] * rng.lognormal(0.0, 0.25, n)
        ).astype(int)
        llm_cost = np.round(profile["price"] * rng.uniform(0.8, 1.3, n), 7)
        samples = []
        for case in range(n):
            ms = int(latency[case])
            if (trial, case) not in dropped:
                samples.append(
                    _sample(
                        case_table, case, trial + 1, profile["id"], shape, clock, ms,
                        bool(says[case]), bool(calls[case]), float(llm_cost[case]),
                    )
                )  # fmt: skip
            clock += timedelta(milliseconds=ms + 40)
        out.append({"samples": samples})
    return out


def _sample(
    case_table: dict[str, Any],
    case: int,
    trial: int,
    variant_id: str,
    shape: str,
    start: datetime,
    latency_ms: int,
    says_keyword: bool,
    calls_tool: bool,
    llm_cost: float,
) -> dict[str, Any]:
    keyword = case_table["keyword"][case]
    wanted = case_table["tool"][case]
    tool = wanted if calls_tool else _TOOLS[(_TOOLS.index(wanted) + 2) % len(_TOOLS)]
    output = (
        f"I looked into your {keyword} question; here is the answer."
        if says_keyword
        else "I could not find that. Could you tell me a bit more?"
    )
    tool_cost = 0.0001 if tool == "search_kb" else 0.0
    trace_id = f"{variant_id}-t{trial}-case-{case:05d}"
    tool_span_attributes = {"tool_args": {"query": keyword}}
    if shape == "eval":
        trace: dict[str, Any] = {
            "trace_id": trace_id,
            "spans": [
                {"tool_name": None, "attributes": {"kind": "llm"}},
                {"tool_name": tool, "attributes": tool_span_attributes},
            ],
            "total_latency_ms": float(latency_ms),
            "estimated_cost_usd": round(llm_cost + tool_cost, 7),
            "cost_source": "estimated",
            "metadata": {"turn_count": 2},
        }
    else:
        trace = {
            "run_id": f"run-{trace_id}",
            "trace_id": trace_id,
            "application_name": "synthetic-support",
            "started_at": _iso(start),
            "completed_at": _iso(start + timedelta(milliseconds=latency_ms)),
            "status": "succeeded",
            "spans": [
                {
                    "span_id": f"{trace_id}-llm",
                    "name": "answer",
                    "span_type": "model_call",
                    "estimated_cost_usd": llm_cost,
                },
                {
                    "span_id": f"{trace_id}-tool",
                    "parent_span_id": f"{trace_id}-llm",
                    "name": tool,
                    "span_type": "tool_call",
                    "tool_name": tool,
                    "estimated_cost_usd": tool_cost,
                    "attributes": tool_span_attributes,
                },
            ],
            "metadata": {"turn_count": 2},
        }
    return {"case_id": f"case-{case:05d}", "output": output, "trace": trace}


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _q(text: str) -> str:
    """A YAML scalar: JSON strings are valid YAML double-quoted strings."""
    return json.dumps(text)


def _suite_text(name: str, case_table: dict[str, Any]) -> str:
    # Written by hand, one flow mapping per case: fast for 20 000 cases, stable bytes.
    lines = [
        f"name: {_q(name)}",
        'version: "1"',
        'description: "agenticlens_frames.testing: keyword, required tool, latency limit"',
        "cases:",
    ]
    pairs = zip(case_table["keyword"], case_table["tool"], strict=True)
    for i, (keyword, tool) in enumerate(pairs):
        lines.append(
            f"  - {{id: {_q(f'case-{i:05d}')}, name: {_q(f'Support question {i}')}, "
            f"input: {{question: {_q(f'A customer asks about {keyword}')}}}, "
            f"expected_contains: [{_q(keyword)}], max_latency_ms: {_LATENCY_LIMIT_MS}, "
            f"required_tools: [{_q(tool)}]}}"
        )
    return "\n".join(lines) + "\n"


def _manifest_text(
    name: str, profiles: list[dict[str, Any]], trials: int, seed: int, pass_k: list[int]
) -> str:
    lines = [
        f"name: {_q(name)}",
        'version: "1"',
        f"baseline_variant_id: {_q(profiles[0]['id'])}",
        f"trial_count: {trials}",
        f"random_seed: {seed}",
        f"pass_k: [{', '.join(map(str, pass_k))}]",
        f"minimum_trials: {min(5, trials)}",
        "variants:",
    ]
    for profile in profiles:
        factors = ", ".join(f"{key}: {_q(value)}" for key, value in profile["factors"].items())
        lines.append(
            f"  - {{id: {_q(profile['id'])}, name: {_q(profile['name'])}, "
            f"target_kind: recorded, target: {_q('trials/' + profile['id'] + '.json')}, "
            f"factors: {{{factors}}}}}"
        )
    return "\n".join(lines) + "\n"
