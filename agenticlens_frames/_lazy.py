"""Public names of a package imported on first use (PEP 562 module ``__getattr__``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["lazy_exports", "lazy_module"]


def lazy_exports(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__``, ``__dir__`` and ``__all__`` for a package whose names load on first use.

    ``__all__`` is every name of ``names``, sorted: the public names are written once, in
    the package's table (tests/test_public_api.py checks that its type-checking imports
    name the same things).

    Parameters
    ----------
    package
        The package's ``__name__``.
    names
        Public name -> relative module holding it (``".viz"`` for the submodule ``viz``
        itself when the name is the module's).
    namespace
        The package's ``globals()``: a loaded name is stored there, so later lookups do
        not come back here.

    Examples
    --------
    >>> namespace, names = {}, {"InputError": ".errors"}
    >>> getattr_, dir_, all_ = lazy_exports("agenticlens_frames", names, namespace)
    >>> getattr_("InputError").__name__, "InputError" in namespace, dir_(), all_
    ('InputError', True, ['InputError'], ['InputError'])
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == f".{name}":  # the submodule itself
            value = import_module(module, package)
        else:
            value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        # Tab completion shows the public names, not the package's own imports
        # (TYPE_CHECKING, lazy_exports) or the submodules loaded on the way.
        return sorted({*names, *(n for n in namespace if n.startswith("__"))})

    return __getattr__, __dir__, sorted(names)


def lazy_module(module: str, alias: str, namespace: dict[str, Any]) -> Any:
    """A stand-in for ``import module as alias`` in a module's ``namespace``: the first
    attribute looked up on it imports ``module`` and puts it in ``namespace[alias]``, so
    later uses of ``alias`` there find the module itself.

    For a module whose import is costly and that only some of the functions of the
    importing module use: the replay's table builder (``frames``) needs no pandas, and a
    process that only replays need not import it (about 0.3 s).

    Parameters
    ----------
    module
        The module to import on first use (``"pandas"``).
    alias
        The name the importing module uses for it (``"pd"``).
    namespace
        The importing module's ``globals()``.

    Returns
    -------
    Any
        The stand-in, to bind to ``alias``.

    Examples
    --------
    >>> namespace: dict[str, Any] = {}
    >>> namespace["js"] = lazy_module("json", "js", namespace)
    >>> type(namespace["js"]).__name__
    '_LazyModule'
    >>> namespace["js"].dumps([1])
    '[1]'
    >>> namespace["js"].__name__
    'json'
    """
    return _LazyModule(module, alias, namespace)


class _LazyModule:
    """:func:`lazy_module`'s stand-in."""

    def __init__(self, module: str, alias: str, namespace: dict[str, Any]) -> None:
        self._where = (module, alias, namespace)

    def __getattr__(self, name: str) -> Any:
        module, alias, namespace = self._where
        loaded: ModuleType = import_module(module)
        namespace[alias] = loaded
        return getattr(loaded, name)
