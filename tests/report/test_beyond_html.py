"""The factor-effects section of the HTML page on a design that cannot separate every
factor: terms without an estimate say so, and no empty interaction chart is laid out."""

from __future__ import annotations

import math
import re
from html import unescape
from pathlib import Path

import pytest

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.report.beyond_html import beyond_figures, beyond_sections, frontier_table
from agenticlens_frames.testing import make_synthetic


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory):
    # Four variants over three factors: retrieval changes together with model, so some
    # terms are not estimable and no interaction is.
    folder = make_synthetic(tmp_path_factory.mktemp("fe"), variants=4, trials=3, cases=40)
    return analyze(load_experiment(folder / "manifest.yaml", folder / "suite.yaml"))


def _rows(html: str) -> list[list[str]]:
    table = re.search(r"<table id='factor-effects-table'>(.*?)</table>", html, re.S)
    assert table is not None
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)[1:]  # past the header
    return [[unescape(c) for c in re.findall(r"<td>(.*?)</td>", r, re.S)] for r in rows]


def test_terms_without_estimate_say_not_estimable(analysis) -> None:
    fe = analysis.factor_effects
    pass_rate = fe[fe["metric"] == "pass_rate"]
    missing = pass_rate[pass_rate["estimate"].isna()]
    assert len(missing) > 0, "the fixture should have terms the design cannot separate"
    rows = {r[0]: r for r in _rows(beyond_sections(analysis))}
    assert len(rows) == len(pass_rate)
    for term in missing["term"]:
        assert rows[term][1:5] == ["not estimable", "—", "—", "—"]
    for t in pass_rate.dropna(subset=["estimate"]).itertuples():
        # percentage points, as the verdicts write a pass-rate difference (was "+15.7%")
        assert rows[t.term][1] == f"{100 * t.estimate:+.1f} pp"
        assert not math.isnan(float(rows[t.term][3]))
    assert "nan" not in beyond_sections(analysis)


def test_no_interaction_chart_without_an_estimable_interaction(analysis) -> None:
    fe = analysis.factor_effects
    assert not (fe["estimable"].astype(bool) & (fe["kind"] == "interaction")).any()
    assert "factor_interaction" not in beyond_figures(analysis)
    assert "fig-factor_interaction" not in beyond_sections(analysis)
    assert "fig-factor_effects" in beyond_sections(analysis)


def test_frontier_note_cautions_small_suites_only(analysis, tmp_path) -> None:
    # 40 cases: past the size where the simulated whiskers under-cover, no caution.
    assert analysis.pass_rates["n_cases"].max() == 40
    big = frontier_table(analysis)
    assert "P(on the frontier)" in big and "whiskers are rough" not in big
    # the bundled example has 14 cases, counted here from its suite file
    suite = Path(__file__).parents[2] / "data" / "support" / "suite.yaml"
    n_cases = sum(1 for line in suite.read_text().splitlines() if line.startswith("  - id:"))
    assert n_cases == 14
    small = analyze(load_experiment(suite.with_name("manifest.yaml"), suite))
    note = frontier_table(small)
    assert f"With {n_cases} cases the whiskers are rough" in note
    assert "not the chance the variant truly belongs there" in note


def test_frontier_note_quotes_the_measured_twins(analysis) -> None:
    """The note's range for two variants the suite cannot tell apart holds every twin
    cell of docs/statistics.md's generated table (benchmarks/coverage_frontier.py: mean
    p_frontier of D and E, 57–71 % at 10 cases, about 75 % at 100), within the table's
    Monte-Carlo error; it said 70–75 %, above every 10-case cell."""
    docs = (Path(__file__).parents[2] / "docs" / "statistics.md").read_text()
    block = docs[
        docs.index("<!-- coverage-frontier:start -->") : docs.index("coverage-frontier:end")
    ]
    rows = block[block.index("**p_frontier by true membership**") :].splitlines()
    twins = []
    for line in rows:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0][:1].isdigit():
            twins += [float(c.split(" ")[0]) for c in cells[-2:]]
    assert len(twins) == 2 * 24
    note = unescape(frontier_table(analysis))
    found = re.search(r"cannot tell apart both sit near (\d+)–(\d+)%", note)
    assert found is not None
    low, high = float(found.group(1)), float(found.group(2))
    error = 3.0  # about two Monte-Carlo standard errors of a mean over 300 data sets
    assert low - error <= min(twins) and max(twins) <= high + error


def test_frontier_note_counts_clusters_under_a_cluster_bootstrap() -> None:
    """40 cases in 14 clusters: the cluster bootstrap resamples 14 units, as rough as a
    case bootstrap of 14 cases (a doubled suite clustered by pair gives the original's
    numbers, tests/test_frontier.py), so the note cautions with the clusters' count; it
    counted the 40 cases and said nothing."""
    import numpy as np
    import pandas as pd

    from agenticlens_frames import ExperimentRun

    rng = np.random.default_rng(1)
    cases = [f"c{i}" for i in range(40)]
    attempts = pd.DataFrame(
        [
            {"variant_id": v, "trial": t, "case_id": c, "passed": bool(rng.random() < p)}
            for v, p in (("a", 0.6), ("b", 0.7))
            for t in (1, 2, 3)
            for c in cases
        ]
    )
    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": cases, "metadata": [{"topic": i // 3} for i in range(40)]}),
    )
    clustered = analyze(run, comparisons={"correction": "holm", "cluster": "topic"})
    assert clustered.variants.attrs["frontier"]["n_clusters"] == 14
    assert "With 14 clusters the whiskers are rough" in frontier_table(clustered)
    assert "about 90% at 10–20 clusters and about 82% at 5" in frontier_table(clustered)
    plain = analyze(run, comparisons={"correction": "holm"})
    assert "whiskers are rough" not in frontier_table(plain)


def test_cluster_notes_quote_the_measured_cluster_coverage() -> None:
    """The cluster bootstrap's numbers in the page's note and in the few-clusters settings
    note (about 82 % with 5 clusters, 90 % with 10–20) hold the ρ = 0.5 rows of
    docs/statistics.md's generated clustered table (benchmarks/coverage_frontier.py --part
    clusters), pass rate and latency averaged, within about two Monte-Carlo errors."""
    from agenticlens_frames.frontier import cluster_notes

    docs = (Path(__file__).parents[2] / "docs" / "statistics.md").read_text()
    block = docs[
        docs.index("<!-- coverage-frontier-clusters:start -->") : docs.index(
            "coverage-frontier-clusters:end"
        )
    ]
    covered = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] == "0.5":
            # cluster bootstrap: pass rate (5th) and latency (7th), "90.2 (3.1 / 6.7)"
            covered[int(cells[1])] = (float(cells[4].split()[0]) + float(cells[6].split()[0])) / 2
    assert sorted(covered) == [5, 10, 20, 40]
    error = 3.0
    assert abs(covered[5] - 82) <= error
    assert all(abs(covered[g] - 90) <= error for g in (10, 20))
    note = cluster_notes(5)[0]
    assert "about 82% with 5 clusters, 90% with 10" in note
