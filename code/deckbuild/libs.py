"""Where the HTML finds reveal.js, KaTeX, the theme and the deck's own files.

With ``embed-resources: true`` pandoc embeds them all (``--embed-resources``) and the
deck is one file. Without it (Quarto's default) the deck is written as Quarto writes
it: the HTML links ``<name>_files/libs/...`` (reveal.js, KaTeX, the compiled theme as
``revealjs/dist/theme/quarto.css``) and ``<name>_files/figure-revealjs/`` (the cells'
figures), copied beside it; the images, stylesheets and logo the deck names are copied
into the output folder at their place in the project (as Quarto copies a project's
resources), and remote addresses stay links.

The ``<name>_files`` folder is assembled under a temporary name and swapped in whole
(:func:`swap_in`); the old one comes back if the build fails before the HTML is replaced.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import DeckWarning
from .mathmethod import math_method
from .resources import node_package

REVEAL_FILES = ("dist/reset.css", "dist/reveal.css", "dist/reveal.js")
REVEAL_PLUGINS = ("notes", "search", "zoom")
KATEX_FILES = ("katex.min.js", "katex.min.css")
CSS_URL_RE = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")


@dataclass
class Layout:
    """The addresses pandoc writes into the HTML."""

    embed: bool
    reveal: str                      # revealjs-url
    katex: str                       # the folder of katex.min.js, ending in "/"
    css: list[str]                   # the compiled theme, then the deck's stylesheets
    logo: str | None = None
    files_dir: Path | None = None    # the partial <name>_files folder (libs only)
    warnings: list[DeckWarning] = field(default_factory=list)


def is_remote(ref: str) -> bool:
    return re.match(r"^(https?:)?//", ref) is not None


def embedded(css: Path, opts: dict, node_modules: Path) -> Layout:
    """Everything from where it is; pandoc embeds it."""
    katex = node_package(node_modules, "katex") / "dist"
    return Layout(True, node_package(node_modules, "reveal.js").as_posix(),
                  f"{katex.as_posix()}/", [str(css), *(opts.get("css") or [])], opts.get("logo"))


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dest)


def _theme_css(css: Path, dest: Path) -> None:
    """The compiled theme at ``dest``; the local files its ``url()``s name (fonts) copied
    into ``assets/`` beside it and the ``url()``s pointed there."""
    text = css.read_text(encoding="utf-8")

    def local(m: re.Match) -> str:
        ref = m.group(2)
        if ref.startswith(("data:", "#")) or is_remote(ref):
            return m.group(0)
        path = (css.parent / ref.split("?")[0].split("#")[0]).resolve()
        if not path.is_file():
            return m.group(0)
        _copy(path, dest.parent / "assets" / path.name)
        return f'url("assets/{path.name}")'

    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(CSS_URL_RE.sub(local, text), encoding="utf-8")


def copy_resource(src: Path, dest: Path) -> None:
    """A file a page loads, copied to ``dest``; a stylesheet with the local files its
    ``url()``s name (fonts) copied into ``assets/`` beside it, as :func:`_theme_css`."""
    if src.suffix.lower() == ".css":
        _theme_css(src, dest)
    else:
        _copy(src, dest)


def _libraries(libs: Path, css: Path, node_modules: Path, work_files: Path, math: str) -> None:
    """reveal.js (and its math plugin for MathJax), the theme, KaTeX (for katex) and the
    cells' figures, into the partial folder."""
    reveal = node_package(node_modules, "reveal.js")
    for name in REVEAL_FILES:
        _copy(reveal / name, libs / "revealjs" / name)
    for plugin in REVEAL_PLUGINS + (("math",) if math == "mathjax" else ()):
        script = Path("plugin") / plugin / f"{plugin}.js"
        _copy(reveal / script, libs / "revealjs" / script)
    _theme_css(css, libs / "revealjs" / "dist" / "theme" / "quarto.css")
    if math == "katex":
        katex = node_package(node_modules, "katex") / "dist"
        for name in (*KATEX_FILES, "fonts"):
            _copy(katex / name, libs / "katex" / name)
    if work_files.is_dir():     # the cells' figures, written beside the markdown
        for item in work_files.iterdir():
            _copy(item, libs.parent / item.name)


