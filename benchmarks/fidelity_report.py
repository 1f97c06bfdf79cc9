"""Scores and reports of the fidelity harness: one deck's captures (Quarto's and ours)
turned into per-slide rows, deck totals and its worst differences; a rollup per Quarto
version; the markdown tables."""

from __future__ import annotations

from collections import defaultdict

import fidelity_match as fm

WORST = 10


def _pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None


def _slide_row(q: dict | None, o: dict | None) -> dict:
    row = fm.compare_slide(q["elements"] if q else [], o["elements"] if o else [])
    row.update({"quarto": q["index"] + 1 if q else None, "ours": o["index"] + 1 if o else None,
                "title": (q or o)["title"],
                "quarto_elements": len(q["elements"]) if q else 0,
                "quarto_text_chars": q.get("text_chars", 0) if q else 0,
                "maths_quarto": q["maths"] if q else 0, "maths_ours": o["maths"] if o else 0,
                "pct_matching": _pct(row["matching"], row["elements"])})
    return row


def score_deck(quarto: dict, ours: dict | None) -> dict:
    """Per-slide rows and totals of one deck. ``ours`` is None when our build failed: the
    rows then hold Quarto's side only and the deck has no score."""
    qs, os_ = quarto["slides"], (ours or {"slides": []})["slides"]
    pairs = fm.align_slides([s["title"] for s in qs], [s["title"] for s in os_]) if ours else \
        [(i, None) for i in range(len(qs))]
    rows = [_slide_row(qs[i] if i is not None else None, os_[j] if j is not None else None)
            for i, j in pairs]
    total = {k: sum(r[k] for r in rows) for k in
             ("elements", "matching", "text_matched", "only_quarto", "only_ours", "math_elements",
              "maths_quarto", "maths_ours")}
    worst = sorted(({"slide_quarto": r["quarto"], "slide_ours": r["ours"], "title": r["title"], **d}
                    for r in rows for d in r["differences"]),
                   key=lambda d: -d["severity"])[:WORST]
    measured = ours is not None
    return {**total, "slides_quarto": len(qs), "slides_ours": len(os_),
            "slides_paired": sum(1 for i, j in pairs if i is not None and j is not None),
            "only_quarto_slides": [{"index": i + 1, "title": qs[i]["title"]} for i, j in pairs
                                   if j is None] if measured else [],
            "only_ours_slides": [{"index": j + 1, "title": os_[j]["title"]} for i, j in pairs
                                 if i is None],
            "pct_matching": _pct(total["matching"], total["elements"]) if measured else None,
            "pct_text_matched": _pct(total["text_matched"], total["elements"]) if measured else None,
            "slides": rows, "worst": worst if measured else []}


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def rollup(decks: list[dict]) -> list[dict]:
    """Decks grouped by Quarto's minor version (1.4, 1.5, ...): builds, and the scores of
    the decks measured (built, both pages walked)."""
    groups = defaultdict(list)
    for d in decks:
        groups[minor(d["quarto_version"])].append(d)
    out = []
    for series in sorted(groups, key=lambda v: [int(x) if x.isdigit() else 0 for x in v.split(".")]):
        ds = groups[series]
        measured = [d for d in ds if d["pct_matching"] is not None]
        elements = sum(d["elements"] for d in measured)
        matching = sum(d["matching"] for d in measured)
        out.append({"quarto": series, "versions": sorted({d["quarto_version"] for d in ds}),
                    "decks": len(ds), "built": sum(1 for d in ds if d["build"]["ok"]),
                    "measured": len(measured), "elements": elements, "matching": matching,
                    "pct_matching": _pct(matching, elements),
                    "pct_text_matched": _pct(sum(d["text_matched"] for d in measured), elements)})
    return out


def fmt_pct(p: float | None) -> str:
    return "-" if p is None else f"{p:.1f}%"


def _value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(f"{x:g}" for x in v) + "]"
    return "-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


def describe(d: dict) -> str:
    """One worst difference in words."""
    where = f"slide {d['slide_quarto'] or '-'}/{d['slide_ours'] or '-'} \"{d['title'][:40]}\""
    text = '"' + d["text"][:60] + ('..."' if len(d["text"]) > 60 else '"')
    if d.get("ours_text"):
        text += f' (ours "{d["ours_text"][:60]}")'
    props = "; ".join(f"{x['property']} Quarto {_value(x['quarto'])} vs ours {_value(x['ours'])}"
                      for x in d["diffs"])
    return f"{where}, {d['kind']} {text}: {props}"


