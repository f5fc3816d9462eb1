"""The decision as a GitHub-flavoured Markdown block, for a CI job's summary page.

``experiment run --summary PATH`` and ``experiment report --summary PATH`` append
:func:`summary_markdown` to ``PATH`` (GitHub's ``$GITHUB_STEP_SUMMARY`` is one file that
every step of a job appends to). In order: the experiment's name and one line per
candidate (its verdicts as a sentence, :func:`~agenticlens_frames.paired.headline
.candidate_headlines`), or, without a declared correction, that there are no verdicts;
how the gates ended (``--fail-on-regression``, non-inferiority, a variant without a
completed trial), in stderr's words; the warnings and what was not compared; the
verdict table; then, folded, the variant table and AgenticLens's compatible numbers,
labelled as treating attempts as independent. In a run the early-stopping rule watched
(stopped early or to the end of its plan) the stopping decision comes first and the
verdicts are labelled descriptive, as on the console.

Every user-controlled string (names, ids, messages) has its control characters removed
and its Markdown escaped; known secrets are masked.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._docs import markdown_escape, markdown_table
from ..analysis import (
    ExperimentAnalysis,
    headline_warnings,
    judge_cost_lines,
    judge_noise_notes,
    judge_verdict_note,
    target_failure_warnings,
)
from .console import (
    COMPAT_HEADER,
    COMPAT_TITLE,
    VARIANT_HEADER,
    compat_caption,
    compat_cells,
    factor_cells,
    factor_header,
    factor_notes,
    factor_title,
    pass_rates,
    strip_control,
    variant_cells,
    variant_notes,
    verdict_caption,
)

__all__ = [
    "GateOutcome",
    "append_summary",
    "append_text",
    "gates_block",
    "gates_exit_status",
    "summary_markdown",
    "unfinished_markdown",
]


@dataclass(frozen=True)
class GateOutcome:
    """A gate's outcome as the command line says it on stderr: its exit status, the
    headline and the detail lines (the summary repeats them, not new words)."""

    #: The exit status the gate gives (0: passed).
    code: int
    #: What passed or failed, naming the variants.
    headline: str
    #: One line each: a verdict's statement, a gate's reason, a detectable change.
    details: tuple[str, ...] = ()


def gates_exit_status(gates: Sequence[GateOutcome]) -> int:
    """The exit status of ``gates``: the first failure's, else 0."""
    return next((g.code for g in gates if g.code), 0)


def gates_block(gates: Sequence[GateOutcome]) -> dict[str, Any]:
    """The gates as the JSON report records them (``agenticlens_frames.gates``): the exit
    status they give (the first failure's, else 0) and each gate's status and words.

    Examples
    --------
    >>> gates_block([GateOutcome(0, "Regression gate passed."),
    ...              GateOutcome(5, "Non-inferiority gate failed: b", ("b (quality): …",))])
    ... # doctest: +NORMALIZE_WHITESPACE
    {'exit_status': 5, 'outcomes': [{'exit_status': 0, 'headline': 'Regression gate passed.',
    'details': []}, {'exit_status': 5, 'headline': 'Non-inferiority gate failed: b',
    'details': ['b (quality): …']}]}
    """
    return {
        "exit_status": gates_exit_status(gates),
        "outcomes": [
            {"exit_status": g.code, "headline": g.headline, "details": list(g.details)}
            for g in gates
        ],
    }


def _md(text: Any) -> str:
    """User text as literal Markdown: no control characters, markup escaped."""
    return markdown_escape(strip_control(text))


def _heading(analysis: ExperimentAnalysis) -> str:
    info = analysis.info
    return _experiment_heading(info["experiment_name"], info.get("experiment_version"))


def _experiment_heading(name: Any, version: Any = None) -> str:
    text = _md(name) + (f" (version {_md(version)})" if version else "")
    return f"### Experiment {text}"


def unfinished_markdown(name: str, version: str | None, code: int, state: str) -> str:
    """The block of a run that ended before its analysis (``--max-attempts`` reached,
    interrupted): no verdict, what is left and how to resume, in stderr's words.

    Examples
    --------
    >>> print(unfinished_markdown("exp", "2", 6, "Stopped: 12 attempts still to call; "
    ...                           "resume with --run-dir runs/a"), end="")
    ### Experiment exp (version 2)
    <BLANKLINE>
    **Not finished (exit 6).** Stopped: 12 attempts still to call; resume with --run-dir runs/a.
    No verdict yet: the reports are written when every attempt is done.
    """
    return (
        f"{_experiment_heading(name, version)}\n\n**Not finished (exit {code}).** "
        f"{_md(state)}.\nNo verdict yet: the reports are written when every attempt is done.\n"
    )


