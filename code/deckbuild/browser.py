"""Stage 6: the browser. Playwright drives Debian's Chromium (never a downloaded browser)
to print the PDF, take a screenshot of every slide and check every slide.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import findings as form_checks
from .contact_sheet import NAME as CONTACT_SHEET, write_contact_sheet
from .errors import DeckError
from .resources import read_resource

CHROMIUM = os.environ.get("DECKBUILD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome-error:")


@contextlib.contextmanager
def browser(viewport: tuple[int, int] = (1155, 770)):
    """A fresh persistent Chromium context (new user data dir, removed afterwards)."""
    if not Path(CHROMIUM).exists():
        raise DeckError(f"Chromium not found at {CHROMIUM}: run `make deck` "
                        "(apt-get install chromium) first")
    from playwright.sync_api import sync_playwright

    user_dir = tempfile.mkdtemp(prefix="deckbuild-chromium-")
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                user_dir, executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": viewport[0], "height": viewport[1]}, device_scale_factor=1)
            try:
                yield ctx
            finally:
                ctx.close()
    finally:
        shutil.rmtree(user_dir, ignore_errors=True)


def _open(ctx, url: str, log: "Report | None" = None):
    page = ctx.new_page()
    if log is not None:
        page.on("console", lambda m: m.type == "error" and log.console.append(m.text))
        page.on("pageerror", lambda e: log.console.append(str(e)))
    page.goto(url, wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
    page.evaluate("() => document.fonts.ready")
    return page


def _block_network(ctx, log: "Report | None" = None):
    def handle(route):
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
        else:
            if log is not None:
                log.requests.append(url)
            route.abort()
    ctx.route("**/*", handle)
    if log is not None:
        ctx.on("request", lambda r: (not r.url.startswith(LOCAL_SCHEMES)) and r.url not in log.requests
               and log.requests.append(r.url))


def print_pdf(html: Path, pdf: Path, ctx=None, handout: bool = False) -> None:
    """Print ``html`` with reveal.js's print-pdf layout: one page per slide, each with the
    footer, logo and slide number (print.js); ``handout``: each slide's speaker notes
    printed under it (reveal.js's showNotes), still one page per slide."""
    with (contextlib.nullcontext(ctx) if ctx else browser()) as c:
        _block_network(c)
        page = _open(c, html.resolve().as_uri() + "?print-pdf" + ("&showNotes=true" if handout else ""))
        page.wait_for_function("() => document.documentElement.classList.contains('deckbuild-print-ready')",
                               timeout=20000)
        page.evaluate("() => document.fonts.ready")
        page.pdf(path=str(pdf), print_background=True, prefer_css_page_size=True)
        page.close()


def pdf_pages(pdf: Path) -> int:
    from pypdf import PdfReader

    return len(PdfReader(str(pdf)).pages)


@dataclass
class SlideResult:
    index: int
    h: int
    v: int
    title: str
    problems: list = field(default_factory=list)
    screenshot: str = ""
    findings: list = field(default_factory=list)   # form checks (findings.py)


@dataclass
class Report:
    slides: list = field(default_factory=list)
    console: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    total_slides: int = 0
    speaker_view: list = field(default_factory=list)
    contact_sheet: str = ""   # <screenshots>/contact-sheet.png when screenshots were taken

    def problems(self) -> list[str]:
        out = [f"console error: {c}" for c in self.console]
        out += [f"request outside file://: {r}" for r in self.requests]
        out += [f"speaker view: {p}" for p in self.speaker_view]
        for s in self.slides:
            out += [f"slide {s.index + 1} ({s.title or 'untitled'}): {p['kind']}: {p['what']}"
                    + (f" at {p['rect']}" if "rect" in p else "") for p in s.problems]
        return out

    def findings(self, check: str | None = None) -> list[dict]:
        """Form findings (small text, raster image, thin slide, title-only, raw repr),
        of one check or all; each names its slide, title and string (findings.message)."""
        return [f for s in self.slides for f in s.findings if check in (None, f["check"])]

    def failing(self) -> dict[str, list[dict]]:
        """The findings that fail the deck, by check (findings.failing)."""
        return form_checks.failing(self.findings())


def check_deck(html: Path, screenshots: Path | None = None, ctx=None,
               speaker_view: bool = True) -> Report:
    """Visit every slide with all fragments shown; check it and optionally screenshot it."""
    report = Report()
    with (contextlib.nullcontext(ctx) if ctx else browser()) as c:
        _block_network(c, report)
        page = _open(c, html.resolve().as_uri(), report)
        page.add_script_tag(content=read_resource("checks.js"))
        # screenshots and measurements must not catch a fragment half-way through its fade
        page.add_style_tag(content="*, *::before, *::after { transition: none !important; "
                                   "animation: none !important; }")
        report.total_slides = page.evaluate("() => Reveal.getTotalSlides()")
        slides = page.evaluate("""() => Reveal.getSlides().map(s => {
            const i = Reveal.getIndices(s);
            const h = s.querySelector('h1, h2, h3');
            let title = '';
            if (h) {   // the heading as read: without KaTeX's MathML copy of its formulas
                const c = h.cloneNode(true);
                c.querySelectorAll('.katex-mathml, aside').forEach(e => e.remove());
                title = c.textContent.replace(/\\s+/g, ' ').trim();
            }
            return {h: i.h, v: i.v || 0, title};
        })""")
        if screenshots is not None:
            if screenshots.exists():
                shutil.rmtree(screenshots)
            screenshots.mkdir(parents=True)
        for n, s in enumerate(slides):
            page.evaluate("([h, v]) => { Reveal.slide(h, v); while (Reveal.nextFragment()) {} }",
                          [s["h"], s["v"]])
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            result = SlideResult(n, s["h"], s["v"], s["title"])
            result.problems = page.evaluate("() => window.__deckbuildCheckSlide()")
            result.problems += page.evaluate("() => window.__deckbuildChrome()")
            form = page.evaluate("() => window.__deckbuildForm()")
            result.findings = form_checks.slide_findings(n + 1, s["title"], form)
            if screenshots is not None:
                shot = screenshots / f"slide-{n + 1:02d}.png"
                page.screenshot(path=str(shot))
                result.screenshot = str(shot)
            report.slides.append(result)
        form_checks.merge_chrome_into(report.slides)
        if screenshots is not None and report.slides:
            report.contact_sheet = str(write_contact_sheet(
                [Path(s.screenshot) for s in report.slides], screenshots / CONTACT_SHEET))
        if speaker_view:
            report.speaker_view = _check_speaker_view(c, page)
        page.close()
    return report


def _check_speaker_view(ctx, page) -> list[str]:
    """Open the speaker view (the notes plugin's pop-up) and check it shows the notes."""
    problems = []
    page.evaluate("() => Reveal.slide(0)")
    with ctx.expect_page(timeout=10000) as info:
        page.evaluate("() => Reveal.getPlugin('notes').open()")
    popup = info.value
    try:
        popup.wait_for_load_state()
        popup.wait_for_function("() => document.querySelector('.speaker-controls-notes') !== null",
                                timeout=10000)
        # go to the first slide that has notes; the speaker view must show them
        has_notes = page.evaluate("""() => {
            const s = Reveal.getSlides().find(x => x.querySelector('aside.notes'));
            if (!s) return null;
            const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v || 0);
            return s.querySelector('aside.notes').textContent.trim().slice(0, 30);
        }""")
        if has_notes:
            try:
                popup.wait_for_function(
                    "(t) => (document.querySelector('.speaker-controls-notes') || {}).textContent.includes(t)",
                    arg=has_notes, timeout=10000)
            except Exception:  # noqa: BLE001
                problems.append("speaker view does not show the current slide's notes")
    except Exception as exc:  # noqa: BLE001
        problems.append(f"speaker view did not open: {exc}")
    finally:
        popup.close()
    return problems
