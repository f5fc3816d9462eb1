"""The console summary leads with the case-level verdicts; AgenticLens's numbers are
labelled and never marked significant."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from rich.console import Console

from agenticlens_frames import analyze, case_level_summary, load_experiment
from agenticlens_frames.paired.verdicts import HOW_TO_DECLARE
from agenticlens_frames.report.console import print_summary

from ..conftest import EXAMPLE


@pytest.fixture(scope="module")
def run():
    return load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")


def _printed(analysis) -> str:
    console = Console(record=True, width=400, color_system=None)  # no wrapping
    print_summary(analysis, console)
    return console.export_text()


def _verdict_rows(text: str) -> dict[tuple[str, str], list[str]]:
    """(dimension, candidate) -> the cells of its row in the verdict table."""
    table = text[text.index("Verdicts against") : text.index("Each candidate minus")]
    rows: dict[tuple[str, str], list[str]] = {}
    dimension = ""
    for line in table.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if not any(cells[1:]):
            dimension = cells[0]  # a dimension's heading row
        else:
            rows[(dimension, cells[0])] = cells
    return rows


def test_the_bundled_example_leads_with_the_verdicts(run) -> None:
    analysis = analyze(run)
    text = _printed(analysis)
    # The first table is the verdict table, before the variants and the compatible numbers.
    verdicts = text.index("Verdicts against baseline")
    assert verdicts < text.index("Variants") < text.index("AgenticLens-compatible numbers")
    assert "Holm correction" in text[: text.index("Variants")]
    # AgenticLens's z-test p for prompt-v2, shown as it is, with no star anywhere.
    z = analysis.comparisons.set_index(analysis.comparisons["candidate_variant_id"].astype(str))
    p = z.loc["prompt-v2", "case_pass_rate_p_value"]
    assert f"{p:.3f}" == "0.022" and z.loc["prompt-v2", "statistically_significant"]
    assert "*" not in text
    line = next(x for x in text.splitlines() if "prompt-v2" in x and "0.022" in x)
    assert text.index(line) > text.index("AgenticLens-compatible numbers")
    # Every non-significant verdict says, on its own line, what the run could not detect:
    # the MDE's magnitude in the row's unit (or "beyond the scale"), and the caption says
    # what that number means.
    rows = _verdict_rows(text)
    units = {"proportion": lambda m: f"{100 * m:.1f} pp", "ms": lambda m: f"{m:.0f} ms"}
    units["usd"] = lambda m: f"{m:.5f} USD"
    checked = 0
    for r in analysis.verdicts.to_dict("records"):
        cells = rows[(r["dimension"], r["candidate_variant_id"])]
        assert cells[3] == r["verdict"]
        if r["verdict"] != "no detectable difference":
            assert cells[4] == "-"
            continue
        mde = r["mde"]
        bounded = r["unit"] == "proportion" and mde > 1
        expected = "beyond the scale" if (mde == float("inf") or bounded) else units[r["unit"]](mde)
        assert cells[4] == expected
        checked += 1
    assert checked >= 10
    caption = re.sub(r"\s+", " ", text[text.index("Each candidate minus") : text.index("Variants")])
    assert "would have found with 80% power at the level the correction sets" in caption
    # What the numbers are, where they are shown.
    assert "Trial success: share of trials in which every case passed" in text
    assert "retrieval-dense: 1 of 5 trials failed" in text
    # The headline is the recommended case-level row (the beta-binomial interval here).
    levels = case_level_summary(run)
    rec = levels[levels["recommended"] & (levels["variant_id"] == "retrieval-dense")].iloc[0]
    assert rec["estimate"] == pytest.approx(23 / 28)  # completed trials only
    assert f"82.1% [{100 * rec['ci_low']:.0f}%–{100 * rec['ci_high']:.0f}%]" in text
    assert "65.7% [54%–76%]" in text  # AgenticLens's, in its labelled section


def test_without_a_correction_nothing_is_marked_and_the_output_says_how(run) -> None:
    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    text = _printed(analyze(undeclared))
    head = text[: text.index("Variants")]
    # The title wraps to the table's width.
    assert "per-comparison intervals (no correction declared)" in re.sub(r"\s+", " ", head)
    assert "Adj. p" not in head and "Verdict" not in head
    for word in ("better", "worse", "no detectable difference"):
        assert word not in head
    assert "*" not in text
    assert "comparisons: {correction: holm}" in re.sub(r"\s+", " ", text)
    assert re.sub(r"\s+", " ", HOW_TO_DECLARE) in re.sub(r"\s+", " ", text)
    # No verdicts were printed, so the compat section must not send the reader to them.
    compat = re.sub(r"\s+", " ", text[text.index("AgenticLens-compatible numbers") :])
    assert "verdicts above" not in compat
    assert "no verdict is given without a declared correction" in compat
    # The page's compatible section too (it sent the reader to "the verdicts at the top").
    from agenticlens_frames.report.html import render_html

    for analysis, said in ((analyze(undeclared), False), (analyze(run), True)):
        page = render_html(analysis)
        section = page[page.index("<section id='compat'>") :]
        section = section[: section.index("</section>")]
        assert ("read the verdicts at the top" in section) is said
        assert ("no verdict is given without a declared correction" in section) is not said


def test_the_attempt_independence_warning_sits_with_the_numbers_it_is_about(run) -> None:
    # The package warns that its pooled intervals and z-test treat attempts as independent.
    # The JSON report keeps the warning (compatibility); the console does not list it as a
    # general warning under case-level headline numbers it is not about, but says it in the
    # caption of the AgenticLens-compatible section.
    from agenticlens_frames.report.json_report import build_report

    analysis = analyze(run)
    package_warning = next(w for w in analysis.warnings if "treat each case attempt" in w)
    assert package_warning in build_report(analysis)["warnings"]
    text = _printed(analysis)
    assert "treat each case attempt" not in text
    compat = text[text.index("AgenticLens-compatible numbers") :]
    assert "pool all attempts as if independent" in compat
    # the other report warnings are still listed
    assert "completed fewer than 5 trials" in text


def test_a_verdict_row_fits_one_line_of_a_120_column_terminal(run) -> None:
    # Each verdict row is one line at 120 columns: no wrapped verdicts, no cut names.
    analysis = analyze(run)
    console = Console(record=True, width=120, color_system=None)
    print_summary(analysis, console)
    text = console.export_text()
    rows = _verdict_rows(text)
    expected = {
        (r["dimension"], r["candidate_variant_id"]) for r in analysis.verdicts.to_dict("records")
    }
    assert set(rows) == expected
    assert all(len(line) <= 120 for line in text.splitlines())


def test_quiet_console_is_not_rendered_into(run, monkeypatch):
    # A quiet console drops what it is given only after rendering it; the summary is not
    # handed to one at all (and a loud console still gets it).
    analysis = analyze(run)
    given: list[object] = []
    quiet = Console(quiet=True)
    monkeypatch.setattr(quiet, "print", lambda *a, **k: given.append(a))
    print_summary(analysis, quiet)
    assert given == []
    loud = Console(file=io.StringIO())
    monkeypatch.setattr(loud, "print", lambda *a, **k: given.append(a))
    print_summary(analysis, loud)
    assert given


def test_a_declared_verdict_table_says_its_interval_is_per_comparison(run) -> None:
    """The verdict follows the adjusted p, the interval beside it is not adjusted: the
    console and the HTML page say so (they did only when no correction was declared)."""
    from agenticlens_frames.report.html import verdicts_table_html

    analysis = analyze(run)
    assert analysis.verdicts.attrs["declared"]
    console = Console(record=True, width=120, color_system=None)
    print_summary(analysis, console)
    said = " ".join(console.export_text().split())
    assert "The interval is per comparison (95%), not adjusted for the family" in said
    html = verdicts_table_html(analysis.verdicts)
    assert "CI, per comparison</small>" in html and "not adjusted for the family" in html
    # a verdict level that is not the interval's is said outright (α = 0.5 beside 95%)
    loose = analyze(run, comparisons={"correction": "holm", "alpha": 0.5})
    console = Console(record=True, width=120, color_system=None)
    print_summary(loose, console)
    said = " ".join(console.export_text().split())
    assert "the verdict follows the adjusted p at α = 0.5, not the interval." in said


def test_a_declared_none_correction_names_no_adjusted_p(run) -> None:
    """Declared "none": there is no adjusted p, yet every surface said the verdict
    followed it. Each now says the verdict follows each comparison's own p."""
    from agenticlens_frames.report.html import verdicts_table_html
    from agenticlens_frames.report.summary import summary_markdown

    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    analysis = analyze(undeclared, comparisons={"correction": "none"})
    v = analysis.verdicts
    assert v.attrs["declared"] and set(v["correction"]) == {"none"}
    # independently: with no correction the adjusted p is the raw p
    assert (v["adjusted_p_value"] == v["p_value"]).all()
    console = Console(record=True, width=120, color_system=None)
    print_summary(analysis, console)
    wanted = "no correction is declared, so the verdict follows each comparison's own p."
    for text in (
        console.export_text(),
        verdicts_table_html(v).replace("&#x27;", "'"),
        summary_markdown(analysis).replace("\\'", "'"),
    ):
        flat = " ".join(text.split())
        assert wanted in flat and "follows the adjusted p" not in flat


