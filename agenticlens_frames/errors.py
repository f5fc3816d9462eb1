"""Errors that reach users.

Every problem with user input is raised as :class:`InputError`, which names the file, the
place inside it and how to fix it; a manifest or suite with several problems raises one
that lists them all. The CLI prints ``str(error)`` and exits with status 1; it never shows a
traceback for these.
"""

from __future__ import annotations

import errno
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._values import clip

__all__ = [
    "InputError",
    "check_bool",
    "check_count",
    "check_list",
    "check_number",
    "check_pass_k",
    "check_path",
    "check_proportion",
    "describe_error",
    "format_location",
    "is_recursion",
    "is_refusal_by_the_system",
    "os_refusal",
]


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
    problems
        Every problem found, when a file had several (see :meth:`of_all`); ``message``,
        ``file``, ``location`` and ``hint`` are then the first one's.
    unlisted
        How many more problems were found than ``problems`` lists.

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
        problems: Sequence[InputError] = (),
        unlisted: int = 0,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        if isinstance(location, (tuple, list)):
            location = format_location(location)
        self.location = location or None
        self.hint = hint
        self.problems = tuple(problems)
        self.unlisted = unlisted
        super().__init__(str(self))

    @classmethod
    def of_all(cls, problems: Sequence[InputError], unlisted: int = 0) -> InputError:
        """One error for every problem of a file: the problem itself when there is one, else
        an error whose message lists each problem on its own line, worded as it would be
        alone, and says how many more there are beyond ``problems``.

        Its ``file``, ``location`` and ``hint`` are the first problem's: code that reads
        them sees what it saw when loading stopped at the first problem.

        Examples
        --------
        >>> typo = InputError("unknown key 'trials'", file="m.yaml",
        ...                   hint="did you mean 'trial_count'?")
        >>> kind = InputError("expected a string, got 2", file="m.yaml", location=("version",))
        >>> print(InputError.of_all([typo, kind], unlisted=3))
        m.yaml: 5 problems:
          m.yaml: unknown key 'trials' (did you mean 'trial_count'?)
          m.yaml: version: expected a string, got 2
          and 3 more, not listed (fix these and load the file again to see them)
        >>> InputError.of_all([kind]) is kind
        True
        """
        first = problems[0]
        if len(problems) == 1 and not unlisted:
            return first
        return cls(
            first.message,
            file=first.file,
            location=first.location,
            hint=first.hint,
            problems=problems,
            unlisted=unlisted,
        )

    def __str__(self) -> str:
        if self.problems:
            return self._listing()
        parts = [p for p in (self.file, self.location) if p]
        text = ": ".join([*parts, self.message])
        if self.hint:
            text += f" ({self.hint})"
        return text

    def _listing(self) -> str:
        total = len(self.problems) + self.unlisted
        lines = [": ".join([p for p in (self.file, f"{total} problems:") if p])]
        lines += [f"  {problem}" for problem in self.problems]
        if self.unlisted:
            lines.append(
                f"  and {self.unlisted} more, not listed (fix these and load the file again "
                "to see them)"
            )
        return "\n".join(lines)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep file, place, hint and problems across pickling (errors from worker processes).
        return (
            _rebuild,
            (self.message, self.file, self.location, self.hint, self.problems, self.unlisted),
        )

    def with_file(self, file: str | Path) -> InputError:
        """Return a copy that names ``file`` if this error does not name one yet (the
        error itself when it does).

        Examples
        --------
        >>> error = InputError("must be > 0", location="trials", hint="give 1 or more")
        >>> named = error.with_file("manifest.yaml")
        >>> str(named)
        'manifest.yaml: trials: must be > 0 (give 1 or more)'
        >>> named.with_file("other.yaml") is named
        True
        """
        if self.file is not None:
            return self
        return InputError(
            self.message,
            file=file,
            location=self.location,
            hint=self.hint,
            problems=[problem.with_file(file) for problem in self.problems],
            unlisted=self.unlisted,
        )


def _rebuild(
    message: str,
    file: str | None,
    location: str | None,
    hint: str | None,
    problems: tuple[InputError, ...] = (),
    unlisted: int = 0,
) -> InputError:
    return InputError(
        message, file=file, location=location, hint=hint, problems=problems, unlisted=unlisted
    )


