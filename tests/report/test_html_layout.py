"""The page as a phone, a small laptop and a desktop show it (360, 800, 1280 px wide, in
headless chromium): nothing overlaps, nothing scrolls sideways but the tables; the factor
filters filter every view; the footer says what made the page."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from agenticlens_frames import analyze, as_analysis, load_experiment
from agenticlens_frames.report.html import write_html_report

from .test_html_browser import EXAMPLE

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def analysis():
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    return as_analysis(run, correction="holm")


@pytest.fixture(scope="module")
def page_file(analysis, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_html_report(analysis, tmp_path_factory.mktemp("layout") / "report.html")


LAYOUT = """() => {
  const vw = document.documentElement.clientWidth;
  const box = (e) => e.getBoundingClientRect();
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5
      && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
      + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : '');
  const overlaps = [];
  // Siblings that are laid out side by side or stacked must never cover each other.
  const groups = [document.querySelectorAll('main > *'),
                  ...[...document.querySelectorAll('.tiles, .controls')].map(g => g.children),
                  ...[...document.querySelectorAll('section')].map(s => s.children)];
  for (const group of groups) {
    const items = [...group].filter(e => box(e).width > 0 && box(e).height > 0);
    for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) {
      if (hit(box(items[i]), box(items[j]))) overlaps.push(name(items[i]) + ' / ' + name(items[j]));
    }
  }
  // Nothing reaches past the viewport except inside a horizontally scrolling box.
  const wide = [...document.querySelectorAll('main *')].filter(e => {
    if (e.closest('.scroll, .fig')) return false;
    const r = box(e);
    return r.width > 0 && r.right > vw + 0.5;
  }).map(name);
  return {overlaps, wide: wide.slice(0, 10),
          pageScroll: document.documentElement.scrollWidth > vw};
}"""


def _open(browser, path: Path, width: int, height: int = 900):
    """The page at ``width`` × ``height`` px, its script errors collected, once every figure
    is drawn."""
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(60_000)  # a loaded two-core machine, not a slow page
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='true']")
    return page, errors


@pytest.fixture(scope="module")
def undeclared_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page without a declared correction: it quotes how to declare one, in code."""
    run = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml")
    run = dataclasses.replace(run, manifest=dataclasses.replace(run.manifest, comparisons=None))
    return write_html_report(analyze(run), tmp_path_factory.mktemp("layout") / "plain.html")


@pytest.mark.parametrize("width", [360, 800, 1280])
@pytest.mark.parametrize("which", ["page_file", "undeclared_file"])
def test_page_is_readable_at_every_width(browser, request, which, width) -> None:
    page, errors = _open(browser, request.getfixturevalue(which), width)
    try:
        got = page.evaluate(LAYOUT)
        assert got["overlaps"] == [], got
        assert got["wide"] == [], got
        assert not got["pageScroll"], got
        assert errors == []
    finally:
        page.close()


@pytest.mark.parametrize("which", ["page_file", "undeclared_file"])
def test_every_verdict_cell_is_in_sight_on_a_phone(browser, request, which) -> None:
    """At 390 px the five-column verdict table put the verdict at x = 380, past the edge
    until the table was scrolled: on a phone each row is a card of labelled cells."""
    page, errors = _open(browser, request.getfixturevalue(which), 390)
    try:
        got = page.evaluate(
            """() => {
              const vw = document.documentElement.clientWidth;
              const cells = [...document.querySelectorAll('table.verdicts td')];
              return {n: cells.length,
                      out: cells.filter(c => c.getBoundingClientRect().right > vw + 0.5)
                                .map(c => c.dataset.label),
                      labels: [...new Set(cells.map(c => getComputedStyle(c, '::before')
                                                         .content))]};
            }"""
        )
        assert got["n"] > 0 and got["out"] == [], got
        assert '"Verdict"' in got["labels"] or '"Smallest detectable change"' in got["labels"]
        wide = page.evaluate(
            "() => { const t = document.querySelector('table.verdicts');"
            " return [t.getBoundingClientRect().width, t.parentElement.clientWidth]; }"
        )
        assert wide[0] <= wide[1] + 0.5, wide
        assert errors == []
    finally:
        page.close()


