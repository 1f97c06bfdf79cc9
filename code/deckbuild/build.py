"""Ties the stages together for one document: parse, options, execute, markdown, theme,
pandoc, PDF. Outputs are written to temporary files beside their final place and moved
into place only when everything succeeded, so the last good deck survives any failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import __version__, browser, execute, markdown, pandoc, source, theme
from .errors import DeckError
from .options import Project, find_project_root, load_project, resolve_options

RESOURCES = Path(__file__).parent / "resources"


@dataclass
class BuildSettings:
    html_only: bool = False
    use_cache: bool = True
    extra_js: str = ""          # injected by preview mode (live reload)


@dataclass
class BuildResult:
    source: Path
    html: Path
    pdf: Path | None
    timings: dict = field(default_factory=dict)
    up_to_date: bool = False


class Progress:
    def __init__(self, emit: Callable[[str], None]):
        self.emit = emit
        self.timings: dict[str, float] = {}

    def step(self, name: str, t0: float, note: str = "") -> None:
        dt = time.perf_counter() - t0
        self.timings[name] = self.timings.get(name, 0.0) + dt
        self.emit(f"  {name:<9} {dt:6.2f}s{('  ' + note) if note else ''}")


def output_paths(path: Path, project: Project | None) -> tuple[Path, Path]:
    if project is None:
        html = path.with_suffix(".html")
    else:
        rel = path.resolve().relative_to(project.root.resolve())
        html = project.output_dir / rel.with_suffix(".html")
    return html, html.with_suffix(".pdf")


def _hash_files(h, paths) -> None:
    for p in sorted(set(map(str, paths))):
        path = Path(p)
        h.update(p.encode())
        if path.is_file():
            h.update(path.read_bytes())
        elif path.is_dir():
            for f in sorted(path.rglob("*")):
                if f.is_file():
                    h.update(str(f).encode() + f.read_bytes())


def build_document(path: Path, settings: BuildSettings, emit: Callable[[str], None] = print,
                   project: Project | None = None) -> BuildResult:
    path = Path(path).resolve()
    root_dir = find_project_root(path)
    if project is None and root_dir is not None:
        project = load_project(root_dir)
    root = project.root if project else path.parent
    tool_root = find_tool_root(root)
    cache_root = root / ".cache" / "deckbuild"
    rel = path.relative_to(root)
    progress = Progress(emit)
    start = time.perf_counter()
    emit(f"[deckbuild] {rel}")

    t = time.perf_counter()
    doc = source.parse(path, root)
    opts = resolve_options(project, path, doc.front)
    if int(opts.get("slide-level", 2)) != 2:
        doc = source.parse(path, root, int(opts["slide-level"]))
    resources = source.check_resources(doc)
    progress.step("read", t, f"{len(doc.cells)} cells")

    t = time.perf_counter()
    outputs, stats = execute.execute(doc, opts, root, cache_root / "cells", settings.use_cache,
                                     emit)
    note = ("all cached" if stats["cached"] and stats["cached"] == stats["cells"]
            else f"{stats['cells']} cells run")
    progress.step("execute", t, note)

    t = time.perf_counter()
    work = cache_root / "work" / rel.with_suffix("")
    md = markdown.write_markdown(doc, outputs, opts, work)
    progress.step("markdown", t, str(md.relative_to(root)))

    t = time.perf_counter()
    css, cached = theme.compile_theme(opts.get("theme") or ["default"], tool_root,
                                      cache_root / "theme")
    progress.step("theme", t, "cached" if cached else "compiled")

    html, pdf = output_paths(path, project)
    html.parent.mkdir(parents=True, exist_ok=True)
    init_text = pandoc.init_script(opts, settings.extra_js)
    h = hashlib.sha256()
    h.update(f"{__version__}|{settings.html_only}|{json.dumps(opts, sort_keys=True, default=str)}".encode())
    h.update(md.read_bytes() + init_text.encode())
    _hash_files(h, [css, RESOURCES / "template.html", RESOURCES / "filters", *resources,
                    md.parent / f"{path.stem}_files",
                    tool_root / "node_modules" / "reveal.js" / "package.json",
                    tool_root / "node_modules" / "katex" / "package.json"])
    if opts.get("logo"):
        _hash_files(h, [opts["logo"]])
    fingerprint = h.hexdigest()
    stamp = cache_root / "builds" / (str(rel).replace(os.sep, "__") + ".json")
    if settings.use_cache and stamp.exists() and html.exists() and (settings.html_only or pdf.exists()):
        if json.loads(stamp.read_text()).get("fingerprint") == fingerprint:
            emit(f"  up to date: {html.relative_to(root) if html.is_relative_to(root) else html}")
            total = time.perf_counter() - start
            emit(f"  total     {total:6.2f}s")
            return BuildResult(path, html, None if settings.html_only else pdf,
                               progress.timings, up_to_date=True)

    tmp_html = html.with_name(f".{html.stem}.partial.html")
    tmp_pdf = pdf.with_name(f".{pdf.stem}.partial.pdf")
    try:
        t = time.perf_counter()
        pandoc.run_pandoc(md, tmp_html, css, opts, tool_root, path.parent, work, settings.extra_js)
        progress.step("pandoc", t, f"{tmp_html.stat().st_size / 1e6:.1f} MB")
        if not settings.html_only:
            t = time.perf_counter()
            browser.print_pdf(tmp_html, tmp_pdf)
            progress.step("pdf", t, f"{browser.pdf_pages(tmp_pdf)} pages")
            os.replace(tmp_pdf, pdf)
        os.replace(tmp_html, html)
    finally:
        for tmp in (tmp_html, tmp_pdf):
            if tmp.exists():
                tmp.unlink()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"fingerprint": fingerprint}))
    shown = [str(p.relative_to(root)) if p.is_relative_to(root) else str(p)
             for p in ([html] if settings.html_only else [html, pdf])]
    emit(f"  wrote {', '.join(shown)}")
    emit(f"  total     {time.perf_counter() - start:6.2f}s")
    return BuildResult(path, html, None if settings.html_only else pdf, progress.timings)


def find_tool_root(root: Path) -> Path:
    """Where node_modules/ lives: the project root, or the nearest parent that has it."""
    for directory in [root, *root.parents]:
        if (directory / "node_modules").is_dir():
            return directory
    here = Path(__file__).resolve().parents[2]
    if (here / "node_modules").is_dir():
        return here
    return root


def project_documents(root: Path) -> tuple[Project, list[Path]]:
    project = load_project(root)
    return project, project.render
