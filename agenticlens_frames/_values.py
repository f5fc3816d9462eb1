"""Cell values as the result frames hold them: one definition of a missing value, and one
way to write a number in its unit."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["format_in_unit", "is_missing"]


def is_missing(value: Any) -> bool:
    """Whether a frame cell holds no value: ``None``, ``pd.NA`` or a float NaN.

    pandas is not imported for this (the command line's ``--help`` does without it): a
    value can only be ``pd.NA`` once pandas is loaded.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> [is_missing(v) for v in (None, pd.NA, float("nan"), np.float64("nan"), 0.0, "")]
    [True, True, True, True, False, False]
    """
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    pandas = sys.modules.get("pandas")
    return pandas is not None and value is pandas.NA


def format_in_unit(value: Any, unit: str, templates: Mapping[str, str]) -> str:
    """``value`` written with the template of its ``unit`` (``templates[""]`` for others).

    A template is a :meth:`str.format` string with the fields ``v`` (the value) and ``pp``
    (the value × 100, a proportion in percentage points). Each caller keeps its own
    templates and its own rule for a missing value.

    Examples
    --------
    >>> units = {"proportion": "{pp:+.1f} pp", "ms": "{v:.0f} ms", "": "{v:.3g}"}
    >>> [format_in_unit(v, u, units) for v, u in ((0.157, "proportion"), (12.4, "ms"),
    ...                                           (0.12345, "score"))]
    ['+15.7 pp', '12 ms', '0.123']
    """
    return templates.get(unit, templates[""]).format(v=value, pp=100 * value)
