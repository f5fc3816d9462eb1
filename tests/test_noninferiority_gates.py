"""Several non-inferiority gates at once (quality AND latency AND cost): manifest list form,
``--noninferiority DIMENSION=MARGIN``, the gate frame, exit 5 and the outputs; a single
gate stays what it was (report block, lock)."""

from __future__ import annotations

import html
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from scipy import stats as sps

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.frames import ExperimentRun
from agenticlens_frames.paired import (
    ComparisonsConfig,
    comparisons_from_cli,
    gate_statement,
    noninferiority_failures,
    noninferiority_gate,
    paired_analysis,
    paired_comparisons,
    parse_comparisons,
)
from agenticlens_frames.report.console import print_summary
from agenticlens_frames.report.html import render_html
from agenticlens_frames.report.paired_json import paired_frames_from_block, report_blocks

from .conftest import EXAMPLE
from .jsondiff import json_differences

FIXTURES = Path(__file__).resolve().parent / "fixtures"
QUALITY_AND_LATENCY = (
    'comparisons: {correction: "holm", noninferiority: '
    "[{margin: 0.5, dimension: quality}, {margin: 200, dimension: latency}]}"
)


def _example(folder: Path, comparisons: str) -> Path:
    """A copy of the bundled example whose manifest declares ``comparisons``."""
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text()
    old = 'comparisons: {correction: "holm"}'
    assert old in text
    manifest.write_text(text.replace(old, comparisons))
    return folder


@pytest.fixture(scope="module")
def run() -> ExperimentRun:
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def _run(folder: Path) -> ExperimentRun:
    return load_experiment(folder / "manifest.yaml", folder / "suite.yaml")


def _latency_upper_bounds(
    run: ExperimentRun, alpha: float = 0.05, column: str = "latency_ms"
) -> dict[str, float]:
    """Independently: per-case mean latency (or ``column``) per attempt per variant from
    the attempts table, candidate minus baseline over the cases both have, one-sided t
    upper bound (scipy)."""
    attempts = run.attempts.dropna(subset=[column])
    means = attempts.pivot_table(
        index="case_id", columns="variant_id", values=column, aggfunc="mean", observed=True
    )
    out = {}
    for candidate in means.columns.drop("baseline"):
        d = (means[candidate] - means["baseline"]).dropna()
        n = len(d)
        se = d.std(ddof=1) / math.sqrt(n)
        out[str(candidate)] = float(d.mean() + sps.t.ppf(1 - alpha, n - 1) * se)
    return out


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agenticlens_frames.cli", *args],
        capture_output=True,
        text=True,
        check=False,
    )


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


def test_manifest_list_gates_every_dimension_and_candidate(tmp_path: Path) -> None:
    """One row per (dimension, candidate); the latency bound is scipy's one-sided t upper
    bound on the per-case latency differences; passed is the AND of every row."""
    run = _run(_example(tmp_path / "exp", QUALITY_AND_LATENCY))
    analysis = analyze(run)
    gate = analysis.paired_frames["noninferiority"]
    candidates = ["model-large", "prompt-v2", "retrieval-dense", "large-v2"]
    assert list(zip(gate["dimension"], gate["candidate_variant_id"], strict=True)) == [
        *(("quality", c) for c in candidates),
        *(("latency", c) for c in candidates),
    ]
    latency = gate[gate["dimension"] == "latency"].set_index("candidate_variant_id")
    expected = _latency_upper_bounds(run)
    assert sorted(expected) == sorted(candidates)
    for candidate, bound in expected.items():
        row = latency.loc[candidate]
        assert row["bound"] == pytest.approx(bound, rel=1e-10)
        assert row["bound_side"] == "upper" and row["margin"] == 200.0
        assert bool(row["passed"]) == (bound < 200)
    # prompt-v2 is no slower; the other three are (by several hundred ms)
    assert latency["passed"].to_dict() == {
        "model-large": False,
        "prompt-v2": True,
        "retrieval-dense": False,
        "large-v2": False,
    }
    quality = gate[gate["dimension"] == "quality"]
    assert quality["passed"].all()  # a margin of 50 pp: every candidate passes quality
    assert gate.attrs["passed"] is False
    assert noninferiority_failures(gate) == [
        "model-large (latency)",
        "retrieval-dense (latency)",
        "large-v2 (latency)",
    ]
    block = report_blocks(analysis)["paired_comparisons"]
    gates = block["noninferiority"]
    assert gates["margin"] is None and gates["dimension"] is None
    assert gates["gates"] == [
        {"dimension": "quality", "margin": 0.5, "passed": True},
        {"dimension": "latency", "margin": 200.0, "passed": False},
    ]
    assert len(gates["candidates"]) == 8
    assert block["settings"]["noninferiority"] == [
        {"dimension": "quality", "margin": 0.5},
        {"dimension": "latency", "margin": 200.0},
    ]
    # the console and the HTML page show every (candidate, dimension), in its unit
    console = Console(record=True, width=250)
    print_summary(analysis, console)
    said = console.export_text()
    page = render_html(analysis)
    assert "Non-inferiority gate failed: model-large (latency), retrieval-dense" in said
    for row in gate.itertuples():
        unit = "pp" if row.dimension == "quality" else "ms per attempt"
        scale = 100 if row.dimension == "quality" else 1
        side, level, relation = (
            row.reason.split(" ")[0],
            row.reason.split(" ")[1],
            (row.reason.split(" ")[4]),
        )
        line = f"{row.candidate_variant_id} ({row.dimension}): {side} {level} bound "
        line += (
            f"{row.bound * scale:+.4g} {unit} {relation} margin {row.threshold * scale:+.4g} {unit}"
        )
        assert line in said
        assert html.escape(line, quote=False) in page
    # a saved report reads the gate back whole
    back = paired_frames_from_block(json.loads(json.dumps(block)))["noninferiority"]
    assert (
        back[["dimension", "passed"]].values.tolist()
        == gate[["dimension", "passed"]].values.tolist()
    )
    assert back.attrs["passed"] is False


