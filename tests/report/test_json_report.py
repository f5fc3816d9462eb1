"""The JSON writer: streaming output, lean mode, reproducibility and additions."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.report import json_report
from agenticlens_frames.report.json_report import (
    build_report,
    prepare_json_report,
    write_json_report,
)

from ..conftest import EXAMPLE


@pytest.fixture(scope="module")
def analysis():
    return analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))


def test_streamed_file_equals_a_whole_document_dump(analysis, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    streamed = write_json_report(analysis, tmp_path / "r.json").read_bytes()
    whole = orjson.dumps(build_report(analysis), option=orjson.OPT_INDENT_2)
    assert streamed == whole


def test_a_prepared_report_does_its_table_work_once_and_writes_the_same_bytes(
    analysis, tmp_path: Path, monkeypatch
) -> None:
    """prepare_json_report builds the case records' fixed pieces and every trial's summary
    slots before the analysis; writing then builds neither again (the pieces are made for
    the depth the writer puts the records at)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    slots = []
    original_slots = json_report._TrialReports._summary_slots
    monkeypatch.setattr(
        json_report._TrialReports,
        "_summary_slots",
        lambda self, *a: slots.append(a) or original_slots(self, *a),
    )
    made = []
    for name in ("_CaseBytes", "_TrialReports"):
        original = getattr(json_report, name)
        monkeypatch.setattr(
            json_report, name, lambda *a, _o=original, _n=name, **k: made.append(_n) or _o(*a, **k)
        )
    write = prepare_json_report(analysis.run)
    assert made == ["_TrialReports", "_CaseBytes"]
    assert (
        len(slots) == len(set(slots)) == int((analysis.run.trials["status"] == "succeeded").sum())
    )
    data = write(analysis, tmp_path / "prepared.json").read_bytes()
    assert made == ["_TrialReports", "_CaseBytes"] and len(slots) == len(set(slots))
    assert data == write_json_report(analysis, tmp_path / "r.json").read_bytes()
    other = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    with pytest.raises(ValueError, match="another run or setting"):
        write(other, tmp_path / "x.json")


def test_lean_report_keeps_every_statistic(analysis, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    full = json.loads(write_json_report(analysis, tmp_path / "full.json").read_text())
    lean = json.loads(write_json_report(analysis, tmp_path / "lean.json", lean=True).read_text())
    assert lean["agenticlens_frames"]["lean"] is True
    for v_full, v_lean in zip(full["variants"], lean["variants"], strict=True):
        assert v_lean["summary"] == v_full["summary"]
        assert v_lean["cases"] == v_full["cases"]
        for t_full, t_lean in zip(v_full["trials"], v_lean["trials"], strict=True):
            if t_full["report"] is None:
                assert t_lean["report"] is None
                continue
            assert t_lean["report"]["cases"] == []
            assert t_lean["report"]["summary"] == t_full["report"]["summary"]
    for key in ("comparisons", "pareto_frontier_variant_ids", "factor_levels", "warnings"):
        assert lean[key] == full[key]


def test_report_records_what_ran(analysis) -> None:
    report = build_report(analysis)
    variant = report["variants"][0]
    spec = analysis.run.manifest.variants[0]
    assert (variant["target"], variant["timeout_seconds"]) == (spec.target, spec.timeout_seconds)
    assert report["agenticlens_frames"]["experiment_id"] == "support-agent-upgrade@1"
    # the trial summaries are consistent with the variant summary built from them
    summary = variant["summary"]["pass_rate"]
    rates = [t["report"]["summary"]["pass_rate"] for t in variant["trials"] if t["report"]]
    assert summary["count"] == len(rates)
    assert summary["mean"] == pytest.approx(sum(rates) / len(rates), rel=1e-15)


def test_a_failed_write_keeps_the_previous_report(analysis, tmp_path: Path, monkeypatch) -> None:
    """Disk full half way: the error reaches the caller (it happened in the writer
    thread), no temporary file is left, and the report already there is untouched."""
    import errno

    from agenticlens_frames.report import json_report

    target = tmp_path / "r.json"
    write_json_report(analysis, target, lean=True)
    before = target.read_bytes()
    written = []

    class FullDisk:
        def __init__(self, out):
            self.out = out

        def write(self, chunk):
            if written:
                raise OSError(errno.ENOSPC, "No space left on device")
            written.append(len(chunk))
            return self.out.write(chunk)

    original = json_report._BackgroundWriter.__init__
    monkeypatch.setattr(
        json_report._BackgroundWriter,
        "__init__",
        lambda self, out: original(self, FullDisk(out)),
    )
    with pytest.raises(OSError, match="No space left"):
        write_json_report(analysis, target)
    assert written  # the first chunk went through, the second failed
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
