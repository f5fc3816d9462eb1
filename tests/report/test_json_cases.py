"""The trial reports' case records written from the columns (json_report._CaseBytes).

Every file is checked three ways: against the records path (a dict per case dumped by
orjson, ``columns=False``), against orjson's dump of the report whose case records were
rebuilt here by a plain loop over the run's tables, and value by value after parsing. The
data is made awkward on purpose: strings with quotes, backslashes, control characters,
separators and non-ASCII text, empty strings, extreme floats, unpriced samples, missing
samples, failed trials, failed live calls, a one-case suite and integers beyond 64 bits.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
import yaml

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.report import json_report
from agenticlens_frames.report.json_report import build_report, write_json_report

from ..conftest import EXAMPLE
from ..runner.conftest import simple_cases, variant

AWKWARD = [
    'a",',  # cut at '","' this string would split in two
    ',\n  "x"',  # the raw form of the separator _scalars cuts at
    'line1\nline2\t"q" \\ \u2028 \x7f \x00 \x1f \x08 \x0c é 😀 ☃',
    "",
    "}\n      },\n      {",
    "\\",
    '"',
]


def _na(value: Any) -> Any:
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


def _naive_cases(run: Any, variant_id: str, trial: int) -> list[dict[str, Any]]:
    """A trial report's ``cases`` by a plain loop over the attempts and checks tables."""
    att = run.attempts
    att = att[(att["variant_id"].astype(str) == variant_id) & (att["trial"] == trial)]
    chk = run.checks
    chk = chk[(chk["variant_id"].astype(str) == variant_id) & (chk["trial"] == trial)]
    spec = next(v for v in run.manifest.variants if v.id == variant_id)
    live = spec.target_kind != "recorded"
    suite = {c.id: c for c in run.suite.cases}
    records = []
    for a in att.to_dict("records"):
        status = str(a["status"])
        ok = status == "ok"
        scores = []
        mine = chk[chk["case_id"].astype(str) == str(a["case_id"])].sort_values("check_index")
        for c in mine.to_dict("records"):
            metadata = _na(c.get("metadata"))
            scores.append(
                {
                    "name": c["name"],
                    "metric": str(c["metric"]),
                    "value": float(c["value"]),
                    "passed": bool(c["passed"]),
                    "required": bool(c["required"]),
                    "skipped": bool(c["skipped"]),
                    "explanation": c["explanation"],
                    "evaluator_type": str(c["evaluator_type"]),
                    "evaluator": str(c["evaluator"]),
                    "evaluator_version": _na(c["evaluator_version"]),
                    "metadata": {} if metadata is None else json.loads(metadata),
                }
            )
        if status in ("target_error", "timed_out"):
            scores[0]["metadata"] = {
                "status": "error" if status == "target_error" else "timed_out",
                "attempts": _na(a["target_attempts"]),
                "error": _na(a["error"]),
            }
        cost = float(a["cost_usd"])
        priced = not math.isnan(cost)
        latency = float(a["latency_ms"])
        case = suite[str(a["case_id"])]
        tries = _na(a["target_attempts"])
        records.append(
            {
                "case_id": case.id,
                "case_name": case.name,
                "passed": bool(a["passed"]),
                "scores": scores,
                "output": _na(a["output"]) or "",
                "trace_id": (_na(a["trace_id"]) or "") if ok else "",
                "latency_ms": (0.0 if math.isnan(latency) else latency) if ok else 0.0,
                "cost_usd": cost if priced else None,
                "cost_source": _na(a["cost_source"]) if priced else None,
                "sample_available": ok,
                "target_status": ("error" if status == "target_error" else status)
                if live
                else None,
                "target_attempts": None if tries is None or not live else int(tries),
                "target_error": None if ok else _na(a["error"]),
                "tags": list(case.tags),
                "metadata": case.metadata,
            }
        )
    return records