_PERMISSIONS = "check the permissions of the file and of the folders above it"
_SPACE = "free some space, or write the outputs elsewhere"
#: How to fix what the operating system refused, by errno.
_OS_HINTS = {
    errno.ENAMETOOLONG: "use a shorter file or folder name (most file systems allow 255 "
    "bytes a name)",
    errno.ENOTDIR: "a folder on the path is a file: give another path",
    errno.EACCES: _PERMISSIONS,
    errno.EPERM: _PERMISSIONS,
    errno.EROFS: "write on a writable file system",
    errno.ENOSPC: _SPACE,
    errno.EDQUOT: _SPACE,
    errno.EMFILE: "allow more open files (ulimit -n) or lower --concurrency",
}


def is_refusal_by_the_system(error: OSError) -> bool:
    """Whether ``error`` is the operating system refusing something the user can fix (it
    names a file, or it is a full disk, a permission, a read-only file system …) rather
    than a failure inside this package.

    Examples
    --------
    >>> is_refusal_by_the_system(OSError(errno.ENOSPC, "No space left on device"))
    True
    >>> is_refusal_by_the_system(OSError(errno.EBADF, "Bad file descriptor"))
    False
    """
    return error.filename is not None or error.errno in _OS_HINTS


def os_refusal(error: OSError, message: str | None = None) -> InputError:
    """An OSError about a file as the error a user can act on: the file, what the system
    said (or ``message``) and how to fix it.

    Examples
    --------
    >>> str(os_refusal(OSError(errno.ENOTDIR, "Not a directory", "/tmp/f/x")))
    '/tmp/f/x: Not a directory (a folder on the path is a file: give another path)'
    """
    return InputError(
        message or str(error.strerror or error),
        file=None if error.filename is None else str(error.filename),
        hint=_OS_HINTS.get(error.errno or 0, "check the path"),
    )


def check_bool(value: Any, name: str, *, location: str | None = None) -> bool:
    """Return ``value`` if it is a bool (numpy's too), else raise :class:`InputError`: a
    flag given ``"yes"`` or ``"no"`` was read as true by its truthiness, whichever was meant.

    Examples
    --------
    >>> check_bool(True, "include_baseline")
    True
    >>> check_bool("no", "include_baseline", location="include_baseline")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: include_baseline: include_baseline must be True or \
False, got 'no'
    """
    # numpy's bool (a cell of a boolean column) without importing numpy here.
    numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    if not (isinstance(value, bool) or numpy_bool):
        raise InputError(f"{name} must be True or False, got {value!r}", location=location)
    return bool(value)


def check_number(value: Any, name: str, *, location: str | None = None) -> float:
    """Return ``value`` as a float if it is a real number (not a bool), else raise
    :class:`InputError` saying so — rather than a comparison failing inside with
    ``'<' not supported between 'str' and 'int'``.

    Examples
    --------
    >>> check_number(2, "half width")
    2.0
    >>> check_number("0.1", "half width", location="half_width")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: half_width: half width must be a number, got '0.1'
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number, got {value!r}", location=location)
    return float(value)


def check_count(value: Any, name: str, *, location: str | None = None, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is a whole number (not a bool) from ``minimum`` to
    2**31 - 1, else raise :class:`InputError`. For counts of trials, cases, resamples: a
    larger one is a typo, and would overflow the int64 arithmetic it feeds.

    Examples
    --------
    >>> check_count(3, "trials")
    3
    >>> check_count(0, "trials", location="trials")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: trials: trials must be a whole number ≥ 1, got 0
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not minimum <= value <= _MAX_COUNT
    ):
        raise InputError(
            f"{name} must be a whole number ≥ {minimum}, got {value!r}", location=location
        )
    return int(value)


_MAX_COUNT = 2**31 - 1


def check_proportion(value: float, name: str, *, location: str | None = None) -> float:
    """Return ``value`` if it lies strictly between 0 and 1, else raise :class:`InputError`.

    For confidence levels, alphas and powers: one message everywhere. InputError is a
    ValueError, so array-level code raising it keeps its documented ValueError.

    Examples
    --------
    >>> check_proportion(0.95, "confidence level")
    0.95
    >>> check_proportion(95, "confidence level", location="confidence_level")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: confidence_level: confidence level must be ...got 95
    """
    check_number(value, name, location=location)
    if not 0 < value < 1:
        raise InputError(
            f"{name} must be strictly between 0 and 1, got {value!r}", location=location
        )
    return value


def check_path(value: Any, what: str) -> Path:
    """``value``, the path of ``what`` a function was given, as a :class:`~pathlib.Path`;
    anything else (a run passed to ``run_experiment`` or ``read_parquet``, ``None``) is an
    InputError naming what was passed, where pathlib's own "expected str, bytes or
    os.PathLike object" named neither the argument nor the fix.

    Examples
    --------
    >>> check_path("manifest.yaml", "an experiment manifest")
    PosixPath('manifest.yaml')
    >>> check_path(None, "an experiment manifest")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: expected the path of an experiment manifest, got \
