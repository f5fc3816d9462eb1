"""Result-frame columns declared once (agenticlens_frames.schema): the analysis builds
them, the JSON writer and the saved-report reader are exact inverses, and the parquet
files and the docs follow the same declaration."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agenticlens_frames import analyze, load_experiment, load_report
from agenticlens_frames.analysis import ExperimentAnalysis
from agenticlens_frames.report.json_report import _trial_frame, write_json_report
from agenticlens_frames.report.tables import write_parquet_outputs
from agenticlens_frames.schema import (
    CASES,
    COMPARISONS,
    SCHEMAS,
    SUMMARY_METRICS,
    TRIALS,
    VARIANTS,
    FrameSchema,
)

from .conftest import EXAMPLE

#: Keys of a report's objects that other declarations (or the manifest, or the tidy
#: tables) fill: left out when a frame's own block is compared.
VARIANT_SLOTS = ("trials", "cases", "target", "timeout_seconds", "description", "metadata")
TRIAL_SLOTS = ("cost_sources", "metrics", "tags", "judge", "live")


def _with_a_failed_trial(folder: Path, target: Path) -> Path:
    """A copy of ``folder`` whose second variant's recorded file lacks its last two
    trials (AgenticLens marks them failed: null report, an error message)."""
    shutil.copytree(folder, target)
    recorded = target / "trials" / "v01.json"
    data = json.loads(recorded.read_text())
    data["trials"] = data["trials"][:-2]
    recorded.write_text(json.dumps(data))
    return target


@pytest.fixture(scope="module", params=["example", "synthetic", "failed-trials"])
def analysis(request, make_synthetic, tmp_path_factory) -> ExperimentAnalysis:
    if request.param == "example":
        folder = EXAMPLE
    elif request.param == "synthetic":
        folder = make_synthetic(cases=30, seed=9, missing_samples=6)
    else:
        folder = _with_a_failed_trial(
            make_synthetic(variants=3, trials=4, cases=12, seed=4, shape="eval"),
            tmp_path_factory.mktemp("failed") / "experiment",
        )
    return analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))


def _frame(analysis: ExperimentAnalysis, schema: FrameSchema) -> pd.DataFrame:
    if schema is TRIALS:  # with the run's error messages, as the writer is given them
        return _trial_frame(analysis)
    return getattr(analysis, schema.name)


def _bound(analysis: ExperimentAnalysis, schema: FrameSchema) -> FrameSchema:
    return schema.bind(analysis.pass_k)


def _report(analysis: ExperimentAnalysis, folder: Path) -> tuple[Path, dict[str, Any]]:
    path = write_json_report(analysis, folder / "report.json")
    return path, orjson.loads(path.read_bytes())


def _own_trial(item: dict[str, Any]) -> dict[str, Any]:
    """A trial item without its report's case records and table-made summary parts."""
    item = dict(item)
    if item["report"] is not None:
        report = {k: x for k, x in item["report"].items() if k != "cases"}
        report["summary"] = {k: x for k, x in report["summary"].items() if k not in TRIAL_SLOTS}
        item["report"] = report
    return item


