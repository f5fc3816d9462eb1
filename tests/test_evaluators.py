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
