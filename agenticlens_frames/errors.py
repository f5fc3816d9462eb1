"""Errors that reach users.

Every problem with user input is raised as :class:`InputError`, which names the file, the
place inside it and how to fix it. The CLI prints ``str(error)`` and exits with status 1; it
never shows a traceback for these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["InputError", "describe_error", "format_location"]


def describe_error(error: BaseException) -> str:
    """``Type: message``, the form AgenticLens records for a failed call (a live target's
    or a judge's); just the type when the message is empty.

    Examples
    --------
    >>> describe_error(ValueError("boom"))
    'ValueError: boom'
    >>> describe_error(TimeoutError())
    'TimeoutError'
    """
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def format_location(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """Render a path inside a document the way users write it.

    Examples
    --------
    >>> format_location(("variants", 2, "factors", "prompt"))
    'variants[2].factors.prompt'
    >>> format_location(())
    ''
    """
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


class InputError(ValueError):
    """A user-supplied file (or value) is invalid.

    Parameters
    ----------
    message
        What is wrong, e.g. ``"expected a string, got 2"``.
    file
        The file the problem is in, if any.
    location
        Where inside the file: a tuple of keys and list indices, a dotted string, or a
        ``"line N"`` string for syntax errors.
    hint
        How to fix it, e.g. ``"quote the value: version: \\"2026.10\\""``.

    Examples
    --------
    >>> str(InputError("expected a string, got 2", file="manifest.yaml",
    ...                location=("variants", 2, "factors", "prompt")))
    'manifest.yaml: variants[2].factors.prompt: expected a string, got 2'
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        location: tuple[str | int, ...] | list[str | int] | str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        if isinstance(location, (tuple, list)):
            location = format_location(location)
        self.location = location or None
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.location) if p]
        text = ": ".join([*parts, self.message])
        if self.hint:
            text += f" ({self.hint})"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep file, place and hint across pickling (errors from worker processes).
        return (_rebuild, (self.message, self.file, self.location, self.hint))

    def with_file(self, file: str | Path) -> InputError:
        """Return a copy that names ``file`` if this error does not name one yet."""
        if self.file is not None:
            return self
        return InputError(self.message, file=file, location=self.location, hint=self.hint)


def _rebuild(message: str, file: str | None, location: str | None, hint: str | None) -> InputError:
    return InputError(message, file=file, location=location, hint=hint)
