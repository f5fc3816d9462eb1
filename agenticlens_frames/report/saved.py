"""Read a saved JSON report (ours or the package's) back into result frames.

``experiment report REPORT.json`` re-renders the console summary, HTML and CSVs from
these frames without running anything, exactly as from a fresh analysis.
"""

from __future__ import annotations

import codecs
import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pandas as pd

from .._deprecate import keyword_hints
from .._gc import paused_gc
from .._values import is_json_number
from ..analysis import ExperimentAnalysis
from ..errors import InputError, check_path
from ..formats._io import JSON_REFUSED, loads_json, loads_scrubbed, read_input
from ..formats.comparisons import DIMENSIONS
from ..frames import TRIAL_STATUSES
from ..paired.verdicts import empty_verdicts
from ..schema import (
    CASES,
    COMPARISONS,
    FACTOR_LEVELS,
    TRIALS,
    VARIANTS,
    count_from_json,
    json_ready,
    report_keys,
)
from .infinite import restore_infinite
from .paired_json import paired_frames_from_block
from .verdicts_json import verdicts_from_block

if TYPE_CHECKING:
    from ..frames import ExperimentRun
    from ..paired.settings import ComparisonsConfig

__all__ = ["REBUILT_NOTE", "load_report"]

_REQUIRED_TOP = (
    "experiment_name",
    "experiment_version",
    "suite_name",
    "suite_version",
    "baseline_variant_id",
    "trial_count",
    "confidence_level",
    "regression_threshold",
    "pass_k",
    "minimum_trials",
    "randomization",
    "variants",
    "comparisons",
    "pareto_frontier_variant_ids",
    "factor_levels",
    "case_ids",
    "warnings",
)


def _get(data: dict, key: str, file: Path, where: list[str | int]) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise InputError(
            f"missing key {key!r}",
            file=file,
            location=[*where] or None,
            hint="is this an experiment report written by `experiment run --save`?",
        )
    return data[key]


def _text(value: Any, file: Path, where: list[str | int]) -> str:
    # Names are rendered (console, CSV, HTML): anything but a string is a damaged report.
    if not isinstance(value, str):
        raise InputError(
            f"expected a string, got {type(value).__name__}", file=file, location=where
        )
    return value


@keyword_hints
def load_report(
    path: str | Path, *, comparisons: ComparisonsConfig | Mapping[str, Any] | None = None
) -> ExperimentAnalysis:
    """Load a schema-1.1 experiment report into an :class:`ExperimentAnalysis`.

    The result has ``run=None`` (the tidy tables are not in a report); every result
    frame a renderer needs is rebuilt from the report's own numbers.

    A report without case-level verdicts of its own (AgenticLens 0.10 wrote it) gets them
    from its trials' per-case records (:func:`~.rebuild.run_from_report`): the paired
    comparisons under ``comparisons`` — the correction declared now, since such a report
    declares none — or, without it, per-comparison intervals and no verdict. A report
    with verdicts keeps them: its correction was fixed before its numbers were seen, and
    ``comparisons`` is refused for it.

    Parameters
    ----------
    path
        The report (JSON).
    comparisons
        Paired-comparison settings for a report that has no verdicts: a
        :class:`~agenticlens_frames.paired.ComparisonsConfig` or a mapping such as
        ``{"correction": "holm"}``.

    Examples
    --------
    >>> import tempfile, os
    >>> from agenticlens_frames import analyze, load_experiment, write_json_report
    >>> path = os.path.join(tempfile.mkdtemp(), "report.json")
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> _ = write_json_report(analyze(run), path)
    >>> load_report(path).verdicts.attrs["correction"]
    'holm'
    """
    from ..paired.settings import as_comparisons

    config = as_comparisons(comparisons)
    # A large report is millions of small objects with no cycles: collecting while they
    # are made only walks them again and again (see _gc.paused_gc).
    with paused_gc():
        return _load(check_path(path, "a saved experiment report"), config)


def _load(file: Path, comparisons: ComparisonsConfig | None = None) -> ExperimentAnalysis:
    if file.is_dir():
        raise _not_a_report(file, None) or InputError(
            "is a directory, not a saved experiment report",
            file=file,
            hint="give the JSON report `experiment run --save` wrote",
        )
    raw = read_input(file)
    try:
        # Regular files within the size limit only (a FIFO, /dev/zero, a link loop are
        # refused by read_input, naming the file).
        data = _read_json(raw)
    except RecursionError:
        raise InputError("not valid JSON: nested too deeply", file=file) from None
    except UnicodeDecodeError as exc:
        raise _not_a_report(file, raw) or InputError(
            f"not UTF-8 text (byte {exc.start})", file=file
        ) from exc
    except json.JSONDecodeError as exc:
        raise _not_a_report(file, raw) or InputError(
            f"not valid JSON: {exc.msg}",
            file=file,
            location=f"line {exc.lineno}, column {exc.colno}",
        ) from exc
    if not isinstance(data, dict):
        raise InputError("a report must be a JSON object", file=file)
    if any(key not in data for key in _REQUIRED_TOP):
        # Another of the package's JSON files (a manifest, a recorded-trials file, a run
        # folder's run.json) is named as what it is, with the function that reads it.
        known = _not_a_report(file, raw, data)
        if known is not None:
            raise known
    del raw
    for key in _REQUIRED_TOP:
        _get(data, key, file, [])
    if str(data.get("schema_version", "1.1")) != "1.1":
        raise InputError(
            f"report schema_version {data.get('schema_version')!r} is not supported (need '1.1')",
            file=file,
            location="schema_version",
        )
    # An infinite df or mde our blocks hold as null (JSON has no infinity), back in place
    # before they are read (report/infinite.py); a report without the list reads NaN.
    restore_infinite(data, file)
    # A hand-edited or truncated report can hold any JSON where a number or list belongs;
    # ``place`` follows the reading so such a value is reported where it is, not as a crash.
    place: list[str | int] = []
    try:
        return _parse(data, file, place, comparisons)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        if isinstance(exc, InputError):
            raise
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(
            f"unexpected value ({detail})",
            file=file,
            location=list(place) or None,
            hint="is this an experiment report written by `experiment run --save`?",
        ) from None


