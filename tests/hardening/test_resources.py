"""Resources (issue 15): bound everything a file can make us do — only regular files as
inputs (no FIFO, device, directory, link loop), input size, YAML alias expansion,
regular-expression time, finite numbers, $ref loops, planned trials, and timeouts that a
target cannot hold up."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from agenticlens_frames._limits import (
    MAX_INPUT_BYTES_ENV,
    MAX_TRIALS_ENV,
    MAX_YAML_NODES_ENV,
    REGEX_TIMEOUT_ENV,
)

from ._round2 import assert_process, assert_refused, cli, cli_process, snapshot, stage

HERE = Path(__file__).resolve().parent
ROLES = ["manifest", "suite", "recorded", "report"]
SPECIALS = ["fifo", "dev_zero", "dev_null", "directory", "link_loop", "dangling_link"]


def _special(folder: Path, kind: str) -> Path:
    path = folder / f"special-{kind}.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev_null":
        path.symlink_to("/dev/null")
    elif kind == "directory":
        path.mkdir()
    elif kind == "link_loop":
        path.symlink_to(folder / "loop-b")
        (folder / "loop-b").symlink_to(path)
    else:
        path.symlink_to(folder / "nowhere")
    return path


def _args_for(role: str, folder: Path, bad: Path) -> list[str | Path]:
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    if role == "report":
        return ["experiment", "report", bad]
    if role == "manifest":
        manifest = bad
    elif role == "suite":
        suite = bad
    else:
        doc = yaml.safe_load(manifest.read_text())
        doc["variants"][0]["target"] = bad.name
        manifest.write_text(yaml.safe_dump(doc))
    return ["experiment", "run", manifest, suite, "-q", "--save", folder / "r.json"]


@pytest.mark.parametrize("kind", SPECIALS)
@pytest.mark.parametrize("role", ROLES)
def test_only_regular_files_are_inputs(tmp_path, role, kind):
    stage(tmp_path)
    bad = _special(tmp_path, kind)
    args = _args_for(role, tmp_path, bad)
    before = snapshot(tmp_path)
    if kind == "fifo":  # a regression would block forever: a process with a deadline
        done = cli_process(*args, cwd=tmp_path, timeout=60)
        assert_process(done, 1, bad.name)
    else:
        assert_refused(cli(*args), bad.name)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("role", ROLES)
def test_input_size_limit(tmp_path, role, monkeypatch):
    stage(tmp_path)
    big = tmp_path / ("big.json" if role in ("recorded", "report") else "big.yaml")
    source = {"manifest": "manifest.yaml", "suite": "suite.yaml"}.get(role, "trials/cand.json")
    big.write_bytes((tmp_path / source).read_bytes() + b" " * 5000)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "4000")
    result = cli(*_args_for(role, tmp_path, big))
    assert_refused(result, "big.", "over the limit", MAX_INPUT_BYTES_ENV)


def _bomb(depth: int, width: int) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, depth):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("depth", [7, 9])
@pytest.mark.parametrize("width", [10, 30])
@pytest.mark.parametrize("role", ["manifest", "suite"])
def test_yaml_alias_bombs_are_refused_quickly(tmp_path, role, depth, width):
    manifest, suite = stage(tmp_path)
    target = manifest if role == "manifest" else suite
    doc = yaml.safe_load(target.read_text())
    text = (
        yaml.safe_dump(doc)
        + "bomb:\n"
        + "".join("  " + line + "\n" for line in _bomb(depth, width).splitlines())
    )
    target.write_text(text)
    started = time.perf_counter()
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, target.name, "aliases expand", MAX_YAML_NODES_ENV)
    del started  # (no wall-clock assertion: the refusal happens before any expansion)


@pytest.mark.parametrize(
    "text",
    [
        "a: &a [1, *a]\n",
        "a: &a {k: *a}\n",
        "a: &a\n  - &b [*a]\n",
    ],
)
def test_recursive_yaml_aliases_are_refused(tmp_path, text):
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(suite.read_text())
    suite.write_text(yaml.safe_dump(doc) + "x" + text)
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, "suite.yaml", "recursive")
    # It was re-worded as a date that is not one, the file named twice, the fix wrong.
    assert "date or timestamp" not in result.output and result.output.count("suite.yaml") == 1


def test_ordinary_anchors_still_load(tmp_path):
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(suite.read_text())
    text = yaml.safe_dump(doc).replace("cases:\n", "cases:\n- &first\n", 0)
    suite.write_text(text + "extra: &e {a: 1}\nmore: [*e, *e]\n".replace("extra", "x_extra"))
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert "aliases" not in result.output


CATASTROPHIC = ["^(a|a)*$", "^(a|aa)+$", "^(a+)+b$", "^((a+)+)+$", "^(a*)*$", "(a|a|a)*c"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_end_in_time(tmp_path, monkeypatch, pattern):
    monkeypatch.setenv(REGEX_TIMEOUT_ENV, "0.2")
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(suite.read_text())
    doc["cases"][1]["output_json_schema"] = {
        "type": "object",
        "properties": {"ok": {"type": "string", "pattern": pattern}},
    }
    suite.write_text(yaml.safe_dump(doc))
    for name in ("baseline", "cand", "cand2"):
        path = tmp_path / "trials" / f"{name}.json"
        data = json.loads(path.read_text())
        for trial in data["trials"]:
            for sample in trial["samples"]:
                if sample["case_id"] == "c2":
                    sample["output"] = json.dumps({"ok": "a" * 64 + "!"})
        path.write_text(json.dumps(data))
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert result.exit_code in (0, 3), result.output
    report = (tmp_path / "r.json").read_text()
    assert "regular-expression time limit" in report or "does not match" in report


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("total_latency_ms", 1e308),
        ("total_latency_ms", -1e308),
        ("total_latency_ms", 1e16),
        ("total_latency_ms", "1e308"),
        ("estimated_cost_usd", 1e308),
        ("estimated_cost_usd", -1e300),
        ("span_cost", 1e308),
        ("total_latency_ms", 10**400),
    ],
)
def test_numbers_that_would_overflow_are_refused(tmp_path, field, value):
    manifest, suite = stage(tmp_path)
    path = tmp_path / "trials" / "cand.json"
    data = json.loads(path.read_text())
    trace = data["trials"][0]["samples"][0].setdefault("trace", {})
    if field == "span_cost":
        trace.clear()  # a Run-shaped trace: span costs are summed
        trace.update(
            {
                "run_id": "r1",
                "spans": [{"span_id": "s1", "span_type": "tool", "estimated_cost_usd": value}],
            }
        )
    else:
        trace[field] = value
    text = json.dumps(data)
    path.write_text(text)
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, "cand.json", "estimated_cost_usd" if "cost" in field else field)
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"not": {"$ref": "#"}},
        {"if": {"$ref": "#"}},
    ],
)
def test_ref_loops_are_refused_at_load(tmp_path, schema):
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(suite.read_text())
    doc["cases"][1]["output_json_schema"] = schema
    suite.write_text(yaml.safe_dump(doc))
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, "suite.yaml", "cases[1].output_json_schema", "loop")


@pytest.mark.parametrize("trials", [10**8, 10**7, 400_000])
def test_planned_trials_are_bounded(tmp_path, monkeypatch, trials):
    monkeypatch.setenv(MAX_TRIALS_ENV, "1000000")
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    doc["trial_count"] = trials
    manifest.write_text(yaml.safe_dump(doc))
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, "manifest.yaml", "trial_count", MAX_TRIALS_ENV)


@pytest.mark.parametrize("target", ["ignores_cancellation", "blocks_its_loop", "sleeps"])
def test_timeouts_are_enforced_from_outside_the_target(tmp_path, monkeypatch, target):
    monkeypatch.setenv("STUBBORN_SECONDS", "30")
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    doc["trial_count"] = 1
    doc["pass_k"] = [1]
    doc["variants"][2] = {
        "id": "stubborn",
        "name": "Stubborn",
        "target_kind": "python",
        "target": f"{HERE / 'exit_targets.py'}:{target}",
        "timeout_seconds": 0.3,
    }
    manifest.write_text(yaml.safe_dump(doc))
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    # 2 cases x 0.3 s, not 2 x 30 s: the run ends (and reports) while the target still runs.
    assert result.exit_code in (0, 3), result.output
    report = json.loads((tmp_path / "r.json").read_text())
    stubborn = next(v for v in report["variants"] if v["variant_id"] == "stubborn")
    statuses = {c["target_status"] for t in stubborn["trials"] for c in t["report"]["cases"]}
    assert statuses == {"timed_out"}
