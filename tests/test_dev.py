"""./dev notebook: installs the notebook extra into the venv and starts JupyterLab on
notebooks/ with the user's arguments (checked with a stand-in ``jupyter``: the real
install is what `pip install -e '.[notebook]'` does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("job", ["notebook", "lab"])
def test_dev_notebook_starts_jupyterlab_on_the_notebooks(tmp_path: Path, job: str) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    # The extra counts as installed (newer than pyproject.toml): no pip run here.
    stamp = venv / ".installed-notebook"
    stamp.touch()
    mtime = (ROOT / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (mtime, mtime))
    jupyter = venv / "bin" / "jupyter"
    jupyter.write_text('#!/bin/sh\necho "jupyter called with: $*"\n', encoding="utf-8")
    jupyter.chmod(0o755)
    done = subprocess.run(
        [str(ROOT / "dev"), job, "--no-browser"],
        capture_output=True,
        text=True,
        env={**os.environ, "VENV": str(venv)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "jupyter called with: lab --notebook-dir=notebooks --no-browser" in done.stdout
    assert "--no-browser" in done.stdout.splitlines()[1]  # the hint comes first


def test_dev_usage_and_readme_name_the_notebook_command() -> None:
    usage = subprocess.run([str(ROOT / "dev")], capture_output=True, text=True, timeout=60)
    assert "./dev notebook" in usage.stdout
    assert "./dev notebook" in (ROOT / "README.md").read_text(encoding="utf-8")