def test_the_python_api_takes_the_list_too(run: ExperimentRun) -> None:
    pc = paired_comparisons(run, correction="holm")
    by_mapping = noninferiority_gate(pc, margin={"quality": 0.5, "latency": 200})
    by_pairs = noninferiority_gate(pc, margin=[("quality", 0.5), ("latency", 200.0)])
    pd.testing.assert_frame_equal(by_mapping, by_pairs)
    assert len(by_mapping) == 8 and by_mapping.attrs["passed"] is False
    expected = _latency_upper_bounds(run)
    latency = by_mapping[by_mapping["dimension"] == "latency"]
    for candidate, bound in zip(latency["candidate_variant_id"], latency["bound"], strict=True):
        assert bound == pytest.approx(expected[candidate], rel=1e-10)
    # the single gate of before, given as a one-item list, is the same frame
    single = noninferiority_gate(pc, margin=0.5)
    pd.testing.assert_frame_equal(noninferiority_gate(pc, margin={"quality": 0.5}), single)
    config = ComparisonsConfig(correction="holm", noninferiority={"quality": 0.5, "latency": 200})
    assert config.gates == (("quality", 0.5), ("latency", 200.0))
    one = ComparisonsConfig(correction="holm", noninferiority=[("latency", 200)])
    assert (one.noninferiority_margin, one.noninferiority_dimension, one.noninferiority) == (
        200.0,
        "latency",
        (),
    )
    result = paired_analysis(run, config)
    pd.testing.assert_frame_equal(result.noninferiority, by_mapping)
    given = analyze(
        run,
        comparisons={
            "correction": "holm",
            "noninferiority": [{"margin": 0.5}, {"margin": 200, "dimension": "latency"}],
        },
    )
    pd.testing.assert_frame_equal(given.paired_frames["noninferiority"], by_mapping)
    with pytest.raises(InputError, match="noninferiority_margin or noninferiority, not both"):
        ComparisonsConfig(correction="holm", noninferiority_margin=0.1, noninferiority={"cost": 1})
    with pytest.raises(InputError, match="'latency' already has a gate"):
        ComparisonsConfig(correction="holm", noninferiority=[("latency", 1), ("latency", 2)])
    with pytest.raises(InputError, match="unknown dimension 'latncy'"):
        noninferiority_gate(pc, margin={"latncy": 200})
    # The single gate's dimension too: it failed every candidate for "no comparable qualty
    # scores", as if the data were missing.
    with pytest.raises(InputError, match=r"dimension: unknown dimension 'qualty' .*'quality'"):
        noninferiority_gate(pc, margin=0.02, dimension="qualty")


@pytest.mark.parametrize(
    ("gates", "location", "message"),
    [
        ("[{margin: 0.02}, {margin: -1, dimension: latency}]", "noninferiority[1].margin", ">= 0"),
        ("[{margin: 0.02}, {margn: 1}]", "noninferiority[1]", "unknown key 'margn'"),
        ("[{margin: 0.02}, {dimension: cost}]", "noninferiority[1]", "missing required key"),
        ("[{margin: 0.02}, {margin: 1, dimension: speed}]", "noninferiority[1].dimension", "speed"),
        ("[{margin: 0.02}, {margin: 0.03}]", "noninferiority[1].dimension", "already has a gate"),
        ("[0.02]", "noninferiority[0]", "expected a mapping"),
        ("[]", "noninferiority", "at least one gate"),
    ],
)
def test_list_form_errors_name_the_place(gates: str, location: str, message: str) -> None:
    import yaml

    raw = {"correction": "holm", "noninferiority": yaml.safe_load(gates)}
    with pytest.raises(InputError) as refused:
        parse_comparisons(raw, file="m.yaml")
    text = str(refused.value)
    assert f"m.yaml: comparisons.{location}: " in text and message in text


def test_a_candidate_passing_quality_but_not_latency_exits_5_naming_latency(
    tmp_path: Path,
) -> None:
    summary = tmp_path / "s.md"
    args = _run_args(EXAMPLE, tmp_path)
    done = _cli(
        *args,
        "--noninferiority",
        "quality=0.5",
        "--noninferiority",
        "latency=200",
        "--summary",
        str(summary),
    )
    assert done.returncode == 5, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "Non-inferiority gate failed: model-large (latency), retrieval-dense (latency), "
        "large-v2 (latency)"
    )
    block = json.loads((tmp_path / "r.json").read_text())["paired_comparisons"]["noninferiority"]
    for row in block["candidates"]:
        if row["passed"]:
            continue
        # bound beside the margin, in the dimension's unit (ms)
        bound = f"{row['bound']:+.4g}"
        line = f"  {row['candidate_variant_id']} (latency): upper 95% bound {bound} ms "
        assert f"{line}per attempt >= margin +200 ms per attempt" in lines
    assert not any("(quality)" in line for line in lines)  # quality passed everywhere
    text = summary.read_text()
    assert "**Failed (exit 5).** Non-inferiority gate failed: model-large (latency)" in text
    # the CLI gates equal the manifest's list form
    manifest = _example(tmp_path / "exp", QUALITY_AND_LATENCY)
    declared = _cli(*_run_args(manifest, tmp_path / "m"))
    assert declared.returncode == 5 and declared.stderr == done.stderr
    # --noninferiority-margin is the quality gate beside the others: a pass lists each
    passed = _cli(
        *_run_args(EXAMPLE, tmp_path / "p"),
        "--noninferiority-margin",
        "0.5",
        "--noninferiority",
        "latency=2000",
    )
    assert passed.returncode == 0, passed.stderr
    listed = passed.stderr.splitlines()
    assert listed[0] == "Non-inferiority gate passed:"
    assert (
        sum("(quality): lower 95% bound" in x and " pp > margin -50 pp" in x for x in listed) == 4
    )
    assert (
        sum(
            "(latency): upper 95% bound" in x
            and " ms per attempt < margin +2000 ms per attempt" in x
            for x in listed
        )
        == 4
    )


