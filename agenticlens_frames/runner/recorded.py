"""Replay recorded targets: trial *t* of a variant replays entry *t − 1* of its file."""

from __future__ import annotations

import contextlib
import importlib.abc
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .._files import file_key
from .._fork import run_tasks
from .._gc import paused_gc
from .._progress import progress_bar
from ..errors import InputError
from ..evaluators import EvaluatorRegistry
from ..formats import load_recorded
from ..formats.model import CaseSpec, ManifestSpec, RecordedTrials, SuiteSpec, VariantSpec
from ..formats.recorded import (
    RecordedColumns,
    TrialColumns,
    iter_recorded_columns,
    load_recorded_columns,
)
from ..formats.traces import Trace, normalize_trace_unhinted
from ..frames import CheckColumns, TableBuilder
from ..scoring import score_sample, score_unavailable
from ..scoring_batch import SuitePlan, plan_suite, score_trial
from .replay_plan import AheadClaim, deal, replay_shape

if TYPE_CHECKING:  # (the journal imports scoring; replays without a run folder need neither)
    from ..judges import SampleBook
    from .journal import ReplaySamples

__all__ = [
    "check_recorded_files",
    "replay_ahead",
    "replay_recorded",
    "replay_trial",
    "replayed_ahead",
]


def _book(
    journaled: ReplaySamples | None,
    registry: EvaluatorRegistry | None,
    variant_id: str,
    trial: int,
    case: CaseSpec,
    output: str,
    trace: Trace,
) -> SampleBook | None:
    """The journaled judge samples of one replayed attempt (a run folder's), if judged."""
    if journaled is None or registry is None or not registry.judges(case):
        return None
    return journaled.book(variant_id, trial, case.id, output, trace)


def replay_trial(
    builder: TableBuilder,
    suite: SuiteSpec,
    variant_id: str,
    trial: int,
    position: int,
    recorded: RecordedTrials | RecordedColumns,
    registry: EvaluatorRegistry | None = None,
    plan: SuitePlan | None = None,
    journaled: ReplaySamples | None = None,
) -> None:
    """Score one recorded trial into ``builder`` (or record it as failed if absent).

    With the suite's ``plan`` (:func:`~agenticlens_frames.scoring_batch.plan_suite`) a
    trial that has a sample for every case is scored as a whole, check kind by check kind
    (``recorded`` may then be :func:`~agenticlens_frames.formats.recorded.load_recorded_columns`'
    columns, which need the plan). ``journaled`` (a run folder's) reuses and journals the
    judge samples.
    """
    available = len(recorded.trials)
    if trial > available:
        _missing_trial(builder, variant_id, trial, position, available)
        return
    _replay_entry(
        builder,
        suite,
        variant_id,
        trial,
        position,
        recorded.trials[trial - 1],
        recorded.path,
        registry,
        plan,
        journaled,
    )


def _missing_trial(
    builder: TableBuilder, variant_id: str, trial: int, position: int, available: int
) -> None:
    # The package's wording (spec §4.1), so reports read the same.
    builder.add_failed_trial(
        variant_id,
        trial,
        position,
        f"recorded target has {available} trial(s); trial {trial} is missing",
    )


