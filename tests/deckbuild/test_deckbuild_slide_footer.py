"""A slide's own footer, as Quarto documents it
(https://quarto.org/docs/presentations/revealjs/#footer-logo): a `::: footer` div on a
slide replaces the deck's footer while that slide is shown, and `data-footer="false"`
shows no footer on it (the support plugin's addFooter, read in quarto-cli's
src/resources/formats/revealjs/plugins/support/support.js). Found by the fidelity harness
on a corpus deck rendered by Quarto 1.4.554, whose three slide footers we did not show.
"""

import pytest

from deck_helpers import open_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document

DECK = """---
title: Footers
format:
  revealjs:
    footer: "Deck footer"
    embed-resources: true
---

## Plain

Text.

## Own

Text.

::: footer
Slide footer
:::

## None {data-footer="false"}

Text.

## Plain again

Text.
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("footer")
    (root / "deck.qmd").write_text(DECK)
    html = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None).html
    with browser.browser() as ctx:
        p = open_deck(ctx, html, size=(1050, 700))
        yield p
        p.close()


def visible_footers(page, index):
    """The text of every footer painted in the window while slide ``index`` is shown."""
    page.evaluate("(i) => Reveal.slide(i)", index)
    return page.evaluate("""() => Array.from(document.querySelectorAll('.footer'))
        .filter(f => { const r = f.getBoundingClientRect(), s = getComputedStyle(f);
                       return r.width > 0 && r.height > 0 && s.display !== 'none'
                              && s.visibility !== 'hidden'; })
        .map(f => f.textContent.trim())""")


def test_the_decks_footer_is_shown_on_a_plain_slide(page):
    assert visible_footers(page, 1) == ["Deck footer"]


def test_a_slides_own_footer_replaces_the_decks(page):
    assert visible_footers(page, 2) == ["Slide footer"]


def test_data_footer_false_shows_none(page):
    assert visible_footers(page, 3) == []


def test_leaving_the_slide_brings_the_decks_footer_back(page):
    visible_footers(page, 2)
    assert visible_footers(page, 4) == ["Deck footer"]
    # and going back shows the slide's own one again, once
    assert visible_footers(page, 2) == ["Slide footer"]
