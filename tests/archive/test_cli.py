"""``archive add|ls|summarize|slice`` through typer's runner (mounted as the main CLI will)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
import yaml
from typer.testing import CliRunner

from agenticlens_frames.archive import Archive
from agenticlens_frames.archive.cli import archive_app
from agenticlens_frames.frames import ExperimentRun

from ..conftest import EXAMPLE, REPO, example_without_latency
from .conftest import archived_before_checksums

app = typer.Typer()
app.add_typer(archive_app, name="archive")
runner = CliRunner()


def invoke(*args: str) -> object:
    return runner.invoke(app, ["archive", *args], env={"COLUMNS": "200"})


@pytest.fixture
def cli_archive(tmp_path: Path, synthetic_run: ExperimentRun) -> Path:
    path = tmp_path / "arc"
    result = invoke(
        "add",
        str(path),
        str(EXAMPLE / "manifest.yaml"),
        str(EXAMPLE / "suite.yaml"),
        "--run-at",
        "2026-10-20",
    )
    assert result.exit_code == 0, result.output
    assert "Added run" in result.output
    saved = synthetic_run.to_parquet(tmp_path / "saved" / "tables")
    result = invoke("add", str(path), str(saved.parent), "--run-at", "2026-09-01", "-q")
    assert result.exit_code == 0 and result.output == ""
    return path


def test_add_twice_reports_and_strict_refuses(cli_archive: Path):
    args = ["add", str(cli_archive), str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml")]
    again = invoke(*args)
    assert again.exit_code == 0 and "Already archived" in again.output
    strict = invoke(*args, "--strict")
    assert strict.exit_code == 1 and "already in the archive" in strict.output
    assert len(Archive(cli_archive).records()) == 2


def test_rollups_upgrades_old_runs_once(cli_archive: Path):
    from .test_rollups import strip_rollups

    strip_rollups(Archive(cli_archive))
    assert Archive(cli_archive).all().stats("numpy").info["read"] == "attempts"
    first = invoke("rollups", str(cli_archive))
    assert first.exit_code == 0 and "Wrote rollups for 2 of 2 run(s)" in first.output
    assert Archive(cli_archive).all().stats("numpy").info["read"] == "rollups"
    again = invoke("rollups", str(cli_archive))
    assert again.exit_code == 0 and "Wrote rollups for 0 of 2 run(s)" in again.output
    missing = invoke("rollups", str(cli_archive / "nope"))
    assert missing.exit_code == 1 and "Unable to write rollups" in missing.output


def test_ls_prints_the_catalog_and_json(cli_archive: Path):
    table = invoke("ls", str(cli_archive))
    assert table.exit_code == 0
    assert "2 run(s)" in table.output and "support-agent-upgrade@1" in table.output
    lines = invoke("ls", str(cli_archive), "--json", "--since", "2026-10-01").output.splitlines()
    assert [json.loads(line)["experiment_id"] for line in lines] == ["support-agent-upgrade@1"]


def test_ls_json_is_each_run_json_as_written_plus_its_path(cli_archive: Path):
    """Each line of ``ls --json`` is the run's ``_run.json`` as the file holds it (what its
    digest was checked against) with one key added, ``path``. It printed the record as
    ``to_json`` rebuilds it, which gave a run archived before checksums and digests (2 and
    6 December 2026) an empty ``sha256`` map and a ``record_sha256`` its file never had."""
    archive = Archive(cli_archive)
    old = archive.records()[0]
    archived_before_checksums(archive, old.run_id)
    lines = invoke("ls", str(cli_archive), "--json").output.splitlines()
    printed = {json.loads(line)["run_id"]: json.loads(line) for line in lines}
    assert len(printed) == 2
    for run_id, data in printed.items():
        folder = Path(data.pop("path"))
        assert folder == archive.record(run_id).path
        assert data == json.loads((folder / "_run.json").read_text(encoding="utf-8"))
    assert "record_sha256" not in printed[old.run_id] and "sha256" not in printed[old.run_id]
    # Rollups rewrite the record (checksums and a digest now): ls prints the new file.
    assert invoke("rollups", str(cli_archive), "-q").exit_code == 0
    (line,) = invoke("ls", str(cli_archive), "--json", "--run", old.run_id).output.splitlines()
    data = json.loads(line)
    folder = Path(data.pop("path"))
    assert data == json.loads((folder / "_run.json").read_text(encoding="utf-8"))
    assert "record_sha256" in data


def test_summarize_writes_every_frame(cli_archive: Path, tmp_path: Path):
    out = tmp_path / "summary"
    result = invoke(
        "summarize",
        str(cli_archive),
        "--factor",
        "retrieval=dense",
        "--tag",
        "refund",
        "--include-baseline",
        "--pass-k",
        "1,2",
        "--engine",
        "numpy",
        "--out",
        str(out),
        "--format",
        "csv",
    )
    assert result.exit_code == 0, result.output
    assert "retrieval-dense" in result.output and "Factor levels" in result.output
    vs = pd.read_csv(out / "variant_summary.csv")
    assert set(vs["variant_id"]) == {"baseline", "retrieval-dense"}
    assert {"pass_at_2", "case_pass_rate_ci_low"} <= set(vs.columns)
    assert (out / "comparisons.csv").exists() and (out / "runs.csv").exists()


def test_summarize_writes_the_comparison_of_a_variant_without_a_known_latency(tmp_path: Path):
    """Fix B3: prompt-v2 was logged without latencies. `summarize --out` writes its
    comparison (pass rate, score and cost deltas) with the latency delta, its relative
    change and its flag empty (unknown), as `experiment run` does; it wrote no row for it.
    The variant table shows its latency as unknown (–), not 0."""
    folder = example_without_latency(tmp_path, "prompt-v2")
    path, out = tmp_path / "arc", tmp_path / "out"
    added = invoke("add", str(path), str(folder / "manifest.yaml"), str(folder / "suite.yaml"))
    assert added.exit_code == 0, added.output
    result = invoke("summarize", str(path), "--out", str(out), "--format", "csv")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "│ prompt-v2 " in line)
    assert row.split("│")[10].strip() == "–"  # the latency ms column
    comparisons = pd.read_csv(out / "comparisons.csv").set_index("candidate_variant_id")
    assert sorted(comparisons.index) == ["large-v2", "model-large", "prompt-v2", "retrieval-dense"]
    latency = ["average_latency_ms_delta", "average_latency_ms_delta_relative"]
    latency.append("average_latency_ms_regressed")
    assert comparisons.loc["prompt-v2", latency].isna().all()
    assert comparisons.drop(index="prompt-v2")[latency].notna().all().all()
    assert comparisons.loc["prompt-v2", ["pass_rate_delta", "total_cost_usd_delta"]].notna().all()


def test_summarize_of_candidates_without_their_baseline_says_how_to_compare(cli_archive: Path):
    """A factor slice keeps only the matching variants; without the baseline there is no
    paired comparison, and the summary used to end without a word about it."""
    bare = invoke("summarize", str(cli_archive), "--factor", "retrieval=dense")
    assert bare.exit_code == 0, bare.output
    assert "Paired with each run's baseline" not in bare.output
    note = " ".join(bare.output.split())
    assert (
        "No paired comparison for 1 candidate(s) in 1 run(s): the slice does not hold their "
        "run's baseline (add --include-baseline)" in note
    )
    paired = invoke(
        "summarize", str(cli_archive), "--factor", "retrieval=dense", "--include-baseline"
    )
    assert "Paired with each run's baseline" in paired.output
    assert "No paired comparison" not in paired.output
    # A slice of baselines only has no candidate to compare: nothing to say.
    baselines = invoke("summarize", str(cli_archive), "--variant", "baseline")
    assert "No paired comparison" not in baselines.output


def test_summarize_says_its_factor_levels_pool_different_suites(cli_archive: Path):
    suites = sorted({f"{r.suite_name}@{r.suite_version}" for r in Archive(cli_archive).records()})
    assert len(suites) == 2
    result = invoke("summarize", str(cli_archive))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Note: the factor levels pool runs of 2 suites (" in text
    assert all(f"{suite}: 1 run" in text for suite in suites)
    one = invoke("summarize", str(cli_archive), "--experiment", "support-*")
    assert "Note:" not in one.output


def test_summarize_prints_the_case_level_interval_at_the_chosen_level(
    cli_archive: Path, tmp_path: Path
):
    """The variant table's interval treats cases as the unit, at --confidence-level; the
    pooled Wilson interval (attempts as independent) is only in the written frames."""
    from statsmodels.stats.proportion import proportion_confint

    from agenticlens_frames.stats_paired import beta_binomial_interval

    out = tmp_path / "frames"
    args = ["summarize", str(cli_archive), "--experiment", "support-agent-upgrade@1"]
    result = invoke(*args, "--confidence-level", "0.9", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "90% CI" in result.output and "95% CI" not in result.output
    assert "beta-binomial with cases as the unit" in result.output
    (folder,) = Path(cli_archive).glob("experiment=support-agent-upgrade@1/run=*")
    attempts = pd.read_parquet(folder / "attempts.parquet")
    for variant in ("baseline", "prompt-v2"):
        rows = attempts[attempts["variant_id"].astype(str) == variant]
        by_case = rows.groupby(rows["case_id"].astype(str))["passed"]
        passes = by_case.agg(lambda s: sum(x is True for x in s.tolist()))
        case_level = beta_binomial_interval(passes, by_case.size(), 0.9)
        shown = f"{case_level.ci_low:.1%}–{case_level.ci_high:.1%}"
        line = next(line for line in result.output.splitlines() if f" {variant} " in line)
        assert shown in line
        low, high = proportion_confint(int(passes.sum()), len(rows), alpha=0.1, method="wilson")
        assert f"{low:.1%}–{high:.1%}" not in result.output
    written = pd.read_parquet(out / "case_level_intervals.parquet")
    assert written["method"].eq("beta_binomial").all() and len(written) == 5
    default = invoke(*args)
    assert "95% CI" in default.output and "90% CI" not in default.output


def _assert_each_runs_verdicts(
    written: pd.DataFrame, support_run: ExperimentRun, synthetic_run: ExperimentRun
) -> None:
    """Written verdicts equal `case_verdicts` of each whole run: the support run under its
    manifest's Holm, the generated one (which declares none) under the given Bonferroni."""
    from agenticlens_frames.paired.verdicts import case_verdicts

    for run, settings, where in (
        (support_run, None, "manifest"),
        (synthetic_run, {"correction": "bonferroni"}, "given"),
    ):
        expected = case_verdicts(run, settings)
        got = written[written["experiment_id"] == run.experiment_id]
        assert got["declared_in"].eq(where).all()
        assert got["verdict"].tolist() == expected["verdict"].tolist()
        assert (
            got["candidate_variant_id"].astype(str).tolist()
            == expected["candidate_variant_id"].astype(str).tolist()
        )
        np.testing.assert_allclose(
            got["adjusted_p_value"].to_numpy(float),
            expected["adjusted_p_value"].to_numpy(float),
            rtol=1e-12,
        )


