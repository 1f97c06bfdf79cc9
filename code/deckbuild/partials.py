"""Template partials: the title slide and the table-of-contents slide, and a deck's own.

deckbuild's template (resources/template.html) prints the title slide and the TOC slide
through pandoc partials, ``$title-slide.html()$`` and ``$toc-slide.html()$``, as Quarto's
revealjs template does. Which title slide: Quarto's default layout (authors in blocks
with their affiliations), or ``title-slide-style: pandoc`` for pandoc's plain one. A
deck's ``template-partials:`` files replace the partial of the same file name (Quarto
matches them by name); pandoc reads partials from the template's folder, so the
template and its partials are copied into the build's work folder first. A partial of
another name is never printed by the revealjs template: a warning says so.

A deck's partial may print variables Quarto passes to pandoc although no option of
deckbuild uses them (a ``logo1:`` or ``qrcode:`` of its own front matter):
``variables()`` names them, so they reach pandoc's metadata and are not reported as
options deckbuild ignores.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .errors import DeckWarning
from .resources import RESOURCES, TEMPLATE

PARTIALS = RESOURCES / "partials"
NAMES = ("title-slide.html", "toc-slide.html")
# $name$, $if(name)$, $for(name)$, $name.field$, $name/pipe$, ${name}
VARIABLE_RE = re.compile(r"\$\{?(?:(?:if|elseif|for)\()?([A-Za-z][\w-]*)")
KEYWORDS = {"if", "elseif", "else", "endif", "for", "endfor", "sep", "it", "idprefix"}


def user_partials(opts: dict) -> list[Path]:
    value = opts.get("template-partials") or []
    return [Path(p) for p in ([value] if isinstance(value, str) else value)]


def variables(opts: dict) -> set[str]:
    """The top-level variables the deck's own partials print."""
    names: set[str] = set()
    for path in user_partials(opts):
        if path.name in NAMES and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            names |= {m.group(1) for m in VARIABLE_RE.finditer(text)} - KEYWORDS
    return names


def check(opts: dict) -> list[DeckWarning]:
    """A warning for every partial that the revealjs template never prints."""
    origin = getattr(opts, "origin", lambda key: (None, None))
    return [DeckWarning(f"template partial {path.name} is not one the revealjs template "
                        f"prints ({', '.join(NAMES)}), so it is not used",
                        *origin("template-partials"))
            for path in user_partials(opts) if path.name not in NAMES]


def prepare(opts: dict, work_dir: Path) -> Path:
    """Copy the template and its partials (the deck's own where it has them) into
    ``work_dir/template/``; return the template's path there."""
    folder = work_dir / "template"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(TEMPLATE, folder / TEMPLATE.name)
    title = "title-slide-pandoc.html" if opts.get("title-slide-style") == "pandoc" else "title-slide.html"
    chosen = {"title-slide.html": PARTIALS / title, "toc-slide.html": PARTIALS / "toc-slide.html"}
    for path in user_partials(opts):
        if path.name in chosen:
            chosen[path.name] = path
    for name, path in chosen.items():
        shutil.copyfile(path, folder / name)
    return folder / TEMPLATE.name