NoneType (pass it as a str or pathlib.Path)
    """
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise InputError(
        f"expected the path of {what}, got {type(value).__name__}",
        hint="pass it as a str or pathlib.Path",
    )


def check_list(
    value: Any, what: str, *, hint: str, of: str = "", file: str | None = None
) -> list[Any]:
    """``value``'s items as a list; a bare string (or bytes), a mapping or a scalar refused
    naming ``what``: each is iterable, or taken for one item, where a list was meant.

    A string is read letter by letter (``tags="nightly"`` became seven tags, ``metrics=
    "score"`` five metrics), a mapping by its keys.

    Examples
    --------
    >>> check_list(("a", "b"), "tags", hint="tags=[...]")
    ['a', 'b']
    >>> check_list("score", "metrics", of=" of names", hint="pass e.g. metrics=['score']")
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: metrics: metrics must be a list of names, got str \
'score' (pass e.g. metrics=['score'])
    """
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        kind = "a mapping" if isinstance(value, Mapping) else type(value).__name__
        raise InputError(
            f"{what} must be a list{of}, got {kind} {clip(repr(value), 60)}",
            file=file,
            location=what,
            hint=hint,
        )
    return list(value)


def check_pass_k(pass_k: Any) -> tuple[int, ...]:
    """The distinct k of a ``pass_k`` list, sorted; InputError unless all are at least 1.

    Examples
    --------
    >>> check_pass_k([5, 1, 3, 1])
    (1, 3, 5)
    >>> check_pass_k(3)
    Traceback (most recent call last):
    ...
    agenticlens_frames.errors.InputError: pass_k: pass_k must be a list of k values, got 3
    (pass [3])
    """
    if isinstance(pass_k, (int, str)) or not hasattr(pass_k, "__iter__"):
        # One k given bare (pass_k=3) failed with "'int' object is not iterable".
        raise InputError(
            f"pass_k must be a list of k values, got {pass_k!r}",
            location="pass_k",
            hint=f"pass [{pass_k}]" if isinstance(pass_k, int) else "pass e.g. [1, 3, 5]",
        )
    whole = []
    for k in pass_k:
        # int() truncated 1.5 to 1 without a word, and int("x") was a bare ValueError.
        try:
            value = int(k)
        except (TypeError, ValueError, OverflowError):  # (None, "x", inf)
            value = None
        if value is None or isinstance(k, bool) or (isinstance(k, float) and k != value):
            raise InputError(
                f"pass_k values must be whole numbers, got {k!r} in {list(pass_k)!r}",
                location="pass_k",
                hint="pass e.g. [1, 3, 5]",
            )
        whole.append(value)
    ks = tuple(sorted(set(whole)))
    if not ks or ks[0] < 1:
        raise InputError(f"pass_k values must be positive integers, got {list(pass_k)}")
    return ks


def is_recursion(error: BaseException) -> bool:
    """Whether ``error`` is Python running out of stack: a RecursionError, or the panic a
    Rust extension (``rpds`` under ``referencing``, used by jsonschema) turns one into when
    the limit is reached inside it (a ``pyo3_runtime.PanicException``, which derives from
    BaseException, not Exception).

    Examples
    --------
    >>> is_recursion(RecursionError()), is_recursion(ValueError("RecursionError"))
    (True, False)
    """
    if isinstance(error, RecursionError):
        return True
    return type(error).__name__ == "PanicException" and "RecursionError" in str(error)