def _replay_entry(
    builder: TableBuilder,
    suite: SuiteSpec,
    variant_id: str,
    trial: int,
    position: int,
    samples: TrialColumns | tuple[dict[str, Any], ...],
    path: Path,
    registry: EvaluatorRegistry | None,
    plan: SuitePlan | None,
    journaled: ReplaySamples | None = None,
) -> None:
    """Score one recorded trial that the file has into ``builder``."""
    if isinstance(samples, TrialColumns):
        if plan is None:
            raise ValueError("a trial read as columns is scored with the suite's plan")
        _replay_columns(builder, variant_id, trial, position, samples.in_case_order(), plan)
        return
    # Case ids are known and unique per trial (load_recorded), so as many samples as
    # cases means one for every case.
    if plan is not None and len(samples) == len(suite.cases) and suite.cases:
        by_case = {sample["case_id"]: sample for sample in samples}
        columns = TrialColumns.empty()
        for index, case in enumerate(suite.cases):
            sample = by_case[case.id]
            trace = sample.get("trace")
            if not isinstance(trace, Trace):
                trace = normalize_trace_unhinted(trace or {}, file=path)
            columns.append(index, sample["output"], trace)
        _replay_columns(builder, variant_id, trial, position, columns, plan)
        return
    builder.add_trial(variant_id, trial, "succeeded", position)
    by_case = {sample["case_id"]: sample for sample in samples}
    if registry is not None and registry.has_judges and len(suite.cases) > 1:
        _replay_judged(builder, suite, variant_id, trial, path, by_case, registry, journaled)
        return
    for case in suite.cases:
        sample = by_case.get(case.id)
        row = builder.next_attempt
        if sample is None:
            result = score_unavailable(builder.checks, row)
            builder.add_attempt(variant_id, trial, case, "missing_sample", result, output="")
            continue
        trace = sample.get("trace")
        if not isinstance(trace, Trace):
            trace = normalize_trace_unhinted(trace or {}, file=path)
        output = sample["output"]
        book = _book(journaled, registry, variant_id, trial, case, output, trace)
        result = score_sample(
            case, output, trace, builder.checks, row, registry, judge_samples=book
        )
        builder.add_attempt(variant_id, trial, case, "ok", result, output=output, trace=trace)


def _replay_columns(
    builder: TableBuilder,
    variant_id: str,
    trial: int,
    position: int,
    samples: TrialColumns,
    plan: SuitePlan,
) -> None:
    """A complete trial, ``samples`` in case order, scored as a whole."""
    checks, scores = score_trial(plan, samples)
    builder.add_scored_trial(variant_id, trial, position, samples, checks, scores)


def _replay_judged(
    builder: TableBuilder,
    suite: SuiteSpec,
    variant_id: str,
    trial: int,
    path: Path,
    by_case: dict[str, Any],
    registry: EvaluatorRegistry,
    journaled: ReplaySamples | None = None,
) -> None:
    """:func:`replay_trial`'s loop with the cases scored on a thread pool (judge calls
    overlap), each into its own sink, then added in suite order: the same tables."""
    from concurrent.futures import ThreadPoolExecutor

    start = builder.next_attempt

    def score(index: int, case: CaseSpec) -> tuple[CheckColumns, Any, str, Trace | None]:
        sink = CheckColumns()
        sample = by_case.get(case.id)
        if sample is None:
            return sink, score_unavailable(sink, start + index), "", None
        trace = sample.get("trace")
        if not isinstance(trace, Trace):
            trace = normalize_trace_unhinted(trace or {}, file=path)
        output = sample["output"]
        book = _book(journaled, registry, variant_id, trial, case, output, trace)
        result = score_sample(
            case, output, trace, sink, start + index, registry, judge_samples=book
        )
        return sink, result, output, trace

    workers = max(1, min(int(registry.judge_concurrency), len(suite.cases)))
    with ThreadPoolExecutor(workers, thread_name_prefix="judge") as pool:
        results = list(pool.map(score, range(len(suite.cases)), suite.cases))
    for case, (sink, result, output, trace) in zip(suite.cases, results, strict=True):
        builder.checks.extend(sink)
        if trace is None:
            builder.add_attempt(variant_id, trial, case, "missing_sample", result, output="")
        else:
            builder.add_attempt(variant_id, trial, case, "ok", result, output=output, trace=trace)


def _replay_streamed(
    builder: TableBuilder,
    suite: SuiteSpec,
    variant: VariantSpec,
    wanted: list[int],
    positions: dict[tuple[str, int], int],
    plan: SuitePlan,
    registry: EvaluatorRegistry | None,
    advance: Callable[[], None],
) -> None:
    """:func:`replay_trial` of each ``wanted`` trial (ascending) of ``variant``, each
    scored as soon as its entry is read (:func:`iter_recorded_columns`) and then let go."""
    path = Path(variant.resolved_target)
    todo = set(wanted)
    available = 0
    for available, entry in enumerate(iter_recorded_columns(path, suite), start=1):
        if available in todo:
            position = positions[(variant.id, available)]
            _replay_entry(
                builder, suite, variant.id, available, position, entry, path, registry, plan
            )
            advance()
        del entry  # (entries not replayed are read too: the whole file is checked)
    for trial in wanted:
        if trial > available:
            _missing_trial(builder, variant.id, trial, positions[(variant.id, trial)], available)
            advance()


