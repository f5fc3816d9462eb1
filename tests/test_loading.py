"""load_experiment and run_experiment report a broken manifest's problems with the
suite's, as the command line does (each file's problems were met one run apart)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agenticlens_frames import load_experiment, run_experiment
from agenticlens_frames.errors import InputError

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "support"


@pytest.mark.parametrize("load", [load_experiment, run_experiment])
def test_the_suites_problems_come_with_the_manifests(tmp_path: Path, load) -> None:
    shutil.copytree(EXAMPLE, tmp_path, dirs_exist_ok=True)
    manifest, suite = tmp_path / "manifest.yaml", tmp_path / "suite.yaml"
    manifest.write_text(manifest.read_text().replace("trial_count", "trials"))
    good_suite = suite.read_text()
    suite.write_text(good_suite.replace("expected_contains", "expect_contains", 1))
    with pytest.raises(InputError) as info:
        load(manifest, suite)
    assert str(info.value).splitlines() == [
        "2 problems:",
        f"  {manifest}: unknown key 'trials' (did you mean 'trial_count'?)",
        f"  {suite}: cases[0]: unknown key 'expect_contains' (did you mean 'expected_contains'?)",
    ]
    suite.write_text(good_suite)  # the manifest's problem alone, as before
    with pytest.raises(InputError) as info:
        load(manifest, suite)
    assert str(info.value) == (f"{manifest}: unknown key 'trials' (did you mean 'trial_count'?)")


@pytest.mark.parametrize("load", [load_experiment, run_experiment])
def test_swapped_files_are_said_in_the_words_of_the_python_call_too(load) -> None:
    """load_experiment(suite, manifest) was told the command line's order only
    ("experiment run MANIFEST SUITE"), not the call's."""
    with pytest.raises(InputError) as info:
        load(EXAMPLE / "suite.yaml", EXAMPLE / "manifest.yaml")
    lines = str(info.value).splitlines()
    assert lines[0] == "2 problems:"
    for line in lines[1:]:
        assert line.endswith(
            "(give the manifest first and the suite second: experiment run MANIFEST SUITE, "
            "load_experiment(manifest_path, suite_path))"
        ), line


@pytest.mark.parametrize("load", [load_experiment, run_experiment])
def test_a_missing_recorded_target_is_named_at_its_place_in_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load
) -> None:
    """It said only "trials/basline.json: file not found (check the path)": not which
    variant, nor which manifest, nor that the path is read from the manifest's folder."""
    shutil.copytree(EXAMPLE, tmp_path / "exp")
    manifest, suite = tmp_path / "exp" / "manifest.yaml", tmp_path / "exp" / "suite.yaml"
    good = manifest.read_text()
    manifest.write_text(good.replace("trials/model-large.json", "trials/model_large.json"))
    with pytest.raises(InputError) as info:
        load(manifest, suite)
    assert str(info.value) == (
        f"{manifest}: variants[1].target: file not found: trials/model_large.json, read from "
        f"the manifest's folder as {tmp_path / 'exp' / 'trials' / 'model_large.json'} (did you "
        "mean trials/model-large.json? give the recorded trials of variant 'model-large')"
    )
    # Written from the working directory, as AgenticLens reads it: the path to write.
    monkeypatch.chdir(tmp_path)
    manifest.write_text(good.replace("trials/model-large.json", "exp/trials/model-large.json"))
    with pytest.raises(InputError) as info:
        load(manifest, suite)
    assert str(info.value).endswith(
        "(exp/trials/model-large.json is in the working directory: write trials/model-large.json)"
    )


def test_the_experiments_folder_given_for_its_files_names_them() -> None:
    """load_experiment("data/support", ...) said only "is a directory, not a file"."""
    with pytest.raises(InputError) as info:
        load_experiment(EXAMPLE, EXAMPLE / "suite.yaml")
    assert str(info.value) == (
        f"{EXAMPLE}: is a directory, not a file (give the path of a file, such as "
        f"{EXAMPLE / 'manifest.yaml'}, {EXAMPLE / 'suite.yaml'})"
    )


def test_a_tilde_path_that_is_not_found_says_it_is_not_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # (no look outside the test's folder)
    with pytest.raises(InputError) as info:
        load_experiment("~/an-experiment/manifest.yaml", EXAMPLE / "suite.yaml")
    home = tmp_path / "an-experiment" / "manifest.yaml"
    assert f"file not found ('~' is not expanded here: pass {home})" in str(info.value)


@pytest.mark.parametrize("load", [load_experiment, run_experiment])
def test_a_misspelt_invalid_payload_mode_is_refused_with_or_without_a_run_folder(load) -> None:
    """load_experiment checked the mode only when given a run folder, so a misspelt one was
    accepted whenever it was not used."""
    with pytest.raises(InputError) as caught:
        load(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml", invalid_payload="cases")
    assert str(caught.value) == "invalid_payload: must be 'trial' or 'case', got 'cases'"


def test_a_file_given_as_run_dir_is_named_as_a_file(tmp_path: Path) -> None:
    (tmp_path / "report.json").write_text("{}")
    with pytest.raises(InputError, match="run_dir names an existing file, not a run folder"):
        load_experiment(
            EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml", run_dir=tmp_path / "report.json"
        )
