"""Every surface states the same verdicts: a property test over generated experiments.

For each experiment (:func:`agenticlens_frames.testing.make_synthetic` over seeds, 3–5
variants, 1–5 trials, 8–30 cases; and crafted edge cases: every variant identical, a
candidate failing every case, one and two cases, declared clusters, each correction,
none declared, a variant without latencies) the command line is run once with every
output, and each surface is parsed back into rows of (candidate, dimension, difference,
interval, p, verdict, smallest detectable change):

* the console of ``experiment run``, of ``experiment report`` on the saved JSON, of
  ``experiment report --correction`` on its AgenticLens-format copy, and a narrow console
  (each verdict as its statement),
* the ``--summary`` Markdown of both commands (one sentence per candidate, and the table),
* the HTML page's verdict table; the notebook explorer's (offline, its HTML value), from
  the saved report and from ``analyze()``; the paired forest's hover and marks; the
  notebook display of the analysis,
* the JSON report's ``verdicts`` rows and statements (the block ``read_first`` in the
  report's ``agenticlens_frames`` block points at) and its ``agenticlens_frames.gates``,
* the exit status of ``--fail-on-regression`` and of the non-inferiority gates, and the
  words each surface gives them,
* the heading naming the correction, its family and α; the intervals' level; the
  case-level pass rates of the variant tables; AgenticLens's numbers never marked.

The JSON floats are the reference; every displayed number is checked against them within
half a unit of its displayed precision (an independent reading, not the formatter), and
the JSON rows are checked against the definitions: significant when the adjusted p is at
most α, better/worse by the sign of the difference and the dimension's direction, no test
under two paired units. The exit status is derived from those rows, not read from the
gate's own words.
"""

from __future__ import annotations

import html
import io
import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from agenticlens_frames import analyze, load_experiment, load_report, viz
from agenticlens_frames.cli import app
from agenticlens_frames.evaluators import load_registry
from agenticlens_frames.report.console import print_summary
from agenticlens_frames.testing import make_synthetic

from .conftest import EXAMPLE

#: Dimensions whose significantly worse verdict is a regression (docs: --fail-on-regression).
GATED = ("quality", "safety", "reliability")
#: Wide enough that no verdict-table cell wraps.
WIDTH = "220"


# --------------------------------------------------------------------------- experiments


def _rewrite_trials(folder: Path, variant: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``edit`` to every recorded sample of ``variant``."""
    path = folder / "trials" / f"{variant}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    for trial in document["trials"]:
        for sample in trial["samples"]:
            edit(sample)
    path.write_text(json.dumps(document), encoding="utf-8")


def _identical(folder: Path) -> None:
    """Every variant replays the baseline's samples: every difference is a tie."""
    base = json.loads((folder / "trials" / "v00.json").read_text(encoding="utf-8"))
    for path in (folder / "trials").glob("v*.json"):
        path.write_text(json.dumps(base | {"variant_id": path.stem}), encoding="utf-8")


def _fail_everything(folder: Path) -> None:
    """v01 never says the keyword: it fails every case."""
    _rewrite_trials(folder, "v01", lambda s: s.update(output="I cannot help with that."))


def _no_latency(folder: Path) -> None:
    """v01's traces record no latency (eval-shaped: the total is the only source)."""
    _rewrite_trials(folder, "v01", lambda s: s["trace"].pop("total_latency_ms", None))


def _odd_names(folder: Path) -> None:
    """Candidates named with rich markup and Markdown's special characters."""
    manifest = folder / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8")
    for old, new in (("v01", "new[bold]x"), ("v02", "a|b_c*d")):
        text = text.replace(f'{{id: "{old}"', f"{{id: {json.dumps(new)}")
        path = folder / "trials" / f"{old}.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        path.write_text(json.dumps(document | {"variant_id": new}), encoding="utf-8")
    manifest.write_text(text, encoding="utf-8")


def _clustered(folder: Path, groups: int = 4, declare: bool = False) -> None:
    """Each case gets ``metadata.group``; ``declare``: the manifest's comparisons name it."""
    suite = folder / "suite.yaml"
    lines = suite.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if m := re.match(r'(\s+- \{id: "case-(\d+)", )(.*)', line):
            lines[i] = f'{m[1]}metadata: {{group: "g{int(m[2]) % groups}"}}, {m[3]}'
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if declare:
        manifest = folder / "manifest.yaml"
        text = manifest.read_text(encoding="utf-8")
        manifest.write_text(
            text + "comparisons: {correction: bonferroni, cluster: group}\n", encoding="utf-8"
        )


def _judged(folder: Path) -> None:
    """Every case graded by two offline fake LLM judges (tests/judge_fakes.py): one that
    labels verdicts over three samples (Fleiss' κ), retries, costs and is sometimes
    unavailable; a panel of three whose third sample sometimes refuses."""
    suite = folder / "suite.yaml"
    document = yaml.safe_load(suite.read_text(encoding="utf-8"))
    for case in document["cases"]:
        case["evaluators"] = [
            {"name": "helpfulness_judge", "threshold": 0.5},
            {"name": "strict_panel"},
        ]
    suite.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


@dataclass(frozen=True)
class Experiment:
    """One generated experiment and how ``experiment run`` is asked to judge it."""

    name: str
    variants: int
    trials: int
    cases: int
    seed: int
    correction: str | None = "holm"
    shape: str = "mixed"
    options: tuple[str, ...] = ()
    edit: Callable[[Path], None] | None = None
    missing_samples: int = 0
    gate: bool = True
    #: Copy this folder instead of generating (the bundled example: safety, a failed trial).
    source: Path | None = None
    #: The manifest itself declares a correction.
    manifest_declares: bool = False
    #: ``--evaluators`` (module:attr of a registry): the suite's LLM judges.
    evaluators: str | None = None


#: Generated experiments: seeds × designs, every correction, and none declared.
GENERATED = [
    Experiment("s1-v3-t1-n8", 3, 1, 8, 1, "holm", options=("--confidence-level", "0.9")),
    Experiment("s2-v4-t3-n20", 4, 3, 20, 2, "bonferroni", options=("--alpha", "0.2")),
    Experiment("s3-v5-t5-n30", 5, 5, 30, 3, "benjamini_hochberg", edit=_odd_names),
    Experiment("s4-v3-t2-n12", 3, 2, 12, 4, "none", options=("--latency-missing", "zero")),
    Experiment(
        "s5-v4-t4-n24",
        4,
        4,
        24,
        5,
        "holm",
        missing_samples=7,
        options=("--paired-method", "wilcoxon"),
    ),
    Experiment("s6-v5-t2-n16", 5, 2, 16, 6, None, gate=False),
    Experiment("s7-v3-t1-n20", 3, 1, 20, 7, "holm", options=("--paired-method", "mcnemar")),
]

#: Crafted edge cases.
EDGES = [
    Experiment(
        "ties",
        3,
        2,
        10,
        11,
        "holm",
        shape="eval",
        edit=_identical,
        options=("--noninferiority-margin", "0.02"),
    ),
    Experiment("fails-every-case", 3, 3, 12, 12, "holm", shape="eval", edit=_fail_everything),
    Experiment("one-case", 3, 3, 1, 13, "holm"),
    Experiment("two-cases", 4, 2, 2, 14, "benjamini_hochberg"),
    Experiment(
        "cluster-option", 3, 3, 16, 15, "holm", edit=_clustered, options=("--cluster", "group")
    ),
    Experiment(
        "cluster-manifest",
        4,
        2,
        20,
        16,
        None,
        edit=lambda f: _clustered(f, 5, declare=True),
        manifest_declares=True,
    ),
    Experiment(
        "one-cluster",
        3,
        2,
        12,
        20,
        "holm",
        edit=lambda f: _clustered(f, 1),
        options=("--cluster", "group"),
    ),
    # One cluster declared by the manifest, no correction on the command line.
    Experiment(
        "one-cluster-manifest",
        3,
        2,
        12,
        21,
        None,
        edit=lambda f: _clustered(f, 1, declare=True),
        manifest_declares=True,
    ),
    Experiment("no-latency", 3, 2, 12, 17, "holm", shape="eval", edit=_no_latency),
    Experiment(
        "llm-judges",
        5,
        5,
        14,
        0,
        "holm",
        source=EXAMPLE,
        edit=_judged,
        evaluators="tests.judge_fakes:build_registry",
        manifest_declares=True,
    ),
    Experiment("bundled-example", 5, 5, 14, 0, None, source=EXAMPLE, manifest_declares=True),
    Experiment(
        "noninferiority",
        3,
        3,
        20,
        18,
        "holm",
        options=("--noninferiority-margin", "0.05", "--noninferiority", "latency=200"),
        gate=False,
    ),
    Experiment(
        "noninferiority-passes",
        4,
        2,
        16,
        19,
        "bonferroni",
        options=("--noninferiority", "quality=0.6", "--noninferiority", "cost=0.01"),
    ),
]


@dataclass
class Surfaces:
    """What each surface of one experiment said."""

    experiment: Experiment
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any]
    html: str
    summary: str
    report_stdout: str
    report_exit_code: int
    widget: str
    forest: dict[tuple[str, str], str]
    notebook: str
    narrow: str
    report_summary: str
    #: ``experiment report --correction`` on the AgenticLens-format copy (None: not made).
    theirs: str | None
    #: The notebook's display of the analysis: (plain repr, HTML repr).
    display: tuple[str, str]
    #: The explorer's judges section (its cost lines); "" without judges.
    judges: str = ""


