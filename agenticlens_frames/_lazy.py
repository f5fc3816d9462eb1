"""Public names of a package imported on first use (PEP 562 module ``__getattr__``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


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
        return sorted({*namespace, *names})

    return __getattr__, __dir__, sorted(names)
