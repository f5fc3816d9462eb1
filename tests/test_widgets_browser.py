"""The explorer's click bridge in a real browser: its JavaScript finds the heatmap the
notebook's plotly renderer drew (by ``layout.meta``) and reports a click on a cell with
that cell's axis values, as JupyterLab would pass them to the widget model."""

from __future__ import annotations

import json
from pathlib import Path

import plotly.io as pio
import pytest
from plotly.offline import get_plotlyjs

from agenticlens_frames import analyze, load_experiment
from agenticlens_frames.widgets import ClickBridge, Explorer

from .conftest import EXAMPLE

pytestmark = pytest.mark.browser


def test_a_click_on_the_rendered_heatmap_reaches_the_model(browser, tmp_path: Path) -> None:
    explorer = Explorer(analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")))
    fig = explorer.heatmap
    assert fig.layout.meta == explorer.clicks.key
    (tmp_path / "plotly.js").write_text(get_plotlyjs(), encoding="utf-8")
    (tmp_path / "host.html").write_text(
        "<html><body style='margin:0'><div id='bridge'></div><div id='fig' "
        "style='width:900px'></div><script src='plotly.js'></script></body></html>",
        encoding="utf-8",
    )
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        page.goto((tmp_path / "host.html").as_uri())
        page.wait_for_function("() => window.Plotly !== undefined")
        # A stand-in for the anywidget model: records what the widget sets and saves.
        page.evaluate(
            """async ([key, source]) => {
              window.sent = [];
              const model = {values: {key}, get(k) { return this.values[k]; },
                set(k, v) { this.values[k] = v; }, save_changes() {
                  window.sent.push(this.values.clicked); }};
              const url = URL.createObjectURL(new Blob([source], {type: 'text/javascript'}));
              const mod = await import(url);
              mod.default.render({model, el: document.getElementById('bridge')});
            }""",
            [explorer.clicks.key, ClickBridge._esm],
        )
        spec = json.loads(pio.to_json(fig))
        # Drawn after the bridge started, as the renderer does on every redraw.
        page.evaluate("([d, l]) => Plotly.newPlot('fig', d, l)", [spec["data"], spec["layout"]])
        page.wait_for_selector("#fig .nsewdrag")
        page.wait_for_function("() => document.getElementById('fig').__alfHooked !== undefined")
        row, col = 2, 3
        x, y = page.evaluate(
            """([row, col]) => { const gd = document.getElementById('fig');
              const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
              const nx = gd.data[0].x.length, ny = gd.data[0].y.length;
              return [r.left + (col + 0.5) * r.width / nx, r.top + (row + 0.5) * r.height / ny];
            }""",
            [row, col],
        )
        page.mouse.click(x, y)
        page.wait_for_function("() => window.sent.length > 0")
        sent = page.evaluate("() => window.sent")
    finally:
        page.close()
    trace = fig.data[0]
    assert sent[0][:2] == [str(trace.x[col]), str(trace.y[row])]
    # Python side: the same message shows that cell's attempts.
    explorer.clicks.clicked = sent[0]
    assert f"{trace.y[row]} · {trace.x[col]}" in explorer.details.value
