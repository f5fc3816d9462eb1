"""Saved reports read back (report/saved.py): values the page uses after loading are
checked when the report is loaded, so a damaged one is refused naming its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.report.json_report import build_report
from agenticlens_frames.report.saved import load_report

from ..conftest import EXAMPLE


@pytest.fixture(scope="module")
def saved() -> dict:
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    return json.loads(json.dumps(build_report(analyze(run), lean=True)))


@pytest.mark.parametrize(("index", "value"), [(12, {"a": 1}), (0, ["baseline"]), (3, "x")])
def test_an_execution_order_entry_that_is_not_a_pair_is_refused(
    tmp_path: Path, saved: dict, index: int, value: object
) -> None:
    """Found by a mutation run: such an entry loaded, then crashed the HTML page's
    rendering with ``ValueError: not enough values to unpack``."""
    report = json.loads(json.dumps(saved))
    report["randomization"]["execution_order"][index] = value
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.file == str(path)
    assert info.value.location == f"randomization.execution_order[{index}]"
    assert f"expected a [variant_id, trial] pair, got {value!r}" in info.value.message


def test_the_execution_order_reads_back_as_pairs(tmp_path: Path, saved: dict) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(saved), encoding="utf-8")
    order = load_report(path).info["execution_order"]
    assert order == [(v, t) for v, t in saved["randomization"]["execution_order"]]
    assert len(order) == 25
