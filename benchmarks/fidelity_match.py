"""The matcher of the fidelity harness (no browser): pair the slides of two decks by their
headings, pair the elements of two slides by kind and text, and compare each pair.

An element is a dict as fidelity_browser collects it: ``kind`` (heading, p, li, dt, dd, cell,
code (one per line), image, logo, callout-title, caption, footer, slide-number), ``text`` (normalised; an image's
file name), ``box`` ([left, top, right, bottom] in viewport pixels), ``font_size`` (computed,
px; None for images), ``font_family`` (computed), ``painted`` (the family Chromium painted
the most glyphs with; None for images) and ``has_math`` (it holds maths: counted apart as
well, and measured like the rest, since both pages typeset their maths offline). A typeset
formula is an element of its own too (kind ``math``, its text the TeX source).

A pair *matches* when every edge of its box is within BOX_TOLERANCE_PX, its font sizes are
equal and its painted families are equal. An element on one side only never matches.
"""

from __future__ import annotations

from difflib import SequenceMatcher

BOX_TOLERANCE_PX = 2.0
FONT_SIZE_TOLERANCE_PX = 0.01      # computed sizes are floats; equal up to rounding
ELEMENT_TEXT_RATIO = 0.6           # fuzzy pairing inside replaced runs: least text similarity
SLIDE_TITLE_RATIO = 0.5            # the same for slide headings
# How bad a difference is, for ranking "the worst" (pixel-equivalents; a heuristic):
# a box counts its largest edge shift, a font size 10 per px, a painted family 100,
# an element present on one side only 200.
SEVERITY_FONT_SIZE_PER_PX = 10.0
SEVERITY_FAMILY = 100.0
SEVERITY_MISSING = 200.0


def _ratio(a: str, b: str) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _fuzzy(a: list, b: list, similar) -> list[tuple[int, int]]:
    """In-order greedy pairs (i, j) of a replaced run: each item of ``a`` takes the most
    similar later item of ``b`` (``similar(x, y)`` is a ratio, or None when they may not
    pair at all)."""
    pairs, last = [], -1
    for i, x in enumerate(a):
        best, best_j = None, None
        for j in range(last + 1, len(b)):
            r = similar(x, b[j])
            if r is not None and (best is None or r > best):
                best, best_j = r, j
        if best_j is not None:
            pairs.append((i, best_j))
            last = best_j
    return pairs


def _align(a_keys: list[str], b_keys: list[str], similar) -> list[tuple[int | None, int | None]]:
    """Both sequences in order as pairs (i, j), (i, None) or (None, j): equal runs of keys
    pair one to one, replaced runs pair by ``similar``, the rest stay on one side."""
    out: list[tuple[int | None, int | None]] = []
    sm = SequenceMatcher(None, a_keys, b_keys, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            out += [(i1 + k, j1 + k) for k in range(i2 - i1)]
            continue
        pairs = _fuzzy(list(range(i1, i2)), list(range(j1, j2)), similar) if tag == "replace" else []
        i, j = i1, j1
        for pi, pj in pairs + [(i2 - i1, j2 - j1)]:
            out += [(i1 + k, None) for k in range(i - i1, pi)]
            out += [(None, j1 + k) for k in range(j - j1, pj)]
            if i1 + pi < i2:
                out.append((i1 + pi, j1 + pj))
            i, j = i1 + pi + 1, j1 + pj + 1
    return out


def key(element: dict) -> str:
    return f"{element['kind']}\x00{element['text']}"


def match_elements(quarto: list[dict], ours: list[dict]) -> list[tuple[int | None, int | None]]:
    """Pairs of element indices in slide order; an index on one side only pairs with None."""
    def similar(i, j):
        q, o = quarto[i], ours[j]
        if q["kind"] != o["kind"]:
            return None
        r = _ratio(q["text"], o["text"])
        return r if r >= ELEMENT_TEXT_RATIO else None
    return _align([key(e) for e in quarto], [key(e) for e in ours], similar)


def align_slides(quarto_titles: list[str], our_titles: list[str]) -> list[tuple[int | None, int | None]]:
    """Slides paired by their first heading (SequenceMatcher over the titles)."""
    def similar(i, j):
        r = _ratio(quarto_titles[i].lower(), our_titles[j].lower())
        return r if r >= SLIDE_TITLE_RATIO else None
    return _align([t.lower() for t in quarto_titles], [t.lower() for t in our_titles], similar)


def compare(q: dict, o: dict) -> list[dict]:
    """The properties in which a pair differs: [{property, quarto, ours, severity}]."""
    diffs = []
    shift = max(abs(a - b) for a, b in zip(q["box"], o["box"]))
    if shift > BOX_TOLERANCE_PX:
        diffs.append({"property": "box", "quarto": q["box"], "ours": o["box"],
                      "severity": round(shift, 2)})
    qs, os_ = q.get("font_size"), o.get("font_size")
    if (qs is None) != (os_ is None) or (qs is not None and abs(qs - os_) > FONT_SIZE_TOLERANCE_PX):
        delta = abs((qs or 0) - (os_ or 0))
        diffs.append({"property": "font_size", "quarto": qs, "ours": os_,
                      "severity": round(delta * SEVERITY_FONT_SIZE_PER_PX, 2)})
    if q.get("painted") != o.get("painted"):
        diffs.append({"property": "painted_family", "quarto": q.get("painted"),
                      "ours": o.get("painted"), "severity": SEVERITY_FAMILY})
    return diffs


def _entry(q: dict | None, o: dict | None, diffs: list[dict]) -> dict:
    e = q or o
    return {"kind": e["kind"], "text": e["text"][:120],
            "ours_text": o["text"][:120] if q and o and o["text"] != q["text"] else None,
            "diffs": diffs, "severity": round(sum(d["severity"] for d in diffs), 2)}


def _missing(side: str) -> list[dict]:
    present = {"quarto": "missing", "ours": "missing", side: "present"}
    return [{"property": "presence", **present, "severity": SEVERITY_MISSING}]


def compare_slide(quarto: list[dict], ours: list[dict]) -> dict:
    """Counts of one pair of slides (either list may be empty: a slide on one side only)
    and its differences. Elements holding maths are scored like the rest, and also counted
    in ``math_elements``."""
    out = {"elements": 0, "matching": 0, "text_matched": 0, "only_quarto": 0, "only_ours": 0,
           "math_elements": 0, "differences": []}
    for i, j in match_elements(quarto, ours):
        q = quarto[i] if i is not None else None
        o = ours[j] if j is not None else None
        if (q and (q.get("has_math") or q["kind"] == "math")) or \
                (o and (o.get("has_math") or o["kind"] == "math")):
            out["math_elements"] += 1
        out["elements"] += 1
        if q and o:
            out["text_matched"] += 1
            diffs = compare(q, o)
            if diffs:
                out["differences"].append(_entry(q, o, diffs))
            else:
                out["matching"] += 1
        else:
            side = "quarto" if q else "ours"
            out[f"only_{side}"] += 1
            out["differences"].append(_entry(q, o, _missing(side)))
    return out
