"""The form checks of issue 13 (code/deckbuild/findings.py, resources/checks.js): small
text, raster images, thin slides, title-only slides, raw reprs, and the contact sheet.

The pattern rules are tested as pure functions; the browser measurements on the ``form``
test deck, whose slides are each built to trip one check, next to controls that must pass
(code with dict literals, KaTeX with subscripts, integers, years, versions)."""

import pytest

from deck_helpers import copy_deck, run_cli
from deckbuild import browser, findings
from deckbuild.build import BuildSettings, build_document


@pytest.mark.parametrize("text, flagged", [
    ("loss 0.123456", ["0.123456"]), ("pi is 3.14159.", ["3.14159"]),
    ("1.23456e-07", ["1.23456e-07"]), ("took 1234.5 ms", ["1234.5"]), ("1.0000", ["1.0000"]),
    ("1,234.56789", ["1,234.56789"]), ("0.67273s", ["0.67273"]),
    ("2.4e-07", []), ("0.1234", []), ("12.5", []), ("year 2017", []), ("65,536 tokens", []),
    ("12,345.6", []), ("torch 2.13.0", []), ("v1.12345", []), ("arXiv:1706.03762", []),
    ("abs/1607.06450", []), ("1,234,567", []), ("0.05.", []),
])
def test_long_floats(text, flagged):
    assert findings.long_floats(text) == flagged


def test_raw_reprs_name_the_pattern_and_the_string():
    text = ("{'betas': (0.9, 0.98)} tensor([1., 2.]) Parameter containing: <Foo object at 0x7f01> "
            "array([1, 2]) dtype=torch.int32 torch.Size([2, 3]) {\"a\": 1}")
    got = findings.raw_reprs(text)
    assert [w for w, _ in got] == ["tensor repr", "parameter repr", "array repr", "object repr",
                                   "dtype repr", "torch.Size repr", "dict literal", "dict literal"]
    assert got[0][1].startswith("tensor([1., 2.])") and got[6][1].startswith("{'betas': (0.9")
    assert findings.raw_reprs("a set {1, 2}, a formula {x: 1}, bytes 0x7f, a (2, 3) shape") == []


def _form(**over):
    base = {"width": 1050, "height": 700, "text": [], "raster": [], "prose": [],
            "bbox": [0, 0, 1050, 700], "onlyTitle": False}
    return base | over


def test_thin_title_only_and_small_text_from_measurements():
    thin = findings.slide_findings(3, "T", _form(bbox=[0, 0, 1050, 233]))
    assert [f["check"] for f in thin] == ["thin slide"] and "33%" in thin[0]["detail"]
    assert findings.slide_findings(3, "T", _form(bbox=[0, 0, 1050, 234])) == []
    only = findings.slide_findings(4, "Masks", _form(bbox=[0, 0, 300, 50], onlyTitle=True))
    assert [(f["check"], f["slide"], f["string"]) for f in only] == [("title-only", 4, "Masks")]
    small = findings.slide_findings(5, "S", _form(text=[
        {"where": "text", "string": "tick", "px": 19.9}, {"where": "text", "string": "tick", "px": 19.9},
        {"where": "text", "string": "ok", "px": 20.0}]))
    assert [findings.message(f) for f in small] == ["slide 5 (S): small text: 'tick' 19.9 px (text)"]


def test_title_only_fails_only_above_the_limit_and_chrome_is_reported_once():
    def title_only(n):
        return {"check": "title-only", "slide": n, "title": "t", "string": "t", "detail": ""}
    assert findings.failing([title_only(n) for n in range(findings.TITLE_ONLY_LIMIT)]) == {}
    assert len(findings.failing([title_only(n) for n in range(6)])["title-only"]) == 6
    footer = [{"check": "small text", "slide": n, "title": "", "string": "f", "detail": "16.4 px (footer)"}
              for n in (1, 2, 3)]
    merged = findings.merge_chrome(footer)
    assert len(merged) == 1 and merged[0]["detail"] == "16.4 px (footer), and on 2 more slides"