_ANALYZE = "then analyze(run) gives what a report holds"
_RUN_FOLDER_HINT = (
    "read its tables with read_parquet(folder) (or load_experiment(manifest_path, "
    "suite_path, run_dir=folder)), " + _ANALYZE + "; or save a report with `experiment run "
    "MANIFEST SUITE --run-dir FOLDER --save report.json`"
)
_EXPERIMENT_HINT = (
    "load the experiment with load_experiment(manifest_path, suite_path), " + _ANALYZE + "; "
    "or run `experiment run MANIFEST SUITE --save report.json` and load that report"
)
_CSV_OUTPUTS = ("variant_id,variant_name,", "variant_id,case_id,case_name,")


def _not_a_report(
    file: Path, raw: bytes | None, data: Mapping[str, Any] | None = None
) -> InputError | None:
    """An error naming what ``file`` is instead of a saved report (a folder, a manifest, a
    suite, a CSV, a parquet file, ...) and the function that reads it; None when it looks
    like none of those (a damaged report is then described by the caller).

    Called only on the way to an error: ``load_report("manifest.yaml")`` said "not valid
    JSON: Expecting value", which named neither the mix-up nor the way out.
    """
    what: str | None = None
    hint = "give the JSON report `experiment run --save` wrote"
    if raw is None:  # a folder
        if (file / "run.json").is_file() or (file / "journal").is_dir():
            what, hint = "a run folder (`experiment run --run-dir`)", _RUN_FOLDER_HINT
        elif (file / "attempts.parquet").exists() or (file / "tables").is_dir():
            what = "a folder of parquet tables (`experiment run --parquet`)"
            hint = f"read it with read_parquet(folder), {_ANALYZE}"
        elif any(file.glob("*.y*ml")):
            what = "a folder of experiment files"
            shown = ", ".join(str(p) for p in sorted(file.glob("*.y*ml"))[:4])
            hint = f"{_EXPERIMENT_HINT} (here: {shown})"
        else:
            return None
    elif raw.startswith(b"PAR1"):
        what = "a parquet file"
        hint = (
            "a run's tables are read as a folder: read_parquet(the folder holding it), " + _ANALYZE
        )
    elif data is not None:
        if "experiment_name" in data:
            return None  # a report with keys missing: the caller names the key
        if {"variant_id", "trials"} <= data.keys():
            what = "a recorded-trials file (a recorded variant's target)"
            hint = f"name it in a manifest and {_EXPERIMENT_HINT}"
        elif {"format", "manifest_sha256"} <= data.keys():
            what, hint = "a run folder's run.json", _RUN_FOLDER_HINT
        elif {"variants", "baseline_variant_id"} <= data.keys():
            what, hint = "an experiment manifest", _EXPERIMENT_HINT
        elif "cases" in data:
            what, hint = "an evaluation suite", _EXPERIMENT_HINT
        else:
            return None
    else:
        head = raw[:65536].decode("utf-8", errors="replace").lstrip("\ufeff")
        keys = {line.split(":", 1)[0] for line in head.splitlines() if ":" in line[:40]}
        if head.startswith(_CSV_OUTPUTS) or file.suffix.lower() == ".csv":
            what = "a CSV file (the CSVs `--csv` and `--cases-csv` write are outputs only)"
            hint = "a report is re-read from the JSON `experiment run --save` wrote beside them"
        elif head.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
            # `experiment report report.html`: the page the report was rendered to.
            what = "an HTML page (the page `--html` writes is an output only)"
            hint = "a report is re-read from the JSON `experiment run --save` wrote beside it"
        elif {"variants", "baseline_variant_id"} <= keys:
            what, hint = "an experiment manifest (YAML)", _EXPERIMENT_HINT
        elif "cases" in keys:
            what, hint = "an evaluation suite (YAML)", _EXPERIMENT_HINT
        else:
            return None
    return InputError(f"this is {what}, not a saved experiment report", file=file, hint=hint)


