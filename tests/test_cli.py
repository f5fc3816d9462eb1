"""The command line: outputs, exit codes, and errors without tracebacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLE

EXE = Path(sys.executable).parent / "agenticlens-frames"


def _cli(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    command = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "agenticlens_frames.cli"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "120", **(env or {})},
    )


def _run_with_every_output(folder: Path, out: Path) -> list[str]:
    """``experiment run`` on ``folder``'s experiment writing every output into ``out``."""
    return [
        "experiment",
        "run",
        str(folder / "manifest.yaml"),
        str(folder / "suite.yaml"),
        "--save",
        str(out / "r.json"),
        "--html",
        str(out / "r.html"),
        "--csv",
        str(out / "v.csv"),
        "--cases-csv",
        str(out / "c.csv"),
        "--parquet",
        str(out / "pq"),
    ]


def test_run_writes_every_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _cli(*_run_with_every_output(EXAMPLE, out))
    assert done.returncode == 0, done.stderr
    assert "Pareto frontier:" in done.stdout
    for name in (
        "r.json",
        "r.html",
        "v.csv",
        "c.csv",
        "pq/tables/attempts.parquet",
        "pq/results/variant_summary.parquet",
    ):
        assert (out / name).exists(), name
    report = json.loads((out / "r.json").read_text())
    assert report["agenticlens_frames"]["latency_missing"] == "exclude"
    assert report["variants"][0]["target"] == "trials/baseline.json"


def test_reports_are_reproducible_with_source_date_epoch(tmp_path: Path) -> None:
    env = {"SOURCE_DATE_EPOCH": "1767225600"}
    paths = []
    for name in ("a.json", "b.json"):
        done = _cli(
            "experiment",
            "run",
            str(EXAMPLE / "manifest.yaml"),
            str(EXAMPLE / "suite.yaml"),
            "--save",
            str(tmp_path / name),
            "-q",
            env=env,
        )
        assert done.returncode == 0, done.stderr
        paths.append(tmp_path / name)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert json.loads(paths[0].read_text())["created_at"] == "2026-01-01T00:00:00Z"


def test_invalid_input_exits_1_with_one_paragraph_and_no_traceback(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text((EXAMPLE / "manifest.yaml").read_text().replace("trial_count", "trials"))
    done = _cli("experiment", "run", str(manifest), str(EXAMPLE / "suite.yaml"), "-q")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert "unknown key 'trials' (did you mean 'trial_count'?)" in done.stderr
    done = _cli("experiment", "report", str(tmp_path / "missing.json"))
    assert done.returncode == 1 and "file not found" in done.stderr


def test_every_problem_of_a_manifest_is_printed_at_once_without_a_traceback(
    tmp_path: Path,
) -> None:
    shutil.copytree(EXAMPLE, tmp_path, dirs_exist_ok=True)
    manifest = tmp_path / "manifest.yaml"
    text = manifest.read_text().replace("trial_count", "trials")
    text = text.replace('version: "1"', "version: 2026.10")
    manifest.write_text(text.replace('target_kind: "recorded"', 'target_kind: "record"', 1))
    done = _cli("experiment", "run", str(manifest), str(tmp_path / "suite.yaml"), "-q")
    assert done.returncode == 1  # invalid input, as for one problem
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stderr.splitlines() == [
        f"Unable to run experiment: {manifest}: 3 problems:",
        f"  {manifest}: unknown key 'trials' (did you mean 'trial_count'?)",
        f'  {manifest}: version: expected a string, got 2026.1 (quote it: version: "2026.10")',
        f"  {manifest}: variants[0].target_kind: expected one of 'python', 'http', 'recorded', "
        "got 'record' (did you mean 'recorded'?)",
    ]


def test_the_suites_problems_come_with_the_manifests(tmp_path: Path) -> None:
    """A manifest and a suite each with a problem: the suite's was met only on the next
    run, once the manifest was fixed. Both are listed at once, each naming its file; a
    suite without a problem adds nothing."""
    shutil.copytree(EXAMPLE, tmp_path, dirs_exist_ok=True)
    manifest, suite = tmp_path / "manifest.yaml", tmp_path / "suite.yaml"
    manifest.write_text(manifest.read_text().replace("trial_count", "trials"))
    good_suite = suite.read_text()
    suite.write_text(good_suite.replace("expected_contains", "expect_contains", 1))
    done = _cli("experiment", "run", str(manifest), str(suite), "-q")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "Unable to run experiment: 2 problems:",
        f"  {manifest}: unknown key 'trials' (did you mean 'trial_count'?)",
        f"  {suite}: cases[0]: unknown key 'expect_contains' (did you mean 'expected_contains'?)",
    ]
    suite.write_text(good_suite)
    done = _cli("experiment", "run", str(manifest), str(suite), "-q")
    assert done.stderr.splitlines() == [
        f"Unable to run experiment: {manifest}: unknown key 'trials' (did you mean 'trial_count'?)"
    ]


def test_a_variant_without_completed_trials_gives_exit_3() -> None:
    # A recorded file must hold at least one trial, so a recorded run cannot end with a
    # variant that completed none; live runs can (issue 5). Drive the decision directly.
    from rich.console import Console

    from agenticlens_frames import analyze, load_experiment
    from agenticlens_frames.cli import EXIT_INCOMPLETE, EXIT_OK, _exit_code

    analysis = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    quiet = Console(quiet=True)
    assert _exit_code(analysis, False, quiet) == EXIT_OK
    analysis.variants.loc[analysis.variants["variant_id"] == "large-v2", "completed_trials"] = 0
    assert _exit_code(analysis, False, quiet) == EXIT_INCOMPLETE


