"""typer's help formatter without rich's Markdown and traceback modules until they are used.

``typer.rich_utils``, which typer imports to print any help page or usage error, starts by
importing ``rich.markdown`` (markdown-it, pygments: about 30–45 ms) and ``rich.traceback``
(``rich.pretty``, attrs: 15–20 ms) — a third of what ``agenticlens-frames --help`` costs.
It needs them only for help texts in typer's ``"markdown"`` markup mode (ours use the
default, ``"rich"``) and for typer's pretty tracebacks (turned off here).

:func:`install` puts a one-time import hook in front of ``typer.rich_utils``: while that
module runs its imports, ``rich.markdown`` and ``rich.traceback`` (unless already imported)
are stand-ins whose ``Markdown`` and ``Traceback`` import the real module on first use —
a call, an attribute (``Traceback.from_exception``), an ``isinstance``. The stand-ins are
taken out of ``sys.modules`` as soon as ``typer.rich_utils`` is loaded, so anyone else
importing ``rich.markdown`` gets the real module.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["install"]

#: The module whose imports are deferred.
TARGET = "typer.rich_utils"
#: Module → the one name ``typer.rich_utils`` takes from it.
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}


class _Deferred(type):
    """Metaclass of a stand-in class: every use goes to the real class, imported then."""

    _where: tuple[str, str]

    def _real(cls) -> Any:
        module, name = cls._where
        return getattr(importlib.import_module(module), name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, attr: str) -> Any:
        if attr.startswith("__"):  # (copy, pickle, introspection probing the stand-in)
            raise AttributeError(attr)
        return getattr(cls._real(), attr)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._real())

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._real())


def _stand_in(module: str, name: str) -> types.ModuleType:
    stand_in = types.ModuleType(module, f"Stand-in for {module} while {TARGET} is imported.")
    setattr(stand_in, name, _Deferred(name, (), {"_where": (module, name), "__module__": module}))
    return stand_in


class _WithStandIns:
    """``typer.rich_utils``'s own loader, run with the stand-ins in ``sys.modules``.

    (Not a subclass of ``importlib.abc.Loader``: importing ``importlib.abc`` costs
    about 10 ms, and the import system asks only for these methods.)"""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        missing = [name for name in DEFERRED if name not in sys.modules]
        added = {name: _stand_in(name, DEFERRED[name]) for name in missing}
        sys.modules.update(added)
        try:
            self.loader.exec_module(module)
        finally:
            for name, stand_in in added.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]

    def __getattr__(self, attr: str) -> Any:  # get_source (tracebacks), get_filename, ...
        return getattr(self.loader, attr)


class _Finder:
    """Finds ``typer.rich_utils`` once, as the path finder would, with the wrapped loader."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        _remove()  # one import; a reload finds the module as usual
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _WithStandIns(spec.loader)
        return spec


_FINDER = _Finder()


def _remove() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def install() -> None:
    """Defer ``typer.rich_utils``'s Markdown and traceback imports (once per process).

    Does nothing once ``typer.rich_utils`` is imported.

    Examples
    --------
    >>> install()
    >>> import typer.rich_utils
    >>> text = typer.rich_utils._make_rich_text(text="*x*", markup_mode="markdown")
    >>> type(text).__module__  # the real class, imported when first used
    'rich.markdown'
    """
    if TARGET not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
