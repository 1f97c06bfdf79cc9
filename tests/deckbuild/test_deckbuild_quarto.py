"""Our renderer against Quarto's documented behaviour (issue 10): figures and their
cross-references, callouts, embedded math, the Python setup cell per Quarto version.

Each test names, in its docstring, the Quarto page or the quarto-cli source file (read at
v1.4.557 and at main) that gives the expected HTML structure. The small deck
``decks/quarto`` is built once (HTML only) with the project's own theme.
"""

import re
import shutil
from pathlib import Path

import pytest

from deck_helpers import REPO, copy_deck, parse_html
from deckbuild.build import BuildSettings, build_document
from deckbuild.errors import DeckError
from deckbuild.execute import KernelSettings, execute
from deckbuild.options import REVEALJS_DEFAULTS, load_project, resolve_options
from deckbuild.source import parse

UNCAPTIONED = "quarto-float-caption-bottom quarto-float-caption quarto-float-fig quarto-uncaptioned"
CAPTIONED = "quarto-float-caption-bottom quarto-float-caption quarto-float-fig"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = copy_deck("quarto", tmp_path_factory.mktemp("quarto"))
    shutil.copy(REPO / "custom_lab.scss", root / "custom_lab.scss")
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True), lambda *a, **k: None)
    return result, parse_html(result.html.read_text(encoding="utf-8"))


def slide(page, title):
    return next(s for s in page.find_all("section") if s.find_all("h2")
                and s.find("h2").text().strip() == title)


def figure_of(page, ident):
    outer = page.find("div", id=ident)
    figure = outer.find("figure")
    caption = figure.find("figcaption")
    return outer, figure, caption


# --- figures -----------------------------------------------------------------------

def test_a_fig_label_without_caption_is_a_numbered_uncaptioned_figure(built):
    """A cell labelled ``fig-`` with no ``fig-cap`` is still a cross-referenced figure:
    "Figure 1" and a figcaption marked quarto-uncaptioned. Structure from quarto-cli
    src/resources/filters/customnodes/floatreftarget.lua (float_reftarget_render_html_figure,
    decorate_caption_with_crossref; the same at v1.4.557 and main): div#fig-x.quarto-float
    .quarto-figure.quarto-figure-center > figure.quarto-float.quarto-float-fig >
    div[aria-describedby] + figcaption. The label goes on the figure when the cell has one
    display output (src/core/jupyter/labels.ts, shouldLabelCellContainer)."""
    _, page = built
    outer, figure, caption = figure_of(page, "fig-plain")
    assert outer.classes == ["quarto-float", "quarto-figure", "quarto-figure-center"]
    assert figure.classes == ["quarto-float", "quarto-float-fig"]
    described = figure.elements()[0]
    assert described.tag == "div" and described.attrs["aria-describedby"] == caption.attrs["id"]
    assert described.find("img")
    assert caption.attrs["class"] == UNCAPTIONED
    assert caption.text().strip() == "Figure\xa01"
    assert "cell" in outer.parent.parent.classes   # inside the cell's output, as in Quarto


def test_fig_cap_and_fig_alt_give_caption_and_alt_text(built):
    """``fig-cap`` becomes "Figure N: caption" (title delimiter ":" from
    src/resources/filters/crossref/format.lua, titlePrefix); ``fig-alt`` is the image's alt
    text (https://quarto.org/docs/authoring/figures.html#alt-text)."""
    _, page = built
    _, figure, caption = figure_of(page, "fig-captioned")
    assert caption.attrs["class"] == CAPTIONED
    assert caption.text().strip() == "Figure\xa02: A captioned plot"
    assert figure.find("img").attrs["alt"] == "A line rising to the right"


def test_markdown_and_div_figures_are_numbered_in_document_order(built):
    """``![cap](img){#fig-x}`` and a ``::: {#fig-x}`` div whose last paragraph is the
    caption are figures too (https://quarto.org/docs/authoring/cross-references.html)."""
    _, page = built
    _, _, caption = figure_of(page, "fig-diagram")
    assert caption.text().strip() == "Figure\xa03: A diagram"
    _, figure, caption = figure_of(page, "fig-div")
    assert caption.text().strip() == "Figure\xa04: The div\u2019s caption"
    assert figure.find("img")


