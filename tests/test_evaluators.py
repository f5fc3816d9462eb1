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


def test_a_name_is_registered_once_unless_replaced() -> None:
    from agenticlens_frames import EvaluatorRegistry

    registry = EvaluatorRegistry()
    registry.register("tone", lambda *args: 1.0, version="1")
    registry.register_judge("judge", lambda *args: 1.0, version="1")
    for register in (registry.register, registry.register_judge):
        for name in ("tone", "judge"):
            with pytest.raises(ValueError, match=f"evaluator '{name}' is already registered"):
                register(name, lambda *args: 0.0, version="2")
    registry.register("tone", lambda *args: 0.5, version="2", replace=True)
    registry.register_judge("judge", lambda *args: 0.5, version="2", replace=True)
    # (a registry lists its names sorted)
    assert [(n, registry[n].version, registry[n].runner is None) for n in registry] == [
        ("judge", "2", False),
        ("tone", "2", True),
    ]
    registry.register_judge("unversioned", lambda *args: 1.0)
    assert repr(registry) == "EvaluatorRegistry([judge@2, tone@2, unversioned@unversioned])"


@pytest.mark.parametrize("name", ["", None, 5])
def test_an_evaluator_needs_a_name(name: object) -> None:
    from agenticlens_frames import EvaluatorRegistry

    with pytest.raises(ValueError, match="evaluator name must be a non-empty string"):
        EvaluatorRegistry().register(name, lambda *args: 1.0, version="1")  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [" ", "", 3])
def test_a_judge_version_is_text_or_none(version: object) -> None:
    from agenticlens_frames import EvaluatorRegistry

    with pytest.raises(InputError, match="version must not be blank"):
        EvaluatorRegistry().register_judge("j", lambda *args: 1.0, version=version)  # type: ignore[arg-type]


def test_only_a_case_naming_a_judge_is_judged() -> None:
    from agenticlens_frames import EvaluatorRegistry
    from agenticlens_frames.formats.model import CaseSpec, EvaluatorRef

    registry = EvaluatorRegistry()
    registry.register("plain", lambda *args: 1.0, version="1")
    registry.register_judge("judge", lambda *args: 1.0, version="1")

    def case(*names: str) -> CaseSpec:
        return CaseSpec("c", "c", 0, evaluators=tuple(EvaluatorRef(name=n) for n in names))

    assert [
        registry.judges(case("plain")),
        registry.judges(case("unknown")),
        registry.judges(case("plain", "judge")),
    ] == [False, False, True]


def test_a_registry_factory_is_called_only_when_it_needs_no_argument(tmp_path, monkeypatch) -> None:
    """A function whose every parameter is optional or variadic is called; one with a
    parameter it would need is refused before it runs."""
    import sys

    from agenticlens_frames import EvaluatorRegistry, load_registry

    (tmp_path / "audit_factories_xyz.py").write_text(
        "from agenticlens_frames import EvaluatorRegistry\n"
        "calls = []\n"
        "def variadic(*args, **kwargs):\n"
        "    return EvaluatorRegistry()\n"
        "def needs(path):\n"
        "    calls.append(path)\n"
        "    return EvaluatorRegistry()\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert isinstance(load_registry("audit_factories_xyz:variadic"), EvaluatorRegistry)
        with pytest.raises(InputError, match="is a function that needs arguments"):
            load_registry("audit_factories_xyz:needs")
        assert sys.modules["audit_factories_xyz"].calls == []
    finally:
        sys.modules.pop("audit_factories_xyz", None)


def test_the_default_scorers_keep_their_descriptions() -> None:
    from agenticlens_frames.evaluators import default_registry

    description = default_registry()["levenshtein_similarity"].description
    assert description and not description.isspace()