def test_the_verdict_caption_names_the_test_and_a_fallback(run) -> None:
    """--paired-method mcnemar on attempts with five trials falls back to the t test per
    row; the console and the page say so (it was only in the files' ci_method)."""
    from agenticlens_frames.report.html import verdicts_table_html

    analysis = analyze(run, comparisons={"correction": "holm", "method": "mcnemar"})
    methods = set(analysis.verdicts["ci_method"])
    assert methods == {"t (McNemar needs one binary attempt per arm per case)"}
    console = Console(record=True, width=120, color_system=None)
    print_summary(analysis, console)
    said = " ".join(console.export_text().split())
    assert "test: paired t (McNemar needs one binary attempt per arm per case)." in said
    assert "test: paired t (McNemar needs" in verdicts_table_html(analysis.verdicts)
    plain = Console(record=True, width=120, color_system=None)
    print_summary(analyze(run), plain)
    assert "test: paired t." in " ".join(plain.export_text().split())


def test_the_compatible_deltas_are_in_points_and_dollars(run) -> None:
    """AgenticLens's Δ pass rate is a difference of rates: printed "+15.7%" it read as a
    relative change beside the verdicts' "+15.7 pp"; Δ cost had no unit."""
    text = _printed(analyze(run, frontier_n_resamples=0))
    compat = text[text.index("AgenticLens-compatible numbers") :]
    rows = {line.split("│")[1].strip(): line for line in compat.splitlines() if "│" in line}
    comparisons = analyze(run, frontier_n_resamples=0).comparisons.set_index("candidate_variant_id")
    delta = comparisons.loc["prompt-v2", "case_pass_rate_delta"]
    assert delta == pytest.approx(61 / 70 - 50 / 70)  # the case pass rates: 87.1 % and 71.4 %
    assert (
        f"+{100 * delta:.1f} pp" in rows["prompt-v2"] and "%" not in rows["prompt-v2"].split("│")[3]
    )
    cost = comparisons.loc["model-large", "total_cost_usd_delta"]
    assert f"+{cost:.4f} USD" in rows["model-large"]


