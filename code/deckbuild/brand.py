"""A project's ``_brand.yml`` (https://quarto.org/docs/authoring/brand.html), as Quarto's
revealjs format applies it (quarto-cli's src/core/sass/brand.ts, brandRevealSassLayers,
and src/format/reveal/format-reveal.ts for the logo):

- colours: each ``color.palette`` entry as ``$brand-<name>`` (and ``--brand-<name>`` in
  :root), each theme colour (foreground, background, primary, link...) as ``$<name>``, and
  the theme's own names mapped from them (``$body-bg`` from background, ``$body-color``
  from foreground, ``$link-color`` from link); a colour may name a palette entry or another
  theme colour;
- typography: ``base`` sets ``$mainFont`` (and the root size and line height), ``headings``
  the heading font, weight, line height and colour, ``monospace*`` the code fonts, ``link``
  the link colour; fonts from Google or Bunny are ``@import``ed from their CDN (the page
  needs the network for them, as under Quarto), ``source: file`` fonts get ``@font-face``
  rules pointing at the files;
- the logo: with no ``logo:`` option, the brand's small, medium or large logo (light mode)
  is the slide logo.

The brand is a layer of the theme before the deck's own theme files (their values win),
after the variables the document's options set. Quarto applies brands from 1.6.34 on; a
deck drawn as an older release gets none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import DeckError

FILES = ("_brand.yml", "_brand.yaml")
FIRST_RELEASE = (1, 6, 34)
# theme colour names a brand may set (quarto-cli's BrandNamedThemeColor)
THEME_COLORS = ("foreground", "background", "primary", "secondary", "tertiary", "success",
                "info", "warning", "danger", "light", "dark", "link")
# the theme's own variables Quarto maps from brand colours (defaultColorNameMap)
COLOR_NAMES = {"link-color": "link", "pre-color": "foreground", "body-bg": "background",
               "body-color": "foreground", "body-secondary-color": "secondary",
               "body-secondary": "secondary", "body-tertiary-color": "tertiary",
               "body-tertiary": "secondary"}
# typography entries and the variables they set (brandTypographyLayer, the revealjs and
# shared ones); more specific entries first, as Quarto writes them
TYPOGRAPHY = (
    ("link", (("color", "link-color"), ("background-color", "link-color-bg"),
              ("weight", "link-weight"), ("decoration", "link-decoration"))),
    ("monospace-block", (("family", "font-family-monospace-block"),
                         ("size", "code-block-font-size"),
                         ("weight", "font-weight-monospace-block"),
                         ("line-height", "code-block-line-height"),
                         ("color", "code-block-color"), ("background-color", "code-block-bg"))),
    ("monospace-inline", (("family", "font-family-monospace-inline"), ("color", "code-color"),
                          ("background-color", "code-bg"), ("size", "code-inline-font-size"),
                          ("weight", "font-weight-monospace-inline"))),
    ("monospace", (("family", "font-family-monospace"), ("size", "code-font-size"),
                   ("color", "code-color"), ("weight", "font-weight-monospace"),
                   ("size", "code-block-font-size"), ("color", "code-block-color"),
                   ("background-color", "code-bg"), ("background-color", "code-block-bg"))),
    ("headings", (("family", "presentation-heading-font"),
                  ("line-height", "presentation-heading-line-height"),
                  ("weight", "presentation-heading-font-weight"),
                  ("color", "presentation-heading-color"))),
    ("base", (("family", "mainFont"), ("size", "presentation-font-size-root"),
              ("line-height", "presentation-line-height"))),
)
WEIGHTS = {"thin": 100, "extra-light": 200, "ultra-light": 200, "light": 300, "normal": 400,
           "regular": 400, "medium": 500, "semi-bold": 600, "demi-bold": 600, "bold": 700,
           "extra-bold": 800, "ultra-bold": 800, "black": 900}


@dataclass
class Brand:
    data: dict
    folder: Path          # paths in the brand are relative to its file's folder
    file: Path

    def color(self, name: str) -> str:
        """A colour by name: a palette entry or theme colour, followed until a value."""
        color = self.data.get("color") or {}
        palette = color.get("palette") or {}
        seen = set()
        while name not in seen:
            seen.add(name)
            if name in palette:
                name = str(palette[name])
            elif name in THEME_COLORS and color.get(name):
                name = str(color[name])
            else:
                return name
        raise DeckError(f"circular colour names in the brand: {' -> '.join(seen)}", self.file)

    def sass(self) -> dict[str, str]:
        """The brand's theme layer: uses (font imports), defaults, rules."""
        defaults, rules, uses = [], [], []
        color = self.data.get("color") or {}
        if isinstance(color, dict) and color:
            rules.append(":root {")
            for key in color.get("palette") or {}:
                name = re.sub(r"[^a-zA-Z0-9_-]+", "-", str(key))
                defaults.append(f"$brand-{name}: {self.color(str(key))} !default;")
                rules.append(f"  --brand-{name}: {self.color(str(key))};")
            rules.append("}")
            defaults += [f"${key}: {self.color(str(key))} !default;" for key in color
                         if key != "palette"]
            for variable, name in COLOR_NAMES.items():
                value = self.color(name)
                if value != name:
                    defaults.append(f"${variable}: {value} !default;")
        typography = self.data.get("typography") or {}
        if isinstance(typography, dict):
            for font in typography.get("fonts") or []:
                uses.append(self._font_import(font))
            for kind, variables in TYPOGRAPHY:
                entry = typography.get(kind)
                if isinstance(entry, str):
                    entry = {"family": entry}
                if not isinstance(entry, dict):
                    continue
                for source, target in variables:
                    if entry.get(source):
                        value = entry[source]
                        if source in ("color", "background-color"):
                            value = self.color(str(value))
                        defaults.append(f"${target}: {value} !default;")
        return {"uses": "\n".join(u for u in uses if u), "defaults": "\n".join(defaults),
                "rules": "\n".join(rules) if len(rules) > 2 else ""}

    def _font_import(self, font) -> str:
        if not isinstance(font, dict) or not font.get("family"):
            return ""
        family = str(font["family"])
        source = font.get("source", "system")
        styles = font.get("style") or ["normal", "italic"]
        styles = [styles] if isinstance(styles, str) else styles
        weight = font.get("weight")
        weights = ([400, 700] if not weight else
                   [_weight(w) for w in (weight if isinstance(weight, list) else [weight])])
        display = font.get("display", "swap")
        if source == "google":
            if "italic" in styles:
                spec = "ital,wght@" + ";".join([f"0,{w}" for w in weights] + [f"1,{w}" for w in weights])
            else:
                spec = "wght@" + ("400;700" if not weight else ";".join(map(str, weights)))
            return (f"@import url('https://fonts.googleapis.com/css2?family="
                    f"{family.replace(' ', '+')}:{spec}&display={display}');")
        if source == "bunny":
            spec = ",".join(([f"{w}i" for w in weights] if "italic" in styles else []) + [str(w) for w in weights])
            return (f"@import url('https://fonts.bunny.net/css?family={family.replace(' ', '-')}:"
                    f"{spec}&display={display}');")
        if source == "file":
            faces = []
            for item in font.get("files") or []:
                path = item if isinstance(item, str) else item.get("path", "")
                url = path if re.match(r"^(https?:)?//", path) else (self.folder / path).resolve().as_posix()
                w = "normal" if isinstance(item, str) else item.get("weight", "normal")
                st = "normal" if isinstance(item, str) else item.get("style", "normal")
                faces.append(f"@font-face {{ font-family: '{family}'; src: url('{url}'); "
                             f"font-weight: {w}; font-style: {st}; }}")
            return "\n".join(faces)
        return ""

    def logo(self, quarto_version: str) -> tuple[str, str | None] | None:
        """The slide logo the brand gives a deck without ``logo:`` (its path, absolute
        when local, and alt text): the small, medium or large logo, light mode (medium
        first before Quarto 1.8.18)."""
        logo = self.data.get("logo")
        if not isinstance(logo, dict):
            return None
        images = logo.get("images") or {}
        order = ("small", "medium", "large")
        if quarto_version != "current" and _version(quarto_version) < (1, 8, 18):
            order = ("medium", "small", "large")
        for size in order:
            entry = logo.get(size)
            if isinstance(entry, dict):
                entry = entry.get("light") or entry.get("dark")
            if not entry:
                continue
            image = images.get(entry, entry) if isinstance(entry, str) else entry
            path, alt = (image.get("path"), image.get("alt")) if isinstance(image, dict) else (image, None)
            if not path:
                continue
            path = str(path)
            if not re.match(r"^(https?:)?//", path):
                path = str((self.folder / path).resolve())
            return path, alt
        return None


