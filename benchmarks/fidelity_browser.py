"""The browser side of the fidelity harness: open a reveal.js deck in headless Chromium with
the network blocked, walk its slides with every fragment shown, and collect what each
slide paints (text blocks, code lines, images, chrome) with its box, computed font and the
font Chromium actually painted with (CDP ``CSS.getPlatformFontsForNode``).

Pages without reveal.js work too (the whole ``<body>``, or its first ``<section>``, is one
slide): the harness's own tests use such pages.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import re
import shutil
import tempfile
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

CHROMIUM = os.environ.get("DECKBUILD_CHROMIUM", "/usr/bin/chromium")
# npm's copies of the CDN libraries the corpus pages load (benchmarks/fidelity_npm:
# ``npm ci --prefix benchmarks/fidelity_npm``), each at the version the page asks for.
CDN_NPM = Path(__file__).resolve().parent / "fidelity_npm" / "node_modules"
CDN_ROUTES = [  # (address pattern, npm alias folder); the rest of the address is the file
    (r"https://cdn\.jsdelivr\.net/npm/mathjax@2\.7\.9/(.*)", "mathjax-2.7.9"),
    (r"https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/2\.7\.9/(.*)", "mathjax-2.7.9"),
    (r"https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/2\.7\.0/(.*)", "mathjax-2.7.0"),
    (r"https://cdn\.jsdelivr\.net/npm/mathjax@3/(.*)", "mathjax-3"),
    (r"https://cdn\.jsdelivr\.net/npm/katex@0\.15\.1/(.*)", "katex-0.15.1"),
    (r"https://cdnjs\.cloudflare\.com/ajax/libs/mermaid/10\.9\.0/(mermaid\.min\.js)", "mermaid-10.9.0/dist"),
]


def cdn_file(url: str) -> Path | None:
    """The local npm file standing in for a CDN address (None: not one we serve)."""
    for pattern, folder in CDN_ROUTES:
        m = re.fullmatch(pattern, url.split("?", 1)[0])
        if m:
            path = CDN_NPM / folder / m.group(1)
            if not path.is_file():
                raise FileNotFoundError(f"{url} is served from {path}, which is missing: run "
                                        "npm ci --prefix benchmarks/fidelity_npm")
            return path
    return None


def missing_file_stand_ins(meta: dict) -> dict[str, Path]:
    """Files a corpus deck left out to stay light, by the end of their path, with the npm
    file that stands in for them (meta.json's ``npm_stand_ins``: {"path end": "alias/file"})."""
    return {end: CDN_NPM / rel for end, rel in (meta.get("npm_stand_ins") or {}).items()}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu"]
FALLBACK_VIEWPORT = (1280, 720)

# Everything runs in the page. ``collect(root)`` returns the painted elements of ``root``
# (and the deck's chrome), marks one "probe" element per text element (the parent of its
# first text node) with data-fid-probe, and returns the probes in document order so that
# CDP's querySelectorAll answer can be zipped with them.
COLLECT_JS = r"""
() => {
  const MATH = '.katex, mjx-container, .math, .MathJax, math';
  const norm = s => (s || '').replace(/\s+/g, ' ').trim();
  const reveal = !!(window.Reveal && Reveal.getCurrentSlide && Reveal.getCurrentSlide());
  const root = reveal ? Reveal.getCurrentSlide()
                      : (document.querySelector('section') || document.body);
  const vw = window.innerWidth, vh = window.innerHeight;
  document.querySelectorAll('[data-fid-probe]').forEach(e => e.removeAttribute('data-fid-probe'));

  function visible(el, r) {
    if (r.width < 0.5 || r.height < 0.5) return false;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility !== 'visible') return false;
    if (r.right <= 0 || r.bottom <= 0 || r.left >= vw || r.top >= vh) return false;
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.display === 'none') return false;
      if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
      const ar = a.getBoundingClientRect();
      if (r.right <= ar.left || r.left >= ar.right || r.bottom <= ar.top || r.top >= ar.bottom)
        return false;
    }
    return true;
  }
  // text of el without math (replaced by a marker); list items without their nested blocks
  function text(el, kind) {
    const c = el.cloneNode(true);
    c.querySelectorAll('.katex-mathml, aside.notes, script, style').forEach(e => e.remove());
    c.querySelectorAll(MATH).forEach(e => e.replaceWith(' \u27e8math\u27e9 '));
    if (kind === 'li' || kind === 'dd')
      c.querySelectorAll('ul, ol, p, pre, table, div, figure').forEach(e => e.remove());
    return norm(c.textContent);
  }
  function imageName(el) {
    if (el.tagName.toLowerCase() === 'svg') return '';
    const src = el.currentSrc || el.getAttribute('src') || el.getAttribute('data-src') || '';
    if (src.startsWith('data:')) return src;
    try { return decodeURIComponent(new URL(src, location.href).pathname.split('/').pop()); }
    catch (e) { return src.split('/').pop(); }
  }
  // the probe: el itself when it holds text directly (CDP reports the fonts of a node's
  // own text nodes), else the parent of its first text node outside maths
  function probeOf(el) {
    if (Array.from(el.childNodes).some(n => n.nodeType === 3 && n.nodeValue.trim())) return el;
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT, {acceptNode: n =>
      (n.nodeValue.trim() && !n.parentElement.closest(MATH + ', .katex-mathml'))
        ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP});
    const t = w.nextNode();
    return t ? t.parentElement : null;
  }

  const seen = new Set(), owned = new Set(), out = [], probes = [];
  function add(el, kind) {
    const image = kind === 'image' || kind === 'logo';
    if (seen.has(el) || (!image && owned.has(el))) return;
    seen.add(el);
    if (el.closest('aside.notes')) return;
    const r = el.getBoundingClientRect();
    if (!visible(el, r)) return;
    const t = image ? imageName(el) : text(el, kind);
    if (!image && !t) return;
    const cs = getComputedStyle(el);
    const item = {kind, tag: el.tagName.toLowerCase(), text: t,
                  box: [r.left, r.top, r.right, r.bottom].map(x => Math.round(x * 100) / 100),
                  font_size: image ? null : parseFloat(cs.fontSize),
                  font_family: image ? null : cs.fontFamily,
                  has_math: !image && !!el.querySelector(MATH), probe: null};
    if (!image) {
      const p = probeOf(el);
      if (p) {
        let id = probes.indexOf(p);
        if (id < 0) { id = probes.length; probes.push(p); p.setAttribute('data-fid-probe', id); }
        item.probe = id;
      }
    }
    out.push(item);
  }
  const inMath = el => !!el.parentElement && !!el.parentElement.closest(MATH);
  const q = (sel) => Array.from(root.querySelectorAll(sel));
  q('.callout-title').forEach(e => add(e, 'callout-title'));
  q('figcaption, caption, .caption, .figure-caption').forEach(e => add(e, 'caption'));
  q('.callout-title *, figcaption *, caption *').forEach(e => owned.add(e));
  q('h1, h2, h3, h4, h5, h6').forEach(e => add(e, 'heading'));
  q('td, th').forEach(e => add(e, 'cell'));
  q('td *, th *').forEach(e => owned.add(e));
  q('li').forEach(e => add(e, 'li'));
  q('p').forEach(e => add(e, 'p'));
  q('dt, dd').forEach(e => add(e, e.tagName.toLowerCase()));
  q('pre code').forEach(code => {
    // pandoc's line spans: cb3-1, annotated-cell-8-1, ...
    const lines = Array.from(code.children).filter(s => s.tagName === 'SPAN' && /-\d+$/.test(s.id));
    if (lines.length) lines.forEach(s => add(s, 'code')); else add(code, 'code');
  });
  q('img, svg').forEach(e => {
    if (inMath(e) || (e.tagName.toLowerCase() === 'svg' && e.parentElement.closest('svg'))) return;
    add(e, 'image');
  });
  if (reveal) {
    document.querySelectorAll('.reveal .footer').forEach(e => add(e, 'footer'));
    document.querySelectorAll('.reveal .slide-number').forEach(e => add(e, 'slide-number'));
    document.querySelectorAll('.reveal .slide-logo').forEach(e => add(e, 'logo'));
  }
  // each typeset formula (MathJax 2 or 3, KaTeX), its text the TeX source
  const formulas = q('.MathJax, .MathJax_Display, mjx-container, .katex-display, .katex')
    .filter(e => !(e.parentElement && e.parentElement.closest('.MathJax, .MathJax_Display, mjx-container, .katex')));
  formulas.forEach(e => {
    const r = e.getBoundingClientRect();
    if (seen.has(e) || !visible(e, r)) return;
    seen.add(e);
    let tex = '';
    const script = e.classList.contains('MathJax_Display') || e.classList.contains('MathJax')
      ? (e.closest('.MathJax_Preview, .MathJax_Display') || e).nextElementSibling : null;
    if (script && script.tagName === 'SCRIPT') tex = script.textContent;
    const ann = e.querySelector('annotation[encoding="application/x-tex"]');
    if (!tex && ann) tex = ann.textContent;
    if (!tex) tex = e.getAttribute('data-tex') || norm(e.textContent);
    const cs = getComputedStyle(e);
    out.push({kind: 'math', tag: e.tagName.toLowerCase(), text: norm(tex),
              box: [r.left, r.top, r.right, r.bottom].map(x => Math.round(x * 100) / 100),
              font_size: parseFloat(cs.fontSize), font_family: cs.fontFamily,
              has_math: true, probe: null, painted: null});
  });
  const maths = q(MATH).filter(e => !inMath(e) && visible(e, e.getBoundingClientRect())).length;
  const order = Array.from(document.querySelectorAll('[data-fid-probe]'))
    .map(e => +e.getAttribute('data-fid-probe'));
  return {elements: out, maths, probe_order: order};
}
"""

SLIDES_JS = r"""
() => Reveal.getSlides().map(s => {
  const i = Reveal.getIndices(s);
  const h = s.querySelector('h1, h2, h3, h4, h5, h6');
  let title = '';
  if (h) {
    const c = h.cloneNode(true);
    c.querySelectorAll('.katex, mjx-container, .math, aside').forEach(e => e.remove());
    title = c.textContent.replace(/\s+/g, ' ').trim();
  }
  const body = s.cloneNode(true);
  body.querySelectorAll('aside.notes, script, style').forEach(e => e.remove());
  return {h: i.h, v: i.v || 0, title, text_chars: body.textContent.replace(/\s+/g, '').length};
})
"""

SHOW_SLIDE_JS = r"""
([h, v]) => {
  Reveal.slide(h, v);
  document.querySelectorAll('.fragment').forEach(f => f.classList.add('visible'));
}
"""

# Let the page settle: the current slide's images loaded (reveal.js sets a lazy image's
# src when its slide comes near; at most IMAGE_WAIT_MS), two animation frames, fonts ready.
SETTLE_JS = r"""
(waitMs) => {
  const slide = window.Reveal && Reveal.getCurrentSlide ? Reveal.getCurrentSlide() : document;
  const images = Array.from((slide || document).querySelectorAll('img'))
    .concat(Array.from(document.querySelectorAll('.slide-logo')))
    .filter(img => img.tagName === 'IMG' && (img.getAttribute('src') || img.getAttribute('data-src'))
                   && !img.complete);
  const loaded = Promise.all(images.map(img => new Promise(r => {
    img.addEventListener('load', r, {once: true}); img.addEventListener('error', r, {once: true});
  })));
  // maths typeset (MathJax 2's queue, MathJax 3's startup) and mermaid diagrams drawn
  const typeset = new Promise(r => {
    if (window.MathJax && MathJax.Hub && MathJax.Hub.Queue) MathJax.Hub.Queue(() => r());
    else if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(r, r);
    else r();
  });
  const diagrams = new Promise(r => {
    const t0 = Date.now();
    (function poll() {
      const pending = document.querySelectorAll('pre.mermaid:not([data-processed]), .mermaid-js:not([data-processed])');
      if (!pending.length || Date.now() - t0 > waitMs) r(); else setTimeout(poll, 50);
    })();
  });
  const waited = Promise.race([Promise.all([loaded, typeset, diagrams]),
                               new Promise(r => setTimeout(r, waitMs))]);
  return waited.then(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(
    () => document.fonts.ready.then(() => r())))));
}
"""
IMAGE_WAIT_MS = 5000


@contextlib.contextmanager
def browser():
    """A fresh Chromium context (own user data dir, removed afterwards) with every request
    that is not a file: URL aborted; ``ctx.fidelity_blocked`` lists the aborted URLs."""
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"Chromium not found at {CHROMIUM} (set DECKBUILD_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    user_dir = tempfile.mkdtemp(prefix="fidelity-chromium-")
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                user_dir, executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                viewport={"width": FALLBACK_VIEWPORT[0], "height": FALLBACK_VIEWPORT[1]},
                device_scale_factor=1)
            blocked: list[str] = []

            def route(r):
                url = r.request.url
                if url.startswith("file:"):
                    path = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path))
                    stand_in = next((f for end, f in ctx.fidelity_missing.items()
                                     if url.endswith(end)), None)
                    if stand_in is not None and not path.exists():
                        r.fulfill(path=str(stand_in))
                    else:
                        r.continue_()
                    return
                local = cdn_file(url)
                if local is not None:
                    r.fulfill(path=str(local), headers={
                        "content-type": mimetypes.guess_type(local.name)[0] or "application/octet-stream",
                        "access-control-allow-origin": "*"})
                else:
                    blocked.append(url)
                    r.abort()
            ctx.route("**/*", route)
            ctx.fidelity_blocked = blocked
            ctx.fidelity_missing = {}
            try:
                yield ctx
            finally:
                ctx.close()
    finally:
        shutil.rmtree(user_dir, ignore_errors=True)