def test_a_narrow_terminal_gets_each_verdict_as_its_sentence(run) -> None:
    """At 40 columns the table's candidate and verdict columns shrank to nothing and the
    adjusted p read "1…": below NARROW each row is printed as its whole statement."""
    from agenticlens_frames.report.console import NARROW

    analysis = analyze(run, frontier_n_resamples=0)
    console = Console(record=True, width=40, color_system=None)
    print_summary(analysis, console)
    text = console.export_text()
    head = re.sub(r"\s+", " ", text[: text.index("Variants")])
    for statement in analysis.verdicts["statement"]:
        assert f"• {statement}" in head, statement
    assert "┃" not in text[: text.index("Variants")]
    assert NARROW > 40 and "┃ Candidate" in _printed(analysis)  # wide: the table


def test_p_values_under_a_declared_none_are_not_called_adjusted() -> None:
    """comparisons: {correction: none} decides each comparison on its own p: the column
    said "Adj. p"."""
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    run = dataclasses.replace(run, manifest=dataclasses.replace(run.manifest, comparisons=None))
    console = Console(record=True, width=200, color_system=None)
    print_summary(analyze(run, correction="none", frontier_n_resamples=0), console)
    verdicts = console.export_text().split("Variants")[0]
    assert "p (not adjusted)" in verdicts and "Adj. p" not in verdicts