def _run_args(folder: Path, out: Path) -> list[str]:
    return [
        "experiment",
        "run",
        str(folder / "manifest.yaml"),
        str(folder / "suite.yaml"),
        "--save",
        str(out / "r.json"),
        "-q",
    ]


def test_fail_on_regression_follows_the_case_level_verdict(tmp_path: Path) -> None:
    args = _run_args(EXAMPLE, tmp_path)
    assert _cli(*args).returncode == 0
    # No candidate is significantly worse case by case under the declared Holm
    # correction, so the gate passes ...
    gated = _cli(*args, "--fail-on-regression")
    assert gated.returncode == 0, gated.stderr
    # ... and says (on stderr, even with -q) that a pass is not evidence of no change:
    # the smallest change each gated comparison could have detected, as the verdicts say.
    from agenticlens_frames import analyze, load_experiment

    verdicts = analyze(
        load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"), frontier_n_resamples=0
    ).verdicts
    assert gated.stderr.startswith("Regression gate passed: no candidate is significantly worse")
    quality = verdicts.set_index("candidate_variant_id").query("dimension == 'quality'")
    assert f"prompt-v2 quality: {quality.loc['prompt-v2', 'detectable']}" in gated.stderr
    assert "smaller than 34.2 pp" in gated.stderr  # (data/README.md's figure)
    # ... and, as no non-inferiority gate was asked for, names the option that would ask
    # for evidence of no large regression (its last detail line)
    assert (
        gated.stderr.rstrip()
        .splitlines()[-1]
        .strip()
        .endswith("add --noninferiority-margin (exit 5)")
    )
    both = _cli(*args, "--fail-on-regression", "--noninferiority-margin", "0.5")
    assert "--noninferiority-margin (exit 5)" not in both.stderr, both.stderr
    # ... while AgenticLens's rule, kept behind an option, flags retrieval-dense: its case
    # pass rate falls by more than 5 % of the baseline's because a trial is missing.
    compat = _cli(*args, "--fail-on-regression", "--regression-rule", "compat")
    assert compat.returncode == 4
    assert "retrieval-dense" in compat.stderr and "AgenticLens rule" in compat.stderr


def _broken_copy(tmp_path: Path) -> Path:
    """The example with every model-large answer empty and untraced: it fails every case."""
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    path = folder / "trials" / "model-large.json"
    data = json.loads(path.read_text())
    for trial in data["trials"]:
        for sample in trial["samples"]:
            sample["output"] = ""
            sample["trace"]["spans"] = []
    path.write_text(json.dumps(data))
    return folder


def test_a_significantly_worse_candidate_fails_the_gate(tmp_path: Path) -> None:
    import numpy as np
    from scipy import stats

    from agenticlens_frames import analyze, load_experiment

    folder = _broken_copy(tmp_path)
    # Independently: a paired t-test on per-case pass rates, Bonferroni over the family
    # (Holm never adjusts the smallest p-value more), is far below 0.05.
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml")
    a = run.attempts
    means = (
        a[a["status"] != "trial_failed"]
        .groupby(["variant_id", "case_id"], observed=True)["passed"]
        .mean()
    )
    base, cand = means["baseline"], means["model-large"]
    p = stats.ttest_rel(cand.to_numpy(float), base[cand.index].to_numpy(float)).pvalue
    family = len(analyze(run).verdicts)
    assert cand.mean() < base.mean() and min(1.0, p * family) < 0.05
    out = tmp_path / "out"
    out.mkdir()
    gated = _cli(*_run_args(folder, out), "--fail-on-regression")
    assert gated.returncode == 4, gated.stderr
    assert "case-level paired verdict" in gated.stderr and "model-large" in gated.stderr
    assert "worse" in gated.stderr
    assert _cli(*_run_args(folder, out)).returncode == 0  # no gate asked: exit 0
    np.testing.assert_array_less(cand.to_numpy(float), 1e-12)  # every case failed


def test_the_summary_is_appended_by_run_and_report_even_when_the_gate_fails(
    tmp_path: Path,
) -> None:
    """--summary appends (a CI step summary is shared by the job's steps) and is written
    when the gate fails, the moment CI needs it most, in the gate's own words."""
    folder = _broken_copy(tmp_path)
    out = tmp_path / "out"
    summary = tmp_path / "step-summary.md"
    summary.write_text("An earlier step's line")  # (no line break at its end)
    gated = _cli(*_run_args(folder, out), "--fail-on-regression", "--summary", str(summary))
    assert gated.returncode == 4, gated.stderr
    again = _cli("experiment", "report", str(out / "r.json"), "--summary", str(summary))
    assert again.returncode == 0, again.stderr
    assert f"Appended the Markdown summary to {summary}" in again.stdout
    text = summary.read_text()
    assert text.startswith("An earlier step's line\n\n### Experiment support-agent-upgrade")
    run_block, report_block = text.split("### Experiment ")[1:]
    headline = gated.stderr.splitlines()[0]
    assert headline == "Regression against the baseline (case-level paired verdict): model-large"
    assert f"**Failed (exit 4).** {headline}\n- model-large vs baseline, quality" in run_block
    assert "- **model-large** vs baseline: worse on quality (-" in run_block
    # The saved report gives the same verdicts; `experiment report` has no gate to report.
    assert "**Failed" not in report_block and "**Passed" not in report_block
    table = run_block[run_block.index("| Candidate |") :].split("\n\n")[0]
    assert table in report_block


