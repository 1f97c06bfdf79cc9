"""Quarto's revealjs defaults that a viewer sees (issue 19): auto-stretch, centred title and
section slides, controls: auto, the theme's sizes and margins, Source Sans Pro, the
highlight colours and the code copy button.

Expected values come from Quarto's source (src/format/reveal/format-reveal.ts: applyStretch,
handleCenteredSlides; plugins/support/support.js: controlsAuto; styles.html, footer.css,
quarto.scss) and from computed styles measured in Chromium in the corpus decks of real
Quarto renders (/work/shared/quarto-corpus, Quarto 1.4.549 to 1.9.38; the newest values
where versions differ). Three small decks are built once (HTML only) and opened once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deck_helpers import open_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document
from deckbuild.options import REVEALJS_DEFAULTS

CONFIG = """project:
  output-dir: _output
format:
  revealjs:
    html-math-method: katex
    embed-resources: true
    self-contained-math: true
    footer: "A footer"
    slide-number: true
{extra}"""

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 400 200">'
       '<rect width="400" height="200" fill="#8ab"/></svg>')

DECK = """---
title: "Defaults"
subtitle: "What Quarto does without being asked"
{front}---

# A part

## One image

![](pic.svg)

## Captioned {{#captioned}}

![A caption under the picture](pic.svg)

## A cell figure

```{{python}}
from IPython.display import SVG
SVG(data='''{svg}''')
```

## In columns

:::: {{.columns}}
::: {{.column}}
![](pic.svg)
:::
::: {{.column}}
Words beside it.
:::
::::

## In a fragment

::: {{.fragment}}
![](pic.svg)
:::

## With a height

![](pic.svg){{height=150}}

## Slide opted out {{.nostretch}}

![](pic.svg)

## Image opted out

![](pic.svg){{.nostretch}}

## Two images

![](pic.svg) ![](pic.svg)

## Among text

Words and ![](pic.svg) more words.

## Text

Words with `inline code` and **bold** in them.

- An item
    - A nested item
- Another item

| Name | Value |
|------|-------|
| a    | 1     |

## Code

```python
import math

def area(r):
    return round(math.pi * r ** 2, 2)  # square units
```
"""

VERTICAL = """---
title: "Vertical"
---

# Stack

## Below

Words.
"""


def _build(root: Path, extra: str = "", deck: str | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "_quarto.yml").write_text(CONFIG.format(extra=extra))
    (root / "pic.svg").write_text(SVG)
    (root / "deck.qmd").write_text(deck or DECK.format(front="", svg=SVG))
    return build_document(root / "deck.qmd", BuildSettings(html_only=True),
                          lambda *a, **k: None).html


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("defaults")
    off = ("    auto-stretch: false\n    center-title-slide: false\n    code-copy: false\n"
           "    controls: true\n")
    return {"default": _build(tmp / "default"), "off": _build(tmp / "off", off),
            "vertical": _build(tmp / "vertical", "    navigation-mode: vertical\n", VERTICAL)}


@pytest.fixture(scope="module")
def pages(decks):
    with browser.browser() as ctx:   # 1155 x 770: the 1050 x 700 slide at scale 1
        out = {}
        for name, html in decks.items():
            errors = []
            page = open_deck(ctx, html, errors=errors)
            page.evaluate("() => document.fonts.ready")
            assert errors == [], errors
            out[name] = page
        yield out


def go(page, title: str) -> None:
    """Show the slide whose heading reads ``title``."""
    page.evaluate("""(t) => { const s = Reveal.getSlides().find(s => {
        const h = s.querySelector('h1, h2'); return h && h.textContent.trim() === t; });
        const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v || 0); }""", title)


IMAGE = """(t) => { const s = Reveal.getSlides().find(s => (s.querySelector('h1, h2') || {}).textContent === t);
  const imgs = Array.from(s.querySelectorAll('img'));
  return imgs.map(i => ({stretch: i.classList.contains('r-stretch'), parent: i.parentElement.tagName,
    classes: i.className, id: i.id, next: i.nextElementSibling && i.nextElementSibling.outerHTML,
    height: parseFloat(i.style.height) || null})); }"""


def test_the_defaults_are_quartos():
    """format-reveal.ts: ``auto-stretch: true`` in the format's metadata, controls "auto"
    when not a boolean; center-title-slide and code-copy on unless set to false."""
    d = REVEALJS_DEFAULTS
    assert (d["auto-stretch"], d["center-title-slide"], d["code-copy"], d["controls"]) == \
        (True, True, "hover", "auto")


def test_a_slide_with_one_image_stretches_it_to_the_remaining_height(pages):
    """applyStretch: the slide's only image gets r-stretch and becomes a child of the
    section, where reveal.js sizes it to the height the title leaves (700 px slide)."""
    page = pages["default"]
    go(page, "One image")
    [img] = page.evaluate(IMAGE, "One image")
    assert img["stretch"] and img["parent"] == "SECTION"
    box = page.evaluate("() => Reveal.getCurrentSlide().querySelector('img').getBoundingClientRect().toJSON()")
    slide = page.evaluate("() => document.querySelector('.reveal .slides').getBoundingClientRect().toJSON()")
    assert box["height"] > 450 and box["bottom"] <= slide["bottom"] + 1


def test_a_captioned_figure_and_a_cells_figure_are_stretched(pages):
    """A figure's image moves out of its div, takes its id and alignment, and its caption
    follows as p.caption (0.7em); a code cell's figure is stretched too."""
    page = pages["default"]
    [img] = page.evaluate(IMAGE, "Captioned")
    assert img["stretch"] and img["parent"] == "SECTION" and "quarto-figure-center" in img["classes"]
    assert img["next"].startswith('<p class="caption">') and "A caption under the picture" in img["next"]
    go(page, "Captioned")
    size = page.evaluate("() => getComputedStyle(Reveal.getCurrentSlide().querySelector('p.caption')).fontSize")
    assert size == "28px"
    [cell] = page.evaluate(IMAGE, "A cell figure")
    assert cell["stretch"] and cell["parent"] == "SECTION"


