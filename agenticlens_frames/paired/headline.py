"""Each candidate's verdicts as one sentence: the line a summary leads with.

The sentence groups a candidate's dimensions by verdict, *better* and *worse* first, and
gives every dimension its difference, interval, adjusted p and, when not significant, the
smallest change the run could have detected — the numbers of the verdict table, worded
by the formatters of :mod:`agenticlens_frames.paired.verdicts`. Without a declared
correction it gives the per-comparison differences and no verdict word. Plain text: each
surface adds its own markup (the Markdown summary bolds and escapes the names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .verdicts import detectable_cell, format_change, format_p

__all__ = ["candidate_headlines", "dimension_phrase"]

#: Verdicts in the order a headline gives them, and the words that lead each group.
_GROUPS = {
    "better": "better on",
    "worse": "worse on",
    "no detectable difference": "no detectable difference in",
    "no test": "no test on",
    # No correction declared: the differences alone, no verdict word (the surface says why).
    "not judged": "",
}


def dimension_phrase(row: Mapping[str, Any]) -> str:
    """One verdict row as ``dimension (difference [CI], adj. p …; smallest detectable …)``.

    Examples
    --------
    >>> row = {"dimension": "quality", "mean_difference": 0.157, "ci_low": -0.001,
    ...        "ci_high": 0.315, "unit": "proportion", "declared": True,
    ...        "correction": "holm", "adjusted_p_value": 0.6347, "confidence_level": 0.95,
    ...        "verdict": "no detectable difference", "mde": 0.342,
    ...        "detectable": "this run could not detect changes smaller than 34.2 pp"}
    >>> dimension_phrase(row)
    'quality (+15.7 pp [-0.1, +31.5], adj. p 0.635; smallest detectable 34.2 pp)'
    >>> dimension_phrase(row | {"declared": False})
    'quality (+15.7 pp [-0.1, +31.5], 95% per-comparison interval; smallest detectable 34.2 pp)'
    """
    parts = format_change(row)
    if bool(row["declared"]):
        # A declared "none" is a per-comparison p: not called adjusted.
        name = "p" if str(row["correction"]) == "none" else "adj. p"
        parts += f", {name} {format_p(float(row['adjusted_p_value']))}"
    else:
        parts += f", {float(row['confidence_level']):.0%} per-comparison interval"
    detectable = str(row.get("detectable") or "")
    cell = detectable_cell(str(row["verdict"]), float(row["mde"]), str(row["unit"]), detectable)
    if cell and cell == detectable:  # a note, not a magnitude (no test, no bound)
        parts += f"; {cell}"
    elif cell:
        parts += f"; smallest detectable {'change ' if cell[0].isalpha() else ''}{cell}"
    return f"{row['dimension']} ({parts})"


def candidate_headlines(verdicts: pd.DataFrame) -> list[tuple[str, str]]:
    """Per candidate, in the frame's order: (candidate id, its verdicts as one sentence).

    Parameters
    ----------
    verdicts
        The verdict frame (:func:`~agenticlens_frames.case_verdicts`,
        ``analysis.verdicts``).

    Returns
    -------
    list of (str, str)
        The sentence groups the dimensions by verdict (better, worse, no detectable
        difference, no test), each dimension with :func:`dimension_phrase`; groups are
        joined by ``"; "``. Without a declared correction: the dimensions' per-comparison
        differences, with no verdict word. Empty for an empty frame.

    Examples
    --------
    >>> from agenticlens_frames import analyze, load_experiment
    >>> run = load_experiment("data/support/manifest.yaml", "data/support/suite.yaml")
    >>> lines = dict(candidate_headlines(analyze(run, frontier_n_resamples=0).verdicts))
    >>> print(lines["prompt-v2"])  # doctest: +ELLIPSIS
    no detectable difference in quality (+15.7 pp [-0.1, +31.5], adj. p 0.635; smallest
    detectable 34.2 pp), safety (...), reliability (...), latency (...), cost (...)
    >>> lines["model-large"].split(" (")[0]
    'worse on latency'
    """
    out = []
    records = verdicts.to_dict("records")
    for candidate in dict.fromkeys(str(r["candidate_variant_id"]) for r in records):
        rows = [r for r in records if str(r["candidate_variant_id"]) == candidate]
        groups = []
        for verdict, lead in _GROUPS.items():
            phrases = [dimension_phrase(r) for r in rows if str(r["verdict"]) == verdict]
            if phrases:
                groups.append(f"{lead} {', '.join(phrases)}".lstrip())
        others = [dimension_phrase(r) for r in rows if str(r["verdict"]) not in _GROUPS]
        if others:  # a verdict word this module does not know: still said, unlabelled
            groups.append(", ".join(others))
        out.append((candidate, "; ".join(groups)))
    return out