def test_the_cost_and_latency_margins_are_said_per_attempt(tmp_path: Path) -> None:
    """The cost gate compares each case's mean cost per attempt, but its lines said only
    "USD": beside the variant table's cost (a trial's total over the suite) a margin of
    0.001 USD read as per trial. Stderr, the summary and --help say "per attempt" (latency
    too), and the bound is the one-sided t bound of the per-attempt means."""
    summary = tmp_path / "s.md"
    gates = ["--noninferiority", "cost=0.001", "--noninferiority", "latency=200"]
    done = _cli(*_run_args(EXAMPLE, tmp_path), *gates, "--summary", str(summary))
    assert done.returncode == 5, done.stderr
    lines = done.stderr.splitlines()
    text = summary.read_text()
    expected = _latency_upper_bounds(_run(EXAMPLE), column="cost_usd")
    block = json.loads((tmp_path / "r.json").read_text())["paired_comparisons"]["noninferiority"]
    cost = [row for row in block["candidates"] if row["dimension"] == "cost"]
    assert len(cost) == 4 and not all(row["passed"] for row in cost)
    for row in cost:
        candidate = row["candidate_variant_id"]
        assert row["bound"] == pytest.approx(expected[candidate], rel=1e-10)
        if row["passed"]:
            continue
        said = (
            f"{candidate} (cost): upper 95% bound {row['bound']:+.4g} USD per attempt >= "
            "margin +0.001 USD per attempt"
        )
        assert f"  {said}" in lines
        assert f"- {said.replace('>=', chr(92) + '>=')}" in text  # Markdown-escaped
    assert any(" ms per attempt >= margin +200 ms per attempt" in x for x in lines)
    assert not any(x.endswith((" USD", " ms")) for x in lines)
    helped = _cli("experiment", "run", "--help").stdout
    flat = " ".join(helped.replace("│", " ").split())
    assert "latency=200 is 200 ms per attempt, cost=0.001 is 0.001 USD per attempt" in flat


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("latncy=200", "unknown dimension 'latncy'"),
        ("latency=-1", "must be a number >= 0"),
        ("latency", "expected DIMENSION=MARGIN"),
        ("cost=abc", "must be a number >= 0"),
    ],
)
def test_a_bad_gate_option_is_a_usage_error(tmp_path: Path, value: str, message: str) -> None:
    done = _cli(*_run_args(EXAMPLE, tmp_path), "--noninferiority", value)
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.replace("│", " ").split())  # (rich wraps the box)
    assert "Invalid value for '--noninferiority': " in said and message in said
    if "dimension" in message:
        assert "the dimensions are quality, safety, reliability, latency, cost" in said
    assert not (tmp_path / "r.json").exists()


def test_a_cli_gate_may_not_change_the_manifests(tmp_path: Path) -> None:
    """The gates decide a pass: fixed with the run, as the single gate was."""
    folder = _example(tmp_path / "exp", QUALITY_AND_LATENCY)
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    same = comparisons_from_cli(
        manifest, suite, noninferiority=[("quality", 0.5), ("latency", 200.0)]
    )
    assert same.gates == (("quality", 0.5), ("latency", 200.0))
    fixed = (
        r"comparisons\.noninferiority: the experiment fixed noninferiority = "
        r"\{quality: 0\.5, latency: 200\.0\} in its manifest; "
    )
    with pytest.raises(InputError, match=fixed + r"\{latency: 300\.0\} was requested"):
        comparisons_from_cli(manifest, suite, noninferiority=[("latency", 300.0)])
    with pytest.raises(InputError, match=fixed + r"\{quality: 0\.5\} was requested"):
        comparisons_from_cli(manifest, suite, noninferiority_margin=0.5)
    single = _example(tmp_path / "single", 'comparisons: {correction: "holm", noninferiority: 0.5}')
    with pytest.raises(
        InputError,
        match=r"fixed noninferiority = \{quality: 0\.5\} in its manifest; "
        r"\{quality: 0\.5, latency: 200\.0\} was requested",
    ):
        comparisons_from_cli(
            single / "manifest.yaml",
            single / "suite.yaml",
            noninferiority_margin=0.5,
            noninferiority=[("latency", 200.0)],
        )
    # a manifest without a gate takes the command line's
    open_manifest = EXAMPLE / "manifest.yaml"
    added = comparisons_from_cli(
        open_manifest,
        EXAMPLE / "suite.yaml",
        noninferiority_margin=0.02,
        noninferiority=[("cost", 0.001)],
    )
    assert added.gates == (("quality", 0.02), ("cost", 0.001)) and added.source == "manifest+cli"
    with pytest.raises(InputError, match="'quality' already has a gate"):
        comparisons_from_cli(
            open_manifest,
            EXAMPLE / "suite.yaml",
            noninferiority_margin=0.02,
            noninferiority=[("quality", 0.03)],
        )


MAPPING = 'comparisons: {correction: "holm", noninferiority: {margin: 0.05, dimension: quality}}'
ONE_ITEM_LIST = 'comparisons: {correction: "holm", noninferiority: [{margin: 0.05}]}'


def _single_gate_block(tmp_path: Path, comparisons: str) -> dict:
    """The paired block of the example under ``comparisons``, checked against the block the
    code before several gates wrote for the mapping form
    (tests/fixtures/noninferiority_single_gate_block.json, written by that code), field
    for field and number for number; the lock that code wrote still holds."""
    before = json.loads((FIXTURES / "noninferiority_single_gate_block.json").read_text())
    run = _run(_example(tmp_path / "exp", comparisons))
    analysis = analyze(run)
    block = report_blocks(analysis)["paired_comparisons"]
    assert block["settings"].pop("file").endswith("manifest.yaml")  # (a temporary path)
    assert not json_differences(block, before, rel=0.0, allow_extra_keys=False)
    assert json.dumps(block) == json.dumps(before)  # the same key order too
    lock = tmp_path / "comparisons.lock.json"
    shutil.copy(FIXTURES / "noninferiority_single_gate.lock.json", lock)
    fixed = paired_analysis(run, analysis.paired.config, lock=lock).fingerprint
    assert fixed == before["fingerprint"]
    return block


