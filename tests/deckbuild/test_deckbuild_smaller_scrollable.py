"""Document-wide `smaller: true` and `scrollable: true` (issue 18: they were accepted by the
schema, then dropped). Real Quarto puts `smaller` on the `.reveal` element (its support
plugin, applyGlobalStyles) so every slide's text shrinks, and makes every slide scroll
(`.reveal .slide { overflow-y: auto }` in its styles.html); deckbuild writes the classes
on the `.reveal` element. Checked in the HTML and, for what the slides look like, in
Chromium: every kind of slide (title slide, section slide, slide, `---` slide, a cell's
`output-location: slide` slide), and a slide's own `{.smaller}` / `{.scrollable}`."""

import re
from pathlib import Path

import pytest

from deckbuild import browser
from deckbuild.build import BuildSettings, build_document

CONFIG = """project:
  output-dir: _output
format:
  revealjs:
    html-math-method: katex
    embed-resources: true
    self-contained-math: true
{extra}"""

# the title slide's first paragraph is its date (Quarto's title block puts authors in divs)
DECK = """---
title: "Sizes"
author: "A. Author"
date: 2024-01-02
{front}---

Words on the title slide's neighbour.

# A section

Words on the section slide.

## Plain {{#plain}}

Words on a plain slide.

## Own classes {{#own .smaller .scrollable}}

Words on a slide with its own classes.

```{{python}}
#| output-location: slide
print("words from a cell")
```

---

Words on a slide without a title.
"""

# per slide, in order: its id and classes, the font size of its first paragraph or code
# block, of its h1/h2 title (null: none), and whether it scrolls (the slides are measured
# whether reveal.js shows them or not)
MEASURE = """() => Array.from(document.querySelectorAll('.reveal .slides section:not(.stack)'))
  .map(s => {
    const p = s.querySelector('p, pre'), h = s.querySelector(':scope > h1, :scope > h2');
    const px = el => el ? parseFloat(getComputedStyle(el).fontSize) : null;
    return {id: s.id, classes: s.className, text: px(p), title: px(h),
            scrolls: ['auto', 'scroll'].includes(getComputedStyle(s).overflowY)};
  })"""


def _build(root: Path, config: str = "", front: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "_quarto.yml").write_text(CONFIG.format(extra=config))
    (root / "deck.qmd").write_text(DECK.format(front=front))
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    return result.html


def _reveal_classes(html: Path) -> set[str]:
    return set(re.search(r'<div class="(reveal[^"]*)"', html.read_text()).group(1).split())


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """The same deck three times: plain; smaller and scrollable in _quarto.yml; and
    both set there but turned off again in the document's front matter."""
    tmp = tmp_path_factory.mktemp("sizes")
    both = "    smaller: true\n    scrollable: true\n"
    return {"plain": _build(tmp / "plain"),
            "both": _build(tmp / "both", both),
            "off": _build(tmp / "off", both, "smaller: false\nscrollable: false\n")}


@pytest.fixture(scope="module")
def measured(decks):
    out = {}
    with browser.browser() as ctx:
        for name, html in decks.items():
            page = ctx.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.as_uri(), wait_until="load")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
            out[name] = page.evaluate(MEASURE)
            assert errors == [], errors
            page.close()
    return out


def test_the_options_are_classes_of_the_reveal_element(decks):
    assert {"smaller", "scrollable"} <= _reveal_classes(decks["both"])
    for name in ("plain", "off"):     # the document's `false` overrides the project's `true`
        assert not {"smaller", "scrollable"} & _reveal_classes(decks[name]), name


def test_smaller_shrinks_the_text_of_every_slide_and_keeps_titles(measured):
    """The title slide, the slide before the first heading, a section slide, slides, the
    output slide of a cell and a `---` slide: text at 0.7, titles as they were."""
    plain, both = measured["plain"], measured["both"]
    assert [s["id"] for s in both] == [s["id"] for s in plain]
    kinds = " ".join(s["classes"] for s in both)
    assert len(both) == 7 and "quarto-title-block" in kinds and "level1" in kinds
    assert "output-location-slide" in kinds
    for p, s in zip(plain, both):
        assert p["text"] and s["text"], s
        if "smaller" in p["classes"]:      # the slide's own class: smaller in both decks, once
            assert s["text"] == pytest.approx(p["text"]), s
        else:
            assert s["text"] == pytest.approx(0.7 * p["text"], abs=0.05), s
        assert s["title"] == pytest.approx(p["title"], abs=0.05), s   # None == None too


def test_a_slides_own_classes_still_work_and_reach_its_output_slide(measured):
    """Without the options only the slide marked {.smaller .scrollable} (and the slide
    its cell's output moves to, as Quarto copies the classes there) is smaller and scrolls."""
    plain = measured["plain"]
    own = [s for s in plain if "smaller" in s["classes"]]
    assert [s["id"] for s in own] == ["own", ""] and "output-location-slide" in own[1]["classes"]
    assert [s for s in plain if s["scrolls"]] == own
    body = next(s for s in plain if s["id"] == "plain")["text"]
    assert own[0]["text"] == pytest.approx(0.7 * body, abs=0.05)
    others = [s for s in plain if s not in own and s["id"] != "title-slide"]
    assert {s["text"] for s in others} == {body}


def test_scrollable_makes_every_slide_scroll(measured):
    assert all(s["scrolls"] for s in measured["both"]), measured["both"]
    assert [s["id"] for s in measured["off"] if s["scrolls"]] == \
        [s["id"] for s in measured["plain"] if s["scrolls"]]