def _weight(w) -> int:
    return w if isinstance(w, int) else WEIGHTS.get(str(w), 400)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def applies(quarto_version: str) -> bool:
    return quarto_version == "current" or _version(quarto_version) >= FIRST_RELEASE


def find(opts, doc_path: Path, project_root: Path | None) -> Brand | None:
    """The document's brand: the ``brand:`` option (a file, a mapping, or false), else
    ``_brand.yml`` at the project's root (the document's folder without a project); None
    when there is none or the release drawn predates brands."""
    from .options import load_yaml     # options imports modules that import this one
    from .files import read_source

    if not applies(str(getattr(opts, "quarto_version", "current"))):
        return None
    value = opts.get("brand")
    if value is False:
        return None
    if isinstance(value, dict) and value and set(value) <= {"light", "dark"}:
        value = value.get("light") or value.get("dark")     # light mode, as Quarto's default
    if isinstance(value, dict):
        return Brand(value, doc_path.parent, doc_path)
    if isinstance(value, str):
        path = (doc_path.parent / value).resolve()
        if not path.is_file():
            raise DeckError(f"brand file not found: {value} (looked for {path})",
                            *opts.origin("brand"))
        return Brand(load_yaml(read_source(path), path), path.parent, path)
    root = project_root or doc_path.parent
    for name in FILES:
        path = root / name
        if path.is_file():
            return Brand(load_yaml(read_source(path), path), path.parent, path)
    return None