def test_a_caption_without_label_has_no_number(built):
    """An unlabelled float gets no title prefix ("in HTML, unlabeled floats do not get a
    title prefix", src/resources/filters/customnodes/floatreftarget.lua)."""
    _, page = built
    caption = slide(page, "A caption without label").find("figcaption")
    assert caption.text().strip() == "Captioned but not numbered"


def test_references_link_to_their_figure(built):
    """``@fig-x`` is a link "Figure N" with class quarto-xref, ``[-@fig-x]`` the number
    alone, a prefix replaces "Figure"; an unknown label prints bold ?@fig-x
    (src/resources/filters/crossref/refs.lua). pandoc's revealjs writer, which Quarto
    uses too, turns the link ``#fig-x`` into reveal.js's ``#/fig-x``, which goes to the
    slide holding that id."""
    result, page = built
    links = slide(page, "References").find_all("a", cls="quarto-xref")
    assert [(a.attrs["href"], a.text()) for a in links] == [
        ("#/fig-plain", "Figure\xa01"), ("#/fig-captioned", "2"),
        ("#/fig-diagram", "Fig.\xa03"), ("#/fig-div", "Figure\xa04")]
    assert slide(page, "References").find("strong").text() == "?@fig-missing"
    (warning,) = [w for w in result.warnings if "fig-missing" in str(w)]
    assert Path(warning.file).name == "deck.qmd" and warning.line == 49


# --- callouts ----------------------------------------------------------------------

def test_callout_markup_is_quartos_revealjs_markup(built):
    """Quarto's revealjs callout (src/resources/filters/customnodes/callout.lua: the
    epubCallout renderer at v1.4.557, the same markup at main): div.callout.callout-KIND
    .callout-titled.callout-style-default > div.callout-body > div.callout-title
    (div.callout-icon-container > i.callout-icon, p > strong) + div.callout-content.
    The default appearance titles an untitled callout with its kind
    (https://quarto.org/docs/authoring/callouts.html)."""
    _, page = built
    note = slide(page, "Callouts").find("div", cls="callout-note")
    assert note.classes == ["callout", "callout-note", "callout-titled", "callout-style-default"]
    (body,) = note.elements()
    assert body.classes == ["callout-body"]
    title, content = body.elements()
    assert title.classes == ["callout-title"] and content.classes == ["callout-content"]
    icon, heading = title.elements()
    assert icon.classes == ["callout-icon-container"] and icon.find("i", cls="callout-icon")
    assert heading.tag == "p" and heading.find("strong").text() == "Note"
    assert content.text().strip() == "Default title."


def test_callout_titles_from_attribute_and_heading_and_leftover_attributes(built):
    """``title="..."`` (markdown allowed) and a heading opening the callout give its
    title; an id or extra classes go on a div around the callout (callout.lua: "if the
    leftover attr is non-trivial, then we need to wrap the callout in a div")."""
    _, page = built
    warning = slide(page, "Callouts").find("div", cls="callout-warning")
    assert warning.find("strong").find("em").text() == "titled"
    tip = slide(page, "More callouts").find("div", cls="callout-tip")
    assert tip.find("div", cls="callout-title").text().strip() == "Heading title"
    wrapper = tip.parent
    assert wrapper.attrs.get("id") == "tip-one" and wrapper.classes == ["extra"]


def test_simple_callout_without_icon_has_no_title(built):
    """``appearance="simple"`` has no default title; ``icon=false`` adds no-icon and
    drops the icon (callout.lua)."""
    _, page = built
    caution = slide(page, "More callouts").find("div", cls="callout-caution")
    assert caution.classes == ["callout", "callout-caution", "no-icon", "callout-style-simple"]
    assert not caution.find_all(cls="callout-icon-container")
    assert not caution.find_all(cls="callout-title")


# --- math --------------------------------------------------------------------------

def test_self_contained_math_embeds_katex(built):
    """With embed-resources and self-contained-math: true, Quarto leaves the math block
    alone and pandoc embeds KaTeX (src/command/render/template.ts, applyTemplatePatches;
    src/resources/schema/document-render.yml: self-contained-math defaults to false).
    The file holds KaTeX's script and fonts; nothing points at a CDN."""
    result, page = built
    html = result.html.read_text(encoding="utf-8")
    assert "katex" in html and "data:font/woff2;base64," in html
    assert not re.search(r"(src|href)=\"https?://", html)
    assert "cdn.jsdelivr" not in html


