"""Hostile content end to end: names, outputs, factor values and error messages carrying
HTML/JS, spreadsheet formulas and terminal escapes; target paths leading out of the
manifest's folder; secrets from ``${ENV}`` headers; YAML that would run code.

Rules checked: HTML escaped (and inert in Chromium), CSV formula cells guarded, terminal
control characters stripped from console output and error messages, outside targets
reported, secrets never written anywhere, suite files never executed.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agenticlens_frames.cli import app

from ._corpus import BASE

SCRIPT = "<script>alert('x')</script><img src=x onerror=alert('y')>"
FORMULAS = ['=HYPERLINK("http://evil","x")', "+1+2", "-3+cmd|' /C calc'!A0", "@SUM(A1)"]
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil\u200b"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _hostile_experiment(folder: Path) -> tuple[Path, Path]:
    shutil.copytree(BASE, folder, dirs_exist_ok=True)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    manifest["name"] = "exp" + SCRIPT
    ids = {}
    for n, variant in enumerate(manifest["variants"]):
        new = f"{FORMULAS[n]}{ESCAPES if n == 1 else ''}{SCRIPT if n == 2 else ''}"
        ids[variant["id"]] = new
        variant["name"] = FORMULAS[(n + 1) % 4] + SCRIPT + ESCAPES
        variant["factors"] = {"model": FORMULAS[3] + SCRIPT + ESCAPES}
        trials = folder / variant["target"]
        doc = json.loads(trials.read_text())
        doc["variant_id"] = new
        for trial in doc["trials"]:
            for sample in trial["samples"]:
                sample["output"] += SCRIPT + FORMULAS[0] + ESCAPES
        trials.write_text(json.dumps(doc))
        variant["id"] = new
    manifest["baseline_variant_id"] = ids[manifest["baseline_variant_id"]]
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    suite["cases"][0]["name"] = FORMULAS[1] + SCRIPT + ESCAPES
    suite["cases"][1]["name"] = FORMULAS[2] + ESCAPES
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
    return folder / "manifest.yaml", folder / "suite.yaml"


@pytest.fixture(scope="module")
def hostile_outputs(tmp_path_factory) -> dict[str, object]:
    folder = tmp_path_factory.mktemp("hostile")
    manifest, suite = _hostile_experiment(folder / "exp")
    out = folder / "out"
    result = CliRunner().invoke(
        app,
        [
            "experiment", "run", str(manifest), str(suite),
            "--save", str(out / "r.json"), "--html", str(out / "r.html"),
            "--csv", str(out / "v.csv"), "--cases-csv", str(out / "c.csv"),
            "--summary", str(out / "s.md"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    again = CliRunner().invoke(
        app,
        ["experiment", "report", str(out / "r.json"), "--csv", str(out / "v2.csv"),
         "--summary", str(out / "s.md")],
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    return {"console": result.output + again.output, "out": out}


def test_console_output_has_no_control_characters(hostile_outputs):
    console = hostile_outputs["console"]
    assert "red" in console and "evil" in console  # the text is shown ...
    assert not CONTROL.findall(console)  # ... without its escape sequences


@pytest.mark.parametrize("name", ["v.csv", "c.csv", "v2.csv"])
def test_csv_formula_cells_are_guarded(hostile_outputs, name):
    text = (hostile_outputs["out"] / name).read_text(encoding="utf-8")
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert any("HYPERLINK" in cell for cell in cells) or name != "v.csv"
    for cell in cells:
        if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
            float(cell)  # only numbers (negative deltas) may start like a formula


def test_html_has_no_live_markup(hostile_outputs):
    html = (hostile_outputs["out"] / "r.html").read_text(encoding="utf-8")
    assert "<script>alert(" not in html
    assert "<img src=x" not in html


def test_markdown_summary_has_no_live_markup(hostile_outputs):
    text = (hostile_outputs["out"] / "s.md").read_text(encoding="utf-8")
    assert text.count("### Experiment exp") == 2  # run's and report's, both appended
    assert "alert(" in text  # the text is shown, every "<" of it escaped (only the
    # summary's own folding tags are markup)
    ours = re.sub(r"<details><summary>|</summary>|</details>", "", text)
    assert not re.search(r"(?<!\\)<", ours)
    assert not CONTROL.findall(text)
    for line in text.splitlines():  # a name's pipe never adds a cell to a table row
        if line.startswith("| "):  # (not the |---| line)
            assert line.count("|") - line.count("\\|") in {5, 7, 9}, line


@pytest.mark.browser
def test_html_payloads_stay_inert_in_chromium(hostile_outputs, open_page):  # noqa: F811
    page = open_page(hostile_outputs["out"] / "r.html")
    text = page.js("document.body.innerText")
    assert "alert('x')" in text  # shown as text
    assert page.dialogs == [] and page.errors == [] and page.external == []
    assert page.js("document.querySelectorAll('img[src=\"x\"]').length") == 0


def test_error_messages_strip_escapes(tmp_path):
    shutil.copytree(BASE, tmp_path, dirs_exist_ok=True)
    manifest = yaml.safe_load((tmp_path / "manifest.yaml").read_text())
    manifest["variants"][1]["id"] = "baseline"
    manifest["variants"][1]["name"] = ESCAPES
    manifest["variants"][2]["target"] = "trials/" + ESCAPES + ".json"
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    bad = tmp_path / ("evil" + ESCAPES + ".yaml")
    bad.write_text(yaml.safe_dump({**manifest, "trials": ESCAPES}))
    for file in (tmp_path / "manifest.yaml", bad):
        result = CliRunner().invoke(
            app, ["experiment", "run", str(file), str(tmp_path / "suite.yaml"), "-q"]
        )
        assert result.exit_code == 1
        assert not CONTROL.findall(result.output), repr(result.output)


# ------------------------------------------------------------------------------ paths


def test_targets_outside_the_manifest_folder_are_reported(tmp_path):
    shutil.copytree(BASE, tmp_path / "exp", dirs_exist_ok=True)
    (tmp_path / "elsewhere").mkdir()
    shutil.move(tmp_path / "exp" / "trials" / "cand.json", tmp_path / "elsewhere" / "c.json")
    (tmp_path / "exp" / "trials" / "cand2.json").unlink()
    (tmp_path / "exp" / "trials" / "cand2.json").symlink_to(tmp_path / "elsewhere" / "c.json")
    manifest = yaml.safe_load((tmp_path / "exp" / "manifest.yaml").read_text())
    manifest["variants"][1]["target"] = "../elsewhere/c.json"
    (tmp_path / "exp" / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    doc = json.loads((tmp_path / "elsewhere" / "c.json").read_text())
    result = CliRunner().invoke(
        app,
        ["experiment", "run", str(tmp_path / "exp" / "manifest.yaml"),
         str(tmp_path / "exp" / "suite.yaml"), "-q", "--save", str(tmp_path / "r.json")],
    )  # fmt: skip
    assert doc["variant_id"] == "cand"
    output = " ".join(result.output.split())
    assert "variant 'cand' reads" in output and "outside the manifest's folder" in output
    assert "variant 'cand2' reads" in output  # the symbolic link is followed
    assert "variant 'baseline'" not in output


def test_yaml_never_executes_code(tmp_path):
    marker = tmp_path / "pwned"
    shutil.copytree(BASE, tmp_path, dirs_exist_ok=True)
    for tag in ("!!python/object/apply:os.system", "!!python/object/new:os.system"):
        suite = tmp_path / "suite-evil.yaml"
        suite.write_text(f"name: {tag} ['touch {marker}']\nversion: '1'\ncases: []\n")
        result = CliRunner().invoke(
            app, ["experiment", "run", str(tmp_path / "manifest.yaml"), str(suite), "-q"]
        )
        assert result.exit_code == 1 and "suite-evil.yaml" in result.output
        assert not marker.exists()


# ---------------------------------------------------------------------------- secrets

SECRET = "s3cr3t-Bearer-Z9Q"


def test_secrets_from_env_headers_never_appear(tmp_path, monkeypatch):
    monkeypatch.setenv("HARDEN_TOKEN", SECRET)
    shutil.copytree(BASE, tmp_path, dirs_exist_ok=True)
    manifest = yaml.safe_load((tmp_path / "manifest.yaml").read_text())
    manifest["variants"][2] = {
        "id": "remote",
        "name": "Remote",
        "target_kind": "http",
        # Nothing listens on port 9: every call fails, and the failure is reported.
        "target": "http://127.0.0.1:9/agent?key=${HARDEN_TOKEN}",
        "headers": {"Authorization": "Bearer ${HARDEN_TOKEN}", "X-Key": "${HARDEN_TOKEN}"},
        "timeout_seconds": 2,
    }
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["experiment", "run", str(tmp_path / "manifest.yaml"), str(tmp_path / "suite.yaml"),
         "--save", str(out / "r.json"), "--html", str(out / "r.html"), "--csv",
         str(out / "v.csv"), "--cases-csv", str(out / "c.csv"), "--parquet", str(out / "pq"),
         "--run-dir", str(tmp_path / "run")],
    )  # fmt: skip
    assert SECRET not in result.output
    written = [p for p in [*out.rglob("*"), *(tmp_path / "run").rglob("*")] if p.is_file()]
    assert written
    for file in written:
        assert SECRET.encode() not in file.read_bytes(), file


def test_missing_env_header_names_the_variable_only(tmp_path, monkeypatch):
    monkeypatch.delenv("HARDEN_MISSING", raising=False)
    monkeypatch.setenv("HARDEN_TOKEN", SECRET)
    shutil.copytree(BASE, tmp_path, dirs_exist_ok=True)
    manifest = yaml.safe_load((tmp_path / "manifest.yaml").read_text())
    manifest["variants"][2] = {
        "id": "remote",
        "name": "Remote",
        "target_kind": "http",
        "target": "http://127.0.0.1:9/agent",
        "headers": {"Authorization": "Bearer ${HARDEN_TOKEN} ${HARDEN_MISSING}"},
    }
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    result = CliRunner().invoke(
        app, ["experiment", "run", str(tmp_path / "manifest.yaml"), str(tmp_path / "suite.yaml")]
    )
    assert result.exit_code == 1
    assert "HARDEN_MISSING" in result.output and SECRET not in result.output


from tests.report.test_html_browser import open_page  # noqa: E402, F401
