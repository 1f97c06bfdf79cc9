"""How close our renderer (code/deckbuild) comes to real Quarto, measured in a browser.

For each deck of the Quarto corpus (public decks with the HTML real Quarto rendered from
them, see its README.md), this copies the deck's source/ to a temporary folder, renders it
with ``python -m deckbuild render <qmd> --html-only``, opens Quarto's HTML and ours in
headless Chromium (network blocked for both, viewport = the deck's configured size), walks
every slide with all fragments shown and compares what each slide paints: headings,
paragraphs, list items, table cells, code lines, images, callout titles, captions, footer,
slide number and logo. An element matches when its box is within 2 px on every edge, its
computed font size is equal and the browser painted it with the same font family. Maths is
measured like the rest: the CDN addresses of MathJax, KaTeX and mermaid that the pages load
are served offline from npm's packages of the same versions (benchmarks/fidelity_npm:
``npm ci --prefix benchmarks/fidelity_npm``), and each typeset formula is an element too.

    python benchmarks/fidelity.py                          # all decks, markdown on stdout
    python benchmarks/fidelity.py --deck alexsp32-nqcdynamics-julia --json out.json
    python benchmarks/fidelity.py --corpus /path/to/quarto-corpus --no-slides
    python benchmarks/fidelity.py --held-out               # only the held-out decks
    python benchmarks/fidelity.py --as-newest              # every deck with the newest rules

Each deck is rendered as the Quarto release that rendered its reference (meta.json's
quarto_version, passed as $DECKBUILD_QUARTO_VERSION: the default of our option
``deckbuild: quarto-version``, so the deck's files are not edited); with --as-newest,
with the newest Quarto's rules, which measures what Quarto's own changes account for.

The corpora: --corpus (repeatable), else $DECKBUILD_QUARTO_CORPUS, else the shared corpus
<repo>/../shared/quarto-corpus and the extra corpus (--extra, else
$DECKBUILD_QUARTO_CORPUS_EXTRA, else <repo>/../quarto-corpus-extra; skipped with a message
where absent). The extra corpus is not in the repository: benchmarks/quarto_corpus_extra.json
names its files and benchmarks/fidelity_corpus_extra.py restores it from fetched snapshots.
Its README and meta.json name the decks held out from tuning; the report gives them apart.
Progress goes to stderr. Modules: fidelity_corpus (decks, builds), fidelity_browser
(capture), fidelity_match (pairing, comparison), fidelity_report (scores, tables).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fidelity_browser as fb  # noqa: E402
import fidelity_corpus as fc  # noqa: E402
import fidelity_match as fm  # noqa: E402
import fidelity_report as fr  # noqa: E402


def emit(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def slide_progress(label: str):
    """A progress callback for capture_deck: one line per slide on a terminal (rewritten in
    place), every tenth slide and the last one otherwise."""
    tty = sys.stderr.isatty()

    def show(n: int, total: int) -> None:
        if tty:
            print(f"\r  {label} slide {n}/{total}", end="\n" if n == total else "",
                  file=sys.stderr, flush=True)
        elif n == total or n % 10 == 0:
            emit(f"  {label} slide {n}/{total}")
    return show


def run_deck(ctx, deck: fc.Deck, workdir: Path, as_newest: bool = False) -> dict:
    """Build one deck (as its Quarto release, or the newest with ``as_newest``), capture
    both sides, score them."""
    t0 = time.perf_counter()
    rendered_as = deck.rendered_as(as_newest)
    emit(f"  building {deck.qmd} with deckbuild as Quarto {rendered_as or 'newest'}")
    build = fc.build(deck, workdir, as_version=rendered_as)
    emit(f"  build {'ok' if build.ok else 'FAILED'} in {build.seconds:.1f} s"
         + ("" if build.ok else f": {build.error.splitlines()[0][:200]}"))
    errors = {}
    ctx.fidelity_missing = fb.missing_file_stand_ins(deck.meta)
    quarto = capture(ctx, deck.quarto_html, None, "quarto", errors) or EMPTY
    names = fc.ImageNames(deck.folder / "source", deck.folder / "quarto")
    names.resolve(quarto)
    ours = None
    if build.ok and "quarto" not in errors:
        ours = capture(ctx, build.html, tuple(quarto["viewport"]), "ours", errors)
        if ours:
            names.resolve(ours)
    scores = fr.score_deck(quarto, ours)
    return {"name": deck.name, "quarto_version": deck.quarto_version, "qmd": deck.qmd,
            "held_out": deck.held_out, "features": deck.meta.get("features", []),
            "rendered_as": rendered_as or "newest",
            "build": {"ok": build.ok, "error": build.error, "seconds": round(build.seconds, 2)},
            "page_errors": errors,
            "viewport": quarto["viewport"], "viewport_note": quarto["viewport_note"],
            "blocked": {"quarto": quarto["blocked"], "ours": ours["blocked"] if ours else []},
            **scores, "seconds": round(time.perf_counter() - t0, 1)}


EMPTY = {"viewport": [], "viewport_note": "", "slides": [], "blocked": []}


def capture(ctx, html: Path, viewport, side: str, errors: dict) -> dict | None:
    """One side's capture (fidelity_browser.capture_deck), or None with the reason in
    ``errors[side]`` when the page cannot be walked (no reveal.js, a script error...)."""
    try:
        return fb.capture_deck(ctx, html.resolve().as_uri(), viewport,
                               progress=slide_progress(side))
    except Exception as exc:  # noqa: BLE001 - one deck's page must not stop the run
        errors[side] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        emit(f"  {side} page FAILED: {errors[side]}")
        return None


def run(corpus: Path | list[Path], names: list[str] | None = None, as_newest: bool = False) -> dict:
    """The harness over the corpus (all decks, or those named): the JSON-ready result;
    each deck rendered as its Quarto release, or all with the newest rules (``as_newest``)."""
    decks = fc.load_decks(corpus, names)
    results = []
    with fb.browser() as ctx, tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        for n, deck in enumerate(decks, 1):
            emit(f"[fidelity] deck {n}/{len(decks)}: {deck.name} (Quarto {deck.quarto_version})")
            result = run_deck(ctx, deck, Path(tmp) / deck.name, as_newest)
            if result["pct_matching"] is None:
                score = f"{result['elements']} elements on Quarto's side, not measured"
            else:
                score = f"{result['elements']} elements, {fr.fmt_pct(result['pct_matching'])} matching"
            emit(f"[fidelity] {deck.name}: {score}, {result['seconds']:.0f} s")
            results.append(result)
    return {"corpus": str(corpus) if isinstance(corpus, Path) else [str(c) for c in corpus], "box_tolerance_px": fm.BOX_TOLERANCE_PX,
            "rendered_as": "newest" if as_newest else "reference",
            "decks": results, "rollup": fr.rollup(results)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, action="append", default=None,
                        help=f"a corpus folder (repeatable; default: ${fc.CORPUS_ENV}, else "
                             "<repo>/../shared/quarto-corpus and the extra corpus)")
    parser.add_argument("--extra", type=Path, default=None, metavar="PATH",
                        help="the extra corpus folder (default: $DECKBUILD_QUARTO_CORPUS_EXTRA, "
                             "else <repo>/../quarto-corpus-extra; skipped where absent)")
    parser.add_argument("--deck", action="append", default=None, metavar="NAME",
                        help="a deck's folder name (repeatable; default: every deck)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the full result (per slide, every difference) here")
    parser.add_argument("--no-slides", action="store_true",
                        help="leave the per-slide tables out of the markdown")
    parser.add_argument("--as-newest", action="store_true",
                        help="render every deck with the newest Quarto's rules (default: as "
                             "the Quarto version that rendered its reference)")
    parser.add_argument("--held-out", action="store_true",
                        help="only the decks held out from tuning (meta.json's held_out)")
    args = parser.parse_args(argv)
    corpus = args.corpus or fc.default_corpus(args.extra, notify=emit)
    try:
        names = args.deck
        if args.held_out:
            names = [d.name for d in fc.load_decks(corpus, names) if d.held_out]
        result = run(corpus, names, args.as_newest)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(str(exc))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False))
        emit(f"[fidelity] wrote {args.json}")
    print(fr.markdown(result, per_slide=not args.no_slides))
    return 0


if __name__ == "__main__":
    sys.exit(main())
