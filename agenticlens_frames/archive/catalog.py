"""The archive's catalog: one record per run (``_run.json``), and records as a frame.

Both the store (which writes records) and the queries (which filter on them) read this
module; neither needs the other to know what a run holds.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from .._deprecate import class_keyword_hints
from ..errors import InputError
from ..formats._io import (
    Invalid,
    Source,
    describe,
    to_int,
    to_list,
    to_mapping,
    to_str,
    to_str_list,
    to_str_map,
)

__all__ = ["Catalog", "RunRecord", "evaluators_text", "iso_time", "parse_time", "records_frame"]

#: What every run record says it is, and in which version of the layout.
FORMAT_NAME = "agenticlens-frames-archive"
FORMAT_VERSION = 1
#: A run's catalog record, and its manifest + suite (to rebuild the run).
RUN_FILE = "_run.json"
#: The key of a run record's SHA-256 of its own content (:func:`record_digest`).
RECORD_DIGEST = "record_sha256"
SPEC_FILE = "_spec.json"


def parse_time(value: str | date | datetime | pd.Timestamp | None, *, name: str) -> datetime | None:
    """A timezone-aware UTC datetime from an ISO 8601 string, date or datetime (naive =
    UTC); anything else — a number, "05/11/2026", "Oct" — is refused rather than guessed.

    Examples
    --------
    >>> parse_time("2026-10-01", name="since").isoformat()
    '2026-10-01T00:00:00+00:00'
    >>> parse_time("2026-10-01T12:30:00+02:00", name="since").isoformat()
    '2026-10-01T10:30:00+00:00'
    """
    if value is None:
        return None
    hint = "use ISO 8601, e.g. 2026-10-01 or 2026-10-01T12:00:00Z"
    if not isinstance(value, str | date | datetime):
        # pandas would read 1790000000 as nanoseconds after 1970: refused, not guessed.
        raise InputError(
            f"cannot read {value!r} ({type(value).__name__}) as a date or time",
            location=name,
            hint=hint + ", or a date/datetime",
        )
    try:
        # ISO 8601 only: pandas would read "05/11/2026" as May 11 and "Oct" as year 1.
        stamp = pd.Timestamp(datetime.fromisoformat(value) if isinstance(value, str) else value)
    except (ValueError, TypeError) as exc:
        raise InputError(
            f"cannot read {value!r} as a date or time", location=name, hint=hint
        ) from exc
    if pd.isna(stamp):
        raise InputError(f"cannot read {value!r} as a date or time", location=name)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.to_pydatetime()


def iso_time(moment: datetime) -> str:
    """``moment`` as ISO 8601 UTC with microseconds and a ``Z``, as records store it."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def check_format(data: Any, file: Path, what: str) -> None:
    """Refuse a parsed archive file (``what``: "run record", "marker") that is not this
    toolkit's or has a newer ``format_version`` than this version reads.

    Examples
    --------
    >>> check_format({"format": FORMAT_NAME, "format_version": 1}, Path("_archive.json"), "marker")
    >>> check_format({"format": FORMAT_NAME, "format_version": 9}, Path("_run.json"), "run record")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: _run.json: format_version 9 is not one this version...
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise InputError(
            f"not an archive {what} (expected format {FORMAT_NAME!r})",
            file=file,
            hint="give a folder `archive add` created, or restore the file from a backup",
        )
    version = data.get("format_version", FORMAT_VERSION)
    if type(version) is not int or version > FORMAT_VERSION:
        raise InputError(
            f"format_version {version!r} is not one this version reads (up to {FORMAT_VERSION})",
            file=file,
            hint="read and add to the archive with the agenticlens-frames version that wrote it",
        )


def record_digest(data: Mapping[str, Any]) -> str:
    """SHA-256 of a run record's content, its own digest (:data:`RECORD_DIGEST`) left out:
    of the JSON text with sorted keys and no spaces, so it is the same whether computed
    from the record as written or as read back (key order and indentation do not count).

    Examples
    --------
    >>> record_digest({"a": 1, "b": [2]}) == record_digest({"b": [2], "a": 1, RECORD_DIGEST: "x"})
    True
    """
    content = {key: value for key, value in data.items() if key != RECORD_DIGEST}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def remove_command(archive: Path, folder: Path) -> str:
    """The command line that removes the run in ``folder`` of ``archive``, ready to paste.

    Examples
    --------
    >>> remove_command(Path("runs"), Path("runs/experiment=x/run=0123abcd"))
    'agenticlens-frames archive remove runs 0123abcd'
    """
    run_id = folder.name[len("run=") :]
    return f"agenticlens-frames archive remove {shlex.quote(str(archive))} {run_id}"


@class_keyword_hints(skip=("file",))
@dataclass(frozen=True)
class RunRecord:
    """The catalog entry of one archived run (``_run.json``).

    Attributes
    ----------
    run_id
        Content hash (:func:`run_content_id`).
    experiment_id
        ``<name>@<version>`` of the manifest.
    run_at
        When the run happened (given to :meth:`Archive.add`; defaults to ``added_at``).
    added_at
        When it was added to the archive.
    variants
        One dict per variant, manifest order: ``variant_id``, ``variant_name``,
        ``position``, ``is_baseline``, ``factors``.
    factor_names
        Factor names in first-seen manifest order.
    tags
        Sorted distinct case tags of the suite.
    counts
        Rows per table.
    evaluators
        Name → version of every registered evaluator the run used; ``None`` for runs
        archived before records kept them.
    stopped_early
        For a run with an early-stopping block: whether its rule stopped it early (its
        fixed-sample verdicts are then descriptive); ``None`` without one.
    as_read
        The record's JSON exactly as ``_run.json`` held it when read (every field
        checked, and the whole against its :data:`RECORD_DIGEST` when it has one);
        ``None`` for a record built in memory (or changed: ``dataclasses.replace`` of a
        field must reset it). ``archive ls --json`` prints it: :meth:`to_json` of a
        record archived before the checksums (2 December 2026) or its digest (6
        December) adds a ``sha256`` map and a digest the file never had.

    Examples
    --------
    >>> from agenticlens_frames.testing import example_archive
    >>> record = example_archive(run_at="2026-11-04").records()[0]
    >>> record.experiment_id, record.run_at.date().isoformat(), record.n_attempts
    ('support-agent-upgrade@1', '2026-11-04', 350)
    >>> record.variant_ids[:2], record.file("checks").name
    (('baseline', 'model-large'), 'checks.parquet')
    >>> record  # doctest: +ELLIPSIS
    RunRecord('...', experiment='support-agent-upgrade@1', run_at=2026-11-04T00:00:00Z,
              variants=5, cases=14, trials=5, attempts=350)
    >>> RunRecord.from_json(record.to_json(), record.path) == record  # the _run.json round trip
    True
    """

    run_id: str
    experiment_id: str
    experiment_name: str
    experiment_version: str
    suite_name: str
    suite_version: str
    run_at: datetime
    added_at: datetime
    baseline_variant_id: str
    trial_count: int
    pass_k: tuple[int, ...]
    variants: tuple[dict[str, Any], ...]
    factor_names: tuple[str, ...]
    tags: tuple[str, ...]
    counts: dict[str, int]
    path: Path = field(compare=False)
    #: SHA-256 of each table's parquet file, checked when a slice reads it (older
    #: archives have none).
    sha256: dict[str, str] = field(default_factory=dict, compare=False)
    #: Name → version of every registered evaluator the run used (``{}``: none); ``None``
    #: for runs archived before the record kept them (5 December 2026).
    evaluators: dict[str, str | None] | None = None
    #: The run carries an early-stopping block (kept in its ``_spec.json``): True when its
    #: rule stopped it early (its fixed-sample verdicts are then descriptive), False when
    #: it ran to the end under the rule; ``None`` for a run without one (or archived
    #: before the block was kept, 6 December 2026). The archive's verdict surfaces read it
    #: here, without the specification.
    stopped_early: bool | None = None
    as_read: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def n_attempts(self) -> int:
        """Rows of the run's ``attempts`` table."""
        return self.counts["attempts"]

    def __repr__(self) -> str:
        # The dataclass repr printed every field: each variant's dict with its factors and
        # the file checksums, 2,500 characters for a run of five variants and more with
        # every variant. One line with what the run holds; the fields are attributes.
        stopped = "" if self.stopped_early is None else f", stopped_early={self.stopped_early}"
        return (
            f"RunRecord({self.run_id!r}, experiment={self.experiment_id!r}, "
            f"run_at={self.run_at:%Y-%m-%dT%H:%M:%SZ}, variants={len(self.variants)}, "
            f"cases={self.counts.get('cases')}, trials={self.trial_count}, "
            f"attempts={self.counts.get('attempts')}{stopped})"
        )

    @property
    def variant_ids(self) -> tuple[str, ...]:
        """The variants' ids, manifest order."""
        return tuple(v["variant_id"] for v in self.variants)

    def to_json(self) -> dict[str, Any]:
        """The record as ``_run.json`` holds it (:meth:`from_json` reads it back), with the
        digest of its content (:func:`record_digest`)."""
        data = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "run_id": self.run_id,
            "experiment_id": self.experiment_id,
            "experiment_name": self.experiment_name,
            "experiment_version": self.experiment_version,
            "suite_name": self.suite_name,
            "suite_version": self.suite_version,
            "run_at": iso_time(self.run_at),
            "added_at": iso_time(self.added_at),
            "baseline_variant_id": self.baseline_variant_id,
            "trial_count": self.trial_count,
            "pass_k": list(self.pass_k),
            "variants": list(self.variants),
            "factor_names": list(self.factor_names),
            "tags": list(self.tags),
            "counts": dict(self.counts),
            "sha256": dict(self.sha256),
            **({} if self.evaluators is None else {"evaluators": dict(self.evaluators)}),
            # Only for a run with a stopping block: the records of the others stay as
            # they were written (their digests too).
            **({} if self.stopped_early is None else {"stopped_early": self.stopped_early}),
        }
        return {**data, RECORD_DIGEST: record_digest(data)}

    @classmethod
    def from_json(cls, data: Any, path: Path) -> RunRecord:
        """The record in ``path``'s ``_run.json`` (already parsed), every field checked.

        A record edited or damaged by hand is refused naming the field, rather than
        failing later in whichever analysis first touches it.
        """
        file = path / RUN_FILE
        check_format(data, file, "run record")
        source = Source(file)
        try:
            text = {key: source.take(data, key, (), to_str) for key in _TEXT_FIELDS}
            counts = source.take(data, "counts", (), _to_int_map)
            for table in _COUNTED:
                if table not in counts:
                    source.fail(("counts",), f"missing the {table!r} count")
            variants = source.take(data, "variants", (), _to_variants)
            factor_names = source.take(data, "factor_names", (), to_str_list)
            _check_variants(source, variants, text["baseline_variant_id"], factor_names)
            record = cls(
                **text,
                run_at=source.take(data, "run_at", (), _to_time),
                added_at=source.take(data, "added_at", (), _to_time),
                trial_count=source.take(data, "trial_count", (), partial(to_int, minimum=1)),
                pass_k=source.take(data, "pass_k", (), _to_int_tuple),
                variants=variants,
                factor_names=factor_names,
                tags=source.take(data, "tags", (), to_str_list),
                counts=counts,
                path=path,
                # Older archives have no checksums.
                sha256=source.take(data, "sha256", (), _to_str_map_or_null, default={}),
                evaluators=source.take(data, "evaluators", (), _to_versions, default=None),
                stopped_early=source.take(data, "stopped_early", (), _to_strict_bool, default=None),
                as_read=data,
            )
            # Records archived before 6 December 2026 carry no digest.
            digest = source.take(data, RECORD_DIGEST, (), to_str, default=None)
        except InputError as exc:
            # The record is written by `add`, never by hand, and the checksums in it vouch
            # for the run's files: the way out is to restore it, not to retype a value
            # (the converters' hints, "write it as a JSON string", would say that).
            raise InputError(exc.message, file=file, location=exc.location, hint=_DAMAGED) from None
        if digest is not None and digest != record_digest(data):
            # Checked after the fields, whose errors name the place of a damaged value: an
            # edit that keeps every field valid and consistent (a count, a run time, a
            # variant's name) is found only here. Cheap: the record alone, never the tables.
            raise InputError(
                f"the record's content does not match its {RECORD_DIGEST}: it was edited "
                "after the run was archived",
                file=file,
                hint="restore it from a backup, or remove the run "
                f"(`{remove_command(path.parent.parent, path)}`, which needs no record) and "
                "add it again",
            )
        return record

    def file(self, table: str) -> Path:
        """Path of one of the run's parquet files."""
        return self.path / f"{table}.parquet"


