"""The ``agenticlens-frames`` command line.

Exit codes
----------
0  success
1  invalid input (a one-paragraph message, no traceback)
2  usage error: an unknown option, a value outside an option's choices or range, options
   that conflict (``--stop-margin`` without ``--stop-when``), or an option given where it
   has no effect (``--regression-rule`` without ``--fail-on-regression``)
3  some variant completed no trial (the run is incomplete), or with ``--max-unanswered``
   a variant's target left more than that share of its attempts unanswered
4  ``--fail-on-regression`` and a candidate regressed against the baseline: by default,
   significantly worse on quality, safety or reliability in the case-level paired
   comparison under the declared correction; with ``--regression-rule compat``,
   AgenticLens's rule (case pass rate or mean score down by more than the threshold,
   relative to the baseline's)
5  ``--noninferiority-margin`` / ``--noninferiority`` (or the manifest's) and a candidate
   failed a non-inferiority gate
6  ``--max-attempts`` stopped the run with attempts left: run again with ``--run-dir``
7  the run's process ended without finishing (a target or evaluator called ``os._exit``,
   or it was killed) and could not be resumed; what finished is kept in ``--run-dir``
130  interrupted (Ctrl-C, or ``SIGTERM`` or ``SIGHUP`` to ``experiment run``); what finished
     is kept in ``--run-dir``
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from . import _deferred_rich
from ._choices import PAIRED_METHODS, Correction  # not stats_paired: --help needs no numpy
from ._cli_errors import (
    EXIT_INVALID_INPUT,
    fail,
    fraction_between,
    masked,
    output_console,
    refuse_unused,
)
from ._cli_help import FlagsWithoutTypes
from ._values import count_noun  # (imports nothing heavy: --help stays quick)
from .errors import InputError, is_refusal_by_the_system, os_refusal

if TYPE_CHECKING:  # (imported where used: --help loads no pandas)
    from .report.summary import GateOutcome

# Help pages and usage errors without rich's Markdown and traceback modules (unused here).
_deferred_rich.install()

EXIT_OK = 0
EXIT_INCOMPLETE = 3
EXIT_REGRESSION = 4
EXIT_NONINFERIORITY = 5
EXIT_STOPPED = 6
EXIT_INTERRUPTED = 130

app = typer.Typer(
    cls=FlagsWithoutTypes,
    name="agenticlens-frames",
    help="Run and analyse AI-agent experiments (AgenticLens 0.10 compatible) as tidy tables.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from . import __version__

        typer.echo(f"agenticlens-frames {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Run and analyse AI-agent experiments (AgenticLens 0.10 compatible) as tidy tables."""


experiment_app = typer.Typer(
    cls=FlagsWithoutTypes,
    help="Run an experiment, or re-render a saved report.",
    no_args_is_help=True,
)
app.add_typer(experiment_app, name="experiment")


def _mount_archive() -> None:
    from .archive.cli import archive_app

    app.add_typer(archive_app, name="archive")


_mount_archive()


class LatencyPolicy(StrEnum):
    exclude = "exclude"
    zero = "zero"


class RegressionRule(StrEnum):
    case = "case"
    compat = "compat"


class InvalidPayloadPolicy(StrEnum):
    trial = "trial"
    case = "case"


# The choices of --paired-method (as _choices.Correction's of --correction), from the
# method registry, _choices.METHODS: --help lists them and click refuses anything else.
PairedMethod = StrEnum("PairedMethod", {name: name for name in PAIRED_METHODS})  # type: ignore[misc]


# The options `experiment run` and `experiment report` share, defined once.
def _open_unit(value: float | None) -> float | None:
    """An --alpha in (0, 0.5] (the paired settings' rule), refused as a usage error (exit 2)
    as --confidence-level's range is; it was exit 1, from deeper in.

    Examples
    --------
    >>> _open_unit(0.05)
    0.05
    >>> try:
    ...     _open_unit(1.0)
    ... except typer.BadParameter as refused:
    ...     print(refused)
    1 is not strictly between 0 and 1.
    >>> try:
    ...     _open_unit(0.95)
    ... except typer.BadParameter as refused:
    ...     print(refused)
    0.95 is above 0.5: give a number > 0 and <= 0.5, a significance level such as 0.05 (1 - \
confidence).
    """
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"{value:g} is not strictly between 0 and 1.")
    if value is not None and value > 0.5:
        # The paired settings' rule (check_setting), refused here as the usage error it is;
        # imported only then, as the command line imports the statistics on first use.
        from .paired.settings import ALPHA_RULE

        raise typer.BadParameter(f"{value:g} is above 0.5: give {ALPHA_RULE}.")
    return value


AlphaOpt = typer.Option(
    None,
    "--alpha",
    help="Level for the corrected decisions (default 0.05).",
    callback=_open_unit,
)
PairedMethodOpt = typer.Option(
    None,
    "--paired-method",
    help="Interval and test of the paired comparisons (default t).",
    case_sensitive=False,
)


def _gate_pairs(values: list[str] | None) -> list[tuple[str, float]]:
    """``--noninferiority DIMENSION=MARGIN`` values as (dimension, margin) pairs; a usage
    error (exit 2) names an unknown dimension (listing them), a margin that is not a
    number >= 0, or a dimension given twice.

    Examples
    --------
    >>> _gate_pairs(["quality=0.02", "latency=200"])
    [('quality', 0.02), ('latency', 200.0)]
    >>> try:
    ...     _gate_pairs(["latncy=200"])
    ... except typer.BadParameter as refused:
    ...     print(refused)
    unknown dimension 'latncy' in 'latncy=200'; the dimensions are quality, safety, \
reliability, latency, cost
    """
    from .formats.comparisons import DIMENSIONS  # here: --help loads no YAML reader

    out: list[tuple[str, float]] = []
    for value in values or ():
        dimension, sep, text = (part.strip() for part in value.partition("="))
        if not sep:
            raise typer.BadParameter(f"expected DIMENSION=MARGIN (e.g. latency=200), got {value!r}")
        if dimension not in DIMENSIONS:
            raise typer.BadParameter(
                f"unknown dimension {dimension!r} in {value!r}; the dimensions are "
                + ", ".join(DIMENSIONS)
            )
        try:
            margin = float(text)
        except ValueError:
            margin = math.nan
        if not (math.isfinite(margin) and margin >= 0):
            raise typer.BadParameter(
                f"the margin in {value!r} must be a number >= 0, in the dimension's unit "
                "(quality 0.02 = 2 pp, latency in ms, cost in USD)"
            )
        if any(dimension == seen for seen, _ in out):
            raise typer.BadParameter(f"{dimension} is given twice; give each dimension one margin")
        out.append((dimension, margin))
    return out


