"""The command line as a first-time user meets it: version, completion, choices in --help,
option names in errors, the concurrency cap said once, full-width tables in logs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from agenticlens_frames import __version__, analyze, load_experiment
from agenticlens_frames.cli import app
from agenticlens_frames.stats_paired import CORRECTIONS, PAIRED_METHODS

from .conftest import EXAMPLE
from .runner.conftest import TARGETS

EXE = Path(sys.executable).parent / "agenticlens-frames"


def _cli(*args: str, columns: str | None = "120", cwd: Path | None = None):
    command = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "agenticlens_frames.cli"]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def test_version_prints_the_package_version() -> None:
    done = _cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"agenticlens-frames {__version__}"
    # The installed distribution says the same (one version, not two).
    from importlib.metadata import version

    assert version("agenticlens-frames") == __version__


def test_python_dash_m_runs_the_command_line(tmp_path: Path) -> None:
    """``python -m agenticlens_frames`` (a venv whose scripts folder is not on the PATH)
    said "No module named agenticlens_frames.__main__"; it is the command line now, its
    usage errors (exit 2) included."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(Path(__file__).parents[1])

    def module(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agenticlens_frames", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )

    done = module("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"agenticlens-frames {__version__}"
    typo = module("experimnet")
    assert typo.returncode == 2 and "Did you mean 'experiment'?" in typo.stderr, typo.stderr


def test_completion_script_is_offered_for_bash(monkeypatch) -> None:
    # By default typer detects the shell from the process tree (shellingham) and ignores
    # the argument, so the answer would depend on what started pytest; this variable makes
    # --show-completion take the shell named on the command line.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    done = _cli("--show-completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "_AGENTICLENS_FRAMES_COMPLETE=complete_bash" in done.stdout
    assert "--install-completion" in _cli("--help").stdout


@pytest.mark.parametrize(
    ("command", "option", "given", "said"),
    [
        ("experiment run", "--confidence-level", "95", "0.95 for 95 %"),
        ("experiment run", "--confidence-level", "1.5", "such as 0.95"),
        ("experiment run", "--max-unanswered", "20", "0.2 for 20 %"),
        ("experiment run", "--stop-margin", "5", "0.05 for 5 %"),
        ("experiment report", "--max-unanswered", "20", "0.2 for 20 %"),
        ("archive summarize", "--confidence-level", "95", "0.95 for 95 %"),
        ("archive slice", "--confidence-level", "90", "0.9 for 90 %"),
    ],
)
def test_a_percentage_given_for_a_fraction_is_a_usage_error_that_names_the_fraction(
    tmp_path: Path, command: str, option: str, given: str, said: str
) -> None:
    """``--confidence-level 95`` said only "Input should be less than or equal to 0.999"
    (typer's range check): the value typed, the range and the fraction meant now, still
    a usage error (exit 2) before any file is read."""
    files = {
        "experiment run": [str(tmp_path / "m.yaml"), str(tmp_path / "s.yaml")],
        "experiment report": [str(tmp_path / "r.json")],
        "archive summarize": [str(tmp_path / "archive")],
        "archive slice": [str(tmp_path / "archive"), "--out", str(tmp_path / "slice")],
    }[command]
    done = CliRunner().invoke(app, [*command.split(), *files, option, given], terminal_width=400)
    assert done.exit_code == 2, done.output
    text = re.sub(r"[│\s]+", " ", done.output)
    assert f"Invalid value for '{option}': {given} is not between" in text, text
    assert said in text and "Input should be" not in text, text


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--stop-margin", "0.05"], "'--stop-margin': it applies to the early-stopping rule"),
        (["--rerun-failed"], "'--rerun-failed': it calls again the failed attempts"),
        (
            ["--noninferiority-margin", "0.02", "--noninferiority", "quality=0.03"],
            "--noninferiority quality=0.03 both set the quality gate (give one of them)",
        ),
    ],
)
def test_options_that_conflict_are_a_usage_error_before_any_file_is_read(
    tmp_path: Path, options: list[str], said: str
) -> None:
    """An option that needs another (--stop-margin without --stop-when, --rerun-failed
    without --run-dir) or two that set one gate were exit 1, the status of bad input, and
    came after the manifest's own problems: a usage error now (exit 2), said first."""
    missing = [str(tmp_path / "m.yaml"), str(tmp_path / "s.yaml")]  # never read
    done = _cli("experiment", "run", *missing, *options, columns="400")
    assert done.returncode == 2, done.stderr
    text = re.sub(r"[│\s]+", " ", done.stderr)
    assert said in text and "m.yaml" not in text, text
    # with its partner the option is taken: the missing manifest is then the error
    if options[0] == "--stop-margin":
        ran = _cli("experiment", "run", *missing, *options, "--stop-when", "decided")
        assert ran.returncode == 1 and "m.yaml: file not found" in ran.stderr, ran.stderr