def test_a_single_gate_reads_as_before(tmp_path: Path) -> None:
    """A compatibility pin: passes on the code before several gates too, by design."""
    _single_gate_block(tmp_path, MAPPING)


def test_one_gate_in_a_list_or_an_option_is_the_single_gate(tmp_path: Path) -> None:
    _single_gate_block(tmp_path, ONE_ITEM_LIST)
    before = json.loads((FIXTURES / "noninferiority_single_gate_block.json").read_text())
    done = _cli(*_run_args(EXAMPLE, tmp_path), "--noninferiority", "quality=0.05")
    assert done.returncode == 5
    cli = json.loads((tmp_path / "r.json").read_text())["paired_comparisons"]
    assert cli["noninferiority"] == before["noninferiority"]
    assert cli["fingerprint"] == before["fingerprint"]
    margin = _cli(*_run_args(EXAMPLE, tmp_path / "m"), "--noninferiority-margin", "0.05")
    assert margin.stderr == done.stderr


def test_a_margin_of_the_whole_scale_fails_instead_of_passing_whatever_the_data(
    run: ExperimentRun,
) -> None:
    """quality=2 (meant: 2 pp) on a pass rate, whose paired difference lies in [-1, 1]: the
    gate passed every candidate whatever the data. Its lower bound, recomputed here (two
    pseudo-cases and scipy's t over the per-case differences), is far above -1 for each,
    so a margin of 2 decides nothing; the row now fails and says why."""
    att = run.attempts[run.attempts["status"] != "trial_failed"]
    means = (
        att.assign(passed=att["passed"].astype(float))
        .groupby(["variant_id", "case_id"], observed=True)["passed"]
        .mean()
    )
    for candidate in ("model-large", "prompt-v2", "retrieval-dense", "large-v2"):
        d = (means[candidate] - means["baseline"]).dropna().to_numpy()
        m = len(d) + 2
        mean = d.sum() / m
        sd = math.sqrt((float((d**2).sum()) + 2) / m - mean**2)
        bound = min(mean, d.mean()) - sps.t.ppf(0.95, len(d) + 1) * sd / math.sqrt(m)
        assert -1 < bound < 0
    pc = paired_comparisons(run, correction="holm")
    gate = noninferiority_gate(pc, margin={"quality": 2.0, "latency": 1e6})
    quality = gate[gate["dimension"] == "quality"]
    assert len(quality) == 4 and not quality["passed"].any()
    assert quality["reason"].str.startswith("margin 2 is the whole scale of a proportion").all()
    assert gate.loc[gate["dimension"] == "latency", "passed"].all()  # others as before
    assert gate.attrs["passed"] is False
    # A margin below the scale is a gate as before.
    assert noninferiority_gate(pc, margin=0.99).attrs["passed"] is True


def test_a_failed_gate_leads_the_verdicts_on_the_page_and_a_passed_one_follows(
    tmp_path: Path,
) -> None:
    """The page put the gate after the verdict table, whose 'no detectable difference'
    rows read as reassurance above a failed gate (the run's exit status 5)."""
    run = _run(_example(tmp_path / "exp", QUALITY_AND_LATENCY))
    failed = render_html(analyze(run))
    latency = run.attempts.groupby("variant_id", observed=True)["latency_ms"].mean()
    assert latency["model-large"] - latency["baseline"] > 200  # (independently: it fails)
    assert failed.index("id='noninferiority'") < failed.index("id='verdicts'")
    lenient = (
        'comparisons: {correction: "holm", noninferiority: [{margin: 0.9, dimension: quality}]}'
    )
    passed = render_html(analyze(_run(_example(tmp_path / "lenient", lenient))))
    assert "Non-inferiority gate passed" in passed
    assert "id='noninferiority'" in passed
    assert passed.index("id='verdicts'") < passed.index("id='noninferiority'")


def test_a_zero_margin_is_said_as_zero_not_minus_zero() -> None:
    """δ = 0 on a higher-is-better dimension: the threshold −δ was −0.0, and the gate's
    words on every surface read "<= margin -0 pp"."""
    frame = pd.DataFrame(
        {
            "candidate_variant_id": ["b"],
            "dimension": ["quality"],
            "evaluator": ["passed"],
            "higher_is_better": [True],
            "unit": ["proportion"],
            "paired_items": [20],
            "n_clusters": [20],
            "mean_difference": [-0.1],
            "standard_deviation": [0.3],
            "standard_error": [0.3 / math.sqrt(20)],
            "df": [19.0],
        }
    )
    gate = noninferiority_gate(frame, margin=0.0)
    assert not math.copysign(1.0, float(gate.loc[0, "threshold"])) < 0
    _, _, details = gate_statement(gate, frame)
    assert "-0 " not in gate.loc[0, "reason"] + " " and "margin +0 pp" in details[0], details


