"""How the Python entry points take an evaluator registry (evaluators.as_registry)."""

from __future__ import annotations

import pytest

from agenticlens_frames import InputError, load_experiment
from agenticlens_frames.runner import run_experiment

from .conftest import EXAMPLE


def test_a_module_attr_string_is_loaded_as_the_command_line_does() -> None:
    # A string was iterated as a registry of one-character evaluator names, and the error
    # listed ":", "_", "d", "e"... as the available evaluators.
    spec = "agenticlens_frames.evaluators:default_registry"
    manifest, suite = EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"
    run = load_experiment(manifest, suite, evaluators=spec)
    assert run.attempts.equals(load_experiment(manifest, suite).attempts)
    live = run_experiment(manifest, suite, evaluators=spec, progress=False)
    assert live.run.attempts.equals(run.attempts)
    for wrong, message in ((["exact_match"], "got list"), ("exact_match", "module:attribute")):
        with pytest.raises(InputError, match=message):
            load_experiment(manifest, suite, evaluators=wrong)  # type: ignore[arg-type]


def test_a_bad_evaluators_spec_in_python_names_the_argument_not_the_cli_option() -> None:
    """load_experiment(..., evaluators="nope.mod:reg") said "--evaluators: ..." and hinted
    at the command line's option; the command line still names its option."""
    from agenticlens_frames import load_registry

    for spec, message in (
        ("nonexistent_module_xyz:registry", "cannot import module"),
        ("registry", "expected 'module:attribute'"),
        ("json:dumps", "json:dumps is a function that needs arguments"),
    ):
        with pytest.raises(InputError) as info:
            load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml", evaluators=spec)
        text = str(info.value)
        assert text.startswith(f"evaluators: {message}"), text
        assert "--evaluators" not in text
    with pytest.raises(InputError, match=r"^--evaluators: expected 'module:attribute'"):
        load_registry("registry", location="--evaluators")