def _refuse_option_conflicts(
    *,
    stop_when: object = None,
    stop_margin: float | None = None,
    rerun_failed: bool = False,
    run_dir: Path | None = None,
    noninferiority_margin: float | None = None,
    noninferiority: list[str] | None = None,
    fail_on_regression: bool = False,
    regression_rule: RegressionRule | None = None,
) -> None:
    """Refuse options of ``experiment run`` (and ``experiment report``: the options it has)
    that need another one, or contradict one, as the usage errors they are (exit 2),
    before any file is read: they were exit 1, the status of a bad manifest, and came after
    the manifest's own problems; an option with no effect (``--regression-rule`` without
    the gate it chooses the rule of) was ignored without a word.

    Examples
    --------
    >>> _refuse_option_conflicts(noninferiority_margin=0.02, noninferiority=["latency=200"])
    >>> try:
    ...     _refuse_option_conflicts(stop_margin=0.05)
    ... except typer.BadParameter as refused:
    ...     print(refused.format_message())
    Invalid value for '--stop-margin': it applies to the early-stopping rule only (add \
--stop-when decided, or leave --stop-margin out)
    >>> try:
    ...     _refuse_option_conflicts(regression_rule=RegressionRule.compat)
    ... except typer.BadParameter as refused:
    ...     print(refused.format_message())
    Invalid value for '--regression-rule': it chooses the rule of the regression gate (add \
--fail-on-regression, or leave --regression-rule out)
    """
    refuse_unused(
        "--stop-margin",
        given=stop_margin is not None,
        used=stop_when is not None,
        does="applies to the early-stopping rule only",
        fix="add --stop-when decided",
    )
    # Without a folder there is no earlier run whose failures to call again: the option
    # was ignored and every attempt called once, as new.
    refuse_unused(
        "--rerun-failed",
        given=rerun_failed,
        used=run_dir is not None,
        does="calls again the failed attempts journaled in a run folder, and no --run-dir "
        "was given",
        fix="add the --run-dir of the run whose failures to call again",
    )
    refuse_unused(
        "--regression-rule",
        given=regression_rule is not None,
        used=fail_on_regression,
        does="chooses the rule of the regression gate",
        fix="add --fail-on-regression",
    )
    quality = [
        margin for dimension, margin in _gate_pairs(noninferiority) if dimension == "quality"
    ]
    if noninferiority_margin is not None and quality:
        raise typer.BadParameter(
            f"--noninferiority-margin {noninferiority_margin:g} and --noninferiority "
            f"quality={quality[0]:g} both set the quality gate (give one of them)",
            param_hint="'--noninferiority-margin'",
        )


def _check_gates(values: list[str] | None) -> list[str] | None:
    _gate_pairs(values)  # refused at parse time, before any work
    return values


FailOnRegressionOpt = typer.Option(
    False,
    "--fail-on-regression",
    help="Exit with status 4 if a candidate regressed (see --regression-rule).",
)


def _regression_rule_option(threshold: str) -> Any:
    """``--regression-rule``, whose compat rule reads ``threshold``: the run's own option,
    or, for a saved report, the threshold it was run with (report has no such option)."""
    return typer.Option(
        # None when not given: one without --fail-on-regression is refused, not ignored
        # (_refuse_option_conflicts); the help says the default, case.
        None,
        "--regression-rule",
        help="'case' (default): significantly worse on quality, safety or reliability in "
        "the case-level paired comparison under the declared correction (needs one); "
        "'compat': AgenticLens's rule, case pass rate or mean score down by more than "
        f"{threshold} relative to the baseline's, uncertainty ignored.",
    )


RegressionRuleOpt = _regression_rule_option("--regression-threshold")
SavedRegressionRuleOpt = _regression_rule_option(
    "the report's regression threshold (experiment run --regression-threshold)"
)

MaxUnansweredOpt = typer.Option(
    None,
    "--max-unanswered",
    callback=fraction_between(0.0, 1.0, "a share of the attempts", 0.2),
    help="Exit with status 3 if a variant's target left more than this share (0 to 1) of "
    "its attempts unanswered (errors, timeouts): an outage is not the agent's quality.",
)

SummaryOpt = typer.Option(
    None,
    "--summary",
    help="Append the decision as Markdown to this file (e.g. $GITHUB_STEP_SUMMARY).",
)


class StopWhen(StrEnum):
    decided = "decided"


def _by_option(outputs: dict[str, Path | None]) -> dict[str, Path | None]:
    """The output paths by command-line option (``--html`` …), for messages."""
    from .report.writers import WRITERS

    return {w.option: outputs[w.name] for w in WRITERS if w.name in outputs}


class _OutputsAhead:
    """The outputs a large run starts in a worker process as soon as its tables are built
    (report/writers.py ``start_outputs``: the JSON report's table work overlaps the
    analysis); stopped if the command fails before writing."""

    def __init__(self, paths: dict[str, Path | None], **options: Any) -> None:
        self.paths = paths
        self.options = options
        self.started: Any = None

    def start(self, run: Any) -> None:
        from ._fork import start_worker, worker_count
        from .report.writers import start_outputs

        if worker_count(2, size=len(run.attempts)) > 1:
            self.started = start_outputs(run, self.paths, start_worker=start_worker, **self.options)

    def __enter__(self) -> _OutputsAhead:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is not None and self.started is not None:
            self.started.worker.cancel()


#: A suite file this large is read in a forked process while ``experiment run`` imports
#: the analysis' modules (a 1 MB suite of 5 000 cases takes about 0.3 s to read).
SUITE_AHEAD_BYTES = 256 * 1024


@contextlib.contextmanager
def _suite_ahead(
    suite_file: Path, evaluators: str | None, manifest_file: Path | None = None
) -> Iterator[Callable[[], None]]:
    """Read a large suite in a forked process while this one imports the analysis'
    modules (pandas, numpy: about half a second on one core); the function given puts it
    in the memo of the enclosing ``suite_memo`` block, so the reads there return it.

    With ``manifest_file`` (no ``--run-dir``), that process then replays a replay
    worker's share of the recorded variants (runner/replay_plan.py ``claim_ahead``),
    which ``replay_recorded`` takes within the block when they are for its inputs.

    Any failure — an invalid suite included — is left to those reads, which raise as
    before, in their place. With ``--evaluators`` the suite is checked against a registry
    that only this process loads: it is read here, as without this.
    """
    from ._fork import forked_stages, worker_count

    try:
        size = os.path.getsize(suite_file)
    except OSError:  # named by the read in its place
        size = 0
    if evaluators or worker_count(2, size=size, threshold=SUITE_AHEAD_BYTES) < 2:
        yield lambda: None
        return
    from .formats.suite import remember

    read = functools.partial(_read_ahead, suite_file, manifest_file)
    with forked_stages(read, _replay_ahead) as (result, replayed), contextlib.ExitStack() as stack:

        def seed() -> None:
            try:
                key, suite, claim = result()
            except Exception:  # read again where it is needed, and its error raised there
                return
            remember(key, suite)
            if claim is not None:
                from .runner.recorded import replayed_ahead

                stack.enter_context(replayed_ahead(claim, replayed))

        yield seed


def _read_ahead(suite_file: Path, manifest_file: Path | None) -> tuple[Any, Any, Any]:
    """In ``_suite_ahead``'s process: the suite with its memo key, and the share of the
    replay this process then takes (None: none)."""
    from .formats.suite import read_for_memo

    key, suite = read_for_memo(suite_file)
    claim = None
    if manifest_file is not None:
        with contextlib.suppress(Exception):  # (the run meets any problem in its place)
            from .runner.replay_plan import claim_ahead

            claim = claim_ahead(manifest_file, suite)
    return key, suite, claim


def _replay_ahead(read: tuple[Any, Any, Any]) -> Any:
    """In ``_suite_ahead``'s process, once the suite is sent: its share of the replay."""
    from .runner.recorded import replay_ahead

    return replay_ahead(read[2])


