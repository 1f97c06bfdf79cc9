"""Stage 4: compile the theme with dart-sass, layered the way Quarto layers it.

``theme: [default, custom_lab.scss]``: each user file is split at its
``/*-- scss:uses|functions|defaults|mixins|rules --*/`` markers and assembled as
user uses and functions, user defaults (later files first, so they win over earlier
ones), deckbuild's base defaults, user mixins, deckbuild's base rules, user rules (in
order). A built-in theme name (``serif``, ``dark``...) is a user layer of our own
(``resources/theme/builtin/``) at its place in the list, as Quarto layers its themes.
The options Quarto turns into theme variables (``mainfont``, ``monofont``) are the first
user layer, as in Quarto (so any theme file's value wins over them).
With ``deckbuild: quarto-version`` set to an older release, the rules that release drew
differently (VERSION_LAYERS) come after the base rules and before the user rules, so a
deck's own rules still win over them, as under that Quarto.
The compiled CSS is cached by a hash of the assembled source; its file name also holds
the hash of its content, checked on every read (a damaged file is compiled again).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .errors import DeckError, DeckWarning
from .files import read_source
from .resources import BUILTIN_THEMES_DIR, THEME, node_package

# A section marker exactly as Quarto reads it (src/core/sass.ts, layoutBoundary): alone on
# its line, no space before it, spaces or tabs only inside.
SECTION_RE = re.compile(r"^/\*--[ \t]*scss:(uses|functions|defaults|mixins|rules)[ \t]*--\*/$")
# what an author may have meant as a marker (reported when Quarto would not read it)
NEAR_MARKER_RE = re.compile(r"^\s*/\*\s*-*\s*scss\s*:\s*\w+\s*-*\s*\*/\s*$", re.I)
SECTIONS = ("uses", "functions", "defaults", "mixins", "rules")
# Quarto's aliases for reveal.js theme names (src/format/reveal/format-reveal-theme.ts)
THEME_ALIASES = {"white": "default", "black": "dark"}


@dataclass
class Piece:
    text: str
    file: Path
    first_line: int


# a url() in a theme file: a font or image it names
THEME_URL_RE = re.compile(r"""url\(\s*(['"]?)([^'")#{}$]+?)\1\s*\)""")


def local_urls(text: str, folder: Path) -> str:
    """A theme file's ``url()``s of files beside it (its own fonts: ``@font-face { src:
    url(fonts/x.woff2) }``) made absolute, so the deck loads them wherever the compiled CSS
    lives (libs.py copies them beside a linked deck, pandoc embeds them); addresses that
    name no file there, remote ones and data: URLs are left as written."""
    def absolute(m: re.Match) -> str:
        ref = m.group(2).strip()
        if re.match(r"^([a-z][a-z0-9+.-]*:|//|/)", ref, re.I):
            return m.group(0)
        path = (folder / ref.split("?")[0]).resolve()
        return f'url("{path.as_posix()}")' if path.is_file() else m.group(0)
    return THEME_URL_RE.sub(absolute, text)


def split_layers(path: Path, warnings: list | None = None) -> dict[str, list[Piece]]:
    """A theme file's sections, as Quarto splits it: lines before the first marker belong
    to ``defaults``; the file needs one marker at least. A line that looks like a marker
    but is not one to Quarto stays in its section, with a warning."""
    layers: dict[str, list[Piece]] = {s: [] for s in SECTIONS}
    current, buf, start, markers = "defaults", [], 1, 0
    lines = re.split(r"\r?\n", local_urls(read_source(path), path.parent))
    if lines and lines[-1] == "":
        lines.pop()      # the newline ending the last line
    for i, line in enumerate(lines, start=1):
        m = SECTION_RE.match(line)
        if m:
            if buf:
                layers[current].append(Piece("\n".join(buf), path, start))
            current, buf, start, markers = m.group(1), [], i + 1, markers + 1
            continue
        if NEAR_MARKER_RE.match(line) and warnings is not None:
            warnings.append(DeckWarning(
                f"'{line.strip()}' is not a section marker to Quarto (it must read exactly "
                "/*-- scss:NAME --*/ alone on its line); its lines stay in the "
                f"{current} section", path, i))
        buf.append(line)
    if buf:
        layers[current].append(Piece("\n".join(buf), path, start))
    if not markers:
        raise DeckError("theme file has no section marker: Quarto needs at least one line "
                        "/*-- scss:defaults --*/, /*-- scss:rules --*/, /*-- scss:mixins --*/, "
                        "/*-- scss:functions --*/ or /*-- scss:uses --*/", path, 1)
    return layers


# deckbuild's base rules, in order: the theme's rules, the slide body's layout (figures,
# panels, tables, callouts), then asides, footnotes, references
BASE_RULES = ("_rules.scss", "_layout.scss", "_notes.scss")


# Quarto's revealjs rules that changed (quarto-cli's history of
# src/resources/formats/revealjs/quarto.scss, and the compiled CSS of decks rendered by
# older releases): (the first release with the newest rules, our layer of the older ones).
VERSION_LAYERS = (((1, 6), "_before-1.6.scss"), ((1, 6, 27), "_before-1.6.27.scss"))


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"1.5.57"`` as (1, 5, 57); None for ``"current"`` (the newest)."""
    return None if text == "current" else tuple(int(x) for x in text.split("."))


def version_layers(quarto_version: str) -> list[Piece]:
    """The rule layers of that Quarto release where it differs from the newest (none for
    ``current`` or a release with the newest rules)."""
    version = parse_version(quarto_version)
    folder = THEME / "versions"
    return [Piece((folder / name).read_text(), folder / name, 1)
            for first, name in VERSION_LAYERS if version is not None and version < first]


def builtin_theme(name: str) -> Path | None:
    """The file of a built-in theme (None for ``default``, which is the base layer, and for
    ``brand``, the place of the brand's layer)."""
    name = THEME_ALIASES.get(name, name)
    return None if name in ("default", "brand") else BUILTIN_THEMES_DIR / f"{name}.scss"


def assemble(themes: list[str], warnings: list | None = None,
             variables: Piece | None = None, quarto_version: str = "current",
             brand_layer: dict[str, Piece] | None = None) -> list[Piece]:
    """The theme's pieces in Quarto's order (src/core/sass.ts, compileSass): every layer's
    uses and functions, the user defaults (later themes first, so they win), the base
    defaults, user mixins, base rules (BASE_RULES, in order), user rules. A built-in theme
    is a user layer at its place in the list, as in Quarto. ``variables``
    (:func:`option_variables`) is the first user layer, as Quarto places the variables it
    takes from the document's options: its defaults come after every theme file's, so a
    theme file's value wins over them. ``quarto_version``: an older release's rules
    (:func:`version_layers`) follow the base rules. ``brand_layer``: the brand's sections
    (:func:`brand_pieces`), a user layer where the theme list says ``brand``, else before
    the first (as Quarto places it: the theme files' values win over the brand's)."""
    files = [Path(t) if Path(t).is_absolute() else builtin_theme(t) for t in themes]
    user = [split_layers(f, warnings) for f in files if f is not None]
    if brand_layer:
        layer = {s: [brand_layer[s]] if s in brand_layer else [] for s in SECTIONS}
        at = sum(1 for f in files[:themes.index("brand")] if f is not None) if "brand" in themes else 0
        user.insert(at, layer)
    base = THEME
    pieces: list[Piece] = []
    for section in ("uses", "functions"):
        for layers in user:
            pieces += layers[section]
    for layers in reversed(user):
        pieces += layers["defaults"]
    if variables is not None:
        pieces.append(variables)
    pieces.append(Piece((base / "_defaults.scss").read_text(), base / "_defaults.scss", 1))
    for layers in user:
        pieces += layers["mixins"]
    for name in BASE_RULES:
        pieces.append(Piece((base / name).read_text(), base / name, 1))
    pieces += version_layers(quarto_version)
    for layers in user:
        pieces += layers["rules"]
    return pieces


# The fonts Quarto's themes load come with reveal.js (dist/theme/fonts): Source Sans Pro
# for every theme, League Gothic for beige, league, moon and solarized.
FONT_PACKAGE = "reveal.js"
FONT_FOLDER = ("dist", "theme", "fonts")


# Document options Quarto turns into theme variables (src/format/reveal/format-reveal-theme.ts,
# pandocVariablesToRevealDefaults): option -> (variable, whether its value is a font list)
OPTION_VARIABLES = {
    "mainfont": ("font-family-sans-serif", True),
    "monofont": ("font-family-monospace", True),
    "monobackgroundcolor": ("code-block-bg", False),
    "code-block-height": ("code-block-height", False),
}


def css_font_list(value: str) -> str:
    """A font option as CSS names it, as Quarto's asCssFont: the comma-separated names
    trimmed, empty ones dropped, a name holding a space quoted unless already quoted."""
    names = [name.strip() for name in str(value).split(",")]
    return ", ".join(f'"{n}"' if " " in n and not n.startswith(("'", '"')) else n
                     for n in names if n)


def option_variables(opts: dict) -> Piece | None:
    """The theme variables the document's options set (``mainfont: CMU Bright`` sets
    ``$font-family-sans-serif: "CMU Bright" !default``, with no fallback font, as in
    Quarto); None when it sets none."""
    lines = []
    for option, (variable, font) in OPTION_VARIABLES.items():
        value = opts.get(option)
        if value not in (None, "", False):
            lines.append(f"${variable}: {css_font_list(value) if font else value} !default;")
    if not lines:
        return None
    return Piece("// the document's options\n" + "\n".join(lines), THEME / "_defaults.scss", 1)


def font_piece(node_modules: Path) -> Piece:
    """``$deckbuild-font-files``: reveal.js's fonts folder, which the @font-face rules of the
    base rules and the built-in themes point at (pandoc's --embed-resources inlines them)."""
    files = node_package(node_modules, FONT_PACKAGE).joinpath(*FONT_FOLDER)
    value = files.resolve().as_posix().replace('"', '\\"')
    return Piece(f'$deckbuild-font-files: "{value}";', THEME / "_defaults.scss", 1)


def sass_command(node_modules: Path) -> list[str]:
    sass_js = node_package(node_modules, "sass") / "sass.js"
    if not sass_js.exists():
        raise DeckError(f"dart-sass not found at {sass_js}: run `npm ci` (or `make deck-setup`)")
    return ["node", str(sass_js)]


def brand_pieces(sass: dict[str, str], file: Path) -> dict[str, Piece]:
    """A brand's theme sections (brand.Brand.sass) as pieces named after its file."""
    return {section: Piece(f"// the brand's {section}\n{text}", file, 1)
            for section, text in sass.items() if text}


def compile_theme(themes: list[str], node_modules: Path, cache_dir: Path,
                  damaged: Callable[[Path], None] | None = None,
                  warnings: list | None = None, opts: dict | None = None,
                  quarto_version: str = "current",
                  brand_layer: dict[str, Piece] | None = None) -> tuple[Path, bool]:
    """Return (path of the compiled CSS, whether it came from the cache). A cached CSS
    that is not what was written is passed to ``damaged`` and compiled again; warnings
    about the theme files go to ``warnings``; ``opts``: the document's options, for the
    theme variables some of them set (:func:`option_variables`); ``quarto_version``: the
    release whose rules to draw (:func:`version_layers`; part of the assembled source, so
    of the cache key)."""
    variables = option_variables(opts or {})
    pieces = [font_piece(node_modules), *assemble(themes, warnings, variables, quarto_version,
                                                  brand_layer)]
    text_parts, origin = [], []   # origin[i] = (piece, first line of piece in assembled file)
    line = 1
    for piece in pieces:
        header = f"// ---- {piece.file.name}"
        text_parts.append(header)
        line += 1
        origin.append((piece, line))
        text_parts.append(piece.text)
        line += piece.text.count("\n") + 1
    source = "\n".join(text_parts) + "\n"
    sass_js = node_modules / "sass" / "package.json"
    version = sass_js.read_text() if sass_js.exists() else ""
    key = hashlib.sha256((source + version).encode()).hexdigest()[:24]
    cached = cached_css(cache_dir, key, damaged)
    if cached is not None:
        return cached, True
    cache_dir.mkdir(parents=True, exist_ok=True)
    scss = cache_dir / f"theme-{key}.scss"
    scss.write_text(source)
    tmp = cache_dir / f"theme-{key}.tmp{os.getpid()}"
    proc = subprocess.run([*sass_command(node_modules), "--no-source-map", "--style=compressed",
                           "--quiet-deps", "--silence-deprecation=import,global-builtin,color-functions",
                           str(scss), str(tmp)], capture_output=True, text=True)
    if proc.returncode != 0:
        err = proc.stderr[proc.stderr.find("Error:"):] if "Error:" in proc.stderr else proc.stderr
        m = re.search(re.escape(scss.name) + r"\s+(\d+):(\d+)", err)
        file, lno = scss, None
        if m:
            at = int(m.group(1))
            for piece, first in origin:
                if first <= at < first + piece.text.count("\n") + 1:
                    file, lno = piece.file, piece.first_line + at - first
        msg = err.strip().splitlines()[0] if err.strip() else "sass failed"
        raise DeckError(f"theme does not compile: {msg}", file, lno, err.strip())
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    out = cache_dir / f"theme-{key}-{digest}.css"
    os.replace(tmp, out)
    return out, False


def cached_css(cache_dir: Path, key: str, damaged: Callable[[Path], None] | None) -> Path | None:
    """The compiled CSS cached for ``key``, or None. Each is named ``theme-<key>-<sha256 of
    its content>.css``; one whose content no longer has that hash (emptied, truncated,
    edited) is reported to ``damaged``, removed and not used, so the theme is compiled again."""
    for css in sorted(cache_dir.glob(f"theme-{key}-*.css")):
        expected = css.name[len(f"theme-{key}-"):-len(".css")]
        try:
            if hashlib.sha256(css.read_bytes()).hexdigest() == expected:
                return css
        except OSError:
            pass
        if damaged is not None:
            damaged(css)
        css.unlink(missing_ok=True)
    return None
