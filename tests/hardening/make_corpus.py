"""Write the bad-input corpus under tests/hardening/corpus/ (deterministic; run to refresh).

Every corpus file is one mistake made in an otherwise valid mini experiment (base/):
a manifest, a suite, a recorded-trials file or a saved report. ``index.json`` lists each
file with the loader that reads it (``kind``) and the fragments its error must contain
(``expect``: the place inside the file, e.g. ``variants[1].target``, or ``line 3``).
Hand-written files live in corpus/hand/ and are listed in hand/index.json.

Huge strings and deeply nested documents are not checked in: tests/hardening makes them at
test time.

    python tests/hardening/make_corpus.py
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
OUT = HERE / "corpus"

MANIFEST: dict[str, Any] = {
    "schema_version": "1.1",
    "name": "mini",
    "version": "1",
    "baseline_variant_id": "baseline",
    "trial_count": 2,
    "random_seed": 7,
    "pass_k": [1, 2],
    "variants": [
        {
            "id": "baseline",
            "name": "Baseline",
            "target_kind": "recorded",
            "target": "trials/baseline.json",
            "factors": {"model": "small"},
        },
        {
            "id": "cand",
            "name": "Candidate",
            "target_kind": "recorded",
            "target": "trials/cand.json",
            "factors": {"model": "large"},
        },
        {
            "id": "cand2",
            "name": "Candidate 2",
            "target_kind": "recorded",
            "target": "trials/cand2.json",
            "factors": {"model": "huge"},
        },
    ],
}

SUITE: dict[str, Any] = {
    "name": "mini-suite",
    "version": "1",
    "cases": [
        {
            "id": "c1",
            "name": "Refund",
            "input": "refund my order",
            "expected_contains": ["refund"],
            "required_tools": ["lookup_order"],
            "max_latency_ms": 5000,
        },
        {
            "id": "c2",
            "name": "JSON",
            "input": "as json",
            "output_json_schema": {"type": "object", "required": ["ok"]},
            "max_cost_usd": 0.5,
            "max_turns": 3,
            "tags": ["json"],
        },
    ],
}


def _sample(case_id: str, output: str, latency: float, cost: float) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "output": output,
        "trace": {
            "trace_id": f"t-{case_id}",
            "spans": [{"tool_name": "lookup_order", "attributes": {"tool_args": {"id": 1}}}],
            "total_latency_ms": latency,
            "estimated_cost_usd": cost,
            "cost_source": "estimated",
            "metadata": {"turn_count": 2},
        },
    }


def _recorded(variant_id: str, shift: float) -> dict[str, Any]:
    return {
        "variant_id": variant_id,
        "trials": [
            {
                "samples": [
                    _sample("c1", "your refund is on its way", 900.0 + shift + t, 0.01),
                    _sample("c2", '{"ok": true}', 1200.0 + shift, 0.02 + t / 100),
                ]
            }
            for t in range(2)
        ],
    }


RECORDED = _recorded("baseline", 0.0)

# ----------------------------------------------------------------------------- helpers

Entry = dict[str, Any]


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


def _delete(doc: Any, path: tuple[Any, ...]) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return doc


def _loc(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class Corpus:
    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def add(
        self,
        kind: str,
        name: str,
        content: bytes | str,
        expect: list[str],
        *,
        accepted: bool = False,
        names: str | None = None,
    ) -> None:
        """Write one corpus file. ``accepted``: valid on purpose (kept for compatibility);
        ``names``: the file the error names when it is not this one."""
        folder = OUT / kind
        folder.mkdir(parents=True, exist_ok=True)
        number = sum(1 for e in self.entries if e["kind"] == kind) + 1
        file = f"{number:03d}-{name}"
        data = content.encode() if isinstance(content, str) else content
        (folder / file).write_bytes(data)
        entry = {"file": f"{kind}/{file}", "kind": kind, "expect": expect}
        if accepted:
            entry["accepted"] = True
        if names:
            entry["names"] = names
        self.entries.append(entry)

    def doc(
        self, kind: str, name: str, doc: Any, expect: list[str], *, both: bool, **how: Any
    ) -> None:
        """Add ``doc`` as YAML (and, with ``both``, as JSON too)."""
        if kind not in ("recorded", "report"):
            text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
            self.add(kind, f"{name}.yaml", text, expect, **how)
        if both or kind in ("recorded", "report"):
            indent = None if kind == "report" else 1
            text = json.dumps(doc, indent=indent, allow_nan=True)
            self.add(kind, f"{name}.json", text, expect, **how)


def _mutations(
    corpus: Corpus,
    kind: str,
    base: Any,
    cases: list[tuple[str, tuple[Any, ...], Any]],
    *,
    both: bool,
) -> None:
    """Each case: (name, path, value); value DELETE removes the key."""
    for name, path, value in cases:
        if kind == "report":
            doc = _delete(base, path) if value is DELETE else _set(base, path, value)
            # The report loader names the parent of a missing key, and a damaged value at
            # its closest enclosing record (a variant, a case, a comparison).
            where = path[:-1] if value is DELETE else path
            depth = {"variants": 3, "factor_levels": 1}.get(where[0] if where else "", 2)
            expect = [_loc(where[:depth])] if where else [repr(path[0])]
            corpus.doc(kind, name, doc, [e for e in expect if e], both=False)
            continue
        doc = _delete(base, path) if value is DELETE else _set(base, path, value)
        # A missing key is reported at its parent, naming the key.
        expect = [_loc(path[:-1]), repr(path[-1])] if value is DELETE else [_loc(path)]
        expect = [e for e in expect if e]
        corpus.doc(kind, name, doc, expect, both=both)


DELETE = object()


def _truncations(corpus: Corpus, kind: str, base: Any, points: list[float]) -> None:
    text = json.dumps(base, indent=1)
    for fraction in points:
        cut = text[: int(len(text) * fraction)]
        corpus.add(kind, f"truncated-{int(fraction * 100)}.json", cut, ["line "])


def _bytes_faults(corpus: Corpus, kind: str, base: Any, suffix: str) -> None:
    text = yaml.safe_dump(base, sort_keys=False) if suffix == "yaml" else json.dumps(base, indent=1)
    raw = text.encode()
    middle = raw.index(b"\n", len(raw) // 2) + 1
    corpus.add(kind, f"latin1.{suffix}", raw[:middle] + "caf\xe9\n".encode("latin-1"), ["byte"])
    corpus.add(kind, f"ff-bytes.{suffix}", raw[:40] + b"\xff\xfe" + raw[40:], ["byte offset 40"])
    corpus.add(kind, f"nul.{suffix}", raw[:middle] + b"\x00" + raw[middle:], ["line "])
    corpus.add(kind, f"empty.{suffix}", b"", [])
    corpus.add(kind, f"blank.{suffix}", b"  \n\n\t\n", [])
    corpus.add(kind, f"null.{suffix}", b"null\n", [])
    corpus.add(kind, f"scalar.{suffix}", b"42\n", [])
    corpus.add(kind, f"list.{suffix}", b"[1, 2]\n", [])


# ----------------------------------------------------------------------------- families


def manifest_cases(corpus: Corpus) -> None:
    v = ("variants",)
    cases: list[tuple[str, tuple[Any, ...], Any]] = [
        ("no-name", ("name",), DELETE),
        ("no-variants", v, DELETE),
        ("no-baseline", ("baseline_variant_id",), DELETE),
        ("name-int", ("name",), 5),
        ("name-list", ("name",), ["a"]),
        ("version-float", ("version",), 1.5),
        ("version-bool", ("version",), True),
        ("trials-text", ("trial_count",), "many"),
        ("trials-bool", ("trial_count",), True),
        ("trials-zero", ("trial_count",), 0),
        ("trials-negative", ("trial_count",), -3),
        ("trials-fraction", ("trial_count",), 1.5),
        ("trials-list", ("trial_count",), [2]),
        ("seed-text", ("random_seed",), "x"),
        ("seed-bool", ("random_seed",), False),
        ("passk-text", ("pass_k",), "all"),
        ("passk-zero", ("pass_k",), [0]),
        ("passk-bool", ("pass_k",), [True]),
        ("passk-mapping", ("pass_k",), {"a": 1}),
        ("metadata-list", ("metadata",), [1, 2]),
        ("variants-mapping", v, {"id": "x"}),
        ("variants-text", v, "baseline"),
        ("variant-text", (*v, 1), "cand"),
        ("variant-no-id", (*v, 1, "id"), DELETE),
        ("variant-no-target", (*v, 1, "target"), DELETE),
        ("variant-no-kind", (*v, 1, "target_kind"), DELETE),
        ("variant-id-int", (*v, 1, "id"), 7),
        ("variant-id-empty", (*v, 1, "id"), ""),
        ("variant-kind-bogus", (*v, 1, "target_kind"), "shell"),
        ("variant-timeout-negative", (*v, 1, "timeout_seconds"), -1),
        ("variant-timeout-text", (*v, 1, "timeout_seconds"), "soon"),
        ("variant-timeout-bool", (*v, 1, "timeout_seconds"), True),
        ("variant-timeout-nan", (*v, 1, "timeout_seconds"), float("nan")),
        ("variant-timeout-inf", (*v, 1, "timeout_seconds"), float("inf")),
        ("variant-factors-list", (*v, 1, "factors"), ["a"]),
        ("variant-factor-nested", (*v, 1, "factors", "model"), {"deep": 1}),
        ("variant-factor-list", (*v, 1, "factors", "model"), [1, 2]),
        ("variant-metadata-text", (*v, 1, "metadata"), "x"),
        ("variant-headers-recorded", (*v, 1, "headers"), {"X-Key": "${SECRET}"}),
        ("variant-retry-recorded", (*v, 1, "retry"), {"max_attempts": 2}),
        ("variant-concurrency-recorded", (*v, 1, "concurrency"), 2),
        (
            "python-no-colon",
            (*v, 1),
            {**MANIFEST["variants"][1], "target_kind": "python", "target": "os.system"},
        ),
        (
            "http-ftp",
            (*v, 1),
            {**MANIFEST["variants"][1], "target_kind": "http", "target": "ftp://example.com/agent"},
        ),
        (
            "http-bad-header",
            (*v, 1),
            {
                **MANIFEST["variants"][1],
                "target_kind": "http",
                "target": "http://127.0.0.1:9/a",
                "headers": {"Bad Header": "x"},
            },
        ),
        (
            "http-concurrency-zero",
            (*v, 1),
            {
                **MANIFEST["variants"][1],
                "target_kind": "http",
                "target": "http://127.0.0.1:9/a",
                "concurrency": 0,
            },
        ),
    ]
    _mutations(corpus, "manifest", MANIFEST, cases, both=True)
    # Rules that span the document: the place is the key that breaks them.
    dup = _set(MANIFEST, (*v, 1, "id"), "baseline")
    corpus.doc("manifest", "duplicate-variant-id", dup, ["variants[1].id"], both=True)
    corpus.doc(
        "manifest",
        "unknown-baseline",
        _set(MANIFEST, ("baseline_variant_id",), "nope"),
        ["baseline_variant_id"],
        both=True,
    )
    corpus.doc("manifest", "empty-variants", _set(MANIFEST, v, []), ["variants"], both=True)
    corpus.doc("manifest", "unknown-key", {**MANIFEST, "trials": 3}, ["trials"], both=True)
    corpus.doc(
        "manifest",
        "unknown-variant-key",
        _set(MANIFEST, (*v, 0, "modle"), "x"),
        ["variants[0]", "'modle'"],
        both=True,
    )
    corpus.doc(
        "manifest",
        "recorded-missing-file",
        _set(MANIFEST, (*v, 1, "target"), "trials/nowhere.json"),
        ["file not found"],
        both=False,
        names="nowhere.json",
    )
    corpus.doc(
        "manifest",
        "minimum-trials-bool",
        _set(MANIFEST, ("minimum_trials",), True),
        ["minimum_trials"],
        both=False,
    )
    _truncations(corpus, "manifest", MANIFEST, [0.1, 0.33, 0.5, 0.77, 0.95])
    _bytes_faults(corpus, "manifest", MANIFEST, "yaml")
    _bytes_faults(corpus, "manifest", MANIFEST, "json")
    text = yaml.safe_dump(MANIFEST, sort_keys=False)
    corpus.add("manifest", "tab-indent.yaml", "\tname: mini\n" + text, ["line 1"])
    corpus.add("manifest", "unclosed-flow.yaml", text + "extra: [1, 2\n", ["line "])
    corpus.add(
        "manifest", "bad-indent.yaml", text.replace("name: Candidate", "   name: X"), ["line "]
    )
    corpus.add(
        "manifest", "python-tag.yaml", "!!python/object/apply:os.system ['echo hi']\n", ["line 1"]
    )
    corpus.add("manifest", "anchor-unknown.yaml", text + "alias: *nothing\n", ["line "])


def suite_cases(corpus: Corpus) -> None:
    c = ("cases",)
    cases: list[tuple[str, tuple[Any, ...], Any]] = [
        ("no-cases", c, DELETE),
        ("no-name", ("name",), DELETE),
        ("cases-mapping", c, {"id": "c1"}),
        ("cases-text", c, "c1"),
        ("case-text", (*c, 0), "c1"),
        ("case-no-id", (*c, 0, "id"), DELETE),
        ("case-id-int", (*c, 0, "id"), 3),
        ("case-id-empty", (*c, 0, "id"), ""),
        ("case-name-list", (*c, 0, "name"), ["x"]),
        ("contains-int", (*c, 0, "expected_contains"), 5),
        ("contains-mixed", (*c, 0, "expected_contains"), ["a", 5]),
        ("tools-mapping", (*c, 0, "required_tools"), {"a": 1}),
        ("forbidden-int", (*c, 0, "forbidden_tools"), 1),
        ("latency-text", (*c, 0, "max_latency_ms"), "fast"),
        ("latency-bool", (*c, 0, "max_latency_ms"), True),
        ("latency-negative", (*c, 0, "max_latency_ms"), -5),
        ("latency-zero", (*c, 0, "max_latency_ms"), 0),
        ("latency-nan", (*c, 0, "max_latency_ms"), float("nan")),
        ("cost-negative", (*c, 1, "max_cost_usd"), -0.01),
        ("cost-bool", (*c, 1, "max_cost_usd"), False),
        ("cost-inf", (*c, 1, "max_cost_usd"), float("inf")),
        ("turns-zero", (*c, 1, "max_turns"), 0),
        ("turns-fraction", (*c, 1, "max_turns"), 2.5),
        ("turns-bool", (*c, 1, "max_turns"), True),
        ("tags-int", (*c, 1, "tags"), 4),
        ("metadata-list", (*c, 1, "metadata"), [1]),
        ("schema-list", (*c, 1, "output_json_schema"), [1]),
        ("schema-bad-type", (*c, 1, "output_json_schema"), {"type": "bogus"}),
        ("schema-bad-required", (*c, 1, "output_json_schema"), {"required": "ok"}),
        ("schema-bad-minimum", (*c, 1, "output_json_schema"), {"minimum": "zero"}),
        (
            "schema-bad-pattern",
            (*c, 1, "output_json_schema"),
            {"type": "string", "pattern": "(unclosed"},
        ),
        ("tool-args-list", (*c, 0, "required_tool_arguments"), ["a"]),
        ("tool-args-values-list", (*c, 0, "expected_tool_arguments"), {"t": [1]}),
        ("tool-order-int", (*c, 0, "required_tool_order"), 9),
        ("evaluators-text", (*c, 0, "evaluators"), "judge"),
        ("evaluator-unknown", (*c, 0, "evaluators"), [{"name": "no_such_judge"}]),
        ("evaluator-no-name", (*c, 0, "evaluators"), [{"threshold": 0.5}]),
        (
            "evaluator-threshold-text",
            (*c, 0, "evaluators"),
            [{"name": "no_such", "threshold": "high"}],
        ),
        ("evaluator-unknown-key", (*c, 0, "evaluators"), [{"name": "x", "weight": 2}]),
        ("no-expectation", (*c, 1), {"id": "c2", "name": "n", "input": "x"}),
    ]
    _mutations(corpus, "suite", SUITE, cases, both=True)
    dup = _set(SUITE, (*c, 1, "id"), "c1")
    corpus.doc("suite", "duplicate-case-id", dup, ["cases[1].id"], both=True)
    corpus.doc("suite", "empty-suite", _set(SUITE, c, []), ["cases"], both=True)
    corpus.doc("suite", "unknown-key", {**SUITE, "casses": []}, ["casses"], both=True)
    corpus.doc(
        "suite",
        "unknown-case-key",
        _set(SUITE, (*c, 0, "expected_contain"), ["a"]),
        ["cases[0]", "'expected_contain'"],
        both=True,
    )
    _truncations(corpus, "suite", SUITE, [0.05, 0.4, 0.6, 0.9])
    _bytes_faults(corpus, "suite", SUITE, "yaml")
    _bytes_faults(corpus, "suite", SUITE, "json")
    text = yaml.safe_dump(SUITE, sort_keys=False)
    corpus.add("suite", "python-tag.yaml", "cases: !!python/name:os.system\n", ["line 1"])
    corpus.add("suite", "unclosed-quote.yaml", text + 'description: "never closed\n', ["line "])


def recorded_cases(corpus: Corpus) -> None:
    t, s = ("trials",), ("trials", 0, "samples")
    tr = (*s, 0, "trace")
    cases: list[tuple[str, tuple[Any, ...], Any]] = [
        ("no-trials", t, DELETE),
        ("trials-empty", t, []),
        ("trials-mapping", t, {"a": 1}),
        ("trials-text", t, "x"),
        ("trial-int", (*t, 1), 5),
        ("samples-text", (*t, 0), {"samples": "x"}),
        ("sample-text", (*s, 0), "sample"),
        ("sample-no-case", (*s, 0, "case_id"), DELETE),
        ("sample-case-int", (*s, 0, "case_id"), 1),
        ("sample-unknown-case", (*s, 0, "case_id"), "c9"),
        ("sample-duplicate-case", (*s, 1, "case_id"), "c1"),
        ("sample-no-output", (*s, 0, "output"), DELETE),
        ("output-int", (*s, 0, "output"), 12),
        ("output-null", (*s, 0, "output"), None),
        ("output-bool", (*s, 0, "output"), True),
        ("output-list", (*s, 0, "output"), ["a"]),
        ("trace-null", tr, None),
        ("trace-text", tr, "fast"),
        ("trace-list", tr, [1]),
        ("latency-nan", (*tr, "total_latency_ms"), float("nan")),
        ("latency-inf", (*tr, "total_latency_ms"), float("inf")),
        ("latency-text", (*tr, "total_latency_ms"), "slow"),
        ("latency-bool", (*tr, "total_latency_ms"), True),
        ("cost-nan", (*tr, "estimated_cost_usd"), float("nan")),
        ("cost-neg-inf", (*tr, "estimated_cost_usd"), float("-inf")),
        ("cost-bool", (*tr, "estimated_cost_usd"), False),
        ("cost-text", (*tr, "estimated_cost_usd"), "cheap"),
        ("spans-text", (*tr, "spans"), "none"),
        ("spans-mapping", (*tr, "spans"), {"a": 1}),
        ("span-text", (*tr, "spans", 0), "span"),
        ("span-tool-int", (*tr, "spans", 0, "tool_name"), 5),
        ("span-attributes-list", (*tr, "spans", 0, "attributes"), [1]),
        ("trace-metadata-list", (*tr, "metadata"), [1]),
        ("cost-source-int", (*tr, "cost_source"), 3),
    ]
    _mutations(corpus, "recorded", RECORDED, cases, both=False)
    # Valid on purpose, as in AgenticLens (docs/compatibility.md: B7, B12; reversed Run
    # timestamps give 0 ms): they must load and report, never crash.
    kept: list[tuple[str, tuple[Any, ...], Any]] = [
        ("latency-negative", (*tr, "total_latency_ms"), -5.0),
        ("cost-negative", (*tr, "estimated_cost_usd"), -0.5),
        ("turns-text", (*tr, "metadata", "turn_count"), "two"),
        ("turns-negative", (*tr, "metadata", "turn_count"), -2),
        ("turns-bool", (*tr, "metadata", "turn_count"), True),
        ("missing-trial", ("trials",), [RECORDED["trials"][0]]),
        ("extra-trials", ("trials",), RECORDED["trials"] * 3),
        ("missing-sample", ("trials", 0, "samples"), RECORDED["trials"][0]["samples"][:1]),
        ("extra-key", ("provenance",), {"by": "hand"}),
    ]
    for name, path, value in kept:
        corpus.doc(
            "recorded", f"ok-{name}", _set(RECORDED, path, value), [], both=False, accepted=True
        )
    run_trace = {
        "run_id": "r1",
        "started_at": "2026-01-05T08:00:05.000Z",
        "completed_at": "2026-01-05T08:00:01.000Z",
        "spans": [{"span_id": "s1", "tool_name": "lookup_order", "estimated_cost_usd": 0.1}],
    }
    corpus.doc(
        "recorded",
        "ok-run-reversed-timestamps",
        _set(RECORDED, tr, run_trace),
        [],
        both=False,
        accepted=True,
    )
    bad_time = {**run_trace, "completed_at": "yesterday"}
    corpus.doc(
        "recorded", "run-bad-timestamp", _set(RECORDED, tr, bad_time), [_loc(tr)], both=False
    )
    neg_span = copy.deepcopy(run_trace)
    neg_span["completed_at"] = "2026-01-05T08:00:09.000Z"
    neg_span["spans"][0]["estimated_cost_usd"] = -1
    corpus.doc(
        "recorded",
        "ok-run-span-negative-cost",
        _set(RECORDED, tr, neg_span),
        [],
        both=False,
        accepted=True,
    )
    nan_span = copy.deepcopy(neg_span)
    nan_span["spans"][0]["estimated_cost_usd"] = float("nan")
    corpus.doc(
        "recorded", "run-span-nan-cost", _set(RECORDED, tr, nan_span), [_loc(tr)], both=False
    )
    _truncations(corpus, "recorded", RECORDED, [0.02, 0.25, 0.5, 0.75, 0.99])
    _bytes_faults(corpus, "recorded", RECORDED, "json")


def write_base() -> None:
    base = OUT / "base"
    (base / "trials").mkdir(parents=True, exist_ok=True)
    (base / "manifest.yaml").write_text(yaml.safe_dump(MANIFEST, sort_keys=False))
    (base / "suite.yaml").write_text(yaml.safe_dump(SUITE, sort_keys=False))
    (base / "trials" / "baseline.json").write_text(json.dumps(RECORDED, indent=1))
    (base / "trials" / "cand.json").write_text(json.dumps(_recorded("cand", 50.0), indent=1))
    (base / "trials" / "cand2.json").write_text(json.dumps(_recorded("cand2", 90.0), indent=1))


def _good_report() -> dict[str, Any]:
    from agenticlens_frames import analyze, load_experiment
    from agenticlens_frames.report.json_report import build_report

    base = OUT / "base"
    run = load_experiment(base / "manifest.yaml", base / "suite.yaml")
    report = build_report(analyze(run), lean=True)
    report = json.loads(json.dumps(report))
    report["created_at"] = "2026-12-01T00:00:00Z"  # deterministic corpus
    report.pop("case_level", None)  # optional, and most of the bytes
    for variant in report["variants"]:
        for trial in variant["trials"]:
            if trial.get("report"):
                trial["report"]["created_at"] = "2026-12-01T00:00:00Z"
    return report


def report_cases(corpus: Corpus) -> None:
    good = _good_report()
    v0, s0 = ("variants", 0), ("variants", 0, "summary")
    cases: list[tuple[str, tuple[Any, ...], Any]] = [
        ("no-variants", ("variants",), DELETE),
        ("no-comparisons", ("comparisons",), DELETE),
        ("no-pass-k", ("pass_k",), DELETE),
        ("no-warnings", ("warnings",), DELETE),
        ("pass-k-text", ("pass_k",), ["one"]),
        ("pass-k-int", ("pass_k",), 3),
        ("confidence-text", ("confidence_level",), "high"),
        ("confidence-list", ("confidence_level",), [1]),
        ("trial-count-text", ("trial_count",), "x"),
        ("baseline-unknown", ("baseline_variant_id",), "nobody"),
        ("baseline-int", ("baseline_variant_id",), 3),
        ("frontier-int", ("pareto_frontier_variant_ids",), 5),
        ("frontier-items", ("pareto_frontier_variant_ids",), [1]),
        ("variants-int", ("variants",), 3),
        ("variant-text", v0, "baseline"),
        ("variant-no-id", (*v0, "variant_id"), DELETE),
        ("variant-id-bool", (*v0, "variant_id"), True),
        ("variant-name-null", (*v0, "variant_name"), None),
        ("variant-no-summary", (*v0, "summary"), DELETE),
        ("variant-cases-int", (*v0, "cases"), 4),
        ("variant-case-text", (*v0, "cases", 0), "c1"),
        ("variant-case-no-id", (*v0, "cases", 0, "case_id"), DELETE),
        ("variant-case-rate-text", (*v0, "cases", 0, "pass_rate"), "half"),
        ("variant-trials-int", (*v0, "trials"), 2),
        ("variant-trial-text", (*v0, "trials", 0), "t"),
        ("variant-factors-list", (*v0, "factors"), [1]),
        ("summary-trials-text", (*s0, "attempted_trials"), "two"),
        ("summary-no-rate", (*s0, "trial_success_rate"), DELETE),
        ("summary-rate-list", (*s0, "trial_success_rate"), [1]),
        ("summary-passk-list", (*s0, "pass_at_k"), [1]),
        ("summary-flaky-ints", (*s0, "flaky_case_ids"), [1]),
        ("summary-metric-text", (*s0, "pass_rate"), "good"),
        ("comparison-text", ("comparisons", 0), "c"),
        ("comparison-delta-text", ("comparisons", 0, "pass_rate_delta"), "up"),
        ("factor-levels-text", ("factor_levels",), "x"),
        ("factor-level-text", ("factor_levels", 0), "x"),
        ("randomization-list", ("randomization",), [1]),
    ]
    _mutations(corpus, "report", good, cases, both=False)
    corpus.add(
        "report", "schema-2.json", json.dumps({**good, "schema_version": "2.0"}), ["schema_version"]
    )
    _truncations(corpus, "report", good, [0.01, 0.3, 0.6, 0.9, 0.999])
    for name, fault, expect in [
        ("latin1.json", b'{"experiment_name": "caf\xe9"}', ["byte"]),
        ("empty.json", b"", ["line 1"]),
        ("list.json", b"[1, 2]", []),
        ("null.json", b"null", []),
    ]:
        corpus.add("report", name, fault, expect)


FAMILIES: list[Callable[[Corpus], None]] = [
    manifest_cases,
    suite_cases,
    recorded_cases,
    report_cases,
]


def main() -> None:
    for kind in ("base", "manifest", "suite", "recorded", "report"):
        shutil.rmtree(OUT / kind, ignore_errors=True)
    write_base()
    corpus = Corpus()
    for family in FAMILIES:
        family(corpus)
    (OUT / "index.json").write_text(json.dumps(corpus.entries, indent=1) + "\n")
    print(f"{len(corpus.entries)} generated corpus files in {OUT}")


if __name__ == "__main__":
    main()
