"""load_recorded: recorded-trials files (spec §7.1), refused at load when a sample is bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import Trace, load_manifest, load_recorded, load_suite

from .conftest import EXPERIMENT


@pytest.fixture(scope="module")
def suite():
    return load_suite(EXPERIMENT / "suite.yaml")


def _file(write, trials, name="v01.json"):
    return write(name, {"trials": trials})


def test_json_file_with_both_entry_forms(suite):
    recorded = load_recorded(EXPERIMENT / "trials" / "prompt-v2.json", suite)
    assert recorded.path == EXPERIMENT / "trials" / "prompt-v2.json"
    assert len(recorded.trials) == 2
    first, second = recorded.trials
    assert [s["case_id"] for s in first] == ["refund", "order-json", "reset"]
    assert [s["case_id"] for s in second] == ["order-json", "reset"]  # refund missing
    assert first[0]["output"] == "Refund within 30 days via search."
    assert first[0]["trace"].tool_names == ("search_kb",)
    assert first[0]["trace"].total_latency_ms == 950.0
    # No trace -> all defaults.
    assert first[1]["trace"] == Trace("", (), (), 0.0, None, None, {}, "eval")
    assert first[2]["trace"].estimated_cost_usd == 0.0
    assert set(first[0]) == {"case_id", "output", "trace"}


def test_yaml_file_with_run_traces(suite):
    recorded = load_recorded(EXPERIMENT / "trials" / "small.yaml", suite)
    refund = recorded.trials[0][0]["trace"]
    assert refund.shape == "run"
    assert refund.total_latency_ms == 1000.9999999999999
    assert refund.estimated_cost_usd == 0.001 + 0.0002
    assert refund.cost_source == "measured"  # from metadata.cost_source
    assert refund.metadata["agenticlens.task_success"] is True
    # Namespaced span copies are only made on request (no check reads them).
    assert "agenticlens.retrieved" not in refund.spans[1][1]
    # Unquoted YAML timestamps arrive as datetime objects.
    assert recorded.trials[0][1]["trace"].total_latency_ms == 2500.0
    assert recorded.trials[1][0]["trace"].shape == "eval"


def test_extra_keys_are_ignored_and_output_kept_unstripped(suite):
    recorded = load_recorded(EXPERIMENT / "trials" / "base.json", suite)
    reset = recorded.trials[0][2]
    assert reset["output"] == "  I have sent you a reset link.  "
    assert "note" not in reset
    # The B6 quirk: span_id and no total_latency_ms -> Run, trace cost dropped.
    assert recorded.trials[1][1]["trace"].estimated_cost_usd is None


def test_same_case_in_different_trials_is_fine(write, suite):
    sample = {"case_id": "refund", "output": "x"}
    recorded = load_recorded(_file(write, [[sample], [sample]]), suite)
    assert [len(t) for t in recorded.trials] == [1, 1]


def test_empty_trial_is_allowed(write, suite):
    recorded = load_recorded(_file(write, [{"samples": []}, []]), suite)
    assert recorded.trials == ((), ())


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([{"samples": []}], "(the top level is a list)"),
        ({"variant_id": "v"}, "('trials' is null)"),
        ({"trials": []}, "('trials' is an empty list)"),
        ({"trials": {"samples": []}}, "('trials' is a mapping)"),
    ],
)
def test_top_level_errors(write, suite, document, message):
    path = write("v01.json", document)
    with pytest.raises(InputError) as info:
        load_recorded(path, suite)
    assert str(info.value) == (
        f"{path}: a recorded trials file must define a non-empty 'trials' list {message} "
        '(write {"trials": [{"samples": [...]}, ...]})'
    )


def test_trial_entry_errors(write, suite):
    path = _file(write, [[], {"samples": None}])
    with pytest.raises(InputError) as info:
        load_recorded(path, suite)
    assert str(info.value) == f"{path}: trials[1].samples: expected a list of samples, got null"
    path = _file(write, [[], {"sample": []}])
    with pytest.raises(InputError) as info:
        load_recorded(path, suite)
    assert str(info.value) == (
        f"{path}: trials[1]: recorded trial 2 must be a list of samples or a mapping with a "
        "'samples' list, got a mapping without 'samples'"
    )
    with pytest.raises(InputError, match=r"trials\[0\]: recorded trial 1 .* got 'x'"):
        load_recorded(_file(write, ["x"]), suite)


def _error(write, suite, samples, *, bare=False) -> InputError:
    trials = [[], [], [], samples if bare else {"samples": samples}]
    with pytest.raises(InputError) as info:
        load_recorded(_file(write, trials), suite)
    return info.value


def test_sample_not_a_mapping(write, suite):
    error = _error(write, suite, ["refund"])
    assert error.location == "trials[3].samples[0]"
    assert error.message == "expected a sample mapping, got 'refund'"


def test_missing_case_id(write, suite):
    error = _error(write, suite, [{"output": "x"}], bare=True)
    assert error.location == "trials[3][0]"
    assert error.message == "missing required key 'case_id'"


def test_case_id_not_a_string(write, suite):
    error = _error(write, suite, [{"case_id": 7, "output": "x"}])
    assert str(error).endswith("trials[3].samples[0].case_id: expected a string, got 7")


def test_unknown_case_id(write, suite):
    samples = [{"case_id": "refund", "output": "x"}, {"case_id": "refnd", "output": "x"}]
    error = _error(write, suite, samples)
    assert error.location == "trials[3].samples[1].case_id"
    assert error.message == "'refnd' is not a case of suite 'support' (" + str(suite.path) + ")"
    assert error.hint == "did you mean 'refund'?"


def test_a_case_id_in_another_unicode_spelling_says_so(write, suite):
    import dataclasses
    import unicodedata

    from agenticlens_frames.formats.model import SuiteSpec

    # "café" (NFC) in the suite, "cafe\u0301" (NFD) in the file: they print the same, so
    # "did you mean 'café'?" read as nonsense.
    nfc = unicodedata.normalize("NFC", "café")
    first = dataclasses.replace(suite.cases[0], id=nfc)
    cafe_suite = dataclasses.replace(suite, cases=(first, *suite.cases[1:]))
    assert isinstance(cafe_suite, SuiteSpec)
    nfd = unicodedata.normalize("NFD", nfc)
    path = write("v01.json", {"trials": [{"samples": [{"case_id": nfd, "output": "x"}]}]})
    with pytest.raises(InputError) as info:
        load_recorded(path, cafe_suite)
    assert "only in Unicode normalization" in info.value.hint


def test_duplicate_case_id_names_both_positions(write, suite):
    samples = [
        {"case_id": "refund", "output": "x"},
        {"case_id": "reset", "output": "x"},
        {"case_id": "refund", "output": "y"},
    ]
    error = _error(write, suite, samples)
    assert error.location == "trials[3].samples[2].case_id"
    assert error.message == (
        "case 'refund' already has a sample in this trial, at trials[3].samples[0]"
    )


@pytest.mark.parametrize(
    ("sample", "location", "message"),
    [
        ({"case_id": "refund"}, "trials[3].samples[0]", "missing required key 'output'"),
        ({"case_id": "refund", "output": 42}, "trials[3].samples[0].output",
         "expected a string, got 42"),
        ({"case_id": "refund", "output": None}, "trials[3].samples[0].output",
         "expected a string, got null"),
        ({"case_id": "refund", "output": {"a": 1}}, "trials[3].samples[0].output",
         "expected a string, got a mapping"),
        ({"case_id": "refund", "output": "x", "trace": None}, "trials[3].samples[0].trace",
         "expected a trace mapping, got null"),
        ({"case_id": "refund", "output": "x", "trace": []}, "trials[3].samples[0].trace",
         "expected a trace mapping, got a list"),
    ],
)  # fmt: skip
def test_output_and_trace_errors(write, suite, sample, location, message):
    error = _error(write, suite, [sample])
    assert (error.location, error.message) == (location, message)


def test_trace_errors_are_located_inside_the_sample(write, suite):
    samples = [{"case_id": c, "output": "x"} for c in ("refund", "order-json")]
    samples.append({"case_id": "reset", "output": "x", "trace": {"cost_source": "billed"}})
    error = _error(write, suite, samples)
    assert str(error).startswith(f"{error.file}: trials[3].samples[2].trace.cost_source: ")
    assert error.file.endswith("v01.json")


def test_yaml_recorded_file(write, suite):
    path = write("v01.yaml", "trials:\n  - samples:\n      - {case_id: reset, output: 42}\n")
    with pytest.raises(InputError) as info:
        load_recorded(path, suite)
    assert str(info.value) == (
        f"{path}: trials[0].samples[0].output: expected a string, got 42 "
        "(record the agent's answer as text; serialise structured output as a JSON string)"
    )


def test_unreadable_file(tmp_path, suite):
    with pytest.raises(InputError, match="file not found"):
        load_recorded(tmp_path / "missing.json", suite)


def test_round_trip_generated_experiment(synthetic):
    manifest = load_manifest(synthetic / "manifest.yaml")
    suite = load_suite(synthetic / "suite.yaml")
    for variant in manifest.variants:
        recorded = load_recorded(variant.resolved_target, suite)
        raw = json.loads(Path(variant.resolved_target).read_text())
        assert len(recorded.trials) == manifest.trial_count == len(raw["trials"])
        for ours, theirs in zip(recorded.trials, raw["trials"], strict=True):
            assert [s["case_id"] for s in ours] == [s["case_id"] for s in theirs["samples"]]
            assert [s["output"] for s in ours] == [s["output"] for s in theirs["samples"]]
            assert [s["trace"].trace_id for s in ours] == [
                s["trace"]["trace_id"] for s in theirs["samples"]
            ]


def _reference_trials(path: Path):
    runner = pytest.importorskip("agenticlens.experiments.runner")
    return runner.load_recorded_trials(path)


@pytest.mark.differential
@pytest.mark.parametrize("name", ["base.json", "small.yaml", "prompt-v2.json"])
def test_matches_agenticlens_on_fixtures(suite, name):
    _assert_same(EXPERIMENT / "trials" / name, suite)


@pytest.mark.differential
def test_matches_agenticlens_on_generated_experiment(synthetic):
    suite = load_suite(synthetic / "suite.yaml")
    for path in sorted((synthetic / "trials").glob("*.json")):
        _assert_same(path, suite)


def _assert_same(path: Path, suite) -> None:
    theirs = _reference_trials(path)
    ours = load_recorded(path, suite, enrich=True)
    assert len(ours.trials) == len(theirs)
    for our_trial, their_trial in zip(ours.trials, theirs, strict=True):
        assert len(our_trial) == len(their_trial)
        for our, their in zip(our_trial, their_trial, strict=True):
            assert our["case_id"] == their.case_id
            assert our["output"] == their.output
            assert our["trace"].as_eval_dict() == their.trace.model_dump()


@pytest.mark.differential
@pytest.mark.parametrize(
    "sample",
    [
        {"case_id": "refund", "output": 1},
        {"case_id": "refund", "output": "x", "trace": None},
        {"case_id": "refund", "output": "x", "trace": {"cost_source": "x"}},
        {"case_id": 3, "output": "x"},
        {"output": "x"},
    ],
)
def test_what_agenticlens_refuses_we_refuse(write, suite, sample):
    path = _file(write, [[sample]])
    with pytest.raises(Exception):  # noqa: B017 - any validation error
        _reference_trials(path)
    with pytest.raises(InputError):
        load_recorded(path, suite)


def _bad_samples(suite, trials: int, bad: dict[tuple[int, int], dict]) -> list[list[dict]]:
    """``trials`` complete trials of the suite, with the samples at (trial, position)
    replaced by ``bad``'s."""
    cases = enumerate(suite.case_ids)
    good = {i: {"case_id": case_id, "output": "x"} for i, case_id in cases}
    return [[bad.get((t, i), sample) for i, sample in good.items()] for t in range(trials)]