def _with_naive_cases(analysis: Any) -> dict[str, Any]:
    report = build_report(analysis)
    for entry in report["variants"]:
        for trial in entry["trials"]:
            if trial["report"] is not None:
                trial["report"]["cases"] = _naive_cases(
                    analysis.run, entry["variant_id"], trial["trial_index"]
                )
    return report


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def _check(analysis: Any, tmp_path: Path, *, orjson_whole: bool = True) -> bytes:
    """Write the report both ways; compare them with each other and with the naive records."""
    new = json_report._write_report(analysis, tmp_path / "new.json", lean=False).read_bytes()
    old = json_report._write_report(
        analysis, tmp_path / "old.json", lean=False, columns=False
    ).read_bytes()
    assert new == old
    # Prepared from the tables before the analysis (a worker of experiment run): same bytes.
    write = json_report.prepare_json_report(analysis.run)
    assert write(analysis, tmp_path / "prepared.json").read_bytes() == new
    expected = _with_naive_cases(analysis)
    if orjson_whole:
        assert new == orjson.dumps(expected, option=orjson.OPT_INDENT_2)
    # (Where the standard encoder wrote a trial, NaN reads back as NaN, not null.)
    assert _nan_to_none(json.loads(new)) == json.loads(json.dumps(_nan_to_none(expected)))
    return new


def _edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _edit_suite(folder: Path, edit: Callable[[list[dict]], None]) -> None:
    path = folder / "suite.yaml"
    suite = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(suite["cases"])
    path.write_text(yaml.safe_dump(suite, allow_unicode=True), encoding="utf-8")


@pytest.fixture
def awkward(make_synthetic: Callable[..., Path], tmp_path: Path) -> Path:
    folder = tmp_path / "exp"
    shutil.copytree(
        make_synthetic(variants=3, trials=3, cases=9, seed=5, missing_samples=3), folder
    )

    def cases(items: list[dict]) -> None:
        items[0]["name"] = 'Quote " and \\ backslash\n'
        items[0]["tags"] = ["a", "a", 'b"c', "é"]
        items[0]["metadata"] = {
            "nested": {"k": [1, 2.5, None, "x\ny", [], {}]},
            "i64": 2**63 - 1,
            "u64": 2**64 - 1,
            "neg": -(2**63),
            "big": 1e16,
            "small": 1e-7,
            "nan": float("nan"),
            "inf": float("-inf"),
        }
        items[1]["name"] = AWKWARD[2]
        items[2]["name"] = ""
        items[3]["tags"] = [AWKWARD[0]]

    _edit_suite(folder, cases)

    def samples(data: dict) -> None:
        data["trials"] = data["trials"][:2]  # trial 3 failed: the file lacks it
        latencies = [9.999999999999998e14, 1e-7, 0.1 + 0.2, 123456789.123, 0.0, 5e-324]
        for trial in data["trials"]:
            for i, sample in enumerate(trial["samples"]):
                if i < len(AWKWARD):
                    sample["output"] = AWKWARD[i]
                    sample["trace"]["trace_id"] = AWKWARD[-1 - i]
                trace = sample["trace"]
                trace["total_latency_ms"] = latencies[i % len(latencies)]
                if i % 3 == 1:
                    trace.pop("estimated_cost_usd", None)
                    for span in trace.get("spans", []):
                        span.pop("estimated_cost_usd", None)
                elif i % 3 == 2:
                    trace["estimated_cost_usd"] = 1e-9

    _edit_json(folder / "trials" / "v01.json", samples)
    return folder


def _analysis(folder: Path, manifest: str = "manifest.yaml", suite: str = "suite.yaml") -> Any:
    return analyze(load_experiment(folder / manifest, folder / suite))


