"""Cell values as the result frames hold them: one definition of a missing value, and one
way to write a number in its unit."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

__all__ = [
    "NO_EVALUATED_ATTEMPT",
    "clip",
    "count_noun",
    "ends_in_order",
    "format_in_unit",
    "format_power",
    "frontier_share",
    "is_json_number",
    "is_level",
    "is_missing",
    "json_copy",
    "json_key_clash",
    "membership_cell",
    "missing_interval_reason",
    "pass_rate_unit",
    "same_json",
]

#: The pass rate of a variant that has no row among the case-level pass rates while the
#: others have one: it completed no trial, so no attempt of it was evaluated. Said in
#: words rather than falling back to AgenticLens's pooled case pass rate, which counts
#: the failed trials as failing every case and whose interval treats attempts as
#: independent (a confident "0.0% [0%–6%]" for a variant that produced nothing).
NO_EVALUATED_ATTEMPT = "n/a (no evaluated attempt)"


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with "…" (for labels and
    messages: an error body or a repr can be long).

    Examples
    --------
    >>> clip("abc", 5), clip("abcdefgh", 5)
    ('abc', 'abcd…')
    """
    return text if len(text) <= width else text[: width - 1] + "…"


def count_noun(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, the noun plural unless ``n`` is 1 (``plural``, or ``noun`` + "s").

    Examples
    --------
    >>> count_noun(1, "factor"), count_noun(2, "factor"), count_noun(0, "interaction")
    ('1 factor', '2 factors', '0 interactions')
    >>> count_noun(3, "analysis", "analyses")
    '3 analyses'
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


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


def is_json_number(value: Any) -> bool:
    """A number as JSON holds one: an int or a float, not a boolean (which Python counts
    as an int). The readers of saved reports take nothing else where a number belongs.

    Examples
    --------
    >>> [is_json_number(v) for v in (1, 0.5, float("nan"), True, "1", None)]
    [True, True, True, False, False, False]
    """
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_level(value: Any) -> bool:
    """A significance or confidence level as a saved report holds one: a number strictly
    between 0 and 1 (NaN is not).

    Examples
    --------
    >>> [is_level(v) for v in (0.05, 0, 1, float("nan"), True, "0.05")]
    [True, False, False, False, False, False]
    """
    return is_json_number(value) and 0 < value < 1


def ends_in_order(low: Any, high: Any) -> bool:
    """An interval's saved ends are not reversed: False only when both are numbers (not
    NaN) and ``low`` is above ``high``. A missing end (None, NaN) is for the reader's own
    rule, as is the type of each end.

    Examples
    --------
    >>> [ends_in_order(*ends) for ends in ((-0.1, 0.2), (0.1, 0.1), (0.3, 0.1), (None, 0.1),
    ...                                    (float("nan"), -1.0))]
    [True, True, False, True, True]
    """
    if not (is_json_number(low) and is_json_number(high)):
        return True
    return not low > high


def missing_interval_reason(row: Mapping[str, Any]) -> str:
    """Why a case-level pass rate (a row of
    :func:`~agenticlens_frames.paired.verdicts.headline_pass_rates`) has no interval, in
    the short form every surface shows beside the rate: the last "no interval: …" or "no
    estimate: …" clause of the row's ``note`` (the JSON report's words); "" when the row
    has an interval.

    Examples
    --------
    >>> missing_interval_reason({"ci_low": float("nan"), "note": "trial-weighted mean; CR1 "
    ...     "clustered by metadata field 'group'; no interval: fewer than two clusters"})
    'no interval: fewer than two clusters'
    >>> missing_interval_reason({"ci_low": 0.7, "note": "beta-binomial"})
    ''
    """
    if not is_missing(row.get("ci_low")):
        return ""
    note = row.get("note")
    clauses = [] if is_missing(note) else str(note).split("; ")
    # (a saved report from before the notes, or a frame without them: the bare fact)
    return next(
        (c for c in reversed(clauses) if c.startswith(("no interval:", "no estimate:"))),
        "no interval",
    )


def pass_rate_unit(rows: Iterable[Mapping[str, Any]]) -> str:
    """The unit of the case-level pass rates' intervals (rows of
    :func:`~agenticlens_frames.paired.verdicts.headline_pass_rates`), in words: "clusters
    of cases" when a declared cluster groups cases (fewer clusters than cases in a row),
    else "cases".

    Examples
    --------
    >>> pass_rate_unit([{"n_cases": 12, "n_clusters": 1}])
    'clusters of cases'
    >>> pass_rate_unit([{"n_cases": 12, "n_clusters": 12}, {"n_cases": 3}])
    'cases'
    """
    for row in rows:
        cases, clusters = row.get("n_cases"), row.get("n_clusters")
        if not is_missing(cases) and not is_missing(clusters) and clusters < cases:
            return "clusters of cases"
    return "cases"


def json_copy(value: Any) -> Any:
    """``value`` as JSON holds it: what writing it as the tables and the run journal do
    (:mod:`json`, other objects by ``str()``, NaN and infinities kept as ``NaN`` /
    ``Infinity``) and reading it back gives.

    Tuples become lists, keys strings (``1`` → ``"1"``), other objects their ``str()``;
    the copy is written as the same JSON text as ``value``, and reads back equal to
    itself (:func:`same_json`), so what is built from it is the same before and after a
    journal. Raises what :func:`json.dumps` raises for what JSON cannot write at all: a
    key that is not a string or a number (``TypeError``), a reference cycle
    (``ValueError``), nesting too deep (``RecursionError``), or what an object's
    ``str()`` raises.

    Examples
    --------
    >>> json_copy({"span": (1, 2), 3: float("inf"), "at": {1, 2}})
    {'span': [1, 2], '3': inf, 'at': '{1, 2}'}
    >>> json_copy({(1, 2): "pair"})
    Traceback (most recent call last):
    ...
    TypeError: keys must be str, int, float, bool or None, not tuple
    """
    return _json_copy(value)[0]


def _json_copy(value: Any) -> tuple[Any, bool]:
    """:func:`json_copy` of ``value``, and whether orjson wrote ``value`` (then no two of
    its keys clash: :func:`json_key_clash` is None)."""
    # orjson's round trip is ~10x cheaper and gives the same value whenever it reads back
    # equal to the original: plain JSON values (most of them). Anything else (tuples, NaN
    # and infinities, which orjson writes as null, integers beyond 64 bits, non-string
    # keys, other objects) differs or raises, and json decides.
    written = False
    try:
        data = orjson.dumps(value)
        written = True
        copied = orjson.loads(data)
        if copied == value:
            return copied, True
    except (TypeError, orjson.JSONEncodeError):
        pass
    return json.loads(json.dumps(value, default=str)), written


def json_copy_checked(value: Any) -> tuple[Any, str | None]:
    """``(json_copy(value), json_key_clash(value))``, with ``value`` written by orjson once
    for both (a live payload is checked on the event loop, once per attempt).

    Raises what :func:`json_copy` raises.

    Examples
    --------
    >>> json_copy_checked({"a": (1, 2)})
    ({'a': [1, 2]}, None)
    >>> json_copy_checked({1: "a", "1": "b"})
    ({'1': 'b'}, 'keys 1 and \\'1\\' are both "1" in JSON, at the top level')
    """
    copied, written = _json_copy(value)
    # A value orjson wrote has string keys only: nothing to walk.
    return copied, None if written else json_key_clash(value)


def json_key_clash(value: Any) -> str | None:
    """Where two keys of one dict in ``value`` are written as the same JSON key, or None.

    JSON object keys are strings, so ``1`` and ``"1"`` are both written ``"1"`` (``True``
    and ``"true"`` both ``"true"``, ``None`` and ``"null"`` both ``"null"``), and reading
    the text back keeps only the last: :func:`json_copy` loses one of them without a word.
    This names the first such pair (depth first, in key order) and where the dict holding
    it is, so a caller can refuse the value instead. Meant for a value :func:`json_copy`
    accepted (no reference cycle).

    Examples
    --------
    >>> print(json_key_clash({1: "a", "2": {"x": [{None: 0, "null": 1}]}}))
    keys None and 'null' are both "null" in JSON, in the dict at ['2']['x'][0]
    >>> print(json_key_clash({1: "a", "1": "b"}))
    keys 1 and '1' are both "1" in JSON, at the top level
    >>> print(json_key_clash({1: "a", 2: "b", "3": (1.0, {"1.0": 0})}))
    None
    """
    try:
        # orjson writes no dict key that is not a str (and refuses the value otherwise):
        # when it writes this one, no two keys can clash. Checked first, as every live
        # payload and judge reply is: the walk below costs ~10x the JSON copy itself
        # (430 against 38 us on a 50-span trace).
        orjson.dumps(value)
    except TypeError:  # (orjson.JSONEncodeError too) a key, a big int, an object, depth
        pass
    else:
        return None
    # Iterative (a value json accepted may be nested deeper than Python's recursion limit).
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            if not all(type(key) is str for key in item):
                # Only a dict with a key that is not a string can clash; json decides what
                # each key is written as (int and float subclasses, NaN, ...).
                seen: dict[str, Any] = {}
                for key in item:
                    text = key if type(key) is str else next(iter(json.loads(json.dumps({key: 0}))))
                    if text in seen:
                        where = f"in the dict at {path}" if path else "at the top level"
                        return (
                            f"keys {seen[text]!r} and {key!r} are both {json.dumps(text)} "
                            f"in JSON, {where}"
                        )
                    seen[text] = key
            children = [(child, f"{path}[{key!r}]") for key, child in item.items()]
        elif isinstance(item, (list, tuple)):
            children = [(child, f"{path}[{i}]") for i, child in enumerate(item)]
        else:
            continue
        stack.extend(reversed(children))
    return None


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same, types included, NaN the same as NaN (``==``
    says a NaN read back differs from the one written, and a tuple equals no list).

    Examples
    --------
    >>> nan = float("nan")
    >>> same_json({"x": [nan, 1]}, {"x": [float("nan"), 1]}), same_json([1], (1,))
    (True, False)
    >>> same_json({"a": 1, "b": 2}, {"b": 2, "a": 1}), same_json(1, 1.0), same_json(1, True)
    (True, False, False)
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


#: The first number of a formatted text (sign, digits with thousands commas, decimals).
_NUMBER = re.compile(r"[+-]?\d[\d,]*(?:\.\d*)?")


def format_in_unit(
    value: Any, unit: str, templates: Mapping[str, str], *, keep_nonzero: bool = False
) -> str:
    """``value`` written with the template of its ``unit`` (``templates[""]`` for others).

    A template is a :meth:`str.format` string with the fields ``v`` (the value) and ``pp``
    (the value × 100, a proportion in percentage points). Each caller keeps its own
    templates and its own rule for a missing value. With ``keep_nonzero``, a nonzero value
    the template would round to zero keeps two significant digits instead: a difference
    of -0.3 ms written "-0 ms" reads as a sign error, and a detectable change of "0 ms"
    as a perfect experiment.

    Examples
    --------
    >>> units = {"proportion": "{pp:+.1f} pp", "ms": "{v:+.0f} ms", "": "{v:.3g}"}
    >>> [format_in_unit(v, u, units) for v, u in ((0.157, "proportion"), (12.4, "ms"),
    ...                                           (0.12345, "score"))]
    ['+15.7 pp', '+12 ms', '0.123']
    >>> format_in_unit(-0.3, "ms", units), format_in_unit(-0.3, "ms", units, keep_nonzero=True)
    ('-0 ms', '-0.3 ms')
    >>> format_in_unit(0.00042, "proportion", units, keep_nonzero=True)
    '+0.042 pp'
    """
    template = templates.get(unit, templates[""])
    text = template.format(v=value, pp=100 * value)
    if not keep_nonzero or not value or not math.isfinite(value):
        return text
    number = _NUMBER.search(text)
    if number is None or any(c in "123456789" for c in number.group()):
        return text
    shown = 100 * value if "{pp" in template else value
    spec = "+.2g" if number.group().startswith(("+", "-")) else ".2g"
    return text[: number.start()] + format(shown, spec) + text[number.end() :]


def format_power(power: float) -> str:
    """A power (or any share) as a percentage with up to three significant digits, so that
    0.999 is not written "100%".

    Examples
    --------
    >>> [format_power(p) for p in (0.8, 0.95, 0.999, 0.8125)]
    ['80%', '95%', '99.9%', '81.2%']
    """
    return f"{100 * power:.3g}%"


def frontier_share(p_frontier: Any) -> str | None:
    """``p_frontier`` as a whole percentage, or None when the bootstrap gave none. Only
    every resample makes 100% (or none 0%): a share rounded there would read as certain.

    Examples
    --------
    >>> [frontier_share(p) for p in (0.5855, 0.996, 1.0, 0.004, 0.0, None)]
    ['59%', '>99%', '100%', '<1%', '0%', None]
    """
    if is_missing(p_frontier):
        return None
    p = float(p_frontier)
    if 0.995 <= p < 1:
        return ">99%"
    if 0 < p < 0.005:
        return "<1%"
    return f"{p:.0%}"


def membership_cell(row: Mapping[str, Any]) -> str:
    """A variant's Pareto cell: the point estimate's flag, then how often the case
    bootstrap put it on the frontier (``p_frontier``) when the summary has it.

    The flag alone reads as certain; a variant on the frontier in 59% of resamples is not
    (docs/statistics.md §11), so every table that shows the flag shows the share beside it.

    Examples
    --------
    >>> membership_cell({"pareto_optimal": True, "p_frontier": 0.5855})
    'yes · 59%'
    >>> membership_cell({"pareto_optimal": False, "p_frontier": float("nan")})
    'no'
    >>> membership_cell({"pareto_optimal": True})
    'yes'
    """
    flag = "yes" if row["pareto_optimal"] else "no"
    share = frontier_share(row.get("p_frontier"))
    return flag if share is None else f"{flag} · {share}"
