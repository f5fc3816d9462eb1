"""Judge noise on the bundled example graded by two simulated judges: a noisy one (its
samples disagree a lot) and a steady one (its samples agree; the agent's trials differ).
Numbers are recomputed here from the JSON report's scores, by hand, not through the module."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import types
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.evaluators import EvaluatorRegistry
from agenticlens_frames.judge_noise import MANY_SAMPLES, TARGET_JUDGE_SHARE
from agenticlens_frames.report.json_report import build_report

from .conftest import EXAMPLE


def _u(*parts: object) -> float:
    """A reproducible uniform number in [0, 1) from the parts."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _registry() -> EvaluatorRegistry:
    registry = EvaluatorRegistry()
    calls: dict[tuple, int] = {}

    def judge(kind: str, spread: float, agent: float):  # type: ignore[no-untyped-def]
        def fn(output, case, trace, config):  # type: ignore[no-untyped-def]
            key = (kind, case.id, trace.trace_id)
            call = calls.get(key, 0)
            calls[key] = call + 1
            value = (
                0.05
                + 0.3 * _u("case", case.id)
                + agent * _u("agent", kind, trace.trace_id)
                + spread * _u("judge", kind, trace.trace_id, call)
            )
            return {"value": min(value, 1.0), "metadata": {"judge_latency_ms": 1.0}}

        return fn

    registry.register_judge("noisy", judge("noisy", 0.6, 0.02), samples=4)
    registry.register_judge("steady", judge("steady", 0.01, 0.35), samples=4)
    return registry


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("noise") / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    for case in suite["cases"]:
        case["evaluators"] = [{"name": "noisy", "threshold": 0.5}, {"name": "steady"}]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml", evaluators=_registry())
    return analyze(run)


def _samples_from_report(report: dict, evaluator: str) -> dict[str, dict[str, list[list[float]]]]:
    """variant -> case -> [sample values of each trial], read from the trial reports."""
    out: dict[str, dict[str, list[list[float]]]] = {}
    for variant in report["variants"]:
        per_case: dict[str, list[list[float]]] = {}
        for trial in variant["trials"]:
            if trial["report"] is None:  # a failed trial (the example has one)
                continue
            for case in trial["report"]["cases"]:
                for score in case["scores"]:
                    if score["evaluator"] == evaluator:
                        values = score["metadata"]["judge_sample_values"]
                        per_case.setdefault(case["case_id"], []).append(values)
        out[variant["variant_id"]] = per_case
    return out


def _components(per_case: dict[str, list[list[float]]]) -> tuple[float, float, float, float, float]:
    """(case, trial, judge, trials, samples) by pooled variances, plain Python."""
    judge_ss = judge_df = 0.0
    trial_ss = trial_df = 0.0
    case_means = []
    trials = []
    samples = []
    for runs in per_case.values():
        means = []
        for values in runs:
            mean = sum(values) / len(values)
            means.append(mean)
            judge_ss += sum((v - mean) ** 2 for v in values)
            judge_df += len(values) - 1
            samples.append(len(values))
        case_mean = sum(means) / len(means)
        trial_ss += sum((m - case_mean) ** 2 for m in means)
        trial_df += len(means) - 1
        case_means.append(case_mean)
        trials.append(len(means))
    judge = judge_ss / judge_df
    m = len(samples) / sum(1 / s for s in samples)
    t = len(trials) / sum(1 / s for s in trials)
    within = trial_ss / trial_df
    grand = sum(case_means) / len(case_means)
    between = sum((c - grand) ** 2 for c in case_means) / (len(case_means) - 1)
    return max(0.0, between - within / t), max(0.0, within - judge / m), judge, t, m


