"""Result-frame columns declared once (agenticlens_frames.schema): the analysis builds
them, the JSON writer and the saved-report reader are exact inverses, and the parquet
files and the docs follow the same declaration."""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest

from agenticlens_frames import analyze, load_experiment, load_report
from agenticlens_frames.report.json_report import write_json_report
from agenticlens_frames.report.tables import write_parquet_outputs
from agenticlens_frames.schema import COMPARISONS, FACTOR_LEVELS, FrameSchema

from .conftest import EXAMPLE

SCHEMAS = [FACTOR_LEVELS, COMPARISONS]


@pytest.fixture(scope="module", params=["example", "synthetic"])
def analysis(request, make_synthetic):
    folder = EXAMPLE if request.param == "example" else make_synthetic(cases=30, seed=9)
    return analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.name)
def test_the_analysis_builds_the_declared_columns_and_dtypes(analysis, schema: FrameSchema):
    frame = getattr(analysis, schema.name)
    assert list(frame.columns) == schema.columns
    assert {c: str(t) for c, t in frame.dtypes.items()} == schema.dtypes


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.name)
def test_write_read_write_is_byte_identical(analysis, schema: FrameSchema):
    frame = getattr(analysis, schema.name)
    block = schema.to_json(frame)
    again = schema.from_json(orjson.loads(orjson.dumps(block)), place=[])
    pd.testing.assert_frame_equal(again, frame.reset_index(drop=True))
    assert orjson.dumps(schema.to_json(again), option=orjson.OPT_INDENT_2) == orjson.dumps(
        block, option=orjson.OPT_INDENT_2
    )


def test_saved_report_blocks_round_trip(analysis, tmp_path: Path):
    path = write_json_report(analysis, tmp_path / "report.json")
    data = orjson.loads(path.read_bytes())
    loaded = load_report(path)
    for schema in SCHEMAS:
        assert schema.to_json(getattr(loaded, schema.name)) == data[schema.name]
        written = orjson.dumps(schema.to_json(getattr(loaded, schema.name)))
        assert written == orjson.dumps(data[schema.name])


def test_parquet_files_have_the_declared_arrow_types(analysis, tmp_path: Path):
    write_parquet_outputs(analysis, tmp_path)
    for schema in SCHEMAS:
        stored = pq.read_schema(tmp_path / "results" / f"{schema.name}.parquet")
        declared = schema.arrow()
        assert stored.names == declared.names
        for name in declared.names:
            got, want = stored.field(name).type, declared.field(name).type
            assert got == want or (str(got), str(want)) == ("large_string", "string"), name


def test_the_docs_show_the_declared_tables():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "data-model.md").read_text()
    for schema in SCHEMAS:
        assert schema.docs_table() in docs, schema.name
