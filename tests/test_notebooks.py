"""notebooks/*.ipynb execute offline against data/ (nbclient, the venv's ``python3``
kernel from ipykernel: no ``ipykernel install`` step), and are committed without outputs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from agenticlens_frames.analysis import ATTEMPTS_AS_INDEPENDENT

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
#: Largest executed notebook, outputs and widget state included.
MAX_EXECUTED_BYTES = 3_000_000


def test_there_are_notebooks() -> None:
    assert {p.name for p in PATHS} >= {"quickstart.ipynb", "factor_slicing.ipynb"}


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_outputs_are_stripped(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name
    assert "widgets" not in nb.metadata


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_notebook_executes(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        # Safety nets only (a stuck cell, a kernel that never starts): generous enough
        # that a loaded machine cannot trip them.
        timeout=1800,
        startup_timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error"
    ]
    assert errors == []
    # AgenticLens's warning about its pooled numbers ("Case-level pass-rate intervals ...
    # treat each case attempt as independent") must not be read as one about the case-level
    # summary (cases as the unit) a notebook leads with: printed, it says whose it is.
    printed = "".join(
        out.get("text", "")
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.output_type == "stream"
    )
    for line in printed.splitlines():
        if ATTEMPTS_AS_INDEPENDENT in line:
            assert "AgenticLens" in line.replace(ATTEMPTS_AS_INDEPENDENT, ""), line
    mimes = {
        key for cell in nb.cells for out in cell.get("outputs", []) for key in out.get("data", {})
    }
    assert "application/vnd.plotly.v1+json" in mimes  # the figures were produced
    # Saved as a user's notebook is saved (nbclient keeps the widget state): plotly.js must
    # not travel inside it once per figure widget (an executed quickstart was 15.5 MB).
    executed = tmp_path / path.name
    nbformat.write(nb, executed)
    assert executed.stat().st_size <= MAX_EXECUTED_BYTES, executed.stat().st_size
