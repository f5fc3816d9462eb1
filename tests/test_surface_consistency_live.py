"""Every surface of an early-stopped live run states the same stopping decision.

A small live run (python targets, ``--stop-when decided``; the agents of
``tests/runner/test_stopping.py``) is run once from the command line with every output,
with and without a declared correction, and with its cases graded by the fake LLM judges
of ``tests/judge_fakes.py`` too, and each surface is read back:

* the console of ``experiment run`` and of ``experiment report`` on the saved JSON, and a
  narrow console (each verdict as its statement),
* the ``--summary`` Markdown of both commands,
* the HTML page, the notebook explorer's verdicts (from the saved report),
* the JSON report's ``agenticlens_frames.early_stopping`` block (the reference),
* the exit status of ``--fail-on-regression`` (it follows the stopping decision).

After an early stop every surface must lead with the stopping decision (its heading
before the verdicts' heading), title the fixed-sample verdicts "descriptive after the
early stop", and state the attempts saved in the same words, which are written here from
the block's counts (planned = cases × variants × trials). The fixed-sample rows shown
under that title are read back with test_surface_consistency's parsers and checked
against the JSON report's ``verdicts`` rows (the same rows in the same order, the same
difference, interval, p, verdict and smallest detectable change at the displayed
precision), as for a run that did not stop. With judges, the judges' line (written here
from the JSON's ``judge_noise`` block) is under those verdicts on every surface, and their
cost lines are the package's per-trial judge blocks, each followed by what the judges of
the attempts past the decision point did and cost (not in the tables, but paid for):
counted here from the fake judges' own calls (``judge_fakes.CALLS``) and the journal.
"""

from __future__ import annotations

import html
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from agenticlens_frames import load_report
from agenticlens_frames.report.console import print_summary

from . import judge_fakes
from .runner.test_stopping import _experiment as stopping_experiment
from .test_surface_consistency import (
    _check_row,
    _invoke,
    _key,
    _unescape_md,
    check_json_rows,
    console_rows,
    html_rows,
    judge_cost_lines,
    judge_line,
    narrow_statements,
    statement_row,
    summary_rows,
)

#: TRIALS is the trial_count of test_stopping._experiment, which makes the experiment.
CASES, TRIALS = 120, 2
DESCRIPTIVE = "descriptive after the early stop"


@dataclass
class Live:
    """What each surface of one early-stopped run said."""

    exit_code: int
    stderr: str
    #: The notebook's plain display (one line).
    plain: str
    block: dict[str, Any]
    surfaces: dict[str, str]
    #: The JSON report (its ``verdicts`` rows are the fixed-sample reference).
    report: dict[str, Any]
    #: The explorer's judges section (its cost lines); "" without judges.
    judges: str
    #: The fake judges' calls during the run (judge_fakes.CALLS).
    calls: list[tuple[str, str, Any, Any, dict[str, Any] | None]]
    #: The run folder's journaled ``attempt`` records.
    attempts: list[dict[str, Any]]


#: ``--evaluators`` of a judged run: the offline fake LLM judges of tests/judge_fakes.py.
JUDGES = "tests.judge_fakes:build_registry"


def _experiment(
    folder: Path, variants: tuple[str, ...], declare: bool, judged: bool = False
) -> tuple[Path, Path]:
    folder.mkdir(parents=True)
    # (a rule over several candidates needs a declared correction: the manifest's, when
    # the command line names none)
    declared = {"comparisons": {"correction": "bonferroni"}} if declare else {}
    manifest, suite = stopping_experiment(folder, cases=CASES, variants=variants, **declared)
    if judged:
        # Every case also graded by two fake LLM judges (test_surface_consistency's
        # "llm-judges" edge case): one labelling verdicts over three samples (Fleiss' κ),
        # retried, priced, sometimes unavailable; a panel whose third sample may refuse.
        # Their thresholds fail about a fifth of the attempts the keyword passes: noisy
        # enough to count, not so noisy that the rule cannot decide within the plan.
        document = yaml.safe_load(suite.read_text(encoding="utf-8"))
        for case in document["cases"]:
            case["evaluators"] = [
                {"name": "helpfulness_judge", "threshold": 0.3},
                {"name": "strict_panel", "threshold": 0.3},
            ]
        suite.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return manifest, suite