def test_the_verdict_caption_names_the_test_behind_the_p_values(run, tmp_path) -> None:
    """With --paired-method wilcoxon (t interval, Wilcoxon p) the console, the page and
    --summary said "test: paired t", the interval's method, as if the option had been
    ignored; a saved report re-rendered says the same."""
    import numpy as np
    from scipy import stats

    from agenticlens_frames.report.html import verdicts_table_html
    from agenticlens_frames.report.json_report import write_json_report
    from agenticlens_frames.report.saved import load_report
    from agenticlens_frames.report.summary import summary_markdown

    analysis = analyze(run, comparisons={"correction": "holm", "method": "wilcoxon"})
    # Independently: the p-value of prompt-v2's quality row is Wilcoxon's, zeros dropped.
    attempts = run.attempts[run.attempts["status"] != "trial_failed"]
    rate = attempts.groupby(["variant_id", "case_id"], observed=True)["passed"].mean()
    d = (rate["prompt-v2"] - rate["baseline"]).dropna().to_numpy(dtype=float)
    expected = stats.wilcoxon(d[d != 0]).pvalue
    v = analysis.verdicts
    row = v[(v["candidate_variant_id"] == "prompt-v2") & (v["dimension"] == "quality")]
    assert np.isclose(float(row["p_value"].iloc[0]), expected)
    said = "test: Wilcoxon signed-rank; interval: paired t."
    saved = tmp_path / "r.json"
    write_json_report(analysis, saved)
    for a in (analysis, load_report(saved)):
        console = Console(record=True, width=120, color_system=None)
        print_summary(a, console)
        assert said in " ".join(console.export_text().split())
        assert said in summary_markdown(a)
        assert said[:-1] in verdicts_table_html(a.verdicts)


def test_a_row_without_an_interval_shows_n_a_not_nothing(tmp_path) -> None:
    """One paired case: no interval. Rich read the cell's "[n/a]" as a markup tag and
    printed the difference alone ("+33.3 pp"), where the summary, the page and the JSON
    say the interval is missing; the console now prints "[n/a]" too."""
    from agenticlens_frames.testing import make_synthetic

    folder = make_synthetic(tmp_path / "one", variants=3, trials=3, cases=1, seed=13)
    analysis = analyze(
        load_experiment(folder / "manifest.yaml", folder / "suite.yaml"),
        comparisons={"correction": "holm"},
    )
    v = analysis.verdicts
    assert len(v) and v["ci_low"].isna().all()  # one case: no interval anywhere
    rows = _verdict_rows(_printed(analysis))
    assert len(rows) == len(v)
    for cells in rows.values():
        assert cells[1].endswith(" [n/a]"), cells


