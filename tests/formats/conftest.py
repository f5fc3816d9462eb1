"""Shared fixtures for the formats tests: the checked-in fixture files, a writer for small
throw-away documents, and a generated experiment in AgenticLens' formats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
EXPERIMENT = FIXTURES / "experiment"

# make_synthetic.py lives outside the repository (../shared/tools in the workspace).
_SYNTHETIC_CANDIDATES = [
    os.environ.get("AGENTICLENS_MAKE_SYNTHETIC", ""),
    str(Path(__file__).resolve().parents[3] / "shared" / "tools" / "make_synthetic.py"),
]


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """Write ``content`` (a str, or data dumped as YAML/JSON by extension) to tmp_path/name."""

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


def make_synthetic_script() -> Path | None:
    for candidate in _SYNTHETIC_CANDIDATES:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated experiment (4 variants x 3 trials x 40 cases, both trace shapes)."""
    script = make_synthetic_script()
    if script is None:
        pytest.skip("make_synthetic.py not found (set AGENTICLENS_MAKE_SYNTHETIC)")
    out = tmp_path_factory.mktemp("synthetic")
    subprocess.run(
        [
            sys.executable,
            str(script),
            str(out),
            "--variants",
            "4",
            "--trials",
            "3",
            "--cases",
            "40",
            "--seed",
            "3",
        ],
        check=True,
        capture_output=True,
    )
    return out
