"""The title slide, the TOC slide and the reveal.js options, as Quarto makes them (issue 19).

Expected values come from Quarto's source: the title slide's markup and CSS
(src/resources/formats/revealjs/pandoc/title-fancy/, title-slide.html, toc-slide.html),
the authors' normalisation (src/resources/filters/modules/authors.lua,
src/command/render/pandoc.ts), the dates (src/core/date.ts) and the reveal.js options
(src/format/reveal/metadata.ts, format-reveal.ts); and from the corpus of real Quarto
renders (/work/shared/quarto-corpus: alexsp32 shows "13.06.2024" for date "06.13.2024"
with date-format DD.MM.YYYY, bamiesking "20th June 2024" for 2024-06-20 with
"Do MMMM YYYY", askabalan "2025-10-01" for "October 2025").
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
import yaml

from deck_helpers import parse_html, open_deck
from deckbuild import browser, dates, titleblock
from deckbuild.build import BuildSettings, build_document
from deckbuild.options import Source, reveal_config, resolve_options
from deckbuild.strict import check_options


# -- authors -------------------------------------------------------------------------------

def test_a_string_author_is_one_author_with_that_name():
    assert titleblock.by_author({"author": "Ada *Lovelace*"}) == [
        {"name": {"literal": "Ada *Lovelace*"}}]


def test_author_objects_keep_url_email_orcid_and_affiliations():
    authors = titleblock.by_author({"author": [
        {"name": "Julia Roe", "email": "j@x.org", "orcid": "0000-0001-2345-6789",
         "url": "https://roe.example", "affiliation": "Uni A", "affiliation-url": "https://a.example"},
        {"name": {"given": "Ben", "family": "Ng"}, "affiliations": [{"name": "Lab B", "city": "Oslo"}]},
        "Cy Doe"]})
    assert [a["name"]["literal"] for a in authors] == ["Julia Roe", "Ben Ng", "Cy Doe"]
    assert (authors[0]["email"], authors[0]["orcid"], authors[0]["url"]) == \
        ("j@x.org", "0000-0001-2345-6789", "https://roe.example")
    assert authors[0]["affiliations"] == [{"name": "Uni A", "url": "https://a.example"}]
    assert authors[1]["affiliations"] == [{"name": "Lab B", "city": "Oslo"}]
    assert "affiliations" not in authors[2]


def test_institutes_attach_to_the_author_at_their_position_the_rest_to_the_last():
    authors = titleblock.by_author({"author": ["A", "B"], "institute": ["I1", "I2", "I3"]})
    assert [[f["name"] for f in a["affiliations"]] for a in authors] == [["I1"], ["I2", "I3"]]
    assert titleblock.by_author({"institute": "Nowhere"}) == []     # no author: not shown


def test_authors_wins_over_author_and_refs_find_their_affiliation():
    authors = titleblock.by_author({
        "author": "Ignored", "affiliations": [{"id": "u1", "name": "Uni One"}],
        "authors": [{"name": "Kept", "affiliations": [{"ref": "u1"}]}]})
    assert [a["name"]["literal"] for a in authors] == ["Kept"]
    assert authors[0]["affiliations"][0]["name"] == "Uni One"


def test_pandoc_meta_lists_the_names_as_author_and_institutes_as_a_list(tmp_path):
    meta = titleblock.pandoc_meta({"title": "T", "author": [{"name": "A B"}], "institute": "I"},
                                  tmp_path / "d.qmd")
    assert meta["author"] == ["A B"] and meta["institute"] == ["I"]
    assert meta["by-author"][0]["affiliations"] == [{"name": "I"}]


# -- dates ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, fmt, shown", [
    ("06.13.2024", "DD.MM.YYYY", "13.06.2024"),          # alexsp32
    (datetime.date(2024, 6, 20), "Do MMMM YYYY", "20th June 2024"),   # bamiesking (YAML date)
    ("October 2025", None, "2025-10-01"),                # askabalan: free text, iso by default
    ("2024-06-20", None, "2024-06-20"),
    ("03/07/2005", "long", "March 7, 2005"),             # Quarto's date styles
    ("03/07/2005", "full", "Monday, March 7, 2005"),
    ("2024-06-02", "dddd [the] Do of MMM YY", "Sunday the 2nd of Jun 24"),
    ({"value": "2024-06-20", "format": "DD/MM/YYYY"}, "YYYY", "20/06/2024"),
])
def test_dates_are_read_and_formatted_as_quarto_does(tmp_path, value, fmt, shown):
    text, warnings = dates.format_date(value, fmt, None, tmp_path / "d.qmd")
    assert (text, warnings) == (shown, [])


def test_today_and_last_modified_are_dates_of_this_day_and_of_the_file(tmp_path):
    doc = tmp_path / "d.qmd"
    doc.write_text("---\n---\n")
    stamp = datetime.datetime(2023, 3, 5, 12, 30).timestamp()
    os.utime(doc, (stamp, stamp))
    assert dates.format_date("last-modified", None, None, doc)[0] == "2023-03-05"
    today = datetime.date.today()
    assert dates.format_date("today", "DD/MM/YYYY", None, doc)[0] == today.strftime("%d/%m/%Y")


def test_a_date_no_parser_reads_shows_invalid_date_with_a_warning(tmp_path):
    text, [warning] = dates.format_date("the first day of spring", None, None, tmp_path / "d.qmd",
                                        (tmp_path / "d.qmd", 4))
    assert text == "Invalid Date" and warning.line == 4
    assert "'the first day of spring' is not a date" in warning.message


def test_month_names_follow_the_documents_language(tmp_path):
    assert dates.format_date("2024-06-20", "D MMMM YYYY", "fr", tmp_path / "d.qmd")[0] == "20 juin 2024"


# -- reveal.js options ---------------------------------------------------------------------

def _opts(tmp_path: Path, front: str):
    doc = tmp_path / "d.qmd"
    doc.write_text(f"---\n{front}---\n")
    return resolve_options(None, doc, Source(yaml.safe_load(front), doc, 2, front)), doc


def test_camel_case_reveal_options_are_read_as_quarto_reads_them(tmp_path):
    """metadata.ts: a reveal.js option may be written in camelCase (its template's variable);
    `slideNumber: true` counts the slides, c/t (format-reveal.ts)."""
    opts, doc = _opts(tmp_path, "title: T\nformat:\n  revealjs:\n    slideNumber: true\n"
                                "    fragmentInURL: true\n    pdfSeparateFragments: true\n")
    assert opts["slide-number"] is True and "slideNumber" not in opts
    cfg = reveal_config(opts)
    assert (cfg["slideNumber"], cfg["fragmentInURL"], cfg["pdfSeparateFragments"]) == ("c/t", True, True)
    assert opts.origin("slide-number") == (doc, 5)     # the line that spells it slideNumber
    assert not [w for w in check_options(opts, doc) if "not implemented" in w.message]


def test_table_of_contents_is_quartos_other_name_for_toc(tmp_path):
    opts, doc = _opts(tmp_path, "table-of-contents: true\n")
    assert opts["toc"] is True and not check_options(opts, doc)


def test_slide_number_true_under_vertical_navigation_counts_h_dot_v(tmp_path):
    opts, _ = _opts(tmp_path, "slide-number: true\nnavigation-mode: vertical\n")
    cfg = reveal_config(opts)
    assert (cfg["slideNumber"], cfg["navigationMode"]) == ("h.v", "default")


def test_the_later_spelling_of_one_option_wins_and_unknown_camel_case_is_reported(tmp_path):
    opts, doc = _opts(tmp_path, "slide-number: c\nslideNumber: h/v\naspectRatio: 16\n")
    assert opts["slide-number"] == "h/v"
    messages = [w.message for w in check_options(opts, doc)]
    assert "option 'aspectRatio' is not implemented by deckbuild and is ignored" in messages


def test_quarto_defaults_and_pass_through_options_reach_reveal(tmp_path):
    """Quarto's opinionated defaults: fragmentInURL false; auto-animate and friends are
    passed to Reveal.initialize as written."""
    opts, _ = _opts(tmp_path, "auto-animate-duration: 0.5\njump-to-slide: false\n")
    cfg = reveal_config(opts)
    assert cfg["fragmentInURL"] is False
    assert (cfg["autoAnimateDuration"], cfg["jumpToSlide"]) == (0.5, False)
    assert "autoAnimate" not in cfg           # unset: reveal.js's own default


# -- built decks: markup -------------------------------------------------------------------

DECK = """---
title: "A *title*"
subtitle: "The subtitle"
author:
  - name: Julia Roe
    email: julia@example.org
    orcid: 0000-0001-2345-6789
    url: https://roe.example
    affiliation: University of Somewhere
  - Ben Ng
institute: An institute
date: 2024-06-20
date-format: "Do MMMM YYYY"
title-slide-attributes:
  data-background-color: "#abcdef"
toc: true
toc-depth: 1
{extra}---

# Part one

## Slide a

Text.

## {{background-color="red"}}

Untitled.

# Part two

## Slide b

More.
"""


def words(node) -> str:
    """A node's text with pandoc's line wrapping undone."""
    return " ".join(node.text().split())


def _build(root: Path, extra: str = "", files: dict | None = None):
    root.mkdir(parents=True)
    (root / "deck.qmd").write_text(DECK.format(extra=extra))
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    return result, parse_html(result.html.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("title") / "deck")


def test_title_slide_has_quartos_title_block(built):
    _, page = built
    title = page.find("section", id="title-slide")
    assert "quarto-title-block" in title.classes and title.attrs["data-background-color"] == "#abcdef"
    assert words(title.find("h1", cls="title")) == "A title"
    assert words(title.find("p", cls="subtitle")) == "The subtitle"
    authors = title.find("div", cls="quarto-title-authors").find_all("div", cls="quarto-title-author")
    assert [words(a.find("div", cls="quarto-title-author-name")) for a in authors] == \
        ["Julia Roe", "Ben Ng"]
    first, second = authors
    links = first.find("div", cls="quarto-title-author-name").find_all("a")
    assert links[0].attrs["href"] == "https://roe.example"
    assert links[1].attrs["href"] == "https://orcid.org/0000-0001-2345-6789"
    assert words(first.find("a", href="mailto:julia@example.org")) == "julia@example.org"
    # the author's own affiliation, then the institute at the same position (the first)
    assert [words(p) for p in first.find_all("p", cls="quarto-title-affiliation")] == \
        ["University of Somewhere", "An institute"]
    assert not second.find_all("p", cls="quarto-title-affiliation")
    assert words(title.find("p", cls="date")) == "20th June 2024"
    assert not title.find_all("p", cls="author")


def test_toc_slide_follows_the_title_slide_with_the_level_one_headings(built):
    _, page = built
    slides = page.find("div", cls="slides").elements()
    assert [s.attrs.get("id") for s in slides[:2]] == ["title-slide", "TOC"]
    toc = slides[1]
    assert words(toc.find("h2", id="toc-title")) == "Table of contents"
    entries = toc.find("nav").find_all("li")
    assert [(words(li), li.find("a").attrs["href"]) for li in entries] == \
        [("Part one", "#/part-one"), ("Part two", "#/part-two")]


def test_pandoc_title_style_a_toc_title_and_a_decks_own_partial(tmp_path):
    _, page = _build(tmp_path / "plain", "title-slide-style: pandoc\ntoc-title: Contents\n")
    title = page.find("section", id="title-slide")
    assert [words(p) for p in title.find_all("p", cls="author")] == ["Julia Roe", "Ben Ng"]
    assert [words(p) for p in title.find_all("p", cls="institute")] == ["An institute"]
    assert not title.find_all(cls="quarto-title-authors")
    assert words(page.find("h2", id="toc-title")) == "Contents"
    partial = ('<section id="title-slide" class="mine">\n<h1 class="title">$title$</h1>\n'
               '$if(motto)$<p class="motto">$motto$</p>$endif$\n<p class="date">$date$</p>\n</section>\n')
    result, page = _build(tmp_path / "own", "motto: \"Be *brief*\"\ntemplate-partials:\n"
                          "  - title-slide.html\n  - other.html\n",
                          {"title-slide.html": partial, "other.html": "<p>x</p>\n"})
    title = page.find("section", id="title-slide")
    assert title.classes == ["mine"] and words(title.find("p", cls="motto")) == "Be brief"
    assert words(title.find("p", cls="date")) == "20th June 2024"
    messages = [w.message for w in result.warnings]
    assert not [m for m in messages if "'motto'" in m]
    assert any("template partial other.html is not one the revealjs template prints" in m
               for m in messages)


# -- built decks: in the browser -----------------------------------------------------------

SHOWN = r"""() => {
  const toc = document.getElementById('TOC');
  const block = document.querySelector('#title-slide .quarto-title-authors');
  const name = block.querySelector('.quarto-title-author-name');
  const aff = block.querySelector('.quarto-title-affiliation');
  const num = document.querySelector('.reveal .slide-number');
  return {tocIndex: Reveal.getIndices(toc).h, entries: toc.querySelectorAll('li').length,
          display: getComputedStyle(block).display, justify: getComputedStyle(block).justifyContent,
          affiliation: parseFloat(getComputedStyle(aff).fontSize) / parseFloat(getComputedStyle(name).fontSize),
          number: num && getComputedStyle(num).display !== 'none' ? num.textContent.replace(/\s+/g, ' ').trim() : null,
          total: Reveal.getTotalSlides()};
}"""


def test_in_the_browser_the_toc_is_slide_two_and_the_slide_number_counts(tmp_path):
    """The untitled slide's entry (pandoc writes it, empty) is dropped, as Quarto drops it;
    `slideNumber: true` shows "1 / N" on the title slide."""
    result, page = _build(tmp_path / "shown", "format:\n  revealjs:\n    slideNumber: true\n"
                                              "    toc-depth: 2\n")
    assert len(page.find("nav").find_all("li")) == 5
    with browser.browser() as ctx:
        errors = []
        page = open_deck(ctx, result.html, errors=errors)
        shown = page.evaluate(SHOWN)
    assert errors == []
    assert shown["tocIndex"] == 1 and shown["entries"] == 4
    assert (shown["display"], shown["justify"]) == ("flex", "center")
    assert shown["affiliation"] == pytest.approx(0.7)
    assert shown["number"] == f"1 / {shown['total']}"
