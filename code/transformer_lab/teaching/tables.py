"""Markdown tables for ``#| output: asis`` cells: a slide shows numbers as a table, never
as a Python repr."""

from __future__ import annotations

from typing import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence], align: str | None = None,
                   widths: Sequence[int] | None = None) -> str:
    """A pipe table: ``header`` cells, then one line per row (cells are written with ``str``).

    ``align`` has one letter per column, ``l``, ``c`` or ``r`` (default: left for the first
    column, right for the others, which suits a label followed by numbers). ``widths``
    (optional, positive ints, one per column) are relative column widths for a table whose
    text wraps: pandoc reads them from the number of dashes under each header cell.
    """
    header = [str(h) for h in header]
    if not header:
        raise ValueError("header must name at least one column, got an empty sequence")
    align = align if align is not None else "l" + "r" * (len(header) - 1)
    if len(align) != len(header) or set(align) - set("lcr"):
        raise ValueError(f"align must have one of l, c, r per column ({len(header)}), got {align!r}")
    if widths is not None and (len(widths) != len(header) or not all(isinstance(w, int) and w > 0 for w in widths)):
        raise ValueError(f"widths must be one positive int per column ({len(header)}), got {widths!r}")
    dashes = widths if widths is not None else [1] * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(_rule(a, d) for a, d in zip(align, dashes)) + "|"]
    for i, row in enumerate(rows):
        cells = [str(c) for c in row]
        if len(cells) != len(header):
            raise ValueError(f"rows[{i}] must have {len(header)} cells, one per column, got {len(cells)}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _rule(align: str, dashes: int) -> str:
    """The separator cell under one header cell: ``dashes`` sets its relative width (at least
    three characters, the shortest pandoc reads: ``:--``, ``:-:``, ``--:``)."""
    n = max(3, 3 * dashes)
    return {"l": ":" + "-" * (n - 1), "c": ":" + "-" * (n - 2) + ":", "r": "-" * (n - 1) + ":"}[align]
