"""Random small AgenticLens experiments with odd but valid content, for differential tests.

Each seed gives the same files. They exercise what `make_synthetic` does not: every
built-in check with unusual arguments (regex characters, case folding, invisible
whitespace, empty strings, nested and non-ASCII JSON paths, repeated and missing tools,
``1``/``1.0``/``true`` tool arguments, thresholds at the exact value), zero, negative and
huge latencies and costs, ``turn_count`` of every type, unicode ids, a baseline anywhere,
repeated and unsorted ``pass_k``, factors on some variants only, recorded files with
shuffled, missing or extra samples, extra keys, both trial layouts, both trace shapes and
six timestamp styles. Nothing here is an input either program refuses (see
docs/compatibility.md, "Input the package reads and we refuse").
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

TEXTS = [
    "", " ", "a", "A", "ß", "SS", "İ", "i̇", "Straße", "STRASSE", ".*", "a+b", "[x]", "(?i)",
    "\\d", "$", "^", "ǅ", "ﬁ", "FI", "é", "é", "😀", "1", "1.0", "null", "\t", "\n", "ok",
    "OK", "K", "K", "Σ", "ς", "σ", "\u00a0", "\x1c", "\u2003", "\x85", "\ufeff", "\u200b",
]  # fmt: skip
JSON_OUTPUTS = [
    '{"a": 1}', '{"a": {"b": 2}}', '{"a": [1, 2]}', "[1,2]", '"s"', "3", "NaN", '{"a": NaN}',
    '  {"a": 1}  ', '{"0": 1}', '{"ü": 1}', "null", '{"a": null}', '{"a": {"b": {"c": 1}}}',
    '{"a": 1, "a": 2}', '\ufeff{"a": 1}', '{"a": [[1]]}', '{"a": 1e400}', '{"a": -0}',
    '{"a": 12345678901234567890}', "\x1c{}\x1c", "\u00a0{}", "{}", '{"a": Infinity}',
]  # fmt: skip
PATHS = ["a", "a.b", "a.0", "a.١", "a.-1", "a.01", "a. 0", "", ".", "a.", "a.b.c", "ü", "0"]
TOOLS = ["search", "lookup", "", "Search", "ünï", "a.b", "x y"]
ARGS = ["q", "id", "", "Q"]
VALUES: list[Any] = [1, 1.0, True, "1", None, [1, 2], {"a": 1}, 0, False, "", 2.5, -0.0]
CASE_IDS = ["c1", "c2", "c3", "ç", "案例", "c 4", "C1", "x.y", "a/b"]
VARIANT_IDS = ["base", "v1", "v2", "变体", "ü", "B", "v 1", "1", "v.x"]
SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": "integer"}}},
    {"type": "array"},
    {"type": "number", "minimum": 0},
    {},
]
CHECKS = [
    "expected_output", "expected_contains", "output_json_schema", "required_output_fields",
    "required_tools", "forbidden_tools", "required_tool_arguments", "expected_tool_arguments",
    "required_tool_order", "max_latency_ms", "max_cost_usd", "max_turns",
]  # fmt: skip


def _some(r: random.Random, items: list[Any], most: int) -> list[Any]:
    return [r.choice(items) for _ in range(r.randint(0, most))]


def _case(r: random.Random, case_id: str) -> dict[str, Any]:
    case: dict[str, Any] = {"id": case_id, "name": r.choice([f"Case {case_id}", "ñame"])}
    for check in r.sample(CHECKS, r.randint(1, 5)):
        case[check] = {
            "expected_output": lambda: r.choice([*TEXTS, '{"a": 1}', " ok "]),
            "expected_contains": lambda: _some(r, TEXTS, 3),
            "output_json_schema": lambda: r.choice(SCHEMAS),
            "required_output_fields": lambda: _some(r, PATHS, 3),
            "required_tools": lambda: _some(r, TOOLS, 3),
            "forbidden_tools": lambda: _some(r, TOOLS, 3),
            "required_tool_arguments": lambda: {t: _some(r, ARGS, 2) for t in _some(r, TOOLS, 2)},
            "expected_tool_arguments": lambda: {
                t: {a: r.choice(VALUES) for a in _some(r, ARGS, 2)} for t in _some(r, TOOLS, 2)
            },
            "required_tool_order": lambda: _some(r, TOOLS, 4),
            "max_latency_ms": lambda: r.choice([100, 100.0, 0.001, 1e12, 150.5, 99.99999999]),
            "max_cost_usd": lambda: r.choice([0, 0.01, 1e-9, 1e9, 0.005]),
            "max_turns": lambda: r.choice([1, 2, 3, 100]),
        }[check]()
    if all(case[check] in ([], {}) for check in CHECKS if check in case):
        case["max_latency_ms"] = 1e12  # a case needs one expectation, for both programs
    if r.random() < 0.3:
        case["tags"] = _some(r, ["t", "ü", "", "t"], 3)
    return case


def _span(r: random.Random, run_shaped: bool, index: int) -> dict[str, Any]:
    tool = r.choice([*TOOLS, None, None])
    span: dict[str, Any] = {}
    if run_shaped:
        span = {"span_id": f"s{index}", "name": tool or "llm"}
        if r.random() < 0.6:
            span["estimated_cost_usd"] = r.choice([0.001, 0, 1e-12, 5, None])
    if tool is not None or r.random() < 0.5:
        span["tool_name"] = tool
    if r.random() < 0.6:
        span["attributes"] = {"tool_args": {a: r.choice(VALUES) for a in _some(r, ARGS, 3)}}
    elif r.random() < 0.5:
        span["attributes"] = {"tool_args": r.choice([None, [1], "q"])}
    return span


def _timestamp(style: float, moment: datetime) -> str:
    if style < 0.5:
        return moment.isoformat().replace("+00:00", "Z")
    if style < 0.6:
        return moment.astimezone(timezone(timedelta(hours=2))).isoformat()
    if style < 0.7:
        return moment.replace(tzinfo=None).isoformat()
    if style < 0.8:
        return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    if style < 0.9:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    return moment.strftime("%Y%m%dT%H%M%SZ")


def _trace(r: random.Random, run_shaped: bool, n: int) -> dict[str, Any]:
    trace: dict[str, Any] = {"spans": [_span(r, run_shaped, i) for i in range(r.randint(0, 4))]}
    if r.random() < 0.8:
        trace["trace_id"] = r.choice([f"t{n}", "", "ü"])
    if run_shaped:
        trace.update(run_id=f"r{n}", application_name="app")
        start = datetime(2026, 1, 5, 8, tzinfo=UTC) + timedelta(seconds=n)
        end = start + timedelta(milliseconds=r.choice([0, 100, 150, 99, 1, 12345]))
        style = r.random()  # one style per trace: a naive and an aware one are refused
        for key, moment in (("started_at", start), ("completed_at", end)):
            if r.random() < 0.9:
                trace[key] = _timestamp(style, moment)
        if r.random() < 0.3:
            trace["metadata"] = {"cost_source": r.choice(["measured", "estimated", "other"])}
        if r.random() < 0.2:
            trace["status"] = r.choice(["failed", "succeeded"])
    else:
        if r.random() < 0.85:
            trace["total_latency_ms"] = r.choice([100, 0, -5, 1e12, 150.5, 99.99999999, 0.001])
        if r.random() < 0.7:
            trace["estimated_cost_usd"] = r.choice([0.005, 0, 1e-9, 1e9, -1, None, 0.0050000001])
        if r.random() < 0.5:
            trace["cost_source"] = r.choice(["measured", "estimated", None])
    if r.random() < 0.7:
        turns = r.choice([1, 2, 3, 0, -1, True, 2.0, "2", None, 100])
        trace.setdefault("metadata", {})["turn_count"] = turns
    return trace


def fuzz_experiment(folder: Path, seed: int) -> Path:
    """Write the experiment of ``seed`` (manifest, suite, one trials file per variant).

    Examples
    --------
    >>> import tempfile
    >>> folder = fuzz_experiment(Path(tempfile.mkdtemp()), 3)
    >>> sorted(p.name for p in folder.iterdir())
    ['manifest.yaml', 'suite.yaml', 'trials']
    """
    r = random.Random(seed)
    (folder / "trials").mkdir(parents=True, exist_ok=True)
    case_ids = r.sample(CASE_IDS, r.randint(1, 4))
    suite = {"name": "süite", "version": "1", "cases": [_case(r, c) for c in case_ids]}
    variant_ids = r.sample(VARIANT_IDS, r.randint(3, 4))
    trial_count = r.randint(1, 3)
    variants = []
    for i, variant in enumerate(variant_ids):
        entry = {"id": variant, "name": f"V {variant}", "target_kind": "recorded"}
        entry["target"] = f"trials/f{i}.json"
        if r.random() < 0.8:
            names = r.sample(["model", "prompt", "ü"], r.randint(0, 3))
            entry["factors"] = {f: r.choice(["a", "b", "ü", ""]) for f in names}
        variants.append(entry)
    manifest: dict[str, Any] = {
        "name": "実験",
        "version": "1",
        "baseline_variant_id": r.choice(variant_ids),
        "trial_count": trial_count,
        "variants": variants,
        "random_seed": r.choice([None, 0, 42, -3, 2**40]),
        "minimum_trials": r.randint(1, 6),
    }
    if r.random() < 0.7:
        manifest["pass_k"] = [r.randint(1, trial_count) for _ in range(r.randint(1, 4))]
    dump = {"allow_unicode": True, "sort_keys": False}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, **dump), encoding="utf-8")
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, **dump), encoding="utf-8")
    n = 0
    for i, variant in enumerate(variant_ids):
        run_shaped = r.random() < 0.3
        trials: list[Any] = []
        # now and then a trial short (failed) or one extra (ignored)
        for _ in range(trial_count if r.random() < 0.85 else r.randint(1, trial_count + 1)):
            ids = r.sample(case_ids, len(case_ids))
            if r.random() < 0.15:
                ids.pop()  # a missing sample
            samples = []
            for case_id in ids:
                n += 1
                output = r.choice(JSON_OUTPUTS) if r.random() < 0.3 else "".join(_some(r, TEXTS, 4))
                sample = {"case_id": case_id, "output": output, "trace": _trace(r, run_shaped, n)}
                if r.random() < 0.03:
                    del sample["trace"]
                if r.random() < 0.1:
                    sample["extra"] = {"k": 1}
                samples.append(sample)
            trials.append({"samples": samples} if r.random() < 0.8 else samples)
        data = {"variant_id": variant, "trials": trials, **({"x": 1} if i % 2 else {})}
        text = json.dumps(data, ensure_ascii=r.random() < 0.5)
        (folder / "trials" / f"f{i}.json").write_text(text, encoding="utf-8")
    return folder
