"""Lazy slices of an archive: filter by experiment, run, time, variant, case tag, factor.

A slice is a description, not data. Filters resolve first against the catalog (the small
``_run.json`` records): runs that cannot match are never opened, and each remaining run
gets the list of variants to keep. Reading a run then fetches only the needed columns and
applies the variant and tag predicates as masks computed once per distinct dictionary
value (DuckDB gets the same predicates as a semi-join and a ``WHERE``). Then the slice
feeds

* the engines (:meth:`ArchiveSlice.stats`, :meth:`ArchiveSlice.analyze`) — result frames
  across experiments, in memory, out of core or on a Dask cluster;
* the single-experiment analysis (:meth:`ArchiveSlice.to_runs`) — each run rebuilt as an
  :class:`~agenticlens_frames.frames.ExperimentRun`, so ``analyze()``, the reports and
  the figures work on a slice exactly as on a freshly loaded experiment;
* plain tables (:meth:`ArchiveSlice.table`, :meth:`ArchiveSlice.frame`) read through one
  unified schema: a factor that older runs lack comes back as nulls for them.
"""

from __future__ import annotations

import fnmatch
import json
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from .._deprecate import class_keyword_hints
from .._json_text import mark_json_text
from ..errors import InputError, check_bool
from ..frames import (
    FACTOR_PREFIX,
    NULLABLE_INTEGERS,
    SCHEMAS,
    ExperimentRun,
    cases_frame,
    set_categories,
    spec_from_json,
    variants_frame,
)
from ._scan import RunScan, verify_file
from .catalog import RUN_FILE, SPEC_FILE, Catalog, RunRecord, parse_time, records_frame

if TYPE_CHECKING:
    from pathlib import Path

    from ..paired.settings import ComparisonsConfig
    from .results import ArchiveAnalysis
    from .sufficient import SufficientStats

__all__ = ["ArchiveSlice", "SliceFilter"]

#: Doctests that need an optional extra (the repository's conftest.py skips them, saying
#: so, when it is not installed).
__doctest_requires__ = {"ArchiveSlice.relation": ("duckdb",)}

_KEY = pa.dictionary(pa.int32(), pa.string())
_VERDICT_TEXT = ("baseline_variant_id", "candidate_variant_id", "dimension")


def _names(
    value: str | Iterable[str] | None, what: str, *, empty_ok: bool = False
) -> tuple[str, ...] | None:
    if value is None:
        return None
    try:
        listed = (value,) if isinstance(value, str) else tuple(value)
    except TypeError as exc:
        raise InputError(f"{what} must be a string or a list of strings, got {value!r}") from exc
    if None in listed:
        # str(None) is 'None', a name nothing has: the slice came out empty without a word.
        raise InputError(f"{what} holds None; list names only")
    values = tuple(str(v) for v in listed)
    if not values:
        raise InputError(f"{what} is an empty list; leave it out to keep everything")
    if "" in values and not empty_ok:
        # An empty run-id prefix matched every run. (A factor's level may be the empty
        # string, a value a manifest can declare: that one is selected as it is.)
        raise InputError(f"{what} has an empty name; leave it out to keep everything")
    return values


Groups = tuple[tuple[str, ...], ...]


