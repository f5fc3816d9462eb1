"""How both command lines (``experiment`` and ``archive``) show their options in ``--help``.

typer 0.29 writes a value type after every option, flags included: ``--quiet -q <bool>``
reads as if the flag took a value (``-q true``), and ``--help <bool>`` is on every page.
A flag takes no value, so its type column stays empty, whichever typer is installed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from typer.core import TyperGroup

__all__ = ["FlagsWithoutTypes", "hide_flag_types"]


def hide_flag_types(params: Iterable[Any]) -> None:
    """Give every flag among ``params`` an empty metavar (its ``--help`` type column).

    Only the help text changes: parsing never reads a flag's metavar, and an option that
    takes a value keeps its type (``--alpha <float>``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> quiet = SimpleNamespace(is_flag=True, metavar=None)
    >>> alpha = SimpleNamespace(is_flag=False, metavar=None)
    >>> hide_flag_types([quiet, alpha])
    >>> quiet.metavar, alpha.metavar
    ('', None)
    """
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class FlagsWithoutTypes(TyperGroup):
    """A command group whose ``--help`` pages, and its commands', show no type for flags.

    Its own options (``--version``, ``--install-completion``, ``--help``) and those of
    every command it hands out, the help option included (made on first use), pass
    through :func:`hide_flag_types`. Nested groups made with this class do the same.

    Examples
    --------
    >>> import typer
    >>> from typer.testing import CliRunner
    >>> app = typer.Typer(cls=FlagsWithoutTypes)
    >>> @app.command()
    ... def go(quiet: bool = typer.Option(False, "--quiet")) -> None:
    ...     '''Go.'''
    >>> @app.command()
    ... def stop() -> None:
    ...     '''Stop.'''
    >>> "<bool>" in CliRunner().invoke(app, ["go", "--help"]).output
    False
    """

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        hide_flag_types(params)
        return params

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not isinstance(command, FlagsWithoutTypes):
            # A command's context inherits the group's help option names, so its help
            # option made here is the one its own --help uses (made once, then cached).
            hide_flag_types([*command.params, command.get_help_option(ctx)])
        return command
