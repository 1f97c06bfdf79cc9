"""Every option deckbuild understands, as data: its type, its default and its role.

One table for the document options of Quarto's ``revealjs`` format that this renderer
implements (with Quarto's defaults), one for the cell options (``#|`` lines), one for our
own project options under ``deckbuild:`` in ``_quarto.yml``. Every other module reads
these tables; none keeps its own defaults.

Types follow Quarto's option schema (src/resources/schema/*.yml in quarto-cli), so a
value Quarto would reject is rejected here too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Type:
    """A check of an option's value and the words an error message uses for it."""

    check: Callable[[Any], bool]
    expected: str

    def __or__(self, other: "Type") -> "Type":
        return Type(lambda v: self.check(v) or other.check(v),
                    f"{self.expected} or {other.expected}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


BOOL = Type(lambda v: isinstance(v, bool), "true or false")
NUMBER = Type(_is_number, "a number")
POSITIVE = Type(lambda v: _is_number(v) and v > 0, "a positive number")
STRING = Type(lambda v: isinstance(v, str), "a string")
STRINGS = Type(lambda v: isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
               "a string or a list of strings")
ANY = Type(lambda v: True, "any value")
MAPPING = Type(lambda v: isinstance(v, dict), "a mapping")


def one_of(*values: Any) -> Type:
    shown = ", ".join("null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
                      for v in values)
    return Type(lambda v: any(v == x and type(v) is type(x) for x in values), f"one of {shown}")


LINE_SPEC = Type(lambda v: isinstance(v, (str, int)) and not isinstance(v, bool)
                 and re.fullmatch(r"[\d,\-\s|]+", str(v)) is not None,
                 'line ranges like "1,3|5-6"')
LABEL = Type(lambda v: isinstance(v, str) and re.fullmatch(r"[\w-]+", v) is not None,
             "a name of letters, digits, - and _")
MATH_METHODS = ("plain", "webtex", "gladtex", "mathml", "mathjax", "katex")
MATH_METHOD = one_of(*MATH_METHODS)
MATH_METHOD_MAPPING = Type(lambda v: isinstance(v, dict) and MATH_METHOD.check(v.get("method"))
                           and set(v) <= {"method", "url"}
                           and isinstance(v.get("url", ""), str),
                           "a mapping {method: one of those, url: a string}")
OUTPUT_LOCATION = one_of("default", "fragment", "column", "column-fragment", "slide")
FIG_FORMAT = one_of("retina", "png", "jpeg", "svg")


@dataclass(frozen=True)
class Option:
    """One option: its type, its default (None: unset), and where it goes.

    role: ``execute`` (document-wide default of a cell option, also under ``execute:``),
    ``reveal`` (passed to ``Reveal.initialize``, camelCase), ``render`` (read by the
    renderer), ``meta`` (text for pandoc's template: title, footer...).
    """

    type: Type
    default: Any = None
    role: str = "render"


# Document options of the revealjs format that deckbuild implements, with Quarto's
# defaults for revealjs (src/format/reveal/format-reveal.ts, src/resources/schema/).
DOCUMENT_OPTIONS: dict[str, Option] = {
    # execution (cells inherit these; `execute:` may hold them too)
    "echo": Option(BOOL | one_of("fenced"), False, "execute"),
    "eval": Option(BOOL, True, "execute"),
    "output": Option(BOOL | one_of("asis"), True, "execute"),
    "include": Option(BOOL, True, "execute"),
    "error": Option(BOOL, False, "execute"),
    "warning": Option(BOOL, False, "execute"),
    "fig-width": Option(POSITIVE, 10, "execute"),
    "fig-height": Option(POSITIVE, 5, "execute"),
    "fig-dpi": Option(POSITIVE, 96, "execute"),
    "fig-format": Option(FIG_FORMAT, "retina", "execute"),
    "code-line-numbers": Option(BOOL | LINE_SPEC, True, "execute"),
    "output-location": Option(OUTPUT_LOCATION, "default", "execute"),
    # rendering
    "slide-level": Option(one_of(1, 2, 3, 4, 5, 6), 2),
    "incremental": Option(BOOL, False),
    "smaller": Option(BOOL, False),
    "scrollable": Option(BOOL, False),
    # Quarto's math methods, or {method: ..., url: ...}; unset: MathJax (Quarto's revealjs
    # default). gladtex is refused in strict.py (it needs a program run on the output).
    "html-math-method": Option(MATH_METHOD | MATH_METHOD_MAPPING),
    "embed-resources": Option(BOOL, False),
    "self-contained-math": Option(BOOL, False),
    "theme": Option(STRINGS, ["default"]),
    "css": Option(STRINGS),
    "logo": Option(STRING),
    "title": Option(STRING, None, "meta"),
    "subtitle": Option(STRING, None, "meta"),
    "author": Option(ANY, None, "meta"),
    "date": Option(ANY, None, "meta"),
    "institute": Option(ANY, None, "meta"),
    "abstract": Option(STRING, None, "meta"),
    "lang": Option(STRING, None, "meta"),
    "pagetitle": Option(STRING, None, "meta"),
    "footer": Option(STRING, None, "meta"),
    "menu": Option(BOOL | MAPPING, True),   # the slide menu's button (M works either way)
    # pandoc's reader and its extensions (markdown+emoji), as Quarto passes them on
    "from": Option(STRING),
    # _brand.yml's colours, fonts and logo (brand.py): a file, a mapping, or false
    "brand": Option(STRING | MAPPING | one_of(False)),
    # Lua filters and shortcodes (files, or extensions by name) and reveal.js plugins from
    # extensions, run as Quarto runs them (extensions.lua_plan, filters/extensions.lua)
    "filters": Option(Type(lambda v: isinstance(v, list), "a list of Lua files or extension names")),
    "shortcodes": Option(STRINGS),
    "revealjs-plugins": Option(STRINGS),
    "reader": Option(STRING),
    # where a figure's caption goes: below (Quarto's default), above, or beside it
    "fig-cap-location": Option(one_of("top", "bottom", "margin")),
    # fonts: theme variables, as Quarto sets them (theme.option_variables)
    "mainfont": Option(STRING),
    "monofont": Option(STRING),
    # code blocks: theme variables too (their background, the height past which they scroll)
    "monobackgroundcolor": Option(STRING),
    "code-block-height": Option(STRING | NUMBER),
    # citations (pandoc --citeproc) and footnotes (resources/notes.js); citation-location
    # has no effect on revealjs in Quarto (its margin citations are for html and pdf)
    "bibliography": Option(STRINGS),
    "csl": Option(STRING),
    "nocite": Option(ANY, None, "meta"),
    "link-citations": Option(BOOL, True),
    "citation-location": Option(one_of("document", "margin")),
    "reference-location": Option(one_of("document", "section", "block", "margin")),
    "title-slide-attributes": Option(MAPPING, None, "meta"),
    # the title slide and the TOC slide (titleblock.py, partials.py, dates.py)
    "authors": Option(ANY),                 # Quarto prefers it to `author`
    "affiliations": Option(ANY),            # what `affiliations: [{ref: id}]` points at
    "date-format": Option(STRING),          # unset: iso (YYYY-MM-DD)
    "title-slide-style": Option(one_of("default", "pandoc"), "default"),
    "template-partials": Option(STRINGS),   # title-slide.html / toc-slide.html of the deck's own
    "toc": Option(BOOL, False),
    "toc-depth": Option(POSITIVE, 3),
    "toc-title": Option(STRING, None, "meta"),
    # Quarto's revealjs page defaults, applied in the browser by resources/defaults.js
    "auto-stretch": Option(BOOL, True),
    "center-title-slide": Option(BOOL, True),
    "code-copy": Option(BOOL | one_of("hover"), "hover"),
    "callout-appearance": Option(one_of("default", "simple", "minimal"), "default"),
    "callout-icon": Option(BOOL, True),
    # reveal.js configuration, as Quarto sets it for revealjs
    "width": Option(NUMBER | STRING, 1050, "reveal"),
    "height": Option(NUMBER | STRING, 700, "reveal"),
    "margin": Option(NUMBER, 0.1, "reveal"),
    "min-scale": Option(NUMBER, 0.2, "reveal"),
    "max-scale": Option(NUMBER, 2.0, "reveal"),
    "center": Option(BOOL, False, "reveal"),
    "transition": Option(one_of("none", "fade", "slide", "convex", "concave", "zoom"), "none", "reveal"),
    "background-transition": Option(one_of("none", "fade", "slide", "convex", "concave", "zoom"),
                                    "none", "reveal"),
    "transition-speed": Option(one_of("default", "fast", "slow"), "default", "reveal"),
    "hash": Option(BOOL, True, "reveal"),
    "hash-one-based-index": Option(BOOL, False, "reveal"),
    "history": Option(BOOL, True, "reveal"),
    "navigation-mode": Option(one_of("linear", "vertical", "grid"), "linear", "reveal"),
    # "auto": shown only when embedded in a page or when vertical slides are reachable
    "controls": Option(BOOL | one_of("auto"), "auto", "reveal"),
    "controls-tutorial": Option(BOOL, False, "reveal"),
    "controls-layout": Option(one_of("edges", "bottom-right"), "edges", "reveal"),
    "controls-back-arrows": Option(one_of("faded", "hidden", "visible"), "faded", "reveal"),
    "progress": Option(BOOL, True, "reveal"),
    "slide-number": Option(BOOL | one_of("h.v", "h/v", "c", "c/t"), False, "reveal"),
    "show-slide-number": Option(one_of("all", "print", "speaker"), "all", "reveal"),
    "keyboard": Option(BOOL, True, "reveal"),
    "overview": Option(BOOL, True, "reveal"),
    "touch": Option(BOOL, True, "reveal"),
    "loop": Option(BOOL, False, "reveal"),
    "rtl": Option(BOOL, False, "reveal"),
    "shuffle": Option(BOOL, False, "reveal"),
    "fragments": Option(BOOL, True, "reveal"),
    "fragment-in-url": Option(BOOL, False, "reveal"),
    "help": Option(BOOL, True, "reveal"),
    "pause": Option(BOOL, True, "reveal"),
    "show-notes": Option(BOOL | one_of("separate-page"), False, "reveal"),
    "auto-play-media": Option(one_of(None, True, False), None, "reveal"),
    "auto-slide": Option(NUMBER | one_of(False), 0, "reveal"),
    "auto-slide-stoppable": Option(BOOL, True, "reveal"),
    "mouse-wheel": Option(BOOL, False, "reveal"),
    "preview-links": Option(BOOL | one_of("auto"), False, "reveal"),
    "view-distance": Option(NUMBER, 3, "reveal"),
    "pdf-max-pages-per-slide": Option(NUMBER, 1, "reveal"),
    "pdf-separate-fragments": Option(BOOL, False, "reveal"),
    "pdf-page-height-offset": Option(NUMBER, -1, "reveal"),
    "hide-inactive-cursor": Option(BOOL, True, "reveal"),
    "hide-cursor-time": Option(NUMBER, 5000, "reveal"),
    # passed on as they are (no default: reveal.js's own, which Quarto keeps)
    "auto-animate": Option(BOOL, None, "reveal"),
    "auto-animate-easing": Option(STRING, None, "reveal"),
    "auto-animate-duration": Option(NUMBER, None, "reveal"),
    "auto-animate-unmatched": Option(BOOL, None, "reveal"),
    "auto-animate-styles": Option(STRINGS, None, "reveal"),
    "default-timing": Option(NUMBER, None, "reveal"),
    "disable-layout": Option(BOOL, None, "reveal"),
    "display": Option(STRING, None, "reveal"),
    "embedded": Option(BOOL, None, "reveal"),
    "jump-to-slide": Option(BOOL, None, "reveal"),
    "mobile-view-distance": Option(NUMBER, None, "reveal"),
    "preload-iframes": Option(one_of(None, True, False), None, "reveal"),
    "respond-to-hash-changes": Option(BOOL, None, "reveal"),
}

# camelCase spellings Quarto reads as reveal.js options (its template's variables: a
# document may write `slideNumber: true` for `slide-number: true`); reveal.js spells
# fragment-in-url fragmentInURL (src/format/reveal/metadata.ts)
CAMEL_EXCEPTIONS = {"fragment-in-url": "fragmentInURL"}


def camel(name: str) -> str:
    return CAMEL_EXCEPTIONS.get(name) or re.sub(r"-([a-z])", lambda m: m.group(1).upper(), name)

# Quarto's built-in shortcodes (https://quarto.org/docs/authoring/shortcodes.html): include
# is expanded by source.py, those of SHORTCODES_IN_LUA by resources/filters/extensions.lua
# (with the extensions' own shortcodes); the others are a warning and stay as written.
QUARTO_SHORTCODES = ("include", "meta", "var", "env", "pagebreak", "video", "embed", "lipsum",
                     "placeholder", "kbd", "version", "brand", "contents")
SHORTCODES_IN_LUA = ("meta", "var", "env", "pagebreak", "kbd", "version", "video")

# Output formats Quarto knows beyond pandoc's own (checked with `pandoc --list-output-formats`).
QUARTO_FORMATS = ("dashboard", "email", "confluence-html", "docusaurus-md", "hugo-md")

# Classes with a meaning without the theme: deckbuild's own markup and Lua filters,
# reveal.js (fragments, layout helpers) and pandoc (slides, lists, headings).
IMPLEMENTED_CLASSES = frozenset({
    # deckbuild (Quarto's markup for cells, callouts, columns, notes, slide variants)
    "cell", "cell-output", "cell-output-stdout", "cell-output-stderr", "cell-output-display",
    "cell-output-error", "callout", "callout-note", "callout-tip", "callout-warning",
    "callout-important", "callout-caution", "columns", "column", "notes", "smaller",
    "scrollable", "center", "aside", "footer", "absolute", "panel-tabset",
    # reveal.js: fragments and layout helpers
    "fragment", "fade-in", "fade-out", "fade-up", "fade-down", "fade-left", "fade-right",
    "fade-in-then-out", "fade-in-then-semi-out", "semi-fade-out", "current-visible", "grow",
    "shrink", "strike", "highlight-red", "highlight-green", "highlight-blue",
    "highlight-current-red", "highlight-current-green", "highlight-current-blue",
    "r-stretch", "r-fit-text", "r-stack", "r-hstack", "r-vstack", "r-frame", "stretch",
    "nostretch",
    # pandoc
    "incremental", "nonincremental", "unnumbered", "unlisted",
    # Quarto's conditional content (filters/conditional.lua)
    "content-visible", "content-hidden",
})
# Quarto features deckbuild does not implement, even where a theme happens to style the name.
UNIMPLEMENTED_CLASSES = frozenset({
    "column-page", "column-screen", "column-margin",
})

# Options that hold paths, resolved against the file that declares them.
PATH_OPTIONS = ("logo", "css", "theme", "template-partials", "bibliography", "csl")
# Quarto's other names for options
ALIASES = {"table-of-contents": "toc"}
# Quarto's built-in revealjs themes (resources/theme/builtin/; "default" is the base
# theme), with reveal.js's names white and black for default and dark
BUILTIN_THEMES = {"default", "dark", "beige", "blood", "dracula", "league", "moon", "night",
                  "serif", "simple", "sky", "solarized", "white", "black"}

# Cell options (`#|` lines) deckbuild implements. Cells inherit the `execute` options of
# the document (see DOCUMENT_OPTIONS); these have no document-wide value.
CELL_ONLY_OPTIONS: dict[str, Type] = {
    "label": LABEL,
    "classes": STRINGS,
    "fig-cap": STRING,
    "fig-alt": STRING,
}
# Figure options are document-wide for Jupyter: on a cell Quarto's schema tags them
# `engine: knitr` (src/resources/schema/cell-figure.yml), so they do nothing there.
FIGURE_OPTIONS = ("fig-width", "fig-height", "fig-dpi", "fig-format")
CELL_OPTIONS: dict[str, Type] = {
    **{name: opt.type for name, opt in DOCUMENT_OPTIONS.items()
       if opt.role == "execute" and name not in FIGURE_OPTIONS},
    **CELL_ONLY_OPTIONS,
}

# Our own project options, in `_quarto.yml` under `deckbuild:` (Quarto passes unknown
# top-level keys on as document metadata, which no template prints).
# Paths are relative to the project root.
DECKBUILD_NAMESPACE = "deckbuild"
QUARTO_VERSION = Type(lambda v: v == "current" or (
    isinstance(v, str) and re.fullmatch(r"\d+\.\d+(\.\d+)?", v) is not None),
    'current or a version such as "1.4.557"')
# the environment variable that is the default of `deckbuild: quarto-version`
QUARTO_VERSION_ENV = "DECKBUILD_QUARTO_VERSION"
# our own options a document's front matter may set under `deckbuild:` (over the project's)
DOCUMENT_DECKBUILD_OPTIONS = ("quarto-version",)
DECKBUILD_OPTIONS: dict[str, Option] = {
    # folders put on the kernel's PYTHONPATH, so cells import packages from the checkout
    "python-path": Option(STRINGS, [], "folders"),
    # folders whose source files (.py and package data) are part of every cell's cache key
    "cache-sources": Option(STRINGS, [], "folders"),
    # environment variables whose values are part of every cell's cache key, for settings
    # that change what cells compute without changing their code (ATEN_CPU_CAPABILITY: other
    # CPU kernels train other models), so a build under other values runs the cells again
    "cache-env": Option(STRINGS, [], "names"),
    # render as this Quarto release did ("current": the newest rules): its setup cell's
    # matplotlib set-up (kernel.setup_code) and its theme rules where they differ from the
    # newest (theme.VERSION_LAYERS). A document may set it too (DOCUMENT_DECKBUILD_OPTIONS);
    # $DECKBUILD_QUARTO_VERSION is the default.
    "quarto-version": Option(QUARTO_VERSION, "current", "value"),
    # chapters that run with no other kernel busy (they measure time), each file relative
    # to the project root
    "run-alone": Option(STRINGS, [], "files"),
    # seconds one cell may run before the build stops with an error naming it (false: no
    # limit). Quarto has no such option (its Jupyter engine waits for ever).
    "cell-timeout": Option(POSITIVE | one_of(False), 600, "value"),
}


def defaults() -> dict[str, Any]:
    """Quarto's revealjs defaults for every document option that has one."""
    return {name: opt.default for name, opt in DOCUMENT_OPTIONS.items() if opt.default is not None}


def names_with_role(role: str) -> list[str]:
    return [name for name, opt in DOCUMENT_OPTIONS.items() if opt.role == role]
