"""Replay recorded targets: trial *t* of a variant replays entry *t − 1* of its file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._fork import run_tasks, worker_count
from .._progress import progress_bar
from ..errors import InputError
from ..evaluators import EvaluatorRegistry
from ..formats import load_recorded, normalize_trace
from ..formats.model import CaseSpec, ManifestSpec, RecordedTrials, SuiteSpec, VariantSpec
from ..formats.recorded import (
    RecordedColumns,
    TrialColumns,
    iter_recorded_columns,
    load_recorded_columns,
)
from ..formats.traces import Trace
from ..frames import CheckColumns, TableBuilder
from ..scoring import score_sample, score_unavailable
from ..scoring_batch import SuitePlan, plan_suite, score_trial

if TYPE_CHECKING:  # (the journal imports scoring; replays without a run folder need neither)
    from ..judges import SampleBook
    from .journal import ReplaySamples

__all__ = ["replay_recorded", "replay_trial"]


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
                trace = normalize_trace(trace or {}, file=path)
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
            trace = normalize_trace(trace or {}, file=path)
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
            trace = normalize_trace(trace or {}, file=path)
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


def _file_size(variant: VariantSpec) -> int:
    try:
        return os.path.getsize(variant.resolved_target)
    except OSError:  # load_recorded names the problem when the file is read
        return 0


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


def _deal(variants: list[VariantSpec], workers: int) -> list[VariantSpec]:
    """The variants in the task order for :func:`~agenticlens_frames._fork.run_tasks`
    (task *i* runs in process ``i % workers``): each process gets a similar share of bytes
    to parse, and the largest files are not parsed at the same time.

    Replaying a file holds its bytes and the parsed trial being scored, more for larger
    files, so two processes each starting on one of the largest files made a peak. Files are
    given out largest first, each to the process with the fewest bytes so far among those
    with a task left; process 0 then parses its files largest first, the others smallest
    first, so their large files come later, once the first one is partly freed.
    """
    sizes = {v.id: _file_size(v) for v in variants}
    counts = [len(range(p, len(variants), workers)) for p in range(workers)]
    shares: list[list[VariantSpec]] = [[] for _ in range(workers)]
    load = [0] * workers
    for variant in sorted(variants, key=lambda v: sizes[v.id], reverse=True):
        p = min((p for p in range(workers) if len(shares[p]) < counts[p]), key=load.__getitem__)
        shares[p].append(variant)
        load[p] += sizes[variant.id]
    for p in range(1, workers):
        shares[p].reverse()  # smallest first
    return [shares[i % workers][i // workers] for i in range(len(variants))]


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
    positions = {item: position for position, item in enumerate(order)}
    variants = [v for v in manifest.variants if v.target_kind == "recorded"]
    trials = {v.id: sorted(k[1] for k in positions if k[0] == v.id) for v in variants}
    total = sum(map(len, trials.values()))
    workers = (
        1 if journaled is not None else worker_count(len(variants), size=total * len(suite.cases))
    )
    plan = plan_suite(suite) if registry is None or not registry.has_judges else None
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
            dealt = _deal(variants, workers)
            try:
                results = run_tasks([lambda v=v: task(v) for v in dealt], workers)
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
