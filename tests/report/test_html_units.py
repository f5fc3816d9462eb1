"""The page's AgenticLens-compatible table and variant notes say their units as the console
and the Markdown summary do: a pass-rate change in percentage points (the page wrote
"+15.7%", which reads as a relative change), a cost change in USD per trial (the page wrote
a bare "+0.0200"), and that the verdicts' latency and cost are per attempt while the
variant table's are per trial (the console said so; the page did not)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from agenticlens_frames import ExperimentRun, analyze
from agenticlens_frames.report.html import render_html

CASES = 10
#: Cost of one attempt per variant, in USD: a trial's total is CASES times it.
COST = {"base": 0.001, "cand": 0.003, "other": 0.002}


def _passes(variant: str, trial: int, case: int) -> bool:
    if variant == "base":
        return case < 5
    return case < 8 if variant == "cand" else (case + trial) % 2 == 0


@pytest.fixture(scope="module")
def attempts() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "variant_id": v,
                "trial": t,
                "case_id": f"c{c}",
                "passed": _passes(v, t, c),
                "latency_ms": 100.0 + 10 * c,
                "cost_usd": COST[v],
            }
            for v in COST
            for t in (1, 2)
            for c in range(CASES)
        ]
    )


@pytest.fixture(scope="module")
def page(attempts: pd.DataFrame) -> str:
    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": list(COST)}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(CASES)]}),
    )
    return render_html(analyze(run, correction="holm", frontier_n_resamples=0))


def _section(page: str, name: str) -> str:
    start = page.index(f"<section id='{name}'>")
    return page[start : page.index("</section>", start)]


def test_compatible_changes_carry_their_units(page: str, attempts: pd.DataFrame) -> None:
    compat = _section(page, "compat")
    (row,) = re.findall(r"<tr data-variant='cand'>.*?</tr>", compat)
    cells = re.findall(r"<td>(.*?)</td>", row)
    # AgenticLens's case pass rate: every attempt, pooled.
    rate = attempts.groupby("variant_id")["passed"].mean()
    points = (rate["cand"] - rate["base"]) * 100
    assert cells[2].startswith(f"{points:+.1f} pp<br>"), cells[2]
    # A trial's total cost over the suite, candidate minus baseline.
    per_trial = CASES * (COST["cand"] - COST["base"])
    assert cells[5] == f"{per_trial:+.4f} USD", cells[5]
    assert "<th>Cost Δ<br><small>per trial</small></th>" in compat
    assert not re.search(r"<td>[+-]\d+\.\d%<br>", compat)  # no rate change as a bare "%"


def test_the_compatible_rows_count_regressed_cases_in_words(
    page: str, attempts: pd.DataFrame
) -> None:
    """The row said "5 case(s) regressed"; it says "5 cases regressed" (a case regresses
    when its pass rate falls by more than the threshold, 0.05 by default)."""
    compat = _section(page, "compat")
    rate = attempts.groupby(["variant_id", "case_id"])["passed"].mean().unstack()
    for variant in ("cand", "other"):
        n = int((rate.loc["base"] - rate.loc[variant] > 0.05).sum())
        (row,) = re.findall(rf"<tr data-variant='{variant}'>.*?</tr>", compat)
        assert f"<small>{n} cases regressed · " in row, row
    assert "case(s)" not in compat


def test_variant_notes_say_the_verdicts_latency_and_cost_are_per_attempt(page: str) -> None:
    notes = " ".join(re.findall(r"<p class='note'>(.*?)</p>", _section(page, "variants")))
    assert "per-trial values" in notes and "latency and cost are per attempt" in notes


def test_a_wide_suite_is_not_offered_every_case_in_one_heatmap() -> None:
    """Drawing 5000 cases at once ("all" per page) froze the page for over a minute: above
    ALL_CASES_AT_ONCE cases the heatmap pages, and says why."""
    from agenticlens_frames.report.html import ALL_CASES_AT_ONCE

    def page_of(n_cases: int) -> str:
        ids = [f"c{c}" for c in range(n_cases)]
        rows = pd.DataFrame(
            [
                {"variant_id": v, "trial": 1, "case_id": c, "passed": (i + len(v)) % 3 > 0}
                for v in ("a", "bb", "ccc")
                for i, c in enumerate(ids)
            ]
        )
        run = ExperimentRun.from_frames(
            rows, pd.DataFrame({"variant_id": ["a", "bb", "ccc"]}), pd.DataFrame({"case_id": ids})
        )
        return render_html(analyze(run, frontier_n_resamples=0))

    def sizes(page: str) -> list[str]:
        select = re.search(r"<select id='heat-size'>(.*?)</select>", page).group(1)
        return re.findall(r"<option value='(\d+)'", select)

    assert sizes(page_of(60)) == ["25", "50", "100", "200", "0"]
    wide = page_of(ALL_CASES_AT_ONCE + 1)
    assert sizes(wide) == ["25", "50", "100", "200"]
    assert "draws at most 200 cases at once" in _section(wide, "heatmap")


def test_p_values_under_a_declared_none_are_not_called_adjusted(attempts: pd.DataFrame) -> None:
    """comparisons: {correction: none} decides each comparison at α on its own p; the
    column was headed "Adjusted p"."""
    from scipy import stats

    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": list(COST)}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(CASES)]}),
    )
    verdicts = _section(render_html(analyze(run, correction="none")), "verdicts")
    assert "Adjusted p" not in verdicts and "<th>p (not adjusted)</th>" in verdicts
    # The quality row of 'other' shows its own paired-t p (pass rate per case, both trials).
    rate = attempts.groupby(["variant_id", "case_id"])["passed"].mean().unstack(0)
    p = stats.ttest_rel(rate["other"], rate["base"]).pvalue
    (row,) = re.findall(
        r"<tr data-variant='other'><td[^>]*><strong>other</strong></td>"
        r"<td[^>]*>quality<br>.*?</tr>",
        verdicts,
    )
    assert f"<td data-label='p (not adjusted)'>{p:.3f}</td>" in row


def test_the_flag_threshold_tile_is_named_as_agenticlens_s_rule_after_the_run_settings(
    attempts: pd.DataFrame,
) -> None:
    """The page's tiles led with "regression threshold 5%" among the settings of the
    verdicts, where it read as the threshold of a "worse" verdict; it is AgenticLens's flag
    rule (a relative change, uncertainty ignored). It is named so, after the run's settings,
    and the compatible section whose flags it sets states its value."""
    run = ExperimentRun.from_frames(
        attempts,
        pd.DataFrame({"variant_id": list(COST)}),
        pd.DataFrame({"case_id": [f"c{c}" for c in range(CASES)]}),
    )
    page = render_html(
        analyze(run, correction="holm", regression_threshold=0.12, frontier_n_resamples=0)
    )
    tiles = re.findall(r"<div class='tile'><b>([^<]*)</b><span>([^<]*)</span>", page)
    labels = [label for _, label in tiles]
    assert "regression threshold" not in labels
    assert tiles[-1] == ("12%", "AgenticLens flag threshold")
    assert "beyond the regression threshold, 12%, uncertainty ignored" in _section(page, "compat")
