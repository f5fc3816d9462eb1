"""The parts of an :class:`~agenticlens_frames.ExperimentRun` from DataFrames a user has.

Results gathered elsewhere (another harness, a spreadsheet, a database export) become a
run that :func:`~agenticlens_frames.analyze`, every figure and every report accept. The
frames are checked first: a missing column, a wrong type, an unknown variant or case, a
repeated or missing attempt is refused with the frame, the column and the fix.
:func:`frame_parts` returns the specs and the raw ``attempts`` and ``trials`` tables;
:meth:`ExperimentRun.from_frames <agenticlens_frames.frames.ExperimentRun.from_frames>`
types them with the tables' schemas and builds the run (so this module stays below
frames.py and knows no schema).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ._suggest import require_known
from ._values import is_missing
from .errors import InputError
from .formats.model import (
    ATTEMPT_STATUSES,
    FACTOR_PREFIX,
    CaseSpec,
    EvaluatorRef,
    ManifestSpec,
    SuiteSpec,
    VariantSpec,
)
from .formats.traces import COST_SOURCES

__all__ = ["FrameParts", "frame_parts"]

#: Columns each frame must have, and the optional ones read when present.
REQUIRED = {
    "attempts": ("variant_id", "trial", "case_id", "passed"),
    "variants": ("variant_id",),
    "cases": ("case_id",),
}
OPTIONAL_ATTEMPT_COLUMNS = (
    "score",
    "latency_ms",
    "cost_usd",
    "cost_source",
    "output",
    "status",
    "error",
    "target_attempts",
)

#: The one expectation each case declares: the ``passed`` column (the paired comparisons'
#: ``passed`` evaluator) judged its attempts. Kept in the suite, not only in the ``cases``
#: table, so every copy of the run (parquet, archive) counts it as a suite case's.
PASSED_GIVEN = EvaluatorRef(name="passed")

#: The fewest variants a run may have: a baseline and one candidate, the least a comparison
#: needs (a manifest, under AgenticLens's rule, needs three). ``Archive.add`` holds runs
#: built any other way to it too.
MIN_VARIANTS = 2


def _check_frame(frame: Any, what: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise InputError(
            f"expected a pandas DataFrame, got {type(frame).__name__}",
            file=f"{what} frame",
            hint="pass polars frames as frame.to_pandas()",
        )
    missing = [c for c in REQUIRED[what] if c not in frame.columns]
    if missing:
        raise InputError(
            f"column(s) {', '.join(map(repr, missing))} missing",
            file=f"{what} frame",
            hint=f"it needs {', '.join(REQUIRED[what])}; it has "
            + (", ".join(map(str, frame.columns[:20])) or "no columns"),
        )
    return frame


#: What each frame reads beyond its required columns (``factor_<name>`` columns of the
#: variants frame too), in the words the warning uses.
_READS: dict[str, str] = {
    "attempts": "score (0-1), latency_ms (milliseconds), cost_usd, cost_source, output, status, "
    "error and target_attempts",
    "variants": "variant_name, description, is_baseline and factor_<name> columns",
    "cases": "case_name, input, tags and metadata",
}
_OPTIONAL: dict[str, tuple[str, ...]] = {
    "attempts": OPTIONAL_ATTEMPT_COLUMNS,
    "variants": ("variant_name", "description", "is_baseline"),
    "cases": ("case_name", "input", "tags", "metadata"),
}
#: Columns of ``run.attempts`` / ``run.variants`` / ``run.cases`` that a run derives (not
#: read, not warned about): the run's own tables can be passed back.
_DERIVED: dict[str, tuple[str, ...]] = {
    # The run's own attempts: what the checks, traces and execution order gave (a run
    # built from frames has none of them; it rebuilds them, see docs/data-model.md).
    "attempts": (
        "experiment_id",
        "case_index",
        "n_checks",
        "n_checks_passed",
        "score_sum",
        "trace_id",
        "trace_shape",
        "tools",
        "n_tool_calls",
        "turns",
        "run_order",
    ),
    "variants": ("position", "target_kind", "target", "timeout_seconds"),
    "cases": ("case_index", "n_expectations"),
}
_HINT: dict[str, str] = {
    "attempts": "rename a column that holds one of these (converting its unit), and give "
    "factors as factor_<name> columns of the variants frame",
    "variants": "give each factor as a factor_<name> column (model → factor_model)",
    "cases": "put case attributes (a topic to cluster on) in the metadata column, one dict "
    "per case",
}


def _warn_unread(frame: pd.DataFrame, what: str) -> None:
    """Say which columns of a frame are not read: ``latency_s`` or ``cost`` among the
    attempts, ``model`` among the variants (not ``factor_model``) would otherwise vanish
    without a word, and the run would have no latency, cost or factors.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _warn_unread(pd.DataFrame(columns=["variant_id", "latency_s"]), "attempts")
    ...     _warn_unread(pd.DataFrame(columns=["variant_id", "model"]), "variants")
    >>> str(caught[0].message)  # doctest: +ELLIPSIS
    "attempts frame: column(s) 'latency_s' not read; it reads ... latency_ms (milliseconds)..."
    >>> str(caught[1].message)  # doctest: +ELLIPSIS
    "variants frame: column(s) 'model' not read; ... (model → factor_model)"
    """
    known = {*REQUIRED[what], *_OPTIONAL[what], *_DERIVED[what]}
    unread = [
        str(c)
        for c in frame.columns
        if c not in known and not (what == "variants" and str(c).startswith(FACTOR_PREFIX))
    ]
    if unread:
        warnings.warn(
            f"{what} frame: column(s) {', '.join(map(repr, unread))} not read; it reads "
            f"{', '.join(REQUIRED[what])}, {_READS[what]}: {_HINT[what]}",
            UserWarning,
            stacklevel=4,
        )


def _first(mask: Any, frame: pd.DataFrame | pd.Series) -> tuple[int, str]:
    """The first row where ``mask`` holds: its position, and how an error names it — "row
    3", with the index label when the frame has its own index (a user looks a row up
    with ``.loc``).

    Examples
    --------
    >>> _first([False, True], pd.Series([1, 2]))
    (1, 'row 1')
    >>> _first([False, True], pd.Series([1, 2], index=["x", "y"]))
    (1, "row 1 (index 'y')")
    """
    row = int(np.flatnonzero(np.asarray(mask, dtype=bool))[0])
    index = frame.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return row, f"row {row}"
    return row, f"row {row} (index {index[row]!r})"


def _ids(frame: pd.DataFrame, column: str, what: str) -> list[str]:
    values = frame[column]
    if values.isna().any():
        _, where = _first(values.isna(), frame)
        raise InputError(f"column {column!r} has an empty value at {where}", file=f"{what} frame")
    ids = values.astype(str).tolist()
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise InputError(
                f"{column} {value!r} appears twice", file=f"{what} frame", hint="ids are unique"
            )
        seen.add(value)
    return ids


def _too_few_variants(variant_ids: list[str], attempts: pd.DataFrame) -> InputError:
    """The error for a variants frame of fewer than two rows, naming the variants the
    attempts have (``variants`` built from the baseline alone, or with ``.head(1)``, said
    only "a comparison needs at least two variants" beside attempts of four)."""
    listed = ", ".join(map(repr, variant_ids)) or "none"
    named = pd.unique(attempts["variant_id"].dropna().astype(str)).tolist()
    missing = [v for v in named if v not in variant_ids]
    if not missing:
        return InputError(
            f"a comparison needs at least two variants; the variants frame lists {listed}, "
            "and the attempts name no other",
            file="variants frame",
            hint="add the attempts of a second variant, and a row for it in the variants frame",
        )
    shown = ", ".join(map(repr, named[:10])) + (
        f" (and {len(named) - 10} more)" * (len(named) > 10)
    )
    return InputError(
        f"a comparison needs at least two variants; the variants frame lists {listed}, the "
        f"attempts name {len(named)}: {shown}",
        file="variants frame",
        hint="list every variant, one row each, e.g. "
        "variants=pd.DataFrame({'variant_id': attempts['variant_id'].unique()}) "
        "(with variant_name, is_baseline, ... columns as needed)",
    )


#: The largest trial number (the tables' trial column is int32).
_MAX_TRIAL = 2**31 - 1


def _flags(column: pd.Series) -> list[bool]:
    """A yes/no column: booleans or 0/1, empty as no. Text is refused: ``"False"`` would
    count as a flag."""
    out = []
    for row, value in enumerate(column.tolist()):
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            out.append(False)
        elif isinstance(value, bool | np.bool_) or (
            isinstance(value, int | float | np.integer | np.floating) and value in (0, 1)
        ):
            out.append(bool(value))
        else:
            raise InputError(
                f"column {column.name!r} must hold True/False, got {value!r} at row {row}",
                file="variants frame",
            )
    return out


def _numeric(
    frame: pd.DataFrame, column: str, *, low: float | None = None, hint: str | None = None
) -> np.ndarray:
    try:
        values = pd.to_numeric(frame[column], errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"column {column!r} is not numeric ({exc})", file="attempts frame"
        ) from None
    if np.isinf(values).any():
        row, where = _first(np.isinf(values), frame)
        raise InputError(
            f"column {column!r} is {values[row]} at {where}; expected a finite number "
            "(leave a value that is not known empty)",
            file="attempts frame",
        )
    if low is not None and (values[~np.isnan(values)] < low).any():
        row, where = _first(values < low, frame)
        raise InputError(
            f"column {column!r} is {values[row]:g} at {where}; expected ≥ {low:g}",
            file="attempts frame",
            hint=hint,
        )
    return values


def _passed(frame: pd.DataFrame) -> np.ndarray:
    column = frame["passed"]
    if column.isna().any():
        _, where = _first(column.isna(), column)
        raise InputError(
            f"column 'passed' is empty at {where}",
            file="attempts frame",
            hint="every attempt passed (True) or not (False); a failed call is False "
            "with status 'target_error'",
        )
    values = column.to_numpy()
    if column.dtype != bool:
        # The first value that is not a flag, by row: "got values such as True" named
        # the first row, whatever it held, and text ("True", "yes") came with no fix.
        bad = ~np.isin(values, [0, 1, True, False])
        if bad.any():
            row, where = _first(bad, column)
            raise InputError(
                f"column 'passed' must be boolean, got {values[row]!r} at {where}",
                file="attempts frame",
                hint="True/False or 1/0; convert text first, e.g. "
                "attempts.assign(passed=attempts['passed'].map({'True': True, 'False': False}))",
            )
    return values.astype(bool)


def _case_tags(value: Any, row: int) -> tuple[str, ...]:
    """A case's tags: comma-joined text (the ``cases`` table's own form) or a list.

    Examples
    --------
    >>> _case_tags("refund,billing", 0), _case_tags(["refund", "billing"], 1), _case_tags(None, 2)
    (('refund', 'billing'), ('refund', 'billing'), ())
    """
    if isinstance(value, str):
        return tuple(value.split(",")) if value else ()
    if isinstance(value, list | tuple | set | frozenset | np.ndarray):
        # A list was dropped without a word: the case had no tags (archive slices by tag).
        return tuple(str(tag) for tag in value)
    if is_missing(value):
        return ()
    raise InputError(
        f"column 'tags' must hold comma-joined text or a list of tags, got {value!r} at row {row}",
        file="cases frame",
    )


def _case_metadata(value: Any, row: int) -> dict[str, Any]:
    """A case's metadata: a mapping, or a JSON object as text (the ``cases`` table's own
    form, so that ``run.cases`` can be passed back).

    Examples
    --------
    >>> _case_metadata({"topic": "refunds"}, 0), _case_metadata('{"topic": "refunds"}', 1)
    ({'topic': 'refunds'}, {'topic': 'refunds'})
    >>> _case_metadata("refunds", 2)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: cases frame: column 'metadata' must hold a dict \