def test_the_console_heading_names_the_family_as_every_surface_does(run) -> None:
    """The console's heading said "no correction over the family (α = 0.05)" for a declared
    none, where the summary and the page said the α is per comparison, and it never gave
    the family's size. Now every heading says the same words."""
    from agenticlens_frames.report.html import verdicts_table_html
    from agenticlens_frames.report.summary import summary_markdown

    for correction, expected in (
        ("none", "no correction (declared), α = 0.05 per comparison"),
        ("holm", "Holm correction over the family of {n} comparisons, α = 0.05"),
    ):
        undeclared = dataclasses.replace(
            run, manifest=dataclasses.replace(run.manifest, comparisons=None)
        )
        analysis = analyze(undeclared, comparisons={"correction": correction})
        v = analysis.verdicts
        # independently: the family is every comparison that has a p-value
        wanted = expected.format(n=int(v["p_value"].notna().sum()))
        head = _printed(analysis).split("\n┏")[0]
        assert wanted in " ".join(head.split())
        for text in (summary_markdown(analysis), verdicts_table_html(v)):
            assert wanted in " ".join(text.split())


def test_every_pareto_flag_carries_how_sure_the_bootstrap_is(run) -> None:
    """The variant tables said "Pareto: yes" for a variant the case bootstrap put on the
    frontier in 59% of resamples: the flag read as certain. Each surface now shows the
    share beside it, and says what it is."""
    import html

    from agenticlens_frames._repr import analysis_repr_html
    from agenticlens_frames.report.html import _variant_table
    from agenticlens_frames.report.summary import summary_markdown

    a = analyze(run, frontier_n_resamples=400, frontier_seed=7)
    text = _printed(a)
    summary = summary_markdown(a)
    page = html.unescape(_variant_table(a))
    notebook = html.unescape(analysis_repr_html(a))
    shares = dict(zip(a.variants["variant_id"], a.variants["p_frontier"], strict=True))
    # Some variant must be uncertain, or the test could not tell a share from a flag.
    assert any(0.05 < p < 0.95 for p in shares.values())
    for variant, on in zip(a.variants["variant_id"], a.variants["pareto_optimal"], strict=True):
        p = shares[variant]
        share = ">99%" if 0.995 <= p < 1 else "<1%" if 0 < p < 0.005 else f"{round(100 * p)}%"
        cell = f"{'yes' if on else 'no'} · {share}"
        row = next(line for line in text.splitlines() if line.startswith(f"│ {variant} "))
        assert row.rstrip().rstrip("│").rstrip().endswith(cell), row
        assert re.search(rf"\| {re.escape(variant)} \|.*\| {re.escape(cell)} \|", summary)
        if on:
            assert f"pareto · {share}" in page and f"Pareto ({share} of resamples)" in notebook
        elif share != "0%":
            assert f"off the frontier · {share}" in page
    for words in (text, summary):
        assert "share of 400 case-bootstrap resamples" in " ".join(words.split())


def test_the_console_and_the_summary_say_which_factor_did_it(run) -> None:
    """The factor effects (which factor made the difference, the case as the unit) were on
    the page and in the JSON only: a CI log or a pull-request summary never said which
    factor did it. Both now show the pass-rate terms, with the correction over their own
    family. The estimates are checked against the per-case contrasts computed here."""
    from statsmodels.stats.multitest import multipletests

    from agenticlens_frames.report.summary import summary_markdown

    a = analyze(run, frontier_n_resamples=0)
    # Each case's pass rate over its evaluated attempts (a failed trial's left out).
    evaluated = run.attempts[run.attempts["status"] != "trial_failed"]
    rate = evaluated.groupby(["case_id", "variant_id"])["passed"].mean().unstack()
    # retrieval is varied only by retrieval-dense, its interactions not estimable: its
    # effect is that variant's contrast with the baseline; model × prompt is the 2 × 2
    # interaction contrast of the four variants that cross them.
    retrieval = (rate["retrieval-dense"] - rate["baseline"]).mean()
    interaction = (
        rate["large-v2"] - rate["model-large"] - rate["prompt-v2"] + rate["baseline"]
    ).mean()
    fe = a.factor_effects[a.factor_effects["metric"] == "pass_rate"]
    estimable = fe[fe["estimable"].astype(bool)]
    holm = dict(
        zip(estimable["term"], multipletests(estimable["p_value"], method="holm")[1], strict=True)
    )
    text = " ".join(_printed(a).split())
    summary = summary_markdown(a)
    assert text.index("Which factor did it") < text.index("AgenticLens-compatible numbers")
    for term, estimate in (
        ("retrieval: dense vs bm25", retrieval),
        ("model × prompt: gpt-large & v2", interaction),
    ):
        effect, p = f"{100 * estimate:+.1f} pp", f"{holm[term]:.3g}"
        assert f"│ {term} │ {effect} [" in text and f"│ {p} │" in text
        assert f"{effect} [" in summary and f"| {p} |" in summary.split("Which factor did it")[1]
    assert "│ model × retrieval: gpt-large & dense │ not estimable │ — │ — │" in text
    assert "Holm correction over the estimable factor-effect terms" in text
    assert "Which factor did it" in summary


