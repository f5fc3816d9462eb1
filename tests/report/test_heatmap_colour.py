"""The page's heatmap is coloured by the pass rate over the evaluated attempts, AgenticLens's
mean score one choice away: a case that scores 0.9 (partial credit) and fails every attempt
read green under the mean score while its label counted 0 passes.

Every expected number is computed here from the run's attempts table with pandas, not by
the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from agenticlens_frames import ExperimentRun, analyze
from agenticlens_frames.report.html import render_html, write_html_report
from tests.report.test_html_browser import open_page  # noqa: F401 (a fixture)

VARIANTS = ["base", "cand", "dead"]
CASES = [f"c{c}" for c in range(6)]
TRIALS = 5


def _attempt(variant: str, trial: int, case: int) -> dict[str, object]:
    if variant == "dead" or (variant == "base" and trial == TRIALS):
        # ``dead`` completed no trial; ``base``'s last trial failed (4 evaluated attempts).
        return {"passed": False, "score": np.nan, "status": "trial_failed"}
    if variant == "cand" and case == 0:
        return {"passed": False, "score": 0.9, "status": "ok"}  # high score, never passes
    passed = (case + trial) % 3 != 0
    return {"passed": passed, "score": 1.0 if passed else 0.25, "status": "ok"}


@pytest.fixture(scope="module")
def analysis():
    rows = [
        {"variant_id": v, "trial": t, "case_id": CASES[c], **_attempt(v, t, c)}
        for v in VARIANTS
        for t in range(1, TRIALS + 1)
        for c in range(len(CASES))
    ]
    run = ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": VARIANTS}),
        pd.DataFrame({"case_id": CASES}),
    )
    return analyze(run, correction="holm", frontier_n_resamples=0)


@pytest.fixture(scope="module")
def expected(analysis) -> pd.DataFrame:
    """Per (variant, case), from the attempts: passes, evaluated attempts, their pass rate
    and mean score (a failed trial evaluates nothing)."""
    att = analysis.run.attempts.assign(
        variant_id=lambda f: f["variant_id"].astype(str),
        case_id=lambda f: f["case_id"].astype(str),
        evaluated=lambda f: f["status"].astype(str) != "trial_failed",
    )
    ev = att[att["evaluated"]]
    out = pd.DataFrame(
        {
            "passes": att.groupby(["variant_id", "case_id"])["passed"].sum(),
            "attempts": att.groupby(["variant_id", "case_id"]).size(),
            "evaluated": att.groupby(["variant_id", "case_id"])["evaluated"].sum(),
            "mean_score": ev.groupby(["variant_id", "case_id"])["score"].mean(),
        }
    )
    out["rate"] = out["passes"] / out["evaluated"].where(out["evaluated"] > 0)
    assert out.loc[("cand", "c0"), "mean_score"] == pytest.approx(0.9)
    assert out.loc[("cand", "c0"), "rate"] == 0.0
    return out


def _matrix(expected: pd.DataFrame, column: str, ys: list[str], xs: list[str]) -> np.ndarray:
    return np.array([[expected.loc[(y, x), column] for x in xs] for y in ys], dtype=float)


def _heat(page: str) -> dict[str, object]:
    block = re.search(r"<script type='application/json' id='alf-data'>(.*?)</script>", page, re.S)
    return json.loads(block.group(1))["heat"]


def test_payload_carries_both_colourings(analysis, expected) -> None:
    page = render_html(analysis)
    heat = _heat(page)
    assert heat["defaultColour"] == "pass_rate"
    ys, xs = heat["variants"], heat["ids"]
    for key, column in (("pass_rate", "rate"), ("mean_score", "mean_score")):
        got = np.array(heat["z"][key], dtype=float)  # None → NaN
        np.testing.assert_allclose(got, _matrix(expected, column, ys, xs), atol=5e-4)
    # The selector, its default first; the note says what the colour is.
    assert "<select id='heat-colour'><option value='pass_rate' selected>" in page
    assert "mean score (AgenticLens)</option>" in page
    assert "Cell colour: the pass rate over the evaluated attempts" in page
    # The case table: (cand, c0) scores 0.90 and is red (hue 0), dead's cells grey.
    assert "<td class='c h0'>0/5 · 0.90</td>" in page
    assert "<td class='c none'>0/5</td>" in page


@pytest.mark.browser
def test_page_colours_by_evaluated_pass_rate(
    open_page,  # noqa: F811 (the fixture imported above)
    tmp_path: Path,
    analysis,
    expected,
) -> None:
    w = open_page(write_html_report(analysis, tmp_path / "heat.html"))
    read = (
        "(() => { const gd = document.getElementById('fig-heatmap'), t = gd.data[0];"
        " return [t.x, t.y, t.z, t.hovertext, t.colorbar.title.text,"
        " gd.layout.title.subtitle.text, gd._fullLayout.plot_bgcolor,"
        " getComputedStyle(document.documentElement).getPropertyValue('--grey')]; })()"
    )
    xs, ys, z, hover, bar, subtitle, background, grey = w.js(read)
    # Default: the pass rate over evaluated attempts; the high-scoring, never-passing case
    # is 0 %, and a variant with no evaluated attempt has no value (not 0 %).
    rate = _matrix(expected, "rate", ys, xs)
    np.testing.assert_allclose(np.array(z, dtype=float), rate, atol=5e-4)
    assert z[ys.index("cand")][xs.index("c0")] == 0
    assert all(v is None for v in z[ys.index("dead")])
    assert bar == "Evaluated pass rate" and "colour: pass rate" in subtitle
    # ... shown grey: the plot area behind a cell without value is the palette's grey.
    assert background == grey.strip() == "#9aa0a6"  # report.css --grey (light)
    # The hover gives both numbers and the passed/evaluated counts, whatever the colour.
    cell = hover[ys.index("cand")][xs.index("c0")]
    assert "passed 0/5 evaluated (0%)" in cell and "mean score 0.900" in cell
    for y in ("base", "cand"):
        for x in xs:
            e = expected.loc[(y, x)]
            text = hover[ys.index(y)][xs.index(x)]
            assert f"passed {int(e['passes'])}/{int(e['evaluated'])} evaluated" in text
            assert f"mean score {e['mean_score']:.3f}" in text
            assert ("1 not evaluated (failed trial)" in text) == (y == "base")

    w.page.select_option("#heat-colour", "mean_score")
    w.until(lambda: w.js(read)[4] == "Mean score")
    xs2, ys2, z2, hover2, _, subtitle2, _, _ = w.js(read)
    score = _matrix(expected, "mean_score", ys2, xs2)
    np.testing.assert_allclose(np.array(z2, dtype=float), score, atol=5e-4)
    assert z2[ys2.index("cand")][xs2.index("c0")] == pytest.approx(0.9)
    assert "colour: mean score (AgenticLens)" in subtitle2
    assert hover2 == hover  # the hover does not depend on the colour
    assert w.errors == [] and w.external == [] and w.dialogs == []