def open_page(ctx, url: str, viewport: tuple[int, int] = FALLBACK_VIEWPORT,
              reveal: bool = True):
    """A page at ``url`` with this viewport, reveal.js ready (when ``reveal``), transitions
    off, fonts loaded."""
    page = ctx.new_page()
    try:
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        page.goto(url, wait_until="load")
        if reveal:
            if not page.evaluate("() => !!window.Reveal"):
                raise RuntimeError(f"no reveal.js (window.Reveal) on {url} once it loaded")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30000)
            page.evaluate("() => { Reveal.configure({transition: 'none', "
                          "backgroundTransition: 'none'}); Reveal.layout(); }")
        page.add_style_tag(content="*, *::before, *::after { transition: none !important; "
                                   "animation: none !important; }")
        page.evaluate(SETTLE_JS, IMAGE_WAIT_MS)
    except Exception:
        page.close()
        raise
    return page


def _pixels(value) -> int | None:
    """A reveal.js size in pixels (1050, "1050", "1050px"), None for "100%" and the like."""
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().removesuffix("px")
    return int(float(text)) if text.replace(".", "", 1).isdigit() else None


def configured_size(page) -> tuple[tuple[int, int], str]:
    """The deck's configured slide size (Reveal.getConfig()) as a viewport, and a note when
    it is relative (e.g. "100%"): then 1280x720."""
    width, height = page.evaluate("() => [Reveal.getConfig().width, Reveal.getConfig().height]")
    size = [_pixels(width), _pixels(height)]
    if None not in size:
        return (size[0], size[1]), ""
    return FALLBACK_VIEWPORT, (f"configured size {width} x {height} is relative: viewport "
                               f"{FALLBACK_VIEWPORT[0]}x{FALLBACK_VIEWPORT[1]}")