def _write_outputs(
    console: Console,
    analysis: object,
    paths: dict[str, Path | None],
    started: Any = None,
    meanwhile: Callable[[], None] | None = None,
    **options: Any,
) -> None:
    """Write the requested files (report/writers.py: the JSON report beside the others in
    a second process when the run is large, ``started`` before the analysis if given),
    then say what was written; ``meanwhile`` (the summary) runs before this process
    writes anything."""
    from ._fork import run_tasks, worker_count
    from .report.writers import write_outputs

    run = getattr(analysis, "run", None)
    size = 0 if run is None else len(run.attempts)
    try:
        written = write_outputs(
            analysis,
            paths,
            run_tasks=run_tasks,
            workers=worker_count(2, size=size),
            started=started,
            meanwhile=meanwhile,
            **options,
        )
    except OSError as exc:
        if exc.filename is not None:
            raise fail("Unable to write the outputs", os_refusal(exc)) from None
        Console(stderr=True, highlight=False).print(
            Text("Unable to write the outputs: ", style="bold red")
            + Text(masked(exc.strerror or exc)),
            soft_wrap=True,
        )
        raise typer.Exit(code=EXIT_INVALID_INPUT) from None
    for writer, path in written:
        console.print(Text(f"Saved {writer.what} to {path}"))


def _output_options(command: str, after: str) -> Callable[[Callable[..., None]], Any]:
    """Give a command one option per writer of report/writers.py (after parameter
    ``after``); the command receives their paths as ``outputs: dict[str, Path | None]``."""
    from .report.writers import writers_for

    writers = writers_for(command)

    def decorate(function: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(function)
        params = [p for p in signature.parameters.values() if p.name != "outputs"]
        at = [p.name for p in params].index(after) + 1
        added = [
            inspect.Parameter(
                w.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=typer.Option(w.default(command), w.option, help=w.help_for(command)),
                annotation=Path if w.default(command) is not None else Path | None,
            )
            for w in writers
        ]

        @functools.wraps(function)
        def command_with_outputs(**kwargs: Any) -> None:
            outputs = {w.name: kwargs.pop(w.name) for w in writers}
            function(**kwargs, outputs=outputs)

        command_with_outputs.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*params[:at], *added, *params[at:]]
        )
        return command_with_outputs

    return decorate


#: ``experiment run --help``'s last lines: what a CI job branches on, where it looks.
RUN_EXIT_CODES = (
    "Exit status: 0 success · 1 invalid input or an output not written · 2 usage error · "
    "3 a variant completed no trial (or --max-unanswered exceeded) · 4 --fail-on-regression "
    "and a candidate regressed · 5 a non-inferiority gate failed · 6 --max-attempts left "
    "attempts · 7 the run's process ended and could not be resumed · 130 interrupted. "
    "Every gate asked for is decided; the first failure's status is returned."
)


