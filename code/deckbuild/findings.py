"""The form checks of a built deck (issue 13), from what checks.js measured on each slide:
small text, raster images, thin slides, title-only slides and raw Python reprs.

A finding is a dict ``{"check", "slide", "title", "string", "detail"}``; its message names
the slide number, the slide's title and the offending string. The checks are pure
functions of the measurements, so they are tested without a browser too.
"""

from __future__ import annotations

import re

# No rendered text under 20 px at the deck's 1050 x 700 slide size. The one definition:
# the package's figure helpers (transformer_lab.teaching.legibility) and the tests of the
# hand-drawn diagrams import it from here (this module needs nothing but `re`).
MIN_TEXT_PX = 20.0
THIN_FRACTION = 1 / 3       # painted content must cover at least a third of the slide
TITLE_ONLY_LIMIT = 5        # at most five slides may carry only their title
CHECKS = ("small text", "raster image", "thin slide", "title-only", "raw repr")

# Python reprs that stand where a table or a figure should: (name, pattern)
RAW_PATTERNS = [
    ("tensor repr", re.compile(r"\btensor\(")),
    ("parameter repr", re.compile(r"Parameter containing")),
    ("array repr", re.compile(r"\barray\(")),
    ("object repr", re.compile(r" object at 0x[0-9a-fA-F]+")),
    ("dtype repr", re.compile(r"\bdtype=")),
    ("torch.Size repr", re.compile(r"torch\.Size\(")),
    ("dict literal", re.compile(r"\{\s*(['\"])[^'\"\n]{0,80}\1\s*:")),
]
# A decimal number (optionally with thousands separators and an exponent), not part of a
# dotted sequence such as a version number (2.13.0), of a word (v1.2) or of an identifier
# written after a colon or slash (arXiv:1706.03762, abs/1706.03762).
NUMBER = re.compile(r"(?<![\w.,:/])(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?:[eE][-+]?\d+)?(?!\d|\.\d|,\d)")


def significant_digits(integer: str, fraction: str) -> int:
    """Significant digits of integer.fraction as written (trailing zeros count)."""
    return len((integer.replace(",", "") + fraction).lstrip("0"))


def long_floats(text: str) -> list[str]:
    """Decimal numbers in ``text`` written with more than four significant digits.
    Integers, years and short mantissas (2.4e-07) pass; a number with thousands
    separators is formatted on purpose and is flagged only when its fraction has more
    than four digits."""
    out = []
    for m in NUMBER.finditer(text):
        integer, fraction = m.group(1), m.group(2)
        digits = len(fraction) if "," in integer else significant_digits(integer, fraction)
        if digits > 4:
            out.append(m.group(0))
    return out


def raw_reprs(text: str) -> list[tuple[str, str]]:
    """(what, excerpt) for every raw repr in one block of rendered text."""
    out = []
    for name, pattern in RAW_PATTERNS:
        for m in pattern.finditer(text):
            out.append((name, _excerpt(text, m.start(), m.end())))
    for number in long_floats(text):
        out.append(("float with more than four significant digits", number))
    return out


def _excerpt(text: str, start: int, end: int, width: int = 40) -> str:
    return text[start:max(end, start + width)].strip()


def _finding(check: str, slide: int, title: str, string: str, detail: str) -> dict:
    return {"check": check, "slide": slide, "title": title, "string": string, "detail": detail}


def slide_findings(number: int, title: str, form: dict) -> list[dict]:
    """Findings of one slide (``number`` counts from 1) from checks.js's measurements."""
    out, seen = [], set()
    for t in form["text"]:
        key = (t["where"], t["string"], t["px"])
        if t["px"] < MIN_TEXT_PX and key not in seen:
            seen.add(key)
            out.append(_finding("small text", number, title, t["string"],
                                f"{t['px']:.1f} px ({t['where']})"))
    for r in form["raster"]:
        out.append(_finding("raster image", number, title, r["string"],
                            "raster image, text not measurable"))
    area = form["width"] * form["height"]
    box = form["bbox"]
    used = (box[2] - box[0]) * (box[3] - box[1]) if box else 0
    if used < area * THIN_FRACTION and not form["onlyTitle"]:
        out.append(_finding("thin slide", number, title, title,
                            f"painted content covers {used / area:.0%} of the slide"
                            f" (bounding box {box}); at least a third expected"))
    if form["onlyTitle"]:
        out.append(_finding("title-only", number, title, title, "the slide shows only its title"))
    for block in form["prose"]:
        for what, excerpt in raw_reprs(block):
            out.append(_finding("raw repr", number, title, excerpt, what))
    return out


def merge_chrome(findings: list[dict]) -> list[dict]:
    """The footer and slide number show on every slide: keep the first finding of each
    (per size) and say on how many slides it showed."""
    out, first, count = [], {}, {}
    for f in findings:
        where = f["detail"].rsplit("(", 1)[-1]
        if f["check"] != "small text" or where not in ("footer)", "slide number)"):
            out.append(f)
            continue
        key = f["detail"]
        count[key] = count.get(key, 0) + 1
        if key not in first:
            first[key] = dict(f)
            out.append(first[key])
    for key, f in first.items():
        if count[key] > 1:
            f["detail"] += f", and on {count[key] - 1} more slides"
    return out


def merge_chrome_into(slides: list) -> None:
    """merge_chrome over a deck's slides (objects with a ``findings`` list), in place."""
    kept = merge_chrome([f for s in slides for f in s.findings])
    by_slide: dict[int, list] = {}
    for f in kept:
        by_slide.setdefault(f["slide"], []).append(f)
    for s in slides:
        s.findings = by_slide.get(s.index + 1, [])


def message(f: dict) -> str:
    return f"slide {f['slide']} ({f['title'] or 'untitled'}): {f['check']}: {f['string']!r} {f['detail']}"


def failing(findings: list[dict]) -> dict[str, list[dict]]:
    """The findings that fail the deck, by check: every one, except that title-only
    slides fail only when there are more than TITLE_ONLY_LIMIT of them."""
    out = {c: [f for f in findings if f["check"] == c] for c in CHECKS}
    if len(out["title-only"]) <= TITLE_ONLY_LIMIT:
        out["title-only"] = []
    return {c: fs for c, fs in out.items() if fs}


def summary(findings: list[dict]) -> list[str]:
    """Lines for the command line: per check its count, then every finding."""
    lines = []
    for check in CHECKS:
        fs = [f for f in findings if f["check"] == check]
        limit = f" (at most {TITLE_ONLY_LIMIT} allowed)" if check == "title-only" else ""
        lines.append(f"{check}: {len(fs)}{limit}")
        lines += [f"  {message(f)}" for f in fs]
    return lines
