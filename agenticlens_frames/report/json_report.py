"""The JSON report: AgenticLens 0.10's experiment report schema 1.1, rendered from frames.

Same keys, order and numbers as the package's ``--save`` output (so its own
``agenticlens experiment report`` loads ours), except the deliberate fixes listed in
docs/compatibility.md. What we add lives under new keys: ``target``, ``timeout_seconds``,
``description`` and ``metadata`` on each variant, and a top-level ``agenticlens_frames``
block (settings, provenance, fixes applied). Nothing here computes a statistic.
"""

from __future__ import annotations

import json
import os
import queue
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._compat import IMPLEMENTS
from .._deprecate import keyword_hints
from .._files import atomic_write, start_writeback
from .._fork import input_pending
from .._gc import paused_gc
from ..analysis import (
    ExperimentAnalysis,
    judge_cost_lines,
    require_analysis,
    target_failure_warnings,
)
from ..errors import InputError, check_path
from ..frames import ExperimentRun
from ..judges import JUDGE_EVALUATOR_TYPES, summarize_judges
from ..schema import (
    CASES,
    COMPARISONS,
    FACTOR_LEVELS,
    PACKAGE_DELTA_BASIS,
    TRIALS,
    VARIANTS,
    json_ready,
    package_latency_rows,
)
from ..stats import fmean, metric_delta
from .infinite import INFINITE_KEY, infinite_values
from .paired_json import report_blocks
from .verdicts_json import verdicts_block

__all__ = ["build_report", "created_at", "prepare_json_report", "write_json_report"]

REPORT_SCHEMA_VERSION = "1.1"
TRIAL_REPORT_SCHEMA_VERSION = "1.0"
#: Indentation level of the line ``"cases": [`` of a trial report (the report's
#: ``variants[i].trials[j].report.cases``), where :func:`_stream` writes the case records:
#: what :meth:`_TrialReports.prepare` builds them for.
_CASES_DEPTH = 6
#: Case records a worker builds ahead, while it waits for the analysis
#: (:meth:`_TrialReports.build_ahead`): every trial's when they all fit in this many bytes
#: (a 4 x 5 x 5 000 run's are 230 MiB, and its processes peak far below 1 GiB), else the
#: first trials' up to a quarter of it (a 20 000-case run peaks about 110 MiB under 1 GiB).
_AHEAD_BYTES = 256 << 20
#: How many bytes of the report are written between two requests to the kernel to start
#: writing them to disk (see :class:`_BackgroundWriter`).
_WRITEBACK_BYTES = 32 << 20


#: Said in every report: which keys answer "is the candidate better?" and which keep
#: AgenticLens's attempt-pooled numbers for the files that need them.
READ_FIRST = {
    "verdicts": "the answer: each candidate against the baseline, case by case (the case "
    "as the unit), under the declared multiple-comparison correction ('not judged' without "
    "one), with the smallest detectable change",
    "case_level": "pass rates with intervals that treat the case as the unit",
    "compatible": "AgenticLens's fields, kept for the package's readers; they are not "
    "verdicts: comparisons[].case_pass_rate_p_value and statistically_significant (a "
    "z-test pooling every attempt as independent, uncorrected), "
    "variants[].summary.case_pass_rate_interval (a Wilson interval pooling attempts), "
    "comparisons[].regressed_case_ids (its per-case threshold rule, no test)",
}


#: Added to ``read_first``'s ``compatible`` when a comparison's latency delta is the
#: package's, labelled (fix B3: ours is unknown there; see _with_package_latency_deltas).
READ_FIRST_PACKAGE_LATENCY = (
    "comparisons[].average_latency_ms_delta where its basis is 'agenticlens' (the "
    "package's delta, an unknown latency counted as 0 ms, not ours: ours is unknown there, "
    "and verdicts.omitted says why; each variant's known latency is "
    "variants[].summary.average_latency_ms, null where none is known)"
)


#: Added to ``read_first``'s ``compatible`` when a trial has no known latency, so that its
#: written mean is the package's (fix B3: see schema.package_latency_rows).
READ_FIRST_PACKAGE_TRIAL_LATENCY = (
    "variants[].trials[].report.summary.average_latency_ms where a trial has no known "
    "latency (0.0, the package's mean with each unknown latency counted as 0 ms, not ours: "
    "ours is unknown there, and variants[].summary.average_latency_ms, ours, leaves that "
    "trial out)"
)


#: What ``read_first`` says of a run an early-stopping rule watched (stopped or to its end).
READ_FIRST_WATCHED = {
    "early_stopping": "the answer: the early-stopping rule's statement per candidate (its "
    "decision and anytime-valid interval, at its α under its correction), valid however "
    "often the rule looked",
    "verdicts": "descriptive beside the early-stopping rule: fixed-sample rows read after "
    "the rule had watched the data (their intervals and p-values assume a sample size "
    "fixed in advance), not the answer",
}


def _read_first(
    analysis: ExperimentAnalysis, comparisons: Sequence[Mapping[str, Any]] = ()
) -> dict[str, str]:
    """The report's ``read_first`` map: which keys answer "is the candidate better?" (the
    verdicts; after a run an early-stopping rule watched, its ``early_stopping`` block,
    the verdicts then descriptive, as every surface titles them) and which of the
    package's fields pool attempts — and, when one of the report's ``comparisons`` holds
    the package's latency delta labelled as such, or a trial with no known latency holds
    the package's mean latency (0.0), that it is not ours and where ours is.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> list(_read_first(a))
    ['verdicts', 'case_level', 'compatible']
    >>> labelled = [{"average_latency_ms_delta": {"absolute": -1975.6, "basis": "agenticlens"}}]
    >>> _read_first(a, labelled)["compatible"].endswith(READ_FIRST_PACKAGE_LATENCY)
    True
    >>> a.trials.loc[0, "average_latency_ms"] = float("nan")  # a trial with none known
    >>> _read_first(a)["compatible"].endswith(READ_FIRST_PACKAGE_TRIAL_LATENCY)
    True
    >>> a.extras["early_stopping"] = {"stopped_early": False}
    >>> list(_read_first(a)), _read_first(a)["verdicts"].split(":")[0]
    (['early_stopping', 'verdicts', 'case_level', 'compatible'], 'descriptive beside the \
early-stopping rule')
    """
    out = READ_FIRST
    if (analysis.extras or {}).get("early_stopping") is not None:
        out = {**READ_FIRST_WATCHED, **{k: v for k, v in READ_FIRST.items() if k != "verdicts"}}
    if any(
        isinstance(block := c.get("average_latency_ms_delta"), dict)
        and block.get("basis") == PACKAGE_DELTA_BASIS
        for c in comparisons
    ):
        out = {**out, "compatible": f"{out['compatible']}, {READ_FIRST_PACKAGE_LATENCY}"}
    # (Only then: every other report keeps its bytes.)
    if package_latency_rows(analysis.trials).any():
        out = {**out, "compatible": f"{out['compatible']}, {READ_FIRST_PACKAGE_TRIAL_LATENCY}"}
    return out


def created_at() -> str:
    """UTC timestamp for ``created_at``; ``SOURCE_DATE_EPOCH`` makes it reproducible.

    Examples
    --------
    >>> import os
    >>> os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
    >>> created_at()
    '2026-01-01T00:00:00Z'
    >>> del os.environ["SOURCE_DATE_EPOCH"]
    """
    epoch = (os.environ.get("SOURCE_DATE_EPOCH") or "").strip()
    if epoch:  # unset or empty: the current time
        if not (epoch.isascii() and epoch.isdigit()):
            # The reproducible-builds definition: a malformed value is an error, not the
            # current time (which would silently make "reproducible" outputs differ).
            raise InputError(
                f"{epoch[:40]!r} is not a Unix time (a whole number of seconds since "
                "1970-01-01 UTC)",
                location="SOURCE_DATE_EPOCH",
                hint="set it to a Unix time in seconds, e.g. 1767225600, or unset it",
            )
        try:
            return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, ValueError, OSError):
            raise InputError(
                f"{epoch[:40]!r} is beyond the dates a report can hold (years 1-9999)",
                location="SOURCE_DATE_EPOCH",
                hint="set it to a Unix time in seconds, e.g. 1767225600, or unset it",
            ) from None
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_SCORE_KEYS = (
    "name",
    "metric",
    "value",
    "passed",
    "required",
    "skipped",
    "explanation",
    "evaluator_type",
    "evaluator",
    "evaluator_version",
    "metadata",
)
_EMPTY: dict[str, Any] = {}  # shared, never mutated
_LEADING_SPACES = re.compile(rb" *")
#: Attempt statuses of a failed live call (its first score carries the status).
_FAILED_CALL = ("target_error", "timed_out")