def test_a_watched_run_gates_pass_rate_on_a_one_sided_sequence_at_alpha(
    tmp_path: Path,
) -> None:
    """After ``--stop-when decided`` the fixed-sample bound is not valid (the run could
    stop when the data looked good), so the quality gate reads an anytime-valid bound. It
    read the rule's two-sided sequence at α/m (97.5 % a side here, two candidates), which
    failed base2, a candidate as good as the baseline, at δ = 10 pp; the gate's question is
    one-sided and every candidate must pass (no split), so it now reads a one-sided lower
    confidence sequence at α over the same cases in the rule's order, which passes it.
    Every surface says so, and a reliability gate keeps its fixed-sample bound marked as
    read after optional stopping on pass rate."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app
    from agenticlens_frames.report.saved import load_report

    from .runner.test_stopping import _experiment, _naive_interval
    from .test_stats_sequential import _naive_lower

    # base2 is as good as the baseline (both pass 30 %, answers independent); the rule
    # (no --stop-margin) never decides it, so the run is watched to the end of its plan.
    manifest, suite = _experiment(tmp_path, variants=("base", "base2", "better"))
    out, page, summary = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "s.md"
    result = CliRunner().invoke(
        app,
        [
            "experiment", "run", str(manifest), str(suite), "--correction", "holm",
            "--stop-when", "decided", "--run-dir", str(tmp_path / "run"),
            "--noninferiority", "quality=0.1", "--noninferiority", "reliability=0.5",
            "--save", str(out), "--html", str(page), "--summary", str(summary),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    stop = report["agenticlens_frames"]["early_stopping"]
    assert not stop["stopped_early"] and stop["alpha_per_candidate"] == pytest.approx(0.025)

    # The case differences by hand, in the planned order (a permutation seeded by the
    # manifest's random_seed 3): base2's pass rate minus the baseline's, case by case.
    run = load_experiment(manifest, suite, run_dir=tmp_path / "run")
    rate = run.attempts.groupby(["variant_id", "case_id"], observed=True)["passed"].mean()
    order = [f"c{i}" for i in np.random.default_rng(3).permutation(120)]
    d = [float(rate["base2", c] - rate["base", c]) for c in order]
    two_sided = _naive_interval(d, 0.025)[0]
    one_sided = _naive_lower(d, 0.05)
    [entry] = [c for c in stop["candidates"] if c["candidate_variant_id"] == "base2"]
    assert entry["lower"] == pytest.approx(two_sided, abs=1e-9)
    assert entry["gate_lower"] == pytest.approx(one_sided, abs=1e-9)
    # The rule's two-sided bound at alpha/m does not bound base2 above -delta (the gate
    # failed it); the one-sided bound at alpha does.
    assert two_sided <= -0.1 < one_sided

    gate = report["paired_comparisons"]["noninferiority"]["candidates"]
    rows = {(r["candidate_variant_id"], r["dimension"]): r for r in gate}
    quality = rows["base2", "quality"]
    assert quality["bound"] == pytest.approx(one_sided, abs=1e-9)
    assert quality["alpha"] == pytest.approx(0.05) and quality["passed"]
    method = (
        "one-sided confidence sequence (anytime-valid) at α = 0.05, over the cases the "
        "early-stopping rule used"
    )
    assert quality["bound_method"] == method
    assert rows["better", "quality"]["passed"]
    other = rows["base2", "reliability"]
    assert other["passed"] and other["alpha"] == pytest.approx(0.05)
    assert other["bound_method"].startswith("two pseudo-cases")
    assert other["bound_method"].endswith(
        "; fixed-sample, read after optional stopping on pass rate (valid only if pass_hat_2 "
        "is independent of pass rate)"
    )

    # Every surface says the same line for each row.
    said = f"base2 (quality): lower 95% bound {100 * one_sided:+.4g} pp > margin -10 pp — {method}"
    after = "pp — fixed-sample, read after optional stopping on pass rate (valid only if"
    console = " ".join(result.output.split())
    assert "Non-inferiority gate passed" in console
    again = CliRunner().invoke(app, ["experiment", "report", str(out)])
    loaded = load_report(out)
    surfaces = {
        "console": console,
        # (Markdown escapes "<" and ">".)
        "summary": " ".join(
            summary.read_text(encoding="utf-8").replace("\\<", "<").replace("\\>", ">").split()
        ),
        "page": " ".join(html.unescape(page.read_text(encoding="utf-8")).split()),
        "report": " ".join(again.output.split()),
        "notebook": " ".join(html.unescape(loaded._repr_html_()).split()),
    }
    for name, text in surfaces.items():
        assert said in text, name
        assert "base2 (reliability): lower 95% bound" in text and after in text, name

    # A report saved before the runner wrote the gate's bound reads the rule's two-sided
    # bound at alpha/m, as it was gated when saved.
    old = json.loads(out.read_text(encoding="utf-8"))
    for c in old["agenticlens_frames"]["early_stopping"]["candidates"]:
        del c["gate_lower"]
    ours = old["agenticlens_frames"]["early_stopping"]
    gated = noninferiority_gate(
        analyze(run).paired.comparisons, margin=0.1, stopping=ours
    ).set_index("candidate_variant_id")
    assert gated.loc["base2", "bound"] == pytest.approx(two_sided, abs=1e-9)
    assert gated.loc["base2", "alpha"] == pytest.approx(0.025)
    assert not gated.loc["base2", "passed"]
    assert gated.loc["base2", "bound_method"] == (
        "confidence sequence (anytime-valid) of the early-stopping rule"
    )


def _quality_row(evaluator: str = "passed", unit: str = "proportion") -> pd.DataFrame:
    """One candidate's paired quality row (mean +1 pp, SE 1 pp over 100 cases)."""
    return pd.DataFrame(
        {"candidate_variant_id": ["b"], "dimension": ["quality"], "evaluator": [evaluator],
         "higher_is_better": [True], "unit": [unit], "paired_items": [100],
         "n_clusters": [100], "mean_difference": [0.01], "standard_deviation": [0.1],
         "standard_error": [0.01], "df": [99.0]}
    )  # fmt: skip


