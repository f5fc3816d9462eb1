"""The Markdown summary for CI (``--summary``): the verdicts first, their numbers those of
the report, names escaped, and no verdict without a declared correction."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.paired.verdicts import HOW_TO_DECLARE
from agenticlens_frames.report.json_report import write_json_report
from agenticlens_frames.report.summary import GateOutcome, summary_markdown

from ..conftest import EXAMPLE

#: A number of a table cell: "+15.7", "-0.1", "1.1e-04".
_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]\d+)?"


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


@pytest.fixture(scope="module")
def analysis(run):
    return analyze(run, frontier_n_resamples=0)


def _tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of ``text``: its rows (header first) as cells, split on the
    pipes that are not escaped."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= {"-"} for c in cells):  # (the |---| line)
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _verdict_table(text: str) -> dict[tuple[str, str], dict[str, str]]:
    """(candidate, dimension) -> the verdict table's cells by column."""
    table = next(t for t in _tables(text) if t[0][:2] == ["Candidate", "Dimension"])
    return {(r[0], r[1]): dict(zip(table[0], r, strict=True)) for r in table[1:]}


def _numbers(cell: str) -> list[float]:
    return [float(x) for x in re.findall(_NUMBER, cell)]


def test_the_verdict_table_holds_the_reports_numbers(analysis, tmp_path: Path) -> None:
    """Each row's difference, interval, adjusted p, verdict and smallest detectable change
    are the JSON report's verdict block's (read back from the file, not the frame)."""
    write_json_report(analysis, tmp_path / "r.json")
    block = json.loads((tmp_path / "r.json").read_text())["verdicts"]
    table = _verdict_table(summary_markdown(analysis))
    assert len(table) == len(block["rows"]) == 19
    scale = {"proportion": 100.0, "ms": 1.0, "usd": 1.0}
    for row in block["rows"]:
        cells = table[(row["candidate_variant_id"], row["dimension"])]
        factor = scale[row["unit"]]
        shown = _numbers(cells["Difference [95% CI, per comparison]"])
        expected = [factor * row[k] for k in ("mean_difference", "ci_low", "ci_high")]
        # Shown rounded: 0.1 pp, 1 ms, or five decimals of USD (two significant digits
        # for a smaller nonzero bound).
        tolerance = {"proportion": 0.051, "ms": 0.51, "usd": 5.1e-6}[row["unit"]]
        np.testing.assert_allclose(shown, expected, atol=tolerance, rtol=0.05)
        p = float(cells["Adj. p"])
        assert p == pytest.approx(row["adjusted_p_value"], rel=0.051, abs=5.1e-4)
        assert cells["Verdict"] == row["verdict"]
        if row["verdict"] in ("better", "worse"):
            assert cells["Smallest detectable change"] == "-"
        elif row["mde"] is None or (row["unit"] == "proportion" and row["mde"] > 1.0):
            assert cells["Smallest detectable change"] == "beyond the scale"
        else:
            [mde] = _numbers(cells["Smallest detectable change"])
            assert mde == pytest.approx(factor * row["mde"], abs=tolerance, rel=0.05)


def test_quality_rows_match_an_independent_paired_t(run, analysis) -> None:
    """The quality difference and interval are a paired t on per-case pass rates over the
    evaluated attempts; Holm's adjusted p lies between the raw p and Bonferroni's."""
    attempts = run.attempts[run.attempts["status"] != "trial_failed"]
    means = attempts.groupby(["variant_id", "case_id"], observed=True)["passed"].mean()
    table = _verdict_table(summary_markdown(analysis))
    family = len(analysis.verdicts)
    for candidate in ("model-large", "prompt-v2", "retrieval-dense", "large-v2"):
        cand = means[candidate]
        base = means["baseline"][cand.index]
        diff = cand.to_numpy(float) - base.to_numpy(float)
        n = len(diff)
        half = stats.t.ppf(0.975, n - 1) * diff.std(ddof=1) / np.sqrt(n)
        expected = 100 * np.array([diff.mean(), diff.mean() - half, diff.mean() + half])
        cells = table[(candidate, "quality")]
        np.testing.assert_allclose(
            _numbers(cells["Difference [95% CI, per comparison]"]), expected, atol=0.051
        )
        raw = stats.ttest_rel(cand.to_numpy(float), base.to_numpy(float)).pvalue
        adjusted = float(cells["Adj. p"])
        assert raw - 5e-4 <= adjusted <= min(1.0, family * raw) + 5e-4