def check_recorded_files(manifest: ManifestSpec) -> None:
    """Refuse a recorded target that is not there, at its place in the manifest: the
    variant, the path as written and as resolved, and the closest file beside it.

    It said only "trials/basline.json: file not found (check the path)": neither which
    variant's target it was, in which manifest, nor that the path is read from the
    manifest's folder.

    Examples
    --------
    >>> import dataclasses
    >>> from agenticlens_frames.formats import load_manifest
    >>> manifest = load_manifest("data/support/manifest.yaml")
    >>> check_recorded_files(manifest)
    >>> typo = dataclasses.replace(manifest.variants[0], target="trials/basline.json",
    ...     resolved_target="data/support/trials/basline.json")
    >>> try:
    ...     check_recorded_files(dataclasses.replace(manifest, variants=(typo,)))
    ... except InputError as refused:
    ...     print(refused)
    data/support/manifest.yaml: variants[0].target: file not found: trials/basline.json, \
read from the manifest's folder as data/support/trials/basline.json (did you mean \
trials/baseline.json? give the recorded trials of variant 'baseline')
    """
    from .._suggest import close_match

    for index, variant in enumerate(manifest.variants):
        path = Path(variant.resolved_target)
        if variant.target_kind != "recorded" or os.path.lexists(path):
            continue  # (a path that is there but unreadable is load_recorded's to say)
        written = Path(variant.target)
        message = f"file not found: {variant.target}"
        if str(path) != variant.target:
            message += f", read from the manifest's folder as {path}"
        if not written.is_absolute() and written.is_file():
            # Written as AgenticLens reads it: from the working directory.
            beside = os.path.relpath(written.absolute(), Path(manifest.path).parent.absolute())
            hint = f"{written} is in the working directory: write {Path(beside)}"
        else:
            try:
                names = sorted(p.name for p in path.parent.iterdir() if p.is_file())
            except OSError:
                names = []
            match = close_match(path.name, names)
            hint = (f"did you mean {written.with_name(match)}? " if match else "") + (
                f"give the recorded trials of variant {variant.id!r}"
            )
        raise InputError(
            message, file=manifest.path, location=("variants", index, "target"), hint=hint
        )