def _strip(schema: FrameSchema, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``schema``'s own part of its objects (by hand, not through the schema under test)."""
    if schema is VARIANTS:
        return [{k: x for k, x in item.items() if k not in VARIANT_SLOTS} for item in items]
    if schema is TRIALS:
        return [_own_trial(item) for item in items]
    return items


def _blocks(data: dict[str, Any]) -> dict[str, list[Any]]:
    """Each declared frame's own objects in a report."""
    variants = data["variants"]
    return {
        "variants": _strip(VARIANTS, variants),
        "cases": [c for v in variants for c in v["cases"]],
        "trials": _strip(TRIALS, [t for v in variants for t in v["trials"]]),
        "comparisons": data["comparisons"],
        "factor_levels": data["factor_levels"],
    }


# ---------------------------------------------------------------------- the declaration


@pytest.mark.parametrize("schema", list(SCHEMAS.values()), ids=list(SCHEMAS))
def test_the_analysis_builds_the_declared_columns_and_dtypes(analysis, schema: FrameSchema):
    bound = _bound(analysis, schema)
    frame = getattr(analysis, schema.name)
    declared = bound.analysis_columns()
    columns = list(frame.columns)
    # The variant summary's frontier-bootstrap columns follow (declared in frontier.py).
    assert columns[: len(declared)] == declared
    if schema is VARIANTS:
        assert all(
            c.startswith(("p_", "p_best")) or "_boot_ci_" in c for c in columns[len(declared) :]
        )
    else:
        assert columns == declared
    dtypes = {c.name: str(frame[c.name].dtype) for c in bound.columns_ if c.analysis}
    assert dtypes == {c: t for c, t in bound.dtypes.items() if c in dtypes}


def test_binding_pass_k_interleaves_the_k_columns_as_the_analysis_does():
    names = CASES.bind((1, 4)).columns
    assert names[-4:] == ["pass_at_1", "pass_hat_1", "pass_at_4", "pass_hat_4"]
    assert "pass_at_{k}" in CASES.columns  # unbound: the template (docs)


# ---------------------------------------------------------------------- write, read, write


def test_saved_report_blocks_round_trip_byte_identical(analysis, tmp_path: Path):
    """write -> read -> write: every declared frame of a loaded report writes the same
    bytes as the report it was read from."""
    path, data = _report(analysis, tmp_path)
    loaded = load_report(path)
    expected = _blocks(data)
    for name, schema in SCHEMAS.items():
        frame = loaded.trials if schema is TRIALS else getattr(loaded, name)
        again = _strip(schema, _write(schema.bind(loaded.pass_k), frame, data))
        assert again == expected[name], name
        assert orjson.dumps(again, option=orjson.OPT_INDENT_2) == orjson.dumps(
            expected[name], option=orjson.OPT_INDENT_2
        ), name


def _write(schema: FrameSchema, frame: pd.DataFrame, data: dict[str, Any]) -> list[Any]:
    context = {
        "confidence_level": data["confidence_level"],
        "schema_version": "1.0",
        "suite_name": data["suite_name"],
        "suite_version": data["suite_version"],
        "created_at": data["created_at"],
    }
    slots: dict[str, list[Any]] = {}
    if schema.name == "variants":
        slots = {k: [None] * len(frame) for k in VARIANT_SLOTS}
    elif schema.name == "trials":
        slots = {f"report.summary.{k}": [None] * len(frame) for k in TRIAL_SLOTS}
        slots["report.cases"] = [None] * len(frame)
    return schema.to_json(frame, context=context, slots=slots)


@pytest.mark.parametrize("schema", list(SCHEMAS.values()), ids=list(SCHEMAS))
def test_the_reader_gives_back_the_written_columns(analysis, schema: FrameSchema, tmp_path):
    """Every column the report holds reads back equal to the analysis frame (NaN where
    the report holds null), categoricals with the analysis' categories."""
    path, _ = _report(analysis, tmp_path)
    loaded = load_report(path)
    bound = _bound(analysis, schema)
    frame = _frame(analysis, schema).reset_index(drop=True)
    back = getattr(loaded, schema.name)
    # Rebuilt by the reader from other keys (docs/data-model.md; their values are checked
    # against the run's in tests/report/test_saved.py).
    rebuilt = {"execution_position", "average_latency_ms_package", "successful"}
    for column in bound.columns_:
        if column.key is None and column.derive is None:
            assert (column.name in back) == (schema is TRIALS and column.name in rebuilt)
            continue
        want, got = frame[column.name], back[column.name]
        if column.write is not None:  # the latency a trial report shows
            want = column.write(frame)
        if schema is TRIALS and column.block is not None:  # a failed trial's report is null
            succeeded = (frame["status"].astype(str) == "succeeded").to_numpy()
            if column.name in ("total_cases", "failed_cases"):
                # Every case of a failed trial was attempted and failed (the analysis'
                # count; the reader gives it back from the report's case_ids).
                assert got[~succeeded].tolist() == want[~succeeded].tolist()
            else:
                assert (got[~succeeded] == 0).all() or got[~succeeded].isna().all()
            want, got = want[succeeded], got[succeeded]
        if column.codec == "category":
            # Categoricals, with the analysis' categories (the report's order).
            assert isinstance(got.dtype, pd.CategoricalDtype), column.name
            if isinstance(want.dtype, pd.CategoricalDtype):
                assert list(got.cat.categories) == list(want.cat.categories), column.name
            want, got = want.astype(str), got.astype(str)
        if column.codec == "number":
            # The report holds null for NaN and ±inf (a relative change from 0 is read
            # back as the infinity its sign says: see the comparisons block reader).
            want = want.where(np.isfinite(want.to_numpy(float)) | (schema is COMPARISONS))
        if column.codec == "text":  # missing text: None in one, NaN in the other
            want, got = (
                want.astype(object).where(want.notna()),
                got.astype(object).where(got.notna()),
            )
        pd.testing.assert_series_equal(
            got, want, check_dtype=False, check_names=False, obj=column.name
        )


# ---------------------------------------------------------------------- edge values


def _edged(analysis: ExperimentAnalysis) -> dict[str, pd.DataFrame]:
    """The frames with the values the writer must handle: NaN, ±inf, a metric without
    any value (its block null), no case attempts (the Wilson interval null), fewer
    attempts than a k (the key left out), a missing text."""
    variants = analysis.variants.copy()
    variants.loc[0, "pass_rate_mean"] = math.inf
    variants.loc[0, "average_score_median"] = -math.inf
    variants.loc[0, "total_cost_usd_coefficient_of_variation"] = math.nan
    last = len(variants) - 1
    variants.loc[last, "average_latency_ms_count"] = 0
    variants.loc[last, "case_attempts"] = 0
    k = analysis.pass_k[-1]
    variants.loc[last, f"pass_at_{k}"] = math.nan
    variants.loc[1, f"pass_hat_{k}"] = math.inf
    cases = analysis.cases.copy()
    cases.loc[0, "mean_score"] = math.nan
    cases.loc[1, "score_standard_deviation"] = math.inf
    cases.loc[2, "attempts"] = 1
    trials = _trial_frame(analysis)
    trials.loc[0, "average_latency_ms"] = math.nan
    trials.loc[0, "total_cost_usd"] = math.nan
    trials.loc[1, "average_score"] = -math.inf
    return {"variants": variants, "cases": cases, "trials": trials}


@pytest.mark.parametrize("schema", [VARIANTS, CASES, TRIALS], ids=lambda s: s.name)
def test_edge_values_round_trip_byte_identical(analysis, schema: FrameSchema, tmp_path):
    _, data = _report(analysis, tmp_path)
    bound = _bound(analysis, schema)
    frame = _edged(analysis)[schema.name].reset_index(drop=True)
    first = _write(bound, frame, data)
    text = orjson.dumps(first, option=orjson.OPT_INDENT_2)
    items = orjson.loads(text)
    context = {
        "baseline": data["baseline_variant_id"],
        "frontier": data["pareto_frontier_variant_ids"],
    }
    rows = []
    for n, item in enumerate(items):  # cases and trials read with their variant's id
        context["variant_id"] = str(frame["variant_id"].iloc[n])
        rows += bound.rows_from_json([item], place=[], context=context)
    again = _write(bound, bound.frame(rows), data)
    assert orjson.dumps(again, option=orjson.OPT_INDENT_2) == text
    _check_edges(schema, frame, items, analysis.pass_k)


def _check_edges(schema: FrameSchema, frame: pd.DataFrame, items: list[Any], ks) -> None:
    """What the report must hold for the edge values, checked row by row by hand."""
    for row, item in zip(frame.to_dict("records"), items, strict=True):
        if schema is VARIANTS:
            summary = item["summary"]
            for metric in SUMMARY_METRICS:
                block = summary[metric]
                assert (block is None) == (row[f"{metric}_count"] == 0)
                if block is not None:
                    mean = row[f"{metric}_mean"]
                    assert block["mean"] == (mean if math.isfinite(mean) else None)
                    assert block["confidence_interval"]["method"] == "normal_approximation"
            interval = summary["case_pass_rate_interval"]
            assert (interval is None) == (row["case_attempts"] == 0)
            for k in ks:
                value = row[f"pass_at_{k}"]
                assert summary["pass_at_k"].get(str(k)) == (value if math.isfinite(value) else None)
                assert (str(k) in summary["pass_hat_k"]) == math.isfinite(row[f"pass_hat_{k}"])
        elif schema is CASES:
            assert sorted(item["pass_at_k"], key=int) == [
                str(k) for k in ks if k <= row["attempts"]
            ]
            for key in ("mean_score", "score_standard_deviation"):
                assert item[key] == (row[key] if math.isfinite(row[key]) else None)
        else:
            succeeded = row["status"] == "succeeded"
            assert (item["report"] is None) == (not succeeded)
            assert item["error_message"] == (
                None if pd.isna(row["error_message"]) else row["error_message"]
            )
            if succeeded:
                summary = item["report"]["summary"]
                latency = row["average_latency_ms"]
                if not math.isfinite(latency):
                    latency = row["average_latency_ms_package"]
                assert summary["average_latency_ms"] == latency
                cost = row["total_cost_usd"]
                assert summary["total_cost_usd"] == (cost if math.isfinite(cost) else None)


def test_a_damaged_block_is_reported_where_it_is(tmp_path: Path):
    analysis = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    _, data = _report(analysis, tmp_path)
    item = dict(data["variants"][0])
    item["summary"] = {**item["summary"], "pass_rate": "text"}
    place: list[str | int] = ["variants"]
    with pytest.raises(TypeError, match="expected an object, got str"):
        VARIANTS.bind(analysis.pass_k).rows_from_json(
            [data["variants"][1], item], place=place, context={"baseline": "x", "frontier": []}
        )
    assert place == ["variants", 1, "summary", "pass_rate", "count"]


# ---------------------------------------------------------------------- Arrow, docs


def test_parquet_files_have_the_declared_arrow_types(analysis, tmp_path: Path):
    write_parquet_outputs(analysis, tmp_path)
    for schema in SCHEMAS.values():
        stored = pq.read_schema(tmp_path / "results" / f"{schema.file_name}.parquet")
        declared = _bound(analysis, schema).arrow()
        assert stored.names[: len(declared.names)] == declared.names
        for name in declared.names:
            got, want = stored.field(name).type, declared.field(name).type
            if pa.types.is_dictionary(want):  # pandas picks the smallest index type
                assert pa.types.is_dictionary(got) and got.value_type == want.value_type, name
            elif pa.types.is_list(want):
                assert pa.types.is_list(got) and str(got.value_type) in ("string", "large_string")
            else:
                assert got == want or (str(got), str(want)) == ("large_string", "string"), name


def test_the_docs_show_the_declared_tables():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "data-model.md").read_text()
    for schema in SCHEMAS.values():
        assert schema.docs_table() in docs, schema.name


