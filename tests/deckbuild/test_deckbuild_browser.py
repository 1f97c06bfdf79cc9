"""The built decks in headless Chromium: every slide checked with all fragments shown,
screenshots saved, the PDF has one page per slide. Decks are built once per session."""

import shutil
import subprocess
from pathlib import Path

import pytest

from deck_helpers import REPO, copy_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document


@pytest.fixture(scope="session")
def checked(tmp_path_factory):
    """Build the feature test deck and the project's own deck (HTML + PDF), check both in
    one browser session. Screenshots: <build dir>/<stem>_screenshots/slide-NN.png."""
    out = {}
    root = copy_deck("features", tmp_path_factory.mktemp("browser"))
    decks = {"features": root / "deck.qmd", "project": REPO / "slides" / "index.qmd"}
    results = {name: build_document(path, BuildSettings(), lambda *a, **k: None)
               for name, path in decks.items()}
    with browser.browser() as ctx:
        for name, result in results.items():
            shots = result.html.with_name(f"{result.html.stem}_screenshots")
            out[name] = (result, browser.check_deck(result.html, shots, ctx=ctx))
    return out


DECKS = ["features", "project"]


@pytest.mark.parametrize("name", DECKS)
def test_every_slide_passes_the_browser_checks(checked, name):
    _, report = checked[name]
    assert report.slides, "no slides found"
    assert report.problems() == []


@pytest.mark.parametrize("name", DECKS)
def test_no_request_leaves_file_and_no_console_error(checked, name):
    _, report = checked[name]
    assert report.requests == [] and report.console == []


@pytest.mark.parametrize("name", DECKS)
def test_pdf_has_one_page_per_slide(checked, name):
    result, report = checked[name]
    assert browser.pdf_pages(result.pdf) == report.total_slides == len(report.slides)
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(result.pdf)], capture_output=True, text=True).stdout
        pages = next(l.split()[-1] for l in info.splitlines() if l.startswith("Pages:"))
        assert int(pages) == report.total_slides


@pytest.mark.parametrize("name", DECKS)
def test_a_screenshot_of_every_slide(checked, name):
    _, report = checked[name]
    for slide in report.slides:
        shot = Path(slide.screenshot)
        assert shot.exists() and shot.stat().st_size > 5000
        assert shot.read_bytes()[:4] == b"\x89PNG"


def test_feature_deck_has_what_the_sources_ask_for(checked):
    result, report = checked["features"]
    html = result.html.read_text()
    assert report.total_slides == 11   # title + 9 slides + the output-location: slide one
    assert 'class="notes"' in html and "callout-tip" in html and "data-code-line-numbers" in html
    assert "katex" in html and "data-background-color" in html and "🚀" in html
    assert "Feature deck footer" in html and "slide-logo" in html
    assert "https://" not in html.split("<body>", 1)[1].split("<script")[0]
    assert report.speaker_view == []


def test_feature_deck_footer_and_slide_number_are_measured_once(checked):
    """The default theme's footer and slide number are under 20 px: reported once each,
    with the number of other slides they show on."""
    _, report = checked["features"]
    chrome = [f for f in report.findings("small text") if "(footer" in f["detail"] or "(slide number" in f["detail"]]
    assert [(f["slide"], f["string"]) for f in chrome] == [(1, "Feature deck footer"), (1, "1 / 11")]
    assert all(f["detail"].endswith("and on 10 more slides") for f in chrome)
    assert all(float(f["detail"].split(" px")[0]) < 20 for f in chrome)


def test_overflow_is_detected(tmp_path):
    """The checks are not vacuous: a slide that is too long and a cut code line are caught."""
    root = copy_deck("overflow", tmp_path)
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    report = browser.check_deck(result.html, speaker_view=False)
    kinds = {(s.title, p["kind"]) for s in report.slides for p in s.problems}
    assert ("Far too much", "overflow") in kinds
    assert ("A long code line", "cut") in kinds
    assert ("Overflow", "logo") in kinds   # this deck has no logo
    # a message names a formula once, as its TeX, not KaTeX's three copies ("N=6N = 6N=6")
    # and once per element: a paragraph and each formula, over all their pieces and lines
    maths = [p["what"] for s in report.slides for p in s.problems
             if s.title == "Maths below the slide" and p["kind"] == "overflow"]
    assert maths == ['text p "The stack holds $N = 6$ layers of width $d_{\\text{model}} = "',
                     'text span.katex "$N = 6$"', 'text span.katex "$d_{\\text{model}} = 512$"'], maths


@pytest.mark.parametrize("name", DECKS)
def test_a_contact_sheet_beside_the_screenshots(checked, name):
    from PIL import Image

    _, report = checked[name]
    sheet = Path(report.contact_sheet)
    assert sheet == Path(report.slides[0].screenshot).parent / "contact-sheet.png"
    with Image.open(sheet) as img:
        assert img.format == "PNG" and img.width >= 6 * 300
        assert img.height >= -(-len(report.slides) // 6) * 170   # a row of thumbnails per six slides


# Issue 13, on the project's own deck: every rendered text (plots and diagrams included) at
# 20 px or more at the 1050 x 700 slide, no slide under a third of its area, at most five
# slides with only a title, no raw Python repr in outputs, tables or prose.

def _listing(found: list[dict]) -> str:
    from deckbuild.findings import message

    return f"{len(found)} findings:\n" + "\n".join(message(f) for f in found)


def test_project_deck_has_no_text_under_20_px(checked):
    _, report = checked["project"]
    found = report.findings("small text") + report.findings("raster image")
    assert not found, _listing(found)


def test_project_deck_has_no_thin_slide(checked):
    _, report = checked["project"]
    assert not report.findings("thin slide"), _listing(report.findings("thin slide"))


def test_project_deck_has_at_most_five_title_only_slides(checked):
    from deckbuild.findings import TITLE_ONLY_LIMIT

    _, report = checked["project"]
    found = report.findings("title-only")
    assert len(found) <= TITLE_ONLY_LIMIT, _listing(found)


def test_project_deck_shows_no_raw_repr(checked):
    _, report = checked["project"]
    assert not report.findings("raw repr"), _listing(report.findings("raw repr"))


def test_on_a_phone_held_upright_every_stretched_figure_is_drawn(checked):
    """reveal.js's scroll view (under 435 px of width) pins each slide at 700 px, and reveal.js
    then sized every auto-stretched figure 0 px high: a blank slide on a phone. The deck's
    theme (custom_lab.scss) lets the figure fill the room left in its slide."""
    result, _ = checked["project"]
    with browser.browser(viewport=(390, 844)) as ctx:
        browser._block_network(ctx)
        page = browser._open(ctx, result.html.resolve().as_uri())
        figures = page.evaluate("""() => Array.from(document.querySelectorAll('.slides section > img.r-stretch'))
            .map(img => { const s = img.closest('section').getBoundingClientRect(), r = img.getBoundingClientRect();
                          return {title: (img.closest('section').querySelector('h2') || {}).textContent,
                                  share: r.height / s.height, inside: r.bottom <= s.bottom + 1 && r.top >= s.top - 1}; })""")
        assert page.evaluate("() => Reveal.isScrollView()")
        page.close()
    assert len(figures) >= 10
    flat = [f for f in figures if f["share"] < 0.25 or not f["inside"]]
    assert flat == [], f"{len(flat)} of {len(figures)} stretched figures are flat or spill out of their slide: {flat}"