def test_summarize_prints_paired_comparisons_and_each_runs_verdicts(
    cli_archive: Path,
    tmp_path: Path,
    support_run: ExperimentRun,
    synthetic_run: ExperimentRun,
):
    """Without --verdicts: per-comparison paired intervals, nothing judged. With them:
    each run's verdicts as `experiment run` gives them — the support run under the Holm
    correction its manifest declares, the generated run (which declares none) under
    --correction."""

    plain = invoke("summarize", str(cli_archive), "--limit", "50")
    assert plain.exit_code == 0, plain.output
    assert "per-comparison intervals (not verdicts)" in plain.output
    assert "latency [95% CI]" in plain.output and "cost [95% CI]" in plain.output
    assert "Verdicts of each run" not in plain.output and "--verdicts" in plain.output
    rows = [line for line in plain.output.splitlines() if line.startswith("│")]
    assert not {"better", "worse"} & set(" ".join(rows).split())

    out = tmp_path / "frames"
    args = ["summarize", str(cli_archive), "--verdicts", "--correction", "bonferroni"]
    result = invoke(*args, "--out", str(out), "--limit", "50")
    assert result.exit_code == 0, result.output
    assert "Verdicts of each run" in result.output and "Holm (manifest)" in result.output
    assert "Bonferroni (given)" in result.output
    assert "runs whose manifest declares comparisons keep their own" in result.output
    written = pd.read_parquet(out / "verdicts.parquet")
    paired = pd.read_parquet(out / "paired_differences.parquet")
    comparisons = paired.drop_duplicates(["run_id", "candidate_variant_id"])
    assert len(comparisons) == 4 + len(synthetic_run.manifest.variant_ids) - 1
    assert set(paired["dimension"]) == {"quality", "latency", "cost"}
    _assert_each_runs_verdicts(written, support_run, synthetic_run)
    assert written.loc[written["declared_in"] == "manifest", "correction"].eq("holm").all()
    refused = invoke("summarize", str(cli_archive), "--correction", "holm")
    assert refused.exit_code == 2 and "add --verdicts" in refused.output  # a usage error


def test_verdicts_of_a_slice_are_its_candidates_rows_of_the_whole_run(
    cli_archive: Path, support_run: ExperimentRun
):
    """A slice of one variant keeps that variant's rows of the whole run's family: the
    Holm family is not shrunk to the slice (which would make it look more significant)."""
    from agenticlens_frames.paired.verdicts import case_verdicts

    archive = Archive(cli_archive)
    whole = case_verdicts(support_run)
    whole = whole[whole["candidate_variant_id"].astype(str) == "model-large"]
    for sl in (
        archive.slice(variants="model-large"),
        archive.slice(variants="model-large", tags="refund"),
    ):
        got = sl.verdicts()
        assert got["candidate_variant_id"].eq("model-large").all()
        assert got["family_size"].tolist() == whole["family_size"].tolist()
        np.testing.assert_array_equal(got["adjusted_p_value"], whole["adjusted_p_value"])
    assert "tag filter does not apply" in " ".join(got.attrs["notes"])