@dataclass
class Place:
    """Where the deck's HTML goes and where its project's files go."""

    html: Path           # the final HTML
    source_root: Path    # the project root (the document's folder without a project)
    output_root: Path    # the output folder that mirrors source_root


def _link(place: Place, path: Path) -> tuple[str, Path | None]:
    """The address of a deck's own file as the HTML links it, and where it must be
    copied (None: already there, or outside the project and left where it is)."""
    path = Path(path).resolve()
    root, out = place.source_root.resolve(), place.output_root.resolve()
    dest = out / path.relative_to(root) if path.is_relative_to(root) else path
    link = Path(os.path.relpath(dest, place.html.parent)).as_posix()
    return link, (None if dest == path else dest)


def linked(css: Path, opts: dict, node_modules: Path, place: Place, deck_files: list[Path],
           work_files: Path) -> Layout:
    """The libraries assembled in a new partial ``<name>_files`` folder beside the HTML,
    the deck's own files copied into the output folder, and the addresses to them."""
    final = place.html.with_name(f"{place.html.stem}_files")
    for stale in final.parent.glob(f".{final.name}.*.partial"):
        shutil.rmtree(stale, ignore_errors=True)
    partial = final.with_name(f".{final.name}.{os.urandom(6).hex()}.partial")
    _libraries(partial / "libs", css, node_modules, work_files, math_method(opts).method)
    prefix = f"{final.name}/libs"
    layout = Layout(False, f"{prefix}/revealjs", f"{prefix}/katex/",
                    [f"{prefix}/revealjs/dist/theme/quarto.css"], files_dir=partial)
    for path in [*(opts.get("css") or []), *deck_files]:
        if is_remote(str(path)):       # a remote stylesheet stays a link
            layout.css.append(str(path))
            continue
        link, dest = _link(place, Path(path))
        if dest is not None:
            _copy(Path(path), dest)
        if str(path) in (opts.get("css") or []):
            layout.css.append(link)
    logo = opts.get("logo")
    if logo and not is_remote(logo) and Path(logo).is_absolute():   # missing: linked as written
        link, dest = _link(place, Path(logo))
        if dest is not None:
            _copy(Path(logo), dest)
        logo = link
    layout.logo = logo
    return layout


# the addresses of files a page loads: src, data-src (reveal.js's lazy loading), poster,
# data-background-image / -video, and stylesheet links
PAGE_REF_RE = re.compile(r"""\b(?:src|data-src|poster|data-background-image|data-background-video|href)\s*=\s*["']([^"'#?]+)""")


def copy_page_files(html: str, html_path: Path, doc_dir: Path) -> list[Path]:
    """The local files a linked page names that are not beside it yet, copied from the
    document's folder to the same place beside the page, as Quarto copies the resources it
    finds in its output (an extension filter's image: reveal-header's logo). Returns them."""
    copied = []
    for ref in dict.fromkeys(PAGE_REF_RE.findall(html)):
        if is_remote(ref) or re.match(r"^[a-z][a-z0-9+.-]*:", ref, re.I) or ref.startswith("/"):
            continue
        rel = urllib.parse.unquote(ref)
        src, dest = (doc_dir / rel).resolve(), (html_path.parent / rel).resolve()
        if src == dest or dest.exists() or not src.is_file() or not src.is_relative_to(doc_dir.resolve()):
            continue
        _copy(src, dest)
        copied.append(dest)
    return copied


@contextlib.contextmanager
def swap_in(layout: Layout, html: Path) -> Iterator[None]:
    """Put the partial ``<name>_files`` folder in place for the body (the PDF is printed
    from it); if the body fails, the old folder comes back."""
    if layout.embed or layout.files_dir is None:
        yield
        return
    final = html.with_name(f"{html.stem}_files")
    old = final.with_name(f".{final.name}.{os.urandom(6).hex()}.old")
    had_old = final.exists()
    if had_old:
        os.replace(final, old)
    os.replace(layout.files_dir, final)
    try:
        yield
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)
        if had_old:
            os.replace(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def discard(layout: Layout) -> None:
    """Remove a partial folder that was never swapped in."""
    if layout.files_dir is not None and layout.files_dir.exists():
        shutil.rmtree(layout.files_dir, ignore_errors=True)