def _read_json(raw: bytes) -> Any:
    """The saved report ``raw`` parsed, as :func:`json.loads` of its UTF-8 text gives it,
    but for its trials' per-case records (``variants[].trials[].report.cases``): left out
    of a report with verdicts of its own, which no output reads them for (but for each
    record's ``latency_ms``, :class:`_RecordLatencies`, in a report written under
    ``latency_missing="exclude"``: they give the trial's ``average_latency_ms_package``),
    and given as :class:`~.rebuild.PendingRecords` in one without, parsed one trial at a
    time when :func:`~.rebuild.run_from_report` reaches them.

    Those records are nearly all of a report (a 4 variants x 5 trials x 4 000 cases report
    is 200 MB). Parsed whole, they took several times their size: the text decoded (UCS-2
    as soon as it holds one character beyond Latin-1, so twice the file) and all their
    objects at once were most of the 950 MB that re-rendering that report peaked at. Here
    the bytes are parsed as they are (msgspec, no decoded copy) and the records are only
    checked for now. A document the fast path refuses (a byte-order mark, NaN, a lone
    surrogate, bad syntax) is read whole as before, for the standard parser's values and
    messages.
    """
    try:
        top = _RAW_OBJECT.decode(raw)
        # Skipped values are checked for syntax, not for their UTF-8 (json.loads of the
        # decoded text checks every byte): a bad byte anywhere is refused as before.
        if not _is_utf8(raw):
            raise ValueError("not UTF-8")
        records: Callable[[msgspec.Raw], Any] | None = None
        if "verdicts" not in top:
            # Its records give the verdicts (imported only then: pyarrow and the tables).
            from .rebuild import PendingRecords

            records = PendingRecords
        elif _excludes_unknown_latency(top.get("agenticlens_frames")):
            # Only their latencies: the package's 0-counted trial means, which the
            # summaries do not hold where a latency is unknown (_rebuilt_trial_columns).
            records = _RecordLatencies.read
        return {
            key: _objects(value, "trials", lambda t: _objects(t, "report", _report(records)))
            if key == "variants"
            else _parsed(value)
            for key, value in top.items()
        }
    except JSON_REFUSED:
        pass
    text = raw.decode("utf-8")
    del raw  # the text is the document now: not the file twice while it is parsed
    return loads_scrubbed(text)


# A JSON object with its values unparsed, a list of such objects (msgspec.Raw holds a
# slice of the input, not a copy).
_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_OBJECTS = msgspec.json.Decoder(list[dict[str, msgspec.Raw]])


def _objects(raw: msgspec.Raw, key: str, inner: Callable[[msgspec.Raw], Any]) -> Any:
    """The list of objects ``raw``, each one's ``key`` read by ``inner``; anything else
    (a damaged report) parsed as it is, for ``_parse`` to name its place."""
    try:
        items = _RAW_OBJECTS.decode(raw)
    except msgspec.ValidationError:
        return _parsed(raw)
    return [
        {name: inner(value) if name == key else _parsed(value) for name, value in item.items()}
        for item in items
    ]


def _report(records: Callable[[msgspec.Raw], Any] | None) -> Callable[[msgspec.Raw], Any]:
    """A trial report's reader: its ``cases`` given to ``records``, or left out (None)."""

    def read(raw: msgspec.Raw) -> Any:
        try:
            report = _RAW_OBJECT.decode(raw)
        except msgspec.ValidationError:
            return _parsed(raw)  # null (a failed trial), or damage
        return {
            name: _parsed(value) if name != "cases" else records(value)
            for name, value in report.items()
            if name != "cases" or records is not None
        }

    return read


def _excludes_unknown_latency(raw: msgspec.Raw | None) -> bool:
    """Whether the report's ``agenticlens_frames`` block (unparsed) says it was written
    under ``latency_missing="exclude"``; a damaged block is refused later, by ``_parse``."""
    if raw is None:
        return False
    try:
        block = _parsed(raw)
    except JSON_REFUSED:
        return False
    return isinstance(block, dict) and block.get("latency_missing") == "exclude"


class _Latency(msgspec.Struct):
    """A per-case record as far as its trial's package mean needs it."""

    latency_ms: float


_LATENCIES = msgspec.json.Decoder(list[_Latency])


def record_latencies(raw: msgspec.Raw) -> list[Any] | None:
    """Each ``latency_ms`` of a trial's per-case records ``raw`` (checked JSON), in case
    order, as :func:`json.loads` reads them; None when one is not a number or a record
    not an object (the trial's package mean is then not rebuilt).

    Examples
    --------
    >>> record_latencies(msgspec.Raw(b'[{"latency_ms": 2379.0, "output": "x"}, {"latency_ms": 0}]'))
    [2379.0, 0.0]
    >>> record_latencies(msgspec.Raw(b'[{"latency_ms": 1e999}]')), record_latencies(
    ...     msgspec.Raw(b'[{"latency_ms": null}]'))
    ([inf], None)
    """
    try:
        return [record.latency_ms for record in _LATENCIES.decode(raw)]
    except msgspec.ValidationError:
        pass  # not a float for msgspec (1e999, which json.loads reads as inf), or damage
    try:
        records = loads_json(memoryview(raw))
    except JSON_REFUSED:
        records = loads_scrubbed(bytes(raw).decode("utf-8"))
    return _latencies_of(records)


def _latencies_of(records: Any) -> list[Any] | None:
    """:func:`record_latencies` of records already parsed."""
    if not isinstance(records, list):
        return None
    values = [record.get("latency_ms") if isinstance(record, dict) else None for record in records]
    return values if all(is_json_number(value) for value in values) else None


class _RecordLatencies:
    """A trial's per-case records in a report with verdicts of its own, of which only
    each ``latency_ms`` is kept (:func:`record_latencies`): nothing else reads them."""

    __slots__ = ("values",)

    def __init__(self, values: list[Any] | None) -> None:
        self.values = values

    @classmethod
    def read(cls, raw: msgspec.Raw) -> _RecordLatencies:
        """The latencies of the records ``raw`` (the reader's ``cases``, :func:`_report`)."""
        return cls(record_latencies(raw))


def _parsed(raw: msgspec.Raw) -> Any:
    # A view, not the Raw: loads_json hands a deeply nested value to orjson, which reads
    # buffers but not msgspec's type.
    return loads_json(memoryview(raw))


