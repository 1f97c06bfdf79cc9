"""Where deckbuild finds the files it uses: its own resources (template, Lua filters,
browser scripts, base theme) and the npm packages (reveal.js, KaTeX, dart-sass, Source Sans
Pro from @fontsource/source-sans-pro).

npm packages are looked up in a ``node_modules/`` folder: the one named by the
``DECKBUILD_NODE_MODULES`` environment variable, else the nearest one at or above the
project root, else at or above the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import DeckError

RESOURCES = Path(__file__).parent / "resources"
TEMPLATE = RESOURCES / "template.html"
FILTERS = RESOURCES / "filters"
THEME = RESOURCES / "theme"
NODE_MODULES_ENV = "DECKBUILD_NODE_MODULES"


def resource(*parts: str) -> Path:
    """A file shipped with deckbuild, e.g. ``resource("checks.js")``."""
    return RESOURCES.joinpath(*parts)


def read_resource(*parts: str) -> str:
    return resource(*parts).read_text(encoding="utf-8")


def find_node_modules(project_root: Path) -> Path:
    """The ``node_modules/`` folder to use (see the module docstring)."""
    named = os.environ.get(NODE_MODULES_ENV)
    if named:
        return Path(named).resolve()
    for start in (Path(project_root).resolve(), Path.cwd().resolve()):
        for directory in (start, *start.parents):
            if (directory / "node_modules").is_dir():
                return directory / "node_modules"
    return Path(project_root).resolve() / "node_modules"


def node_package(node_modules: Path, package: str) -> Path:
    """The folder of an npm package; a clear error when it is not installed."""
    path = node_modules / package
    if not path.is_dir():
        raise DeckError(f"npm package {package} not found in {node_modules}: run `npm ci` "
                        f"(or `make deck-setup`) first, or set {NODE_MODULES_ENV}")
    return path
