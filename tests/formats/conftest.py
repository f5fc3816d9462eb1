"""Fixtures for the formats tests: the checked-in fixture files, a writer for small
throw-away documents, and one generated experiment in AgenticLens' formats."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
EXPERIMENT = FIXTURES / "experiment"


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """Write ``content`` to tmp_path/name: text or bytes as given, data as YAML or JSON."""

    def _write(name: str, content: Any) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        elif path.suffix.lower() == ".json":
            path.write_text(json.dumps(content), encoding="utf-8")
        else:
            path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
        return path

    return _write


@pytest.fixture(scope="session")
def synthetic(make_synthetic: Callable[..., Path]) -> Path:
    """A small generated experiment (4 variants x 3 trials x 40 cases, both trace shapes)."""
    return make_synthetic(variants=4, trials=3, cases=40, seed=3)