#: What ran, as the record stores it and as the catalog frame's first columns.
_NAMES = (
    "run_id",
    "experiment_id",
    "experiment_name",
    "experiment_version",
    "suite_name",
    "suite_version",
)
_TEXT_FIELDS = (*_NAMES, "baseline_variant_id")
#: Row counts every reader of the catalog uses.
_COUNTED = ("attempts", "cases")
_DAMAGED = (
    "the run record was edited or damaged: restore it, or remove the run's folder and "
    "add the run again"
)


def _to_time(value: Any) -> datetime:
    try:
        moment = parse_time(to_str(value), name="")
    except InputError as exc:
        raise Invalid(exc.message, hint=exc.hint) from None
    assert moment is not None  # a string is never None
    return moment


def _to_int_tuple(value: Any) -> tuple[int, ...]:
    out = []
    for index, item in enumerate(to_list(value)):
        try:
            out.append(to_int(item, minimum=1))
        except Invalid as exc:
            raise exc.inside(index) from None
    return tuple(out)


def _to_int_map(value: Any) -> dict[str, int]:
    out = {}
    for key, item in to_mapping(value).items():
        try:
            out[key] = to_int(item, minimum=0)
        except Invalid as exc:
            raise exc.inside(key) from None
    return out


def _to_str_map_or_null(value: Any) -> dict[str, str]:
    return {} if value is None else to_str_map(value)


