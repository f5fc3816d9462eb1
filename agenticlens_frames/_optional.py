"""Optional dependencies: import one, or fail with the extra that installs it.

The package's extras (``pyproject.toml``) and the modules each provides are declared
once here, so every optional import says the same thing: which package is missing and
the ``pip install 'agenticlens-frames[extra]'`` line that fixes it.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRAS", "available", "require"]

#: Top-level module -> the extra of agenticlens-frames that installs it.
EXTRAS: dict[str, str] = {
    "duckdb": "duckdb",
    "dask": "dask",
    "distributed": "dask",
    "kaleido": "export",
    "polars": "polars",
    "ipywidgets": "notebook",
    "anywidget": "notebook",
    "traitlets": "notebook",
}


def available(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it.

    Examples
    --------
    >>> available("numpy"), available("no_such_module_here")
    (True, False)
    """
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, purpose: str = "this feature") -> ModuleType:
    """Import an optional dependency, or raise ImportError naming the extra to install.

    Parameters
    ----------
    module
        The module to import (``"duckdb"``, ``"dask.dataframe"``, …).
    purpose
        What needs it, for the message (``"the duckdb engine"``).

    Returns
    -------
    ModuleType
        The imported module.

    Raises
    ------
    ImportError
        ``module`` is not installed; the message names the extra, for example
        ``pip install 'agenticlens-frames[duckdb]'``.

    Examples
    --------
    >>> require("numpy").__name__
    'numpy'
    >>> require("duckdb_not_installed", "the duckdb engine")
    Traceback (most recent call last):
    ...
    ImportError: the duckdb engine needs the optional package 'duckdb_not_installed'; ...
    """
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(top)
        fix = (
            f"install it with: pip install 'agenticlens-frames[{extra}]'"
            if extra
            else f"install it with: pip install {top}"
        )
        raise ImportError(f"{purpose} needs the optional package {top!r}; {fix}") from exc
