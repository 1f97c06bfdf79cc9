"""Decks as real Quarto decks are written (issue 19): without ``embed-resources`` (Quarto's
default) the HTML links ``<name>_files/libs/...`` copied beside it; remote images and
logos stay links, with a warning; a path starting with ``/`` is the project's; every
``html-math-method`` Quarto accepts is built or refused clearly. Each deck is written by
the test; nothing here touches the network (remote addresses are ``.invalid`` or a
closed local port, and the browser's requests outside file:// are refused)."""

import re
from pathlib import Path

import pytest

from deck_helpers import run_cli, open_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document
from deckbuild.errors import DeckError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def png(path: Path, colour: tuple[int, int, int]) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 30), colour).save(path)
    return path


def build(deck: Path):
    return build_document(deck, BuildSettings(html_only=True), lambda *a, **k: None)


def warned(result, *words: str) -> list:
    return [w for w in result.warnings if all(word in w.message for word in words)]


LINKED_CONFIG = """project:
  output-dir: _output
format:
  revealjs:
    theme: [serif]
    css: style.css
    logo: img/logo.png
"""

LINKED_DECK = """---
title: Linked
---

## Images

![](/img/rooted.png)

![](../img/relative.png)

![](https://example.invalid/remote.png)

## A figure

```{python}
from matplotlib.figure import Figure
fig = Figure(figsize=(2, 1))
fig.add_subplot().plot([0, 1], [1, 0])
fig
```
"""


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    root = tmp_path_factory.mktemp("linked")
    write(root / "_quarto.yml", LINKED_CONFIG)
    write(root / "style.css", ".reveal .slides h2 { letter-spacing: 0.01em; }\n")
    for name, colour in (("rooted", (200, 30, 30)), ("relative", (30, 200, 30)), ("logo", (0, 0, 0))):
        png(root / "img" / f"{name}.png", colour)
    result = build(write(root / "talks" / "deck.qmd", LINKED_DECK))
    return root, result, result.html.read_text(encoding="utf-8")


def test_a_deck_without_embed_resources_links_libs_copied_beside_it(linked):
    root, result, html = linked
    out = root / "_output" / "talks"
    assert result.html == out / "deck.html"
    for lib in ("libs/revealjs/dist/reveal.js", "libs/revealjs/dist/reveal.css",
                "libs/revealjs/plugin/notes/notes.js", "libs/revealjs/dist/theme/quarto.css"):
        assert (out / "deck_files" / lib).is_file(), lib
        assert f'"deck_files/{lib}"' in html, lib
    assert "data:" not in html.split("<body>")[0]          # nothing embedded in the head
    assert "#f0f1eb" in (out / "deck_files/libs/revealjs/dist/theme/quarto.css").read_text()
    assert not list(out.parent.glob(".deck_files.*"))     # no partial folder left behind


def test_the_cells_figures_are_beside_the_html(linked):
    root, _, html = linked
    (src,) = re.findall(r'data-src="(deck_files/figure-revealjs/[^"]+)"', html)
    assert (root / "_output" / "talks" / src).is_file()


def test_the_decks_own_files_are_copied_and_linked_from_the_html(linked):
    """Images (a ``/`` path is the project root's), the stylesheet and the logo keep their
    places in the project, under the output folder."""
    root, _, html = linked
    assert 'data-src="../img/rooted.png"' in html and 'data-src="../img/relative.png"' in html
    assert 'href="../style.css"' in html and 'src="../img/logo.png"' in html
    for name in ("img/rooted.png", "img/relative.png", "img/logo.png", "style.css"):
        assert (root / "_output" / name).read_bytes() == (root / name).read_bytes(), name


def test_a_remote_image_stays_a_link_with_a_warning(linked):
    _, result, html = linked
    assert 'data-src="https://example.invalid/remote.png"' in html
    (warning,) = warned(result, "https://example.invalid/remote.png")
    assert (Path(warning.file).name, warning.line) == ("deck.qmd", 11)
    assert "shows only with the network" in warning.message


