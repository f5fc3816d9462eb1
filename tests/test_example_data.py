"""The bundled example is what its generator writes, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from .conftest import DATA, EXAMPLE


def test_the_generator_writes_the_bundled_files(tmp_path: Path) -> None:
    out = tmp_path / "support"
    subprocess.run([sys.executable, str(DATA / "make_example.py"), str(out)], check=True)
    written = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    bundled = sorted(p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*") if p.is_file())
    assert written == bundled
    for name in written:
        assert (out / name).read_bytes() == (EXAMPLE / name).read_bytes(), name


def test_the_example_declares_its_correction() -> None:
    manifest = yaml.safe_load((EXAMPLE / "manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["comparisons"] == {"correction": "holm"}
