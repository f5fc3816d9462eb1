"""The output files a command line can write: one entry each, read by the CLI and the docs.

Each :class:`OutputWriter` names its command-line option, what it writes and the function
that writes it (imported on use). ``agenticlens-frames experiment run`` and ``experiment
report`` take their output options from :data:`WRITERS` (``commands``), :func:`write_outputs`
dispatches on it, and the outputs table of README.md is :func:`writers_table`
(checked by the tests). Adding an output is one entry here and its function.

``--summary`` is not one of them: it appends to a file other steps share (a CI job's step
summary) rather than replacing it, and only after the command's gates are decided, so
``cli.py`` writes it itself (:func:`~agenticlens_frames.report.summary.append_summary`).
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from .._docs import markdown_table

__all__ = [
    "WRITERS",
    "OutputWriter",
    "StartedOutputs",
    "start_outputs",
    "write_outputs",
    "writers_for",
    "writers_table",
]


@dataclass(frozen=True)
class OutputWriter:
    """One output file (or folder) of the command line."""

    #: The keyword the CLI command receives the path as (``save``, ``html``, …).
    name: str
    #: The command-line option.
    option: str
    #: What it is, for "Saved <what> to <path>" and the docs.
    what: str
    #: ``"module:function"`` relative to this package, called as ``function(analysis, path,
    #: **options)``; imported on first use.
    target: str
    #: The commands offering it.
    commands: tuple[str, ...] = ("run", "report")
    #: Default path per command (None: not written unless asked).
    defaults: tuple[tuple[str, str], ...] = ()
    #: Help text on ``experiment run``; ``experiment report`` says "Write" for "Also write".
    help: str = ""
    #: Keyword options of the command passed on to the writer (e.g. ``lean``).
    options: tuple[str, ...] = ()
    #: Written in a process of its own when the run is large (it takes as long as the rest).
    own_process: bool = False
    #: Written first, in this process, before any fork: quick, it would gain less from a
    #: second process than the fork costs in memory (pages both processes hold and one
    #: writes to are copied: at 20 000 cases the CSVs beside the JSON report cost 250 MiB).
    before_fork: bool = False
    #: Written to a temporary file beside the target and renamed into place with the other
    #: staged outputs once every output succeeded (a folder output is written in place).
    staged: bool = True
    #: ``"module:function"`` called as ``function(run, **options)`` before the analysis
    #: exists (see :func:`start_outputs`), doing what the output needs of the tables
    #: alone; it returns the function to write with, ``write(analysis, path)``.
    prepare: str | None = None

    def default(self, command: str) -> Path | None:
        value = dict(self.defaults).get(command)
        return None if value is None else Path(value)

    def help_for(self, command: str) -> str:
        return self.help if command == "run" else self.help.replace("Also write", "Write", 1)

    def write(self, analysis: Any, path: Path, **options: Any) -> Any:
        writer = _function(self.target)
        return writer(analysis, path, **{k: options[k] for k in self.options if k in options})

    def prepared(self, run: Any, **options: Any) -> Callable[[Any, Path], Any]:
        """The writer of this output for an analysis of ``run``, its table work done now
        (:attr:`prepare`)."""
        if self.prepare is None:
            raise ValueError(f"{self.option} has nothing to prepare")
        prepare = _function(self.prepare)
        return prepare(run, **{k: options[k] for k in self.options if k in options})


def _function(target: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` of this package names (imported now)."""
    module, function = target.split(":")
    return getattr(import_module(module, __package__), function)  # type: ignore[no-any-return]


WRITERS: tuple[OutputWriter, ...] = (
    OutputWriter(
        "save",
        "--save",
        "experiment report",
        ".json_report:write_json_report",
        commands=("run",),
        defaults=(("run", "agenticlens-experiment.json"),),
        help="Where to write the JSON report.",
        options=("lean",),
        own_process=True,
        prepare=".json_report:prepare_json_report",
    ),
    OutputWriter(
        "html",
        "--html",
        "HTML experiment report",
        ".html:write_html_report",
        help="Also write the offline HTML report.",
    ),
    OutputWriter(
        "csv_path",
        "--csv",
        "variant summary CSV",
        ".csv_report:write_variants_csv",
        help="Also write the per-variant CSV.",
        before_fork=True,
    ),
    OutputWriter(
        "cases_csv",
        "--cases-csv",
        "per-case matrix CSV",
        ".csv_report:write_cases_csv",
        help="Also write the per-variant, per-case CSV.",
        before_fork=True,
    ),
    OutputWriter(
        "parquet",
        "--parquet",
        "tidy tables and result frames",
        ".tables:write_parquet_outputs",
        commands=("run",),
        help="Also write the tidy tables and result frames as parquet here.",
        staged=False,
    ),
)


def writers_for(command: str) -> tuple[OutputWriter, ...]:
    """The writers ``command`` (``"run"`` or ``"report"``) offers, in option order.

    Examples
    --------
    >>> [w.option for w in writers_for("report")]
    ['--html', '--csv', '--cases-csv']
    """
    return tuple(w for w in WRITERS if command in w.commands)


@dataclass(frozen=True)
class StartedOutputs:
    """Outputs a forked worker began before the analysis existed (:func:`start_outputs`)."""

    #: The writers' names (``save`` …), each marked ``own_process`` and with a ``prepare``.
    names: tuple[str, ...]
    #: The worker (:class:`agenticlens_frames._fork.Started`): it is sent the analysis and
    #: the paths to write, and returns None.
    worker: Any


