"""How much of the fidelity harness's remaining mismatch in older decks is Quarto's own
version changes: each deck is measured twice, as our renderer draws it (the newest
Quarto's rules) and with a few rules of the deck's older Quarto added to our page; the
difference in matching share is what those version changes account for.

    python benchmarks/fidelity_versions.py                  # every deck, markdown table
    python benchmarks/fidelity_versions.py --deck pgwhalen-conflate-talk --json out.json

The older rules, read in the corpus decks' compiled CSS (their ``*_files/libs``) and in
quarto-cli's history (src/resources/formats/revealjs/quarto.scss), written here as rules of
our own; they are measurement aids, never part of the renderer:
  before 1.6    code blocks at reveal.js's line height (1.2em; 1.3 from 1.6 on), pandoc's
                line spans inline (inline-block with the pandoc of 1.7 on), the columns'
                inner margins in em (rem from 1.6), callouts 1em above and below with
                their last block 1rem above the border (the callout rules of 1.6 on differ)
  before 1.6.27 inline code at the text's size (0.875em from 1.6.27)
Decks of a version with none of these are measured once (their share is 0).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fidelity  # noqa: E402
import fidelity_browser as fb  # noqa: E402
import fidelity_corpus as fc  # noqa: E402
import fidelity_report as fr  # noqa: E402

BEFORE_1_6 = """
.reveal pre { line-height: 1.2em; }
pre > code.sourceCode > span { display: inline; }
.reveal .columns > .column > :not(ul, ol) { margin-left: 0.25em; margin-right: 0.25em; }
.reveal .columns > .column:first-child > :not(ul, ol) { margin-right: 0.5em; margin-left: 0; }
.reveal .columns > .column:last-child > :not(ul, ol) { margin-right: 0; margin-left: 0.5em; }
.reveal div.callout { margin-top: 1em; margin-bottom: 1em; }
.reveal div.callout.callout-titled .callout-body > .callout-content > :last-child { margin-bottom: 1rem; }
"""
BEFORE_1_6_27 = """
.reveal code { font-size: 1em; }
.reveal pre code { font-size: inherit; }
"""


def version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text or "")[:3])


def older_rules(quarto_version: str) -> str:
    """The rules of that Quarto version that differ from the newest's ("" for none)."""
    v = version(quarto_version)
    return (BEFORE_1_6 if v < (1, 6) else "") + (BEFORE_1_6_27 if v < (1, 6, 27) else "")


def with_rules(build, css: str):
    """fidelity_corpus.build, with ``css`` added at the end of the built page's head."""
    def run(deck, workdir, **kwargs):
        result = build(deck, workdir, **kwargs)
        if result.ok and css:
            html = result.html.read_text(encoding="utf-8")
            result.html.write_text(html.replace("</head>", f"<style>{css}</style>\n</head>", 1),
                                   encoding="utf-8")
        return result
    return run


def measure(corpus: Path, names: list[str] | None) -> list[dict]:
    rows = []
    real_build = fc.build
    try:
        with fb.browser() as ctx, tempfile.TemporaryDirectory(prefix="fidelity-versions-") as tmp:
            for deck in fc.load_decks(corpus, names):
                css = older_rules(deck.quarto_version)
                row = {"name": deck.name, "quarto_version": deck.quarto_version}
                for mode in ("as_is", "older_rules"):
                    if mode == "older_rules" and not css:
                        row[mode] = row["as_is"]
                        continue
                    fc.build = with_rules(real_build, css if mode == "older_rules" else "")
                    fidelity.emit(f"[versions] {deck.name}: {mode}")
                    r = fidelity.run_deck(ctx, deck, Path(tmp) / f"{deck.name}-{mode}")
                    row[mode] = {k: r[k] for k in ("elements", "matching", "pct_matching")}
                rows.append(row)
    finally:
        fc.build = real_build
    return rows


def markdown(rows: list[dict]) -> str:
    out = ["| deck | Quarto | matching | with its version's rules | version share (points) |",
           "|---|---|---|---|---|"]
    for r in rows:
        a, b = r["as_is"]["pct_matching"], r["older_rules"]["pct_matching"]
        share = "-" if a is None or b is None else f"{b - a:.1f}"
        out.append(f"| {r['name']} | {r['quarto_version']} | {fr.fmt_pct(a)} | {fr.fmt_pct(b)} | {share} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--deck", action="append", default=None, metavar="NAME")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH")
    args = parser.parse_args(argv)
    rows = measure(args.corpus or fc.default_corpus(), args.deck)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