def test_every_bad_sample_is_listed_in_file_order(write, suite):
    """Reading stopped at the first bad sample: a file generated with a bug was fixed one
    run at a time. Each problem is listed as it was alone, by both readers."""
    from agenticlens_frames.formats.recorded import load_recorded_columns

    first, second = suite.case_ids[:2]
    bad = {
        (0, 1): {"case_id": second, "output": 5},
        (1, 0): {"case_id": "nope", "output": "x"},
        (1, 1): {"case_id": second},
        (2, 0): {"case_id": first, "output": "x", "trace": {"spans": "x"}},
    }
    path = _file(write, _bad_samples(suite, 3, bad))
    expected = [
        "trials[0][1].output: expected a string, got 5",
        "trials[1][0].case_id: 'nope' is not a case of suite",
        "trials[1][1]: missing required key 'output'",
        "trials[2][0].trace.spans: expected a list of spans, got 'x'",
    ]
    for read in (load_recorded, load_recorded_columns):
        with pytest.raises(InputError) as caught:
            read(path, suite)
        lines = str(caught.value).splitlines()
        assert lines[0] == f"{path}: 4 problems:"
        assert len(lines) == 5
        for line, text in zip(lines[1:], expected, strict=True):
            assert line.startswith(f"  {path}: {text}"), (line, text)
        # Code reading the error's fields sees the first problem, as before.
        assert (caught.value.location, caught.value.message) == (
            "trials[0][1].output",
            "expected a string, got 5",
        )


def test_a_file_with_one_bad_sample_gives_the_error_it_gave(write, suite):
    path = _file(write, _bad_samples(suite, 2, {(1, 2): {"case_id": suite.case_ids[2]}}))
    error = _error_of(path, suite)
    assert not error.problems
    assert str(error) == f"{path}: trials[1][2]: missing required key 'output'"


def test_at_most_twenty_problems_are_listed(write, suite):
    bad = {
        (t, i): {"case_id": c, "output": 1} for t in range(9) for i, c in enumerate(suite.case_ids)
    }
    assert len(bad) > 20
    path = _file(write, _bad_samples(suite, 9, bad))
    lines = str(_error_of(path, suite)).splitlines()
    assert lines[0] == f"{path}: {len(bad)} problems:"
    assert len(lines) == 1 + 20 + 1
    assert lines[-1] == (
        f"  and {len(bad) - 20} more, not listed (fix these and load the file again to see them)"
    )


def _error_of(path: Path, suite) -> InputError:
    with pytest.raises(InputError) as caught:
        load_recorded(path, suite)
    return caught.value
