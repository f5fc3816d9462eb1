"""``load_experiment``: manifest + suite + recorded trials → :class:`ExperimentRun`."""

from __future__ import annotations

from pathlib import Path

from ._gc import paused_gc
from .errors import InputError
from .evaluators import EvaluatorRegistry
from .formats import load_manifest, load_suite
from .frames import ExperimentRun, TableBuilder
from .runner.order import execution_order
from .runner.recorded import replay_recorded

__all__ = ["load_experiment"]


def load_experiment(
    manifest_path: str | Path,
    suite_path: str | Path,
    *,
    evaluators: EvaluatorRegistry | None = None,
    progress: bool = False,
) -> ExperimentRun:
    """Load an AgenticLens experiment with recorded targets and score every trial.

    Everything is validated before any trial is scored: the manifest, the suite (including
    JSON schemas and evaluator names) and every recorded-trials file. Problems raise
    :class:`~agenticlens_frames.errors.InputError` naming the file and the place.

    Parameters
    ----------
    manifest_path, suite_path
        The experiment manifest and the evaluation suite (YAML, or JSON by extension).
    evaluators
        Registered Python evaluators the suite may name.
    progress
        Show a progress bar while scoring.

    Returns
    -------
    ExperimentRun
        The tidy ``attempts``, ``checks``, ``trials``, ``variants`` and ``cases`` tables.

    Examples
    --------
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> run.attempts.groupby("variant_id", observed=False)["trial"].count().min() > 0
    np.True_
    """
    manifest = load_manifest(manifest_path)
    registry = evaluators or EvaluatorRegistry()
    suite = load_suite(suite_path, known_evaluators=tuple(registry))
    live = [v for v in manifest.variants if v.target_kind != "recorded"]
    if live:
        v = live[0]
        raise InputError(
            f"variant {v.id!r} has target_kind {v.target_kind!r}; load_experiment replays "
            "recorded targets only",
            file=manifest.path,
            location=("variants", manifest.variants.index(v), "target_kind"),
            hint="run live targets with `agenticlens-frames experiment run`",
        )
    builder = TableBuilder(manifest, suite)
    order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
    used = {ref.name for case in suite.cases for ref in case.evaluators}
    with paused_gc():
        replay_recorded(builder, manifest, suite, order, registry, progress=progress)
        return builder.build({name: registry[name].version for name in sorted(used)})