@pytest.mark.parametrize("command", ["run", "report"])
@pytest.mark.parametrize("rule", ["case", "compat"])
def test_a_regression_rule_without_its_gate_is_a_usage_error_before_any_file_is_read(
    tmp_path: Path, command: str, rule: str
) -> None:
    """--regression-rule chooses the rule of --fail-on-regression's gate, and without the
    gate it was ignored without a word (exit 0: a CI job that meant to gate passed
    whatever the run said); the default given by name too. A usage error now (exit 2),
    said before the missing files; beside the gate it is taken."""
    files = {
        "run": [str(tmp_path / "m.yaml"), str(tmp_path / "s.yaml")],
        "report": [str(tmp_path / "r.json")],
    }[command]
    done = CliRunner().invoke(
        app, ["experiment", command, *files, "--regression-rule", rule], terminal_width=400
    )
    assert done.exit_code == 2, done.output
    text = re.sub(r"[│\s]+", " ", done.output)
    said = (
        "Invalid value for '--regression-rule': it chooses the rule of the regression gate "
        "(add --fail-on-regression, or leave --regression-rule out)"
    )
    assert said in text and files[0] not in text, text
    gated = CliRunner().invoke(
        app, ["experiment", command, *files, "--regression-rule", rule, "--fail-on-regression"]
    )
    assert gated.exit_code == 1, gated.output  # the missing file is the error now


def test_help_lists_the_choices_of_every_enumerated_option() -> None:
    text = _cli("experiment", "run", "--help", columns="400").stdout
    flat = re.sub(r"[│\s]+", " ", text)
    assert "<" + "|".join(CORRECTIONS) + ">" in flat
    assert "<" + "|".join(PAIRED_METHODS) + ">" in flat
    assert "<exclude|zero>" in flat
    engines = _cli("archive", "summarize", "--help", columns="400").stdout
    assert "<auto|numpy|pandas|duckdb|dask>" in re.sub(r"[│\s]+", " ", engines)


def test_run_help_ends_with_every_exit_status_the_readme_lists() -> None:
    # A CI author branching on the status had to find README's table; --help says it too.
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| exit code | meaning |") :].split("\n\n")[0]
    codes = re.findall(r"^\| (\d+) \|", table, flags=re.M)
    assert codes == ["0", "1", "2", "3", "4", "5", "6", "7", "130"]
    text = re.sub(r"[│\s]+", " ", _cli("experiment", "run", "--help", columns="400").stdout)
    epilog = text[text.index("Exit status:") :]
    for code in codes:
        assert re.search(rf"(: |· ){code} ", epilog), code
    report = re.sub(r"[│\s]+", " ", _cli("experiment", "report", "--help", columns="400").stdout)
    assert "with --fail-on-regression or --max-unanswered, as experiment run's gates: 3" in report


def test_no_help_paragraph_depends_on_how_typer_joins_lines() -> None:
    # typer 0.29 keeps a docstring's single line breaks after the first paragraph (older
    # versions joined them), so a wrapped paragraph printed ragged: every paragraph of a
    # command's help is one line, and an option's help has no line break.
    import inspect

    import typer.main

    from agenticlens_frames.cli import app

    ragged = []

    def walk(command, name: str) -> None:
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            if "\n" in paragraph and not paragraph.startswith("\b"):
                ragged.append((name, paragraph))
        ragged.extend((name, p.help) for p in command.params if "\n" in (p.help or ""))
        for sub, child in getattr(command, "commands", {}).items():
            walk(child, f"{name} {sub}")

    walk(typer.main.get_command(app), "agenticlens-frames")
    assert ragged == []
    shown = _cli("experiment", "run", "--help", columns="200")
    assert "Recorded targets are replayed; python and http targets are called concurrently." in (
        shown.stdout
    )