def error_summary(error: str) -> str:
    """A build error on one line: its first line, and its last when there are more."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()] or ["(none)"]
    text = f"`{lines[0][:300]}`"
    return text + (f" ... `{lines[-1][-200:]}`" if len(lines) > 1 else "")


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else round((values[mid - 1] + values[mid]) / 2, 1)


def set_summary(decks: list[dict]) -> list[dict]:
    """Per set (all, tuning, held out): decks, how many built, and the median of the
    per-deck match, a deck that did not build (or could not be walked) counting as 0%."""
    out = []
    for name, chosen in (("all", decks), ("tuning", [d for d in decks if not d.get("held_out")]),
                         ("held out", [d for d in decks if d.get("held_out")])):
        if not chosen:
            continue
        built = sum(1 for d in chosen if d["build"]["ok"])
        scores = [d["pct_matching"] or 0.0 for d in chosen]
        out.append({"set": name, "decks": len(chosen), "built": built,
                    "pct_built": _pct(built, len(chosen)), "median_match": _median(scores),
                    "median_match_built": _median([d["pct_matching"] for d in chosen
                                                   if d["pct_matching"] is not None])})
    return out


def _deck_table(decks: list[dict]) -> list[str]:
    out = ["| deck | set | Quarto | features | build | slides Q/ours (paired) | elements | "
           "matching | matched by text | maths Q/ours (elements with maths) | time |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in decks:
        build = "ok" if d["build"]["ok"] else "error"
        build += "".join(f", {side} page error" for side in d.get("page_errors", {}))
        features = ", ".join(d.get("features", []))
        out.append(f"| {d['name']} | {'held out' if d.get('held_out') else 'tuning'} | "
                   f"{d['quarto_version']} | {features} | {build} | {d['slides_quarto']}/"
                   f"{d['slides_ours'] if d['build']['ok'] else '-'} ({d['slides_paired']}) | "
                   f"{d['elements']} | {fmt_pct(d['pct_matching'])} | "
                   f"{fmt_pct(d['pct_text_matched'])} | {d['maths_quarto']}/{d['maths_ours']} "
                   f"({d['math_elements']}) | {d['seconds']:.0f} s |")
    return out


def _slide_table(d: dict) -> list[str]:
    out = [f"#### {d['name']}: per slide (slide numbers: Quarto/ours)", "",
           "| slide | title | elements | matching | by text | only Q | only ours | maths Q/ours |",
           "|---|---|---|---|---|---|---|---|"]
    for r in d["slides"]:
        out.append(f"| {r['quarto'] or '-'}/{r['ours'] or '-'} | {r['title'][:40]} | "
                   f"{r['elements']} | {r['matching']} ({fmt_pct(r['pct_matching'])}) | "
                   f"{r['text_matched']} | {r['only_quarto']} | {r['only_ours']} | "
                   f"{r['maths_quarto']}/{r['maths_ours']} |")
    return out


def rendered_as(result: dict) -> str:
    """How the decks were rendered, for the report's header line."""
    if result.get("rendered_as") == "newest":
        return "rendered with the newest Quarto's rules"
    return "each rendered as Quarto <the version of its reference, column Quarto>"


def markdown(result: dict, per_slide: bool = True) -> str:
    decks = result["decks"]
    lines = [f"### Fidelity against Quarto: {len(decks)} decks, {rendered_as(result)}, box "
             f"tolerance {fm.BOX_TOLERANCE_PX:g} px", "",
             "Elements: those of both sides, a pair counted once (Quarto's alone where our "
             "build failed), maths included (each typeset formula is an element too). "
             "Matching: box within the tolerance on every edge, same computed font size, same "
             "painted family. Matched by text: found on both sides. Median match: over the "
             "decks of the set, a deck that did not build counting as 0%.", "",
             "| set | decks | built | median match | median match of those built |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['set']} | {r['decks']} | {r['built']} ({fmt_pct(r['pct_built'])}) | "
              f"{fmt_pct(r['median_match'])} | {fmt_pct(r['median_match_built'])} |"
              for r in set_summary(decks)]
    lines += [""] + _deck_table(decks)
    lines += ["", "#### Per Quarto version", "",
              "| Quarto | versions | decks | built | measured | elements | matching | "
              "matched by text |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['quarto']} | {', '.join(r['versions'])} | {r['decks']} | {r['built']} | "
              f"{r['measured']} | "
              f"{r['elements']} | {fmt_pct(r['pct_matching'])} | "
              f"{fmt_pct(r['pct_text_matched'])} |" for r in result["rollup"]]
    notes = [f"- {d['name']}: {d['viewport_note']}" for d in decks if d.get("viewport_note")]
    if notes:
        lines += ["", "Viewports:"] + notes
    errors = [d for d in decks if not d["build"]["ok"]]
    if errors:
        lines += ["", "#### Build errors", ""]
        lines += [f"- {d['name']}: {error_summary(d['build']['error'])}" for d in errors]
    pages = [f"- {d['name']}, {side}: {e}" for d in decks for side, e in d.get("page_errors", {}).items()]
    if pages:
        lines += ["", "#### Pages that could not be walked", ""] + pages
    for d in decks:
        if d["pct_matching"] is None:
            continue
        lines += ["", f"#### {d['name']}: the {len(d['worst'])} worst differences "
                  "(slide numbers: Quarto/ours)", ""]
        lines += [f"{n}. {describe(w)}" for n, w in enumerate(d["worst"], 1)]
        for side in ("quarto", "ours"):
            only = d[f"only_{side}_slides"]
            if only:
                lines += ["", f"Slides only in {'Quarto' if side == 'quarto' else 'ours'}: "
                          + ", ".join(f"{s['index']} \"{s['title'][:40]}\"" for s in only)]
        if per_slide:
            lines += [""] + _slide_table(d)
    return "\n".join(lines) + "\n"