def test_a_passed_noninferiority_gate_says_each_bound(tmp_path: Path) -> None:
    """A pass was silent: now stderr and the summary give each candidate's bound."""
    summary = tmp_path / "s.md"
    args = [*_run_args(EXAMPLE, tmp_path), "--noninferiority-margin", "0.5"]
    done = _cli(*args, "--summary", str(summary))
    assert done.returncode == 0, done.stderr
    gate = json.loads((tmp_path / "r.json").read_text())["paired_comparisons"]["noninferiority"]
    assert gate["passed"]
    lines = done.stderr.splitlines()
    assert lines[0] == "Non-inferiority gate passed:"
    text = summary.read_text()
    assert "**Passed.** Non-inferiority gate passed:" in text
    for row in gate["candidates"]:
        prefix = f"  {row['candidate_variant_id']} (quality): lower 95% bound "
        line = next(x for x in lines if x.startswith(prefix))
        bound, unit = line[len(prefix) :].split()[:2]
        # in percentage points, beside the margin in them
        assert unit == "pp" and line.endswith("> margin -50 pp")
        assert float(bound) / 100 == pytest.approx(row["bound"], rel=1e-3)
        assert f"- {line.strip().replace('>', chr(92) + '>')}" in text


def test_a_summary_that_cannot_be_written_is_named_and_the_rest_kept(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (a device every write to fails: disk full)")
    args = [*_run_args(EXAMPLE, tmp_path), "--summary", "/dev/full"]
    done = _cli(*args)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Unable to write the summary: /dev/full: No space left on device" in done.stderr
    assert (tmp_path / "r.json").exists()  # written before, and kept
    # A gate's status says more than the summary's failure: it is kept.
    compat = _cli(*args, "--fail-on-regression", "--regression-rule", "compat")
    assert compat.returncode == 4 and "Unable to write the summary" in compat.stderr
    # An output naming the summary's file is refused before any work.
    clash = _cli(*_run_args(EXAMPLE, tmp_path), "--summary", str(tmp_path / "r.json"))
    assert clash.returncode == 1 and "--save and --summary name the same file" in clash.stderr


def test_the_case_level_gate_needs_a_declared_correction(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text()
    assert "comparisons: {correction: " in text
    manifest.write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith("comparisons:"))
    )
    args = _run_args(folder, tmp_path)
    refused = _cli(*args, "--fail-on-regression")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "declare comparisons: {correction: holm}" in refused.stderr
    assert "--regression-rule compat" in refused.stderr
    # The option once ("--fail-on-regression: --fail-on-regression follows ..." said it twice).
    assert refused.stderr.count("--fail-on-regression") == 1
    assert not (tmp_path / "r.json").exists()  # refused before any work
    compat = _cli(*args, "--fail-on-regression", "--regression-rule", "compat")
    assert compat.returncode == 4 and "retrieval-dense" in compat.stderr
    assert _cli(*args, "--fail-on-regression", "--correction", "holm").returncode == 0


def test_report_gates_a_saved_report_as_the_run_did_when_asked(tmp_path: Path) -> None:
    """Run in one job, gate in another: `experiment report --fail-on-regression` exits as
    `experiment run` did on the same report (it always exited 0)."""
    args = [*_run_args(EXAMPLE, tmp_path), "--noninferiority", "latency=200"]
    ran = _cli(*args)
    assert ran.returncode == 5, ran.stderr
    saved = str(tmp_path / "r.json")
    # Re-rendering to read it is not a gate: exit 0, nothing on stderr
    plain = _cli("experiment", "report", saved, "-q")
    assert (plain.returncode, plain.stderr) == (0, "")
    summary = tmp_path / "s.md"
    gated = _cli(
        "experiment", "report", saved, "-q", "--fail-on-regression", "--summary", str(summary)
    )
    assert gated.returncode == 5
    # the regression gate passed (the run did not ask for it), then the report's own
    # non-inferiority gate, word for word as the run said it
    passed, _, failed = gated.stderr.partition("Non-inferiority gate failed:")
    assert passed.startswith("Regression gate passed: no candidate is significantly worse")
    assert "Non-inferiority gate failed:" + failed == ran.stderr
    # its failing candidates are the saved block's, read independently from the JSON
    block = json.loads(Path(saved).read_text())["paired_comparisons"]["noninferiority"]
    failing = [r["candidate_variant_id"] for r in block["candidates"] if not r["passed"]]
    assert ran.stderr.splitlines()[0] == f"Non-inferiority gate failed: {', '.join(failing)}"
    assert "**Failed (exit 5).** Non-inferiority gate failed:" in summary.read_text()
    compat = _cli(
        "experiment", "report", saved, "-q", "--fail-on-regression", "--regression-rule", "compat"
    )
    assert compat.returncode == 4 and "retrieval-dense" in compat.stderr