def _to_versions(value: Any) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for key, item in to_mapping(value).items():
        try:
            out[key] = None if item is None else to_str(item)
        except Invalid as exc:
            raise exc.inside(key) from None
    return out


def _to_variants(value: Any) -> tuple[dict[str, Any], ...]:
    out = []
    for index, item in enumerate(to_list(value)):
        try:
            variant = to_mapping(item)
            for key in ("variant_id", "variant_name"):
                _field(variant, key, to_str)
            _field(variant, "position", partial(to_int, minimum=0))
            _field(variant, "is_baseline", _to_strict_bool)
            _field(variant, "factors", to_str_map)
        except Invalid as exc:
            raise exc.inside(index) from None
        out.append(variant)
    return tuple(out)


def _check_variants(
    source: Source,
    variants: tuple[dict[str, Any], ...],
    baseline_variant_id: str,
    factor_names: list[str],
) -> None:
    """Refuse variants whose fields are each well typed but cannot belong together.

    ``add`` writes them from one manifest, so any of these is an edit by hand; read as it
    is, a position indexed the engines' arrays out of bounds and a moved baseline flag
    compared every candidate with another variant than the run's.
    """
    seen: set[str] = set()
    for index, variant in enumerate(variants):
        if variant["position"] != index:
            source.fail(
                ("variants", index, "position"),
                f"expected {index} (the variant's place in the list), got {variant['position']}",
            )
        if variant["variant_id"] in seen:
            source.fail(
                ("variants", index, "variant_id"),
                f"a second variant with the id {variant['variant_id']!r}",
            )
        seen.add(variant["variant_id"])
    if baseline_variant_id not in seen:
        source.fail(("baseline_variant_id",), f"no variant has the id {baseline_variant_id!r}")
    flagged = [v["variant_id"] for v in variants if v["is_baseline"]]
    if flagged != [baseline_variant_id]:
        source.fail(
            ("variants",),
            f"the baseline variant is {baseline_variant_id!r} but is_baseline marks "
            f"{flagged or 'none'}",
        )
    named = {name for v in variants for name in v["factors"]}
    if set(factor_names) != named or len(factor_names) != len(named):
        source.fail(
            ("factor_names",),
            f"expected the variants' factor names {sorted(named)}, got {factor_names}",
        )