def test_decomposition_matches_a_hand_computation_from_the_report(analysis) -> None:  # type: ignore[no-untyped-def]
    report = json.loads(json.dumps(build_report(analysis)))
    noise = analysis.paired_frames["judge_noise"]
    for evaluator in ("noisy", "steady"):
        samples = _samples_from_report(report, evaluator)
        for variant, per_case in samples.items():
            row = noise[(noise["evaluator"] == evaluator) & (noise["variant_id"] == variant)].iloc[
                0
            ]
            case, trial, judge, t, m = _components(per_case)
            assert row["judge_variance"] == pytest.approx(judge, rel=1e-9)
            assert row["trial_variance"] == pytest.approx(trial, rel=1e-9, abs=1e-15)
            assert row["case_variance"] == pytest.approx(case, rel=1e-9, abs=1e-15)
            assert (row["trials"], row["samples"]) == pytest.approx((t, m))
    # the simulated judges: the noisy one dominates its metric, the steady one does not
    by_judge = noise.groupby("evaluator")["judge_share"].mean()
    assert by_judge["noisy"] > 0.5 > 0.05 > by_judge["steady"]
    assert report["judge_noise"]["decomposition"][0]["evaluator"] == "noisy"


def test_comparisons_say_when_the_judge_limits_detection(analysis) -> None:  # type: ignore[no-untyped-def]
    report = json.loads(json.dumps(build_report(analysis)))
    comps = analysis.paired_frames["judge_noise_comparisons"]
    noise = analysis.paired_frames["judge_noise"].set_index(["evaluator", "variant_id"])
    baseline = analysis.run.manifest.baseline_variant_id
    for evaluator in ("noisy", "steady"):
        samples = _samples_from_report(report, evaluator)

        def case_means(variant: str, samples=samples) -> dict[str, float]:
            return {
                c: sum(sum(v) / len(v) for v in runs) / len(runs)
                for c, runs in samples[variant].items()
            }

        base = case_means(baseline)
        for _, row in comps[comps["evaluator"] == evaluator].iterrows():
            cand = case_means(row["candidate_variant_id"])
            diff = np.array([cand[c] - base[c] for c in base if c in cand])
            n = len(diff)
            t = stats.t.ppf(0.975, n - 1)
            assert row["ci_half_width"] == pytest.approx(t * diff.std(ddof=1) / math.sqrt(n))
            b, c = (
                noise.loc[(evaluator, baseline)],
                noise.loc[(evaluator, row["candidate_variant_id"])],
            )
            judge_part = sum(r["judge_variance"] / (r["trials"] * r["samples"]) for r in (b, c))
            agent_part = sum(r["trial_variance"] / r["trials"] for r in (b, c))
            # Not V − J alone (13 degrees of freedom, at 0 about half the time when the
            # judge dominates, reading as a 100 % share): the agent's part, estimated from
            # every case's trials, plus what the cases show beyond both.
            rest = agent_part + max(diff.var(ddof=1) - judge_part - agent_part, 0.0)
            share = 1 - math.sqrt(rest / diff.var(ddof=1))
            assert row["judge_width_share"] == pytest.approx(share)
            limits = judge_part > agent_part and share > TARGET_JUDGE_SHARE
            assert row["judge_limits_detection"] == limits
            if limits and rest > 0:
                # with m' samples the judge's part of the interval's variance shrinks by
                # m / m': m' is the fewest that bring the share under the target
                m = row["samples"]
                needed = row["samples_needed"]
                assert needed == _fewest_samples(diff.var(ddof=1), judge_part, rest, m)
                assert row["note"].startswith("Judge noise, not agent noise, limits")
                if needed <= MANY_SAMPLES:
                    assert f"about {needed} samples per evaluation (now {m:g})" in row["note"]
                else:  # not advice to take: said in words
                    assert f"more than {MANY_SAMPLES} samples per evaluation" in row["note"]
    assert comps.loc[comps["evaluator"] == "noisy", "judge_limits_detection"].any()
    assert not comps.loc[comps["evaluator"] == "steady", "judge_limits_detection"].any()
    assert report["judge_noise"]["notes"] == [n for n in comps["note"] if isinstance(n, str)]


