"""A saved report's early-stopping record, rendered by `experiment report`: the stopping
decision first, the fixed-sample verdicts labelled descriptive, the correction the rule
applied named as such (reports written before ``declared_correction`` too)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.errors import InputError
from agenticlens_frames.report.console import print_summary
from agenticlens_frames.report.html import render_html
from agenticlens_frames.report.json_report import build_report
from agenticlens_frames.report.saved import load_report

from ..conftest import EXAMPLE

#: A block as version 0.x wrote it: ``correction`` held the declared correction, though
#: the rule split α by Bonferroni (0.05 / 2 candidates).
OLD_BLOCK = {
    "stop_when": "decided",
    "stopped_early": True,
    "cases_used": 57,
    "cases_planned": 400,
    "attempts_planned": 3600,
    "attempts_run": 520,
    "attempts_saved": 3080,
    "reason": "every candidate decided after 57 of 400 cases",
    "alpha": 0.05,
    "correction": "holm",
    "alpha_per_candidate": 0.025,
    "margin": 0.15,
    "method": "betting confidence sequence (Waudby-Smith & Ramdas 2024)",
    "candidates": [
        {"candidate_variant_id": "a", "decision": "better", "lower": 0.02, "upper": 0.4},
        {"candidate_variant_id": "b", "decision": "within ±δ", "lower": -0.1, "upper": 0.12},
    ],
}


@pytest.fixture(scope="module")
def saved() -> dict:
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    return json.loads(json.dumps(build_report(analyze(run), lean=True)))


def _write(tmp_path: Path, saved: dict, block: object) -> Path:
    report = json.loads(json.dumps(saved))
    report["agenticlens_frames"]["early_stopping"] = block
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def test_a_saved_stop_leads_the_console_and_the_page(tmp_path: Path, saved: dict) -> None:
    analysis = load_report(_write(tmp_path, saved, OLD_BLOCK))
    console = Console(record=True, width=120)
    print_summary(analysis, console)
    text = " ".join(console.export_text().split())
    decided = "Early stopping: every candidate decided after 57 of 400 cases"
    assert text.index(decided) < text.index("Fixed-sample verdicts against")
    assert "descriptive after the early stop" in text
    # The old block's "holm" was the declared correction; the rule applied Bonferroni.
    rule = (
        "Bonferroni across the 2 candidates: α/m = 0.025 each (α = 0.05); the declared "
        "Holm correction applies to the fixed-sample verdicts"
    )
    assert rule in text
    assert "│ b │ within ±15.0 pp │ [-10.0, +12.0] pp │ n/a │" in text
    page = render_html(analysis)
    assert page.index("id='early-stopping'") < page.index("id='verdicts'")
    assert rule in page and "3080 of 3600 planned attempts saved" in page


def test_attempts_that_ran_after_the_decision_are_said_beside_the_saved_ones(
    tmp_path: Path, saved: dict
) -> None:
    """Attempts started before the stop took effect ran and cost: the statement of what the
    stop saved says how many (the console and page said only "N saved")."""
    block = {**OLD_BLOCK, "attempts_run": 513, "attempts_after_decision": 7}
    # By hand: 3600 planned - 513 counted - 7 run after the decision = 3080 never called.
    assert block["attempts_planned"] - 513 - 7 == block["attempts_saved"]
    analysis = load_report(_write(tmp_path, saved, block))
    said = "3080 of 3600 planned attempts saved (7 more had started before the stop, and ran)"
    console = Console(record=True, width=200)
    print_summary(analysis, console)
    assert said in " ".join(console.export_text().split())
    assert said in render_html(analysis)


def test_a_run_the_rule_never_stopped_leads_with_its_statement(tmp_path: Path, saved: dict) -> None:
    """A run the rule watched to the end of its plan leads with the rule's final state and
    labels the fixed-sample verdicts descriptive: leading, they gave the run a second
    chance at a false claim (5.7 % of simulated runs with no true difference at α = 0.05,
    docs/statistics.md §13). They led and the rule's state followed."""
    from agenticlens_frames.early_stopping import WATCHED_NOTE
    from agenticlens_frames.report.summary import summary_markdown

    block = {**OLD_BLOCK, "stopped_early": False, "reason": "not every candidate was decided"}
    analysis = load_report(_write(tmp_path, saved, block))
    console = Console(record=True, width=120)
    print_summary(analysis, console)
    text = " ".join(console.export_text().split())
    title = "Fixed-sample verdicts against"
    assert text.index("Early stopping: not every candidate") < text.index(title)
    assert "descriptive beside the early-stopping rule" in text
    assert " ".join(WATCHED_NOTE.split()) in text
    page = render_html(analysis)
    assert page.index("id='early-stopping'") < page.index("id='verdicts'")
    assert "descriptive beside the early-stopping rule" in page
    summary = summary_markdown(analysis)
    assert summary.index("**Early stopping: not every candidate") < summary.index(title)
    assert WATCHED_NOTE in summary


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"reason": None}, "agenticlens_frames.early_stopping.reason"),
        ({"candidates": [{"candidate_variant_id": "a"}]}, "agenticlens_frames.early_stopping"),
        (
            {"judge_spend_after_decision": {"a": 1}},
            "agenticlens_frames.early_stopping.judge_spend_after_decision",
        ),
        (
            {"judge_spend_after_decision": [{"variant_id": "a", "judge_scores": "4"}]},
            "agenticlens_frames.early_stopping.judge_spend_after_decision[0].judge_scores",
        ),
        (
            # The non-inferiority gate's one-sided bound: a number when present.
            {"candidates": [{**OLD_BLOCK["candidates"][0], "gate_lower": "-0.02"}]},
            "agenticlens_frames.early_stopping.candidates[0].gate_lower",
        ),
    ],
)
def test_a_damaged_block_is_refused_naming_its_place(
    tmp_path: Path, saved: dict, change: dict, where: str
) -> None:
    with pytest.raises(InputError) as info:
        load_report(_write(tmp_path, saved, {**OLD_BLOCK, **change}))
    assert info.value.location.startswith(where)