def _field(mapping: dict[str, Any], key: str, convert: Callable[[Any], Any]) -> None:
    if key not in mapping:
        raise Invalid(f"missing required key {key!r}")
    try:
        convert(mapping[key])
    except Invalid as exc:
        raise exc.inside(key) from None


def _to_strict_bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise Invalid(f"expected true or false, got {describe(value)}")


class Catalog(Protocol):
    """What reads an archive's records: :class:`~agenticlens_frames.archive.store.Archive`."""

    def records(self) -> list[RunRecord]:
        """Every run's record, in archive order."""
        ...


def evaluators_text(evaluators: dict[str, str | None] | None) -> str | None:
    """A run's evaluator versions as one comparable text, ``None`` when not recorded.

    Examples
    --------
    >>> evaluators_text({"rubric": "3", "judge": "2.0"}), evaluators_text({"judge": None})
    ('judge 2.0, rubric 3', 'judge (no version)')
    """
    if evaluators is None:
        return None
    return ", ".join(f"{name} {evaluators[name] or '(no version)'}" for name in sorted(evaluators))


def records_frame(records: Sequence[RunRecord]) -> pd.DataFrame:
    """Catalog records as a tidy frame (one row per run)."""
    columns = [
        *_NAMES,
        "run_at",
        "added_at",
        "n_variants",
        "n_cases",
        "n_attempts",
        "trial_count",
        "factor_names",
        "tags",
        "evaluators",
        "stopped_early",
        "path",
    ]
    rows = [
        {
            **{name: getattr(r, name) for name in _NAMES},
            "run_at": pd.Timestamp(r.run_at),
            "added_at": pd.Timestamp(r.added_at),
            "n_variants": len(r.variants),
            "n_cases": r.counts["cases"],
            "n_attempts": r.counts["attempts"],
            "trial_count": r.trial_count,
            "factor_names": r.factor_names,
            "tags": r.tags,
            "evaluators": evaluators_text(r.evaluators),
            "stopped_early": r.stopped_early,
            "path": str(r.path),
        }
        for r in records
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("run_at", "added_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame
