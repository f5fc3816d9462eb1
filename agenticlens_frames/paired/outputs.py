"""Every paired frame of one run in one pass, for :func:`~agenticlens_frames.analyze`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..frames import ExperimentRun
from .case_level import case_labels, case_level_summary, variance_decomposition
from .comparisons import PairedAnalysis, paired_analysis
from .dimensions import evaluation
from .settings import ComparisonsConfig

__all__ = ["paired_outputs", "paired_outputs_and_verdicts"]


def paired_outputs(
    run: ExperimentRun,
    config: ComparisonsConfig | None = None,
    *,
    confidence_level: float = 0.95,
    lock: str | Path | None = None,
) -> tuple[dict[str, pd.DataFrame], PairedAnalysis | None]:
    """The case-level frames, and the paired comparisons when a correction was declared.

    Returns
    -------
    frames, paired
        ``frames``: ``case_level_summary``, ``variance_decomposition``, ``case_labels``
        and, with a config, ``paired_comparisons`` (+ ``noninferiority`` when a margin
        was declared). ``paired``: the :class:`PairedAnalysis` with a config, else None.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> frames, paired = paired_outputs(run)
    >>> sorted(frames), paired
    (['case_labels', 'case_level_summary', 'variance_decomposition'], None)
    """
    cluster = config.cluster if config is not None else None
    # The three frames read the same evaluation of `passed`: computed once.
    passed = evaluation(run, "passed")
    frames: dict[str, pd.DataFrame] = {
        "case_level_summary": case_level_summary(
            run, confidence_level=confidence_level, cluster=cluster, evaluated=passed
        ),
        "variance_decomposition": variance_decomposition(
            run, confidence_level=confidence_level, evaluated=passed
        ),
        "case_labels": case_labels(run, confidence_level=confidence_level, evaluated=passed),
    }
    if config is None:
        return frames, None
    result = paired_analysis(run, config, lock=lock)
    frames["paired_comparisons"] = result.comparisons
    if result.noninferiority is not None:
        frames["noninferiority"] = result.noninferiority
    return frames, result


def paired_outputs_and_verdicts(
    run: ExperimentRun,
    config: ComparisonsConfig | None = None,
    *,
    confidence_level: float = 0.95,
    lock: str | Path | None = None,
) -> tuple[dict[str, pd.DataFrame], PairedAnalysis | None, pd.DataFrame]:
    """:func:`paired_outputs` and the verdicts read from its comparisons, as
    :func:`~agenticlens_frames.analyze` and a saved report without verdicts get them.

    ``config`` None takes the manifest's ``comparisons:`` (as the verdicts do), so the
    frames and the verdicts always follow one declaration.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> frames, paired, verdicts = paired_outputs_and_verdicts(run)  # the manifest's holm
    >>> verdicts.attrs["correction"], sorted(set(verdicts["verdict"])), paired is not None
    ('holm', ['no detectable difference', 'worse'], True)
    """
    from .settings import run_comparisons, with_analysis_level
    from .verdicts import case_verdicts

    given = config
    config = run_comparisons(run, given)
    config = with_analysis_level(config, run.manifest, given, confidence_level)
    frames, paired = paired_outputs(run, config, confidence_level=confidence_level, lock=lock)
    verdicts = case_verdicts(
        run,
        config,
        confidence_level=confidence_level,
        paired=frames.get("paired_comparisons"),
    )
    return frames, paired, verdicts