@experiment_app.command("run", epilog=RUN_EXIT_CODES)
@_output_options("run", after="suite_file")
def experiment_run(
    manifest_file: Path = typer.Argument(
        ..., help="Experiment manifest (YAML, or JSON by extension)."
    ),
    suite_file: Path = typer.Argument(..., help="Evaluation suite (YAML, or JSON by extension)."),
    confidence_level: float = typer.Option(
        0.95,
        "--confidence-level",
        callback=fraction_between(0.5, 0.999, "a confidence level", 0.95),
        help="Level (0.5 to 0.999) of every interval (the paired ones too, unless the "
        "manifest's comparisons: names one) and of AgenticLens's significance flag "
        "(1 - level); the verdicts decide at --alpha and need a declared correction.",
    ),
    regression_threshold: float = typer.Option(
        0.05,
        "--regression-threshold",
        min=0.0,
        help="Relative degradation that counts as a regression in AgenticLens's comparisons "
        "(absolute for per-case rates): the gate's with --regression-rule compat; the default "
        "case rule does not use it.",
    ),
    evaluators: str | None = typer.Option(
        None,
        "--evaluators",
        help="module:attr naming an EvaluatorRegistry the suite may use: Python evaluators "
        "and LLM judges (a judge's samples, retries and version are set where it is "
        "registered; docs/judges.md).",
    ),
    lean: bool = typer.Option(
        False, "--lean", help="Leave per-case records out of trial reports (every statistic stays)."
    ),
    latency_missing: LatencyPolicy = typer.Option(
        LatencyPolicy.exclude,
        "--latency-missing",
        help="Unknown latencies (a missing sample, a failed call, a trace that recorded none "
        "or 0 ms): 'exclude' from latency means (fix B3) or count as 'zero' ms "
        "(AgenticLens 0.10's numbers).",
    ),
    fail_on_regression: bool = FailOnRegressionOpt,
    regression_rule: RegressionRule | None = RegressionRuleOpt,
    max_unanswered: float | None = MaxUnansweredOpt,
    correction: Correction | None = typer.Option(
        None,
        "--correction",
        help="Multiple-comparison correction of the paired comparisons (no default; or "
        "declare comparisons: {correction: ...} in the manifest).",
        case_sensitive=False,
    ),
    alpha: float | None = AlphaOpt,
    paired_method: PairedMethod | None = PairedMethodOpt,
    cluster: str | None = typer.Option(
        None, "--cluster", help="Case metadata field for cluster-robust intervals."
    ),
    noninferiority_margin: float | None = typer.Option(
        None,
        "--noninferiority-margin",
        min=0.0,
        help="Exit with status 5 unless every candidate is no worse than the baseline by "
        "more than this (quality, one-sided at --alpha; in a run --stop-when decided "
        "watched, a one-sided anytime-valid bound over the cases the rule used).",
    ),
    noninferiority: list[str] | None = typer.Option(
        None,
        "--noninferiority",
        metavar="DIMENSION=MARGIN",
        callback=_check_gates,
        help="A non-inferiority gate on any dimension, in its unit (quality=0.02 is 2 pp, "
        "latency=200 is 200 ms per attempt, cost=0.001 is 0.001 USD per attempt: latency and "
        "cost are compared as means per attempt, not per trial); repeat it for several, every "
        "one must pass or exit 5. With --noninferiority-margin, that is the quality gate.",
    ),
    allow_large: bool = typer.Option(
        False, "--allow-large", help="Lift the paired-comparison guard rails (8/8/20 000)."
    ),
    comparisons_lock: Path | None = typer.Option(
        None, "--comparisons-lock", help="Fix the comparison settings with the run in this file."
    ),
    run_dir: Path | None = typer.Option(
        None,
        "--run-dir",
        help="Journal every finished attempt here; run again with the same folder to resume "
        "(unavailable judge scores are then judged again, their targets not called; not "
        "with --stop-when).",
    ),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        min=1,
        help="Most live target calls in flight (per-variant limits: max_workers / "
        "concurrency); judge calls overlap on as many threads.",
    ),
    max_attempts: int | None = typer.Option(
        None,
        "--max-attempts",
        min=0,
        help="Start at most N live attempts, then stop and report how many remain.",
    ),
    rerun_failed: bool = typer.Option(
        False,
        "--rerun-failed",
        help="When resuming, call again the attempts that ended in an error or timeout.",
    ),
    invalid_payload: InvalidPayloadPolicy = typer.Option(
        InvalidPayloadPolicy.trial,
        "--invalid-payload",
        help="An invalid live payload fails its whole 'trial' (AgenticLens) or only its 'case'.",
    ),
    max_output_chars: int | None = typer.Option(
        None,
        "--max-output-chars",
        min=1,
        help="Longest output accepted from one live attempt (default 4 000 000 characters).",
    ),
    stop_when: StopWhen | None = typer.Option(
        None,
        "--stop-when",
        help="'decided': run cases one at a time (seeded order) and stop once every "
        "candidate's anytime-valid interval against the baseline excludes 0 (or lies "
        "within ±--stop-margin); at --alpha, split across the candidates (Bonferroni) "
        "unless the declared correction is none. With --cluster: clusters one at a time, "
        "one observation per completed cluster. Live variants only. The rule's statement "
        "then leads every report, whether it stopped the run or not, and the fixed-sample "
        "verdicts are descriptive.",
    ),
    stop_margin: float | None = typer.Option(
        None,
        "--stop-margin",
        callback=fraction_between(0.0, 1.0, "a margin of pass rate", 0.05),
        help="With --stop-when: a candidate whose interval lies within ±margin (a pass-rate "
        "fraction, 0 to 1) is decided too (no difference that large).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No console summary or progress."),
    summary: Path | None = SummaryOpt,
    *,
    outputs: dict[str, Path | None],
) -> None:
    """Run every (variant, trial) of an experiment, score it, and write the reports.

    Recorded targets are replayed; python and http targets are called concurrently.

    With --run-dir a live run is journaled and resumes where it stopped.
    """
    _refuse_option_conflicts(
        stop_when=stop_when,
        stop_margin=stop_margin,
        rerun_failed=rerun_failed,
        run_dir=run_dir,
        noninferiority_margin=noninferiority_margin,
        noninferiority=noninferiority,
        fail_on_regression=fail_on_regression,
        regression_rule=regression_rule,
    )
    rule = regression_rule or RegressionRule.case
    console = output_console(quiet)
    from .formats.suite import suite_memo

    # The suite is read for the comparisons' guard rails and again for the run: within
    # this block the second read returns the first (same bytes, same evaluators). A large
    # suite is read in a forked process while this one imports the modules below.
    with (
        _suite_ahead(suite_file, evaluators, None if run_dir else manifest_file) as read_ahead,
        suite_memo(),
        _OutputsAhead(outputs, lean=lean) as ahead,
    ):
        from ._fork import idle_work
        from .analysis import analyze, warm_imports
        from .evaluators import load_registry
        from .formats import load_manifest
        from .report.console import print_summary
        from .runner.live import run_experiment as run_live_experiment

        try:
            read_ahead()
            from .paired import check_saved_report, check_saved_settings, comparisons_from_cli

            _refuse_clobbering_run(
                manifest_file,
                suite_file,
                run_dir,
                {
                    **_by_option(outputs),
                    "--comparisons-lock": comparisons_lock,
                    "--summary": summary,
                },
            )
            registry = load_registry(evaluators, location="--evaluators") if evaluators else None
            comparisons = comparisons_from_cli(  # guard rails: refused before any scoring
                manifest_file,
                suite_file,
                correction=None if correction is None else str(correction.value),
                alpha=alpha,
                method=None if paired_method is None else str(paired_method.value),
                cluster=cluster,
                noninferiority_margin=noninferiority_margin,
                noninferiority=_gate_pairs(noninferiority),
                allow_large=allow_large,
                known_evaluators=tuple(registry or ()),
            )
            manifest = load_manifest(manifest_file)
            # A changed correction or margin is refused now, before any target is called;
            # the whole fingerprint (evaluator versions, candidates) after the run.
            check_saved_settings(outputs["save"], comparisons, (manifest.name, manifest.version))
            if fail_on_regression and rule == RegressionRule.case and comparisons is None:
                # Refused before any work: the verdict the gate follows needs a correction.
                raise InputError(
                    "the gate follows the case-level paired verdict, which needs a declared "
                    "multiple-comparison correction, and none is declared",
                    location="--fail-on-regression",
                    hint="declare comparisons: {correction: holm} in the manifest, pass "
                    "--correction holm, or pass --regression-rule compat for AgenticLens's rule",
                )
            _note_outside_targets(manifest_file)
            stop_options = _stop_options(
                stop_when, stop_margin, comparisons, alpha, manifest, suite_file
            )
            # scipy.special for the analysis, imported while the replay's workers finish.
            with idle_work(warm_imports):
                live = run_live_experiment(
                    manifest_file,
                    suite_file,
                    evaluators=registry,
                    run_dir=run_dir,
                    concurrency=concurrency,
                    max_attempts=max_attempts,
                    progress=not quiet,
                    rerun_failed=rerun_failed,
                    invalid_payload=invalid_payload.value,
                    **({} if max_output_chars is None else {"max_output_chars": max_output_chars}),
                    **stop_options,
                    comparisons=comparisons,
                )
            # Interrupted after the last attempt is done too (judging it, writing the tables):
            # the user asked to stop, and the resume writes the outputs without a call.
            if live.interrupted or not live.complete:
                how = f"resume with --run-dir {run_dir}" if run_dir else "use --run-dir to resume"
                state = (
                    f"{'Interrupted' if live.interrupted else 'Stopped'}: "
                    f"{live.remaining_text}; {how}"
                )
                Console(stderr=True).print(Text(state, style="yellow"), soft_wrap=True)
                code = EXIT_INTERRUPTED if live.interrupted else EXIT_STOPPED
                if summary is not None:
                    # A CI job's summary page says why there is no verdict, not nothing.
                    _append_unfinished(live.run.manifest, summary, code, state)
                raise typer.Exit(code=code)
            run = live.run
            _say_resumed(live, run_dir)
            ahead.start(run)  # the JSON report's table work, beside the analysis
            from .report.provenance import DigestsAhead, provenance

            # The inputs' SHA-256 (53 MB at 5 000 cases) on a thread, beside the analysis.
            inputs = _provenance_inputs(manifest_file, suite_file, run.manifest)
            digests = DigestsAhead(inputs.values())
            analysis = analyze(
                run,
                confidence_level=confidence_level,
                regression_threshold=regression_threshold,
                latency_missing=latency_missing.value,  # type: ignore[arg-type]
                comparisons=comparisons,
                comparisons_lock=None if comparisons_lock is None else str(comparisons_lock),
            )
            # Tool, time and the inputs by name and SHA-256 (for the page's footer).
            analysis.info["generated"] = provenance(inputs, digests)
            # (A run with early stopping carries its stopping block, which analyze put in
            # extras["early_stopping"]: the report records when and why the run stopped,
            # and the console and the page lead with it, stopped early or watched to the end.)
            # The comparison settings are fixed with the report of this experiment version.
            check_saved_report(
                outputs["save"],
                None if analysis.paired is None else analysis.paired.fingerprint,
                (run.manifest.name, run.manifest.version),
            )
        except InputError as exc:
            problems = _with_suite_problems(exc, manifest_file, suite_file, evaluators)
            raise fail("Unable to run experiment", problems) from None
    gates = _gates(analysis, fail_on_regression, rule=rule.value, max_unanswered=max_unanswered)
    if gates:
        from .report.summary import gates_block

        # Decided before the report is written, so that it records them: a CI step reading
        # the JSON learns why the job ended as it did without parsing stderr.
        analysis.extras["gates"] = gates_block(gates)
    # The summary is printed while the JSON report's worker, given the analysis, writes.
    _write_outputs(
        console,
        analysis,
        outputs,
        ahead.started,
        meanwhile=lambda: print_summary(analysis, console),
        lean=lean,
    )
    code = _say_gates(gates)
    # Written whatever the gate said: a failed gate is when CI needs the summary most.
    if summary is not None and not _append_summary(console, analysis, summary, gates):
        code = code or EXIT_INVALID_INPUT  # a gate's status says more than the summary's
    _outputs_done()
    raise typer.Exit(code=code)


