"""The layout of slide bodies as Quarto lays them out (fidelity round 2, part C): figures,
positioned images, layout panels, tables, code blocks with a file name, line-highlight
steps or annotations, tabsets, callout options. Each test names the quarto-cli source
(read at main) that gives the markup or the rule. One small deck is written and built once
(HTML only); the browser tests look at it in headless Chromium at the slide's own size.
"""

import pytest

from deck_helpers import parse_html, open_deck
from deckbuild import browser
from deckbuild.build import BuildSettings, build_document

CONFIG = """project:
  output-dir: _output
format:
  revealjs:
    embed-resources: true
    logo: pic.svg
    callout-appearance: simple
    callout-icon: false
    code-block-height: 320px
    monobackgroundcolor: "#fafaf0"
"""
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="200"><rect width="300" height="200" fill="#48c"/></svg>'
DECK = """---
title: Layout
---

## Figures {.nostretch}

![A caption, no label](pic.svg)

## Aligned

![](pic.svg){fig-align=left width=30%}

## Labelled

![Numbered](pic.svg){#fig-one fig-align=right}

## Output

::: {.cell-output-display}
![](pic.svg)
:::

## Positioned

![](pic.svg){.absolute top=35% left=60% width=40%}

::: {.absolute bottom=20 right=10}
Corner
:::

## Columns of cells

::: {layout-ncol=2}
First paragraph.

![](pic.svg)

Third paragraph.
:::

## Rows of widths

::: {layout="[[1,2],[1]]"}
One.

Two.

Three.
:::

## Table

| a | b |
|---|---|
| 1 | 2 |

: Widths {tbl-colwidths="[25,75]" .striped}

## File name

```{.python filename="app.py"}
x = 1
```

## Steps

```{.python code-line-numbers="|1|2-3"}
a = 1
b = 2
c = 3
```

## Annotated

```python
x = load()  # <1>
y = x + 1
print(y)    # <2>
```

1. Load the data.
2. Show it.

## Tabs

::: {.panel-tabset}
### Alpha

In alpha.

### Beta

In beta.
:::

## Callout

::: {.callout-note}
## Plain
Simple and without icon, from the document's options.
:::

## Last

![](pic.svg)
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    (root / "_quarto.yml").write_text(CONFIG)
    (root / "pic.svg").write_text(SVG)
    (root / "deck.qmd").write_text(DECK)
    html = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None).html
    return html, parse_html(html.read_text(encoding="utf-8"))


def slide(page, title):
    return next(s for s in page.find_all("section")
                if s.find_all("h2") and s.find("h2").text().strip() == title)


# --- markup --------------------------------------------------------------------------

def test_an_unlabelled_figure_is_quartos_plain_figure(built):
    """An unlabelled captioned image: div.quarto-figure.quarto-figure-center > figure >
    p > img + figcaption (src/resources/filters/layout/html.lua, renderHtmlFigure)."""
    _, page = built
    div = slide(page, "Figures").find("div", cls="quarto-figure")
    assert div.classes == ["quarto-figure", "quarto-figure-center"]
    (figure,) = div.elements()
    p, caption = figure.elements()
    assert figure.tag == "figure" and p.tag == "p" and p.find("img")
    assert caption.tag == "figcaption" and caption.text().strip() == "A caption, no label"


def test_fig_align_makes_figure_classes_on_image_and_wrapper(built):
    """fig-align on an image alone in its paragraph: the paragraph in a <figure> in
    div.quarto-figure-X, the image with the same classes (quarto-post/html.lua); a
    labelled figure takes its image's alignment (customnodes/floatreftarget.lua)."""
    _, page = built
    div = slide(page, "Aligned").find("div", cls="quarto-figure")
    assert div.classes == ["quarto-figure", "quarto-figure-left"]
    img = div.find("figure").find("p").find("img")
    assert {"quarto-figure", "quarto-figure-left"} <= set(img.classes)
    assert "data-fig-align" not in img.attrs
    assert "quarto-figure-right" in page.find("div", id="fig-one").classes


