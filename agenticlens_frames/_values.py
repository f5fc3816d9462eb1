"""Cell values as the result frames hold them: one definition of a missing value."""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["is_missing"]


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