def test_a_single_factor_effect_term_is_said_in_the_singular(tmp_path) -> None:
    """A design varying one factor (model, two levels) has one estimable pass-rate term;
    the correction statement said "here 1 terms"."""
    import shutil

    import yaml

    from agenticlens_frames.report.console import factor_correction_statement

    folder = tmp_path / "one-factor"
    shutil.copytree(EXAMPLE, folder)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text(encoding="utf-8"))
    for variant in manifest["variants"]:
        variant["factors"] = {"model": variant["factors"]["model"]}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    a = analyze(
        load_experiment(folder / "manifest.yaml", folder / "suite.yaml"), frontier_n_resamples=0
    )
    fe = a.factor_effects
    assert fe[fe["metric"] == "pass_rate"]["term"].tolist() == ["model: gpt-large vs gpt-small"]
    statement = factor_correction_statement(a)
    assert "here 1 term, against the verdicts' 19 comparisons" in statement, statement


def test_a_failed_gate_leads_the_console_and_a_passed_one_follows_the_verdicts(run) -> None:
    """The exit status (5) acts on a failed non-inferiority gate: on the console it comes
    before the verdicts, whose "no detectable difference" rows would read as reassurance
    above it; a passed gate follows them, before the variant table. Each printed once."""
    from ..conftest import latency_upper_bounds

    bounds = latency_upper_bounds(run)
    failing = [c for c, bound in bounds.items() if bound >= 200]
    assert failing == ["model-large", "retrieval-dense", "large-v2"]  # prompt-v2 passes
    gated = analyze(
        run,
        comparisons={
            "correction": "holm",
            "noninferiority": [{"dimension": "latency", "margin": 200}],
        },
        frontier_n_resamples=0,
    )
    lines = _printed(gated).splitlines()
    headline = f"Non-inferiority gate failed: {', '.join(failing)}"
    # The experiment's name first (in a CI log of several experiments a gate above it read
    # as the previous one's), once: the verdict table below no longer repeats it.
    assert lines[0] == "Experiment · support-agent-upgrade"
    assert sum("support-agent-upgrade" in line for line in lines) == 1
    assert lines[1] == headline and lines.count(headline) == 1
    for i, (candidate, bound) in enumerate(bounds.items(), start=2):
        side = ">=" if bound >= 200 else "<"
        assert lines[i] == (
            f"  {candidate} (latency): upper 95% bound {bound:+.4g} ms per attempt "
            f"{side} margin +200 ms per attempt"
        )
    assert lines[6].strip().startswith("Verdicts against baseline: case-level paired")
    # A lenient quality gate (a 90-point margin) passes: said after the verdicts' caption.
    lenient = analyze(
        run,
        comparisons={
            "correction": "holm",
            "noninferiority": [{"dimension": "quality", "margin": 0.9}],
        },
        frontier_n_resamples=0,
    )
    text = _printed(lenient)
    passed = text.index("\nNon-inferiority gate passed:\n")
    assert text.index("Verdicts against baseline") < text.index("Each candidate minus") < passed
    assert passed < text.index("Variants") and text.count("Non-inferiority gate") == 1


