"""Run one corpus file through its loader and through the CLI, in a scratch folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).resolve().parent / "corpus"
BASE = CORPUS / "base"


def entries() -> list[dict[str, Any]]:
    found = json.loads((CORPUS / "index.json").read_text())
    hand = CORPUS / "hand" / "index.json"
    if hand.exists():
        found += json.loads(hand.read_text())
    return found


def stage(entry: dict[str, Any], folder: Path) -> tuple[Path, Path, Path]:
    """Copy the base experiment to ``folder`` with the corpus file in its role.

    Returns (manifest, suite, bad file) paths; the bad file keeps its corpus name.
    """
    shutil.copytree(BASE, folder, dirs_exist_ok=True)
    source = CORPUS / entry["file"]
    bad = folder / source.name
    shutil.copyfile(source, bad)
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    if entry["kind"] == "manifest":
        manifest = bad
    elif entry["kind"] == "suite":
        suite = bad
    elif entry["kind"] == "recorded":
        doc = yaml.safe_load(manifest.read_text())
        doc["variants"][0]["target"] = bad.name
        manifest.write_text(yaml.safe_dump(doc, sort_keys=False))
    return manifest, suite, bad
