"""Renderings of result frames: the compatible JSON report, the CSVs, the HTML page, the
console summary, and parquet exports. None of them computes a statistic."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .csv_report import render_cases_csv, render_variants_csv
    from .json_report import build_report, write_json_report
    from .saved import load_report

# Imported on first use: the command line reads the writers' registry (report.writers)
# to build its options, and --help must not load pandas for it.
_LAZY = {
    "build_report": ".json_report",
    "load_report": ".saved",
    "render_cases_csv": ".csv_report",
    "render_variants_csv": ".csv_report",
    "write_json_report": ".json_report",
}

#: ``__all__`` is every name of ``_LAZY`` (the one list of public names).
__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY, globals())