def _is_utf8(raw: bytes) -> bool:
    """Whether ``raw`` is UTF-8, checked in pieces (decoding it whole took twice its size
    and ten times as long: the text becomes UCS-2)."""
    if raw.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(raw)
    try:
        for start in range(0, len(raw), _UTF8_PIECE):
            decoder.decode(view[start : start + _UTF8_PIECE])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


_UTF8_PIECE = 1 << 22


def _parse(
    data: dict, file: Path, place: list[str | int], declared: ComparisonsConfig | None = None
) -> ExperimentAnalysis:
    place[:] = ["pass_k"]
    ks = tuple(int(k) for k in data["pass_k"])
    if len(set(ks)) != len(ks) or min(ks, default=1) < 1:
        raise ValueError(f"expected distinct whole numbers ≥ 1, got {list(data['pass_k'])}")
    place[:] = ["confidence_level"]
    cl = float(data["confidence_level"])
    baseline = data["baseline_variant_id"]
    place[:] = ["pareto_frontier_variant_ids"]
    frontier = list(data["pareto_frontier_variant_ids"])
    for n, name in enumerate(frontier):
        _text(name, file, ["pareto_frontier_variant_ids", n])

    place[:] = ["variants"]
    items = data["variants"]
    if not isinstance(items, list):
        raise TypeError(f"expected a list of variants, got {type(items).__name__}")
    variants = VARIANTS.bind(ks)
    variant_rows = variants.rows_from_json(
        items, place=place, context={"baseline": baseline, "frontier": frontier}
    )
    cases, trials = CASES.bind(ks), TRIALS
    case_rows: list[dict[str, Any]] = []
    trial_rows: list[dict[str, Any]] = []
    for i, (v, row) in enumerate(zip(items, variant_rows, strict=True)):
        context = {"variant_id": row["variant_id"]}
        place[:] = ["variants", i, "cases"]
        these = cases.rows_from_json(
            _get(v, "cases", file, ["variants", i]), place=place, context=context
        )
        for j, case in enumerate(these):
            if case["passes"] > case["attempts"]:
                place[:] = ["variants", i, "cases", j, "passes"]
                raise ValueError(
                    f"{case['passes']} passes of {case['attempts']} attempts is not possible"
                )
        case_rows += these
        place[:] = ["variants", i, "trials"]
        trial_rows += trials.rows_from_json(v.get("trials") or [], place=place, context=context)
    variant_ids = [row["variant_id"] for row in variant_rows]
    if not isinstance(baseline, str) or baseline not in variant_ids:
        raise InputError(
            f"the baseline {baseline!r} is not one of the report's variants",
            file=file,
            location="baseline_variant_id",
        )
    place[:] = ["case_ids"]
    if not isinstance(data["case_ids"], list):
        # Text would be read letter by letter (repeated letters: a category twice).
        raise InputError(
            f"expected a list of case ids, got {type(data['case_ids']).__name__}",
            file=file,
            location="case_ids",
        )
    case_ids = [_text(name, file, ["case_ids", n]) for n, name in enumerate(data["case_ids"])]
    if len(set(case_ids)) < len(case_ids):
        twice = next(c for n, c in enumerate(case_ids) if c in case_ids[:n])
        raise InputError(f"case id {twice!r} appears twice", file=file, location="case_ids")
    # Keys as the analysis' frames have them: categories in report order (one vocabulary
    # of trial statuses), so a loaded report's frames equal the analysis' (tested).
    place[:] = ["variants"]
    variant_frame = variants.frame(variant_rows, {"variant_id": variant_ids})
    place[:] = ["variants", "cases"]
    case_frame = cases.frame(case_rows, {"variant_id": variant_ids, "case_id": case_ids})
    place[:] = ["variants", "trials"]
    trial_frame = trials.frame(trial_rows, {"variant_id": variant_ids, "status": TRIAL_STATUSES})
    # A failed trial's report is null, but its cases were all attempted and all failed,
    # as the analysis counts them (they read 0 of 0).
    failed = (trial_frame["status"] == "failed").to_numpy()
    trial_frame.loc[failed, ["total_cases", "failed_cases"]] = len(case_ids)
    place[:] = ["comparisons"]
    comparisons = COMPARISONS.from_json(data["comparisons"], place=place)
    place[:] = ["factor_levels"]
    factor_levels = FACTOR_LEVELS.from_json(data["factor_levels"], place=place, per_item=False)
    place[:] = ["trial_count"]
    trial_count = int(data["trial_count"])
    if trial_count < 1:
        raise ValueError(f"expected a whole number ≥ 1, got {trial_count}")
    place[:] = ["minimum_trials"]
    minimum_trials = int(data["minimum_trials"])
    place[:] = ["randomization"]
    randomization = data["randomization"]
    execution_order = []
    for i, pair in enumerate(randomization.get("execution_order", [])):
        place[:] = ["randomization", "execution_order", i]
        # The page draws the order from these pairs after the report is loaded.
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[1]) is int):
            raise TypeError(f"expected a [variant_id, trial] pair, got {pair!r}")
        execution_order.append((str(pair[0]), pair[1]))
    # What --max-unanswered gates on, from the trials' live blocks (the attempts are gone).
    unanswered = _unanswered_counts(items, variant_ids, place)
    place[:] = ["randomization"]
    info = {
        "experiment_name": data["experiment_name"],
        "experiment_version": data["experiment_version"],
        "suite_name": data["suite_name"],
        "suite_version": data["suite_version"],
        "baseline_variant_id": baseline,
        "trial_count": trial_count,
        "random_seed": data.get("random_seed"),
        "minimum_trials": minimum_trials,
        "execution_order": execution_order,
        "case_ids": list(data["case_ids"]),
        "created_at": data.get("created_at"),
        "unanswered_counts": unanswered,
    }
    place[:] = ["agenticlens_frames"]
    extras = data.get("agenticlens_frames") or {}
    if not isinstance(extras, dict):
        raise TypeError(f"expected an object, got {type(extras).__name__}")
    place[:] = ["agenticlens_frames", "latency_missing"]
    # (A report without it was written under the package's rule.) Any other value would be
    # read as "zero": a trial's 0.0 written for "no latency known" shown as 0 ms.
    latency_missing = extras.get("latency_missing", "zero")
    if latency_missing not in ("exclude", "zero"):
        raise ValueError(
            f"expected 'exclude' or 'zero' (the latency policy the run was analysed with), "
            f"got {latency_missing!r}"
        )
    place[:] = ["variants"]
    # (Before the written 0.0 of a trial without a known latency is read as unknown: it
    # is the package's mean there.)
    trial_frame = _rebuilt_trial_columns(trial_frame, items, execution_order, latency_missing)
    if latency_missing == "exclude":
        _unknown_trial_latency(trial_frame)
    place[:] = ["paired_comparisons"]
    paired_frames = (
        paired_frames_from_block(data["paired_comparisons"]) if "paired_comparisons" in data else {}
    )
    place[:] = ["case_level"]
    summary = (data.get("case_level") or {}).get("summary")
    if summary:
        paired_frames["case_level_summary"] = pd.DataFrame(summary)
    variance = (data.get("case_level") or {}).get("variance")
    if variance:
        from .paired_json import variance_frame_from_block

        # The analysis' variance_decomposition: every row and column is in the block.
        place[:] = ["case_level", "variance"]
        paired_frames["variance_decomposition"] = variance_frame_from_block(variance, variant_ids)
    place[:] = ["verdicts"]
    rebuilt_effects = pd.DataFrame()  # a report AgenticLens wrote: from its records
    if "verdicts" in data:
        verdicts = verdicts_from_block(data["verdicts"])
        # The comparisons without a row, and why: in the verdicts block; a report written
        # before it was kept there has them in its paired block (when it has one).
        if "omitted" not in verdicts.attrs and "paired_comparisons" in paired_frames:
            verdicts.attrs["omitted"] = paired_frames["paired_comparisons"].attrs["omitted"]
        if declared is not None:
            raise InputError(
                "this report has its own verdicts, under the correction its experiment "
                "declared before the run; a correction chosen now, after its numbers were "
                "seen, is refused",
                file=file,
                location="verdicts",
                hint="leave out --correction, or declare the new one in the manifest and "
                "run the experiment again as a new version",
            )
    else:
        # No verdicts of its own (AgenticLens wrote it): its trials' per-case records
        # give them, and the case-level intervals, as `experiment run` computes them.
        from .rebuild import run_from_report

        place[:] = ["variants"]
        verdicts = empty_verdicts(missing=True)
        try:
            rebuilt = run_from_report(data, file)
            if rebuilt is not None:
                paired_frames, verdicts, rebuilt_effects = _rebuilt_outputs(rebuilt, declared, cl)
        except InputError as exc:
            # The rest of the report stands: its own numbers are read and shown; only the
            # verdicts its records should give are missing, and the reason is said.
            verdicts.attrs["missing"] = (
                "This report has no case-level verdicts, and its per-case records cannot "
                f"give them: {exc}. The pass rates' intervals come from the report's "
                "per-case counts with cases as the unit; AgenticLens's own numbers, "
                "labelled, treat attempts as independent."
            )
        place[:] = []
    if "case_level_summary" not in paired_frames and len(case_frame):
        # A lean report without the block still has each case's counts: the pass rate is
        # led by its interval with cases as the unit, as ours is.
        from ..paired.case_level import case_level_from_counts

        # Counts no run can have (more passes than evaluated attempts: an edited report)
        # leave the pooled rate shown instead, marked as such.
        with contextlib.suppress(ValueError):
            paired_frames["case_level_summary"] = case_level_from_counts(
                case_frame, trial_frame, confidence_level=cl
            )
    unavailable: dict[str, str] = {}
    if "case_labels" not in paired_frames:
        # A report of ours gives each case's labelled counts: the case matrix's, but for
        # the cells case_level.label_counts lists (report/paired_json.py).
        place[:] = ["case_level", "label_counts"]
        labels = _case_labels(data.get("case_level"), case_frame, trial_frame, cl, file)
        if isinstance(labels, str):
            unavailable["case_labels"] = labels  # said, not a partial frame
        else:
            paired_frames["case_labels"] = labels
    judge_block = _judge_noise(data.get("judge_noise"), file)
    if judge_block:
        from ..judge_noise import judge_frames_from_block

        # The judge frames the analysis that wrote the report had (``analyze`` adds them
        # when the run has judge scores): every row is in the block.
        place[:] = ["judge_noise"]
        paired_frames = {**paired_frames, **judge_frames_from_block(judge_block)}
    # The case-level frames' keys as the analysis' (categories in report order); their
    # blocks hold them as text.
    for name in ("case_level_summary", "paired_comparisons", "noninferiority"):
        if name in paired_frames:
            place[:] = [name]
            paired_frames[name] = _keyed(paired_frames[name], variant_ids)
    if "paired_comparisons" in paired_frames:
        # Every candidate is compared (paired/comparisons.py); a gate reads this list to
        # fail a candidate without a row, which the report's block does not hold.
        paired_frames["paired_comparisons"].attrs.setdefault(
            "candidates", [v for v in variant_ids if v != baseline]
        )
    place[:] = ["verdicts"]
    verdicts = _keyed(verdicts, variant_ids)
    variants = variant_frame
    if isinstance(data.get("pareto_uncertainty"), dict):
        from ..frontier import SETTINGS_KEYS, merge_frontier_columns
        from .beyond_json import frontier_frame_from_block

        place[:] = ["pareto_uncertainty"]
        block = data["pareto_uncertainty"]
        variants = merge_frontier_columns(
            variants,
            frontier_frame_from_block(block),
            {k: block.get(k) for k in SETTINGS_KEYS},
        )
    effects = rebuilt_effects
    if isinstance(data.get("factor_effects"), dict):
        from .beyond_json import factor_effects_from_block

        place[:] = ["factor_effects"]
        effects = factor_effects_from_block(data["factor_effects"])
    place[:] = []
    # The settings the analysis' frames carry in attrs (analysis.variant_summary, …).
    regression_threshold = float(data["regression_threshold"])
    variants.attrs.update(confidence_level=cl, pass_k=ks, latency_missing=latency_missing)
    comparisons.attrs.update(confidence_level=cl, regression_threshold=regression_threshold)
    case_frame.attrs["pass_k"] = ks
    return ExperimentAnalysis(
        factor_effects=effects,
        # JSON-ready, as analyze() keeps it (an infinity null): the frames have the ±inf.
        judge_noise=json_ready(judge_block),
        paired_frames=paired_frames,
        verdicts=verdicts,
        run=None,
        confidence_level=cl,
        regression_threshold=regression_threshold,
        pass_k=ks,
        latency_missing=latency_missing,
        trials=trial_frame,
        cases=case_frame,
        variants=variants,
        comparisons=comparisons,
        factor_levels=factor_levels,
        pareto_frontier=frontier,
        warnings=list(data["warnings"]),
        info={**info, **({"unavailable_frames": unavailable} if unavailable else {})},
        extras=_extras(extras, file),
    )


