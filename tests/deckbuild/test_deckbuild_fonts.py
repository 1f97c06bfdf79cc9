"""Fonts as Quarto names and paints them (issue 19).

- ``mainfont`` / ``monofont`` set the theme's font variables with no fallback added
  (quarto-cli src/format/reveal/format-reveal-theme.ts, pandocVariablesToRevealDefaults,
  and src/core/css.ts, asCssFont), below any theme file's own value;
- a theme file may name reveal.js's own variables ($mainFont), as Quarto's theme honours;
- built-in themes name Quarto's font stacks; League Gothic is loaded from reveal.js's fonts,
  as Quarto loads it.

Expected stacks are those of Quarto's themes (src/resources/formats/revealjs/themes/*.scss,
Quarto 1.6 on). Each deck is written by its test and built once (HTML only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deck_helpers import open_deck
from deckbuild import browser, theme
from deckbuild.build import BuildSettings, build_document

DECK = """---
title: Fonts
format:
  revealjs:
    embed-resources: true
{front}---

## Words

Plain words.

Words with `inline code` in them.
"""


def _build(root: Path, front: str, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True)
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    (root / "deck.qmd").write_text(DECK.format(front=front))
    return build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None).html


DECKS = {
    "mainfont": ('    mainfont: "CMU Bright"\n    monofont: "Fira Mono, monospace"\n', None),
    # a theme file's own value wins over mainfont (the options are the lowest user layer)
    "theme-wins": ('    mainfont: "CMU Bright"\n    theme: [default, t.scss]\n',
                   {"t.scss": "/*-- scss:defaults --*/\n$font-family-sans-serif: Georgia, serif;\n"}),
    "reveal-names": ("    theme: [default, t.scss]\n",
                     {"t.scss": "/*-- scss:defaults --*/\n$mainFont: 'Body Face', serif;\n"
                                "$headingFont: 'Head Face', sans-serif;\n"}),
    "serif": ("    theme: serif\n", None),
    "beige": ("    theme: beige\n", None),
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fonts")
    html = {name: _build(tmp / name, front, files) for name, (front, files) in DECKS.items()}
    with browser.browser() as ctx:
        out = {}
        for name, path in html.items():
            page = open_deck(ctx, path)
            page.evaluate("() => Reveal.slide(1)")
            page.evaluate("() => document.fonts.ready")
            out[name] = page
        yield out


FAMILIES = """() => { const s = Reveal.getCurrentSlide(), cs = e => getComputedStyle(e);
  return {main: cs(document.querySelector('.reveal')).fontFamily, heading: cs(s.querySelector('h2')).fontFamily,
          weight: cs(s.querySelector('h2')).fontWeight, code: cs(s.querySelector('p code')).fontFamily}; }"""


def painted(page, selector: str) -> set[tuple[str, bool]]:
    """(family, whether a web font) of what Chromium painted the element's text with."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    cdp.detach()
    return {(f["familyName"], f["isCustomFont"]) for f in fonts}


def test_css_font_list_quotes_names_as_quarto_does():
    """asCssFont: names with a space are quoted unless already quoted; empty names go."""
    assert theme.css_font_list("CMU Bright") == '"CMU Bright"'
    assert theme.css_font_list("Fira Code, monospace") == '"Fira Code", monospace'
    assert theme.css_font_list("'Open Sans',sans-serif, ") == "'Open Sans', sans-serif"


def test_mainfont_names_only_that_font_and_the_browser_default_paints_it(pages):
    """mainfont: CMU Bright (not installed) is the whole stack of body text and headings,
    so Chromium paints the text in its default font, as it does Quarto's deck (the
    corpus deck bamiesking-nqmx: Liberation Serif); monofont sets inline code's font."""
    page = pages["mainfont"]
    assert page.evaluate(FAMILIES) == {"main": '"CMU Bright"', "heading": '"CMU Bright"',
                                       "weight": "600", "code": '"Fira Mono", monospace'}
    # a probe in the browser's default font, painted in the window (fixed, on top) and laid
    # out before its fonts are read (two frames): an unpainted node reports no fonts
    page.evaluate("""() => new Promise(done => { const p = document.createElement('p'); p.id = 'probe';
      p.style.cssText = 'font-family: initial; position: fixed; top: 0; left: 0; z-index: 9999; margin: 0';
      p.textContent = 'Plain words'; document.body.appendChild(p);
      requestAnimationFrame(() => requestAnimationFrame(done)); })""")
    default = painted(page, "#probe")
    assert painted(page, ".present p") == default
    assert not any(custom for _, custom in default)


def test_a_theme_files_value_wins_over_mainfont(pages):
    assert pages["theme-wins"].evaluate(FAMILIES)["main"] == "Georgia, serif"


def test_reveal_js_font_variables_are_honoured(pages):
    """$mainFont and $headingFont (reveal.js's own names, mapped by Quarto's theme)."""
    got = pages["reveal-names"].evaluate(FAMILIES)
    assert (got["main"], got["heading"]) == ('"Body Face", serif', '"Head Face", sans-serif')


def test_built_in_themes_name_quartos_stacks(pages):
    """serif: Palatino's stack for text and headings; beige: Lato for text, League Gothic
    for headings at Quarto's heading weight (600; Quarto's beige does not change it)."""
    serif = '"Palatino Linotype", "Book Antiqua", Palatino, FreeSerif, serif'
    got = pages["serif"].evaluate(FAMILIES)
    assert (got["main"], got["heading"]) == (serif, serif)
    got = pages["beige"].evaluate(FAMILIES)
    assert (got["main"], got["heading"], got["weight"]) == ("Lato, sans-serif",
                                                            '"League Gothic", sans-serif', "600")


def test_league_gothic_is_loaded_as_quarto_loads_it(pages):
    """beige's headings are painted in League Gothic from reveal.js's font files (a web
    font), not in a fallback."""
    assert painted(pages["beige"], ".present h2") == {("League Gothic", True)}