def start_outputs(
    run: Any,
    paths: Mapping[str, Path | None],
    *,
    start_worker: Callable[..., Any],
    **options: Any,
) -> StartedOutputs | None:
    """Start, in a forked worker, the outputs that have their own process and a
    ``prepare`` step (the JSON report), before the analysis of ``run`` is computed.

    The worker does at once what those outputs need of the tables alone, while this
    process analyses; :func:`write_outputs` then sends it the analysis and it writes them,
    while this process writes the rest. The caller decides whether a worker is worth it
    (and safe); None when no such output is asked for.
    """
    writers = tuple(
        w
        for w in WRITERS
        if w.own_process and w.prepare and not w.before_fork and paths.get(w.name) is not None
    )
    if not writers:
        return None

    def prepare() -> Callable[[tuple[Any, dict[str, Path]]], None]:
        prepared = [(w.name, w.prepared(run, **options)) for w in writers]

        def finish(message: tuple[Any, dict[str, Path]]) -> None:
            analysis, targets = message
            for name, write in prepared:
                with _naming(paths[name]):
                    write(analysis, targets[name])

        return finish

    worker = start_worker(prepare, shared=(run,))
    return StartedOutputs(tuple(w.name for w in writers), worker)


def write_outputs(
    analysis: Any,
    paths: Mapping[str, Path | None],
    *,
    run_tasks: Callable[[list[Callable[[], None]], int], Any],
    workers: int,
    started: StartedOutputs | None = None,
    meanwhile: Callable[[], None] | None = None,
    **options: Any,
) -> list[tuple[OutputWriter, Path]]:
    """Write every output whose path is given; return (writer, path) in option order.

    ``meanwhile`` (the console summary) runs once before anything is written here: with
    ``started``, after its worker was given the analysis, so that the two overlap (and
    when writing fails before that, before the error is raised).

    The writers marked ``before_fork`` are written first, here; then those marked
    ``own_process`` form one task and the rest a second, so a large run's JSON report is
    written beside the rest (``run_tasks`` decides how; a single task runs here). With
    ``started`` (:func:`start_outputs`), its worker writes its outputs instead, beside
    everything else written here. Each staged output goes to a unique temporary file
    beside its target; all are renamed into place only when every output was written, so
    a failure leaves every earlier file as it was; when several fail, the error raised is
    that of the first in the order above.
    """
    from .._files import StagedOutputs

    chosen = [(w, Path(paths[w.name])) for w in WRITERS if paths.get(w.name) is not None]
    staged = StagedOutputs({w.name: path for w, path in chosen if w.staged})

    def target(writer: OutputWriter, path: Path) -> Path:
        return staged[writer.name] if writer.staged else path  # type: ignore[return-value]

    def task(group: list[tuple[OutputWriter, Path]]) -> Callable[[], None]:
        def write() -> None:
            for writer, path in group:
                with _naming(path):
                    writer.write(analysis, target(writer, path), **options)

        return write

    first = [(w, p) for w, p in chosen if w.before_fork]
    own = [(w, p) for w, p in chosen if w.own_process and not w.before_fork]
    rest = [(w, p) for w, p in chosen if not (w.own_process or w.before_fork)]
    if started is not None and {w.name for w, _ in own} != set(started.names):
        started.worker.cancel()  # not what was started: written as without it
        started = None
    pending = [meanwhile] if meanwhile is not None else []

    def run_meanwhile() -> None:
        while pending:
            pending.pop()()

    try:
        with staged:
            if started is not None and _handed_over(started, analysis, own, target):
                run_meanwhile()
                _beside(started.worker, task(first), task(rest))
            else:
                run_meanwhile()
                task(first)()
                run_tasks([task(group) for group in (own, rest) if group], workers)
    except Exception:
        run_meanwhile()  # (a staged file could not be made): said before the error
        raise
    finally:
        if started is not None:  # (a staged file could not be made: never sent)
            started.worker.cancel()
    return chosen


@contextlib.contextmanager
def _naming(path: Path | None) -> Any:
    """Give an OSError raised while writing an output the output's path when it has none
    (a full disk or a closed pipe fails a write, not an open, and names no file)."""
    try:
        yield
    except OSError as exc:
        # Only the system's own errors (with an errno): naming a file on a bare
        # OSError("message") would replace its message in str().
        if exc.errno is not None and exc.filename is None and path is not None:
            exc.filename = str(path)
        raise


def _handed_over(
    started: StartedOutputs,
    analysis: Any,
    own: list[tuple[OutputWriter, Path]],
    target: Callable[[OutputWriter, Path], Path],
) -> bool:
    """Send the worker the analysis and the paths to write; False (the worker stopped)
    when the analysis cannot be pickled, and this process writes those outputs itself."""
    try:
        started.worker.send((analysis, {w.name: target(w, p) for w, p in own}))
    except (pickle.PicklingError, TypeError, AttributeError):
        started.worker.cancel()
        return False
    return True


def _beside(worker: Any, first: Callable[[], None], rest: Callable[[], None]) -> None:
    """Write ``first`` then ``rest`` here while ``worker`` writes its outputs; raise the
    first error in the order first, worker, rest. The worker is waited for (or, when
    interrupted, stopped) before the staged files are renamed or removed."""
    try:
        try:
            first()
        except Exception:
            with contextlib.suppress(Exception):  # its files are discarded with the rest
                worker.result()
            raise
        try:
            rest()
        except Exception:
            worker.result()  # its error, if any, comes first
            raise
        worker.result()
    finally:
        worker.cancel()  # only still running when interrupted


def writers_table() -> str:
    """The command line's outputs as a Markdown table (README.md).

    Examples
    --------
    >>> writers_table().splitlines()[2]
    '| `--save` | experiment report | run |'
    """
    return markdown_table(
        ["option", "writes", "commands"],
        [[f"`{w.option}`", w.what, ", ".join(w.commands)] for w in WRITERS],
    )
