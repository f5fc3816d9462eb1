"""Tables the docs show that come from the code's own declarations (registries, schema)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table"]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub Markdown table (no trailing newline).

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [["`x`", "1"]]))
    | a | b |
    |---|---|
    | `x` | 1 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