def _append_summary(console: Console, analysis: Any, path: Path, gates: list[GateOutcome]) -> bool:
    """Append the ``--summary`` block to ``path``; False (said on stderr, naming the path)
    when it cannot be written. The other outputs are written by then and stay."""
    from .report.summary import append_summary

    try:
        append_summary(analysis, path, gates)
    except OSError as exc:
        if exc.filename is None:  # a full disk fails the write, which names no file
            exc.filename = str(path)
        fail("Unable to write the summary", os_refusal(exc))
        return False
    console.print(Text(f"Appended the Markdown summary to {path}"))
    return True


def _append_unfinished(manifest: Any, path: Path, code: int, state: str) -> None:
    """Append the ``--summary`` block of a run that ended unfinished; a failure to write
    it is said on stderr (the run's own exit status stands)."""
    from .report.summary import append_text, unfinished_markdown

    try:
        append_text(path, unfinished_markdown(manifest.name, manifest.version, code, state))
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        Console(stderr=True).print(
            Text(f"Unable to write the summary: {os_refusal(exc)}", style="yellow"),
            soft_wrap=True,
        )


def _refuse_clobbering_run(
    manifest_file: Path, suite_file: Path, run_dir: Path | None, outputs: dict[str, Path | None]
) -> None:
    """Before any work: no output may name an input, the run folder or another output."""
    from ._files import check_outputs
    from .formats import load_manifest
    from .report.json_report import created_at

    created_at()  # a SOURCE_DATE_EPOCH no report can use is refused now, not after the run

    inputs: list[Path] = [manifest_file, suite_file]
    try:
        manifest = load_manifest(manifest_file)
    except InputError:
        manifest = None  # reported, with its place, by the run itself
    for variant in manifest.variants if manifest is not None else ():
        if variant.target_kind == "recorded":
            inputs.append(Path(variant.resolved_target))
        elif variant.target_kind == "python" and ".py:" in variant.resolved_target:
            inputs.append(Path(variant.resolved_target.rpartition(":")[0]))
    folders: dict[Path, str] = {}
    if run_dir is not None:
        if run_dir.exists() and not run_dir.is_dir():
            raise InputError(
                "--run-dir names an existing file, not a folder",
                file=run_dir,
                hint="give a folder (it is created if missing)",
            )
        inputs += [run_dir / "run.json", run_dir / "lock"]
        folders.update(dict.fromkeys([run_dir / "journal", run_dir / "tables"], "the run folder"))
    check_outputs(outputs, inputs, folders=("--parquet",), input_folders=folders)


def _provenance_inputs(
    manifest_file: Path, suite_file: Path, manifest: object
) -> dict[str, str | Path]:
    """The command's input files by name, as the report's provenance records them."""
    inputs: dict[str, str | Path] = {"manifest": manifest_file, "suite": suite_file}
    for variant in manifest.variants:  # type: ignore[attr-defined]
        if variant.target_kind == "recorded":
            inputs[f"recorded trials of {variant.id}"] = variant.resolved_target
    return inputs


def _with_suite_problems(
    error: InputError, manifest_file: Path, suite_file: Path, evaluators: str | None
) -> InputError:
    """``error`` with the suite's problems (:func:`~agenticlens_frames.formats.suite.
    with_suite_problems`) when it is the manifest's: the command line reads the manifest
    first. Not with ``--evaluators`` (the suite's check needs the registry, not loaded yet).
    """
    if evaluators or error.file is None or not _same_file(error.file, manifest_file):
        return error
    from .formats.suite import with_suite_problems

    return with_suite_problems(error, suite_file)


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _say_resumed(live: Any, run_dir: Path | None) -> None:
    """Say on stderr (``--quiet`` too) how many live attempts came from the run folder's
    journal: a run folder kept between CI jobs answers a changed agent with the old
    agent's replies (the targets' code is not hashed), and the log showed nothing of it.
    Not for the supervisor's private folder (no --run-dir given): its restarts are said
    as they happen."""
    from ._supervise import PRIVATE_RUN_DIR_ENV

    if run_dir is None or live.from_journal <= 0:
        return
    if os.environ.get(PRIVATE_RUN_DIR_ENV) == str(run_dir):
        return
    from .report.console import single_line

    done = live.from_journal + live.attempted
    Console(stderr=True, highlight=False).print(
        Text(
            single_line(
                f"Resumed from --run-dir {run_dir}: {live.from_journal} of "
                f"{count_noun(done, 'live attempt')} from its journal, {live.attempted} called "
                "now (the targets' code "
                "is not checked: a changed agent needs a new --run-dir)"
            ),
            style="yellow",
        ),
        soft_wrap=True,
    )


def _stop_options(
    stop_when: StopWhen | None,
    margin: float | None,
    comparisons: object,
    alpha: float | None,
    manifest: Any,
    suite_file: Path,
) -> dict[str, object]:
    """run_experiment's early-stopping keywords from the command line."""
    if stop_when is None:  # (a --stop-margin without it: _refuse_option_conflicts)
        return {}
    from .formats import load_suite
    from .runner.stopping import StopRule, check_stop_request

    declared = getattr(comparisons, "correction", None)
    level = getattr(comparisons, "alpha", None) or alpha or 0.05
    rule = StopRule(alpha=level, correction=declared, margin=margin)
    # Refused before any call (and before the run's note on how the rule behaves).
    cluster = getattr(comparisons, "cluster", None)
    check_stop_request(
        manifest,
        stop_when.value,
        rule,
        # The suite only to check its clusters (a case without one).
        suite=load_suite(suite_file) if cluster is not None else None,
        cluster=cluster,
    )
    # The note on a rule without a margin is the run's, said once its run folder is known
    # to resume (a note about a run that is then refused was noise before its refusal).
    return {"stop_when": stop_when.value, "stop_rule": rule}


def _note_outside_targets(manifest_file: Path) -> None:
    # Allowed (AgenticLens reads them too) but said: a shared manifest must not read files
    # elsewhere on this machine without the user seeing which.
    from .formats import load_manifest
    from .formats.manifest import targets_outside_folder
    from .report.console import strip_control

    for variant_id, path in targets_outside_folder(load_manifest(manifest_file)):
        Console(stderr=True).print(
            Text(
                f"Note: variant {strip_control(variant_id)!r} reads {strip_control(path)}, "
                f"outside the manifest's folder",
                style="yellow",
            ),
            soft_wrap=True,
        )


def _early_stop(analysis: object) -> Any:
    """The early-stopping block of a run the rule watched (stopped early or to the end of
    its plan: its statement is the inferential one, docs/statistics.md §13), else None."""
    from .early_stopping import early_stopping

    return early_stopping(analysis)  # type: ignore[arg-type]


def _exit_code(
    analysis: object, fail_on_regression: bool, console: Console, *, rule: str = "case"
) -> int:
    """Say on stderr how each gate ended (:func:`_gates`); the first failed gate's status,
    else 0."""
    return _say_gates(_gates(analysis, fail_on_regression, rule=rule))


