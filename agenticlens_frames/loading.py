"""``load_experiment``: manifest + suite + recorded trials → :class:`ExperimentRun`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal, NamedTuple

from ._choices import check_invalid_payload
from ._deprecate import keyword_hints
from ._gc import paused_gc
from .errors import InputError
from .evaluators import EvaluatorRegistry, as_registry
from .formats import load_manifest, load_suite
from .formats.suite import with_suite_problems
from .frames import ExperimentRun, TableBuilder
from .runner.order import execution_order
from .runner.recorded import replay_recorded

__all__ = ["load_experiment"]

_LOG = logging.getLogger(__name__)


class _Caller(NamedTuple):
    """Who loads the experiment, as the notes and hints name it to the user.

    A command built on :func:`load_experiment` (``archive add MANIFEST SUITE``) names
    itself and its own way out: a note naming ``load_experiment`` and ``run_dir=`` told a
    shell user about a function and an argument they never saw.
    """

    name: str
    """What the user called, e.g. ``"load_experiment"``."""
    what: str
    """What judges at every load, e.g. ``"load_experiment without run_dir"``."""
    when: str
    """When it judges again, e.g. ``"at every load"``."""
    instead: str
    """The note's way to use a run folder, after ``experiment run ... --run-dir DIR``."""
    then: str
    """The same, in the hint refusing live variants."""


_LOAD_EXPERIMENT = _Caller(
    "load_experiment",
    "load_experiment without run_dir",
    "at every load",
    "load with run_dir=DIR",
    "load_experiment(..., run_dir=DIR)",
)


@keyword_hints
def load_experiment(
    manifest_path: str | Path,
    suite_path: str | Path,
    *,
    evaluators: EvaluatorRegistry | str | None = None,
    progress: bool = False,
    run_dir: str | Path | None = None,
    invalid_payload: Literal["trial", "case"] = "trial",
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
        Registered Python evaluators the suite may name: a registry, or a
        ``"module:attr"`` spec as for ``--evaluators``.
    progress
        Show a progress bar while scoring.
    run_dir
        The run folder of a finished ``experiment run --run-dir`` (or
        ``runner.run_experiment(run_dir=...)``) of this experiment: the live (python /
        http) variants' journaled results are loaded, no target is called, and the
        recorded variants reuse the judge samples journaled there. No judge is called:
        an unavailable judge score loads as unavailable, with its recorded error (the
        resume of the run judges it again), and a sample the folder lacks is unavailable
        with a ``NotJudged`` error (a note says how many). Without it, experiments with
        live variants are refused with the command that runs them, and recorded variants
        are judged again at every load (a note on stderr says so). A run that its
        early-stopping rule decided loads as the run returned it: the cases the sequence
        used, its stopping block as ``run.stopping`` (which
        :func:`~agenticlens_frames.analyze` reports).
    invalid_payload
        The ``--invalid-payload`` mode the live run used.

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
    return _load(
        manifest_path,
        suite_path,
        evaluators=evaluators,
        progress=progress,
        run_dir=run_dir,
        invalid_payload=invalid_payload,
        caller=_LOAD_EXPERIMENT,
    )


def _load(
    manifest_path: str | Path,
    suite_path: str | Path,
    *,
    evaluators: EvaluatorRegistry | str | None,
    progress: bool,
    run_dir: str | Path | None,
    invalid_payload: Literal["trial", "case"],
    caller: _Caller,
) -> ExperimentRun:
    """:func:`load_experiment`, its notes and hints naming ``caller``."""
    # Checked with or without run_dir: a misspelt mode was accepted whenever it was unused.
    check_invalid_payload(invalid_payload)
    registry = as_registry(evaluators)
    try:
        manifest = load_manifest(manifest_path)
        if manifest.comparisons is not None:
            # Checked with the rest of the manifest (a mistyped correction was reported only
            # by analyze, after every trial was scored).
            from .paired.settings import parse_comparisons

            parse_comparisons(manifest.comparisons, file=manifest.path)
    except InputError as exc:
        raise with_suite_problems(exc, suite_path, known_evaluators=tuple(registry)) from None
    suite = load_suite(suite_path, known_evaluators=tuple(registry))
    live = [v for v in manifest.variants if v.target_kind != "recorded"]
    if run_dir is not None:
        # A recorded-only experiment too: its folder holds the judge samples already paid
        # for, and a folder named but not used would be an argument silently ignored.
        from .runner.live import load_run_folder

        return load_run_folder(
            manifest,
            suite,
            run_dir,
            registry,
            invalid_payload=invalid_payload,
            progress=progress,
        )
    if live:
        v = live[0]
        raise InputError(
            f"variant {v.id!r} has target_kind {v.target_kind!r}; its results come from "
            f"calling the target, which {caller.name} never does",
            file=manifest.path,
            location=("variants", manifest.variants.index(v), "target_kind"),
            hint=f"run it with `agenticlens-frames experiment run {manifest.path} "
            f"{suite.path} --run-dir DIR`, then {caller.then}",
        )
    judged = sorted(
        {
            ref.name
            for case in suite.cases
            for ref in case.evaluators
            if ref.name in registry and registry[ref.name].runner is not None
        }
    )
    if judged:
        # Nowhere to keep the scores: this load pays the judge, needs its network and key,
        # and may differ from the last one. Said, since a load is expected to cost nothing.
        _LOG.warning(
            "Note: %s calls the judge(s) %s for every recorded attempt, %s (there is no run "
            "folder to keep the scores in); to judge once, run `agenticlens-frames experiment "
            "run %s %s --run-dir DIR` and %s",
            caller.what,
            ", ".join(map(repr, judged)),
            caller.when,
            manifest.path,
            suite.path,
            caller.instead,
        )
    builder = TableBuilder(manifest, suite)
    order = execution_order(manifest.variant_ids, manifest.trial_count, manifest.random_seed)
    used = {ref.name for case in suite.cases for ref in case.evaluators}
    with paused_gc():
        replay_recorded(builder, manifest, suite, order, registry, progress=progress)
        return builder.build({name: registry[name].version for name in sorted(used)})