def _candidate(**change: object) -> dict:
    return {"candidates": [{**OLD_BLOCK["candidates"][0], **change}, OLD_BLOCK["candidates"][1]]}


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"alpha_per_candidate": 2.0}, "alpha_per_candidate"),
        ({"alpha_per_candidate": float("nan")}, "alpha_per_candidate"),
        ({"alpha_per_candidate": True}, "alpha_per_candidate"),
        ({"alpha": 0}, "alpha"),
        (_candidate(lower=float("-inf")), "candidates[0].lower"),
        (_candidate(upper=float("inf")), "candidates[0].upper"),
        (_candidate(lower=True), "candidates[0].lower"),
        (_candidate(gate_lower="-0.1"), "candidates[0].gate_lower"),
        (_candidate(gate_lower=float("inf")), "candidates[0].gate_lower"),
        ({"attempts_run": False}, "attempts_run"),
        # The hull of the values not excluded: empty (both ends null) or lower <= upper.
        (_candidate(lower=0.5), "candidates[0].lower"),
        (_candidate(lower=None), "candidates[0].lower"),
        (_candidate(upper=None), "candidates[0].upper"),
    ],
)
def test_a_level_or_bound_the_gate_would_read_that_is_not_one_is_refused(
    tmp_path: Path, saved: dict, change: dict, where: str
) -> None:
    """A run's gate reads the block's per-candidate α as its bound's level and each
    candidate's lower end as its bound (a run the rule watched): a block whose α is not a
    level, whose end is not a finite number, or that holds a boolean where a number
    belongs (Python's ``True`` is an ``int``) loaded, and was said as a "-100% bound",
    "nan%" or "+nan"; it is refused naming the place, like any other damaged value."""
    with pytest.raises(InputError) as info:
        load_report(_write(tmp_path, saved, {**OLD_BLOCK, **change}))
    assert info.value.location == f"agenticlens_frames.early_stopping.{where}"
    assert "damaged early-stopping record" in info.value.message


