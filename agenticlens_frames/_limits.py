"""Bounds on what an input file can make this package do, each raisable by an environment
variable (docs/reliability.md lists them).

A file is data, but data can ask for a lot: a 10 GB "manifest", a FIFO that never ends,
a YAML alias bomb that expands a 1 kB file into a billion nodes, a regular expression
that backtracks for hours, a latency of 1e308 that overflows every sum, a trial count of
10**8. Each limit below is far above any real experiment and far below what would exhaust
a machine; an input beyond one is refused with a message naming the file, the limit and
the variable that raises it.
"""

from __future__ import annotations

import os

__all__ = [
    "MAX_INPUT_BYTES_ENV",
    "MAX_MAGNITUDE",
    "MAX_TRIALS_ENV",
    "MAX_YAML_NODES_ENV",
    "REGEX_TIMEOUT_ENV",
    "limit",
]

#: Largest input file read (manifest, suite, recorded trials, saved report), in bytes.
MAX_INPUT_BYTES_ENV = "AGENTICLENS_FRAMES_MAX_INPUT_BYTES"
#: Most nodes a YAML document may expand to, aliases counted as the copies they stand for.
MAX_YAML_NODES_ENV = "AGENTICLENS_FRAMES_MAX_YAML_NODES"
#: Seconds one JSON-schema ``pattern`` may take on one output.
REGEX_TIMEOUT_ENV = "AGENTICLENS_FRAMES_REGEX_TIMEOUT"
#: Most (variant, trial) pairs an experiment may plan.
MAX_TRIALS_ENV = "AGENTICLENS_FRAMES_MAX_TRIALS"
#: Largest magnitude of a latency (ms) or cost (USD) in a trace: sums stay finite.
MAX_MAGNITUDE = 1e15

_DEFAULTS: dict[str, float] = {
    MAX_INPUT_BYTES_ENV: 2 * 1024**3,
    MAX_YAML_NODES_ENV: 1_000_000,
    REGEX_TIMEOUT_ENV: 1.0,
    MAX_TRIALS_ENV: 1_000_000,
}


def limit(name: str) -> float:
    """The limit ``name`` (one of the ``*_ENV`` names): the variable's value, else the
    default.

    Examples
    --------
    >>> limit(MAX_TRIALS_ENV) >= 1_000_000
    True
    """
    text = os.environ.get(name, "").strip()
    if text:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if value > 0:
            return value
    return _DEFAULTS[name]