#: Whether the verdict table's cells in the window can be seen, or something covers them.
COVERED = """() => {
  const t = document.querySelector('table.verdicts');
  window.scrollTo(0, t.getBoundingClientRect().top + window.scrollY);
  const vh = window.innerHeight;
  const seen = [...t.querySelectorAll('td')].map(c => c.getBoundingClientRect())
      .filter(r => r.height > 0 && r.top >= 0 && r.bottom <= vh);
  const covered = seen.filter(r => {
    const e = document.elementFromPoint(r.left + 4, r.top + r.height / 2);
    return !t.contains(e);
  });
  return {seen: seen.length, covered: covered.length};
}"""


@pytest.mark.parametrize(("width", "height"), [(375, 667), (640, 480)])
def test_the_filter_bar_leaves_the_verdicts_in_sight(browser, page_file, width, height) -> None:
    """On a phone (or a window zoomed to 640 × 480 px) the sticky factor filters held a
    third of the screen and hid the verdict rows scrolling under them."""
    page, errors = _open(browser, page_file, width, height)
    try:
        got = page.evaluate(COVERED)
        assert got["seen"] > 0 and got["covered"] == 0, got
        assert errors == []
    finally:
        page.close()


FILTERED = """() => {
  const visible = (sel) => [...document.querySelectorAll(sel)]
      .filter(e => !e.hidden).map(e => e.dataset.variant);
  const fig = (id) => document.getElementById(id).data;
  const shown = (t) => t.visible === undefined || t.visible === true;
  return {
    variants: visible('#variants tr[data-variant]'),
    passK: visible('#pass-k tr[data-variant]'),
    baseline: visible('#compat tr[data-variant]'),
    verdicts: [...new Set(visible('#verdicts tr[data-variant]'))],
    frontier: visible('#frontier-probabilities tr[data-variant]'),
    caseColumns: visible('.cases th[data-variant]'),
    caseCells: [...document.querySelectorAll('table.cases tbody tr')]
        .map(r => [...r.cells].slice(1).filter(c => !c.hidden).length),
    curves: [...new Set(fig('fig-pass_k').filter(shown).map(t => t.legendgroup))],
    outcomes: fig('fig-case_outcomes').filter(shown).map(t => t.name),
    deltas: [...new Set(fig('fig-deltas').flatMap(t => [...t.y]))],
    paired: [...new Set(fig('fig-paired').flatMap(t => [...t.y]))],
    pareto: fig('fig-pareto').flatMap(t => [...t.text]),
    heat: [...fig('fig-heatmap')[0].y],
    levels: [...document.querySelectorAll('#factors tr[data-factor-row]')]
        .filter(e => !e.hidden).map(e => e.dataset.factorRow + '=' + e.dataset.level),
  };
}"""


def test_factor_filters_filter_every_view(browser, page_file, analysis) -> None:
    page, errors = _open(browser, page_file, 1280)
    try:
        page.select_option("select[data-factor='model']", "gpt-large")
        page.wait_for_function(
            "() => document.getElementById('filter-status').textContent.startsWith('2 of')"
        )
        got = page.evaluate(FILTERED)
    finally:
        page.close()
    v = analysis.run.variants
    keep = [str(x) for x in v.loc[v["factor_model"] == "gpt-large", "variant_id"]]
    base = analysis.info["baseline_variant_id"]
    candidates = [x for x in keep if x != base]
    for key in ("variants", "passK", "caseColumns", "curves", "outcomes", "heat"):
        assert got[key] == keep, key
    assert got["baseline"] == candidates and got["deltas"] == candidates
    assert got["paired"] == candidates and got["verdicts"] == candidates
    assert got["frontier"] == keep
    # Every case's row is in the table, showing the cells of the kept variants only.
    assert got["caseCells"] == [len(keep)] * analysis.cases["case_id"].nunique()
    assert sorted(got["pareto"]) == sorted(keep)
    levels = {x for x in got["levels"] if x.startswith("model=")}
    assert levels == {"model=gpt-large"}
    assert {x for x in got["levels"] if x.startswith("prompt=")} == {"prompt=v1", "prompt=v2"}
    assert errors == []
