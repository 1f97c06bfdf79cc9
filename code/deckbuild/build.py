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

from . import (__version__, brand, browser, execute, extensions, files, libs, markdown,
               mathmethod, pandoc, partials, resources, schema, source, strict, theme)
from .errors import DeckWarning
from .options import Project, find_project_root, load_project, resolve_options


@dataclass
class BuildSettings:
    html_only: bool = False
    handout: bool = False       # also <stem>-handout.pdf: each slide with its speaker notes
    use_cache: bool = True
    cell_timeout: float | bool | None = None   # seconds (False: none); None: the project's
    jobs: int | None = None     # chapters run at once (None: one per core)


@dataclass
class BuildResult:
    source: Path
    html: Path
    pdf: Path | None
    handout: Path | None = None
    timings: dict = field(default_factory=dict)
    up_to_date: bool = False
    warnings: list[DeckWarning] = field(default_factory=list)


class Progress:
    def __init__(self, emit: Callable[[str], None]):
        self.emit = emit
        self.timings: dict[str, float] = {}
        self.start = time.perf_counter()

    def step(self, name: str, t0: float, note: str = "") -> None:
        dt = time.perf_counter() - t0
        self.timings[name] = self.timings.get(name, 0.0) + dt
        self.emit(f"  {name:<9} {dt:6.2f}s{('  ' + note) if note else ''}")

    def total(self) -> None:
        self.emit(f"  total     {time.perf_counter() - self.start:6.2f}s")


@dataclass
class Job:
    """One document's build: where it is, where its pieces go, what was made so far."""

    path: Path
    project: Project | None
    settings: BuildSettings
    progress: Progress
    # (file, line) of every line of the intermediate markdown, for pandoc's messages
    md_origins: list = field(default_factory=list)

    @property
    def root(self) -> Path:
        return self.project.root if self.project else self.path.parent

    @property
    def rel(self) -> Path:
        return self.path.relative_to(self.root)

    @property
    def cache_root(self) -> Path:
        return self.root / ".cache" / "deckbuild"

    def shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


def output_paths(path: Path, project: Project | None) -> tuple[Path, Path]:
    if project is None:
        html = path.with_suffix(".html")
    else:
        rel = path.resolve().relative_to(project.root.resolve())
        html = project.output_dir / rel.with_suffix(".html")
    return html, html.with_suffix(".pdf")


def handout_path(pdf: Path) -> Path:
    """The handout beside the PDF: ``index.pdf`` -> ``index-handout.pdf``."""
    return pdf.with_name(f"{pdf.stem}-handout.pdf")


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


def _read(job: Job) -> tuple[source.Document, dict, list[Path]]:
    t = time.perf_counter()
    doc = source.parse(job.path, job.root)
    opts = resolve_options(job.project, job.path, doc.front)
    # option values are checked before slide-level is used to split the slides
    warnings = strict.check_options(opts, job.path) + strict.check_formats(opts)
    if opts["slide-level"] != 2:
        doc = source.parse(job.path, job.root, opts["slide-level"])
    images = source.check_resources(doc) + source.option_resources(str(opts.get("footer") or ""), doc)
    doc.warnings += warnings + strict.check_crossrefs(doc) + _missing_logo(opts, job.path)
    _lua_plan(job, opts)     # an extension named in filters: that is not there stops here
    doc.warnings += _brand_logo(job, opts)
    job.progress.step("read", t, f"{len(doc.cells)} cells")
    return doc, opts, images


def _brand(job: Job, opts) -> brand.Brand | None:
    return brand.find(opts, job.path, job.root if job.project else None)


def _brand_logo(job: Job, opts) -> list[DeckWarning]:
    """A deck without ``logo:`` shows its brand's logo, as Quarto's revealjs does."""
    found = _brand(job, opts)
    logo = found.logo(str(getattr(opts, "quarto_version", "current"))) if found else None
    if opts.get("logo") or logo is None:
        return []
    path, _alt = logo
    if libs.is_remote(path) or Path(path).is_file():
        opts["logo"] = path
        return []
    return [DeckWarning(f"the brand's logo {path} is not there: the deck shows no logo "
                        "(Quarto links it and the page shows a broken image)", found.file)]


def _missing_logo(opts, doc_path: Path) -> list[DeckWarning]:
    """A logo file that does not exist: Quarto links it as written (the page shows a broken
    image), so the build goes on with a warning naming where it was set."""
    logo = opts.get("logo")
    if not logo or libs.is_remote(logo) or Path(logo).is_absolute():
        return []
    file, line = opts.origin("logo")
    return [DeckWarning(f"logo file not found: {logo}; the deck links it as written, as Quarto "
                        "does (the page shows no logo until the file is there)",
                        file or doc_path, line)]