@pytest.mark.parametrize("title", ["In columns", "In a fragment", "With a height", "Slide opted out",
                                   "Image opted out", "Two images", "Among text"])
def test_images_quarto_leaves_alone_are_not_stretched(pages, title):
    images = pages["default"].evaluate(IMAGE, title)
    assert images and not any(i["stretch"] for i in images)
    assert not any("nostretch" in i["classes"] for i in images)   # Quarto drops the class


def test_auto_stretch_false_stretches_nothing(pages):
    assert pages["off"].evaluate(IMAGE, "One image")[0]["stretch"] is False


SLIDE = """(t) => { const s = t === null ? document.getElementById('title-slide') : Reveal.getSlides().find(
    s => (s.querySelector('h1, h2') || {}).textContent === t);
  return {center: s.classList.contains('center'), top: parseFloat(s.style.top) || 0,
          height: s.offsetHeight, scroll: s.scrollHeight, align: getComputedStyle(s).textAlign,
          h1: s.querySelector('h1') && getComputedStyle(s.querySelector('h1')).fontSize}; }"""


def test_title_slide_and_section_slides_are_centred(pages):
    """handleCenteredSlides: the title slide and every .title-slide (pandoc's level-1
    section slides) get .center, which reveal.js centres vertically; the title slide's
    text is centred (quarto.scss); a level-1 heading is 2.5em under linear navigation."""
    page = pages["default"]
    for title in (None, "A part"):
        go(page, title) if title else page.evaluate("() => Reveal.slide(0)")
        slide = page.evaluate(SLIDE, title)
        # reveal.js centres a slide by its scrollHeight, which holds the heading's glyph
        # boxes (Source Sans Pro is 1.34em tall in a 1.2em line): a lone level-1 heading
        # sits at 287px, as in Quarto's render of cambridge-iccs-pytorch-intro
        assert slide["center"] and slide["top"] == pytest.approx((700 - slide["scroll"]) / 2, abs=1)
    assert page.evaluate(SLIDE, None)["align"] == "center"
    assert page.evaluate(SLIDE, "A part")["h1"] == "100px"
    go(page, "Text")
    plain = page.evaluate(SLIDE, "Text")
    assert not plain["center"] and plain["height"] == 700 and plain["align"] == "left"


def test_center_title_slide_false_leaves_them_at_the_top(pages):
    for title in (None, "A part"):
        assert pages["off"].evaluate(SLIDE, title)["center"] is False


CONTROLS = """() => ({config: Reveal.getConfig().controls,
  shown: getComputedStyle(document.querySelector('.reveal .controls')).display !== 'none'})"""


def test_controls_auto_hides_them_under_linear_navigation(pages):
    """support.js controlsAuto: hidden unless embedded elsewhere or vertical slides are
    reachable; an explicit ``controls: true`` wins."""
    assert pages["default"].evaluate(CONTROLS) == {"config": False, "shown": False}
    assert pages["off"].evaluate(CONTROLS) == {"config": True, "shown": True}
    assert pages["vertical"].evaluate(CONTROLS) == {"config": True, "shown": True}


SIZES = """() => { const s = Reveal.getCurrentSlide(), cs = e => getComputedStyle(e);
  const li = s.querySelector(':scope > ul > li'), nested = s.querySelector('li li');
  const td = s.querySelector('td'), code = s.querySelector('p code');
  return {root: cs(document.querySelector('.reveal')).fontSize, h2: cs(s.querySelector('h2')).fontSize,
    li: [cs(li).marginTop, cs(li).marginBottom], nested: cs(nested).fontSize,
    ul: cs(s.querySelector(':scope > ul')).marginBottom, table: cs(s.querySelector('table')).fontSize,
    td: cs(td).padding, code: cs(code).fontSize, codeColor: cs(code).color,
    footer: cs(document.querySelector('.reveal > .footer')).fontSize,
    number: cs(document.querySelector('.reveal > .slide-number')).fontSize,
    codeFont: cs(document.documentElement).getPropertyValue('--r-code-font')}; }"""