def _factorize_chunks(values: pd.Series | np.ndarray) -> tuple[list[np.ndarray], int]:
    """Codes of ``values`` — equal codes for equal values, all missing values one code —
    in chunks that concatenate to one code per row, and how many codes there can be.

    ``pd.factorize`` sizes its hash table by the number of rows and returns int64 codes:
    for 1.2 million check rows, 20–40 MiB of temporaries per field, in the JSON report's
    worker, where every page it touches is its own (issue 19). Here booleans are their own
    codes, and integers, floats and Arrow-backed strings are dictionary-encoded by Arrow,
    whose table grows with the distinct values and whose int32 codes are read in place.
    Floats are encoded by their bits once -0.0 is made 0.0 and every NaN one NaN: the
    equality of ``pd.factorize``'s float table (``a == b``, or both NaN).

    Examples
    --------
    >>> chunks, count = _factorize_chunks(pd.Series(["b", None, "b", "a"], dtype="str"))
    >>> np.concatenate(chunks).tolist(), count
    ([0, 1, 0, 2], 3)
    >>> chunks, count = _factorize_chunks(pd.Series([0.5, -0.0, float("nan"), 0.0, -float("nan")]))
    >>> np.concatenate(chunks).tolist(), count
    ([0, 1, 2, 1, 2], 3)
    >>> chunks, count = _factorize_chunks(np.array([7, 5, 7]))
    >>> np.concatenate(chunks).tolist(), count
    ([0, 1, 0], 2)
    """
    array: pa.Array | pa.ChunkedArray
    if isinstance(values, np.ndarray):
        array = pa.array(values)
    elif values.dtype == np.bool_:
        return [values.to_numpy()], 2
    elif values.dtype == np.float64:
        floats = values.to_numpy() + 0.0  # -0.0 + 0.0 is 0.0
        floats[np.isnan(floats)] = np.nan
        array = pa.array(floats.view(np.int64))
    elif isinstance(values.array, pd.arrays.ArrowStringArray):
        array = values.array.__arrow_array__()
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=False)
        return [codes], len(uniques)
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    # The chunks of a chunked array's encoding share one dictionary (Arrow's contract).
    chunks = encoded.chunks if isinstance(encoded, pa.ChunkedArray) else [encoded]
    count = len(chunks[0].dictionary) if chunks else 0
    return [chunk.indices.to_numpy() for chunk in chunks], count


