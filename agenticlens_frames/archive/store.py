"""The on-disk archive: experiment runs as hive-partitioned parquet, published atomically.

Layout (one directory per run, partitioned by experiment)::

    <root>/_archive.json                                  format marker
    <root>/experiment=<experiment_id>/run=<run_id>/
        attempts.parquet  checks.parquet  trials.parquet  variants.parquet  cases.parquet
        _run.json                                         catalog record (small)
        _spec.json                                        manifest + suite (to rebuild runs)
    <root>/_staging/<uuid>/                               writers in progress (ignored)

A run is written into ``_staging/<uuid>`` and published with one ``os.rename`` onto its
final directory: readers see all of it or nothing, and a crashed writer leaves only a
staging folder that no reader looks at (:meth:`Archive.clean_staging` removes it). The
run id is a content hash, so the final directory name is decided by the data: two
processes adding the same run race for one rename (one wins, the other finds it there),
and two processes adding different runs never touch the same directory.

Why partition by experiment and not by (experiment, variant): a variant holds ~12k rows
in a typical experiment, and one file per variant makes full scans slower for no gain —
the catalog already knows which variants (and factor values) each run holds, so a variant
or factor filter skips whole files before any is opened. A run is one zstd row group in
(variant, trial, case) order (per-variant row groups were measured: 1.6× slower full
reads, no faster factor slices). Each file carries only its own run's dictionaries (case
ids of its suite), which avoids the "global dictionary copied into every partition" trap
measured in research/perf-limits.md.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._deprecate import class_keyword_hints, keyword_hints
from .._files import refuse_unexpanded
from ..errors import InputError, check_path
from ..frames import FACTOR_PREFIX, ExperimentRun, spec_to_json
from ._kernel import NEEDED_COLUMNS, rollup_tables, run_partial, with_listed_positions
from ._scan import ROLLUP_TABLES, file_sha256, read_parquet_file, verify_file
from .catalog import (
    FORMAT_NAME,
    FORMAT_VERSION,
    RUN_FILE,
    SPEC_FILE,
    RunRecord,
    check_format,
    parse_time,
    records_frame,
    remove_command,
)
from .query import ArchiveSlice, SliceFilter, factor_mapping

__all__ = [
    "ARCHIVE_TABLES",
    "AddResult",
    "Archive",
    "run_content_id",
]

#: The tables stored per run, in the order they are written.
ARCHIVE_TABLES = ("attempts", "checks", "trials", "variants", "cases")
MARKER_FILE = "_archive.json"
STAGING_DIR = "_staging"
_KEY = pa.dictionary(pa.int32(), pa.string())
_TIME = pa.timestamp("us", tz="UTC")
#: Row groups of at most this many rows: whole experiments at the recommended block size.
ROW_GROUP_ROWS = 1 << 20


#: Columns of continuous measurements: nearly every value is distinct, so a dictionary
#: does not pay (a 100k-row run's latencies filled the 1 MiB dictionary page, then were
#: read back through a 100k-entry gather). They are written BYTE_STREAM_SPLIT instead
#: (each byte of the doubles in its own stream, so zstd finds the repeated exponent
#: bytes): 9.1 -> 6.7 bytes a row on disk, and DuckDB sums them 4-5x faster.
SPLIT_COLUMNS: dict[str, tuple[str, ...]] = {
    "attempts": ("latency_ms", "cost_usd"),
    # The rollups' sums (a distinct double per row).
    "case_stats": ("score_sum", "score_m2", "latency_sum", "cost_sum"),
    "trial_stats": ("latency_ok_sum", "cost_sum", "check_value_sum"),
}


#: Compression per table (default zstd). The rollups are read whole on every analysis
#: and are small: LZ4 decodes a run's case rollup in 0.9 ms of CPU against zstd's 1.6 ms
#: (253 against 223 KiB for 10k rows).
COMPRESSION: dict[str, str] = {"case_stats": "lz4", "trial_stats": "lz4"}


def parquet_options(table: str, schema: pa.Schema) -> dict[str, Any]:
    """How an archive table is written (``pyarrow.parquet.write_table`` keywords).

    Every column is dictionary-encoded except the continuous float columns of
    :data:`SPLIT_COLUMNS`. Encodings are invisible to readers (the logical types are
    unchanged), so archives written with any earlier choice read the same.

    Examples
    --------
    >>> schema = pa.schema([("case_index", pa.int32()), ("latency_ms", pa.float64())])
    >>> parquet_options("attempts", schema)["column_encoding"]
    {'latency_ms': 'BYTE_STREAM_SPLIT'}
    """
    split = [
        name
        for name in SPLIT_COLUMNS.get(table, ())
        if name in schema.names and pa.types.is_floating(schema.field(name).type)
    ]
    options: dict[str, Any] = {
        "compression": COMPRESSION.get(table, "zstd"),
        "row_group_size": ROW_GROUP_ROWS,
        "write_statistics": True,
        "use_dictionary": [n for n in schema.names if n not in split] if split else True,
    }
    if split:
        options["column_encoding"] = dict.fromkeys(split, "BYTE_STREAM_SPLIT")
    return options


def _spec_without_paths(run: ExperimentRun) -> dict[str, Any]:
    """The run's specification minus where its files happened to live on disk."""
    spec = spec_to_json(run.manifest, run.suite)
    spec["manifest"].pop("path", None)
    spec["suite"].pop("path", None)
    for variant in spec["manifest"]["variants"]:
        variant.pop("resolved_target", None)
    return spec