def test_a_reversed_interval_is_refused_by_experiment_report(tmp_path: Path, saved: dict) -> None:
    """A candidate's interval [+50, +40] pp (lower above upper) loaded and was said as it
    stood, and a run's gate read +50 pp as its bound: no sequence gives it (its ends are
    the first and last value not excluded). `experiment report` exits 1 naming the file
    and the end."""
    from typer.testing import CliRunner

    from agenticlens_frames.cli import app

    path = _write(tmp_path, saved, {**OLD_BLOCK, **_candidate(lower=0.5)})
    done = CliRunner().invoke(app, ["experiment", "report", str(path)], env={"COLUMNS": "300"})
    said = " ".join(done.output.split())
    assert done.exit_code == 1 and "Unable to read experiment report" in said
    assert (
        "report.json: agenticlens_frames.early_stopping.candidates[0].lower: damaged "
        "early-stopping record: expected an interval end not above `upper`"
    ) in said and "got 0.5" in said


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            _candidate(lower=0.5),
            "candidates[0].lower: damaged early-stopping record: expected an interval end "
            "not above `upper` (finite, or null with `upper` null for an empty sequence), "
            "got 0.5",
        ),
        (
            {"alpha_per_candidate": 2},
            "alpha_per_candidate: damaged early-stopping record: expected a level between 0 "
            "and 1 (exclusive), got 2",
        ),
        (
            _candidate(gate_lower="x"),
            "candidates[0].gate_lower: damaged early-stopping record: expected an interval "
            "end (finite, or null for an empty sequence), got 'x'",
        ),
        (
            {"judge_spend_after_decision": [{"variant_id": "a", "judge_scores": "4"}]},
            "judge_spend_after_decision[0].judge_scores: damaged early-stopping record: "
            "expected a whole number, got '4'",
        ),
        (
            {"reason": None},
            "reason: damaged early-stopping record: expected text, got None",
        ),
        # A long value is clipped: 60 characters, the cut marked.
        (
            {"candidates": "c" * 500},
            "candidates: damaged early-stopping record: expected a list of objects, got '"
            + "c" * 58
            + "…",
        ),
    ],
)
def test_a_damaged_block_is_refused_saying_what_the_value_must_be(
    tmp_path: Path, saved: dict, change: dict, words: str
) -> None:
    """The refusal named the place only ("damaged early-stopping record"), not what was
    wrong with the value there: it now says what the value must be and what it is."""
    with pytest.raises(InputError) as info:
        load_report(_write(tmp_path, saved, {**OLD_BLOCK, **change}))
    assert words in str(info.value)
    assert "c" * 60 not in str(info.value)


def test_a_missing_key_of_the_block_is_said_missing(tmp_path: Path, saved: dict) -> None:
    block = {k: v for k, v in OLD_BLOCK.items() if k != "attempts_run"}
    with pytest.raises(InputError) as info:
        load_report(_write(tmp_path, saved, block))
    assert (
        "attempts_run: damaged early-stopping record: expected a whole number, got nothing "
        "(the key is missing)" in str(info.value)
    )


def test_a_gate_bound_above_the_two_sided_upper_end_still_loads(
    tmp_path: Path, saved: dict
) -> None:
    """``gate_lower`` is the end of another sequence (one-sided, at α unsplit): it can pass
    the two-sided upper end at α/m with both non-empty, so it is not refused. By hand: five
    cases of +0.6 then 92 of -0.6, the two-sided sequence at α = 0.025 and the one-sided at
    0.05 (as the runner feeds them) end with the one-sided lower end above the two-sided
    upper end."""
    from agenticlens_frames.stats_sequential import BettingConfidenceSequence

    two = BettingConfidenceSequence(alpha=0.025)
    one = BettingConfidenceSequence(alpha=0.05, one_sided=True)
    for x in [0.6] * 5 + [-0.6] * 92:
        two.update([x])
        one.update([x])
    (lower,), (upper,) = two.interval()
    gate_lower = float(one.interval()[0][0])
    assert lower <= upper < gate_lower
    block = {**OLD_BLOCK, **_candidate(lower=lower, upper=upper, gate_lower=gate_lower)}
    stopping = load_report(_write(tmp_path, saved, block)).extras["early_stopping"]
    assert stopping["candidates"][0]["gate_lower"] == gate_lower


