"""The two CSVs of AgenticLens 0.10 (spec §10.2, §10.3), byte for byte, from result frames.

Numbers are Python ``str()`` of the value (shortest round-trip repr), booleans
``True``/``False``, null empty; user text that starts with ``= + - @ \\t \\r`` gets a
leading ``'`` so spreadsheets do not run it as a formula.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._deprecate import keyword_hints
from .._files import write_atomic
from .._values import is_missing
from ..analysis import ExperimentAnalysis, require_analysis

__all__ = [
    "guard_formula",
    "render_cases_csv",
    "render_variants_csv",
    "write_cases_csv",
    "write_csv",
    "write_variants_csv",
]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "|", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# Leading characters a spreadsheet skips before deciding that a cell is a formula.
_SKIPPED = " \t\r\n\u3000\u00a0\ufeff"


def guard_formula(text: str) -> str:
    """Prefix ``'`` to text a spreadsheet would run as a formula (OWASP CSV injection).

    Besides ``= + - @``: a leading tab or carriage return, ``|`` (DDE), the full-width
    forms ``＝ ＋ － ＠``, and any of these after leading spaces, tabs or line breaks.

    Examples
    --------
    >>> guard_formula("=HYPERLINK(1)"), guard_formula("plain")
    ("'=HYPERLINK(1)", 'plain')
    >>> guard_formula(" =1+1"), guard_formula("\\n=cmd"), guard_formula("\uff1dSUM(A1)")[0]
    ("' =1+1", "'\\n=cmd", "'")
    """
    if text.startswith(_FORMULA_START) or text.lstrip(_SKIPPED).startswith(_FORMULA_START):
        return f"'{text}"
    return text


def _cell(value: Any) -> str:
    return "" if is_missing(value) else str(value)


def _k_columns(pass_k: tuple[int, ...]) -> list[str]:
    # The CSV headers and the result-frame columns share these names, so one list serves
    # both the header row and the lookups.
    return [f"{name}_{k}" for k in pass_k for name in ("pass_at", "pass_hat")]


def _csv_text(header: list[str], rows: Iterable[list[Any]]) -> str:
    """The package's CSV dialect (``\\n`` line ends, minimal quoting), for both files."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


@keyword_hints
def render_variants_csv(analysis: ExperimentAnalysis) -> str:
    """One row per variant, manifest order (the package's ``--csv``).

    Examples
    --------
    >>> import csv, io
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> rows = list(csv.DictReader(io.StringIO(render_variants_csv(a))))
    >>> [(r["variant_id"], round(float(r["case_pass_rate"]), 3), r["pareto_optimal"])
    ...  for r in rows[:2]]
    [('baseline', 0.714, 'True'), ('model-large', 0.743, 'False')]
    """
    analysis = require_analysis(analysis, "render_variants_csv")
    ks = analysis.pass_k
    comps = {c["candidate_variant_id"]: c for c in analysis.comparisons.to_dict("records")}
    header = [
        "variant_id",
        "variant_name",
        "target_kind",
        "factors",
        "is_baseline",
        "pareto_optimal",
        "attempted_trials",
        "completed_trials",
        "trial_success_rate",
        "case_pass_rate",
        "case_pass_rate_lower",
        "case_pass_rate_upper",
        "mean_score",
        "mean_latency_ms",
        "mean_cost_usd",
        "priced_trials",
        "consistency_rate",
        "flaky_case_ids",
        *_k_columns(ks),
        "case_pass_rate_delta",
        "case_pass_rate_p_value",
        "statistically_significant",
        "changed_factors",
    ]
    rows = []
    for row in analysis.variants.to_dict("records"):
        vid = str(row["variant_id"])
        comp = comps.get(vid)
        changed = comp["changed_factors"] if comp else {}
        rows.append(
            [
                guard_formula(vid),
                guard_formula(row["variant_name"]),
                row["target_kind"],
                guard_formula(";".join(f"{k}={v}" for k, v in row["factors"].items())),
                bool(row["is_baseline"]),
                bool(row["pareto_optimal"]),
                int(row["attempted_trials"]),
                int(row["completed_trials"]),
                row["trial_success_rate"],
                _cell(row["case_pass_rate"]),
                _cell(row["case_pass_rate_ci_low"]),
                _cell(row["case_pass_rate_ci_high"]),
                _cell(row["average_score_mean"]),
                _cell(row["average_latency_ms_mean"]),
                _cell(row["total_cost_usd_mean"]),
                int(row["priced_trials"]),
                _cell(row["consistency_rate"]),
                guard_formula(";".join(row["flaky_case_ids"])),
                *[_cell(row[c]) for c in _k_columns(ks)],
                _cell(comp["case_pass_rate_delta"] if comp else None),
                _cell(comp["case_pass_rate_p_value"] if comp else None),
                _cell(comp["statistically_significant"] if comp else None),
                guard_formula(";".join(f"{n}={v[0]}->{v[1]}" for n, v in changed.items())),
            ]
        )
    return _csv_text(header, rows)


