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

    Each variant's file is read once (and validated against the suite before any trial is
    scored, by :func:`agenticlens_frames.formats.load_recorded`).
    """
    from tqdm.auto import tqdm

    files: dict[str, RecordedTrials] = {}
    for variant in manifest.variants:
        if variant.target_kind == "recorded":
            files[variant.id] = load_recorded(variant.resolved_target, suite)
    items = list(order)
    for position, (variant_id, trial) in enumerate(
        tqdm(items, desc="replaying trials", unit="trial", disable=not progress)
    ):
        replay_trial(builder, suite, variant_id, trial, position, files[variant_id], registry)
