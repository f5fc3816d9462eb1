"""Compare two JSON documents: same keys in the same order, numbers within a tolerance."""

from __future__ import annotations

import math
from typing import Any

#: Keys whose values legitimately differ between two runs (timestamps).
VOLATILE = frozenset({"created_at"})


def json_differences(
    ours: Any,
    theirs: Any,
    *,
    rel: float = 1e-12,
    ignore: frozenset[str] = VOLATILE,
    allow_extra_keys: bool = True,
    path: str = "$",
) -> list[str]:
    """Every difference between ``ours`` and ``theirs`` (the reference), as readable lines.

    Keys only ``ours`` has are allowed when ``allow_extra_keys`` (our additions live under
    new keys); the reference's keys must all be present, in the reference's order.
    """
    out: list[str] = []
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{path}: expected an object, got {type(ours).__name__}"]
        for key in theirs:
            if key in ignore:
                continue
            if key not in ours:
                out.append(f"{path}.{key}: missing")
                continue
            out += json_differences(
                ours[key],
                theirs[key],
                rel=rel,
                ignore=ignore,
                allow_extra_keys=allow_extra_keys,
                path=f"{path}.{key}",
            )
        shared = [k for k in ours if k in theirs]
        if shared != [k for k in theirs if k in ours]:
            out.append(f"{path}: key order differs")
        extra = [k for k in ours if k not in theirs]
        if extra and not allow_extra_keys:
            out.append(f"{path}: extra keys {extra}")
        return out
    if isinstance(theirs, list):
        if not isinstance(ours, list) or len(ours) != len(theirs):
            return [f"{path}: list differs ({_short(ours)} vs {_short(theirs)})"]
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            out += json_differences(
                a, b, rel=rel, ignore=ignore, allow_extra_keys=allow_extra_keys, path=f"{path}[{i}]"
            )
        return out
    if isinstance(theirs, bool) or isinstance(ours, bool) or theirs is None or ours is None:
        return (
            []
            if ours == theirs and type(ours) is type(theirs)
            else [f"{path}: {ours!r} != {theirs!r}"]
        )
    if isinstance(theirs, (int, float)) and isinstance(ours, (int, float)):
        if ours == theirs or math.isclose(ours, theirs, rel_tol=rel, abs_tol=0.0):
            return []
        return [f"{path}: {ours!r} != {theirs!r}"]
    return [] if ours == theirs else [f"{path}: {_short(ours)} != {_short(theirs)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."
