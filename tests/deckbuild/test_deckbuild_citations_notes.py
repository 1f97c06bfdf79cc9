"""Citations, footnotes and asides as Quarto's revealjs format places them (issue 19).

Citations: pandoc's citeproc with the deck's ``bibliography`` and ``csl``, citations
linked to the slide holding the references, which is smaller and scrollable
(quarto-cli src/format/reveal/format-reveal.ts: handleRefs, handleCitationLinks).
Footnotes: at the foot of their own slide, numbered from 1 on each, in one aside with the
slide's asides (coalesceAsides), unless ``reference-location: document`` (a last slide
"Footnotes"). Each deck is written by its test, built once (HTML only) and opened once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deck_helpers import open_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document

BIB = """@article{kaur, title = {A cascaded link}, author = {Kaur, N.}, year = {2022},
  journal = {Trans. Links}}
@article{dierikx, title = {Long fibre links}, author = {Dierikx, E.}, year = {2016},
  journal = {Trans. Links}}
"""

# a numeric style: "[1,2]" in the text, "[1] Title" in the references
CSL = """<?xml version="1.0" encoding="utf-8"?>
<style xmlns="http://purl.org/net/xbiblio/csl" class="in-text" version="1.0">
  <info><title>Tiny numeric</title><id>tiny-numeric</id>
    <updated>2024-01-01T00:00:00+00:00</updated></info>
  <citation><layout prefix="[" suffix="]" delimiter=","><text variable="citation-number"/></layout></citation>
  <bibliography entry-spacing="0"><layout>
    <text variable="citation-number" prefix="[" suffix="] "/><text variable="title"/>
  </layout></bibliography>
</style>
"""

CITED = """---
title: Cited
format:
  revealjs:
    embed-resources: true
bibliography: refs.bib
csl: tiny.csl
---

## Earlier work

Two links came before [@kaur; @dierikx], as @sec-after says.

## After {#sec-after}

Nobody wrote this [@nobody].

## References
"""

NOTES = """---
title: Notes
format:
  revealjs:
    embed-resources: true
{extra}---

## First

A claim^[The first note.] and another[^b].

[^b]: The second note.

## Second

One more^[The third note.]

