"""Quarto extensions from ``_extensions/`` (https://quarto.org/docs/extensions/): a format
extension (``format: clean-revealjs``: the extension ``clean`` contributing a ``revealjs``
format) and the shortcodes and filters an extension contributes.

Quarto looks an extension up by name in the ``_extensions`` folders of the document's folder
and of every folder above it up to the project root (``_extensions/<name>`` or
``_extensions/<owner>/<name>``, holding ``_extension.yml``). A format extension's
``contributes: formats: revealjs:`` options sit beneath the document's own options (they are
the format's defaults); its paths (theme files, template partials, filters, resources) are
relative to the extension's folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import DeckError
from .files import read_source

MANIFESTS = ("_extension.yml", "_extension.yaml")
FORMAT_SUFFIX = "-revealjs"


@dataclass(frozen=True)
class Extension:
    name: str
    folder: Path
    manifest: Path
    data: dict

    @property
    def contributes(self) -> dict:
        value = self.data.get("contributes") or {}
        return value if isinstance(value, dict) else {}

    def revealjs_format(self) -> dict | None:
        formats = self.contributes.get("formats") or {}
        value = formats.get("revealjs") if isinstance(formats, dict) else None
        return value if isinstance(value, dict) else None

    def files(self, key: str, fmt: dict | None = None) -> list[Path]:
        """The files listed under ``contributes: <key>`` (or the format's ``<key>``)."""
        value = (fmt if fmt is not None else self.contributes).get(key) or []
        items = value if isinstance(value, list) else [value]
        out = []
        for item in items:
            path = item.get("path") if isinstance(item, dict) else item
            if isinstance(path, str):
                out.append((self.folder / path).resolve())
        return out


def _load(manifest: Path) -> Extension:
    from .options import load_yaml      # options imports this module
    data = load_yaml(read_source(manifest), manifest)
    return Extension(manifest.parent.name, manifest.parent, manifest, data)


def search_folders(doc_dir: Path, root: Path | None) -> list[Path]:
    """The ``_extensions`` folders Quarto searches, nearest first."""
    doc_dir = doc_dir.resolve()
    stop = (root or doc_dir).resolve()
    folders = []
    for folder in [doc_dir, *doc_dir.parents]:
        folders.append(folder / "_extensions")
        if folder == stop or not folder.is_relative_to(stop):
            break
    return [f for f in folders if f.is_dir()]


def installed(doc_dir: Path, root: Path | None) -> list[Extension]:
    """Every extension found for a document, nearest folder first."""
    out = []
    for folder in search_folders(doc_dir, root):
        for manifest in sorted(folder.glob("*/_extension.y*ml")) + sorted(folder.glob("*/*/_extension.y*ml")):
            if manifest.name in MANIFESTS:
                out.append(_load(manifest))
    return out


def find(name: str, doc_dir: Path, root: Path | None) -> Extension | None:
    """The extension called ``name`` (``owner/name`` also accepted), nearest first."""
    short = name.split("/")[-1]
    for ext in installed(doc_dir, root):
        owner = ext.folder.parent.name
        if ext.name == short and ("/" not in name or name == f"{owner}/{short}"):
            return ext
    return None


def format_extension(fmt_name: str, doc_dir: Path, root: Path | None, file: Path,
                     line: int | None) -> Extension:
    """The extension behind ``format: <name>-revealjs``; an error names what was looked for."""
    name = fmt_name[: -len(FORMAT_SUFFIX)]
    ext = find(name, doc_dir, root)
    looked = ", ".join(str(f) for f in search_folders(doc_dir, root)) or \
        f"{doc_dir.resolve() / '_extensions'} (none exists)"
    if ext is None:
        raise DeckError(f"format '{fmt_name}' needs the Quarto extension '{name}', which is not "
                        f"installed (looked in {looked}; quarto add <owner>/{name} installs it)",
                        file, line)
    if ext.revealjs_format() is None:
        raise DeckError(f"format '{fmt_name}': the extension '{name}' ({ext.manifest}) "
                        "contributes no revealjs format", file, line)
    return ext


def shortcode_files(doc_dir: Path, root: Path | None) -> list[Path]:
    """The Lua shortcode handlers of every extension found (Quarto loads them all)."""
    out: list[Path] = []
    for ext in installed(doc_dir, root):
        out += [p for p in ext.files("shortcodes") if p not in out]
    return out


# ---------------------------------------------------------------- Lua filters and plugins

# where an entry of `filters:` with `at:` runs: before Quarto's own filters (ours), or after
PRE_STAGES = ("pre-ast", "post-ast", "pre-quarto")
RUNNER = "extensions.lua"


@dataclass
class LuaPlan:
    """What the extensions filter (resources/filters/extensions.lua) runs for a document:
    shortcode handlers, filters before and after Quarto's own (ours), reveal.js plugins
    (name, scripts, stylesheets) and the extension folders they come from."""

    shortcodes: list[Path]
    pre: list[Path]
    post: list[Path]
    plugins: list[dict]
    folders: list[Path]


def _entries(value) -> list:
    return value if isinstance(value, list) else ([] if value in (None, False) else [value])


def _named(name: str, key: str, doc_dir: Path, root: Path | None, file: Path,
           line: int | None) -> Extension:
    ext = find(name, doc_dir, root)
    if ext is None:
        looked = ", ".join(str(f) for f in search_folders(doc_dir, root)) or \
            f"{doc_dir.resolve() / '_extensions'} (none exists)"
        raise DeckError(f"{key}: '{name}' is neither a Lua file nor an installed extension "
                        f"(looked in {looked}; quarto add <owner>/{name} installs it)", file, line)
    return ext


def lua_plan(opts, doc_path: Path, root: Path | None) -> LuaPlan:
    """The document's filters (``filters:``: Lua files, extension names, ``quarto`` where
    Quarto's own run; a format extension's filters come in through its options),
    shortcodes (every installed extension's, and ``shortcodes:``) and reveal.js plugins
    (``revealjs-plugins:``: extension names), as Quarto resolves them."""
    doc_dir = doc_path.parent
    folders: list[Path] = []
    shortcodes = shortcode_files(doc_dir, root)
    folders += [p.parent for p in shortcodes]
    file, line = opts.origin("shortcodes") if hasattr(opts, "origin") else (doc_path, None)
    for entry in _entries(opts.get("shortcodes")):
        if str(entry).endswith(".lua"):
            shortcodes.append(Path(entry))
        else:
            ext = _named(str(entry), "shortcodes", doc_dir, root, file or doc_path, line)
            shortcodes += ext.files("shortcodes")
            folders.append(ext.folder)
    pre: list[Path] = []
    post: list[Path] = []
    after_quarto = False
    file, line = opts.origin("filters") if hasattr(opts, "origin") else (doc_path, None)
    for entry in _entries(opts.get("filters")):
        target = post if after_quarto else pre
        if isinstance(entry, dict):
            target = pre if str(entry.get("at", "pre-quarto")) in PRE_STAGES else post
            entry = entry.get("path")
        entry = str(entry)
        if entry == "quarto":
            after_quarto = True
        elif entry.endswith(".lua"):
            target.append(Path(entry))
        else:
            ext = _named(entry, "filters", doc_dir, root, file or doc_path, line)
            target += ext.files("filters")
            folders.append(ext.folder)
    plugins = []
    file, line = opts.origin("revealjs-plugins") if hasattr(opts, "origin") else (doc_path, None)
    for entry in _entries(opts.get("revealjs-plugins")):
        ext = _named(str(entry), "revealjs-plugins", doc_dir, root, file or doc_path, line)
        folders.append(ext.folder)
        for plugin in _entries(ext.contributes.get("revealjs-plugins")):
            if not isinstance(plugin, dict) or not plugin.get("name"):
                continue
            plugins.append({"name": str(plugin["name"]),
                            "scripts": [str(p) for p in ext.files("script", plugin)],
                            "stylesheets": [str(p) for p in ext.files("stylesheet", plugin)],
                            "register": plugin.get("register", True) is not False})
    for path in [*shortcodes, *pre, *post]:
        if not path.is_file():
            raise DeckError(f"Lua file not found: {path}", doc_path)
    unique = lambda paths: list(dict.fromkeys(paths))
    return LuaPlan(unique(shortcodes), pre, post, plugins, unique(folders))