def test_each_candidate_leads_with_one_sentence_better_and_worse_first(analysis) -> None:
    text = summary_markdown(analysis)
    lines = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^- \*\*(.+?)\*\* vs baseline: (.+)$", text, re.M)
    }
    assert list(lines) == ["model-large", "prompt-v2", "retrieval-dense", "large-v2"]
    # Before the tables: the headline is the first thing read.
    assert text.index("**prompt-v2** vs baseline") < text.index("| Candidate |")
    table = _verdict_table(text)
    # model-large is significantly worse on latency and cost: said first, then the rest.
    assert lines["model-large"].startswith("worse on latency (")
    assert lines["model-large"].index("; no detectable difference in quality (") > 0
    for candidate, sentence in lines.items():
        for (c, dimension), cells in table.items():
            if c != candidate:
                continue
            # Every dimension with the table's numbers, and the detectable change beside
            # each result that is not significant.
            change = cells["Difference [95% CI, per comparison]"]
            phrase = f"{dimension} ({change}, adj. p {cells['Adj. p']}"
            assert phrase in sentence, (candidate, dimension)
            if cells["Verdict"] == "no detectable difference":
                assert f"smallest detectable {cells['Smallest detectable change']}" in (
                    sentence.replace(
                        "smallest detectable change beyond", "smallest detectable beyond"
                    )
                )
    assert lines["prompt-v2"].startswith(
        "no detectable difference in quality (+15.7 pp [-0.1, +31.5], adj. p 0.635; "
        "smallest detectable 34.2 pp)"
    )


def test_compatible_numbers_are_folded_labelled_and_never_starred(analysis) -> None:
    text = summary_markdown(analysis)
    details = text[text.index("<details>") : text.index("</details>")]
    assert text.index("| Candidate | Dimension |") < text.index("<details>")
    assert "AgenticLens-compatible numbers (attempts treated as independent; not a verdict)" in (
        details
    )
    compat = next(t for t in _tables(details) if t[0][1] == "Case pass rate [pooled Wilson]")
    rows = {r[0]: r for r in compat[1:]}
    assert rows["prompt-v2"][3] == "0.022"  # the z-test p, shown plainly ...
    assert "*" not in "".join(details.split("AgenticLens-compatible")[1])  # ... never starred
    variants = next(t for t in _tables(details) if t[0][0] == "Variant" and "Score" in t[0])
    assert variants[0][1] == "Pass rate [95% case-level CI]"
    assert {r[0]: r[1] for r in variants[1:]}["retrieval-dense"] == "82.1% [69%–90%]"


def test_warnings_and_what_was_not_compared_are_said(analysis) -> None:
    text = summary_markdown(analysis)
    warning = text[text.index("> [!WARNING]") :].split("\n\n")[0]
    assert "completed fewer than 5 trials (retrieval-dense)" in warning
    assert "Not compared: retrieval-dense on reliability (pass\\_hat\\_5)" in warning


def test_gates_are_said_in_the_words_given(analysis) -> None:
    gates = [
        GateOutcome(0, "Regression gate passed: fine.", ("b quality: could miss 9 pp",)),
        GateOutcome(5, "Non-inferiority gate failed: b", ("b (quality): lower bound <= -0.01",)),
    ]
    text = summary_markdown(analysis, gates)
    assert "**Passed.** Regression gate passed: fine.\n- b quality: could miss 9 pp" in text
    assert (
        "**Failed (exit 5).** Non-inferiority gate failed: b\n- b (quality): lower bound \\<="
        in (text)
    )
    assert text.index("**Failed (exit 5).**") < text.index("| Candidate |")


def _copy_with(folder: Path, *, ids: dict[str, str] | None = None, declared: bool = True) -> Path:
    """The example in ``folder`` with variants renamed (``ids``) and, when not
    ``declared``, its comparisons line removed."""
    shutil.copytree(EXAMPLE, folder)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    if not declared:
        del manifest["comparisons"]
    for variant in manifest["variants"]:
        new = (ids or {}).get(variant["id"])
        if new is None:
            continue
        trials = folder / variant["target"]
        doc = json.loads(trials.read_text())
        doc["variant_id"] = new
        trials.write_text(json.dumps(doc))
        variant["id"] = new
    manifest["name"] = (ids or {}).get("name", manifest["name"])
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    return folder


HOSTILE = "p|*_`<b>x</b>[l](http://e)\x1b[31m\u202e"


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    folder = _copy_with(tmp_path / "exp", ids={"prompt-v2": HOSTILE, "name": "exp|`<i>"})
    text = summary_markdown(
        analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))
    )
    escaped = r"p\|\*\_\`\<b\>x\</b\>\[l\](http://e)\[31m"
    assert HOSTILE not in text and "<b>" not in text and "<i>" not in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    assert text.startswith(r"### Experiment exp\|\`\<i\>")
    assert f"- **{escaped}** vs baseline: no detectable difference in quality (" in text
    # Every table keeps its columns: the name's pipe does not open a cell.
    for table in _tables(text):
        assert {len(row) for row in table} == {len(table[0])}
    assert (escaped, "quality") in _verdict_table(text)


