"""The public API is declared once: the lazy-export table of agenticlens_frames/__init__.py.
``__all__`` is derived from it, and the type-checking imports must name the same things."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agenticlens_frames
from agenticlens_frames.errors import InputError

INIT = Path(agenticlens_frames.__file__)


def _type_checking_imports(init: Path = INIT) -> dict[str, str]:
    """Name -> module of every ``from .x import name`` under ``if TYPE_CHECKING:``."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    names: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.dump(node)
        for alias in node.names:
            names[alias.asname or alias.name] = "." * node.level + (node.module or alias.name)
    return names


def test_type_checking_imports_and_the_lazy_table_agree() -> None:
    imports = _type_checking_imports()
    # `from . import viz, testing` name the submodules themselves
    expected = {
        name: (module if module != "." else f".{name}")
        for name, module in agenticlens_frames._LAZY.items()
    }
    got = {name: (module if module != "." else f".{name}") for name, module in imports.items()}
    assert got == expected


def test_every_public_name_resolves_to_its_declared_module() -> None:
    for name in agenticlens_frames.__all__:
        if name == "__version__":
            continue
        value = getattr(agenticlens_frames, name)
        module = importlib.import_module(agenticlens_frames._LAZY[name], "agenticlens_frames")
        assert value is getattr(module, name, module), name


def test_a_star_import_gives_the_api_but_not_the_explorer_class() -> None:
    namespace: dict[str, object] = {}
    exec("from agenticlens_frames import *", namespace)  # what a user star-import sees
    assert {"analyze", "explore", "case_verdicts", "Archive", "__version__"} <= set(namespace)
    assert "Explorer" not in namespace


@pytest.mark.parametrize("package", ["archive", "paired", "report", "runner"])
def test_subpackages_declare_their_api_once(package: str) -> None:
    # Each subpackage's __all__ is derived from its lazy-export table too: the table, the
    # type-checking imports and __all__ must name the same things, and each name must be
    # the object its declared module holds.
    module = importlib.import_module(f"agenticlens_frames.{package}")
    imports = _type_checking_imports(Path(module.__file__))
    assert imports == module._LAZY
    assert module.__all__ == sorted(imports)
    for name, where in module._LAZY.items():
        source = importlib.import_module(where, module.__name__)
        assert getattr(module, name) is getattr(source, name), name


@pytest.mark.parametrize("name", ["", ".viz", ".archive", ".paired", ".report", ".runner"])
def test_tab_completion_offers_the_public_names_only(name: str) -> None:
    # dir() is what IPython completes on: the package's own imports (TYPE_CHECKING,
    # lazy_exports, np, pd, go) and the submodules loaded on the way are not API.
    module = importlib.import_module(f"agenticlens_frames{name}")
    for public in module.__all__:
        getattr(module, public)  # load everything, so loaded submodules are in globals()
    shown = {n for n in dir(module) if not n.startswith("__")}
    extra = {"Explorer"} if name == "" else set()  # reached through explore(), still API
    assert shown == set(module.__all__) - {"__version__"} | extra


def test_the_python_api_module_is_reachable_from_a_fresh_import() -> None:
    # README: `alf.api.run(exp, ...)`. The submodule was set on the package only once
    # something of it had been imported, so `alf.api.run(alf.Experiment(...), ...)` (the
    # attribute is looked up before the argument is built) raised AttributeError.
    code = "import agenticlens_frames as alf; print(alf.api.run.__module__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agenticlens_frames.api"


def test_the_architecture_page_lists_every_public_name_once() -> None:
    # Eight public names (load_manifest, render_cases_csv, ...) were in no document.
    page = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text("utf-8")
    section = page.split("## The public names", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    listed = [name for row in rows for name in re.findall(r"`([A-Za-z_]\w*)`", row.split("|")[2])]
    inside = {"make_synthetic", "example_archive"}  # what `testing` holds, named beside it
    listed = [name for name in listed if name not in inside]
    assert sorted(set(listed)) == sorted(agenticlens_frames.__all__)
    assert len(listed) == len(set(listed)), "a name listed twice"


def _public_functions() -> list[tuple[str, Callable[..., Any]]]:
    """Every public function: the package's ``__all__`` and the figure, explorer and
    archive modules' (a new one is in this list without being added to the test)."""
    from agenticlens_frames import archive, viz, widgets

    found: dict[int, tuple[str, Callable[..., Any]]] = {}
    for module in (agenticlens_frames, viz, widgets, archive):
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value):
                found.setdefault(id(value), (f"{module.__name__}.{name}", value))
    return sorted(found.values(), key=lambda item: item[0])


