"""Figures size to their container: drawn by plotly.js in headless chromium inside an
output area as wide as JupyterLab's (1068 px) and a narrow one (800 px), every title,
tick label and legend entry stays inside it, no axis repeats a tick label, and long case
ids are shortened on the axis with the full id on hover."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.io as pio
import pytest
from plotly.offline import get_plotlyjs

from agenticlens_frames import ExperimentRun, analyze, as_analysis, load_experiment, viz

from .conftest import EXAMPLE

pytestmark = pytest.mark.browser
WIDTHS = (1068, 800)
LONG = "customer-escalation-refund-request-with-partial-shipment-and-coupon-"


@pytest.fixture(scope="module")
def analyses():
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    # The same experiment with 60+ character case ids, built from plain frames.
    att = run.attempts[["variant_id", "trial", "case_id", "passed", "score", "latency_ms",
                        "cost_usd"]].astype({"variant_id": str, "case_id": str})  # fmt: skip
    att["case_id"] = LONG + att["case_id"]
    cases = run.cases[["case_id", "case_name"]].astype({"case_id": str})
    cases["case_id"] = LONG + cases["case_id"]
    factor_cols = [c for c in run.variants.columns if c.startswith("factor_")]
    variants = run.variants[["variant_id", "variant_name", *factor_cols]].astype(
        {"variant_id": str}
    )
    long_run = ExperimentRun.from_frames(att, variants, cases, name="long")
    return {"example": as_analysis(run, correction="holm"), "long": analyze(long_run)}


def _figures(a) -> dict[str, object]:
    figs = viz.figures(a)
    if "paired_comparisons" in a.paired_frames:
        figs["paired"] = viz.paired_forest(a)
    return figs


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A page holding plotly.js and an empty output area (its width set per test)."""
    folder = tmp_path_factory.mktemp("plotly")
    (folder / "plotly.js").write_text(get_plotlyjs(), encoding="utf-8")
    page = folder / "host.html"
    page.write_text(
        "<html><body style='margin:0'><div id='out'></div>"
        "<script src='plotly.js'></script></body></html>",
        encoding="utf-8",
    )
    return page


MEASURE = """(width) => {
  const out = document.getElementById('out');
  const area = out.getBoundingClientRect();
  const box = out.querySelector('.main-svg').getBoundingClientRect();
  const inside = (r) => r.width === 0 || (r.left >= area.left - 1 && r.right <= area.right + 1
      && r.top >= box.top - 1 && r.bottom <= box.bottom + 1);
  const texts = [...out.querySelectorAll(
      '.gtitle, .gtitle-subtitle, .g-gtitle text, .xtick text, .ytick text, '
      + '.g-xtitle text, .g-ytitle text, .legendtext, .annotation-text, .cbtitle text')];
  const outside = texts.filter(t => !inside(t.getBoundingClientRect()))
      .map(t => t.textContent);
  const svg = out.querySelector('.main-svg').getBoundingClientRect();
  // The title and subtitle overlap no other text (panel titles, ticks, legend).
  const hit = (a, b) =>
      a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const heads = [...out.querySelectorAll('.gtitle, .gtitle-subtitle')];
  const overlaps = [];
  for (const h of heads) for (const t of texts) {
    if (heads.includes(t)) continue;
    if (hit(h.getBoundingClientRect(), t.getBoundingClientRect()))
      overlaps.push(h.textContent + ' / ' + t.textContent);
  }
  const repeats = [];
  for (const axis of out.querySelectorAll('.xaxislayer-above, .yaxislayer-above')) {
    const labels = [...axis.querySelectorAll('text')].map(t => t.textContent);
    if (new Set(labels).size !== labels.length) repeats.push(labels.join(' | '));
  }
  return {svgWidth: svg.width, areaWidth: area.width, outside, repeats, overlaps,
          overflow: out.scrollWidth > out.clientWidth + 1};
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["example", "long"])
def test_every_figure_fits_its_output_area(browser, host, analyses, which, width):
    page = browser.new_page(viewport={"width": width + 200, "height": 900})
    try:
        page.goto(host.as_uri())
        page.wait_for_function("() => window.Plotly !== undefined")
        # The output area of a notebook cell: a block of fixed width, the figure's own
        # size left to plotly (as the notebook renderer and the page do).
        page.evaluate(
            "(w) => { const o = document.getElementById('out');"
            " o.style.width = w + 'px'; o.style.overflow = 'auto'; }",
            width,
        )
        for name, fig in _figures(analyses[which]).items():
            spec = json.loads(pio.to_json(fig))
            page.evaluate(
                "([data, layout]) => { Plotly.purge('out');"
                " return Plotly.newPlot('out', data, layout, {responsive: true}); }",
                [spec["data"], spec["layout"]],
            )
            page.wait_for_selector("#out .main-svg")
            got = page.evaluate(MEASURE, width)
            assert got["svgWidth"] <= width + 0.5, (name, got)
            assert not got["overflow"], (name, got)
            assert got["outside"] == [], (name, got["outside"])
            assert got["repeats"] == [], (name, got["repeats"])
            assert got["overlaps"] == [], (name, got["overlaps"])
    finally:
        page.close()


def test_long_case_ids_are_shortened_with_the_full_id_on_hover(analyses) -> None:
    fig = viz.case_heatmap(analyses["long"])
    axis = fig.layout.xaxis
    full = [str(c) for c in fig.data[0].x]
    assert all(c.startswith(LONG) for c in full)
    assert list(axis.tickvals) == full  # cells keep their full ids (clicks map back)
    assert all(len(t) <= viz.MAX_TICK_CHARS for t in axis.ticktext)
    assert len(set(axis.ticktext)) == len(full)  # shortened, still told apart
    for j, cid in enumerate(full):
        assert cid in fig.data[0].hovertext[0][j]
