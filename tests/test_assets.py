"""The hand-drawn diagrams in assets/: legible on the slide that shows them, one colour per meaning.

Text size: at the deck's 1050 x 700 slide no text may render under 20 px. An SVG's text
renders at its font size times (display width / viewBox width); the display width comes
from the slide's image line (`width=`, or `height=` through the aspect ratio, capped by the
column it sits in), or from the SVG's own width when no slide sets one.

Palette: the query, key, value and mask colours mean only that. Every use of one of them,
as an attribute, an inline style or a rule of the SVG's <style>, must name its role (a
class or id containing "query", "key", "value" or "mask", on the element or an ancestor).
The mask is charcoal #3D3D3D; its old vermillion #D55E00 must not mark a mask any more.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from deckbuild.findings import MIN_TEXT_PX

ROOT = Path(__file__).resolve().parents[1]
ASSETS = sorted((ROOT / "assets").glob("*.svg"))
CHAPTERS = sorted((ROOT / "slides" / "chapters").glob("*.qmd"))
SVG_NS = "{http://www.w3.org/2000/svg}"
SLIDE_WIDTH = 1050
ROLE_COLOURS = {"#0072b2": "query", "#e69f00": "key", "#009e73": "value", "#3d3d3d": "mask"}
OLD_MASK = "#d55e00"
IMAGE_LINE = re.compile(r"!\[[^\]]*\]\(\.\./assets/([\w.-]+\.svg)\)\{([^}]*)\}")
COLUMN_OPEN = re.compile(r'^:::+\s*\{\.column\s+width="(\d+(?:\.\d+)?)%"\}')
CSS_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
HEX = re.compile(r"#[0-9a-fA-F]{6}\b")


def _attr_number(attrs: str, name: str) -> float | None:
    match = re.search(rf'\b{name}="?(\d+(?:\.\d+)?)(?:px)?"?', attrs)
    return float(match.group(1)) if match else None


def _view_box(root: ET.Element) -> tuple[float, float]:
    _, _, width, height = (float(v) for v in root.get("viewBox").replace(",", " ").split())
    return width, height


def slide_uses() -> list[tuple[str, str, float]]:
    """(svg name, 'chapter:line', display width in slide px) for every image line of an asset."""
    uses = []
    for chapter in CHAPTERS:
        column = None
        for number, line in enumerate(chapter.read_text(encoding="utf-8").splitlines(), 1):
            if opened := COLUMN_OPEN.match(line.strip()):
                column = float(opened.group(1)) / 100
            elif re.fullmatch(r":{3,}", line.strip()):
                column = None
            for name, attrs in IMAGE_LINE.findall(line):
                vb_w, vb_h = _view_box(ET.parse(ROOT / "assets" / name).getroot())
                width, height = _attr_number(attrs, "width"), _attr_number(attrs, "height")
                shown = width or (height * vb_w / vb_h if height else None) or vb_w
                shown = min(shown, SLIDE_WIDTH * (column or 1.0))
                uses.append((name, f"{chapter.name}:{number}", shown))
    return uses


def _css_rules(root: ET.Element) -> list[tuple[str, dict[str, str]]]:
    text = "".join(style.text or "" for style in root.iter(f"{SVG_NS}style"))
    rules = []
    for selectors, body in CSS_RULE.findall(re.sub(r"/\*.*?\*/", "", text, flags=re.S)):
        decls = dict((k.strip(), v.strip()) for k, v in
                     (d.split(":", 1) for d in body.split(";") if ":" in d))
        rules.extend((s.strip(), decls) for s in selectors.split(","))
    return rules


def _inline(element: ET.Element) -> dict[str, str]:
    style = element.get("style", "")
    return dict((k.strip(), v.strip()) for k, v in (d.split(":", 1) for d in style.split(";") if ":" in d))


def _matches(selector: str, element: ET.Element) -> bool:
    tag = element.tag.removeprefix(SVG_NS)
    classes = element.get("class", "").split()
    match = re.fullmatch(r"([a-z]*)((?:\.[\w-]+)*)", selector)
    if not match or not (match.group(1) or match.group(2)):
        return False
    wanted = [c for c in match.group(2).split(".") if c]
    return match.group(1) in ("", tag) and all(c in classes for c in wanted)


def _font_px(chain: list[ET.Element], rules) -> float:
    """The computed font size of the last element of chain (root first), inheriting down."""
    size = 16.0
    for element in chain:
        found = element.get("font-size")
        for selector, decls in rules:
            if "font-size" in decls and _matches(selector, element):
                found = decls["font-size"]
        found = _inline(element).get("font-size", found)
        if found is not None:
            size = float(re.match(r"\d+(?:\.\d+)?", found).group(0))
    return size


def _texts(root: ET.Element):
    def walk(element, chain):
        chain = chain + [element]
        transform = element.get("transform", "")
        assert "scale" not in transform and "matrix" not in transform, (
            f"a scaling transform ({transform!r}) hides the real text size: draw at size")
        if element.tag in (f"{SVG_NS}text", f"{SVG_NS}tspan"):
            yield chain
        for child in element:
            yield from walk(child, chain)
    yield from walk(root, [])


def test_every_asset_is_shown_or_is_the_logo():
    shown = {name for name, _, _ in slide_uses()}
    assert shown | {"logo.svg"} == {path.name for path in ASSETS}


@pytest.mark.parametrize("name, where, shown", slide_uses(),
                         ids=[f"{n}@{w}" for n, w, _ in slide_uses()])
def test_diagram_text_is_at_least_20px_where_shown(name, where, shown):
    root = ET.parse(ROOT / "assets" / name).getroot()
    scale = shown / _view_box(root)[0]
    rules = _css_rules(root)
    small = []
    for chain in _texts(root):
        px = _font_px(chain, rules) * scale
        if px < MIN_TEXT_PX:
            small.append(f"{''.join(chain[-1].itertext())!r} at {px:.1f} px")  # text or tspan
    assert not small, f"{name} shown {shown:.0f} px wide at {where}: " + "; ".join(small)


def _colour_uses(root: ET.Element):
    """(colour, role words, what) for every hex colour in the SVG."""
    for selector, decls in _css_rules(root):
        for value in decls.values():
            for colour in HEX.findall(value):
                yield colour.lower(), selector.lower(), f"<style> rule {selector!r}"

    def walk(element, names):
        names = names + " " + (element.get("class", "") + " " + element.get("id", "")).lower()
        own = " ".join(v for k, v in element.attrib.items() if k in ("fill", "stroke", "style",
                                                                      "stop-color", "color"))
        for colour in HEX.findall(own):
            yield colour.lower(), names, f"<{element.tag.removeprefix(SVG_NS)}> {own!r}"
        for child in element:
            yield from walk(child, names)
    yield from walk(root, "")


@pytest.mark.parametrize("path", ASSETS, ids=lambda p: p.name)
def test_query_key_value_and_mask_colours_mean_only_that(path):
    wrong = [f"{colour} ({ROLE_COLOURS[colour]}) used by {what}"
             for colour, names, what in _colour_uses(ET.parse(path).getroot())
             if colour in ROLE_COLOURS and ROLE_COLOURS[colour] not in names]
    assert not wrong, f"{path.name}: " + "; ".join(wrong)


@pytest.mark.parametrize("path", ASSETS, ids=lambda p: p.name)
def test_masks_are_charcoal_not_vermillion(path):
    uses = list(_colour_uses(ET.parse(path).getroot()))
    mask_colours = {colour for colour, names, _ in uses if "mask" in names}
    assert OLD_MASK not in mask_colours, f"{path.name}: a mask still uses {OLD_MASK}"
    mentions_mask = "mask" in path.read_text(encoding="utf-8").lower()
    assert not mentions_mask or OLD_MASK not in {colour for colour, _, _ in uses}, (
        f"{path.name} draws a mask and still uses its old colour {OLD_MASK}")
    assert not mentions_mask or "#3d3d3d" in mask_colours, (
        f"{path.name} draws a mask but no element named mask uses #3D3D3D")