def render(
    folder: Path, correction: str | None, variants: tuple[str, ...], judged: bool = False
) -> Live:
    """Run the live experiment with every output and re-render the saved report;
    ``judged``: its cases are graded by the fake LLM judges too."""
    from agenticlens_frames.widgets import explore

    manifest, suite = _experiment(folder, variants, correction is None, judged)
    out = folder / "out"
    before = len(judge_fakes.CALLS)
    done = _invoke(
        [
            *("experiment", "run", str(manifest), str(suite)),
            *("--save", str(out / "r.json"), "--html", str(out / "r.html")),
            *("--summary", str(out / "s.md"), "--run-dir", str(folder / "run")),
            *("--stop-when", "decided"),
            "--fail-on-regression",
            *(("--correction", correction) if correction else ()),
            *(("--evaluators", JUDGES) if judged else ()),
        ]
    )
    assert done.exit_code in (0, 4), (done.output, done.exception)
    calls = judge_fakes.CALLS[before:]
    del judge_fakes.CALLS[before:]  # (the traces they hold are let go)
    attempts = [
        record
        for segment in sorted((folder / "run").rglob("*.jsonl"))
        for line in segment.read_text(encoding="utf-8").splitlines()
        if (record := json.loads(line)).get("type") == "attempt"
    ]
    again = _invoke(["experiment", "report", str(out / "r.json"), "--summary", str(out / "s2.md")])
    assert again.exit_code == 0, again.output
    saved = load_report(out / "r.json")
    narrow = Console(width=60, file=io.StringIO(), no_color=True)
    print_summary(saved, narrow)
    report = json.loads((out / "r.json").read_text(encoding="utf-8"))
    explorer = explore(saved)
    return Live(
        exit_code=done.exit_code,
        stderr=done.stderr,
        plain=repr(saved),
        block=report["agenticlens_frames"]["early_stopping"],
        report=report,
        judges=html.unescape(explorer.judges.value),
        calls=calls,
        attempts=attempts,
        surfaces={
            "console (experiment run)": done.stdout,
            "console (experiment report)": again.stdout,
            "narrow console": narrow.file.getvalue(),  # type: ignore[attr-defined]
            "summary": _unescape_md((out / "s.md").read_text(encoding="utf-8")),
            "summary (experiment report)": _unescape_md(
                (out / "s2.md").read_text(encoding="utf-8")
            ),
            "HTML page": html.unescape((out / "r.html").read_text(encoding="utf-8")),
            "explorer widget": html.unescape(explorer.verdicts.value),
            "notebook display": html.unescape(saved._repr_html_()),
        },
    )


def attempts_saved(block: dict[str, Any], variants: int) -> str:
    """The attempts the stop saved, from the block's counts (docs: early stopping)."""
    planned = CASES * variants * TRIALS
    assert block["attempts_planned"] == planned
    after = int(block.get("attempts_after_decision") or 0)
    saved = planned - block["attempts_run"] - after
    assert block["attempts_saved"] == saved
    text = f"{saved} of {planned} planned attempts saved"
    return text + (f" ({after} more had started before the stop, and ran)" if after else "")


def _title_at(text: str) -> int:
    """Where the fixed-sample verdicts' title ends its words in ``text`` (after an early
    stop, or at the end of a run the rule watched but never stopped)."""
    m = re.search(
        r"descriptive\s+(after\s+the\s+early\s+stop|beside\s+the\s+early-stopping\s+rule)", text
    )
    assert m, text[:400]
    return m.start()


def _after_title(text: str) -> str:
    """``text`` from the fixed-sample verdicts' title on: the stopping decision's table,
    which comes first, is not one of the verdict rows."""
    return text[_title_at(text) :]