def test_text_sizes_and_margins_are_quartos(pages):
    """Measured in the corpus: list items 0.4em above, 0.2em below, a list 0.5em above
    what follows, nested lists at their parent's size; tables at the text's size with
    0.2em 0.5em cells; inline code at 0.875em (1.6.27 on) in the highlight style's
    function colour; footer 18px, slide number 16px (footer.css); --r-code-font set."""
    page = pages["default"]
    go(page, "Text")
    m = page.evaluate(SIZES)
    assert (m["root"], m["h2"], m["li"], m["nested"], m["ul"]) == \
        ("40px", "64px", ["16px", "8px"], "40px", "20px")
    assert (m["table"], m["td"], m["code"], m["codeColor"]) == ("40px", "8px 20px", "35px", "rgb(71, 88, 171)")
    assert (m["footer"], m["number"]) == ("18px", "16px")
    assert "monospace" in m["codeFont"]


def test_columns_are_inline_blocks_side_by_side_without_a_gap(pages):
    page = pages["default"]
    go(page, "In columns")
    cols = page.evaluate("""() => Array.from(Reveal.getCurrentSlide().querySelectorAll('.column'))
        .map(c => ({display: getComputedStyle(c).display, box: c.getBoundingClientRect().toJSON(),
                    slide: Reveal.getCurrentSlide().getBoundingClientRect().width}))""")
    assert [c["display"] for c in cols] == ["inline-block", "inline-block"]
    left, right = cols[0]["box"], cols[1]["box"]
    assert left["top"] == right["top"] and right["left"] == pytest.approx(left["right"], abs=0.5)
    assert left["width"] == pytest.approx(cols[0]["slide"] / 2, abs=0.5)


CODE = """() => { const pre = Reveal.getCurrentSlide().querySelector('pre.sourceCode'), cs = e => getComputedStyle(e);
  const code = pre.querySelector('code'), span = c => cs(pre.querySelector('span.' + c));
  return {pre: [cs(pre).fontSize, cs(pre).lineHeight], code: cs(code).padding,
    border: cs(pre.parentElement).border, kw: [span('kw').color, span('kw').fontWeight],
    cf: span('cf').fontWeight, im: span('im').color, dv: span('dv').color, co: span('co').color, button: !!pre.querySelector(':scope > button.code-copy-button'),
    opacity: pre.querySelector('.code-copy-button') && cs(pre.querySelector('.code-copy-button')).opacity}; }"""


def test_code_blocks_look_like_quartos(pages):
    """0.55em code at line height 1.3 (1.7 on), 6px 9px padding in a 1px #bbb border; the
    arrow highlight style's colours (keyword #003B4F and control flow bold, import #00769E,
    number #AD0000, comment #5E5E5E)."""
    page = pages["default"]
    go(page, "Code")
    m = page.evaluate(CODE)
    assert m["pre"] == ["22px", "28.6px"] and m["code"] == "6px 9px"
    assert m["border"] == "1px solid rgb(187, 187, 187)"
    assert m["kw"] == ["rgb(0, 59, 79)", "700"] and m["cf"] == "700"
    assert (m["im"], m["dv"], m["co"]) == ("rgb(0, 118, 158)", "rgb(173, 0, 0)", "rgb(94, 94, 94)")


def test_code_copy_button_shows_on_hover_and_copies(pages):
    """code-copy (default "hover"): a button at the top right of each code block, shown
    while the pointer is over the block; a click copies the code."""
    page = pages["default"]
    go(page, "Code")
    assert page.evaluate(CODE)["button"] and page.evaluate(CODE)["opacity"] == "0"
    page.hover(".present pre.sourceCode")
    page.wait_for_function("() => getComputedStyle(document.querySelector('.present .code-copy-button')).opacity === '1'")
    page.click(".present .code-copy-button")
    page.wait_for_selector(".present .code-copy-button-checked")
    assert not pages["off"].evaluate("() => document.querySelectorAll('.code-copy-button').length")


def test_text_is_painted_in_source_sans_pro(pages):
    """The embedded Source Sans Pro is what Chromium paints (not a fallback such as
    Liberation Sans): CSS.getPlatformFontsForNode on a title, a list item and bold text
    (Quarto's 600 face, as Quarto ships no 700). The faces are the files Quarto ships
    (reveal.js's, version 1.050), whose semibold is named SourceSansPro-Semibold."""
    page = pages["default"]
    go(page, "Text")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    painted = {}
    for selector in (".present > h2", ".present li li", ".present strong", ".present p code"):
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        painted[selector] = {(f["postScriptName"], f["isCustomFont"]) for f in fonts}
        assert all(f["familyName"].startswith("Source Sans Pro") for f in fonts) == \
            (selector != ".present p code"), (selector, fonts)
    assert painted[".present > h2"] == {("SourceSansPro-Semibold", True)}
    assert painted[".present li li"] == {("SourceSansPro-Regular", True)}
    assert painted[".present strong"] == {("SourceSansPro-Semibold", True)}
