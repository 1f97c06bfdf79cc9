"""Strictness where deckbuild imitates Quarto: nothing it does not implement passes in
silence, and what Quarto would reject is rejected here too.

- a document option with a value Quarto's schema rejects: an error; an option deckbuild
  does not implement: a warning naming the file, line and option;
- an output format name Quarto does not know: an error ("... is not a valid output
  format", as Quarto says); another format than revealjs: a warning (not rendered);
- a class on a div, span, heading or image that neither deckbuild, reveal.js, pandoc nor
  the theme's CSS gives a meaning: a warning naming the file, line and class.

Cell options and shortcodes are checked where they are read (``source.py``).
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from . import mathmethod, partials, schema
from .errors import DeckError, DeckWarning
from .options import Options
from .blocks import Scanner
from .source import Cell, Document, Markdown

DIV_BARE_CLASS_RE = re.compile(r"^:{3,}\s*([A-Za-z][\w-]*)\s*$")
# an attribute block after a span/link/image, on a div fence or at the end of a heading
ATTR_RE = re.compile(r"(?:^:{3,}\s*|[\])]|^#{1,6}\s.*?)\{([^{}]*)\}")
CLASS_RE = re.compile(r"(?:^|\s)\.([A-Za-z_][\w-]*)")
INLINE_MATH_RE = re.compile(r"\$[^$]+\$")
INLINE_CODE_RE = re.compile(r"`[^`]*`(\{[^{}]*\})?")


def _where(opts: Options, key: str, doc_path: Path) -> tuple[Path, int | None]:
    file, line = opts.origin(key)
    return (file, line) if file else (doc_path, None)


def check_options(opts: Options, doc_path: Path) -> list[DeckWarning]:
    """Errors for values Quarto rejects; warnings for options deckbuild ignores."""
    warnings = _rmarkdown_output(opts, doc_path) + partials.check(opts)
    printed = partials.variables(opts)     # front-matter keys a deck's own partial prints
    for key, value in opts.items():
        spec = schema.DOCUMENT_OPTIONS.get(key)
        if spec is None and key in printed:
            continue
        if spec is None:
            warnings.append(DeckWarning(f"option '{key}' is not implemented by deckbuild and "
                                        "is ignored", *_where(opts, key, doc_path)))
        elif value is not None and key not in schema.PATH_OPTIONS and not spec.type.check(value):
            raise DeckError(f"option '{key}' must be {spec.type.expected}, got {value!r}",
                            *_where(opts, key, doc_path))
    if isinstance(opts.get("menu"), dict):
        warnings.append(DeckWarning("menu settings other than true or false are not implemented "
                                    "by deckbuild (its menu lists slides only)",
                                    *_where(opts, "menu", doc_path)))
    return warnings + mathmethod.check(opts, doc_path)


def _rmarkdown_output(opts: Options, doc_path: Path) -> list[DeckWarning]:
    """``output: revealjs`` (R Markdown's output format, a string or a mapping): Quarto's
    schema accepts it for compatibility (src/resources/schema/cell-textoutput.yml) and it
    has no effect; deckbuild warns and keeps the default (cell output shown)."""
    value = opts.get("output")
    if not (isinstance(value, dict) or (isinstance(value, str) and value != "asis")):
        return []
    opts["output"] = schema.DOCUMENT_OPTIONS["output"].default
    return [DeckWarning(f"'output: {value}' looks like R Markdown's output format: Quarto "
                        "accepts it for compatibility and ignores it, and so does deckbuild "
                        "(cell outputs are shown)", *_where(opts, "output", doc_path))]


@functools.lru_cache(maxsize=1)
def known_formats() -> frozenset[str]:
    """pandoc's output formats plus the ones Quarto adds."""
    from .pandoc import pandoc_path

    proc = subprocess.run([pandoc_path(), "--list-output-formats"], capture_output=True, text=True)
    return frozenset(proc.stdout.split()) | set(schema.QUARTO_FORMATS)


def check_formats(opts: Options) -> list[DeckWarning]:
    """Other formats than revealjs are not rendered; a name no format has is an error,
    matched the way Quarto's schema does (``^(.+-)?NAME([-+].+)?$``, so ``acme-html``
    and ``html+foo`` are valid; src/core/lib/yaml-schema/front-matter.ts)."""
    warnings = []
    for name, file, line in opts.other_formats:
        if not any(re.fullmatch(rf"(.+-)?{re.escape(f)}([-+].+)?", name) for f in known_formats()):
            raise DeckError(f"{name} is not a valid output format", file, line)
        warnings.append(DeckWarning(f"format '{name}' is not rendered by deckbuild "
                                    "(only revealjs)", file, line))
    return warnings


def _classes_of(text: str) -> list[str]:
    text = INLINE_MATH_RE.sub("", INLINE_CODE_RE.sub("", text))
    m = DIV_BARE_CLASS_RE.match(text)
    if m:
        return [m.group(1)]
    return [c for attrs in ATTR_RE.findall(text) for c in CLASS_RE.findall(attrs)]


def _markdown_classes(block: Markdown):
    """(class, line) for every class written in a markdown block; code, HTML comments and
    math skipped."""
    scanner, in_math = Scanner(), False
    for line in block.lines:
        text = scanner.visible(line.text)
        if not text:
            continue
        if text.count("$$") % 2:
            in_math = not in_math
        if not in_math:
            for name in _classes_of(text):
                yield name, line


def _cell_classes(cell: Cell):
    classes = cell.options.get("classes") or []
    for name in classes.split() if isinstance(classes, str) else classes:
        yield name.lstrip("."), cell


def check_classes(doc: Document, css: str) -> list[DeckWarning]:
    """A warning for every class nothing gives a meaning to (see the module docstring)."""
    def implemented(name: str) -> bool:
        if name in schema.UNIMPLEMENTED_CLASSES:
            return False
        return (name in schema.IMPLEMENTED_CLASSES
                or re.search(rf"\.{re.escape(name)}(?![\w-])", css) is not None)

    warnings, seen = [], set()
    for block in doc.blocks:
        found = _cell_classes(block) if isinstance(block, Cell) else _markdown_classes(block)
        for name, at in found:
            key = (name, str(at.file), getattr(at, "lineno", getattr(at, "line", None)))
            if key in seen or implemented(name):
                continue
            seen.add(key)
            warnings.append(DeckWarning(
                f"class '.{name}' is not implemented by deckbuild, reveal.js or the theme",
                at.file, key[2]))
    return warnings


FIG_LABEL_RE = re.compile(r"\{[^{}]*#(fig-[\w-]+)")
FIG_REF_RE = re.compile(r"(?<![\w.@])@([Ff]ig-[\w-]*\w)")


def _text_lines(block: Markdown):
    """Lines of a markdown block outside fenced code and HTML comments, with inline code
    removed."""
    scanner = Scanner()
    for line in block.lines:
        text = scanner.visible(line.text)
        if text:
            yield line, INLINE_CODE_RE.sub("", text)


def check_crossrefs(doc: Document) -> list[DeckWarning]:
    """Every ``@fig-`` reference names a figure label, and no label is used twice
    (Quarto warns "Unable to resolve crossref @fig-..." and prints ?@fig-...;
    src/resources/filters/crossref/refs.lua)."""
    labels: dict[str, tuple] = {}
    refs, warnings = [], []

    def define(label, file, line):
        if label in labels:
            warnings.append(DeckWarning(f"figure label {label} is used twice (first at "
                                        f"{labels[label][0]}:{labels[label][1]})", file, line))
        labels.setdefault(label, (file, line))

    for block in doc.blocks:
        if isinstance(block, Cell):
            if str(block.options.get("label", "")).startswith("fig-"):
                define(block.options["label"], block.file, block.line)
            continue
        for line, text in _text_lines(block):
            for label in FIG_LABEL_RE.findall(text):
                define(label, line.file, line.lineno)
            refs += [(ref, line) for ref in FIG_REF_RE.findall(text)]
    for ref, line in refs:
        if ref[0].lower() + ref[1:] not in labels:
            warnings.append(DeckWarning(f"cross-reference @{ref} names no figure (Quarto prints "
                                        f"?@{ref})", line.file, line.lineno))
    return warnings