def test_verdicts_of_a_run_with_a_stopping_rule_take_the_rules_settings(
    tmp_path: Path, synthetic_run: ExperimentRun
):
    """A run whose manifest declares no comparisons but whose early-stopping rule declared
    a correction and an alpha: its verdicts are at the rule's settings (declared_in
    "stopping rule"), not the given ones, which run_comparisons would refuse (and which
    stopped every run's verdicts). A rule of one candidate declared no correction: the
    given one applies, at the rule's alpha."""
    import dataclasses

    from .conftest import stopping_block

    assert synthetic_run.manifest.comparisons is None
    block = {**stopping_block(), "alpha": 0.1}
    one = {**block, "correction": "none", "declared_correction": None}
    given = {"correction": "bonferroni"}
    for stopping, declared_in, correction in (
        (block, "stopping rule", "holm"),
        (one, "given", "bonferroni"),
    ):
        archive = Archive(tmp_path / declared_in.replace(" ", "-"), durable=False)
        archive.add(dataclasses.replace(synthetic_run, stopping=stopping))
        got = archive.all().verdicts(given)
        assert set(got["declared_in"]) == {declared_in}
        assert set(got["correction"]) == {correction}
        assert set(got["alpha"]) == {0.1}
        assert got["stopped_early"].all()
    assert "keep the correction, alpha and cluster it decided with" in " ".join(
        Archive(tmp_path / "stopping-rule").all().verdicts(given).attrs["notes"]
    )


def test_slice_writes_rows_for_ci(cli_archive: Path, tmp_path: Path):
    out = tmp_path / "slice"
    result = invoke(
        "slice",
        str(cli_archive),
        "--out",
        str(out),
        "--factor",
        "model=gpt-large,small",
        "--tables",
        "attempts,variants",
        "--analysis",
    )
    assert result.exit_code == 0, result.output
    attempts = pd.read_parquet(out / "attempts.parquet")
    assert set(attempts["factor_model"].astype(str)) == {"gpt-large", "small"}
    assert set(pd.read_parquet(out / "variants.parquet")["factor_model"]) == {"gpt-large", "small"}
    assert (out / "results" / "case_matrix.parquet").exists()


def test_slice_writes_each_runs_verdicts(
    cli_archive: Path, tmp_path: Path, support_run: ExperimentRun, synthetic_run: ExperimentRun
):
    """`slice --verdicts` writes what `summarize --verdicts --out` writes: each run judged
    whole (the support run under its manifest's Holm, the generated one under the given
    --correction), the slice's candidates kept; a tag filter is said not to apply."""
    from agenticlens_frames.paired.verdicts import case_verdicts

    out = tmp_path / "slice"
    args = ["slice", str(cli_archive), "--out", str(out), "--verdicts"]
    result = invoke(*args, "--correction", "bonferroni", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert "verdicts from 2 run(s)" in result.output
    written = pd.read_csv(out / "verdicts.csv")
    assert not (out / "results").exists()
    _assert_each_runs_verdicts(written, support_run, synthetic_run)
    tagged = invoke(
        "slice", str(cli_archive), "--out", str(tmp_path / "t"), "-t", "refund", "--verdicts"
    )
    assert tagged.exit_code == 0 and "tag filter does not apply" in tagged.output
    tag_sliced = pd.read_parquet(tmp_path / "t" / "verdicts.parquet")
    whole = case_verdicts(support_run)
    assert tag_sliced["verdict"].tolist() == whole["verdict"].tolist()
    np.testing.assert_array_equal(tag_sliced["adjusted_p_value"], whole["adjusted_p_value"])
    refused = invoke(
        "slice", str(cli_archive), "--out", str(tmp_path / "x"), "--correction", "holm"
    )
    assert refused.exit_code == 2 and "add --verdicts" in refused.output
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # It bounds DuckDB only, and was ignored without a word with another engine.
        (
            ["summarize", "{arc}", "--engine", "numpy", "--memory-limit", "2GB"],
            "'--memory-limit': it applies to the duckdb engine, not numpy (use engine duckdb",
        ),
        (["summarize", "{arc}", "--correction", "holm"], "'--correction': it applies to the"),
        (["slice", "{arc}", "-o", "{missing}", "--engine", "dask"], "'--engine': it applies"),
        # It was ignored without a word: summarize prints tables, --out writes files.
        (["summarize", "{arc}", "--format", "csv"], "'--format': it applies to the files --out"),
        # Each was ignored without a word: slice computes no interval without --analysis
        # or --verdicts, summarize --quiet prints no table, and a folder is added with
        # the scores it holds (no evaluator is called).
        (
            ["slice", "{arc}", "-o", "{missing}", "--confidence-level", "0.9"],
            "'--confidence-level': it sets the level of the intervals of --analysis and "
            "--verdicts (add --analysis or --verdicts, or leave --confidence-level out)",
        ),
        (
            ["summarize", "{arc}", "-q", "--limit", "5"],
            "'--limit': it sets the rows of each printed table, and --quiet prints none "
            "(drop --quiet, or leave --limit out)",
        ),
        (
            ["add", "{arc}", "{missing}", "--evaluators", "m:registry"],
            "'--evaluators': it names the evaluators of a MANIFEST SUITE add, and a folder is "
            "added with the scores it holds (give MANIFEST SUITE, or leave --evaluators out)",
        ),
    ],
)
def test_options_that_conflict_exit_2_before_the_archive_is_read(tmp_path: Path, args, message):
    """An option given without the one it serves, or against another, was exit 1, the
    status of a bad archive, or ignored without a word: a usage error (exit 2) now, as in
    experiment run, said before the archive is read (a missing archive is not the error)."""
    filled = [a.format(arc=tmp_path / "missing", missing=tmp_path / "out") for a in args]
    result = invoke(*filled)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.replace("│", " ").split()), result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "partner"),
    [
        (["slice", "{arc}", "-o", "{out}", "--confidence-level", "0.9"], ["--analysis"]),
        (["slice", "{arc}", "-o", "{out}", "--confidence-level", "0.9"], ["--verdicts"]),
        (["summarize", "{arc}", "-q", "--limit", "5"], ["--out", "{out}"]),
    ],
)
def test_an_option_refused_alone_is_taken_beside_the_one_it_serves(
    cli_archive: Path, tmp_path: Path, args: list[str], partner: list[str]
):
    """The refusals above are of the option alone: beside --analysis or --verdicts the
    level is taken (the frames' intervals at 90 %), and --limit with --quiet stays refused
    even when --out writes files, which it does not cut."""
    filled = [a.format(arc=cli_archive, out=tmp_path / "out") for a in [*args, *partner]]
    result = invoke(*filled, "-q")
    if args[0] == "summarize":
        assert result.exit_code == 2 and "'--limit'" in result.output, result.output
        return
    assert result.exit_code == 0, result.output
    name = "results/paired_differences.parquet" if "--analysis" in partner else "verdicts.parquet"
    written = pd.read_parquet(tmp_path / "out" / name)
    assert set(written["confidence_level"]) == {0.9}, written.columns


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["summarize", "{arc}", "--factor", "retrieval"], "not name=value"),
        (["summarize", "{arc}", "--factor", "retrieval=nope"], "run has retrieval='nope'"),
        (["summarize", "{arc}", "--since", "yesterday-ish"], "cannot read"),
        (["summarize", "{arc}", "--pass-k", "1,x"], "comma list"),
        # `archive ls`, which the message sent the user to, shows no variant ids.
        (
            ["summarize", "{arc}", "--variant", "promt-v2"],
            "--variant: unknown variant id 'promt-v2' (did you mean 'prompt-v2'? known: v00, v01",
        ),
        # `ls` listed no run, exit 0, as if the id were right and had no run yet.
        (["ls", "{arc}", "--variant", "promt-v2"], "--variant: unknown variant id 'promt-v2'"),
        (["ls", "{missing}"], "no archive here"),
        (["add", "{arc}", "a", "b", "c"], "expected MANIFEST SUITE"),
        # It said "{missing}/attempts.parquet: file not found", as if the folder existed.
        (["add", "{arc}", "{missing}"], "{missing}: folder not found (a run folder holds"),
        (["add", "{arc}", "{manifest}"], "got one file (give the suite after the manifest"),
        (["slice", "{arc}", "--out", "{manifest}"], "--out names an existing file"),
        (["summarize", "{arc}", "--out", "{manifest}"], "--out names an existing file"),
    ],
)
def test_bad_input_exits_1_with_a_message(cli_archive: Path, tmp_path: Path, args, message):
    filled = [
        a.format(arc=cli_archive, missing=tmp_path / "missing", manifest=EXAMPLE / "manifest.yaml")
        for a in args
    ]
    result = invoke(*filled)
    assert result.exit_code == 1
    assert message.format(missing=tmp_path / "missing") in " ".join(result.output.split())
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("kind", "message", "fix"),
    [
        (
            "crashed run folder",
            "a run folder without tables/: its run crashed or was stopped before its first "
            "session ended, so no tables were written",
            "resume the run with `agenticlens-frames experiment run MANIFEST SUITE --run-dir "
            "{folder}`",
        ),
        ("empty folder", "an empty folder: it holds neither attempts.parquet", "MANIFEST SUITE"),
        ("other folder", "not a folder of tables: it holds neither", "MANIFEST SUITE"),
    ],
)
def test_add_of_a_folder_without_tables_names_it_what_it_lacks_and_the_fix(
    tmp_path: Path, kind: str, message: str, fix: str
):
    """A run folder of `experiment run --run-dir` has its tables/ once a session ended; one
    that crashed before (run.json and its journal only), an empty folder or another folder
    was refused with "FOLDER/attempts.parquet: file not found (a run folder holds
    attempts.parquet, ...)", naming a file no run folder holds and no way out."""
    import shutil

    from agenticlens_frames.runner import run_experiment
    from agenticlens_frames.testing import make_synthetic

    folder = tmp_path / "run"
    if kind == "crashed run folder":
        exp = make_synthetic(tmp_path / "exp", variants=3, trials=1, cases=2, seed=3)
        run_experiment(exp / "manifest.yaml", exp / "suite.yaml", progress=False, run_dir=folder)
        shutil.rmtree(folder / "tables")  # as a crash before the first session ended
        assert (folder / "run.json").is_file()
    else:
        folder.mkdir()
        if kind == "other folder":
            (folder / "notes.txt").write_text("not a run", encoding="utf-8")
    arc = tmp_path / "arc"
    result = invoke("add", str(arc), str(folder))
    text = " ".join(result.output.split())
    assert result.exit_code == 1
    assert text.startswith(f"Unable to add run: {folder}: {message}")
    assert fix.format(folder=folder) in text
    assert "attempts.parquet: file not found" not in text and "Traceback" not in text
    assert not (arc / "runs").exists() or not any((arc / "runs").iterdir())


