"""The archive's aggregation engines: one entry each, read by the API, the CLI and the docs.

An engine turns an archive slice (or an attempts table) into
:class:`~agenticlens_frames.archive.sufficient.SufficientStats`. To add one, write its
function (``(source, layout, **options) -> SufficientStats``) and add one
:class:`EngineEntry` to :data:`ENGINE_ENTRIES`: ``sufficient_stats(engine=...)``, the
``--engine`` choices of ``agenticlens-frames archive`` and the engines table of
docs/archives.md (checked by the tests) all come from here. This module imports nothing
heavy, so the command line can list the choices without loading any engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from .._docs import markdown_table
from ..errors import InputError

__all__ = [
    "AUTO",
    "ENGINES",
    "ENGINE_ENTRIES",
    "EngineEntry",
    "check_engine_settings",
    "engine_function",
    "engines_table",
]

#: Picks ``duckdb`` when the slice would not fit in memory, else ``numpy``.
AUTO = "auto"


@dataclass(frozen=True)
class EngineEntry:
    """One engine: its name, where its function lives, and what the docs say of it."""

    name: str
    #: ``"module:function"``, relative to this package; imported on first use.
    target: str
    how: str
    when: str
    #: The optional extra of agenticlens-frames it needs, if any.
    extra: str | None = None
    #: The keyword settings only this engine reads (refused with any other engine).
    settings: tuple[str, ...] = ()


ENGINE_ENTRIES: tuple[EngineEntry, ...] = (
    EngineEntry(
        "numpy",
        ".engines:_numpy_engine",
        how="one run at a time: a run written by this toolkit is a complete (variant, trial, "
        "case) grid in sorted order, viewed as a 3-D array without copying, so every "
        "statistic is one contiguous sum along an axis; other inputs are scattered into "
        "that cube, or fall back to `np.bincount` over integer codes",
        when="default in memory",
    ),
    EngineEntry(
        "pandas",
        ".engines:_pandas_engine",
        how="idiomatic `groupby(observed=True)` on categoricals",
        when="a baseline",
    ),
    EngineEntry(
        "duckdb",
        "._duckdb:duckdb_engine",
        how="the runs' rollups where they have them and the slice has no tag filter "
        "(see *What is read when*); for the other runs, "
        "SQL `GROUP BY` over the parquet files, an explicit file list, never a glob: each "
        "run's file aggregated on its own (the run is a literal, case names come from its "
        "`cases` table, so no id string is read per row), one query per block of whole runs "
        "(about 5M attempts, fewer under a small `memory_limit`); or over an Arrow table in "
        "place; `memory_limit=`, `threads=`, `temp_directory=` (it spills to disk)",
        when="out of core; `auto` picks it when the slice would not fit in half the free memory",
        extra="duckdb",
        settings=("memory_limit", "threads", "temp_directory"),
    ),
    EngineEntry(
        "dask",
        ".engines:_dask_engine",
        how="the numpy kernel mapped over blocks of whole runs (`block_rows`, default 1M "
        "attempts) on a `dask.distributed` cluster (`client=`, default: the current one)",
        when="archives beyond one machine",
        extra="dask",
        settings=("client", "block_rows"),
    ),
)

#: Every name ``engine=`` accepts, ``auto`` first.
ENGINES: tuple[str, ...] = (AUTO, *(entry.name for entry in ENGINE_ENTRIES))


#: The engine ``auto`` may pick besides numpy: the settings of it are accepted with auto.
_AUTO_PICKS = "duckdb"


def check_engine_settings(engine: str, settings: dict[str, Any]) -> None:
    """Refuse a setting only another engine reads (:attr:`EngineEntry.settings`: DuckDB's
    ``memory_limit``, ``threads``, ``temp_directory``; Dask's ``client``, ``block_rows``):
    given with an engine that never opens DuckDB or Dask, a memory limit bounded nothing,
    without a word. ``auto`` takes DuckDB's (it hands them on when it picks DuckDB). ``None`` is
    "not given". The error's place is the argument's name (the command line names its
    option instead).

    Examples
    --------
    >>> check_engine_settings("duckdb", {"memory_limit": "2GB", "threads": 2})
    >>> check_engine_settings("numpy", {"memory_limit": None, "client": None})
    >>> check_engine_settings("numpy", {"threads": 2})
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: threads: applies to the duckdb engine, not numpy \
(use engine duckdb, or auto, which picks it when the slice would not fit in memory; or \
leave it out)
    """
    for name, value in settings.items():
        owner = next((e.name for e in ENGINE_ENTRIES if name in e.settings), None)
        if value is None or owner is None or engine == owner:
            continue
        if engine == AUTO and owner == _AUTO_PICKS:
            continue
        hint = f"use engine {owner}" + (
            ", or auto, which picks it when the slice would not fit in memory"
            if owner == _AUTO_PICKS
            else ""
        )
        raise InputError(
            f"applies to the {owner} engine, not {engine}",
            location=name,
            hint=f"{hint}; or leave it out",
        )


def engine_function(name: str) -> Callable[..., Any]:
    """The function of the engine called ``name`` (imported now).

    Examples
    --------
    >>> engine_function("numpy").__name__
    '_numpy_engine'
    """
    entry = next(e for e in ENGINE_ENTRIES if e.name == name)
    module, function = entry.target.split(":")
    return getattr(import_module(module, __package__), function)


def engines_table() -> str:
    """The engines table of docs/archives.md, in Markdown.

    Examples
    --------
    >>> engines_table().splitlines()[0]
    '| engine | how | when |'
    """
    return markdown_table(
        ["engine", "how", "when"], [[f"`{e.name}`", e.how, e.when] for e in ENGINE_ENTRIES]
    )
