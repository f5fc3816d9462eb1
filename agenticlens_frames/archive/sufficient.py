"""What every archive engine returns and reads: sufficient statistics, run layout, sources.

The engines (declared in :mod:`.engine_registry`; numpy, pandas and dask in
:mod:`.engines`, duckdb in :mod:`._duckdb`) all build on this module; nothing here knows
any engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pandas.api.types import union_categoricals

from .._deprecate import class_keyword_hints
from ..errors import InputError
from ._kernel import (
    CASE_STATS,
    NEEDED_COLUMNS,
    TRIAL_STATS,
    RunPartial,
    split_batch_by_run,
    stat_dtype,
)
from ._scan import RunScan

__all__ = [
    "RunLayout",
    "ScanSource",
    "Source",
    "SufficientStats",
    "TableSource",
    "as_source",
    "assemble",
    "check_columns",
    "from_keyed_frames",
    "merge_stats",
]


@class_keyword_hints(skip=("positions",))
@dataclass(frozen=True)
class RunLayout:
    """Which runs are analysed, in which order, and each run's variants in manifest order.

    Output rows are ordered by (run, variant position, case index / trial), and key
    columns are categoricals whose categories come from here, so every engine returns
    the same frame.

    Examples
    --------
    >>> RunLayout(("r1", "r2"), ("e@1", "e@1"), (("a", "b"), ("a", "b", "c")))
    RunLayout(runs=2, experiments=1, variants=5)
    """

    run_ids: tuple[str, ...]
    experiment_ids: tuple[str, ...]
    variant_ids: tuple[tuple[str, ...], ...]

    def __repr__(self) -> str:
        # The dataclass repr printed every run id and every run's variant ids: thousands
        # of them for a large slice. The counts; the ids are the attributes.
        return (
            f"RunLayout(runs={len(self.run_ids)}, "
            f"experiments={len(set(self.experiment_ids))}, "
            f"variants={sum(len(v) for v in self.variant_ids)})"
        )

    @classmethod
    def from_scans(cls, scans: Sequence[RunScan]) -> RunLayout:
        return cls(
            tuple(s.run_id for s in scans),
            tuple(s.experiment_id for s in scans),
            tuple(s.variant_ids for s in scans),
        )

    @classmethod
    def from_table(cls, table: pa.Table) -> RunLayout:
        """Runs in first-seen order; variants in dictionary (= manifest) order, or first
        seen when the ids are text, however the table is chunked."""
        # Each run's variants with their rank: the code in the one dictionary all chunks
        # share (unified first: chunks may carry their own), or the order first seen.
        variants: dict[str, dict[str, int]] = {}
        experiments: dict[str, str] = {}
        has_exp = "experiment_id" in table.column_names
        selected = table.select(["run_id", "variant_id", *(["experiment_id"] if has_exp else [])])
        coded = pa.types.is_dictionary(selected.schema.field("variant_id").type)
        if coded:
            selected = selected.unify_dictionaries()
        for batch in selected.to_batches():
            # split_batch_by_run yields a batch's runs in dictionary order: they are
            # listed in the order of their first row before.
            for run_id in _first_seen(batch.column(0)):
                variants.setdefault(run_id, {})
            for run_id, piece in split_batch_by_run(batch):
                experiments.setdefault(run_id, str(piece.column(2)[0]) if has_exp else run_id)
                ranks = variants[run_id]
                variant = piece.column(1)
                if not coded:
                    variant = variant.dictionary_encode()
                present = np.unique(variant.indices.to_numpy(zero_copy_only=False))
                names = variant.dictionary.to_pylist()
                for code in range(len(names)):  # dictionary order, unused entries left out
                    if code in present and names[code] not in ranks:
                        ranks[names[code]] = code if coded else len(ranks)
        return cls(
            tuple(variants),
            tuple(experiments[r] for r in variants),
            tuple(tuple(sorted(r, key=r.__getitem__)) for r in variants.values()),
        )

    @property
    def experiment_categories(self) -> list[str]:
        return list(dict.fromkeys(self.experiment_ids))

    @property
    def variant_categories(self) -> list[str]:
        return list(dict.fromkeys(v for vs in self.variant_ids for v in vs))

    def positions(self, run_index: int) -> dict[str, int]:
        return {v: i for i, v in enumerate(self.variant_ids[run_index])}


@class_keyword_hints()
@dataclass
class SufficientStats:
    """Per (run, variant, case) and per (run, variant, trial) sums, plus the layout.

    Attributes
    ----------
    cases
        ``experiment_id, run_id, variant_id, variant_position, case_id, case_index`` then
        :data:`CASE_STATS`.
    trials
        ``experiment_id, run_id, variant_id, variant_position, trial`` then
        :data:`TRIAL_STATS`.
    layout
        The runs and variants.
    engine
        Which engine computed them.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> st = example_archive().all().stats("numpy")
    >>> st
    SufficientStats(engine='numpy', runs=1, case_rows=70, trial_rows=25)
    >>> st.cases[["variant_id", "case_id", "attempts", "passes"]].head(2)
      variant_id              case_id  attempts  passes
    0   baseline  refund-damaged-item         5       1
    1   baseline          track-order         5       2
    """

    cases: pd.DataFrame
    trials: pd.DataFrame
    layout: RunLayout
    engine: str = "numpy"
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"SufficientStats(engine={self.engine!r}, runs={len(self.layout.run_ids)}, "
            f"case_rows={len(self.cases)}, trial_rows={len(self.trials)})"
        )


def _first_seen(column: pa.Array) -> list[str]:
    """The distinct values of ``column`` in the order of their first row.

    Examples
    --------
    >>> _first_seen(pa.array(["b", "a", "b"]).dictionary_encode())
    ['b', 'a']
    """
    encoded = column if pa.types.is_dictionary(column.type) else column.dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    present, first = np.unique(codes, return_index=True)
    names = encoded.dictionary.to_pylist()
    return [str(names[present[i]]) for i in np.argsort(first)]


def _case_frame(
    layout: RunLayout,
    run_code: np.ndarray,
    vpos: np.ndarray,
    case_index: np.ndarray,
    case_codes: np.ndarray,
    case_categories: Sequence[str] | pd.Index,
    stats: dict[str, np.ndarray],
) -> pd.DataFrame:
    frame = _key_columns(layout, run_code, vpos)
    frame["case_id"] = pd.Categorical.from_codes(case_codes, categories=case_categories)
    frame["case_index"] = _writable(case_index, np.int32)
    for name in CASE_STATS:
        frame[name] = stat_dtype(name, stats[name])
    return pd.DataFrame(frame, copy=False)


def _trial_frame(
    layout: RunLayout,
    run_code: np.ndarray,
    vpos: np.ndarray,
    trial: np.ndarray,
    stats: dict[str, np.ndarray],
) -> pd.DataFrame:
    frame = _key_columns(layout, run_code, vpos)
    frame["trial"] = _writable(trial, np.int32)
    for name in TRIAL_STATS:
        frame[name] = stat_dtype(name, stats[name])
    return pd.DataFrame(frame, copy=False)


def _writable(values: np.ndarray, dtype: Any) -> np.ndarray:
    """``values`` as a frame column of ``dtype``: copied only when of another dtype or
    read-only (an engine's Arrow buffers), so columns stay writable without a second
    copy of arrays the caller already owns (10M case rows: 40 MB of new pages each)."""
    return values.astype(dtype, copy=not values.flags.writeable)


def _key_columns(layout: RunLayout, run_code: np.ndarray, vpos: np.ndarray) -> dict[str, Any]:
    experiments = layout.experiment_categories
    exp_code = np.array([experiments.index(e) for e in layout.experiment_ids], dtype=np.int32)
    variants = layout.variant_categories
    vindex = {v: i for i, v in enumerate(variants)}
    offsets = np.concatenate([[0], np.cumsum([len(v) for v in layout.variant_ids])]).astype(
        np.int64
    )
    global_code = np.array([vindex[v] for vs in layout.variant_ids for v in vs], dtype=np.int32)
    run_code = run_code.astype(np.int64, copy=False)
    return {
        "experiment_id": pd.Categorical.from_codes(
            exp_code[run_code] if len(run_code) else np.zeros(0, np.int32),
            categories=experiments,
        ),
        "run_id": pd.Categorical.from_codes(run_code, categories=list(layout.run_ids)),
        "variant_id": pd.Categorical.from_codes(
            global_code[offsets[run_code] + vpos] if len(run_code) else np.zeros(0, np.int32),
            categories=variants,
        ),
        "variant_position": _writable(vpos, np.int32),
    }


def _sorted_codes(labels: pa.Array) -> tuple[np.ndarray, pd.Index | list[str]]:
    """Codes of ``labels`` into their sorted distinct values (nulls get -1), and those
    values as a pandas index (what ``pd.factorize(sort=True)`` gives, without a Python
    object per label: dictionary-encode, sort the distinct values, re-rank the codes).

    Examples
    --------
    >>> codes, values = _sorted_codes(pa.array(["b", None, "a", "b"]))
    >>> codes.tolist(), values.tolist()
    ([1, -1, 0, 1], ['a', 'b'])
    """
    encoded = labels.dictionary_encode()
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order) + 1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    rank[-1] = -1  # the slot nulls point at
    codes = encoded.indices.fill_null(len(order)).to_numpy(zero_copy_only=False)
    if not len(order):
        return rank[codes], []  # as factorize: categories of no label are an empty list
    values = encoded.dictionary.take(pa.array(order, type=pa.int64()))
    return rank[codes], pd.Index(values.to_pandas(), copy=False)


def assemble(partials: Iterable[RunPartial], layout: RunLayout, engine: str) -> SufficientStats:
    """Concatenate per-run partial results in layout order into the two frames."""
    by_run = {p.run_id: p for p in partials}
    ordered = [(i, by_run[r]) for i, r in enumerate(layout.run_ids) if r in by_run]
    parts = [p for _, p in ordered]

    def cat(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)

    # One sorted encoding of every run's case labels, in Arrow (no Python string per
    # case); each row then finds its label at (its run's offset + its case index).
    label_codes, categories = _sorted_codes(
        pa.concat_arrays([p.case_labels for p in parts]) if parts else pa.array([], pa.string())
    )
    label_offsets = np.concatenate([[0], np.cumsum([len(p.case_labels) for p in parts])])
    case_counts = np.array([len(p.case_index) for p in parts], dtype=np.int64)
    trial_counts = np.array([len(p.trial) for p in parts], dtype=np.int64)
    run_codes = np.array([i for i, _ in ordered], dtype=np.int32)
    case_index = cat([p.case_index for p in parts], np.int32)
    case_row_offset = np.repeat(label_offsets[:-1], case_counts)
    cases = _case_frame(
        layout,
        np.repeat(run_codes, case_counts),
        cat([p.case_variant for p in parts], np.int32),
        case_index,
        label_codes[case_row_offset + case_index] if len(case_index) else np.zeros(0, np.int64),
        categories,
        {n: cat([p.case_stats[n] for p in parts], np.float64) for n in CASE_STATS},
    )
    trials = _trial_frame(
        layout,
        np.repeat(run_codes, trial_counts),
        cat([p.trial_variant for p in parts], np.int32),
        cat([p.trial for p in parts], np.int32),
        {n: cat([p.trial_stats[n] for p in parts], np.float64) for n in TRIAL_STATS},
    )
    return SufficientStats(cases=cases, trials=trials, layout=layout, engine=engine)


def merge_stats(
    parts: Sequence[SufficientStats], layout: RunLayout, engine: str
) -> SufficientStats:
    """Statistics of disjoint sets of runs (each frame sorted, as every engine returns
    them) as one, in layout order: the frames concatenated, case labels re-encoded over
    their sorted union, rows stably sorted by run."""

    def join(frames: list[pd.DataFrame], labels: bool) -> pd.DataFrame:
        frame = pd.concat(frames, ignore_index=True)
        if labels:
            frame["case_id"] = union_categoricals(
                [f["case_id"] for f in frames], sort_categories=True
            )
        order = np.argsort(frame["run_id"].cat.codes.to_numpy(), kind="stable")
        return frame.take(order).reset_index(drop=True)

    return SufficientStats(
        cases=join([p.cases for p in parts], labels=True),
        trials=join([p.trials for p in parts], labels=False),
        layout=layout,
        engine=engine,
    )


@dataclass(frozen=True)
class TableSource:
    """An attempts table already in memory (Arrow or pandas)."""

    table: pa.Table

    def layout(self) -> RunLayout:
        return RunLayout.from_table(self.table)

    @property
    def n_rows(self) -> int:
        return self.table.num_rows


@dataclass(frozen=True)
class ScanSource:
    """Archived runs on disk, with the slice's filters."""

    scans: tuple[RunScan, ...]

    def layout(self) -> RunLayout:
        return RunLayout.from_scans(self.scans)

    @property
    def n_rows(self) -> int:
        return sum(s.n_attempts for s in self.scans)


Source = TableSource | ScanSource


def as_source(source: Any) -> Source:
    """``source`` as an engine reads it: a slice's files, or an Arrow / pandas table."""
    if isinstance(source, (TableSource, ScanSource)):
        return source
    if isinstance(source, pd.DataFrame):
        source = pa.Table.from_pandas(source, preserve_index=False)
    if isinstance(source, pa.Table):
        check_columns(source)
        return TableSource(source)
    if hasattr(source, "scans"):  # an ArchiveSlice
        return ScanSource(tuple(source.scans()))
    raise InputError(
        f"cannot compute statistics of a {type(source).__name__}",
        hint="pass an ArchiveSlice, a pyarrow.Table or a pandas DataFrame of attempts",
    )


def check_columns(table: pa.Table) -> None:
    missing = [c for c in NEEDED_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(
            f"attempts table lacks column(s) {', '.join(missing)}",
            hint="read it with ArchiveSlice.table('attempts') or add run_id to run.attempts",
        )
    # A row of no run or no variant belongs to no (run, variant) slot: refused here, not
    # an IndexError deep in the layout or the kernel.
    for name in ("run_id", "variant_id"):
        missing_rows = table.column(name).null_count
        if missing_rows:
            raise InputError(
                f"attempts table has {missing_rows} row(s) without a {name}",
                location=name,
                hint=f"give every attempt its {name}, or drop those rows",
            )


def _codes(values: pd.Series | np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """Positions of ``values`` in ``categories`` (-1 if absent); categoricals are mapped
    through their few categories, not row by row."""
    index = pd.Index(list(categories), dtype=object)
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    if isinstance(series.dtype, pd.CategoricalDtype):
        mapping = index.get_indexer(series.cat.categories.astype(str).to_numpy(dtype=object))
        codes = series.cat.codes.to_numpy()
        return np.where(codes >= 0, mapping[codes], -1)
    return index.get_indexer(series.astype(str).to_numpy(dtype=object))


def _observed_labels(values: pd.Series) -> list[str]:
    if isinstance(values.dtype, pd.CategoricalDtype):
        return sorted(values.cat.remove_unused_categories().cat.categories.astype(str))
    return sorted(set(values.astype(str).tolist()))


def from_keyed_frames(
    cases: pd.DataFrame, trials: pd.DataFrame, layout: RunLayout, engine: str
) -> SufficientStats:
    """Frames keyed by string ids (pandas, DuckDB) → the canonical order and dtypes."""
    run_index = {r: i for i, r in enumerate(layout.run_ids)}

    variants = layout.variant_categories
    vindex = {v: i for i, v in enumerate(variants)}
    width = max(len(variants), 1)
    pos_of_pair = {
        run_index[r] * width + vindex[v]: p
        for r, vs in zip(layout.run_ids, layout.variant_ids, strict=True)
        for p, v in enumerate(vs)
    }

    def keys(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        if frame.empty:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        run_code = _codes(frame["run_id"], layout.run_ids)
        variant_code = _codes(frame["variant_id"], variants)
        if (run_code < 0).any() or (variant_code < 0).any():
            raise InputError("engine returned a run or variant outside the slice")
        # Few distinct (run, variant) pairs: factorise them, map each once, then gather.
        codes, uniques = pd.factorize(run_code * width + variant_code)
        lookup = np.array([pos_of_pair.get(int(u), -1) for u in uniques], dtype=np.int64)
        vpos = lookup[codes]
        if (vpos < 0).any():
            raise InputError("engine returned a variant outside its run")
        return run_code, vpos

    run_code, vpos = keys(cases)
    empty = np.zeros(0, np.int64)
    case_index = cases["case_index"].to_numpy(np.int64) if len(cases) else empty
    order = np.lexsort((case_index, vpos, run_code))
    categories = _observed_labels(cases["case_id"]) if len(cases) else []
    case_codes = _codes(cases["case_id"], categories) if len(cases) else empty
    case_frame = _case_frame(
        layout,
        run_code[order],
        vpos[order],
        case_index[order],
        case_codes[order],
        categories,
        {n: cases[n].to_numpy()[order] if len(cases) else empty for n in CASE_STATS},
    )
    t_run, t_vpos = keys(trials)
    t_trial = trials["trial"].to_numpy(np.int64) if len(trials) else empty
    t_order = np.lexsort((t_trial, t_vpos, t_run))
    trial_frame = _trial_frame(
        layout,
        t_run[t_order],
        t_vpos[t_order],
        t_trial[t_order],
        {n: trials[n].to_numpy()[t_order] if len(trials) else empty for n in TRIAL_STATS},
    )
    return SufficientStats(cases=case_frame, trials=trial_frame, layout=layout, engine=engine)
