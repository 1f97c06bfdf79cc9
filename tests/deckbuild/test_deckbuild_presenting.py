"""Issue 22, "Presenting it": what a presenter met showing the deck.

- the slide menu (key M) listed a title with maths as "The stack: N=6N = 6N=6" (the
  heading's textContent: KaTeX's MathML, its TeX annotation and its HTML one after another);
- the PDF showed the deck's footer on a slide with its own `::: footer`, and there was no
  printed form of the speaker notes (now `render --handout`: <name>-handout.pdf);
- the browser checks did not see text painted under the footer while still inside the slide;
- in a narrow window (the speaker view's "upcoming" preview) the footer wrapped onto
  several lines over the slide;
- the viewport meta forbade pinch-zoom on a phone;
- every output (HTML, PDF, handout, screenshots) gets the umask's mode.
"""

from __future__ import annotations

import os
import re
import stat

import pytest

from deck_helpers import open_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document

FOOTER = "Transformer Lab · Attention Is All You Need (Vaswani et al., 2017)"
DECK = f"""---
title: Presenting
format:
  revealjs:
    html-math-method: katex
    embed-resources: true
    self-contained-math: true
    footer: "{FOOTER}"
    logo: logo.png
    slide-number: true
---

## The stack: $N = 6$

Six layers.

::: notes
Say why six layers of the stack.
:::

## Second slide

Two.

::: notes
Notes of the second slide, read aloud.
:::

## Own footer

Three.

::: footer
A footer of its own
:::

## No notes here

Four.
"""
NOTES = {1: "Say why six layers of the stack.", 2: "Notes of the second slide, read aloud."}


def _write_deck(root, text=DECK):
    from PIL import Image

    Image.new("RGB", (40, 40), (20, 140, 110)).save(root / "logo.png")
    (root / "deck.qmd").write_text(text, encoding="utf-8")
    return root / "deck.qmd"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    doc = _write_deck(tmp_path_factory.mktemp("presenting"))
    return build_document(doc, BuildSettings(handout=True), lambda *a, **k: None)


@pytest.fixture
def ctx():
    """A browser for one test (the builds of other tests start their own)."""
    with browser.browser() as c:
        yield c


def _pages(pdf):
    from pypdf import PdfReader

    return PdfReader(str(pdf)).pages


def _images(page) -> list[str]:
    """Names of the image XObjects drawn on a PDF page (at any depth of form XObjects)."""
    found = []

    def walk(resources):
        xobjects = (resources or {}).get("/XObject") or {}
        for name, ref in xobjects.items():
            obj = ref.get_object()
            if obj.get("/Subtype") == "/Image":
                found.append(name)
            elif obj.get("/Subtype") == "/Form":
                walk(obj.get("/Resources"))
    walk(page.get("/Resources"))
    return found


# -- item 5: the menu --------------------------------------------------------------------

def test_a_menu_title_with_maths_reads_once(built, ctx):
    page = open_deck(ctx, built.html, size=(1155, 770))
    page.keyboard.press("m")
    page.wait_for_selector(".slide-menu.open")
    entries = page.eval_on_selector_all(".slide-menu a", """els => els.map(a => ({
        text: a.textContent.replace(/\\s+/g, ' ').trim(), label: a.getAttribute('aria-label'),
        html: a.querySelectorAll('.katex-html').length, mathml: a.querySelectorAll('.katex-mathml').length,
        width: a.getBoundingClientRect().width}))""")
    page.close()
    stack = entries[1]
    assert stack["text"] == "The stack: N=6", entries      # was "The stack: N=6N = 6N=6"
    assert stack["label"] == "The stack: N = 6"
    assert (stack["html"], stack["mathml"]) == (1, 0)      # typeset once, as on the slide
    assert [e["text"] for e in entries[2:]] == ["Second slide", "Own footer", "No notes here"]


# -- item 10: pinch-zoom -------------------------------------------------------------------

def test_the_viewport_meta_allows_pinch_zoom(built):
    html = built.html.read_text(encoding="utf-8")
    metas = re.findall(r'<meta name="viewport" content="([^"]*)"', html)
    assert len(metas) == 1, metas
    assert "user-scalable=no" not in metas[0] and "maximum-scale" not in metas[0], metas[0]
    assert "width=device-width" in metas[0]


# -- item 6: footer and logo on every PDF page; the handout --------------------------------

def test_every_pdf_page_has_the_footer_the_slide_shows_and_the_logo(built):
    pages = _pages(built.pdf)
    assert len(pages) == 5
    for n, page in enumerate(pages):
        text = page.extract_text()
        flat = " ".join(text.split())
        if n == 3:   # the slide with its own footer shows that one, as on screen
            assert "A footer of its own" in flat and "Vaswani" not in flat, (n, text)
        else:
            assert FOOTER in flat, (n, text)
        assert _images(page), f"page {n + 1} has no image (the logo)"


def test_the_handout_has_each_slides_notes_under_it(built):
    assert built.handout == built.pdf.with_name("deck-handout.pdf") and built.handout.is_file()
    pages = _pages(built.handout)
    assert len(pages) == len(_pages(built.pdf)) == 5
    titles = ["Presenting", "The stack", "Second slide", "Own footer", "No notes here"]
    for n, page in enumerate(pages):
        flat = " ".join(page.extract_text().split())
        assert titles[n] in flat, (n, flat)
        for m, notes in NOTES.items():
            assert (notes in flat) == (m == n), (n, notes, flat)
        assert _images(page), f"handout page {n + 1} has no logo"
    # the handout's pages are taller than the slides' (the notes go below the slide)
    assert float(pages[0].mediabox.height) > float(_pages(built.pdf)[0].mediabox.height)