def resize(page, viewport: tuple[int, int]) -> None:
    if page.viewport_size != {"width": viewport[0], "height": viewport[1]}:
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        page.evaluate("() => Reveal.layout()")
        page.evaluate(SETTLE_JS, IMAGE_WAIT_MS)


def most_glyphs(fonts: list[dict]) -> str | None:
    """The family that painted the most glyphs, from CSS.getPlatformFontsForNode's
    answer ([{familyName, glyphCount, ...}], a family may come more than once)."""
    glyphs = Counter()
    for f in fonts:
        glyphs[f["familyName"]] += f["glyphCount"]
    return glyphs.most_common(1)[0][0] if glyphs else None


class FontProbe:
    """Painted font families of the probe elements, through one CDP session per page."""

    def __init__(self, page):
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("DOM.enable")
        self.cdp.send("CSS.enable")

    def families(self, order: list[int]) -> dict[int, str | None]:
        """{probe id: family with the most glyphs} for the probes marked in the page,
        ``order`` being their ids in document order."""
        root = self.cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = self.cdp.send("DOM.querySelectorAll",
                              {"nodeId": root, "selector": "[data-fid-probe]"})["nodeIds"]
        if len(nodes) != len(order):
            raise RuntimeError(f"font probes: {len(order)} marked, CDP found {len(nodes)}")
        out = {}
        for probe_id, node in zip(order, nodes):
            fonts = self.cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
            out[probe_id] = most_glyphs(fonts)
        return out

    def close(self):
        self.cdp.detach()