def factor_mapping(
    factors: Mapping[str, Any] | None, keywords: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``factors=`` with the factor keywords (``model="a"``) on top, checked to be a mapping.

    Examples
    --------
    >>> factor_mapping({"model": "a"}, {"prompt": ["v1", "v2"]})
    {'model': 'a', 'prompt': ['v1', 'v2']}
    """
    if factors is not None and not isinstance(factors, Mapping):
        # dict("model") raised a ValueError about update sequences.
        raise InputError(
            f"factors must be a mapping of factor names to values, got {factors!r}",
            location="factors",
            hint='e.g. factors={"model": ["a", "b"]}',
        )
    return {**(factors or {}), **(keywords or {})}


#: The most characters of filters a display shows: a slice of hundreds of run ids or
#: variants would fill the screen (``describe()`` gives them all).
REPR_FILTER_CHARS = 200


def short_filters(filters: SliceFilter) -> str:
    """``filters.describe()`` for a display: "no filter" when empty, cut after
    :data:`REPR_FILTER_CHARS` characters with how much was left out.

    Examples
    --------
    >>> short_filters(SliceFilter.build(tags="refund"))
    "tags='refund'"
    >>> short_filters(SliceFilter())
    'no filter'
    >>> text = short_filters(SliceFilter.build(runs=[f"{i:016x}" for i in range(40)]))
    >>> len(text), text[-46:]
    (246, '… (805 characters in all: describe() has them)')
    """
    text = filters.describe() or "no filter"
    if len(text) <= REPR_FILTER_CHARS:
        return text
    return f"{text[:REPR_FILTER_CHARS]}… ({len(text)} characters in all: describe() has them)"


@class_keyword_hints(skip=("scan",))
@dataclass(frozen=True)
class SliceFilter:
    """The filters of a slice (empty = no restriction).

    Multi-valued filters are conjunctions of groups: a value matches a group when it
    matches any entry of the group, and it must match every group (each
    :meth:`ArchiveSlice.where` adds a group, narrowing the slice).

    Attributes
    ----------
    experiments
        Experiment ids (``name@version``) or names, shell patterns allowed
        (``"support-*"``).
    runs
        Run ids or unique prefixes.
    variants
        Variant ids.
    since, until
        ``run_at`` ≥ since and < until (UTC).
    tags
        Keep cases carrying one of the tags (of every group).
    factors
        ``(name, values)`` pairs: a variant is kept when, for every named factor, its
        value is one of the values (a variant without the factor never matches).
    include_baseline
        Also keep each run's baseline variant when any of its variants matched, so
        comparisons against the baseline stay available.
    """

    experiments: Groups = ()
    runs: Groups = ()
    variants: Groups = ()
    since: datetime | None = None
    until: datetime | None = None
    tags: Groups = ()
    factors: tuple[tuple[str, tuple[str, ...]], ...] = ()
    include_baseline: bool = False

    def __repr__(self) -> str:
        # The dataclass repr printed every field, empty ones too, and every value of each
        # (hundreds of run ids): the filters as the slice's display says them, cut short.
        return f"SliceFilter({short_filters(self)})"

    @classmethod
    def build(
        cls,
        *,
        experiments: str | Iterable[str] | None = None,
        runs: str | Iterable[str] | None = None,
        variants: str | Iterable[str] | None = None,
        since: str | date | datetime | None = None,
        until: str | date | datetime | None = None,
        tags: str | Iterable[str] | None = None,
        factors: Mapping[str, str | Iterable[str]] | None = None,
        include_baseline: bool = False,
    ) -> SliceFilter:
        """Normalise user values (a string or a list for every multi-valued filter).

        Examples
        --------
        >>> f = SliceFilter.build(variants=["a", "b"], since="2026-10-01",
        ...                       factors={"factor_model": "large"})
        >>> f.variants, f.factors, f.since.isoformat()
        ((('a', 'b'),), (('model', ('large',)),), '2026-10-01T00:00:00+00:00')
        >>> f
        SliceFilter(variants=['a', 'b'], model='large', since=2026-10-01T00:00:00Z)
        """
        pairs: dict[str, tuple[str, ...]] = {}
        for name, values in factor_mapping(factors).items():
            name = name.removeprefix(FACTOR_PREFIX)
            if values is None:
                # None was no filter on the level: it kept no variant at all.
                raise InputError(f"factor {name!r} must be a string or a list of strings, got None")
            pairs[name] = _names(values, f"factor {name!r}", empty_ok=True) or ()
        start = parse_time(since, name="since")
        end = parse_time(until, name="until")
        if start is not None and end is not None and end <= start:
            raise InputError(
                f"until ({end:%Y-%m-%d %H:%M}) must be after since ({start:%Y-%m-%d %H:%M})",
                location="until",
            )

        def group(value: str | Iterable[str] | None, what: str) -> Groups:
            names = _names(value, what)
            return () if names is None else (names,)

        return cls(
            experiments=group(experiments, "experiments"),
            runs=group(runs, "runs"),
            variants=group(variants, "variants"),
            since=start,
            until=end,
            tags=group(tags, "tags"),
            factors=tuple(sorted(pairs.items())),
            include_baseline=check_bool(
                include_baseline, "include_baseline", location="include_baseline"
            ),
        )

    def merge(self, other: SliceFilter) -> SliceFilter:
        """Both filters at once (the intersection).

        Examples
        --------
        >>> both = SliceFilter.build(variants=["a", "b"]).merge(SliceFilter.build(variants="b"))
        >>> both.variants  # a variant must match every group
        (('a', 'b'), ('b',))
        """
        later = [s for s in (self.since, other.since) if s is not None]
        earlier = [u for u in (self.until, other.until) if u is not None]
        factors = dict(self.factors)
        for name, values in other.factors:
            factors[name] = (
                tuple(v for v in factors[name] if v in values) if name in factors else values
            )
        return SliceFilter(
            experiments=self.experiments + other.experiments,
            runs=self.runs + other.runs,
            variants=self.variants + other.variants,
            since=max(later) if later else None,
            until=min(earlier) if earlier else None,
            tags=self.tags + other.tags,
            factors=tuple(sorted(factors.items())),
            include_baseline=self.include_baseline or other.include_baseline,
        )

    def describe(self) -> str:
        """The filter as keyword arguments (for reprs and CLI output).

        Examples
        --------
        >>> SliceFilter.build(tags="refund", factors={"model": ["a", "b"]},
        ...                   until="2026-12-01").describe()
        "tags='refund', model=['a', 'b'], until=2026-12-01T00:00:00Z"
        >>> SliceFilter().describe()
        ''
        """

        def show(values: tuple[str, ...]) -> str:
            return repr(values[0]) if len(values) == 1 else repr(list(values))

        parts = []
        for name in ("experiments", "runs", "variants", "tags"):
            parts += [f"{name}={show(g)}" for g in getattr(self, name)]
        parts += [f"{name}={show(values)}" for name, values in self.factors]
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value:%Y-%m-%dT%H:%M:%SZ}")
        if self.include_baseline:
            parts.append("include_baseline=True")
        return ", ".join(parts)

    # -------------------------------------------------------------- resolution

    def _record_ok(self, record: RunRecord) -> bool:
        for group in self.experiments:
            if not any(
                fnmatch.fnmatchcase(record.experiment_id, p)
                or fnmatch.fnmatchcase(record.experiment_name, p)
                for p in group
            ):
                return False
        for group in self.runs:
            if not any(record.run_id.startswith(p) for p in group):
                return False
        for group in self.tags:
            if set(group).isdisjoint(record.tags):
                return False
        if self.since is not None and record.run_at < self.since:
            return False
        return not (self.until is not None and record.run_at >= self.until)

    def _variant_ok(self, variant: Mapping[str, Any]) -> bool:
        if not all(variant["variant_id"] in group for group in self.variants):
            return False
        factors = variant["factors"]
        return all(factors.get(name) in values for name, values in self.factors)

    def scan(self, record: RunRecord) -> RunScan | None:
        """How to read ``record`` under this filter, or None when nothing of it stays.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> record = example_archive().records()[0]
        >>> SliceFilter.build(variants="prompt-v2").scan(record).selected
        ('prompt-v2',)
        >>> SliceFilter.build(experiments="other-*").scan(record) is None
        True
        """
        if not self._record_ok(record):
            return None
        keep = [v["variant_id"] for v in record.variants if self._variant_ok(v)]
        if not keep:
            return None
        if self.include_baseline and record.baseline_variant_id not in keep:
            keep = [v for v in record.variant_ids if v in keep or v == record.baseline_variant_id]
        selected = None if len(keep) == len(record.variants) else tuple(keep)
        return RunScan(
            run_id=record.run_id,
            experiment_id=record.experiment_id,
            folder=str(record.path),
            variant_ids=record.variant_ids,
            selected=selected,
            tags=self.tags or None,
            n_attempts=record.n_attempts,
            factor_names=record.factor_names,
            sha256=tuple(sorted(record.sha256.items())),
            rows=tuple(sorted(record.counts.items())),
        )


@class_keyword_hints()
@dataclass(frozen=True)
class ArchiveSlice:
    """A lazy, filtered view of an :class:`~agenticlens_frames.archive.store.Archive`.

    Make one with :meth:`Archive.slice`; narrow it with :meth:`where`. The catalog is read
    on first use and then kept, so a slice is a snapshot of the runs present at that time.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> archive = example_archive(run_at="2026-11-04")
    >>> dense = archive.slice(retrieval="dense", tags="refund", since="2026-10-01")
    >>> dense  # what it holds, from the catalog (attempts: before the row filters)
    ArchiveSlice(runs=1, variants=1, attempts<=350; tags='refund', retrieval='dense',
                 since=2026-10-01T00:00:00Z)
    >>> result = dense.analyze(engine="numpy")
    >>> result.variant_summary["variant_id"].astype(str).tolist()
    ['retrieval-dense']
    >>> sorted(set(dense.frame("attempts")["factor_retrieval"]))
    ['dense']
    """

    archive: Catalog
    filter: SliceFilter = field(default_factory=SliceFilter)

    def __repr__(self) -> str:
        # What the slice holds (runs, variants, attempt rows, from the catalog: the tables
        # are not read) and the filters that made it; the filters alone said nothing of an
        # unfiltered slice ("ArchiveSlice()"). A slice that cannot be used (no archive
        # there, a factor no run has) is no reason for a repr to raise: it says why instead.
        filters = short_filters(self.filter)
        try:
            plan = self._plan
        except InputError as exc:
            return f"ArchiveSlice(unusable: {exc.message}; {filters})"
        variants = sum(len(s.selected or r.variants) for r, s in plan)
        rows_filtered = any(s.selected is not None or s.tags for _, s in plan)
        attempts = f"attempts{'<=' if rows_filtered else '='}{len(self)}"
        return f"ArchiveSlice(runs={len(plan)}, variants={variants}, {attempts}; {filters})"

    def where(self, **filters: Any) -> ArchiveSlice:
        """A narrower slice: the same keywords as :meth:`Archive.slice`, combined (AND).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> dense = example_archive().slice(retrieval="dense")
        >>> dense.where(tags="refund")
        ArchiveSlice(runs=1, variants=1, attempts<=350; tags='refund', retrieval='dense')
        >>> dense.where(prompt="v2").n_runs  # no variant is both
        0
        """
        known = {"experiments", "runs", "variants", "since", "until", "tags", "include_baseline"}
        factors = factor_mapping(
            filters.pop("factors", None), {k: v for k, v in filters.items() if k not in known}
        )
        extra = SliceFilter.build(
            **{k: v for k, v in filters.items() if k in known}, factors=factors
        )
        return replace(self, filter=self.filter.merge(extra))

    # -------------------------------------------------------------- catalog

    @cached_property
    def _plan(self) -> tuple[tuple[RunRecord, RunScan], ...]:
        out = []
        records = self.archive.records()
        # A factor name no run has is a typo, and so is a factor whose every given level
        # no run has (the slice would be empty): refused, as the CLI refuses it. A level
        # no run has beside one that exists is a warning naming the levels that exist.
        check_factor_filter(self.filter.factors, records, levels="warn")
        # A variant id no run has can only be a mistake: refused, naming the closest.
        check_variant_filter(self.filter.variants, records)
        check_run_prefixes(self.filter.runs, records)
        for record in records:
            scan = self.filter.scan(record)
            if scan is not None:
                out.append((record, scan))
        return tuple(out)

    def records(self) -> list[RunRecord]:
        """Catalog records of the runs the slice touches, in archive order.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> [r.experiment_id for r in example_archive().slice(variants="prompt-v2").records()]
        ['support-agent-upgrade@1']
        """
        return [record for record, _ in self._plan]

    def scans(self) -> list[RunScan]:
        """Per-run read instructions (what the engines consume).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> [scan.selected for scan in example_archive().slice(variants="prompt-v2").scans()]
        [('prompt-v2',)]
        """
        return [scan for _, scan in self._plan]

    def runs(self) -> pd.DataFrame:
        """The catalog rows of the runs the slice touches.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> example_archive().all().runs()[["experiment_id", "n_variants", "n_attempts"]]
                     experiment_id  n_variants  n_attempts
        0  support-agent-upgrade@1           5         350
        """
        return records_frame(self.records())

    def files(self, table: str = "attempts") -> list[str]:
        """The parquet files the slice reads for ``table`` (after catalog pruning).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive()
        >>> [f.rsplit("/", 1)[-1] for f in archive.all().files("checks")]
        ['checks.parquet']
        >>> archive.slice(experiments="other-*").files()
        []
        """
        check_table(table)
        return [str(scan.file(table)) for scan in self.scans()]

    @property
    def n_runs(self) -> int:
        """How many runs the slice touches (from the catalog; no table is read).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive(run_at="2026-11-04")
        >>> archive.all().n_runs, archive.slice(until="2026-11-01").n_runs
        (1, 0)
        """
        return len(self._plan)

    def __len__(self) -> int:
        """Attempts in the touched runs before row filters (an upper bound, from the catalog)."""
        return sum(scan.n_attempts for scan in self.scans())

    # -------------------------------------------------------------- tables

    def _checked_scans(self, name: str) -> list[RunScan]:
        """The scans, each file of table ``name`` checked to be that table's (not another
        table's file in its place, in a run no checksum vouches for)."""
        scans = self.scans()
        for scan in scans:
            scan.file_with(name, table_columns(name))
        return scans

    def table(self, name: str = "attempts", columns: str | Sequence[str] | None = None) -> pa.Table:
        """Read one table of every run in the slice, through a unified schema.

        Columns a run lacks (a factor added later) are null for its rows. Key columns
        stay dictionary-encoded, one chunk per run.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> sl = example_archive().slice(variants="prompt-v2")
        >>> t = sl.table(columns=["variant_id", "passed"])
        >>> t.num_rows, str(t.schema.field("variant_id").type)
        (70, 'dictionary<values=string, indices=int32, ordered=0>')
        """
        check_table(name)
        if isinstance(columns, str):  # one column, not its letters
            columns = [columns]
        scans = self._checked_scans(name)
        parts = [scan.read(name, columns) for scan in scans]
        schema = _unified_schema(parts, scans, name, columns)
        return pa.Table.from_batches(
            [b for part in parts for b in _conform(part, schema).to_batches()], schema=schema
        )

    def frame(
        self, name: str = "attempts", columns: str | Sequence[str] | None = None
    ) -> pd.DataFrame:
        """:meth:`table` as pandas (dictionary columns become categoricals).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> trials = example_archive().slice(variants="prompt-v2").frame("trials")
        >>> trials.shape, str(trials["variant_id"].dtype)
        ((5, 7), 'category')
        """
        frame = self.table(name, columns).to_pandas()
        for column in NULLABLE_INTEGERS.get(name, ()):
            if column in frame.columns:
                frame[column] = frame[column].astype("Int32")
        if name == "cases":
            # Its inputs are the runs' JSON text, marked as run.cases marks them.
            mark_json_text(frame)
        return frame

    def relation(self, connection: Any = None) -> Any:
        """The slice's attempts as a lazy DuckDB relation, for ad hoc SQL (extra ``duckdb``).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive()
        >>> rel = archive.slice(tags="refund").relation()
        >>> rel.aggregate("factor_retrieval, round(avg(passed::INT), 3) AS pass_rate",
        ...               "factor_retrieval").order("factor_retrieval").fetchall()
        [('bm25', 0.8), ('dense', 0.733)]
        """
        from ._duckdb import duckdb_connection, duckdb_source

        scans = self._checked_scans("attempts")
        if not scans:
            raise InputError("the slice holds no run", hint="loosen its filters")
        con = connection or duckdb_connection()
        return con.sql(f"SELECT * FROM {duckdb_source(con, scans)}")

    # -------------------------------------------------------------- analysis

    def stats(self, engine: str = "auto", **options: Any) -> SufficientStats:
        """Sufficient statistics of the slice (see
        :func:`~agenticlens_frames.archive.engines.sufficient_stats`).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> st = example_archive().all().stats("numpy")
        >>> st.engine, len(st.layout.run_ids)
        ('numpy', 1)
        """
        import inspect

        from .._suggest import require_known
        from .engines import sufficient_stats

        # A misspelt setting (memory_limt=) was a bare TypeError naming no alternative.
        keywords = inspect.signature(sufficient_stats).parameters
        require_known(
            "engine setting", options, [k for k in keywords if k not in ("source", "engine")]
        )
        return sufficient_stats(self, engine=engine, **options)

    def analyze(
        self,
        engine: str = "auto",
        *,
        pass_k: Sequence[int] | None = None,
        confidence_level: float = 0.95,
        regression_threshold: float = 0.05,
        latency_missing: str = "exclude",
        **options: Any,
    ) -> ArchiveAnalysis:
        """Every result frame across the slice's runs (see
        :func:`~agenticlens_frames.archive.results.analyze_stats`).

        ``pass_k`` defaults to the union of the runs' effective pass@k lists.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> sl = example_archive().slice(variants="prompt-v2", include_baseline=True)
        >>> result = sl.analyze(engine="numpy")
        >>> result  # doctest: +NORMALIZE_WHITESPACE
        ArchiveAnalysis(engine='numpy', runs=1, variants=2, attempts=140, case_rows=28,
                        pass_k=[1, 3, 5]; variants='prompt-v2', include_baseline=True;
                        verdicts: the slice's .verdicts())
        >>> result.case_level_intervals[["variant_id", "pass_rate"]].round(3)
          variant_id  pass_rate
        0   baseline      0.714
        1  prompt-v2      0.871
        """
        from .results import analyze_stats

        records = self.records()
        ks = pass_k
        if ks is None:
            ks = sorted({k for r in records for k in r.pass_k}) or [1]
        result = analyze_stats(
            self.stats(engine, **options),
            self.variant_info(),
            pass_k=ks,
            confidence_level=confidence_level,
            regression_threshold=regression_threshold,
            latency_missing=latency_missing,  # type: ignore[arg-type]
            runs=self.runs(),
        )
        # The filters that made the slice, for the result's display (the result is read
        # apart from the slice, and said nothing of what was analysed).
        result.info["filter"] = short_filters(self.filter)
        return result

    def variant_info(self) -> pd.DataFrame:
        """One row per (run, variant) kept: ids, name, position, baseline flag, run time,
        and one ``factor_<name>`` column per factor in the slice (null where unset).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> info = example_archive().slice(prompt="v2").variant_info()
        >>> info[["variant_id", "is_baseline", "factor_prompt"]]
          variant_id  is_baseline factor_prompt
        0  prompt-v2        False            v2
        1   large-v2        False            v2
        """
        rows = []
        names: dict[str, None] = {}
        for record, scan in self._plan:
            names.update(dict.fromkeys(record.factor_names))
            for v in record.variants:
                if scan.selected is not None and v["variant_id"] not in scan.selected:
                    continue
                rows.append(
                    {
                        "experiment_id": record.experiment_id,
                        "run_id": record.run_id,
                        "run_at": pd.Timestamp(record.run_at),
                        "variant_id": v["variant_id"],
                        "variant_name": v["variant_name"],
                        "variant_position": v["position"],
                        "is_baseline": v["is_baseline"],
                        **{FACTOR_PREFIX + k: val for k, val in v["factors"].items()},
                    }
                )
        columns = [
            "experiment_id",
            "run_id",
            "run_at",
            "variant_id",
            "variant_name",
            "variant_position",
            "is_baseline",
            *(FACTOR_PREFIX + n for n in names),
        ]
        frame = pd.DataFrame(rows, columns=columns)
        frame["run_at"] = pd.to_datetime(frame["run_at"], utc=True)
        # A variant without the factor is missing; a level spelt "None" or "nan" is a level
        # (the str dtype keeps missing values missing, so no text stands for them).
        for column in columns[7:]:
            frame[column] = frame[column].astype("str")
        return frame

    def to_runs(self) -> list[ExperimentRun]:
        """Each run of the slice as an :class:`ExperimentRun` restricted to the slice.

        The manifest keeps the selected variants plus the baseline (comparisons need it)
        and the suite keeps the selected cases, renumbered; everything else is exactly
        what was archived, so :func:`~agenticlens_frames.analyze` and the renderers give
        the same numbers as on the original run restricted the same way.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> [len(run.cases) for run in example_archive().slice(tags="refund").to_runs()]
        [3]
        """
        return [_rebuild_run(record, scan) for record, scan in self._plan]

    def to_run(self) -> ExperimentRun:
        """The slice's single run (InputError when it holds zero or several).

        The run keeps its baseline next to the selected variants, as :meth:`to_runs` does.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> run = example_archive().slice(variants="prompt-v2").to_run()
        >>> run.manifest.variant_ids, len(run.attempts)
        (('baseline', 'prompt-v2'), 140)
        """
        runs = self._plan
        if len(runs) != 1:
            raise InputError(
                f"the slice holds {len(runs)} runs, not exactly one",
                hint="narrow it with .where(runs=...) or use to_runs()",
            )
        return _rebuild_run(*runs[0])

    def verdicts(
        self,
        comparisons: ComparisonsConfig | Mapping[str, Any] | None = None,
        *,
        confidence_level: float = 0.95,
        progress: bool = False,
    ) -> pd.DataFrame:
        """Each run's case-level verdicts, exactly as ``experiment run`` gives them.

        Every run of the slice is read back whole — all its variants and cases, the family
        its manifest's ``comparisons:`` declared — and judged by
        :func:`~agenticlens_frames.case_verdicts`; then the rows of the slice's candidates
        are kept. A verdict is never computed over a family the run did not declare: a
        slice of one variant keeps that variant's row of the whole run's family, and a tag
        filter does not apply (``attrs["notes"]`` says so), since a subset of cases chosen
        afterwards is not what the correction was declared for. A run holding a single
        variant (archived before ``add`` refused them) has no verdict: the notes name it.

        Parameters
        ----------
        comparisons
            Settings for runs whose manifest declares none (a
            :class:`~agenticlens_frames.paired.settings.ComparisonsConfig` or a mapping
            such as ``{"correction": "holm"}``). A run that declared its own keeps it
            (column ``declared_in``). Runs judged by neither get per-comparison intervals
            and the verdict ``not judged``.
        confidence_level
            For the per-comparison intervals of undeclared runs.
        progress
            Show a progress bar (one step per run).

        Returns
        -------
        pandas.DataFrame
            ``experiment_id, run_id, declared_in`` (``manifest``, ``stopping rule``: a
            run whose early-stopping rule declared its settings, ``given`` or ``none``),
            ``stopped_early`` (True: its rule stopped it; False: a rule watched it to
            the end; None: no rule. Under a rule its rows are descriptive, and the notes
            say so), then :data:`~agenticlens_frames.paired.verdicts.VERDICT_COLUMNS`.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> v = example_archive().slice(variants="prompt-v2").verdicts()
        >>> v[["candidate_variant_id", "dimension", "declared_in", "verdict"]].head(2)
          candidate_variant_id dimension declared_in                   verdict
        0            prompt-v2   quality    manifest  no detectable difference
        1            prompt-v2    safety    manifest  no detectable difference
        """
        from .._progress import progress_bar
        from .._stopping_block import declared_correction
        from ..paired.settings import as_comparisons
        from ..paired.verdicts import VERDICT_COLUMNS, case_verdicts
        from .results import single_variant_notes, stopped_early_notes

        given = as_comparisons(comparisons)
        keys = ["experiment_id", "run_id", "declared_in", "stopped_early"]
        parts: list[pd.DataFrame] = []
        notes: list[str] = []
        with progress_bar(
            total=len(self._plan), desc="verdicts", unit="run", disable=not progress
        ) as bar:
            for record, scan in self._plan:
                run = _rebuild_run(record, replace(scan, selected=None, tags=None))
                own = run.manifest.comparisons is not None
                # A run with an early-stopping block: its rule declared the correction, α
                # and cluster (run_comparisons), as the run's own, not the given ones.
                # (A rule of one candidate declared no correction: the given one then
                # applies, at the rule's α and cluster, as run_comparisons gives it.)
                rule = (
                    not own
                    and run.stopping is not None
                    and declared_correction(run.stopping) is not None
                )
                used = None if own or rule else given
                frame = case_verdicts(run, used, confidence_level=confidence_level)
                if scan.selected is not None:
                    keep = frame["candidate_variant_id"].astype(str).isin(scan.selected)
                    frame = frame[keep.to_numpy()]
                declared_in = (
                    "manifest"
                    if own
                    else "stopping rule"
                    if rule
                    else "given"
                    if given is not None
                    else "none"
                )
                # Plain text: each run has its own variant ids (categories would not concat).
                frame = frame.astype(dict.fromkeys(_VERDICT_TEXT, object))
                # A rule watched it (stopped it: True; to the end: False; None without
                # one): these fixed-sample rows are then descriptive (the notes).
                watched = None if run.stopping is None else bool(run.stopping["stopped_early"])
                frame.insert(0, "stopped_early", watched)
                frame.insert(0, "declared_in", declared_in)
                frame.insert(0, "run_id", record.run_id)
                frame.insert(0, "experiment_id", record.experiment_id)
                parts.append(frame)
                bar.update(1)
        if self.filter.tags:
            notes.append(
                "the tag filter does not apply to verdicts: each is of its run's whole "
                "suite, the family its correction was declared for"
            )
        # A run of one variant (archived before add refused them) has no verdict row.
        planned = records_frame([record for record, _ in self._plan])
        notes += single_variant_notes(planned)
        notes += stopped_early_notes(planned)
        if given is not None and any(p["declared_in"].eq("manifest").any() for p in parts):
            notes.append(
                "runs whose manifest declares comparisons keep their own settings; the "
                "given ones apply to the runs that declared none"
            )
        if given is not None and any(p["declared_in"].eq("stopping rule").any() for p in parts):
            notes.append(
                "runs with an early-stopping rule keep the correction, alpha and cluster it "
                "decided with (declared_in: stopping rule)"
            )
        columns = keys + VERDICT_COLUMNS
        out = (
            pd.concat(parts, ignore_index=True).reindex(columns=columns)
            if parts
            else pd.DataFrame(columns=columns)
        )
        out.attrs["notes"] = notes
        return out

    def analyze_runs(self, **options: Any) -> dict[str, Any]:
        """``analyze()`` of every run in the slice, keyed by run id (single-run reports).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive()
        >>> results = archive.slice(variants=["prompt-v2", "large-v2"]).analyze_runs()
        >>> list(results) == [r.run_id for r in archive.records()]
        True
        >>> results[archive.records()[0].run_id].variants["variant_id"].astype(str).tolist()
        ['baseline', 'prompt-v2', 'large-v2']
        """
        from ..analysis import analyze

        return {
            run_id: analyze(run, **options)
            for run_id, run in zip((r.run_id for r in self.records()), self.to_runs(), strict=True)
        }


def check_table(name: str) -> None:
    """Refuse a table name the archive does not store, listing the ones it does.

    Examples
    --------
    >>> check_table("attempts")
    >>> check_table("attempt")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: unknown table 'attempt'...
    """
    if name not in SCHEMAS:
        raise InputError(f"unknown table {name!r}", hint=f"choose one of {', '.join(SCHEMAS)}")


def _archived_fields(name: str) -> dict[str, pa.Field]:
    """The columns every archived ``name`` file holds but its factors — the run's table
    with the columns the store adds (run id and experiment; for attempts, run time and
    case tags) — so that a slice holding no run still names and types them."""
    added = {"run_id": _KEY, "experiment_id": _KEY}
    if name == "attempts":
        added["run_at"] = pa.timestamp("us", tz="UTC")
    fields = {n: pa.field(n, t) for n, t in added.items()}
    fields.update((f.name, f) for f in SCHEMAS[name])
    if name == "attempts":
        fields["tags"] = pa.field("tags", _KEY)
    return fields


def _unified_schema(
    parts: Sequence[pa.Table], scans: Sequence[RunScan], name: str, columns: Sequence[str] | None
) -> pa.Schema:
    """Every column of every part, in first-seen order, with each factor as a dictionary
    column — the schema discovery from one file would silently drop later factors."""
    fields: dict[str, pa.Field] = {} if parts else _archived_fields(name)
    for part in parts:
        for f in part.schema:
            if f.name not in fields:
                fields[f.name] = f
    if name == "attempts" and columns is None:
        for scan in scans:
            for factor in scan.factor_names:
                fields.setdefault(FACTOR_PREFIX + factor, pa.field(FACTOR_PREFIX + factor, _KEY))
    if columns is not None:
        missing = [c for c in columns if c not in fields]
        for column in missing:
            if not column.startswith(FACTOR_PREFIX):
                raise InputError(f"no column {column!r} in archived {name}")
            fields[column] = pa.field(column, _KEY)
        return pa.schema([fields[c] for c in columns])
    # Factor columns last, in first-seen order, after the fixed columns.
    fixed = [f for n, f in fields.items() if not n.startswith(FACTOR_PREFIX)]
    factors = [f for n, f in fields.items() if n.startswith(FACTOR_PREFIX)]
    return pa.schema(fixed + factors)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    columns = []
    for f in schema:
        if f.name in table.column_names:
            column = table.column(f.name)
            columns.append(column if column.type == f.type else column.cast(f.type))
        else:
            columns.append(pa.nulls(table.num_rows, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


# --------------------------------------------------------------------------- runs


def _rebuild_run(record: RunRecord, scan: RunScan) -> ExperimentRun:
    """Read one run back as an ExperimentRun restricted to the slice's variants and cases."""
    path = record.path / SPEC_FILE
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"unreadable run specification ({exc.strerror})", file=path, hint=_SPEC_DAMAGED
        ) from None
    expected = record.sha256.get(SPEC_FILE)
    # Runs archived before the specification was checksummed have none: read unchecked.
    if expected is not None:
        try:
            verify_file(path, expected, record.run_id, content=content)
        except InputError:
            # A re-add completing the run's facts (Archive.add) replaces the specification,
            # then the record with its new checksum: read between the two, the record on
            # disk now names this content.
            again = _record_spec_sha256(record)
            if again in (None, expected):
                raise
            verify_file(path, again, record.run_id, content=content)
    try:
        spec = json.loads(content.decode("utf-8"))
    except ValueError as exc:
        raise InputError(
            f"unreadable run specification ({exc})", file=path, hint=_SPEC_DAMAGED
        ) from None
    try:
        manifest, suite = spec_from_json(spec)
        if (
            f"{manifest.name}@{manifest.version}" != record.experiment_id
            or manifest.variant_ids != record.variant_ids
            or manifest.baseline_variant_id != record.baseline_variant_id
            or [v.factors for v in manifest.variants] != [v["factors"] for v in record.variants]
            or len(suite.cases) != record.counts["cases"]
        ):
            raise InputError(
                f"does not describe run {record.run_id} of {record.experiment_id} as its "
                "record does (the experiment, variants, factors, baseline or number of "
                "cases differ)"
            )
    except InputError as exc:
        raise InputError(
            exc.message, file=path, location=exc.location, hint=_SPEC_DAMAGED
        ) from None
    keep = set(scan.selected or manifest.variant_ids) | {manifest.baseline_variant_id}
    variants = tuple(v for v in manifest.variants if v.id in keep)
    manifest = replace(manifest, variants=variants)
    selected = None if len(variants) == len(record.variants) else tuple(v.id for v in variants)
    widened = replace(scan, selected=selected)
    chosen = [
        c
        for c in suite.cases
        if all(not set(group).isdisjoint(c.tags) for group in scan.tags or ())
    ]
    # Restricted suites are renumbered: analysis indexes cases by position.
    remap = np.full(len(suite.cases), -1, dtype=np.int64)
    remap[[c.index for c in chosen]] = np.arange(len(chosen))
    suite = replace(suite, cases=tuple(replace(c, index=i) for i, c in enumerate(chosen)))
    spend = _failed_trials_spend(spec, path, keep)
    stopping = _stopping_block(spec, path, record, keep, sliced_cases=len(chosen) < len(remap))
    archive_only = {"run_id", "run_at", "tags"}
    tables: dict[str, pd.DataFrame] = {}
    for name in ("attempts", "checks", "trials"):
        # Another table's file would be read as this one: to a KeyError, or to verdicts
        # from the wrong rows.
        widened.file_with(name, table_columns(name))
        table = widened.read(name, metadata=True)
        drop = [c for c in table.column_names if c not in SCHEMAS[name].names or c in archive_only]
        tables[name] = table.drop_columns(drop).to_pandas()
    attempts = tables["attempts"]
    attempts["case_index"] = remap[attempts["case_index"].to_numpy(np.int64)].astype(np.int32)
    run = ExperimentRun(
        manifest=manifest,
        suite=suite,
        attempts=attempts.reset_index(drop=True),
        checks=tables["checks"].reset_index(drop=True),
        trials=tables["trials"].reset_index(drop=True),
        variants=variants_frame(manifest),
        cases=cases_frame(suite),
        evaluator_versions=dict(spec.get("evaluators", {})),
        judge_spend_failed_trials=spend,
        stopping=stopping,
    )
    try:
        set_categories(run)
    except InputError as exc:
        # The tables are checked against their checksums when read: the spec is the odd one.
        raise InputError(exc.message, file=path, hint=_SPEC_DAMAGED) from None
    return run


def _record_spec_sha256(record: RunRecord) -> str | None:
    """The specification's checksum in the run's record as it is on disk now (None when
    unreadable: the caller's first refusal stands)."""
    try:
        data = json.loads((record.path / RUN_FILE).read_text(encoding="utf-8"))
        value = data["sha256"][SPEC_FILE]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


def _stopping_block(
    spec: Mapping[str, Any],
    path: Path,
    record: RunRecord,
    variants: set[str],
    *,
    sliced_cases: bool,
) -> dict[str, Any] | None:
    """The run's early-stopping block kept in its specification (None: it had none, or was
    archived before it was kept), checked as :func:`~..frames.read_parquet` checks it, for
    a rebuilt run of the slice's ``variants``.

    A slice of some variants keeps the decisions about those candidates (and their judges'
    spend past the decision): the stop itself, and the rule's settings, stand. A slice
    of some cases is refused: the sequence decided on all the cases it used, so the block
    does not describe the sliced data, and without it the slice's fixed-sample verdicts
    would read as inferential.
    """
    from .._stopping_block import checked_record

    block = spec.get("stopping")
    if block is None:
        return None
    checked_record("stopping", block, file=path, location=["stopping"], hint=_SPEC_DAMAGED)
    if sliced_cases:
        stopped = "stopped early" if block["stopped_early"] else "ran under an early-stopping rule"
        raise InputError(
            f"run {record.run_id} of {record.experiment_id} {stopped}: its stopping decision "
            "was taken over all the cases its sequence used, so it does not describe a slice "
            "of some of its cases, and without it that slice's fixed-sample verdicts would "
            "read as inferential",
            file=path,
            location="stopping",
            hint="slice this run without tags=, or leave it out of the slice (runs=)",
        )
    out = dict(block)
    out["candidates"] = [
        dict(c) for c in block["candidates"] if c["candidate_variant_id"] in variants
    ]
    if len(out["candidates"]) < len(block["candidates"]):
        # The rule split α across all its candidates: the statement of it keeps their number.
        out.setdefault("rule_candidates", len(block["candidates"]))
    spend = block.get("judge_spend_after_decision")
    if spend is not None:
        out["judge_spend_after_decision"] = [dict(r) for r in spend if r["variant_id"] in variants]
    return out


def _failed_trials_spend(
    spec: Mapping[str, Any], path: Path, variants: set[str]
) -> list[dict[str, Any]] | None:
    """The run's ``judge_spend_failed_trials`` kept in its specification (None: it had
    none, or was archived before it was kept), checked as :func:`~..frames.read_parquet`
    checks it, with the rows of the rebuilt run's ``variants`` only (a slice of some
    variants says the judge spend of those)."""
    from .._stopping_block import checked_record

    rows = spec.get("judge_spend_failed_trials")
    if rows is None:
        return None
    key = "judge_spend_failed_trials"
    checked_record(key, rows, file=path, location=[key], hint=_SPEC_DAMAGED)
    return [dict(row) for row in rows if row["variant_id"] in variants]


#: Columns of the tidy tables added after archives began: runs archived before lack them.
_ADDED_LATER = frozenset({"metadata"})


def table_columns(name: str) -> list[str]:
    """The columns every archived file of table ``name`` has. A file no checksum vouches
    for (runs archived before 3 December 2026) must at least have them before it is read
    as that table (:meth:`RunScan.file_with`).

    Examples
    --------
    >>> table_columns("trials")
    ['variant_id', 'trial', 'status', 'error_message', 'execution_position']
    """
    return [c for c in SCHEMAS[name].names if c not in _ADDED_LATER]


_SPEC_DAMAGED = (
    "the run's specification was edited or damaged: restore it, or remove the run's folder "
    "and add the run again"
)


def check_run_prefixes(groups: Groups, records: Sequence[RunRecord]) -> None:
    """Refuse a run id prefix that several runs share: it names one run, and keeping
    every run it starts would pool runs the user did not choose. A whole id is never
    ambiguous, and a prefix no run has leaves the slice empty, as any filter can."""
    ids = [record.run_id for record in records]
    for group in groups:
        for prefix in group:
            hits = [run_id for run_id in ids if run_id.startswith(prefix)]
            if len(hits) > 1 and prefix not in hits:
                raise InputError(
                    f"run id prefix {prefix!r} matches {len(hits)} runs "
                    f"({', '.join(hits[:5])}{', …' if len(hits) > 5 else ''})",
                    location="runs",
                    hint="give more of the run's id (list them with `agenticlens-frames "
                    "archive ls`), or list each run you mean",
                )


def check_variant_filter(
    groups: Groups, records: Sequence[RunRecord], *, location: str = "variants"
) -> None:
    """Refuse a variant id that no archived run has, naming the closest id and the ids the
    archive holds (all of them at once, beside ids that exist). It can only be a mistake,
    and the slice would be empty for it without a word (a factor level no run has keeps
    its warning, documented since it was added). An id that some runs have is no error
    in a slice of others, and an archive without runs has no ids to check against.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> records = example_archive().records()
    >>> check_variant_filter((("prompt-v2",),), records)
    >>> check_variant_filter((("promt-v2",),), records)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: variants: unknown variant id 'promt-v2' (did you
    mean 'prompt-v2'? known: baseline, model-large, prompt-v2, retrieval-dense, large-v2)
    """
    if not groups or not records:
        return
    from .._suggest import require_known

    require_known(
        "variant id",
        [v for group in groups for v in group],
        dict.fromkeys(v for record in records for v in record.variant_ids),
        location=location,
    )


class UnknownLevelWarning(UserWarning):
    """A factor level of a slice's filter that no archived run has, beside one that exists:
    the slice has none of its runs (the command line says it again with the closest level
    as an option to paste). When no given level of a factor exists, the slice refuses it."""


def check_factor_filter(
    factors: tuple[tuple[str, tuple[str, ...]], ...],
    records: list[RunRecord],
    *,
    levels: bool | Literal["warn"] = True,
    location: str = "factors",
    suggest: Callable[[str, Sequence[str]], str] | None = None,
) -> None:
    """Refuse a factor name (and, with ``levels``, a level) that no archived run has,
    saying which factors and levels exist and which is closest; ``levels="warn"`` warns
    about such a level instead when another level given for the factor exists (the slice
    is then empty for it), and refuses it when none does (the slice would be empty).
    ``location`` names the argument in the message (the command line's ``--factor``);
    ``suggest(name, levels)`` writes the closest name or level as the caller's user would
    type it (default: ``'name'`` or ``'level'``), so a name holding ``=`` or a level
    holding a comma or edge spaces is suggested in a form the command line can read.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> records = example_archive().records()
    >>> check_factor_filter((("retrieval", ("dence", "bm2")),), records, levels="warn")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: factors: no archived run has retrieval='dence' or \
'bm2' (did you mean 'dense' for 'dence', 'bm25' for 'bm2'? the levels of 'retrieval' are \
'bm25', 'dense')
    """
    if not factors or not records:
        return
    from .._suggest import close_match

    found: dict[str, set[str]] = {}
    for record in records:
        for variant in record.variants:
            for name, value in variant["factors"].items():
                found.setdefault(name, set()).add(str(value))
    for name, values in factors:
        if name not in found:
            match = close_match(name, found)
            known = ", ".join(repr(n) for n in sorted(found)) or "none"
            shown_name = repr(match) if suggest is None or match is None else suggest(match, values)
            raise InputError(
                f"no archived run has a factor {name!r}",
                location=location,
                hint=(f"did you mean {shown_name}? " if match else "")
                + f"the archive's factors are {known}",
            )
        missing = list(dict.fromkeys(v for v in values if v not in found[name])) if levels else []
        if missing:
            shown = ", ".join(repr(v) for v in sorted(found[name])[:20])
            message = f"no archived run has {name}=" + " or ".join(repr(v) for v in missing[:5])
            message += f" … ({len(missing)} in all)" if len(missing) > 5 else ""
            pairs = [(level, close_match(level, found[name])) for level in missing[:5]]
            guesses = [
                (repr(match) if suggest is None else suggest(name, [match]))
                + (f" for {level!r}" if len(missing) > 1 else "")
                for level, match in pairs
                if match is not None
            ]
            hint = (f"did you mean {', '.join(guesses)}? " if guesses else "") + (
                f"the levels of {name!r} are {shown}"
            )
            # Every level given for the factor unknown: the slice would be empty, which is
            # no answer to a typo (the CLI refuses it too).
            if levels != "warn" or len(missing) == len(set(values)):
                raise InputError(message, location=location, hint=hint)
            warnings.warn(
                f"{message}: the slice is empty for it ({hint})", UnknownLevelWarning, stacklevel=4
            )