@pytest.mark.parametrize("front, line, message", [
    ("embed-resources: true\n", 3,
     "embed-resources: true without self-contained-math: true"),
    ("embed-resources: true\nself-contained-math: false\n", 4,
     "loads KaTeX from a CDN when the deck is viewed"),
])
def test_embedded_deck_without_self_contained_math_embeds_katex_and_warns(tmp_path, front, line,
                                                                          message):
    """Quarto with embed-resources but self-contained-math false replaces the math block
    by a script that loads KaTeX from a CDN at view time (src/command/render/template.ts,
    katexScript). deckbuild builds the deck with KaTeX embedded (it works offline) and
    says, naming file and line, what Quarto would do instead."""
    doc = tmp_path / "d.qmd"
    doc.write_text(f"---\nhtml-math-method: katex\n{front}---\n\n## S\n\n$x$\n")
    result = build_document(doc, BuildSettings(html_only=True), lambda *a, **k: None)
    html = result.html.read_text(encoding="utf-8")
    assert "data:font/woff2;base64," in html and "katex.render" in html
    assert not re.search(r"(src|href)=\"https?://", html)
    (warning,) = [w for w in result.warnings if "self-contained-math" in w.message]
    assert message in warning.message
    assert Path(warning.file).name == "d.qmd" and warning.line == line


def test_embedded_deck_without_maths_has_no_maths_warning(tmp_path):
    doc = tmp_path / "d.qmd"
    doc.write_text("---\nhtml-math-method: katex\nembed-resources: true\n---\n\n## S\n\nNo "
                   "formula, 5 $ and 6 $ apart.\n")
    result = build_document(doc, BuildSettings(html_only=True), lambda *a, **k: None)
    assert not [w for w in result.warnings if "self-contained-math" in w.message
                or "MathJax" in w.message or "KaTeX" in w.message]


def test_the_project_embeds_math_like_quarto():
    """The deck's own options: KaTeX, embedded, under Quarto too."""
    doc = REPO / "slides" / "index.qmd"
    opts = resolve_options(load_project(REPO), doc, parse(doc, REPO).front)
    assert (opts["html-math-method"], opts["embed-resources"], opts["self-contained-math"]) == \
        ("katex", True, True)


# --- the setup cell, per Quarto version ----------------------------------------------

BARE_FIGURE = ("from matplotlib.figure import Figure\nfig = Figure()\n"
               "fig.subplots().plot([1, 2, 3])\nfig\n")


def _mimes(tmp_path: Path, code: str, version: str) -> list[list[str]]:
    path = tmp_path / "d.qmd"
    path.write_text(f"## Plot\n\n```{{python}}\n{code}```\n")
    outputs, _ = execute(parse(path, tmp_path), dict(REVEALJS_DEFAULTS), tmp_path / "cache",
                         use_cache=False, progress=lambda *a, **k: None,
                         settings=KernelSettings(quarto_version=version))
    return [sorted(o.get("data", {})) for o in outputs[0] if "data" in o]


@pytest.mark.parametrize("version, image", [("current", True), ("1.7.33", True),
                                            ("1.7.32", False), ("1.4.557", False)])
def test_a_bare_figure_displays_as_quartos_setup_cell_makes_it(tmp_path, version, image):
    """Quarto's setup cell (src/resources/jupyter/lang/python/setup.py) selects the
    inline backend's formats with set_matplotlib_formats: from IPython.display only up to
    1.7.32 (gone in IPython 9: the ImportError is swallowed and a bare Figure shows as
    ``<Figure size ...>``), from matplotlib_inline first since 1.7.33. The kernel runs
    with MPLBACKEND set to the inline backend (src/execute/jupyter/jupyter-kernel.ts)."""
    import IPython

    if int(IPython.__version__.split(".")[0]) < 9 and not image:
        pytest.skip("IPython < 9 still has IPython.display.set_matplotlib_formats")
    (mimes,) = _mimes(tmp_path, BARE_FIGURE, version)
    assert ("image/png" in mimes) == image, mimes


def test_the_decks_setup_cell_gives_images_on_quarto_1_4(tmp_path):
    """The fix of issue 10, finding 1: the deck's hidden setup cell selects the formats
    itself, so its figures are images even under Quarto 1.4's setup cell: SVG, the deck's
    `fig-format`, whose text stays text (issue 13)."""
    index = parse(REPO / "slides" / "index.qmd", REPO)
    (setup,) = [c for c in index.cells if c.options.get("label") == "setup"]
    code = setup.code + "\n" + BARE_FIGURE
    env_code = f"import sys\nsys.path.insert(0, {str(REPO / 'code')!r})\n" + code
    (mimes,) = _mimes(tmp_path, env_code, "1.4.557")
    assert "image/svg+xml" in mimes and "image/png" not in mimes


