"""Result-frame columns, declared once: name, dtype, JSON key and meaning.

Each :class:`FrameSchema` lists a result frame's columns in order. From it come the
column order the analysis builds (:attr:`FrameSchema.columns`), the JSON report's block
(:meth:`FrameSchema.to_json`), the saved-report reader (:meth:`FrameSchema.from_json`,
the exact inverse), the Arrow schema of its parquet file (:meth:`FrameSchema.arrow`) and
its table in docs/data-model.md (:meth:`FrameSchema.docs_table`). The tests check
write → read → write is byte-identical, that the analysis produces these dtypes, and that
the docs hold these tables.

Declared here so far: ``factor_levels`` and ``comparisons``. The variant summary, the
case matrix and the trial summaries are still written and read by hand in
report/json_report.py and report/saved.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._docs import markdown_table
from ._values import is_missing

__all__ = ["COMPARISONS", "FACTOR_LEVELS", "SUMMARY_METRICS", "Column", "FrameSchema"]

#: The four per-trial series summarised per variant (spec §9.2), and whether each is
#: bounded to [0, 1] (its normal interval is clipped).
SUMMARY_METRICS: dict[str, bool] = {
    "pass_rate": True,
    "average_score": True,
    "average_latency_ms": False,
    "total_cost_usd": False,
}


def number_to_json(value: Any) -> Any:
    """A JSON-ready number: NaN and ±inf become null (the package's serialiser does so).

    Examples
    --------
    >>> number_to_json(np.float64(0.5)), number_to_json(math.inf), number_to_json(np.int64(3))
    (0.5, None, 3)
    """
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def number_from_json(value: Any) -> float:
    """The inverse of :func:`number_to_json`: null becomes NaN."""
    return math.nan if value is None else float(value)


@dataclass(frozen=True)
class Codec:
    """How one kind of cell is written to JSON and read back (exact inverses)."""

    dtype: str
    to_json: Callable[[Any], Any]
    from_json: Callable[[Any], Any]
    arrow: str


CODECS: dict[str, Codec] = {
    "text": Codec("str", lambda v: v, lambda v: v, "string"),
    "number": Codec("float64", number_to_json, number_from_json, "double"),
    "count": Codec("int64", int, int, "int64"),
    "flag": Codec(
        "boolean",
        lambda v: None if is_missing(v) else bool(v),
        lambda v: pd.NA if v is None else bool(v),
        "bool",
    ),
    "ids": Codec("object", list, lambda v: tuple(v or ()), "list<string>"),
    "mapping": Codec("object", lambda v: v, lambda v: dict(v or {}), "string (JSON)"),
}


@dataclass(frozen=True)
class Column:
    """One column: its name, codec, JSON key and meaning.

    ``json`` is the key in the report (None: not written, ``derive`` rebuilds it on
    reading). ``required`` keys must be present when reading; others read as missing.
    ``block`` names a nested object holding the key (a comparison's ``<metric>_delta``).
    """

    name: str
    codec: str
    doc: str
    json: str | None = ""
    required: bool = False
    block: str | None = None
    derive: Callable[[Mapping[str, Any]], Any] | None = None

    @property
    def key(self) -> str | None:
        return self.name if self.json == "" else self.json


@dataclass(frozen=True)
class FrameSchema:
    """A result frame: its columns in order, and nested blocks' presence rules."""

    name: str
    grain: str
    columns_: tuple[Column, ...]
    #: block -> the column whose missing value means the whole block is null.
    block_present_if: Mapping[str, str] = field(default_factory=dict)
    #: block -> fix-ups of a block's raw JSON values on reading (column -> function).
    block_readers: Mapping[str, Mapping[str, Callable[[Mapping[str, Any]], Any]]] = field(
        default_factory=dict
    )

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.columns_]

    @property
    def dtypes(self) -> dict[str, str]:
        return {c.name: CODECS[c.codec].dtype for c in self.columns_}

    # ------------------------------------------------------------------ JSON

    def to_json(self, frame: pd.DataFrame) -> list[dict[str, Any]]:
        """The frame as the report's list of objects, in the package's key order."""
        out = []
        for row in frame.to_dict("records"):
            item: dict[str, Any] = {}
            for column in self.columns_:
                if column.key is None:
                    continue
                value = CODECS[column.codec].to_json(row[column.name])
                if column.block is None:
                    item[column.key] = value
                    continue
                if column.block not in item:
                    present = not is_missing(row[self.block_present_if[column.block]])
                    item[column.block] = {} if present else None
                if item[column.block] is not None:
                    item[column.block][column.key] = value
            out.append(item)
        return out

    def from_json(
        self, items: list[Any], *, place: list[str | int], per_item: bool = True
    ) -> pd.DataFrame:
        """The inverse of :meth:`to_json`. ``place`` follows the reading (for errors)."""
        base = list(place)
        rows = []
        for n, item in enumerate(items):
            if per_item:
                place[:] = [*base, n]
            row: dict[str, Any] = {}
            for column in self.columns_:
                if column.key is None:
                    continue
                codec = CODECS[column.codec]
                if column.block is None:
                    raw = item[column.key] if column.required else item.get(column.key)
                    row[column.name] = codec.from_json(raw)
                    continue
                block = item.get(column.block)
                if not block:
                    row[column.name] = pd.NA if column.codec == "flag" else math.nan
                    continue
                fix = self.block_readers.get(column.block, {}).get(column.key)
                raw = fix(block) if fix else block[column.key]
                row[column.name] = codec.from_json(raw)
            for column in self.columns_:
                if column.derive is not None:
                    row[column.name] = column.derive(row)
            rows.append(row)
        place[:] = base
        return self.frame(rows)

    def frame(self, rows: list[dict[str, Any]]) -> pd.DataFrame:
        """Rows as a frame with the declared column order and dtypes."""
        out = pd.DataFrame(rows, columns=self.columns)
        for name, dtype in self.dtypes.items():
            if dtype == "str":
                out[name] = out[name].astype("str")
            elif dtype != "object":
                out[name] = out[name].astype(dtype)
        return out

    # ------------------------------------------------------------------ Arrow, docs

    def arrow(self) -> Any:
        """The Arrow schema of the frame's parquet file (report/tables.py writes it)."""
        import pyarrow as pa

        types = {
            "string": pa.string(),
            "double": pa.float64(),
            "int64": pa.int64(),
            "bool": pa.bool_(),
            "list<string>": pa.list_(pa.string()),
            "string (JSON)": pa.string(),
        }
        return pa.schema([(c.name, types[CODECS[c.codec].arrow]) for c in self.columns_])

    def docs_table(self) -> str:
        """The frame's columns as a Markdown table (docs/data-model.md)."""
        rows = []
        for c in self.columns_:
            where = "—" if c.key is None else f"`{c.key}`"
            if c.block is not None:
                where = f"`{c.block}.{c.key}`"
            rows.append([f"`{c.name}`", CODECS[c.codec].dtype, where, c.doc])
        return markdown_table(["column", "dtype", "JSON", "meaning"], rows)


FACTOR_LEVELS = FrameSchema(
    "factor_levels",
    "factor × level",
    (
        Column("factor", "text", "factor name", required=True),
        Column("value", "text", "level (`(unset)` for variants without the factor)", required=True),
        Column("variant_ids", "ids", "variants at this level", required=True),
        Column(
            "n_variants",
            "count",
            "number of variants at this level",
            json=None,
            derive=lambda row: len(row["variant_ids"]),
        ),
        Column("mean_pass_rate", "number", "mean of the variants' mean trial pass rates"),
        Column("mean_average_score", "number", "mean of their mean average scores"),
        Column("mean_latency_ms", "number", "mean of their mean latencies"),
        Column("mean_cost_usd", "number", "mean of their mean trial costs"),
        Column("mean_trial_success_rate", "number", "mean of their trial success rates"),
    ),
)


def _relative_or_infinite(block: Mapping[str, Any]) -> Any:
    # The package writes ±inf (a change from 0) as null: read it back as the infinity.
    relative, absolute = block.get("relative"), block["absolute"]
    if relative is None:
        return math.copysign(math.inf, absolute) if absolute else None
    return relative


def _delta_columns(metric: str) -> tuple[Column, ...]:
    block = f"{metric}_delta"
    return (
        Column(f"{metric}_delta", "number", "candidate − baseline", "absolute", block=block),
        Column(
            f"{metric}_delta_relative",
            "number",
            "delta / |baseline| (±inf from 0)",
            "relative",
            block=block,
        ),
        Column(
            f"{metric}_regressed",
            "flag",
            "worse than the regression threshold",
            "regressed",
            block=block,
        ),
    )


COMPARISONS = FrameSchema(
    "comparisons",
    "candidate",
    (
        Column("baseline_variant_id", "text", "the baseline", required=True),
        Column("candidate_variant_id", "text", "the candidate", required=True),
        *(column for metric in SUMMARY_METRICS for column in _delta_columns(metric)),
        Column("changed_factors", "mapping", "factor -> [baseline level, candidate level]"),
        Column("case_pass_rate_delta", "number", "difference of pooled case pass rates"),
        Column("case_pass_rate_p_value", "number", "two-proportion z-test (attempts pooled)"),
        Column("statistically_significant", "flag", "p-value below 1 − confidence level"),
        Column("regressed_case_ids", "ids", "cases whose pass rate fell"),
        Column("improved_case_ids", "ids", "cases whose pass rate rose"),
        Column("warnings", "ids", "comparison warnings"),
    ),
    block_present_if={f"{m}_delta": f"{m}_regressed" for m in SUMMARY_METRICS},
    block_readers={f"{m}_delta": {"relative": _relative_or_infinite} for m in SUMMARY_METRICS},
)
