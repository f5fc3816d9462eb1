"""The explorer in a real JupyterLab: the notebook runs in a kernel, the widgets render
through JupyterLab's widget manager, a click on a heatmap cell travels through the click
bridge and the comm channel to Python, and the kernel's answer (that cell's attempts)
appears on the page. test_widgets_browser.py checks the bridge's JavaScript against a
stand-in model; this is the whole path a user takes."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from agenticlens_frames import load_experiment

from .conftest import EXAMPLE

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on loopback with its own config, data and runtime folders
    (nothing from the user's ~/.jupyter), serving a folder with one notebook."""
    if shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) is None:
        if os.environ.get("CI"):
            pytest.fail("jupyterlab is not installed (the test extra installs it)")
        pytest.skip("jupyterlab is not installed here (pip install -e '.[test]' installs it)")
    home = tmp_path_factory.mktemp("lab")
    notebooks = home / "notebooks"
    notebooks.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from agenticlens_frames import analyze, explore, load_experiment\n"
            f"run = load_experiment({str(EXAMPLE / 'manifest.yaml')!r}, "
            f"{str(EXAMPLE / 'suite.yaml')!r})\n"
            "explorer = explore(analyze(run))\n"
            "explorer"
        )
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, notebooks / "explore.ipynb")
    token = secrets.token_hex(16)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        # The kernel imports this checkout, as the tests do.
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    # The kernel is this interpreter, whatever kernels the machine has installed.
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--prefix", str(home / "kernel")],
        env=env,
        check=True,
        capture_output=True,
    )
    env["JUPYTER_PATH"] = str(home / "kernel" / "share" / "jupyter")
    log = (home / "lab.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--IdentityProvider.token={token}",
            "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={notebooks}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=notebooks,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"jupyter lab ended at start:\n{(home / 'lab.log').read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail(f"jupyter lab did not listen in 120 s:\n{(home / 'lab.log').read_text()}")
        yield f"{url}/lab/tree/explore.ipynb?token={token}&reset"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


HEAT = (
    "() => [...document.querySelectorAll('.js-plotly-plot')].find(gd => gd.layout &&"
    " String(gd.layout.meta).startsWith('agenticlens-heatmap-') && gd.__alfHooked)"
)


def _open_explorer(browser, url: str, outside: list[str]):
    """A page with the notebook open and run, once the explorer's heatmap is drawn; every
    request that leaves the machine is appended to ``outside``."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on(
        "request",
        lambda r: (
            outside.append(r.url)
            if not re.match(r"^(https?|wss?)://127\.0\.0\.1[:/]|^(data|blob|about):", r.url)
            else None
        ),
    )
    page.goto(url)
    page.wait_for_function(
        "() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=90_000
    )
    # The kernel must be idle before the cells run (a fresh kernel takes a while).
    page.wait_for_function(
        """() => { const w = window.jupyterapp.shell.currentWidget;
             return w && w.sessionContext && w.sessionContext.session &&
               w.sessionContext.session.kernel &&
               w.sessionContext.session.kernel.status === 'idle'; }""",
        timeout=90_000,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(f"() => !!({HEAT})()", timeout=120_000)
    return page


def _expected_trials(variant_id: str, case_id: str) -> list[str]:
    """Independently of the widget: the attempts of that variant and case in the run."""
    attempts = load_experiment(EXAMPLE / "manifest.yaml", EXAMPLE / "suite.yaml").attempts
    # The heatmap labels the variants and cases by id (escaped; the example's are plain).
    mine = attempts[(attempts["variant_id"] == variant_id) & (attempts["case_id"] == case_id)]
    assert len(mine) > 0
    return sorted(
        f"trial {t} · {s} · {'passed' if p else 'failed'}"
        for t, s, p in zip(mine["trial"], mine["status"], mine["passed"], strict=True)
    )


def _shown_trials(details: str) -> list[str]:
    return sorted(re.findall(r"trial \d+ · \w+ · (?:passed|failed)", details))


def test_a_heatmap_click_in_jupyterlab_shows_that_cells_attempts(browser, lab) -> None:
    outside: list[str] = []
    page = _open_explorer(browser, lab, outside)
    try:
        row, col = 1, 2
        x_label, y_label, x, y = page.evaluate(
            f"""([row, col]) => {{ const gd = ({HEAT})();
              gd.scrollIntoView();
              const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
              const nx = gd.data[0].x.length, ny = gd.data[0].y.length;
              return [String(gd.data[0].x[col]), String(gd.data[0].y[row]),
                      r.left + (col + 0.5) * r.width / nx, r.top + (row + 0.5) * r.height / ny];
            }}""",
            [row, col],
        )
        page.mouse.click(x, y)
        # The kernel answers by setting the details widget; JupyterLab renders it.
        heading = page.wait_for_selector(f"h4:has-text('{y_label} · {x_label}')", timeout=60_000)
        details = heading.evaluate("h => h.parentElement.innerText")
    finally:
        page.close()
    assert not outside, outside
    expected = _expected_trials(y_label, x_label)
    assert _shown_trials(details) == expected, (details, json.dumps(expected))


def test_a_cells_attempts_from_the_keyboard_in_jupyterlab(browser, lab) -> None:
    # Tab to the variant dropdown, arrow down to a variant, Tab to the case dropdown, arrow
    # down to a case: as a keyboard user does. JupyterLab's command-mode shortcuts took
    # those arrow keys (they moved the focus out of the output) until the explorer marked
    # its controls to keep them.
    outside: list[str] = []
    page = _open_explorer(browser, lab, outside)
    focused = (
        "() => { const e = document.activeElement; const l = e.parentElement &&"
        " e.parentElement.querySelector('label'); return l ? l.innerText : e.tagName; }"
    )
    try:
        page.click(".jp-OutputArea-output h3")  # into the output, as a reader's click
        for _ in range(80):
            page.keyboard.press("Tab")
            if page.evaluate(focused) == "variant":
                break
        assert page.evaluate(focused) == "variant"
        page.keyboard.press("ArrowDown")  # the first variant
        page.keyboard.press("Tab")
        assert page.evaluate(focused) == "case"
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")  # the second case
        y_label, x_label = page.evaluate(
            f"() => {{ const gd = ({HEAT})(); return [String(gd.data[0].y[0]),"
            " String(gd.data[0].x[1])]; }"
        )
        heading = page.wait_for_selector(f"h4:has-text('{y_label} · {x_label}')", timeout=60_000)
        details = heading.evaluate("h => h.parentElement.innerText")
    finally:
        page.close()
    assert not outside, outside
    assert _shown_trials(details) == _expected_trials(y_label, x_label), details