def test_the_linked_deck_works_from_file_urls(linked):
    root, _, _ = linked
    with browser.browser() as ctx:
        browser._block_network(ctx)
        errors = []
        page = open_deck(ctx, root / "_output/talks/deck.html", errors=errors)
        background = page.evaluate(
            "() => getComputedStyle(document.querySelector('.reveal-viewport')).backgroundColor")
        loaded = page.evaluate("""async () => {
            const imgs = [...document.querySelectorAll('.slides img')];
            imgs.forEach(i => { if (i.dataset.src) i.src = i.dataset.src; });
            await Promise.all(imgs.map(i => i.decode().catch(() => null)));
            return Object.fromEntries(imgs.map(i => [i.getAttribute('src'), i.naturalWidth > 0]));
        }""")
        page.close()
    assert errors == []
    assert background == "rgb(240, 241, 235)"           # the serif theme
    assert loaded.pop("https://example.invalid/remote.png") is False
    assert loaded and all(loaded.values()), loaded


def test_a_second_build_is_up_to_date_and_a_deleted_files_folder_is_rebuilt(linked):
    root, _, _ = linked
    deck = root / "talks" / "deck.qmd"
    assert build(deck).up_to_date
    import shutil
    shutil.rmtree(root / "_output/talks/deck_files")
    again = build(deck)
    assert not again.up_to_date and (root / "_output/talks/deck_files/libs/revealjs/dist/reveal.js").is_file()


# --- remote files under embed-resources, remote logo ------------------------------------

def test_an_embedded_deck_keeps_an_unfetchable_remote_image_as_a_link(tmp_path):
    """With embed-resources, pandoc embeds a remote image it can fetch; one it cannot (no
    network; here a closed local port) stays a link, with a warning saying so."""
    deck = write(tmp_path / "deck.qmd", "---\nembed-resources: true\nhtml-math-method: katex\n---\n\n"
                                        "## S\n\n![](http://127.0.0.1:9/x.png)\n")
    result = build(deck)
    assert 'data-src="http://127.0.0.1:9/x.png"' in result.html.read_text(encoding="utf-8")
    (warning,) = warned(result, "http://127.0.0.1:9/x.png")
    assert warning.line == 8 and "could not be fetched" in warning.message
    assert "keeps the link" in warning.message


def test_a_remote_logo_stays_a_link(tmp_path):
    write(tmp_path / "_quarto.yml", "format:\n  revealjs:\n    logo: https://example.invalid/l.png\n")
    result = build(write(tmp_path / "deck.qmd", "## S\n"))
    assert 'src="https://example.invalid/l.png" class="slide-logo"' in result.html.read_text()
    (warning,) = warned(result, "https://example.invalid/l.png")
    assert (Path(warning.file).name, warning.line) == ("_quarto.yml", 3)


def test_raw_html_files_are_copied_or_warned_about(tmp_path):
    """``<img src=...>`` in raw HTML: a local file is copied into the output folder, a
    remote one stays a link with a warning; one in an HTML comment is neither."""
    write(tmp_path / "_quarto.yml", "project:\n  output-dir: _output\n")
    png(tmp_path / "pics" / "local.png", (10, 20, 30))
    deck = write(tmp_path / "deck.qmd", '## S\n\n<p align="center">\n  <img src="pics/local.png" />\n'
                 '  <img src="https://example.invalid/a.gif" />\n</p>\n\n'
                 '<!-- <img src="https://example.invalid/hidden.gif"> -->\n')
    result = build(deck)
    assert (tmp_path / "_output" / "pics" / "local.png").is_file()
    (warning,) = warned(result, "example.invalid")
    assert warning.line == 5 and "a.gif" in warning.message


def test_a_missing_project_image_is_a_warning_naming_file_and_line(tmp_path):
    write(tmp_path / "_quarto.yml", "project:\n  output-dir: _output\n")
    result = build(write(tmp_path / "deck.qmd", "## S\n\ntext\n\n![](/images/gone.png)\n"))
    (warning,) = warned(result, "image not found: /images/gone.png")
    assert warning.line == 5 and str(tmp_path / "images" / "gone.png") in warning.message


# --- html-math-method ------------------------------------------------------------------

MATH_DECK = "---\ntitle: M\n{front}---\n\n## S\n\nInline $x^2$ and\n\n$$\\int_0^1 t\\,dt$$\n"


def _math(tmp_path: Path, front: str, body: str = ""):
    result = build(write(tmp_path / "deck.qmd", MATH_DECK.format(front=front) + body))
    return result, result.html.read_text(encoding="utf-8")


