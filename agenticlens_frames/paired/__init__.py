"""Case-level statistics as tidy frames: paired comparisons, intervals, planning, the gate.

Every function takes an :class:`~agenticlens_frames.frames.ExperimentRun` and returns a
tidy :class:`pandas.DataFrame` (or plain values) whose columns are named after the
estimand; the JSON blocks of the report are built from them in
:mod:`agenticlens_frames.report.paired_json`. The parts:

``settings``     the comparison settings, their one set of rules, the guard rails
``dimensions``   the declared dimensions evaluated on a run (per-case values)
``comparisons``  paired comparisons of every candidate with the baseline, corrected
``gate``         the non-inferiority gate
``case_level``   per-variant intervals that treat cases as units, variance, labels
``planning``     power, minimum detectable effect, trials for a precision
``lock``         what the comparison is fixed to with the run
``outputs``      every paired frame of one run in one pass, for ``analyze``
``verdicts``     the case-level verdict per candidate and dimension, in words
``headline``     each candidate's verdicts as one sentence (the summaries lead with it)
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # what the lazy loader below provides, for type checkers and IDEs
    from .._choices import METHODS, PairedMethodInfo, method_names
    from .case_level import case_labels, case_level_summary, noise_floor, variance_decomposition
    from .comparisons import (
        PAIRED_COLUMNS,
        SMALL_SAMPLE,
        PairedAnalysis,
        paired_analysis,
        paired_comparisons,
    )
    from .gate import (
        GATE_COLUMNS,
        gate_details,
        gate_passed,
        gate_statement,
        noninferiority_failures,
        noninferiority_gate,
    )
    from .lock import (
        check_saved_report,
        check_saved_settings,
        check_unchanged,
        comparison_fingerprint,
        enforce_lock,
        read_lock,
        suite_hash,
        write_lock,
    )
    from .outputs import paired_outputs, paired_outputs_and_verdicts
    from .planning import minimum_detectable_effect, power_analysis, trials_for_precision
    from .settings import (
        DIMENSIONS,
        FAMILIES,
        FIXED_FIELDS,
        ComparisonsConfig,
        EvaluatorChoice,
        GuardRails,
        check_guard_rails,
        check_setting,
        comparisons_from_cli,
        default_evaluators,
        evaluator_plan,
        parse_comparisons,
        resolve_comparisons,
    )
    from .verdicts import VERDICT_COLUMNS, case_verdicts

# Imported on first use: the command line reads the method names without loading the
# statistics.
_LAZY = {
    "DIMENSIONS": ".settings",
    "FAMILIES": ".settings",
    "FIXED_FIELDS": ".settings",
    "GATE_COLUMNS": ".gate",
    "METHODS": ".._choices",
    "PAIRED_COLUMNS": ".comparisons",
    "SMALL_SAMPLE": ".comparisons",
    "VERDICT_COLUMNS": ".verdicts",
    "ComparisonsConfig": ".settings",
    "EvaluatorChoice": ".settings",
    "GuardRails": ".settings",
    "PairedAnalysis": ".comparisons",
    "PairedMethodInfo": ".._choices",
    "case_labels": ".case_level",
    "case_level_summary": ".case_level",
    "case_verdicts": ".verdicts",
    "check_guard_rails": ".settings",
    "check_saved_report": ".lock",
    "check_saved_settings": ".lock",
    "check_setting": ".settings",
    "check_unchanged": ".lock",
    "comparison_fingerprint": ".lock",
    "comparisons_from_cli": ".settings",
    "default_evaluators": ".settings",
    "enforce_lock": ".lock",
    "evaluator_plan": ".settings",
    "gate_details": ".gate",
    "gate_passed": ".gate",
    "gate_statement": ".gate",
    "method_names": ".._choices",
    "minimum_detectable_effect": ".planning",
    "noise_floor": ".case_level",
    "noninferiority_failures": ".gate",
    "noninferiority_gate": ".gate",
    "paired_analysis": ".comparisons",
    "paired_comparisons": ".comparisons",
    "paired_outputs": ".outputs",
    "paired_outputs_and_verdicts": ".outputs",
    "parse_comparisons": ".settings",
    "power_analysis": ".planning",
    "read_lock": ".lock",
    "resolve_comparisons": ".settings",
    "suite_hash": ".lock",
    "trials_for_precision": ".planning",
    "variance_decomposition": ".case_level",
    "write_lock": ".lock",
}

#: ``__all__`` is every name of ``_LAZY`` (the one list of public names).
__getattr__, __dir__, __all__ = lazy_exports(__name__, _LAZY, globals())