#: Why a report without ``case_level.label_counts`` gives no ``case_labels`` frame.
LABELS_UNAVAILABLE = (
    "this report holds each variant's number of cases per stability label and its flaky "
    "case ids (case_level.labels, case_level.flaky_case_ids), not each case's counts, "
    "which the frame needs; a report written by this version holds them "
    "(case_level.label_counts): write the report from the run again (`experiment run --save`)"
)
#: Why a report with no case-level block (AgenticLens wrote it) whose per-case records
#: could not be read gives none.
LABELS_NOT_REBUILT = (
    "this report has no case_level block (AgenticLens wrote it), and its trials' per-case "
    "records could not give the cases' counts"
)


def _case_labels(
    block: Any, cases: pd.DataFrame, trials: pd.DataFrame, confidence_level: float, file: Path
) -> pd.DataFrame | str:
    """The analysis' ``case_labels`` from the case matrix's counts and the cells the block
    lists where they differ (``case_level.label_counts``); without the list, why not."""
    from ..paired.case_level import evaluated_counts, labels_from_counts

    if not isinstance(block, dict):
        return LABELS_NOT_REBUILT
    listed = block.get("label_counts")
    if listed is None:
        return LABELS_UNAVAILABLE
    where: list[str | int] = ["case_level", "label_counts"]
    if not isinstance(listed, list):
        raise InputError("expected a list", file=file, location=where)
    variant_ids = [str(v) for v in cases["variant_id"].cat.categories]
    case_ids = [str(c) for c in cases["case_id"].cat.categories]
    attempts, passes = evaluated_counts(cases, trials, variant_ids, case_ids)
    v_at = {v: i for i, v in enumerate(variant_ids)}
    c_at = {c: i for i, c in enumerate(case_ids)}
    for n, entry in enumerate(listed):
        if not (
            isinstance(entry, list)
            and len(entry) == 4
            and isinstance(entry[0], str)
            and entry[0] in v_at
            and isinstance(entry[1], str)
            and entry[1] in c_at
            and all(type(count) is int and count >= 0 for count in entry[2:])
            and entry[3] <= entry[2]
        ):
            raise InputError(
                f"expected [variant_id, case_id, attempts, passes] of this report's "
                f"variants and cases, passes ≤ attempts; got {entry!r}",
                file=file,
                location=[*where, n],
                hint="is this an experiment report written by `experiment run --save`?",
            )
        i = v_at[entry[0]] * len(case_ids) + c_at[entry[1]]
        attempts[i], passes[i] = entry[2], entry[3]
    if (passes > attempts).any():
        # An edited case matrix (more passes than evaluated attempts): no run gives it.
        return "this report's case matrix has more passes than evaluated attempts in a case"
    try:
        return labels_from_counts(
            variant_ids, case_ids, attempts, passes, confidence_level=confidence_level
        )
    except ValueError as exc:
        # A confidence level no analysis has (an edited report): the rest of the report
        # is read, and checked, as before; only this frame is missing, and why is said.
        return f"its intervals cannot be computed ({exc})"