def _section(docs: str, table: str) -> str:
    start = docs.index(f"## `{table}` — ")
    return docs[start : docs.index("\n## ", start + 1)]


def _arrow_name(kind: pa.DataType) -> str:
    if pa.types.is_dictionary(kind):
        return "dictionary<string>"
    return {"string": "large_string", "double": "float64"}.get(str(kind), str(kind))


@pytest.mark.parametrize("table", ["attempts", "checks", "trials", "variants", "cases"])
def test_the_docs_describe_every_tidy_table_column_with_its_arrow_type(table: str):
    """The tidy tables' Arrow schemas (frames.py) and docs/data-model.md agree: every
    column documented, in order, with its type where the docs give one."""
    from agenticlens_frames.frames import SCHEMAS as TIDY

    docs = (Path(__file__).resolve().parents[1] / "docs" / "data-model.md").read_text()
    section = _section(docs, table)
    schema = TIDY[table]
    if "| column | Arrow type |" not in section:  # described in a sentence
        named = [n for n in schema.names if f"`{n}`" in section]
        assert named == schema.names
        return
    documented: list[tuple[str, str]] = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not line.startswith("| `") or len(cells) < 3:
            continue
        for name in cells[0].split(","):
            documented.append((name.strip().strip("`"), cells[1]))
    own = [(n, t) for n, t in documented if t]  # a row without a type repeats the keys
    assert [n for n, _ in own] == [n for n in schema.names if n in dict(own)]
    assert {n for n, _ in documented} == set(schema.names)
    for name, kind in own:
        assert kind == _arrow_name(schema.field(name).type), name