@keyword_hints
def run_content_id(run: ExperimentRun) -> str:
    """The content hash that identifies a run in an archive (16 hex digits).

    SHA-256 over the manifest and suite (without file locations) and the values of the
    ``attempts``, ``checks`` and ``trials`` tables. The same run loaded twice, from any
    folder, gets the same id; any changed outcome, score, latency or setting changes it.
    What the run carries beside them (:data:`RUN_FACTS`: its early-stopping block, its
    failed trials' judge spend) is not hashed: the same attempts are one run with or
    without them (:meth:`Archive.add` fills them in on a re-add), and the ids of runs
    archived before they were kept stay what they were.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> run_content_id(run) == run_content_id(run), len(run_content_id(run))
    (True, 16)
    """
    digest = hashlib.sha256()
    digest.update(json.dumps(_spec_without_paths(run), sort_keys=True, default=str).encode())
    digest.update(json.dumps(run.evaluator_versions, sort_keys=True).encode())
    for name in ("attempts", "checks", "trials"):
        frame = run.tables[name]
        digest.update(f"{name}:{len(frame)}:{','.join(map(str, frame.columns))}".encode())
        if len(frame):
            hashed = pd.util.hash_pandas_object(frame, index=False, categorize=True)
            digest.update(np.ascontiguousarray(hashed.to_numpy()).tobytes())
    return digest.hexdigest()[:16]


#: What a run carries beside its tables and specification, kept in its ``_spec.json`` when
#: set and not part of its content id: its early-stopping block and its failed trials'
#: judge spend. Re-adding the run fills in those its archived copy lacks.
RUN_FACTS = ("stopping", "judge_spend_failed_trials")


@class_keyword_hints()
@dataclass(frozen=True)
class AddResult:
    """What :meth:`Archive.add` did: ``added`` is False when the run was already there.

    Examples
    --------
    >>> import tempfile
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> result = Archive(tempfile.mkdtemp()).add(run)
    >>> result.added, result.run_id == result.record.run_id, result.record.n_attempts
    (True, True, 350)
    """

    record: RunRecord
    added: bool
    #: For a run already archived: the run-level facts (:data:`RUN_FACTS`) this add wrote
    #: into its specification, which the archived copy lacked.
    completed: tuple[str, ...] = ()

    @property
    def run_id(self) -> str:
        """The run's content id (:func:`run_content_id`), as in ``record``."""
        return self.record.run_id


def _dict_array(codes: np.ndarray, values: Sequence[Any]) -> pa.DictionaryArray:
    """A dictionary column from codes (-1 = null) and distinct values."""
    codes = np.asarray(codes, dtype=np.int32)
    mask = codes < 0
    indices = pa.array(codes, type=pa.int32(), mask=mask if mask.any() else None)
    return pa.DictionaryArray.from_arrays(indices, pa.array(list(values), type=pa.string()))


def _constant_dict(value: str, n: int) -> pa.DictionaryArray:
    return _dict_array(np.zeros(n, dtype=np.int32), [value])


def _with_run_columns(table: pa.Table, run_id: str, experiment_id: str) -> pa.Table:
    """Prefix ``run_id`` (and ``experiment_id`` if missing) to a per-run table."""
    n = table.num_rows
    if "experiment_id" not in table.column_names:
        table = table.add_column(
            0, pa.field("experiment_id", _KEY), _constant_dict(experiment_id, n)
        )
    return table.add_column(0, pa.field("run_id", _KEY), _constant_dict(run_id, n))


def _archive_attempts(run: ExperimentRun, run_id: str, run_at: datetime) -> pa.Table:
    """``attempts`` plus the per-row columns queries need: run id and time, case tags and
    every factor (so one file answers a factor or tag filter without a join)."""
    table = _with_run_columns(run.to_arrow("attempts"), run_id, run.experiment_id)
    n = table.num_rows
    stamp = pa.scalar(run_at, type=_TIME)
    table = table.add_column(2, pa.field("run_at", _TIME), pa.array(np.full(n, stamp.value), _TIME))
    case_index = run.attempts["case_index"].to_numpy(np.int64)
    tag_codes, tag_values = pd.factorize(run.cases["tags"].astype(object).to_numpy())
    table = table.append_column(
        pa.field("tags", _KEY), _dict_array(tag_codes[case_index] if n else [], list(tag_values))
    )
    variant_pos = run.attempts["variant_id"].cat.codes.to_numpy(np.int64)
    for name in run.factor_names:
        per_variant = [v.factors.get(name) for v in run.manifest.variants]
        codes, values = pd.factorize(np.asarray(per_variant, dtype=object), use_na_sentinel=True)
        table = table.append_column(
            pa.field(FACTOR_PREFIX + name, _KEY),
            _dict_array(codes[variant_pos] if n else [], list(values)),
        )
    return table


