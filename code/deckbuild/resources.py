"""Where deckbuild finds the files it uses: its own resources (template, Lua filters,
browser scripts, base theme) and the npm packages (reveal.js, with the fonts Quarto's themes
load, KaTeX, dart-sass).

npm packages are looked up in a ``node_modules/`` folder: the one named by the
``DECKBUILD_NODE_MODULES`` environment variable, else the nearest one holding the
packages deckbuild needs at or above the project root, at or above deckbuild's own
folder (the repository it lives in, so a deck anywhere on disk builds without an
``npm ci`` beside it), or at or above the current directory, in that order.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import DeckError

RESOURCES = Path(__file__).parent / "resources"
TEMPLATE = RESOURCES / "template.html"
FILTERS = RESOURCES / "filters"
THEME = RESOURCES / "theme"
BUILTIN_THEMES_DIR = THEME / "builtin"
NODE_MODULES_ENV = "DECKBUILD_NODE_MODULES"


def resource(*parts: str) -> Path:
    """A file shipped with deckbuild, e.g. ``resource("checks.js")``."""
    return RESOURCES.joinpath(*parts)


def read_resource(*parts: str) -> str:
    return resource(*parts).read_text(encoding="utf-8")


NEEDED_PACKAGES = ("reveal.js", "katex", "sass")


def find_node_modules(project_root: Path) -> Path:
    """The ``node_modules/`` folder to use (see the module docstring). A folder lacking
    one of the packages (a deck's own JavaScript project) is passed over; when none has
    them all, the first found is returned, so the error names the package missing."""
    named = os.environ.get(NODE_MODULES_ENV)
    if named:
        return Path(named).resolve()
    found: list[Path] = []
    for start in (Path(project_root).resolve(), RESOURCES.resolve().parent, Path.cwd().resolve()):
        for directory in (start, *start.parents):
            candidate = directory / "node_modules"
            if candidate.is_dir():
                if all((candidate / name).is_dir() for name in NEEDED_PACKAGES):
                    return candidate
                found.append(candidate)
    return found[0] if found else Path(project_root).resolve() / "node_modules"


def node_package(node_modules: Path, package: str) -> Path:
    """The folder of an npm package; a clear error when it is not installed."""
    path = node_modules / package
    if not path.is_dir():
        raise DeckError(f"npm package {package} not found in {node_modules}: run `npm ci` "
                        f"(or `make deck-setup`) first, or set {NODE_MODULES_ENV}")
    return path
