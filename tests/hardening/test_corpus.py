"""The bad-input corpus: every file gets a clear error naming the file and the place.

Each corpus file (tests/hardening/corpus/, written by make_corpus.py plus hand/) is read
by its loader and by the CLI. The loader must raise ``InputError`` naming the file and
the place listed in the index; the CLI must exit 1 with that message and no traceback,
and must leave every file already on disk (the corpus file, an earlier report at the
``--save`` path) byte for byte as it was. Files marked ``accepted`` are valid on purpose
(AgenticLens keeps them; docs/compatibility.md) and must load.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from agenticlens_frames import load_experiment
from agenticlens_frames.cli import app
from agenticlens_frames.errors import InputError
from agenticlens_frames.formats import load_manifest, load_recorded, load_suite
from agenticlens_frames.frames import read_parquet
from agenticlens_frames.report.saved import load_report

from ._corpus import BASE, CORPUS, entries, stage

ENTRIES = entries()
IDS = [e["file"] for e in ENTRIES]
EARLIER_REPORT = b'{"an": "earlier report that a failed run must not touch"}\n'


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(entry: dict[str, Any], manifest: Path, suite: Path, bad: Path) -> None:
    kind = entry["kind"]
    if kind == "manifest":
        load_manifest(bad)
        load_experiment(bad, suite)  # recorded files named by the manifest are read here
    elif kind == "suite":
        load_suite(bad)
    elif kind == "recorded":
        load_recorded(bad, load_suite(suite))
    else:
        load_report(bad)


def test_corpus_has_at_least_200_files_all_indexed():
    on_disk = {
        str(p.relative_to(CORPUS))
        for p in CORPUS.rglob("*")
        if p.is_file() and p.parent != CORPUS and "base" not in p.parts and p.name != "index.json"
    }
    assert on_disk == set(IDS)
    assert len(on_disk) >= 200
    assert sum(1 for e in ENTRIES if e["file"].startswith("hand/")) >= 8


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_loader_names_file_and_place(entry, tmp_path):
    manifest, suite, bad = stage(entry, tmp_path)
    if entry.get("accepted"):
        if entry["kind"] == "recorded":
            load_recorded(bad, load_suite(suite))
            load_experiment(manifest, suite)
        return
    with pytest.raises(InputError) as caught:
        _load(entry, manifest, suite, bad)
    message = str(caught.value)
    assert entry.get("names", bad.name) in message
    for fragment in entry["expect"]:
        assert fragment in message, message


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_cli_exit_1_without_traceback_and_nothing_changed(entry, tmp_path):
    manifest, suite, bad = stage(entry, tmp_path)
    save = tmp_path / "earlier.json"
    save.write_bytes(EARLIER_REPORT)
    before = {p: _digest(p) for p in tmp_path.rglob("*") if p.is_file()}
    if entry["kind"] == "report":
        args = ["experiment", "report", str(bad), "--html", str(tmp_path / "o.html")]
        args += ["--csv", str(tmp_path / "o.csv")]
    else:
        args = ["experiment", "run", str(manifest), str(suite), "--save", str(save), "-q"]
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a crash: show it
    output = result.output
    assert "Traceback" not in output
    if entry.get("accepted"):
        assert result.exit_code == 0, output
        return
    assert result.exit_code == 1, output
    assert entry.get("names", bad.name) in output
    for fragment in entry["expect"]:
        assert fragment in output
    after = {p: _digest(p) for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing written, nothing already recorded changed


SUBSET = [e for e in ENTRIES if not e.get("accepted")][::40]


@pytest.mark.slow
@pytest.mark.parametrize("entry", SUBSET, ids=[e["file"] for e in SUBSET])
def test_real_cli_process(entry, tmp_path):
    manifest, suite, bad = stage(entry, tmp_path)
    if entry["kind"] == "report":
        args = ["experiment", "report", str(bad)]
    else:
        args = ["experiment", "run", str(manifest), str(suite), "--save", str(tmp_path / "r.json")]
    code = "from agenticlens_frames.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert bad.name in done.stderr or entry.get("names", "\0") in done.stderr


# ------------------------------------------------------- made at test time: huge and deep


def _run_cli(manifest: Path, suite: Path, tmp_path: Path) -> str:
    result = CliRunner().invoke(
        app, ["experiment", "run", str(manifest), str(suite), "--save", str(tmp_path / "r.json")]
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_deeply_nested_document(tmp_path, suffix):
    _, suite, _ = stage({"file": "base/manifest.yaml", "kind": "none"}, tmp_path)
    depth = 200_000
    bad = tmp_path / f"deep.{suffix}"
    bad.write_text('{"name": ' + "[" * depth + "]" * depth + "}")
    with pytest.raises(InputError) as caught:
        load_manifest(bad)
    assert "deep." in str(caught.value)
    assert "deep." in _run_cli(bad, suite, tmp_path)


def test_huge_strings_are_shortened_in_messages(tmp_path):
    manifest, _suite, _ = stage({"file": "base/manifest.yaml", "kind": "none"}, tmp_path)
    huge = "x" * 5_000_000
    doc = {"name": "s", "version": "1", "cases": [{"id": huge, "name": huge, "max_turns": huge}]}
    bad = tmp_path / "huge.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError) as caught:
        load_suite(bad)
    assert "cases[0].max_turns" in str(caught.value)
    assert len(str(caught.value)) < 2_000
    output = _run_cli(manifest, bad, tmp_path)
    assert len(output) < 4_000


def test_huge_unknown_key_is_shortened(tmp_path):
    _manifest, _suite, _ = stage({"file": "base/manifest.yaml", "kind": "none"}, tmp_path)
    text = (BASE / "manifest.yaml").read_text() + "k" * 1_000_000 + ": 1\n"
    bad = tmp_path / "huge-key.yaml"
    bad.write_text(text)
    with pytest.raises(InputError) as caught:
        load_manifest(bad)
    assert "huge-key.yaml" in str(caught.value)
    assert len(str(caught.value)) < 2_000


# --------------------------------------------------------------- corrupt parquet tables


@pytest.fixture(scope="module")
def parquet_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("parquet")
    load_experiment(BASE / "manifest.yaml", BASE / "suite.yaml").to_parquet(folder)
    return folder


def _damage(folder: Path, how: str) -> str:
    """Damage one table file; return the name the error must carry."""
    attempts = folder / "attempts.parquet"
    if how == "truncated":
        attempts.write_bytes(attempts.read_bytes()[: attempts.stat().st_size // 2])
    elif how == "garbage":
        attempts.write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    elif how == "empty":
        attempts.write_bytes(b"")
    elif how == "text":
        attempts.write_text("case_id,passed\nc1,true\n")
    elif how == "missing":
        attempts.unlink()
    elif how == "no-metadata":
        pq.write_table(pq.read_table(attempts).replace_schema_metadata(None), attempts)
    elif how == "bad-metadata":
        table = pq.read_table(attempts)
        meta = dict(table.schema.metadata)
        key = next(k for k in meta if b"agenticlens" in k)
        meta[key] = b'{"manifest": [1, 2'
        pq.write_table(table.replace_schema_metadata(meta), attempts)
    elif how == "wrong-metadata":
        table = pq.read_table(attempts)
        meta = dict(table.schema.metadata)
        key = next(k for k in meta if b"agenticlens" in k)
        meta[key] = b'{"manifest": {"name": 1}, "suite": []}'
        pq.write_table(table.replace_schema_metadata(meta), attempts)
    elif how == "other-table":
        cases = pq.read_table(folder / "cases.parquet")
        pq.write_table(cases, attempts)
    elif how == "dropped-column":
        table = pq.read_table(attempts)
        pq.write_table(table.drop_columns(["passed"]), attempts)
    elif how == "retyped-column":
        table = pq.read_table(attempts)
        at = table.schema.get_field_index("latency_ms")
        table = table.set_column(at, "latency_ms", pa.array(["slow"] * len(table)))
        pq.write_table(table, attempts)
    return "attempts.parquet"


DAMAGE = [
    "truncated",
    "garbage",
    "empty",
    "text",
    "missing",
    "no-metadata",
    "bad-metadata",
    "wrong-metadata",
    "other-table",
    "dropped-column",
    "retyped-column",
]


@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_parquet(parquet_folder, tmp_path, how):
    folder = tmp_path / "run"
    folder.mkdir()
    for file in parquet_folder.iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    name = _damage(folder, how)
    with pytest.raises(InputError) as caught:
        read_parquet(folder)
    assert name in str(caught.value)