def _cell_timeout(job: Job) -> float | None:
    """Seconds a cell may run (None: no limit): the command line's, else the project's."""
    value = job.settings.cell_timeout
    if value is None:
        value = (job.project.cell_timeout if job.project
                 else schema.DECKBUILD_OPTIONS["cell-timeout"].default)
    return value or None


def _execute(job: Job, doc: source.Document, opts: dict) -> list[list]:
    t = time.perf_counter()
    project = job.project
    kernel = execute.KernelSettings(
        python_path=tuple(project.python_path) if project else (),
        cache_sources=tuple(project.cache_sources) if project else (),
        cache_env=tuple(project.cache_env) if project else (),
        quarto_version=getattr(opts, "quarto_version", "current"),
        cell_timeout=_cell_timeout(job), jobs=job.settings.jobs,
        run_alone=tuple(project.run_alone) if project else ())
    outputs, stats = execute.execute(doc, opts, job.cache_root / "cells", job.settings.use_cache,
                                     job.progress.emit, kernel)
    ran, units = stats["units_run"], stats["units"]
    note = ("all cached" if stats["cells"] and not ran
            else f"{stats['cells']} cells run" if len(stats["ran"]) == stats["cells"]
            else f"{ran} of {units} chapters run ({len(stats['ran'])} of {stats['cells']} cells)")
    job.progress.step("execute", t, note)
    return outputs


def _brand_layer(job: Job, opts) -> dict | None:
    found = _brand(job, opts)
    return theme.brand_pieces(found.sass(), found.file) if found else None


def _lua_plan(job: Job, opts: dict) -> extensions.LuaPlan:
    """The extensions' filters, shortcodes and plugins the document runs."""
    return extensions.lua_plan(opts, job.path, job.root if job.project else None)


def _fingerprint(job: Job, md: Path, css: Path, opts: dict, images: list[Path],
                 node_modules: Path) -> str:
    """Everything the HTML and PDF are made from; equal fingerprints mean nothing to redo."""
    h = hashlib.sha256()
    h.update(f"{__version__}|{job.settings.html_only}|{_wants_handout(job)}|"
             f"{json.dumps(opts, sort_keys=True, default=str)}|"
             f"{','.join(getattr(opts, 'profiles', ()))}".encode())
    h.update(md.read_bytes() + pandoc.init_script(opts).encode())
    _hash_files(h, [css, resources.TEMPLATE, resources.FILTERS, partials.PARTIALS,
                    *partials.user_partials(opts), *images,
                    md.parent / f"{job.path.stem}_files", *(opts.get("css") or []),
                    node_modules / "reveal.js" / "package.json",
                    node_modules / "katex" / "package.json",
                    node_modules / theme.FONT_PACKAGE / "package.json", pandoc.HIGHLIGHT_THEME])
    if opts.get("logo"):
        _hash_files(h, [opts["logo"]])
    lua = _lua_plan(job, opts)
    _hash_files(h, [*lua.folders, *lua.shortcodes, *lua.pre, *lua.post])
    return h.hexdigest()


def _layout(job: Job, md: Path, css: Path, opts: dict, node_modules: Path, html: Path,
            images: list[Path]) -> libs.Layout:
    """Embedded (one file), or linked files beside the HTML (see libs.py)."""
    if opts["embed-resources"]:
        return libs.embedded(css, opts, node_modules)
    out_root = job.project.output_dir if job.project else html.parent
    place = libs.Place(html, job.root, out_root)
    return libs.linked(css, opts, node_modules, place, images,
                       md.parent / f"{job.path.stem}_files")


def _project_offset(job: Job) -> str:
    """The project root seen from the document's folder ("." when they are one)."""
    return Path(os.path.relpath(job.root, job.path.parent)).as_posix()


def _wants_handout(job: Job) -> bool:
    return job.settings.handout and not job.settings.html_only