def _option(experiment: Experiment, name: str) -> str | None:
    options = list(experiment.options)
    return options[options.index(name) + 1] if name in options else None


def _settings(experiment: Experiment) -> dict[str, Any] | None:
    """``experiment``'s command-line settings as analyze()'s ``comparisons``."""
    settings: dict[str, Any] = {}
    if experiment.correction is not None:
        settings["correction"] = experiment.correction
    for option, key, kind in (
        ("--alpha", "alpha", float),
        ("--paired-method", "method", str),
        ("--cluster", "cluster", str),
    ):
        if (value := _option(experiment, option)) is not None:
            settings[key] = kind(value)
    gates = {}
    if (margin := _option(experiment, "--noninferiority-margin")) is not None:
        gates["quality"] = float(margin)
    if (pair := _option(experiment, "--noninferiority")) is not None:
        dimension, _, value = pair.partition("=")
        gates[dimension] = float(value)
    if gates:
        settings["noninferiority"] = [{"margin": m, "dimension": d} for d, m in gates.items()]
    return settings or None


#: Top-level keys this package adds to AgenticLens's report format.
OUR_KEYS = (
    "agenticlens_frames",
    "case_level",
    "verdicts",
    "paired_comparisons",
    "pareto_uncertainty",
    "factor_effects",
    "judge_noise",
)


def _invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, args, env={"COLUMNS": WIDTH, "NO_COLOR": "1"})