def _fewest_samples(variance: float, judge_part: float, rest: float, m: float) -> int:
    """The fewest samples per evaluation (at least ``m``, now) whose interval has the
    judge's share of its width at most the target, searched one by one."""
    for k in range(round(m), 100_000):
        projected = variance - judge_part + judge_part * m / k
        if projected > 0 and 1 - math.sqrt(rest / projected) <= TARGET_JUDGE_SHARE:
            return k
    raise AssertionError("no number of samples is enough")


def _synthetic_comparison(seed: int, judge_spread: float) -> tuple[pd.Series, pd.DataFrame]:
    """The judge-noise comparison of b against a on simulated judged values (12 cases,
    3 trials, 3 samples; b is 0.05 better), and the values."""
    from agenticlens_frames.judge_noise import judge_noise_comparisons

    rng = np.random.default_rng(seed)
    rows = []
    case_effects = rng.normal(0, 0.1, 12)
    for variant, shift in (("a", 0.0), ("b", 0.05)):
        for case, effect in enumerate(case_effects):
            for trial in (1, 2, 3):
                agent = rng.normal(0, 0.08)
                for sample in range(3):
                    noise = rng.normal(0, judge_spread)
                    value = float(np.clip(0.5 + shift + effect + agent + noise, 0, 1))
                    rows.append((variant, trial, f"c{case}", "j", "j", sample, value, 3, math.nan))
    columns = ["variant_id", "trial", "case_id", "evaluator", "metric", "sample", "value"]
    data = pd.DataFrame(rows, columns=[*columns, "samples", "agreement"])
    manifest = types.SimpleNamespace(baseline_variant_id="a", variant_ids=["a", "b"])
    run = types.SimpleNamespace(manifest=manifest)
    return judge_noise_comparisons(run, samples=data).iloc[0], data  # type: ignore[arg-type]


def test_samples_needed_agree_with_the_share_when_the_cases_vary_less_than_expected() -> None:
    """When the paired differences vary less than the judge's and the agent's parts add
    up to (V < J + A), the share came from V and the samples from J + A: a share of 45%
    was sent past 50 samples ("a steadier judge would"), where 7 bring it under 10%."""
    row, data = _synthetic_comparison(1, 0.2)  # a draw with V < J + A, checked below
    # Independently: V from the case means, J and A from the components as documented.
    means = data.groupby(["variant_id", "case_id", "trial"])["value"].mean()
    case_means = means.groupby(["variant_id", "case_id"]).mean()
    variance = float((case_means["b"] - case_means["a"]).var(ddof=1))
    judge_part, agent_part = row["judge_variance_part"], row["agent_variance_part"]
    assert variance < judge_part + agent_part and judge_part > agent_part
    rest = agent_part  # + max(0, V − J − A), which is 0 here
    assert row["judge_width_share"] == pytest.approx(1 - math.sqrt(rest / variance))
    assert row["judge_width_share"] > 0.4
    assert row["samples_needed"] == _fewest_samples(variance, judge_part, rest, 3) == 7
    assert "about 7 samples per evaluation (now 3)" in row["note"]


def test_a_share_just_over_the_target_is_not_shown_as_the_target() -> None:
    """A share of 10.3% read "accounts for 10% of the interval's width; about 4 samples
    per evaluation (now 3) would bring it under 10%", which reads as a contradiction."""
    row, _ = _synthetic_comparison(37, 0.12)  # a draw whose share rounds to 10%
    share = row["judge_width_share"]
    assert TARGET_JUDGE_SHARE < share < 0.105 and row["judge_limits_detection"]
    assert f"accounts for {share:.1%} of the interval's width; about 4 samples" in row["note"]


def test_runs_without_judges_get_no_judge_noise_key() -> None:
    analysis = analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))
    assert "judge_noise" not in build_report(analysis)
    assert "judge_noise" not in analysis.paired_frames