def _write_outputs(job: Job, md: Path, layout: libs.Layout, opts: dict, html: Path,
                   pdf: Path, warnings: list | None = None) -> list[str]:
    """pandoc (and the PDF) into temporary files, moved into place only on success. The
    temporaries have unique names, and the ones a killed build left behind are removed
    (the build lock says no other build of this document is running). The build stamp is
    removed before the first output is replaced; the caller writes it after the last.
    Returns the resources pandoc could not fetch; pandoc's warnings (citations not in the
    bibliography) go to ``warnings``."""
    handout = handout_path(pdf)
    for stem in (html.stem, handout.stem):
        for stale in html.parent.glob(f".{stem}.*.partial.*"):
            stale.unlink(missing_ok=True)
    tmp_html = files.temporary_beside(html, ".partial.html")
    tmp_pdf = files.temporary_beside(pdf, ".partial.pdf")
    tmp_handout = files.temporary_beside(handout, ".partial.pdf") if _wants_handout(job) else None
    try:
        t = time.perf_counter()
        failed = pandoc.run_pandoc(md, tmp_html, layout, opts, job.path.parent, md.parent,
                                   job.md_origins, _project_offset(job), warnings,
                                   _lua_plan(job, opts), job.path, job.root)
        job.progress.step("pandoc", t, f"{tmp_html.stat().st_size / 1e6:.1f} MB")
        if not layout.embed:     # files named only in the output (by a filter) go beside it
            libs.copy_page_files(tmp_html.read_text(encoding="utf-8"), html, job.path.parent)
        # a linked deck's files go in place first: the PDF is printed from them
        with libs.swap_in(layout, html):
            if not job.settings.html_only:
                t = time.perf_counter()
                browser.print_pdf(tmp_html, tmp_pdf)
                job.progress.step("pdf", t, f"{browser.pdf_pages(tmp_pdf)} pages")
            if _wants_handout(job):
                t = time.perf_counter()
                browser.print_pdf(tmp_html, tmp_handout, handout=True)
                job.progress.step("handout", t, f"{browser.pdf_pages(tmp_handout)} pages")
            # The stamp goes before the first output is replaced and comes back (in _build)
            # only once both are in place: a build killed between the two renames leaves no
            # stamp, so the next build remakes both instead of calling a mixed pair up to date.
            _stamp_path(job).unlink(missing_ok=True)
            if not job.settings.html_only:
                os.replace(tmp_pdf, pdf)
            if _wants_handout(job):
                os.replace(tmp_handout, handout)
            os.replace(tmp_html, html)
        return failed
    finally:
        libs.discard(layout)
        for tmp in (tmp_html, tmp_pdf, tmp_handout):
            if tmp is not None:
                tmp.unlink(missing_ok=True)


def _stamp_path(job: Job) -> Path:
    return job.cache_root / "builds" / (str(job.rel).replace(os.sep, "__") + ".json")


def _stamped_fingerprint(job: Job) -> str | None:
    """The fingerprint of the last build, or None when the stamp is missing or unreadable
    (an unreadable stamp is only a cache miss: the deck is rebuilt and the stamp rewritten)."""
    stamp = _stamp_path(job)
    if not stamp.exists():
        return None
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
        return str(data["fingerprint"])
    except (OSError, ValueError, TypeError, KeyError) as exc:
        job.progress.emit(f"  build stamp {job.shown(stamp)} is unreadable "
                          f"({type(exc).__name__}); rebuilding")
        return None


def _check_writable(job: Job, html: Path) -> None:
    """Every folder the build writes to, checked before any cell runs."""
    cache = job.cache_root
    files.check_writable({
        html.parent: "the output folder",
        cache / "cells": "the cell cache",
        cache / "work": "the intermediate markdown",
        cache / "theme": "the compiled theme",
        cache / "builds": "the build stamps",
        cache / "locks": "the build locks",
    })


def build_document(path: Path, settings: BuildSettings, emit: Callable[[str], None] = print,
                   project: Project | None = None) -> BuildResult:
    """Build one document; one build of a document at a time (a second is refused)."""
    path = Path(path).resolve()
    if project is None and (root_dir := find_project_root(path)) is not None:
        project = load_project(root_dir)
    job = Job(path, project, settings, Progress(emit))
    emit(f"[deckbuild] {job.rel}")
    doc, opts, images = _read(job)
    html, pdf = output_paths(path, project)
    _check_writable(job, html)
    lock = job.cache_root / "locks" / (str(job.rel).replace(os.sep, "__") + ".lock")
    with files.build_lock(lock, str(job.rel)):
        return _build(job, doc, opts, images, html, pdf)


