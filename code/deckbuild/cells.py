"""What a cell is, once options are resolved: its effective options (the document's
execution options under the cell's own ``#|`` options) and its outputs cleaned up the way
Jupyter hands them to Quarto (terminal colours removed, split stream chunks merged).
"""

from __future__ import annotations

import re

from .schema import DOCUMENT_OPTIONS
from .source import Cell

ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
EXECUTE_OPTIONS = [name for name, opt in DOCUMENT_OPTIONS.items() if opt.role == "execute"]


def effective_cell_options(cell: Cell, doc_opts: dict) -> dict:
    """The document's execution options (echo, eval, ..., fig-width) under the cell's own."""
    eff = {name: doc_opts.get(name, DOCUMENT_OPTIONS[name].default) for name in EXECUTE_OPTIONS}
    eff.update(cell.options)
    if eff.get("include") is False:
        eff["echo"] = False
    return eff


def strip_ansi(text: str) -> str:
    """Text without terminal colour codes (IPython colours its tracebacks)."""
    return ANSI_RE.sub("", text)


def output_text(value) -> str:
    """A notebook output field as one string (nbformat may split text into a list)."""
    return "".join(value) if isinstance(value, list) else str(value)


def coalesce_streams(outputs: list) -> list:
    """Merge consecutive stdout (or stderr) chunks into one output, as Jupyter's
    ``coalesce_streams`` does for Quarto: the kernel may split one cell's printing into
    several messages, and an ``asis`` table must not be cut in two."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.get("output_type") == "stream" and prev is not None
                and prev.get("output_type") == "stream" and prev.get("name") == out.get("name")):
            merged[-1] = {**prev, "text": output_text(prev.get("text", "")) + output_text(out.get("text", ""))}
        else:
            merged.append(out)
    return merged