def _headlines(analysis: ExperimentAnalysis, base: str) -> list[str]:
    from ..paired.headline import candidate_headlines

    # The sentence is numbers and words of ours around the dimension's name: that name is
    # escaped before (escaping the sentence would put a backslash before every bracket).
    v = analysis.verdicts
    escaped = v.assign(dimension=[_md(d) for d in v["dimension"]])
    return [
        f"- **{_md(candidate)}** vs {base}: {sentence}"
        for candidate, sentence in candidate_headlines(escaped)
    ]


def _stopping(block: Any) -> list[str]:
    """In a run the rule watched (stopped early or to the end of its plan): the stopping
    decision, the inferential statement."""
    from ..early_stopping import attempts_statement, decision_rows, rule_statement, unit_statement

    rows = [
        [_md(r["candidate"]), f"**{_md(r['decision'])}**", r["interval"], r["paired_cases"]]
        for r in decision_rows(block)
    ]
    return [
        f"**Early stopping: {_md(block['reason'])}.** The stopping decision is the "
        "inferential statement of this run; the verdicts below are descriptive. "
        f"{_md(attempts_statement(block))}. {_md(rule_statement(block))}."
        + (f" {_md(unit_statement(block))}." if unit_statement(block) else ""),
        "",
        markdown_table(
            ["Candidate", "Decision", "Anytime-valid interval (pass rate)", "Paired cases"], rows
        ),
    ]


def _gate(gate: GateOutcome, warnings: Sequence[str] = ()) -> list[str]:
    """The gate's outcome; a detail that only repeats one of ``warnings`` (stderr's
    ``note: <warning>`` beside a gate) is left to the warning block below the verdicts."""
    mark = "Passed" if gate.code == 0 else f"Failed (exit {gate.code})"
    details = [d for d in gate.details if d.removeprefix("note: ") not in warnings]
    return [f"**{mark}.** {_md(gate.headline)}", *(f"- {_md(d)}" for d in details)]


def _unapplied_gate(analysis: ExperimentAnalysis) -> tuple[bool, list[list[str]]]:
    """A saved report's non-inferiority gate, re-rendered without a gate asked for: in the
    console's words, said not to have set the exit status (the console showed a failed gate
    and the summary of the same command said nothing of it); and whether it passed (True,
    no block, without a gate)."""
    from ..paired.gate import gate_statement

    gate = analysis.paired_frames.get("noninferiority")
    if gate is None:
        return True, []
    passed, headline, details = gate_statement(
        gate, analysis.paired_frames.get("paired_comparisons"), every=True
    )
    return passed, [
        [
            f"**{'Passed' if passed else 'Failed'}, not applied (exit 0).** {_md(headline)}",
            *(f"- {_md(d)}" for d in details),
            "",
            "No gate was asked for: `experiment report --fail-on-regression` applies it.",
        ]
    ]


def _verdict_table(analysis: ExperimentAnalysis) -> list[str]:
    """The verdicts as a table, with the console's caption under it."""
    from ..paired.verdicts import detectable_cell, format_change, format_p, p_header

    v = analysis.verdicts
    declared = bool(v.attrs.get("declared", False))
    level = float(v["confidence_level"].iloc[0]) if len(v) else analysis.confidence_level
    # Beside a declared verdict the interval is still per comparison (the verdict follows
    # the adjusted p): the header says so, as the page's does.
    interval = "CI, per comparison" if declared else "per-comparison interval"
    header = ["Candidate", "Dimension", f"Difference [{level:.0%} {interval}]"]
    correction = str(v["correction"].iloc[0]) if len(v) else ""
    header += [p_header(correction, short=True), "Verdict"] if declared else []
    header.append("Smallest detectable change")
    rows = []
    for r in v.to_dict("records"):
        cells = [_md(r["candidate_variant_id"]), _md(r["dimension"]), format_change(r)]
        if declared:
            cells += [format_p(float(r["adjusted_p_value"])), _md(r["verdict"])]
        detectable = str(r["detectable"] or "")
        cell = detectable_cell(str(r["verdict"]), float(r["mde"]), str(r["unit"]), detectable)
        cells.append(_md(cell or "-"))
        rows.append(cells)
    judges = judge_verdict_note(analysis)
    return [
        markdown_table(header, rows),
        "",
        _md(verdict_caption(v, level)),
        *(["", _md(judges)] if judges else []),
    ]