def render(root: Path, experiment: Experiment) -> Surfaces:
    """Generate ``experiment`` under ``root``, run it with every output, re-render it."""
    from agenticlens_frames.widgets import explore

    if experiment.source is not None:
        folder = Path(shutil.copytree(experiment.source, root / experiment.name))
    else:
        folder = make_synthetic(
            root / experiment.name,
            variants=experiment.variants,
            trials=experiment.trials,
            cases=experiment.cases,
            seed=experiment.seed,
            shape=experiment.shape,  # type: ignore[arg-type]
            missing_samples=experiment.missing_samples,
        )
    if experiment.edit is not None:
        experiment.edit(folder)
    out = folder / "out"
    args = [
        "experiment",
        "run",
        str(folder / "manifest.yaml"),
        str(folder / "suite.yaml"),
        "--save",
        str(out / "r.json"),
        "--html",
        str(out / "r.html"),
        "--summary",
        str(out / "s.md"),
        *experiment.options,
    ]
    if experiment.correction is not None:
        args += ["--correction", experiment.correction]
    if experiment.gate:
        args.append("--fail-on-regression")
    if experiment.evaluators is not None:
        args += ["--evaluators", experiment.evaluators]
    done = _invoke(args)
    assert done.exit_code in (0, 4, 5), (experiment.name, done.output, done.exception)
    again = _invoke(
        ["experiment", "report", str(out / "r.json"), "--summary", str(out / "s2.md")]
        + (["--fail-on-regression"] if experiment.gate else [])
    )
    # The same report as AgenticLens writes it (our blocks removed): `experiment report
    # --correction` recomputes the verdicts from its per-case records.
    theirs = None
    options = set(experiment.options[::2])
    if experiment.correction and options <= {"--alpha", "--paired-method"} and not experiment.edit:
        # (--confidence-level is not an option of experiment report: the saved one is used)
        document = json.loads((out / "r.json").read_text(encoding="utf-8"))
        for key in OUR_KEYS:
            document.pop(key, None)
        (out / "theirs.json").write_text(json.dumps(document), encoding="utf-8")
        done_theirs = _invoke(
            [
                *("experiment", "report", str(out / "theirs.json")),
                *("--correction", experiment.correction, *experiment.options),
            ]
        )
        assert done_theirs.exit_code == 0, done_theirs.output
        theirs = done_theirs.stdout
    saved = load_report(out / "r.json")
    forest = viz.paired_forest(saved.verdicts)  # the page's and the explorer's figure
    display = (repr(saved), saved._repr_html_())  # the notebook's display
    explorer = explore(saved)
    # The notebook's own path: analyze() on the loaded experiment, the same settings.
    notebook = explore(
        analyze(
            load_experiment(
                folder / "manifest.yaml",
                folder / "suite.yaml",
                evaluators=(
                    load_registry(experiment.evaluators, location="--evaluators")
                    if experiment.evaluators
                    else None
                ),
            ),
            comparisons=_settings(experiment),
            latency_missing=_option(experiment, "--latency-missing") or "exclude",
            confidence_level=float(_option(experiment, "--confidence-level") or 0.95),
            frontier_n_resamples=0,
        )
    )
    # Narrower than a table fits: each verdict is printed as its statement.
    narrow = Console(width=60, file=io.StringIO(), no_color=True)
    print_summary(saved, narrow)
    return Surfaces(
        experiment=experiment,
        exit_code=done.exit_code,
        stdout=done.stdout,
        stderr=done.stderr,
        report=json.loads((out / "r.json").read_text(encoding="utf-8")),
        html=(out / "r.html").read_text(encoding="utf-8"),
        summary=(out / "s.md").read_text(encoding="utf-8"),
        report_stdout=again.stdout,
        report_exit_code=again.exit_code,
        widget=explorer.verdicts.value,
        forest={
            (str(trace.name), str(y)): str(text)
            for trace in forest.data
            for y, text in zip(trace.y, trace.hovertext, strict=True)
        },
        notebook=notebook.verdicts.value,
        narrow=narrow.file.getvalue(),  # type: ignore[attr-defined]
        report_summary=(out / "s2.md").read_text(encoding="utf-8"),
        theirs=theirs,
        display=display,
        judges=explorer.judges.value,
    )


# --------------------------------------------------------------------------- parsers
# Each returns rows {candidate, dimension, difference, interval, p, verdict, detectable}
# in the surface's order (None where the surface has no such cell).