def test_the_explorer_leads_with_the_stop_too(tmp_path: Path, saved: dict) -> None:
    """The explorer's verdict panel follows the console and the page: after an early stop
    the decision first and the verdicts labelled descriptive, and so at the end of a run
    the rule watched but never stopped; without the rule verdicts first."""
    from agenticlens_frames.widgets import Explorer

    stopped = Explorer(load_report(_write(tmp_path, saved, OLD_BLOCK))).verdicts.value
    # Titled in the console's and the page's words (it said "(case-level; descriptive)").
    title = (
        "Fixed-sample verdicts against the baseline (case-level) — descriptive after the early stop"
    )
    assert stopped.index("id='early-stopping'") < stopped.index(title)
    watched = {**OLD_BLOCK, "stopped_early": False, "reason": "not every candidate was decided"}
    panel = Explorer(load_report(_write(tmp_path, saved, watched))).verdicts.value
    title = title.replace("after the early stop", "beside the early-stopping rule")
    assert panel.index("id='early-stopping'") < panel.index(title)
    (tmp_path / "plain.json").write_text(json.dumps(saved), encoding="utf-8")
    plain = Explorer(load_report(tmp_path / "plain.json")).verdicts.value
    assert "early-stopping" not in plain and "Verdicts against the baseline" in plain


def test_the_notebook_display_leads_with_the_stop_too(tmp_path: Path, saved: dict) -> None:
    """The notebook's display (its HTML and its one line) showed the fixed-sample verdicts
    as the run's verdicts and said nothing of the early stop: it now leads with the
    stopping decision, as the page does, and titles the verdicts descriptive."""

    stopped = load_report(_write(tmp_path, saved, OLD_BLOCK))
    shown = html.unescape(stopped._repr_html_())
    decided = "Early stopping: every candidate decided after 57 of 400 cases"
    title = (
        "Fixed-sample verdicts against the baseline (case-level) — descriptive after the early stop"
    )
    assert (
        shown.index(decided)
        < shown.index(title)
        < shown.index("<table class='verdicts'><tr><th>verdict")
    )
    assert "3080 of 3600 planned attempts saved" in shown
    line = repr(stopped)
    assert line.index("early_stop='every candidate decided after 57 of 400 cases'") < line.index(
        "verdicts="
    )
    watched = {**OLD_BLOCK, "stopped_early": False, "reason": "not every candidate was decided"}
    neither = load_report(_write(tmp_path, saved, watched))
    shown = html.unescape(neither._repr_html_())
    title = title.replace("after the early stop", "beside the early-stopping rule")
    assert shown.index("Early stopping: not every candidate was decided") < shown.index(title)
    line = repr(neither)
    assert line.index("early_stop='not every candidate was decided'") < line.index("verdicts=")


def test_a_saved_stop_leads_the_markdown_summary(tmp_path: Path, saved: dict) -> None:
    from agenticlens_frames.early_stopping import DESCRIPTIVE_NOTE
    from agenticlens_frames.report.summary import summary_markdown

    text = summary_markdown(load_report(_write(tmp_path, saved, OLD_BLOCK)))
    decided = "**Early stopping: every candidate decided after 57 of 400 cases.**"
    assert text.index(decided) < text.index("Fixed-sample verdicts against baseline")
    assert "| b | **within ±15.0 pp** | [-10.0, +12.0] pp | n/a |" in text
    assert "3080 of 3600 planned attempts saved" in text
    # The console's and the page's title (it lacked "Fixed-sample", the words in brackets).
    assert "— descriptive after the early stop." in text
    assert text.index(DESCRIPTIVE_NOTE) > text.index("| Candidate | Dimension |")


#: A block of a run whose sequence ran at the cluster level (declared clusters).
CLUSTER_BLOCK = {
    **OLD_BLOCK,
    "correction": "bonferroni",
    "declared_correction": "holm",
    "cases_used": 82,
    "cases_planned": 120,
    "reason": "every candidate decided after 41 of 60 clusters (82 of 120 cases)",
    "unit": "cluster",
    "cluster": "topic",
    "clusters_used": 41,
    "clusters_planned": 60,
    "candidates": [
        {**c, "paired_cases": 82, "paired_clusters": 41} for c in OLD_BLOCK["candidates"]
    ],
}
CLUSTER_SAID = (
    "The sequence ran at the cluster level (metadata field 'topic'): one observation per "
    "completed cluster, the mean difference over its paired cases, every cluster weighing "
    "the same; 41 of 60 clusters used"
)


