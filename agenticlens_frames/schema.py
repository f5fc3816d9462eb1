"""Result-frame columns, declared once: name, dtype, JSON key and meaning.

Each :class:`FrameSchema` lists a result frame's columns in order. From it come the
column order the analysis builds (:attr:`FrameSchema.columns`), the JSON report's block
(:meth:`FrameSchema.to_json`), the saved-report reader (:meth:`FrameSchema.from_json`,
the exact inverse), the Arrow schema of its parquet file (:meth:`FrameSchema.arrow`) and
its table in docs/data-model.md (:meth:`FrameSchema.docs_table`). The tests check
write → read → write is byte-identical, that the analysis produces these dtypes, and that
the docs hold these tables.

Declared here: the variant summary (:data:`VARIANTS`), the case matrix (:data:`CASES`),
the trial summaries (:data:`TRIALS`), :data:`COMPARISONS` and :data:`FACTOR_LEVELS`
(all in :data:`SCHEMAS`). report/json_report.py writes each frame's block with
:meth:`FrameSchema.to_json` and fills the keys that other sources own (the manifest's
``target``, a trial report's per-case records); report/saved.py reads them back with
:meth:`FrameSchema.from_json`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Any

import numpy as np
import pandas as pd

from ._docs import markdown_table
from ._values import is_missing

__all__ = [
    "CASES",
    "COMPARISONS",
    "FACTOR_LEVELS",
    "PACKAGE_DELTA_BASIS",
    "SCHEMAS",
    "SUMMARY_METRICS",
    "SUMMARY_STATS",
    "TRIALS",
    "VARIANTS",
    "Column",
    "FrameSchema",
]

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


def json_ready(value: Any) -> Any:
    """``value`` ready for any JSON encoder: numbers by :func:`number_to_json` (NaN and ±inf
    become null, as orjson writes them), numpy booleans as booleans, containers item by item.

    Examples
    --------
    >>> json_ready({"a": [math.nan, np.bool_(True), 2**70], 1: "x"})
    {'a': [None, True, 1180591620717411303424], '1': 'x'}
    """
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return number_to_json(value)


def number_from_json(value: Any) -> float:
    """The inverse of :func:`number_to_json`: null becomes NaN."""
    return math.nan if value is None else float(value)


def numbers_to_json(column: pd.Series) -> list[Any]:
    """:func:`number_to_json` of a whole column at once (NaN and ±inf become None).

    Examples
    --------
    >>> numbers_to_json(pd.Series([0.5, np.nan, -np.inf, 2.0]))
    [0.5, None, None, 2.0]
    """
    values = column.to_numpy()
    if values.dtype != np.float64:  # integers, nullable floats: NA becomes NaN
        values = column.to_numpy(dtype=float, na_value=np.nan)
    out = values.tolist()
    bad = ~np.isfinite(values)
    if bad.any():
        for i in np.flatnonzero(bad).tolist():
            out[i] = None
    return out


def _counts_to_json(column: pd.Series) -> list[int]:
    values = column.to_numpy()
    return (values if values.dtype == np.int64 else values.astype(np.int64)).tolist()


def _bools_to_json(column: pd.Series) -> list[bool]:
    values = column.to_numpy()
    return (values if values.dtype == bool else values.astype(bool)).tolist()


def _texts_to_json(column: pd.Series) -> list[Any]:
    # A missing text is null (the standard encoder, used for >64-bit integers, would
    # write a NaN as NaN).
    out = column.tolist()
    missing = column.isna().to_numpy()
    if missing.any():
        for i in np.flatnonzero(missing).tolist():
            out[i] = None
    return out


def _name_from_json(value: Any) -> str:
    # Names are rendered (console, CSV, HTML): anything but a string is a damaged report.
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _names_from_json(value: Any) -> tuple[str, ...]:
    return tuple(_name_from_json(v) for v in value or ())


def _flags_to_json(column: pd.Series) -> list[Any]:
    if column.dtype == bool:
        return column.tolist()
    return [None if is_missing(v) else bool(v) for v in column.tolist()]


@dataclass(frozen=True)
class Codec:
    """How one kind of cell is written to JSON and read back (exact inverses).

    ``column_to_json`` writes a whole column (the writer works column by column);
    ``missing`` is the value read when the object holding the key is absent or null.
    """

    dtype: str
    to_json: Callable[[Any], Any]
    from_json: Callable[[Any], Any]
    arrow: str
    column_to_json: Callable[[pd.Series], list[Any]]
    missing: Any = None


def count_from_json(value: Any) -> int:
    """A count read from a JSON report: a whole number ≥ 0, else ``ValueError``.

    ``"5"``, ``5.5``, ``true`` or ``-1`` where a count belongs is a damaged report (a
    negative count crashed the outcome chart), so it is refused where it is read.

    Examples
    --------
    >>> count_from_json(5)
    5
    >>> count_from_json(True)
    Traceback (most recent call last):
    ...
    ValueError: expected a whole number ≥ 0, got True
    """
    if type(value) is not int or value < 0:
        raise ValueError(f"expected a whole number ≥ 0, got {value!r}")
    return value


def _text_from_json(value: Any) -> str | None:
    # Text or null: a number or list where text belongs (a hand-edited report) is refused
    # at load, not met by a renderer.
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a string or null, got {type(value).__name__}")
    return value


CODECS: dict[str, Codec] = {
    "text": Codec("str", lambda v: v, _text_from_json, "string", _texts_to_json),
    # Text a renderer shows as a name: reading anything but a string is an error.
    "name": Codec("str", lambda v: v, _name_from_json, "string", _texts_to_json),
    # Read as text; the reader's caller knows the categories (manifest, suite order).
    "category": Codec(
        "category",
        str,
        _name_from_json,
        "dictionary<string>",
        _texts_to_json,
    ),
    "number": Codec(
        "float64", number_to_json, number_from_json, "double", numbers_to_json, math.nan
    ),
    "count": Codec("int64", int, count_from_json, "int64", _counts_to_json, 0),
    "position": Codec("int32", int, count_from_json, "int32", _counts_to_json, 0),
    "bool": Codec("bool", bool, bool, "bool", _bools_to_json, False),
    "flag": Codec(
        "boolean",
        lambda v: None if is_missing(v) else bool(v),
        lambda v: pd.NA if v is None else bool(v),
        "bool",
        _flags_to_json,
        pd.NA,
    ),
    "ids": Codec(
        "object", list, _names_from_json, "list<string>", lambda c: [list(v) for v in c], ()
    ),
    "mapping": Codec(
        "object", lambda v: v, lambda v: dict(v or {}), "string (JSON)", lambda c: c.tolist(), {}
    ),
}


def report_keys(values: pd.Series, categories: Sequence[str]) -> pd.Categorical:
    """Key values read from a report as the analysis holds them: a categorical over
    ``categories`` (the report's variant or case order, a fixed vocabulary).

    A value outside them is a ValueError naming it (the report reader names the place).

    Examples
    --------
    >>> report_keys(pd.Series(["b", None], name="variant_id"), ["a", "b"]).codes.tolist()
    [1, -1]
    >>> report_keys(pd.Series(["c"], name="variant_id"), ["a", "b"])
    Traceback (most recent call last):
    ...
    ValueError: variant_id 'c' is not one of the report's (a, b)
    """
    known = list(categories)
    # Codes first: pandas deprecates building a categorical from values outside its
    # categories (Pandas4Warning), and a missing key must be named, not become NaN.
    codes = pd.Index(known).get_indexer(values.astype(object))
    lost = (codes < 0) & values.notna().to_numpy()
    if lost.any():
        raise ValueError(
            f"{values.name} {values[lost].iloc[0]!r} is not one of the report's "
            f"({', '.join(known[:5])}{', …' if len(known) > 5 else ''})"
        )
    return pd.Categorical.from_codes(codes, categories=known)


@dataclass(frozen=True)
class Column:
    """One column: its name, codec, JSON key and meaning.

    ``json`` is the key in the report (None: not written; ``derive`` rebuilds it on
    reading, or a loaded report's frame goes without it). ``required`` keys must be
    present when reading; others read as ``default`` (a JSON value, or a function of the
    row read so far and the reader's context), else as the codec's missing value.
    ``block`` names the nested object holding the key, dotted when deeper
    (``summary.pass_rate.confidence_interval``). ``write`` computes the written values
    from the frame when they are not the column's own. A ``per_k`` column's name and key
    hold ``{k}``: :meth:`FrameSchema.bind` makes one column per pass@k value. An
    ``analysis=False`` column is not in the analysis frame: the writer is given it, and a
    loaded report's frame holds it.
    """

    name: str
    codec: str
    doc: str
    json: str | None = ""
    required: bool = False
    block: str | None = None
    derive: Callable[[Mapping[str, Any], Mapping[str, Any], int], Any] | None = None
    default: Any = None
    write: Callable[[pd.DataFrame], pd.Series] | None = None
    per_k: bool = False
    k: int | None = None
    analysis: bool = True

    @property
    def key(self) -> str | None:
        return self.name if self.json == "" else self.json

    @property
    def path(self) -> tuple[str, ...]:
        """The blocks holding the key, outermost first."""
        return () if self.block is None else tuple(self.block.split("."))


@dataclass(frozen=True)
class _Slot:
    """A key the schema places but does not fill: the writer's caller gives its values."""

    path: str


@dataclass(frozen=True)
class _Fixed:
    """A key whose value is the same in every row (a constant or a context value)."""

    value: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class FrameSchema:
    """A result frame: its columns in order, and how its JSON objects are shaped.

    Parameters
    ----------
    block_present_if
        block -> the column whose missing value means the whole block is null, or a
        function of the frame giving, per row, whether the block is written.
    block_readers
        block -> fix-ups of a block's raw JSON values on reading (key -> function).
    key_order
        block (``""``: the object itself) -> its keys in the report's order, where that
        is not the columns' order; a listed key no column fills is a slot (the
        writer's ``slots`` give its values, the reader skips it) or a ``fixed`` key.
    fixed
        ``block.key`` -> the value of a key that every row repeats, from the context.
    keep_key
        per-k block -> function of (frame, column) giving the rows that hold key k.
    required_blocks
        blocks that must be present when reading (others read as missing values).
    """

    name: str
    grain: str
    columns_: tuple[Column, ...]
    block_present_if: Mapping[str, str | Callable[[pd.DataFrame], Any]] = field(
        default_factory=dict
    )
    block_readers: Mapping[str, Mapping[str, Callable[[Mapping[str, Any]], Any]]] = field(
        default_factory=dict
    )
    key_order: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fixed: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict)
    keep_key: Mapping[str, Callable[[pd.DataFrame, Column], Any]] = field(default_factory=dict)
    required_blocks: frozenset[str] = frozenset()
    #: The frame's name in ``ExperimentAnalysis.frames()`` and its parquet file, when it
    #: is not the attribute's (``variants`` is ``variant_summary``).
    exported: str = ""

    @property
    def file_name(self) -> str:
        """The name of the frame's parquet file (without ``.parquet``)."""
        return self.exported or self.name

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.columns_]

    @property
    def dtypes(self) -> dict[str, str]:
        return {c.name: CODECS[c.codec].dtype for c in self.columns_}

    def bind(self, pass_k: tuple[int, ...] | list[int]) -> FrameSchema:
        """The schema with one column per pass@k value for each ``per_k`` column.

        Consecutive ``per_k`` columns interleave by k (``pass_at_1, pass_hat_1,
        pass_at_3, …``), as the analysis builds them.

        Examples
        --------
        >>> CASES.bind((1, 3)).columns[-4:]
        ['pass_at_1', 'pass_hat_1', 'pass_at_3', 'pass_hat_3']
        """
        out: list[Column] = []
        group: list[Column] = []
        for column in (*self.columns_, None):
            if column is not None and column.per_k:
                group.append(column)
                continue
            for k in pass_k:
                for template in group:
                    key = None if template.key is None else template.key.format(k=k)
                    out.append(
                        replace(
                            template, name=template.name.format(k=k), json=key, per_k=False, k=k
                        )
                    )
            group = []
            if column is not None:
                out.append(column)
        return replace(self, columns_=tuple(out))

    def analysis_columns(self) -> list[str]:
        """The columns the analysis frame holds (``analysis=False`` ones left out)."""
        return [c.name for c in self.columns_ if c.analysis]

    # ------------------------------------------------------------------ JSON

    def _tree(self) -> dict[str, Any]:
        """The JSON object's shape: key -> Column, _Slot, _Fixed or a nested dict."""
        root: dict[str, Any] = {}
        for column in self.columns_:
            if column.key is None:
                continue
            node = root
            for part in column.path:
                node = node.setdefault(part, {})
            node[column.key] = column
        for where, value in self.fixed.items():
            *blocks, key = where.split(".")
            node = root
            for part in blocks:
                node = node.setdefault(part, {})
            node[key] = _Fixed(value)

        def order(node: dict[str, Any], path: str) -> dict[str, Any]:
            keys = self.key_order.get(path)
            if keys is not None:
                unknown = set(node) - set(keys)
                if unknown:
                    raise ValueError(f"{self.name}: key_order[{path!r}] lacks {sorted(unknown)}")
                node = {k: node.get(k, _Slot(f"{path}.{k}" if path else k)) for k in keys}
            return {
                k: order(v, f"{path}.{k}" if path else k) if isinstance(v, dict) else v
                for k, v in node.items()
            }

        return order(root, "")

    def to_json(
        self,
        frame: pd.DataFrame,
        *,
        context: Mapping[str, Any] | None = None,
        slots: Mapping[str, list[Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The frame as the report's list of objects, in the package's key order.

        Built column by column (each key set on every row's object in one pass), which is
        several times faster than converting row by row on a large case matrix.
        ``context`` gives ``fixed`` values; ``slots`` maps each slot's dotted path to its
        values, one per row.

        Examples
        --------
        >>> frame = pd.DataFrame({"factor": ["model"], "value": ["large"],
        ...     "variant_ids": [("a", "b")], "n_variants": [2], "mean_pass_rate": [0.5],
        ...     "mean_average_score": [np.nan], "mean_latency_ms": [12.0],
        ...     "mean_cost_usd": [np.inf], "mean_trial_success_rate": [1.0]})
        >>> FACTOR_LEVELS.to_json(frame)
        [{'factor': 'model', 'value': 'large', 'variant_ids': ['a', 'b'], 'mean_pass_rate': 0.5,
          'mean_average_score': None, 'mean_latency_ms': 12.0, 'mean_cost_usd': None,
          'mean_trial_success_rate': 1.0}]
        """
        ctx = context or {}
        given = slots or {}

        def values(column: Column) -> list[Any]:
            series = column.write(frame) if column.write else frame[column.name]
            return CODECS[column.codec].column_to_json(series)

        def build(node: dict[str, Any], path: str) -> list[Any]:
            out: list[Any] = [{} for _ in range(len(frame))]
            keep = self.keep_key.get(path)
            for key, child in node.items():
                where = f"{path}.{key}" if path else key
                if isinstance(child, Column):
                    vals: Any = values(child)
                    if keep is not None:
                        for item, value, kept in zip(out, vals, keep(frame, child), strict=True):
                            if kept:
                                item[key] = value
                        continue
                elif isinstance(child, _Slot):
                    vals = given[child.path]
                elif isinstance(child, _Fixed):
                    vals = repeat(child.value(ctx), len(frame))
                else:
                    vals = build(child, where)
                for item, value in zip(out, vals, strict=True):
                    item[key] = value
            present = self.block_present_if.get(path)
            if present is not None:
                mask = frame[present].notna() if isinstance(present, str) else present(frame)
                out = [item if kept else None for item, kept in zip(out, mask, strict=True)]
            return out

        return build(self._tree(), "")

    def rows_from_json(
        self,
        items: list[Any],
        *,
        place: list[str | int],
        context: Mapping[str, Any] | None = None,
        per_item: bool = True,
    ) -> list[dict[str, Any]]:
        """The inverse of :meth:`to_json`, as rows. ``place`` names where a bad value is."""
        ctx = context or {}
        required = self.required_blocks
        # Per column: the blocks to walk (each with whether it must be present), worked
        # out once so that reading a large case list does no string work per item.
        plan = [
            (
                column,
                tuple(
                    (part, ".".join(column.path[: depth + 1]) in required)
                    for depth, part in enumerate(column.path)
                ),
                column.key,
                CODECS[column.codec],
                self.block_readers.get(column.block or "", {}).get(column.key or ""),
            )
            for column in self.columns_
            if column.key is not None or column.derive is not None
        ]
        base = list(place)
        rows = []
        for n, item in enumerate(items):
            row: dict[str, Any] = {}
            column = None
            try:
                if not isinstance(item, dict):
                    raise TypeError(f"expected an object, got {type(item).__name__}")
                for column, blocks, key, codec, fix in plan:
                    if key is None:
                        row[column.name] = column.derive(row, ctx, n)  # type: ignore[misc]
                        continue
                    holder = item
                    for part, must in blocks:
                        holder = holder[part] if must else holder.get(part)
                        if not holder:  # an absent or null block: its columns are missing
                            break
                        if not isinstance(holder, dict):
                            raise TypeError(f"expected an object, got {type(holder).__name__}")
                    if not holder and blocks:
                        row[column.name] = codec.missing
                    elif column.required or key in holder:
                        row[column.name] = codec.from_json(fix(holder) if fix else holder[key])
                    elif callable(column.default):
                        row[column.name] = column.default(row, ctx)
                    elif column.default is not None:
                        row[column.name] = codec.from_json(column.default)
                    else:
                        row[column.name] = codec.missing
            except (
                TypeError,
                ValueError,
                AttributeError,
                KeyError,
                IndexError,
                OverflowError,
            ) as exc:
                if per_item:
                    # (A block reader refusing another key of the block names that key.)
                    key = exc.key if isinstance(exc, _BlockKeyError) else None
                    inner = [] if column is None else [*column.path, key or column.key]
                    place[:] = [*base, n, *(part for part in inner if part is not None)]
                raise
            rows.append(row)
        place[:] = base
        return rows

    def from_json(
        self,
        items: list[Any],
        *,
        place: list[str | int],
        context: Mapping[str, Any] | None = None,
        per_item: bool = True,
    ) -> pd.DataFrame:
        """The inverse of :meth:`to_json`. ``place`` follows the reading (for errors).

        Examples
        --------
        >>> items = [{"factor": "model", "value": "large", "variant_ids": ["a", "b"],
        ...           "mean_pass_rate": 0.5, "mean_average_score": None}]
        >>> FACTOR_LEVELS.from_json(items, place=[]).to_dict("records")[0]
        {'factor': 'model', 'value': 'large', 'variant_ids': ('a', 'b'), 'n_variants': 2,
         'mean_pass_rate': 0.5, 'mean_average_score': nan, 'mean_latency_ms': nan,
         'mean_cost_usd': nan, 'mean_trial_success_rate': nan}
        """
        rows = self.rows_from_json(items, place=place, context=context, per_item=per_item)
        return self.frame(rows)

    def frame(
        self,
        rows: list[dict[str, Any]],
        categories: Mapping[str, Sequence[str]] | None = None,
    ) -> pd.DataFrame:
        """Rows read from a report as a frame with the declared column order and dtypes.

        Columns that are neither written nor derived are left out. A ``category`` column
        gets the caller's ``categories`` (the report's variant and case order, the fixed
        statuses), as the analysis frame has them; a value outside them is a ValueError
        (the reader names the place). Without them it is read as text.

        Examples
        --------
        >>> keys = FrameSchema("keys", "variant", (Column("variant_id", "category", "id"),))
        >>> keys.frame([{"variant_id": "b"}], {"variant_id": ["a", "b"]})["variant_id"].dtype
        CategoricalDtype(categories=['a', 'b'], ordered=False, categories_dtype=str)
        >>> keys.frame([{"variant_id": "c"}], {"variant_id": ["a", "b"]})
        Traceback (most recent call last):
        ...
        ValueError: variant_id 'c' is not one of the report's (a, b)
        """
        names = [c.name for c in self.columns_ if c.key is not None or c.derive is not None]
        out = pd.DataFrame(rows, columns=names)
        for name, dtype in self.dtypes.items():
            if name not in out:
                continue
            if dtype == "category" and categories and name in categories:
                # A loaded report's keys as the analysis' (docs/data-model.md): merges
                # and groupbys on them behave the same on either frame.
                out[name] = report_keys(out[name], categories[name])
            elif dtype in ("str", "category"):
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
            "int32": pa.int32(),
            "bool": pa.bool_(),
            "list<string>": pa.list_(pa.string()),
            "string (JSON)": pa.string(),
            "dictionary<string>": pa.dictionary(pa.int8(), pa.string()),
        }
        return pa.schema(
            [(c.name, types[CODECS[c.codec].arrow]) for c in self.columns_ if c.analysis]
        )

    def docs_table(self) -> str:
        """The frame's columns as a Markdown table (docs/data-model.md)."""
        rows = []
        for c in self.columns_:
            name = c.name.replace("{k}", "<k>")
            key = None if c.key is None else c.key.replace("{k}", "<k>")
            where = "—" if key is None else f"`{key}`"
            if c.block is not None and key is not None:
                where = f"`{c.block}.{key}`"
            meaning = c.doc if c.analysis else f"{c.doc} (loaded reports; not in the analysis)"
            rows.append([f"`{name}`", CODECS[c.codec].dtype, where, meaning])
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
            derive=lambda row, context, position: len(row["variant_ids"]),
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


#: ``basis`` of a comparison's ``<metric>_delta`` block that holds AgenticLens's delta where
#: ours is unknown: the latency delta when a side has no known latency (fix B3,
#: docs/compatibility.md). The package's model requires an object there (and ignores the
#: label); our readers read such a block as unknown, as the null it replaces.
PACKAGE_DELTA_BASIS = "agenticlens"


class _BlockKeyError(ValueError):
    """A block reader's (:class:`FrameSchema` ``block_readers``) refusal of the block's
    ``key``, which the reader of a report then names as the place (not the column's key).
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _ours(read: Callable[[Mapping[str, Any]], Any]) -> Callable[[Mapping[str, Any]], Any]:
    """``read`` of a delta block, or None (unknown) for a block labelled as the package's.

    Any other ``basis`` (a hand edit, another type, a label this version does not know)
    is a :class:`_BlockKeyError`, which the report's reader names with its place: read as
    ours, the block's numbers (the package's, for all we know) would be shown as our delta.

    Examples
    --------
    >>> relative = _ours(_relative_or_infinite)
    >>> relative({"absolute": -5.0, "relative": -0.5, "regressed": False})
    -0.5
    >>> relative({"absolute": -5.0, "relative": -1.0, "regressed": False,
    ...           "basis": PACKAGE_DELTA_BASIS}) is None
    True
    >>> relative({"absolute": -5.0, "relative": -1.0, "regressed": False, "basis": "ours"})
    Traceback (most recent call last):
    ...
    agenticlens_frames.schema._BlockKeyError: basis 'ours' is not one this version reads ...
    """

    def reader(block: Mapping[str, Any]) -> Any:
        if "basis" not in block:
            return read(block)
        basis = block["basis"]
        if basis == PACKAGE_DELTA_BASIS and isinstance(basis, str):
            return None
        raise _BlockKeyError(
            "basis",
            f"basis {basis!r} is not one this version reads (only {PACKAGE_DELTA_BASIS!r}, "
            "the package's delta where ours is unknown): remove basis and note if the "
            "numbers are ours, or write the report again",
        )

    return reader


#: How a ``<metric>_delta`` block's keys are read back (:data:`COMPARISONS`).
_DELTA_READERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "absolute": _ours(lambda block: block["absolute"]),
    "relative": _ours(_relative_or_infinite),
    "regressed": _ours(lambda block: block["regressed"]),
}


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
    block_readers={f"{m}_delta": _DELTA_READERS for m in SUMMARY_METRICS},
)


# --------------------------------------------------------------------------- variants

#: The summary statistics of each of :data:`SUMMARY_METRICS`, in column order.
SUMMARY_STATS = (
    "count",
    "mean",
    "median",
    "p95",
    "standard_deviation",
    "coefficient_of_variation",
    "ci_low",
    "ci_high",
)

_STAT_DOCS = {
    "count": "completed trials with a value (0: the JSON block is null)",
    "mean": "mean over those trials",
    "median": "median",
    "p95": "95th percentile",
    "standard_deviation": "sample standard deviation",
    "coefficient_of_variation": "standard deviation / mean",
    "ci_low": "normal-approximation interval, lower end (clipped to [0, 1] for rates)",
    "ci_high": "upper end",
}


def _metric_columns(metric: str) -> tuple[Column, ...]:
    block = f"summary.{metric}"
    out = []
    for stat in SUMMARY_STATS:
        where, key = block, stat
        if stat in ("ci_low", "ci_high"):
            where, key = f"{block}.confidence_interval", "lower" if stat == "ci_low" else "upper"
        out.append(
            Column(
                f"{metric}_{stat}",
                "count" if stat == "count" else "number",
                f"{metric}: {_STAT_DOCS[stat]}",
                key,
                required=stat == "count",
                block=where,
            )
        )
    return tuple(out)


def _confidence_level(context: Mapping[str, Any]) -> Any:
    return context["confidence_level"]


VARIANTS = FrameSchema(
    "variants",
    "variant",
    (
        Column(
            "variant_id",
            "category",
            "the variant (categories in manifest order)",
            "variant_id",
            required=True,
        ),
        Column("variant_name", "name", "its name", required=True),
        Column("target_kind", "text", "`python`, `http` or `recorded`", required=True),
        Column("factors", "mapping", "factor -> level"),
        Column(
            "is_baseline",
            "bool",
            "the manifest's baseline",
            json=None,
            derive=lambda row, context, position: row["variant_id"] == context["baseline"],
        ),
        Column("attempted_trials", "count", "trials run", required=True, block="summary"),
        Column(
            "completed_trials", "count", "trials that completed", required=True, block="summary"
        ),
        Column(
            "failed_trials",
            "count",
            "trials that failed as a whole",
            required=True,
            block="summary",
        ),
        Column(
            "successful_trials",
            "count",
            "trials in which every case passed",
            required=True,
            block="summary",
        ),
        Column(
            "trial_success_rate",
            "number",
            "successful / attempted trials",
            required=True,
            block="summary",
        ),
        *(column for metric in SUMMARY_METRICS for column in _metric_columns(metric)),
        Column("case_attempts", "count", "(case, trial) attempts", required=True, block="summary"),
        Column("case_passes", "count", "attempts that passed", required=True, block="summary"),
        Column("case_pass_rate", "number", "passes / attempts (pooled)", block="summary"),
        Column(
            "case_pass_rate_ci_low",
            "number",
            "Wilson interval of the case pass rate, lower end (null block: no attempts)",
            "lower",
            block="summary.case_pass_rate_interval",
        ),
        Column(
            "case_pass_rate_ci_high",
            "number",
            "upper end",
            "upper",
            block="summary.case_pass_rate_interval",
        ),
        Column(
            "pass_at_{k}",
            "number",
            "mean over cases of pass@k (key left out when undefined)",
            "{k}",
            block="summary.pass_at_k",
            per_k=True,
        ),
        Column(
            "pass_hat_{k}",
            "number",
            "mean over cases of pass^k (key left out when undefined)",
            "{k}",
            block="summary.pass_hat_k",
            per_k=True,
        ),
        Column(
            "consistency_rate",
            "number",
            "share of cases with the same outcome in every trial",
            block="summary",
        ),
        Column("flaky_case_ids", "ids", "cases whose outcome varied", block="summary"),
        Column(
            "n_flaky_cases",
            "count",
            "number of flaky cases",
            json=None,
            derive=lambda row, context, position: len(row["flaky_case_ids"]),
        ),
        Column(
            "priced_trials", "count", "completed trials with a known total cost", block="summary"
        ),
        Column(
            "pareto_optimal",
            "bool",
            "on the Pareto frontier (pass rate, score, latency, cost)",
            default=lambda row, context: row["variant_id"] in context["frontier"],
        ),
    ),
    block_present_if={
        **{
            f"summary.{m}": (lambda f, m=m: f[f"{m}_count"].to_numpy() != 0)
            for m in SUMMARY_METRICS
        },
        "summary.case_pass_rate_interval": lambda f: f["case_attempts"].to_numpy() != 0,
    },
    key_order={
        "": (
            "variant_id",
            "variant_name",
            "target_kind",
            "factors",
            "pareto_optimal",
            "trials",
            "summary",
            "cases",
            "target",
            "timeout_seconds",
            "description",
            "metadata",
        )
    },
    fixed={
        **{
            f"summary.{m}.confidence_interval.{key}": value
            for m in SUMMARY_METRICS
            for key, value in (
                ("confidence_level", _confidence_level),
                ("method", lambda context: "normal_approximation"),
            )
        },
        "summary.case_pass_rate_interval.confidence_level": _confidence_level,
        "summary.case_pass_rate_interval.method": lambda context: "wilson",
    },
    keep_key={
        "summary.pass_at_k": lambda f, c: np.isfinite(f[c.name].to_numpy(float)),
        "summary.pass_hat_k": lambda f, c: np.isfinite(f[c.name].to_numpy(float)),
    },
    required_blocks=frozenset({"summary"}),
    exported="variant_summary",
)
"""The variant summary (``variant_summary``): ``variants[]`` in the report, whose
``trials`` and ``cases`` hold :data:`TRIALS` and :data:`CASES`, and whose ``target``,
``timeout_seconds``, ``description`` and ``metadata`` come from the manifest. The frontier
bootstrap's columns follow these in the frame (see ``frontier.py``)."""


# --------------------------------------------------------------------------- cases


def _attempted_k(frame: pd.DataFrame, column: Column) -> Any:
    # pass@k is defined for k up to the attempts made (the package omits the rest)
    return (frame["attempts"].to_numpy() >= column.k).tolist()


CASES = FrameSchema(
    "cases",
    "variant × case, complete",
    (
        Column(
            "variant_id",
            "category",
            "the variant (the report's enclosing `variants[]` item)",
            json=None,
            derive=lambda row, context, position: context["variant_id"],
        ),
        Column("case_id", "category", "the case (categories in suite order)", required=True),
        Column("case_name", "text", "its name", default=""),
        Column(
            "case_index",
            "position",
            "position in the suite",
            json=None,
            derive=lambda row, context, position: position,
        ),
        Column("attempts", "count", "trials, failed ones included", required=True),
        Column("passes", "count", "attempts that passed", required=True),
        Column("pass_rate", "number", "passes / attempts", required=True),
        Column(
            "mean_score", "number", "mean case score over completed trials (`statistics.fmean`)"
        ),
        Column(
            "score_standard_deviation",
            "number",
            "their sample standard deviation (`statistics.stdev`)",
        ),
        Column("consistent", "bool", "passed in every attempt or in none"),
        Column("scored", "count", "completed trials", json=None),
        Column(
            "mean_latency_ms", "number", "mean latency over attempts where it is known", json=None
        ),
        Column("mean_cost_usd", "number", "mean cost over attempts where it is known", json=None),
        Column(
            "pass_at_{k}",
            "number",
            "pass@k (NaN, and no JSON key, where k > attempts)",
            "{k}",
            block="pass_at_k",
            per_k=True,
        ),
        Column(
            "pass_hat_{k}",
            "number",
            "pass^k (NaN, and no JSON key, where k > attempts)",
            "{k}",
            block="pass_hat_k",
            per_k=True,
        ),
    ),
    key_order={
        "": (
            "case_id",
            "case_name",
            "attempts",
            "passes",
            "pass_rate",
            "pass_at_k",
            "pass_hat_k",
            "mean_score",
            "score_standard_deviation",
            "consistent",
        )
    },
    keep_key={"pass_at_k": _attempted_k, "pass_hat_k": _attempted_k},
    exported="case_matrix",
)
"""The case matrix (``case_matrix``): ``variants[].cases[]`` in the report."""


# --------------------------------------------------------------------------- trials


def package_latency_rows(frame: pd.DataFrame) -> np.ndarray:
    """Which trials' written ``report.summary.average_latency_ms`` is the package's mean
    (each unknown latency counted as 0 ms, so 0.0), not ours: those with no known latency
    (ours unknown, the package's a number), as under ``latency_missing="exclude"``.

    Examples
    --------
    >>> trials = pd.DataFrame({"average_latency_ms": [float("nan"), 1833.0, float("nan")],
    ...                        "average_latency_ms_package": [0.0, 1702.1, float("nan")]})
    >>> package_latency_rows(trials).tolist()
    [True, False, False]
    """
    latency = frame["average_latency_ms"].to_numpy(float)
    if "average_latency_ms_package" not in frame:
        return np.zeros(len(frame), dtype=bool)
    package = frame["average_latency_ms_package"].to_numpy(float)
    return ~np.isfinite(latency) & np.isfinite(package)


def _reported_latency(frame: pd.DataFrame) -> pd.Series:
    # No case had a known latency: write the package's 0-counted mean (keeps the schema
    # valid). A loaded report reads such a 0.0 back as unknown, and its package column
    # holds the 0.0 again (report/saved.py). read_first says so (report/json_report.py).
    latency = frame["average_latency_ms"]
    rows = package_latency_rows(frame)
    return latency.mask(rows, frame["average_latency_ms_package"]) if rows.any() else latency


_TRIAL_SUMMARY = "report.summary"

TRIALS = FrameSchema(
    "trials",
    "variant × trial",
    (
        Column(
            "variant_id",
            "category",
            "the variant (the report's enclosing `variants[]` item)",
            json=None,
            derive=lambda row, context, position: context["variant_id"],
        ),
        Column("trial", "count", "1-based trial index", "trial_index"),
        Column("status", "category", "`succeeded` or `failed` (a failed trial's report is null)"),
        Column(
            "execution_position",
            "count",
            "0-based position in the execution order (loaded: the place in "
            "`randomization.execution_order`)",
            json=None,
        ),
        Column("total_cases", "count", "cases in the trial", block=_TRIAL_SUMMARY),
        Column("passed_cases", "count", "cases that passed", block=_TRIAL_SUMMARY),
        Column("failed_cases", "count", "cases that failed", block=_TRIAL_SUMMARY),
        Column("pass_rate", "number", "passed / total cases", block=_TRIAL_SUMMARY),
        Column(
            "average_score", "number", "mean check value (pooled over checks)", block=_TRIAL_SUMMARY
        ),
        Column(
            "average_latency_ms",
            "number",
            "mean latency under the latency policy (the JSON holds the 0-counted one, 0.0, "
            "when no latency is known; a report written under `exclude` reads that back as "
            "unknown)",
            block=_TRIAL_SUMMARY,
            write=_reported_latency,
        ),
        Column(
            "average_latency_ms_package",
            "number",
            "mean latency, unknown counted as 0 (loaded: from the per-case records; NaN where "
            "a lean report cannot give it, below)",
            json=None,
        ),
        Column(
            "total_cost_usd", "number", "null unless every case is priced", block=_TRIAL_SUMMARY
        ),
        Column("priced_cases", "count", "cases with a known cost", block=_TRIAL_SUMMARY),
        Column("successful", "bool", "every case passed", json=None),
        Column("error_message", "text", "why the trial failed", analysis=False),
    ),
    block_present_if={"report": lambda f: (f["status"].astype(str) == "succeeded").to_numpy()},
    key_order={
        "": ("trial_index", "status", "report", "error_message"),
        "report": (
            "schema_version",
            "suite_name",
            "suite_version",
            "created_at",
            "summary",
            "cases",
        ),
        _TRIAL_SUMMARY: (
            "total_cases",
            "passed_cases",
            "failed_cases",
            "pass_rate",
            "average_score",
            "total_cost_usd",
            "priced_cases",
            "cost_sources",
            "average_latency_ms",
            "metrics",
            "tags",
            "judge",
            "live",
        ),
    },
    fixed={
        f"report.{key}": (lambda context, key=key: context[key])
        for key in ("schema_version", "suite_name", "suite_version", "created_at")
    },
    exported="trial_summary",
)
"""The trial summaries (``trial_summary``): ``variants[].trials[]`` in the report, each
with its trial report (whose per-case records, cost sources, metrics, tags, judge and
live blocks come from the tidy tables, not from this frame)."""

SCHEMAS: dict[str, FrameSchema] = {
    s.name: s for s in (VARIANTS, CASES, TRIALS, COMPARISONS, FACTOR_LEVELS)
}
"""Every declared result frame, by its name in :class:`ExperimentAnalysis`."""
