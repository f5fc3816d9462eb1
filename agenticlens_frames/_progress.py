"""Progress bars (tqdm.auto: terminal or notebook) that start no background thread, and
plain progress lines for logs and pipes."""

from __future__ import annotations

import sys
import time
from functools import cache
from typing import Any, TextIO

__all__ = ["LogLines", "progress_bar", "wants_log_lines"]


@cache
def _bar_class() -> type:
    from tqdm.auto import tqdm

    # tqdm's stall monitor is a thread started with the first bar, even a disabled one;
    # with it running, the replay may not fork worker processes (see _fork), and our bars
    # update often enough not to need it.
    return type("ProgressBar", (tqdm,), {"monitor_interval": 0})


def progress_bar(**options: Any) -> Any:
    """A ``tqdm.auto`` bar with ``options`` (``total``, ``desc``, ``disable``...).

    Examples
    --------
    >>> import threading
    >>> before = threading.active_count()
    >>> with progress_bar(total=3, disable=True) as bar:
    ...     bar.update(3)
    >>> threading.active_count() == before
    True
    """
    return _bar_class()(**options)


def wants_log_lines(stream: TextIO | None = None) -> bool:
    """Whether progress should be plain lines: ``stream`` (stderr) is not a terminal and
    this is not a notebook (whose bars are widgets). A bar redrawn with ``\\r`` and cursor
    moves fills a CI log or a piped file with hundreds of half-lines.

    Examples
    --------
    >>> import io
    >>> wants_log_lines(io.StringIO())
    True
    """
    stream = sys.stderr if stream is None else stream
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        terminal = False
    return not terminal and not _in_notebook()


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (as tqdm.auto decides it: IPython's shell
    configured by a kernel app), not merely with ipykernel imported."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # an IPython without a shell, or one of another shape
        return False


class LogLines:
    """Progress as one plain line now and then (at most every ``every`` seconds, and at
    the end): no carriage returns, no cursor moves, for logs and pipes.

    Has the part of tqdm's interface the live runner uses (``update``,
    ``set_postfix_str``, ``close``).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> lines = LogLines(total=3, desc="exp", unit="attempt", every=3600, stream=out)
    >>> for _ in range(3):
    ...     lines.update()
    >>> lines.close()
    >>> out.getvalue().splitlines()[-1].split(" · ")[0]
    'exp: 3/3 attempts (100%)'
    """

    def __init__(
        self,
        *,
        total: int,
        desc: str,
        unit: str,
        every: float = 10.0,
        stream: TextIO | None = None,
    ) -> None:
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.stream = sys.stderr if stream is None else stream
        self.n = 0
        self.postfix = ""
        self._start = self._last = time.monotonic()
        self._closed = False

    def update(self, n: int = 1) -> None:
        """Count ``n`` more; print a line if ``every`` seconds passed since the last."""
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self._line(now)

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        """Text after the count on the next line (judge calls made...)."""
        self.postfix = text

    def close(self) -> None:
        """The last line (once)."""
        if not self._closed:
            self._closed = True
            self._line(time.monotonic())

    def _line(self, now: float) -> None:
        share = f" ({self.n / self.total:.0%})" if self.total else ""
        tail = f" · {self.postfix}" if self.postfix else ""
        text = (
            f"{self.desc}: {self.n}/{self.total} {self.unit}s{share} · "
            f"{now - self._start:.0f} s{tail}\n"
        )
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed pipe: progress is not worth failing for
            pass
