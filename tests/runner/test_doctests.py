"""The runner's and the API's docstring examples run."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

MODULES = [
    "agenticlens_frames.api",
    "agenticlens_frames.runner.http_client",
    "agenticlens_frames.runner.http_target",
    "agenticlens_frames.runner.journal",
    "agenticlens_frames.runner.live",
    "agenticlens_frames.runner.payload",
    "agenticlens_frames.runner.python_target",
    "agenticlens_frames.runner.retry",
    "agenticlens_frames.runner.scheduler",
]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # examples use data/ paths
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