def display_rows(text: str) -> list[dict[str, Any]]:
    """The notebook display's fixed-sample verdicts (one statement a row, in a cell beside
    its verdict word) as rows."""
    return [
        statement_row(m[1])
        for m in re.finditer(r"<tr><td class='[^']*'>[^<]*</td><td>([^<]*)</td></tr>", text)
    ]


def fixed_sample_rows(live: Live) -> dict[str, list[dict[str, Any]]]:
    """The fixed-sample verdict rows each surface shows under the stopping decision."""
    s = {name: _after_title(text) for name, text in live.surfaces.items()}
    return {
        "console (experiment run)": console_rows(s["console (experiment run)"]),
        "console (experiment report)": console_rows(s["console (experiment report)"]),
        "narrow console": [statement_row(x) for x in narrow_statements(s["narrow console"])],
        "summary": summary_rows(s["summary"]),
        "summary (experiment report)": summary_rows(s["summary (experiment report)"]),
        "HTML page": html_rows(s["HTML page"]),
        "explorer widget": html_rows(s["explorer widget"]),
        "notebook display": display_rows(s["notebook display"]),
    }


def check_judges(live: Live) -> None:
    """The judges' line and cost lines after an early stop, the same on every surface: the
    line under the fixed-sample verdicts (after the stopping decision, before the variant
    table), written here from the JSON's ``judge_noise`` block; the cost lines from the
    package's per-trial judge blocks (test_surface_consistency's readings)."""
    line = judge_line(live.report["judge_noise"])
    assert "Fleiss' κ" in line
    for surface, text in live.surfaces.items():
        flat = " ".join(text.split())
        assert line in flat, (surface, line)
        at = flat.index(line)
        assert _title_at(flat) < at, surface
        if "Variants" in flat:
            assert at < flat.index("Variants"), surface
    costs = [
        f"{line}; {after}" if after else line
        for line, after in zip(judge_cost_lines(live.report), after_stop(live), strict=True)
    ]
    assert live.report["agenticlens_frames"]["judge_costs"] == costs
    # (the explorer shows them in its judges section, not beside its verdicts)
    cost_surfaces = {
        k: v for k, v in live.surfaces.items() if k not in ("notebook display", "explorer widget")
    }
    for surface, text in {**cost_surfaces, "explorer (judges)": live.judges}.items():
        flat = " ".join(text.split())
        for cost in costs:
            assert cost in flat, (surface, cost)


#: The samples each judge of the judged run takes (judge_fakes.JUDGES): an evaluation with
#: fewer replies is unavailable.
SAMPLES = {"helpfulness_judge": 3, "strict_panel": 3}


