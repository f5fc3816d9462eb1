"""Arguments (issue 15): environment values, option values and file contents of the
wrong kind — a bad SOURCE_DATE_EPOCH, integers beyond 64 bits, manifest and suite in
swapped order, invalid URLs, wrong-typed values in a saved report — give a clear message
or the package's own behaviour, never a traceback."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from ._round2 import ROOT, assert_refused, cli, snapshot, stage


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("99999999999999999999", 1),
        ("253402300800", 1),  # year 10000
        ("1767225600", 0),
        ("abc", 1),  # malformed: refused (reproducible-builds.org's definition)
        ("-5", 1),
        ("1.5", 1),
        ("", 0),  # empty: as if unset
        (" 42 ", 0),
    ],
)
@pytest.mark.parametrize("command", ["run", "report"])
def test_source_date_epoch(tmp_path, value, code, command):
    manifest, suite = stage(tmp_path)
    saved = tmp_path / "saved.json"
    assert cli("experiment", "run", manifest, suite, "-q", "--save", saved).exit_code == 0
    args = (
        ["experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json"]
        if command == "run"
        else ["experiment", "report", saved, "-q", "--csv", tmp_path / "v.csv"]
    )
    result = cli(*args, env={"SOURCE_DATE_EPOCH": value})
    if code:
        assert_refused(result, "SOURCE_DATE_EPOCH")
    else:
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("where", ["random_seed", "case_metadata", "case_metadata_negative"])
@pytest.mark.parametrize("power", [64, 70, 200])
def test_integers_beyond_64_bits_are_written_exactly(tmp_path, where, power):
    manifest, suite = stage(tmp_path)
    big = 2**power if where != "case_metadata_negative" else -(2**power)
    if where == "random_seed":
        doc = yaml.safe_load(manifest.read_text())
        doc["random_seed"] = big
        manifest.write_text(yaml.safe_dump(doc))
    else:
        doc = yaml.safe_load(suite.read_text())
        doc["cases"][0]["metadata"] = {"big": big}
        suite.write_text(yaml.safe_dump(doc))
    result = cli(
        "experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json",
        "--parquet", tmp_path / "pq", "--csv", tmp_path / "v.csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = (tmp_path / "r.json").read_text()
    assert str(big) in text  # exactly, as AgenticLens 0.10 writes it (not a float)
    assert json.loads(text)  # and still valid JSON
    again = cli("experiment", "report", tmp_path / "r.json", "-q", "--csv", tmp_path / "w.csv")
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("order", ["suite_first", "both_suites", "both_manifests"])
def test_manifest_and_suite_in_the_wrong_places(tmp_path, order):
    manifest, suite = stage(tmp_path)
    args = {
        "suite_first": (suite, manifest),
        "both_suites": (suite, suite),
        "both_manifests": (manifest, manifest),
    }[order]
    result = cli("experiment", "run", *args, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, "MANIFEST SUITE")


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/agent",
        "http://[zz::1]/agent",
        "http://[::1]:abc/agent",
        "http://host:99999/agent",
        "https://[fe80::1%eth0/x",
        "http://]::1[/",
    ],
)
def test_invalid_http_urls_are_refused_by_place(tmp_path, url):
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    doc["variants"][2] = {"id": "h", "name": "H", "target_kind": "http", "target": url}
    manifest.write_text(yaml.safe_dump(doc))
    result = cli("experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json")
    assert_refused(result, "manifest.yaml", "variants[2].target")


# ---------------------------------------------------------------- saved reports

WRONG = {
    "string": "text",
    "list": [1, 2],
    "mapping": {"a": 1},
    "null": None,
    "boolean": True,
    "huge_int": 2**80,
    "nan": math.nan,
    "negative": -1,
}
PLACES = [
    ("trial_count",),
    ("confidence_level",),
    ("pass_k",),
    ("variants", 0, "summary"),
    ("variants", 1, "trials"),
    ("variants", 1, "factors"),
    ("variants", 0, "variant_id"),
    ("comparisons",),
    ("case_ids",),
    ("baseline_variant_id",),
]


@pytest.fixture(scope="module")
def saved_report(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("saved")
    manifest, suite = stage(folder)
    assert (
        cli("experiment", "run", manifest, suite, "-q", "--save", folder / "r.json").exit_code == 0
    )
    return json.loads((folder / "r.json").read_text())


@pytest.mark.parametrize("kind", sorted(WRONG))
@pytest.mark.parametrize("place", PLACES, ids=lambda p: ".".join(map(str, p)))
def test_wrong_typed_values_in_a_saved_report(tmp_path, saved_report, place, kind):
    data = json.loads(json.dumps(saved_report))
    node = data
    for part in place[:-1]:
        node = node[part]
    node[place[-1]] = WRONG[kind]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    before = snapshot(tmp_path)
    result = cli(
        "experiment", "report", path, "-q", "--csv", tmp_path / "v.csv",
        "--cases-csv", tmp_path / "c.csv", "--html", tmp_path / "r.html",
    )  # fmt: skip
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception),
        result.output,
    )
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert "bad.json" in result.output
        assert snapshot(tmp_path) == before


@pytest.mark.parametrize("what", ["report_dir", "report_fifo", "report_loop"])
def test_a_saved_report_that_is_not_a_file(tmp_path, what):
    import os

    path = tmp_path / "r.json"
    if what == "report_dir":
        path.mkdir()
    elif what == "report_fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(path)
    assert_refused(cli("experiment", "report", path, "-q"), "r.json")


@pytest.fixture(scope="module")
def example_run():
    from agenticlens_frames import load_experiment

    return load_experiment(ROOT / "data/support/manifest.yaml", ROOT / "data/support/suite.yaml")


@pytest.mark.parametrize(
    ("function", "kwargs", "location"),
    [
        ("analyze", {"confidence_level": "0.9"}, "confidence_level"),
        ("analyze", {"regression_threshold": None}, "regression_threshold"),
        ("analyze", {"frontier_seed": 1.5}, "frontier_seed"),
        ("case_verdicts", {"confidence_level": None}, "confidence_level"),
        ("case_labels", {"fail_threshold": None}, "fail_threshold"),
        ("case_labels", {"pass_threshold": 1.5}, "pass_threshold"),
        ("frontier_uncertainty", {"confidence_level": None}, "confidence_level"),
        ("noise_floor", {"trials": 10**20}, "trials"),
        ("noise_floor", {"evaluator": None}, "evaluator"),
        ("power_analysis", {"evaluator": ""}, "evaluator"),
        ("power_analysis", {"trials": -1}, "trials"),
        ("minimum_detectable_effect", {"power": "high"}, "power"),
        ("minimum_detectable_effect", {"n_cases": 0}, "n_cases"),
        ("trials_for_precision", {"half_width": "0.1"}, "half_width"),
        ("trials_for_precision", {"half_width": 0.1, "cost_per_case": None}, "cost_per_case"),
        ("trials_for_precision", {"half_width": 0.1, "confidence_level": 1.5}, "confidence_level"),
        ("variance_decomposition", {"evaluator": ""}, "evaluator"),
    ],
)
def test_public_functions_name_an_argument_of_the_wrong_kind(
    example_run, function, kwargs, location
):
    """Found by calling the statistics API with random arguments (5 December 2026): these
    raised TypeError ("'<' not supported between instances of 'int' and 'str'"),
    AttributeError ("'NoneType' object has no attribute 'name'"), OverflowError, numpy's
    SeedSequence error or the package's internal Invalid, none naming the argument."""
    import agenticlens_frames as alf
    from agenticlens_frames.errors import InputError

    with pytest.raises(InputError) as error:
        getattr(alf, function)(example_run, **kwargs)
    assert error.value.location == location, str(error.value)