def test_a_display_outputs_image_is_wrapped_in_a_figure(built):
    """A display output's paragraph with an image goes into <div><figure> (quarto-post/
    html.lua, the cell-output-display fix) and the div is a .cell-output too."""
    _, page = built
    out = slide(page, "Output").find("div", cls="cell-output-display")
    assert "cell-output" in out.classes
    assert out.find("div").find("figure").find("p").find("img")


def test_absolute_position_attributes_become_style(built):
    """.absolute: top/left/bottom/right/width/height into the style, numbers in px
    (quarto-post/reveal.lua, applyPosition)."""
    _, page = built
    s = slide(page, "Positioned")
    assert s.find("img").attrs["style"] == "top: 35%; left: 60%; width: 40%; "
    assert s.find("div", cls="absolute").attrs["style"] == "bottom: 20px; right: 10px; "


def test_layout_ncol_makes_rows_of_flex_cells(built):
    """layout-ncol=2 over three blocks: two rows, each cell 50% (layout/layout.lua and
    width.lua: 42 for a cell without width), text cells left, image cells centred
    (common/layout.lua, layoutCellAlignment)."""
    _, page = built
    panel = slide(page, "Columns of cells").find("div", cls="quarto-layout-panel")
    rows = panel.find_all("div", cls="quarto-layout-row")
    cells = [[c.attrs["style"] for c in r.find_all("div", cls="quarto-layout-cell")] for r in rows]
    assert cells == [["flex-basis: 50.0%;justify-content: flex-start;",
                      "flex-basis: 50.0%;justify-content: center;"],
                     ["flex-basis: 50.0%;justify-content: flex-start;"]]


def test_layout_widths_are_shares_of_their_row(built):
    """layout="[[1,2],[1]]": numbers are shares of their row, rounded to 0.1%."""
    _, page = built
    panel = slide(page, "Rows of widths").find("div", cls="quarto-layout-panel")
    widths = [c.attrs["style"].split(";")[0] for c in panel.find_all("div", cls="quarto-layout-cell")]
    assert widths == ["flex-basis: 33.3%", "flex-basis: 66.7%", "flex-basis: 100.0%"]


def test_tbl_colwidths_and_short_table_classes(built):
    """tbl-colwidths sets the columns' widths (modules/tablecolwidths.lua); .striped is
    Bootstrap's table-striped (quarto-pre/table-classes.lua)."""
    _, page = built
    table = slide(page, "Table").find("table")
    assert [c.attrs["style"] for c in table.find_all("col")] == ["width: 25%", "width: 75%"]
    assert "table-striped" in table.classes and "striped" not in table.classes


def test_a_code_blocks_file_name_heads_it(built):
    """filename="app.py": div.code-with-filename > div.code-with-filename-file > pre >
    strong, then the code (customnodes/decoratedcodeblock.lua)."""
    _, page = built
    box = slide(page, "File name").find("div", cls="code-with-filename")
    head, code = box.elements()
    assert head.classes == ["code-with-filename-file"]
    assert head.find("pre").find("strong").text() == "app.py"
    assert "sourceCode" in code.classes


def test_code_annotations_leave_the_code_for_a_list_below_it(built):
    """Markers `# <N>` leave the code; the list after the block becomes
    dl.code-annotation-container-grid, each note naming its lines (quarto-pre/
    code-annotation.lua); the block is annotated-cell-1 with its line-to-number map."""
    _, page = built
    s = slide(page, "Annotated")
    block = s.find("div", cls="sourceCode")
    assert block.attrs["id"] == "annotated-cell-1" and block.attrs["data-code-annotations"] == "1:1,3:2"
    assert "<1>" not in block.text() and "load()" in block.text()
    grid = s.find("dl", cls="code-annotation-container-grid")
    assert [dt.text() for dt in grid.find_all("dt")] == ["1", "2"]
    notes = [(d.attrs["data-code-lines"], d.text()) for d in grid.find_all("span")]
    assert notes == [("1", "Load the data."), ("3", "Show it.")]
    assert not s.find_all("ol")