def _keyed(frame: pd.DataFrame, variant_ids: list[str]) -> pd.DataFrame:
    """``frame`` with its variant ids and dimensions as categoricals, as the analysis
    builds the case-level frames (its attrs kept); ``k`` as nullable ``Int64``."""
    out = frame.copy()
    for column in ("variant_id", "baseline_variant_id", "candidate_variant_id"):
        if column in out.columns:
            out[column] = report_keys(out[column], variant_ids)
    if "dimension" in out.columns:
        out["dimension"] = report_keys(out["dimension"], DIMENSIONS)
    if "k" in out.columns:
        out["k"] = out["k"].astype("Int64")
    return out


def _rebuilt_trial_columns(
    trials: pd.DataFrame,
    items: list[Any],
    execution_order: list[tuple[str, int]],
    latency_missing: str,
) -> pd.DataFrame:
    """``trials`` (read from ``items``, the report's variants) with the run's columns that
    have no JSON key of their own, rebuilt from what the report holds, in the run's column
    order (docs/data-model.md):

    * ``execution_position``: the trial's place in ``randomization.execution_order``, the
      run's trials in the order they ran (a trial the list lacks: ``<NA>``, as ``Int64``);
    * ``successful``: completed with every case passed;
    * ``average_latency_ms_package``: the package's mean, an unknown latency counted as 0
      ms. It is the written ``summary.average_latency_ms`` under the package's rule
      (``zero``); under ``exclude`` that holds ours where a latency is known, and the
      package's is the trial's per-case records' ``latency_ms`` (0.0 where unknown) summed
      in case order over its cases, as the run computes it. Without records (a lean
      report) it is known only where none is known (the written 0.0), NaN elsewhere.

    Examples
    --------
    >>> trials = pd.DataFrame({"variant_id": ["a", "a"], "trial": [1, 2],
    ...     "status": ["succeeded", "succeeded"], "total_cases": [2, 2],
    ...     "passed_cases": [2, 1], "average_latency_ms": [1500.0, 0.0]})
    >>> items = [{"trials": [{"report": {"cases": [{"latency_ms": 1000.0},
    ...     {"latency_ms": 2000.0}]}}, {"report": {"cases": []}}]}]
    >>> out = _rebuilt_trial_columns(trials, items, [("a", 2), ("a", 1)], "exclude")
    >>> out[["execution_position", "average_latency_ms_package", "successful"]].values.tolist()
    [[1, 1500.0, True], [0, 0.0, False]]
    """
    first: dict[tuple[str, int], int] = {}
    for n, key in enumerate(execution_order):
        first.setdefault(key, n)
    keys = zip(trials["variant_id"].astype(str), trials["trial"].tolist(), strict=True)
    positions = [first.get(key) for key in keys]
    succeeded = (trials["status"].astype(str) == "succeeded").to_numpy()
    total = trials["total_cases"].to_numpy()
    written = trials["average_latency_ms"].to_numpy(float)
    if latency_missing == "zero":
        package = written.copy()  # the package's rule: the written mean is its own
    else:
        package = np.full(len(trials), np.nan)
        reports = [t.get("report") for v in items for t in (v.get("trials") or [])]
        for i, report in enumerate(reports):
            if not (succeeded[i] and isinstance(report, dict)):
                continue
            mean = _package_mean(report.get("cases"), int(total[i]))
            if mean is None and written[i] == 0.0:
                # No records: a known mean is never 0.0 (_unknown_trial_latency), so none
                # is known, and the package's Σ 0 / n is the written 0.0.
                mean = 0.0
            package[i] = np.nan if mean is None else mean
    extra = {
        "execution_position": (
            pd.array(positions, dtype="Int64")
            if None in positions
            else np.asarray(positions, dtype=np.int64)
        ),
        "average_latency_ms_package": package,
        "successful": succeeded & (trials["passed_cases"].to_numpy() == total),
    }
    out = trials.assign(**extra)
    return out[[c.name for c in TRIALS.columns_ if c.name in out.columns]]


