"""Archives and run folders (issue 15): no terminal control from archived data, CSV
exports guarded, a swapped or damaged parquet file detected, a journal bound to its run,
paths of the wrong kind refused, misspelt factors explained, odd factor names shown."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from agenticlens_frames.report.csv_report import guard_formula

from ._round2 import assert_refused, cli, stage

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
ESCAPES = {
    "osc_title": "\x1b]0;pwned\x07",
    "clear": "\x1b[2J\x1b[H",
    "colour": "\x1b[31mred\x1b[0m",
    "bidi": "\u202eevil\u202c",
    "zero_width": "a\u200bb\u200d",
    "bell_backspace": "\x07\x08\x08x",
}


def _archived(folder: Path, payload: str = "", factor: str = "model") -> Path:
    manifest, suite = stage(folder / "exp")
    doc = yaml.safe_load(manifest.read_text())
    doc["name"] = "exp" + payload
    for variant in doc["variants"]:
        variant["name"] += payload
        variant["factors"] = {factor: variant["factors"]["model"] + payload}
    manifest.write_text(yaml.safe_dump(doc))
    archive = folder / "arc"
    result = cli("archive", "add", archive, manifest, suite)
    assert result.exit_code == 0, result.output
    return archive


@pytest.mark.parametrize("payload", sorted(ESCAPES))
@pytest.mark.parametrize("command", ["ls", "summarize", "slice"])
def test_archive_commands_print_no_terminal_control(tmp_path, payload, command):
    archive = _archived(tmp_path, ESCAPES[payload])
    extra = ["--out", tmp_path / "out"] if command == "slice" else []
    result = cli("archive", command, archive, *extra)
    assert result.exit_code == 0, result.output
    assert not CONTROL.search(result.output), repr(result.output)


FORMULAS = [
    "=1+1",
    "+1",
    "-1+cmd",
    "@SUM(A1)",
    "\t=1",
    "\r=1",
    "\tplain",  # a leading tab or carriage return is itself a start, whatever follows
    "\rplain",
    " =1+1",
    "  @x",
    "\n=cmd|' /C calc'!A0",
    "\uff1dSUM(A1)",
    "\uff0b1",
    "|calc",
    "\u3000=1",
    "\u00a0=1",
    "\ufeff=1",
]


@pytest.mark.parametrize("text", FORMULAS)
def test_guard_formula_catches_every_start(text):
    assert guard_formula(text).startswith("'")


@pytest.mark.parametrize("text", ["plain", "a=b", "x-1", "ok @home", "3.5"])
def test_guard_formula_leaves_ordinary_text(text):
    assert guard_formula(text) == text


@pytest.mark.parametrize("formula", ["=HYPERLINK(1)", " =1", "\uff1d1", "|calc"])
def test_archive_csv_exports_are_guarded(tmp_path, formula):
    archive = _archived(tmp_path, formula)
    out = tmp_path / "out"
    result = cli("archive", "slice", archive, "--out", out, "--format", "csv", "--tables", "all")
    assert result.exit_code == 0, result.output
    for file in out.glob("*.csv"):
        for line in file.read_text(encoding="utf-8").splitlines()[1:]:
            for cell in line.split(","):
                cell = cell.strip('"')
                assert not cell.lstrip(" \t\u3000\u00a0\ufeff").startswith(
                    ("=", "\uff1d", "|")
                ) or cell.startswith("'"), (file.name, cell)


@pytest.mark.parametrize("table", ["attempts", "checks", "trials"])
@pytest.mark.parametrize("how", ["swapped", "appended", "truncated"])
def test_a_replaced_or_damaged_archive_file_is_detected(tmp_path, table, how):
    archive = _archived(tmp_path / "one")
    second = _archived(tmp_path / "two", " v2")
    (run,) = [p for p in archive.glob("experiment=*/run=*") if p.is_dir()]
    (other,) = [p for p in second.glob("experiment=*/run=*") if p.is_dir()]
    victim = run / f"{table}.parquet"
    if how == "swapped":
        shutil.copyfile(other / f"{table}.parquet", victim)
    elif how == "appended":
        with open(victim, "ab") as handle:
            handle.write(b"\0")
    else:
        data = victim.read_bytes()
        victim.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    result = cli("archive", "slice", archive, "--out", tmp_path / "out", "--tables", table)
    assert_refused(result, f"{table}.parquet", "not the one archived")


@pytest.mark.parametrize("command", ["add", "ls", "summarize", "slice"])
def test_an_archive_path_that_is_a_file_is_refused(tmp_path, command):
    manifest, suite = stage(tmp_path / "exp")
    plain = tmp_path / "plain"
    plain.write_text("not an archive")
    args = {
        "add": [plain, manifest, suite],
        "ls": [plain],
        "summarize": [plain],
        "slice": [plain, "--out", tmp_path / "out"],
    }[command]
    assert_refused(cli("archive", command, *args), "plain")
    assert plain.read_text() == "not an archive"


@pytest.mark.parametrize(
    ("factor", "needles"),
    [
        (
            "modle=small",
            ["no archived run has a factor 'modle'", "did you mean --factor model=small?"],
        ),
        ("model=smal", ["model='smal'", "did you mean --factor model=small?"]),
        ("colour=red", ["no archived run has a factor 'colour'", "'model'"]),
        ("model=xl", ["model='xl'", "'large'"]),
    ],
)
@pytest.mark.parametrize("command", ["summarize", "slice"])
def test_a_misspelt_factor_says_what_exists(tmp_path, factor, needles, command):
    archive = _archived(tmp_path)
    extra = ["--out", tmp_path / "out"] if command == "slice" else []
    result = cli("archive", command, archive, "--factor", factor, *extra)
    assert_refused(result, *needles)


@pytest.mark.parametrize("name", ["my-factor", "two words", "dotted.name", "ünï", "1st"])
def test_odd_factor_names_in_summaries(tmp_path, name):
    archive = _archived(tmp_path, factor=name)
    result = cli("archive", "summarize", archive, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert f"{name}=small" in result.output


@pytest.mark.parametrize("damage", ["deleted", "emptied", "other_run"])
def test_a_journal_is_bound_to_its_run(tmp_path, damage):
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    doc["variants"][2] = {
        "id": "live",
        "name": "Live",
        "target_kind": "python",
        "target": f"{Path(__file__).parent / 'fault_targets.py'}:good",
    }
    manifest.write_text(yaml.safe_dump(doc))
    run = tmp_path / "run"
    first = cli(
        "experiment", "run", manifest, suite, "-q", "--run-dir", run, "--save", tmp_path / "a.json"
    )
    assert first.exit_code == 0, first.output
    journal = sorted((run / "journal").glob("*.jsonl"))
    before = [p.read_bytes() for p in journal]
    meta = run / "run.json"
    if damage == "deleted":
        meta.unlink()
    elif damage == "emptied":
        meta.write_text("")
    else:
        meta.write_text(meta.read_text().replace('"manifest_sha256": "', '"manifest_sha256": "0'))
    result = cli(
        "experiment", "run", manifest, suite, "-q", "--run-dir", run, "--save", tmp_path / "b.json"
    )
    assert_refused(result, "run")
    assert not (tmp_path / "b.json").exists()
    assert [p.read_bytes() for p in journal] == before