def test_a_watched_run_says_what_its_gate_read_when_the_rule_watched_something_else() -> None:
    """The sequence watches pass rate (``passed``), case by case or, with clusters, per
    cluster: a gate on another quality evaluator keeps its fixed-sample bound and says the
    rule watched something else; a clustered sequence's bound says each cluster weighs the
    same; a candidate the block has no interval for fails, saying why."""
    block = {
        "alpha_per_candidate": 0.025,
        "candidates": [{"candidate_variant_id": "b", "lower": -0.015, "upper": 0.04}],
    }
    fixed = noninferiority_gate(_quality_row("score", "score"), margin=0.02)
    score = noninferiority_gate(_quality_row("score", "score"), margin=0.02, stopping=block)
    assert score.loc[0, "bound"] == fixed.loc[0, "bound"]  # the fixed-sample bound, kept
    assert score.loc[0, "alpha"] == 0.05 and bool(score.loc[0, "passed"])
    assert score.loc[0, "bound_method"].endswith(
        "; fixed-sample, read after optional stopping on pass rate (the rule watched "
        "passed, not score)"
    )
    clustered = noninferiority_gate(
        _quality_row(), margin=0.02, stopping={**block, "unit": "cluster", "cluster": "topic"}
    )
    assert clustered.loc[0, "bound"] == -0.015 and clustered.loc[0, "alpha"] == 0.025
    assert clustered.loc[0, "bound_method"] == (
        "confidence sequence (anytime-valid) of the early-stopping rule over clusters of "
        "'topic' (each cluster weighs the same; the fixed-sample rows weigh each case)"
    )
    # The runner's block carries the gate's one-sided bound (at the block's alpha): read.
    ours = {
        **block,
        "alpha": 0.05,
        "unit": "cluster",
        "cluster": "topic",
        "candidates": [{**block["candidates"][0], "gate_lower": -0.025}],
    }
    one_sided = noninferiority_gate(_quality_row(), margin=0.02, stopping=ours)
    assert one_sided.loc[0, "bound"] == -0.025 and one_sided.loc[0, "alpha"] == 0.05
    assert not bool(one_sided.loc[0, "passed"])
    assert one_sided.loc[0, "bound_method"] == (
        "one-sided confidence sequence (anytime-valid) at α = 0.05, over the clusters of "
        "'topic' the early-stopping rule used (each cluster weighs the same; the "
        "fixed-sample rows weigh each case)"
    )
    missing = noninferiority_gate(_quality_row(), margin=0.02, stopping={**block, "candidates": []})
    assert not bool(missing.loc[0, "passed"]) and math.isnan(missing.loc[0, "bound"])
    assert missing.loc[0, "reason"] == (
        "no anytime-valid bound: the early-stopping rule's block has no interval for this candidate"
    )


@pytest.mark.parametrize(
    ("block", "where"),
    [
        ({"candidates": [{"candidate_variant_id": "b", "lower": -0.01, "upper": 0.04}]},
         "stopping.alpha_per_candidate"),
        ({"alpha_per_candidate": "0.025", "candidates": []}, "stopping.alpha_per_candidate"),
        ({"alpha_per_candidate": 0.025,
          "candidates": [{"candidate_variant_id": "b", "lower": -math.inf, "upper": 0.04}]},
         "stopping.candidates[0].lower"),
        ({"alpha_per_candidate": 0.025,
          "candidates": [{"candidate_variant_id": "b", "lower": "-0.01", "upper": 0.04}]},
         "stopping.candidates[0].lower"),
        ({"alpha_per_candidate": 0.025,
          "candidates": [{"candidate_variant_id": "b", "upper": 0.04}]},
         "stopping.candidates[0].lower"),
        # Reversed: the gate read +0.06 as the bound of an interval that ends at +0.04.
        ({"alpha_per_candidate": 0.025,
          "candidates": [{"candidate_variant_id": "b", "lower": 0.06, "upper": 0.04}]},
         "stopping.candidates[0].lower"),
        # The gate's own bound reads alpha: a block with gate_lower and no alpha.
        ({"alpha_per_candidate": 0.025,
          "candidates": [{"candidate_variant_id": "b", "lower": -0.01, "upper": 0.04,
                          "gate_lower": -0.005}]},
         "stopping.alpha"),
    ],
)  # fmt: skip
def test_a_stopping_block_the_gate_cannot_read_is_refused_naming_the_key(
    block: dict, where: str
) -> None:
    """A block passed by hand without its per-candidate α failed with a bare KeyError; one
    with an infinite or text lower end, or one above its upper end, gated on it. They are
    refused, naming the key, as a run's damaged block is when it is read. (A NaN or null
    end is an empty sequence: tests/report/test_early_stopping.py.)"""
    with pytest.raises(InputError) as info:
        noninferiority_gate(_quality_row(), margin=0.02, stopping=block)
    assert info.value.location == where
    assert "not an early-stopping block the gate can read" in info.value.message
    # ... and says what the value at that key is.
    assert ": there expected " in info.value.message and ", got " in info.value.message


def test_a_run_stopped_early_gates_on_the_interval_at_the_stop(tmp_path: Path) -> None:
    """Stopped early (better decided better, worse decided worse), the pass-rate gate
    reads each candidate's one-sided bound at the decision point (over the cases used, in
    the planned order, at the unsplit α), in Python as on the command line: the run's own
    tables and the folder loaded again give the same rows."""
    from agenticlens_frames import run_experiment
    from agenticlens_frames.runner.stopping import StopRule

    from .runner.test_stopping import _experiment
    from .test_stats_sequential import _naive_lower

    manifest, suite = _experiment(
        tmp_path, comparisons={"correction": "holm", "noninferiority": {"margin": 0.1}}
    )
    folder = tmp_path / "run"
    result = run_experiment(
        manifest, suite, progress=False, run_dir=folder, stop_when="decided", stop_rule=StopRule()
    )
    assert result.stopping["stopped_early"]
    lowers = {c["candidate_variant_id"]: c["gate_lower"] for c in result.stopping["candidates"]}
    # Independently: the one-sided sequence over the cases used, in the planned order.
    used = [f"c{i}" for i in np.random.default_rng(3).permutation(120)]
    used = used[: result.stopping["cases_used"]]
    rate = result.run.attempts.groupby(["variant_id", "case_id"], observed=True)["passed"].mean()
    for cand, lower in lowers.items():
        d = [float(rate[cand, c] - rate["base", c]) for c in used]
        assert lower == pytest.approx(_naive_lower(d, 0.05), abs=1e-9)
    for run in (result, load_experiment(manifest, suite, run_dir=folder)):
        gate = analyze(run).paired.noninferiority
        assert dict(zip(gate["candidate_variant_id"], gate["bound"], strict=True)) == lowers
        assert gate["alpha"].tolist() == [0.05, 0.05]
        assert gate["passed"].tolist() == [True, False]  # better, worse


