"""Standard streams that outlive their reader, or their disk.

``agenticlens-frames experiment run … | head -3`` closes the pipe after three lines; the
next write to stdout then fails with ``BrokenPipeError``. Without care, click turns that
into a silent exit 1 before any file of ``--save``/``--csv``/``--html`` is written (the
console summary is printed first), so a user who only glanced at the head of the summary
lost the run's outputs. Likewise stdout redirected to a full disk (``> /full/log``) raised
a traceback and lost them. Here a stream that cannot be written any more is silenced: its
descriptor is pointed at ``/dev/null`` (a reader that left is not an error; any other
failure is said once on the other stream) and the command goes on, writes its files and
ends with its own exit code.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, TextIO

__all__ = ["quiet_when_reader_leaves"]


class _ReaderMayLeave:
    """A text stream whose writes and flushes drop what they cannot deliver once the
    stream fails (a closed pipe, a full disk), and every later write too; everything else
    is the stream's.

    Examples
    --------
    >>> import io
    >>> class Closed(io.StringIO):
    ...     def write(self, text):
    ...         raise BrokenPipeError(32, "Broken pipe")
    >>> _ReaderMayLeave(Closed()).write("dropped")
    7
    """

    def __init__(self, stream: TextIO, name: str = "stream") -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._lost(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._lost(exc)

    def _lost(self, exc: OSError) -> None:
        # Later writes (and the interpreter's last flush) go to /dev/null instead of failing
        # again; what is still buffered is flushed there.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
            self._stream.flush()
        if isinstance(exc, BrokenPipeError):
            return  # the reader left (| head): what it did not read, it did not want
        other = sys.stderr if self._name == "stdout" else sys.stdout
        if other is not None and other is not self:
            other.write(
                f"Console output on {self._name} is lost ({exc.strerror or exc}); "
                "the run goes on and still writes its files.\n"
            )
            other.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def quiet_when_reader_leaves() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` go quiet, not fail, when they cannot be
    written any more (their reader left, their disk is full).

    Called once by the console script before the command runs (not by the library: a
    notebook's streams are the notebook's business). Calling it again changes nothing.

    Examples
    --------
    >>> import sys
    >>> saved = sys.stdout, sys.stderr
    >>> quiet_when_reader_leaves()
    >>> print("still printed")
    still printed
    >>> type(sys.stderr).__name__
    '_ReaderMayLeave'
    >>> sys.stdout, sys.stderr = saved
    """
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _ReaderMayLeave):
            setattr(sys, name, _ReaderMayLeave(stream, name))
