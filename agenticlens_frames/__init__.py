"""agenticlens_frames: run and analyse AI-agent experiments as tidy pandas/Arrow tables.

Reads and runs AgenticLens 0.10 experiments (manifest, suite, recorded targets) and keeps
every trial as tidy tables: ``attempts``, ``checks``, ``trials``, ``variants``, ``cases``.
Result frames (case matrix, variant summary, comparisons, factor levels, Pareto frontier)
are vectorised functions of those tables; the JSON, CSV and HTML reports render them.

Examples
--------
>>> import agenticlens_frames as alf
>>> run = alf.load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
>>> sorted(run.tables)
['attempts', 'cases', 'checks', 'trials', 'variants']
>>> result = alf.analyze(run)
>>> list(result.variants["variant_id"].astype(str))[:2]
['baseline', 'model-large']
"""

from typing import TYPE_CHECKING

from ._compat import VERSION as __version__
from ._lazy import lazy_exports

if TYPE_CHECKING:  # what the lazy loader below provides, for type checkers and IDEs
    from . import api, testing, viz
    from .analysis import (
        ExperimentAnalysis,
        analyze,
        case_matrix,
        compare_to_baseline,
        factor_levels,
        pareto_frontier,
        pass_at_k,
        report_warnings,
        trial_summary,
        variant_summary,
    )
    from .api import AgentContext, Comparator, Experiment, ExperimentResult, Tracker, Variant
    from .archive import Archive, ArchiveAnalysis, ArchiveSlice
    from .coerce import as_analysis
    from .errors import InputError
    from .evaluators import (
        Evaluator,
        EvaluatorRegistry,
        JudgeRetryPolicy,
        default_registry,
        load_registry,
    )
    from .factorial import factor_effects
    from .formats import load_manifest, load_recorded, load_suite, normalize_trace
    from .frames import ExperimentRun, read_parquet
    from .frontier import frontier_uncertainty
    from .judge_client import ChatJudge
    from .loading import load_experiment
    from .paired import (
        ComparisonsConfig,
        GuardRails,
        case_labels,
        case_level_summary,
        case_verdicts,
        minimum_detectable_effect,
        noise_floor,
        noninferiority_gate,
        paired_comparisons,
        parse_comparisons,
        power_analysis,
        resolve_comparisons,
        trials_for_precision,
        variance_decomposition,
    )
    from .report.csv_report import render_cases_csv, render_variants_csv
    from .report.html import write_html_report
    from .report.json_report import build_report, write_json_report
    from .report.saved import load_report
    from .runner import LiveRunResult, RetryPolicy, run_experiment
    from .runner.order import execution_order
    from .runner.stopping import StopRule
    from .widgets import Explorer, explore  # Explorer: not in __all__

# Public names and the module each lives in. They are imported on first use, so the
# command line (and anything importing one submodule) does not pay for plotly, the
# live targets' HTTP stack or the archive engines it does not need.
_LAZY: dict[str, str] = {
    "api": ".api",
    "viz": ".viz",
    "testing": ".testing",
    "ExperimentAnalysis": ".analysis",
    "analyze": ".analysis",
    "case_matrix": ".analysis",
    "compare_to_baseline": ".analysis",
    "factor_levels": ".analysis",
    "pareto_frontier": ".analysis",
    "pass_at_k": ".analysis",
    "report_warnings": ".analysis",
    "trial_summary": ".analysis",
    "variant_summary": ".analysis",
    "AgentContext": ".api",
    "Comparator": ".api",
    "Experiment": ".api",
    "ExperimentResult": ".api",
    "Tracker": ".api",
    "Variant": ".api",
    "Archive": ".archive",
    "ArchiveAnalysis": ".archive",
    "ArchiveSlice": ".archive",
    "as_analysis": ".coerce",
    "ComparisonsConfig": ".paired",
    "GuardRails": ".paired",
    "parse_comparisons": ".paired",
    "resolve_comparisons": ".paired",
    "InputError": ".errors",
    "Evaluator": ".evaluators",
    "EvaluatorRegistry": ".evaluators",
    "load_registry": ".evaluators",
    "JudgeRetryPolicy": ".evaluators",
    "ChatJudge": ".judge_client",
    "default_registry": ".evaluators",
    "load_manifest": ".formats",
    "load_recorded": ".formats",
    "load_suite": ".formats",
    "normalize_trace": ".formats",
    "ExperimentRun": ".frames",
    "read_parquet": ".frames",
    "factor_effects": ".factorial",
    "frontier_uncertainty": ".frontier",
    "load_experiment": ".loading",
    "case_labels": ".paired",
    "case_level_summary": ".paired",
    "minimum_detectable_effect": ".paired",
    "noise_floor": ".paired",
    "noninferiority_gate": ".paired",
    "paired_comparisons": ".paired",
    "power_analysis": ".paired",
    "trials_for_precision": ".paired",
    "variance_decomposition": ".paired",
    "render_cases_csv": ".report.csv_report",
    "render_variants_csv": ".report.csv_report",
    "write_html_report": ".report.html",
    "build_report": ".report.json_report",
    "write_json_report": ".report.json_report",
    "load_report": ".report.saved",
    "LiveRunResult": ".runner",
    "RetryPolicy": ".runner",
    "run_experiment": ".runner",
    "execution_order": ".runner.order",
    "case_verdicts": ".paired",
    "StopRule": ".runner.stopping",
    "explore": ".widgets",
    "Explorer": ".widgets",
}


__getattr__, __dir__, _ = lazy_exports(__name__, _LAZY, globals())

#: The public API: every lazily exported name but the explorer's class (reached through
#: :func:`explore`), and the version. Written once, in ``_LAZY``; a test checks the
#: type-checking imports above name the same things.
__all__ = sorted([*(name for name in _LAZY if name != "Explorer"), "__version__"])
