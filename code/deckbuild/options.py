"""Stage 1: read and merge options.

``_quarto.yml`` (project), ``_metadata.yml`` (directory) and a document's front matter are
merged the way Quarto merges them: maps merge key by key, a later scalar replaces an
earlier one, and lists are concatenated with duplicates dropped (keeping the last).
Within each level, the keys of ``format: revealjs:`` override that level's top-level keys.
Quarto's revealjs defaults sit underneath everything.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import extensions, project_files, schema
from .errors import DeckError
from .files import read_source

REVEALJS_DEFAULTS: dict[str, Any] = schema.defaults()
REVEAL_CONFIG_KEYS = schema.names_with_role("reveal")

CONFIG_FILE = "_quarto.yml"
DIR_METADATA_FILE = "_metadata.yml"


def load_yaml(text: str, file: Path | str, first_line: int = 1) -> dict:
    """Parse YAML text that starts at ``first_line`` of ``file``; errors name file and line."""
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark else first_line
        raise DeckError(f"malformed YAML: {exc.problem or exc.context}", file, line) from None
    except yaml.YAMLError as exc:  # pragma: no cover - unmarked YAML errors are rare
        raise DeckError(f"malformed YAML: {exc}", file, first_line) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DeckError("YAML must be a mapping of option names to values", file, first_line)
    return data


def merge(base: Any, over: Any) -> Any:
    """Quarto's merge: maps merge recursively, lists concatenate (dedup, last wins)."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) or isinstance(over, list):
        if over is None:
            return copy.deepcopy(base)
        if base is None:
            return copy.deepcopy(over)
        a = base if isinstance(base, list) else [base]
        b = over if isinstance(over, list) else [over]
        combined, seen = [], set()
        for item in reversed(a + b):
            key = json.dumps(item, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                combined.append(item)
        return list(reversed(combined))
    return copy.deepcopy(over)


@dataclass
class Source:
    """One level of options: its mapping and the YAML file (and first line) it came from."""

    data: dict
    file: Path
    first_line: int = 1
    text: str = ""

    def line_of(self, needle: str) -> int:
        """Best line to blame for a value: the first line of the YAML mentioning it."""
        for i, line in enumerate(self.text.splitlines()):
            if needle in line:
                return self.first_line + i
        return self.first_line


class Options(dict):
    """Merged options of one document. Remembers where each option was last set
    (``origin``) and the output formats other than revealjs the sources name
    (``other_formats``: (name, file, line)), so that checks can point at the YAML, and
    the Quarto release it renders as (``quarto_version``: our own ``deckbuild:
    quarto-version``, "current" for the newest)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.origins: dict[str, tuple[Path, int]] = {}
        self.other_formats: list[tuple[str, Path, int]] = []
        self.quarto_version = "current"
        self.extension = None        # the format extension (extensions.Extension), if any
        self.profiles: list[str] = []   # the active Quarto profiles (when-profile)

    def origin(self, key: str) -> tuple[Path | None, int | None]:
        return self.origins.get(key, (None, None))


# camelCase spellings of reveal.js options and Quarto's aliases, with the name they stand for
OTHER_NAMES = {**{schema.camel(n): n for n in REVEAL_CONFIG_KEYS if schema.camel(n) != n},
               **schema.ALIASES}


def _canonical(data: dict, spelled: dict) -> dict:
    """``data`` with every key under the name deckbuild knows it by (``slideNumber`` is
    ``slide-number``, as Quarto reads it); a later spelling wins over an earlier one, as
    in Quarto. ``spelled`` receives the name as written for each renamed key."""
    out: dict = {}
    for key, value in data.items():
        name = OTHER_NAMES.get(key, key)
        out.pop(name, None)
        out[name] = value
        if name != key:
            spelled[name] = key
    return out


GROUPS = ("pandoc", "render", "metadata")


def _is_reveal_format(name) -> bool:
    """revealjs, or a format extension's revealjs format (``clean-revealjs``)."""
    return isinstance(name, str) and (name == "revealjs" or name.endswith(extensions.FORMAT_SUFFIX))


def _as_format(src: Source, spelled: dict | None = None,
               found: list | None = None) -> tuple[dict, list[str]]:
    """One level's options for revealjs (top-level keys, then `format: revealjs:` or a
    format extension's `format: <name>-revealjs:` over them) and the names of the other
    formats the level lists. ``spelled``: see ``_canonical``; ``found`` receives the format
    extension's name the level asks for, with the level."""
    spelled = {} if spelled is None else spelled
    data = _canonical(dict(src.data), spelled)
    fmt = data.pop("format", None)
    if isinstance(fmt, str) and fmt.endswith(extensions.FORMAT_SUFFIX):
        fmt = {fmt: {}}
    if isinstance(fmt, list):     # format: [clean-revealjs, html]
        fmt = {name: {} for name in fmt if isinstance(name, str)}
    execute = data.pop("execute", None)
    level: dict = {}
    if isinstance(execute, dict):
        level = merge(level, {k: v for k, v in execute.items()})
    # Quarto's option groups: `pandoc:` (html-math-method, slide-level...), `render:` and
    # `metadata:` hold options as if written at the top (src/config/metadata.ts,
    # metadataAsFormat)
    for group in GROUPS:
        if isinstance(data.get(group), dict):
            level = merge(level, _canonical(dict(data.pop(group)), spelled))
    level = merge(level, data)
    others: list[str] = []
    if isinstance(fmt, dict):
        others = [str(name) for name in fmt if not _is_reveal_format(name)]
        chosen = next((n for n in fmt if isinstance(n, str) and n.endswith(extensions.FORMAT_SUFFIX)),
                      "revealjs")
        if chosen != "revealjs" and found is not None:
            found.append((chosen, src))
        reveal = fmt.get(chosen) if chosen in fmt else fmt.get("revealjs")
        if reveal == "default":
            reveal = {}
        if isinstance(reveal, dict):
            reveal = _canonical(dict(reveal), spelled)
            rexec = reveal.pop("execute", None)
            if isinstance(rexec, dict):
                level = merge(level, rexec)
            for group in GROUPS:
                if isinstance(reveal.get(group), dict):
                    level = merge(level, _canonical(dict(reveal.pop(group)), spelled))
            level = merge(level, reveal)
    elif fmt is not None and fmt != "revealjs":
        raise DeckError(f"format '{fmt}' is not supported by this renderer (only revealjs and "
                        "format extensions of revealjs, <name>-revealjs)",
                        src.file, src.line_of("format"))
    return _resolve_paths(level, src), others


def _resolve_lua_entries(level: dict, src: Source) -> None:
    """``filters:`` and ``shortcodes:`` entries that are Lua files, resolved against the
    level's folder (a format extension's against its own); extension names and ``quarto``
    stay as written (extensions.lua_plan looks them up)."""
    base = src.file.parent
    for key in ("filters", "shortcodes"):
        if level.get(key) in (None, False):
            continue
        entries = level[key] if isinstance(level[key], list) else [level[key]]
        out = []
        for entry in entries:
            path = entry.get("path") if isinstance(entry, dict) else entry
            if isinstance(path, str) and path.endswith(".lua"):
                resolved = (base / path).resolve()
                if not resolved.is_file():
                    raise DeckError(f"{key}: Lua file not found: {path} (looked for {resolved})",
                                    src.file, src.line_of(path))
                entry = dict(entry, path=str(resolved)) if isinstance(entry, dict) else str(resolved)
            out.append(entry)
        level[key] = out


def _resolve_paths(level: dict, src: Source) -> dict:
    base = src.file.parent
    _resolve_lua_entries(level, src)
    for key in schema.PATH_OPTIONS:
        if key not in level or level[key] in (None, False):
            continue
        values = level[key] if isinstance(level[key], list) else [level[key]]
        resolved = []
        for value in values:
            if not isinstance(value, str):
                raise DeckError(f"option '{key}' must be a path, got {value!r}", src.file,
                                src.line_of(key))
            if key in ("logo", "csl", "css") and _is_url(value):
                # a remote logo or stylesheet stays a link, as Quarto links it; pandoc
                # fetches a csl
                resolved.append(value)
                continue
            path = (base / value).resolve()
            # a file of that name first, then a built-in theme (as Quarto looks them up);
            # `brand` places the brand's layer (brand.py)
            if key == "theme" and not path.is_file() and (value in schema.BUILTIN_THEMES
                                                          or value == "brand"):
                resolved.append(value)
                continue
            if not path.exists() and key == "logo":
                resolved.append(value)      # Quarto links a missing logo as written (warned)
                continue
            if not path.exists():
                what = "theme file" if key == "theme" else f"{key} file"
                hint = (f"; nor a built-in theme ({', '.join(sorted(schema.BUILTIN_THEMES))})"
                        if key == "theme" else "")
                raise DeckError(f"{what} not found: {value} (looked for {path}){hint}",
                                src.file, src.line_of(value))
            resolved.append(str(path))
        level[key] = resolved if isinstance(level[key], list) or key in ("theme", "css") else resolved[0]
    return level


def _is_url(value: str) -> bool:
    return re.match(r"^(https?:)?//", value) is not None


def find_project_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``_quarto.yml``."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else start.parents:
        if (directory / CONFIG_FILE).exists():
            return directory
    return None


def read_yaml_file(path: Path) -> Source:
    text = read_source(path)
    return Source(load_yaml(text, path), path, 1, text)


@dataclass
class Project:
    root: Path
    config: Source | None
    output_dir: Path
    render: list[Path] = field(default_factory=list)
    python_path: list[Path] = field(default_factory=list)     # deckbuild: python-path
    cache_sources: list[Path] = field(default_factory=list)   # deckbuild: cache-sources
    cache_env: list[str] = field(default_factory=list)        # deckbuild: cache-env
    quarto_version: str = "current"                            # deckbuild: quarto-version
    cell_timeout: float | bool = 600                           # deckbuild: cell-timeout
    run_alone: list[Path] = field(default_factory=list)        # deckbuild: run-alone
    profiles: list[str] = field(default_factory=list)          # the active Quarto profiles
    # plain entries of `project: render:` that name no file, with the line naming each:
    # an error when the project is rendered, a warning when one file of it is
    missing_render: list[tuple[str, int]] = field(default_factory=list)

    def missing_render_error(self) -> DeckError | None:
        if not self.missing_render:
            return None
        entry, line = self.missing_render[0]
        return DeckError(f"file listed under project: render not found: {entry} (looked for "
                         f"{self.root / entry.lstrip('/')})", self.config.file, line)


PROFILE_ENV = "QUARTO_PROFILE"


def active_profiles(config: dict | None = None) -> list[str]:
    """The active Quarto profiles (https://quarto.org/docs/projects/profiles.html):
    $QUARTO_PROFILE (``--profile`` sets it), comma separated, else the project's
    ``profile: default:``."""
    env = os.environ.get(PROFILE_ENV, "")
    names = [p.strip() for p in env.split(",") if p.strip()]
    if names:
        return names
    profile = (config or {}).get("profile") or {}
    default = profile.get("default") if isinstance(profile, dict) else None
    if isinstance(default, list):
        return [str(p) for p in default]
    return [p.strip() for p in str(default).split(",") if p.strip()] if default else []


def _with_profiles(config: Source, root: Path, profiles: list[str]) -> Source:
    """The project's configuration with each active profile's ``_quarto-NAME.yml`` merged
    over it, in order (a profile without its own file only switches when-profile content)."""
    data = dict(config.data)
    for name in profiles:
        for ext in ("yml", "yaml"):
            path = root / f"_quarto-{name}.{ext}"
            if path.is_file():
                data = merge(data, read_yaml_file(path).data)
                break
    return Source(data, config.file, config.first_line, config.text)


def load_project(root: Path) -> Project:
    cfg_path = root / CONFIG_FILE
    config = read_yaml_file(cfg_path) if cfg_path.exists() else None
    profiles = active_profiles(config.data if config else None)
    if config is not None:
        config = _with_profiles(config, root, profiles)
    project = (config.data.get("project") or {}) if config else {}
    if not isinstance(project, dict):
        raise DeckError("'project' must be a mapping", cfg_path, config.line_of("project"))
    out = root / str(project.get("output-dir", "_output"))
    entries = project.get("render") or []
    if not isinstance(entries, list):
        entries = [entries]
    render, missing = project_files.render_list(entries, root, out)
    if not entries:
        render = project_files.all_documents(root, out)
    own = deckbuild_options(config, root)
    return Project(root, config, out, render, own["python-path"], own["cache-sources"], own["cache-env"],
                   own["quarto-version"], own["cell-timeout"], own["run-alone"], profiles,
                   [(m, config.line_of(m)) for m in missing])


def deckbuild_options(config: Source | None, root: Path) -> dict:
    """Our own project options (``deckbuild:`` in _quarto.yml), checked; folders resolved
    against the project root and checked to exist."""
    ns = schema.DECKBUILD_NAMESPACE
    data = (config.data.get(ns) if config else None) or {}
    if not isinstance(data, dict):
        raise DeckError(f"'{ns}' must be a mapping of options", config.file, config.line_of(ns))
    for name in data:
        if name not in schema.DECKBUILD_OPTIONS:
            known = ", ".join(schema.DECKBUILD_OPTIONS)
            raise DeckError(f"unknown option '{ns}: {name}' (known: {known})", config.file,
                            config.line_of(f"{name}:"))
    out: dict = {}
    for name, opt in schema.DECKBUILD_OPTIONS.items():
        value = data.get(name, env_quarto_version() if name == "quarto-version" else opt.default)
        if not opt.type.check(value):
            raise DeckError(f"option '{ns}: {name}' must be {opt.type.expected}, got {value!r}",
                            config.file, config.line_of(f"{name}:"))
        out[name] = (_paths(value, name, config, root, opt.role)
                     if opt.role in ("folders", "files") else value)
    return out


def env_quarto_version() -> str:
    """The default of ``deckbuild: quarto-version``: $DECKBUILD_QUARTO_VERSION, else current."""
    value = os.environ.get(schema.QUARTO_VERSION_ENV) or "current"
    if not schema.QUARTO_VERSION.check(value):
        raise DeckError(f"environment variable {schema.QUARTO_VERSION_ENV} must be "
                        f"{schema.QUARTO_VERSION.expected}, got {value!r}")
    return value


def document_quarto_version(front: Source) -> str | None:
    """The document's own ``deckbuild: quarto-version`` (None when it sets none), checked:
    the front matter's ``deckbuild:`` may hold only DOCUMENT_DECKBUILD_OPTIONS."""
    ns = schema.DECKBUILD_NAMESPACE
    data = front.data.get(ns)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise DeckError(f"'{ns}' must be a mapping of options", front.file, front.line_of(f"{ns}:"))
    for name in data:
        if name not in schema.DOCUMENT_DECKBUILD_OPTIONS:
            where = ("a project option (set it in _quarto.yml)" if name in schema.DECKBUILD_OPTIONS
                     else "unknown")
            raise DeckError(f"option '{ns}: {name}' in a document's front matter is {where}; "
                            f"a document may set {', '.join(schema.DOCUMENT_DECKBUILD_OPTIONS)}",
                            front.file, front.line_of(f"{name}:"))
    value = data.get("quarto-version")
    if value is not None and not schema.QUARTO_VERSION.check(value):
        raise DeckError(f"option '{ns}: quarto-version' must be {schema.QUARTO_VERSION.expected}, "
                        f"got {value!r}", front.file, front.line_of("quarto-version:"))
    return value


def _paths(value, name: str, config: Source, root: Path, role: str) -> list[Path]:
    """``value``'s folders (or files), resolved against ``root``; each must exist."""
    paths, kind = [], role[:-1]
    for item in [value] if isinstance(value, str) else value:
        path = (root / item).resolve()
        if not (path.is_dir() if kind == "folder" else path.is_file()):
            raise DeckError(f"{kind} listed under '{schema.DECKBUILD_NAMESPACE}: {name}' not "
                            f"found: {item} (looked for {path})", config.file, config.line_of(item))
        paths.append(path)
    return paths


def resolve_options(project: Project | None, doc_file: Path, front: Source) -> Options:
    """Effective options for one document: defaults < project < directory < document."""
    levels: list[Source] = []
    if project and project.config:
        cfg = dict(project.config.data)
        cfg.pop("project", None)
        cfg.pop(schema.DECKBUILD_NAMESPACE, None)
        levels.append(Source(cfg, project.config.file, 1, project.config.text))
        # _metadata.yml files between the project root and the document
        rel_dirs = doc_file.resolve().parent.relative_to(project.root.resolve()).parts
        directory = project.root
        for part in rel_dirs:
            directory = directory / part
            meta = directory / DIR_METADATA_FILE
            if meta.exists():
                levels.append(read_yaml_file(meta))
    version = document_quarto_version(front)
    levels.append(Source({k: v for k, v in front.data.items() if k != schema.DECKBUILD_NAMESPACE},
                         front.file, front.first_line, front.text))
    merged: dict = copy.deepcopy(REVEALJS_DEFAULTS)
    origins, others = {}, []
    # a format extension's revealjs options come first: they are the format's defaults
    asked: list = []
    for src in levels:
        _as_format(src, {}, asked)
    ext = None
    if asked:
        name, src = asked[-1]
        ext = extensions.format_extension(name, doc_file.parent,
                                          project.root if project else None,
                                          src.file, src.line_of(name))
        text = read_source(ext.manifest)
        levels.insert(0, Source({"format": {"revealjs": ext.revealjs_format()}}, ext.manifest, 1, text))
    # `theme` replaces rather than extends the default theme list
    for src in levels:
        spelled: dict = {}
        level, formats = _as_format(src, spelled)
        if "theme" in level:
            merged["theme"] = []
        merged = merge(merged, level)
        origins.update({key: (src.file, src.line_of(f"{spelled.get(key, key)}:")) for key in level})
        others += [(name, src.file, src.line_of(f"{name}:")) for name in formats]
    opts = Options(merged)
    opts.origins, opts.other_formats = origins, others
    opts.extension = ext
    opts.quarto_version = version or (project.quarto_version if project else env_quarto_version())
    opts.profiles = list(project.profiles) if project else active_profiles()
    return opts


def reveal_config(opts: dict) -> dict:
    """The reveal.js `Reveal.initialize` configuration (camelCase) from merged options,
    as Quarto's revealjs format writes it (src/format/reveal/format-reveal.ts): navigation
    mode `vertical` is reveal.js's `default`, `slide-number: true` counts the slides (c/t)
    unless vertical slides are navigable (h.v), and `preview-links: auto` opens no
    preview (Quarto opens one only in fullscreen, which deckbuild does not implement)."""
    out = {schema.camel(key): opts[key] for key in REVEAL_CONFIG_KEYS if opts.get(key) is not None}
    if out.get("previewLinks") == "auto":    # Quarto previews those links in fullscreen only
        out["previewLinks"] = False
    if out.get("navigationMode") == "vertical":
        out["navigationMode"] = "default"
    if out.get("slideNumber") is True:
        vertical = out.get("navigationMode") in ("default", "grid")
        out["slideNumber"] = "h.v" if vertical else "c/t"
    return out