def test_the_console_summary_prints_the_notes(analysis) -> None:  # type: ignore[no-untyped-def]
    from rich.console import Console

    from agenticlens_frames.report.console import print_summary

    console = Console(record=True, width=400)
    print_summary(analysis, console)
    text = console.export_text()
    notes = analysis.judge_noise["notes"]
    assert notes and all(f"! {note}" in text for note in notes)


@pytest.mark.parametrize("samples", [1, 3])
def test_a_judge_named_twice_in_a_case_is_two_metrics_not_more_samples(
    tmp_path, samples: int
) -> None:  # type: ignore[no-untyped-def]
    """One judge grading two criteria of each case (two entries, a steady value each)
    had its two entries pooled as samples of one output: 'samples' 2 (or 6) and a judge
    variance of 0.245 for a judge whose every sample of one entry is the same."""
    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    for case in suite["cases"]:
        case["evaluators"] = [
            {"name": "rubric", "config": {"extra": {"criterion": criterion}}}
            for criterion in ("tone", "accuracy")
        ]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    registry = EvaluatorRegistry()

    def rubric(output, case, trace, config):  # type: ignore[no-untyped-def]
        tone = config["config"]["extra"]["criterion"] == "tone"
        return {"value": 0.9 if tone else 0.2, "metadata": {"judge_latency_ms": 1.0}}

    registry.register_judge("rubric", rubric, samples=samples)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml", evaluators=registry)
    noise = analyze(run).paired_frames["judge_noise"]
    assert sorted(set(noise["metric"])) == ["rubric", "rubric #2"]
    assert np.allclose(noise["samples"], samples)
    if samples == 1:  # one sample: the judge's variance cannot be told apart
        assert noise["judge_variance"].isna().all()
    else:  # every sample of one entry is the same value: the judge adds nothing
        assert np.allclose(noise["judge_variance"], 0.0, rtol=0, atol=1e-12)


