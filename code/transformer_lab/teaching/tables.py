"""Markdown tables for ``#| output: asis`` cells: a slide shows numbers as a table, never
as a Python repr."""

from __future__ import annotations

from typing import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence], align: str | None = None) -> str:
    """A pipe table: ``header`` cells, then one line per row (cells are written with ``str``).

    ``align`` has one letter per column, ``l``, ``c`` or ``r`` (default: left for the first
    column, right for the others, which suits a label followed by numbers).
    """
    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column, got an empty sequence")
    align = align if align is not None else "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or set(align) - set("lcr"):
        raise ValueError(f"align must have one of l, c, r per column ({len(header)}), got {align!r}")
    rules = {"l": ":--", "c": ":-:", "r": "--:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rules[a] for a in align) + "|"]
    for i, row in enumerate(rows):
        cells = [str(c) for c in row]
        if len(cells) != len(header):
            raise ValueError(f"rows[{i}] must have {len(header)} cells, one per column, got {len(cells)}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