def _details(analysis: ExperimentAnalysis) -> list[str]:
    """The variant table and AgenticLens's compatible numbers, folded."""
    headline = pass_rates(analysis)
    level = f"{analysis.confidence_level:.0%}"
    ids = [_md(v) for v in analysis.variants["variant_id"]]
    variant_header = list(VARIANT_HEADER)
    if headline:
        variant_header[1] = f"Pass rate [{level} case-level CI]"
    variants = markdown_table(
        variant_header,
        [[i, *cells] for i, cells in zip(ids, variant_cells(analysis, headline), strict=True)],
    )
    compat = markdown_table(
        COMPAT_HEADER,
        [
            [i, *cells[:-1], _md(cells[-1])]
            for i, cells in zip(ids, compat_cells(analysis), strict=True)
        ],
    )
    factors = factor_cells(analysis)
    factor_block = (
        [
            factor_title(analysis),
            "",
            markdown_table(
                factor_header(analysis),
                # The term and the variants are user text; the numbers are ours.
                [[_md(term), effect, p, _md(through)] for term, effect, p, through in factors],
            ),
            "",
            *(f"- {_md(note)}" for note in factor_notes(analysis)),
            "",
        ]
        if factors
        else []
    )
    title = "Variants, which factor did it," if factors else "Variants,"
    return [
        f"<details><summary>{title} and AgenticLens-compatible numbers</summary>",
        "",
        variants,
        "",
        *(f"- {_md(note)}" for note in variant_notes(analysis, bool(headline))),
        "",
        *factor_block,
        f"{COMPAT_TITLE} · baseline: {_md(analysis.info['baseline_variant_id'])}",
        "",
        compat,
        "",
        compat_caption(analysis, where="at the top"),
        "",
        "</details>",
    ]