@pytest.mark.parametrize("command", ["slice", "summarize"])
@pytest.mark.parametrize("where", ["root", "run folder", "below a run folder"])
def test_out_inside_the_archive_is_refused_and_nothing_changes(
    cli_archive: Path, command: str, where: str
):
    """`slice --out <a run's folder>` wrote its attempts.parquet over the archived one
    (the run was then refused by its checksum, or read wrong where not checked)."""
    import hashlib

    run_folder = next(cli_archive.glob("experiment=*/run=*"))
    out = {
        "root": cli_archive,
        "run folder": run_folder,
        "below a run folder": run_folder / "x",
    }[where]
    before = {
        p: hashlib.sha256(p.read_bytes()).hexdigest() for p in cli_archive.rglob("*") if p.is_file()
    }
    result = invoke(command, str(cli_archive), "--out", str(out), "-q")
    assert result.exit_code == 1, result.output
    assert "--out is inside the archive" in result.output
    after = {
        p: hashlib.sha256(p.read_bytes()).hexdigest() for p in cli_archive.rglob("*") if p.is_file()
    }
    assert after == before


@pytest.mark.parametrize("command", ["ls", "summarize"])
def test_a_level_no_run_has_is_one_warning_line(cli_archive: Path, command: str):
    """Beside a level that exists: said once, as a line, not a Python warning with its
    source line (ls printed one; summarize and slice said nothing)."""
    result = invoke(command, str(cli_archive), "--factor", "model=gpt-large,gpt-nonesuch")
    assert result.exit_code == 0, result.output
    assert result.output.count("warning: no archived run has model='gpt-nonesuch'") == 1
    assert "UserWarning" not in result.output and "return [" not in result.output


@pytest.mark.parametrize("command", ["ls", "summarize"])
def test_a_factor_whose_every_level_no_run_has_is_refused_as_an_option(
    cli_archive: Path, command: str
):
    """As the Python slice refuses it; `ls` warned and listed no run, exit 0."""
    result = invoke(command, str(cli_archive), "--factor", "model=gpt-lage,gpt-nonesuch")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert "--factor: no archived run has model='gpt-lage' or 'gpt-nonesuch'" in text
    assert "did you mean --factor model=gpt-large for 'gpt-lage'?" in text
    assert "warning:" not in text


def test_tables_in_a_pipe_are_not_cut_to_80_columns(cli_archive: Path):
    """In a pipe (CI logs) rich assumed 80 columns: the paired table's name columns shrank
    to nothing, leaving intervals without the candidate they belong to."""
    piped = runner.invoke(app, ["archive", "summarize", str(cli_archive)], env={"COLUMNS": None})
    assert piped.exit_code == 0, piped.output
    paired = piped.output.split("Paired with each run's baseline")[1]
    row = next(line for line in paired.splitlines() if "retrieval-dense" in line)
    assert "support-agent-upgrade@1" in row and "baseline" in row
    added = runner.invoke(
        app,
        [
            "archive",
            "add",
            str(cli_archive),
            str(EXAMPLE / "manifest.yaml"),
            str(EXAMPLE / "suite.yaml"),
        ],
        env={"COLUMNS": None},
    )
    assert len(added.output.strip().splitlines()) == 1, added.output  # one line to grep


def test_a_negative_limit_is_a_usage_error(cli_archive: Path):
    """--limit -1 printed every row but the last, then "… 9 more" (pandas' head(-1))."""
    result = invoke("summarize", str(cli_archive), "--limit", "-1")
    assert result.exit_code == 2, result.output
    assert "--limit" in result.output


def test_a_memory_limit_duckdb_cannot_read_is_refused(cli_archive: Path):
    """Runs read from their rollups never open DuckDB: '--memory-limit lots' was accepted
    without a word and ignored."""
    pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    bad = invoke("summarize", str(cli_archive), "--memory-limit", "lots", "-q")
    assert bad.exit_code == 1 and "cannot use memory limit 'lots'" in bad.output
    assert "Traceback" not in bad.output
    good = invoke("summarize", str(cli_archive), "--memory-limit", "1GB", "-q")
    assert good.exit_code == 0, good.output


