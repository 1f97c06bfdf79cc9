"""The preview in a browser (issue 22, item 1): the open page itself reloads after a
successful rebuild (on the slide it showed) and shows a failed build's error (message,
file and line) over the last good deck until the next good build; no console errors.

Before, the page's reload script was a syntax error ("Invalid or unexpected token"): the
server rebuilt, the page stayed stale until F5 and never showed an error."""

import time

import pytest

from deckbuild import browser


def _wait_page(page, script: str, what: str, preview, timeout: float = 120):
    """Poll ``script`` in the page until it returns a true value; the page may reload
    meanwhile (an evaluation interrupted by the reload is tried again)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert preview.proc.poll() is None, f"preview exited:\n{preview.console()}"
        try:
            value = page.evaluate(script)
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - "Execution context was destroyed" on reload
            if "context" not in str(exc) and "navigat" not in str(exc):
                raise
        time.sleep(0.1)
    raise AssertionError(f"the page never showed {what}:\n{preview.console()}")


SLIDE_TEXT = "() => (document.querySelector('section#second') || {}).textContent || ''"
ERROR_BOX = "() => { const b = document.getElementById('deckbuild-error'); " \
            "return b && b.getClientRects().length ? b.textContent : ''; }"


@pytest.mark.parametrize("hash_in_url", [True, False])
def test_the_page_reloads_itself_and_shows_build_errors(deck, preview, hash_in_url):
    """With `hash: true` the URL keeps the slide; without a hash in the URL the script does."""
    root = deck("preview")
    doc = root / "deck.qmd"
    if not hash_in_url:
        doc.write_text(doc.read_text().replace('title: "Preview"\n', 'title: "Preview"\nhash: false\nhistory: false\n'))
    source = doc.read_text()
    p = preview(doc)
    p.wait(lambda: p.get("/deck.html")[0] == 200, "the first build")
    console = []
    with browser.browser() as ctx:
        page = ctx.new_page()
        page.on("console", lambda m: m.type == "error" and console.append(m.text))
        page.on("pageerror", lambda e: console.append(str(e)))
        page.goto(f"{p.url}/deck.html" + ("#/second" if hash_in_url else ""), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
        if not hash_in_url:
            page.evaluate("() => Reveal.slide(2)")     # the title slide, First, Second
        assert page.evaluate("() => Reveal.getCurrentSlide().id") == "second"

        # a text edit: the page shows it by itself, still on the same slide
        doc.write_text(source.replace("Original words.", "Edited words."))
        _wait_page(page, f"() => ({SLIDE_TEXT})().includes('Edited words.')", "the edit", p)
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
        assert page.evaluate("() => [location.hash, Reveal.getCurrentSlide().id]") == \
            ["#/second" if hash_in_url else "", "second"]

        # a broken cell: the error box, over the last good deck
        broken = source.replace("Original words.", "Edited words.").replace(
            'print("cell output")', "1 / 0")
        doc.write_text(broken)
        box = _wait_page(page, ERROR_BOX, "the error box", p)
        line = broken.splitlines().index("```{python}") + 1
        assert "ZeroDivisionError" in box and f"deck.qmd:{line}" in box, box
        assert "Edited words." in page.evaluate(SLIDE_TEXT)

        # fixed: the box goes and the new output shows
        doc.write_text(broken.replace("1 / 0", 'print("fixed output")'))
        _wait_page(page, f"() => !({ERROR_BOX})() && ({SLIDE_TEXT})().includes('fixed output')",
                   "the fixed deck without the error box", p)
        assert page.evaluate("() => document.getElementById('deckbuild-error')") is None
        assert page.evaluate("() => Reveal.getCurrentSlide().id") == "second"
    assert console == []
