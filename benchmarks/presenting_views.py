"""What a presenter, a learner on a phone and an author see (issue 22): screenshots.

    .venv/bin/python benchmarks/presenting_views.py            # after `make deck`
    .venv/bin/python benchmarks/presenting_views.py --out DIR  # elsewhere than benchmarks/results

Opens the built deck (_output/slides/index.html, its PDF and handout PDF) in headless
Chromium and saves, under ``--out``, one PNG per view, named ``issue22-<item>-<view>.png``
after the issue's item it shows:

- 1: the preview (``deckbuild preview`` on the test deck tests/deckbuild/decks/preview): the
  page after a saved text edit, reloaded by itself; a broken cell's error box over the
  last good deck.
- 3: the explorer after typing in its box and pressing PageDown (a clicker): the next slide.
- 4: the explorer's guide; a half-typed last word (the answer stays); an unknown word.
- 5: the slide menu, whose titles hold maths.
- 6: a page of the PDF and of the handout (notes under the slide), as pdftoppm draws them.
- 7: the LayerNorm slide and the beam tree.
- 8: the speaker view (its "upcoming" preview with a one-line footer); the deck in a
  320 x 240 window.
- 10: the deck, a figure and the explorer on a phone held upright (390 x 844).

Every view is checked before it is saved (the slide is the one named, the element is
visible), so a screenshot cannot silently show the wrong thing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "code"))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_authoring import _free_port, _save, _wait_first_build  # noqa: E402
from deckbuild import browser  # noqa: E402

SENTENCE = "the cat did not cross the road because it was too tired"
GOTO = """(title) => {
  const h = Array.from(document.querySelectorAll('.reveal .slides section > h2'))
                 .find(h => h.textContent.includes(title));
  if (!h) throw new Error('no slide titled ' + title);
  const i = Reveal.getIndices(h.parentElement); Reveal.slide(i.h, i.v, Infinity);
}"""
# the scroll view (a narrow window) updates the current slide as it scrolls: wait for it
SHOWN = "(title) => (Reveal.getCurrentSlide().querySelector('h2') || {textContent: ''}).textContent.includes(title)"


def settle(page) -> None:
    page.evaluate("() => document.fonts.ready")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_timeout(300)


def open_deck(ctx, html: Path, width: int = 1280, height: int = 800):
    page = ctx.new_page()
    page.set_viewport_size({"width": width, "height": height})
    page.goto(html.resolve().as_uri(), wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30000)
    return page


def goto(page, title: str) -> None:
    page.evaluate(GOTO, title)
    for _ in range(20):       # in the scroll view the slide above can still count as current
        try:
            page.wait_for_function(SHOWN, arg=title, timeout=1000)
            break
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: scroll on, as a reader does
            page.evaluate("() => document.querySelector('.reveal-viewport').scrollBy(0, 150)")
    else:
        raise AssertionError(f"the slide {title!r} never became the current one")
    settle(page)


def shot(page, out: Path, name: str, **kw) -> None:
    path = out / f"issue22-{name}.png"
    page.screenshot(path=str(path), **kw)
    print(f"  {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


def explorer_views(ctx, html: Path, out: Path) -> None:
    page = open_deck(ctx, html)
    goto(page, "Type to the trained models")
    page.wait_for_function("() => document.querySelector('.tl-explorer').dataset.state === 'ready'", timeout=60000)
    settle(page)
    shot(page, out, "4-explorer-guide")
    box = page.locator(".tl-explorer .tlx-input")
    box.fill("")
    box.type(SENTENCE.replace("tired", "ti"), delay=5)
    page.wait_for_timeout(200)                       # less than the explorer's 900 ms settle time
    assert "typing" in page.inner_text(".tl-explorer .tlx-status")
    shot(page, out, "4-explorer-typing")
    box.fill(SENTENCE.replace("tired", "tierd"))
    page.wait_for_function("() => document.querySelector('.tl-explorer .tlx-message').textContent.includes('Unknown')",
                           timeout=10000)
    settle(page)
    shot(page, out, "4-explorer-unknown-word")
    box.fill(SENTENCE)
    box.focus()
    before = page.evaluate("() => Reveal.getSlidePastCount()")
    page.keyboard.press("PageDown")
    settle(page)
    assert page.evaluate("() => Reveal.getSlidePastCount()") == before + 1, "PageDown did not leave the explorer"
    shot(page, out, "3-clicker-pagedown-left-the-box")
    page.close()


def deck_views(ctx, html: Path, out: Path) -> None:
    page = open_deck(ctx, html)
    goto(page, "Why divide by")
    page.keyboard.press("m")
    page.wait_for_selector(".slide-menu.open", timeout=5000)
    settle(page)
    shot(page, out, "5-menu-maths-titles")
    page.keyboard.press("Escape")
    goto(page, "Layer normalisation, checked")
    shot(page, out, "7-layernorm-slide")
    goto(page, "A beam tree on a date")
    shot(page, out, "7-beam-tree")
    # the speaker view: the notes plugin's pop-up, with its "upcoming" preview
    goto(page, "Multi-head attention")
    with page.expect_popup() as popup_info:
        page.keyboard.press("s")
    popup = popup_info.value
    popup.set_viewport_size({"width": 1280, "height": 800})
    popup.wait_for_function("() => document.querySelector('.speaker-controls-notes') !== null", timeout=20000)
    popup.wait_for_timeout(1500)
    assert popup.inner_text(".speaker-controls-notes").strip(), "the speaker view shows no notes"
    shot(popup, out, "8-speaker-view")
    popup.close()
    page.close()
    small = open_deck(ctx, html, 320, 240)
    goto(small, "Multi-head attention")
    shot(small, out, "8-deck-in-a-320x240-window")
    small.close()


def phone_views(ctx, html: Path, out: Path) -> None:
    # reveal.js shows the scroll view below 435 px of window width (scrollActivationWidth)
    page = open_deck(ctx, html, 390, 844)
    assert page.evaluate("() => Reveal.isScrollView()"), "a phone held upright shows the scroll view"
    goto(page, "Queries, keys, values")
    shot(page, out, "10-phone-deck")
    goto(page, "Multi-head attention")
    height = page.evaluate("() => Reveal.getCurrentSlide().querySelector('img.r-stretch').getBoundingClientRect().height")
    assert height > 100, f"the stretched figure is {height:.0f} px high on a phone"
    shot(page, out, "10-phone-figure")
    meta = page.evaluate("() => document.querySelector('meta[name=viewport]').content")
    assert "user-scalable=no" not in meta and "maximum-scale" not in meta, meta
    goto(page, "Type to the trained models")
    page.wait_for_function("() => document.querySelector('.tl-explorer').dataset.state === 'ready'",
                           timeout=60000)
    settle(page)
    page.locator(".tl-explorer").scroll_into_view_if_needed()
    shot(page, out, "10-phone-explorer")
    page.close()


def pdf_views(out: Path) -> None:
    for name, pdf, page in (("6-pdf-page", "index.pdf", 27), ("6-handout-page", "index-handout.pdf", 27)):
        path = REPO / "_output" / "slides" / pdf
        if not path.is_file():
            raise SystemExit(f"{path} is missing: run `make deck` first")
        stem = out / f"issue22-{name}"
        subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", str(page), "-l", str(page), "-singlefile",
                        str(path), str(stem)], check=True)
        png = stem.with_name(stem.name + ".png")
        print(f"  {png.relative_to(REPO) if png.is_relative_to(REPO) else png}")


def preview_views(ctx, out: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="views-preview-"))
    root = tmp / "preview"
    shutil.copytree(REPO / "tests" / "deckbuild" / "decks" / "preview", root)
    doc = root / "deck.qmd"
    source = doc.read_text()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "code"), os.environ.get("PYTHONPATH")]))}
    env.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))
    port, log = _free_port(), tmp / "preview.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "preview", "--no-browser", "--port", str(port),
                                 str(doc)], cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        _wait_first_build(port, proc, log, 600)
        page = ctx.new_page()
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto(f"http://127.0.0.1:{port}/deck.html#/second", wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30000)
        _save(doc, source.replace("Original words.", "Edited words, saved a moment ago."))
        page.wait_for_function("() => (document.querySelector('section#second') || {textContent: ''})"
                               ".textContent.includes('saved a moment ago')", timeout=120000)
        settle(page)
        shot(page, out, "1-preview-reloaded-by-itself")
        _save(doc, source.replace("Original words.", "Edited words, saved a moment ago.")
              .replace('print("cell output")', "1 / 0"))
        page.wait_for_function("() => { const b = document.getElementById('deckbuild-error');"
                               " return b && b.getClientRects().length > 0; }", timeout=120000)
        settle(page)
        shot(page, out, "1-preview-error-over-the-last-good-deck")
        page.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results", help="where the PNGs go")
    ap.add_argument("--deck", type=Path, default=REPO / "_output" / "slides" / "index.html")
    args = ap.parse_args(argv)
    if not args.deck.is_file():
        ap.error(f"--deck {args.deck} does not exist: run `make deck` first")
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))
    pdf_views(args.out)
    with browser.browser() as ctx:
        browser._block_network(ctx)
        explorer_views(ctx, args.deck, args.out)
        deck_views(ctx, args.deck, args.out)
        phone_views(ctx, args.deck, args.out)
    with browser.browser() as ctx:
        preview_views(ctx, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