def test_a_memory_limit_too_small_for_duckdb_is_an_error_not_a_bug(cli_archive: Path):
    pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    args = ["summarize", str(cli_archive), "--engine", "duckdb", "--tag", "refund", "-q"]
    small = invoke(*args, "--memory-limit", "1MB")
    assert small.exit_code == 1
    text = " ".join(small.output.split())
    assert "Unable to summarize archive: --memory-limit: DuckDB ran out of memory" in text
    assert "raise the memory limit" in text


def test_slice_analysis_takes_the_memory_limit_summarize_takes(cli_archive: Path, tmp_path: Path):
    """slice --analysis --engine duckdb had no --memory-limit (summarize has): the limit
    given now bounds DuckDB, is refused like summarize's, and before anything is written."""
    pytest.importorskip("duckdb", reason="the [duckdb] extra is not installed")
    out = tmp_path / "out"
    base = ["slice", str(cli_archive), "--out", str(out), "-q", "--tag", "refund"]
    # An option given without the one it serves, or against another, is a usage error
    # (exit 2, said before anything is read); a value DuckDB refuses is bad input (exit 1).
    refused = {
        "'--memory-limit': it applies to the duckdb engine, not numpy": (2, [
            "--analysis", "--engine", "numpy", "--memory-limit", "2GB",
        ]),
        "'--memory-limit': it applies to the analysis (add --analysis, or leave": (
            2, ["--memory-limit", "2GB"]
        ),
        # It was ignored without a word (the engine aggregates only for --analysis).
        "'--engine': it applies to the analysis (add --analysis, or leave --engine out)": (
            2, ["--engine", "duckdb"]
        ),
        "cannot use memory limit 'lots'": (1, ["--analysis", "--memory-limit", "lots"]),
        # The limit reaches DuckDB, which cannot scan the tagged cases in 1MB.
        "--memory-limit: DuckDB ran out of memory": (1, [
            "--analysis", "--engine", "duckdb", "--memory-limit", "1MB",
        ]),
    }  # fmt: skip
    for message, (code, args) in refused.items():
        result = invoke(*base, *args)
        said = " ".join(result.output.replace("│", " ").split())
        assert result.exit_code == code and message in said, (args, result.output)
        assert not out.exists(), args
    good = invoke(*base, "--analysis", "--engine", "duckdb", "--memory-limit", "1GB")
    assert good.exit_code == 0, good.output
    assert (out / "results" / "variant_summary.parquet").exists()


def test_summarize_says_which_old_runs_hold_a_single_variant(
    cli_archive: Path, monkeypatch: pytest.MonkeyPatch
):
    """add refuses a run of fewer than two variants, but one archived before still reads,
    and compared nothing without a word: summarize names it."""
    from agenticlens_frames.archive import store

    one = Archive(cli_archive).slice(variants="baseline", experiments="support*").to_run()
    assert len(one.manifest.variants) == 1
    monkeypatch.setattr(store, "_check_shape", lambda run: None)  # as add was before
    added = Archive(cli_archive).add(one, run_at="2026-08-01").record
    result = invoke("summarize", str(cli_archive))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (
        f"Note: 1 run(s) hold a single variant ({added.run_id[:8]} of {added.experiment_id}; "
        "archived before such runs were refused): they have no paired comparison"
    ) in text


def test_the_archives_surfaces_say_a_run_stopped_early(tmp_path: Path, support_run: ExperimentRun):
    """A run its early-stopping rule stopped: its fixed-sample rows are descriptive, as
    every single-run surface says. The archive's summaries and verdicts said nothing of it
    (the archive did not keep the block); re-adding the run with its block said only
    "Already archived"."""
    import dataclasses

    from .conftest import stopping_block

    path = tmp_path / "arc"
    Archive(path).add(support_run, run_at="2026-11-04")
    tables = dataclasses.replace(support_run, stopping=stopping_block()).to_parquet(
        tmp_path / "tables"
    )
    again = invoke("add", str(path), str(tables))
    assert again.exit_code == 0, again.output
    text = " ".join(again.output.split())
    assert "Already archived: run" in text
    assert "kept its early-stopping block, which the archived copy lacked" in text
    run_id = Archive(path).records()[0].run_id
    note = (
        f"1 run(s) stopped early by their early-stopping rule ({run_id[:8]} of "
        "support-agent-upgrade@1): their fixed-sample rows are descriptive after the early stop"
    )
    plain = invoke("summarize", str(path), "--limit", "50")
    assert plain.exit_code == 0, plain.output
    assert note in " ".join(plain.output.split())
    out = tmp_path / "frames"
    judged = invoke("summarize", str(path), "--verdicts", "--limit", "50", "--out", str(out))
    assert judged.exit_code == 0, judged.output
    rows = [line for line in judged.output.splitlines() if "Holm (manifest)" in line]
    # Each verdict cell says so (wrapped onto the row's next line in a narrow table).
    assert rows and judged.output.count("(descriptive)") == len(rows) + 1  # + the caption
    assert " ".join(judged.output.split()).count(note) == 2  # paired rows, verdicts
    written = pd.read_parquet(out / "verdicts.parquet")
    assert written["stopped_early"].tolist() == [True] * len(written)
    sliced = invoke("slice", str(path), "--out", str(tmp_path / "s"), "--verdicts")
    assert sliced.exit_code == 0 and note in " ".join(sliced.output.split())


def test_the_archives_surfaces_say_a_rule_watched_a_run_to_its_end(
    tmp_path: Path, support_run: ExperimentRun
):
    """A run its rule watched but never stopped leads, on the single-run surfaces, with the
    rule's final state, its fixed-sample verdicts descriptive; the archive's verdicts
    showed them without a word (only stopped runs were noted and marked)."""
    import dataclasses

    from .conftest import stopping_block

    watched = {**stopping_block(), "stopped_early": False}
    path = tmp_path / "arc"
    Archive(path).add(dataclasses.replace(support_run, stopping=watched), run_at="2026-11-04")
    run_id = Archive(path).records()[0].run_id
    note = (
        f"1 run(s) ran to the end under an early-stopping rule that never stopped them "
        f"({run_id[:8]} of support-agent-upgrade@1): their fixed-sample rows are descriptive "
        "beside the early-stopping rule"
    )
    out = tmp_path / "frames"
    judged = invoke("summarize", str(path), "--verdicts", "--limit", "50", "--out", str(out))
    assert judged.exit_code == 0, judged.output
    assert " ".join(judged.output.split()).count(note) == 2  # paired rows, verdicts
    rows = [line for line in judged.output.splitlines() if "Holm (manifest)" in line]
    assert rows and judged.output.count("(descriptive)") == len(rows) + 1  # + the caption
    written = pd.read_parquet(out / "verdicts.parquet")
    assert written["stopped_early"].tolist() == [False] * len(written)
    # a run without a rule: no note, no mark
    plain = tmp_path / "plain"
    Archive(plain).add(support_run, run_at="2026-11-04")
    bare = invoke("summarize", str(plain), "--verdicts", "--limit", "50")
    assert bare.exit_code == 0 and bare.output.count("(descriptive)") == 1  # the caption
    assert "never stopped them" not in bare.output and "stopped early by" not in bare.output