def test_a_tabset_is_quartos_tabby_markup(built):
    """A tabset: ul.panel-tabset-tabby of links to the panes, the first the default, the
    panes in div.tab-content (customnodes/panel-tabset.lua, tabbyTabs); its headings
    start no slide."""
    _, page = built
    s = slide(page, "Tabs")
    links = s.find("ul", cls="panel-tabset-tabby").find_all("a")
    assert [(a.attrs["href"], a.text(), "data-tabby-default" in a.attrs) for a in links] == [
        ("#tabset-1-1", "Alpha", True), ("#tabset-1-2", "Beta", False)]
    panes = s.find("div", cls="tab-content").elements()
    assert [p.attrs["id"] for p in panes] == ["tabset-1-1", "tabset-1-2"]
    assert "In beta." in panes[1].text()


def test_document_callout_options_apply_to_every_callout(built):
    """callout-appearance and callout-icon in _quarto.yml (customnodes/callout.lua reads
    them as the defaults of every callout)."""
    _, page = built
    callout = slide(page, "Callout").find("div", cls="callout")
    assert {"callout-style-simple", "no-icon"} <= set(callout.classes)
    assert not callout.find_all("div", cls="callout-icon-container")


# --- in the browser ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def page(built):
    html, _ = built
    with browser.browser() as ctx:
        p = open_deck(ctx, html, size=(1050, 700))
        yield p
        p.close()


def go(page, title):
    page.evaluate("""(t) => { const s = Reveal.getSlides().find(s => {
        const h = s.querySelector('h2'); return h && h.textContent.trim() === t; });
        const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v || 0); }""", title)


def boxes(page, selector):
    return page.evaluate("""(sel) => Array.from(Reveal.getCurrentSlide().querySelectorAll(sel))
        .map(e => e.getBoundingClientRect().toJSON())""", selector)


def test_line_highlight_steps_are_code_copies_laid_over_the_first(page):
    """code-line-numbers="|1|2-3": the first code highlights nothing, each later step is a
    copy of the code, a fragment at the same place with its lines highlighted
    (plugins/line-highlight/line-highlight.js and .css)."""
    go(page, "Steps")
    codes = page.evaluate("""() => Array.from(Reveal.getCurrentSlide().querySelectorAll('pre > code'))
        .map(c => ({fragment: c.classList.contains('fragment'),
                    lit: Array.from(c.children).filter(s => s.classList.contains('highlight-line')).length}))""")
    assert codes == [{"fragment": False, "lit": 0}, {"fragment": True, "lit": 1},
                     {"fragment": True, "lit": 2}]
    first, *copies = boxes(page, "pre > code")
    assert all(abs(c["top"] - first["top"]) < 0.5 and abs(c["left"] - first["left"]) < 0.5 for c in copies)


def test_annotation_anchors_precede_their_lines(page):
    """Quarto's numbered anchor before each marked line (its HTML postprocessor; ours
    deckbuild.js), the line marked as a target; the grid's numbers beside their notes."""
    go(page, "Annotated")
    anchors = page.evaluate("""() => Array.from(Reveal.getCurrentSlide().querySelectorAll('a.code-annotation-anchor'))
        .map(a => [a.textContent, a.nextElementSibling.id, a.nextElementSibling.classList.contains('code-annotation-target')])""")
    assert anchors == [["1", "annotated-cell-1-1", True], ["2", "annotated-cell-1-3", True]]
    dt, dd = boxes(page, "dl.code-annotation-container-grid dt")[0], boxes(page, "dl.code-annotation-container-grid dd")[0]
    assert dd["left"] > dt["right"] and dd["top"] < dt["bottom"]


