"""The unit of execution and caching: a chapter.

A document's *chapters* are the files it includes (``{{< include >}}``; a file they include
in turn belongs to their chapter). The document's own cells are one more unit, and those
of them before its first include are its *setup*: every chapter's kernel runs them first.
Each unit runs in a kernel of its own, so a unit's outputs depend only on its own source,
the setup's, the execution options and the package source, which is exactly what its cache
key hashes. Nothing one chapter does can reach another, so no edit needs more than its own
chapter run again, and the chapters can be reordered without running anything.

Quarto runs the whole document in one kernel. The same sources give the same deck there
as long as no chapter relies on another: :func:`reads_another_chapter` turns a chapter's
``NameError`` into an error naming both places, :func:`setup_rebinds` rejects a chapter
that rebinds a setup name (later chapters would see it under Quarto), and the execution
checks that each chapter seeds the random numbers it draws.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import DeckError
from .source import Cell, Document

EXEC_VERSION = "6"   # bump when the kernel set-up changes what cells produce


@dataclass
class Unit:
    """A chapter (``chapter`` = its file) or the document's own cells (``chapter`` None)."""

    chapter: Path | None
    cells: list[Cell] = field(default_factory=list)
    key: str = ""

    @property
    def name(self) -> str:
        return self.chapter.name if self.chapter else "document"


def units_of(doc: Document) -> list[Unit]:
    """The document's own cells first (if any), then each chapter in document order."""
    units: dict = {}
    for cell in doc.cells:
        units.setdefault(cell.chapter, Unit(cell.chapter)).cells.append(cell)
    return list(units.values())


def setup_cells(doc: Document) -> list[Cell]:
    return [c for c in doc.cells if c.setup]


def source_files(folder: Path):
    """The files of a package folder that can change what its code does: every file (the
    ``.py`` modules and package data such as a script a cell embeds), except bytecode,
    hidden files and editors' backups."""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if (path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc"
                and not any(p.startswith(".") for p in rel.parts) and not path.name.endswith("~")):
            yield path, rel


def source_hash(folders) -> str:
    """Hash of the source files under ``folders`` (the packages the cells import)."""
    h = hashlib.sha256()
    for folder in sorted(map(Path, folders)):
        for path, rel in source_files(folder):
            h.update(f"{folder.name}/{rel}".encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def unit_key(unit: Unit, setup: list[Cell], effs: list[dict], context: dict) -> str:
    """sha256 of everything a unit's outputs depend on: its cells (code and effective
    options), the setup cells its kernel runs first, and ``context`` (the kernel's set-up
    code, package source hash, python path, versions). Not its place in the document."""
    before = [] if unit.chapter is None else setup
    payload = json.dumps({"version": EXEC_VERSION, "python": list(sys.version_info[:2]),
                          "context": context,
                          "setup": [[c.code, effs[c.index]] for c in before],
                          "cells": [[c.code, effs[c.index]] for c in unit.cells]},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


class UnitCache:
    """One JSON file per unit key: the outputs of each of its cells. An entry that cannot
    be read, or is not what this version writes, is reported (``warn``) and run again."""

    def __init__(self, directory: Path, warn):
        self.dir, self.warn = directory, warn

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, unit: Unit) -> list[list] | None:
        path = self.path(unit.key)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            problem = _entry_problem(entry, unit)
        except (OSError, ValueError) as exc:
            problem = f"unreadable ({type(exc).__name__})"
        if problem:
            self.warn(f"  WARNING cache entry {path} for {unit.name} is {problem}: running "
                      "the chapter again")
            return None
        return [cell["outputs"] for cell in entry["cells"]]

    def put(self, unit: Unit, outputs: list[list]) -> None:
        from .files import write_atomic

        entry = {"version": EXEC_VERSION, "key": unit.key, "unit": unit.name,
                 "cells": [{"line": c.line, "outputs": o} for c, o in zip(unit.cells, outputs)]}
        path = self.path(unit.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(entry))


def _entry_problem(entry, unit: Unit) -> str:
    """What is wrong with a parsed cache entry ("" when nothing is)."""
    if not isinstance(entry, dict) or entry.get("version") != EXEC_VERSION \
            or entry.get("key") != unit.key:
        return "not an entry of this version for this key"
    cells = entry.get("cells")
    if not isinstance(cells, list) or len(cells) != len(unit.cells):
        return f"malformed (expected {len(unit.cells)} cells)"
    for cell in cells:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        if not isinstance(outputs, list) or not all(
                isinstance(o, dict) and isinstance(o.get("output_type"), str) for o in outputs):
            return "malformed (a cell's outputs are not a list of Jupyter outputs)"
    return ""


# -- names: what a chapter binds, and what it must not rely on ---------------------------

def bound_names(code: str) -> dict[str, int]:
    """Module-level names ``code`` binds (assignments, ``for``/``with`` targets, ``def``,
    ``class``, imports), each with the 1-based line of its first binding. Names bound only
    inside functions, classes and comprehensions are local and not counted."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    found: dict[str, int] = {}

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.setdefault(node.name, node.lineno)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.setdefault(node.id, node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found.setdefault((alias.asname or alias.name).split(".")[0], node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _imports(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {(a.asname or a.name).split(".")[0] for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) for a in node.names}


def _binding_line(cell: Cell, offset: int) -> int:
    """The .qmd line of line ``offset`` (1-based) of the cell's code."""
    return cell.line + len(cell.option_lines) + offset


def setup_rebinds(doc: Document) -> None:
    """A chapter must not rebind a name the setup cells bind (other than by importing it
    again): under Quarto every later chapter would see the chapter's value, here none does."""
    setup = {}
    for cell in setup_cells(doc):
        for name, offset in bound_names(cell.code).items():
            setup.setdefault(name, (cell, offset))
    for cell in doc.cells:
        if cell.setup or cell.chapter is None:
            continue
        for name, offset in bound_names(cell.code).items():
            if name in setup and name not in _imports(cell.code):
                where, at = setup[name]
                raise DeckError(
                    f"the chapter rebinds `{name}`, which the setup cell at "
                    f"{where.file.name}:{_binding_line(where, at)} defines; under Quarto, which "
                    "runs the whole document in one kernel, every later chapter would see this "
                    "value and here none does: use another name", cell.file,
                    _binding_line(cell, offset))


NAME_ERROR = re.compile(r"name '(?P<name>\w+)' is not defined")


def reads_another_chapter(doc: Document, cell: Cell, error: dict) -> DeckError | None:
    """A cell's NameError for a name only another unit binds, as an error naming both
    places (None when no other unit binds it)."""
    m = NAME_ERROR.search(str(error.get("evalue", "")))
    if error.get("ename") != "NameError" or not m:
        return None
    name = m.group("name")
    for other in doc.cells:
        if other.chapter == cell.chapter or other.setup:
            continue
        offset = bound_names(other.code).get(name)
        if offset is not None:
            return DeckError(
                f"cell {cell.index + 1} reads `{name}`, which only "
                f"{os.path.relpath(other.file, cell.file.parent)}:{_binding_line(other, offset)} "
                "defines: each chapter runs in a kernel of its own (after the document's setup "
                "cells), so define it in this chapter or in the setup", cell.file, cell.line)
    return None