def test_unset_math_method_is_mathjax_from_quartos_cdn(tmp_path):
    result, html = _math(tmp_path, "")
    assert '<script src="deck_files/libs/revealjs/plugin/math/math.js"></script>' in html
    assert '"mathjax": "https://cdn.jsdelivr.net/npm/mathjax@2.7.9/MathJax.js"' in html
    assert '"config": "TeX-AMS_HTML-full"' in html and "RevealMath" in html
    assert r'<span class="math inline">\(x^2\)</span>' in html
    assert not (tmp_path / "deck_files/libs/katex").exists()
    (warning,) = warned(result, "MathJax")
    assert "needs the network" in warning.message and "not set" in warning.message


def test_mathjax_with_its_own_url(tmp_path):
    result, html = _math(tmp_path, "html-math-method:\n  method: mathjax\n  url: "
                                   "https://example.invalid/mj/MathJax.js?config=TeX-MML-AM_CHTML\n")
    assert '"mathjax": "https://example.invalid/mj/MathJax.js"' in html
    assert '"config": "TeX-MML-AM_CHTML"' in html
    (warning,) = warned(result, "MathJax")
    assert warning.line == 3 and "https://example.invalid/mj/MathJax.js" in warning.message


def test_an_embedded_mathjax_deck_embeds_the_plugin_and_loads_mathjax_when_shown(tmp_path):
    result, html = _math(tmp_path, "embed-resources: true\nhtml-math-method: mathjax\n")
    assert "plugin/math/math.js" not in html and "RevealMath" in html
    assert not re.search(r'<script[^>]+src="https?://', html)
    # written out, the method replaces Quarto's default url too: pandoc's MathJax 3 (as the
    # corpus deck bamiesking-nqmx, Quarto 1.5.52, loads it)
    assert '"mathjax": "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml-full.js"' in html
    assert len(warned(result, "MathJax", "network")) == 1


def test_no_maths_no_mathjax_warning(tmp_path):
    result = build(write(tmp_path / "deck.qmd", "## S\n\nNo formula here.\n"))
    assert not warned(result, "MathJax")


def test_katex_without_embed_resources_is_copied_beside_the_html(tmp_path):
    result, html = _math(tmp_path, "html-math-method: katex\n")
    assert '<script defer="" src="deck_files/libs/katex/katex.min.js"></script>' in html \
        or 'src="deck_files/libs/katex/katex.min.js"' in html
    assert (tmp_path / "deck_files/libs/katex/fonts").is_dir()
    assert not warned(result, "MathJax") and not warned(result, "KaTeX")


def test_mathml_and_plain_are_pandocs(tmp_path):
    _, html = _math(tmp_path / "mathml", "html-math-method: mathml\n")
    # no KaTeX loaded or rendered (the menu's script names its class, for decks that use it)
    assert "<math" in html and "MathJax" not in html
    assert "katex.min" not in html and "KaTeX_" not in html and 'class="katex' not in html
    _, html = _math(tmp_path / "plain", "html-math-method: plain\n")
    assert '<span class="math inline"><em>x</em><sup>2</sup></span>' in html


def test_gladtex_is_refused_with_file_and_line(tmp_path):
    with pytest.raises(DeckError, match="gladtex is not supported by deckbuild") as info:
        _math(tmp_path, "html-math-method: gladtex\n")
    assert info.value.line == 3


def test_an_unknown_math_method_is_a_schema_error(tmp_path):
    with pytest.raises(DeckError, match="option 'html-math-method' must be one of plain, webtex, "
                                        "gladtex, mathml, mathjax, katex"):
        _math(tmp_path, "html-math-method: asciimath\n")


# --- other things real decks write ------------------------------------------------------

def test_rmarkdown_output_key_is_a_warning(tmp_path):
    result = build(write(tmp_path / "deck.qmd", "---\ntitle: T\noutput: revealjs\n---\n\n## S\n"))
    (warning,) = warned(result, "output: revealjs")
    assert warning.line == 3 and "R Markdown" in warning.message


def test_a_module_the_kernel_lacks_says_what_to_install(tmp_path):
    deck = write(tmp_path / "deck.qmd", "## S\n\n```{python}\nimport deckbuild_no_such_module.sub\n```\n")
    proc = run_cli("render", str(deck), "--html-only", cwd=tmp_path)
    assert proc.returncode == 1
    assert "deck.qmd:3: cell 1 raised ModuleNotFoundError" in proc.stderr
    assert "-m pip install deckbuild_no_such_module" in proc.stderr