def test_a_saved_cluster_level_stop_says_so_on_every_surface(tmp_path: Path, saved: dict) -> None:
    from agenticlens_frames.report.summary import summary_markdown
    from agenticlens_frames.widgets import Explorer

    analysis = load_report(_write(tmp_path, saved, CLUSTER_BLOCK))
    console = Console(record=True, width=120)
    print_summary(analysis, console)
    text = " ".join(console.export_text().split())
    assert CLUSTER_SAID in text and "averaged within each cluster of cases" in text
    assert "│ a │ better │ [+2.0, +40.0] pp │ 82 (41 clusters) │" in text
    page = " ".join(html.unescape(render_html(analysis)).split())
    assert CLUSTER_SAID in page and "<td>82 (41 clusters)</td>" in page
    markdown = summary_markdown(analysis)
    assert CLUSTER_SAID in markdown and "| 82 (41 clusters) |" in markdown
    panel = " ".join(html.unescape(Explorer(analysis).verdicts.value).split())
    assert CLUSTER_SAID in panel


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"clusters_used": "41"}, "agenticlens_frames.early_stopping.clusters_used"),
        ({"cluster": None}, "agenticlens_frames.early_stopping.cluster"),
        (
            {"candidates": [{**OLD_BLOCK["candidates"][0], "paired_clusters": 4.5}]},
            "agenticlens_frames.early_stopping.candidates[0].paired_clusters",
        ),
    ],
)
def test_a_damaged_cluster_block_is_refused_naming_its_place(
    tmp_path: Path, saved: dict, change: dict, where: str
) -> None:
    with pytest.raises(InputError) as info:
        load_report(_write(tmp_path, saved, {**CLUSTER_BLOCK, **change}))
    assert info.value.location == where


def test_a_python_run_stopped_early_leads_its_reports(tmp_path: Path) -> None:
    """In Python, the analysis of a run stopped early (``analyze(result)``, or of its
    folder loaded again) had no stopping block: its JSON report and page presented the
    fixed-sample verdicts as the run's. They now record the block as the run returned it
    and lead with the stop, as `experiment run` does."""
    from agenticlens_frames import run_experiment
    from agenticlens_frames.report.json_report import write_json_report
    from agenticlens_frames.runner.stopping import StopRule

    from ..runner.test_stopping import _experiment

    manifest, suite = _experiment(tmp_path, comparisons={"correction": "holm"})
    folder = tmp_path / "run"
    result = run_experiment(
        manifest, suite, progress=False, run_dir=folder, stop_when="decided", stop_rule=StopRule()
    )
    assert result.stopping["stopped_early"]
    loaded = load_experiment(manifest, suite, run_dir=folder)
    for name, analysis in (("result", analyze(result)), ("loaded", analyze(loaded))):
        path = write_json_report(analysis, tmp_path / f"{name}.json")
        report = json.loads(path.read_text(encoding="utf-8"))
        assert report["agenticlens_frames"]["early_stopping"] == result.stopping, name
        page = render_html(analysis)
        assert page.index("id='early-stopping'") < page.index("id='verdicts'"), name
        assert "descriptive after the early stop" in page, name


def test_the_paired_forest_of_a_stopped_run_says_its_marks_are_descriptive(
    tmp_path: Path, saved: dict
) -> None:
    # The forest coloured fixed-sample calls green and red after an early stop with nothing
    # saying they are descriptive: in a notebook (viz.paired_forest(analysis), figures())
    # and the explorer it stood without the stopping decision the other surfaces lead with.
    from agenticlens_frames import viz
    from agenticlens_frames.widgets import explore

    stopped = load_report(_write(tmp_path, saved, OLD_BLOCK))
    unstopped = load_report(_write(tmp_path, saved, {**OLD_BLOCK, "stopped_early": False}))
    note = "descriptive after the early stop: its stopping decision is the inferential statement"

    def first_line(fig) -> str:
        return fig.layout.title.subtitle.text.split("<br>")[0]

    assert first_line(viz.paired_forest(stopped)) == note
    assert first_line(viz.figures(stopped)["paired"]) == note
    explorer = explore(stopped)
    assert first_line(explorer.paired) == note
    explorer.factor_filters["prompt"].value = ("v2",)  # redrawn for the variants shown
    assert first_line(explorer.paired) == note
    # A run the rule watched but never stopped: its statement leads too (§13).
    watched = "descriptive beside the early-stopping rule: its statement is the inferential "
    for figure in (viz.paired_forest(unstopped), viz.figures(unstopped)["paired"]):
        assert first_line(figure).startswith(watched)
    assert first_line(explore(unstopped).paired).startswith(watched)
    (tmp_path / "plain.json").write_text(json.dumps(saved), encoding="utf-8")
    plain = load_report(tmp_path / "plain.json")
    assert first_line(viz.paired_forest(plain)).startswith("95% intervals; significance")
    # The marks and their key are the same: only the note is added.
    rest = viz.paired_forest(stopped).layout.title.subtitle.text.split("<br>", 1)[1]
    assert rest == viz.paired_forest(plain).layout.title.subtitle.text


