"""The tidy tables of a saved report, rebuilt from its per-case records.

A report AgenticLens 0.10 wrote carries no case-level verdicts, but every completed
trial's report holds one record per case — passed, each check's score, output, latency,
cost — and every failed trial is named. That is what the paired comparisons read, so
:func:`run_from_report` turns those records back into an
:class:`~agenticlens_frames.ExperimentRun` and ``experiment report`` can lead with the
case-by-case verdicts for it, with the numbers ``experiment run`` gives on the same
recorded files.

A latency the package wrote as 0 ms — a trace that recorded none — is unknown, as in a
run's own tables (:func:`~agenticlens_frames.frames.measured_latency`); an attempt that did
not answer (a missing sample, a live call that failed) has no latency or cost either.
Traces (tools, turns) are not in the records and stay empty.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

import msgspec
import pandas as pd
import pyarrow as pa

from ..errors import InputError
from ..formats._io import JSON_REFUSED, loads_json, loads_scrubbed
from ..frames import (
    CHECKS_SCHEMA,
    FACTOR_PREFIX,
    UNAVAILABLE_METRICS,
    ExperimentRun,
    set_categories,
)

__all__ = ["run_from_report"]

#: A case record's ``target_status`` → our attempt status (a live variant's records).
_LIVE_STATUS = {"ok": "ok", "error": "target_error", "timed_out": "timed_out"}


class PendingRecords:
    """A trial report's ``cases`` still as JSON, parsed when :func:`run_from_report`
    reaches its trial (:func:`~.saved.load_report` gives them so): the objects of one
    trial's records at a time, not of all of them at once.

    ``raw`` is checked JSON (msgspec parsed around it and the file is UTF-8), so parsing
    it cannot fail; the standard parser reads what msgspec does not (a number beyond a
    float), as it read the whole report before.
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: msgspec.Raw) -> None:
        self._raw: msgspec.Raw | None = raw

    @property
    def raw(self) -> msgspec.Raw:
        """The records' JSON, still unparsed and left to :meth:`take` (a reader that needs
        one field of them, the trials' package latency, decodes only it)."""
        if self._raw is None:
            raise RuntimeError("these records were taken already")
        return self._raw

    def take(self) -> Any:
        """The records, once: the report's bytes are released when every trial's are
        taken (each holds a slice of them)."""
        raw, self._raw = self._raw, None
        if raw is None:
            raise RuntimeError("these records were taken already")
        try:
            return loads_json(memoryview(raw))
        except JSON_REFUSED:
            return loads_scrubbed(bytes(raw).decode("utf-8"))