def console_rows(text: str) -> list[dict[str, Any]]:
    """The verdict table of a console summary (the first table printed)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    header = [c.strip() for c in lines[start + 1].strip("┃ ").split("┃")]
    rows, dimension = [], None
    for line in lines[start + 3 :]:
        if line.startswith("└"):
            break
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if cells[0] and not any(cells[1:]):
            dimension = cells[0]
            continue
        if cells == ["-"] * len(cells):
            continue
        named = dict(zip(header, cells, strict=True))
        difference, _, interval = named[header[1]].partition(" [")
        rows.append(
            {
                "candidate": cells[0],
                "dimension": dimension,
                "difference": difference,
                "interval": "[" + interval,
                "p": named.get("Adj. p", named.get("p (not adjusted)")),
                "verdict": named.get("Verdict"),
                "detectable": named["Smallest detectable change"],
            }
        )
    return rows


def _unescape_md(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def summary_rows(text: str) -> list[dict[str, Any]]:
    """The verdict table of a ``--summary`` block."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Candidate | Dimension"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [_unescape_md(c.strip()) for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        named = dict(zip(header, cells, strict=True))
        difference, _, interval = named[header[2]].partition(" [")
        rows.append(
            {
                "candidate": named["Candidate"],
                "dimension": named["Dimension"],
                "difference": difference,
                "interval": "[" + interval,
                "p": named.get("Adj. p", named.get("p (not adjusted)")),
                "verdict": named.get("Verdict"),
                "detectable": named["Smallest detectable change"],
            }
        )
    return rows


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` outside parentheses and brackets."""
    parts, depth, current, i = [], 0, "", 0
    while i < len(text):
        ch = text[i]
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
        if depth == 0 and text.startswith(sep, i):
            parts.append(current)
            current, i = "", i + len(sep)
            continue
        current += ch
        i += 1
    return [*parts, current]


_LEADS = {
    "better on ": "better",
    "worse on ": "worse",
    "no detectable difference in ": "no detectable difference",
    "no test on ": "no test",
}


def headline_rows(text: str) -> dict[str, list[dict[str, Any]]]:
    """The summary's one sentence per candidate: {candidate: rows in sentence order}."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in text.splitlines():
        m = re.match(r"- \*\*(.+?)\*\* vs .+?: (.*)$", line)
        if not m:
            continue
        rows = []
        for group in _split_top(m[2], "; "):
            verdict = None
            for lead, word in _LEADS.items():
                if group.startswith(lead):
                    verdict, group = word, group[len(lead) :]
                    break
            for phrase in _split_top(group, ", "):
                pm = re.match(r"(\w+) \((.*)\)$", phrase)
                assert pm, (line, phrase)
                inner = _split_top(pm[2], "; ")
                change = _split_top(inner[0], ", ")
                difference, _, interval = change[0].partition(" [")
                p = change[1].rsplit(" ", 1)[-1] if "p " in change[1] else None
                detectable = "; ".join(inner[1:]) or "-"
                detectable = detectable.removeprefix("smallest detectable ").removeprefix("change ")
                rows.append(
                    {
                        "candidate": _unescape_md(m[1]),
                        "dimension": pm[1],
                        "difference": difference,
                        "interval": "[" + interval,
                        "p": p,
                        "verdict": verdict,
                        "detectable": detectable,
                    }
                )
        out[_unescape_md(m[1])] = rows
    return out


class _VerdictTable(HTMLParser):
    """The rows of the first ``table.verdicts``: per cell its text, <strong> and <small>."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = self.done = False
        self.rows: list[list[dict[str, str]]] = []
        self.cell: dict[str, str] | None = None
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("class", "verdicts") in attrs and not self.done:
            self.inside = True
        if not self.inside:
            return
        if tag == "tr" and any(k == "data-variant" for k, _ in attrs):
            self.rows.append([])
        elif tag == "td" and self.rows:
            self.cell = {"text": "", "strong": "", "small": "", "label": dict(attrs)["data-label"]}
            self.rows[-1].append(self.cell)
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.inside:
            self.inside, self.done = False, True
        if self.inside and self.tags:
            self.tags.pop()
            if tag == "td":
                self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is None:
            return
        self.cell["text"] += data
        for tag in ("strong", "small"):
            if tag in self.tags:
                self.cell[tag] += data


def html_rows(text: str) -> list[dict[str, Any]]:
    """The first verdict table of an HTML page (or of the explorer's HTML value)."""
    parser = _VerdictTable()
    parser.feed(text)
    rows = []
    for cells in parser.rows:
        by = {c["label"]: c for c in cells}
        change = cells[2]
        p_cell = next((c for c in cells if c["label"] in ("Adjusted p", "p (not adjusted)")), None)
        verdict = by.get("Verdict")
        detectable = verdict["small"] if verdict else by["Smallest detectable change"]["small"]
        rows.append(
            {
                "candidate": cells[0]["strong"],
                "dimension": cells[1]["text"][: -len(cells[1]["small"]) or None],
                "difference": change["text"][: -len(change["small"])].strip(),
                "interval": change["small"],
                "p": p_cell["text"] if p_cell else None,
                "verdict": verdict["strong"] if verdict else None,
                "detectable": detectable or "-",
            }
        )
    return rows


_STATEMENT = re.compile(
    r"^(?P<candidate>.+?) vs (?P<base>.+?), (?P<dimension>\w+) \((?P<evaluator>[^)]*)\): "
    r"(?P<difference>\S+(?: [a-zA-Z]+)?) (?P<interval>\[[^\]]*\])(?: \((?P<kind>[^)]*)\))?"
    r"(?:, (?:[\w-]+-adjusted )?p = (?P<p>\S+)(?: \(no correction, as declared\))?: "
    r"(?P<verdict>[^;]+))?(?:; not judged: no correction declared)?(?:; (?P<detectable>.*))?$"
)


def statement_row(text: str) -> dict[str, Any]:
    """A verdict's statement (the gate's detail line, the narrow console) as a row."""
    m = _STATEMENT.match(text)
    assert m, text
    return {
        "candidate": m["candidate"],
        "dimension": m["dimension"],
        "difference": m["difference"],
        "interval": m["interval"],
        "p": m["p"],
        "verdict": m["verdict"],
        "detectable": m["detectable"] or "-",
    }


def forest_row(key: tuple[str, str], text: str) -> dict[str, Any]:
    """One point's hover text of the paired forest as a row (its mark: "significantly …")."""
    m = re.match(
        r"^(?P<candidate>.+?) − baseline: (?P<difference>\S+(?: [a-zA-Z]+)?) "
        r"(?P<interval>\[[^\]]*\])(?:<br>(?P<label>Adjusted p|p \(not adjusted\)) = "
        r"(?P<p>\S+?))?<br>.*?(?:<br>significantly (?P<mark>better|worse))?$",
        text,
    )
    assert m, text
    return {
        "candidate": m["candidate"],
        "dimension": key[0],
        "difference": m["difference"],
        "interval": m["interval"],
        "p": m["p"],
        "label": m["label"],
        "mark": m["mark"],
    }


#: A pass rate cell: the rate, then its interval or (none) the reason in parentheses.
_RATE = re.compile(
    r"(?P<rate>[\d.]+)%(?: \[?(?P<low>[\d.]+)%[–,] ?(?P<high>[\d.]+)%\]?"
    r"| \((?P<reason>no (?:interval|estimate): [^)]*)\))?$"
)


def pass_rates(s: Surfaces) -> dict[str, dict[str, str]]:
    """Each variant's case-level pass rate and interval, as each surface shows it."""
    out: dict[str, dict[str, str]] = {}
    lines = s.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Variants")
    for line in lines[start:]:
        if line.startswith("└"):
            break
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if line.startswith("│") and len(cells) > 1:
            out.setdefault("console", {})[cells[0]] = cells[1]
    lines = s.summary.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Variant | Pass rate ["))
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        out.setdefault("summary", {})[_unescape_md(cells[0])] = cells[1]
    section = s.html[s.html.index("<section id='variants'") :]
    section = section[: section.index("</section>")]
    for m in re.finditer(
        r"<tr data-variant='([^']+)'>.*?</td><td>([^<]*)(?:<small>([^<]*)</small>)?</td>",
        section,
    ):
        small = m[3] or ""
        out.setdefault("HTML", {})[html.unescape(m[1])] = html.unescape(
            m[2].strip()
            if not small
            else f"{m[2]}{small}"
            if small[0] == "("
            else f"{m[2]}[{small}]"
        )
    # The notebook display's variant table (the interval in a muted span).
    for m in re.finditer(
        r"<tr><td><b>([^<]+)</b>[^<]*</td><td>([^<]*)<span class='muted'>([^<]*)</span></td>",
        s.display[1],
    ):
        out.setdefault("notebook display", {})[html.unescape(m[1])] = html.unescape(m[2] + m[3])
    return out


def narrow_statements(text: str) -> list[str]:
    """The statements a narrow console prints, one "• " each (rewrapped lines joined)."""
    flat = " ".join(text.split())
    flat = flat[: flat.index("Each candidate minus the baseline")]
    return [part.strip() for part in flat.split("• ")[1:]]


# --------------------------------------------------------------------------- checks

_NUMBER = re.compile(r"^([+-]?\d+(?:\.\d*)?(?:e[+-]?\d+)?)")


def _shown(text: str) -> tuple[float, float]:
    """A displayed number (its unit suffix dropped) and half a unit of its last digit."""
    text = text.strip()
    m = _NUMBER.match(text)
    assert m, text
    digits = m[1]
    if "e" in digits:
        mantissa, exponent = digits.split("e")
        decimals = len(mantissa.partition(".")[2])
        return float(digits), 0.5 * 10.0 ** (int(exponent) - decimals)
    return float(digits), 0.5 * 10.0 ** -len(digits.partition(".")[2])


def _scale(unit: str) -> float:
    """Displayed units per stored unit: percentage points for proportions."""
    return 100.0 if unit == "proportion" else 1.0


def _close(text: str, value: float | None, unit: str, what: str) -> None:
    if value is None or not math.isfinite(value):
        assert "n/a" in text, (what, text, value)
        return
    shown, half = _shown(text)
    # A nonzero value too small for the format keeps two significant digits (the shown
    # precision is then finer); residue below 1e-12 is shown as 0.
    target = 0.0 if abs(value) < 1e-12 else value * _scale(unit)
    assert abs(shown - target) <= half * 1.0001 + 1e-12, (what, text, value)


def _check_row(row: dict[str, Any], ref: dict[str, Any], surface: str) -> None:
    """One surface's row against the JSON row ``ref``."""
    where = f"{surface}: {ref['candidate_variant_id']} {ref['dimension']}"
    assert row["candidate"] == ref["candidate_variant_id"], where
    assert row["dimension"] == ref["dimension"], where
    unit = ref["unit"]
    _close(row["difference"], ref["mean_difference"], unit, where)
    low, _, high = row["interval"].strip("[]").partition(", ")
    high = high or low  # "[n/a]": no interval
    _close(low, ref["ci_low"], unit, where + " low")
    _close(high, ref["ci_high"], unit, where + " high")
    if ref["declared"]:
        assert row["verdict"] == ref["verdict"], (where, row, ref["verdict"])
        p = ref["adjusted_p_value"]
        if p is None:
            assert row["p"] == "n/a", where
        else:
            shown, half = _shown(row["p"])
            assert abs(shown - p) <= half * 1.0001, (where, row["p"], p)
    else:
        assert row["verdict"] is None, where  # nothing judged: no verdict word shown
        assert row["p"] is None, where
    _check_detectable(row["detectable"], ref, where)


def _check_detectable(text: str, ref: dict[str, Any], where: str) -> None:
    """The smallest detectable change: absent beside better/worse; else its magnitude, or
    the note saying why there is none."""
    text = text.strip()
    if ref["verdict"] in ("better", "worse"):
        assert text == "-", (where, text)
        return
    if ref["verdict"] == "no test":
        assert "fewer than two paired" in text, (where, text)
        return
    mde = ref["mde"]
    if text.startswith("this run could not detect changes smaller than "):
        text = text.removeprefix("this run could not detect changes smaller than ")
    if "beyond the scale" in text or "not detectable with this design" in text:
        assert mde is None or mde == math.inf or (unit_bounded(ref) and mde > 1.0), (where, mde)
        return
    if "no detectable-change bound" in text or "could not be estimated" in text:
        assert text in ref["detectable"], (where, text)
        return
    _close(text, mde, ref["unit"], where + " mde")


def unit_bounded(ref: dict[str, Any]) -> bool:
    return ref["unit"] in ("proportion", "score")


def check_json_rows(rows: list[dict[str, Any]], declared: bool) -> None:
    """The JSON rows follow the definitions (the reference every surface is read against)."""
    for r in rows:
        where = f"json: {r['candidate_variant_id']} {r['dimension']}"
        assert r["declared"] is declared, where
        if not declared:
            assert r["verdict"] == "not judged" and r["significant"] is None, where
            continue
        p, alpha = r["adjusted_p_value"], r["alpha"]
        if r["significant"] is None:
            assert r["verdict"] == "no test", where
            continue
        assert p is not None and r["significant"] == (p <= alpha), (where, p, alpha)
        if not r["significant"]:
            assert r["verdict"] == "no detectable difference", where
            continue
        up = r["mean_difference"] > 0
        assert r["verdict"] == ("better" if up == r["higher_is_better"] else "worse"), where


def expected_exit(surfaces: Surfaces) -> int:
    """The exit status the gates must give, from the JSON rows and the gate block."""
    rows = surfaces.report["verdicts"]["rows"]
    if surfaces.experiment.gate and any(
        r["declared"]
        and r["significant"]
        and r["dimension"] in GATED
        and (r["mean_difference"] > 0) != r["higher_is_better"]
        for r in rows
    ):
        return 4
    block = surfaces.report.get("paired_comparisons", {}).get("noninferiority")
    if block is not None and failed_gates(block):
        return 5
    return 0


def failed_gates(block: dict[str, Any]) -> list[str]:
    """The non-inferiority rows that fail, as "candidate (dimension)", from their bounds: a
    lower bound must lie above −δ, an upper one below +δ."""
    failed = []
    several = len({r["dimension"] for r in block["candidates"]}) > 1
    for r in block["candidates"]:
        bound, threshold = r["bound"], r["threshold"]
        ok = bound is not None and (
            bound > threshold if r["bound_side"] == "lower" else bound < threshold
        )
        assert ok == r["passed"] or "margin" in r["reason"], r
        if not r["passed"]:
            # Named with the dimension when the gates are on several.
            name = r["candidate_variant_id"]
            failed.append(f"{name} ({r['dimension']})" if several else name)
    return failed


def check_gate_order(s: Surfaces, headline: str, failed: bool) -> None:
    """The non-inferiority gate in the same place on every surface: a failed gate (what
    blocks shipping, exit 5) before the verdicts, a passed one after them
    (docs/statistics.md)."""
    heading = "Verdicts against" if s.report["verdicts"]["declared"] else "Paired differences"
    first = s.report["verdicts"]["rows"][0]["statement"]
    for surface, text, verdicts in (
        ("console", s.stdout, heading),
        ("console (experiment report)", s.report_stdout, heading),
        ("narrow console", s.narrow, heading),
        ("summary", _unescape_md(s.summary), heading),
        ("summary (experiment report)", _unescape_md(s.report_summary), heading),
        ("HTML", html.unescape(s.html), heading),
        ("widget", html.unescape(s.widget), heading),
        ("widget (analyze in the notebook)", html.unescape(s.notebook), heading),
        # The display's verdicts are their statements.
        ("notebook display", html.unescape(s.display[1]), first),
        # The one-line display: the gate's headline as its gate=, its verdicts' tally.
        ("notebook display (plain)", s.display[0], "verdicts="),
    ):
        flat = " ".join(text.split())
        assert headline in flat, (surface, headline)
        gate, table = flat.index(headline), flat.index(" ".join(verdicts.split()))
        assert (gate < table) == failed, (surface, "before" if failed else "after", headline)


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return (row["candidate"], row["dimension"])


def judge_line(noise: dict[str, Any]) -> str:
    """The line under the verdicts, written here from the JSON's ``judge_noise`` block
    (docs/judges.md): the intervals include the judges' noise; where it is the larger
    noise, per metric, its candidates and largest share; each verdict judge's Fleiss' κ
    (one value, or the lowest and highest with their variants) and its samples."""
    line = (
        "LLM judges graded these cases: where their scores count (the pass decisions, a "
        "judged metric) the intervals come from the cases' observed differences, so they "
        "already include the judges' sampling noise."
    )
    limited: dict[str, list[dict[str, Any]]] = {}
    for r in noise["comparisons"]:
        if r["judge_limits_detection"]:
            limited.setdefault(r["metric"], []).append(r)
    if limited:
        parts = []
        for metric, rows in limited.items():
            share = max(r["judge_width_share"] or 0.0 for r in rows)
            names = ", ".join(r["candidate_variant_id"] for r in rows)
            parts.append(
                f"'{metric}' ({names}; up to {round(100 * share)}% of the interval's width)"
            )
        line += f" Judge noise, not the agent's, is the larger noise on {'; '.join(parts)}: see"
        line += " the judge notes."
    kappas: dict[str, list[dict[str, Any]]] = {}
    for r in noise["decomposition"]:
        if r.get("verdict_kappa") is not None:
            kappas.setdefault(r["metric"], []).append(r)
    if kappas:
        parts = []
        for metric, rows in kappas.items():
            low = min(rows, key=lambda r: (r["verdict_kappa"], r["variant_id"]))
            high = max(rows, key=lambda r: (r["verdict_kappa"], r["variant_id"]))
            if f"{low['verdict_kappa']:.2f}" == f"{high['verdict_kappa']:.2f}":
                said = f"κ = {low['verdict_kappa']:.2f}"
            else:
                said = (
                    f"κ = {low['verdict_kappa']:.2f} ({low['variant_id']}) to "
                    f"{high['verdict_kappa']:.2f} ({high['variant_id']})"
                )
            samples = sorted({round(r["samples"], 2) for r in rows})
            many = "–".join(f"{n:g}" for n in dict.fromkeys((samples[0], samples[-1])))
            parts.append(f"'{metric}' {said} over {many} samples")
        line += (
            " Judge agreement beyond chance (Fleiss' κ of the samples' verdicts; 0 = chance, "
            f"1 = perfect): {'; '.join(parts)}."
        )
    return line


def judge_cost_lines(report: dict[str, Any]) -> list[str]:
    """Each variant's judge scores and cost, from the package's own per-trial
    ``summary.judge`` blocks (not from our ``judge_noise`` block)."""
    lines = []
    for variant in report["variants"]:
        blocks = [
            t["report"]["summary"]["judge"] for t in variant["trials"] if t["report"] is not None
        ]
        scores = sum(b["judge_scores"] for b in blocks)
        priced = sum(b["priced_scores"] for b in blocks)
        # What was spent: every answered call once, retried billed attempts included (the
        # package's total_cost_usd is null as soon as one score is unpriced).
        spent = math.fsum(b["spent_cost_usd"] or 0.0 for b in blocks)
        cost = f"${spent:.6f}" if priced else "unpriced"
        lines.append(
            f"Judges · {variant['variant_id']}: {scores} score(s), "
            f"{sum(b['unavailable_scores'] for b in blocks)} unavailable, cost {cost} "
            f"({priced} of {scores} priced), {sum(b['input_tokens'] for b in blocks)} input / "
            f"{sum(b['output_tokens'] for b in blocks)} output tokens"
        )
    return lines


def check_judges(s: Surfaces) -> None:
    """The judges' line under the verdicts and their cost lines, the same on every surface:
    the line after the verdict table and before the variant table."""
    noise = s.report["judge_noise"]
    line = judge_line(noise)
    assert "Fleiss' κ" in line  # the fixture's judges label verdicts
    flat = {
        "console": s.stdout,
        "console (experiment report)": s.report_stdout,
        "narrow console": s.narrow,
        "summary": _unescape_md(s.summary),
        "summary (experiment report)": _unescape_md(s.report_summary),
        "HTML": html.unescape(s.html),
        "widget": html.unescape(s.widget),
        "widget (analyze in the notebook)": html.unescape(s.notebook),
        "notebook display": html.unescape(s.display[1]),
    }
    for surface, text in flat.items():
        text = " ".join(text.split())
        assert line in text, (surface, line)
        at = text.index(line)
        # (the display's verdicts are their statements, under no heading)
        first = text.index(
            "Verdicts against"
            if surface != "notebook display"
            else s.report["verdicts"]["rows"][-1]["statement"]
        )
        assert first < at, surface
        if "Variants" in text:
            assert at < text.index("Variants"), surface
    costs = judge_cost_lines(s.report)
    assert s.report["agenticlens_frames"]["judge_costs"] == costs
    for surface, text in (
        ("console", s.stdout),
        ("console (experiment report)", s.report_stdout),
        ("summary", _unescape_md(s.summary)),
        ("summary (experiment report)", _unescape_md(s.report_summary)),
        ("HTML", html.unescape(s.html)),
        ("explorer", html.unescape(s.judges)),
    ):
        text = " ".join(text.split())
        for cost in costs:
            assert cost in text, (surface, cost)


# --------------------------------------------------------------------------- the property

CASES = GENERATED + EDGES


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("surfaces")


@pytest.mark.parametrize("experiment", CASES, ids=[e.name for e in CASES])
def test_every_surface_states_the_same_verdicts(root: Path, experiment: Experiment) -> None:
    s = render(root, experiment)
    name = experiment.name
    block = s.report["verdicts"]
    declared = block["declared"]
    assert declared == (s.experiment.correction is not None or s.experiment.manifest_declares)
    refs = block["rows"]
    check_json_rows(refs, declared)
    for r in refs:  # the JSON's own words against its numbers
        _check_detectable(r["detectable"] or "-", r, "json")
    assert refs, "no verdict row"
    ref_keys = [(r["candidate_variant_id"], r["dimension"]) for r in refs]

    tables = {
        "console (experiment run)": console_rows(s.stdout),
        "console (experiment report)": console_rows(s.report_stdout),
        "summary table": summary_rows(s.summary),
        "summary table (experiment report)": summary_rows(s.report_summary),
        "narrow console": [statement_row(x) for x in narrow_statements(s.narrow)],
        "statements (JSON)": [statement_row(r["statement"]) for r in refs],
        "HTML page": html_rows(s.html),
        "explorer widget": html_rows(s.widget),
        "explorer widget (analyze in the notebook)": html_rows(s.notebook),
    }
    if s.theirs is not None:
        tables["console (experiment report --correction, AgenticLens's report)"] = console_rows(
            s.theirs
        )
    by_key = {(r["candidate_variant_id"], r["dimension"]): r for r in refs}
    for surface, rows in tables.items():
        # The same rows in the same order: the first verdict a reader sees is the same one.
        assert [_key(r) for r in rows] == ref_keys, surface
        for row in rows:
            _check_row(row, by_key[_key(row)], surface)

    # The notebook's display: every statement, in order; its one line counts the verdicts.
    plain, rich = s.display
    shown = html.unescape(rich)
    at = [shown.find(r["statement"]) for r in refs]
    assert -1 not in at and at == sorted(at), "notebook display"
    counts = {w: sum(r["verdict"] == w for r in refs) for w in {r["verdict"] for r in refs}}
    for word, count in counts.items():
        assert f"{count} {word}" in plain, (plain, word, count)

    # The paired forest (the page's figure and the explorer's): a mark exactly where the
    # verdict is better or worse, the p under the tables' label, the same numbers.
    assert sorted(s.forest) == sorted(ref_keys[i][::-1] for i in range(len(ref_keys)))
    for (dimension, candidate), text in s.forest.items():
        ref = by_key[(candidate, dimension)]
        row = forest_row((dimension, candidate), text)
        where = f"forest: {candidate} {dimension}"
        assert row["mark"] == (ref["verdict"] if ref["verdict"] in ("better", "worse") else None)
        if declared:
            label = "p (not adjusted)" if ref["correction"] == "none" else "Adjusted p"
            assert row["label"] == label, (where, text)
        else:
            assert row["p"] is None, (where, text)
        unit = ref["unit"]
        _close(row["difference"], ref["mean_difference"], unit, where)
        low, _, high = row["interval"].strip("[]").partition(", ")
        _close(low, ref["ci_low"], unit, where + " low")
        _close(high or low, ref["ci_high"], unit, where + " high")
        if row["p"] is not None:
            _close(row["p"], ref["adjusted_p_value"], "", where + " p")

    # The first number of the variant tables: the case-level pass rate and its
    # recommended interval (cases as the unit), the same on every surface.
    recommended = {
        r["variant_id"]: r
        for r in s.report["case_level"]["summary"]
        if r["recommended"] and r["evaluator"] == "passed" and r["estimand"] == "mean"
    }
    for surface, cells in pass_rates(s).items():
        assert sorted(cells) == sorted(recommended), surface
        for variant, text in cells.items():
            m = _RATE.match(text)
            assert m, (surface, variant, text)
            r = recommended[variant]
            for part, value in (
                ("rate", r["estimate"]),
                ("low", r["ci_low"]),
                ("high", r["ci_high"]),
            ):
                if m[part] is None:  # no interval shown: there is none
                    assert value is None, (surface, variant, text)
                else:
                    _close(m[part], value, "proportion", f"{surface}: {variant} pass rate {part}")
            # No interval (one cluster): the JSON note's reason beside the rate, in its
            # words (the note's last clause saying it), on every surface.
            reasons = [
                c for c in r["note"].split("; ") if c.startswith(("no interval", "no estimate"))
            ]
            if r["ci_low"] is None:
                assert reasons and m["reason"] == reasons[-1], (surface, variant, text, r["note"])
            else:
                assert m["reason"] is None, (surface, variant, text)
    # The interval's unit, said beside the rates: the cluster when fewer clusters than
    # cases (a declared cluster), else the case.
    unit = (
        "clusters of cases"
        if any(r["n_clusters"] < r["n_cases"] for r in recommended.values())
        else "cases"
    )
    for surface, text, said in (
        ("console", s.stdout, f"interval with {unit} as the unit"),
        ("summary", s.summary, f"interval with {unit} as the unit"),
        ("notebook display", html.unescape(s.display[1]), f"CI, {unit} as the unit]"),
    ):
        assert said in " ".join(text.split()), (surface, said)

    # The summary's headline sentences: every row once, grouped better, worse, no
    # detectable difference, no test; candidates in the table's order.
    headlines = headline_rows(s.summary)
    assert headline_rows(s.report_summary) == headlines
    assert list(headlines) == list(dict.fromkeys(r["candidate_variant_id"] for r in refs))
    order = ["better", "worse", "no detectable difference", "no test"]
    for candidate, rows in headlines.items():
        mine = [r for r in refs if r["candidate_variant_id"] == candidate]
        assert sorted(_key(r) for r in rows) == sorted(
            (r["candidate_variant_id"], r["dimension"]) for r in mine
        ), candidate
        for row in rows:
            _check_row(row, by_key[_key(row)], "summary headline")
        if declared:
            ranks = [order.index(r["verdict"]) for r in rows]
            assert ranks == sorted(ranks), candidate

    # The statement each row carries (the gate's detail lines, the narrow console) ends
    # with its verdict and its detectable note.
    for r in refs:
        tail = f": {r['verdict']}" if declared else "not judged: no correction declared"
        assert tail in r["statement"], r["statement"]
        if r["detectable"]:
            assert r["statement"].endswith(r["detectable"]), r["statement"]

    # The intervals' level, in every table's header.
    level = f"{refs[0]['confidence_level']:.0%}"
    for surface, text, said in (
        ("console", s.stdout, f"Difference [{level} CI]"),
        ("summary", s.summary, f"[{level} CI, per comparison]" if declared else f"[{level} per"),
        ("HTML", s.html, f"{level} CI, per comparison" if declared else f"{level} per-comparison"),
        (
            "widget",
            s.widget,
            f"{level} CI, per comparison" if declared else f"{level} per-comparison",
        ),
    ):
        assert said in text, (surface, said)

    # Which correction decides, over how large a family, at which α: the same words in
    # every heading of the verdicts (and in the gate's pass line).
    if declared:
        first = refs[0]
        names = {
            "bonferroni": "Bonferroni",
            "holm": "Holm",
            "benjamini_hochberg": "Benjamini-Hochberg",
        }
        if first["correction"] == "none":
            family = f"no correction (declared), α = {first['alpha']:g} per comparison"
        else:
            n = first["family_size"]
            size = f" of {n} comparison{'' if n == 1 else 's'}" if n else ""
            name = names[first["correction"]]
            family = f"{name} correction over the family{size}, α = {first['alpha']:g}"
        for surface, text in (
            ("console", s.stdout),
            ("console (experiment report)", s.report_stdout),
            ("narrow console", s.narrow),
            ("summary", s.summary),
            ("HTML", html.unescape(s.html)),
            ("widget", html.unescape(s.widget)),
            ("notebook", html.unescape(s.notebook)),
        ):
            assert family in " ".join(text.split()), (surface, family)

    # LLM judges: the line under the verdicts and their cost lines on every surface.
    if experiment.evaluators is not None:
        check_judges(s)

    # The verdicts come first: before the variant table and the compatible numbers.
    for surface, text, marks in (
        ("console", s.stdout, ("Variants", "AgenticLens-compatible numbers")),
        ("HTML", s.html, ("<section id='variants'", "AgenticLens-compatible")),
        ("summary", s.summary, ("<details>", "AgenticLens-compatible")),
    ):
        first = text.index("Verdicts against" if declared else "Paired differences against")
        for mark in marks:
            assert mark not in text or first < text.index(mark), (surface, mark)

    # The exit status follows from the verdicts, and the report records the same.
    expected = expected_exit(s)
    assert s.exit_code == expected, (s.exit_code, expected, s.stderr)
    # experiment report applies the gates only when asked (--fail-on-regression).
    assert s.report_exit_code == (expected if s.experiment.gate else 0), s.report_stdout
    gates = s.report["agenticlens_frames"].get("gates")
    if s.experiment.gate or expected:
        assert gates is not None and gates["exit_status"] == expected
    worse = [
        r for r in refs if r["verdict"] == "worse" and r["dimension"] in GATED and s.experiment.gate
    ]
    for r in worse:  # each regression said on stderr and in the summary, in its own words
        assert r["statement"] in s.stderr
        assert r["candidate_variant_id"] in _unescape_md(
            s.summary.split("Regression against the baseline")[1]
        )
    if s.experiment.gate and not worse:
        said = s.stderr + s.stdout
        assert "Regression gate passed" in said
        # What the pass could not have caught: each gated row's detectable note.
        for r in refs:
            if r["dimension"] in GATED and r["verdict"] != "better" and r["detectable"]:
                line = f"{r['candidate_variant_id']} {r['dimension']}: {r['detectable']}"
                assert line in said, line

    # AgenticLens's compatible numbers: labelled, never marked significant.
    compat = s.html[s.html.index("<section id='compat'>") :]
    compat = compat[: compat.index("</section>")]
    assert "class='verdict" not in compat and "attempts treated as independent" in compat
    for text, end in ((s.stdout, "Pareto frontier:"), (s.summary, "</details>")):
        section = text[text.index("AgenticLens-compatible numbers") : text.index(end)]
        for variant in (v["variant_id"] for v in s.report["variants"]):
            # (a name may hold a "*": it is the name, not a mark)
            escaped = re.sub(r"([*_|\[\]])", r"\\\1", variant)
            section = section.replace(variant, "").replace(escaped, "")
        assert "*" not in section and "significant" not in section.replace(
            "not a verdict", ""
        ).replace("for significance", ""), section

    # A non-inferiority gate: the same failures named on every surface.
    gate_block = s.report.get("paired_comparisons", {}).get("noninferiority")
    if gate_block is not None:
        failed = failed_gates(gate_block)
        headline = (
            f"Non-inferiority gate failed: {', '.join(failed)}"
            if failed
            else "Non-inferiority gate passed"
        )
        for surface, text in (
            ("stderr", s.stderr),
            ("console", s.stdout),
            ("console (experiment report)", s.report_stdout),
            ("summary", s.summary),
            ("HTML", html.unescape(s.html)),
            ("widget", html.unescape(s.widget)),
        ):
            assert headline in text, (surface, headline)
        check_gate_order(s, headline, bool(failed))

    # What is not compared is said on every surface that shows the verdicts.
    for omitted in block.get("omitted") or s.report.get("paired_comparisons", {}).get(
        "omitted", []
    ):
        said = f"{omitted['candidate_variant_id']} on {omitted['dimension']}"
        for surface, text in (
            ("console", s.stdout),
            ("console (experiment report)", s.report_stdout),
            ("narrow console", s.narrow),
            ("summary", s.summary),
            ("HTML", html.unescape(s.html)),
            ("widget", html.unescape(s.widget)),
        ):
            assert said in " ".join(text.split()), (surface, said)