def test_awkward_strings_numbers_and_failed_trials(
    awkward: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    analysis = _analysis(awkward)
    assert set(analysis.run.trials["status"].astype(str)) == {"succeeded", "failed"}
    assert (analysis.run.attempts["status"] == "missing_sample").any()
    data = _check(analysis, tmp_path)
    for text in AWKWARD[:3]:  # what we put in arrived, escaped once
        assert orjson.dumps(text) in data


def test_example_and_one_case_suite(
    make_synthetic: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    _check(_analysis(EXAMPLE), tmp_path)
    one = _analysis(make_synthetic(variants=3, trials=2, cases=1, seed=3))
    data = _check(one, tmp_path)
    assert json.loads(data)["variants"][0]["trials"][0]["report"]["cases"][0]["case_id"]


def test_integers_beyond_64_bits_take_the_records_path(
    awkward: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """orjson cannot write 2**64; the trials holding it are dumped by the standard encoder
    (as before), the others from the columns, and the file parses to the naive records."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")

    def huge(items: list[dict]) -> None:
        items[4]["metadata"] = {"huge": 2**64, "f": 1e16}

    _edit_suite(awkward, huge)
    analysis = _analysis(awkward)
    data = _check(analysis, tmp_path, orjson_whole=False)
    assert b'"huge": 18446744073709551616' in data


def test_variant_case_lists_are_written_by_the_encoder_of_the_rest(
    awkward: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variants' case matrices are made and written one at a time, after the rest of
    the report is dumped (a large run's worker held them all at once); where the rest
    needs the standard encoder (an integer beyond 64 bits), they are written by it too, as
    when they were dumped within it: Python spells 1.5e-07 so, orjson 1.5e-7."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    analysis = _analysis(awkward)
    analysis.extras["huge"] = 2**64
    analysis.cases.loc[analysis.cases.index[1], "mean_score"] = 1.5e-7
    data = json_report._write_report(analysis, tmp_path / "r.json", lean=False).read_bytes()
    # The variant keys sit three levels (six spaces) deep: the standard encoder's dump of
    # each case list, its lines after the first indented to that depth.
    for variant_entry in build_report(analysis)["variants"]:
        lines = json.dumps(variant_entry["cases"], indent=2, ensure_ascii=False).split("\n")
        block = "\n".join([lines[0], *("      " + line for line in lines[1:])])
        assert b'"cases": ' + block.encode() in data
    assert b'"mean_score": 1.5e-07' in data
    # The rest parses to the naive report's values (the case records by a plain loop).
    assert _nan_to_none(json.loads(data)) == json.loads(
        json.dumps(_nan_to_none(_with_naive_cases(analysis)))
    )
    # Without the huge integer, orjson writes everything, and the same file as one dump.
    del analysis.extras["huge"]
    data = json_report._write_report(analysis, tmp_path / "r.json", lean=False).read_bytes()
    assert data == orjson.dumps(_with_naive_cases(analysis), option=orjson.OPT_INDENT_2)
    assert b'"mean_score": 1.5e-7' in data


def test_a_document_with_a_huge_integer_still_writes_nan_as_null(
    awkward: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standard encoder, taken for integers orjson cannot write, wrote NaN and Infinity
    as bare tokens (not JSON); orjson, and the package, write null."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")

    def odd(items: list[dict]) -> None:
        items[4]["metadata"] = {"huge": 2**64, "nan": math.nan, "inf": -math.inf}

    _edit_suite(awkward, odd)
    path = json_report.write_json_report(_analysis(awkward), tmp_path / "r.json")

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} is not JSON")

    report = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
    metadata = [
        case["metadata"]
        for variant in report["variants"]
        for trial in variant["trials"]
        if trial["report"]
        for case in trial["report"]["cases"]
        if "huge" in case["metadata"]
    ]
    assert metadata and all(m == {"huge": 2**64, "nan": None, "inf": None} for m in metadata)


def test_failed_live_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Live variants: target status and attempts, and the failed call's score metadata
    (a timeout and a raising target)."""
    from agenticlens_frames.runner import run_experiment

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    monkeypatch.setenv("LIVE_SLOW_SECONDS", "0.5")
    manifest, suite = tmp_path / "manifest.yaml", tmp_path / "suite.yaml"
    variants = [
        variant("base", "answer"),
        variant("sleepy", "sleepy", timeout_seconds=0.1),
        variant("raising", "raises_on_boom"),
    ]
    top = {"name": "live", "version": "1", "baseline_variant_id": "base", "trial_count": 2}
    manifest.write_text(yaml.safe_dump({**top, "variants": variants}), encoding="utf-8")
    cases = simple_cases(["slow a", 'fast "b"', "boom goes it", "plain"])
    suite.write_text(yaml.safe_dump({"name": "s", "version": "1", "cases": cases}), "utf-8")
    result = run_experiment(manifest, suite, progress=False)
    analysis = analyze(result.run)
    assert {"timed_out", "target_error", "ok"} <= set(analysis.run.attempts["status"].astype(str))
    data = _check(analysis, tmp_path)
    assert b'"target_status": "error"' in data and b'"status": "timed_out"' in data


@pytest.mark.parametrize(
    "values",
    [
        AWKWARD,
        [None, 1, -(2**63), 2**64 - 1, 0.1, -0.0, 1e16, 1e-7, float("nan"), math.inf, True],
        ["only one"],
    ],
)
def test_scalars_are_orjsons_own_bytes(values: list[Any]) -> None:
    assert json_report._scalars(values) == [orjson.dumps(v) for v in values]


def test_orjson_never_writes_a_raw_newline_inside_a_string() -> None:
    """The premise of cutting one dump at its line breaks (_scalars, _dicts): every code
    point below U+0020 comes out escaped, and nothing else becomes a newline."""
    for code in [*range(0x800), *range(0xE000, 0x10000, 7), 0x10FFFF]:
        if 0xD800 <= code < 0xE000:
            continue
        assert b"\n" not in orjson.dumps(chr(code)), hex(code)


def test_dicts_are_orjsons_indented_bytes() -> None:
    """Each dict as the standard encoder writes it, every line after the first indented
    ``depth`` levels (json and orjson escape strings alike when ensure_ascii is off)."""
    values = [{"a": AWKWARD, "b": {"c": [{"d": 1}]}}, {"x": "}\n  },\n  {"}, {"e": {}}]
    for depth in (1, 3):
        want = [
            json.dumps(v, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)
            for v in values
        ]
        assert [p.decode() for p in json_report._dicts(values, depth)] == want
    assert json_report._dicts([{"a": 1}, {"b": 2**64}], 2)[1] is None


def test_lean_report_unchanged(awkward: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    analysis = _analysis(awkward)
    data = write_json_report(analysis, tmp_path / "lean.json", lean=True).read_bytes()
    assert data == orjson.dumps(build_report(analysis, lean=True), option=orjson.OPT_INDENT_2)
    write = json_report.prepare_json_report(analysis.run, lean=True)
    assert write(analysis, tmp_path / "prepared.json").read_bytes() == data


@pytest.mark.parametrize("distinct", [3, 400])
def test_unique_scores_number_equal_records_in_order_of_first_appearance(distinct: int) -> None:
    """One id per distinct score record, numbered as first seen, each record the first
    row's; with hundreds of values per field the ids' digits would overflow an int64 and
    are renumbered on the way (checked against a plain dict of row tuples)."""
    import numpy as np

    rng = np.random.default_rng(7)
    n = 400
    pick = lambda: rng.integers(0, distinct, n)  # noqa: E731
    chk = pd.DataFrame(
        {
            "name": [f"n{i}" for i in pick()],
            "metric": pd.Categorical([f"m{i}" if i else None for i in pick()]),
            "value": np.where(pick() % 2 == 0, 1, -1) * (pick() / 7),  # 0.0 and -0.0: equal
            "passed": pick() % 2 == 0,
            "required": pick() % 3 == 0,
            "skipped": pick() % 5 == 0,
            "explanation": [f"e{i}" for i in pick()],
            "evaluator_type": pd.Categorical([f"t{i}" for i in pick()]),
            "evaluator": pd.Categorical([f"v{i}" for i in pick()]),
            "evaluator_version": pd.Categorical([f"{i}.0" if i else None for i in pick()]),
            "metadata": [json.dumps({"k": int(i)}) if i else None for i in pick()],
        }
    )
    if distinct == 3:  # 40 records, each repeated
        chk = chk.iloc[rng.integers(0, 40, n)].reset_index(drop=True)
    else:  # the fields' numbers of values multiply beyond an int64
        counts = [chk[c].nunique(dropna=False) + 1 for c in chk]
        assert math.prod(counts) > 1 << 63
    # Strings in Arrow chunks, as a run's tables join their parts: each chunk's codes must
    # number the same strings alike.
    chk = pd.concat([chk.iloc[:150], chk.iloc[150:]], ignore_index=True)
    ids, records = json_report._unique_scores(chk)
    keys = json_report._SCORE_KEYS[:-1]
    seen: dict[tuple[Any, ...], int] = {}
    first: list[dict[str, Any]] = []
    expected = []
    for row in chk.astype(object).where(chk.notna(), None).itertuples(index=False):
        key = (*(getattr(row, k) for k in keys), row.metadata)
        if key not in seen:
            seen[key] = len(seen)
            record = dict(zip(keys, key[:-1], strict=True))
            record["metadata"] = json.loads(key[-1]) if key[-1] is not None else {}
            first.append(record)
        expected.append(seen[key])
    assert ids.tolist() == expected
    assert records == first
    assert (len(records) <= 40) == (distinct == 3)


def test_unique_scores_temporaries_stay_a_few_bytes_a_row() -> None:
    """The JSON report's worker numbers 1.2 million check rows at 20 000 cases, and every
    page it touches is its own (issue 19): ``_unique_scores`` adds the fields' codes into
    one int64 array in place and dictionary-encodes with tables the size of the distinct
    values, not of the rows. Peak numpy, pandas-hash-table and Arrow memory (each traced
    from zero) beyond the returned ids and records, per row: ``pd.factorize``'s int64
    codes, their copies and its hash tables sized by the rows took 42 bytes."""
    import tracemalloc

    import numpy as np
    import pyarrow as pa

    n = 200_000
    rng = np.random.default_rng(3)
    names = rng.integers(0, 300, n)
    chk = pd.DataFrame(
        {
            "name": pd.Series([f"check {i}" for i in names], dtype="str"),
            "metric": pd.Categorical.from_codes(names % 3, ["a", "b", "c"]),
            "value": (names % 2).astype(float),
            "passed": names % 2 == 0,
            "required": np.ones(n, dtype=bool),
            "skipped": np.zeros(n, dtype=bool),
            "explanation": pd.Series([f"why {i % 97}" for i in names], dtype="str"),
            "evaluator_type": pd.Categorical(["code"] * n),
            "evaluator": pd.Categorical(["e"] * n),
            "evaluator_version": pd.Categorical(["1"] * n),
            "metadata": pd.Series([None] * n, dtype="str"),
        }
    )
    default = pa.default_memory_pool()
    arrow = pa.proxy_memory_pool(default)  # Arrow's allocations, counted from zero
    pa.set_memory_pool(arrow)
    tracemalloc.start()
    try:
        ids, records = json_report._unique_scores(chk)
        _, peak = tracemalloc.get_traced_memory()
        held = ids.nbytes + 2_000 * len(records)  # a record dict and its strings: < 2 kB
        count = len(records)
        del ids, records  # (buffers from the counting pool go before it)
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(default)
    assert count == 300
    assert (peak + arrow.max_memory() - held) / n < 25  # 42 before, 14 after