def collect_slide(page, fonts: FontProbe) -> dict:
    """The painted elements of the page's current slide, each with its painted family."""
    got = page.evaluate(COLLECT_JS)
    painted = fonts.families(got["probe_order"])
    for e in got["elements"]:
        e["painted"] = painted.get(e.pop("probe"))
    return {"elements": got["elements"], "maths": got["maths"]}


def capture_deck(ctx, url: str, viewport: tuple[int, int] | None = None,
                 progress=None) -> dict:
    """Every slide of the reveal.js deck at ``url`` seen in ``viewport`` (None: the deck's
    configured size): {"viewport": [w, h], "viewport_note", "slides": [{index, h, v, title,
    elements, maths}], "blocked": [URLs aborted while the page loaded]}."""
    before = len(ctx.fidelity_blocked)
    page = open_page(ctx, url, viewport or FALLBACK_VIEWPORT)
    fonts = FontProbe(page)
    try:
        note = ""
        if viewport is None:
            viewport, note = configured_size(page)
        resize(page, viewport)
        slides = page.evaluate(SLIDES_JS)
        for n, s in enumerate(slides):
            if progress:
                progress(n + 1, len(slides))
            page.evaluate(SHOW_SLIDE_JS, [s["h"], s["v"]])
            page.evaluate(SETTLE_JS, IMAGE_WAIT_MS)
            s["index"] = n
            s.update(collect_slide(page, fonts))
    finally:
        fonts.close()
        page.close()
    return {"viewport": list(viewport), "viewport_note": note, "slides": slides,
            "blocked": sorted(set(ctx.fidelity_blocked[before:]))}


def capture_page(ctx, url: str, viewport: tuple[int, int]) -> dict:
    """One page without reveal.js as a single slide (the harness's tests use it)."""
    page = open_page(ctx, url, viewport, reveal=False)
    fonts = FontProbe(page)
    try:
        return collect_slide(page, fonts)
    finally:
        fonts.close()
        page.close()
