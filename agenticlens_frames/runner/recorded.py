"""Replay recorded targets: trial *t* of a variant replays entry *t − 1* of its file."""

from __future__ import annotations

from collections.abc import Iterable

from ..evaluators import EvaluatorRegistry
from ..formats import load_recorded, normalize_trace
from ..formats.model import ManifestSpec, RecordedTrials, SuiteSpec
from ..formats.traces import Trace
from ..frames import TableBuilder
from ..scoring import score_sample, score_unavailable

__all__ = ["replay_recorded", "replay_trial"]


def replay_trial(
    builder: TableBuilder,
    suite: SuiteSpec,
    variant_id: str,
    trial: int,
    position: int,
    recorded: RecordedTrials,
    registry: EvaluatorRegistry | None = None,
) -> None:
    """Score one recorded trial into ``builder`` (or record it as failed if absent)."""
    available = len(recorded.trials)
    if trial > available:
        # The package's wording (spec §4.1), so reports read the same.
        builder.add_failed_trial(
            variant_id,
            trial,
            position,
            f"recorded target has {available} trial(s); trial {trial} is missing",
        )
        return
    builder.add_trial(variant_id, trial, "succeeded", position)
    by_case = {sample["case_id"]: sample for sample in recorded.trials[trial - 1]}
    for case in suite.cases:
        sample = by_case.get(case.id)
        row = builder.next_attempt
        if sample is None:
            result = score_unavailable(builder.checks, row)
            builder.add_attempt(variant_id, trial, case, "missing_sample", result, output="")
            continue
        trace = sample.get("trace")
        if not isinstance(trace, Trace):
            trace = normalize_trace(trace or {}, file=recorded.path)
        output = sample["output"]
        result = score_sample(case, output, trace, builder.checks, row, registry)
        builder.add_attempt(variant_id, trial, case, "ok", result, output=output, trace=trace)


def replay_recorded(
    builder: TableBuilder,
    manifest: ManifestSpec,
    suite: SuiteSpec,
    order: Iterable[tuple[str, int]],
    registry: EvaluatorRegistry | None = None,
    *,
    progress: bool = False,
) -> None:
    """Replay every recorded (variant, trial) of ``order`` into ``builder``.

    Each variant's file is read once and validated against the suite before any of its
    trials is scored (:func:`agenticlens_frames.formats.load_recorded`); each trial keeps
    its position in ``order`` as its execution position.
    """
    from tqdm.auto import tqdm

    items = list(order)
    positions = {item: position for position, item in enumerate(items)}
    with tqdm(total=len(items), desc="replaying trials", unit="trial", disable=not progress) as bar:
        # Variant by variant, so only one recorded file is in memory at a time; the
        # execution order only interleaves trials, which does not change any number.
        for variant in manifest.variants:
            if variant.target_kind != "recorded":
                continue
            recorded = load_recorded(variant.resolved_target, suite)
            for key in sorted(k for k in positions if k[0] == variant.id):
                replay_trial(builder, suite, variant.id, key[1], positions[key], recorded, registry)
                bar.update()
            del recorded