def replay_recorded(
    builder: TableBuilder,
    manifest: ManifestSpec,
    suite: SuiteSpec,
    order: Iterable[tuple[str, int]],
    registry: EvaluatorRegistry | None = None,
    *,
    progress: bool = False,
    journaled: ReplaySamples | None = None,
) -> None:
    """Replay every recorded (variant, trial) of ``order`` into ``builder``.

    Each variant's file is read once and validated against the suite before any of its
    trials is scored (:func:`agenticlens_frames.formats.load_recorded`); each trial keeps
    its position in ``order`` as its execution position; live variants in ``order`` are
    skipped. Large experiments replay their variants in several processes on Linux (see
    :mod:`agenticlens_frames._fork`); the tables are the same either way, and an invalid
    file raises the same error as it would one variant after the other.

    ``journaled`` (a live run's folder, with judges) reuses the judge samples its journal
    holds and journals the new ones; the replay then stays in this process (one writer).
    """
    check_recorded_files(manifest)  # before any file is read, here or in a worker
    # (a journal has one writer: this process)
    shape = replay_shape(manifest, suite, order, forking=journaled is None)
    positions, variants, trials, workers = shape
    plan = plan_suite(suite) if registry is None or not registry.has_judges else None
    total = sum(map(len, trials.values()))
    ahead = _ahead_for(manifest, suite, positions, workers, registry, journaled)
    parent = os.getpid()
    bar: list[Any] = []  # made by the first task that runs here: after any fork

    def advance() -> None:
        if not progress or os.getpid() != parent:
            return  # no bar asked for (not even tqdm's import), or a worker process
        if not bar:
            bar.append(
                # disable=None: drawn on a terminal only (no carriage returns in CI logs)
                progress_bar(total=total, desc="replaying trials", unit="trial", disable=None)
            )
        bar[0].update()

    # With a plan, complete trials are read straight into columns (no Trace per sample).
    load = load_recorded if plan is None else load_recorded_columns  # (whole files)

    def replay_variant(variant: VariantSpec, into: TableBuilder) -> TableBuilder:
        # One variant at a time, so only one recorded file is in memory per process.
        if plan is not None:
            wanted = trials[variant.id]
            _replay_streamed(into, suite, variant, wanted, positions, plan, registry, advance)
            return into
        recorded = load_recorded(variant.resolved_target, suite)
        for trial in trials[variant.id]:
            position = positions[(variant.id, trial)]
            replay_trial(
                into, suite, variant.id, trial, position, recorded, registry, plan, journaled
            )
            advance()
        return into

    def task(variant: VariantSpec) -> list[dict[str, Any]] | None:
        if os.getpid() == parent:  # this process: straight into the tables
            replay_variant(variant, builder)
            builder.seal()  # typed now, and one variant per part (see build)
            return None
        return replay_variant(variant, TableBuilder(builder.manifest, suite)).parts()

    try:
        if workers == 1:
            for variant in variants:
                replay_variant(variant, builder)
                builder.seal()  # typed columns now: Python lists of every variant cost more
        else:
            # The tables are sorted when built, so the order of the tasks does not matter.
            dealt = deal(variants, workers)
            theirs: list[VariantSpec] = []
            if ahead is not None:  # a share replayed already (replay_ahead), the rest here
                theirs = [v for v in dealt if v.id in ahead.claim.variant_ids]
                dealt = [v for v in dealt if v.id not in ahead.claim.variant_ids]
            try:
                # (the ahead process stands for one of the workers)
                here = workers - (ahead is not None)
                results = run_tasks([lambda v=v: task(v) for v in dealt], here)
                if ahead is not None:
                    results += _absorbed_ahead(ahead, theirs, task)
            except InputError:
                # Several invalid files: name the one a replay in manifest order meets
                # first (each load raises its own error).
                for variant in variants:
                    load(variant.resolved_target, suite)
                raise
            for parts in results:
                for part in parts or ():
                    builder.absorb(part)
            if bar:  # the workers' trials are done too
                bar[0].update(total - bar[0].n)
    finally:
        if bar:
            bar[0].close()


# ----------------------------------------------------------------- replayed ahead
#
# ``experiment run`` forks a process to read a large suite while it imports the analysis'
# modules (cli._suite_ahead); that process goes on to replay the recorded variants a
# replay worker would get (claim_ahead, replay_ahead), on the core the imports leave idle.
# replay_recorded then absorbs those tables instead of replaying the variants, but only
# when they are provably for its own inputs (_ahead_for, _absorbed_ahead); otherwise it
# replays them as it would without this, so the tables and errors are the same.

#: What the ahead process sends back: variant id -> (the key of the trial file it read,
#: None if the file changed while it read it; the variant's ``TableBuilder.parts()``).
AheadParts = dict[str, tuple[tuple[Any, ...] | None, list[dict[str, Any]]]]