def run_from_report(data: Mapping[str, Any], file: str | Path) -> ExperimentRun | None:
    """The run behind a saved report, from its trials' per-case records.

    Parameters
    ----------
    data
        The report as parsed JSON (already read by
        :func:`~agenticlens_frames.report.saved.load_report`, so its summary blocks are
        known to be well formed).
    file
        The report's path, for messages.

    Returns
    -------
    ExperimentRun or None
        None when a completed trial has no case records (a ``--lean`` report): there is
        nothing per case to compare.

    Raises
    ------
    InputError
        A record that does not hold what the report's own summaries say it does (a case
        missing from a trial, a score that is not a number), naming its place.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> from agenticlens_frames import analyze, load_experiment, write_json_report
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> path = Path(tempfile.mkdtemp()) / "r.json"
    >>> _ = write_json_report(analyze(run, frontier_n_resamples=0), path)
    >>> again = run_from_report(json.loads(path.read_text()), path)
    >>> bool((again.attempts["passed"].to_numpy() == run.attempts["passed"].to_numpy()).all())
    True
    """
    case_ids = [str(c) for c in data["case_ids"]]
    # Column by column (a list per column, not a dict per row): a 5 000-case report holds
    # 100 000 records and 300 000 scores.
    attempts: dict[str, list[Any]] = {name: [] for name in _ATTEMPT_COLUMNS}
    checks: dict[str, list[Any]] = {name: [] for name in CHECKS_SCHEMA.names}
    cases: dict[str, Mapping[str, Any]] = {}
    # One object per distinct text (check names, explanations, outputs repeat across
    # trials and variants): the records of the trials already read are freed, their texts
    # are held until the tables are built.
    text = {}.setdefault
    variants = []
    for v, variant in enumerate(data["variants"]):
        vid = str(variant["variant_id"])
        row = {
            "variant_id": vid,
            "variant_name": str(variant.get("variant_name") or vid),
            "is_baseline": vid == data["baseline_variant_id"],
        }
        for name, level in (variant.get("factors") or {}).items():
            row[f"{FACTOR_PREFIX}{name}"] = str(level)
        variants.append(row)
        for t, trial in enumerate(variant.get("trials") or []):
            place = f"variants[{v}].trials[{t}]"
            index = int(trial["trial_index"])
            report = trial.get("report")
            if trial.get("status") != "succeeded" or report is None:
                _failed_trial(attempts, vid, index, case_ids, trial.get("error_message"))
                continue
            if not isinstance(report, Mapping):
                _refuse("a trial report must be an object", report, file, f"{place}.report")
            records = report.get("cases")
            if isinstance(records, PendingRecords):
                records = records.take()
            if not records:
                return None  # a lean report: no per-case records to compare
            if type(records) is not list:
                _refuse("cases must be a list", records, file, f"{place}.report.cases")
            before = len(attempts["case_id"])
            for r, record in enumerate(records):
                _add_attempt(
                    attempts, checks, vid, index, record, file, f"{place}.report.cases[{r}]", text
                )
                cases.setdefault(record["case_id"], record)
            seen = attempts["case_id"][before:]
            if len(seen) != len(case_ids) or set(seen) != set(case_ids):
                raise InputError(
                    "its case records do not match the report's case_ids (each case once)",
                    file=file,
                    location=f"{place}.report.cases",
                    hint="the report was edited or cut short; re-save it",
                )
    frame = pd.DataFrame(attempts)
    case_frame = pd.DataFrame(
        {
            "case_id": case_ids,
            # Names, tags and metadata label the cases; the comparisons do not read them,
            # so one of an odd type is left out rather than refused.
            "case_name": [_text(cases.get(c, {}).get("case_name"), c) for c in case_ids],
            "tags": [_tags(cases.get(c, {}).get("tags")) for c in case_ids],
            "metadata": [_mapping(cases.get(c, {}).get("metadata")) for c in case_ids],
        }
    )
    # A recorded trace's latency or cost may be negative: the package reads it, and so
    # does `experiment run` (docs/reliability.md). from_frames refuses one in a user's
    # frame, so it is given none here and the records' values are set afterwards, as the
    # check counts are; else such a report had no verdicts at all.
    measured = {c: frame[c].where(~(frame[c] < 0)) for c in _SET_AFTER[3:]}
    run = ExperimentRun.from_frames(
        frame.drop(columns=list(_SET_AFTER[:3])).assign(**measured),
        pd.DataFrame(variants),
        case_frame,
        name=str(data["experiment_name"]),
        version=str(data["experiment_version"]),
        baseline=str(data["baseline_variant_id"]),
        suite_name=str(data["suite_name"]),
    )
    manifest = dataclasses.replace(
        run.manifest,
        pass_k=tuple(int(k) for k in data["pass_k"]),
        trial_count=int(data["trial_count"]),
    )
    # The one expectation the paired comparisons read from the suite: which cases forbid
    # a tool (the safety dimension's default evaluator), named by their checks.
    forbidden: dict[str, list[str]] = {}
    for metric, case_id, name in zip(
        checks["metric"], checks["case_id"], checks["name"], strict=True
    ):
        if metric == "forbidden_tool":
            tools = forbidden.setdefault(case_id, [])
            tool = name.partition(":")[2] or name
            if tool not in tools:
                tools.append(tool)
    suite = dataclasses.replace(
        run.suite,
        version=str(data["suite_version"]),
        cases=tuple(
            # The records' checks judged the cases, not a `passed` column (from_frames's
            # one expectation per case).
            dataclasses.replace(
                case, forbidden_tools=tuple(forbidden.get(case.id, ())), evaluators=()
            )
            for case in run.suite.cases
        ),
    )
    # The check counts of every attempt, from its records (from_frames counts one).
    att = run.attempts.copy()
    keyed = frame.set_index(["variant_id", "trial", "case_id"])
    key = pd.MultiIndex.from_arrays(
        [att["variant_id"].astype(str), att["trial"].astype(int), att["case_id"].astype(str)]
    )
    for column in _SET_AFTER:
        fill = 0 if column.startswith("n_") else math.nan
        att[column] = keyed[column].reindex(key).fillna(fill).to_numpy()
    check_frame = pa.Table.from_pydict(checks, schema=CHECKS_SCHEMA).to_pandas()
    rebuilt = dataclasses.replace(
        run,
        manifest=manifest,
        suite=suite,
        attempts=att,
        checks=check_frame,
        cases=_with_expectations(run.cases, check_frame),
    )
    set_categories(rebuilt)
    return rebuilt