def test_a_bad_paired_method_is_refused_under_its_own_option_name() -> None:
    done = _cli(
        "experiment",
        "run",
        str(EXAMPLE / "manifest.yaml"),
        str(EXAMPLE / "suite.yaml"),
        "--correction",
        "holm",
        "--paired-method",
        "boot",
    )
    assert done.returncode == 2
    assert "--paired-method" in done.stderr and "'--method'" not in done.stderr
    assert "bootstrap" in done.stderr


def test_a_conflicting_paired_method_names_paired_method(tmp_path: Path) -> None:
    from agenticlens_frames.errors import InputError
    from agenticlens_frames.formats import load_manifest
    from agenticlens_frames.paired import resolve_comparisons

    try:
        resolve_comparisons(
            load_manifest(EXAMPLE / "manifest.yaml"), correction="holm", origin="cli", method="x"
        )
    except InputError as exc:
        assert exc.location == "--paired-method"
    else:  # pragma: no cover - the call must fail
        raise AssertionError("an unknown method was accepted")


def _numbers_of(analysis_variants: pd.DataFrame) -> list[str]:
    """The latency column as the console prints it, computed from the frame directly."""
    return [f"{v:.0f} ms" for v in analysis_variants["average_latency_ms_mean"]]


def test_tables_are_not_cut_when_output_is_a_pipe(tmp_path: Path) -> None:
    done = _cli(
        "experiment",
        "run",
        str(EXAMPLE / "manifest.yaml"),
        str(EXAMPLE / "suite.yaml"),
        "--save",
        str(tmp_path / "r.json"),
        columns=None,
    )
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout  # rich's mark of a cut cell
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    a = analyze(run)
    lines = done.stdout.splitlines()
    for vid, latency, delta in zip(
        a.variants["variant_id"].astype(str),
        _numbers_of(a.variants),
        [None, *a.comparisons["average_latency_ms_delta"]],
        strict=True,
    ):
        # the verdict table comes first and has a row per candidate too: the variant
        # table's row is the one holding the latency
        rows = [line for line in lines if line.startswith(f"│ {vid} ")]
        assert any(latency in row for row in rows), rows
        if delta is not None:
            delta_row = [line for line in lines if line.startswith(f"│ {vid} ")][-1]
            assert f"{delta:+.1f} ms" in delta_row
    assert max(len(line) for line in lines) > 80  # the wide delta table kept its width


def _live_manifest(tmp_path: Path) -> tuple[Path, Path]:
    variants = [
        {"id": v, "name": v, "target_kind": "python", "target": f"{TARGETS}:answer"}
        for v in ("a", "b", "c")
    ]
    manifest = {
        "name": "cap",
        "version": "1",
        "baseline_variant_id": "a",
        "trial_count": 1,
        "variants": variants,
    }
    cases = [
        {"id": f"c{i}", "name": f"c{i}", "input": f"parcel {i}", "expected_contains": ["parcel"]}
        for i in range(3)
    ]
    m, s = tmp_path / "manifest.yaml", tmp_path / "suite.yaml"
    m.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    s.write_text(yaml.safe_dump({"name": "s", "version": "1", "cases": cases}), encoding="utf-8")
    return m, s


