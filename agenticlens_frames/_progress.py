"""Progress bars (tqdm.auto: terminal or notebook) that start no background thread."""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["progress_bar"]


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