def after_stop(live: Live) -> list[str]:
    """Each variant's judge spend past the decision point, as the cost lines end: the
    attempts the tables leave out are read from the journal, and what their judges did
    and cost from the fake judges' own calls, every answered call once."""
    block = live.block
    used = {
        c["case_id"]
        for v in live.report["variants"]
        for t in v["trials"]
        if t["report"] is not None
        for c in t["report"]["cases"]
    }
    assert len(used) == block["cases_used"]
    after = [r for r in live.attempts if r["case"] not in used]
    assert len(after) == block["attempts_after_decision"]
    # Per variant: its attempts there, each graded by both judges (none skipped).
    rows = block.get("judge_spend_after_decision", [])
    if not after:
        # How many attempts had started when the stop took effect is timing (the run keeps
        # several in flight, so some nearly always had): none, and there is nothing to add.
        assert rows == [] and not [c for c in live.calls if c[1] not in used]
        return [""] * len(live.report["variants"])
    per_variant = {v["variant_id"]: 0 for v in live.report["variants"]}
    for record in after:
        per_variant[record["variant"]] += 1
    assert {r["variant_id"]: r["attempts"] for r in rows} == {
        v: n for v, n in per_variant.items() if n
    }
    for row in rows:
        assert row["judge_scores"] == len(SAMPLES) * row["attempts"], row
    # Over the variants: the fake judges' calls on those cases (the judge's usage, of a
    # reply or of a billed failure), one evaluation per judge and trace.
    calls = [c for c in live.calls if c[1] not in used]
    assert {c[0] for c in calls} == set(SAMPLES)
    replies: dict[tuple[str, str, int], int] = {}
    spent = 0.0
    tokens = [0, 0]
    for name, case_id, trace, reply, usage in calls:
        key = (name, case_id, id(trace))
        replies[key] = replies.get(key, 0) + (reply is not None)
        meta = (reply or {}).get("metadata", {}) if reply is not None else (usage or {})
        spent += meta.get("judge_cost_usd", 0.0)
        tokens[0] += meta.get("judge_input_tokens", 0)
        tokens[1] += meta.get("judge_output_tokens", 0)
    assert len(replies) == sum(r["judge_scores"] for r in rows)
    unavailable = sum(n < SAMPLES[key[0]] for key, n in replies.items())
    assert sum(r["unavailable_scores"] for r in rows) == unavailable
    assert sum(r["spent_cost_usd"] for r in rows) == pytest.approx(spent)
    assert spent > 0
    assert [sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows)] == tokens
    by_variant = {r["variant_id"]: r for r in rows}
    return [
        "after the stop: {judge_scores} more score(s), {unavailable_scores} unavailable, "
        "${spent_cost_usd:.6f}, {input_tokens} / {output_tokens} tokens, not analysed".format(
            **by_variant[v["variant_id"]]
        )
        if v["variant_id"] in by_variant
        else ""  # (none of its attempts had started when the stop took effect)
        for v in live.report["variants"]
    ]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("live")


#: (--correction, variants): the correction on the command line, or (None) the manifest's.
#: judged: the cases are graded by the fake LLM judges too.
RUNS = [
    ("holm", ("base", "better", "worse"), False),
    (None, ("base", "worse", "better"), False),
    ("holm", ("base", "better", "worse"), True),
]


@pytest.mark.parametrize(
    ("correction", "variants", "judged"), RUNS, ids=["option", "manifest", "llm-judges"]
)
def test_every_surface_leads_with_the_stopping_decision(
    root: Path, correction: str | None, variants: tuple[str, ...], judged: bool
) -> None:
    live = render(root / f"{correction}-{judged}", correction, variants, judged)
    block = live.block
    assert block["stopped_early"] and block["cases_used"] < CASES
    decisions = {c["candidate_variant_id"]: c["decision"] for c in block["candidates"]}
    assert decisions == {v: v for v in variants[1:]}
    heading = f"Early stopping: {block['reason']}"
    said = attempts_saved(block, len(variants))
    verdicts = "Verdicts against"
    wrong = []
    for surface, text in live.surfaces.items():
        flat = " ".join(text.split())
        # The stopping decision leads: its heading before the verdicts' heading.
        assert heading in flat, (surface, heading)
        first = flat.lower().index(verdicts.lower())
        assert flat.index(heading) < first, surface
        # The fixed-sample verdicts are titled descriptive, in their heading.
        title = flat[first - len("Fixed-sample ") : first + 400]
        if not title.startswith("Fixed-sample ") or DESCRIPTIVE not in title:
            wrong.append((surface, title))
        # The attempts saved: the same words everywhere.
        assert said in flat, (surface, said)
        # Each candidate's decision beside its name, after the heading.
        for candidate, decision in decisions.items():
            assert candidate in flat[flat.index(heading) : first], (surface, candidate)
            assert decision in flat[flat.index(heading) : first], (surface, decision)
    assert not wrong, [w[0] for w in wrong]
    if judged:
        check_judges(live)
    # The fixed-sample rows after the stop: the JSON's, in its order, on every surface;
    # the one-line display names the stop before the (descriptive) verdicts' tally.
    _check_descriptive_rows(live, block)
    # The gate follows the decision: "worse" was decided worse.
    assert live.exit_code == 4
    assert "Regression against the baseline (early-stopping decision): worse" in live.stderr