::: aside
Beside the point.
:::
"""


def _build(root: Path, qmd: str, files: dict[str, str] | None = None):
    root.mkdir(parents=True)
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    (root / "deck.qmd").write_text(qmd)
    return build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("notes")
    return {"cited": _build(tmp / "cited", CITED, {"refs.bib": BIB, "tiny.csl": CSL}),
            "slide": _build(tmp / "slide", NOTES.format(extra="")),
            "document": _build(tmp / "document",
                               NOTES.format(extra="    reference-location: document\n"))}


@pytest.fixture(scope="module")
def pages(built):
    with browser.browser() as ctx:   # 1155 x 770: the 1050 x 700 slide at scale 1
        out = {}
        for name, result in built.items():
            errors = []
            page = open_deck(ctx, result.html, errors=errors)
            assert errors == [], errors
            out[name] = page
        yield out


SLIDES = """() => Reveal.getSlides().map(s => ({id: s.id, classes: Array.from(s.classList),
  title: (s.querySelector('h1, h2') || {}).textContent || ''}))"""


def test_citations_are_processed_with_the_bibliography_and_its_style(pages):
    """[@kaur; @dierikx] becomes "[1,2]" in the deck's CSL style, each number linking to
    the references slide (Quarto's link-citations: true), which lists both entries."""
    page = pages["cited"]
    cite = page.evaluate("""() => { const c = document.querySelector('span.citation[data-cites="kaur dierikx"]');
      return {text: c.textContent, hrefs: Array.from(c.querySelectorAll('a[role="doc-biblioref"]'))
        .map(a => a.getAttribute('href'))}; }""")
    assert cite == {"text": "[1,2]", "hrefs": ["#/references", "#/references"]}
    entries = page.evaluate("() => Array.from(document.querySelectorAll('#refs .csl-entry'))"
                            ".map(e => e.textContent.replace(/\\s+/g, ' ').trim())")
    assert entries == ["[1] A cascaded link", "[2] Long fibre links"]


def test_the_references_slide_is_the_last_slide_smaller_and_scrollable(pages):
    """handleRefs: the slide holding #refs (here the closing "References" slide, where
    pandoc puts the bibliography) gets .smaller and .scrollable; no slide is added."""
    slides = pages["cited"].evaluate(SLIDES)
    assert [s["title"] for s in slides] == ["Cited", "Earlier work", "After", "References"]
    last = slides[-1]
    assert last["id"] == "references" and {"smaller", "scrollable"} <= set(last["classes"])
    assert pages["cited"].evaluate("() => document.getElementById('refs').closest('section').id") \
        == "references"


def test_cross_references_are_not_citations_and_missing_keys_are_warnings(built, pages):
    """@sec-after is a cross-reference (Quarto resolves those before citeproc): citeproc
    leaves it alone; a key no bibliography holds is a warning naming the .qmd line, and
    the build goes on (as under Quarto)."""
    text = pages["cited"].evaluate("() => document.querySelector('#earlier-work p').textContent")
    assert "@sec-after" in text and "sec-after?" not in text
    warnings = [w for w in built["cited"].warnings if "citation" in w.message]
    assert len(warnings) == 1 and "@nobody" in warnings[0].message
    assert Path(warnings[0].file).name == "deck.qmd" and warnings[0].line == 16


NOTES_OF = """(t) => { const s = Reveal.getSlides().find(x => (x.querySelector('h2') || {}).textContent === t);
  const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v);
  const aside = s.querySelector(':scope > aside:not(.notes)');
  const box = aside && aside.getBoundingClientRect(), sbox = s.getBoundingClientRect();
  return {sups: Array.from(s.querySelectorAll('p sup')).map(x => x.textContent),
    refs: s.querySelectorAll('a[role="doc-noteref"]').length,
    divs: aside ? Array.from(aside.querySelectorAll(':scope > div')).map(d => d.textContent.trim()) : [],
    notes: aside ? Array.from(aside.querySelectorAll('ol.aside-footnotes > li')).map(l => l.textContent.trim()) : [],
    backlinks: s.querySelectorAll('.footnote-back').length, last: s.lastElementChild === aside,
    gap: aside && Math.round(sbox.bottom - box.bottom), size: aside && getComputedStyle(aside).fontSize}; }"""


def test_footnotes_sit_at_the_foot_of_their_own_slide(pages):
    """Quarto's default (reference-location other than document): each slide's notes in
    an ol.aside-footnotes inside one aside, the slide's last element, 20px above its foot
    at 0.7em; the references become plain superscripts numbered from 1 on every slide."""
    page = pages["slide"]
    first = page.evaluate(NOTES_OF, "First")
    assert first == {"sups": ["1", "2"], "refs": 0, "divs": [],
                     "notes": ["The first note.", "The second note."], "backlinks": 0,
                     "last": True, "gap": 20, "size": "28px"}
    second = page.evaluate(NOTES_OF, "Second")
    assert second["sups"] == ["1"] and second["notes"] == ["The third note."]
    assert second["divs"] == ["Beside the point."]     # the slide's aside comes first
    assert [s["title"] for s in page.evaluate(SLIDES)] == ["Notes", "First", "Second"]
    assert page.evaluate("() => document.querySelector('section.footnotes') === null")


def test_reference_location_document_keeps_a_footnotes_slide(pages):
    """reference-location: document: the notes stay on a last slide titled "Footnotes"
    (smaller, scrollable, no back links), which every reference links to."""
    page = pages["document"]
    slides = page.evaluate(SLIDES)
    assert [s["title"] for s in slides] == ["Notes", "First", "Second", "Footnotes"]
    assert {"smaller", "scrollable"} <= set(slides[-1]["classes"])
    got = page.evaluate("""() => ({notes: Array.from(document.querySelectorAll('section.footnotes li'))
        .map(l => l.textContent.trim()), back: document.querySelectorAll('.footnote-back').length,
      hrefs: Array.from(document.querySelectorAll('a[role="doc-noteref"]')).map(a => a.getAttribute('href'))})""")
    assert got == {"notes": ["The first note.", "The second note.", "The third note."],
                   "back": 0, "hrefs": ["#/footnotes"] * 3}
    assert page.evaluate(NOTES_OF, "Second")["divs"] == ["Beside the point."]