def test_repeated_factor_options_are_what_the_help_says(cli_archive: Path):
    """--help said "repeat for AND", but the same factor repeated keeps either value
    (a variant has one value of each factor, so AND would keep none)."""
    shown = " ".join(invoke("summarize", "--help").output.replace("│", " ").split())
    assert "repeat with other factors for AND (the same factor again adds values: any-of)" in (
        shown
    )

    def variants(*factors: str) -> set[str]:
        args = [a for f in factors for a in ("--factor", f)]
        out = Path(cli_archive).parent / "out" / "-".join(factors).replace("=", "_")
        result = invoke("summarize", str(cli_archive), *args, "-q", "--out", str(out))
        assert result.exit_code == 0, result.output
        return set(pd.read_parquet(out / "variant_summary.parquet")["variant_id"].astype(str))

    both = variants("model=gpt-small", "model=gpt-large")
    assert both == variants("model=gpt-small,gpt-large") and len(both) == 5
    assert variants("model=gpt-small", "retrieval=dense") == {"retrieval-dense"}


@pytest.mark.parametrize("command", ["summarize", "slice"])
def test_an_empty_archive_says_so_and_how_to_fill_it(tmp_path: Path, command: str):
    # It said no run matched "(no filters)" and to list the archive with ls, which lists
    # nothing.
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["--out", str(tmp_path / "out")] if command == "slice" else []
    result = invoke(command, str(empty), *args)
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert f"{empty}: the archive holds no run yet" in text
    assert f"add one with `agenticlens-frames archive add {empty} MANIFEST SUITE`" in text


def test_the_example_archive_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    from agenticlens_frames.testing import example_archive

    monkeypatch.chdir(tmp_path)  # "data/support" was read relative to here
    records = example_archive(folder=tmp_path / "a").records()
    assert [r.experiment_id for r in records] == ["support-agent-upgrade@1"]


def test_errors_name_the_options_that_were_given(cli_archive: Path):
    """Errors named the Python argument ("since:", "pass_k values …"), not the option."""
    # A run record's run_at, damaged by hand, is no --run-at the user gave.
    record = next(cli_archive.glob("experiment=*/run=*/_run.json"))
    data = json.loads(record.read_text(encoding="utf-8"))
    good, data["run_at"] = data["run_at"], "yesterday"
    record.write_text(json.dumps(data), encoding="utf-8")
    damaged = invoke("summarize", str(cli_archive), "-q")
    assert damaged.exit_code == 1 and "--run-at" not in damaged.output
    assert "_run.json: run_at: cannot read 'yesterday'" in damaged.output
    data["run_at"] = good
    record.write_text(json.dumps(data), encoding="utf-8")
    factor = invoke("summarize", str(cli_archive), "--factor", "retrievl=dense", "-q")
    assert factor.exit_code == 1
    assert "--factor: no archived run has a factor 'retrievl'" in factor.output
    since = invoke("summarize", str(cli_archive), "--since", "05/11/2026", "-q")
    assert since.exit_code == 1 and "--since: cannot read '05/11/2026'" in since.output
    pass_k = invoke("summarize", str(cli_archive), "--pass-k", "0", "-q")
    assert pass_k.exit_code == 1 and "--pass-k '0': every k must be 1 or more" in pass_k.output
    add = invoke(
        "add", str(cli_archive.parent / "new"), str(EXAMPLE / "manifest.yaml"),
        str(EXAMPLE / "suite.yaml"), "--run-at", "1790000000",
    )  # fmt: skip
    assert add.exit_code == 1 and "--run-at: cannot read '1790000000'" in add.output


@pytest.mark.parametrize(
    ("tables", "message"),
    [("attempts,chcks", "unknown table 'chcks'"), (" , ", "--tables names no table")],
)
def test_slice_refuses_a_table_list_before_writing_anything(
    cli_archive: Path, tmp_path: Path, tables: str, message: str
):
    """A misspelt table was found after the tables before it were written: the command
    failed and left them, in a folder it had made."""
    out = tmp_path / "out"
    result = invoke("slice", str(cli_archive), "--out", str(out), "--tables", tables)
    assert result.exit_code == 1 and message in result.output
    assert not out.exists()


def test_every_option_of_every_archive_command_says_what_it_does():
    """``summarize --confidence-level`` had no help text."""
    group = typer.main.get_command(app).commands["archive"]
    for name, command in group.commands.items():
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert param.help and param.help.strip(), (name, param.opts)