def _check_descriptive_rows(live, block: dict) -> None:
    """A watched run's fixed-sample rows are the JSON's, in its order, on every surface,
    and its one-line display names the rule's state before the verdicts' tally."""
    refs = live.report["verdicts"]["rows"]
    check_json_rows(refs, live.report["verdicts"]["declared"])
    by_key = {(r["candidate_variant_id"], r["dimension"]): r for r in refs}
    assert refs
    for surface, rows in fixed_sample_rows(live).items():
        assert [_key(r) for r in rows] == list(by_key), surface
        for row in rows:
            _check_row(row, by_key[_key(row)], surface)
    stop = f"early_stop={block['reason']!r}, "
    assert stop in live.plain and live.plain.index(stop) < live.plain.index("verdicts="), live.plain


def test_a_resumed_stopped_run_counts_the_same_judge_spend(tmp_path: Path) -> None:
    """The judge spend past the decision point is counted from the journal, every
    session's: the resume of a decided run (which calls nothing) says the same."""
    from agenticlens_frames import run_experiment

    manifest, suite = _experiment(tmp_path / "x", ("base", "better", "worse"), True, True)
    kwargs: dict[str, Any] = {"progress": False, "stop_when": "decided"}
    kwargs.update(run_dir=tmp_path / "run", evaluators=judge_fakes.build_registry())
    first = run_experiment(manifest, suite, **kwargs)
    spend = first.stopping.get("judge_spend_after_decision", [])
    # (none when no attempt had started at the stop: timing; the run keeps several in flight)
    assert sum(r["attempts"] for r in spend) == first.stopping["attempts_after_decision"]
    kwargs["evaluators"] = judge_fakes.build_registry()
    before = len(judge_fakes.CALLS)
    again = run_experiment(manifest, suite, **kwargs)
    assert again.attempted == 0 and len(judge_fakes.CALLS) == before  # nothing called
    assert again.stopping.get("judge_spend_after_decision", []) == spend


def test_a_run_the_rule_never_stopped_leads_with_its_final_state(root: Path) -> None:
    """A run the rule watched to the end of its plan (base2 never decided, so the run went
    on; worse decided worse) leads with the rule's final state on every surface, titles
    the fixed-sample verdicts "descriptive beside the early-stopping rule" and gates on the
    decision: leading and gating, those verdicts gave the run a second chance at a false
    claim (docs/statistics.md §13). They led and gated, the rule's state after them."""
    variants = ("base", "base2", "worse")
    live = render(root / "watched", "holm", variants)
    block = live.block
    assert not block["stopped_early"] and block["cases_used"] == CASES
    decisions = {c["candidate_variant_id"]: c["decision"] for c in block["candidates"]}
    assert decisions == {"base2": None, "worse": "worse"}
    heading = f"Early stopping: {block['reason']}"
    planned = CASES * len(variants) * TRIALS
    assert block["attempts_run"] == planned
    said = f"{planned} of {planned} planned attempts run"
    for surface, text in live.surfaces.items():
        flat = " ".join(text.split())
        assert heading in flat, (surface, heading)
        first = flat.lower().index("verdicts against")
        assert flat.index(heading) < first, surface
        title = flat[first - len("Fixed-sample ") : first + 400]
        assert title.startswith("Fixed-sample "), (surface, title)
        assert "descriptive beside the early-stopping rule" in title, (surface, title)
        assert "descriptive after the early stop" not in flat, surface
        assert said in flat, (surface, said)
        for candidate in decisions:
            assert candidate in flat[flat.index(heading) : first], (surface, candidate)
        if surface != "narrow console":  # (where the table folds it over two lines)
            assert "not decided" in flat[flat.index(heading) : first], surface
    _check_descriptive_rows(live, block)
    # The gate follows the rule's decision, not the descriptive table.
    assert live.exit_code == 4
    assert "Regression against the baseline (early-stopping decision): worse" in live.stderr