def test_a_report_without_case_level_numbers_marks_its_pooled_rates(run) -> None:
    """A report AgenticLens wrote has no case-level numbers: the variant table shows the
    pooled case pass rate with its Wilson interval, marked † and said to treat attempts as
    independent, and no note claims that the rate "leaves out" a failed trial (the pooled
    rate counts it as failing every case)."""
    from statsmodels.stats.proportion import proportion_confint

    bare = dataclasses.replace(analyze(run, frontier_n_resamples=0), paired_frames={})
    text = _printed(bare)
    variants = text[text.index("Variants") : text.index("pass@k")]
    # 50 and 46 of 70 attempts passed (retrieval-dense's failed trial counted as failing).
    for variant, passed in (("baseline", 50), ("retrieval-dense", 46)):
        low, high = proportion_confint(passed, 70, method="wilson")
        cell = f"{100 * passed / 70:.1f}% [{100 * low:.0f}%–{100 * high:.0f}%] †"
        row = next(line for line in variants.splitlines() if line.startswith(f"│ {variant} "))
        assert row.split("│")[2].strip() == cell, row
    flat = " ".join(variants.split())
    assert "† Pass rate: AgenticLens's case pass rate with a pooled Wilson interval" in flat
    assert "trials failed" not in flat
    # With case-level numbers only the variant whose trial failed gets that note.
    flat = " ".join(_printed(analyze(run, frontier_n_resamples=0)).split())
    assert re.findall(r"(\S+): \d+ of 5 trials failed", flat) == ["retrieval-dense"]
    assert (
        f"retrieval-dense: 1 of 5 trials failed; the pass rate above leaves it out, while the "
        f"AgenticLens case pass rate ({100 * 46 / 70:.1f}%, below) counts it as failing every "
        "case." in flat
    )


def test_the_last_line_names_the_frontier_the_trials_and_the_seed(run) -> None:
    """The line under the tables: the Pareto frontier's members (the variants flagged on
    it), the trial count and the seed ("none" for a run without one)."""
    analysis = analyze(run, frontier_n_resamples=0)
    assert analysis.variants["pareto_optimal"].tolist() == [True, False, True, False, True]
    line = "Pareto frontier: baseline, prompt-v2, large-v2 | Trials per variant: 5 | Seed: 2611"
    assert line in _printed(analysis).splitlines()
    unseeded = dataclasses.replace(analysis, info={**analysis.info, "random_seed": None})
    assert line.replace("2611", "none") in _printed(unseeded).splitlines()


def test_the_verdict_heading_is_the_family_alone_and_an_empty_one_names_its_correction(
    run,
) -> None:
    """The heading names the family (19 comparisons: 5 dimensions × 4 candidates, less
    retrieval-dense's reliability, which no case could compare); the correction's bare
    name is added only when there is no family to name it (no candidate compared)."""
    analysis = analyze(run, frontier_n_resamples=0)
    lines = [line.strip() for line in _printed(analysis).splitlines()]
    heading = (
        "Verdicts against baseline: case-level paired comparisons, Holm correction over the "
        f"family of {5 * 4 - 1} comparisons, α = 0.05"
    )
    assert lines[:2] == ["Experiment · support-agent-upgrade", heading]
    empty = dataclasses.replace(analysis, verdicts=analysis.verdicts.iloc[0:0])
    assert empty.verdicts.attrs["declared"]
    head = " ".join(_printed(empty).split("\n┏")[0].split())
    assert head.endswith("(Holm correction)"), head
    # ... and the factor terms' correction is not set against a family that is not there.
    from agenticlens_frames.report.console import factor_correction_statement

    assert "here 4 terms. So for the same contrast" in factor_correction_statement(empty)


def test_the_table_gives_way_to_sentences_only_below_narrow(run) -> None:
    """NARROW columns still get the table; one fewer gets each verdict as its sentence."""
    from agenticlens_frames.report.console import NARROW

    analysis = analyze(run, frontier_n_resamples=0)
    for width, table in ((NARROW, True), (NARROW - 1, False)):
        console = Console(record=True, width=width, color_system=None)
        print_summary(analysis, console)
        head = console.export_text().split("Variants")[0]
        assert ("┃" in head) is table and ("• " in head) is not table, width
        # The caption (what the difference and the detectable change are) either way.
        assert "Each candidate minus the baseline, case by case" in " ".join(head.split())