def _package_mean(cases: Any, total: int) -> float | None:
    """A completed trial's package mean latency from its per-case records ``cases`` (as
    the reader left them), or None where they cannot give it (none, or not one number per
    case)."""
    if isinstance(cases, _RecordLatencies):
        values = cases.values
    elif isinstance(cases, list):
        values = _latencies_of(cases)  # parsed whole (the standard parser's path)
    elif cases is None:
        values = None
    else:
        from .rebuild import PendingRecords

        values = record_latencies(cases.raw) if isinstance(cases, PendingRecords) else None
    if values is None or len(values) != total or total == 0:
        return None
    # sum() left to right, as the run's (analysis._sequential_sums), over the same values:
    # the same number to the bit.
    return sum(values) / total


def _unknown_trial_latency(trials: pd.DataFrame) -> None:
    """Read, in place, a trial's written mean latency of 0 ms as unknown (NaN), as the run
    that wrote the report under ``latency_missing="exclude"`` had it (fix B3).

    Such a run writes its own mean where a trial has a known latency, and where none is
    known the package's mean, which counts each unknown latency as 0 ms and so is 0.0
    (the package's model needs a number there). A known mean is never 0.0: a recorded 0
    ms is unknown too (:func:`~agenticlens_frames.frames.measured_latency`). The written
    file is unchanged, so the package and the CSVs rendered from it read the same.

    Examples
    --------
    >>> trials = pd.DataFrame({"average_latency_ms": [0.0, 1833.0, float("nan")]})
    >>> _unknown_trial_latency(trials)
    >>> trials["average_latency_ms"].tolist()
    [nan, 1833.0, nan]
    """
    latency = trials["average_latency_ms"]
    trials["average_latency_ms"] = latency.mask(latency.eq(0.0))


