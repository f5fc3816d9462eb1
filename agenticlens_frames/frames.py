"""The tidy tables: one Arrow schema per table, and the object that holds them.

Five tables describe an experiment run (docs/data-model.md documents every column):

``attempts``  one row per (variant, trial, case)
``checks``    one row per (attempt, check)
``trials``    one row per (variant, trial)
``variants``  one row per variant, one ``factor_<name>`` column per factor
``cases``     one row per suite case

Keys are pandas categoricals whose categories are in manifest / suite order, so every
groupby can be made complete (every variant × every case) and ordered the way the
reports are, whatever pandas' ``observed`` default is.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ._compat import AGENTIC_EVALS_VERSION
from ._deprecate import class_keyword_hints, keyword_hints
from ._files import _fsync_dir, atomic_write, refuse_unexpanded
from ._json_text import mark_json_text
from ._lazy import lazy_module
from ._plain import plain
from ._suggest import require_known
from .errors import InputError, check_path
from .formats._io import Invalid, convert_checked, describe
from .formats.model import (
    ATTEMPT_STATUSES,
    FACTOR_PREFIX,
    TARGET_KINDS,
    CaseSpec,
    ManifestSpec,
    SuiteSpec,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.parquet as pq

    from .formats.recorded import TrialColumns
else:
    # Imported on first use: a process that only replays recorded trials into a
    # TableBuilder (the one forked while `experiment run` imports the analysis' modules,
    # runner/recorded.py) needs neither, and pandas alone takes about 0.3 s to import.
    pd = lazy_module("pandas", "pd", globals())
    pq = lazy_module("pyarrow.parquet", "pq", globals())

__all__ = [
    "ATTEMPTS_SCHEMA",
    "ATTEMPT_STATUSES",
    "BUILTIN_EVALUATOR",
    "BUILTIN_VERSION",
    "CASES_SCHEMA",
    "CHECKS_SCHEMA",
    "NULLABLE_INTEGERS",
    "SCHEMAS",
    "TRIALS_SCHEMA",
    "TRIAL_STATUSES",
    "UNANSWERED_STATUSES",
    "UNAVAILABLE_METRICS",
    "CheckColumns",
    "ExperimentRun",
    "read_parquet",
    "run_attribute_error",
    "tables_folder",
]

#: Doctests that need an optional extra (the repository's conftest.py skips them, saying
#: so, when it is not installed).
__doctest_requires__ = {"ExperimentRun.to_polars": ("polars",)}

TRIAL_STATUSES = ("succeeded", "failed")
TRACE_SHAPES = ("eval", "run")

_KEY = pa.dictionary(pa.int32(), pa.string())

ATTEMPTS_SCHEMA = pa.schema(
    [
        ("experiment_id", _KEY),
        ("variant_id", _KEY),
        ("trial", pa.int32()),
        ("case_id", _KEY),
        ("case_index", pa.int32()),
        ("status", _KEY),
        ("passed", pa.bool_()),
        ("score", pa.float64()),
        ("n_checks", pa.int32()),
        ("n_checks_passed", pa.int32()),
        ("score_sum", pa.float64()),
        ("latency_ms", pa.float64()),
        ("cost_usd", pa.float64()),
        ("cost_source", _KEY),
        ("output", pa.large_string()),
        ("trace_id", pa.large_string()),
        ("trace_shape", _KEY),
        ("tools", pa.large_string()),
        ("n_tool_calls", pa.int32()),
        ("turns", pa.int32()),
        ("target_attempts", pa.int32()),
        ("error", pa.large_string()),
        ("run_order", pa.int32()),
    ]
)

CHECKS_SCHEMA = pa.schema(
    [
        ("variant_id", _KEY),
        ("trial", pa.int32()),
        ("case_id", _KEY),
        ("check_index", pa.int32()),
        ("name", pa.large_string()),
        ("metric", _KEY),
        ("value", pa.float64()),
        ("passed", pa.bool_()),
        ("required", pa.bool_()),
        ("skipped", pa.bool_()),
        ("explanation", pa.large_string()),
        ("evaluator", _KEY),
        ("evaluator_version", _KEY),
        ("evaluator_type", _KEY),
        # The score's metadata as JSON text (judges' ``judge_*`` keys); null when empty.
        ("metadata", pa.large_string()),
    ]
)

TRIALS_SCHEMA = pa.schema(
    [
        ("variant_id", _KEY),
        ("trial", pa.int32()),
        ("status", _KEY),
        ("error_message", pa.large_string()),
        ("execution_position", pa.int32()),
    ]
)

#: The fixed columns of ``variants``; one ``factor_<name>`` string column follows per factor.
VARIANTS_SCHEMA = pa.schema(
    [
        ("variant_id", _KEY),
        ("variant_name", pa.large_string()),
        ("position", pa.int32()),
        ("target_kind", _KEY),
        ("target", pa.large_string()),
        ("timeout_seconds", pa.float64()),
        ("is_baseline", pa.bool_()),
        ("description", pa.large_string()),
    ]
)

CASES_SCHEMA = pa.schema(
    [
        ("case_id", _KEY),
        ("case_index", pa.int32()),
        ("case_name", pa.large_string()),
        ("tags", pa.large_string()),
        ("n_expectations", pa.int32()),
        ("input", pa.large_string()),
        ("metadata", pa.large_string()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "attempts": ATTEMPTS_SCHEMA,
    "checks": CHECKS_SCHEMA,
    "trials": TRIALS_SCHEMA,
    "variants": VARIANTS_SCHEMA,
    "cases": CASES_SCHEMA,
}

#: Categorical columns whose categories are fixed vocabularies (not data-dependent).
_FIXED_CATEGORIES: dict[tuple[str, str], tuple[str, ...]] = {
    ("attempts", "status"): ATTEMPT_STATUSES,
    ("attempts", "trace_shape"): TRACE_SHAPES,
    ("attempts", "cost_source"): ("measured", "estimated"),
    ("trials", "status"): TRIAL_STATUSES,
    ("variants", "target_kind"): TARGET_KINDS,
}

#: Integer columns that may be null, held as pandas' nullable ``Int32`` (by table): a
#: table read back from Arrow without a run's pandas metadata (an archive slice) gets
#: them so too, rather than int32 or float64 depending on whether a null is there.
NULLABLE_INTEGERS: dict[str, tuple[str, ...]] = {"attempts": ("turns", "target_attempts")}

#: Columns added after runs were first saved; older files read with them null.
_ADDED_COLUMNS = frozenset({("checks", "metadata")})

_METADATA_KEY = b"agenticlens_frames"


def factor_column(name: str) -> str:
    """Name of the ``variants`` column holding factor ``name``.

    Examples
    --------
    >>> factor_column("model")
    'factor_model'
    """
    return FACTOR_PREFIX + name


def variants_schema(factor_names: list[str] | tuple[str, ...]) -> pa.Schema:
    """The ``variants`` schema for an experiment with these factors."""
    fields = list(VARIANTS_SCHEMA)
    fields += [pa.field(factor_column(n), pa.large_string()) for n in factor_names]
    return pa.schema(fields)


def categories_for(run: ExperimentRun, table: str, column: str) -> tuple[str, ...] | None:
    if (table, column) in _FIXED_CATEGORIES:
        return _FIXED_CATEGORIES[(table, column)]
    if column == "variant_id":
        return run.manifest.variant_ids
    if column == "case_id":
        return run.suite.case_ids
    if column == "experiment_id":
        return (run.experiment_id,)
    return None


def _to_arrow(df: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pandas(df, schema=schema, preserve_index=False)


def _typed(df: pd.DataFrame, schema: pa.Schema) -> pd.DataFrame:
    """``df`` with the declared dtypes of ``schema`` (a round trip through Arrow)."""
    return _to_arrow(df, schema).to_pandas()


def spec_to_json(manifest: ManifestSpec, suite: SuiteSpec) -> dict[str, Any]:
    # Keys as they are: json.dumps writes them (as it did after dataclasses.asdict).
    return {"manifest": plain(manifest, text_keys=False), "suite": plain(suite, text_keys=False)}


def spec_from_json(data: Any) -> tuple[ManifestSpec, SuiteSpec]:
    """The manifest and suite saved by :func:`spec_to_json`, every field checked.

    A saved form edited or damaged by hand raises :class:`InputError` naming the place
    (``manifest.variants[2].factors``); the caller names the file. Every field is typed
    by the specs' own annotations (msgspec), then the rules the loaders enforce that
    later steps rely on are checked again: unique variant and case ids, the baseline
    among the variants, cases in index order, pass_k within the trial count.

    Examples
    --------
    >>> spec_from_json({"manifest": {}, "suite": {}})
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: manifest: object missing required field path
    """
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of 'manifest' and 'suite', got {describe(data)}")
    parts: dict[str, Any] = {}
    for key, kind in (("manifest", ManifestSpec), ("suite", SuiteSpec)):
        if key not in data:
            raise InputError(f"missing required key {key!r}")
        try:
            parts[key] = convert_checked(data[key], kind, dec_hook=_path_from_text)
        except Invalid as problem:
            raise InputError(problem.message, location=(key, *problem.at)) from None
    manifest, suite = parts["manifest"], parts["suite"]
    _check_spec(manifest, suite)
    return manifest, suite


def _path_from_text(kind: type, value: Any) -> Any:
    if kind is Path and isinstance(value, str):
        return Path(value)
    # msgspec turns a TypeError raised here into a ValidationError at this place.
    raise TypeError(f"Expected a path, got {describe(value)}")


def _check_spec(manifest: ManifestSpec, suite: SuiteSpec) -> None:
    seen: set[str] = set()
    for index, variant in enumerate(manifest.variants):
        if not variant.id or variant.id in seen:
            raise InputError(
                f"variant id {variant.id!r} is empty or repeated",
                location=f"manifest.variants[{index}].id",
            )
        seen.add(variant.id)
    if manifest.baseline_variant_id not in seen:
        raise InputError(
            f"{manifest.baseline_variant_id!r} is not one of the variants",
            location="manifest.baseline_variant_id",
        )
    if manifest.trial_count < 1:
        raise InputError(
            f"expected at least 1, got {manifest.trial_count}", location="manifest.trial_count"
        )
    for index, k in enumerate(manifest.pass_k):
        if not 1 <= k <= manifest.trial_count:
            raise InputError(
                f"expected a k between 1 and trial_count={manifest.trial_count}, got {k}",
                location=f"manifest.pass_k[{index}]",
            )
    seen = set()
    for index, case in enumerate(suite.cases):
        if case.index != index:
            raise InputError(
                f"expected {index} (cases are saved in index order), got {case.index}",
                location=f"suite.cases[{index}].index",
            )
        if not case.id or case.id in seen:
            raise InputError(
                f"case id {case.id!r} is empty or repeated", location=f"suite.cases[{index}].id"
            )
        seen.add(case.id)


_GRAIN_ORDER: dict[str, tuple[str, ...]] = {
    "attempts": ("variant_id", "trial", "case_id"),
    "checks": ("variant_id", "trial", "case_id", "check_index"),
}


def _is_sorted(columns: list[np.ndarray]) -> bool:
    """Whether rows are in non-decreasing lexicographic order of ``columns``."""
    tied = np.ones(len(columns[0]) - 1, dtype=bool)
    for column in columns:
        before, after = column[:-1], column[1:]
        if (tied & (after < before)).any():
            return False
        tied &= after == before
    return True


@class_keyword_hints()
@dataclass
class ExperimentRun:
    """An experiment's tidy tables plus the manifest and suite they came from.

    Build one with :func:`agenticlens_frames.load_experiment` (recorded targets) or the
    runner (live targets); save and restore it with :meth:`to_parquet` /
    :func:`read_parquet`.

    Attributes
    ----------
    manifest, suite
        The validated specifications.
    attempts, checks, trials, variants, cases
        The tidy tables (see docs/data-model.md).
    evaluator_versions
        Name → version of every registered evaluator the suite used.
    stopping
        A live run's early-stopping block (``stop_when="decided"``: when and why it
        stopped, JSON-ready; see :mod:`~agenticlens_frames.runner.stopping`), else None.
        :func:`~agenticlens_frames.analyze` puts it in ``extras["early_stopping"]``, so
        every surface leads with the stopping decision.
    judge_spend_failed_trials
        A live run's failed trials (an invalid payload, ``invalid_payload="trial"``): per
        variant what the LLM judges of their answered attempts did and cost (the rows of
        :func:`~agenticlens_frames.runner.stopping.judge_spend_after_decision`), else None.
        Those attempts were judged and billed, but a failed trial has no scores in the
        tables (AgenticLens' rule): the judges' cost lines say them apart
        (:func:`~agenticlens_frames.analysis.judge_cost_lines`).

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> run
    ExperimentRun('support-agent-upgrade@1', variants=5, cases=14, trials=5, attempts=350,
                  checks=1198)
    >>> run.attempts.groupby("variant_id", observed=True)["passed"].mean().round(3)
    variant_id
    baseline           0.714
    model-large        0.743
    prompt-v2          0.871
    retrieval-dense    0.657
    large-v2           0.843
    Name: passed, dtype: float64
    """

    manifest: ManifestSpec
    suite: SuiteSpec
    attempts: pd.DataFrame
    checks: pd.DataFrame
    trials: pd.DataFrame
    variants: pd.DataFrame
    cases: pd.DataFrame
    evaluator_versions: dict[str, str | None] = field(default_factory=dict)
    stopping: dict[str, Any] | None = None
    judge_spend_failed_trials: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        # The analysis reads attempts and checks as contiguous (variant, trial) runs; a
        # table reordered by the user (sort_values, a shuffled parquet) is put back in the
        # grain order so the numbers never depend on row order.
        for name, keys in _GRAIN_ORDER.items():
            frame = getattr(self, name)
            if len(frame) < 2 or not all(k in frame.columns for k in keys):
                continue
            columns = [
                frame[k].cat.codes.to_numpy()
                if isinstance(frame[k].dtype, pd.CategoricalDtype)
                else frame[k].to_numpy()
                for k in keys
            ]
            if not _is_sorted(columns):  # O(n) check; the sort is only paid when needed
                order = np.lexsort(columns[::-1])
                object.__setattr__(self, name, frame.iloc[order].reset_index(drop=True))
        # The inputs are JSON text here, whatever built the run: marked so, with their
        # digest, so from_frames decodes them exactly while the column is unchanged.
        mark_json_text(self.cases)

    @property
    def experiment_id(self) -> str:
        """``<name>@<version>`` of the manifest.

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> run.experiment_id
        'support-agent-upgrade@1'
        """
        return f"{self.manifest.name}@{self.manifest.version}"

    @property
    def factor_names(self) -> list[str]:
        """Factor names in first-seen manifest order.

        Each is the ``factor_<name>`` column of the ``variants`` and ``attempts`` tables.

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> run.factor_names
        ['model', 'prompt', 'retrieval']
        """
        names: dict[str, None] = {}
        for v in self.manifest.variants:
            names.update(dict.fromkeys(v.factors))
        return list(names)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """The five tidy tables by name: ``attempts, checks, trials, variants, cases``.

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> {name: len(frame) for name, frame in run.tables.items()}
        {'attempts': 350, 'checks': 1198, 'trials': 25, 'variants': 5, 'cases': 14}
        """
        return {
            "attempts": self.attempts,
            "checks": self.checks,
            "trials": self.trials,
            "variants": self.variants,
            "cases": self.cases,
        }

    def schema(self, table: str) -> pa.Schema:
        """The Arrow schema of ``table`` for this experiment (``variants`` has one
        ``factor_<name>`` column per factor of the manifest).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> run.schema("variants").names[-3:]
        ['factor_model', 'factor_prompt', 'factor_retrieval']
        >>> str(run.schema("attempts").field("variant_id").type)
        'dictionary<values=string, indices=int32, ordered=0>'
        """
        require_known("table", [table], self.tables, location="table")
        if table == "variants":
            return variants_schema(self.factor_names)
        return SCHEMAS[table]

    def to_arrow(self, table: str) -> pa.Table:
        """Convert one table to Arrow with its declared schema (:meth:`schema`).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> trials = run.to_arrow("trials")
        >>> trials.num_rows, trials.schema == run.schema("trials")
        (25, True)
        """
        schema = self.schema(table)  # first: it names an unknown table
        return _to_arrow(self.tables[table], schema)

    def to_pandas(self, table: str) -> pd.DataFrame:
        """One tidy table as a pandas DataFrame (the table itself; ``tables[table]``).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> run.to_pandas("attempts") is run.attempts
        True
        >>> run.to_pandas("attempt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        agenticlens_frames.errors.InputError: table: unknown table 'attempt' (did you mean ...)
        """
        require_known("table", [table], self.tables, location="table")
        return self.tables[table]

    def to_polars(self, table: str) -> Any:
        """One tidy table as a polars DataFrame, through Arrow; keys are polars ``Enum``
        columns with the pandas categories, in their order.

        Needs the optional ``polars`` package (``pip install 'agenticlens-frames[polars]'``).

        Examples
        --------
        >>> from agenticlens_frames import load_experiment
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> variants = run.to_polars("variants")
        >>> variants.shape, variants.schema["variant_id"].categories.to_list()[:2]
        ((5, 11), ['baseline', 'model-large'])
        """
        return arrow_to_polars(self.to_arrow(table))

    @classmethod
    def from_frames(
        cls,
        attempts: pd.DataFrame,
        variants: pd.DataFrame,
        cases: pd.DataFrame,
        *,
        name: str = "experiment",
        version: str = "1",
        baseline: str | None = None,
        random_seed: int | None = None,
        suite_name: str = "suite",
    ) -> ExperimentRun:
        """Build a run from DataFrames you already have.

        Parameters
        ----------
        attempts
            One row per (variant, trial, case): ``variant_id``, ``trial`` (1..T),
            ``case_id``, ``passed`` (bool); optional ``score`` in [0, 1] (default: passed
            as 0/1), ``latency_ms``, ``cost_usd``, ``cost_source`` (``measured`` or
            ``estimated``; empty: ``measured``; null where no cost is given), ``output``,
            ``error``, ``target_attempts`` (the calls made for the attempt, whole numbers
            ≥ 1, empty where not known; default 1) and ``status`` (one of ``ok``,
            ``missing_sample``, ``target_error``, ``timed_out``, ``trial_failed``;
            default ``ok``; only an ``ok`` attempt can have passed). A trial whose
            attempts all have status ``trial_failed`` failed: its ``error_message`` is
            their ``error`` (the first set one, in case order).
        variants
            One row per variant, in the order to report them: ``variant_id``; optional
            ``variant_name``, ``description``, ``is_baseline``, and one ``factor_<name>``
            column per factor.
        cases
            One row per case, suite order: ``case_id``; optional ``case_name``,
            ``input`` (any value; ``run.cases``' own input column, marked in its attrs
            and unchanged, is decoded exactly as the JSON text it is; in any other
            column text holding JSON of an object, an array or a string is read as that
            JSON, so give text that itself looks so as ``json.dumps(text)``, and the
            text of a number stays text), ``tags`` (comma-joined text or a
            list), ``metadata`` (a dict, or a JSON object as text, as in ``run.cases``).
            Each case declares
            one expectation, its ``passed`` values (``n_expectations`` 1; the suite names
            it as the case's evaluator ``passed``): it was judged, as a suite case with
            expectations is.
        name, version
            The experiment's name and version.
        random_seed
            The seed of the execution order, recorded in the manifest (None: none).
        suite_name
            The suite's name, as a suite file's ``name:``.
        baseline
            The baseline variant id (default: the ``is_baseline`` row — booleans or 0/1,
            empty as no, one row at most — else the first).

        Raises
        ------
        InputError
            Naming the frame and the column: a missing column, a wrong type, an empty
            id, an infinite number, an unknown variant or case id (with the closest known
            one), a repeated or missing attempt, no attempt at all.

        Warns
        -----
        UserWarning
            Naming the columns of each frame it does not read (``latency_s``, ``cost``
            among the attempts; ``model`` among the variants, where factors are
            ``factor_model``; ``topic`` among the cases, whose attributes go in
            ``metadata``): rename one that holds a value it reads, in its unit. The
            run's own ``attempts``, ``variants`` and ``cases`` tables are read without a
            warning (their derived columns are rebuilt; docs/data-model.md lists them).

        Examples
        --------
        >>> import pandas as pd
        >>> att = pd.DataFrame({"variant_id": ["a", "a", "b", "b"], "trial": [1, 1, 1, 1],
        ...                     "case_id": ["x", "y", "x", "y"],
        ...                     "passed": [True, False, True, True]})
        >>> run = ExperimentRun.from_frames(
        ...     att, pd.DataFrame({"variant_id": ["a", "b"], "factor_model": ["s", "l"]}),
        ...     pd.DataFrame({"case_id": ["x", "y"]}))
        >>> run
        ExperimentRun('experiment@1', variants=2, cases=2, trials=1, attempts=4, checks=0)
        >>> run.cases["n_expectations"].tolist()
        [1, 1]
        >>> ExperimentRun.from_frames(att.drop(columns="passed"), run.variants, run.cases)
        Traceback (most recent call last):
        ...
        agenticlens_frames.errors.InputError: attempts frame: column(s) 'passed' missing ...
        """
        from .from_frames import frame_parts  # (imports pandas)

        parts = frame_parts(
            attempts,
            variants,
            cases,
            name=name,
            version=version,
            baseline=baseline,
            random_seed=random_seed,
            suite_name=suite_name,
        )
        run = cls(
            parts.manifest,
            parts.suite,
            attempts=_typed(parts.attempts, ATTEMPTS_SCHEMA),
            checks=CHECKS_SCHEMA.empty_table().to_pandas(),
            trials=_typed(parts.trials, TRIALS_SCHEMA),
            variants=variants_frame(parts.manifest),
            cases=_typed(cases_frame(parts.suite), CASES_SCHEMA),
        )
        set_categories(run)
        return run

    def to_parquet(self, folder: str | Path) -> Path:
        """Write the five tables as ``<table>.parquet`` files in ``folder``.

        The manifest and suite travel in each file's metadata, so :func:`read_parquet`
        restores an identical :class:`ExperimentRun`. Returns ``folder`` (created if
        needed) as a :class:`~pathlib.Path`.

        Examples
        --------
        >>> import tempfile
        >>> from agenticlens_frames import load_experiment, read_parquet
        >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
        >>> folder = run.to_parquet(tempfile.mkdtemp())
        >>> sorted(p.name for p in folder.iterdir())  # doctest: +NORMALIZE_WHITESPACE
        ['attempts.parquet', 'cases.parquet', 'checks.parquet', 'trials.parquet',
         'variants.parquet']
        >>> back = read_parquet(folder)
        >>> back.manifest == run.manifest, back.attempts.equals(run.attempts)
        (True, True)
        """
        out = Path(folder)
        refuse_unexpanded(out)
        if out.exists() and not out.is_dir():
            # to_parquet("run.parquet") over an existing file was a FileExistsError.
            raise InputError(
                "is a file; to_parquet writes a folder of five <table>.parquet files",
                file=out,
                location="folder",
                hint="give a folder's path (it is created if missing)",
            )
        out.mkdir(parents=True, exist_ok=True)
        # default=str as the archive's _spec.json: a case input from the Python API may be
        # any object (a numpy scalar, a set); the spec keeps its text.
        spec_json = {
            **spec_to_json(self.manifest, self.suite),
            "evaluators": self.evaluator_versions,
        }
        if self.stopping is not None:
            # Only when set: the tables of a run without early stopping stay as they were.
            spec_json["stopping"] = self.stopping
        if self.judge_spend_failed_trials is not None:
            spec_json["judge_spend_failed_trials"] = self.judge_spend_failed_trials
        spec = json.dumps(spec_json, default=str).encode()
        for name in self.tables:
            table = self.to_arrow(name)
            meta = dict(table.schema.metadata or {})
            meta[_METADATA_KEY] = spec
            # Each file complete on disk before its rename; the folder (the renames) synced
            # once for the five (a folder's fsync per file cost 3-8 ms each on a busy disk).
            with atomic_write(out / f"{name}.parquet", sync_dir=False) as handle:
                pq.write_table(table.replace_schema_metadata(meta), handle)
        _fsync_dir(out)
        return out

    def _repr_html_(self) -> str:
        from ._repr import run_repr_html

        return run_repr_html(self)

    def __repr__(self) -> str:
        return (
            f"ExperimentRun({self.experiment_id!r}, variants={len(self.variants)}, "
            f"cases={len(self.cases)}, trials={self.manifest.trial_count}, "
            f"attempts={len(self.attempts)}, checks={len(self.checks)})"
        )


def require_run(value: Any, function: str) -> ExperimentRun:
    """``value`` when it is an experiment run; otherwise an InputError naming ``function``,
    what it got and what to pass instead.

    The result-frame functions read ``run.attempts`` / ``run.manifest`` first: without this
    check an analysis or a path passed by mistake failed with an AttributeError about a
    missing attribute, which names neither the argument nor the fix. Anything with a run's
    ``attempts`` and ``manifest`` is accepted as one (the archive's and the report
    rebuild's runs are).

    Examples
    --------
    >>> require_run("manifest.yaml", "case_matrix")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: run: case_matrix() takes an experiment run, got str
    'manifest.yaml' (load one with alf.load_experiment('manifest.yaml', 'suite.yaml') ...)
    """
    if isinstance(value, ExperimentRun) or (
        hasattr(value, "attempts") and hasattr(value, "manifest")
    ):
        return value  # type: ignore[no-any-return]
    got = type(value).__name__
    inner = getattr(value, "run", None)
    if isinstance(inner, ExperimentRun):
        # An ExperimentAnalysis, or what api.run / run_experiment return: its tables are
        # one attribute away.
        name = "analysis" if got == "ExperimentAnalysis" else "result"
        hint = f"pass its tables: {function}({name}.run)"
        if got == "ExperimentAnalysis":
            hint += ", or read the frame the analysis already holds (analysis.variants, …)"
    elif got == "ExperimentAnalysis":
        hint = (
            "this analysis has no tables (a loaded report): read its frames "
            "(analysis.variants, analysis.cases, …) or load the run that made it"
        )
    else:
        hint = (
            "load one with alf.load_experiment('manifest.yaml', 'suite.yaml') or "
            "alf.read_parquet(folder), or pass the .run of alf.api.run(...)"
        )
    raise InputError(
        f"{function}() takes an experiment run, got {got}"
        + (f" {str(value)!r}" if isinstance(value, (str, Path)) else ""),
        location="run",
        hint=hint,
    )


def run_attribute_error(owner: object, name: str) -> AttributeError:
    """The AttributeError for ``name`` missing on ``owner``, a result that holds a run in
    its ``run`` attribute (``LiveRunResult``, ``ExperimentResult``): when the run has
    ``name``, it says so and what to write.

    ``run_experiment(...).to_parquet("out")`` or ``.attempts`` failed with Python's bare
    "object has no attribute", while the tables are one attribute away.

    Examples
    --------
    >>> class Result:
    ...     pass
    >>> print(run_attribute_error(Result(), "to_parquet"))
    'Result' object has no attribute 'to_parquet'; the tables are its run's: \
result.run.to_parquet
    >>> print(run_attribute_error(Result(), "to_parquett"))
    'Result' object has no attribute 'to_parquett'
    """
    got = type(owner).__name__
    text = f"{got!r} object has no attribute {name!r}"
    run_names = {f.name for f in dataclasses.fields(ExperimentRun)} | {
        n for n in dir(ExperimentRun) if not n.startswith("_")
    }
    if name in run_names:
        text += f"; the tables are its run's: result.run.{name}"
    return AttributeError(text)


#: The tables a folder of :meth:`ExperimentRun.to_parquet` holds, in words.
_TABLES_HELD = (
    "a run folder holds "
    + ", ".join(f"{name}.parquet" for name in list(SCHEMAS)[:-1])
    + f" and {list(SCHEMAS)[-1]}.parquet, as ExperimentRun.to_parquet() and "
    "`experiment run --parquet` write them"
)


def tables_folder(folder: Path, *, other_way: str) -> Path:
    """The folder of tables in ``folder``: ``folder`` itself (``to_parquet``,
    ``experiment run --parquet``) or a live run folder's ``tables/``; otherwise an error
    naming what ``folder`` lacks and the fix, ``other_way`` the caller's way to the same
    run from its experiment's files.

    A live run folder gets its ``tables/`` when a session ends: one that crashed before
    has only ``run.json`` and its journal, and "attempts.parquet: file not found", said of
    a folder that never holds one, sent the user looking for it (``read_parquet`` and
    ``archive add`` alike).

    Examples
    --------
    >>> import tempfile
    >>> tables_folder(Path(tempfile.mkdtemp()), other_way="add MANIFEST SUITE")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: /tmp/...: an empty folder: it holds neither \
attempts.parquet (the tables `experiment run --parquet` writes) nor tables/ or run.json (a \
run folder of `experiment run --run-dir`) (give the folder of tables or a run folder whose \
session ended, or add MANIFEST SUITE)
    """
    if (folder / "tables").is_dir():
        return folder / "tables"  # read_parquet names a table missing from it
    if (folder / "attempts.parquet").exists():
        return folder
    if not folder.exists():
        raise InputError("folder not found", file=folder, hint=_TABLES_HELD)
    if not folder.is_dir():
        raise InputError("not a folder", file=folder, hint=_TABLES_HELD)
    sources = "give the folder of tables or a run folder whose session ended, or " + other_way
    if (folder / "run.json").is_file():
        raise InputError(
            "a run folder without tables/: its run crashed or was stopped before its "
            "first session ended, so no tables were written",
            file=folder,
            hint="resume the run with `agenticlens-frames experiment run MANIFEST SUITE "
            f"--run-dir {shlex.quote(str(folder))}` (in Python, run_experiment with the same "
            "run_dir), which keeps the attempts its journal holds and writes the tables; or "
            + other_way,
        )
    yamls = sorted(q.name for q in folder.glob("*.y*ml"))
    if yamls:
        raise InputError(
            f"no tables here, but {', '.join(yamls[:4])}: an experiment's files",
            file=folder,
            hint=other_way,
        )
    what = "an empty folder" if not any(folder.iterdir()) else "not a folder of tables"
    raise InputError(
        f"{what}: it holds neither attempts.parquet (the tables `experiment run --parquet` "
        "writes) nor tables/ or run.json (a run folder of `experiment run --run-dir`)",
        file=folder,
        hint=sources,
    )


@keyword_hints
def read_parquet(folder: str | Path) -> ExperimentRun:
    """Read an :class:`ExperimentRun` written by :meth:`ExperimentRun.to_parquet`: the
    folder of tables, or a live run folder (``run_dir=``, ``--run-dir``), whose tables are
    in its ``tables/`` (:func:`tables_folder`).

    Examples
    --------
    >>> read_parquet("/nonexistent")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: /nonexistent: folder not found (a run folder holds \
attempts.parquet, checks.parquet, trials.parquet, variants.parquet and cases.parquet, as \
ExperimentRun.to_parquet() and `experiment run --parquet` write them)
    """
    base = tables_folder(
        check_path(folder, "a run folder ExperimentRun.to_parquet wrote"),
        other_way="load an experiment's manifest and suite with load_experiment(manifest_path, "
        "suite_path)",
    )
    frames: dict[str, pd.DataFrame] = {}
    spec: dict[str, Any] | None = None
    first_meta: bytes | None = None
    for name in SCHEMAS:
        path = base / f"{name}.parquet"
        if not path.exists():
            raise InputError("file not found", file=path, hint=_TABLES_HELD)
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"not a readable parquet file ({exc})", file=path) from exc
        meta = table.schema.metadata or {}
        if _METADATA_KEY not in meta:
            raise InputError(
                "parquet file has no agenticlens_frames metadata",
                file=path,
                hint="it was not written by ExperimentRun.to_parquet()",
            )
        if first_meta is None:
            first_meta = meta[_METADATA_KEY]
            # Parsed once: every other file must hold the same bytes (checked below), and
            # the specification holds the whole suite (megabytes for thousands of cases).
            try:
                spec = json.loads(first_meta)
            except ValueError as exc:
                raise InputError(
                    f"damaged agenticlens_frames metadata ({exc})", file=path
                ) from None
        elif meta[_METADATA_KEY] != first_meta:
            raise InputError(
                "its run metadata differs from attempts.parquet's (files from different runs?)",
                file=path,
            )
        # A damaged or swapped file must not become a run with missing or retyped columns.
        expected = SCHEMAS[name]
        for column in expected:
            index = table.schema.get_field_index(column.name)
            if index < 0 and (name, column.name) in _ADDED_COLUMNS:
                # written before the column existed: nothing was recorded there
                table = table.append_column(column, pa.nulls(len(table), column.type))
                continue
            if index < 0:
                raise InputError(f"column {column.name!r} is missing", file=path)
            got = table.schema.field(index).type
            if not _same_kind(got, column.type):
                raise InputError(
                    f"column {column.name!r} has type {got}, expected {column.type}", file=path
                )
        frames[name] = table.to_pandas()
    assert spec is not None
    try:
        manifest, suite = spec_from_json(spec)
    except InputError as exc:
        raise InputError(
            f"damaged agenticlens_frames metadata: {exc}",
            file=base / "attempts.parquet",
            hint="write the run again with to_parquet()",
        ) from None
    from ._stopping_block import checked_record

    # Checked as a saved report's: every surface renders them.
    facts = {
        key: checked_record(
            key,
            value,
            file=base / "attempts.parquet",
            location=[key],
            hint="write the run again with to_parquet()",
            where=" in the agenticlens_frames metadata",
        )
        for key in ("stopping", "judge_spend_failed_trials")
        if (value := spec.get(key)) is not None
    }
    stopping, spend = facts.get("stopping"), facts.get("judge_spend_failed_trials")
    run = ExperimentRun(
        manifest,
        suite,
        **frames,
        evaluator_versions=spec.get("evaluators", {}),
        stopping=stopping,
        judge_spend_failed_trials=spend,
    )
    try:
        set_categories(run)
    except InputError as exc:
        raise exc.with_file(base) from None
    return run


def set_categories(run: ExperimentRun) -> None:
    """Give every key column of a run read from Arrow its categories in manifest / suite
    order (Arrow dictionaries keep only the values present).

    A value outside them (tables and specification from different runs, or one edited)
    raises :class:`InputError` naming the table and value, instead of becoming a
    missing key that later steps would drop or trip over; the caller names the file.

    The nullable integer columns (:data:`NULLABLE_INTEGERS`) become ``Int32`` here too:
    Arrow gives int32 when no value is null, and a run built by ``from_frames`` had them
    so while a loaded one had ``Int32``.
    """
    for name, df in run.tables.items():
        for column in NULLABLE_INTEGERS.get(name, ()):
            if column in df.columns:
                df[column] = df[column].astype("Int32")
        for column in df.columns:
            cats = categories_for(run, name, column)
            if cats is not None:
                df[column] = _recoded(df[column], cats, name)
            elif isinstance(df[column].dtype, pd.CategoricalDtype):
                df[column] = pd.Categorical(
                    df[column].astype("object"),
                    categories=list(df[column].cat.categories),
                )


def _recoded(values: pd.Series, categories: tuple[str, ...], table: str) -> pd.Categorical:
    """``values`` as a categorical over ``categories``; InputError for a value outside them."""
    index = pd.Index(list(categories))
    if isinstance(values.dtype, pd.CategoricalDtype):
        # Map the few distinct values, not every row (Arrow dictionaries arrive this way).
        old = values.cat.codes.to_numpy()
        present = old >= 0
        codes = np.full(len(old), -1, dtype=np.intp)
        codes[present] = index.get_indexer(values.cat.categories)[old[present]]
        lost = present & (codes < 0)
    else:
        codes = index.get_indexer(values.astype("object"))  # -1: null or unknown
        lost = (codes < 0) & values.notna().to_numpy()
    if lost.any():
        raise InputError(
            f"{values.name} {values[lost].iloc[0]!r} in the {table} table is not one of the "
            "run specification's"
        )
    return pd.Categorical.from_codes(codes, categories=list(categories))


def arrow_to_polars(table: pa.Table) -> Any:
    """An Arrow table as a polars DataFrame; the error names the extra when polars is
    not installed.

    A dictionary column with one dictionary becomes a polars ``Enum`` over it: a polars
    ``Categorical`` holds only the values present and sorts them as text, so a run's keys
    lost their unused categories (``status``) and their manifest / suite order.
    """
    from ._optional import require

    pl = require("polars", "to_polars()")
    frame = pl.from_arrow(table)
    enums = {}
    for column in table.schema:
        if not pa.types.is_dictionary(column.type):
            continue
        dictionaries = [chunk.dictionary for chunk in table.column(column.name).chunks]
        if dictionaries and all(d.equals(dictionaries[0]) for d in dictionaries):
            values = dictionaries[0].to_pylist()
            if None not in values and len(set(values)) == len(values):
                enums[column.name] = pl.Enum(values)
    return frame.with_columns(pl.col(n).cast(t) for n, t in enums.items()) if enums else frame


def _same_kind(got: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a stored column type can stand for the schema's (dictionary-encoded or not)."""
    if pa.types.is_dictionary(got):
        got = got.value_type
    if pa.types.is_dictionary(expected):
        expected = expected.value_type
    if pa.types.is_string(expected) or pa.types.is_large_string(expected):
        return pa.types.is_string(got) or pa.types.is_large_string(got) or pa.types.is_null(got)
    return got == expected or pa.types.is_null(got)


def _str_series(values: pa.Array | pa.ChunkedArray) -> pd.Series:
    """A pandas ``str`` column from an Arrow string array (no per-value Python work).

    Chunks are joined first: one buffer makes later slicing and factorising of the
    column several times cheaper than walking chunks.
    """
    if isinstance(values, pa.ChunkedArray) and values.num_chunks > 1:
        values = values.combine_chunks()
    return pd.Series(values.to_pandas(), dtype="str")


def categorical(values: Any, categories: tuple[str, ...] | list[str]) -> pd.Categorical:
    """A categorical over fixed ``categories`` (values outside them would be a bug)."""
    return pd.Categorical(values, categories=list(categories))


def arrow_categorical(
    values: pa.Array | pa.ChunkedArray, categories: tuple[str, ...] | list[str]
) -> pd.Categorical:
    """:func:`categorical` of an Arrow string column, without a Python string per row:
    its few distinct values are looked up in ``categories`` once (nulls and values
    outside them become missing, as in :func:`categorical`).

    Examples
    --------
    >>> arrow_categorical(pa.array(["ok", None, "ok", "odd"]), ("failed", "ok")).codes.tolist()
    [1, -1, 1, -1]
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    encoded = values.dictionary_encode()
    position = {category: code for code, category in enumerate(categories)}
    lookup = np.asarray(
        [position.get(value, -1) for value in encoded.dictionary.to_pylist()] + [-1],
        dtype=np.int8 if len(categories) < 127 else np.int64,
    )
    # Null rows take the last entry of ``lookup`` (-1).
    indices = encoded.indices.fill_null(len(lookup) - 1).to_numpy(zero_copy_only=False)
    return codes_categorical(lookup[indices], categories)


def codes_categorical(codes: np.ndarray, categories: tuple[str, ...] | list[str]) -> pd.Categorical:
    """A categorical from integer codes, the cheap way to build key columns."""
    return pd.Categorical.from_codes(codes, categories=list(categories))


def measured_latency(value: float | None) -> float | None:
    """A trace's latency as the attempts table keeps it: 0 ms is unknown (None).

    AgenticLens reads a trace that recorded no latency — a sample without a trace, an
    EvalTrace without ``total_latency_ms``, a Run without both timestamps or with them
    reversed — as 0 ms, and no agent call takes no time, so a 0 is not a measurement. As an
    unknown it stays out of the verdicts, the latency means and the frontier, like a missing
    sample's (fix B3); ``latency_missing="zero"`` and the JSON's case records still count it
    as AgenticLens's 0 ms (the ``max_latency_ms`` check reads the trace itself).

    Examples
    --------
    >>> measured_latency(0.0), measured_latency(812.5), measured_latency(None)
    (None, 812.5, None)
    """
    return None if value is None or value == 0 else value


#: The largest turn count the attempts table's int32 ``turns`` column holds.
MAX_TABLE_TURNS = 2**31 - 1


def table_turns(turns: Any) -> int | None:
    """A scored attempt's turn count as the attempts table keeps it: ``turn_count: true``
    as 1 (B7), and None for no count — or for one the int32 column cannot hold (a trace
    may claim 2**70 turns; its ``max_turns`` check still reads the real number and fails).

    Examples
    --------
    >>> table_turns(True), table_turns(4), table_turns(None), table_turns(2**70)
    (1, 4, None, None)
    """
    if not turns or turns > MAX_TABLE_TURNS:
        return None
    return int(turns)


def measured_latencies(values: list[float | None]) -> pa.Array:
    """:func:`measured_latency` over a column, as a float64 Arrow array.

    Examples
    --------
    >>> measured_latencies([0.0, 5.0, None]).to_pylist()
    [None, 5.0, None]
    """
    column = np.array(values, dtype=float)  # None reads as NaN
    return pa.array(column, mask=np.isnan(column) | (column == 0), type=pa.float64())


#: Arrow types of the attempt columns a builder collects (before sorting).
_ATTEMPT_TYPES: dict[str, pa.DataType] = {
    "variant": pa.int32(),
    "trial": pa.int32(),
    "case_index": pa.int32(),
    "status": pa.string(),
    "passed": pa.bool_(),
    "score": pa.float64(),
    "n_checks": pa.int32(),
    "n_checks_passed": pa.int32(),
    "score_sum": pa.float64(),
    "latency_ms": pa.float64(),
    "cost_usd": pa.float64(),
    "cost_source": pa.string(),
    "output": pa.large_string(),
    "trace_id": pa.large_string(),
    "trace_shape": pa.string(),
    "tools": pa.large_string(),
    "n_tool_calls": pa.int32(),
    "turns": pa.int32(),
    "target_attempts": pa.int32(),
    "error": pa.large_string(),
}


def _first_row(part: dict[str, Any]) -> tuple[int, int, int]:
    """The (variant, trial, case) key of a builder part's first row."""
    attempts = part["attempts"]
    return tuple(attempts[name][0].as_py() for name in ("variant", "trial", "case_index"))


#: What the package stamps on its built-in checks (``Score.evaluator`` / version): the
#: version is agentic-evals' own, the release whose check rules we implement.
BUILTIN_EVALUATOR = "agentic_evals.builtin"
BUILTIN_VERSION = AGENTIC_EVALS_VERSION
#: Attempt statuses of a target that gave no answer (an outage, not the agent's quality):
#: the ones ``--rerun-failed`` calls again.
UNANSWERED_STATUSES = ("target_error", "timed_out")
#: The metrics of the one failing check an attempt with nothing to score gets
#: (:func:`~agenticlens_frames.scoring.score_unavailable`): a failed live call, a missing
#: recorded sample. They judge no expectation of the case.
UNAVAILABLE_METRICS = ("target_call", "sample_available")


#: Fields a registered evaluator's check keeps apart from the shared columns:
#: (required, evaluator, evaluator_version, evaluator_type, skipped, metadata as JSON text
#: or None).
CustomFields = tuple[bool, str, "str | None", str, bool, "str | None"]


class CheckColumns:
    """Columns of the ``checks`` table, filled one check at a time.

    Built-in checks all share the same ``required`` / ``skipped`` / evaluator fields, so
    only six columns are appended per check; the few rows from registered evaluators keep
    their own fields in :attr:`custom`. ``attempt`` is the attempt's row number in the
    ``attempts`` table.
    """

    __slots__ = ("_text", "attempt", "custom", "explanation", "metric", "name", "passed", "value")

    def __init__(self) -> None:
        self.attempt: list[int] = []
        self.name: list[str] = []
        self.metric: list[str] = []
        self.value: list[float] = []
        self.passed: list[bool] = []
        self.explanation: list[str] = []
        #: row number -> :data:`CustomFields`
        self.custom: dict[int, CustomFields] = {}
        # One object per distinct name / explanation: the same case yields the same
        # strings in every trial, so this keeps memory proportional to the suite.
        self._text: dict[str, str] = {}

    def add(
        self,
        attempt: int,
        name: str,
        metric: str,
        passed: bool,
        explanation: str,
        value: float | None = None,
    ) -> None:
        """Append a built-in check (value 1.0/0.0 from ``passed`` unless given)."""
        text = self._text
        self.attempt.append(attempt)
        self.name.append(text.setdefault(name, name))
        self.metric.append(metric)
        self.value.append((1.0 if passed else 0.0) if value is None else value)
        self.passed.append(passed)
        self.explanation.append(text.setdefault(explanation, explanation))

    def add_custom(
        self,
        attempt: int,
        name: str,
        value: float,
        passed: bool,
        explanation: str,
        *,
        required: bool,
        evaluator: str,
        evaluator_version: str | None,
        evaluator_type: str,
        metric: str | None = None,
        skipped: bool = False,
        metadata: str | None = None,
    ) -> None:
        """Append a check from a registered evaluator (``metadata`` as JSON text)."""
        self.custom[len(self.attempt)] = (
            required,
            evaluator,
            evaluator_version,
            evaluator_type,
            skipped,
            metadata,
        )
        self.add(attempt, name, metric or name, passed, explanation, value)

    @staticmethod
    def evaluator_fields(
        n: int, custom: dict[int, Any]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``required``, ``evaluator``, ``evaluator_version``, ``evaluator_type``,
        ``skipped`` and ``metadata`` of ``n`` checks: the built-in values, except the
        ``custom`` rows (journals written before judges hold four fields).

        Arrays, not lists (``required`` and ``skipped`` of dtype bool, the others of
        object dtype): a replay has hundreds of thousands of checks, nearly all built-in,
        and filling arrays costs a fraction of building and then converting lists.

        Examples
        --------
        >>> fields = CheckColumns.evaluator_fields(3, {1: (False, "j", None, "judge")})
        >>> [f.tolist() for f in fields]  # doctest: +NORMALIZE_WHITESPACE
        [[True, False, True], ['agentic_evals.builtin', 'j', 'agentic_evals.builtin'],
         ['0.9.0', None, '0.9.0'], ['deterministic', 'judge', 'deterministic'],
         [False, False, False], [None, None, None]]
        """

        def filled(value: str | None) -> np.ndarray:
            # One reference to ``value`` in every slot: np.full would convert a string
            # to a fixed-width one and make a new str object per slot (50 times slower).
            array = np.empty(n, dtype=object)
            array.fill(value)
            return array

        required = np.ones(n, dtype=bool)
        evaluator = filled(BUILTIN_EVALUATOR)
        version = filled(BUILTIN_VERSION)
        kind = filled("deterministic")
        skipped = np.zeros(n, dtype=bool)
        metadata = filled(None)
        for row, fields in custom.items():
            required[row], evaluator[row], version[row], kind[row] = fields[:4]
            if len(fields) > 4:
                skipped[row], metadata[row] = fields[4], fields[5]
        return required, evaluator, version, kind, skipped, metadata

    def columns(self) -> dict[str, list[Any]]:
        """All columns by name (defaults filled in for built-in checks)."""
        n = len(self.attempt)
        required, evaluator, version, kind, skipped, metadata = self.evaluator_fields(
            n, self.custom
        )
        return {
            "attempt": self.attempt,
            "name": self.name,
            "metric": self.metric,
            "value": self.value,
            "passed": self.passed,
            "required": required.tolist(),
            "skipped": skipped.tolist(),
            "explanation": self.explanation,
            "evaluator": evaluator.tolist(),
            "evaluator_version": version.tolist(),
            "evaluator_type": kind.tolist(),
            "metadata": metadata.tolist(),
        }

    def extend(self, other: CheckColumns) -> None:
        """Append every check of ``other`` (scored apart, e.g. on another thread)."""
        offset = len(self.attempt)
        text = self._text
        self.attempt.extend(other.attempt)
        self.name.extend(text.setdefault(n, n) for n in other.name)
        self.metric.extend(other.metric)
        self.value.extend(other.value)
        self.passed.extend(other.passed)
        self.explanation.extend(text.setdefault(e, e) for e in other.explanation)
        self.custom.update({offset + row: fields for row, fields in other.custom.items()})

    def required(self, row: int) -> bool:
        custom = self.custom.get(row)
        return True if custom is None else custom[0]

    def skipped(self, row: int) -> bool:
        custom = self.custom.get(row)
        return custom is not None and len(custom) > 4 and bool(custom[4])

    def __len__(self) -> int:
        return len(self.attempt)


class TableBuilder:
    """Collects attempts and checks as column lists, then builds the tidy tables.

    Rows may arrive in any order (live runs finish out of order); :meth:`build` sorts
    them into (variant, trial, case) order and renumbers the checks to match.
    """

    def __init__(self, manifest: ManifestSpec, suite: SuiteSpec) -> None:
        self.manifest = manifest
        self.suite = suite
        self.checks = CheckColumns()
        self._variant_pos = {v.id: i for i, v in enumerate(manifest.variants)}
        self._cols: dict[str, list[Any]] = {name: [] for name in _ATTEMPT_TYPES}
        self._trials: dict[tuple[int, int], tuple[str, str | None, int]] = {}
        #: States absorbed from other builders (worker processes), joined at build time.
        self._parts: list[dict[str, Any]] = []

    @property
    def next_attempt(self) -> int:
        """Row number the next attempt will get (pass it to the scoring functions)."""
        return len(self._cols["variant"])

    def add_trial(
        self, variant_id: str, trial: int, status: str, position: int, error: str | None = None
    ) -> None:
        """Record a (variant, trial) with its status and execution position (0-based)."""
        self._trials[(self._variant_pos[variant_id], trial)] = (status, error, position)

    def add_attempt(
        self,
        variant_id: str,
        trial: int,
        case: CaseSpec,
        status: str,
        score: Any,
        *,
        output: str | None = None,
        trace: Any = None,
        target_attempts: int | None = None,
        error: str | None = None,
    ) -> None:
        """Append one attempt; ``score`` is the :class:`~.scoring.AttemptScore` (or None
        for a failed trial), ``trace`` the normalised trace when a sample was scored."""
        c = self._cols
        c["variant"].append(self._variant_pos[variant_id])
        c["trial"].append(trial)
        c["case_index"].append(case.index)
        c["status"].append(status)
        c["passed"].append(bool(score.passed) if score is not None else False)
        c["score"].append(score.score if score is not None else None)
        c["n_checks"].append(score.n_checks if score is not None else 0)
        c["n_checks_passed"].append(score.n_checks_passed if score is not None else 0)
        c["score_sum"].append(score.score_sum if score is not None else None)
        c["turns"].append(table_turns(score.turns) if score is not None else None)
        c["target_attempts"].append(target_attempts)
        if trace is not None:
            cost = trace.estimated_cost_usd
            c["latency_ms"].append(measured_latency(trace.total_latency_ms))
            c["cost_usd"].append(cost)
            c["cost_source"].append(trace.cost_source if cost is not None else None)
            c["trace_id"].append(trace.trace_id)
            c["trace_shape"].append(trace.shape)
            c["tools"].append(",".join(trace.tool_names))
            c["n_tool_calls"].append(len(trace.tool_names))
        else:
            # Unknown, not zero: a missing sample has no latency or cost (fix B3).
            c["latency_ms"].append(None)
            c["cost_usd"].append(None)
            c["cost_source"].append(None)
            c["trace_id"].append(None)
            c["trace_shape"].append(None)
            c["tools"].append(None)
            c["n_tool_calls"].append(0)
        c["output"].append(output)
        c["error"].append(error if error is not None else getattr(score, "evaluator_error", None))

    def extend_attempts(self, columns: dict[str, list[Any]]) -> None:
        """Append many attempts at once: for every attempt column, the values
        :meth:`add_attempt` would append, one per attempt (rows numbered from
        :attr:`next_attempt`; their checks go to :attr:`checks` as usual)."""
        if columns.keys() != self._cols.keys():
            raise ValueError(f"extend_attempts needs exactly the columns {list(self._cols)}")
        for name, values in columns.items():
            self._cols[name].extend(values)

    def state(self) -> dict[str, Any]:
        """Everything added so far as typed Arrow columns (cheap to pickle); see
        :meth:`absorb`. Worker processes send this instead of their Python lists."""
        c = self._cols
        k = self.checks
        attempts = {name: pa.array(c[name], type=kind) for name, kind in _ATTEMPT_TYPES.items()}
        checks = {
            "attempt": pa.array(k.attempt, type=pa.int64()),
            "name": pa.array(k.name, type=pa.large_string()),
            "metric": pa.array(k.metric, type=pa.string()),
            "value": pa.array(k.value, type=pa.float64()),
            "passed": pa.array(k.passed, type=pa.bool_()),
            "explanation": pa.array(k.explanation, type=pa.large_string()),
        }
        return {
            "attempts": attempts,
            "checks": checks,
            "custom": dict(k.custom),
            "trials": dict(self._trials),
        }

    def add_scored_trial(
        self,
        variant_id: str,
        trial: int,
        position: int,
        samples: TrialColumns,
        checks: dict[str, pa.Array],
        scores: dict[str, Any],
    ) -> None:
        """Add a succeeded trial scored as a whole: one ``ok`` attempt per suite case, in
        suite order (``samples`` in case order, sample *i* answering case *i*), with the
        columns of :func:`~agenticlens_frames.scoring_batch.score_trial`. The same rows as
        :meth:`add_trial` and one :meth:`add_attempt` per case, as one typed part."""
        n = len(samples)
        self._trials[(self._variant_pos[variant_id], trial)] = ("succeeded", None, position)
        cost = samples.cost
        source = [
            s if c is not None else None for s, c in zip(samples.cost_source, cost, strict=True)
        ]
        tool_names = samples.tools
        attempts = {
            "variant": pa.array(np.full(n, self._variant_pos[variant_id], dtype=np.int32)),
            "trial": pa.array(np.full(n, trial, dtype=np.int32)),
            "case_index": pa.array(np.arange(n, dtype=np.int32)),
            "status": pa.array(["ok"] * n, type=pa.string()),
            "passed": pa.array(scores["passed"]),
            "score": scores["score"],
            "n_checks": pa.array(scores["n_checks"]),
            "n_checks_passed": pa.array(scores["n_checks_passed"]),
            "score_sum": pa.array(scores["score_sum"]),
            "latency_ms": measured_latencies(samples.latency),
            "cost_usd": pa.array(cost, type=pa.float64()),
            "cost_source": pa.array(source, type=pa.string()),
            "output": pa.array(samples.output, type=pa.large_string()),
            "trace_id": pa.array(samples.trace_id, type=pa.large_string()),
            "trace_shape": pa.array(samples.shape, type=pa.string()),
            "tools": pa.array(list(map(",".join, tool_names)), type=pa.large_string()),
            "n_tool_calls": pa.array(list(map(len, tool_names)), type=pa.int32()),
            "turns": scores["turns"],
            "target_attempts": pa.nulls(n, type=pa.int32()),
            "error": pa.nulls(n, type=pa.large_string()),
        }
        self._parts.append({"attempts": attempts, "checks": checks, "custom": {}, "trials": {}})

    def parts(self) -> list[dict[str, Any]]:
        """Every row as typed parts (each one a :meth:`state`), for :meth:`absorb` in
        another builder; the trials go with the first part."""
        self.seal()
        parts, self._parts = self._parts, []
        if not parts:
            parts = [self.state()]
        parts[0] = {**parts[0], "trials": dict(self._trials)}
        return parts

    def absorb(self, state: dict[str, Any]) -> None:
        """Add the rows of another builder's :meth:`state` (same manifest and suite).

        Examples
        --------
        >>> from agenticlens_frames.formats.model import ManifestSpec, VariantSpec, SuiteSpec
        >>> from agenticlens_frames.formats.model import CaseSpec
        >>> from agenticlens_frames.scoring import score_unavailable
        >>> suite = SuiteSpec(Path("s.yaml"), "s", "1", (CaseSpec("c1", "C1", 0),))
        >>> v = VariantSpec(id="a", name="A", target_kind="recorded", target="a.json",
        ...                 resolved_target="a.json")
        >>> m = ManifestSpec(path=Path("m.yaml"), name="x", version="1",
        ...                  baseline_variant_id="a", variants=(v,), trial_count=2)
        >>> whole = TableBuilder(m, suite)
        >>> for trial in (2, 1):
        ...     part = TableBuilder(m, suite)
        ...     part.add_trial("a", trial, "succeeded", trial - 1)
        ...     score = score_unavailable(part.checks, part.next_attempt)
        ...     part.add_attempt("a", trial, suite.cases[0], "missing_sample", score)
        ...     whole.absorb(part.state())
        >>> run = whole.build()
        >>> run.attempts["trial"].tolist(), run.checks["trial"].tolist()
        ([1, 2], [1, 2])
        """
        self._parts.append(state)
        self._trials.update(state["trials"])

    def seal(self) -> None:
        """Turn the rows added so far into typed columns now, instead of in :meth:`build`
        (a process waiting for its workers does it while it would otherwise idle)."""
        if self.next_attempt:  # (trials stay in self._trials either way)
            self._parts.append(self.state())
        self._cols = {name: [] for name in _ATTEMPT_TYPES}
        self.checks = CheckColumns()

    def _columns(
        self,
    ) -> tuple[dict[str, pa.ChunkedArray], dict[str, pa.ChunkedArray], dict[int, Any]]:
        """Attempt columns, check columns and custom-check fields of every part, joined
        (as chunks, not copied); check rows point at attempt rows of the joined table."""
        # Parts in row order (a part holds one variant's trials, or any rows), so that
        # joining them usually gives sorted rows.
        parts = sorted(
            (p for p in [*self._parts, self.state()] if len(p["attempts"]["variant"])),
            key=_first_row,
        ) or [self.state()]
        attempts = {
            name: pa.chunked_array([p["attempts"][name] for p in parts], type=kind)
            for name, kind in _ATTEMPT_TYPES.items()
        }
        custom: dict[int, Any] = {}
        rows = checks_seen = 0
        attempt_refs = []
        for p in parts:
            ref = p["checks"]["attempt"].to_numpy()
            attempt_refs.append(ref + rows if rows else ref)
            custom.update({row + checks_seen: f for row, f in p["custom"].items()})
            rows += len(p["attempts"]["variant"])
            checks_seen += len(ref)
        checks = {
            name: pa.chunked_array([p["checks"][name] for p in parts])
            for name in ("name", "metric", "value", "passed", "explanation")
        }
        checks["attempt"] = pa.chunked_array([np.concatenate(attempt_refs)], type=pa.int64())
        return attempts, checks, custom

    def add_failed_trial(self, variant_id: str, trial: int, position: int, error: str) -> None:
        """A trial that produced no report: every case is a failed attempt, no checks."""
        self.add_trial(variant_id, trial, "failed", position, error)
        for case in self.suite.cases:
            self.add_attempt(variant_id, trial, case, "trial_failed", None, error=error)

    def build(self, evaluator_versions: dict[str, str | None] | None = None) -> ExperimentRun:
        """Sort, type and assemble the five tables."""
        m, s = self.manifest, self.suite
        c, k, custom = self._columns()
        # The columns now hold every part's buffers: let go of the parts, and of each
        # column once converted (c.pop / k.pop below), so that a column's joined copy
        # replaces its chunks instead of adding to them (a builder builds once).
        self._parts = []
        self._cols = {name: [] for name in _ATTEMPT_TYPES}
        self.checks = CheckColumns()
        variant = c["variant"].to_numpy()
        trial = c["trial"].to_numpy()
        case_index = c["case_index"].to_numpy()
        order = np.lexsort((case_index, trial, variant))
        n = len(order)
        # Replayed rows usually arrive in order already (one part per variant, parts
        # sorted): then nothing needs to be gathered.
        in_order = bool(np.array_equal(order, np.arange(n)))

        def take(values: pa.ChunkedArray) -> pa.ChunkedArray:
            return values if in_order else values.take(order)

        trial_keys = sorted(self._trials)
        position = np.full((len(m.variants), max(trial.max(initial=0), 1) + 1), -1, np.int32)
        for (v, t), info in self._trials.items():
            position[v, t] = info[2]

        def num(name: str) -> np.ndarray:
            return c.pop(name).to_numpy(zero_copy_only=False)[order]

        def opt_float(name: str) -> np.ndarray:
            return take(c.pop(name)).to_numpy(zero_copy_only=False)

        def text(name: str) -> pd.Series:
            return _str_series(take(c.pop(name)))

        def fixed(name: str, categories: tuple[str, ...]) -> pd.Categorical:
            return arrow_categorical(take(c.pop(name)), categories)

        def opt_int(name: str) -> Any:
            return pd.array(take(c.pop(name)).to_pandas(), dtype="Int32")

        attempts = pd.DataFrame(
            {
                "experiment_id": codes_categorical(
                    np.zeros(n, dtype=np.int32), [f"{m.name}@{m.version}"]
                ),
                "variant_id": codes_categorical(variant[order], m.variant_ids),
                "trial": trial[order],
                "case_id": codes_categorical(case_index[order], s.case_ids),
                "case_index": case_index[order],
                "status": fixed("status", ATTEMPT_STATUSES),
                "passed": num("passed"),
                "score": opt_float("score"),
                "n_checks": num("n_checks"),
                "n_checks_passed": num("n_checks_passed"),
                "score_sum": opt_float("score_sum"),
                "latency_ms": opt_float("latency_ms"),
                "cost_usd": opt_float("cost_usd"),
                "cost_source": fixed("cost_source", ("measured", "estimated")),
                "output": text("output"),
                "trace_id": text("trace_id"),
                "trace_shape": fixed("trace_shape", TRACE_SHAPES),
                "tools": text("tools"),
                "n_tool_calls": num("n_tool_calls"),
                "turns": opt_int("turns"),
                "target_attempts": opt_int("target_attempts"),
                "error": text("error"),
                "run_order": position[variant, trial][order],
            }
        )

        # Checks follow their attempts' new order; within an attempt, emission order.
        n_checks = len(k["attempt"])
        new_row = np.empty(n, dtype=np.int64)
        new_row[order] = np.arange(n)
        check_attempt = new_row[k["attempt"].to_numpy()]
        corder = np.argsort(check_attempt, kind="stable")
        checks_in_order = bool(np.array_equal(corder, np.arange(n_checks)))

        def ctake(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
            return values if checks_in_order else values.take(corder)

        sorted_attempt = check_attempt[corder]
        starts = np.searchsorted(sorted_attempt, sorted_attempt, side="left")
        check_index = (np.arange(n_checks) - starts).astype(np.int32)

        required, evaluator, version, kind, skipped, metadata = CheckColumns.evaluator_fields(
            n_checks, custom
        )

        def ktext(name: str) -> pd.Series:
            return _str_series(ctake(k.pop(name)))

        def kcat(values: pa.Array | pa.ChunkedArray) -> pd.Categorical:
            taken = ctake(values)
            if isinstance(taken, pa.ChunkedArray):  # one dictionary, in first-seen order
                taken = taken.combine_chunks()
            return taken.dictionary_encode().to_pandas()

        def kfield(values: np.ndarray) -> pd.Categorical:
            # An evaluator field of built-in checks only holds its one default: the
            # dictionary encoding kcat would find, made without 300 000 Python strings
            # going into Arrow (a run with registered evaluators takes kcat's way).
            if custom or not n_checks or values[0] is None:
                return kcat(pa.array(values, type=pa.string()))
            indices = pa.array(np.zeros(n_checks, dtype=np.int32))
            only = pa.array(values[:1], type=pa.string())
            return pa.DictionaryArray.from_arrays(indices, only).to_pandas()

        def knum(values: np.ndarray) -> np.ndarray:
            return values[corder]

        sorted_rows = order[sorted_attempt] if n else sorted_attempt
        checks = pd.DataFrame(
            {
                "variant_id": codes_categorical(variant[sorted_rows], m.variant_ids),
                "trial": trial[sorted_rows],
                "case_id": codes_categorical(case_index[sorted_rows], s.case_ids),
                "check_index": check_index,
                "name": ktext("name"),
                "metric": kcat(k.pop("metric")),
                "value": knum(k["value"].to_numpy()),
                "passed": knum(k["passed"].to_numpy(zero_copy_only=False)),
                "required": knum(required),
                "skipped": knum(skipped),
                "explanation": ktext("explanation"),
                "evaluator": kfield(evaluator),
                "evaluator_version": kfield(version),
                "evaluator_type": kfield(kind),
                "metadata": _str_series(
                    ctake(pa.array(metadata, type=pa.large_string()))
                    if custom
                    else pa.nulls(n_checks, pa.large_string())  # no registered evaluator
                ),
            }
        )

        trials = pd.DataFrame(
            {
                "variant_id": codes_categorical(
                    np.asarray([v for v, _ in trial_keys], dtype=np.int32), m.variant_ids
                ),
                "trial": np.asarray([t for _, t in trial_keys], dtype=np.int32),
                "status": categorical([self._trials[key][0] for key in trial_keys], TRIAL_STATUSES),
                "error_message": pd.array(
                    [self._trials[key][1] for key in trial_keys], dtype="str"
                ),
                "execution_position": np.asarray(
                    [self._trials[key][2] for key in trial_keys], dtype=np.int32
                ),
            }
        )
        return ExperimentRun(
            manifest=m,
            suite=s,
            attempts=attempts,
            checks=checks,
            trials=trials,
            variants=variants_frame(m),
            cases=cases_frame(s),
            evaluator_versions=dict(evaluator_versions or {}),
        )


def variants_frame(manifest: ManifestSpec) -> pd.DataFrame:
    """The ``variants`` table of a manifest.

    Examples
    --------
    >>> from agenticlens_frames.formats.model import ManifestSpec, VariantSpec
    >>> vs = tuple(VariantSpec(id=i, name=i.upper(), target_kind="recorded", target=f"{i}.json",
    ...                        resolved_target=f"{i}.json", factors={"model": m})
    ...            for i, m in [("a", "big"), ("b", "small"), ("c", "big")])
    >>> m = ManifestSpec(path=Path("m.yaml"), name="x", version="1", baseline_variant_id="a",
    ...                  variants=vs)
    >>> variants_frame(m)[["variant_id", "is_baseline", "factor_model"]]
      variant_id  is_baseline factor_model
    0          a         True          big
    1          b        False        small
    2          c        False          big
    """
    ids = manifest.variant_ids
    factor_names: dict[str, None] = {}
    for v in manifest.variants:
        factor_names.update(dict.fromkeys(v.factors))
    data: dict[str, Any] = {
        "variant_id": codes_categorical(np.arange(len(ids), dtype=np.int32), ids),
        "variant_name": pd.array([v.name for v in manifest.variants], dtype="str"),
        "position": np.arange(len(ids), dtype=np.int32),
        "target_kind": categorical([v.target_kind for v in manifest.variants], TARGET_KINDS),
        "target": pd.array([v.target for v in manifest.variants], dtype="str"),
        "timeout_seconds": np.asarray([v.timeout_seconds for v in manifest.variants], dtype=float),
        "is_baseline": np.asarray(
            [v.id == manifest.baseline_variant_id for v in manifest.variants], dtype=bool
        ),
        "description": pd.array([v.description for v in manifest.variants], dtype="str"),
    }
    for name in factor_names:
        data[factor_column(name)] = pd.array(
            [v.factors.get(name) for v in manifest.variants], dtype="str"
        )
    return pd.DataFrame(data)


def cases_frame(suite: SuiteSpec) -> pd.DataFrame:
    """The ``cases`` table of a suite (inputs and metadata as JSON text)."""
    ids = suite.case_ids
    # json.dumps with options makes a new encoder per call; one encoder writes the same.
    encode = json.JSONEncoder(ensure_ascii=False, default=str).encode

    def n_expectations(c: CaseSpec) -> int:
        return (
            (c.expected_output is not None)
            + len(c.expected_contains)
            + (c.output_json_schema is not None)
            + len(c.required_output_fields)
            + len(c.required_tools)
            + len(c.forbidden_tools)
            + len(c.required_tool_arguments)
            + len(c.expected_tool_arguments)
            + bool(c.required_tool_order)
            + (c.max_latency_ms is not None)
            + (c.max_cost_usd is not None)
            + (c.max_turns is not None)
            + len(c.evaluators)
        )

    return pd.DataFrame(
        {
            "case_id": codes_categorical(np.arange(len(ids), dtype=np.int32), ids),
            "case_index": np.arange(len(ids), dtype=np.int32),
            "case_name": pd.array([c.name for c in suite.cases], dtype="str"),
            "tags": pd.array([",".join(c.tags) for c in suite.cases], dtype="str"),
            "n_expectations": np.asarray([n_expectations(c) for c in suite.cases], dtype=np.int32),
            "input": pd.array(
                [encode(c.input) for c in suite.cases],
                dtype="str",
            ),
            "metadata": pd.array(
                [encode(c.metadata) for c in suite.cases],
                dtype="str",
            ),
        }
    )
