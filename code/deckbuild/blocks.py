"""Where code and comments are in markdown lines, seen two ways.

- As Quarto's cell parser sees them (``src/core/lib/break-quarto-md.ts``): a cell opens on
  ```` ```{engine} ```` after any indentation, a plain code block only on ```` ``` ```` at
  the start of the line, and either closes on a bare fence of exactly as many backticks.
  :func:`cell_fence` and :func:`closes_cell_fence` follow these rules; ``source.parse``
  uses them to find the cells.
- As pandoc sees them, for the checks that read the markdown (divs, classes, images):
  a code fence may follow list or block-quote markers (``- ```shell``) and be indented
  (inside a list item), backticks or tildes, closed by a bare fence of the same character
  at least as long; an HTML comment (``<!-- ... -->``) hides everything in it, across
  lines, so a ``:::`` in a commented-out slide is no div. :class:`Scanner` follows these.
"""

from __future__ import annotations

import re

# Quarto's cell parser
CELL_OPEN_RE = re.compile(r"^\s*(?P<fence>`{3,})\s*(?P<info>\{[=A-Za-z][=A-Za-z0-9._]*(?: *[ ,].*)?\})\s*$")
CODE_OPEN_RE = re.compile(r"^(?P<fence>`{3,})\s*(?P<info>.*?)\s*$")
CODE_CLOSE_RE = re.compile(r"^\s*(?P<fence>`{3,})\s*$")

# pandoc: list items and block quotes before a fence, then the fence and its info string
_PREFIX = r"(?:[ \t]*(?:[-+*]|\d{1,9}[.)]|>)[ \t]+)*[ \t]*"
FENCE_RE = re.compile(rf"^{_PREFIX}(?P<fence>`{{3,}}|~{{3,}})[ \t]*(?P<info>.*?)\s*$")
INLINE_CODE_RE = re.compile(r"(`+).*?\1")


def cell_fence(text: str) -> tuple[str, str] | None:
    """(fence, info) when ``text`` opens a cell or a code block for Quarto, else None."""
    m = CELL_OPEN_RE.match(text) or CODE_OPEN_RE.match(text)
    return (m.group("fence"), m.group("info")) if m else None


def closes_cell_fence(text: str, fence: str) -> bool:
    """Whether ``text`` closes the cell or code block opened by ``fence`` (Quarto: a bare
    fence of exactly as many backticks, any indentation)."""
    m = CODE_CLOSE_RE.match(text)
    return m is not None and len(m.group("fence")) == len(fence)


def pandoc_fence(text: str) -> tuple[str, str] | None:
    """(fence, info) when ``text`` is a code fence line for pandoc, else None. A backtick
    fence's info string holds no backtick (``` ``x`` ``` on a line is inline code)."""
    m = FENCE_RE.match(text)
    if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
        return None
    return m.group("fence"), m.group("info")


def track_code_fence(fence: str | None, text: str) -> tuple[str | None, bool]:
    """The code fence open after ``text`` (``None`` outside code) given the one open before
    it, and whether ``text`` is a fence line, as pandoc reads fences (see the module
    docstring): a fence closes on a bare marker of the same character, at least as long."""
    found = pandoc_fence(text)
    if not found:
        return fence, False
    marker, info = found
    if fence is None:
        return marker, True
    if marker[0] == fence[0] and len(marker) >= len(fence) and not info:
        return None, True
    return fence, True


class Scanner:
    """Feeds markdown lines one at a time and says what pandoc will make of each:
    ``visible(text)`` returns the text outside code and HTML comments ("" for a code or
    fence line, or a line inside a comment). ``code=False``: comments only (for lines
    already known to be outside code)."""

    def __init__(self, code: bool = True) -> None:
        self.fence: str | None = None
        self.in_comment = False
        self.code = code

    def visible(self, text: str) -> str:
        if self.code and not self.in_comment:
            self.fence, is_fence = track_code_fence(self.fence, text)
            if is_fence or self.fence is not None:
                return ""
        return self._outside_comments(text)

    def _outside_comments(self, text: str) -> str:
        out, rest = [], text
        while rest:
            if self.in_comment:
                end = rest.find("-->")
                if end < 0:
                    return "".join(out)
                rest, self.in_comment = rest[end + 3:], False
                continue
            start = _comment_start(rest)
            if start < 0:
                out.append(rest)
                break
            out.append(rest[:start])
            rest, self.in_comment = rest[start + 4:], True
        return "".join(out)


def _comment_start(text: str) -> int:
    """Where an HTML comment opens in ``text`` outside inline code, or -1."""
    masked = INLINE_CODE_RE.sub(lambda m: " " * len(m.group(0)), text)
    return masked.find("<!--")