def _unanswered_counts(
    items: list[Any], variant_ids: list[str], place: list[str | int]
) -> dict[str, tuple[int, int]]:
    """:func:`~agenticlens_frames.analysis.unanswered_counts` of a saved report: per variant
    with any, (attempts its target never answered, attempts of its completed trials).

    Each completed live trial's ``summary.live`` (AgenticLens's own block, in lean reports
    too) counts its ``error_cases`` and ``timed_out_cases``; ``total_cases`` of the trial's
    summary is its attempts. A failed trial has no report and, as in the run's count, no
    attempt called. A report that AgenticLens or any version of ours wrote has the block
    (null for a recorded variant, which every attempt answers), so ``--max-unanswered``
    decides on a saved report as on its run.
    """
    counts: dict[str, tuple[int, int]] = {}
    for i, (variant, variant_id) in enumerate(zip(items, variant_ids, strict=True)):
        missing = total = 0
        for j, trial in enumerate(variant.get("trials") or []):
            report = trial.get("report")
            if trial.get("status") != "succeeded" or report is None:
                continue  # as run_from_report reads it: a failed trial
            where: list[str | int] = ["variants", i, "trials", j, "report", "summary"]
            place[:] = where
            summary = report["summary"]
            place[:] = [*where, "total_cases"]
            cases = count_from_json(summary["total_cases"])
            total += cases
            place[:] = [*where, "live"]
            live = summary.get("live")
            live = {} if live is None else live  # null: not a live variant, all answered
            if not isinstance(live, dict):
                raise TypeError(f"expected an object or null, got {type(live).__name__}")
            unanswered = 0
            for key in ("error_cases", "timed_out_cases"):
                place[:] = [*where, "live", key]
                unanswered += count_from_json(live.get(key, 0))  # AgenticLens's default: 0
            if unanswered > cases:
                raise ValueError(f"{unanswered} unanswered of {cases} cases is not possible")
            missing += unanswered
        if missing:
            counts[variant_id] = (missing, total)
    place[:] = []
    return counts


#: What the console reads of each row of the judge-noise block's ``totals``.
_JUDGE_TOTALS_KEYS = (
    "variant_id",
    "judge_scores",
    "unavailable_scores",
    "priced_scores",
    "spent_cost_usd",
    "input_tokens",
    "output_tokens",
)


#: The judge-noise block's lists of notes (earlier reports have no "unavailable_notes").
_JUDGE_NOTES = ("unavailable_notes", "notes")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _judge_noise(block: Any, file: Path) -> dict[str, Any]:
    """The report's ``judge_noise`` block, as the run wrote it ({} without one): a loaded
    report showed no judge cost and no judge-noise note, as if its run had had no judge.
    Checked where the console and the page read it, so damage is refused at load."""
    if block is None:
        return {}
    # Each part may be missing (the first reports with the block had no totals).
    totals = block.get("totals", []) if isinstance(block, dict) else None
    where: list[str | int] | None = None
    if not isinstance(totals, list):
        where = ["judge_noise", "totals"]
    elif bad := [key for key in _JUDGE_NOTES if not _strings(block.get(key, []))]:
        where = ["judge_noise", bad[0]]
    else:
        for i, row in enumerate(totals):
            if not isinstance(row, dict) or not set(_JUDGE_TOTALS_KEYS) <= set(row):
                where = ["judge_noise", "totals", i]
                break
    if where is not None:
        raise InputError(
            "damaged judge-noise block",
            file=file,
            location=where,
            hint="is this an experiment report written by `experiment run --save`?",
        )
    return dict(block)


def _extras(block: Mapping[str, Any], file: Path) -> dict[str, Any]:
    """The run-level facts a renderer shows: the early-stopping block, checked (rendered
    as `experiment run` renders it, first after an early stop), the notes on attempts
    no target answered (said beside the verdicts and the gates) and the judge spend of
    failed trials (said in the judges' cost lines)."""
    out: dict[str, Any] = {}
    failures = block.get("target_failures")
    if failures is not None:
        if not isinstance(failures, list) or not all(isinstance(f, str) for f in failures):
            raise InputError(
                "expected a list of strings",
                file=file,
                location=["agenticlens_frames", "target_failures"],
                hint="is this an experiment report written by `experiment run --save`?",
            )
        out["target_failures"] = list(failures)
    from .._stopping_block import checked_record

    # (The report's key for the run's stopping block is early_stopping.)
    for key, kind in (
        ("judge_spend_failed_trials", "judge_spend_failed_trials"),
        ("early_stopping", "stopping"),
    ):
        value = block.get(key)
        if value is not None:
            checked_record(
                kind,
                value,
                file=file,
                location=["agenticlens_frames", key],
                hint="is this an experiment report written by `experiment run --save`?",
            )
            out[key] = [dict(r) for r in value] if kind != "stopping" else dict(value)
    return out


#: Said beside verdicts a report did not hold, computed from its per-case records.
REBUILT_NOTE = (
    "This report has no case-level verdicts of its own (AgenticLens wrote it); these come "
    "from its trials' per-case records, as `experiment run` computes them on the run."
)


def _rebuilt_outputs(
    run: ExperimentRun, comparisons: ComparisonsConfig | None, confidence_level: float
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, pd.DataFrame]:
    """The paired frames, verdicts and factor effects of a run rebuilt from a report, as
    ``analyze`` computes them (a correction declared now, or per-comparison intervals and
    effects without adjusted p-values)."""
    from ..factorial import factor_effects
    from ..paired.outputs import paired_outputs_and_verdicts

    frames, _, verdicts = paired_outputs_and_verdicts(
        run, comparisons, confidence_level=confidence_level
    )
    verdicts.attrs["source"] = REBUILT_NOTE
    effects = factor_effects(
        run,
        correction=comparisons.correction if comparisons is not None else None,
        confidence_level=confidence_level,
    )
    return frames, verdicts, effects