def _text(value: Any, default: str) -> str:
    return value if type(value) is str and value else default


def _tags(value: Any) -> str:
    return ",".join(t for t in value if type(t) is str) if type(value) is list else ""


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


#: The attempt columns ``run_from_report`` sets after ``from_frames``: the three check
#: counts (which it does not read) and the two measurements (which it reads only where
#: they are not negative).
_SET_AFTER = ("n_checks", "n_checks_passed", "score_sum", "latency_ms", "cost_usd")

#: The attempt columns collected from the records (``from_frames`` reads all but the
#: three check counts, set afterwards).
_ATTEMPT_COLUMNS = (
    "variant_id", "trial", "case_id", "passed", "score", "n_checks", "n_checks_passed",
    "score_sum", "latency_ms", "cost_usd", "output", "status", "error",
)  # fmt: skip


def _with_expectations(cases: pd.DataFrame, checks: pd.DataFrame) -> pd.DataFrame:
    """``cases`` with ``n_expectations`` as the records show them: the distinct checks of
    each case other than a failed call's or a missing sample's one (which judges nothing).

    The paired quality leaves out a failed call on a case without expectations
    (:func:`~agenticlens_frames.paired.dimensions.unjudged_failures`): without this every
    rebuilt case had the one ``from_frames`` counts (its ``passed`` column), and a failed
    call on an input the suite declared nothing for read as a quality failure. A case
    whose every attempt failed shows no check of its own, so it reads as one without
    expectations here.
    """
    real = checks.loc[~checks["metric"].astype(str).isin(UNAVAILABLE_METRICS)]
    counts = real.groupby(real["case_id"].astype(str))["name"].nunique()
    found = counts.reindex(cases["case_id"].astype(str)).fillna(0)
    return cases.assign(n_expectations=found.to_numpy().astype(cases["n_expectations"].dtype))


def _failed_trial(
    attempts: dict[str, list[Any]], variant: str, trial: int, case_ids: list[str], error: Any
) -> None:
    """Every case of a failed trial: an attempt that is not scored (as in our tables)."""
    n = len(case_ids)
    values: dict[str, Any] = {
        "variant_id": variant, "trial": trial, "passed": False, "score": math.nan,
        "n_checks": 0, "n_checks_passed": 0, "score_sum": math.nan, "latency_ms": math.nan,
        "cost_usd": math.nan, "output": None, "status": "trial_failed", "error": error,
    }  # fmt: skip
    attempts["case_id"].extend(case_ids)
    for name, value in values.items():
        attempts[name].extend([value] * n)


