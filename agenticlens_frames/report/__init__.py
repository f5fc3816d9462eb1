"""Renderings of result frames: the compatible JSON report, the CSVs, the HTML page, the
console summary, and parquet exports. None of them computes a statistic."""

from .csv_report import render_cases_csv, render_variants_csv
from .json_report import build_report, write_json_report
from .saved import load_report

__all__ = [
    "build_report",
    "load_report",
    "render_cases_csv",
    "render_variants_csv",
    "write_json_report",
]
