"""A run's JSON-text columns, marked so that they are decoded exactly when given back.

``run.cases`` holds each case's input as the JSON text the suite gave; a number, a
boolean or null is then text ("42") that only the mark tells from a user's plain text.
:func:`mark_json_text` marks the column with its digest; ``from_frames`` decodes a column
whose mark still matches (:func:`json_text_digest`) exactly, and any other by its rule.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["JSON_TEXT_KEY", "json_text_digest", "mark_json_text"]


#: The key of ``run.cases.attrs`` that marks a column as the run's JSON text: ``{"input":
#: digest}``, the :func:`json_text_digest` of the column as the run made it. attrs follow
#: the frame through pandas' operations (a column selected, a row filtered, a column
#: replaced by ``assign``): the digest tells the run's own column from one changed since.
JSON_TEXT_KEY = "json_text"


def json_text_digest(column: pd.Series) -> str | None:
    """A digest of a column of text (None if a value is not text), each value
    length-prefixed so that no two lists of texts share one.

    Examples
    --------
    >>> import pandas as pd
    >>> json_text_digest(pd.Series(["a", "bc"])) != json_text_digest(pd.Series(["ab", "c"]))
    True
    >>> json_text_digest(pd.Series(["a", None])) is None
    True
    """
    values = column.tolist()
    if not all(isinstance(value, str) for value in values):
        return None
    # The texts joined and each one's length (in characters): together they give back
    # the list, so no two lists share a digest input. Two updates, not two per value.
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.fromiter(map(len, values), dtype=np.int64, count=len(values)).tobytes())
    digest.update("".join(values).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def mark_json_text(cases: pd.DataFrame) -> None:
    """Mark the ``input`` column of a cases table (a run's, or an archive's) as the JSON
    text the run wrote (:data:`JSON_TEXT_KEY`), in place; a column of anything but text
    is left unmarked.

    Examples
    --------
    >>> import pandas as pd
    >>> cases = pd.DataFrame({"input": ['{"q": 1}', "42"]})
    >>> mark_json_text(cases)
    >>> list(cases.attrs[JSON_TEXT_KEY])
    ['input']
    """
    if "input" in cases.columns and (digest := json_text_digest(cases["input"])) is not None:
        cases.attrs[JSON_TEXT_KEY] = {"input": digest}