def _options_table() -> dict[str, dict[str, set[str]]]:
    """docs/archives.md's options table: command → each long option it marks → the short
    names given for it (in the option's cell, or in the command's own cell)."""
    import re

    text = (REPO / "docs" / "archives.md").read_text(encoding="utf-8")
    section = text.split("## Command-line options", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    commands = header[1:-1]
    table: dict[str, dict[str, set[str]]] = {command: {} for command in commands}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        names = re.findall(r"`(-[^`]+)`", cells[0])
        long, shorts = names[0], set(names[1:])
        for command, cell in zip(commands, cells[1:-1], strict=True):
            if cell:
                table[command][long] = shorts | set(re.findall(r"`(-[a-z])`", cell))
    return table


def test_the_docs_options_table_is_every_option_of_every_archive_command():
    """docs/archives.md left out ls --json, --memory-limit, --pass-k, --limit, clean
    --older-than, --until and --variant: its table is checked against the commands."""
    group = typer.main.get_command(archive_app)
    documented = _options_table()
    assert list(documented) == list(group.commands)
    for name, command in group.commands.items():
        actual: dict[str, set[str]] = {}
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                longs = [o for o in param.opts if o.startswith("--")]
                actual[longs[0]] = {o for o in param.opts if not o.startswith("--")}
        assert documented[name] == actual, name


def test_ls_notes_staging_folders_left_by_writers_that_stopped(cli_archive: Path):
    """A writer killed mid-add leaves its staging folder, which no read shows: `ls` now
    says so, and how to remove them. A live writer's folder (recent) is not named."""
    stale = cli_archive / "_staging" / "killed"
    (stale / "partial").mkdir(parents=True)
    (cli_archive / "_staging" / "live").mkdir()
    listed = invoke("ls", str(cli_archive))
    assert listed.exit_code == 0 and "note:" not in listed.output
    old = time.time() - 7200
    os.utime(stale, (old, old))
    listed = invoke("ls", str(cli_archive))
    assert listed.exit_code == 0 and "2 run(s)" in listed.output
    text = " ".join(listed.output.split())
    assert "note: 1 folder(s) under" in text
    assert f"`agenticlens-frames archive clean {cli_archive}` removes them" in text
    # The command the note names (it was Python only): the stale folder goes, the live
    # writer's stays, and the archive's runs are untouched.
    cleaned = invoke("clean", str(cli_archive))
    assert cleaned.exit_code == 0 and "Removed 1 staging folder(s)" in cleaned.output
    assert not stale.exists() and (cli_archive / "_staging" / "live").is_dir()
    assert len(Archive(cli_archive).records()) == 2
    assert "note:" not in invoke("ls", str(cli_archive)).output
    other = cli_archive.parent / "experiment-folder"
    other.mkdir()
    (other / "manifest.yaml").write_text("name: x\n")
    not_an_archive = invoke("clean", str(other))
    assert not_an_archive.exit_code == 1 and "not an archive" in not_an_archive.output


def test_an_earlier_writes_files_that_would_not_be_replaced_are_refused(
    cli_archive: Path, tmp_path: Path
):
    """A slice with --verdicts, then one without into the same --out: the first's
    verdicts.parquet stayed beside the second's rows and read as its verdicts. Refused
    before any work, naming the file; nothing in the folder is removed, and a write that
    replaces every earlier file (the same options again) goes through."""
    out = tmp_path / "out"
    first = ["slice", str(cli_archive), "--out", str(out), "--verdicts", "--correction", "holm"]
    assert invoke(*first, "-q").exit_code == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert set(before) == {"attempts.parquet", "verdicts.parquet"}
    narrower = invoke("slice", str(cli_archive), "--out", str(out), "--run", "x", "-q")
    assert narrower.exit_code == 1
    text = " ".join(narrower.output.split())
    assert "--out holds verdicts.parquet from an earlier write" in text
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert invoke(*first, "-q").exit_code == 0  # the same write again replaces both
    # summarize: the parquet frames, then CSV into the same folder
    frames = tmp_path / "frames"
    assert invoke("summarize", str(cli_archive), "--out", str(frames), "-q").exit_code == 0
    as_csv = invoke("summarize", str(cli_archive), "--out", str(frames), "--format", "csv", "-q")
    assert as_csv.exit_code == 1 and "case_level_intervals.parquet" in as_csv.output
    assert not list(frames.glob("*.csv"))


def test_slice_takes_the_confidence_level_summarize_takes(cli_archive: Path, tmp_path: Path):
    """slice --analysis / --verdicts always wrote 95% intervals (no option, unlike
    summarize): the level given is the one every written interval has."""
    out = tmp_path / "out"
    result = invoke(
        "slice", str(cli_archive), "--out", str(out), "--analysis", "--verdicts",
        "--correction", "holm", "--confidence-level", "0.9", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in ("results/case_level_intervals", "results/paired_differences", "verdicts"):
        levels = pd.read_parquet(out / f"{name}.parquet")["confidence_level"]
        assert set(levels) == {0.9}, name


def _archive_with_a_comma_level(tmp_path: Path) -> Path:
    """The support example with gpt-large renamed to a level holding a comma."""
    import shutil

    folder = tmp_path / "support"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace('"gpt-large"', '"lärge, big=1"'),
        encoding="utf-8",
    )
    arc = tmp_path / "arc"
    added = invoke("add", str(arc), str(manifest), str(folder / "suite.yaml"), "-q")
    assert added.exit_code == 0, added.output
    return arc


def test_a_level_holding_a_comma_can_be_selected_and_is_suggested_as_typed(tmp_path: Path):
    """--factor "model=lärge, big=1" split on the comma, and the "did you mean" suggested
    the level in a form that could not be typed: a backslash escapes the comma, and the
    suggestion is the whole option, ready to paste."""
    import shlex

    shown = " ".join(invoke("summarize", "--help").output.replace("│", " ").split())
    assert r"A comma inside a value is written \, (a backslash itself \\)," in shown
    arc = _archive_with_a_comma_level(tmp_path)
    out = tmp_path / "out"
    result = invoke("summarize", str(arc), "--factor", r"model=lärge\, big=1", "--out", str(out))
    assert result.exit_code == 0, result.output
    frame = pd.read_parquet(out / "variant_summary.parquet")
    # The manifest's variants on that level, read independently of the archive.
    manifest = yaml.safe_load((tmp_path / "support" / "manifest.yaml").read_text("utf-8"))
    on_it = {v["id"] for v in manifest["variants"] if v["factors"]["model"] == "lärge, big=1"}
    assert set(frame["variant_id"].astype(str)) == on_it and len(on_it) == 2
    typo = invoke("summarize", str(arc), "--factor", "model=lärge", "-q")
    assert typo.exit_code == 1
    text = " ".join(typo.output.split())
    suggested = r"--factor 'model=lärge\, big=1'"
    assert f"did you mean {suggested}?" in text
    again = invoke("summarize", str(arc), *shlex.split(suggested), "-q")
    assert again.exit_code == 0, again.output
    # Several levels, one of them with a comma: every variant is on one of the two.
    out2 = tmp_path / "out2"
    both = invoke(
        "summarize", str(arc), "-f", r"model=gpt-small,lärge\, big=1", "-q", "--out", str(out2)
    )
    assert both.exit_code == 0, both.output
    assert len(pd.read_parquet(out2 / "variant_summary.parquet")) == 5


def test_a_name_holding_equals_and_a_level_with_edge_spaces_can_be_typed(tmp_path: Path):
    """A factor name holding "=" was cut at it, and a level with leading or trailing
    spaces was stripped, so neither could be selected: ``\\=`` and ``\\ `` escape them, as
    ``\\,`` does a comma, and the "did you mean" of a misspelt name or level is that form."""
    shown = " ".join(invoke("summarize", "--help").output.replace("│", " ").split())
    assert r"an = inside a name \=, and a leading or trailing space" in shown
    import shlex
    import shutil

    folder = tmp_path / "support"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8")
    text = text.replace('retrieval: "dense"', '"k=retrieval": " dense "')
    manifest.write_text(text.replace("retrieval: ", '"k=retrieval": '), encoding="utf-8")
    arc = tmp_path / "arc"
    added = invoke("add", str(arc), str(manifest), str(folder / "suite.yaml"), "-q")
    assert added.exit_code == 0, added.output
    variants = yaml.safe_load(manifest.read_text("utf-8"))["variants"]
    on_it = {v["id"] for v in variants if v["factors"]["k=retrieval"] == " dense "}
    assert on_it == {"retrieval-dense"}
    typed = r"--factor 'k\=retrieval=\ dense\ '"
    out = tmp_path / "out"
    result = invoke("summarize", str(arc), *shlex.split(typed), "--out", str(out), "-q")
    assert result.exit_code == 0, result.output
    assert set(pd.read_parquet(out / "variant_summary.parquet")["variant_id"]) == on_it
    level = invoke("summarize", str(arc), "--factor", r"k\=retrieval=dense", "-q")
    assert level.exit_code == 1
    assert f"did you mean {typed}?" in " ".join(level.output.split())
    name = invoke("summarize", str(arc), "--factor", r"k\=retrievl=bm25", "-q")
    assert name.exit_code == 1
    suggested = r"--factor 'k\=retrieval=bm25'"
    assert f"did you mean {suggested}?" in " ".join(name.output.split())
    again = invoke("summarize", str(arc), *shlex.split(suggested), "-q")
    assert again.exit_code == 0, again.output


def test_the_empty_level_is_typed_name_equals_nothing_and_suggested_so(tmp_path: Path):
    """A factor level that is the empty string could not be selected: ``name=`` was "not
    name=value", and an empty part among levels is dropped. ``name=`` (nothing after the
    ``=``) is now the empty level, and the "did you mean" of a misspelt name suggests it
    in that form, ready to paste; ``name=,`` and ``name=a,`` still drop empty parts."""
    import shlex
    import shutil

    shown = " ".join(invoke("summarize", "--help").output.replace("│", " ").split())
    assert "name= (nothing after the =) is the empty value" in shown
    folder = tmp_path / "support"
    shutil.copytree(EXAMPLE, folder)
    manifest = folder / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8").replace('retrieval: "dense"', 'retrieval: ""')
    manifest.write_text(text, encoding="utf-8")
    arc = tmp_path / "arc"
    added = invoke("add", str(arc), str(manifest), str(folder / "suite.yaml"), "-q")
    assert added.exit_code == 0, added.output
    variants = yaml.safe_load(manifest.read_text("utf-8"))["variants"]
    on_it = {v["id"] for v in variants if v["factors"]["retrieval"] == ""}
    assert on_it == {"retrieval-dense"}

    def selected(*args: str) -> set[str]:
        out = tmp_path / "out" / str(len(list((tmp_path).glob("out/*"))))
        result = invoke("summarize", str(arc), *args, "-q", "--out", str(out))
        assert result.exit_code == 0, result.output
        return set(pd.read_parquet(out / "variant_summary.parquet")["variant_id"].astype(str))

    assert selected("--factor", "retrieval=") == on_it
    assert selected("--factor", "retrieval= ") == on_it  # unescaped spaces are stripped
    bm25 = {v["id"] for v in variants if v["factors"]["retrieval"] == "bm25"}
    assert selected("--factor", "retrieval=", "--factor", "retrieval=bm25") == on_it | bm25
    refused = invoke("summarize", str(arc), "--factor", "retrieval=,", "-q")
    assert refused.exit_code == 1 and "is not name=value" in refused.output
    typo = invoke("summarize", str(arc), "--factor", "retrievl=", "-q")
    assert typo.exit_code == 1
    suggested = "--factor retrieval="
    assert f"did you mean {suggested}?" in " ".join(typo.output.split())
    assert selected(*shlex.split(suggested)) == on_it


@pytest.mark.parametrize("command", ["ls", "summarize"])
def test_the_warning_about_a_missing_level_suggests_an_option_to_paste(
    tmp_path: Path, command: str
):
    """Beside a level that exists (or in ls), a level no run has is a warning line; its
    "did you mean" showed the level as a Python string, which --factor splits."""
    arc = _archive_with_a_comma_level(tmp_path)
    result = invoke(command, str(arc), "--factor", "model=gpt-small,lärge")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.count("warning: no archived run has model='lärge'") == 1
    assert r"did you mean --factor 'model=lärge\, big=1'?" in text


def test_add_refuses_a_suite_whose_cases_the_recordings_do_not_answer(
    tmp_path: Path, make_synthetic: Callable[..., Path]
):
    """The one way a manifest and another experiment's suite can be told apart (the
    manifest names no suite): its recordings answer cases the suite does not have. Each
    is named, and nothing is archived. (A suite with the same case ids cannot be told
    apart: docs/archives.md says so.)"""
    other = make_synthetic(variants=3, trials=2, cases=4, seed=3)
    arc = tmp_path / "arc"
    result = invoke("add", str(arc), str(EXAMPLE / "manifest.yaml"), str(other / "suite.yaml"))
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "'refund-damaged-item' is not a case of suite 'synthetic-" in text
    assert "(check that the file answers this suite)" in text
    assert not arc.exists() or not Archive(arc).records()


#: The calls of :func:`_tone_registry`'s judge (``--evaluators`` imports this module).
_TONE_CALLS: list[str] = []


def _tone_registry() -> object:
    """One LLM judge, ``tone``, that counts its calls and always answers 0.75."""
    from agenticlens_frames.evaluators import EvaluatorRegistry

    registry = EvaluatorRegistry()

    @registry.register_judge("tone", version="1")
    def tone(output, case, trace, config):  # type: ignore[no-untyped-def]
        _TONE_CALLS.append(case.id)
        return {"value": 0.75, "metadata": {"verdict": "good", "judge_latency_ms": 1.0}}

    return registry


def test_add_of_a_manifest_and_suite_says_it_judges_at_every_add_and_what_to_add_instead(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """`archive add ARCHIVE MANIFEST SUITE` judges the recorded variants at every add: it
    still does (the archived scores are the judge's), but its note named load_experiment and
    its run_dir argument, neither of which the user typed. It now names `archive add` and
    the run folder to add instead, whose tables are added with no judge call."""
    import logging

    from agenticlens_frames.runner import run_experiment
    from agenticlens_frames.testing import make_synthetic

    folder = make_synthetic(tmp_path / "exp", variants=3, trials=2, cases=2, seed=3)
    manifest, suite = folder / "manifest.yaml", folder / "suite.yaml"
    doc = yaml.safe_load(suite.read_text(encoding="utf-8"))
    for case in doc["cases"]:
        case["evaluators"] = [{"name": "tone", "threshold": 0.5}]
    suite.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    arc = tmp_path / "arc"
    spec = f"{__name__}:_tone_registry"
    _TONE_CALLS.clear()
    with caplog.at_level(logging.WARNING):
        added = invoke("add", str(arc), str(manifest), str(suite), "--evaluators", spec, "-q")
    assert added.exit_code == 0, added.output
    assert len(_TONE_CALLS) == 3 * 2 * 2  # judged: variants x trials x cases, one sample each
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Note:")]
    assert len(notes) == 1
    assert notes[0].startswith(
        "Note: `agenticlens-frames archive add` of a manifest and suite calls the judge(s) "
        "'tone' for every recorded attempt, at every add"
    )
    assert f"add the run folder: `agenticlens-frames archive add {arc} DIR`" in notes[0]
    assert "load_experiment" not in notes[0] and "run_dir=" not in notes[0]

    # The way out the note gives: the run judged once in its folder, whose tables are added
    # (judged nowhere: the same scores, so the same run, already archived).
    run_dir = tmp_path / "run"
    run_experiment(manifest, suite, evaluators=_tone_registry(), progress=False, run_dir=run_dir)
    _TONE_CALLS.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = invoke("add", str(arc), str(run_dir))
    assert again.exit_code == 0, again.output
    assert _TONE_CALLS == []
    assert not [r for r in caplog.records if r.getMessage().startswith("Note:")]
    assert "Already archived" in again.output  # the same scores: the same run id

    # An experiment with a live variant is refused, with the same way out (it named
    # load_experiment(..., run_dir=DIR)).
    doc = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    doc["variants"].append(
        {**doc["variants"][0], "id": "live", "target_kind": "python", "target": "m:f"}
    )
    manifest.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    live = invoke("add", str(arc), str(manifest), str(suite), "--evaluators", spec)
    text = " ".join(live.output.split())
    assert live.exit_code == 1, live.output
    assert "which archive add never does" in text
    assert f"then add the run folder: `agenticlens-frames archive add {arc} DIR`" in text
    assert "load_experiment" not in text


@pytest.mark.parametrize("command", ["summarize", "slice"])
def test_a_confidence_level_whose_mde_alpha_is_above_a_half_is_a_usage_error(
    cli_archive: Path, command: str
):
    """The MDE's alpha is 1 - --confidence-level; the command line keeps the level at 0.5 or
    more (exit 2), as Python now refuses a level below 0.5 for it (test_paired.py)."""
    result = invoke(command, str(cli_archive), "--confidence-level", "0.3")
    assert result.exit_code == 2, result.output
    assert "--confidence-level" in result.output
