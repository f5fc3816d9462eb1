"""The bundled example is what its generator writes, byte for byte."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from .conftest import DATA, EXAMPLE, Reference


def test_the_generator_writes_the_bundled_files(tmp_path: Path) -> None:
    out = tmp_path / "support"
    subprocess.run([sys.executable, str(DATA / "make_example.py"), str(out)], check=True)
    written = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    bundled = sorted(p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*") if p.is_file())
    assert written == bundled
    for name in written:
        assert (out / name).read_bytes() == (EXAMPLE / name).read_bytes(), name


def test_the_example_declares_its_correction() -> None:
    manifest = yaml.safe_load((EXAMPLE / "manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["comparisons"] == {"correction": "holm"}


@pytest.mark.differential
def test_the_data_readme_table_is_what_the_reference_package_reports(
    reference: Callable[..., Reference],
) -> None:
    # data/README.md quotes the package's numbers for the bundled example; they are checked
    # against the real agenticlens 0.10.0 run on it, so a changed generator cannot leave the
    # table behind.
    ref = reference(EXAMPLE)
    assert ref.returncode == 0, ref.stderr
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    table = readme.split("| variant | pass rate | score | latency | cost | Pareto |", 1)[1]
    rows = [line for line in table.split("\n\n", 1)[0].splitlines() if line.startswith("| `")]
    variants = {v["variant_id"]: v for v in ref.report["variants"]}
    assert [re.match(r"\| `([^`]+)`", row).group(1) for row in rows] == list(variants)
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        variant = variants[cells[0].strip("`")]
        summary = variant["summary"]
        expected = f"{summary['case_pass_rate']:.1%}".replace("%", " %")
        if summary["completed_trials"] < summary["attempted_trials"]:
            over = f"{summary['pass_rate']['mean']:.1%}".replace("%", " %")
            expected += f" ({over} over completed trials)"
        assert cells[1] == expected, cells
        assert cells[2] == f"{summary['average_score']['mean']:.3f}", cells
        assert cells[3] == f"{summary['average_latency_ms']['mean']:.0f} ms", cells
        assert cells[4] == f"${summary['total_cost_usd']['mean']:.4f}", cells
        assert cells[5] == ("yes" if variant["pareto_optimal"] else "no"), cells