def _say_gates(gates: list[GateOutcome]) -> int:
    """Print each gate's outcome on stderr (:func:`_gate_failed` for a failure) and return
    the first failed gate's status, else 0."""
    for gate in gates:
        if gate.code:
            _gate_failed(gate.headline, gate.details)
        else:
            _gate_passed(gate)
    from .report.summary import gates_exit_status

    return gates_exit_status(gates)


def _gates(
    analysis: Any,
    fail_on_regression: bool,
    *,
    rule: str = "case",
    max_unanswered: float | None = None,
) -> list[GateOutcome]:
    """How the command's gates ended, in the order they are checked: a
    :class:`~agenticlens_frames.report.summary.GateOutcome` each (code 0: passed), the
    words both stderr and the ``--summary`` block give. Every gate asked for is decided and
    said (a failed regression gate hid the non-inferiority gate's bounds); the exit status
    is the first failure's. A variant with no completed trial, or (``max_unanswered``) one
    whose target left more than that share of its attempts unanswered, ends the list: no
    comparison of it means anything. Both are said when both hold (an incomplete candidate
    must not hide that the baseline's endpoint was down). Empty when no gate was asked for
    and the run is complete."""
    from .report.summary import GateOutcome

    gates: list[GateOutcome] = []
    variants = analysis.variants
    empty = variants.loc[variants["completed_trials"] == 0, "variant_id"].astype(str).tolist()
    if empty:
        gates.append(
            GateOutcome(
                EXIT_INCOMPLETE,
                f"Incomplete: {count_noun(len(empty), 'variant')} with no completed trial: "
                f"{', '.join(empty)}",
                tuple(_failure_reasons(analysis, empty)),
            )
        )
    if max_unanswered is not None:
        from .analysis import unanswered_counts

        counts = unanswered_counts(analysis)
        over = [v for v, (k, n) in counts.items() if n and k / n > max_unanswered]
        if over:
            gates.append(
                GateOutcome(
                    EXIT_INCOMPLETE,
                    f"Unanswered: more than {100 * max_unanswered:g}% of the attempts got no "
                    "answer from the target (--max-unanswered): "
                    + ", ".join(f"{v} ({counts[v][0]} of {counts[v][1]})" for v in over),
                )
            )
        elif not empty:
            # Said as every gate asked for is: a job given only --max-unanswered logged
            # nothing on a pass, so the log could not show the gate had run.
            most = max(
                counts.items(), key=lambda item: item[1][0] / max(item[1][1], 1), default=None
            )
            gates.append(
                GateOutcome(
                    EXIT_OK,
                    f"Unanswered-attempts gate passed: no variant's target left more than "
                    f"{100 * max_unanswered:g}% of its attempts unanswered (--max-unanswered)"
                    + (f"; the most: {most[0]} ({most[1][0]} of {most[1][1]})." if most else "."),
                )
            )
    if any(gate.code for gate in gates):
        return _noting_unanswered(analysis, gates)
    stopping = _early_stop(analysis)
    if fail_on_regression and rule == "case" and stopping is not None:
        # In a watched run (stopped or not) the fixed-sample verdicts are descriptive: the
        # gate follows the stopping decision, the inferential statement (§13).
        from .early_stopping import stop_regressions

        decided_worse = stop_regressions(stopping)
        if decided_worse:
            gates.append(
                GateOutcome(
                    EXIT_REGRESSION,
                    "Regression against the baseline (early-stopping decision): "
                    + ", ".join(str(r["candidate"]) for r in decided_worse),
                    tuple(
                        f"{r['candidate']}: decided worse, anytime-valid interval "
                        f"{r['interval']} in pass rate"
                        for r in decided_worse
                    ),
                )
            )
        else:
            gates.append(
                GateOutcome(
                    EXIT_OK,
                    "Regression gate passed: no candidate was decided worse by the "
                    "early-stopping rule (anytime-valid interval in pass rate).",
                )
            )
    elif fail_on_regression and rule == "case":
        from .paired.verdicts import regressions

        worse = regressions(analysis.verdicts)
        if len(worse):
            gates.append(
                GateOutcome(
                    EXIT_REGRESSION,
                    "Regression against the baseline (case-level paired verdict): "
                    f"{', '.join(dict.fromkeys(map(str, worse['candidate_variant_id'])))}",
                    tuple(map(str, worse["statement"])),
                )
            )
        else:
            gates.extend(_gate_passed_outcome(analysis.verdicts))
    elif fail_on_regression:
        comps = analysis.comparisons
        hit = comps[
            comps["pass_rate_regressed"].fillna(False)
            | comps["average_score_regressed"].fillna(False)
        ]
        if len(hit):
            gates.append(
                GateOutcome(
                    EXIT_REGRESSION,
                    "Regression against the baseline (AgenticLens rule, uncertainty ignored): "
                    f"{', '.join(map(str, hit['candidate_variant_id']))}",
                    tuple(
                        _compat_drop(row, analysis.regression_threshold)
                        for _, row in hit.iterrows()
                    ),
                )
            )
        else:
            gates.append(
                GateOutcome(
                    EXIT_OK,
                    "Regression gate passed (AgenticLens rule, uncertainty ignored): no "
                    "candidate's case pass rate or mean score fell by more than "
                    f"{analysis.regression_threshold:.0%} of the baseline's.",
                )
            )
    from .paired import gate_statement

    gate = analysis.paired_frames.get("noninferiority")
    if gate is None:
        return _noting_unanswered(analysis, [_with_margin_hint(g) for g in gates])
    # Each (candidate, dimension) with its bound beside the margin, in the dimension's unit
    # (pp; ms and USD per attempt), not the names alone: the failed ones, or every one on a pass.
    passed, headline, details = gate_statement(
        gate, analysis.paired_frames.get("paired_comparisons")
    )
    last = GateOutcome(EXIT_OK if passed else EXIT_NONINFERIORITY, headline, tuple(details))
    return _noting_unanswered(analysis, [*gates, last])


def _compat_drop(row: Any, threshold: float) -> str:
    """One line of a failed ``--regression-rule compat`` gate: by how much the candidate of
    comparison ``row`` fell, in what the rule measures. The names alone sent the job's
    author to the report to learn whether a drop was 6 % or 60 %.

    Examples
    --------
    >>> import pandas as pd
    >>> row = pd.Series({"candidate_variant_id": "b", "pass_rate_delta": -0.129,
    ...     "pass_rate_delta_relative": -0.148, "pass_rate_regressed": True,
    ...     "average_score_delta": -0.01, "average_score_delta_relative": -0.011,
    ...     "average_score_regressed": False})
    >>> _compat_drop(row, 0.05)
    "b: case pass rate -12.9 pp (-14.8% relative); the threshold: -5% of the baseline's"
    """
    drops = []
    if bool(row["pass_rate_regressed"]):
        drops.append(
            f"case pass rate {100 * row['pass_rate_delta']:+.1f} pp "
            f"({row['pass_rate_delta_relative']:+.1%} relative)"
        )
    if bool(row["average_score_regressed"]):
        drops.append(
            f"mean score {row['average_score_delta']:+.3f} "
            f"({row['average_score_delta_relative']:+.1%} relative)"
        )
    return (
        f"{row['candidate_variant_id']}: {', '.join(drops)}; "
        f"the threshold: -{threshold:.0%} of the baseline's"
    )