def test_render_handout_writes_it_only_when_asked(tmp_path):
    doc = _write_deck(tmp_path)
    result = build_document(doc, BuildSettings(), lambda *a, **k: None)
    assert result.handout is None and not (tmp_path / "deck-handout.pdf").exists()
    again = build_document(doc, BuildSettings(handout=True), lambda *a, **k: None)
    assert not again.up_to_date and again.handout.is_file()
    assert build_document(doc, BuildSettings(handout=True), lambda *a, **k: None).up_to_date


# -- item 8: the footer in a small window ----------------------------------------------------

@pytest.mark.parametrize("query", ["", "?receiver&progress=false&controls=false"])
def test_the_footer_stays_on_one_line_in_a_small_window(built, ctx, query):
    """The speaker view's "upcoming" preview is the deck in an iframe of a few hundred px."""
    page = ctx.new_page()
    page.set_viewport_size({"width": 320, "height": 240})
    page.goto(built.html.resolve().as_uri() + query, wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
    page.evaluate("() => document.fonts.ready")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    box = page.evaluate("""() => {
        const f = document.querySelector('.reveal > .footer-default');
        const range = document.createRange(); range.selectNodeContents(f);
        const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0)
                             .map(r => Math.round(r.top)));
        const r = f.getBoundingClientRect();
        return {lines: tops.size, height: r.height, right: f.scrollWidth, width: window.innerWidth,
                px: parseFloat(getComputedStyle(f).fontSize),
                lineHeight: parseFloat(getComputedStyle(f.firstElementChild).lineHeight)}
    }""")
    page.close()
    assert box["lines"] == 1, box
    assert box["height"] <= box["lineHeight"] + 1, box
    assert box["right"] <= box["width"] and box["px"] >= 6, box


@pytest.mark.parametrize("size", [(320, 240), (390, 844), (640, 360)])
def test_the_footer_clears_the_logo_and_the_menu_button_in_a_small_window(built, ctx, size):
    """Centred in the window, a long footer ran under the logo (bottom right) and the menu
    button (bottom left) in a narrow window: its text keeps 4 px from both."""
    page = ctx.new_page()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(built.html.resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
    page.evaluate("() => document.fonts.ready")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    found = page.evaluate("""() => {
        const f = document.querySelector('.reveal > .footer-default');
        const text = [], walk = document.createTreeWalker(f, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            const range = document.createRange(); range.selectNodeContents(n);
            text.push(...Array.from(range.getClientRects()).filter(r => r.width > 0));
        }
        const near = (a, b) => a.left < b.right + 4 && b.left < a.right + 4 && a.top < b.bottom && b.top < a.bottom;
        const others = ['.reveal > .slide-logo', '.reveal .slide-menu-button']
            .map(s => document.querySelector(s)).filter(e => e && e.getBoundingClientRect().width > 0);
        return {others: others.length, px: parseFloat(getComputedStyle(f).fontSize),
                touching: others.filter(o => text.some(t => near(t, o.getBoundingClientRect())))
                                .map(o => o.className)};
    }""")
    page.close()
    assert found["others"] == 2 and found["touching"] == [], found
    # shrunk only as far as it must: where the full size fits (640 px), the full size
    assert found["px"] >= 6 and (found["px"] == 14) == (size[0] >= 640), found


# -- item 7: content under the footer ---------------------------------------------------------

OVERFLOW_DECK = """---
title: Tall
format:
  revealjs:
    html-math-method: katex
    embed-resources: true
    footer: "Footer words here"
---

## Six px over

::: {style="height: 553px"}
:::

Last line of text 6 px below.

## Under the footer

::: {style="height: 546px"}
:::

::: {style="text-align: center"}
A centred last line, inside the slide
:::

## Just above it

::: {style="height: 530px"}
:::

::: {style="text-align: center"}
A centred last line, inside the slide
:::
"""


def test_text_painted_under_the_footer_is_an_overflow(tmp_path):
    """The footer is fixed in the window at pixel sizes: in a 720 px high window (a 720p
    projector) it covers more of the slide's foot than in the checking window. Text that
    ends inside the slide but under the footer's text there is reported; text 16 px higher
    is not."""
    (tmp_path / "deck.qmd").write_text(OVERFLOW_DECK, encoding="utf-8")
    html = build_document(tmp_path / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None).html
    report = browser.check_deck(html, speaker_view=False)
    overflows = {s.index: [(p["what"], p["rect"]) for p in s.problems if p["kind"] == "overflow"]
                 for s in report.slides}
    assert overflows[0] == [] and overflows[3] == [], overflows
    assert any("Last line of text 6 px below" in w for w, _ in overflows[1]), overflows
    # inside the slide (its bottom at most 700), but under the footer's text (was not reported)
    [(what, rect)] = overflows[2]
    assert what == 'text p "A centred last line, inside the slide" runs under the footer "Footer words here"'
    assert 690 < rect[3] <= 700, rect


# -- item 11: modes ---------------------------------------------------------------------------

def test_every_output_gets_the_umasks_mode(tmp_path):
    doc = _write_deck(tmp_path)
    before = os.umask(0o027)
    try:
        result = build_document(doc, BuildSettings(handout=True), lambda *a, **k: None)
        shots = tmp_path / "deck_screenshots"
        browser.check_deck(result.html, shots, speaker_view=False)
    finally:
        os.umask(before)
    outputs = [result.html, result.pdf, result.handout, *sorted(shots.iterdir())]
    assert len(outputs) == 3 + 5 + 1      # five screenshots and the contact sheet
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in outputs}
    assert set(modes.values()) == {oct(0o640)}, modes