@pytest.mark.parametrize("stopped", [True, False])
def test_the_factor_effects_of_a_watched_run_are_descriptive_too(
    tmp_path: Path, saved: dict, stopped: bool
) -> None:
    """The factor effects are fixed-sample numbers like the verdicts: in a run the rule
    watched every surface titles them descriptive, as it titles the verdicts."""
    from agenticlens_frames.report.summary import summary_markdown

    block = {**OLD_BLOCK, "stopped_early": stopped}
    analysis = load_report(_write(tmp_path, saved, block))
    after = "after the early stop" if stopped else "beside the early-stopping rule"
    title = f"Which factor did it (fixed-sample) — descriptive {after}"
    console = Console(record=True, width=200)
    print_summary(analysis, console)
    assert title in console.export_text()
    assert title in summary_markdown(analysis)
    assert f"<h2>{title}</h2>" in render_html(analysis)


def test_an_empty_sequence_is_said_empty_and_gates_nothing(tmp_path: Path, saved: dict) -> None:
    """A betting sequence can exclude every value (the data fit no difference; with
    exchangeable cases at most with probability α) and then stays empty: its ends are NaN,
    null in the report. Such a saved block was refused at load, and the gate of a run
    holding one in memory refused its own block; now the interval is said empty and the
    pass-rate gate fails for want of a bound, saying so."""
    from agenticlens_frames.paired.gate import noninferiority_gate

    empty = {"lower": None, "upper": None, "gate_lower": None}
    block = {**OLD_BLOCK, **_candidate(**empty), "alpha": 0.05}
    analysis = load_report(_write(tmp_path, saved, block))
    console = Console(record=True, width=200)
    print_summary(analysis, console)
    assert "empty (no difference fits the data; no claim)" in console.export_text()
    frame = pd.DataFrame(
        {"candidate_variant_id": ["a"], "dimension": ["quality"], "evaluator": ["passed"],
         "higher_is_better": [True], "unit": ["proportion"], "paired_items": [40],
         "n_clusters": [40], "mean_difference": [0.05], "standard_deviation": [0.1],
         "standard_error": [0.016], "df": [39.0]}
    )  # fmt: skip
    in_memory = {**block, **_candidate(**{k: float("nan") for k in empty})}
    for stopping in (block, in_memory):
        row = noninferiority_gate(frame, margin=0.1, stopping=stopping).loc[0]
        assert not bool(row["passed"]) and row["reason"].startswith(
            "no anytime-valid bound: the confidence sequence is empty"
        )


def test_a_stops_verdict_caption_still_says_what_the_numbers_are(
    tmp_path: Path, saved: dict
) -> None:
    """After an early stop the verdict table's caption gains the descriptive note; it keeps
    what the difference, the test and the detectable change are, before that note."""
    from agenticlens_frames.early_stopping import DESCRIPTIVE_NOTE

    analysis = load_report(_write(tmp_path, saved, OLD_BLOCK))
    console = Console(record=True, width=120, color_system=None)
    print_summary(analysis, console)
    text = " ".join(console.export_text().split())
    caption = text.index("Each candidate minus the baseline, case by case over the cases")
    note = text.index(" ".join(DESCRIPTIVE_NOTE.split()))
    assert text.index("Fixed-sample verdicts against") < caption < note < text.index("Variants")