def replay_ahead(claim: AheadClaim | None) -> AheadParts | None:
    """Replay the variants of ``claim`` as a replay worker would (:func:`replay_recorded`,
    no evaluators): each variant's tables as :meth:`~TableBuilder.parts`, with the key of
    its file (None when the file changed while it was read: the run replays it again)."""
    if claim is None:
        return None
    _arrow_without_pandas()
    manifest, suite = claim.manifest, claim.suite
    registry = EvaluatorRegistry()  # what run_experiment gives the replay without one
    plan = plan_suite(suite)
    trials = {v: sorted(k[1] for k in claim.positions if k[0] == v) for v in claim.variant_ids}
    by_id = {v.id: v for v in manifest.variants}
    done: AheadParts = {}
    for variant_id in claim.variant_ids:
        variant = by_id[variant_id]
        before = file_key(variant.resolved_target)
        builder = TableBuilder(manifest, suite)
        with paused_gc():  # as build_run replays (its workers inherit the pause)
            _replay_streamed(
                builder,
                suite,
                variant,
                trials[variant_id],
                claim.positions,
                plan,
                registry,
                _nothing,
            )
        after = file_key(variant.resolved_target, content=before is not None and bool(before[-1]))
        done[variant_id] = (before if before == after else None, builder.parts())
    return done


def _arrow_without_pandas() -> None:
    """Keep pyarrow from importing pandas in this process (the ahead process).

    The first ``pa.array`` of a Python list imports pandas, to recognise pandas' arrays
    among its inputs: 0.3 s or more, which the ahead process exists to leave to the run
    (its inputs are lists and numpy arrays). With that import made to fail once, pyarrow
    takes pandas as absent for that check; a later use that needs pandas imports it then
    (pyarrow tries again, and the import works again at once).
    """
    if "pandas" in sys.modules:
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(blocker)


class _NoPandas(importlib.abc.MetaPathFinder):
    """An import finder under which ``import pandas`` fails (see
    :func:`_arrow_without_pandas`)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.partition(".")[0] == "pandas":
            raise ModuleNotFoundError("pandas is not imported here", name=fullname)
        return None


def _nothing() -> None:
    """No progress to show (the ahead process draws no bar)."""


@contextlib.contextmanager
def replayed_ahead(
    claim: AheadClaim | None, result: Callable[[], AheadParts | None]
) -> Iterator[None]:
    """Within the block, :func:`replay_recorded` takes the variants of ``claim`` from
    ``result()`` (:func:`replay_ahead`'s, waited for once its own share is done) when the
    claim is for the run it was given; else, or if ``result`` fails, it replays them."""
    token = _AHEAD.set(None if claim is None else [claim, result])
    try:
        yield
    finally:
        _AHEAD.reset(token)


_AHEAD: ContextVar[list[Any] | None] = ContextVar("replayed_ahead", default=None)


@dataclass
class _Ahead:
    """A claim accepted by :func:`_ahead_for`, and how to wait for its tables."""

    claim: AheadClaim
    result: Callable[[], AheadParts | None]


def _ahead_for(
    manifest: ManifestSpec,
    suite: SuiteSpec,
    positions: dict[tuple[str, int], int],
    workers: int,
    registry: EvaluatorRegistry | None,
    journaled: ReplaySamples | None,
) -> _Ahead | None:
    """The replay done ahead (:func:`replayed_ahead`) if it is for this replay (taken
    once): the same suite object (same bytes, via the suite memo), an equal manifest, the
    same positions and process count, no evaluator and no journal."""
    pending = _AHEAD.get()
    if not pending:
        return None
    claim, result = pending
    pending.clear()  # one replay takes it, or none does
    if (
        journaled is not None
        or (registry is not None and len(registry))
        or suite is not claim.suite
        or workers != claim.workers
        or positions != claim.positions
        or manifest != claim.manifest
    ):
        return None
    return _Ahead(claim, result)


def _absorbed_ahead(
    ahead: _Ahead, theirs: list[VariantSpec], task: Callable[[VariantSpec], Any]
) -> list[Any]:
    """The tables of ``theirs`` as :func:`run_tasks` gives them: the ahead process's for
    each variant whose file is still the one it read, the others replayed here by
    ``task`` (also all of them if the ahead process failed)."""
    try:
        done = ahead.result() or {}
    except Exception:  # (its own error, if any, is met again by the replay here)
        done = {}
    results: list[Any] = []
    for variant in theirs:
        key, parts = done.pop(variant.id, (None, None))
        same = key is not None and file_key(variant.resolved_target, content=bool(key[-1])) == key
        results.append(parts if same else task(variant))
    return results
