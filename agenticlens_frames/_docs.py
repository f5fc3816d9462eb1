"""Markdown from the code: the docs' tables of its declarations (registries, schema), and
the escaping of user text that a Markdown output (the CI summary) shows."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["markdown_escape", "markdown_table"]

#: What Markdown (GitHub's included) would read as markup in inline text: emphasis, code,
#: links and images, HTML and entities, table cells, strikethrough, headings.
_MARKUP = re.compile(r"([\\`*_\[\]<>|&~!#])")


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


def markdown_escape(text: str) -> str:
    """``text`` as literal inline Markdown: markup characters backslash-escaped, line
    breaks as spaces (a name must neither format the page nor end a table row).

    Control characters are the caller's to remove (``report.console.strip_control``).

    Examples
    --------
    >>> print(markdown_escape("a|b *c* `d` <e> [f](g)"))
    a\\|b \\*c\\* \\`d\\` \\<e\\> \\[f\\](g)
    >>> markdown_escape("two\\nlines")
    'two lines'
    """
    return _MARKUP.sub(r"\\\1", " ".join(text.splitlines()))
