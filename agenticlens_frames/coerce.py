"""One way in for every figure and the explorer: a run, a result or an analysis.

Users hold different objects at different moments — the :class:`ExperimentRun` of
:func:`~agenticlens_frames.load_experiment`, the result of :func:`~agenticlens_frames.api.run`
or of the live runner, or an :class:`ExperimentAnalysis`. :func:`as_analysis` turns any of
them into the analysis, passing statistics options through: the options of
:func:`~agenticlens_frames.analyze`, and the paired-comparison settings of
:func:`~agenticlens_frames.resolve_comparisons` (``correction="holm"``, ``alpha``,
``method`` ...) by name, so ``explore(run, correction="holm")`` just works.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from ._deprecate import renamed_from
from ._suggest import close_match
from .analysis import ExperimentAnalysis, analyze
from .errors import InputError
from .frames import ExperimentRun
from .paired import ComparisonsConfig, resolve_comparisons

__all__ = ["STATISTICS_OPTIONS", "as_analysis", "check_options"]

#: Options of analyze() itself (its ``correction`` shorthand is taken with the paired
#: settings below, which resolve it against the manifest).
_ANALYZE = tuple(p for p in inspect.signature(analyze).parameters if p not in ("run", "correction"))
#: analyze()'s deprecated keywords: still let through, for analyze to warn about.
_ANALYZE_RENAMED = tuple(renamed_from(analyze))
#: Paired-comparison settings (fields of ComparisonsConfig a user may set); ``paired_method``
#: is the command line's name for ``method``.
_PAIRED = (
    "correction",
    *(
        f
        for f in ComparisonsConfig.__dataclass_fields__
        if f not in ("correction", "source", "file", *_ANALYZE)
    ),
    "paired_method",
)
#: Every statistics option a figure function or the explorer passes through.
STATISTICS_OPTIONS: tuple[str, ...] = (*_ANALYZE, *_PAIRED)


def check_options(
    options: Mapping[str, Any], function: str | None = None, own: Sequence[str] = ()
) -> None:
    """Refuse a keyword that is neither a statistics option nor one of ``own``, the
    keywords of the calling ``function`` (a figure's ``case_order``, the explorer's
    ``max_cases``), with the closest of either.

    The figures and the explorer take the statistics options as ``**statistics``, so a
    misspelt keyword of their own landed there: ``case_heatmap(run, case_ordr="flaky")``
    was "unknown statistics option 'case_ordr' (did you mean 'cluster'?)".

    Examples
    --------
    >>> check_options({"case_ordr": "flaky"}, "case_heatmap", own=("case_order", "color"))
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: case_ordr: case_heatmap() has no keyword \
'case_ordr' (did you mean 'case_order'? its own are case_order, color; statistics options: ...)
    >>> check_options({"correction": "holm"}, "case_heatmap", own=("case_order",))
    """
    unknown = [n for n in options if n not in STATISTICS_OPTIONS and n not in _ANALYZE_RENAMED]
    if not unknown:
        return
    name = unknown[0]
    mine = [n for n in own if n not in STATISTICS_OPTIONS]
    match = close_match(name, mine) or close_match(name, STATISTICS_OPTIONS)
    hint = (f"did you mean {match!r}? " if match else "") + (
        f"its own are {', '.join(mine)}; statistics options: " if mine else "known: "
    )
    raise InputError(
        f"{function}() has no keyword {name!r}"
        if function
        else f"unknown statistics option {name!r}",
        location=name,
        hint=hint + ", ".join(STATISTICS_OPTIONS),
    )


def _run_of(data: Any) -> ExperimentRun | None:
    if isinstance(data, ExperimentRun):
        return data
    run = getattr(data, "run", None)  # ExperimentResult, LiveRunResult
    return run if isinstance(run, ExperimentRun) else None


def as_analysis(data: Any, **options: Any) -> ExperimentAnalysis:
    """The analysis of ``data``, computed with ``options`` when they are given.

    Parameters
    ----------
    data
        An :class:`~agenticlens_frames.ExperimentAnalysis` (returned as is without
        options), an :class:`~agenticlens_frames.ExperimentRun`, or anything with a
        ``run`` attribute holding one (``ExperimentResult``, ``LiveRunResult``).
    **options
        :func:`~agenticlens_frames.analyze` options (``confidence_level``,
        ``latency_missing`` ...) and paired-comparison settings (``correction``,
        ``alpha``, ``method`` or ``paired_method``, ``cluster`` ...). Given with an
        analysis, its run is analysed again with its own settings plus these.

    Raises
    ------
    InputError
        An unknown option (with the closest known name), options for an analysis loaded
        from a saved report (it has no tables to recompute from), or an object that is
        none of the above.

    Examples
    --------
    >>> from agenticlens_frames import load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> a = as_analysis(run, correction="holm")
    >>> a.paired_frames["paired_comparisons"]["correction"].unique().tolist()
    ['holm']
    >>> as_analysis(a) is a
    True
    >>> as_analysis(run, corection="holm")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: corection: unknown statistics option 'corection' \
(did you mean 'correction'? ...)
    """
    check_options(options)
    if isinstance(data, ExperimentAnalysis):
        if not options:
            return data
        if data.run is None:
            raise InputError(
                "statistics options need the experiment's tables, and this analysis was "
                "loaded from a saved report",
                hint="load the run (load_experiment or read_parquet) and pass it instead",
            )
        base = {
            "confidence_level": data.confidence_level,
            "regression_threshold": data.regression_threshold,
            "pass_k": data.pass_k,
            "latency_missing": data.latency_missing,
        }
        return as_analysis(data.run, **{**base, **options})
    run = _run_of(data)
    if run is None:
        raise InputError(
            f"expected an ExperimentRun, an experiment result or an ExperimentAnalysis, "
            f"got {type(data).__name__}",
            hint="pass load_experiment(...), the result of run(...), or analyze(...)",
        )
    analyze_options = {k: v for k, v in options.items() if k in (*_ANALYZE, *_ANALYZE_RENAMED)}
    # None is "not given", as in analyze(run, correction=None): a helper passing its own
    # correction=None through was refused on a run that declares none.
    paired = {k: v for k, v in options.items() if k in _PAIRED and v is not None}
    if "paired_method" in paired:
        paired["method"] = paired.pop("paired_method")
    if paired:
        if "comparisons" in analyze_options:
            raise InputError(
                "give either comparisons= or the paired settings "
                f"({', '.join(sorted(paired))}), not both"
            )
        correction = paired.pop("correction", None)
        if correction is None and run.manifest.comparisons is not None:
            correction = "manifest"
        analyze_options["comparisons"] = resolve_comparisons(
            run.manifest, correction=correction, **paired
        )
    return analyze(run, **analyze_options)