def _add_attempt(
    attempts: dict[str, list[Any]],
    checks: dict[str, list[Any]],
    variant: str,
    trial: int,
    record: Any,
    file: str | Path,
    where: str,
    text: Callable[[Any, Any], Any],
) -> None:
    """One attempt from a case record, its scores appended to ``checks``; each text
    given as ``text(value, value)`` returns it (one object per distinct text).

    Every field the tables hold is checked for its type first (``type(x) is str``-style
    tests: a 5 000-case report has 100 000 records): a record the package could not have
    written is named by its place, and nothing is appended for it.
    """
    if not isinstance(record, Mapping):
        _refuse("a case record must be an object", record, file, where)
    case_id = record.get("case_id")
    passed = record.get("passed")
    scores = record.get("scores")
    live = record.get("target_status")
    available = record.get("sample_available", True)
    latency, cost = record.get("latency_ms"), record.get("cost_usd")
    output, error = record.get("output"), record.get("target_error")
    if not (
        type(case_id) is str
        and type(passed) is bool
        and type(scores) is list
        and (live is None or type(live) is str)
        and type(available) is bool
        and _is_number(latency)
        and _is_number(cost)
        and (output is None or type(output) is str)
        and (error is None or type(error) is str)
    ):  # one test on the common path; which field is wrong is found only when one is
        for ok, what, value, key in (
            (type(case_id) is str, "a text", case_id, "case_id"),
            (type(passed) is bool, "true or false", passed, "passed"),
            (type(scores) is list, "a list", scores, "scores"),
            (live is None or type(live) is str, "a text or null", live, "target_status"),
            (type(available) is bool, "true or false", available, "sample_available"),
            (_is_number(latency), "a number or null", latency, "latency_ms"),
            (_is_number(cost), "a number or null", cost, "cost_usd"),
            (output is None or type(output) is str, "a text or null", output, "output"),
            (error is None or type(error) is str, "a text or null", error, "target_error"),
        ):
            if not ok:
                _refuse(f"{key} must be {what}", value, file, f"{where}.{key}")
    if live is not None:
        status = _LIVE_STATUS.get(live, "target_error")
    else:
        status = "ok" if available else "missing_sample"
    kept: list[float] = []
    passed_checks = 0
    # (A refused record ends the rebuild, so its checks may be appended as they come.)
    for s, score in enumerate(scores):
        if not isinstance(score, Mapping):
            _refuse("a score must be an object", score, file, f"{where}.scores[{s}]")
        value = score.get("value")
        if value is None or not _is_number(value) or not math.isfinite(value):
            _refuse(
                "a score value must be a finite number", value, file, f"{where}.scores[{s}].value"
            )
        name = score.get("name", "")
        metric = score.get("metric", "")
        score_passed = score.get("passed", False)
        required = score.get("required", True)
        skipped = score.get("skipped", False)
        explanation = score.get("explanation")
        evaluator = score.get("evaluator")
        version = score.get("evaluator_version")
        kind = score.get("evaluator_type")
        if not (
            type(name) is str
            and type(metric) is str
            and type(score_passed) is bool
            and type(required) is bool
            and type(skipped) is bool
            and (explanation is None or type(explanation) is str)
            and (evaluator is None or type(evaluator) is str)
            and (version is None or type(version) is str)
            and (kind is None or type(kind) is str)
        ):
            _refuse_score(score, file, f"{where}.scores[{s}]")
        passed_checks += score_passed
        if not skipped:
            kept.append(float(value))
        metadata = score.get("metadata") or None
        checks["variant_id"].append(variant)
        checks["trial"].append(trial)
        checks["case_id"].append(case_id)
        checks["check_index"].append(s)
        checks["name"].append(text(name, name))
        checks["metric"].append(text(metric, metric))
        checks["value"].append(float(value))
        checks["passed"].append(score_passed)
        checks["required"].append(required)
        checks["skipped"].append(skipped)
        checks["explanation"].append(text(explanation, explanation))
        checks["evaluator"].append(text(evaluator, evaluator))
        checks["evaluator_version"].append(text(version, version))
        checks["evaluator_type"].append(text(kind, kind))
        checks["metadata"].append(
            None if metadata is None else json.dumps(metadata, ensure_ascii=False, default=str)
        )
    answered = status == "ok"
    attempts["variant_id"].append(variant)
    attempts["trial"].append(trial)
    attempts["case_id"].append(case_id)
    attempts["passed"].append(passed)
    # the mean of the checks not skipped, as an attempt's score is made
    attempts["score"].append(math.fsum(kept) / len(kept) if kept else math.nan)
    attempts["n_checks"].append(len(scores))
    attempts["n_checks_passed"].append(passed_checks)
    attempts["score_sum"].append(sum(kept))
    # 0 ms is unknown, as in a run's own tables (frames.measured_latency).
    attempts["latency_ms"].append(float(latency) if answered and latency else math.nan)
    attempts["cost_usd"].append(float(cost) if answered and cost is not None else math.nan)
    attempts["output"].append(text(output, output))
    attempts["status"].append(status)
    attempts["error"].append(error)


#: A score's fields as the tables hold them, with the value when one is absent (its type
#: is the type required; None: a text or null).
_SCORE_FIELDS: tuple[tuple[str, Any], ...] = (
    ("name", ""),
    ("metric", ""),
    ("passed", False),
    ("required", True),
    ("skipped", False),
    ("explanation", None),
    ("evaluator", None),
    ("evaluator_version", None),
    ("evaluator_type", None),
)


def _refuse_score(score: Mapping[str, Any], file: str | Path, where: str) -> NoReturn:
    """Name the first field of ``score`` whose type the tables cannot hold."""
    for key, default in _SCORE_FIELDS:
        value = score.get(key, default)
        wanted = str if default is None else type(default)
        if not (type(value) is wanted or (default is None and value is None)):
            text = "true or false" if wanted is bool else "a text"
            _refuse(f"{key} must be {text}", value, file, f"{where}.{key}")
    raise AssertionError("unreachable: a field was found wrong")  # pragma: no cover


def _is_number(value: Any) -> bool:
    """None, an int or a float (JSON's numbers; not a boolean)."""
    return value is None or type(value) is float or type(value) is int


def _refuse(message: str, value: Any, file: str | Path, where: str) -> NoReturn:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise InputError(f"{message}, got {shown}", file=file, location=where)
