"""What importing the package and running ``--help`` load: the heavy libraries stay out.

Structural, not timed (issue 19: ``import agenticlens_frames`` and
``agenticlens-frames --help`` within 0.3 s): each probe runs in a fresh interpreter and
lists the modules it ended up with, so a top-level ``import plotly`` (or pandas, scipy,
...) slipped into a module on the path fails here whatever the machine's speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Libraries that cost from tens of milliseconds to most of a second to import.
HEAVY = (
    "numpy",
    "pandas",
    "pyarrow",
    "pyarrow.dataset",
    "pyarrow.parquet",
    "scipy",
    "statsmodels",
    "plotly",
    "duckdb",
    "dask",
    "httpx",
    "jsonschema",
)
# Imported by typer's help formatter (typer.rich_utils) only for markdown help texts and
# pretty tracebacks, neither of which ours use: deferred (agenticlens_frames/_deferred_rich.py).
DEFERRED_BY_HELP = ("rich.markdown", "rich.traceback", "rich.syntax", "markdown_it", "pygments")
# Needed to load and analyse a run, but never by the analysis tables themselves.
NOT_FOR_ANALYSIS = ("scipy.stats", "statsmodels", "plotly", "duckdb", "dask", "pyarrow.dataset")


def _modules_after(code: str) -> set[str]:
    probe = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_package_loads_no_heavy_library() -> None:
    loaded = _modules_after("import agenticlens_frames")
    assert "agenticlens_frames" in loaded
    assert sorted(loaded.intersection(HEAVY)) == []


@pytest.mark.parametrize("argv", [["--help"], ["experiment", "--help"], ["archive", "--help"]])
def test_cli_help_loads_no_heavy_library(argv: list[str]) -> None:
    # main(), as the console script runs it (it first decides whether to supervise).
    loaded = _modules_after(
        f"""
        import sys
        from agenticlens_frames.cli import main
        sys.argv = ["agenticlens-frames", *{argv!r}]
        try:
            main()
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        """
    )
    assert "typer" in loaded  # the probe did reach the command line
    assert sorted(loaded.intersection(HEAVY)) == []
    # typer's help formatter ran, without rich's Markdown and traceback modules (_deferred_rich).
    assert "typer.rich_utils" in loaded
    assert sorted(loaded.intersection(DEFERRED_BY_HELP)) == []


def test_help_formatter_gets_the_real_markdown_and_traceback_when_used() -> None:
    """The stand-ins of _deferred_rich import the real classes on first use, and leave
    ``rich.markdown`` and ``rich.traceback`` to be imported as usual by anyone."""
    loaded = _modules_after(
        """
        import sys
        from agenticlens_frames.cli import main
        sys.argv = ["agenticlens-frames", "experiment", "nonesuch"]
        try:
            main()  # a usage error: typer.rich_utils prints it
        except SystemExit as exc:
            assert exc.code == 2, exc.code
        assert "typer.rich_utils" in sys.modules
        assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
        import typer.rich_utils as formatter
        text = formatter._make_rich_text(text="*x*", markup_mode="markdown")
        import rich.markdown, rich.traceback
        assert type(text) is rich.markdown.Markdown
        assert isinstance(text, formatter.Markdown)
        assert issubclass(rich.markdown.Markdown, formatter.Markdown)
        assert rich.markdown.Markdown.__module__ == "rich.markdown"  # the real module
        tb = formatter.Traceback.from_exception(ValueError, ValueError("x"), None)
        assert type(tb) is rich.traceback.Traceback
        """
    )
    assert {"rich.markdown", "rich.traceback", "markdown_it"} <= loaded


def test_supervisor_decides_without_heavy_libraries() -> None:
    """``experiment run`` runs in a watched child: the watching parent reads the manifest
    (live targets or not) and waits, so it must not pay for pandas and the runner."""
    data = Path(__file__).resolve().parents[1] / "data" / "support"
    loaded = _modules_after(
        f"""
        from agenticlens_frames import _supervise
        assert _supervise.wanted(["experiment", "run", "m.yaml", "s.yaml"])
        assert not _supervise._has_live_targets(
            ["experiment", "run", {str(data / "manifest.yaml")!r}])
        """
    )
    assert "agenticlens_frames.formats.manifest" in loaded  # the manifest was read
    assert sorted(loaded.intersection(HEAVY)) == []


def test_loading_and_analysis_names_load_no_plotting_or_engines() -> None:
    loaded = _modules_after(
        """
        import agenticlens_frames as alf
        for name in ("load_experiment", "analyze", "write_json_report", "render_cases_csv"):
            getattr(alf, name)
        """
    )
    assert "pandas" in loaded  # the names really were resolved
    assert sorted(loaded.intersection(NOT_FOR_ANALYSIS)) == []


def test_recorded_run_without_html_loads_no_plotting_or_http(tmp_path: Path) -> None:
    """``experiment run`` of recorded variants writing JSON and CSVs needs neither plotly
    (the HTML page) nor httpx (http targets) nor scipy.stats nor the archive engines."""
    data = Path(__file__).resolve().parents[1] / "data" / "support"
    loaded = _modules_after(
        f"""
        from agenticlens_frames.cli import app
        try:
            app(["experiment", "run", "-q", {str(data / "manifest.yaml")!r},
                 {str(data / "suite.yaml")!r}, "--save", {str(tmp_path / "r.json")!r},
                 "--csv", {str(tmp_path / "v.csv")!r}, "--cases-csv",
                 {str(tmp_path / "c.csv")!r}], standalone_mode=False)
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        """
    )
    assert (tmp_path / "r.json").stat().st_size > 0  # the run really happened
    # scipy.stats too: its few distribution functions a run needs come from scipy.special
    # (agenticlens_frames._distributions), the same numbers without its import time.
    # scipy.linalg: only scipy.special.roots_jacobi needed it, for the beta-binomial grid
    # that is now stored (stats_paired._BB_ICC_TABLE).
    unneeded = (*NOT_FOR_ANALYSIS, "httpx", "scipy.linalg")
    assert sorted(loaded.intersection(unneeded)) == []