def _check_shape(run: ExperimentRun) -> None:
    """Refuse a run with fewer variants than any run the project builds (a baseline and a
    candidate: :data:`~agenticlens_frames.from_frames.MIN_VARIANTS`) or with no case: one
    built straight from specs was archived, and then compared nothing or counted nothing."""
    from ..from_frames import MIN_VARIANTS

    n_variants = len(run.manifest.variants)
    if n_variants < MIN_VARIANTS:
        raise InputError(
            f"a comparison needs at least two variants; run {run.experiment_id!r} has {n_variants}",
            location="manifest.variants",
            hint="archive a run of a baseline and at least one candidate",
        )
    if not run.suite.cases:
        raise InputError(
            f"run {run.experiment_id!r} has no case",
            location="suite.cases",
            hint="archive a run of a suite with at least one case",
        )


def _check_run_facts(run: ExperimentRun) -> None:
    """Refuse a stopping block or failed trials' judge spend that no surface could render
    (one set by hand in Python), before it is written and read back as damaged."""
    from .._stopping_block import check_block, check_spend, expected_at

    for key, check in (("stopping", check_block), ("judge_spend_failed_trials", check_spend)):
        value = getattr(run, key)
        where = None if value is None else check(value)
        if where is not None:
            raise InputError(
                f"run {run.experiment_id!r} carries a {key} record the archive could not give "
                f"back: {expected_at(key, value, where)}",
                location=[key, *where],
                hint="archive the run as the runner gave it (read_parquet of its tables), or "
                f"set run.{key} = None",
            )


def _check_tags(run: ExperimentRun) -> None:
    """Refuse a case tag holding a comma: the archive keeps a case's tags comma-joined
    on every attempt, so ``"refund,billing"`` would read back as two tags, and a tag
    filter would keep the wrong cases."""
    for i, case in enumerate(run.suite.cases):
        for j, tag in enumerate(case.tags):
            if "," in tag:
                raise InputError(
                    f"case {case.id!r} has the tag {tag!r}, with a comma: the archive joins "
                    "a case's tags with commas, so it would read back as several tags",
                    file=run.suite.path,
                    location=("cases", i, "tags", j),
                    hint="write it as separate tags, or join its words with '-' or '_'",
                )


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")


