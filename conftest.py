"""Doctests of the package: those that need an optional extra skip, with the reason, when
it is not installed (and fail in CI, which installs every extra).

A module declares what its doctests need in ``__doctest_requires__``: a mapping from a
docstring's qualified name (``"ArchiveSlice.relation"``; ``"*"`` for every docstring of
the module) to the modules it imports.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from agenticlens_frames._optional import EXTRAS, available


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.DoctestItem) or item.dtest is None:
            continue
        requires: dict[str, tuple[str, ...]] = item.dtest.globs.get("__doctest_requires__", {})
        module = item.dtest.globs.get("__name__", "")
        qualname = item.dtest.name.removeprefix(module + ".")
        needed = [*requires.get("*", ()), *requires.get(qualname, ())]
        missing = [m for m in needed if not available(m)]
        if not missing or os.environ.get("CI"):
            continue  # in CI it runs, and fails naming the extra that is missing
        extras = sorted({EXTRAS.get(m, m) for m in missing})
        reason = (
            f"this doctest needs {', '.join(missing)} (pip install "
            f"'agenticlens-frames[{','.join(extras)}]'; ./dev test installs it)"
        )
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_under_basetemp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every ``tempfile.mkdtemp()`` of a test or doctest, and of the processes it starts,
    lands under pytest's base temporary folder.

    The doctests show ``tempfile.mkdtemp()`` and ``example_archive()`` as a user would write
    them, and leave the folders behind; pytest keeps only its last few base folders, so a
    run no longer adds hundreds of folders to the system's temporary directory.
    """
    folder = tmp_path_factory.mktemp("tmp", numbered=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(folder))
        patch.setenv("TMPDIR", str(folder))
        yield