def summary_markdown(analysis: ExperimentAnalysis, gates: Sequence[GateOutcome] = ()) -> str:
    """The analysis' decision as a GitHub-flavoured Markdown block (ends with a newline).

    Parameters
    ----------
    analysis
        The analysis (of a run, or loaded from a saved report).
    gates
        How the command's gates ended (``--fail-on-regression``, the non-inferiority
        gate, a variant without a completed trial), in the words it prints on stderr.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> text = summary_markdown(a)
    >>> print(text[: text.index("\\n\\n", 50)])  # doctest: +ELLIPSIS
    ### Experiment support-agent-upgrade (version 1)
    <BLANKLINE>
    Verdicts against baseline: case-level paired comparisons, Holm correction over the ...
    >>> print(next(line for line in text.splitlines() if "**prompt-v2**" in line))
    - **prompt-v2** vs baseline: no detectable difference in quality (+15.7 pp [-0.1, +31.5], ...
    """
    from .._secrets import mask
    from ..early_stopping import descriptive_note, descriptive_title, early_stopping, stopped_early
    from ..paired.verdicts import (
        HOW_TO_DECLARE,
        interval_phrase,
        omitted_statement,
        verdicts_family,
    )

    v = analysis.verdicts
    base = _md(analysis.info["baseline_variant_id"])
    declared = bool(v.attrs.get("declared", False))
    stopping = early_stopping(analysis)
    blocks: list[Iterable[str]] = [[_heading(analysis)]]
    stopped = stopped_early(analysis)
    if stopping is not None:
        # Stopped or run to the end: the rule's statement leads (docs/statistics.md §13).
        blocks.append(_stopping(stopping))
    warnings = [*headline_warnings(analysis.warnings), *target_failure_warnings(analysis)]
    # A failed gate is what blocks shipping (the exit status acts on it): it leads the
    # verdicts, whose "no detectable difference" sentences would read as reassurance above
    # it; a passed one follows them. The console, the page and the explorer keep the same
    # order (docs/statistics.md).
    if gates:
        failed = [_gate(gate, warnings) for gate in gates if gate.code]
        passed = [_gate(gate, warnings) for gate in gates if not gate.code]
    else:
        gate_passed, unapplied = _unapplied_gate(analysis)
        failed, passed = ([], unapplied) if gate_passed else (unapplied, [])
    blocks.extend(failed)
    if v.attrs.get("missing"):
        # (paired.verdicts.NOT_IN_REPORT: our words, their `code` meant as Markdown)
        blocks.append([f"**No verdicts.** {v.attrs['missing']}"])
    elif declared:
        alpha = float(v["alpha"].iloc[0]) if len(v) else math.nan
        how = verdicts_family(v)
        level = float(v["confidence_level"].iloc[0]) if len(v) else analysis.confidence_level
        lead = f"Verdicts against {base}: case-level paired comparisons, {how}"
        lead = (descriptive_title(lead, stopped) if stopping is not None else lead) + "."
        if len(v):
            # Said before the sentences, not only in the table's caption below: an interval
            # that excludes 0 beside "no detectable difference" (the family's adjusted p)
            # otherwise reads as a significant change.
            lead += " " + interval_phrase(level, alpha, str(v["correction"].iloc[0]))
        blocks.append([lead, "", *_headlines(analysis, base)])
    else:
        blocks.append(
            [
                f"**No verdicts.** {HOW_TO_DECLARE}",
                "",
                f"Paired differences against {base} (case-level, per-comparison intervals, "
                "not judged):",
                "",
                *_headlines(analysis, base),
            ]
        )
    blocks.extend(passed)
    if omitted := omitted_statement(v):
        warnings.append(omitted)
    warnings += judge_noise_notes(analysis)
    if warnings:
        blocks.append(["> [!WARNING]", *(f"> - {_md(w)}" for w in warnings)])
    if len(v):
        table = _verdict_table(analysis)
        if stopping is not None:
            table += ["", descriptive_note(stopped)]
        blocks.append(table)
    if source := v.attrs.get("source"):
        blocks.append([f"Note: {_md(source)}"])
    if costs := judge_cost_lines(analysis):
        # What the judges cost, apart from the agent's: the console's and the page's lines.
        blocks.append([f"- {_md(line)}" for line in costs])
    blocks.append(_details(analysis))
    # Messages (a target's error) may hold a secret the run knows: masked as on stderr.
    return mask("\n\n".join("\n".join(b) for b in blocks)) + "\n"


def append_summary(
    analysis: ExperimentAnalysis, path: str | Path, gates: Sequence[GateOutcome] = ()
) -> None:
    """Append :func:`summary_markdown` to ``path`` (created if missing, with its folder), in
    one write.

    A file already holding text gets a blank line first, so that the heading starts a
    block of its own whatever the step before wrote.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "summary.md"
    >>> append_summary(a, path); append_summary(a, path)
    >>> path.read_text().count("### Experiment support-agent-upgrade")
    2
    """
    append_text(path, summary_markdown(analysis, gates))


def append_text(path: str | Path, text: str) -> None:
    """Append a Markdown block to ``path`` as :func:`append_summary` does (folder made, a
    blank line before it when the file holds text, one write)."""
    target = Path(path)
    # Its folder is made as every other output's is: a summary in a folder the job has not
    # made yet failed after the run, however long it took.
    target.parent.mkdir(parents=True, exist_ok=True)
    stream = _own_stream(target)
    if stream is not None:
        stream.flush()  # the console's text first: the blank line below goes by the end
    if target.is_file() and target.stat().st_size:
        with open(target, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            text = ("\n" if handle.read(1) == b"\n" else "\n\n") + text
    if stream is not None:
        # Opened anew, /dev/stdout redirected to a file (`> log`) gets an offset of its
        # own: the console's next line wrote over the summary's first one. Through the
        # stream, a reader that left (`| head`) costs nothing, as for the console.
        stream.write(text)
        stream.flush()
        return
    # One write of the whole block: steps appending to one file never interleave lines.
    with open(target, "a", encoding="utf-8", errors="replace") as handle:
        handle.write(text)


def _own_stream(target: Path) -> TextIO | None:
    """``sys.stdout`` or ``sys.stderr`` when ``target`` is the file, pipe or terminal it
    writes to (``/dev/stdout``, or the log the job redirects stdout to), else None."""
    try:
        here = target.stat()
    except OSError:
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            there = os.fstat(stream.fileno())
        except (AttributeError, OSError, ValueError):  # replaced, e.g. by a test's capture
            continue
        if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
            return stream
    return None
