"""How both command lines (``experiment`` and ``archive``) report bad input: one paragraph
on stderr (a line per problem for a file with several), exit status 1, never a traceback;
and the console they print their tables on."""

from __future__ import annotations

import os

import typer
from rich.console import Console
from rich.text import Text

__all__ = ["EXIT_INVALID_INPUT", "PIPE_WIDTH", "fail", "masked", "output_console"]

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