def test_without_a_correction_the_factor_table_shows_the_unadjusted_p(run) -> None:
    """No correction declared: the factor effects have no adjusted p; the column says
    "p (not adjusted)" and holds each term's own p-value, the ones that, Holm-adjusted
    (statsmodels), give the declared run's "Adj. p"."""
    from statsmodels.stats.multitest import multipletests

    from agenticlens_frames.report.console import factor_cells

    undeclared = dataclasses.replace(
        run, manifest=dataclasses.replace(run.manifest, comparisons=None)
    )
    plain = analyze(undeclared, frontier_n_resamples=0)
    cells = factor_cells(plain)
    estimable = [row for row in cells if row[1] != "not estimable"]
    assert len(estimable) == 4
    raw = [float(row[2]) for row in estimable]
    holm = [f"{p:.3g}" for p in multipletests(raw, method="holm")[1]]
    declared = [row[2] for row in factor_cells(analyze(run, frontier_n_resamples=0))][:4]
    # (3 significant digits on each side: the same to that rounding)
    assert [float(h) for h in holm] == pytest.approx([float(d) for d in declared], rel=5e-3)
    text = " ".join(_printed(plain).split())
    assert "┃ Effect on pass rate ┃ p (not adjusted) ┃ Estimated from ┃" in text
    assert "No correction was declared, so the p-values are unadjusted" in text


def test_without_factor_effects_no_factor_table_or_statement(run) -> None:
    """A design (or saved report) without factor effects: no factor table, no notes and
    no correction statement about a family that is not there."""
    import pandas as pd

    from agenticlens_frames.report.console import factor_correction_statement, factor_notes

    none = dataclasses.replace(analyze(run, frontier_n_resamples=0), factor_effects=pd.DataFrame())
    assert factor_correction_statement(none) == "" and factor_notes(none) == []
    assert "Which factor did it" not in _printed(none)


def test_the_pass_k_caption_is_there_only_when_a_trial_failed(run) -> None:
    """ "A failed trial counts as failed attempts here": said under pass@k only when some
    variant attempted more trials than it completed (retrieval-dense's 4 of 5)."""
    import pandas as pd

    from agenticlens_frames import ExperimentRun

    caption = "A failed trial counts as failed attempts here (as in AgenticLens)"
    text = " ".join(_printed(analyze(run, frontier_n_resamples=0)).split())
    assert caption in text
    # Two variants, 3 trials of 10 cases, every trial completed.
    rows = [
        {"variant_id": v, "trial": t, "case_id": f"c{c}", "passed": (c + t) % 3 != 0}
        for v in ("base", "cand")
        for t in (1, 2, 3)
        for c in range(10)
    ]
    complete = ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["base", "cand"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(10)]}),
    )
    text = " ".join(_printed(analyze(complete, correction="holm")).split())
    assert "pass@k / pass^k (mean over cases)" in text and caption not in text


def test_consistency_is_a_whole_percentage_of_cases_alike_in_every_trial(run) -> None:
    """The Consistency cell: the share of cases whose outcome is the same in all 5 trials,
    in whole percent (4 of 14 cases is "29%", not "28.6%"), counted here from the
    attempts."""
    attempts = run.attempts
    text = _printed(analyze(run, frontier_n_resamples=0))
    variants = text[text.index("Variants") : text.index("pass@k")]
    for variant in ("baseline", "prompt-v2", "large-v2"):
        mine = attempts[attempts["variant_id"] == variant]
        alike = mine.groupby("case_id", observed=True)["passed"].nunique().eq(1)
        row = next(line for line in variants.splitlines() if line.startswith(f"│ {variant} "))
        assert row.split("│")[7].strip() == f"{100 * alike.mean():.0f}%", row
