"""Importing a user's module by name: a python target's ``module:function``, the command
line's ``--evaluators module:attr``.

The console script puts its own folder on ``sys.path``, not the working directory, so a
module beside the user's files (``my_project/evals.py``) is not found by a plain import;
``python -m`` would have found it. These helpers look there too, and keep the folder a
module was found in importable, as running it as a script would.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

__all__ = ["import_nearby", "keep_importable"]


def keep_importable(folder: Path) -> None:
    """Keep ``folder`` on ``sys.path``, as ``python agent/bot.py`` does, so that
    ``from helpers import x`` finds agent/helpers.py when the module is imported and when
    its code runs later (an import in a call failed every call); last, so that a module
    found before (installed, or the standard library's) keeps its name.

    Examples
    --------
    >>> import sys, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> keep_importable(folder)
    >>> sys.path[-1] == str(folder)
    True
    >>> sys.path.remove(str(folder))
    """
    if str(folder) not in sys.path:
        sys.path.append(str(folder))


def _is_missing(error: ModuleNotFoundError, name: str) -> bool:
    """Whether ``error`` says ``name`` itself (or its package) is missing, rather than a
    module that ``name`` imports: that one is the user's to install, not ours to look for."""
    return error.name is not None and name.startswith(error.name)


def import_nearby(name: str, folders: Iterable[Path | None]) -> ModuleType:
    """Import the module ``name``; when it is not on ``sys.path``, look in ``folders`` in
    turn (None entries skipped), and keep the folder it was found in importable.

    Raises
    ------
    ModuleNotFoundError
        The first import's error when no folder holds the module; at once, the error of
        a module that ``name`` imports and that is missing.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "nearby_doctest_mod.py").write_text("ANSWER = 42\\n")
    >>> import_nearby("nearby_doctest_mod", [None, folder]).ANSWER
    42
    >>> sys.path.remove(str(folder)); del sys.modules["nearby_doctest_mod"]
    >>> import_nearby("nearby_doctest_missing", [folder])
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: No module named 'nearby_doctest_missing'
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if not _is_missing(exc, name):
            raise
        first = exc
    for folder in folders:
        if folder is None:
            continue
        sys.path.insert(0, str(folder))  # first while imported, as the module was asked for
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not _is_missing(exc, name):
                raise
            continue
        finally:
            sys.path.remove(str(folder))
        keep_importable(folder)
        return module
    raise first