def _build(job: Job, doc: source.Document, opts: dict, images: list[Path], html: Path,
           pdf: Path) -> BuildResult:
    settings, emit = job.settings, job.progress.emit
    outputs = _execute(job, doc, opts)

    t = time.perf_counter()
    md = markdown.write_markdown(doc, outputs, opts, job.cache_root / "work" / job.rel.with_suffix(""),
                                 job.md_origins)
    job.progress.step("markdown", t, job.shown(md))

    node_modules = resources.find_node_modules(job.root)
    t = time.perf_counter()
    css, cached = theme.compile_theme(
        opts["theme"], node_modules, job.cache_root / "theme",
        lambda bad: emit(f"  compiled theme {job.shown(bad)} is damaged (its content does not "
                         "match the checksum in its name); compiling the theme again"),
        doc.warnings, opts, getattr(opts, "quarto_version", "current"), _brand_layer(job, opts))
    job.progress.step("theme", t, "cached" if cached else "compiled")
    # classes the theme or an extension's stylesheets style are implemented
    lua = _lua_plan(job, opts)
    ext_css = [p.read_text(encoding="utf-8", errors="replace") for folder in lua.folders
               for p in sorted(folder.rglob("*.css"))]
    doc.warnings += strict.check_classes(doc, "\n".join([css.read_text(encoding="utf-8"), *ext_css]))
    _emit_warnings(emit, doc.warnings)

    fingerprint = _fingerprint(job, md, css, opts, images, node_modules)
    result = BuildResult(job.path, html, None if settings.html_only else pdf,
                         handout_path(pdf) if _wants_handout(job) else None, job.progress.timings,
                         warnings=doc.warnings)
    linked_files = html.with_name(f"{html.stem}_files")
    if (settings.use_cache and html.exists() and (settings.html_only or pdf.exists())
            and (result.handout is None or result.handout.exists())
            and (opts["embed-resources"] or linked_files.is_dir())
            and _stamped_fingerprint(job) == fingerprint):
        emit(f"  up to date: {job.shown(html)}")
        _after_pandoc(job, doc, opts, html, [], result)
        job.progress.total()
        result.up_to_date = True
        return result
    layout = _layout(job, md, css, opts, node_modules, html, images)
    pandoc_warnings: list[DeckWarning] = []
    failed = _write_outputs(job, md, layout, opts, html, pdf, pandoc_warnings)
    files.write_atomic(_stamp_path(job), json.dumps({"fingerprint": fingerprint}))
    written = [html] if settings.html_only else [html, pdf]
    emit(f"  wrote {', '.join(job.shown(p) for p in written + [result.handout] if p)}")
    _after_pandoc(job, doc, opts, html, failed, result, pandoc_warnings)
    job.progress.total()
    return result


def _emit_warnings(emit: Callable[[str], None], warnings: list) -> None:
    for warning in warnings:
        emit(f"  {warning}")


def _after_pandoc(job: Job, doc: source.Document, opts: dict, html: Path, failed: list[str],
                  result: BuildResult, pandoc_warnings: list | None = None) -> None:
    """The warnings only the written HTML can tell: remote files kept as links, where the
    maths comes from, and what else pandoc could not fetch."""
    text = html.read_text(encoding="utf-8")
    later = [*(pandoc_warnings or []), *remote_warnings(doc, opts, text),
             *mathmethod.warnings(opts, text, job.path)]
    remote = {url for url, _, _ in doc.remote}
    later += [DeckWarning(f"pandoc could not fetch {ref}: its link is kept (a missing file, "
                          "or no network)", job.path)
              for ref in dict.fromkeys(failed)
              if ref not in remote and not _local_missing(doc, job.path.parent / ref)]
    result.warnings = doc.warnings + later
    _emit_warnings(job.progress.emit, later)


def _local_missing(doc: source.Document, path: Path) -> bool:
    """Whether ``path`` is a local image already reported missing (with its line)."""
    return any(f"(looked for {path.resolve()})" in w.message for w in doc.warnings)


def remote_warnings(doc: source.Document, opts: dict, html: str) -> list[DeckWarning]:
    """One warning per remote image, background or logo: without embed-resources it stays a
    link, as under Quarto; with it, pandoc embeds it when it can fetch it, and a link that
    is still in the HTML could not be fetched (no network)."""
    refs = list(doc.remote)
    logo = opts.get("logo")
    if logo and libs.is_remote(logo):
        refs.append((logo, *opts.origin("logo")))
    out = []
    for url, file, line in refs:
        if not opts["embed-resources"]:
            out.append(DeckWarning(f"{url} is remote: the deck links it (as Quarto does "
                                   "without embed-resources), so it shows only with the "
                                   "network", file, line))
        elif url in html or url.replace("&", "&amp;") in html:
            out.append(DeckWarning(f"{url} could not be fetched to embed it (no network?): "
                                   "the deck keeps the link, so it shows only with the "
                                   "network; Quarto would embed it", file, line))
    return out
