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


def test_evaluators_module_in_the_working_directory_is_found_without_pythonpath(
    tmp_path, monkeypatch
) -> None:
    """docs/judges.md runs `--evaluators my_project.evals:registry` beside my_project/; the
    console script does not put the working directory on sys.path (python targets already
    looked there), so the command failed with "cannot import module" unless PYTHONPATH=."""
    import sys

    from agenticlens_frames import EvaluatorRegistry, load_registry

    package = tmp_path / "audit_cwd_project"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "evals.py").write_text(
        "from agenticlens_frames import EvaluatorRegistry\nregistry = EvaluatorRegistry()\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    # As under the console script: neither '' nor the working directory is on sys.path.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for name in ("audit_cwd_project", "audit_cwd_project.evals"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        assert isinstance(load_registry("audit_cwd_project.evals:registry"), EvaluatorRegistry)
        # A module found nowhere still says where it was looked for.
        with pytest.raises(InputError, match="working directory"):
            load_registry("audit_cwd_missing_xyz.evals:registry")
    finally:
        for name in ("audit_cwd_project.evals", "audit_cwd_project"):
            sys.modules.pop(name, None)