def test_the_page_the_summary_and_a_saved_report_say_the_notes_too(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The notes and the judges' cost were on the console of `experiment run` only: the
    page and the Markdown summary left them out, and a loaded report had no judge block,
    so `experiment report` said nothing of its judges."""
    from rich.console import Console

    from agenticlens_frames import load_report, write_html_report, write_json_report
    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.summary import summary_markdown

    notes = analysis.judge_noise["notes"]
    assert notes
    write_html_report(analysis, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert all(f"<li>{note}</li>".replace("'", "&#x27;") in page for note in notes)
    assert all(f"> - {note}" in summary_markdown(analysis) for note in notes)
    write_json_report(analysis, tmp_path / "r.json")
    loaded = load_report(tmp_path / "r.json")
    console = Console(record=True, width=400)
    print_summary(loaded, console)
    text = console.export_text()
    assert all(f"! {note}" in text for note in notes)
    for row in analysis.judge_noise["totals"]:
        assert f"Judges · {row['variant_id']}: {row['judge_scores']} score(s)" in text
        # which count is which ("0/0 tokens" said neither)
        assert f"{row['input_tokens']} input / {row['output_tokens']} output tokens" in text


def test_a_damaged_judge_noise_block_is_refused_at_load(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agenticlens_frames import load_report
    from agenticlens_frames.errors import InputError

    report = json.loads(json.dumps(build_report(analysis, lean=True)))
    # The first reports with the block had no totals: they load, with their notes.
    first = json.loads(json.dumps(report))
    del first["judge_noise"]["totals"], first["judge_noise"]["unavailable_notes"]
    (tmp_path / "first.json").write_text(json.dumps(first))
    notes = load_report(tmp_path / "first.json").judge_noise["notes"]
    assert notes and notes == analysis.judge_noise["notes"]
    del report["judge_noise"]["totals"][1]["spent_cost_usd"]
    (tmp_path / "r.json").write_text(json.dumps(report))
    with pytest.raises(InputError, match="damaged judge-noise block") as info:
        load_report(tmp_path / "r.json")
    assert info.value.location == "judge_noise.totals[1]"


@pytest.mark.parametrize("lean", [False, True])
def test_a_loaded_report_gives_the_judge_frames_of_the_analysis_that_wrote_it(
    analysis, tmp_path, lean: bool
) -> None:  # type: ignore[no-untyped-def]
    """A loaded report had no judge_totals / judge_noise / judge_noise_comparisons frames
    (only the block's notes): `result.frames()` of the same run lost them on reload."""
    from agenticlens_frames import load_report
    from agenticlens_frames.errors import InputError

    path = tmp_path / "r.json"
    path.write_text(json.dumps(build_report(analysis, lean=lean)))
    loaded = load_report(path)
    names = ("judge_totals", "judge_noise", "judge_noise_comparisons")
    assert list(loaded.frames()) == list(analysis.frames())  # in the same order too
    for name in names:
        assert name in loaded.frames()
        pd.testing.assert_frame_equal(
            loaded.paired_frames[name], analysis.paired_frames[name], check_exact=True
        )
    # A value that fits no column is refused, naming the block.
    report = json.loads(path.read_text())
    report["judge_noise"]["decomposition"][0]["cases"] = "many"
    path.write_text(json.dumps(report))
    with pytest.raises(InputError, match="unexpected value") as info:
        load_report(path)
    assert info.value.location == "judge_noise"


def test_an_infinite_judge_noise_value_reads_back_as_infinite(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The judge_noise block wrote an infinity null with no entry in infinite_values: a
    loaded report read NaN ("unknown") where the analysis had ±inf. (A judge variance
    overflows for scores near the float limit; set here by hand, as no fixture judge does.)"""
    import dataclasses

    from agenticlens_frames import load_report

    frames = dict(analysis.paired_frames)
    noise = frames["judge_noise"].copy()
    noise.loc[1, "judge_variance"] = math.inf
    comparisons = frames["judge_noise_comparisons"].copy()
    comparisons.loc[0, "ci_half_width"] = -math.inf
    frames.update(judge_noise=noise, judge_noise_comparisons=comparisons)
    block = json.loads(json.dumps(analysis.judge_noise))  # JSON-ready: an infinity is null
    block["decomposition"][1]["judge_variance"] = None
    block["comparisons"][0]["ci_half_width"] = None
    edited = dataclasses.replace(analysis, paired_frames=frames, judge_noise=block)
    report = build_report(edited, lean=True)
    listed = report["agenticlens_frames"]["infinite_values"]
    assert {"path": ["judge_noise", "decomposition", 1, "judge_variance"], "value": "Infinity"} in (
        listed
    )
    assert {
        "path": ["judge_noise", "comparisons", 0, "ci_half_width"],
        "value": "-Infinity",
    } in listed
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    loaded = load_report(path)
    assert loaded.paired_frames["judge_noise"].loc[1, "judge_variance"] == math.inf
    assert loaded.paired_frames["judge_noise_comparisons"].loc[0, "ci_half_width"] == -math.inf
    for name in ("judge_noise", "judge_noise_comparisons"):
        pd.testing.assert_frame_equal(loaded.paired_frames[name], frames[name], check_exact=True)
    # The block itself stays as the analysis keeps it (JSON-ready, null).
    assert loaded.judge_noise == block


def test_unavailable_judge_scores_are_said_with_their_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A judge that never answered fails its cases with value 0: the pass rates read as the
    agent failing, and the console said only "N unavailable", never why nor what it does."""
    from rich.console import Console

    from agenticlens_frames import load_report, write_json_report
    from agenticlens_frames.report.console import print_summary

    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    down = suite["cases"][0]["id"]
    for case in suite["cases"]:
        case["evaluators"] = [{"name": "grader", "threshold": 0.5}]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    registry = EvaluatorRegistry()

    def grader(output, case, trace, config):  # type: ignore[no-untyped-def]
        if case.id == down:
            raise ConnectionError("judge server refused the connection")
        return {"value": 1.0, "metadata": {"judge_latency_ms": 1.0}}

    registry.register_judge("grader", grader, samples=2)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml", evaluators=registry)
    analysis = analyze(run)
    # Independently: one score per attempt with a reply, the first case's unavailable.
    attempts = run.attempts[run.attempts["status"] == "ok"]
    notes = analysis.judge_noise["unavailable_notes"]
    assert len(notes) == attempts["variant_id"].nunique()
    groups = attempts.groupby("variant_id", observed=True)
    for note, (variant, group) in zip(notes, groups, strict=True):
        first = group[group["case_id"] == down].sort_values("trial").iloc[0]
        n_down = (group["case_id"] == down).sum()
        assert note.startswith(
            f"{variant}: {n_down} of {len(group)} judge scores unavailable, no usable "
            f"judgement after every attempt ('grader' {n_down}; first: trial {first['trial']}, "
            f"case {down}: ConnectionError: judge server refused the connection)."
        )
    write_json_report(analysis, tmp_path / "r.json")
    for shown in (analysis, load_report(tmp_path / "r.json")):
        console = Console(record=True, width=600)
        print_summary(shown, console)
        text = console.export_text()
        assert all(f"! {note}" in text for note in notes)


def test_judge_cost_lines_are_in_the_saved_report_the_page_and_the_explorer_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The judges' cost and token lines were printed on the console only: the saved JSON
    report (our own block), the HTML page, the --summary Markdown and the notebook
    explorer said nothing of what the judges cost."""
    from rich.console import Console

    from agenticlens_frames import load_report, write_html_report, write_json_report
    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.summary import summary_markdown

    folder = tmp_path / "exp"
    shutil.copytree(EXAMPLE, folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    for case in suite["cases"]:
        case["evaluators"] = [{"name": "grader", "threshold": 0.5}]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    registry = EvaluatorRegistry()

    def grader(output, case, trace, config):  # type: ignore[no-untyped-def]
        tokens = 100 + len(case.id)
        return {
            "value": 0.75,
            "metadata": {
                "judge_latency_ms": 1.0,
                "judge_cost_usd": tokens * 1e-6,
                "judge_cost_source": "measured",
                "judge_input_tokens": tokens,
                "judge_output_tokens": 7,
            },
        }

    registry.register_judge("grader", grader)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml", evaluators=registry)
    analysis = analyze(run)
    write_json_report(analysis, tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    # Independently, from the package's own per-trial summary.judge blocks.
    expected = []
    for variant in report["variants"]:
        blocks = [
            t["report"]["summary"]["judge"] for t in variant["trials"] if t["report"] is not None
        ]
        scores = sum(b["judge_scores"] for b in blocks)
        cost = math.fsum(b["total_cost_usd"] for b in blocks)
        expected.append(
            f"Judges · {variant['variant_id']}: {scores} score(s), "
            f"{sum(b['unavailable_scores'] for b in blocks)} unavailable, cost ${cost:.6f} "
            f"({sum(b['priced_scores'] for b in blocks)} of {scores} priced), "
            f"{sum(b['input_tokens'] for b in blocks)} input / "
            f"{sum(b['output_tokens'] for b in blocks)} output tokens"
        )
    assert report["agenticlens_frames"]["judge_costs"] == expected
    for shown in (analysis, load_report(tmp_path / "r.json")):
        console = Console(record=True, width=600)
        print_summary(shown, console)
        text = console.export_text()
        assert all(line in text for line in expected)
        write_html_report(shown, tmp_path / "r.html")
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        assert all(f"<li>{line}</li>" in page for line in expected)
        summary = summary_markdown(shown).replace("\\", "")
        assert all(f"- {line}" in summary for line in expected)
    # The notebook explorer had no judge cost lines at all.
    pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets")
    from agenticlens_frames.widgets import Explorer

    explorer = Explorer(analysis)
    assert all(f"<li>{line}</li>" in explorer.judges.value for line in expected)
    assert explorer.judges in explorer.children


def test_the_verdicts_say_what_the_judges_noise_does_to_them(analysis, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The verdicts, the first thing shown, said nothing of the judges: the judge-noise
    notes came after every table on the console. Now a note under the verdicts says the
    intervals include the judges' noise and where it is the larger part."""
    from rich.console import Console

    from agenticlens_frames import load_report, write_html_report, write_json_report
    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.summary import summary_markdown

    write_json_report(analysis, tmp_path / "r.json")
    block = json.loads((tmp_path / "r.json").read_text())["judge_noise"]
    limited = [r for r in block["comparisons"] if r["judge_limits_detection"]]
    assert {r["metric"] for r in limited} == {"noisy"}  # the steady judge never limits
    share = max(r["judge_width_share"] for r in limited)
    candidates = ", ".join(r["candidate_variant_id"] for r in limited)
    expected = (
        "LLM judges graded these cases: where their scores count (the pass decisions, a "
        "judged metric) the intervals come from the cases' observed differences, so they "
        "already include the judges' sampling noise. Judge noise, not "
        f"the agent's, is the larger noise on 'noisy' ({candidates}; up to "
        f"{round(100 * share)}% of the interval's width): see the judge notes."
    )
    for shown in (analysis, load_report(tmp_path / "r.json")):
        console = Console(record=True, width=2000)
        print_summary(shown, console)
        text = console.export_text()
        # under the verdicts, before the variant table
        assert expected in text and text.index(expected) < text.index("Variants")
        write_html_report(shown, tmp_path / "r.html")
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        verdicts = page[page.index("<section id='verdicts'>") :]
        verdicts = verdicts[: verdicts.index("</section>")]
        assert expected.replace("'", "&#x27;") in verdicts
        assert expected in summary_markdown(shown).replace("\\", "")


def test_the_notebook_explorer_says_the_judges_line_under_its_verdicts(analysis) -> None:  # type: ignore[no-untyped-def]
    """The explorer showed the judge-noise notes (its warnings) but not the line the page
    puts under the verdicts."""
    pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets")
    from agenticlens_frames.widgets import Explorer

    shown = Explorer(analysis).verdicts.value
    line = "LLM judges graded these cases: where their scores count"
    assert line in shown.replace("&#x27;", "'")
    # under the verdict table, not only among the warnings above it
    assert shown.index("LLM judges graded") > shown.index("<table")


def _labelled_analysis(folder: Path):  # type: ignore[no-untyped-def]
    """The example graded by a verdict judge ``labeller`` (3 samples) whose cases lean to
    "good" or to "poor", with noise: kappa in (0, modal share)."""
    shutil.copytree(EXAMPLE, folder)
    suite = yaml.safe_load((folder / "suite.yaml").read_text())
    for case in suite["cases"]:
        case["evaluators"] = [{"name": "labeller", "threshold": 0.5}]
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    registry = EvaluatorRegistry()
    calls: dict[str, int] = {}

    def labeller(output, case, trace, config):  # type: ignore[no-untyped-def]
        call = calls[trace.trace_id] = calls.get(trace.trace_id, -1) + 1
        u = _u("label", trace.trace_id, call)
        lean = _u("lean", case.id)
        verdict = "good" if u < 0.1 + 0.85 * lean else ("poor" if u < 0.97 else "partial")
        value = {"good": 1.0, "partial": 0.5, "poor": 0.0}[verdict]
        return {"value": value, "metadata": {"verdict": verdict, "judge_latency_ms": 1.0}}

    registry.register_judge("labeller", labeller, samples=3)
    run = load_experiment(folder / "manifest.yaml", folder / "suite.yaml", evaluators=registry)
    return analyze(run)


def _reference_kappas(report: dict, inter_rater: Any) -> dict[str, float]:
    """variant -> statsmodels' Fleiss kappa of the labeller's sample verdicts recorded in
    the JSON report's trial reports."""
    out = {}
    for variant in report["variants"]:
        rows = [
            score["metadata"]["judge_verdicts"]
            for trial in variant["trials"]
            if trial["report"] is not None
            for case in trial["report"]["cases"]
            for score in case["scores"]
            if score["evaluator"] == "labeller"
        ]
        table, _ = inter_rater.aggregate_raters(np.array(rows))
        out[variant["variant_id"]] = inter_rater.fleiss_kappa(table, method="fleiss")
    return out


def test_verdict_kappa_is_fleiss_kappa_of_the_reports_sample_verdicts(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Agreement was only the modal share, which is high for a judge that says 'good' to
    nearly everything whatever it reads; Fleiss' kappa corrects it for chance. Checked
    against statsmodels on the verdicts the JSON report records."""
    inter_rater = pytest.importorskip(
        "statsmodels.stats.inter_rater", reason="the reference kappa is statsmodels'"
    )
    analysis = _labelled_analysis(tmp_path / "exp")
    report = json.loads(json.dumps(build_report(analysis, lean=False)))
    noise = analysis.paired_frames["judge_noise"].set_index("variant_id")
    for variant_id, expected in _reference_kappas(report, inter_rater).items():
        assert noise.loc[variant_id, "verdict_kappa"] == pytest.approx(expected)
        assert 0 < expected < noise.loc[variant_id, "mean_agreement"]


def test_the_line_under_the_verdicts_states_the_judges_kappa_on_every_surface(
    tmp_path,
) -> None:  # type: ignore[no-untyped-def]
    """verdict_kappa was in the frames and the JSON only: the judges' line under the
    verdicts (console, page, --summary, explorer) now states it, with the variants of the
    lowest and highest value and the samples; the kappa is statsmodels'."""
    inter_rater = pytest.importorskip(
        "statsmodels.stats.inter_rater", reason="the reference kappa is statsmodels'"
    )
    from rich.console import Console

    from agenticlens_frames import load_report, write_html_report, write_json_report
    from agenticlens_frames.report.console import print_summary
    from agenticlens_frames.report.summary import summary_markdown

    analysis = _labelled_analysis(tmp_path / "exp")
    write_json_report(analysis, tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    kappas = _reference_kappas(report, inter_rater)
    (low_v, low), (high_v, high) = (
        min(kappas.items(), key=lambda kv: kv[1]),
        max(kappas.items(), key=lambda kv: kv[1]),
    )
    assert f"{low:.2f}" != f"{high:.2f}"  # the fixture's variants differ
    expected = (
        "Judge agreement beyond chance (Fleiss' κ of the samples' verdicts; 0 = chance, "
        f"1 = perfect): 'labeller' κ = {low:.2f} ({low_v}) to {high:.2f} ({high_v}) "
        "over 3 samples."
    )
    for shown in (analysis, load_report(tmp_path / "r.json")):
        console = Console(record=True, width=2000)
        print_summary(shown, console)
        text = console.export_text()
        assert expected in text and text.index(expected) < text.index("Variants")
        write_html_report(shown, tmp_path / "r.html")
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        verdicts = page[page.index("<section id='verdicts'>") :]
        verdicts = verdicts[: verdicts.index("</section>")]
        assert expected.replace("'", "&#x27;") in verdicts
        assert expected in summary_markdown(shown).replace("\\", "")
    pytest.importorskip("ipywidgets", reason="the explorer needs ipywidgets")
    from agenticlens_frames.widgets import Explorer

    shown = Explorer(analysis).verdicts.value.replace("&#x27;", "'")
    assert expected in shown and shown.index(expected) > shown.index("<table")
