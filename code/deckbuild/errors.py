"""The error the renderer raises for bad input and the warning it prints for what it does
not implement; both name a file and a line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class DeckError(Exception):
    """A problem in the deck's sources, reported as ``file:line: message``.

    ``detail`` carries extra lines (a cell's source, a traceback) printed below.
    """

    def __init__(self, message: str, file: str | Path | None = None, line: int | None = None,
                 detail: str = ""):
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.detail = detail
        super().__init__(self.__str__())

    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        loc = self.location()
        head = f"{loc}: {self.message}" if loc else self.message
        return f"{head}\n{self.detail}" if self.detail else head


@dataclass(frozen=True)
class DeckWarning:
    """Something in the sources deckbuild does not implement the way Quarto would, or
    that Quarto itself warns about; reported as ``file:line: warning: message``."""

    message: str
    file: str | Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file and self.line else str(self.file or "")
        return f"{where}: warning: {self.message}" if where else f"warning: {self.message}"
