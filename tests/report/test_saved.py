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


def _set(path: tuple, value: object):
    def edit(report: dict) -> None:
        holder = report
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value

    return edit


#: Edits a random-edit run found crashing a renderer after the report had loaded (a
#: traceback and "this is a bug"): each is refused at load, naming its place.
DAMAGED = {
    "case name NaN": (
        _set(("variants", 0, "cases", 0, "case_name"), float("nan")),
        "variants[0].cases[0].case_name",
        "expected a string or null",
    ),
    "negative passes": (
        _set(("variants", 3, "cases", 1, "passes"), -1),
        "variants[3].cases[1].passes",
        "whole number ≥ 0",
    ),
    "more passes than attempts": (
        _set(("variants", 3, "cases", 1, "passes"), 99),
        "variants[3].cases[1].passes",
        "99 passes of 5 attempts",
    ),
    "attempts as text": (
        _set(("variants", 0, "cases", 0, "attempts"), "5"),
        "variants[0].cases[0].attempts",
        "whole number ≥ 0",
    ),
    "pass_k repeated": (_set(("pass_k",), [1, 3, 3, 5]), "pass_k", "distinct"),
    "no trials": (_set(("trial_count",), 0), "trial_count", "≥ 1"),
    "nested through": (
        _set(("factor_effects", "terms", 4, "through"), [[]]),
        "factor_effects",
        "terms[4].through",
    ),
    "level as text": (
        _set(("factor_effects", "confidence_level"), "95%"),
        "factor_effects",
        "between 0 and 1",
    ),
}


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_damaged_value_a_renderer_would_meet_is_refused_at_load(
    name: str, tmp_path: Path, saved: dict
) -> None:
    edit, place, message = DAMAGED[name]
    report = json.loads(json.dumps(saved))
    edit(report)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")  # NaN as the token the fuzzer used
    with pytest.raises(InputError) as info:
        load_report(path)
    assert info.value.location == place and message in info.value.message