def test_without_a_declared_correction_there_are_no_verdicts(tmp_path: Path) -> None:
    folder = _copy_with(tmp_path / "exp", declared=False)
    text = summary_markdown(
        analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))
    )
    assert f"**No verdicts.** {HOW_TO_DECLARE}" in text
    head = text[: text.index("<details>")]
    for word in ("better", "worse", "no detectable difference", "Adj. p", "adj. p"):
        assert word not in head, word
    table = next(t for t in _tables(head) if t[0][0] == "Candidate")
    assert table[0] == [
        "Candidate",
        "Dimension",
        "Difference [95% per-comparison interval]",
        "Smallest detectable change",
    ]
    assert table[2][:3] == ["prompt-v2", "quality", "+15.7 pp [-0.1, +31.5]"]
    assert (
        "- **prompt-v2** vs baseline: quality (+15.7 pp [-0.1, +31.5], 95% per-comparison "
        "interval; smallest detectable" in text
    )
    assert "no verdict is given without a declared correction (see the note at the top)" in text


def test_a_per_comparison_interval_is_said_so_before_the_sentences(analysis) -> None:
    """prompt-v2's cost interval excludes 0 (scipy's paired t, unadjusted) while its
    Holm-adjusted p is 0.635: 'no detectable difference'. The sentences lead the block, so
    the block says before them that the interval is per comparison and the verdict follows
    the adjusted p (it said so only in the caption under the table, after every sentence),
    and the table's header says it too."""
    run = analysis.run
    attempts = run.attempts[run.attempts["status"] != "trial_failed"]
    cost = attempts.groupby(["variant_id", "case_id"], observed=True)["cost_usd"].mean()
    diff = (cost["prompt-v2"] - cost["baseline"]).to_numpy(float)
    low = stats.ttest_1samp(diff, 0.0).confidence_interval(0.95).low
    assert low > 0  # per comparison, the interval excludes 0 ...
    text = summary_markdown(analysis)
    sentence = next(line for line in text.splitlines() if "**prompt-v2**" in line)
    assert "no detectable difference in" in sentence and "cost (+0.00017 USD [+" in sentence
    said = text.index("The interval is per comparison (95%), not adjusted for the family")
    assert said < text.index("**prompt-v2** vs baseline")  # ... and that is said first
    assert "the verdict follows the adjusted p" in text[: text.index("**model-large**")]
    assert "Difference [95% CI, per comparison]" in text


def test_p_values_under_a_declared_none_are_not_called_adjusted(run) -> None:
    """comparisons: {correction: none} decides each comparison on its own p: the column
    said "Adj. p" (the page's said "Adjusted p")."""
    import dataclasses

    plain = dataclasses.replace(run, manifest=dataclasses.replace(run.manifest, comparisons=None))
    text = summary_markdown(analyze(plain, correction="none", frontier_n_resamples=0))
    header = _tables(text)[0][0]
    assert "p (not adjusted)" in header and "Adj. p" not in header