def _public_methods() -> list[tuple[str, Callable[..., Any]]]:
    """The constructor and every public method of every public class (the package's and
    the archive's), but for those a class leaves out as called once per row."""
    from agenticlens_frames import archive

    found: dict[str, Callable[..., Any]] = {}
    for module in (agenticlens_frames, archive):
        for name in module.__all__:
            cls = getattr(module, name)
            if not inspect.isclass(cls) or issubclass(cls, BaseException):
                continue
            skip = getattr(cls, "__keyword_hints_skip__", None)
            assert skip is not None, f"{name}: not decorated with class_keyword_hints"
            for attr, value in vars(cls).items():
                if (attr.startswith("_") and attr != "__init__") or attr in skip:
                    continue
                function = getattr(value, "__func__", value)
                if inspect.isfunction(function):
                    found[f"{name}.{attr}"] = getattr(cls, attr) if attr != "__init__" else cls
    return sorted(found.items())


def _keywords(function: Callable[..., Any]) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(function).parameters.values()
    return [p.name for p in parameters if p.kind in kinds and p.name not in ("self", "cls")]


def _takes_options(function: Callable[..., Any]) -> bool:
    parameters = inspect.signature(function).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


@pytest.fixture(scope="module")
def example_run() -> Any:
    from .conftest import EXAMPLE

    return agenticlens_frames.load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.mark.parametrize(
    ("name", "function"),
    [item for item in _public_functions() if _keywords(item[1])],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_every_public_function_hints_a_misspelt_keyword(
    name: str, function: Callable[..., Any], example_run: Any
) -> None:
    """A misspelt keyword gets the closest one the function takes. Python 3.11 says only
    "unexpected keyword argument 'rundir'": ``load_experiment(m, s, rundir=...)``,
    ``load_report(path, comparisns=...)`` and 30 more said nothing of ``run_dir``."""
    if not _takes_options(function):
        keyword = max(_keywords(function), key=len)
        typo = keyword + keyword[-1]  # run_dir -> run_dirr
        # Binding fails before any argument is looked at, so none is needed.
        with pytest.raises(TypeError) as caught:
            function(**{typo: None})
    else:
        # It checks its **options itself, after its data: given the example run (the
        # analysis, the manifest to those that take them).
        first, *_ = inspect.signature(function).parameters.values()
        own = [k for k in _keywords(function) if k != first.name]
        # as_analysis takes the data and the statistics options only
        typo = max(own, key=len) + "s" if own else "corection"
        if "ManifestSpec" in str(first.annotation):
            data, extra = example_run.manifest, {"correction": None}
        elif str(first.annotation) == "ExperimentAnalysis":
            data, extra = agenticlens_frames.analyze(example_run, frontier_n_resamples=0), {}
        else:
            data, extra = example_run, {}
        with pytest.raises((TypeError, InputError)) as caught:
            function(data, **extra, **{typo: None})
    assert "did you mean" in str(caught.value), (name, str(caught.value))


@pytest.mark.parametrize(
    ("name", "method"),
    [item for item in _public_methods() if _keywords(item[1]) and not _takes_options(item[1])],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_every_public_constructor_and_method_hints_a_misspelt_keyword(
    name: str, method: Callable[..., Any]
) -> None:
    """``ComparisonsConfig(corection="holm")`` said only "__init__() got an unexpected
    keyword argument 'corection'"; now it names ``correction``, as every public method."""
    keyword = max(_keywords(method), key=len)
    with pytest.raises(TypeError) as caught:
        method(**{keyword + keyword[-1]: None})  # binding fails before self is needed
    assert "did you mean" in str(caught.value), (name, str(caught.value))
    assert "__init__" not in str(caught.value)
