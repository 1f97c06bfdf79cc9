"""Which documents a project renders: ``project: render:`` in ``_quarto.yml``, read as
Quarto reads it (src/project/project-context.ts and src/core/path.ts, resolvePathGlobs,
mode "auto"):

- an entry with glob characters (``*.qmd``, ``slides/**/*.qmd``, ``{a,b}.qmd``) matches at
  any depth below the project root, unless it starts with ``/`` (then from the root);
- an entry starting with ``!`` removes what it matches (``!drafts/``, ``!x.qmd``), at any
  depth;
- an entry naming a folder means every document in it;
- a plain path names one file, which must exist.

Files and folders whose names start with ``_`` or ``.`` and ``node_modules`` are never
rendered (Quarto ignores them too), nor anything in the output folder. deckbuild renders
``.qmd`` documents only.
"""

from __future__ import annotations

import re
from pathlib import Path

GLOB_CHARS_RE = re.compile(r"[*?\[\]{}]|[!@+]\(")
BRACES_RE = re.compile(r"\{([^{}]*)\}")


# the documents Quarto renders without an engine to run: .qmd and plain .md (the markdown
# engine), less the files it never renders (src/project/project-context.ts,
# projectHiddenIgnoreGlob: README, CLAUDE, AGENTS and *.llms.md)
DOCUMENT_SUFFIXES = (".qmd", ".md")
NEVER_RENDERED_RE = re.compile(r"^(README\.[Rrq]?md|CLAUDE(\.local)?\.md|AGENTS(\.local)?\.md|.*\.llms\.md)$")


def is_document(path: Path) -> bool:
    return path.suffix in DOCUMENT_SUFFIXES and not NEVER_RENDERED_RE.match(path.name)


def ignored(path: Path, root: Path, output_dir: Path | None = None) -> bool:
    """Whether Quarto leaves ``path`` out of a project's documents."""
    parts = path.relative_to(root).parts
    if any(part.startswith(("_", ".")) or part == "node_modules" for part in parts):
        return True
    if NEVER_RENDERED_RE.match(path.name):
        return True
    if output_dir is not None and output_dir.resolve() != root.resolve():
        return path.resolve().is_relative_to(output_dir.resolve())
    return False


def all_documents(root: Path, output_dir: Path | None = None) -> list[Path]:
    """Every .qmd and .md of the project (no ``render:`` list)."""
    return sorted(p for p in root.rglob("*") if p.is_file() and is_document(p)
                  and not ignored(p, root, output_dir))


def _braces(pattern: str) -> list[str]:
    """``{a,b}`` alternatives expanded (nested ones too)."""
    m = BRACES_RE.search(pattern)
    if not m:
        return [pattern]
    out = []
    for choice in m.group(1).split(","):
        out += _braces(pattern[:m.start()] + choice + pattern[m.end():])
    return out


def _full_pattern(entry: str, root: Path, smart: bool) -> str:
    """The glob Quarto runs for one entry (asFullGlob in src/core/path.ts)."""
    if entry.startswith("\\!"):
        entry = entry[1:]
    if smart:
        entry = re.sub(r"^\.[/\\]+", "/", entry)
        if entry.endswith("/"):
            entry += "**/*"
        elif (root / entry.lstrip("/")).is_dir():
            entry += "/**/*"
    if entry.startswith("/"):
        return entry[1:]
    return f"**/{entry}" if smart else entry


def _expand(pattern: str, root: Path) -> set[Path]:
    found: set[Path] = set()
    for alternative in _braces(pattern):
        found.update(p for p in root.glob(alternative) if p.is_file())
    return found


def render_list(entries: list, root: Path, output_dir: Path | None = None
                ) -> tuple[list[Path], list[str]]:
    """(the documents to render, the plain entries that name no file)."""
    globbed: set[Path] = set()
    named: set[Path] = set()     # plain file paths: rendered as named
    exclude: set[Path] = set()
    missing: list[str] = []
    for raw in entries:
        entry = str(raw)
        if entry.startswith("!"):
            exclude |= _expand(_full_pattern(entry[1:], root, True), root)
            continue
        smart = GLOB_CHARS_RE.search(entry) is not None or entry.endswith("/") \
            or (root / entry.lstrip("/")).is_dir()
        if smart:
            globbed |= {p for p in _expand(_full_pattern(entry, root, True), root)
                        if is_document(p) and not ignored(p, root, output_dir)}
        elif (root / entry.lstrip("/")).is_file():
            named.add(root / entry.lstrip("/"))
        else:
            missing.append(entry)
    return sorted((globbed | named) - exclude), missing