# --- the gate's bound by hand, on hand-made comparison rows (gaps found by mutation) -----


def _gate_row(**changes: object) -> pd.DataFrame:
    """One comparison row as paired_comparisons() gives it, with ``changes``."""
    row = {
        "candidate_variant_id": "b",
        "dimension": "quality",
        "evaluator": "passed",
        "higher_is_better": True,
        "unit": "proportion",
        "paired_items": 30,
        "n_clusters": 30,
        "mean_difference": 0.02,
        "standard_deviation": 0.3,
        "standard_error": 0.3 / math.sqrt(30),
        "df": 29.0,
    }
    return pd.DataFrame([row | changes])


def _pseudo_lower(n: int, mean: float, sd: float, alpha: float = 0.05) -> float:
    """Bonett-Price type lower bound by hand: the n cases' sum and sum of squares (from
    mean and SD), one +1 and one -1 case added, SD with the m = n + 2 denominator, t on
    n + 1 df; centred on the smaller of the pulled and the plain mean."""
    m = n + 2
    total = n * mean
    squares = (n - 1) * sd * sd + n * mean * mean + 2.0
    centre = total / m
    spread = math.sqrt(squares / m - centre * centre)
    return min(centre, mean) - sps.t.ppf(1 - alpha, n + 1) * spread / math.sqrt(m)


@pytest.mark.parametrize("higher", [True, False])
@pytest.mark.parametrize("se", [0.02, 0.08])
def test_a_clustered_pass_rate_gates_on_the_more_cautious_of_cr1_and_pseudo_cases(
    se: float, higher: bool
) -> None:
    """30 cases in 6 clusters: the more cautious of the pseudo-case bound and the CR1 t
    bound on G - 1 = 5 df (scipy). A small CR1 SE leaves the pseudo-case bound; a large
    one wins. Lower is better: the same for the upper bound of a difference of +0.02."""
    sign = 1.0 if higher else -1.0
    frame = _gate_row(
        dimension="quality" if higher else "safety",
        evaluator="passed" if higher else "unsafe",
        higher_is_better=higher,
        mean_difference=sign * 0.02,
        n_clusters=6,
        standard_error=se,
        df=5.0,
    )
    gate = noninferiority_gate(frame, margin=0.1, dimension="quality" if higher else "safety")
    row = gate.iloc[0]
    pseudo = _pseudo_lower(30, 0.02, 0.3)  # of sign × d, whose mean is +0.02
    cr1 = 0.02 - sps.t.ppf(0.95, 5) * se
    assert float(row["bound"]) == pytest.approx(sign * min(pseudo, cr1), rel=1e-12)
    assert (pseudo < cr1) == (se == 0.02)  # each branch is taken once
    assert bool(row["passed"]) == (min(pseudo, cr1) > -0.1)
    assert "with CR1 t (df=5) when more cautious" in row["bound_method"]


def test_a_lower_is_better_proportion_gates_on_an_upper_pseudo_case_bound() -> None:
    """An error rate (lower is better) up by 1 pp on 100 cases: the upper bound is minus
    the pseudo-case lower bound of the negated differences, and must be below +δ."""
    frame = _gate_row(
        dimension="safety",
        evaluator="unsafe",
        higher_is_better=False,
        paired_items=100,
        n_clusters=100,
        mean_difference=0.01,
        standard_deviation=0.1,
        standard_error=0.01,
        df=99.0,
    )
    m = 102
    centre = 1.0 / m  # sum of d = 100 × 0.01
    squares = 99 * 0.01 + 100 * 0.0001 + 2.0
    upper = max(centre, 0.01) + sps.t.ppf(0.95, 101) * math.sqrt(
        (squares / m - centre * centre) / m
    )
    for margin, passed in ((0.06, upper < 0.06), (0.03, upper < 0.03)):
        row = noninferiority_gate(frame, margin=margin, dimension="safety").iloc[0]
        assert row["bound_side"] == "upper" and float(row["threshold"]) == margin
        assert float(row["bound"]) == pytest.approx(upper, rel=1e-12)
        assert bool(row["passed"]) == passed
    assert 0.03 < upper < 0.06  # one margin passes, the other fails


def test_a_latency_gate_without_spread_or_cases_fails_saying_why() -> None:
    latency = {
        "dimension": "latency",
        "evaluator": "latency_ms",
        "higher_is_better": False,
        "unit": "ms",
        "mean_difference": -50.0,
    }
    same = noninferiority_gate(
        _gate_row(**latency, standard_deviation=0.0, standard_error=0.0),
        margin=200.0,
        dimension="latency",
    ).iloc[0]
    assert not same["passed"] and same["reason"].startswith("no bound: every case differed")
    one = noninferiority_gate(
        _gate_row(**latency, paired_items=1, n_clusters=1, standard_error=math.nan, df=math.nan),
        margin=200.0,
        dimension="latency",
    ).iloc[0]
    assert not one["passed"] and one["reason"] == "no interval: fewer than two paired cases"