def test_report_gate_needs_verdicts_or_the_compat_rule(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text()
    manifest.write_text(
        "\n".join(line for line in text.splitlines() if not line.startswith("comparisons:"))
    )
    assert _cli(*_run_args(folder, tmp_path)).returncode == 0
    saved = str(tmp_path / "r.json")
    refused = _cli("experiment", "report", saved, "--fail-on-regression")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "this report has none" in refused.stderr and "--regression-rule compat" in refused.stderr
    compat = _cli(
        "experiment", "report", saved, "--fail-on-regression", "--regression-rule", "compat"
    )
    assert compat.returncode == 4 and "retrieval-dense" in compat.stderr


def test_report_rerenders_a_saved_report(tmp_path: Path) -> None:
    assert (
        _cli(
            "experiment",
            "run",
            str(EXAMPLE / "manifest.yaml"),
            str(EXAMPLE / "suite.yaml"),
            "--save",
            str(tmp_path / "r.json"),
            "--csv",
            str(tmp_path / "v1.csv"),
            "-q",
        ).returncode
        == 0
    )
    done = _cli(
        "experiment",
        "report",
        str(tmp_path / "r.json"),
        "--csv",
        str(tmp_path / "v2.csv"),
        "--html",
        str(tmp_path / "r.html"),
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "v1.csv").read_bytes() == (tmp_path / "v2.csv").read_bytes()


@pytest.mark.parametrize(
    "args",
    [[], ["experiment"], ["experiment", "run", "--help"], ["experiment", "report", "--help"]],
)
def test_help_everywhere(args: list[str]) -> None:
    done = _cli(*args, "--help") if args[-1:] != ["--help"] else _cli(*args)
    assert done.returncode == 0
    assert "Usage" in done.stdout


def test_large_runs_split_across_processes_give_the_same_files(tmp_path: Path, make_synthetic):
    """AGENTICLENS_FRAMES_WORKERS=2 replays variants and writes the JSON report in
    separate processes; every file must equal the one-process run's byte for byte."""
    folder = make_synthetic(cases=60, seed=7)
    outputs = {}
    for workers in ("1", "2"):
        out = tmp_path / workers
        done = _cli(
            *_run_with_every_output(folder, out),
            env={"AGENTICLENS_FRAMES_WORKERS": workers, "SOURCE_DATE_EPOCH": "1767225600"},
        )
        assert done.returncode == 0, done.stderr
        assert "Saved tidy tables and result frames" in done.stdout
        outputs[workers] = {
            p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
        }
    assert outputs["1"].keys() == outputs["2"].keys()
    for name in outputs["1"]:
        if name.suffix == ".parquet":
            continue  # compared as tables in tests/runner/test_recorded.py
        assert outputs["1"][name] == outputs["2"][name], name


def test_an_output_that_cannot_be_written_exits_1_without_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder is expected")
    done = _cli(
        "experiment",
        "run",
        str(EXAMPLE / "manifest.yaml"),
        str(EXAMPLE / "suite.yaml"),
        "--save",
        str(blocker / "r.json"),
        "-q",
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "--save cannot be written there (Not a directory)" in done.stderr
    assert str(blocker) in done.stderr


def test_output_options_come_from_the_writers_registry() -> None:
    """One list of outputs: each command's options, the README table and the dispatch."""
    from agenticlens_frames.report.writers import WRITERS, writers_for, writers_table

    assert writers_table() in (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for command in ("run", "report"):
        done = _cli("experiment", command, "--help", env={"COLUMNS": "200"})
        assert done.returncode == 0
        for writer in WRITERS:
            assert (f"{writer.option} " in done.stdout) == (writer in writers_for(command))


def test_gate_messages_are_whole_lines_in_a_pipe_and_say_why(tmp_path: Path) -> None:
    """A gate's message on stderr was cut at 80 columns in a pipe (the variant on a line of
    its own, away from the rule), and the non-inferiority gate named only the variants."""
    env = {"COLUMNS": ""}  # a pipe, as in CI: no width given
    compat_args = _run_args(EXAMPLE, tmp_path / "compat")
    compat = _cli(*compat_args, "--fail-on-regression", "--regression-rule", "compat", env=env)
    assert compat.returncode == 4
    assert "uncertainty ignored): retrieval-dense\n" in compat.stderr
    gate = _cli(*_run_args(EXAMPLE, tmp_path / "gate"), "--noninferiority-margin", "0.01", env=env)
    assert gate.returncode == 5
    line = next(x for x in gate.stderr.splitlines() if x.startswith("  model-large"))
    assert "bound" in line and line.endswith("margin -1 pp")  # the margin 0.01, in pp


def test_exit_3_says_why_the_trials_failed(tmp_path: Path) -> None:
    # A python target must answer {"output": ...}; one returning a str fails every trial.
    # The log said only "Incomplete: variant(s) with no completed trial: a, b, c": the
    # reason was in the JSON report alone.
    (tmp_path / "bot.py").write_text("def answer(text):\n    return 'plain text'\n")
    (tmp_path / "suite.yaml").write_text(
        'name: s\nversion: "1"\ncases:\n'
        "  - {id: c1, name: c1, input: hi, expected_contains: [hi]}\n"
    )
    variants = "".join(
        f"  - {{id: {v}, name: {v}, target_kind: python, target: 'bot.py:answer'}}\n"
        for v in ("a", "b", "c")
    )
    (tmp_path / "manifest.yaml").write_text(
        f'schema_version: "1.1"\nname: m\nversion: "1"\nbaseline_variant_id: a\n'
        f"trial_count: 2\nvariants:\n{variants}"
    )
    done = _cli(
        "experiment", "run", "manifest.yaml", "suite.yaml", "--quiet",
        "--run-dir", "runs", "--save", "r.json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-4].startswith("Incomplete: 3 variants with no completed trial: a, b, c")
    assert lines[-3] == (
        "  a: 2 trials failed: live target returned str for case 'c1'; expected an object "
        "with output and trace"
    )


@pytest.mark.parametrize("alpha", ["5", "0", "1"])
def test_an_alpha_outside_0_1_is_a_usage_error(tmp_path: Path, alpha: str) -> None:
    """--confidence-level 5 was a usage error (exit 2), --alpha 5 an input error (exit 1)
    found deeper in: the same kind of mistake, one exit code."""
    done = _cli(*_run_args(EXAMPLE, tmp_path), "--alpha", alpha)
    assert done.returncode == 2, done.stderr
    assert "strictly between 0 and 1" in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_confidence_level_given_as_alpha_is_a_usage_error(tmp_path: Path) -> None:
    """--alpha 0.95 was taken: every difference with p < 0.95 was called significant."""
    done = _cli(*_run_args(EXAMPLE, tmp_path), "--alpha", "0.95")
    assert done.returncode == 2, done.stderr
    assert "0.95 is above 0.5" in done.stderr
    assert not (tmp_path / "r.json").exists()


def _down_experiment(folder: Path, down: str) -> Path:
    """A live experiment (variants a, b, c; a the baseline) whose variant ``down`` never
    answers: its target raises an error whose message spans two lines."""
    folder.mkdir()
    (folder / "bot.py").write_text(
        "import pathlib\n"
        "def answer(text):\n"
        "    with open(pathlib.Path(__file__).with_name('calls.log'), 'a') as log:\n"
        "        log.write('call\\n')\n"
        "    return {'output': 'your parcel is on its way', 'trace': {'spans': []}}\n"
        "def down(text):\n"
        "    raise ConnectionError('unavailable\\n::error::forged by the target')\n"
    )
    cases = "".join(
        f"  - {{id: c{i}, name: c{i}, input: hi, expected_contains: [parcel]}}\n"
        for i in range(8)  # 8 cases: a candidate failing each is significantly worse
    )
    (folder / "suite.yaml").write_text(f'name: s\nversion: "1"\ncases:\n{cases}')
    variants = "".join(
        f"  - {{id: {v}, name: {v}, target_kind: python, "
        f"target: 'bot.py:{'down' if v == down else 'answer'}'}}\n"
        for v in ("a", "b", "c")
    )
    (folder / "manifest.yaml").write_text(
        f'schema_version: "1.1"\nname: m\nversion: "1"\nbaseline_variant_id: a\n'
        f"trial_count: 1\ncomparisons: {{correction: holm}}\nvariants:\n{variants}"
    )
    return folder


@pytest.mark.parametrize(("down", "status"), [("a", 0), ("b", 4)])
def test_a_gate_names_the_attempts_no_target_answered_one_line_each(
    tmp_path: Path, down: str, status: int
) -> None:
    """A baseline whose target is down fails every case, so each candidate looks better:
    the gate passed and stderr said nothing of the outage. A target's error spanning two
    lines started a log line of its own (``::error::`` is a GitHub Actions command), and
    the summary said each unanswered variant twice (under the gate and in the warnings)."""
    folder = _down_experiment(tmp_path / "exp", down)
    summary = tmp_path / "s.md"
    done = _cli(
        "experiment", "run", "manifest.yaml", "suite.yaml", "--quiet", "--save", "r.json",
        "--fail-on-regression", "--summary", str(summary), cwd=folder,
    )  # fmt: skip
    assert done.returncode == status, done.stderr
    lines = done.stderr.splitlines()
    gate = "Regression gate passed" if status == 0 else "Regression against the baseline"
    assert lines[0].startswith(gate)
    # Independently: every attempt of the variant ended in its target's error.
    report = json.loads((folder / "r.json").read_text())
    [variant] = [v for v in report["variants"] if v["variant_id"] == down]
    live = variant["trials"][0]["report"]["summary"]["live"]
    assert live["error_cases"] == live["total_cases"] == 8
    [note] = [x for x in lines if x.startswith(f"  note: {down}: 8 of 8 attempts got no answer")]
    assert "ConnectionError: unavailable ::error::forged by the target" in note
    assert not any(x.startswith("::") for x in lines)
    text = summary.read_text()
    assert text.count(f"{down}: 8 of 8 attempts got no answer") == 1
    assert f"> - {down}: 8 of 8 attempts got no answer" in text


def test_max_unanswered_fails_a_run_whose_target_was_down(tmp_path: Path) -> None:
    """A baseline whose endpoint was down made every candidate look better and the
    regression gate passed (exit 0, a note): --max-unanswered makes it exit 3."""
    folder = _down_experiment(tmp_path / "exp", "a")
    args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--save", "r.json"]
    done = _cli(*args, "--fail-on-regression", "--max-unanswered", "0.2", cwd=folder)
    assert done.returncode == 3, done.stderr
    # 8 of a's 8 attempts unanswered, counted independently from the saved report
    report = json.loads((folder / "r.json").read_text())
    [a] = [v for v in report["variants"] if v["variant_id"] == "a"]
    live = a["trials"][0]["report"]["summary"]["live"]
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "Unanswered: more than 20% of the attempts got no answer from the target "
        f"(--max-unanswered): a ({live['error_cases']} of {live['total_cases']})"
    )
    assert any(x.startswith("  note: a: 8 of 8 attempts got no answer") for x in lines)
    # every target answering: the share is 0, under any bound
    fine = _down_experiment(tmp_path / "fine", "")
    assert _cli(*args, "--max-unanswered", "0", cwd=fine).returncode == 0
    assert _cli(*args, "--max-unanswered", "1.5", cwd=fine).returncode == 2  # a share


def test_max_unanswered_is_said_beside_an_incomplete_variant(tmp_path: Path) -> None:
    """The baseline's endpoint is down and candidate c completes no trial: exit 3 said only
    "Incomplete: ... c", and the --max-unanswered gate asked for (the baseline's outage)
    was neither decided nor said on stderr."""
    folder = _down_experiment(tmp_path / "exp", "a")
    with (folder / "bot.py").open("a") as bot:
        bot.write("def plain(text):\n    return 'plain text'\n")  # not a sample
    manifest = folder / "manifest.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "{id: c, name: c, target_kind: python, target: 'bot.py:answer'}",
            "{id: c, name: c, target_kind: python, target: 'bot.py:plain'}",
        )
    )
    args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--save", "r.json"]
    done = _cli(*args, "--max-unanswered", "0.2", "--summary", "s.md", cwd=folder)
    assert done.returncode == 3, done.stderr
    report = json.loads((folder / "r.json").read_text())
    [a] = [v for v in report["variants"] if v["variant_id"] == "a"]
    live = a["trials"][0]["report"]["summary"]["live"]
    lines = done.stderr.splitlines()
    assert lines[0] == "Incomplete: 1 variant with no completed trial: c"
    assert lines[2] == (
        "Unanswered: more than 20% of the attempts got no answer from the target "
        f"(--max-unanswered): a ({live['error_cases']} of {live['total_cases']})"
    )
    assert lines[3].startswith(f"  note: a: {live['error_cases']} of 8 attempts got no answer")
    assert "(--max-unanswered): a (8 of 8)" in (folder / "s.md").read_text()


def _outage_experiment(folder: Path) -> Path:
    """A live experiment of 8 cases, 2 trials: a (the baseline) answers every case; b's
    first call returns an invalid payload (its whole trial fails), then its target errs on
    2 cases and times out on 1 in the other trial; c's target is down."""
    folder.mkdir()
    (folder / "bot.py").write_text(
        "import time\n"
        "REPLY = {'output': 'your parcel is on its way', 'trace': {'spans': []}}\n"
        "calls = []\n"
        "def answer(text):\n"
        "    return REPLY\n"
        "def flaky(text):\n"
        "    calls.append(text)\n"
        "    if len(calls) == 1:\n"
        "        return 'not a sample'\n"
        "    if text in ('q1', 'q2'):\n"
        "        raise ConnectionError('unavailable')\n"
        "    if text == 'q3':\n"
        "        time.sleep(1)\n"
        "    return REPLY\n"
        "def down(text):\n"
        "    raise ConnectionError('unavailable')\n"
    )
    cases = "".join(
        f"  - {{id: c{i}, name: c{i}, input: q{i}, expected_contains: [parcel]}}\n"
        for i in range(8)
    )
    (folder / "suite.yaml").write_text(f'name: s\nversion: "1"\ncases:\n{cases}')
    (folder / "manifest.yaml").write_text(
        'schema_version: "1.1"\nname: m\nversion: "1"\nbaseline_variant_id: a\n'
        "trial_count: 2\ncomparisons: {correction: holm}\nvariants:\n"
        "  - {id: a, name: a, target_kind: python, target: 'bot.py:answer'}\n"
        "  - {id: b, name: b, target_kind: python, target: 'bot.py:flaky', "
        "timeout_seconds: 0.2}\n"
        "  - {id: c, name: c, target_kind: python, target: 'bot.py:down'}\n"
    )
    return folder


@pytest.mark.parametrize(
    ("gates", "status"),
    [
        (["--max-unanswered", "0.2"], 3),
        (["--fail-on-regression", "--max-unanswered", "0.2"], 3),
        (["--fail-on-regression", "--max-unanswered", "1"], 4),  # passed, then the next gate
        (["--max-unanswered", "1"], 0),  # passed, and said so: the log showed nothing
    ],
)
def test_report_max_unanswered_decides_as_the_run_did(
    tmp_path: Path, gates: list[str], status: int
) -> None:
    """`experiment report --max-unanswered` did not exist (the saved report was thought to
    keep the notes, not the counts): a job gating a saved report could not apply the gate.
    The counts come from the trials' live blocks; the status, the lines on stderr and the
    --summary block are the run's."""
    import pandas as pd

    folder = _outage_experiment(tmp_path / "exp")
    run_args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--save", "r.json"]
    ran = _cli(*run_args, "--parquet", "tables", "--summary", "run.md", *gates, cwd=folder)
    assert ran.returncode == status, ran.stderr
    again = _cli(
        "experiment", "report", "r.json", "-q", "--summary", "report.md", *gates, cwd=folder
    )
    assert again.returncode == status, again.stderr
    said = ran.stderr.splitlines()
    assert again.stderr.splitlines() == said
    assert (folder / "report.md").read_text() == (folder / "run.md").read_text()
    # Independently, from the attempts table: failed trials are out of the denominator.
    attempts = pd.read_parquet(folder / "tables" / "tables" / "attempts.parquet")
    called = attempts[attempts["status"] != "trial_failed"]
    unanswered = called["status"].isin(["target_error", "timed_out"])
    counts = unanswered.groupby(called["variant_id"].astype(str)).agg(["sum", "size"])
    assert counts.loc["b"].tolist() == [3, 8] and counts.loc["c"].tolist() == [16, 16]
    if status == 3:
        assert said[0] == (
            "Unanswered: more than 20% of the attempts got no answer from the target "
            f"(--max-unanswered): b ({counts.loc['b', 'sum']} of {counts.loc['b', 'size']}), "
            f"c ({counts.loc['c', 'sum']} of {counts.loc['c', 'size']})"
        )
    else:
        most = counts["sum"] / counts["size"]
        worst = most.idxmax()
        assert worst == "c"
        assert said[0] == (
            "Unanswered-attempts gate passed: no variant's target left more than 100% of its "
            f"attempts unanswered (--max-unanswered); the most: {worst} "
            f"({counts.loc[worst, 'sum']} of {counts.loc[worst, 'size']})."
        )
        assert (status == 4) == said[1].startswith("Regression against the baseline")
    assert said[-2].startswith("  note: b: 3 of 8 attempts got no answer")
    assert said[-1].startswith("  note: c: 16 of 16 attempts got no answer")


def test_every_gate_is_decided_when_the_regression_gate_fails(tmp_path: Path) -> None:
    """A failed regression gate was the last word: the non-inferiority gate's bounds were
    never said. Both are now, and the exit status is the first failure's (4)."""
    folder = _down_experiment(tmp_path / "exp", "b")  # b fails every case: worse
    args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--save", "r.json"]
    done = _cli(*args, "--fail-on-regression", "--noninferiority-margin", "0.5", cwd=folder)
    assert done.returncode == 4, done.stderr  # the first failure's status, not 5
    lines = done.stderr.splitlines()
    assert lines[0] == "Regression against the baseline (case-level paired verdict): b"
    # b failed all 8 cases a passed: far below -50 pp; c answered as a did
    assert "Non-inferiority gate failed: b" in lines
    assert any(x.startswith("  b (quality): lower 95% bound -") for x in lines)
    # The JSON report records them, in stderr's words (which put a target's two-line error
    # on one line), with the exit status they gave
    recorded = json.loads((folder / "r.json").read_text())["agenticlens_frames"]["gates"]
    assert recorded["exit_status"] == done.returncode
    said = [
        line
        for g in recorded["outcomes"]
        for line in [g["headline"], *(f"  {d}" for d in g["details"])]
    ]
    said = [line.replace("\n", " ") for line in said]
    assert said == lines
    assert [g["exit_status"] for g in recorded["outcomes"]] == [4, 5]
    # a run asking for no gate records none (its report as before)
    plain = _cli(*args, cwd=_down_experiment(tmp_path / "plain", ""))
    assert plain.returncode == 0
    report = json.loads((tmp_path / "plain" / "r.json").read_text())
    assert "gates" not in report["agenticlens_frames"]


def test_the_summary_folder_is_made_and_an_empty_path_is_named(tmp_path: Path) -> None:
    """`--summary "$GITHUB_STEP_SUMMARY"` outside GitHub Actions was refused as "`.`: names
    a directory"; a summary in a folder not made yet failed only after the run."""
    summary = tmp_path / "not" / "yet" / "s.md"
    done = _cli(*_run_args(EXAMPLE, tmp_path), "--summary", str(summary))
    assert done.returncode == 0, done.stderr
    assert summary.read_text().startswith("### Experiment support-agent-upgrade")
    empty = _cli(*_run_args(EXAMPLE, tmp_path / "e"), "--summary", "", cwd=tmp_path)
    assert empty.returncode == 1
    assert "--summary is empty or '.', the current directory, not a file" in empty.stderr
    assert "$GITHUB_STEP_SUMMARY" in empty.stderr
    assert not (tmp_path / "e").exists()  # refused before any work


def test_a_resumed_run_says_how_much_came_from_its_journal(tmp_path: Path) -> None:
    """A run folder kept between CI jobs answers with the journaled replies (the targets'
    code is not hashed): the log said nothing of it, even when nothing was called."""
    folder = _down_experiment(tmp_path / "exp", down="")  # every target answers
    args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--run-dir", "runs"]
    first = _cli(*args, "--max-attempts", "10", "--summary", "s.md", cwd=folder)
    assert first.returncode == 6 and "Resumed" not in first.stderr, first.stderr
    # The job's summary says why there is no verdict (it wrote nothing), in stderr's words
    stopped = first.stderr.strip().splitlines()[-1]
    assert stopped == "Stopped: 14 attempts still to call; resume with --run-dir runs"
    text = (folder / "s.md").read_text()
    assert text.startswith("### Experiment ") and f"**Not finished (exit 6).** {stopped}." in text
    calls = folder / "calls.log"
    before = len(calls.read_text().splitlines())
    second = _cli(*args, cwd=folder)
    assert second.returncode == 0, second.stderr
    called = len(calls.read_text().splitlines()) - before
    assert (before, called) == (10, 14)  # 3 variants x 8 cases, none called twice
    assert second.stderr.splitlines()[0] == (
        "Resumed from --run-dir runs: 10 of 24 live attempts from its journal, 14 called "
        "now (the targets' code is not checked: a changed agent needs a new --run-dir)"
    )
    third = _cli(*args, cwd=folder)
    assert third.returncode == 0 and len(calls.read_text().splitlines()) == 24
    assert "Resumed from --run-dir runs: 24 of 24 live attempts from its journal, 0 called" in (
        third.stderr
    )


def test_changed_comparison_settings_are_refused_before_any_call(tmp_path: Path) -> None:
    """A saved report fixes its experiment version's settings: a margin added later was
    refused only after every live target had been called again."""
    folder = _down_experiment(tmp_path / "exp", down="")
    args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--save", "r.json"]
    assert _cli(*args, cwd=folder).returncode == 0
    calls = folder / "calls.log"
    assert len(calls.read_text().splitlines()) == 24
    changed = _cli(*args, "--noninferiority-margin", "0.1", cwd=folder)
    assert changed.returncode == 1
    assert changed.stderr.startswith(
        "Unable to run experiment: r.json: comparisons: the run was fixed with other "
        "settings: noninferiority_margin: None -> 0.1"
    )
    assert len(calls.read_text().splitlines()) == 24  # no target called
    # The same settings run again (and are checked whole after the run, as before).
    assert _cli(*args, cwd=folder).returncode == 0
    assert len(calls.read_text().splitlines()) == 48


def test_a_new_run_with_a_failed_trial_does_not_say_it_resumed(tmp_path: Path) -> None:
    """A failed trial's cases are attempts never called: counted as the run's attempts
    less this session's calls, they read as taken from a journal, and a new run (with a
    new --run-dir, or with the supervisor's private folder and no --run-dir at all) said
    "Resumed from --run-dir …: 7 of 48 live attempts from its journal". Only a real
    resume says so, with the journal's count (the calls log counts the calls)."""
    folder = _outage_experiment(tmp_path / "exp")
    base = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q"]
    private = _cli(*base, cwd=folder)
    assert private.returncode == 0, private.stderr
    assert "Resumed" not in private.stderr
    first = _cli(*base, "--run-dir", "rd", cwd=folder)
    assert first.returncode == 0 and "Resumed" not in first.stderr, first.stderr
    # Resumed: every finished attempt comes from the journal; of b's failed trial only the
    # call that failed it, its other 7 cases never called (a: 16, b: 1 + 8, c: 16).
    again = _cli(*base, "--run-dir", "rd", cwd=folder)
    resumed = [x for x in again.stderr.splitlines() if x.startswith("Resumed")]
    assert resumed == [
        "Resumed from --run-dir rd: 41 of 41 live attempts from its journal, 0 called now "
        "(the targets' code is not checked: a changed agent needs a new --run-dir)"
    ], again.stderr


def test_a_ctrl_c_that_reaches_typer_is_said_with_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second Ctrl-C, pressed while a run honours the first (judging its last replies),
    reaches typer, which ended the command in a silent exit 130: no word of the run folder
    that holds what finished."""
    from agenticlens_frames import cli
    from agenticlens_frames.runner import live

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(live, "run_experiment", interrupted)
    # An earlier in-process command of this test session may have finished (its outputs
    # written): _command would then end this very process at once, pytest with it.
    monkeypatch.setattr(cli, "_finished", False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        sys,
        "argv",
        ["agenticlens-frames", "experiment", "run", str(EXAMPLE / "manifest.yaml"),
         str(EXAMPLE / "suite.yaml"), "--quiet", "--run-dir", "runs/x"],
    )  # fmt: skip
    with pytest.raises(SystemExit) as done:
        cli._command()
    assert done.value.code == 130
    assert capsys.readouterr().err.strip() == (
        "Interrupted: what finished is kept; resume with --run-dir runs/x."
    )


def test_a_bad_evaluators_spec_names_the_option(tmp_path: Path) -> None:
    # (load_registry names the Python argument by default; the command line its option.)
    done = _cli(
        "experiment", "run", str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml"),
        "--evaluators", "registry", "--save", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert done.returncode == 1
    assert "--evaluators: expected 'module:attribute', got 'registry'" in done.stderr
    assert "(e.g. --evaluators my_project.evals:registry)" in done.stderr


def test_report_says_a_refused_output_is_an_output_problem(tmp_path: Path) -> None:
    """`experiment report r.json --summary <a folder>` said "Unable to read experiment
    report: ...": the job's author went looking at a report file that was fine."""
    (tmp_path / "adir").mkdir()
    done = _cli("experiment", "report", "r.json", "--summary", "adir", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Unable to write the outputs: adir: --summary names a dir")


def test_a_failed_compat_gate_says_by_how_much(tmp_path: Path) -> None:
    """`--regression-rule compat` named the regressed candidates only: whether a drop was
    6 % or 60 % was in the report alone."""
    done = _cli(
        *_run_args(EXAMPLE, tmp_path), "--fail-on-regression", "--regression-rule", "compat"
    )
    assert done.returncode == 4, done.stderr
    # Independently, AgenticLens's case pass rate from the saved trials: passed cases over
    # every declared attempt, a failed (absent) trial's counting as failures.
    report = json.loads((tmp_path / "r.json").read_text())
    declared = report["trial_count"]
    rates = {}
    for variant in report["variants"]:
        passed = sum(
            case["passed"]
            for trial in variant["trials"]
            if trial.get("report")
            for case in trial["report"]["cases"]
        )
        cases = max(len(t["report"]["cases"]) for t in variant["trials"] if t.get("report"))
        rates[variant["variant_id"]] = passed / (cases * declared)
    drop = rates["retrieval-dense"] - rates["baseline"]
    assert (
        f"  retrieval-dense: case pass rate {100 * drop:+.1f} pp "
        f"({drop / rates['baseline']:+.1%} relative); the threshold: -5% of the baseline's"
    ) in done.stderr.splitlines()


def test_a_new_run_dir_restarted_by_the_supervisor_does_not_say_it_resumed(
    tmp_path: Path,
) -> None:
    """A target ending the process once in a fresh CI job's new --run-dir: the supervisor
    restarted the run (said so) and the job's log then said "Resumed from --run-dir rd: …
    from its journal ... a changed agent needs a new --run-dir", as if the folder had
    been kept from an earlier job. A folder that was kept still says so."""
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "bot.py").write_text(
        "import os, pathlib\n"
        "def answer(text):\n"
        "    here = pathlib.Path(__file__).parent\n"
        "    with open(here / 'calls.log', 'a') as log:\n"
        "        log.write(text + '\\n')\n"
        "    if text == 'q1' and not (here / 'ended').exists():\n"
        "        (here / 'ended').write_text('')\n"
        "        os._exit(3)\n"
        "    return {'output': 'your parcel is on its way', 'trace': {'spans': []}}\n"
    )
    cases = "".join(
        f"  - {{id: c{i}, name: c{i}, input: q{i}, expected_contains: [parcel]}}\n"
        for i in range(3)
    )
    (folder / "suite.yaml").write_text(f'name: s\nversion: "1"\ncases:\n{cases}')
    (folder / "manifest.yaml").write_text(
        'schema_version: "1.1"\nname: m\nversion: "1"\nbaseline_variant_id: a\n'
        "trial_count: 1\nvariants:\n"
        + "".join(
            f"  - {{id: {v}, name: {v}, target_kind: python, target: 'bot.py:answer'}}\n"
            for v in "abc"
        )
    )
    args = ["experiment", "run", "manifest.yaml", "suite.yaml", "-q", "--run-dir", "rd"]
    first = _cli(*args, "--save", "r.json", cwd=folder)
    assert first.returncode == 0, first.stderr
    assert "resuming (1 of at most" in first.stderr  # the restart, said as it happened
    assert "Resumed" not in first.stderr
    again = _cli(*args, "--save", "r2.json", cwd=folder)
    assert again.returncode == 0, again.stderr
    assert "Resumed from --run-dir rd: 9 of 9 live attempts from its journal" in again.stderr


def test_report_of_a_manifest_names_the_command_that_runs_it() -> None:
    """`experiment report manifest.yaml` said "not valid JSON: Expecting value"."""
    done = _cli("experiment", "report", str(EXAMPLE / "manifest.yaml"))
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"Unable to read experiment report: {EXAMPLE / 'manifest.yaml'}: this is an experiment "
        "manifest (YAML), not a saved experiment report"
    ), done.stderr
    assert "`experiment run MANIFEST SUITE --save report.json`" in " ".join(done.stderr.split())