def _unique_scores(chk: pd.DataFrame) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """An id per check row (equal ids: equal score records) and the record of each id.

    The id is the record's fields' codes as digits of one mixed-radix int64, factorised
    (numbered in order of first appearance) only when the next field's digit would not
    fit, and once at the end: a hash pass per field and about one more, not two per field.
    The digits are added in place, one chunk of codes at a time: in the JSON report's
    worker every temporary array is memory of its own (`docs/performance.md`).
    """
    n = len(chk)
    ids = np.zeros(n, dtype=np.int64)
    size = 1  # the number of values ids can take (a Python int: never overflows)

    def add(chunks: list[np.ndarray], count: int, plus: int = 0) -> None:
        nonlocal ids, size
        count = max(count, 1)
        if size * count >= 1 << 62:
            renumbered, size = _factorize_chunks(ids)
            ids = np.concatenate(renumbered).astype(np.int64)
        ids *= count
        start = 0
        for codes in chunks:
            ids[start : start + len(codes)] += codes
            start += len(codes)
        if plus:
            ids += plus
        size *= count

    for column in _SCORE_KEYS[:-1]:
        values = chk[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            # NA's code -1 becomes digit 0
            add([values.cat.codes.to_numpy()], len(values.cat.categories) + 1, plus=1)
        else:
            add(*_factorize_chunks(values))
    if "metadata" in chk:  # judges' metadata (JSON text); absent from older archives
        add(*_factorize_chunks(chk["metadata"]))
    # Numbered in order of first appearance (Arrow's dictionary, as pd.factorize).
    chunks, size = _factorize_chunks(ids)
    del ids
    ids = np.concatenate(chunks) if len(chunks) != 1 else chunks[0]
    first = np.zeros(size, dtype=np.int64)
    first[ids[::-1]] = np.arange(n - 1, -1, -1)  # the first row of each id wins
    sample = chk.iloc[first]
    columns = [
        sample[c].astype(object).where(sample[c].notna(), None).tolist()
        if isinstance(sample[c].dtype, pd.CategoricalDtype) or c == "evaluator_version"
        else sample[c].tolist()
        for c in _SCORE_KEYS[:-1]
    ]
    if "metadata" in chk:
        # json, not orjson: metadata may hold integers beyond 64 bits
        metadata = [
            json.loads(text) if isinstance(text, str) else _EMPTY
            for text in sample["metadata"].tolist()
        ]
    else:
        metadata = [_EMPTY] * len(sample)
    rows = zip(*columns, metadata, strict=True)
    records = [dict(zip(_SCORE_KEYS, row, strict=True)) for row in rows]
    return ids, records


def _check_rows(att: pd.DataFrame, chk: pd.DataFrame) -> np.ndarray:
    """Rows of the checks table per attempt: ``n_checks``, or none at all when the table
    is empty.

    A run built from frames (:meth:`ExperimentRun.from_frames
    <agenticlens_frames.frames.ExperimentRun.from_frames>`) counts the user's ``passed``
    as one check per attempt (the analyses read it as judged) but has no check rows to
    write, so its case records list no scores instead of slicing past the table's end.

    Examples
    --------
    >>> att = pd.DataFrame({"n_checks": [1, 1]})
    >>> _check_rows(att, pd.DataFrame({"value": []})).tolist()
    [0, 0]
    >>> _check_rows(att, pd.DataFrame({"value": [1.0, 0.0]})).tolist()
    [1, 1]
    """
    counts = att["n_checks"].to_numpy()
    return np.zeros_like(counts) if chk.empty else counts


class _TrialReports:
    """Builds the per-trial EvaluationReport dicts from the attempts and checks tables.

    Score and case records are made in bulk (one comprehension over the columns), then
    sliced per trial; per-metric sums use ``np.bincount``, which adds in row order like the
    package's ``sum()``.
    """

    def __init__(self, run: ExperimentRun, *, lean: bool) -> None:
        self.run = run
        self.lean = lean
        self.suite = run.suite
        # Live-run fields (target_status, summary.live) belong to live variants only.
        self.live_codes = {
            i for i, v in enumerate(run.manifest.variants) if v.target_kind != "recorded"
        }
        att = run.attempts
        chk = run.checks
        self.n_checks_start = np.concatenate([[0], np.cumsum(_check_rows(att, chk))])
        self.att_start = self._starts(
            att["variant_id"].cat.codes.to_numpy(), att["trial"].to_numpy()
        )
        self.att_variant = att["variant_id"].cat.codes.to_numpy()
        self.att_passed = att["passed"].to_numpy(bool)
        # Each value the category's own str object, shared (astype(str) would make one
        # str per attempt: 25 MiB at 400 000 attempts, held by the JSON report's worker).
        self.att_status = att["status"].astype(object).tolist()
        self.att_ok = (att["status"] == "ok").to_numpy(bool)
        self.att_case = att["case_index"].to_numpy()
        self.att_cost = att["cost_usd"].to_numpy(float)
        self.att_source = (
            att["cost_source"].astype(object).where(att["cost_source"].notna(), None).tolist()
        )
        # Cost sources as codes: 0 is "unspecified" (no source), then the categories.
        self.att_source_code = att["cost_source"].cat.codes.to_numpy().astype(np.int64) + 1
        self.source_names = ["unspecified", *map(str, att["cost_source"].cat.categories)]
        self.att_tries = (
            att["target_attempts"]
            .astype(object)
            .where(att["target_attempts"].notna(), None)
            .tolist()
        )
        self.chk_metric = chk["metric"].cat.codes.to_numpy()
        self.metric_names = list(chk["metric"].cat.categories)
        self.chk_value = chk["value"].to_numpy(float)
        self.chk_passed = chk["passed"].to_numpy(bool)
        self.chk_skipped = chk["skipped"].to_numpy(bool)
        self.case_tags = [list(dict.fromkeys(c.tags)) for c in run.suite.cases]
        self.case_ids = list(run.suite.case_ids)
        # What every record of a case repeats, built once (shared, never mutated).
        self.case_fields = [(c.id, c.name, list(c.tags), c.metadata) for c in run.suite.cases]
        self.att = att
        self.chk = chk
        self.score_ids, self.unique_scores = _unique_scores(chk)
        self.chk_judge = chk["evaluator_type"].isin(JUDGE_EVALUATOR_TYPES).to_numpy(bool)
        self.chk_case = chk["case_id"].cat.codes.to_numpy()
        self._case_bytes: _CaseBytes | None = None
        self._slots: dict[tuple[int, int], tuple[Any, ...]] = {}
        # Case records built ahead (build_ahead): the chunks cases_json hands out once.
        self._ahead: dict[tuple[int, int], list[Any]] = {}

    def prepare(self) -> None:
        """Compute now what the report takes from the tables alone — every trial's summary
        slots and the case records' fixed pieces — so that a worker started before the
        analysis (:func:`prepare_json_report`) has it ready when the analysis arrives."""
        for key in self._reported():
            self.summary_slots(*key)
        if not self.lean:
            self._case_bytes = _CaseBytes(self, _CASES_DEPTH)

    def _reported(self) -> list[tuple[int, int]]:
        """(variant code, trial) of every trial that has a report, in the report's order
        (the manifest's variants, then trial)."""
        listed = self.run.trials
        code = {v: i for i, v in enumerate(self.att["variant_id"].cat.categories)}
        succeeded = listed["status"] == "succeeded"
        keys = {
            (code.get(variant_id), trial)
            for variant_id, trial in zip(
                listed["variant_id"][succeeded].astype(str).tolist(),
                listed["trial"][succeeded].tolist(),
                strict=True,
            )
        }
        return sorted(key for key in keys if key in self.att_start)  # type: ignore[type-var]

    def build_ahead(self, keep_going: Callable[[], bool], budget: int = _AHEAD_BYTES) -> int:
        """Build now, while ``keep_going()``, the case records' bytes of the report's
        first trials, which :meth:`cases_json` then hands out (once each, freed as they
        go); return the bytes held.

        A worker that prepared the report before the analysis exists
        (:func:`prepare_json_report`) waits for it: this is work the writing would do
        after it arrives, done until it arrives (``keep_going`` is checked every chunk of
        about a megabyte; a trial cut short is dropped and built again when written).
        Every trial's records are held when they all fit in ``budget`` bytes (estimated
        from the first trial), else the first trials' up to a quarter of it: a large
        run's peak memory leaves little room (see :data:`_AHEAD_BYTES`).
        """
        if self.lean:
            return 0
        order = self._reported()
        limit = budget
        held = 0
        for key in order:
            chunks: list[Any] = []
            size = 0
            for chunk in self.cases_json(*key, _CASES_DEPTH):
                chunks.append(chunk)
                size += len(chunk)
                if held + size > limit or not keep_going():
                    return held
            self._ahead[key] = chunks
            held += size
            if len(self._ahead) == 1 and size * len(order) > budget:
                limit = budget // 4
                if held > limit:
                    self._ahead.clear()
                    return 0
        return held

    def _score_records(self, start: int, end: int) -> list[dict[str, Any]]:
        """Score records of attempts ``start:end`` (one trial), in check order.

        Equal scores share one dict (a case's checks read the same in most trials), which
        makes building a large report several times cheaper; orjson writes each
        occurrence in full, and nothing mutates a shared record.
        """
        c0, c1 = int(self.n_checks_start[start]), int(self.n_checks_start[end])
        records = list(map(self.unique_scores.__getitem__, self.score_ids[c0:c1].tolist()))
        # A failed live call's single score carries the call's status in its metadata.
        for row in range(start, end):
            if self.att_status[row] in _FAILED_CALL:
                index = int(self.n_checks_start[row]) - c0
                records[index] = self._failed_call_score(row, records[index])
        return records

    def _failed_call_score(self, row: int, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` (the first score of attempt ``row``, a failed live call) with the
        call's status in its metadata."""
        status = self.att_status[row]
        return {
            **record,
            "metadata": {
                "status": "error" if status == "target_error" else "timed_out",
                "attempts": self.att_tries[row],
                "error": self.att["error"].iloc[row],
            },
        }

    def _case_records(self, start: int, end: int) -> list[dict[str, Any]]:
        """Case records of attempts ``start:end`` (one trial), in suite order."""
        att = self.att.iloc[start:end]
        scores = self._score_records(start, end)
        c0 = int(self.n_checks_start[start])
        bounds = (self.n_checks_start[start : end + 1] - c0).tolist()
        live = self._is_live(start)
        rows = zip(
            self.att_case[start:end].tolist(),
            self.att_passed[start:end].tolist(),
            self.att_status[start:end],
            att["output"].fillna("").tolist(),
            att["trace_id"].fillna("").tolist(),
            att["latency_ms"].fillna(0.0).tolist(),
            self.att_cost[start:end].tolist(),
            self.att_source[start:end],
            self.att_tries[start:end],
            att["error"].astype(object).where(att["error"].notna(), None).tolist(),
            bounds[:-1],
            bounds[1:],
            strict=True,
        )
        fields = self.case_fields
        records = []
        for ci, passed, status, output, trace_id, latency, cost, source, tries, error, *at in rows:
            case_id, case_name, tags, metadata = fields[ci]
            ok = status == "ok"
            priced = cost == cost  # not NaN
            records.append(
                {
                    "case_id": case_id,
                    "case_name": case_name,
                    "passed": passed,
                    "scores": scores[at[0] : at[1]],
                    "output": output,
                    "trace_id": trace_id if ok else "",
                    "latency_ms": latency if ok else 0.0,
                    "cost_usd": cost if priced else None,
                    "cost_source": source if priced else None,
                    "sample_available": ok,
                    "target_status": ("error" if status == "target_error" else status)
                    if live
                    else None,
                    "target_attempts": tries if live else None,
                    "target_error": None if ok else error,
                    "tags": tags,
                    "metadata": metadata,
                }
            )
        return records

    @staticmethod
    def _starts(variant: np.ndarray, trial: np.ndarray) -> dict[tuple[int, int], tuple[int, int]]:
        n = len(variant)
        if n == 0:
            return {}
        change = np.ones(n, dtype=bool)
        change[1:] = (variant[1:] != variant[:-1]) | (trial[1:] != trial[:-1])
        starts = np.flatnonzero(change)
        ends = np.append(starts[1:], n)
        return {
            (int(variant[s]), int(trial[s])): (int(s), int(e))
            for s, e in zip(starts, ends, strict=True)
        }

    def _metrics(self, c0: int, c1: int) -> dict[str, Any]:
        codes = self.chk_metric[c0:c1]
        live = ~self.chk_skipped[c0:c1]
        size = len(self.metric_names)
        seen = np.bincount(codes, minlength=size)
        total = np.bincount(codes[live], minlength=size)
        passed = np.bincount(codes[live], weights=self.chk_passed[c0:c1][live], minlength=size)
        sums = np.bincount(codes[live], weights=self.chk_value[c0:c1][live], minlength=size)
        out = {}
        for code in sorted(np.flatnonzero(seen).tolist(), key=lambda i: self.metric_names[i]):
            n = int(total[code])
            p = int(passed[code])
            out[self.metric_names[code]] = {
                "total": n,
                "passed": p,
                "failed": n - p,
                "skipped": int(seen[code]) - n,
                "pass_rate": p / n if n else None,
                "average_score": float(sums[code]) / n if n else None,
            }
        return out

    def _tags(self, start: int, end: int) -> dict[str, Any]:
        rows: dict[str, list[int]] = {}
        for i in range(start, end):
            for tag in self.case_tags[self.att_case[i]]:
                rows.setdefault(tag, []).append(i)
        out = {}
        for tag in sorted(rows):
            members = rows[tag]
            passed = int(self.att_passed[members].sum())
            values = [
                v
                for i in members
                for v, skip in zip(
                    self.chk_value[self.n_checks_start[i] : self.n_checks_start[i + 1]].tolist(),
                    self.chk_skipped[self.n_checks_start[i] : self.n_checks_start[i + 1]].tolist(),
                    strict=True,
                )
                if not skip
            ]
            out[tag] = {
                "total_cases": len(members),
                "passed_cases": passed,
                "failed_cases": len(members) - passed,
                "pass_rate": passed / len(members),
                "average_score": sum(values) / len(values) if values else None,
            }
        return out

    def _judge(self, c0: int, c1: int) -> dict[str, Any] | None:
        """``summary.judge`` of one trial: its judge scores, in case and score order."""
        rows = (np.flatnonzero(self.chk_judge[c0:c1]) + c0).tolist()
        if not rows:
            return None
        records = self.unique_scores
        ids = self.score_ids
        return summarize_judges(
            [
                (
                    self.case_ids[self.chk_case[row]],
                    records[ids[row]]["skipped"],
                    records[ids[row]]["metadata"],
                )
                for row in rows
            ]
        )

    def _is_live(self, start: int) -> bool:
        return int(self.att_variant[start]) in self.live_codes

    def _live(self, start: int, end: int) -> dict[str, Any] | None:
        if not self._is_live(start):
            return None
        statuses = self.att_status[start:end]
        ids = [self.case_ids[ci] for ci in self.att_case[start:end].tolist()]
        timed = [cid for cid, s in zip(ids, statuses, strict=True) if s == "timed_out"]
        errored = [cid for cid, s in zip(ids, statuses, strict=True) if s == "target_error"]
        return {
            "total_cases": end - start,
            "ok_cases": statuses.count("ok"),
            "retried_cases": sum((t or 1) > 1 for t in self.att_tries[start:end]),
            "timed_out_cases": len(timed),
            "error_cases": len(errored),
            "timed_out_case_ids": timed,
            "error_case_ids": errored,
        }

    def summary_slots(self, variant_code: int, trial: int) -> tuple[Any, ...]:
        """The parts of a trial report's summary that come from the tables, not the frame:
        ``cost_sources``, ``metrics``, ``tags``, ``judge`` and ``live``."""
        key = (variant_code, trial)
        if key not in self._slots:
            self._slots[key] = self._summary_slots(variant_code, trial)
        return self._slots[key]

    def _summary_slots(self, variant_code: int, trial: int) -> tuple[Any, ...]:
        start, end = self.att_start[(variant_code, trial)]
        c0, c1 = int(self.n_checks_start[start]), int(self.n_checks_start[end])
        priced = ~np.isnan(self.att_cost[start:end])
        names = self.source_names
        counts = np.bincount(self.att_source_code[start:end][priced], minlength=len(names))
        sources = {name: int(count) for name, count in zip(names, counts, strict=True) if count}
        return (
            dict(sorted(sources.items())),
            self._metrics(c0, c1),
            self._tags(start, end),
            self._judge(c0, c1),
            self._live(start, end),
        )

    def cases(self, variant_code: int, trial: int) -> list[dict[str, Any]]:
        """The trial report's per-case records (``cases``; empty in a lean report)."""
        if self.lean:
            return []
        return self._case_records(*self.att_start[(variant_code, trial)])

    def cases_json(self, variant_code: int, trial: int, depth: int) -> Iterator[Any]:
        """The trial report's ``cases`` as the bytes :func:`_indented_dump` of
        :meth:`cases` gives at ``depth``, written from the columns (see :class:`_CaseBytes`),
        in chunks of about a megabyte (their concatenation is the list)."""
        ahead = self._ahead.pop((variant_code, trial), None)
        if ahead is not None and depth == _CASES_DEPTH:
            ahead.reverse()
            while ahead:  # each chunk let go of as it is handed out
                yield ahead.pop()
            return
        if self._case_bytes is None or self._case_bytes.depth != depth:
            self._case_bytes = _CaseBytes(self, depth)
        start, end = self.att_start[(variant_code, trial)]
        pieces = self._case_bytes.trial(start, end)
        if pieces is None:  # what the columns cannot write alike: the records, dumped
            yield _indented_dump(self._case_records(start, end), depth)
            return
        # Joined a slice at a time: one join of a large trial allocates (and faults in)
        # fresh pages for every trial; small chunks reuse the memory the last one freed.
        step = 8192
        for at in range(0, len(pieces), step):
            yield b"".join(pieces[at : at + step])


_BOOL_JSON = (b"false", b"true")


def _objects(items: Any, count: int) -> np.ndarray:
    """``items`` (bytes) as a numpy object array, each kept as it is."""
    return np.fromiter(items, dtype=object, count=count)


def _scalars(values: list[Any]) -> list[bytes]:
    r"""The JSON of each of ``values`` (``str``, ``int``, ``float``, ``bool`` or ``None``),
    exactly as orjson writes it inside a document, from one orjson call.

    The list is dumped indented and cut at its line breaks. That is safe: orjson writes
    every control character inside a string as an escape, and a scalar has no other line
    break, so the only raw newlines are the ones between items, each ``,\n`` plus two
    spaces of indentation. (An integer beyond 64 bits raises orjson's ``TypeError``.)

    Examples
    --------
    >>> _scalars(['say "hi"\n', None, 0.1, float("nan"), 10**16])
    [b'"say \\"hi\\"\\n"', b'null', b'0.1', b'null', b'10000000000000000']
    """
    if not values:
        return []
    return orjson.dumps(values, option=orjson.OPT_INDENT_2)[4:-2].split(b",\n  ")


def _dicts(values: list[dict[str, Any]], depth: int) -> list[bytes | None]:
    r"""Each of ``values`` (non-empty dicts) as orjson writes it inside an indent-2
    document where it opens at ``depth`` levels (``{`` first; its closing ``}`` and every
    line between are indented for that depth), from one orjson call.

    The list is dumped at ``depth - 1`` and cut between items, at ``,\n`` followed by
    exactly ``depth`` levels of spaces and ``{\n``: a raw newline separates lines (strings
    escape theirs), and a line at exactly that indentation that opens a dict is an item
    (everything inside an item sits deeper). A dict orjson cannot write (an integer beyond
    64 bits) is None.

    Examples
    --------
    >>> _dicts([{"a": [1]}, {"b": 2**64}], 1)
    [b'{\n    "a": [\n      1\n    ]\n  }', None]
    """
    if not values:
        return []
    try:
        data = _indented_dump(values, depth - 1, dumps=_dumps_orjson)
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
        if len(values) == 1:
            return [None]
        return [item for value in values for item in _dicts([value], depth)]
    indent = b" " * (2 * depth)
    # Between "[\n" + indent and "\n" + (indent one level less) + "]".
    body = bytes(data[2 + len(indent) : len(data) - len(indent)])
    pieces = body.split(b",\n" + indent + b"{\n")
    return [pieces[0], *(b"{\n" + piece for piece in pieces[1:])]


class _CaseBytes:
    """The ``cases`` list of each trial report as JSON, written from the columns.

    The same bytes as :func:`_indented_dump` of :meth:`_TrialReports._case_records`,
    without a dict per case: what repeats is written once (a case's id, name, tags and
    metadata; each distinct score record; each category's name), each per-attempt column
    of a trial is written by one orjson call (:func:`_scalars`), and a trial's bytes are
    one join of pieces that numpy index arithmetic puts in place, so no Python code runs
    per case. Where orjson cannot write a record (an integer beyond 64 bits: the records
    path hands the whole trial to the standard encoder), :meth:`trial` returns None.
    """

    #: Pieces of a case record besides its scores (two before them, eighteen after).
    _PER_CASE = 20

    def __init__(self, reports: _TrialReports, depth: int) -> None:
        self.depth = depth
        self.reports = reports
        i1, i2, i3 = (b" " * (2 * (depth + level)) for level in (1, 2, 3))
        self.close = b"\n" + b" " * (2 * depth) + b"]"
        fields = reports.case_fields
        n = len(fields)
        names = zip(_scalars([f[0] for f in fields]), _scalars([f[1] for f in fields]), strict=True)
        self.heads = _objects(
            (
                i1 + b'{\n' + i2 + b'"case_id": ' + case_id + b",\n"
                + i2 + b'"case_name": ' + name + b",\n" + i2 + b'"passed": '
                for case_id, name in names
            ),
            n,
        )  # fmt: skip
        tails = _dicts([{"tags": f[2], "metadata": f[3]} for f in fields], depth + 1)
        self.bad_case = np.array([t is None for t in tails], dtype=bool)
        self.tails = _objects((b",\n" + t[2:] if t is not None else None for t in tails), n)
        scores = _dicts(reports.unique_scores, depth + 3)
        self.bad_score = np.array([s is None for s in scores], dtype=bool)
        self.scores = _objects(scores, len(scores))
        # Index: passed * 2 + (the case has scores).
        self.passed_open = _objects(
            (
                _BOOL_JSON[passed] + b",\n" + i2 + b'"scores": ' + (b"[\n" + i3 if has else b"[]")
                for passed in (0, 1)
                for has in (0, 1)
            ),
            4,
        )
        self.check_seps = _objects((b",\n" + i3, b"\n" + i2 + b"]"), 2)  # index: last
        self.sample = _objects(
            (
                b",\n" + i2 + b'"sample_available": ' + ok + b",\n" + i2 + b'"target_status": '
                for ok in _BOOL_JSON
            ),
            2,
        )
        self.keys = {
            key: b",\n" + i2 + b'"' + key.encode() + b'": '
            for key in (
                "output",
                "trace_id",
                "latency_ms",
                "cost_usd",
                "cost_source",
                "target_attempts",
                "target_error",
            )
        }
        att = reports.att
        # Category codes shifted by one: 0 is a missing value (null).
        self.source_json = _objects(
            _scalars([None, *map(str, att["cost_source"].cat.categories)]),
            len(att["cost_source"].cat.categories) + 1,
        )
        statuses = [str(s) for s in att["status"].cat.categories]
        self.status_code = att["status"].cat.codes.to_numpy().astype(np.intp) + 1
        self.status_json = _objects(
            _scalars([None, *("error" if s == "target_error" else s for s in statuses)]),
            len(statuses) + 1,
        )
        self.failed_call = att["status"].isin(_FAILED_CALL).to_numpy(bool)
        self.output = att["output"]
        self.trace_id = att["trace_id"]
        self.latency = att["latency_ms"].fillna(0.0).to_numpy(float)
        self.error = att["error"].astype(object).where(att["error"].notna(), None).to_numpy()

    def trial(self, start: int, end: int) -> list[bytes] | None:
        """The pieces of the ``cases`` of the trial whose attempts are rows
        ``start:end`` (the list's JSON is their concatenation), or None."""
        r = self.reports
        n = end - start
        cases = r.att_case[start:end]
        bounds = r.n_checks_start[start : end + 1]
        c0, c1 = int(bounds[0]), int(bounds[-1])
        ids = r.score_ids[c0:c1]
        if n == 0 or self.bad_case[cases].any() or self.bad_score[ids].any():
            return None
        checks = self.scores[ids]
        counts = np.diff(bounds)
        for row in (np.flatnonzero(self.failed_call[start:end]) + start).tolist():
            if r.n_checks_start[row + 1] == r.n_checks_start[row]:
                return None  # a failed call without scores: the records path's business
            at = int(r.n_checks_start[row]) - c0
            record = r._failed_call_score(row, r.unique_scores[ids[at]])
            (checks[at],) = _dicts([record], self.depth + 3)
            if checks[at] is None:
                return None

        m = c1 - c0
        k = self._PER_CASE
        case_of = np.repeat(np.arange(n), counts)
        # Slot 0 opens the list; case j's pieces start after the k pieces of each earlier
        # case and the two (score, separator) of each earlier check.
        base = 1 + k * np.arange(n) + 2 * (bounds[:-1] - c0)
        check_at = 1 + k * case_of + 2 + 2 * np.arange(m)
        after = base + 2 + 2 * counts
        pieces = np.empty(1 + k * n + 2 * m + 1, dtype=object)
        pieces[0] = b"[\n"
        pieces[-1] = self.close

        ok = r.att_ok[start:end]
        cost = r.att_cost[start:end]
        priced = cost == cost  # not NaN
        live = r._is_live(start)
        pieces[base] = self.heads[cases]
        has = (counts > 0).astype(np.intp)
        pieces[base + 1] = self.passed_open[r.att_passed[start:end].astype(np.intp) * 2 + has]
        if m:
            pieces[check_at] = checks
            last = np.zeros(m, dtype=np.intp)
            last[bounds[1:][counts > 0] - c0 - 1] = 1
            pieces[check_at + 1] = self.check_seps[last]
        trace = self.trace_id.iloc[start:end].fillna("").to_numpy(object)
        trace[~ok] = ""
        error = self.error[start:end].copy()
        error[ok] = None
        keys = self.keys
        source = np.where(priced, r.att_source_code[start:end], 0)
        status = self.status_json[self.status_code[start:end]] if live else b"null"
        # (key, value) of each field between the scores and the tags, in record order;
        # the key of target_status comes with sample_available's value.
        columns: list[tuple[Any, Any]] = [
            (keys["output"], _scalars(self.output.iloc[start:end].fillna("").tolist())),
            (keys["trace_id"], _scalars(trace.tolist())),
            (keys["latency_ms"], _scalars(np.where(ok, self.latency[start:end], 0.0).tolist())),
            (keys["cost_usd"], _scalars(cost.tolist())),  # NaN (unpriced) is written null
            (keys["cost_source"], self.source_json[source]),
            (self.sample[ok.astype(np.intp)], status),
            (keys["target_attempts"], _scalars(r.att_tries[start:end]) if live else b"null"),
            (keys["target_error"], _scalars(error.tolist())),
        ]
        for q, (key, value) in enumerate(columns):
            pieces[after + 2 * q] = key
            pieces[after + 2 * q + 1] = value
        pieces[after + 16] = self.tails[cases]
        seps = np.full(n, b",\n", dtype=object)
        seps[-1] = b""
        pieces[after + 17] = seps
        return pieces.tolist()


_TRIAL_SLOTS = tuple(
    f"report.summary.{k}" for k in ("cost_sources", "metrics", "tags", "judge", "live")
)


def _trial_frame(analysis: ExperimentAnalysis) -> pd.DataFrame:
    """The trial summaries in the report's order (manifest's variants, then trial), with
    each trial's status and error message from the run's trials table."""
    run = analysis.run
    assert run is not None
    listed = run.trials
    order = np.lexsort((listed["trial"].to_numpy(), listed["variant_id"].cat.codes.to_numpy()))
    listed = listed.iloc[order]
    values = analysis.trials
    row_of = {
        key: i
        for i, key in enumerate(
            zip(values["variant_id"].astype(str).tolist(), values["trial"].tolist(), strict=True)
        )
    }
    keys = zip(listed["variant_id"].astype(str).tolist(), listed["trial"].tolist(), strict=True)
    frame = values.iloc[[row_of[key] for key in keys]].reset_index(drop=True)
    frame["status"] = listed["status"].to_numpy()
    frame["error_message"] = listed["error_message"].to_numpy()
    return frame


def _variant_cases(analysis: ExperimentAnalysis, code: int) -> list[dict[str, Any]]:
    """The case matrix records of the variant at manifest position ``code``: its
    ``variants[].cases`` (:meth:`~agenticlens_frames.schema.FrameSchema.to_json` writes
    each row alone, so these are the records a dump of every variant's holds for it)."""
    cm = analysis.cases
    rows = np.flatnonzero(cm["variant_id"].cat.codes.to_numpy() == code)
    return CASES.bind(analysis.pass_k).to_json(cm.iloc[rows])


def _split(items: list[Any], codes: np.ndarray, n: int) -> list[list[Any]]:
    """``items`` grouped by ``codes`` (0..n-1), each group in its original order."""
    groups: list[list[Any]] = [[] for _ in range(n)]
    for item, code in zip(items, codes.tolist(), strict=True):
        groups[code].append(item)
    return groups


@keyword_hints
def build_report(analysis: ExperimentAnalysis, *, lean: bool = False) -> dict[str, Any]:
    """The report as a dict in the package's key order (plus our added keys).

    Parameters
    ----------
    analysis
        From :func:`~agenticlens_frames.analyze`.
    lean
        Leave out the per-case records of each trial report (``cases: []``); every
        statistic, summary and trial summary stays. A 5 000-case report shrinks from
        hundreds of MB to a few MB.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment, analyze
    >>> result = analyze(load_experiment("data/support/manifest.yaml",
    ...                                  "data/support/suite.yaml"))
    >>> build_report(result, lean=True)["variants"][0]["summary"]["case_pass_rate_interval"]
    {'lower': 0.599..., 'upper': 0.806..., 'confidence_level': 0.95, 'method': 'wilson'}
    """
    analysis = require_analysis(analysis, "build_report")
    return _build_report(analysis, lean=lean)[0]


def deliberate_fixes(manifest: Any) -> list[str]:
    """The labels of docs/compatibility.md's deliberate fixes a run of ``manifest`` has:
    every run's, and the live-run fixes (B10 python file targets, B11 a live payload
    without a trace) when a variant's target is python, or python or http.

    Examples
    --------
    >>> from types import SimpleNamespace as V
    >>> deliberate_fixes(V(variants=[V(target_kind="recorded"), V(target_kind="http")]))
    ['B1', 'B2', 'B3', 'B4', 'B5', 'B8', 'B11', 'B13', 'B14']
    """
    kinds = {v.target_kind for v in manifest.variants}
    live = ["B10"] * ("python" in kinds) + ["B11"] * bool(kinds & {"python", "http"})
    return ["B1", "B2", "B3", "B4", "B5", "B8", *live, "B13", "B14"]


def _build_report(
    analysis: ExperimentAnalysis,
    *,
    lean: bool,
    trial_cases: Callable[[int, str, int], Any] | None = None,
    variant_cases: Callable[[int], Any] | None = None,
    builder: _TrialReports | None = None,
) -> tuple[dict[str, Any], _TrialReports]:
    """The report, and the builder of its trial reports.

    ``trial_cases(variant_position, variant_id, trial)`` gives the ``cases`` value of each
    completed trial's report instead of its records, ``variant_cases(variant_position)``
    that of each variant's case matrix (the streaming writer passes placeholders for
    both). ``builder`` is one made from the analysis' run beforehand.
    """
    run = analysis.run
    if run is None:
        raise ValueError("a report loaded from JSON has no tables to rebuild trial reports from")
    m = run.manifest
    stamp = created_at()
    if builder is None:
        builder = _TrialReports(run, lean=lean)
    elif builder.run is not run or builder.lean != lean:
        raise ValueError("the trial reports were prepared for another run or setting")
    ids = list(m.variant_ids)
    n = len(ids)

    tf = _trial_frame(analysis)
    trial_codes = tf["variant_id"].cat.codes.to_numpy()
    slots: dict[str, list[Any]] = {path: [] for path in (*_TRIAL_SLOTS, "report.cases")}
    for code, trial, status in zip(
        trial_codes.tolist(), tf["trial"].tolist(), tf["status"].astype(str).tolist(), strict=True
    ):
        if status != "succeeded":  # no report: nothing to fill
            for values in slots.values():
                values.append(None)
            continue
        for path, value in zip(_TRIAL_SLOTS, builder.summary_slots(code, trial), strict=True):
            slots[path].append(value)
        cases = trial_cases(code, ids[code], trial) if trial_cases else builder.cases(code, trial)
        slots["report.cases"].append(cases)
    context = {
        "schema_version": TRIAL_REPORT_SCHEMA_VERSION,
        "suite_name": run.suite.name,
        "suite_version": run.suite.version,
        "created_at": stamp,
    }
    trials = _split(TRIALS.to_json(tf, context=context, slots=slots), trial_codes, n)

    if variant_cases is None:
        cm = analysis.cases
        cases = _split(
            CASES.bind(analysis.pass_k).to_json(cm), cm["variant_id"].cat.codes.to_numpy(), n
        )
    else:
        cases = [variant_cases(code) for code in range(n)]

    vs = analysis.variants
    vs = vs.iloc[np.argsort(vs["variant_id"].cat.codes.to_numpy(), kind="stable")]
    specs = m.variants
    variants = VARIANTS.bind(analysis.pass_k).to_json(
        vs,
        context={"confidence_level": analysis.confidence_level},
        slots={
            "trials": trials,
            "cases": cases,
            # Added keys (fix B13): what ran, so a report can be traced back.
            "target": [spec.target for spec in specs],
            "timeout_seconds": [spec.timeout_seconds for spec in specs],
            "description": [spec.description for spec in specs],
            "metadata": [dict(spec.metadata) for spec in specs],
        },
    )
    comparisons = _with_package_latency_deltas(analysis, COMPARISONS.to_json(analysis.comparisons))
    factor_levels = FACTOR_LEVELS.to_json(analysis.factor_levels)
    from .._compat import VERSION as __version__

    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "experiment_name": m.name,
        "experiment_version": m.version,
        "suite_name": run.suite.name,
        "suite_version": run.suite.version,
        "baseline_variant_id": m.baseline_variant_id,
        "trial_count": m.trial_count,
        "random_seed": m.random_seed,
        "confidence_level": analysis.confidence_level,
        "regression_threshold": analysis.regression_threshold,
        "pass_k": list(analysis.pass_k),
        "minimum_trials": m.minimum_trials,
        "randomization": {
            "random_seed": m.random_seed,
            "shuffled": m.random_seed is not None,
            "execution_order": [[v, t] for v, t in analysis.execution_order],
        },
        "created_at": stamp,
        "variants": variants,
        "comparisons": comparisons,
        "pareto_frontier_variant_ids": list(analysis.pareto_frontier),
        "factor_levels": factor_levels,
        "case_ids": list(run.suite.case_ids),
        "warnings": list(analysis.warnings),
        "agenticlens_frames": {
            "version": __version__,
            "implements": dict(IMPLEMENTS),
            "experiment_id": run.experiment_id,
            "lean": lean,
            "latency_missing": analysis.latency_missing,
            "manifest_metadata": dict(m.metadata),
            "max_workers": m.max_workers,
            "evaluators": dict(run.evaluator_versions),
            "deliberate_fixes": deliberate_fixes(m),
            "read_first": _read_first(analysis, comparisons),
            **analysis.extras,
            # Attempts no target answered (an outage, not the agent's quality), as the
            # console says them: `experiment report` says them again from here.
            **(
                {"target_failures": failures}
                if (failures := target_failure_warnings(analysis))
                else {}
            ),
            # The judges' cost and token lines, as the console and the page say them.
            **({"judge_costs": costs} if (costs := judge_cost_lines(analysis)) else {}),
        },
    }
    # New top-level keys (issue 6): case_level, paired_comparisons. The verdicts (issue 14)
    # go between them: the paired block stays last, where a large saved report's tail is read.
    blocks = report_blocks(analysis)
    report["case_level"] = blocks.pop("case_level")
    report["verdicts"] = verdicts_block(analysis.verdicts)
    report.update(beyond_blocks(analysis))
    report.update(blocks)
    if analysis.judge_noise:
        report["judge_noise"] = analysis.judge_noise
    # JSON has no infinity: the blocks hold an infinite df or mde as null, and this list
    # says which, so a loaded report reads them back (report/infinite.py). Written only
    # when there is one: other reports keep their bytes.
    if infinite := _infinite_values(report, analysis):
        report["agenticlens_frames"][INFINITE_KEY] = infinite
    return report, builder


def _with_package_latency_deltas(
    analysis: ExperimentAnalysis, comparisons: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``comparisons`` (the report's list) with AgenticLens's latency delta, labelled as
    the package's, in each ``average_latency_ms_delta`` our unknown delta left null.

    Ours is unknown where the baseline or the candidate has no known latency (fix B3), but
    the package's model requires an object there and refused the whole file. So the block
    holds the package's own delta — :func:`~agenticlens_frames.stats.metric_delta` of its
    variant means, the mean over completed trials of each trial's mean latency with an
    unknown one counted as 0 ms (``average_latency_ms_package``), ``regressed`` its rule's
    — with ``basis`` and ``note`` saying so. The package's models ignore the two keys; our
    reader (:data:`~agenticlens_frames.schema.COMPARISONS`) reads such a block as unknown,
    so it reaches none of our surfaces or gates (docs/compatibility.md).

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> a = analyze(load_experiment("data/support/manifest.yaml", "data/support/suite.yaml"))
    >>> # prompt-v2 as if logged without latencies: the package's 0 ms, none known here
    >>> a.trials.loc[a.trials["variant_id"] == "prompt-v2", "average_latency_ms_package"] = 0.0
    >>> a.variants.loc[a.variants["variant_id"] == "prompt-v2", "average_latency_ms_count"] = 0
    >>> block = _with_package_latency_deltas(
    ...     a,
    ...     [{"baseline_variant_id": "baseline", "candidate_variant_id": "prompt-v2",
    ...       "average_latency_ms_delta": None}],
    ... )[0]["average_latency_ms_delta"]
    >>> block["absolute"], block["relative"], block["regressed"], block["basis"]
    (-1975.6, -1.0, False, 'agenticlens')
    >>> block["note"].split("; ")[-1]
    "ours is unknown (fix B3): 'prompt-v2' has no known latency"
    """
    unknown = [c for c in comparisons if c["average_latency_ms_delta"] is None]
    if not unknown:
        return comparisons
    trials = analysis.trials
    done = trials[(trials["status"].astype(str) == "succeeded").to_numpy()]
    # The package's variant mean (its statistics.fmean over the completed trials, in trial
    # order), as variant_summary computes it under latency_missing="zero".
    package_mean = {
        str(variant): fmean(group["average_latency_ms_package"].to_numpy(float))
        for variant, group in done.groupby("variant_id", observed=True, sort=False)
    }
    variants = analysis.variants
    known = dict(
        zip(
            variants["variant_id"].astype(str),
            variants["average_latency_ms_count"].to_numpy() > 0,
            strict=True,
        )
    )
    for comparison in unknown:
        base, cand = comparison["baseline_variant_id"], comparison["candidate_variant_id"]
        delta = metric_delta(
            package_mean[base],
            package_mean[cand],
            higher_is_better=False,
            threshold=analysis.regression_threshold,
        )
        without = [repr(v) for v in (base, cand) if not known[v]]
        comparison["average_latency_ms_delta"] = {
            **json_ready(delta),
            "basis": PACKAGE_DELTA_BASIS,
            "note": "AgenticLens's delta (an unknown latency counted as 0 ms), kept so the "
            "package's readers load this report, not ours; ours is unknown (fix B3): "
            f"{' and '.join(without) or 'a side'} "
            f"{'have' if len(without) > 1 else 'has'} no known latency",
        }
    return comparisons


def _infinite_values(report: dict[str, Any], analysis: ExperimentAnalysis) -> list[Any]:
    """The report's :func:`~.infinite.infinite_values`: each record list of our blocks
    that a loaded report reads back, with the frame it was written from."""
    from ..judge_noise import JUDGE_BLOCK_FRAMES as judge_parts

    frames, paired = analysis.paired_frames, analysis.paired
    return infinite_values(
        report,
        [
            (("case_level", "summary"), frames.get("case_level_summary")),
            (("case_level", "variance"), frames.get("variance_decomposition")),
            (("verdicts", "rows"), analysis.verdicts),
            (("paired_comparisons", "comparisons"), None if paired is None else paired.comparisons),
            (
                ("paired_comparisons", "noninferiority", "candidates"),
                None if paired is None else paired.noninferiority,
            ),
            (("factor_effects", "terms"), analysis.factor_effects),
            # The judge frames, one record per row (judge_noise.judge_noise_outputs).
            *((("judge_noise", key), frames.get(name)) for name, (key, _) in judge_parts.items()),
        ],
    )


def beyond_blocks(analysis: ExperimentAnalysis) -> dict[str, Any]:
    """New top-level keys of issue 17 (AgenticLens' loader ignores unknown keys)."""
    from .beyond_json import factor_effects_block, frontier_block

    out: dict[str, Any] = {}
    frontier = frontier_block(analysis.variants, analysis.variants.attrs.get("frontier", {}))
    if frontier is not None:
        out["pareto_uncertainty"] = frontier
    effects = factor_effects_block(analysis.factor_effects)
    if effects is not None:
        out["factor_effects"] = effects
    return out


def _indented_dump(
    value: Any, depth: int, *, dumps: Callable[[Any], bytes] | None = None
) -> memoryview:
    r"""``value`` as indent-2 JSON whose inner lines sit ``depth`` levels deep.

    orjson cannot start at an indentation, so the value is dumped inside ``depth``
    one-item lists and the brackets are sliced off: the bytes equal those of the whole
    document dumped at once, without a second pass to re-indent every line.

    Examples
    --------
    >>> bytes(_indented_dump({"a": [1]}, 2)).decode()
    '{\n      "a": [\n        1\n      ]\n    }'
    """
    wrapped = value
    for _ in range(depth):
        wrapped = [wrapped]
    data = (dumps or _dumps_indented)(wrapped)
    head = sum(2 * level + 2 for level in range(depth)) + 2 * depth  # "[\n" lines + indent
    tail = sum(2 * level + 2 for level in range(depth))  # "\n" + indent + "]" per level
    return memoryview(data)[head : len(data) - tail]


class _BackgroundWriter:
    """Write byte chunks to a file from a second thread, so that disk writes (which
    release the GIL) overlap with building the next chunk; at most two chunks wait.

    Every :data:`_WRITEBACK_BYTES` written, the kernel is asked to start putting them
    on disk (:func:`~agenticlens_frames._files.start_writeback`), so that the final
    ``fsync`` of a large report does not write it all after the last chunk. The first
    write error is raised in the caller, at its next write or at exit.
    """

    def __init__(self, out: Any) -> None:
        self._out = out
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="json-report-writer")
        try:
            self._fd: int | None = out.fileno()
        except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation) in memory
            self._fd = None

    def _drain(self) -> None:
        written = started = 0
        while (chunk := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._out.write(chunk)
                    written += len(chunk)
                    if self._fd is not None and written - started >= _WRITEBACK_BYTES:
                        # (bytes still in the file object's buffer are simply not yet
                        # there to write: the hint covers what the file holds)
                        start_writeback(self._fd, started, written - started)
                        started = written
                except BaseException as exc:  # re-raised in the caller's thread
                    self._error = exc

    def __enter__(self) -> Callable[[Any], None]:
        self._thread.start()
        return self._write

    def _write(self, chunk: Any) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(chunk)

    def __exit__(self, *exc_info: object) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._error is not None and exc_info[0] is None:
            raise self._error


def _dumps_indented(value: Any) -> bytes:
    """``value`` as indented JSON, like the package's ``model_dump_json(indent=2)``.

    orjson refuses integers beyond 64 bits (a ``random_seed`` of 2**64, case metadata);
    the package writes them exactly, and so does the standard encoder used for them here —
    given NaN and ±inf as null first, as orjson writes them (it would write ``NaN``, which
    is not JSON).
    """
    return _dumps_choosing(value)[0]


def _dumps_choosing(value: Any) -> tuple[bytes, Callable[[Any], bytes]]:
    """:func:`_dumps_indented` of ``value``, and the encoder that wrote it: orjson's, or
    the standard encoder's where orjson refuses an integer beyond 64 bits."""
    try:
        return _dumps_orjson(value), _dumps_orjson
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
        return _dumps_standard(value), _dumps_standard


def _dumps_standard(value: Any) -> bytes:
    """``value`` as indented JSON by the standard encoder, NaN and ±inf written null."""
    return json.dumps(json_ready(value), indent=2, ensure_ascii=False).encode("utf-8")


def _dumps_orjson(value: Any) -> bytes:
    """``value`` as orjson's indent-2 JSON (an integer beyond 64 bits raises TypeError)."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


@keyword_hints
def write_json_report(
    analysis: ExperimentAnalysis, path: str | Path, *, lean: bool = False
) -> Path:
    """Write the report to ``path`` (parents created), atomically.

    Trial reports are serialised one at a time into the file, so memory stays bounded by
    one trial's records however large the suite (the package holds the whole report).

    Examples
    --------
    >>> import tempfile, json
    >>> from agenticlens_frames import load_experiment, analyze
    >>> result = analyze(load_experiment("data/support/manifest.yaml",
    ...                                  "data/support/suite.yaml"))
    >>> out = write_json_report(result, tempfile.mkdtemp() + "/report.json", lean=True)
    >>> json.loads(out.read_text())["schema_version"]
    '1.1'
    """
    analysis = require_analysis(analysis, "write_json_report")
    return _write_report(analysis, path, lean=lean)


def prepare_json_report(
    run: ExperimentRun, *, lean: bool = False
) -> Callable[[ExperimentAnalysis, str | Path], Path]:
    """Do now what the JSON report takes from ``run``'s tables alone; return the writer.

    A large ``experiment run`` calls this in a worker process as soon as the tables are
    built, so that this part of the report overlaps the analysis: every trial's summary
    slots, the case records' fixed pieces and, within a memory budget, the case records of
    the first trials (:meth:`_TrialReports.build_ahead`). The analysis is then sent to the
    worker, which writes the report. The bytes are those of :func:`write_json_report`.

    Parameters
    ----------
    run
        The tables the analysis will be computed from.
    lean
        As in :func:`write_json_report`.

    Returns
    -------
    callable
        ``write(analysis, path)``, :func:`write_json_report` for an analysis of ``run``.

    Examples
    --------
    >>> import tempfile, json
    >>> from agenticlens_frames import load_experiment, analyze
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> write = prepare_json_report(run)
    >>> out = write(analyze(run), tempfile.mkdtemp() + "/report.json")
    >>> json.loads(out.read_text())["schema_version"]
    '1.1'
    """
    trials = _TrialReports(run, lean=lean)
    trials.prepare()
    # (Only a worker of experiment run waits for its analysis: elsewhere nothing is ahead.)
    trials.build_ahead(input_pending)

    def write(analysis: ExperimentAnalysis, path: str | Path) -> Path:
        return _write_report(analysis, path, lean=lean, trials=trials)

    return write


def _write_report(
    analysis: ExperimentAnalysis,
    path: str | Path,
    *,
    lean: bool,
    columns: bool = True,
    trials: _TrialReports | None = None,
) -> Path:
    """:func:`write_json_report`; ``columns=False`` writes the trial reports' cases by
    dumping their records (the slower path, kept for comparison and the rare trial the
    columns cannot write); ``trials`` is the builder :func:`prepare_json_report` made.

    The report is dumped without its long lists — each trial report's ``cases`` and each
    variant's case matrix ``cases`` — and :func:`_stream` writes each in its place, made
    when it is reached: a 20 000-case run's variant case matrices alone are 80 000 dicts
    (about 100 MiB) and 30 MiB of JSON, which the report's worker would otherwise hold
    beside the rest of the report at its peak.
    """
    target = check_path(path, "the report to write")
    token = uuid.uuid4().hex
    # What each placeholder stands for: the JSON of its value at a depth, in chunks
    # (called once the skeleton is dumped: `builder` and `encoder` are set by then).
    pending: list[Callable[[int], Iterable[Any]]] = []

    def placeholder(part: Callable[[int], Iterable[Any]]) -> str:
        pending.append(part)
        return f"@@report-part-{len(pending) - 1}-{token}@@"

    def trial_cases(code: int, variant_id: str, trial: int) -> str:
        if columns:
            return placeholder(lambda depth: builder.cases_json(code, trial, depth))
        # the records path (benchmarks/bench_json_writer.py times both)
        return placeholder(lambda depth: [_indented_dump(builder.cases(code, trial), depth)])

    def variant_cases(code: int) -> str:
        # Dumped by the encoder that dumps the rest of the report (the standard one where
        # an integer beyond 64 bits is in it), as if it were in it.
        return placeholder(
            lambda depth: [_indented_dump(_variant_cases(analysis, code), depth, dumps=encoder)]
        )

    with paused_gc():
        skeleton, builder = _build_report(
            analysis,
            lean=lean,
            trial_cases=None if lean else trial_cases,
            variant_cases=variant_cases,
            builder=trials,
        )
        text, encoder = _dumps_choosing(skeleton)
        del skeleton  # its bytes are all the streaming needs (a large run's dicts are big)
        marker = re.compile(rb'"@@report-part-(\d+)-' + token.encode() + rb'@@"')
        # A failed write leaves any earlier report as it was (see _files.atomic_write).
        with atomic_write(target) as out:
            _stream(text, marker, pending, out)
    return target


def _stream(
    text: bytes,
    marker: re.Pattern[bytes],
    pending: list[Callable[[int], Iterable[Any]]],
    out: BinaryIO,
) -> None:
    """Write the skeleton ``text`` to ``out``, each placeholder replaced by the chunks
    its entry of ``pending`` gives for the placeholder line's depth, made and written one
    part at a time."""
    with _BackgroundWriter(out) as write:
        done = 0
        for match in marker.finditer(text):
            write(memoryview(text)[done : match.start()])
            line_start = text.rfind(b"\n", 0, match.start()) + 1
            # Measure the line's indentation in place: slicing the rest of a large
            # skeleton for every trial made this quadratic.
            indent = _LEADING_SPACES.match(text, line_start).end() - line_start
            for chunk in pending[int(match.group(1))](indent // 2):
                write(chunk)
            done = match.end()
        write(memoryview(text)[done:])