(or a JSON object as text), got 'refunds' at row 2 (...)
    """
    if isinstance(value, Mapping):
        return dict(value)
    if is_missing(value):
        return {}
    if isinstance(value, str):
        # Text was dropped without a word; a cluster field named in the comparisons (a
        # metadata key) then had no value.
        with contextlib.suppress(ValueError):
            parsed = json.loads(value)
            if isinstance(parsed, dict):
                return parsed
    raise InputError(
        f"column 'metadata' must hold a dict (or a JSON object as text), got {value!r} at "
        f"row {row}",
        file="cases frame",
        hint="one dict per case, e.g. {'topic': 'refunds'}; leave it empty for none",
    )


def _own_json_text(frame: pd.DataFrame, column: str) -> bool:
    """Whether ``frame[column]`` is a run's own JSON-text column, unchanged: ``run.cases``
    marks its input so (:data:`~._json_text.JSON_TEXT_KEY`) with the column's digest, and the
    mark follows the frame through pandas, so a column replaced since does not match.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> cases = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml").cases
    >>> _own_json_text(cases, "input"), _own_json_text(cases[cases.index > 0], "input")
    (True, False)
    >>> _own_json_text(cases.assign(input="Where is my order?"), "input")
    False
    """
    from ._json_text import JSON_TEXT_KEY, json_text_digest

    marks = frame.attrs.get(JSON_TEXT_KEY)
    if not isinstance(marks, Mapping) or column not in frame.columns:
        return False
    digest = marks.get(column)
    return isinstance(digest, str) and digest == json_text_digest(frame[column])


def _json_input(value: Any) -> Any:
    """An input of a marked column: the JSON value its text holds; text that is no JSON
    (a table built by hand as a run's) by :func:`_case_input`'s rule, never a crash.

    Examples
    --------
    >>> _json_input("42"), _json_input("null"), _json_input("Where is my order?")
    (42, None, 'Where is my order?')
    """
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return _case_input(value)


#: How JSON text of an input begins: an object, an array or a string (``run.cases["input"]``
#: holds such an input so). A number, true/false or null is read as the text it is.
_JSON_INPUT_STARTS = ("{", "[", '"')


def _case_input(value: Any) -> Any:
    """A case's input: text holding JSON of an object, an array or a string is that JSON
    value (the ``cases`` table's own form, so ``run.cases`` can be passed back without its
    inputs being encoded twice); anything else as it is.

    Examples
    --------
    >>> _case_input('{"question": "Where is my order?"}'), _case_input('"hello"')
    ({'question': 'Where is my order?'}, 'hello')
    >>> _case_input("Where is my order?"), _case_input("42"), _case_input({"q": 1})
    ('Where is my order?', '42', {'q': 1})
    >>> _case_input("[not json")  # text that only looks like JSON stays text
    '[not json'
    """
    if isinstance(value, str) and value[:1] in _JSON_INPUT_STARTS:
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


def _cost_sources(frame: pd.DataFrame, cost: np.ndarray) -> np.ndarray:
    """Each attempt's cost source: the ``cost_source`` column's (``measured`` or
    ``estimated``; empty: ``measured``), and null where no cost is given, as in every
    other run (docs/data-model.md)."""
    n = len(frame)
    given = frame["cost_source"].tolist() if "cost_source" in frame else [None] * n
    out = np.full(n, None, dtype=object)
    for row, value in enumerate(given):
        missing = is_missing(value)
        if not missing and value not in COST_SOURCES:
            _, where = _first(np.arange(n) == row, frame)
            raise InputError(
                f"column 'cost_source' must be one of {', '.join(map(repr, COST_SOURCES))} "
                f"or empty, got {value!r} at {where}",
                file="attempts frame",
                hint="'measured' for a cost the provider billed, 'estimated' for one "
                "computed from token counts and a price list; empty is 'measured'",
            )
        if not np.isnan(cost[row]):
            out[row] = "measured" if missing else value
    return out


def _target_attempts(frame: pd.DataFrame) -> Any:
    """Each attempt's calls to its target: the ``target_attempts`` column's (whole numbers
    ≥ 1, empty where not known, e.g. a recorded attempt), else 1 (one answer each)."""
    if "target_attempts" not in frame:
        return pd.array(np.ones(len(frame), dtype=np.int32), dtype="Int32")
    values = _numeric(
        frame,
        "target_attempts",
        low=1,
        hint="the calls made for the attempt, 1 for one call; leave it empty where not known",
    )
    known = ~np.isnan(values)
    bad = known & ((values != np.round(values)) | (values > _MAX_TRIAL))
    if bad.any():
        row, where = _first(bad, frame)
        raise InputError(
            f"column 'target_attempts' must hold whole numbers 1, 2, …, got {values[row]:g} "
            f"at {where}",
            file="attempts frame",
            hint="the calls made for the attempt, 1 for one call; leave it empty where not known",
        )
    return pd.array([int(v) if k else None for v, k in zip(values, known, strict=True)], "Int32")


class FrameParts(NamedTuple):
    """What :func:`frame_parts` makes of the user's frames, before the tables' schemas."""

    manifest: ManifestSpec
    suite: SuiteSpec
    #: One row per attempt in run order, the ``attempts`` table's columns, untyped.
    attempts: pd.DataFrame
    #: One row per (variant, trial), the ``trials`` table's columns, untyped.
    trials: pd.DataFrame


def frame_parts(
    attempts: pd.DataFrame,
    variants: pd.DataFrame,
    cases: pd.DataFrame,
    *,
    name: str,
    version: str,
    baseline: str | None,
    random_seed: int | None,
    suite_name: str,
) -> FrameParts:
    """Check an attempts, a variants and a cases frame and derive the run's parts (see
    :meth:`ExperimentRun.from_frames`, which declares the defaults, types the parts and
    builds the run)."""
    attempts = _check_frame(attempts, "attempts")
    variants = _check_frame(variants, "variants")
    cases = _check_frame(cases, "cases")
    for frame, what in ((attempts, "attempts"), (variants, "variants"), (cases, "cases")):
        _warn_unread(frame, what)
    variant_ids = _ids(variants, "variant_id", "variants")
    case_ids = _ids(cases, "case_id", "cases")
    if len(variant_ids) < MIN_VARIANTS:
        raise _too_few_variants(variant_ids, attempts)
    if not case_ids:
        raise InputError("no case", file="cases frame")

    # Keys of the attempts: known variants and cases, trials 1..T, each attempt once.
    for column in ("variant_id", "case_id"):
        empty = attempts[column].isna().to_numpy()
        if empty.any():  # else read as the id 'nan'
            raise InputError(
                f"column {column!r} is empty at {_first(empty, attempts)[1]}",
                file="attempts frame",
            )
    # Named as the attempts frame's: "column 'variant_id': unknown variant id" did not say
    # which frame, nor that the known ids are the variants (cases) frame's.
    for column, what, known, other in (
        ("variant_id", "variant id", variant_ids, "variants"),
        ("case_id", "case id", case_ids, "cases"),
    ):
        try:
            require_known(
                what, attempts[column].astype(str).unique(), known, location=f"column {column!r}"
            )
        except InputError as exc:
            raise InputError(
                f"{exc.message}, not in the {other} frame",
                file="attempts frame",
                location=exc.location,
                hint=f"{exc.hint}; add a row for it to the {other} frame, or drop its attempts",
            ) from None
    if not len(attempts):
        raise InputError("the attempts frame has no rows", file="attempts frame")
    trial = _numeric(
        attempts,
        "trial",
        low=1,
        # Counted from 0 (range(n), an attempt index) in the user's own logs, most often.
        hint="trials are numbered from 1: if yours count from 0, pass "
        "attempts.assign(trial=attempts['trial'] + 1)",
    )
    if np.isnan(trial).any() or (trial != np.round(trial)).any():
        raise InputError("column 'trial' must hold whole numbers 1, 2, …", file="attempts frame")
    if trial.max() > _MAX_TRIAL:  # int32 would wrap it (2**31 read as -2147483648)
        raise InputError(
            f"column 'trial' holds {trial.max():.0f}; trials are numbered 1, 2, … up to "
            f"{_MAX_TRIAL}",
            file="attempts frame",
        )
    trial = trial.astype(np.int32)
    trial_count = int(trial.max()) if len(trial) else 0
    v_code = pd.Index(variant_ids).get_indexer(attempts["variant_id"].astype(str))
    c_code = pd.Index(case_ids).get_indexer(attempts["case_id"].astype(str))
    key = (v_code.astype(np.int64) * (trial_count + 1) + trial) * len(case_ids) + c_code
    if len(np.unique(key)) != len(key):
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        row = int(first[counts > 1][0])
        raise InputError(
            f"attempt (variant {variant_ids[v_code[row]]!r}, trial {trial[row]}, case "
            f"{case_ids[c_code[row]]!r}) appears more than once",
            file="attempts frame",
            hint="one row per (variant_id, trial, case_id)",
        )
    expected = len(variant_ids) * trial_count * len(case_ids)
    if len(key) != expected:
        grid = set(key.tolist())
        for v, vid in enumerate(variant_ids):
            for t in range(1, trial_count + 1):
                for c, cid in enumerate(case_ids):
                    if (v * (trial_count + 1) + t) * len(case_ids) + c not in grid:
                        raise InputError(
                            f"no attempt for (variant {vid!r}, trial {t}, case {cid!r}); every "
                            f"variant runs every case in trials 1..{trial_count}",
                            file="attempts frame",
                            hint="add the row with status 'missing_sample' and passed False",
                        )

    # The specs: variants with their factors (factor_<name> columns), cases in order.
    base = None if baseline is None else str(baseline)  # ids are compared as text
    if base is None and "is_baseline" in variants:
        flags = _flags(variants["is_baseline"])
        flagged = [v for v, b in zip(variant_ids, flags, strict=True) if b]
        if len(flagged) > 1:
            raise InputError(
                f"{len(flagged)} variants are flagged is_baseline ({', '.join(flagged)})",
                file="variants frame",
                hint="flag one, or pass baseline=",
            )
        base = flagged[0] if flagged else None
    base = base or variant_ids[0]
    require_known("baseline variant id", [base], variant_ids, location="baseline")
    factor_columns = [c for c in variants.columns if str(c).startswith(FACTOR_PREFIX)]
    specs = []
    for i, row in enumerate(variants.to_dict("records")):
        factors = {
            str(c)[len(FACTOR_PREFIX) :]: str(row[c]) for c in factor_columns if pd.notna(row[c])
        }
        label = row.get("variant_name")
        specs.append(
            VariantSpec(
                id=variant_ids[i],
                name=variant_ids[i] if label is None or pd.isna(label) else str(label),
                target_kind="recorded",
                target="(data frame)",
                resolved_target="(data frame)",
                description=str(row.get("description") or ""),
                factors=factors,
            )
        )
    manifest = ManifestSpec(
        path=Path(f"{name}.frames"),
        name=name,
        version=version,
        baseline_variant_id=base,
        variants=tuple(specs),
        trial_count=trial_count,
        random_seed=random_seed,
        minimum_trials=min(5, trial_count),
    )
    # run.cases' own input column (marked, unchanged since): every value is JSON text,
    # decoded exactly (42, true, null too); any other column by _case_input's rule.
    read_input = _json_input if _own_json_text(cases, "input") else _case_input
    case_specs = []
    for i, row in enumerate(cases.to_dict("records")):
        label = row.get("case_name")
        case_specs.append(
            CaseSpec(
                id=case_ids[i],
                name=case_ids[i] if label is None or pd.isna(label) else str(label),
                index=i,
                input=read_input(row.get("input")),
                tags=_case_tags(row.get("tags"), i),
                metadata=_case_metadata(row.get("metadata"), i),
                # Every case has its `passed` values (refused empty, and every case has
                # its attempts): each was judged, as a suite case with expectations is.
                evaluators=(PASSED_GIVEN,),
            )
        )
    suite = SuiteSpec(path=Path(f"{suite_name}.frames"), name=suite_name, version=version,
                      cases=tuple(case_specs))  # fmt: skip

    # The attempts in the declared schema; absent optional columns get their neutral value.
    passed = _passed(attempts)
    n = len(attempts)
    score = _numeric(attempts, "score") if "score" in attempts else passed.astype(float)
    outside = (score < 0) | (score > 1)  # (NaN compares False: an unknown score is kept)
    if outside.any():
        row, where = _first(outside, attempts)
        raise InputError(
            f"column 'score' must lie in [0, 1], got {score[row]:g} at {where}",
            file="attempts frame",
            hint="rescale it, e.g. attempts.assign(score=attempts['score'] / 100) for a "
            "0-100 scale",
        )
    if "status" in attempts and (empty := attempts["status"].isna().to_numpy()).any():
        # Read as the status 'nan', refused as unknown without saying where.
        raise InputError(
            f"column 'status' is empty at {_first(empty, attempts)[1]}",
            file="attempts frame",
            hint="give every attempt its status ('ok' when it was answered and judged), or "
            "leave the column out for all 'ok'",
        )
    status = attempts["status"].astype(str).to_numpy() if "status" in attempts else np.full(n, "ok")
    bad = sorted(set(status) - set(ATTEMPT_STATUSES))
    if bad:
        require_known("attempt status", bad, ATTEMPT_STATUSES, location="column 'status'")
    # Only an answered attempt can pass (docs/data-model.md: passed is False for every
    # status but ok). A failed call or trial marked passed was counted as a pass by the
    # pass rates and the verdicts, and as unevaluated by other analyses.
    contradicts = (status != "ok") & passed
    if contradicts.any():
        row, where = _first(contradicts, attempts)
        raise InputError(
            f"{where} has status {status[row]!r} and passed True: only an answered "
            "attempt (status 'ok') was evaluated and can pass",
            file="attempts frame",
            hint="set passed False for it, or give the status of what happened",
        )

    def text(column: str) -> list[Any]:
        if column not in attempts:
            return [None] * n
        return [None if pd.isna(v) else str(v) for v in attempts[column]]

    cost = _numeric(attempts, "cost_usd", low=0) if "cost_usd" in attempts else np.full(n, np.nan)
    order = np.lexsort((c_code, trial, v_code))
    table = pd.DataFrame(
        {
            "experiment_id": [f"{name}@{version}"] * n,
            "variant_id": np.asarray(variant_ids, dtype=object)[v_code],
            "trial": trial,
            "case_id": np.asarray(case_ids, dtype=object)[c_code],
            "case_index": c_code.astype(np.int32),
            "status": status,
            "passed": passed,
            "score": score,
            "n_checks": np.ones(n, dtype=np.int32),
            "n_checks_passed": passed.astype(np.int32),
            "score_sum": score,
            "latency_ms": _numeric(attempts, "latency_ms", low=0)
            if "latency_ms" in attempts
            else np.full(n, np.nan),
            "cost_usd": cost,
            "cost_source": _cost_sources(attempts, cost),
            "output": text("output"),
            "trace_id": [None] * n,
            "trace_shape": [None] * n,
            "tools": [""] * n,
            "n_tool_calls": np.zeros(n, dtype=np.int32),
            # Unknown, as a trace without a positive turn count (docs/data-model.md).
            "turns": pd.array([None] * n, dtype="Int32"),
            "target_attempts": _target_attempts(attempts),
            "error": text("error"),
            "run_order": np.empty(n, dtype=np.int32),
        }
    ).iloc[order]
    # Trials run in (variant, trial) order: each trial's execution position is its place
    # in that order, and every row of the trial carries it as run_order (docs/data-model.md).
    sorted_key = (v_code[order].astype(np.int64) * (trial_count + 1)) + trial[order]
    first = np.concatenate([[True], sorted_key[1:] != sorted_key[:-1]]) if n else np.zeros(0, bool)
    table["run_order"] = (np.cumsum(first) - 1).astype(np.int32)
    per_trial = table.assign(_f=table["status"] == "trial_failed").groupby(
        ["variant_id", "trial"], sort=False
    )
    failed = per_trial["_f"].all()
    # load_experiment gives a failed trial's error to each of its attempts
    # (TableBuilder.add_failed_trial): the trial's error_message is theirs, the first set
    # one in case order where they differ. A trial that did not fail has none.
    errors = per_trial["error"].first()
    trials = pd.DataFrame(
        {
            "variant_id": [v for v, _ in failed.index],
            "trial": np.asarray([t for _, t in failed.index], dtype=np.int32),
            "status": np.where(failed.to_numpy(), "failed", "succeeded"),
            "error_message": [
                e if f and isinstance(e, str) else None
                for f, e in zip(failed.tolist(), errors.tolist(), strict=True)
            ],
            "execution_position": np.arange(len(failed), dtype=np.int32),
        }
    )

    return FrameParts(manifest, suite, table, trials)
