"""Text (issue 15): lone surrogates, control, bidirectional and astral characters, and
very long non-ASCII names in outputs, traces, errors, recorded files, suites and
manifests: no crash, finished attempts kept, resume works, every output written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from . import exit_targets
from ._round2 import cli, stage

HERE = Path(__file__).resolve().parent
OUTPUTS = ["--html", "r.html", "--csv", "v.csv", "--cases-csv", "c.csv", "--parquet", "pq"]


def _outputs(folder: Path) -> list[str]:
    return [str(folder / a) if not a.startswith("--") else a for a in OUTPUTS]


@pytest.mark.parametrize("kind", sorted(exit_targets.ODD_TEXT))
def test_odd_text_from_a_live_target_is_journaled_and_resumable(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("ODD_KIND", kind)
    manifest, suite = stage(tmp_path)
    doc = yaml.safe_load(manifest.read_text())
    doc["variants"][2] = {
        "id": "odd",
        "name": "Odd",
        "target_kind": "python",
        "target": f"{HERE / 'exit_targets.py'}:odd_text_target",
    }
    manifest.write_text(yaml.safe_dump(doc))
    run = tmp_path / "run"
    args = ["experiment", "run", manifest, suite, "-q", "--run-dir", run, "--save"]
    first = cli(*args, tmp_path / "r1.json", *_outputs(tmp_path))
    assert first.exit_code == 0, first.output
    journal = b"".join(p.read_bytes() for p in sorted(run.glob("journal/*.jsonl")))
    journal.decode("utf-8")  # valid UTF-8 throughout
    assert journal.count(b'"type":"attempt"') == 2 * 2  # both trials, both cases
    # Resume: nothing left to call, the same report.
    again = cli(*args, tmp_path / "r2.json")
    assert again.exit_code == 0, again.output
    one, two = (json.loads((tmp_path / n).read_text()) for n in ("r1.json", "r2.json"))
    assert one["variants"][2]["summary"] == two["variants"][2]["summary"]


ODD = {
    "surrogate": "x\\ud800y",
    "low_surrogate": "x\\udfffy",
    "nul": "x\\u0000y",
    "bidi": "x\\u202ey",
    "bom": "\\ufeffx",
    "nonchar": "x\\uffffy",
    "astral": "x\\ud83d\\ude00y",
    "c1_control": "x\\u0085y",
}
PLACES = ["output", "case_name", "variant_name", "factor_value", "experiment_name"]


def _with_odd_json(folder: Path, place: str, escaped: str) -> tuple[Path, Path]:
    """The base experiment as JSON files, one string replaced by a JSON-escaped oddity."""
    manifest, suite = stage(folder)
    m = yaml.safe_load(manifest.read_text())
    s = yaml.safe_load(suite.read_text())
    marker = "@@ODD@@"
    if place == "case_name":
        s["cases"][0]["name"] = marker
    elif place == "variant_name":
        m["variants"][1]["name"] = marker
    elif place == "factor_value":
        m["variants"][1]["factors"]["model"] = marker
    elif place == "experiment_name":
        m["name"] = marker
    else:
        trials = folder / m["variants"][1]["target"]
        t = json.loads(trials.read_text())
        t["trials"][0]["samples"][0]["output"] = marker
        trials.write_text(json.dumps(t).replace(marker, escaped))
    (folder / "m.json").write_text(json.dumps(m).replace(marker, escaped))
    (folder / "s.json").write_text(json.dumps(s).replace(marker, escaped))
    return folder / "m.json", folder / "s.json"


@pytest.mark.parametrize("odd", sorted(ODD))
@pytest.mark.parametrize("place", PLACES)
def test_odd_unicode_in_files_loads_or_is_refused_clearly(tmp_path, odd, place):
    manifest, suite = _with_odd_json(tmp_path, place, ODD[odd])
    # HTML and parquet (the slow writers) for the characters UTF-8 cannot hold as they are.
    outputs = _outputs(tmp_path) if "surrogate" in odd else _outputs(tmp_path)[2:6]
    result = cli(
        "experiment", "run", manifest, suite, "-q", "--save", tmp_path / "r.json", *outputs
    )
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(
        result.exception, SystemExit
    ), (repr(result.exception), result.output)
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert ".json" in result.output  # names the file
    else:
        data = (tmp_path / "r.json").read_bytes()
        data.decode("utf-8")
        for name in ("r.html", "v.csv", "c.csv"):
            if (tmp_path / name).exists() or name != "r.html":
                (tmp_path / name).read_bytes().decode("utf-8")


@pytest.mark.parametrize("length", [300, 5000])
@pytest.mark.parametrize("alphabet", ["漢", "é", "😀", "\u202e"])
def test_very_long_non_ascii_names(tmp_path, length, alphabet):
    manifest, suite = stage(tmp_path)
    long = alphabet * length
    m = yaml.safe_load(manifest.read_text())
    m["name"] = long
    m["variants"][1]["id"] = long
    m["variants"][1]["name"] = long
    m["variants"][1]["factors"] = {long[:200]: long}
    for v in m["variants"]:
        v["factors"] = {long[:200]: v["id"]}
    trials = tmp_path / m["variants"][1]["target"]
    t = json.loads(trials.read_text())
    t["variant_id"] = long
    trials.write_text(json.dumps(t))
    manifest.write_text(yaml.safe_dump(m, allow_unicode=True))
    s = yaml.safe_load(suite.read_text())
    s["cases"][0]["name"] = long
    suite.write_text(yaml.safe_dump(s, allow_unicode=True))
    out = tmp_path / ("out" + alphabet * 40)  # a long non-ASCII folder name too
    result = cli(
        "experiment", "run", manifest, suite, "-q", "--save", out / (alphabet * 60 + ".json"),
        *_outputs(out),
    )  # fmt: skip
    assert result.exit_code == 0, (repr(result.exception), result.output[-2000:])
    assert (out / (alphabet * 60 + ".json")).exists()


@pytest.mark.parametrize("place", ["experiment_name", "variant_name", "case_id_list"])
def test_lone_surrogates_in_a_saved_report(tmp_path, place):
    manifest, suite = stage(tmp_path)
    saved = tmp_path / "r.json"
    assert cli("experiment", "run", manifest, suite, "-q", "--save", saved).exit_code == 0
    data = json.loads(saved.read_text())
    if place == "experiment_name":
        data["experiment_name"] = "e\ud800"
    elif place == "variant_name":
        data["variants"][0]["variant_name"] = "v\udfff"
    else:
        data["case_ids"] = [*data["case_ids"][:-1], "c\ud800"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))  # ASCII-escaped: "\\ud800" in the file
    result = cli("experiment", "report", bad, "-q", *_outputs(tmp_path)[:6])
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    for name in ("r.html", "v.csv", "c.csv"):
        if (tmp_path / name).exists():
            (tmp_path / name).read_bytes().decode("utf-8")