def _replace_json(path: Path, data: Any, *, durable: bool) -> None:
    """Replace a published run's JSON file whole (a reader sees the old or the new one)."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        _write_json(temporary, data)
        if durable:
            _fsync(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    if durable:
        _fsync(path.parent)


@class_keyword_hints()
class Archive:
    """A folder of experiment runs that grows by atomic appends.

    Parameters
    ----------
    path
        The archive folder (created by the first :meth:`add`).
    durable
        fsync every file and directory before and after publishing, so a power loss
        cannot leave a published run with missing bytes. Turn off only for throw-away
        archives (benchmarks).

    Examples
    --------
    >>> import tempfile
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> archive = Archive(tempfile.mkdtemp())
    >>> first, again = archive.add(run), archive.add(run)
    >>> first.added, again.added, first.run_id == again.run_id
    (True, False, True)
    >>> len(archive.runs())
    1
    >>> archive  # doctest: +ELLIPSIS
    Archive('...'; runs=1, experiments=1, attempts=350)
    >>> Archive("no/such/folder")
    Archive('no/such/folder'; no runs: no archive here)
    """

    def __init__(self, path: str | Path, *, durable: bool = True) -> None:
        self.path = check_path(path, "an archive folder")
        # Python does not expand '~': Archive("~/runs").add(run) made a folder named '~'.
        refuse_unexpanded(self.path)
        self.durable = durable

    def __repr__(self) -> str:
        # It named the folder only, not what the archive holds. The runs, experiments and
        # attempts, from the catalog (the records: no table is read); a folder that is no
        # archive (yet) says why instead of raising, and the records' warnings (a run
        # folder without its record) are counted here, said in full by records().
        where = repr(str(self.path))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                records = self.records()
        except InputError as exc:
            return f"Archive({where}; no runs: {exc.message})"
        except OSError as exc:
            return f"Archive({where}; unreadable: {exc.strerror or exc})"
        experiments = len({r.experiment_id for r in records})
        attempts = sum(r.n_attempts for r in records)
        said = f"; {len(caught)} warning(s), see records()" if caught else ""
        return (
            f"Archive({where}; runs={len(records)}, experiments={experiments}, "
            f"attempts={attempts}{said})"
        )

    # ------------------------------------------------------------------ writing

    def add(
        self,
        run: ExperimentRun,
        *,
        run_at: str | date | datetime | None = None,
        exist_ok: bool = True,
    ) -> AddResult:
        """Append one experiment run; idempotent for a run that is already archived.

        Parameters
        ----------
        run
            The run's tidy tables (from :func:`~agenticlens_frames.load_experiment`,
            :func:`~agenticlens_frames.read_parquet` or the runner).
        run_at
            When the run happened, for time-range queries (default: now).
        exist_ok
            Re-adding a run with the same content id returns the stored record with
            ``added=False`` (the default). With ``exist_ok=False`` it raises
            :class:`~agenticlens_frames.errors.InputError` instead.

        Returns
        -------
        AddResult
            The catalog record and whether this call wrote it.

        Examples
        --------
        >>> import tempfile
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> archive = Archive(tempfile.mkdtemp())
        >>> added = archive.add(run, run_at="2026-11-04")
        >>> added.added, added.record.run_at.isoformat()
        (True, '2026-11-04T00:00:00+00:00')
        >>> archive.add(run, exist_ok=False)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        agenticlens_frames.errors.InputError: ...: run ... is already in the archive (...)
        """
        if not isinstance(run, ExperimentRun):
            raise InputError(
                f"Archive.add needs an ExperimentRun, got {type(run).__name__}",
                hint="load one with load_experiment(manifest, suite) or read_parquet(folder)",
            )
        if self.path.exists() and not self.path.is_dir():
            raise InputError(
                "is a file, not an archive folder",
                file=self.path,
                hint="give a new or empty folder for the archive",
            )
        if (self.path / MARKER_FILE).exists():
            _check_marker(self.path / MARKER_FILE)  # before the run is looked for in it
        _check_shape(run)
        _check_tags(run)
        _check_run_facts(run)
        # Read before looking for the run: a bad --run-at is refused whether or not the
        # run is archived already (a CI job re-adding a run would not find it out).
        given_at = parse_time(run_at, name="run_at")
        run_id = run_content_id(run)
        target = self._run_dir(run.experiment_id, run_id)
        if (target / RUN_FILE).exists():
            return self._existing(target, exist_ok, run)
        added_at = datetime.now(UTC)
        when = given_at or added_at
        self._ensure_root()
        staging = self.path / STAGING_DIR / uuid.uuid4().hex
        staging.mkdir(parents=True)
        try:
            record = self._write_run(run, run_id, when, added_at, staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(staging, target)
            except OSError as exc:
                if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    # Someone else published the same content first: theirs is complete.
                    if (target / RUN_FILE).exists():
                        shutil.rmtree(staging, ignore_errors=True)
                        return self._existing(target, exist_ok, run)
                    raise InputError(
                        "this run's folder is there without its record (_run.json), so it "
                        "is not read; its files are not replaced",
                        file=target,
                        hint="restore its _run.json, or remove the folder and add again",
                    ) from None
                raise
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if self.durable:
            _fsync(target.parent)
        return AddResult(record=_replace_path(record, target), added=True)

    def _existing(self, target: Path, exist_ok: bool, run: ExperimentRun) -> AddResult:
        record = self._read_record(target)
        if not exist_ok:
            raise InputError(
                f"run {record.run_id} of {record.experiment_id} is already in the archive",
                file=target,
                hint="it holds this exact content already; adding it again changes nothing",
            )
        completed = self._complete_run_facts(record, run)
        if completed:
            record = self._read_record(target)
        return AddResult(record=record, added=False, completed=completed)

    def _complete_run_facts(self, record: RunRecord, run: ExperimentRun) -> tuple[str, ...]:
        """Write into an archived run's specification the run-level facts (:data:`RUN_FACTS`)
        that ``run``, the same content added again, carries and the archived copy lacks;
        the names written.

        They are not part of the content id (the tables' and specification's content: the
        same attempts must not be archived twice, once per fact), so a run first added
        without them (from a version that did not keep them, or before its journal's
        facts were read) gets them on the next add. A fact archived with another value
        is refused: one of the two copies is not this run's.
        """
        path = record.path / SPEC_FILE
        missing: dict[str, Any] = {}
        stored: dict[str, Any] | None = None
        for key in RUN_FACTS:
            value = getattr(run, key)
            if value is None:
                continue
            if stored is None:
                try:
                    content = path.read_bytes()
                    expected = record.sha256.get(SPEC_FILE)
                    if expected is not None:
                        verify_file(path, expected, record.run_id, content=content)
                    stored = json.loads(content.decode("utf-8"))
                except InputError:
                    # Not the specification archived: refused as every read of the run
                    # refuses it (an InputError is a ValueError, which said "unreadable").
                    raise
                except (OSError, ValueError) as exc:
                    raise InputError(
                        f"unreadable run specification ({exc})",
                        file=path,
                        hint="restore the file from a backup, or remove the run "
                        f"(`{self._remove_command(record.path)}`) and add it again",
                    ) from None
            # As written (JSON text): a tuple in the run is a list in the file.
            given = json.loads(json.dumps(value, default=str))
            if stored.get(key) is None:
                missing[key] = given
            elif stored[key] != given:
                raise InputError(
                    f"run {record.run_id} of {record.experiment_id} is archived with another "
                    f"{key} than the run added again (same tables, different record)",
                    file=path,
                    location=key,
                    hint="check which copy is the run's; to replace the archived one, remove "
                    f"the run (`{self._remove_command(record.path)}`) and add it again",
                )
        if not missing:
            return ()
        assert stored is not None
        # The specification first, then the record that checksums it, each replaced whole:
        # a reader between the two reads the record again (query._read_spec).
        _replace_json(path, {**stored, **missing}, durable=self.durable)
        updated = replace(
            record,
            sha256={**record.sha256, SPEC_FILE: file_sha256(path)},
            stopped_early=(
                bool(missing["stopping"]["stopped_early"])
                if "stopping" in missing
                else record.stopped_early
            ),
            as_read=None,  # the file read is replaced: to_json() is what it holds
        )
        _replace_json(record.path / RUN_FILE, updated.to_json(), durable=self.durable)
        return tuple(missing)

    def _write_run(
        self, run: ExperimentRun, run_id: str, run_at: datetime, added_at: datetime, folder: Path
    ) -> RunRecord:
        attempts = _archive_attempts(run, run_id, run_at)
        tables = {
            "attempts": attempts,
            **{
                name: _with_run_columns(run.to_arrow(name), run_id, run.experiment_id)
                for name in ARCHIVE_TABLES[1:]
            },
            # The run's sufficient statistics, so that analyses which need only them
            # never read its attempts again (docs/archives.md, "What is read when").
            # Each trial's execution position as the trials table defines it.
            **rollup_tables(
                with_listed_positions(
                    run_partial(
                        attempts.select(list(NEEDED_COLUMNS)), run_id, run.manifest.variant_ids
                    ),
                    run.to_arrow("trials"),
                    run.manifest.variant_ids,
                )
            ),
        }
        for name, table in tables.items():
            path = folder / f"{name}.parquet"
            pq.write_table(table, path, **parquet_options(name, table.schema))
            if self.durable:
                _fsync(path)
        spec = {**spec_to_json(run.manifest, run.suite), "evaluators": run.evaluator_versions}
        if run.judge_spend_failed_trials is not None:
            # What the judges of its failed trials cost: not in the tables (a failed trial
            # has no scores), so kept here, as to_parquet keeps it, for a rebuilt run's
            # judge cost lines to say it as the run's did. (Not part of the content id:
            # written only when set, so runs without it are stored as they were.)
            spec["judge_spend_failed_trials"] = run.judge_spend_failed_trials
        if run.stopping is not None:
            # Its early-stopping block (when and why the rule stopped it, and the settings
            # it decided with), as to_parquet keeps it: a rebuilt run's analysis leads with
            # the stopping decision, reads its fixed-sample verdicts as descriptive and
            # declares the rule's correction, alpha and cluster. (Written only when set.)
            spec["stopping"] = run.stopping
        _write_json(folder / SPEC_FILE, spec)
        m, s = run.manifest, run.suite
        tags = sorted({tag for case in s.cases for tag in case.tags})
        record = RunRecord(
            run_id=run_id,
            experiment_id=run.experiment_id,
            experiment_name=m.name,
            experiment_version=m.version,
            suite_name=s.name,
            suite_version=s.version,
            run_at=run_at,
            added_at=added_at,
            baseline_variant_id=m.baseline_variant_id,
            trial_count=m.trial_count,
            pass_k=m.effective_pass_k,
            variants=tuple(
                {
                    "variant_id": v.id,
                    "variant_name": v.name,
                    "position": i,
                    "is_baseline": v.id == m.baseline_variant_id,
                    "factors": dict(v.factors),
                }
                for i, v in enumerate(m.variants)
            ),
            factor_names=tuple(run.factor_names),
            tags=tuple(tags),
            counts={name: table.num_rows for name, table in tables.items()},
            evaluators=dict(run.evaluator_versions),
            stopped_early=None if run.stopping is None else bool(run.stopping["stopped_early"]),
            path=folder,
            # The specification is checksummed too: an edit that keeps it consistent
            # with the tables (a case's expected text, a check's threshold) would
            # otherwise be read back silently by to_runs().
            sha256={
                **{name: file_sha256(folder / f"{name}.parquet") for name in tables},
                SPEC_FILE: file_sha256(folder / SPEC_FILE),
            },
        )
        # The record goes last: a run directory without it is never read.
        _write_json(folder / RUN_FILE, record.to_json())
        if self.durable:
            for name in (SPEC_FILE, RUN_FILE):
                _fsync(folder / name)
            _fsync(folder)
        return record

    def _ensure_root(self) -> None:
        marker = self.path / MARKER_FILE
        if marker.exists():
            _check_marker(marker)
            return
        # Refuse to sprinkle runs into an unrelated, non-empty folder. What a concurrent
        # first writer may have created already (marker, staging, runs) is not foreign.
        ours = ("experiment=", STAGING_DIR, MARKER_FILE, f".{MARKER_FILE}")
        entries = list(self.path.iterdir()) if self.path.exists() else []
        if any(not p.name.startswith(ours) for p in entries):
            raise InputError(
                "folder exists, is not empty and is not an archive",
                file=self.path,
                hint="pick a new or empty folder for the archive",
            )
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / f".{MARKER_FILE}.{uuid.uuid4().hex}"
        _write_json(tmp, {"format": FORMAT_NAME, "format_version": FORMAT_VERSION})
        os.replace(tmp, marker)

    def remove(self, run_id: str) -> RunRecord | None:
        """Delete one run (atomically hidden by a rename, then removed).

        The run is found by its folder's name, so a run whose record (``_run.json``) is
        damaged or missing — which every read of the archive refuses or leaves out — can be
        removed too; nothing else is read.

        Returns
        -------
        RunRecord or None
            The removed run's record; None when it could not be read.

        Raises
        ------
        InputError
            If no run has that id (or the prefix is ambiguous).

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive()
        >>> run_id = archive.records()[0].run_id
        >>> archive.remove(run_id[:6]).run_id == run_id  # a unique prefix is enough
        True
        >>> len(archive.runs())
        0
        """
        self.check()
        folders = [f for f in self._run_folders() if f.name[len("run=") :].startswith(run_id)]
        if len(folders) != 1 or not run_id:
            problem = "no run" if not folders else f"{len(folders)} runs"
            raise InputError(
                f"{problem} with id {run_id!r} in the archive",
                file=self.path,
                hint="list run ids with `agenticlens-frames archive ls`",
            )
        folder = folders[0]
        try:
            record: RunRecord | None = self._read_record(folder)
        except InputError:
            record = None  # a damaged record: the folder goes all the same
        trash = self.path / STAGING_DIR / f"removed-{uuid.uuid4().hex}"
        trash.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, trash)
        shutil.rmtree(trash, ignore_errors=True)
        return record

    def _run_folders(self) -> list[Path]:
        """Every ``experiment=…/run=…`` folder, published or not."""
        out = []
        with os.scandir(self.path) as experiments:
            for exp in experiments:
                if exp.is_dir() and exp.name.startswith("experiment="):
                    with os.scandir(exp.path) as runs:
                        out += [
                            Path(e.path) for e in runs if e.is_dir() and e.name.startswith("run=")
                        ]
        return out

    def add_rollups(self) -> list[RunRecord]:
        """Write the rollups of every run archived before they existed, so analyses read
        them instead of its attempts (docs/archives.md, "What is read when").

        Each run's statistics come from its archived attempts (checksum verified) through
        the same kernel ``add`` uses, so they are the numbers ``add`` would have stored.
        The files are written under temporary names and renamed into the run's folder,
        then the run's record is replaced in one rename: a reader sees the run with or
        without rollups, never half of them. Runs that have them are left alone, so a
        second call, or two processes at once, write nothing more.

        Returns
        -------
        list of RunRecord
            The runs that got rollups, as now recorded.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> example_archive().add_rollups()  # archived with rollups already
        []
        """
        done = []
        for record in self.records():
            if all(name in record.sha256 for name in ROLLUP_TABLES):
                continue
            attempts = record.path / "attempts.parquet"
            expected = record.sha256.get("attempts")
            if expected is not None:
                verify_file(attempts, expected, record.run_id)
            table = read_parquet_file(attempts, list(NEEDED_COLUMNS))
            partial = run_partial(table, record.run_id, record.variant_ids)
            trials = record.path / "trials.parquet"
            if record.sha256.get("trials") is not None:
                verify_file(trials, record.sha256["trials"], record.run_id)
            partial = with_listed_positions(partial, read_parquet_file(trials), record.variant_ids)
            tables = rollup_tables(partial)
            for name, rollup in tables.items():
                tmp = record.path / f".{name}.{uuid.uuid4().hex}.parquet"
                pq.write_table(rollup, tmp, **parquet_options(name, rollup.schema))
                if self.durable:
                    _fsync(tmp)
                os.replace(tmp, record.path / f"{name}.parquet")
            updated = replace(
                record,
                counts={**record.counts, **{n: t.num_rows for n, t in tables.items()}},
                sha256={
                    **record.sha256,
                    **{n: file_sha256(record.path / f"{n}.parquet") for n in tables},
                },
                as_read=None,  # the file read is replaced below: to_json() is what it holds
            )
            tmp = record.path / f".{RUN_FILE}.{uuid.uuid4().hex}"
            _write_json(tmp, updated.to_json())
            if self.durable:
                _fsync(tmp)
            os.replace(tmp, record.path / RUN_FILE)
            if self.durable:
                _fsync(record.path)
            done.append(updated)
        return done

    def clean_staging(self, older_than: float = 3600.0) -> list[Path]:
        """Remove staging folders left by writers that crashed ``older_than`` seconds ago.

        Live writers use staging folders too, so keep the default unless no writer runs.

        Returns
        -------
        list of pathlib.Path
            The staging folders removed.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> example_archive().clean_staging()  # no writer crashed
        []
        """
        removed = self.stale_staging(older_than)
        for entry in removed:
            shutil.rmtree(entry, ignore_errors=True)
        return removed

    def stale_staging(self, older_than: float = 3600.0) -> list[Path]:
        """Staging folders unchanged for ``older_than`` seconds, without removing them.

        They were left by writers that stopped (killed, out of disk, power lost) and no
        read ever looks at them; :meth:`clean_staging` removes them.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> example_archive().stale_staging()
        []
        """
        staging = self.path / STAGING_DIR
        if not staging.exists():
            return []
        cutoff = time.time() - older_than
        return [entry for entry in staging.iterdir() if entry.stat().st_mtime <= cutoff]

    # ------------------------------------------------------------------ reading

    def _run_dir(self, experiment_id: str, run_id: str) -> Path:
        # Percent-encoding keeps any experiment name a single, hive-readable path segment.
        return self.path / experiment_dir_name(experiment_id) / f"run={run_id}"

    def _read_record(self, folder: Path) -> RunRecord:
        try:
            data = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(
                f"unreadable run record ({exc}); every read of the archive stops here rather "
                "than leave the run out",
                file=folder / RUN_FILE,
                hint="restore the file from a backup, or remove the run "
                f"(`{self._remove_command(folder)}`, which needs no record) and add it again",
            ) from exc
        return RunRecord.from_json(data, folder)

    def _remove_command(self, folder: Path) -> str:
        """The command line that removes the run in ``folder``, ready to paste."""
        return remove_command(self.path, folder)

    def check(self) -> None:
        """Refuse a path that is no archive this version reads, naming it and the fix.

        Every read calls it: a missing path, a file, a folder holding something else
        (an experiment's or a run's folder given by mistake) and a marker
        (``_archive.json``) of another format or a newer version are all refused, rather
        than read as an archive of no run.

        Examples
        --------
        >>> import tempfile
        >>> Archive(tempfile.mkdtemp()).check()  # an empty folder can become one
        >>> Archive("no/such/folder").check()
        Traceback (most recent call last):
        ...
        agenticlens_frames.errors.InputError: no/such/folder: no archive here...
        """
        if self.path.exists() and not self.path.is_dir():
            raise InputError(
                "is a file, not an archive folder", file=self.path, hint="give the archive folder"
            )
        if not self.path.is_dir():
            raise InputError(
                "no archive here",
                file=self.path,
                hint="create one with `agenticlens-frames archive add` or Archive(path).add(run)",
            )
        if not _holds_an_archive(self.path):
            # Read as an archive of no run, a mistyped path (an experiment's folder, one
            # run's folder) made every listing empty and every summary "no run matches".
            raise InputError(
                f"not an archive: it holds neither {MARKER_FILE} nor experiment=… folders",
                file=self.path,
                hint="give the archive's top folder, the one `archive add` was given",
            )
        marker = self.path / MARKER_FILE
        if marker.exists():
            _check_marker(marker)

    def records(self) -> list[RunRecord]:
        """Every published run, ordered by ``run_at``, then ``added_at``, then id.

        A run folder without its record (``_run.json``, written last when a run is
        published) is not a run: it is left out, with a warning naming it, since a
        published run whose record was deleted would otherwise vanish from every result
        unnoticed.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> [(r.experiment_id, r.n_attempts) for r in example_archive().records()]
        [('support-agent-upgrade@1', 350)]
        """
        self.check()
        out = []
        for folder in self._run_folders():
            if (folder / RUN_FILE).exists():
                out.append(self._placed(self._read_record(folder)))
            elif folder.is_dir():  # not one another process just removed
                warnings.warn(
                    f"{folder}: a run folder without its record ({RUN_FILE}) is left out of "
                    "the archive; restore the record, or remove the run "
                    f"(`{self._remove_command(folder)}`)",
                    stacklevel=3,
                )
        out.sort(key=lambda r: (r.run_at, r.added_at, r.run_id))
        return out

    def _placed(self, record: RunRecord) -> RunRecord:
        """``record``, if it sits in its own run's folder.

        A run folder copied or renamed by hand would otherwise be read twice (its rows
        counted twice in every analysis) or under another experiment.
        """
        folder = record.path
        if folder.name == f"run={record.run_id}" and folder.parent.name == experiment_dir_name(
            record.experiment_id
        ):
            return record
        home = self._run_dir(record.experiment_id, record.run_id)
        raise InputError(
            f"this record is for run {record.run_id} of {record.experiment_id}, whose "
            f"folder is {home.relative_to(self.path)}",
            file=folder / RUN_FILE,
            hint="the run's folder was copied, moved or renamed by hand: move it back, "
            "or remove it if it is a copy; each run is archived once",
        )

    def record(self, run_id: str) -> RunRecord:
        """The record of one run, by id or unique id prefix.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive()
        >>> run_id = archive.records()[0].run_id
        >>> archive.record(run_id[:4]).experiment_id
        'support-agent-upgrade@1'
        >>> archive.record("zzz")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        agenticlens_frames.errors.InputError: ...: no run with id 'zzz' in the archive (...)
        """
        hits = [r for r in self.records() if r.run_id.startswith(run_id)]
        if len(hits) != 1:
            problem = "no run" if not hits else f"{len(hits)} runs"
            raise InputError(
                f"{problem} with id {run_id!r} in the archive",
                file=self.path,
                hint="list run ids with `agenticlens-frames archive ls`",
            )
        return hits[0]

    def runs(self) -> pd.DataFrame:
        """The catalog as a frame: one row per run.

        Columns: ``run_id, experiment_id, experiment_name, experiment_version, suite_name,
        suite_version, run_at, added_at, n_variants, n_cases, n_attempts, trial_count,
        factor_names, tags, path``.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> example_archive().runs()[["experiment_id", "n_variants", "n_cases", "n_attempts"]]
                     experiment_id  n_variants  n_cases  n_attempts
        0  support-agent-upgrade@1           5       14         350
        """
        return records_frame(self.records())

    def slice(
        self,
        *,
        experiments: str | Iterable[str] | None = None,
        runs: str | Iterable[str] | None = None,
        variants: str | Iterable[str] | None = None,
        since: str | date | datetime | None = None,
        until: str | date | datetime | None = None,
        tags: str | Iterable[str] | None = None,
        factors: Mapping[str, str | Iterable[str]] | None = None,
        include_baseline: bool = False,
        **factor_values: str | Iterable[str],
    ) -> ArchiveSlice:
        """A lazy selection of the archive; no table is read until it is used.

        See :class:`~agenticlens_frames.archive.query.ArchiveSlice` for the filters. Its
        repr reads the catalog (the small run records) to count what the slice holds:
        runs, (run, variant) pairs and attempt rows — exact, or an upper bound (``<=``)
        when a variant, factor or tag filter drops rows inside a run.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> archive = example_archive(run_at="2026-11-04")
        >>> archive.slice(retrieval="dense", since="2026-10-01")
        ArchiveSlice(runs=1, variants=1, attempts<=350; retrieval='dense',
                     since=2026-10-01T00:00:00Z)
        >>> archive.slice(until="2026-10-01")
        ArchiveSlice(runs=0, variants=0, attempts=0; until=2026-10-01T00:00:00Z)
        """
        merged = factor_mapping(factors, factor_values)
        spec = SliceFilter.build(
            experiments=experiments,
            runs=runs,
            variants=variants,
            since=since,
            until=until,
            tags=tags,
            factors=merged,
            include_baseline=include_baseline,
        )
        return ArchiveSlice(self, spec)

    def all(self) -> ArchiveSlice:
        """The whole archive as a slice.

        Examples
        --------
        >>> from agenticlens_frames.testing import example_archive
        >>> example_archive().all()
        ArchiveSlice(runs=1, variants=5, attempts=350; no filter)
        """
        return self.slice()


def _check_marker(marker: Path) -> None:
    """Refuse an archive whose marker says another format, or a newer version of ours.

    Each run's record is checked too, but an archive a newer version wrote may hold
    files this version would misread before any record is opened (and new runs added
    here would mix two layouts in one folder).
    """
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"unreadable archive marker ({exc})",
            file=marker,
            hint=f'restore it: {{"format": "{FORMAT_NAME}", "format_version": {FORMAT_VERSION}}}',
        ) from exc
    check_format(data, marker, "marker")


def _holds_an_archive(folder: Path) -> bool:
    """Whether ``folder`` is an archive, or could become one: empty, or holding the marker,
    a run's experiment folder or the staging folder (an archive whose marker was lost
    still reads)."""
    with os.scandir(folder) as entries:
        names = [entry.name for entry in entries]
    ours = (MARKER_FILE, STAGING_DIR)
    return not names or any(n in ours or n.startswith("experiment=") for n in names)


def _replace_path(record: RunRecord, path: Path) -> RunRecord:
    return replace(record, path=path)


def experiment_dir_name(experiment_id: str) -> str:
    """The partition directory name of an experiment id (percent-encoded).

    Examples
    --------
    >>> experiment_dir_name("support agent@2026/11")
    'experiment=support%20agent@2026%2F11'
    """
    return f"experiment={quote(experiment_id, safe='@+-_.~')}"


def experiment_from_dir_name(name: str) -> str:
    """Inverse of :func:`experiment_dir_name`."""
    return unquote(name.removeprefix("experiment="))