# --- in the browser: plugins, chrome, callouts under Quarto's rules ------------------

@pytest.fixture(scope="module")
def page(built):
    from deckbuild import browser

    result, _ = built
    with browser.browser() as ctx:
        p = ctx.new_page()
        p.goto(result.html.resolve().as_uri(), wait_until="load")
        p.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=20000)
        yield p
        p.close()


def test_the_presenter_plugins_quarto_turns_on_are_there(page):
    """Quarto's revealjs template registers reveal.js's notes, search and zoom plugins
    (src/resources/formats/revealjs/pandoc/revealjs.template, ``plugins: [...]``) and
    adds its slide menu by default (src/format/reveal/format-reveal-plugin.ts, "menu
    plugin (enabled by default)"; https://quarto.org/docs/presentations/revealjs/presenting.html).
    Ours: the same three and a menu of our own."""
    assert page.evaluate("() => ['notes', 'search', 'zoom', 'deckbuild-menu']"
                         ".map(id => Reveal.hasPlugin(id))") == [True] * 4


def test_the_slide_menu_lists_every_slide_and_goes_there(page):
    """M (or the button at the bottom left) opens a list of the slides by title; a click
    goes to that slide."""
    page.evaluate("() => Reveal.slide(0)")
    page.keyboard.press("m")
    page.wait_for_selector(".slide-menu.open")
    titles = page.eval_on_selector_all(".slide-menu a", "els => els.map(e => e.textContent)")
    assert len(titles) == page.evaluate("() => Reveal.getTotalSlides()")
    assert titles[0] == "Quarto behaviours" and "References" in titles
    page.click(f".slide-menu li:nth-child({titles.index('References') + 1}) a")
    assert page.evaluate("() => Reveal.getCurrentSlide().querySelector('h2').textContent") == "References"
    assert page.evaluate("() => document.querySelector('.slide-menu').classList.contains('open')") is False


@pytest.mark.parametrize("menu, button", [(True, True), (False, False), ({"side": "right"}, True)])
def test_menu_false_hides_the_menu_button(menu, button):
    """``menu: false`` hides the menu's button; the menu stays on its key
    (src/format/reveal/format-reveal-plugin.ts: ``openButton: format.metadata.menu !== false``)."""
    from deckbuild.pandoc import init_script

    script = init_script(dict(REVEALJS_DEFAULTS, menu=menu))
    assert f'"openButton": {str(button).lower()}' in script and "DeckbuildMenu" in script


def test_logo_menu_button_and_slide_number_sit_where_quarto_puts_them(page):
    """Quarto: logo at the bottom right, the slide number at the top right when there is a
    logo, the menu button at the bottom left (src/resources/formats/revealjs/plugins/
    support/footer.css, .slide-logo, .reveal.has-logo .slide-number, .slide-menu-button)."""
    boxes = page.evaluate("""() => Object.fromEntries(['.slide-logo', '.slide-menu-button', '.slide-number']
        .map(s => [s, document.querySelector(s).getBoundingClientRect().toJSON()]))""")
    w, h = page.viewport_size["width"], page.viewport_size["height"]
    assert boxes[".slide-logo"]["right"] > w - 60 and boxes[".slide-logo"]["bottom"] > h - 60
    assert boxes[".slide-menu-button"]["left"] < 60 and boxes[".slide-menu-button"]["bottom"] > h - 60
    assert boxes[".slide-number"]["top"] < 60


def test_internal_figure_link_goes_to_the_figure(page):
    """A cross-reference link goes to the slide that holds the figure."""
    page.evaluate("() => { const s = [...document.querySelectorAll('section')].find(x => "
                  "x.querySelector('h2') && x.querySelector('h2').textContent === 'References');"
                  " const i = Reveal.getIndices(s); Reveal.slide(i.h, i.v); }")
    page.click("a.quarto-xref[href='#/fig-diagram']")
    page.wait_for_function("() => Reveal.getCurrentSlide().querySelector('#fig-diagram') !== null")