def _noting_unanswered(analysis: Any, gates: list[GateOutcome]) -> list[GateOutcome]:
    """``gates`` with :func:`_unanswered`'s notes under the last one.

    A gate that passes can rest on attempts no target answered as much as one that fails:
    a baseline whose endpoint was down fails every case, so every candidate looks better
    and the regression gate passed with nothing on stderr about the outage.
    """
    notes = _unanswered(analysis)
    if not gates or not notes:
        return gates
    return [*gates[:-1], dataclasses.replace(gates[-1], details=(*gates[-1].details, *notes))]


#: After a passed regression gate whose comparisons could have missed a change, and no
#: non-inferiority gate: the option that asks for evidence instead of its absence.
MARGIN_HINT = (
    "to fail unless each candidate is shown no worse than the baseline by more than a "
    "margin, add --noninferiority-margin (exit 5)"
)


def _with_margin_hint(gate: GateOutcome) -> GateOutcome:
    """``gate`` with :data:`MARGIN_HINT` as its last detail when it passed but listed
    changes it could not have detected (a pass there is absence of evidence)."""
    if gate.code or not gate.details or not gate.headline.startswith("Regression gate passed"):
        return gate
    return dataclasses.replace(gate, details=(*gate.details, MARGIN_HINT))


def _failure_reasons(analysis: object, variants: list[str], most: int = 3) -> list[str]:
    """Why each of ``variants`` failed its trials: one line per distinct message.

    A CI log that ends with exit 3 must say what broke (a target returning the wrong
    type, a recorded trial missing) without opening the report. At most ``most`` messages a variant.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> _failure_reasons(analyze(run, frontier_n_resamples=0), ["retrieval-dense"])
    ['retrieval-dense: 1 trial failed: recorded target has 4 trial(s); trial 5 is missing']
    """
    from .analysis import failed_trials

    failed = failed_trials(analysis)  # type: ignore[arg-type]
    lines = []
    for variant in variants:
        messages = failed.loc[failed["variant_id"] == variant, "error_message"].fillna("no message")
        counts = messages.value_counts(sort=False)
        for message, count in list(counts.items())[:most]:
            lines.append(f"{variant}: {count_noun(count, 'trial')} failed: {message}")
        if len(counts) > most:
            others = count_noun(len(counts) - most, "other message")
            lines.append(f"{variant}: {others} in the report")
    return lines


def _unanswered(analysis: Any) -> list[str]:
    """Beside a failed gate: attempts the target never answered (an outage reads as a
    regression of the agent; the gate counts them as failed cases)."""
    from .analysis import target_failure_warnings

    return [f"note: {w}" for w in target_failure_warnings(analysis)]


def _gate_passed(gate: GateOutcome) -> None:
    """Say on stderr that a gate passed, and what it could not have caught."""
    Console(stderr=True, highlight=False).print(
        Text(_gate_lines(gate.headline, gate.details)), soft_wrap=True
    )


def _gate_lines(headline: str, details: Iterable[str]) -> str:
    """A gate's headline and its details indented beneath, one log line each: a line
    break in a variant id or a target's error would start a line that text controls."""
    from .report.console import single_line

    return "\n".join([single_line(headline), *(f"  {single_line(line)}" for line in details)])


def _gate_passed_outcome(verdicts: Any) -> list[GateOutcome]:
    """The regression gate's pass, in words, with what it could not have caught (none
    when no gated dimension was compared).

    A pass is not evidence of no regression: a CI log that shows only exit 0 (``--quiet``)
    hid that a 20-point drop would have passed too. Each candidate's gated dimensions that
    are not significantly better get their smallest detectable change.

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"candidate_variant_id": ["b"], "dimension": ["quality"],
    ...                   "verdict": ["no detectable difference"], "correction": ["holm"],
    ...                   "family_size": [3], "alpha": [0.05],
    ...                   "detectable": ["this run could not detect changes smaller than 9 pp"]})
    >>> [passed] = _gate_passed_outcome(v)
    >>> print(passed.headline)  # doctest: +NORMALIZE_WHITESPACE
    Regression gate passed: no candidate is significantly worse on quality, safety or
    reliability (case-level paired verdicts, Holm correction over the family of 3
    comparisons, α = 0.05). Not evidence of no change:
    >>> passed.details
    ('b quality: this run could not detect changes smaller than 9 pp',)
    """
    from .paired.verdicts import REGRESSION_DIMENSIONS, family_phrase
    from .report.summary import GateOutcome

    gated = verdicts[verdicts["dimension"].astype(str).isin(REGRESSION_DIMENSIONS)]
    if gated.empty:
        return []
    first = gated.iloc[0]
    how = family_phrase(str(first["correction"]), int(first["family_size"]), first["alpha"])
    unsure = gated[gated["verdict"].astype(str) != "better"]
    lines = tuple(
        f"{r['candidate_variant_id']} {r['dimension']}: {r['detectable']}"
        for r in unsure.to_dict("records")
        if r["detectable"]
    )
    head = (
        "Regression gate passed: no candidate is significantly worse on quality, safety or "
        f"reliability (case-level paired verdicts, {how})."
    )
    return [GateOutcome(EXIT_OK, head + (" Not evidence of no change:" if lines else ""), lines)]


def _gate_failed(headline: str, details: Iterable[str] = ()) -> None:
    """Say on stderr why the command exits with a gate's status (3, 4 or 5).

    Parameters
    ----------
    headline
        What failed, naming the variants.
    details
        One indented line each (a verdict's statement, a gate's reason).

    Every line is printed whole, however narrow the stream (soft wrap: a CI log or grep
    sees all of it, where rich cut it at 80 columns in a pipe), and without terminal
    control characters or line breaks (variant ids are the manifest's text, errors the
    target's).
    """
    Console(stderr=True, highlight=False).print(
        Text(_gate_lines(headline, details), style="red"), soft_wrap=True
    )