def test_code_block_options_set_the_themes_variables(page):
    """code-block-height and monobackgroundcolor are theme variables ($code-block-height,
    $code-block-bg: src/format/reveal/format-reveal-theme.ts, pandocVariablesToRevealDefaults)."""
    go(page, "Steps")
    style = page.evaluate("""() => { const pre = Reveal.getCurrentSlide().querySelector('pre.sourceCode');
        return [getComputedStyle(pre.querySelector('code')).maxHeight, getComputedStyle(pre).backgroundColor]; }""")
    assert style == ["320px", "rgb(250, 250, 240)"]


def test_a_tab_shows_its_pane_only(page):
    """The default tab's pane is shown, the others hidden; a click on a tab swaps them."""
    go(page, "Tabs")
    shown = "() => Array.from(document.querySelectorAll('.tab-content > div')).map(p => !p.hidden)"
    assert page.evaluate(shown) == [True, False]
    page.click("a[href='#tabset-1-2']")
    assert page.evaluate(shown) == [False, True]
    assert page.get_attribute("a[href='#tabset-1-2']", "aria-selected") == "true"


def test_layout_cells_sit_side_by_side(page):
    """A row's cells are flex items side by side, 20px apart (at the slide's scale)."""
    go(page, "Columns of cells")
    first, second, third = boxes(page, ".quarto-layout-cell")
    gap = 20 * page.evaluate("() => Reveal.getScale()")
    assert abs(first["top"] - second["top"]) < 1 and abs(second["left"] - first["right"] - gap) < 1
    assert third["top"] >= max(first["bottom"], second["bottom"]) - 1


def test_an_absolute_image_sits_where_its_style_says(page):
    """top 35%, left 60%, width 40% of the slide."""
    go(page, "Positioned")
    (img,) = boxes(page, "img")
    slide = page.evaluate("() => Reveal.getCurrentSlide().getBoundingClientRect().toJSON()")
    assert abs(img["left"] - (slide["left"] + 0.6 * slide["width"])) < 2
    assert abs(img["width"] - 0.4 * slide["width"]) < 2


def test_a_figure_keeps_quartos_margins(page):
    """div.quarto-figure 1em above what follows, its figure's paragraph without margins."""
    go(page, "Figures")
    margins = page.evaluate("""() => { const d = Reveal.getCurrentSlide().querySelector('.quarto-figure');
        return [getComputedStyle(d).marginBottom, getComputedStyle(d.querySelector('figure > p')).marginTop,
                getComputedStyle(d).fontSize]; }""")
    assert margins[0] == margins[2] and margins[1] == "0px"


def test_the_last_slides_image_is_not_stretched_when_there_is_a_logo(page):
    """Quarto's auto-stretch runs while the logo still sits in the last slide, so that
    slide never holds a single image (format-reveal.ts, applyStretch)."""
    stretched = page.evaluate("""() => { const s = Reveal.getSlides(); const last = s[s.length - 1];
        return last.querySelector('img').classList.contains('r-stretch'); }""")
    assert stretched is False


def test_an_image_in_the_footer_is_copied_beside_the_html(tmp_path):
    """A footer's raw HTML image (``footer: ... <img src="by.png">``, as real decks write
    it) is one of the deck's files: copied into the output folder, so that the footer
    shows it where Quarto's does (its resources follow the page's links)."""
    from PIL import Image

    (tmp_path / "_quarto.yml").write_text("project:\n  output-dir: _output\n")
    Image.new("RGB", (40, 20), (10, 20, 30)).save(tmp_path / "by.png")
    (tmp_path / "deck.qmd").write_text('---\ntitle: F\nformat:\n  revealjs:\n'
                                       '    footer: \'A <img src="by.png" width="5%"> B\'\n---\n\n## One\n\nText.\n')
    html = build_document(tmp_path / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None).html
    assert 'src="by.png"' in html.read_text(encoding="utf-8")
    assert (html.parent / "by.png").read_bytes() == (tmp_path / "by.png").read_bytes()