@pytest.fixture(scope="module")
def form(tmp_path_factory):
    root = copy_deck("form", tmp_path_factory.mktemp("form"))
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    shots = result.html.with_name(f"{result.html.stem}_screenshots")
    return root, result, browser.check_deck(result.html, shots, speaker_view=False)


def _by(report, check):
    return [(f["slide"], f["string"]) for f in report.findings(check)]


def test_form_deck_small_text_in_a_plot_and_svg_inline_or_as_image(form):
    _, _, report = form
    small = report.findings("small text")
    assert {f["slide"] for f in small} == {2, 4}, [findings.message(f) for f in small]
    plot = {f["string"]: f["detail"] for f in small if f["slide"] == 2}
    # 8 pt is 10.7 px, matplotlib's title is 1.2 times larger: measured inside the SVG image
    assert plot["eight point legend"].startswith("10.7 px (image")
    assert plot["eight point title"].startswith("12.8 px (image")
    # inline: 4 user units x 3 = 12 px; an SVG file without a viewBox, 300 wide shown 600
    # wide: 8 units x 2 = 16 px (its 12-unit line, 24 px, passes)
    assert [(f["string"], f["detail"]) for f in small if f["slide"] == 4] == [
        ("tiny label", "12.0 px (svg)"),
        ("file label, eight units", "16.0 px (image An SVG file without a viewBox)")]


def test_form_deck_raster_thin_title_only_and_raw_repr(form):
    _, _, report = form
    assert _by(report, "raster image") == [(5, "A raster chart")]
    assert _by(report, "thin slide") == [(6, "A thin slide")]
    assert _by(report, "title-only") == [(7, "A section with nothing else"), (8, "A title and nothing more")]
    raw = [(f["slide"], f["detail"], f["string"]) for f in report.findings("raw repr")]
    assert raw == [(9, "tensor repr", "tensor([[1., 2.], [3., 4.]])"),
                   (10, "float with more than four significant digits", "0.6727348"),
                   (10, "float with more than four significant digits", "3.14159")]
    assert set(report.failing()) == {"small text", "raster image", "thin slide", "raw repr"}


def test_form_deck_controls_are_not_flagged(form):
    """The 24 pt plot, and the slide of echoed code with dict literals, a code block,
    KaTeX with sub/superscripts, integers, years, versions and an arXiv number."""
    _, _, report = form
    clean = [s for s in report.slides if s.title in ("A plot with 24 pt text", "Clean: code, math, integers")]
    assert len(clean) == 2 and all(s.findings == [] for s in clean), [s.findings for s in clean]
    assert report.problems() == []


def test_contact_sheet_has_every_slide(form):
    from PIL import Image

    _, _, report = form
    with Image.open(report.contact_sheet) as sheet:
        with Image.open(report.slides[0].screenshot) as shot:
            tw = 300
            th = round(tw * shot.height / shot.width)
        assert sheet.width == 12 + 6 * (tw + 12)
        rows = -(-len(report.slides) // 6)
        band = (sheet.height - 12) / rows - th - 12
        assert rows == 2 and 14 <= band <= 40
        # the slide 11 thumbnail is there, the cell after it is background
        x11 = 12 + 4 * (tw + 12) + tw // 2
        y = round(12 + (band + th + 12) + band + th / 2)
        assert sheet.getpixel((x11, y)) != sheet.getpixel((x11 + tw + 12, y))


def test_check_command_prints_the_findings_per_check(form):
    root, _, _ = form
    proc = run_cli("check", str(root / "deck.qmd"), cwd=root, timeout=300)
    out = proc.stderr
    assert proc.returncode == 1, out
    for line in ("small text: 11", "raster image: 1", "thin slide: 1",
                 "title-only: 2 (at most 5 allowed)", "raw repr: 3"):
        assert f"  {line}\n" in out, out
    assert "slide 6 (A thin slide): thin slide: 'A thin slide' painted content covers" in out
    assert "failing: small text (11), raster image (1), thin slide (1), raw repr (3)" in out
    assert "contact-sheet.png" in out and (root / "_output" / "deck_screenshots" / "contact-sheet.png").exists()
