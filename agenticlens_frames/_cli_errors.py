"""How both command lines (``experiment`` and ``archive``) report bad input: one paragraph
on stderr (a line per problem for a file with several), exit status 1, never a traceback;
the usage errors (exit 2) of a fraction given out of its range and of an option given where
it has no effect; and the console they print their tables on."""

from __future__ import annotations

import os
from collections.abc import Callable

import typer
from rich.console import Console
from rich.text import Text

__all__ = [
    "EXIT_INVALID_INPUT",
    "PIPE_WIDTH",
    "fail",
    "fraction_between",
    "masked",
    "output_console",
    "refuse_unused",
]

EXIT_INVALID_INPUT = 1

#: Console width when stdout is not a terminal (CI logs, pipes) and COLUMNS is unset:
#: rich would assume 80 columns and cut table cells; a log has no right edge.
PIPE_WIDTH = 1000


def output_console(quiet: bool = False, **options: object) -> Console:
    """The console a command prints its tables on (stdout): on a terminal its width, in a
    pipe or CI log :data:`PIPE_WIDTH` unless ``COLUMNS`` says otherwise."""
    from ._progress import wants_log_lines

    console = Console(quiet=quiet, highlight=False, **options)  # type: ignore[arg-type]
    # Whether the file is a terminal, not rich's is_terminal: FORCE_COLOR (set by many CI
    # jobs for coloured logs) makes that true in a log, whose tables were then cut at 80.
    if wants_log_lines(console.file) and not os.environ.get("COLUMNS"):
        console.width = PIPE_WIDTH
    return console


def fail(prefix: str, error: Exception) -> typer.Exit:
    """Print ``prefix: error`` to stderr and return the Exit to raise (status 1).

    Plain text, not rich markup (messages hold user text with brackets); control
    characters and known secrets removed (a hostile file name must not drive the
    terminal); unbroken lines (soft_wrap) so logs and grep see each whole, one per problem
    when the error lists several (``InputError.problems``).
    """
    Console(stderr=True, highlight=False).print(
        Text(f"{prefix}: ", style="bold red") + Text(masked(error)), soft_wrap=True
    )
    return typer.Exit(code=EXIT_INVALID_INPUT)


def masked(error: object) -> str:
    """An error message as printed: no terminal control, no secret the run knows of, no
    lone surrogate (which a terminal or log cannot encode)."""
    from ._secrets import mask
    from .formats._io import scrub_surrogates
    from .report.console import strip_control

    return scrub_surrogates(mask(strip_control(error)))  # type: ignore[no-any-return]


def fraction_between(
    low: float, high: float, what: str, example: float
) -> Callable[[float | None], float | None]:
    """The callback of an option that takes a fraction in ``[low, high]``: a value outside
    is a usage error (exit 2) that gives the value, the range and, for a percentage
    (``--confidence-level 95``), the fraction meant.

    typer's own range check (``min=``/``max=``) said only "Input should be less than or
    equal to 0.999", which does not tell a user who typed 95 that 0.95 was wanted.

    Parameters
    ----------
    low, high
        The range, both ends allowed.
    what
        What the number is, in words, for the message ("a confidence level").
    example
        A value in the range, for the message.

    Returns
    -------
    Callable
        The option's ``callback``: returns the value (``None`` when the option is unset).

    Examples
    --------
    >>> level = fraction_between(0.5, 0.999, "a confidence level", 0.95)
    >>> level(0.9)
    0.9
    >>> try:
    ...     level(95)
    ... except typer.BadParameter as refused:
    ...     print(refused)
    95 is not between 0.5 and 0.999: give a confidence level as a fraction, 0.95 for 95 %.
    >>> try:
    ...     fraction_between(0.0, 1.0, "a share of the attempts", 0.2)(-0.2)
    ... except typer.BadParameter as refused:
    ...     print(refused)
    -0.2 is not between 0 and 1: give a share of the attempts as a fraction, such as 0.2.
    """

    def check(value: float | None) -> float | None:
        if value is None or low <= value <= high:  # NaN fails both comparisons
            return value
        meant = value / 100  # 95 for 0.95: the likeliest slip, said as such
        hint = f"{meant:g} for {value:g} %" if low <= meant <= high else f"such as {example:g}"
        raise typer.BadParameter(
            f"{value:g} is not between {low:g} and {high:g}: give {what} as a fraction, {hint}."
        )

    return check


def refuse_unused(option: str, *, given: bool, used: bool, does: str, fix: str) -> None:
    """Refuse ``option``, ``given`` where it has no effect (not ``used``: the option it
    serves is missing, or another makes it moot), as the usage error (exit 2) it is.

    Each command calls this before it reads any file, so the refusal comes first. An
    option ignored without a word let a user believe it had acted (``--regression-rule
    compat`` with no gate to apply it to): the one place every such refusal is worded,
    naming the option, what it does, the option or change that would give it an effect,
    and the other way out, leaving it out.

    Parameters
    ----------
    option
        The option refused, as typed (``--correction``).
    given
        Whether the user gave it (an option whose default is ``None`` or ``False`` when not
        given, so that the documented default is not taken for a choice).
    used
        Whether the command would use it, given the other options.
    does
        What it does, as the predicate of "it ..." ("applies to the verdicts").
    fix
        The change that gives it an effect ("add --verdicts").

    Examples
    --------
    >>> refuse_unused("--correction", given=True, used=True, does="applies to the verdicts",
    ...               fix="add --verdicts")
    >>> try:
    ...     refuse_unused("--correction", given=True, used=False,
    ...                   does="applies to the verdicts", fix="add --verdicts")
    ... except typer.BadParameter as refused:
    ...     print(refused.format_message())
    Invalid value for '--correction': it applies to the verdicts (add --verdicts, or leave \
--correction out)
    """
    if given and not used:
        raise typer.BadParameter(
            f"it {does} ({fix}, or leave {option} out)", param_hint=f"'{option}'"
        )