def test_two_cases_in_one_declared_cluster_are_one_unit_without_a_bound() -> None:
    """Two paired cases, one cluster: G - 1 = 0, no interval; the pseudo-case bound over
    the two cases as independent (by hand, above -0.9 here) must not pass the gate."""
    frame = _gate_row(
        paired_items=2,
        n_clusters=1,
        mean_difference=0.0,
        standard_deviation=0.0,
        standard_error=math.nan,
        df=math.nan,
    )
    assert _pseudo_lower(2, 0.0, 0.0) > -0.9
    row = noninferiority_gate(frame, margin=0.9).iloc[0]
    assert not row["passed"] and math.isnan(row["bound"])
    assert row["reason"] == "no interval: the paired cases form one cluster"


def test_an_unclustered_pass_rate_gates_on_the_pseudo_case_bound_alone() -> None:
    """Five cases gained a pass and five lost one (SD √(10/9), SE 1/3, df 9): the plain
    one-sided t bound (scipy, -0.61) is lower than the pseudo-case bound (by hand,
    -t(0.95, 11)/√12 = -0.52), but without clusters the gate reads the pseudo-case bound
    only."""
    d = [1.0] * 5 + [-1.0] * 5
    sd = float(np.std(d, ddof=1))
    frame = _gate_row(
        paired_items=10,
        n_clusters=10,
        mean_difference=0.0,
        standard_deviation=sd,
        standard_error=sd / math.sqrt(10),
        df=9.0,
    )
    pseudo = -sps.t.ppf(0.95, 11) / math.sqrt(12)
    assert pseudo == pytest.approx(_pseudo_lower(10, 0.0, sd), rel=1e-12)
    assert -sps.t.ppf(0.95, 9) * sd / math.sqrt(10) < pseudo
    row = noninferiority_gate(frame, margin=0.55).iloc[0]
    assert float(row["bound"]) == pytest.approx(pseudo, rel=1e-12) and row["passed"]
    assert row["bound_method"] == (
        "two pseudo-cases (+1, -1), one-sided t (df=11) (Bonett-Price type)"
    )


def test_every_case_alike_without_clusters_is_bounded_over_the_cases() -> None:
    """Every one of 20 cases gained 0.1 (SD 0, SE 0): the pseudo-case bound over the 20
    cases (by hand), named so (not as clusters)."""
    frame = _gate_row(
        paired_items=20,
        n_clusters=20,
        mean_difference=0.1,
        standard_deviation=0.0,
        standard_error=0.0,
        df=19.0,
    )
    row = noninferiority_gate(frame, margin=0.05).iloc[0]
    assert float(row["bound"]) == pytest.approx(_pseudo_lower(20, 0.1, 0.0), rel=1e-12)
    assert row["bound_method"].startswith("two pseudo-cases (+1, -1), one-sided t (df=21)")


def test_one_case_gates_on_its_pseudo_case_bound_and_no_case_count_on_t() -> None:
    """A pass rate compared on one case still has a pseudo-case bound (two pseudo-cases
    give it a spread; by hand). A hand-made row without a case count has no pseudo-case
    bound: it gates on the one-sided t bound (scipy)."""
    one = _gate_row(
        paired_items=1,
        n_clusters=1,
        mean_difference=1.0,
        standard_deviation=math.nan,
        standard_error=math.nan,
        df=math.nan,
    )
    row = noninferiority_gate(one, margin=0.5).iloc[0]
    assert float(row["bound"]) == pytest.approx(_pseudo_lower(1, 1.0, 0.0), rel=1e-12)
    unknown = _gate_row(paired_items=math.nan, n_clusters=30)
    row = noninferiority_gate(unknown, margin=0.5).iloc[0]
    t_bound = 0.02 - sps.t.ppf(0.95, 29) * 0.3 / math.sqrt(30)
    assert float(row["bound"]) == pytest.approx(t_bound, rel=1e-12)
    assert row["bound_method"] == "one-sided t (df=29)"


def test_a_margin_of_exactly_one_is_the_whole_scale_and_several_gates_are_one_frame() -> None:
    """δ = 1 on a pass rate: no difference in [-1, 1] has a lower bound at or below -1, so
    the gate could not fail; it fails and says so. Two gates give one frame indexed
    0, 1 (rows read by position)."""
    quality = _gate_row()
    row = noninferiority_gate(quality, margin=1.0).iloc[0]
    assert not row["passed"] and row["reason"].startswith("margin 1 is the whole scale")
    latency = _gate_row(
        dimension="latency",
        evaluator="latency_ms",
        higher_is_better=False,
        unit="ms",
        mean_difference=10.0,
        standard_deviation=30.0,
        standard_error=30.0 / math.sqrt(30),
    )
    both = noninferiority_gate(
        pd.concat([quality, latency]), margin={"quality": 0.2, "latency": 5.0}
    )
    assert both.index.tolist() == [0, 1]
    upper = 10.0 + sps.t.ppf(0.95, 29) * 30.0 / math.sqrt(30)
    assert float(both.loc[1, "bound"]) == pytest.approx(upper, rel=1e-12)
    assert both["passed"].tolist() == [True, False] and both.attrs["passed"] is False


def test_a_bound_at_the_margin_fails_the_gate() -> None:
    """The bound must be strictly beyond the margin (above -δ, below +δ): a bound equal to
    it does not pass."""
    latency = _gate_row(
        dimension="latency",
        evaluator="latency_ms",
        higher_is_better=False,
        unit="ms",
        mean_difference=10.0,
        standard_error=5.0,
    )
    upper = 10.0 + sps.t.ppf(0.95, 29) * 5.0
    row = noninferiority_gate(latency, margin=upper, dimension="latency").iloc[0]
    assert float(row["bound"]) == upper and not row["passed"] and " >= " in row["reason"]
    quality = _gate_row()
    lower = float(noninferiority_gate(quality, margin=0.5).loc[0, "bound"])
    row = noninferiority_gate(quality, margin=-lower).iloc[0]
    assert float(row["threshold"]) == lower and not row["passed"]
    assert " <= " in row["reason"]
