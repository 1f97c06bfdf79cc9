"""Quarto features of issue 34, each as Quarto does it: format extensions from
``_extensions/``, ``{mermaid}`` and ``{dot}`` cells, pandoc reader extensions (``from:``),
``fig-cap-location``, conditional content, profiles, and where Quarto is lenient (a missing
logo, a ``render:`` list naming a missing file when one file is rendered). Each deck is a
few lines written for the test; one build per test, HTML only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deck_helpers import parse_html, run_cli
from deckbuild.errors import DeckError
from deckbuild.options import load_project, resolve_options
from deckbuild.source import parse

pytestmark = pytest.mark.deck


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build(qmd: Path, *args: str) -> tuple[str, str]:
    """(the HTML, the renderer's stderr) of one HTML-only build."""
    proc = run_cli("render", str(qmd), "--html-only", *args, cwd=qmd.parent)
    assert proc.returncode == 0, proc.stderr
    html = [line for line in proc.stdout.splitlines() if line.endswith(".html")][-1]
    return Path(html).read_text(encoding="utf-8"), proc.stderr


def slide_texts(html: str) -> list[str]:
    return [s.text() for s in parse_html(html).find_all("section") if "slide" in s.classes]


# --- format extensions ---------------------------------------------------------------

EXTENSION = """title: Plain
author: Test
contributes:
  formats:
    revealjs:
      theme: [default, plain.scss]
      slide-number: true
      footer: From the extension
"""


def test_a_format_extension_gives_its_options_beneath_the_decks_own(tmp_path):
    ext = tmp_path / "_extensions" / "someone" / "plain"
    write(ext / "_extension.yml", EXTENSION)
    write(ext / "plain.scss", "/*-- scss:defaults --*/\n$body-bg: #fafaf0 !default;\n"
                              "/*-- scss:rules --*/\n.reveal .slide h2 { letter-spacing: 1px; }\n")
    qmd = write(tmp_path / "deck.qmd", "---\nformat:\n  plain-revealjs:\n    footer: Mine\n---\n\n## One\n")
    opts = resolve_options(None, qmd, parse(qmd, tmp_path).front)
    assert opts.extension.name == "plain"
    assert opts["theme"] == ["default", str((ext / "plain.scss").resolve())]
    assert (opts["slide-number"], opts["footer"]) == (True, "Mine")   # the deck's own wins
    html, _ = build(qmd)
    css = "".join((tmp_path / n.attrs["href"]).read_text(encoding="utf-8")
                  for n in parse_html(html).find_all("link") if n.attrs.get("rel") == "stylesheet"
                  and (tmp_path / n.attrs["href"]).is_file())
    assert "letter-spacing:1px" in css.replace(" ", "") and "Mine" in html


def test_a_format_extension_that_is_not_installed_names_where_it_was_looked_for(tmp_path):
    qmd = write(tmp_path / "deck.qmd", "---\nformat: clean-revealjs\n---\n\n## One\n")
    with pytest.raises(DeckError, match=r"format 'clean-revealjs' needs the Quarto extension "
                                        r"'clean', which is not installed") as info:
        resolve_options(None, qmd, parse(qmd, tmp_path).front)
    assert info.value.line == 2


# --- diagrams ------------------------------------------------------------------------

def test_mermaid_and_dot_cells_are_drawn_as_quarto_draws_them(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz (Debian package graphviz) is not installed")
    qmd = write(tmp_path / "deck.qmd", "## Flow\n\n```{mermaid}\n%%| fig-cap: A flow\n"
                "flowchart LR\n  A --> B\n```\n\n## Graph\n\n```{dot}\ndigraph { x -> y }\n```\n")
    html, _ = build(qmd)
    page = parse_html(html)
    pre = page.find("pre", cls="mermaid-js")
    assert "flowchart LR" in pre.text() and "A --&gt; B" in html
    assert "mermaid.initialize" in html            # npm's mermaid draws it in the page
    assert "A flow" in page.find("figcaption").text()
    svg = page.find("svg")                          # Graphviz's drawing, inline
    assert [t.text() for t in svg.find_all("title")][:3] == ["%3", "x", "y"] or \
        {"x", "y"} <= {t.text() for t in svg.find_all("title")}


def test_a_dot_error_names_the_cell(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz (Debian package graphviz) is not installed")
    qmd = write(tmp_path / "deck.qmd", "## Graph\n\n```{dot}\ndigraph { x -> \n```\n")
    with pytest.raises(DeckError, match="Graphviz could not draw this \\{dot\\} cell") as info:
        parse(qmd, tmp_path)
    assert info.value.line == 3


# --- reader, captions, conditional content, profiles ----------------------------------

def test_from_sets_pandocs_reader_extensions(tmp_path):
    qmd = write(tmp_path / "deck.qmd", "## Hi :smile:\n")
    assert ":smile:" in slide_texts(build(qmd)[0])[0]          # Quarto's plain markdown
    write(qmd, "---\nfrom: markdown+emoji\n---\n\n## Hi :smile:\n")
    assert "\U0001F604" in slide_texts(build(qmd)[0])[0]


def test_fig_cap_location_top_puts_the_caption_above_the_figure(tmp_path):
    write(tmp_path / "a.svg", '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')
    body = "\n## F\n\n![The caption](a.svg){#fig-a}\n"
    qmd = write(tmp_path / "deck.qmd", body)
    bottom, _ = build(qmd)
    assert bottom.index("<figcaption") > bottom.index('src="') or "quarto-float-caption-bottom" in bottom
    write(qmd, "---\nfig-cap-location: top\n---\n" + body)
    top, _ = build(qmd)
    assert "quarto-float-caption-top" in top
    figure = top[top.index('<figure class="quarto-float'):]
    assert figure.index("<figcaption") < figure.index("<img")


CONDITIONAL = """
## Shown

::: {.content-visible when-format="revealjs"}
visible-for-revealjs
:::

::: {.content-visible when-format="pdf"}
visible-for-pdf
:::

::: {.content-hidden when-format="html"}
hidden-for-html
:::

::: {.content-hidden unless-format="html"}
hidden-unless-html
:::

::: {.content-visible when-profile="teacher"}
teacher-only
:::

Inline [pdf-only]{.content-visible when-format="pdf"} and [always]{.content-visible}.
"""


def test_conditional_content_follows_format_and_profile(tmp_path):
    write(tmp_path / "_quarto.yml", "project:\n  type: default\n")
    qmd = write(tmp_path / "deck.qmd", CONDITIONAL)
    text = slide_texts(build(qmd)[0])[0]
    assert "visible-for-revealjs" in text and "hidden-unless-html" in text and "always" in text
    for gone in ("visible-for-pdf", "hidden-for-html", "teacher-only", "pdf-only"):
        assert gone not in text
    assert "teacher-only" in slide_texts(build(qmd, "--profile", "teacher")[0])[0]


def test_a_profile_merges_its_own_config_and_quarto_profile_activates_it(tmp_path, monkeypatch):
    write(tmp_path / "_quarto.yml", "project:\n  type: default\nfooter: base\n"
                                    "profile:\n  default: en\n")
    write(tmp_path / "_quarto-de.yml", "footer: Fußzeile\n")
    write(tmp_path / "_quarto-en.yml", "footer: footer\n")
    qmd = write(tmp_path / "deck.qmd", "## One\n")
    monkeypatch.delenv("QUARTO_PROFILE", raising=False)
    project = load_project(tmp_path)
    assert project.profiles == ["en"]
    assert resolve_options(project, qmd, parse(qmd, tmp_path).front)["footer"] == "footer"
    monkeypatch.setenv("QUARTO_PROFILE", "de")
    project = load_project(tmp_path)
    opts = resolve_options(project, qmd, parse(qmd, tmp_path).front)
    assert (project.profiles, opts["footer"], opts.profiles) == (["de"], "Fußzeile", ["de"])


def test_slide_visibility_reaches_revealjs(tmp_path):
    qmd = write(tmp_path / "deck.qmd", "## A\n\n## B {visibility=\"hidden\"}\n\n"
                                       "## C {visibility=\"uncounted\"}\n")
    html, _ = build(qmd)
    assert 'data-visibility="hidden"' in html and 'data-visibility="uncounted"' in html


# --- as lenient as Quarto --------------------------------------------------------------

def test_a_missing_logo_is_linked_as_written_with_a_warning(tmp_path):
    qmd = write(tmp_path / "deck.qmd", "---\nlogo: images/gone.png\n---\n\n## One\n")
    html, stderr = build(qmd)
    assert 'src="images/gone.png"' in html
    assert "deck.qmd:2: warning: logo file not found: images/gone.png" in stderr


def test_rendering_one_file_of_a_project_whose_render_list_names_a_missing_file(tmp_path):
    write(tmp_path / "_quarto.yml", "project:\n  render:\n    - index.qmd\n    - deck.qmd\n")
    qmd = write(tmp_path / "deck.qmd", "## One\n")
    html, stderr = build(qmd)
    assert "One" in html
    assert "_quarto.yml:3: warning: file listed under project: render not found: index.qmd" in stderr
    proc = run_cli("render", str(tmp_path), "--html-only", cwd=tmp_path)
    assert proc.returncode == 1 and "render not found: index.qmd" in proc.stderr
