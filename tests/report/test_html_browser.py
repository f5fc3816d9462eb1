"""The offline HTML report, opened in Debian's headless chromium through playwright.

Never ``playwright install``: the browser is ``/usr/bin/chromium`` (``.ci/run`` installs
it); without it these tests skip locally and fail in CI. The static checks at the top need
no browser.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from plotly.offline import get_plotlyjs

from agenticlens_frames import analyze, load_experiment, load_report, viz, write_json_report
from agenticlens_frames.report.html import render_html, write_html_report

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "support"
#: A payload that runs script if it ever reaches the DOM as HTML.
PAYLOAD = "<script>alert('{w}')</script><img src=x onerror=alert('{w}')>"
#: Only a safety net against a page that never gets ready: every wait below is on a
#: condition (load event, an element, a value), and a loaded machine only makes it slower.
PATIENCE_MS = 300_000
FIGURES = ["pass_k", "deltas", "paired", "heatmap", "case_outcomes", "pareto", "factors"]
FIGURES += ["factor_effects", "factor_interaction"]  # issue 17


# --------------------------------------------------------------------------- fixtures


def _hostile_copy(folder: Path) -> Path:
    """data/support with the payload in an output, a case name and id, a variant name and
    id, a factor value and the experiment name."""
    shutil.copytree(EXAMPLE, folder)
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text(encoding="utf-8"))
    manifest["name"] = "exp" + PAYLOAD.format(w="experiment")
    manifest["variants"][0]["name"] = PAYLOAD.format(w="variant-name")
    manifest["variants"][1]["id"] = "ml" + PAYLOAD.format(w="variant-id")
    manifest["variants"][2]["factors"]["prompt"] = PAYLOAD.format(w="factor")
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    suite = yaml.safe_load((folder / "suite.yaml").read_text(encoding="utf-8"))
    suite["cases"][0]["name"] = PAYLOAD.format(w="case-name")
    new_id = "track" + PAYLOAD.format(w="case-id")
    old_id, suite["cases"][1]["id"] = suite["cases"][1]["id"], new_id
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    for path in (folder / "trials").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("variant_id", None)
        for trial in data["trials"]:
            for sample in trial["samples"]:
                if sample["case_id"] == old_id:
                    sample["case_id"] = new_id
                sample["output"] = PAYLOAD.format(w="output") + sample["output"]
        path.write_text(json.dumps(data), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def analysis():
    return analyze(load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml"))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory, analysis) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("html")
    hostile_dir = _hostile_copy(root / "hostile")
    hostile = analyze(load_experiment(hostile_dir / "manifest.yaml", hostile_dir / "suite.yaml"))
    write_json_report(analysis, root / "saved.json")
    from tests.test_viz import _paired_frame

    paired = _paired_frame().replace({"b": "model-large", "c": "prompt-v2"})
    undeclared = dataclasses.replace(
        analysis.run, manifest=dataclasses.replace(analysis.run.manifest, comparisons=None)
    )
    return {
        "undeclared": write_html_report(analyze(undeclared), root / "undeclared.html"),
        "example": write_html_report(analysis, root / "example.html", paired=paired),
        "hostile": write_html_report(hostile, root / "hostile.html"),
        "saved": write_html_report(load_report(root / "saved.json"), root / "saved.html"),
    }


class Watched:
    """A page with every console error, page error, dialog and non-file request logged."""

    def __init__(
        self,
        browser: object,
        path: Path,
        scheme: str = "light",
        *,
        init: str | None = None,
        ready: str = "body[data-ready='true']",
        height: int = 900,
    ) -> None:
        self.page = browser.new_page(
            viewport={"width": 1280, "height": height}, color_scheme=scheme
        )
        if init is not None:  # runs before the page's own scripts (not subject to its CSP)
            self.page.add_init_script(init)
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.external: list[str] = []
        self.last_click = float("-inf")  # time.monotonic() of the last heatmap click
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on(
            "console",
            lambda m: (
                self.errors.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning")
                else None
            ),
        )
        self.page.set_default_timeout(PATIENCE_MS)
        self.page.on("dialog", self._dialog)
        self.page.route("**/*", self._route)
        self.page.goto(path.as_uri(), wait_until="load")
        # Not wait_for_function: its polling evaluates strings, which the page's CSP forbids.
        # data-ready: every figure drawn; data-viewport-drawn: those in view on opening.
        self.page.wait_for_selector(ready)

    def _dialog(self, dialog: object) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _route(self, route: object) -> None:
        url = route.request.url
        if url.startswith("file:"):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def js(self, expression: str) -> object:
        return self.page.evaluate(expression)

    def until(self, condition: Callable[[], bool]) -> None:
        """Poll ``condition`` from Python (the CSP forbids wait_for_function) until it holds.

        The steps only pace the polling; the limit is the generous safety net above.
        """
        deadline = time.monotonic() + PATIENCE_MS / 1000
        while not condition():
            assert time.monotonic() < deadline, "the page never reached the condition"
            self.page.wait_for_timeout(50)

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def open_page(browser: object) -> Iterator[object]:
    opened: list[Watched] = []

    def open_(path: Path, scheme: str = "light", **options: Any) -> Watched:
        w = Watched(browser, path, scheme, **options)
        opened.append(w)
        return w

    yield open_
    for w in opened:
        w.close()


def _click_cell(w: Watched, row: int, col: int) -> None:
    """Click the centre of heatmap cell (row, col) as plotly lays it out."""
    box = w.js(
        """(() => { const gd = document.getElementById('fig-heatmap');
        gd.scrollIntoView({block: 'center'});
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
        return [r.left, r.top, xa._length, ya._length,
                gd.data[0].x.length, gd.data[0].y.length,
                gd._context.doubleClickDelay]; })()"""
    )
    left, top, width, height, n_x, n_y, double_click_ms = box
    x = left + (col + 0.5) * width / n_x
    y = top + (row + 0.5) * height / n_y
    # plotly counts a second press within its doubleClickDelay as a double click and fires
    # no plotly_click for it: leave that gap after the previous click (pacing, not a limit).
    gap_ms = double_click_ms + 50 - (time.monotonic() - w.last_click) * 1000
    if gap_ms > 0:
        w.page.wait_for_timeout(gap_ms)
    w.page.mouse.move(x, y)
    w.page.mouse.click(x, y)
    w.last_click = time.monotonic()


def _click_cell_until(w: Watched, row: int, col: int, condition: Callable[[], bool]) -> None:
    """Click cell (row, col) until ``condition`` holds, clicking again if a click was lost.

    A click can land while plotly is still redrawing (after a re-order) and be dropped; a
    second click on the same cell is harmless, so retry instead of failing on the first.
    """
    deadline = time.monotonic() + PATIENCE_MS / 1000
    while True:
        _click_cell(w, row, col)
        for _ in range(40):  # about 2 s of polling before the click is tried again
            if condition():
                return
            w.page.wait_for_timeout(50)
        assert time.monotonic() < deadline, "the page never reached the condition"


# --------------------------------------------------------------------------- static


def _sha(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def test_csp_allows_exactly_the_inline_scripts_by_hash(analysis) -> None:
    page = render_html(analysis)
    csp = re.search(r"Content-Security-Policy' content=\"([^\"]+)\"", page).group(1)
    assert "default-src 'none'" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert len(scripts) == 2  # loader.js (starts plotly.js), then the page's own script
    # plotly.js once, exactly as plotly.py ships it, as text that loader.js runs.
    plotly_js = re.findall(
        r"<script type='text/plain' id='alf-plotly'>(.*?)</script>", page, flags=re.S
    )
    assert plotly_js == [get_plotlyjs()]
    allowed = set(re.findall(r"'sha256-([^']+)'", csp))
    # plotly.js's hash: loader.js's fallback runs the same text as an inline script.
    assert {_sha(s) for s in [*scripts, get_plotlyjs()]} == allowed
    # The only other script source: blob: URLs, which only a running script can make.
    script_src = csp.split("script-src")[1].split(";")[0].split()
    assert [s for s in script_src if not s.startswith("'sha256-")] == ["blob:"]
    # The data blocks: figures and heatmap, then the attempt details (read on a click),
    # and the case table's rows (markup read when the table is opened).
    assert page.count("<script type='application/json'") == 2
    assert page.count("<script type='text/html'") == 1


def test_markup_comes_first_then_plotly_js_then_the_data(analysis) -> None:
    page = render_html(analysis)
    body = page.split("<body>", 1)[1]
    markup, rest = body.split("</main>", 1)
    # No script of any kind among the markup: the parser reaches the end of the text (to be
    # painted) before it reads plotly.js's 4.8 MB, the case rows or the figure data.
    assert "<script" not in markup and "id='randomization'" in markup
    blocks = []  # (type, id) of each script after the markup, skipping over its content
    while m := re.match(r"<script(?: type='([^']+)' id='([^']+)')?>", rest):
        blocks.append(m.groups(""))
        rest = rest[rest.index("</script>", m.end()) + len("</script>") :]
    assert rest == "</body></html>"
    assert blocks == [
        ("text/plain", "alf-plotly"),
        ("", ""),  # loader.js: starts plotly.js compiling while the parser reads the rest
        ("text/html", "case-rows"),
        ("application/json", "alf-data"),
        ("application/json", "alf-details"),
        ("", ""),  # report.js, which waits for plotly.js
    ]


def test_hostile_strings_are_escaped_in_markup(pages) -> None:
    page = pages["hostile"].read_text(encoding="utf-8")
    markup = page.split("<script type='application/json'")[0]
    data = page.split("<script type='application/json' id='alf-data'>")[1].split("</script>")[0]
    assert "<script>alert(" not in markup and "<img" not in markup
    assert "&lt;script&gt;alert(&#x27;case-name&#x27;)" in markup
    assert "&lt;script&gt;alert(&#x27;variant-name&#x27;)" in markup
    # The JSON block cannot be closed from inside: no raw '<' at all.
    assert "<" not in data
    assert json.loads(data)["heat"]["variants"][1].startswith("ml<script>")


def test_attempt_details_stop_at_the_byte_budget(analysis, monkeypatch) -> None:
    from agenticlens_frames.report import html

    def block(page: str, name: str) -> dict:
        data = page.split(f"<script type='application/json' id='alf-{name}'>")[1]
        return json.loads(data.split("</script>")[0])

    page = render_html(analysis)
    every, heat = block(page, "details"), block(page, "data")["heat"]
    cases = {k.split(":")[1] for k in every["cells"]}
    assert len(cases) == len(heat["ids"])  # the example fits whole
    attempts = sum(len(v) for v in every["cells"].values())
    assert attempts == len(analysis.run.attempts)
    monkeypatch.setattr(html, "DETAIL_BYTES", 3000)
    page = render_html(analysis)
    some = block(page, "details")
    kept = {int(k.split(":")[1]) for k in some["cells"]}
    # The first cases of the needs-attention order, as many as the budget holds.
    assert kept == set(heat["orders"]["attention"][: len(kept)])
    assert 0 < len(kept) < len(cases)
    assert f"first {len(kept)} of {len(cases)} cases" in block(page, "data")["heat"]["detailsNote"]


def test_saved_report_renders_without_the_tables(pages) -> None:
    page = pages["saved"].read_text(encoding="utf-8")
    assert "rendered from a saved JSON report" in page
    assert "Test-level heatmap" in page and "Randomization" in page


# --------------------------------------------------------------------------- browser


@pytest.mark.browser
def test_every_figure_renders_offline(open_page, pages, analysis) -> None:
    w = open_page(pages["example"])
    for name in FIGURES:
        drawn = w.js(
            f"""(() => {{ const gd = document.getElementById('fig-{name}');
            return [gd.querySelectorAll('.main-svg').length, (gd.data || []).length]; }})()"""
        )
        assert drawn[0] > 0 and drawn[1] > 0, name
    assert w.js("typeof Plotly") == "object"
    # The page's heatmap starts as the Python figure for the same options (coloured by the
    # pass rate over the evaluated attempts).
    expected = viz.case_heatmap(
        analysis.cases,
        analysis.variants,
        color="evaluated_pass_rate",
        case_order="attention",
        max_cases=50,
    )
    got = w.js(
        "(() => { const t = document.getElementById('fig-heatmap').data[0];"
        " return [t.x, t.y, t.text, t.z, t.hovertext]; })()"
    )
    assert got[0] == list(expected.data[0].x)
    assert got[1] == list(expected.data[0].y)
    assert got[2] == expected.data[0].text.tolist()
    # The page words each hover itself from compact numbers: it must say what viz says.
    assert got[4] == expected.data[0].hovertext.tolist()
    np.testing.assert_allclose(np.array(got[3], dtype=float), expected.data[0].z, atol=5e-4)
    # The flaky cells' outlines: viz's rectangles, drawn as one path of closed rectangles.
    shapes = w.js("document.getElementById('fig-heatmap').layout.shapes")
    assert [(s["type"], s["xref"], s["yref"], s["layer"]) for s in shapes] == [
        ("path", "x", "y", "above")
    ]
    assert shapes[0]["line"] == expected.layout.shapes[0].line.to_plotly_json()
    got_rects = re.findall(r"M([-\d.]+),([-\d.]+)H([-\d.]+)V([-\d.]+)H\1Z", shapes[0]["path"])
    assert (
        "".join(f"M{x0},{y0}H{x1}V{y1}H{x0}Z" for x0, y0, x1, y1 in got_rects)
        == (shapes[0]["path"])
    )
    assert sorted((float(x0), float(x1), float(y0), float(y1)) for x0, y0, x1, y1 in got_rects) == (
        sorted((s.x0, s.x1, s.y0, s.y1) for s in expected.layout.shapes)
    )
    assert w.errors == [] and w.external == [] and w.dialogs == []


#: A browser that is never idle: the page draws no figure in the background, so a figure
#: off screen is drawn only when scrolled to (or printed).
NEVER_IDLE = "window.requestIdleCallback = function () { return 0; };"
#: Per figure: [id, drawn by plotly, intersects the viewport, top in the viewport].
FIGURE_STATE = """[...document.querySelectorAll('.fig')].map(gd => {
    const r = gd.getBoundingClientRect();
    return [gd.id, gd.querySelectorAll('.main-svg').length > 0 && (gd.data || []).length > 0,
            r.bottom > 0 && r.top < window.innerHeight, r.top]; })"""


@pytest.mark.browser
def test_a_figure_below_the_fold_is_drawn_when_scrolled_to(open_page, pages, analysis) -> None:
    # A tall window: the example's warnings push its first figure (the forest) to ~1800 px.
    height = 2200
    w = open_page(
        pages["example"],
        init=NEVER_IDLE,
        ready="body[data-viewport-drawn='true']",
        height=height,
    )
    state = w.js(FIGURE_STATE)
    assert sorted(s[0] for s in state) == sorted(f"fig-{name}" for name in FIGURES)
    # Every figure the reader sees is drawn when the page says it is shown ...
    seen = [s for s in state if s[2]]
    assert seen and all(s[1] for s in seen), state
    # ... and those well below the fold are not: nothing draws them but scrolling.
    below = [s[0] for s in state if s[3] > height + 400]
    assert "fig-deltas" in below and not any(s[1] for s in state if s[0] in below), state
    assert w.page.get_attribute("body", "data-ready") is None
    for name in below:
        w.page.locator(f"#{name}").scroll_into_view_if_needed()
        w.until(lambda name=name: any(s[0] == name and s[1] for s in w.js(FIGURE_STATE)))
    # With every figure seen once, the page is complete.
    w.page.wait_for_selector("body[data-ready='true']")
    assert all(s[1] for s in w.js(FIGURE_STATE))
    # The deltas drawn on scrolling are the comparisons' own (candidates against the baseline).
    ys = w.js("document.getElementById('fig-deltas').data.flatMap(t => [...t.y])")
    assert set(ys) == {str(c) for c in analysis.comparisons["candidate_variant_id"]}
    assert w.errors == [] and w.external == []


@pytest.mark.browser
@pytest.mark.parametrize("how", ["print media", "pdf"])
def test_printing_draws_every_figure(open_page, pages, how) -> None:
    w = open_page(pages["example"], init=NEVER_IDLE, ready="body[data-viewport-drawn='true']")
    assert not all(s[1] for s in w.js(FIGURE_STATE))
    if how == "pdf":  # chromium's print path: beforeprint, then the print layout
        assert w.page.pdf()[:5] == b"%PDF-"
    else:
        w.page.emulate_media(media="print")
    w.page.wait_for_selector("body[data-ready='true']")
    assert all(s[1] for s in w.js(FIGURE_STATE))
    assert w.errors == []


#: Ways a viewer can refuse plotly.js as a blob: script: no blob: URLs at all, or a blob:
#: URL that does not load (loader.js then runs the same text inline).
NO_BLOB = {
    "no blob URLs": "URL.createObjectURL = function () { throw new Error('no blobs here'); };",
    "blob fails to load": "URL.createObjectURL = function () { return 'blob:null/gone'; };",
}


@pytest.mark.browser
def test_plotly_js_is_streamed_from_its_own_text(open_page, pages) -> None:
    w = open_page(pages["example"])
    # plotly.js ran from a blob: script made of the page's text block (compiled off the main
    # thread), not from an inline copy, and before report.js drew with it.
    got = w.js(
        """(() => [[...document.querySelectorAll('script:not([type])')]
            .map(s => s.src.split(':')[0]),
            document.getElementById('alf-plotly').textContent.length])()"""
    )
    assert sorted(got[0]) == ["", "", "blob"]
    assert got[1] == len(get_plotlyjs())
    assert w.js("Plotly.version") == re.search(r"plotly\.js v([\d.]+)", get_plotlyjs()).group(1)
    assert all(s[1] for s in w.js(FIGURE_STATE))
    assert w.errors == [] and w.external == []


@pytest.mark.browser
@pytest.mark.parametrize("refusal", sorted(NO_BLOB))
def test_without_blob_scripts_plotly_js_runs_inline(open_page, pages, refusal) -> None:
    w = open_page(pages["example"], init=NO_BLOB[refusal])
    # Every figure drawn all the same, by plotly.js run from the same text as an inline
    # script that the page's CSP allows by its hash (a CSP refusal would be a console error).
    assert all(s[1] for s in w.js(FIGURE_STATE))
    inline = w.js(
        "[...document.querySelectorAll('script:not([type]):not([src])')]"
        ".map(s => s.textContent.length)"
    )
    assert len(get_plotlyjs()) in inline and len(inline) == 3
    # Only the refused load itself is reported (chromium logs the blob: URL it could not load).
    assert [e for e in w.errors if "blob:null/gone" not in e] == [] and w.external == []


@pytest.mark.browser
def test_verdicts_lead_and_compatible_numbers_are_never_marked(open_page, pages, analysis) -> None:
    w = open_page(pages["example"])
    ids = w.js("[...document.querySelectorAll('main > section')].map(s => s.id)")
    results = [i for i in ids if i not in ("filters", "warnings", "failed-trials")]
    assert results[0] == "verdicts", ids
    assert ids.index("verdicts") < ids.index("variants") < ids.index("compat")
    rows = w.js("document.querySelectorAll('#verdicts table.verdicts tr').length")
    assert rows == len(analysis.verdicts) + 1  # + the header
    styled = """(sel) => [...document.querySelectorAll(sel)].filter(td => {
        const c = getComputedStyle(td), body = getComputedStyle(document.body);
        return c.color !== body.color || c.backgroundColor !== 'rgba(0, 0, 0, 0)'; }).length"""
    # The check can see a styled cell: the verdict table colours its 'worse' rows ...
    worse = int((analysis.verdicts["verdict"] == "worse").sum())
    assert worse > 0 and w.page.evaluate(styled, "#verdicts td.verdict") == worse
    # ... and no cell of the AgenticLens-compatible section is styled or called significant.
    assert w.page.evaluate(styled, "#compat td") == 0
    assert w.js("document.querySelectorAll('#compat .good, #compat .bad').length") == 0
    cells = w.js("[...document.querySelectorAll('#compat td')].map(td => td.textContent)")
    assert not any("significant" in c for c in cells)
    assert any("z-test p = 0.022" in c for c in cells)  # shown as it is, unmarked
    colours = w.js("document.getElementById('fig-deltas').data.map(t => t.marker.color)")
    assert colours and not any("#1d7f4e" in c for c in colours)
    assert "AgenticLens-compatible numbers" in w.page.text_content("#compat h2")
    assert w.errors == [] and w.external == []


@pytest.mark.browser
def test_without_a_correction_the_page_marks_nothing_and_says_how(open_page, pages) -> None:
    w = open_page(pages["undeclared"])
    ids = w.js("[...document.querySelectorAll('main > section')].map(s => s.id)")
    assert next(i for i in ids if i not in ("filters", "warnings", "failed-trials")) == "verdicts"
    section = w.page.text_content("#verdicts")
    assert "comparisons: {correction: holm}" in section
    assert "Adjusted p" not in section and "per-comparison interval" in section
    for word in ("better", "worse", "no detectable difference"):
        assert word not in w.page.text_content("#verdicts table")
    assert w.js("document.querySelectorAll('.good:not(.tag), .bad, td.verdict').length") == 0
    colours = w.js("document.getElementById('fig-paired').data.map(t => t.marker.color)")
    assert colours and all(set(c) == {"#5f6470"} for c in colours)
    assert w.errors == [] and w.external == []


@pytest.mark.browser
def test_factor_filter_search_and_paging(open_page, pages, analysis) -> None:
    w = open_page(pages["example"])
    w.page.select_option("select[data-factor='model']", "gpt-large")
    rows = w.js("document.getElementById('fig-heatmap').data[0].y")
    run = analysis.run
    expected = run.variants.loc[run.variants["factor_model"] == "gpt-large", "variant_id"]
    assert rows == [str(v) for v in expected]
    w.page.select_option("select[data-factor='model']", "")
    w.page.select_option("#heat-size", "25")
    w.page.fill("#heat-search", "order")
    cols = w.js("document.getElementById('fig-heatmap').data[0].x")
    names = dict(zip(run.cases["case_id"].astype(str), run.cases["case_name"], strict=True))
    assert cols and all("order" in c or "order" in names[c].lower() for c in cols)
    w.page.fill("#heat-search", "")
    w.page.select_option("#heat-order", "suite")
    assert w.js("document.getElementById('fig-heatmap').data[0].x") == [
        str(c) for c in run.cases["case_id"]
    ]
    w.page.select_option("#pareto-x", "cost")
    title = w.js("document.getElementById('fig-pareto').layout.xaxis.title.text")
    assert title.startswith("Mean cost")
    assert w.errors == []


@pytest.mark.browser
def test_filters_that_hide_every_candidate_say_so(open_page, pages) -> None:
    """Filtered down to the baseline, the verdict table was an empty header and the note
    on retrieval-dense's comparison left out stayed: now the table goes, a note says the
    filters hide every candidate, and each "not compared" part goes with its candidate."""
    w = open_page(pages["example"])
    shown = "(sel) => [...document.querySelectorAll(sel)].filter(e => !e.closest('[hidden]'))"
    note = "p[data-all-hidden]"
    assert w.page.evaluate(shown, note) == []
    assert len(w.page.evaluate(shown, "p.omitted span[data-variant]")) == 1
    w.page.select_option("select[data-factor='retrieval']", "bm25")  # hides retrieval-dense
    assert w.page.evaluate(shown, "p.omitted") == []
    assert len(w.page.evaluate(shown, "table.verdicts tr[data-variant]")) > 0
    for factor, level in (("model", "gpt-small"), ("prompt", "v1")):  # the baseline alone
        w.page.select_option(f"select[data-factor='{factor}']", level)
    assert w.page.evaluate(shown, "table.verdicts") == []
    assert "filters hide every candidate" in w.page.text_content(note)
    assert len(w.page.evaluate(shown, note)) == 1
    w.page.select_option("select[data-factor='model']", "")
    assert w.page.evaluate(shown, note) == [] and w.page.evaluate(shown, "table.verdicts")
    assert w.errors == []


@pytest.mark.browser
def test_click_shows_attempts(open_page, pages, analysis) -> None:
    w = open_page(pages["example"])
    w.page.select_option("#heat-order", "suite")
    _click_cell(w, 0, 0)
    w.page.wait_for_selector("#attempts .att")
    text = w.page.text_content("#attempts")
    first = analysis.run.attempts.query("variant_id == 'baseline' and trial == 1").iloc[0]
    assert str(first["output"])[:60] in text
    assert w.page.locator("#attempts .att").count() == 5  # trials
    assert w.errors == []


@pytest.mark.browser
def test_saved_report_in_browser(open_page, pages) -> None:
    w = open_page(pages["saved"])
    assert w.js("document.getElementById('fig-heatmap').data[0].type") == "heatmap"
    _click_cell(w, 0, 0)
    assert "saved JSON report" in w.page.text_content("#attempts")
    assert w.errors == [] and w.external == []


@pytest.mark.browser
def test_injected_markup_never_executes(open_page, pages) -> None:
    w = open_page(pages["hostile"])
    # Open every place a payload can be shown: hover, a clicked cell, the case table.
    w.page.select_option("#heat-order", "suite")
    _click_cell(w, 0, 0)
    w.page.wait_for_selector("#attempts .att")
    first = w.page.text_content("#attempts h3")
    _click_cell_until(w, 1, 1, lambda: w.page.text_content("#attempts h3") != first)
    w.page.wait_for_selector("#attempts .att")
    assert "<script>alert('output')</script>" in w.page.text_content("#attempts")
    assert w.page.locator("img").count() == 0
    # loader.js, the blob: script it made of plotly.js's text, report.js, and four blocks
    # that do not execute: plotly.js's text and the three data blocks.
    assert w.js("document.querySelectorAll('script').length") == 7
    executable = w.js("[...document.querySelectorAll('script:not([type])')].map(s => s.src)")
    assert len(executable) == 3 and sum(src.startswith("blob:") for src in executable) == 1
    assert sum(src == "" for src in executable) == 2
    hover = w.js("document.getElementById('fig-heatmap').data[0].hovertext[0][0]")
    assert "&lt;script&gt;" in hover
    assert w.dialogs == [] and w.errors == [] and w.external == []


@pytest.mark.browser
def test_dark_scheme_switches_the_palette(open_page, pages) -> None:
    probe = (
        "[getComputedStyle(document.body).backgroundColor,"
        " document.getElementById('fig-pareto')._fullLayout.font.color,"
        " document.getElementById('fig-heatmap')._fullLayout.font.color]"
    )
    w = open_page(pages["example"], "light")
    light = w.js(probe)
    w.page.emulate_media(color_scheme="dark")
    # The relayout is asynchronous: wait until both figures have been re-themed.
    w.until(lambda: (d := w.js(probe))[1] != light[1] and d[2] != light[2])
    dark = w.js(probe)
    assert dark[0] != light[0] and dark[1] != light[1] and dark[2] != light[2]
    assert dark[0] == "rgb(21, 22, 26)"  # --bg of the dark palette
    assert w.errors == []


@pytest.mark.browser
def test_the_watchers_do_catch_a_script(browser, tmp_path: Path) -> None:
    # Control for the test above: an unescaped payload is caught by the same listeners.
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body>" + PAYLOAD.format(w="control") + "<script>"
        "document.body.dataset.ready='true'; undefinedFunction();</script></body></html>",
        encoding="utf-8",
    )
    w = Watched(browser, page)
    try:
        w.until(lambda: "control" in w.dialogs)
        w.until(lambda: any("undefinedFunction" in e for e in w.errors))
    finally:
        w.close()


@pytest.mark.browser
def test_the_case_table_shows_attempts_from_the_keyboard(open_page, pages, analysis) -> None:
    """A plotly heatmap cell takes no focus, so a keyboard reader could not reach any
    attempt: the table of all cases is that path (Tab to a cell, Enter)."""
    w = open_page(pages["example"])
    w.page.focus("#case-table summary")
    if not w.js("document.getElementById('case-table').open"):
        w.page.keyboard.press("Enter")
    w.page.wait_for_selector("table.cases tbody tr")
    w.page.keyboard.press("Tab")  # the first cell with data
    cell = w.js(
        """(() => { const td = document.activeElement;
        if (td.tagName !== 'TD') return [td.tagName];
        return [td.tagName, td.closest('table').rows[0].cells[td.cellIndex].dataset.variant,
                td.parentNode.dataset.case]; })()"""
    )
    assert cell[0] == "TD", cell
    w.page.keyboard.press("Enter")
    w.page.wait_for_selector("#attempts .att")
    att = analysis.run.attempts
    mine = att[(att["variant_id"] == cell[1]) & (att["case_id"] == cell[2])]
    assert w.page.locator("#attempts .att").count() == len(mine)
    assert cell[2] in w.page.text_content("#attempts h3")
    first = str(mine.sort_values("trial")["output"].iloc[0])[:60]
    assert first in w.page.text_content("#attempts")
    assert w.errors == [] and w.external == []


@pytest.mark.browser
def test_filtered_forest_keeps_each_candidates_mark(open_page, pages, analysis) -> None:
    """The paired forest tells its calls apart by shape as well as colour; a factor filter
    drops points, and each kept point keeps its own shape (the shapes must be subset with
    the points, as the colours are). The saved report's page draws the verdicts (the
    example's draws another frame)."""
    w = open_page(pages["saved"])
    w.page.select_option("select[data-factor='model']", "gpt-large")
    traces = w.js(
        "document.getElementById('fig-paired').data.map(t => [t.name, [...t.y],"
        " [...t.marker.symbol], [...t.marker.color]])"
    )
    verdicts = analysis.verdicts.set_index(["dimension", "candidate_variant_id"])["verdict"]
    marks = {"better": "triangle-up", "worse": "triangle-down"}
    seen = 0
    for name, ys, symbols, colours in traces:
        assert len(symbols) == len(ys) == len(colours), name
        for y, symbol in zip(ys, symbols, strict=True):
            assert symbol == marks.get(verdicts[(name, y)], "diamond-open"), (name, y)
            seen += 1
    assert seen and w.errors == []


@pytest.mark.browser
def test_every_figure_is_named_for_a_screen_reader(open_page, pages) -> None:
    """plotly's SVG has no accessible name: a drawn figure is a role=figure named by its
    title, as text (no markup, no escapes)."""
    w = open_page(pages["example"])
    named = w.js(
        "[...document.querySelectorAll('.fig')].filter(f => f.data).map(f =>"
        " [f.id, f.getAttribute('role'), f.getAttribute('aria-label') || ''])"
    )
    assert {i for i, _, _ in named} >= {f"fig-{f}" for f in ("pass_k", "heatmap", "paired")}
    for fig_id, role, label in named:
        assert role == "figure" and label and label != "figure", fig_id
        assert "<" not in label and "&lt;" not in label and "&amp;" not in label, label
    labels = dict((i, label) for i, _, label in named)
    assert labels["fig-pass_k"].startswith("pass@k and pass^k")
    assert labels["fig-heatmap"] == "Cases by variant"
    assert w.errors == []