@keyword_hints
def render_cases_csv(analysis: ExperimentAnalysis) -> str:
    """One row per (variant, case), variant then suite order (the package's ``--cases-csv``).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> lines = render_cases_csv(a).splitlines()
    >>> len(lines)  # the header, then 5 variants × 14 cases
    71
    >>> lines[0].split(",")[:6]
    ['variant_id', 'case_id', 'case_name', 'attempts', 'passes', 'pass_rate']
    >>> lines[1].split(",")[:6]
    ['baseline', 'refund-damaged-item', 'Refund for an item that arrived damaged', '5', '1', '0.2']
    """
    analysis = require_analysis(analysis, "render_cases_csv")
    ks = analysis.pass_k
    header = [
        "variant_id",
        "case_id",
        "case_name",
        "attempts",
        "passes",
        "pass_rate",
        "mean_score",
        "score_standard_deviation",
        "consistent",
        *_k_columns(ks),
    ]
    cm = analysis.cases
    # Column by column, and only the columns written: a row list per (variant, case) of
    # every column of the case matrix held ~100 MB at 20 000 cases.
    guarded = [
        _guarded([str(v) for v in cm["variant_id"].tolist()]),
        _guarded([str(v) for v in cm["case_id"].tolist()]),
        _guarded(cm["case_name"].tolist()),
    ]
    raw = [cm[c].tolist() for c in ("attempts", "passes", "pass_rate")]
    cells = [_cells(cm[c]) for c in ("mean_score", "score_standard_deviation")]
    consistent = [bool(v) for v in cm["consistent"].tolist()]
    k_cells = [_cells(cm[c]) for c in _k_columns(ks)]
    return _csv_text(header, zip(*guarded, *raw, *cells, consistent, *k_cells, strict=True))


def _guarded(texts: list[str]) -> list[str]:
    """:func:`guard_formula` of each text, each distinct text guarded once."""
    done: dict[str, str] = {}
    return [done[t] if t in done else done.setdefault(t, guard_formula(t)) for t in texts]


def _cells(values: pd.Series) -> list[str]:
    """:func:`_cell` of each value (a float column's only missing value is NaN)."""
    if values.dtype == np.float64:
        return ["" if v != v else str(v) for v in values.tolist()]
    return [_cell(v) for v in values.tolist()]


def write_csv(text: str, path: str | Path) -> Path:
    """Write CSV text as UTF-8 with ``\\n`` line ends (parents created)."""
    return write_atomic(path, text)


def write_variants_csv(analysis: ExperimentAnalysis, path: str | Path) -> Path:
    """Write :func:`render_variants_csv` to ``path`` (the CLI's ``--csv``)."""
    return write_csv(render_variants_csv(analysis), path)


def write_cases_csv(analysis: ExperimentAnalysis, path: str | Path) -> Path:
    """Write :func:`render_cases_csv` to ``path`` (the CLI's ``--cases-csv``)."""
    return write_csv(render_cases_csv(analysis), path)
