"""A variant that completed no trial has no case-level pass rate: the console, the page
and the notebook display say so in its pass-rate cell instead of falling back to
AgenticLens's pooled case pass rate (failed trials counted as failing every case, an
interval that treats attempts as independent) under the case-level header."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest
from rich.console import Console

from agenticlens_frames import ExperimentRun, analyze
from agenticlens_frames._values import NO_EVALUATED_ATTEMPT
from agenticlens_frames.report.console import print_summary
from agenticlens_frames.report.html import render_html


@pytest.fixture(scope="module")
def analysis():
    """Three variants, 20 cases, 3 trials; every trial of ``dead`` failed."""
    rows = [
        {
            "variant_id": v,
            "trial": t,
            "case_id": f"c{c}",
            "passed": v != "dead" and (c + t) % 3 != 0,
            "status": "trial_failed" if v == "dead" else "ok",
        }
        for v in ("base", "cand", "dead")
        for t in (1, 2, 3)
        for c in range(20)
    ]
    run = ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["base", "cand", "dead"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(20)]}),
    )
    return analyze(run, correction="holm")


def _pooled(analysis) -> str:
    """The pooled case pass rate of ``dead`` as the old cell showed it (0.0% … 0%–6%)."""
    v = analysis.variants.set_index("variant_id").loc["dead"]
    assert v["case_pass_rate"] == 0.0 and v["case_pass_rate_ci_high"] > 0.0
    return f"{v['case_pass_rate_ci_high']:.0%}"


def test_console_says_no_evaluated_attempt(analysis) -> None:
    out = io.StringIO()
    print_summary(analysis, Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    variants = text[text.index("Variants") : text.index("pass@k")]
    (dead,) = [line for line in variants.splitlines() if "│ dead" in line]
    assert NO_EVALUATED_ATTEMPT in dead
    assert "†" not in variants and f"–{_pooled(analysis)}]" not in dead
    # Every case "failed" alike in every (failed) trial: AgenticLens's consistency is 100 %,
    # which read as a steady variant. The cell says n/a; the JSON keeps the package's value.
    assert analysis.variants.set_index("variant_id").loc["dead", "consistency_rate"] == 1.0
    cells = [c.strip() for c in dead.split("│")]
    assert cells[7] == "n/a" and "100%" not in dead


def test_page_says_no_evaluated_attempt(analysis) -> None:
    page = render_html(analysis)
    table = page[page.index("<section id='variants'>") :]
    table = table[: table.index("</table>")]
    (dead,) = re.findall(r"<tr data-variant='dead'>.*?</tr>", table)
    cells = re.findall(r"<td>(.*?)</td>", dead)
    assert cells[1] == NO_EVALUATED_ATTEMPT
    assert "†" not in table
    assert cells[-1] == "n/a<br><small>no trial completed</small>"


def test_notebook_display_says_no_evaluated_attempt(analysis) -> None:
    shown = analysis._repr_html_()
    (dead,) = re.findall(r"<tr><td><b>dead</b>.*?</tr>", shown)
    assert re.findall(r"<td>(.*?)</td>", dead)[1] == NO_EVALUATED_ATTEMPT
    # The pooled number stays, in the labelled compatible table.
    assert "case pass rate [pooled Wilson]" in shown


def test_a_missing_latency_reads_n_a_without_a_unit() -> None:
    """The variant table printed "n/a ms" for a variant without a latency."""
    import agenticlens_frames as alf
    from agenticlens_frames.report.html import render_html

    rows = [
        {"variant_id": v, "trial": 1, "case_id": f"c{c}", "passed": c % 2 == 0}
        for v in ("a", "b")
        for c in range(4)
    ]
    run = alf.ExperimentRun.from_frames(
        pd.DataFrame(rows),
        pd.DataFrame({"variant_id": ["a", "b"]}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(4)]}),
    )
    page = render_html(alf.analyze(run))
    assert "n/a ms" not in page and "<td>n/a</td>" in page