@pytest.mark.parametrize("summary", ["/dev/stdout", "log.txt"])
def test_a_summary_to_the_jobs_own_stdout_is_not_overwritten(
    tmp_path: Path, run, summary: str
) -> None:
    """``--summary /dev/stdout > log.txt`` (or ``--summary log.txt > log.txt``) opened the
    log anew, with an offset of its own: the console's next line wrote over the summary's
    heading. (Analysed as the command does, frontier bootstrap included: the variant
    table's Pareto cells carry its shares.)"""
    import subprocess
    import sys

    args = [str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml")]
    log = tmp_path / "log.txt"
    with log.open("w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "agenticlens_frames.cli", "experiment", "run", *args,
             "--save", "r.json", "--summary", summary],
            stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = log.read_text(encoding="utf-8")
    console, _, block = text.partition("\n\n### Experiment support-agent-upgrade (version 1)\n")
    assert "Verdicts against baseline" in console and block  # the console, then the block
    # The whole block, then the console's last line, as a summary written to its own file.
    expected = summary_markdown(analyze(run)).partition("\n")[2]
    assert block == f"{expected}Appended the Markdown summary to {summary}\n"


def test_a_reports_failed_gate_is_in_the_summary_of_a_plain_re_render(tmp_path: Path) -> None:
    """`experiment report r.json --summary s.md` (no gate asked for) showed the saved
    non-inferiority gate's failure on the console and left it out of the summary."""
    import statistics
    import subprocess
    import sys

    args = [str(EXAMPLE / "manifest.yaml"), str(EXAMPLE / "suite.yaml")]
    cli = [sys.executable, "-m", "agenticlens_frames.cli", "experiment"]
    ran = subprocess.run(
        [*cli, "run", *args, "-q", "--save", "r.json", "--noninferiority", "latency=200"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 5, ran.stderr
    done = subprocess.run(
        [*cli, "report", "r.json", "-q", "--summary", "s.md"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "**Failed, not applied (exit 0).** Non-inferiority gate failed: model-large" in text
    # Independently: model-large's one-sided 95% upper bound of the per-case mean latency
    # difference (unknown latencies left out), from the saved trials.
    report = json.loads((tmp_path / "r.json").read_text())

    def latencies(variant: dict) -> dict[str, float]:
        seen: dict[str, list[float]] = {}
        for trial in variant["trials"]:
            for case in (trial.get("report") or {}).get("cases", []):
                if case.get("latency_ms"):
                    seen.setdefault(case["case_id"], []).append(case["latency_ms"])
        return {k: statistics.mean(x) for k, x in seen.items()}

    by_id = {v["variant_id"]: latencies(v) for v in report["variants"]}
    base, cand = by_id["baseline"], by_id["model-large"]
    d = [cand[k] - base[k] for k in base if k in cand]
    bound = statistics.mean(d) + stats.t.ppf(0.95, len(d) - 1) * statistics.stdev(d) / len(d) ** 0.5
    assert f"- model-large (latency): upper 95% bound {bound:+.4g} ms per attempt" in text


def test_a_gate_not_asked_for_is_placed_as_on_the_console(run) -> None:
    """A saved gate re-rendered without one asked for: a failed one before the verdict
    sentences, a passed one after them, each with every candidate's bound (a passing
    candidate's too), escaped, and said not to have set the exit status."""
    from ..conftest import latency_upper_bounds

    bounds = latency_upper_bounds(run)
    failing = [c for c, bound in bounds.items() if bound >= 200]
    gate = [{"dimension": "latency", "margin": 200}]
    text = summary_markdown(
        analyze(run, comparisons={"correction": "holm", "noninferiority": gate})
    )
    lines = [
        "**Failed, not applied (exit 0).** Non-inferiority gate failed: " + ", ".join(failing),
        *(
            f"- {c} (latency): upper 95% bound {b:+.4g} ms per attempt "
            + (r"\>=" if b >= 200 else r"\<")
            + " margin +200 ms per attempt"
            for c, b in bounds.items()
        ),
        "",
        "No gate was asked for: `experiment report --fail-on-regression` applies it.",
    ]
    block = "\n".join(lines)
    assert text.index(block) < text.index("Verdicts against baseline") and text.count(block) == 1
    lenient = [{"dimension": "quality", "margin": 0.9}]
    text = summary_markdown(
        analyze(run, comparisons={"correction": "holm", "noninferiority": lenient})
    )
    passed = text.index("\n**Passed, not applied (exit 0).** Non-inferiority gate passed:\n")
    assert text.index("- **large-v2** vs baseline") < passed < text.index("> [!WARNING]")
    assert "Non-inferiority gate failed" not in text


def test_the_folded_compatible_row_has_every_number(analysis) -> None:
    """The folded AgenticLens-compatible table: a candidate's row keeps every column (the
    pooled rate with its Wilson interval, the Δ in points, the z-test p, the changed
    factors), checked here with statsmodels: 61 and 50 of 70 attempts passed."""
    from statsmodels.stats.proportion import proportion_confint, proportions_ztest

    from agenticlens_frames.report.console import COMPAT_HEADER, COMPAT_TITLE

    details = summary_markdown(analysis).split("<details>")[1]
    compat = details[details.index(f"{COMPAT_TITLE} · baseline") :]
    table = next(t for t in _tables(compat) if t[0][0] == "Variant")
    assert table[0] == ["Variant", *COMPAT_HEADER[1:]]
    row = next(r for r in table if r[0] == "prompt-v2")
    low, high = proportion_confint(61, 70, method="wilson")
    p = proportions_ztest([61, 50], [70, 70])[1]
    assert row[:4] == [
        "prompt-v2",
        f"{100 * 61 / 70:.1f}% [{low:.0%}–{high:.0%}]",
        f"{100 * (61 - 50) / 70:+.1f} pp",
        f"{p:.3f}",
    ]
    assert len(row) == len(table[0]) and row[-1] == "prompt: v1 → v2"
    low, high = proportion_confint(50, 70, method="wilson")
    assert table[1] == ["baseline", f"{100 * 50 / 70:.1f}% [{low:.0%}–{high:.0%}]", *["-"] * 6]
