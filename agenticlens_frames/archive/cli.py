"""``agenticlens-frames archive add|rollups|ls|summarize|slice``: archives from the command line.

Mounted by the main CLI with ``app.add_typer(archive_app, name="archive")``. Exit codes
follow the main CLI: 0 success, 1 invalid input (including a slice that matches
nothing), 2 usage errors (typer's, and an option given where it has no effect, such as
``slice --confidence-level`` without ``--analysis`` or ``--verdicts``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._choices import Correction
from .._cli_errors import fail, fraction_between, output_console, refuse_unused
from .._cli_help import FlagsWithoutTypes
from .._values import format_in_unit, format_power, is_missing
from ..errors import InputError
from .engine_registry import ENGINES, check_engine_settings

if TYPE_CHECKING:  # pandas loads with the first command that needs it, not with --help
    import pandas as pd

__all__ = ["archive_app"]


archive_app = typer.Typer(
    cls=FlagsWithoutTypes,
    help="Keep experiment runs in a partitioned parquet archive; slice and summarise them.",
    no_args_is_help=True,
)


#: The --engine choices, from the one list of engines.
EngineChoice = StrEnum("EngineChoice", {name: name for name in ENGINES})  # type: ignore[misc]


class SliceFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"


def _safe(value: object) -> str:
    """Text from the archive as printed: no terminal control, bidi or zero-width characters
    (a run's names and values are data, and must not drive the terminal)."""
    from ..report.console import strip_control

    return strip_control(str(value))


def _row(*cells: object) -> list[str]:
    return [_safe(cell) for cell in cells]


def _to_csv(frame: pd.DataFrame, path: Path) -> None:
    """CSV with every text cell a spreadsheet would run as a formula guarded."""
    import pandas as pd

    from .._files import atomic_write
    from ..report.csv_report import guard_formula

    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            out[column] = out[column].map(
                lambda v: guard_formula(v) if isinstance(v, str) else v, na_action="ignore"
            )
    out.columns = [guard_formula(str(c)) for c in out.columns]
    with atomic_write(path, "w", encoding="utf-8", newline="") as handle:
        out.to_csv(handle, index=False)


# Shared filter options (typer has no option groups; the same names everywhere).
ExperimentOpt = typer.Option(
    None, "--experiment", "-e", help="Experiment id or name (shell patterns allowed); repeat."
)
RunOpt = typer.Option(None, "--run", help="Run id or unique prefix; repeat.")
VariantOpt = typer.Option(None, "--variant", help="Variant id; repeat.")
SinceOpt = typer.Option(None, "--since", help="Runs at or after this time (ISO 8601, UTC).")
UntilOpt = typer.Option(None, "--until", help="Runs before this time (ISO 8601, UTC).")
TagOpt = typer.Option(None, "--tag", "-t", help="Cases carrying this tag; repeat for any-of.")
FactorOpt = typer.Option(
    None,
    "--factor",
    "-f",
    # "repeat for AND" was true of different factors only: the same factor again adds
    # values (any-of), as a variant has one value of each factor.
    help="name=value (or name=v1,v2): keep variants with that factor value; repeat with "
    "other factors for AND (the same factor again adds values: any-of). A comma inside a "
    "value is written \\, (a backslash itself \\\\), an = inside a name \\=, and a "
    "leading or trailing space, which would be stripped, \\ (backslash space). name= "
    "(nothing after the =) is the empty value.",
)
BaselineOpt = typer.Option(
    False, "--include-baseline", help="Keep each run's baseline too (for comparisons)."
)
VerdictsOpt = typer.Option(
    False,
    "--verdicts",
    help="Also each run's case-level verdicts, as experiment run gives them (reads "
    "every matching run back whole).",
)
CorrectionOpt = typer.Option(
    None,
    "--correction",
    help="With --verdicts: the correction for runs whose manifest declares none "
    "(runs that declared one keep it).",
    case_sensitive=False,
)


#: What a backslash escapes in a ``--factor`` argument: a comma (inside a level), an
#: ``=`` (inside a name) and a backslash; a backslash before whitespace keeps that
#: character from being stripped (a level or name with leading or trailing spaces).
_ESCAPED = ",=\\"


def _unescape(text: str) -> list[tuple[str, bool]]:
    """The characters of ``text`` with whether each was escaped by a backslash.

    A backslash escapes the characters of :data:`_ESCAPED` and whitespace; before any
    other character it is kept as typed (``C:\\dir`` stays as it is), as is a trailing one.

    Examples
    --------
    >>> _unescape(r"a\\,\\ \\x")
    [('a', False), (',', True), (' ', True), ('\\\\', False), ('x', False)]
    """
    out: list[tuple[str, bool]] = []
    chars = iter(text)
    for char in chars:
        if char != "\\":
            out.append((char, False))
            continue
        following = next(chars, "")
        if following and (following in _ESCAPED or following.isspace()):
            out.append((following, True))
        else:
            out.append((char, False))
            if following:
                out.append((following, False))
    return out


def _text(chars: list[tuple[str, bool]]) -> str:
    """Unescaped characters joined, whitespace stripped from both ends unless escaped."""
    start, end = 0, len(chars)
    while start < end and not chars[start][1] and chars[start][0].isspace():
        start += 1
    while end > start and not chars[end - 1][1] and chars[end - 1][0].isspace():
        end -= 1
    return "".join(char for char, _ in chars[start:end])


def _split_at(chars: list[tuple[str, bool]], separator: str) -> list[list[tuple[str, bool]]]:
    """``chars`` split at each unescaped ``separator``."""
    parts: list[list[tuple[str, bool]]] = [[]]
    for char, escaped in chars:
        if char == separator and not escaped:
            parts.append([])
        else:
            parts[-1].append((char, escaped))
    return parts


def _split_levels(value: str) -> list[str]:
    """The levels of a ``--factor`` value: split on commas, but ``\\,`` is a comma inside a
    level and ``\\\\`` a backslash (any other backslash is kept as typed), so a level
    holding a comma ("lärge, big") can be selected. Levels are stripped of whitespace but
    for whitespace escaped with a backslash (``\\ big``); empty ones dropped.

    Examples
    --------
    >>> _split_levels(r"a, b\\, c ,d\\\\")
    ['a', 'b, c', 'd\\\\']
    >>> _split_levels(r"\\ padded\\ , x")
    [' padded ', 'x']
    """
    levels = [_text(part) for part in _split_at(_unescape(value), ",")]
    return [level for level in levels if level]


def _split_factor(item: str) -> tuple[str, list[str]]:
    """A ``--factor`` argument as its factor name and levels: the name ends at the first
    ``=`` not escaped (``\\=`` is an ``=`` inside the name), and is stripped like a level.
    Nothing after the ``=`` (spaces aside) is the empty level: it has no character to
    escape, and ``name=`` was refused, so it could not be selected at all.

    Examples
    --------
    >>> _split_factor(r"k\\=v=1, 2")
    ('k=v', ['1', '2'])
    >>> _split_factor("model="), _split_factor(r"model=\\ ")
    (('model', ['']), ('model', [' ']))
    """
    chars = _unescape(item)
    cut = next((i for i, (c, escaped) in enumerate(chars) if c == "=" and not escaped), None)
    if cut is None:
        raise InputError(
            f"--factor {item!r} is not name=value",
            hint="e.g. --factor retrieval=dense or --factor model=gpt-large,gpt-small "
            "(an = inside the name is written \\=)",
        )
    name = _text(chars[:cut])
    if not _text(chars[cut + 1 :]):
        levels = [""]
    else:
        # Empty parts ("a,,b", a trailing comma) are dropped, as they always were: only a
        # value with nothing in it names the empty level, so no typo selects it.
        levels = [_text(part) for part in _split_at(chars[cut + 1 :], ",")]
        levels = [level for level in levels if level]
    if not name or not levels:
        raise InputError(
            f"--factor {item!r} is not name=value",
            hint="e.g. --factor retrieval=dense or --factor model=gpt-large,gpt-small",
        )
    return name, levels


def _escape(text: str, special: str) -> str:
    """``text`` as :func:`_unescape` and :func:`_text` read it back: a backslash before
    each character of ``special`` and each backslash, and before leading and trailing
    whitespace (which would be stripped)."""
    inner = text.strip()
    lead = len(text) - len(text.lstrip())
    trail = len(text.rstrip()) if inner else len(text)
    return "".join(
        "\\" + char
        if char in special or char == "\\" or (char.isspace() and (i < lead or i >= trail))
        else char
        for i, char in enumerate(text)
    )


def _factor_argument(name: str, levels: Sequence[str]) -> str:
    """``--factor name=level,...`` as typed in a shell: the inverse of
    :func:`_split_factor`, quoted, so a suggestion can be pasted back.

    Examples
    --------
    >>> print(_factor_argument("model", ["lärge, big=1"]))
    --factor 'model=lärge\\, big=1'
    >>> print(_factor_argument("model", ["gpt-large"]))
    --factor model=gpt-large
    >>> print(_factor_argument("k=v", [" padded", "x "]))
    --factor 'k\\=v=\\ padded,x\\ '
    >>> print(_factor_argument("model", [""])); print(_factor_argument("model", ["", "a"]))
    --factor model=
    --factor model= --factor model=a
    """
    option = f"--factor {shlex.quote(_escape(name, '=') + '=')}"
    # The empty level is a value with nothing in it (an empty part among others is
    # dropped): it gets an option of its own, which adds its level to the others'.
    shown = [option] if "" in levels else []
    rest = [level for level in levels if level]
    if rest:
        value = ",".join(_escape(level, ",") for level in rest)
        shown.append(f"--factor {shlex.quote(_escape(name, '=') + '=' + value)}")
    return " ".join(shown)


def _parse_factors(items: list[str] | None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items or []:
        name, levels = _split_factor(item)
        out.setdefault(name, []).extend(levels)
    return out


def _slice(
    archive: Path,
    experiment: list[str] | None,
    run: list[str] | None,
    variant: list[str] | None,
    since: str | None,
    until: str | None,
    tag: list[str] | None,
    factor: list[str] | None,
    include_baseline: bool,
) -> Any:
    from .store import Archive

    store = Archive(archive)
    store.check()
    return store.slice(
        experiments=experiment or None,
        runs=run or None,
        variants=variant or None,
        since=since,
        until=until,
        tags=tag or None,
        factors=_parse_factors(factor),
        include_baseline=include_baseline,
    )


def _check_out(out: Path, archive: Path) -> None:
    """``--out``: a folder (created if missing), not an existing file, and outside the
    archive, whose files must stay as they were archived. Checked before any work."""
    from .._files import check_outputs, is_inside

    check_outputs({"--out": out}, [], folders=("--out",))
    if is_inside(out, archive):
        raise InputError(
            "--out is inside the archive",
            file=out,
            hint="write the results outside the archive folder",
        )


def _check_no_stale_outputs(out: Path, possible: set[str], written: set[str]) -> None:
    """Refuse an ``--out`` folder holding files an earlier write of this command made that
    this one would not replace (say ``verdicts.parquet`` of a slice with ``--verdicts``,
    under a slice without): read beside the new files, they would pass for this slice's.
    Only this command's own file names count; nothing in the folder is removed."""
    stale = sorted(name for name in possible - written if (out / name).exists())
    if stale:
        shown = ", ".join(stale[:5]) + (", …" if len(stale) > 5 else "")
        raise InputError(
            f"--out holds {shown} from an earlier write, which this one would not replace: "
            "they would be read as this slice's",
            file=out,
            hint="give a new or empty folder, or remove those files",
        )


def _output_names(stems: Iterable[str], fmt: str, folder: str = "") -> set[str]:
    """The files ``stems`` are written to, in format ``fmt`` (or every format if "*")."""
    formats = [f.value for f in SliceFormat] if fmt == "*" else [fmt]
    return {f"{folder}{stem}.{ext}" for stem in stems for ext in formats}


def _check_correction(verdicts: bool, correction: Correction | None) -> None:
    """``--correction`` without ``--verdicts``: a usage error (exit 2), as every option
    given without the one it serves (it was exit 1, the status of a bad archive)."""
    refuse_unused(
        "--correction",
        given=correction is not None,
        used=verdicts,
        does="applies to the verdicts",
        fix="add --verdicts",
    )


def _check_engine_options(engine: str, memory_limit: str | None) -> None:
    """The check ``sufficient_stats`` makes (:func:`check_engine_settings`: a
    ``--memory-limit`` that the chosen engine never reads), before any work, as the usage
    error (exit 2) two options that contradict each other are.

    Examples
    --------
    >>> _check_engine_options("duckdb", "2GB")
    >>> try:
    ...     _check_engine_options("numpy", "2GB")
    ... except typer.BadParameter as refused:
    ...     print(refused.format_message())
    Invalid value for '--memory-limit': it applies to the duckdb engine, not numpy (use \
engine duckdb, or auto, which picks it when the slice would not fit in memory; or leave it out)
    """
    try:
        check_engine_settings(engine, {"memory_limit": memory_limit})
    except InputError as refused:
        raise typer.BadParameter(
            f"it {refused.message} ({refused.hint})", param_hint="'--memory-limit'"
        ) from None


def _judge(
    sl: Any, correction: Correction | None, confidence_level: float, *, progress: bool
) -> pd.DataFrame:
    """Each matching run's verdicts (`ArchiveSlice.verdicts`), a given correction for runs
    whose manifest declares none."""
    return sl.verdicts(
        None if correction is None else {"correction": str(correction.value)},
        confidence_level=confidence_level,
        progress=progress and sl.n_runs > 1,
    )


def _matching_runs(sl: Any, *, required: bool) -> None:
    """Find the runs ``sl`` touches. A factor level no run has (a likely typo) beside one
    that exists is said on stderr in one line, not as a Python warning with its source
    line; a factor none of whose levels exists is refused, as the slice refuses it; with
    ``required``, no matching run is an error naming the levels that exist. A variant id
    no run has is refused by every command, named as ``--variant``."""
    import warnings

    from .query import UnknownLevelWarning, check_factor_filter, check_variant_filter

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            empty = sl.n_runs == 0
        except InputError:
            # A factor name no run has, or a factor none of whose given levels any run has
            # (the slice refuses both): said again with the closest as a --factor option to
            # paste (the slice suggests it as a Python string, 'k=v', which --factor would
            # cut at the "="). Any other error is raised as it was.
            check_factor_filter(
                sl.filter.factors,
                sl.archive.records(),
                levels="warn",
                location="--factor",
                suggest=_factor_argument,
            )
            # Or a variant id no run has (the slice refuses it as `variants`), which
            # `archive ls` does not show: said as the option that was given.
            check_variant_filter(sl.filter.variants, sl.archive.records(), location="--variant")
            raise
    if not (empty and required):
        lines = [str(w.message) for w in caught if not issubclass(w.category, UnknownLevelWarning)]
        if len(lines) < len(caught):
            # Said again with the closest level as a --factor option to paste: the slice's
            # warning suggests it as a Python string ('large, v2', which --factor splits).
            with warnings.catch_warnings(record=True) as ours:
                warnings.simplefilter("always", UnknownLevelWarning)
                check_factor_filter(
                    sl.filter.factors,
                    sl.archive.records(),
                    levels="warn",
                    location="--factor",
                    suggest=_factor_argument,
                )
            lines = [str(w.message) for w in ours] + lines
        for line in lines:
            Console(stderr=True, highlight=False).print(
                Text(_safe(f"warning: {line}"), style="yellow"), soft_wrap=True
            )
        return

    records = sl.archive.records()
    if not records:
        # "list what the archive holds with ls" listed nothing: say it is empty.
        raise InputError(
            f"{sl.archive.path}: the archive holds no run yet",
            hint=f"add one with `agenticlens-frames archive add {sl.archive.path} MANIFEST SUITE`",
        )
    # Nothing matched: a misspelt level is the likely cause; say which levels exist. (A
    # variant id no run has was refused above, by the slice.)
    check_factor_filter(sl.filter.factors, records, location="--factor", suggest=_factor_argument)
    raise InputError(
        f"no archived run matches ({sl.filter.describe() or 'no filters'})",
        hint="list what the archive holds with `agenticlens-frames archive ls`",
    )


# --------------------------------------------------------------------------- add


@archive_app.command("add")
def archive_add(
    archive: Path = typer.Argument(..., help="The archive folder (created if missing)."),
    sources: list[Path] = typer.Argument(
        ...,
        help="MANIFEST SUITE of an experiment with recorded targets, or a folder of tidy "
        "tables written by `experiment run --parquet` (its tables/ folder) or a run folder "
        "of `experiment run --run-dir` (its judge scores are added, not judged again).",
    ),
    run_at: str | None = typer.Option(
        None, "--run-at", help="When the run happened (ISO 8601; default: now)."
    ),
    evaluators: str | None = typer.Option(
        None, "--evaluators", help="module:attr naming an EvaluatorRegistry the suite may use."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Fail (exit 1) if the run is already archived."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Append one experiment run to the archive (atomic; re-adding the same run is a no-op).

    A re-add keeps the early-stopping block or judge spend that the archived copy lacked.
    """
    # A folder of tables or a run folder is added with the scores it holds: no evaluator
    # is called, so a registry given with one was ignored without a word.
    refuse_unused(
        "--evaluators",
        given=evaluators is not None,
        used=len(sources) != 1,
        does="names the evaluators of a MANIFEST SUITE add, and a folder is added with the "
        "scores it holds",
        fix="give MANIFEST SUITE",
    )
    from ..frames import read_parquet, tables_folder
    from .store import Archive

    try:
        if len(sources) == 1:
            folder = sources[0]
            if folder.is_file():
                raise InputError(
                    "expected MANIFEST SUITE or one tables folder, got one file",
                    file=folder,
                    hint="give the suite after the manifest, or the folder of tables "
                    "`experiment run --parquet` wrote",
                )
            add_suite = shlex.quote(str(archive))
            run = read_parquet(
                tables_folder(
                    folder,
                    other_way="add the experiment with `agenticlens-frames archive add "
                    f"{add_suite} MANIFEST SUITE`",
                )
            )
        elif len(sources) == 2:
            from ..evaluators import load_registry
            from ..loading import _Caller, _load

            registry = load_registry(evaluators, location="--evaluators") if evaluators else None
            # Judged here, at every add, with nowhere to keep the scores: the note (and the
            # hint refusing live variants) name this command and the run folder it can add
            # instead, not load_experiment's run_dir, which a shell user never sees.
            folder_add = f"add the run folder: `agenticlens-frames archive add {archive} DIR`"
            caller = _Caller(
                "archive add",
                "`agenticlens-frames archive add` of a manifest and suite",
                "at every add (an add whose judge scores differ archives another run)",
                folder_add,
                folder_add,
            )
            run = _load(
                sources[0],
                sources[1],
                evaluators=registry,
                progress=False,
                run_dir=None,
                invalid_payload="trial",
                caller=caller,
            )
        else:
            raise InputError(
                f"expected MANIFEST SUITE or one tables folder, got {len(sources)} paths"
            )
        result = Archive(archive).add(run, run_at=run_at, exist_ok=not strict)
    except InputError as exc:
        raise _fail("Unable to add run", exc) from None
    if not quiet:
        r = result.record
        verb = "Added" if result.added else "Already archived:"
        # A re-add that filled in what the archived copy lacked says so: not "nothing".
        named = {
            "stopping": "early-stopping block",
            "judge_spend_failed_trials": "failed trials' judge spend",
        }
        completed = (
            f"; kept its {' and '.join(named[k] for k in result.completed)}, which the "
            "archived copy lacked"
            if result.completed
            else ""
        )
        output_console(soft_wrap=True).print(
            Text(
                f"{verb} run {r.run_id} of {r.experiment_id} ({r.n_attempts} attempts, "
                f"run at {r.run_at:%Y-%m-%d %H:%M} UTC) in {archive}{completed}"
            )
        )


# --------------------------------------------------------------------------- rollups


@archive_app.command("rollups")
def archive_rollups(
    archive: Path = typer.Argument(..., help="The archive folder."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Write rollups for runs archived without them; runs that have them are left alone.

    A rollup holds a run's sufficient statistics: analyses read it, not its attempts.
    """
    from .store import Archive

    try:
        store = Archive(archive)
        records = store.records()
        done = store.add_rollups()
    except InputError as exc:
        raise _fail("Unable to write rollups", exc) from None
    if not quiet:
        output_console(soft_wrap=True).print(
            Text(
                f"Wrote rollups for {len(done)} of {len(records)} run(s) in {archive}"
                + "".join(f"\n  {r.run_id} {r.experiment_id}" for r in done)
            )
        )


# --------------------------------------------------------------------------- remove


@archive_app.command("remove")
def archive_remove(
    archive: Path = typer.Argument(..., help="The archive folder."),
    run_id: str = typer.Argument(..., help="The run's id, or a unique prefix (see `ls`)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Delete one archived run (atomic), even one whose record is damaged."""
    from .store import Archive

    try:
        record = Archive(archive).remove(run_id)
    except InputError as exc:
        raise _fail("Unable to remove the run", exc) from None
    if not quiet:
        what = (
            f"run {record.run_id} of {record.experiment_id}"
            if record is not None
            else f"run {run_id} (its record was unreadable)"
        )
        output_console(soft_wrap=True).print(Text(f"Removed {what} from {archive}"))


@archive_app.command("clean")
def archive_clean(
    archive: Path = typer.Argument(..., help="The archive folder."),
    older_than: float = typer.Option(
        3600.0,
        "--older-than",
        min=0.0,
        help="Remove staging folders unchanged for this many seconds (writers that are "
        "still adding a run use theirs: keep the default unless none runs).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Remove the staging folders of writers that stopped mid-add (killed, out of disk)."""
    from .store import Archive

    try:
        store = Archive(archive)
        store.check()  # refuses a folder that is not an archive, as every command does
        removed = store.clean_staging(older_than)
    except InputError as exc:
        raise _fail("Unable to clean the archive", exc) from None
    if not quiet:
        output_console(soft_wrap=True).print(
            Text(_safe(f"Removed {len(removed)} staging folder(s) from {archive}"))
        )


# --------------------------------------------------------------------------- ls


@archive_app.command("ls")
def archive_ls(
    archive: Path = typer.Argument(..., help="The archive folder."),
    experiment: list[str] | None = ExperimentOpt,
    run: list[str] | None = RunOpt,
    variant: list[str] | None = VariantOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    tag: list[str] | None = TagOpt,
    factor: list[str] | None = FactorOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the catalog as JSON lines."),
) -> None:
    """List the archived runs (optionally only those a filter touches)."""
    try:
        sl = _slice(archive, experiment, run, variant, since, until, tag, factor, False)
        _matching_runs(sl, required=False)  # none is an answer here: an empty list
        records = sl.records()
    except InputError as exc:
        raise _fail("Unable to list archive", exc) from None
    _note_stale_staging(sl.archive)
    console = output_console(soft_wrap=True)
    if as_json:
        for r in records:
            # The record exactly as _run.json holds it, checked against its digest (to_json
            # gave an older record a digest and a sha256 map its file never had), and the
            # one key added: where the run is.
            read = r.as_read if r.as_read is not None else r.to_json()
            data = {**read, "path": str(r.path)}
            console.print(Text(json.dumps(data, default=str)))
        return
    table = Table(title=_safe(f"{len(records)} run(s) in {archive}"), title_justify="left")
    for name in ("run", "experiment", "run at (UTC)", "variants", "cases", "attempts"):
        table.add_column(
            name, justify="right" if name in ("variants", "cases", "attempts") else "left"
        )
    table.add_column("factors")
    for r in records:
        table.add_row(
            *_row(
                r.run_id,
                r.experiment_id,
                f"{r.run_at:%Y-%m-%d %H:%M}",
                len(r.variants),
                r.counts["cases"],
                r.n_attempts,
                ", ".join(r.factor_names),
            )
        )
    console.print(table)


def _note_stale_staging(store: Any) -> None:
    """Say on stderr when writers that stopped (killed mid-add) left staging folders: no
    read ever shows them, so they would pile up on disk unseen."""
    stale = store.stale_staging()
    if stale:
        Console(stderr=True, highlight=False).print(
            Text(
                _safe(
                    f"note: {len(stale)} folder(s) under {stale[0].parent} were left "
                    "by writers that stopped more than an hour ago; once no writer runs, "
                    f"`agenticlens-frames archive clean {shlex.quote(str(store.path))}` "
                    "removes them"
                ),
                style="yellow",
            ),
            soft_wrap=True,
        )


# --------------------------------------------------------------------------- summarize


def _pass_k(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        ks = [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise InputError(f"--pass-k {text!r} is not a comma list of integers") from None
    if any(k < 1 for k in ks):
        raise InputError(f"--pass-k {text!r}: every k must be 1 or more (pass@k of k attempts)")
    return ks


#: The Python arguments the archive's errors name, as the options that set them here.
_OPTIONS = {
    "factors": "--factor",
    "runs": "--run",
    "since": "--since",
    "until": "--until",
    "run_at": "--run-at",
    "memory_limit": "--memory-limit",
    "confidence_level": "--confidence-level",
}


def _fail(prefix: str, error: Exception) -> typer.Exit:
    """:func:`fail`, with the place of an error in a Python argument named by its option."""
    return fail(prefix, _option_named(error))


def _option_named(error: Exception) -> Exception:
    """``error`` with its place named as the option that sets it (``--since``, not
    ``since:``). An error in a file (a run record's ``run_at``) keeps its place there.

    Examples
    --------
    >>> print(_option_named(InputError("cannot read 'x' as a date", location="since")))
    --since: cannot read 'x' as a date
    >>> print(_option_named(InputError("bad", file="_run.json", location="run_at")))
    _run.json: run_at: bad
    """
    if isinstance(error, InputError) and error.file is None and error.location in _OPTIONS:
        error.location = _OPTIONS[error.location]
    return error


#: A summary cell per kind of number (see :func:`format_in_unit`).
_CELL = {"%": "{v:.1%}", "ms": "{v:,.0f}", "$": "{v:.4f}", "": "{v:.3f}"}


def _fmt(value: Any, kind: str = "") -> str:
    return "–" if is_missing(value) else format_in_unit(value, kind, _CELL)


def _present(value: Any) -> bool:
    import pandas as pd

    return bool(pd.notna(value))


def _write_frames(frames: dict[str, pd.DataFrame], folder: Path, fmt: str) -> None:
    from ..report.tables import frame_for_parquet

    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in frames.items():
        clean = frame_for_parquet(frame)
        if fmt == "csv":
            _to_csv(clean, folder / f"{name}.csv")
        else:
            clean.to_parquet(folder / f"{name}.parquet", index=False)


#: Rows of each table ``summarize`` prints unless ``--limit`` says otherwise.
_SUMMARY_ROWS = 40


@archive_app.command("summarize")
def archive_summarize(
    archive: Path = typer.Argument(..., help="The archive folder."),
    experiment: list[str] | None = ExperimentOpt,
    run: list[str] | None = RunOpt,
    variant: list[str] | None = VariantOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    tag: list[str] | None = TagOpt,
    factor: list[str] | None = FactorOpt,
    include_baseline: bool = BaselineOpt,
    engine: EngineChoice = typer.Option(EngineChoice.auto, "--engine", help="Aggregation engine."),
    memory_limit: str | None = typer.Option(
        None, "--memory-limit", help="DuckDB memory limit, e.g. 2GB (it spills beyond)."
    ),
    pass_k: str | None = typer.Option(None, "--pass-k", help="k values, e.g. 1,5,10."),
    confidence_level: float = typer.Option(
        0.95,
        "--confidence-level",
        callback=fraction_between(0.5, 0.999, "a confidence level", 0.95),
        help="Level (0.5 to 0.999) of every interval printed and written (with --verdicts, "
        "also of the per-comparison intervals of runs whose manifest declares none).",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Write every result frame here (parquet, or CSV with --format csv)."
    ),
    # None when not given: a --format without --out wrote nothing, without a word.
    fmt: SliceFormat | None = typer.Option(
        None, "--format", help="For --out: parquet (default) or csv."
    ),
    # min=0: pandas reads head(-1) as "all but the last row", which was printed as if all.
    # None when not given: one with --quiet, which prints no table, is refused.
    limit: int | None = typer.Option(
        None, "--limit", min=0, help=f"Rows of each table to print (default {_SUMMARY_ROWS})."
    ),
    verdicts: bool = VerdictsOpt,
    correction: Correction | None = CorrectionOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No console tables."),
) -> None:
    """Variant summaries, paired comparisons and factor levels across the matching runs."""
    from .results import RESULT_FRAMES

    judged = None
    try:
        _check_engine_options(engine.value, memory_limit)
        _check_correction(verdicts, correction)
        refuse_unused(
            "--format",
            given=fmt is not None,
            used=out is not None,
            does="applies to the files --out writes",
            fix="add --out FOLDER",
        )
        refuse_unused(
            "--limit",
            given=limit is not None,
            used=not quiet,
            does="sets the rows of each printed table, and --quiet prints none",
            fix="drop --quiet",
        )
        fmt = fmt or SliceFormat.parquet
        limit = _SUMMARY_ROWS if limit is None else limit
        if out is not None:
            _check_out(out, archive)
            frames = [*RESULT_FRAMES, "runs", "verdicts"]
            kept = _output_names(frames if verdicts else frames[:-1], fmt.value)
            _check_no_stale_outputs(out, _output_names(frames, "*"), kept)
        sl = _slice(archive, experiment, run, variant, since, until, tag, factor, include_baseline)
        _matching_runs(sl, required=True)
        result = sl.analyze(
            engine.value,
            pass_k=_pass_k(pass_k),
            confidence_level=confidence_level,
            memory_limit=memory_limit,
        )
        if verdicts:
            judged = _judge(sl, correction, confidence_level, progress=not quiet)
    except (InputError, ImportError) as exc:
        raise _fail("Unable to summarize archive", exc) from None
    if out is not None:
        written = {**result.frames(), "runs": result.runs}
        if judged is not None:
            written["verdicts"] = judged
        _write_frames(written, out, fmt.value)
    if quiet:
        return
    console = output_console()
    vs = result.variant_summary
    shown = vs.head(limit)
    # The interval printed is the case-level one, computed for the printed rows only (the
    # model is fitted per variant); the pooled Wilson columns stay in the written frames.
    if out is not None:  # already built for the files, for every row
        intervals = result.case_level_intervals.head(limit).to_dict("records")
    else:
        from .results import case_level_intervals

        intervals = case_level_intervals(
            result.stats, shown, confidence_level=result.confidence_level
        ).to_dict("records")
    ks = list(result.pass_k)
    level = f"{100 * result.confidence_level:g}%"
    table = Table(
        title=_safe(
            f"{len(vs)} variant(s) in {sl.n_runs} run(s) — {sl.filter.describe() or 'all'}"
        ),
        title_justify="left",
        caption=(
            "* the run's baseline. "
            "pass rate: over the evaluated attempts (a failed trial's left out, as "
            f"experiment run leaves them out); {level} CI: beta-binomial with cases as the "
            "unit — attempts at one case are not independent (case_level_intervals holds "
            "these; the written variant_summary has AgenticLens's case pass rate, a failed "
            "trial's attempts counted as failures, and its interval pooling attempts; "
            "pass@k counts them as the package does)."
        ),
        caption_justify="left",
    )
    for name in ("experiment", "run", "variant", "factors", "pass rate", f"{level} CI"):
        table.add_column(name)
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
    for name in ("latency ms", "cost $", "trials ok"):
        table.add_column(name, justify="right")
    factors = [c for c in vs.columns if c.startswith("factor_")]
    # Records, not itertuples: factor columns named "factor_my-factor" or with spaces are
    # not identifiers, and itertuples would rename them.
    for data, interval in zip(shown.to_dict("records"), intervals, strict=True):
        levels = ", ".join(
            f"{c.removeprefix('factor_')}={data[c]}" for c in factors if _present(data[c])
        )
        table.add_row(
            *_row(
                str(data["experiment_id"]),
                str(data["run_id"])[:8],
                str(data["variant_id"]) + (" *" if data["is_baseline"] else ""),
                levels,
                _fmt(interval["pass_rate"], "%"),
                _fmt(interval["ci_low"], "%") + "–" + _fmt(interval["ci_high"], "%"),
                *(_fmt(data[f"pass_at_{k}"]) for k in ks),
                _fmt(data["average_latency_ms_mean"], "ms"),
                _fmt(data["total_cost_usd_mean"], "$"),
                f"{data['completed_trials']}/{data['attempted_trials']}",
            )
        )
    console.print(table)
    if len(vs) > limit:
        console.print(Text(f"… {len(vs) - limit} more (write them all with --out)"))
    _paired_table(console, result.paired_differences, limit, verdicts=verdicts)
    _note_unpaired(console, vs)
    for note in result.paired_differences.attrs.get("notes", []):
        console.print(Text(_safe(f"Note: {note}.")))
    if judged is not None:
        _verdicts_table(console, judged, limit)
    fl = result.factor_levels
    if len(fl):
        levels = Table(
            title="Factor levels (raw means over variants)",
            title_justify="left",
            caption=(
                "pass rate: mean of the variants' per-trial pass rates (confounded unless the "
                "design is factorial). Pooled: every attempt of the level's variants, with a "
                f"{level} Wilson interval that treats attempts as independent — too narrow, "
                "not a test."
            ),
            caption_justify="left",
        )
        for name in (
            "factor",
            "value",
            "variants",
            "runs",
            "pass rate",
            "pooled case pass rate (attempts as independent)",
        ):
            levels.add_column(name)
        for row in fl.itertuples(index=False):
            levels.add_row(
                *_row(
                    row.factor,
                    str(row.value),
                    str(row.n_variants),
                    str(row.n_runs),
                    _fmt(row.mean_pass_rate, "%"),
                    f"{_fmt(row.case_pass_rate, '%')} ({_fmt(row.case_pass_rate_ci_low, '%')}"
                    f"–{_fmt(row.case_pass_rate_ci_high, '%')})",
                )
            )
        console.print(levels)
        for note in fl.attrs.get("notes", []):
            console.print(Text(f"Note: {note}."))


def _note_unpaired(console: Console, summary: pd.DataFrame) -> None:
    """Say which candidates have no paired comparison because the slice left out their
    run's baseline (a factor or variant filter keeps only the matching variants): the
    comparison with cases as the unit is the number to read, and its table silently
    missing read as if there were nothing to compare."""
    baseline = summary["is_baseline"].to_numpy(bool)
    runs = summary["run_id"].astype(str)
    alone = ~baseline & ~runs.isin(set(runs[baseline])).to_numpy()
    if alone.any():
        console.print(
            Text(
                f"No paired comparison for {int(alone.sum())} candidate(s) in "
                f"{runs[alone].nunique()} run(s): the slice does not hold their run's "
                "baseline (add --include-baseline)."
            )
        )


def _paired_table(console: Console, paired: pd.DataFrame, limit: int, *, verdicts: bool) -> None:
    """Each candidate against its run's baseline, case by case: per comparison."""
    from ..paired.verdicts import (
        detectable_cell,
        detectable_note,
        format_change,
    )

    if not len(paired):
        return
    level = float(paired["confidence_level"].iloc[0])
    power = float(paired["mde_power"].iloc[0])
    alpha = float(paired["mde_alpha"].iloc[0])
    table = Table(
        title=f"Paired with each run's baseline: {level:.0%} per-comparison intervals "
        "(not verdicts)",
        title_justify="left",
        caption=(
            "Each candidate minus its run's baseline, case by case over the cases both have "
            "a value at (the pass rate over evaluated attempts: a failed trial's left out, "
            "as experiment run leaves them out): a case is one piece of evidence, however "
            "many trials it had. No correction: a slice of an archive is not a declared "
            "family, so nothing here is called better or worse"
            + (
                "; the verdicts are below."
                if verdicts
                else "; each run's verdicts under the correction its manifest declared: --verdicts."
            )
            + " Smallest detectable change (of the pass rate): the true difference a "
            f"comparison would have found with {format_power(power)} power at α = {alpha:g}; "
            "a smaller one could have gone unnoticed."
        ),
        caption_justify="left",
    )
    for name in ("experiment", "run", "candidate", "baseline", "cases"):
        table.add_column(name)
    for name in ("pass rate", "latency", "cost"):
        table.add_column(f"{name} [{level:.0%} CI]", justify="right", no_wrap=True)
    table.add_column("smallest detectable change")
    keys = ["run_id", "candidate_variant_id"]
    comparisons = paired.drop_duplicates(keys)
    by_key = {
        (str(r["run_id"]), str(r["candidate_variant_id"]), str(r["dimension"])): r
        for r in paired.to_dict("records")
    }

    def cell(r: dict[str, Any] | None) -> str:
        return "-" if r is None else format_change(r)

    for c in comparisons.head(limit).to_dict("records"):
        key = (str(c["run_id"]), str(c["candidate_variant_id"]))
        quality = by_key.get((*key, "quality"))
        detectable = "-"
        if quality is not None:
            note = detectable_note(float(quality["mde"]), "proportion", bool(quality["degenerate"]))
            detectable = detectable_cell("", float(quality["mde"]), "proportion", note) or "-"
        table.add_row(
            *_row(
                str(c["experiment_id"]),
                key[0][:8],
                key[1],
                str(c["baseline_variant_id"]),
                str((quality or c)["paired_cases"]),
                cell(quality),
                cell(by_key.get((*key, "latency"))),
                cell(by_key.get((*key, "cost"))),
                detectable,
            )
        )
    console.print(table)
    if len(comparisons) > limit:
        console.print(Text(f"… {len(comparisons) - limit} more (write them all with --out)"))


def _verdicts_table(console: Console, judged: pd.DataFrame, limit: int) -> None:
    """Each run's verdicts, as `experiment run` states them."""
    from ..paired.verdicts import (
        CORRECTION_NAMES,
        VERDICT_STYLES,
        detectable_cell,
        format_change,
        format_p,
    )

    table = Table(
        title="Verdicts of each run: case-level paired comparisons under the correction it "
        "declared, over its whole family",
        title_justify="left",
        caption="declared in: the run's manifest, its early-stopping rule, or --correction "
        "for a run that declared none; 'not judged': neither declared a correction "
        "(per-comparison interval); '(descriptive)': an early-stopping rule watched the run "
        "(the notes).",
        caption_justify="left",
    )
    for name in ("experiment", "run", "candidate", "dimension", "correction"):
        table.add_column(name)
    table.add_column("difference [CI, per comparison]", justify="right", no_wrap=True)
    table.add_column("adj. p", justify="right")
    table.add_column("verdict")
    table.add_column("smallest detectable change")
    for r in judged.head(limit).to_dict("records"):
        unit = str(r["unit"])
        declared = bool(r["declared"])
        verdict = str(r["verdict"])
        correction = str(r["correction"])
        table.add_row(
            *_row(
                str(r["experiment_id"]),
                str(r["run_id"])[:8],
                str(r["candidate_variant_id"]),
                str(r["dimension"]),
                f"{CORRECTION_NAMES.get(correction, correction)} ({r['declared_in']})"
                if declared
                else "none declared",
                format_change(r),
                format_p(r["adjusted_p_value"]) if declared else "-",
            ),
            Text(
                # A fixed-sample verdict of a run a rule watched (stopped or not):
                # descriptive, as the single-run surfaces title it
                # (early_stopping.descriptive_title).
                verdict + (" (descriptive)" if r.get("stopped_early") in (True, False) else ""),
                style=VERDICT_STYLES.get(verdict, ""),
            ),
            *_row(
                detectable_cell(verdict, float(r["mde"]), unit, str(r["detectable"] or "")) or "-"
            ),
        )
    console.print(table)
    if len(judged) > limit:
        console.print(Text(f"… {len(judged) - limit} more (write them all with --out)"))
    for note in judged.attrs.get("notes", []):
        console.print(Text(f"Note: {note}", style="dim"))


# --------------------------------------------------------------------------- slice


@archive_app.command("slice")
def archive_slice(
    archive: Path = typer.Argument(..., help="The archive folder."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write the slice into."),
    experiment: list[str] | None = ExperimentOpt,
    run: list[str] | None = RunOpt,
    variant: list[str] | None = VariantOpt,
    since: str | None = SinceOpt,
    until: str | None = UntilOpt,
    tag: list[str] | None = TagOpt,
    factor: list[str] | None = FactorOpt,
    include_baseline: bool = BaselineOpt,
    tables: str = typer.Option(
        "attempts", "--tables", help="Comma list of tables to write, or 'all'."
    ),
    fmt: SliceFormat = typer.Option(SliceFormat.parquet, "--format", help="File format."),
    analysis: bool = typer.Option(
        False, "--analysis", help="Also write the result frames under <out>/results."
    ),
    # No default here: one given without --analysis is refused, not ignored.
    engine: EngineChoice | None = typer.Option(
        None, "--engine", help="For --analysis: aggregation engine (default auto)."
    ),
    memory_limit: str | None = typer.Option(
        None,
        "--memory-limit",
        help="For --analysis: DuckDB memory limit, e.g. 2GB (it spills beyond).",
    ),
    # None when not given: one without --analysis or --verdicts, which have the only
    # intervals it sets, is refused, not ignored.
    confidence_level: float | None = typer.Option(
        None,
        "--confidence-level",
        callback=fraction_between(0.5, 0.999, "a confidence level", 0.95),
        help="Level (0.5 to 0.999) of the intervals of --analysis's frames and, with "
        "--verdicts, of the per-comparison intervals of runs whose manifest declares none "
        "(default 0.95).",
    ),
    verdicts: bool = VerdictsOpt,
    correction: Correction | None = CorrectionOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing on success."),
) -> None:
    """Write the matching rows (unified schema across runs) for other tools or CI."""
    from ..frames import SCHEMAS
    from .query import check_table
    from .results import RESULT_FRAMES

    try:
        names = (
            list(SCHEMAS)
            if tables.strip() == "all"
            else [t.strip() for t in tables.split(",") if t.strip()]
        )
        # Before any work: a misspelt name found after the first tables were written left
        # them behind, and an empty list wrote nothing and said "Wrote  from N run(s)".
        if not names:
            raise InputError(
                "--tables names no table", hint=f"name some of {', '.join(SCHEMAS)}, or all"
            )
        for name in names:
            check_table(name)
        _check_correction(verdicts, correction)
        for option, value in (("--engine", engine), ("--memory-limit", memory_limit)):
            refuse_unused(
                option,
                given=value is not None,
                used=analysis,
                does="applies to the analysis",
                fix="add --analysis",
            )
        refuse_unused(
            "--confidence-level",
            given=confidence_level is not None,
            used=analysis or verdicts,
            does="sets the level of the intervals of --analysis and --verdicts",
            fix="add --analysis or --verdicts",
        )
        level = 0.95 if confidence_level is None else confidence_level
        engine_name = (engine or EngineChoice.auto).value
        _check_engine_options(engine_name, memory_limit)
        _check_out(out, archive)
        results = [*RESULT_FRAMES, "runs"]
        _check_no_stale_outputs(
            out,
            _output_names([*SCHEMAS, "verdicts"], "*") | _output_names(results, "*", "results/"),
            _output_names([*names, *(["verdicts"] if verdicts else [])], fmt.value)
            | (_output_names(results, fmt.value, "results/") if analysis else set()),
        )
        sl = _slice(archive, experiment, run, variant, since, until, tag, factor, include_baseline)
        _matching_runs(sl, required=True)
        # The analysis first: a memory limit DuckDB cannot use, or runs out of, is refused
        # before any file is written.
        result = (
            sl.analyze(engine_name, confidence_level=level, memory_limit=memory_limit)
            if analysis
            else None
        )
        out.mkdir(parents=True, exist_ok=True)
        written: dict[str, int] = {}
        judged = None
        for name in names:
            table = sl.table(name)
            written[name] = table.num_rows
            if fmt == SliceFormat.csv:
                _to_csv(table.to_pandas(), out / f"{name}.csv")
            else:
                import pyarrow.parquet as pq

                pq.write_table(table, out / f"{name}.parquet", compression="zstd")
        if result is not None:
            _write_frames({**result.frames(), "runs": result.runs}, out / "results", fmt.value)
        if verdicts:
            # Beside the rows, not under results/: --verdicts does not need --analysis.
            judged = _judge(sl, correction, level, progress=not quiet)
            _write_frames({"verdicts": judged}, out, fmt.value)
    except (InputError, ImportError) as exc:
        raise _fail("Unable to slice archive", exc) from None
    if not quiet:
        counts = ", ".join(f"{n} {name}" for name, n in written.items())
        if judged is not None:
            counts += f", {len(judged)} verdicts"
        console = output_console()
        console.print(Text(_safe(f"Wrote {counts} from {sl.n_runs} run(s) to {out}")))
        for note in [] if judged is None else judged.attrs.get("notes", []):
            console.print(Text(_safe(f"Note: {note}"), style="dim"))
