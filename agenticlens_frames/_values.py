"""Cell values as the result frames hold them: one definition of a missing value."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

__all__ = ["is_missing"]


def is_missing(value: Any) -> bool:
    """Whether a frame cell holds no value: ``None``, ``pd.NA`` or a float NaN.

    Examples
    --------
    >>> import numpy as np
    >>> [is_missing(v) for v in (None, pd.NA, float("nan"), np.float64("nan"), 0.0, "")]
    [True, True, True, True, False, False]
    """
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