def test_concurrency_beyond_the_per_variant_limits_is_said_once_with_the_fix(
    tmp_path: Path,
) -> None:
    m, s = _live_manifest(tmp_path)
    done = _cli(
        "experiment", "run", str(m), str(s), "--save", str(tmp_path / "r.json"),
        "--concurrency", "32",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Three live variants at the default max_workers: 1 → at most 3 in flight.
    assert done.stderr.count("concurrency 32 is capped at 3 calls in flight") == 1
    assert "set max_workers: 11" in done.stderr  # ceil(32 / 3)
    quiet = _cli(
        "experiment", "run", str(m), str(s), "--save", str(tmp_path / "r2.json"),
        "--concurrency", "3",
    )  # fmt: skip
    assert "capped" not in quiet.stderr


def test_the_progress_line_shows_the_effective_concurrency(tmp_path: Path, capsys) -> None:
    from agenticlens_frames.runner import run_experiment

    m, s = _live_manifest(tmp_path)
    run_experiment(m, s, concurrency=32, progress=True)
    err = capsys.readouterr().err
    assert "cap · 3 in flight" in err


def test_the_page_footer_names_tool_time_and_inputs(tmp_path: Path) -> None:
    import hashlib
    import html

    command = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "agenticlens_frames.cli"]
    env = {**os.environ, "COLUMNS": "120", "SOURCE_DATE_EPOCH": "1767225600"}
    done = subprocess.run(
        [*command, "experiment", "run", str(EXAMPLE / "manifest.yaml"),
         str(EXAMPLE / "suite.yaml"), "--save", str(tmp_path / "r.json"),
         "--html", str(tmp_path / "r.html")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    footer = html.unescape(re.search(r"<footer[^>]*>(.*?)</footer>", page, re.S).group(1))
    assert f"Generated by agenticlens-frames {__version__} at 2026-01-01T00:00:00Z" in footer
    recorded = yaml.safe_load((EXAMPLE / "manifest.yaml").read_text(encoding="utf-8"))
    files = {"manifest": EXAMPLE / "manifest.yaml", "suite": EXAMPLE / "suite.yaml"}
    for v in recorded["variants"]:
        files[f"recorded trials of {v['id']}"] = EXAMPLE / v["target"]
    for name, path in files.items():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"{name}: " in footer and digest in footer, name


# Imported as a core install has it: none of the optional packages can be imported.
_CORE_ONLY = """
import sys
for name in ("ipywidgets", "anywidget", "polars", "duckdb", "dask", "jupyterlab"):
    sys.modules[name] = None  # import -> ImportError, as if not installed
from agenticlens_frames.cli import main
sys.argv = ["agenticlens-frames", *sys.argv[1:]]
main()
"""


def test_every_output_needs_only_the_core_install(tmp_path: Path) -> None:
    # What `./dev example` runs, with the optional packages made unimportable.
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", _CORE_ONLY, "experiment", "run",
         str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml"),
         "--save", str(out / "report.json"), "--html", str(out / "report.html"),
         "--csv", str(out / "variants.csv"), "--cases-csv", str(out / "cases.csv"),
         "--parquet", str(out / "parquet")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "120"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("report.json", "report.html", "variants.csv", "cases.csv"):
        assert (out / name).stat().st_size > 0
    assert (out / "parquet" / "tables" / "attempts.parquet").exists()


def test_the_explorer_without_its_extra_names_it() -> None:
    code = (
        "import sys; sys.modules['ipywidgets'] = None\n"
        "import agenticlens_frames as alf\n"
        "try:\n    alf.explore\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "pip install 'agenticlens-frames[notebook]'" in done.stdout, done.stderr
    assert "the notebook explorer" in done.stdout


def test_columns_0_still_prints_the_verdicts_and_the_errors(tmp_path: Path) -> None:
    """With COLUMNS=0 (exported by some CI shells from a terminal of no size) rich printed
    nothing: a failed gate or a wrong path exited with no word on stdout or stderr."""
    missing = _cli("experiment", "report", str(tmp_path / "nope.json"), columns="0")
    assert missing.returncode == 1
    assert "nope.json: file not found" in missing.stderr
    args = [str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml")]
    done = _cli(
        "experiment", "run", *args, "--save", str(tmp_path / "r.json"),
        "--fail-on-regression", columns="0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Verdicts against baseline" in done.stdout
    assert done.stderr.startswith("Regression gate passed")


def test_tables_are_not_cut_in_a_log_with_force_color(tmp_path: Path) -> None:
    """FORCE_COLOR=1 (set by many CI jobs for coloured logs) made rich take the log for a
    terminal of 80 columns: the verdict table's cells were cut and wrapped."""
    command = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "agenticlens_frames.cli"]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    args = [str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml")]
    done = subprocess.run(
        [*command, "experiment", "run", *args, "--save", str(tmp_path / "r.json")],
        capture_output=True, text=True, env={**env, "FORCE_COLOR": "1"}, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    assert "…" not in text
    manifest = yaml.safe_load((EXAMPLE / "manifest.yaml").read_text(encoding="utf-8"))
    candidates = [v["id"] for v in manifest["variants"]][1:]
    for vid in candidates:  # each candidate's quality verdict whole, on its own row
        assert re.search(
            rf"│   {re.escape(vid)} .*│ (no detectable difference|better|worse) ", text
        )