# Rules with the selectors and weights of Quarto's own callout rules, the heaviest of
# each version (1.4: src/resources/formats/html/styles-callout.html and
# revealjs/quarto.scss; main: revealjs/quarto.scss), with values of our own.
QUARTO_LIKE_CALLOUT_RULES = """
div.callout-note { border-left-color: rgb(1, 2, 3) !important; }
.callout.callout-style-default { border-left: solid rgb(9, 9, 9) 12px; border-right: solid 3px silver; }
.reveal div.callout { margin-top: 50px; border-radius: 20px; }
.reveal div.callout.callout-note { border-left-color: rgb(1, 2, 3); }
.reveal .slides section .callout { font-size: 10px; }
div.callout-note.callout-style-default .callout-title { background-color: rgb(4, 5, 6); }
.reveal .callout.callout-style-default div.callout-title { font-size: 30px; opacity: 0.5; padding-left: 40px; }
.reveal div.callout.callout-style-default div.callout-title p { margin-top: 33px; color: rgb(7, 8, 9); }
.reveal .callout.callout-style-default .callout-icon::before { width: 2rem; height: 2rem; margin-top: 1rem;
  background-image: linear-gradient(red, red); content: ""; }
.reveal div.callout.callout-style-default div.callout-content { padding-left: 40px; }
.callout.callout-titled.callout-style-default .callout-content p { margin-top: 44px; }
.reveal div.callout.callout-style-default.callout-titled .callout-body > .callout-content > :last-child:not(div.sourceCode) {
  padding-bottom: 30px; margin-bottom: 30px; }
"""

CALLOUT_STYLE = """() => {
  const c = document.querySelector('div.callout-note');
  const pick = (el, props, pseudo) => { const cs = getComputedStyle(el, pseudo || null);
    return Object.fromEntries(props.map(p => [p, cs.getPropertyValue(p)])); };
  return {
    callout: pick(c, ['border-left-width', 'border-top-width', 'box-shadow', 'background-color',
                      'margin-top', 'border-top-left-radius', 'font-size']),
    title: pick(c.querySelector('.callout-title'), ['background-color', 'opacity', 'font-size',
                'padding-left', 'color']),
    titleP: pick(c.querySelector('.callout-title p'), ['margin-top', 'color']),
    icon: pick(c.querySelector('.callout-icon'), ['width', 'height', 'margin-top',
               'background-image', 'content'], '::before'),
    content: pick(c.querySelector('.callout-content'), ['padding-left']),
    last: pick(c.querySelector('.callout-content > :last-child'), ['margin-top', 'margin-bottom',
               'padding-bottom']),
  };
}"""


def test_the_themes_callouts_outrank_every_quarto_versions_callout_rules(page):
    """Finding 4: the theme's callout colours did nothing before Quarto 1.6 (1.4 colours
    callouts from styles-callout.html, with !important; $callout-color-* arrive in
    revealjs/quarto.scss in 1.6.33). custom_lab.scss now draws callouts itself with rules
    that outrank Quarto's in every version: adding rules of Quarto's weights changes
    nothing in how the deck's callout looks."""
    page.evaluate("() => Reveal.slide(0)")
    before = page.evaluate(CALLOUT_STYLE)
    page.add_style_tag(content=QUARTO_LIKE_CALLOUT_RULES)
    after = page.evaluate(CALLOUT_STYLE)
    assert after == before
    assert before["callout"]["border-left-width"] == "0px" and "inset" in before["callout"]["box-shadow"]
    assert before["icon"]["background-image"] == "none"


def test_the_kernels_keep_no_history_so_two_builds_share_no_database(tmp_path):
    """Two renders at once used to share IPython's history database, and a kernel printed
    its "database is locked" warning into a slide: the kernels run without history."""
    path = tmp_path / "d.qmd"
    path.write_text("## History\n\n```{python}\nprint(get_ipython().history_manager.enabled)\n```\n")
    from concurrent.futures import ThreadPoolExecutor

    # a thread of its own: a browser fixture of this module may hold the main thread's event loop
    with ThreadPoolExecutor(1) as pool:
        outputs, _ = pool.submit(execute, parse(path, tmp_path), dict(REVEALJS_DEFAULTS), tmp_path / "cache",
                                 use_cache=False, progress=lambda *a, **k: None, settings=KernelSettings()).result()
    assert [o.get("text") for o in outputs[0] if o.get("output_type") == "stream"] == ["False\n"]