@experiment_app.command(
    "report",
    epilog="Exit status: 0 success · 1 invalid input or an output not written · 2 usage "
    "error; with --fail-on-regression or --max-unanswered, as experiment run's gates: 3 a "
    "variant completed no trial (or --max-unanswered exceeded) · 4 --fail-on-regression "
    "and a candidate regressed · 5 the report's non-inferiority gate failed.",
)
@_output_options("report", after="report_file")
def experiment_report(
    report_file: Path = typer.Argument(..., help="A saved experiment report (JSON)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No console summary."),
    correction: Correction | None = typer.Option(
        None,
        "--correction",
        help="For a report without verdicts of its own (AgenticLens's): the "
        "multiple-comparison correction of the case-level verdicts computed from its "
        "per-case records. Refused for a report that has verdicts.",
        case_sensitive=False,
    ),
    alpha: float | None = AlphaOpt,
    paired_method: PairedMethod | None = PairedMethodOpt,
    fail_on_regression: bool = typer.Option(
        False,
        "--fail-on-regression",
        help="Gate on the saved report as experiment run did: exit 3 if a variant completed "
        "no trial, 4 if a candidate regressed (see --regression-rule), 5 if the report's "
        "non-inferiority gate failed.",
    ),
    regression_rule: RegressionRule | None = SavedRegressionRuleOpt,
    max_unanswered: float | None = MaxUnansweredOpt,
    summary: Path | None = SummaryOpt,
    *,
    outputs: dict[str, Path | None],
) -> None:
    """Re-render a saved report (ours, or AgenticLens 0.10's with verdicts from its records)."""
    _refuse_option_conflicts(fail_on_regression=fail_on_regression, regression_rule=regression_rule)
    rule = regression_rule or RegressionRule.case
    console = output_console(quiet)
    from ._files import check_outputs
    from .report.console import print_summary
    from .report.saved import load_report

    try:
        check_outputs({**_by_option(outputs), "--summary": summary}, [report_file])
    except InputError as exc:
        # Said as an output's problem: "Unable to read experiment report" sent the reader
        # to a report file that was fine.
        raise fail("Unable to write the outputs", exc) from None
    try:
        from .report.json_report import created_at

        created_at()  # a SOURCE_DATE_EPOCH no report can use
        declared = None
        if correction is not None or alpha is not None or paired_method is not None:
            from .paired.settings import parse_comparisons

            if correction is None:
                # The hint covers both kinds of report: for one with verdicts of its own,
                # adding --correction (the only fix it gave) is refused in turn.
                raise InputError(
                    "--alpha and --paired-method need a declared correction",
                    hint="for a report AgenticLens wrote, add --correction holm (or none, "
                    "bonferroni, benjamini_hochberg); a report with verdicts of its own keeps "
                    "the settings it was run with: leave out --alpha and --paired-method",
                )
            settings: dict[str, Any] = {"correction": str(correction.value)}
            if alpha is not None:
                settings["alpha"] = alpha
            if paired_method is not None:
                settings["method"] = str(paired_method.value)
            declared = parse_comparisons(settings, file="command line")
        analysis = load_report(report_file, comparisons=declared)
        if (
            fail_on_regression
            and rule == RegressionRule.case
            and not analysis.verdicts.attrs.get("declared", False)
        ):
            raise InputError(
                "the gate follows the case-level paired verdict, and this report has none "
                "(no multiple-comparison correction was declared for it)",
                file=report_file,
                location="--fail-on-regression",
                hint="for a report AgenticLens wrote, add --correction holm; or pass "
                "--regression-rule compat for AgenticLens's rule",
            )
    except InputError as exc:
        raise fail("Unable to read experiment report", exc) from None
    print_summary(analysis, console)
    _write_outputs(console, analysis, outputs)
    # Gated only when asked: re-rendering an old report to read it must not fail a job.
    # Asked, the gates are the run's with the same options (its non-inferiority gate too).
    gated = fail_on_regression or max_unanswered is not None
    gates = (
        _gates(
            analysis,
            fail_on_regression,
            rule=rule.value,
            max_unanswered=max_unanswered,
        )
        if gated
        else []
    )
    code = _say_gates(gates)
    if summary is not None and not _append_summary(console, analysis, summary, gates):
        code = code or EXIT_INVALID_INPUT  # a gate's status says more than the summary's
    _outputs_done()
    raise typer.Exit(code=code)


_finished = False


def _outputs_done() -> None:
    """Every file is written and closed: the process may end without tearing down."""
    global _finished
    _finished = True


def _supervised() -> None:
    """``experiment run`` runs in a watched child process (see ``_supervise.py``): a target
    or evaluator that ends the process cannot end the run silently. The child is forked
    from here and runs :func:`_command`."""
    from . import _supervise

    if _supervise.wanted(sys.argv[1:]):
        code = _supervise.supervise(sys.argv[1:], command=_command)
        # The child did the work and the supervisor has cleaned up after it: freeing this
        # process's modules one by one at exit would only add 20-40 ms after the run.
        _supervise.exit_now(code)
    elif os.environ.get(_supervise.DONE_ENV):
        # The supervisor's child, a new interpreter (a forked one is set up in
        # _supervise._become_child): its parent passes every stop signal on as SIGINT.
        _supervise.listen()


def _mark_done(code: object) -> None:
    from ._supervise import mark_done

    mark_done(code if isinstance(code, int) else (0 if code is None else EXIT_INVALID_INPUT))


def _ignore_zero_columns() -> None:
    """Forget ``COLUMNS=0``: rich takes it as a width of 0 and prints nothing, stdout and
    stderr alike, so a job failing a gate (exit 4) or given a wrong path (exit 1) logged no
    word of why. Some CI shells export it from a terminal of no size; unset, the width is
    the terminal's or, in a log, :data:`~._cli_errors.PIPE_WIDTH`."""
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.strip().lstrip("0") == "":
        del os.environ["COLUMNS"]


def main() -> None:
    """Console-script entry point."""
    _ignore_zero_columns()  # first: the supervisor and its child print too
    _supervised()
    _command()


def _command() -> None:
    """Run the command line of ``sys.argv``, in this process."""
    from ._pipes import quiet_when_reader_leaves

    quiet_when_reader_leaves()  # `| head` must not cost the run its files
    try:
        app()
    except KeyboardInterrupt:
        _say_interrupted()
        _mark_done(EXIT_INTERRUPTED)
        sys.exit(130)
    except OSError as exc:
        if not is_refusal_by_the_system(exc):
            _report_bug()
        # A refusal the command did not foresee (a name too long, a folder it may not
        # enter, a full disk): the user's to fix, said in one line.
        fail("agenticlens-frames", os_refusal(exc))
        _mark_done(EXIT_INVALID_INPUT)
        sys.exit(EXIT_INVALID_INPUT)
    except Exception:
        _report_bug()
    except SystemExit as done:
        if _from_ctrl_c(done):
            # typer ends a Ctrl-C that reaches it (the second, pressed while a run honours
            # the first, judging its last replies) in a silent exit 130.
            _say_interrupted()
        _mark_done(done.code)
        if _finished and (done.code is None or isinstance(done.code, int)):
            # Freeing a large run's objects one by one at interpreter exit takes a
            # quarter of a second and serves nothing once every file is closed.
            from ._supervise import exit_now

            exit_now(done.code or 0)
        raise


def _from_ctrl_c(done: SystemExit) -> bool:
    """Whether ``done`` is typer's exit for a ``KeyboardInterrupt`` (its cause or context)."""
    seen: BaseException | None = done
    for _ in range(4):  # SystemExit <- typer.Exit <- KeyboardInterrupt
        if seen is None:
            return False
        seen = seen.__cause__ or seen.__context__
        if isinstance(seen, KeyboardInterrupt):
            return True
    return False


def _say_interrupted() -> None:
    """Say that the command was interrupted and, for a journaled run, how to resume it."""
    from ._supervise import _option

    run_dir = _option(sys.argv[1:], "--run-dir")
    where = f": what finished is kept; resume with --run-dir {run_dir}" if run_dir else ""
    Console(stderr=True).print(Text(f"Interrupted{where}.", style="yellow"), soft_wrap=True)


def _report_bug() -> NoReturn:
    """An exception nothing expected: the traceback (it is a bug), a line saying so, and
    exit status 1 — said by the process itself, so that a supervised run's watcher does
    not take it for a target that ended the process (``_supervise.py``)."""
    import traceback

    # Masked as every message is: an exception's text may hold a secret the run knows.
    print(masked(traceback.format_exc()), end="", file=sys.stderr)
    Console(stderr=True, highlight=False).print(
        Text(
            "agenticlens-frames failed unexpectedly: this is a bug; please report it with "
            "the traceback above and the command line.",
            style="bold red",
        ),
        soft_wrap=True,
    )
    _mark_done(EXIT_INVALID_INPUT)
    sys.exit(EXIT_INVALID_INPUT)


if __name__ == "__main__":
    main()
