"""Issue 34, second round: what real decks use that Quarto renders, as Quarto renders it.
Extensions' Lua code run as Quarto runs it: shortcodes (an extension's handler gets
Quarto's arguments and its HTML dependency reaches the page), Lua filters (``filters:``: a
file, an extension by name, before or after ``quarto``), reveal.js plugins of extensions,
Quarto's built-in meta/var/env shortcodes, files only a filter's output names; and the
theme as Quarto builds it: _brand.yml, reveal.js's own theme variables, a theme's own
fonts; the footer as blocks, MathJax per release, labelled equations, option groups, .md
documents, image paths. Each deck is a few lines written for the test; one HTML-only build
per test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from deck_helpers import parse_html, run_cli
from deckbuild.source import Line, _markdown_line, shortcode_args

pytestmark = pytest.mark.deck


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build(qmd: Path, *args: str, ok: bool = True) -> tuple[str, str]:
    """(the HTML, the renderer's stderr) of one HTML-only build."""
    proc = run_cli("render", str(qmd), "--html-only", *args, cwd=qmd.parent)
    assert (proc.returncode == 0) == ok, proc.stderr
    if not ok:
        return "", proc.stderr
    html = [line for line in proc.stdout.splitlines() if line.endswith(".html")][-1]
    return Path(html).read_text(encoding="utf-8"), proc.stderr


# A shortcode extension in the shape of quarto-ext/fontawesome: a handler table returned
# by the file, an HTML dependency whose stylesheet names a font by url(), and a module
# required from the extension's own folder (as gadenbuie/countdown requires "config").
ICON_EXT = {
    "_extension.yml": "title: Icon\ncontributes:\n  shortcodes:\n    - icon.lua\n",
    "config.lua": 'return { prefix = "ic" }\n',
    "icon.lua": '''local config = require("config")
return {
  ["icon"] = function(args, kwargs, meta, raw_args, context)
    quarto.doc.add_html_dependency({name = "icon", version = "1.0.0",
                                    stylesheets = {"assets/icon.css"}})
    local size = pandoc.utils.stringify(kwargs["size"])
    return pandoc.RawInline("html", '<i class="' .. config.prefix .. "-" ..
      pandoc.utils.stringify(args[1]) .. '" data-size="' .. size .. '" data-context="' ..
      context .. '" data-n="' .. #raw_args .. '"></i>')
  end
}
''',
    "assets/icon.css": '@font-face { font-family: Ic; src: url("../fonts/ic.woff2"); }\n.ic-star { color: red; }\n',
    "fonts/ic.woff2": "not a real font\n",
}


def install(root: Path, owner_name: str, files: dict) -> Path:
    folder = root / "_extensions" / owner_name
    for rel, text in files.items():
        write(folder / rel, text)
    return folder


def test_an_extension_shortcode_is_called_with_quartos_arguments_and_its_dependency_is_linked(tmp_path):
    """{{< icon star size=2x >}} inline and alone on its line: the handler gets the
    positional and keyword arguments and the context, as Quarto calls it; its dependency
    is linked once in <head> from <stem>_files/libs/quarto-contrib/<name>-<version>/ with
    the font its stylesheet names copied too; a shortcode in inline code stays code."""
    install(tmp_path, "someone/icon", ICON_EXT)
    qmd = write(tmp_path / "deck.qmd", "---\ntitle: T\n---\n\n## One\n\nA {{< icon star size=2x >}} "
                                       "and `{{< icon x >}}`\n\n{{< icon moon >}}\n")
    html, stderr = build(qmd)
    page = parse_html(html)
    icons = page.find_all("i")
    assert [(i.attrs["class"], i.attrs["data-size"], i.attrs["data-context"], i.attrs["data-n"])
            for i in icons] == [("ic-star", "2x", "inline", "2"), ("ic-moon", "", "block", "1")]
    assert "{{&lt; icon x &gt;}}" in html or "{{< icon x >}}" in page.find("code").text()
    links = [n.attrs["href"] for n in page.find_all("link") if "quarto-contrib" in n.attrs.get("href", "")]
    assert links == ["deck_files/libs/quarto-contrib/icon-1.0.0/icon.css"]
    copied = (tmp_path / "_output" / links[0]) if not (tmp_path / links[0]).exists() else tmp_path / links[0]
    assert ".ic-star" in copied.read_text()
    assert list(copied.parent.rglob("ic.woff2")), "the font the stylesheet names is copied"
    assert "shortcode" not in stderr


def test_embedded_the_dependency_is_inlined(tmp_path):
    install(tmp_path, "someone/icon", ICON_EXT)
    qmd = write(tmp_path / "deck.qmd", "---\nembed-resources: true\nhtml-math-method: plain\n---\n\n"
                                       "## One\n\n{{< icon star >}}\n")
    html, _ = build(qmd)
    assert "ic-star" in html and "quarto-contrib" not in html and ".ic-star" in html


def test_an_unknown_shortcode_warns_with_file_and_line_and_stays_as_written(tmp_path):
    qmd = write(tmp_path / "deck.qmd", "---\ntitle: T\n---\n\n## One\n\nsee {{< nothing here >}}\n")
    html, stderr = build(qmd)
    assert "deck.qmd:7: warning: shortcode 'nothing' is not one of Quarto's nor of an " \
           "installed extension" in stderr
    assert "{{< nothing here >}}" in html


def test_quartos_meta_var_and_env_shortcodes(tmp_path, monkeypatch):
    """meta reads the document's metadata (a key deckbuild does not know too, dotted
    keys), var reads the project's _variables.yml, env the environment (Quarto's
    https://quarto.org/docs/authoring/variables.html)."""
    write(tmp_path / "_quarto.yml", "project:\n  type: default\n")
    write(tmp_path / "_variables.yml", "course:\n  code: EC101\n")
    monkeypatch.setenv("DECK_TEST_ENV", "from-env")
    qmd = write(tmp_path / "deck.qmd", "---\ntitle: Talk\nvenue:\n  city: Lund\n---\n\n## One\n\n"
                                       "[{{< meta title >}}]{#a} [{{< meta venue.city >}}]{#b} "
                                       "[{{< var course.code >}}]{#c} [{{< env DECK_TEST_ENV >}}]{#d}\n")
    html, _ = build(qmd)
    page = parse_html(html)
    assert [page.find(id=k).text() for k in "abcd"] == ["Talk", "Lund", "EC101", "from-env"]


def test_quartos_video_shortcode_writes_the_players_iframe(tmp_path):
    """As Quarto's video extension writes it for revealjs (vitay-markdown-pandoc-quarto):
    the YouTube player's iframe, the height from aspect-ratio; a file is a <video>."""
    qmd = write(tmp_path / "deck.qmd", "---\ntitle: T\n---\n\n## One\n\n{{< video https://youtu.be/abc123 "
                                       'width="1000" aspect-ratio="16x9" >}}\n\n{{< video clip.mp4 >}}\n')
    html, _ = build(qmd)
    frame = parse_html(html).find("iframe")
    assert (frame.attrs["src"], frame.attrs["width"], frame.attrs["height"]) == (
        "https://www.youtube.com/embed/abc123", "1000", "563")
    assert parse_html(html).find("video").find("source").attrs["src"] == "clip.mp4"


# Filters in the three shapes pandoc reads: global functions, one returned filter, a list.
FILTER_GLOBAL = '''function Header(el)
  if quarto.doc.is_format("revealjs") and quarto.doc.is_format("html:js")
     and not quarto.doc.is_format("pdf") then
    el.attributes["data-seen"] = (el.attributes["data-seen"] or "") .. "g"
  end
  return el
end
'''
FILTER_TABLE = '''return {
  Pandoc = function(doc)
    local text = pandoc.utils.stringify(doc.meta["banner"] or "")
    doc.blocks:insert(pandoc.Div(pandoc.Para(text), {class = "banner"}))
    quarto.doc.include_text("in-header", '<meta name="from-filter" content="yes">')
    return doc
  end
}
'''
FILTER_AFTER = '''return {{ Div = function(el)
  -- callout-titled is the class Quarto's callout filter gives: only after it is it there
  if el.classes:includes("callout-titled") then el.attributes["data-after"] = "yes" end
  return el
end }}
'''
HEADER_EXT = {"_extension.yml": "title: Banner\ncontributes:\n  filters:\n    - banner.lua\n",
              "banner.lua": FILTER_TABLE}


def test_filters_run_in_order_with_the_documents_metadata_before_and_after_quarto(tmp_path):
    """A Lua file and an extension by name run before Quarto's own filters, in the order
    listed, and read metadata deckbuild does not know (banner:); one listed after `quarto`
    runs after them (it sees the callout Quarto's filter made, with its title)."""
    install(tmp_path, "someone/banner", HEADER_EXT)
    write(tmp_path / "mark.lua", FILTER_GLOBAL)
    write(tmp_path / "late.lua", FILTER_AFTER)
    qmd = write(tmp_path / "deck.qmd", "---\nbanner: Hello from meta\nfilters:\n  - mark.lua\n"
                                       "  - banner\n  - quarto\n  - late.lua\n---\n\n## One\n\n"
                                       "::: {.callout-note}\nNote text\n:::\n")
    html, stderr = build(qmd)
    page = parse_html(html)
    assert page.find("h2").attrs.get("data-seen") == "g"
    assert page.find("div", cls="banner").text().strip() == "Hello from meta"
    assert '<meta name="from-filter" content="yes">' in html
    note = page.find("div", cls="callout-note")
    assert note.attrs.get("data-after") == "yes"
    assert "option 'banner'" in stderr     # still named: deckbuild itself does nothing with it


def test_a_format_extensions_filter_runs_and_a_missing_filter_extension_is_an_error(tmp_path):
    ext = install(tmp_path, "someone/plain", {
        "_extension.yml": "title: Plain\ncontributes:\n  formats:\n    revealjs:\n"
                          "      filters:\n        - mark.lua\n",
        "mark.lua": FILTER_GLOBAL})
    qmd = write(tmp_path / "deck.qmd", "---\nformat: plain-revealjs\n---\n\n## One\n")
    html, _ = build(qmd)
    assert parse_html(html).find("h2").attrs.get("data-seen") == "g"
    (ext / "mark.lua").unlink()
    _, stderr = build(qmd, ok=False)
    assert "Lua file not found: mark.lua" in stderr
    bad = write(tmp_path / "bad.qmd", "---\nfilters: [nowhere]\n---\n\n## One\n")
    _, stderr = build(bad, ok=False)
    assert "filters: 'nowhere' is neither a Lua file nor an installed extension" in stderr


PLUGIN_EXT = {
    "_extension.yml": "title: Pointer\ncontributes:\n  revealjs-plugins:\n    - name: RevealPointer\n"
                      "      script:\n        - pointer.js\n      stylesheet:\n        - pointer.css\n",
    "pointer.js": "window.RevealPointer = { id: 'pointer', init: function () { document.body.dataset.pointer = 'on'; } };\n",
    "pointer.css": ".pointer { color: red; }\n",
}


def test_a_reveal_plugin_of_an_extension_is_loaded_and_registered(tmp_path):
    install(tmp_path, "someone/pointer", PLUGIN_EXT)
    qmd = write(tmp_path / "deck.qmd", "---\nrevealjs-plugins:\n  - pointer\n---\n\n## One\n")
    html, _ = build(qmd)
    assert 'src="deck_files/libs/quarto-contrib/RevealPointer/pointer.js"' in html
    assert "RevealPointer" in html.split("Reveal.initialize")[0].split("deckbuildConfig.plugins")[-1]


def test_an_image_only_a_filter_names_is_copied_beside_a_linked_page(tmp_path):
    """reveal-header writes the header logo's <img> itself: Quarto finds it in the output
    and copies it; so does deckbuild."""
    write(tmp_path / "logo one.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>")
    write(tmp_path / "img.lua", 'function Pandoc(doc) doc.blocks:insert(pandoc.Para('
                                '{pandoc.Image("", "logo one.svg")})) return doc end\n')
    write(tmp_path / "_quarto.yml", "project:\n  output-dir: out\n")
    qmd = write(tmp_path / "deck.qmd", "---\nfilters: [img.lua]\n---\n\n## One\n")
    build(qmd)
    assert (tmp_path / "out" / "logo one.svg").is_file()


def test_shortcode_arguments_are_read_as_quarto_reads_them():
    assert shortcode_args('brands github size=2x title="A b" \'c d\' k=\'x=y\'') == [
        {"value": "brands"}, {"value": "github"}, {"name": "size", "value": "2x"},
        {"name": "title", "value": "A b"}, {"value": "c d"}, {"name": "k", "value": "x=y"}]
    line = _markdown_line(Line("{{</* icon a */>}} and {{< icon b >}}", Path("d.qmd"), 4), [],
                          "{{</* icon a */>}} and {{< icon b >}}").text
    assert line.startswith("{{< icon a >}} and `") and line.endswith("`{=deckbuild-shortcode}")


# --- theme: brand, reveal.js's own variables ------------------------------------------

def _css(html: str, root: Path) -> str:
    """The text of the stylesheets a linked page loads from ``root``."""
    out = []
    for node in parse_html(html).find_all("link"):
        href = node.attrs.get("href", "")
        for base in (root, root / "_output"):
            if node.attrs.get("rel") == "stylesheet" and (base / href).is_file():
                out.append((base / href).read_text(encoding="utf-8"))
                break
    return "\n".join(out)


BRAND = """color:
  palette:
    deep-blue: "#00539B"
    ink: "#231F20"
  foreground: ink
  background: "#FFFFFF"
  primary: deep-blue
  link: primary
typography:
  fonts:
    - family: PT Sans
      source: google
  base: PT Sans
  headings: PT Serif
  monospace: Consolas
logo:
  images:
    mark:
      path: logos/mark.svg
      alt: The mark
  small: mark
"""


def test_a_projects_brand_sets_colours_fonts_and_the_slide_logo_as_quarto_does(tmp_path):
    """_brand.yml (Quarto 1.6.34 on): palette and theme colours become the theme's
    variables (background -> $body-bg, foreground -> $body-color, link -> $link-color, a
    name followed through the palette), typography sets the fonts with no fallback (as
    Quarto writes them, so a browser without PT Sans paints its default font, as Quarto's
    page does) and @imports Google's stylesheet; the brand's logo is the slide logo; a
    deck's own theme file wins over the brand; drawn as Quarto 1.5, no brand."""
    write(tmp_path / "_quarto.yml", "project:\n  type: default\n")
    write(tmp_path / "_brand.yml", BRAND)
    write(tmp_path / "logos" / "mark.svg", "<svg xmlns='http://www.w3.org/2000/svg'/>")
    write(tmp_path / "mine.scss", "/*-- scss:defaults --*/\n$presentation-heading-color: #123456 !default;\n")
    qmd = write(tmp_path / "deck.qmd", "---\ntitle: T\ntheme: [default, mine.scss]\n---\n\n## One\n\nText\n")
    html, _ = build(qmd)
    css = _css(html, tmp_path).replace(" ", "")
    assert "--brand-deep-blue:#00539b" in css.lower()
    assert "font-family:PTSans;" in css and "font-family:PTSerif;" in css
    assert "fonts.googleapis.com/css2?family=PT+Sans" in css
    assert "color:#123456" in css                   # the deck's theme file over the brand
    assert "color:#231f20" in css.lower()            # body text from foreground
    logo = parse_html(html).find("img", cls="slide-logo")
    assert logo.attrs["src"].endswith("logos/mark.svg") and 'class="reveal has-logo' in html
    old = write(tmp_path / "_quarto.yml", "project:\n  type: default\ndeckbuild:\n  quarto-version: 1.5.57\n")
    html, _ = build(qmd)
    assert "PTSans" not in _css(html, tmp_path).replace(" ", "") and 'class="slide-logo"' not in html
    assert old.is_file()


def test_reveal_js_theme_variables_are_read_as_quarto_reads_them(tmp_path):
    """A theme written for reveal.js sets $mainFontSize, $heading2Size, $headingTextTransform
    and $backgroundColor; Quarto's theme derives its rules from those names, so they apply
    (the neon-ninja decks of the corpus: headings at 2.2em of 32px, upper case)."""
    write(tmp_path / "old.scss", "/*-- scss:defaults --*/\n$mainFontSize: 32px;\n$heading2Size: 2.2em;\n"
                                 "$headingTextTransform: uppercase;\n$backgroundColor: #fefefe;\n"
                                 "$mainFont: 'Verdana', serif;\n/*-- scss:rules --*/\n")
    qmd = write(tmp_path / "deck.qmd", "---\ntheme: old.scss\n---\n\n## One\n\nText\n")
    html, _ = build(qmd)
    css = _css(html, tmp_path).replace(" ", "")
    assert ".revealh2{font-size:2.2em" in css and "text-transform:uppercase" in css
    assert "font-size:32px" in css and "background:#fefefe" in css and "font-family:\"Verdana\",serif" in css


def test_the_footer_is_markdown_blocks_as_quarto_writes_it(tmp_path):
    """Quarto appends the footer to the body as markdown, so its raw <div>s (laid side by
    side by a deck's css, as bamiesking-nqmx does) stay divs, not one line of text."""
    qmd = write(tmp_path / "deck.qmd", '---\nfooter: "<div>A</div> <div>B</div>"\n---\n\n## One\n')
    html, _ = build(qmd)
    footer = parse_html(html).find("div", cls="footer")
    assert [d.text().strip() for d in footer.find_all("div")] == ["A", "B"]
    plain = write(tmp_path / "plain.qmd", "---\nfooter: Just *text*\n---\n\n## One\n")
    html, _ = build(plain)
    assert parse_html(html).find("div", cls="footer").find("p").find("em").text() == "text"


def test_a_remote_stylesheet_is_linked_and_a_md_document_renders(tmp_path):
    """css: https://... stays a link, as Quarto writes it (debruine-slp2024 loads Google's
    PT Sans so); a plain .md document renders as Quarto renders it (devseed's index.md)."""
    url = "https://fonts.googleapis.com/css?family=PT+Sans"
    qmd = write(tmp_path / "index.md", f"---\nformat:\n  revealjs:\n    css: {url}\n---\n\n## One\n")
    html, _ = build(qmd)
    assert f'href="{url}"' in html


def test_mathjax_is_the_address_the_quarto_release_wrote():
    """Unset html-math-method: MathJax 2.7.0 from cdnjs before 1.6.14, 2.7.9 from cdnjs
    before 1.8.18, from jsDelivr since (the corpus pages of 1.4.549 to 1.9.38 load these);
    written out without a url: pandoc's MathJax 3 (bamiesking-nqmx, 1.5.52)."""
    from deckbuild.mathmethod import MathMethod, math_method
    from deckbuild.options import Options

    urls = {v: MathMethod("mathjax", explicit=False, quarto_version=v).mathjax_url
            for v in ("1.4.554", "1.6.40", "1.7.32", "1.8.26", "current")}
    assert urls == {
        "1.4.554": "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.0/MathJax.js?config=TeX-AMS_HTML-full",
        "1.6.40": "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.9/MathJax.js?config=TeX-AMS_HTML-full",
        "1.7.32": "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.9/MathJax.js?config=TeX-AMS_HTML-full",
        "1.8.26": "https://cdn.jsdelivr.net/npm/mathjax@2.7.9/MathJax.js?config=TeX-AMS_HTML-full",
        "current": "https://cdn.jsdelivr.net/npm/mathjax@2.7.9/MathJax.js?config=TeX-AMS_HTML-full"}
    opts = Options({"html-math-method": "mathjax"})
    opts.quarto_version = "1.5.52"
    assert math_method(opts).mathjax_url == "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml-full.js"


def test_pandoc_option_group_holds_options_as_if_at_the_top(tmp_path):
    """`pandoc: html-math-method: ...` (matmek4270-wave) is read as Quarto reads it."""
    from deckbuild.options import resolve_options
    from deckbuild.source import parse

    qmd = write(tmp_path / "deck.qmd", "---\npandoc:\n  html-math-method:\n    method: mathjax\n"
                                       "    url: https://example.org/mj.js\n  slide-level: 2\n---\n\n## S\n")
    opts = resolve_options(None, qmd, parse(qmd, tmp_path).front)
    assert opts["html-math-method"] == {"method": "mathjax", "url": "https://example.org/mj.js"}


def test_images_with_spaces_or_parentheses_in_their_path_are_found():
    from deckbuild.source import IMAGE_RE

    text = "![a](My Assets/a b.jpg) ![](/x/Icon%20(1).png){width=2} ![t](c.png \"title\") ![](<d e.png>)"
    assert [m.group("src") for m in IMAGE_RE.finditer(text)] == [
        "My Assets/a b.jpg", "/x/Icon%20(1).png", "c.png", "d e.png"]


def test_a_project_renders_its_md_documents_but_not_its_readme(tmp_path):
    """Quarto's project inputs include plain .md files; README, AGENTS and CLAUDE files and
    *.llms.md are never rendered (src/project/project-context.ts)."""
    from deckbuild.project_files import all_documents

    for name in ("a.qmd", "b.md", "README.md", "sub/README.qmd", "AGENTS.md", "x.llms.md",
                 "_draft.md", "sub/c.md"):
        write(tmp_path / name, "## S\n")
    assert [p.relative_to(tmp_path).as_posix() for p in all_documents(tmp_path)] == [
        "a.qmd", "b.md", "sub/c.md"]


def test_a_themes_own_font_file_loads_with_the_deck(tmp_path):
    """@font-face in the deck's theme naming a font file beside it: the file reaches the
    page (copied beside a linked deck, its url pointing there); a remote @import stays."""
    write(tmp_path / "fonts" / "Deck-Regular.woff2", "font bytes")
    write(tmp_path / "deck.scss", "/*-- scss:defaults --*/\n@import url('https://fonts.example/x.css');\n"
                                  "$font-family-sans-serif: DeckFont, sans-serif !default;\n"
                                  "/*-- scss:rules --*/\n@font-face { font-family: DeckFont; "
                                  "src: url('fonts/Deck-Regular.woff2') format('woff2'); }\n")
    qmd = write(tmp_path / "deck.qmd", "---\ntheme: [default, deck.scss]\n---\n\n## One\n")
    html, _ = build(qmd)
    css = _css(html, tmp_path)
    assert "https://fonts.example/x.css" in css
    m = re.search(r"font-family:\s*DeckFont;\s*src:\s*url\(\"?([^\")]+)", css)
    assert m and m.group(1) == "assets/Deck-Regular.woff2"
    theme_dir = next((tmp_path / b / "deck_files/libs/revealjs/dist/theme") for b in ("", "_output")
                     if (tmp_path / b / "deck_files").is_dir())
    assert (theme_dir / "assets" / "Deck-Regular.woff2").read_text() == "font bytes"


def test_labelled_equations_are_numbered_and_referenced_as_quarto_does(tmp_path):
    """$$ ... $$ {#eq-a}: the formula gets \\tag{N} inside a span with the label's id (no
    label text left on the slide), numbered in order; @eq-a is a link "Equation N"."""
    qmd = write(tmp_path / "deck.qmd", "---\nhtml-math-method: mathjax\n---\n\n## One\n\n"
                                       "$$\na = b\n$$ {#eq-first}\n\n$$c = d$${#eq-second}\n\n"
                                       "See @eq-second and [-@eq-first].\n")
    html, _ = build(qmd)
    page = parse_html(html)
    assert "{#eq-" not in html
    spans = [page.find("span", id=f"eq-{k}").text() for k in ("first", "second")]
    assert "a = b\n\\tag{1}" in spans[0] and "c = d\n\\tag{2}" in spans[1]
    links = [(a.attrs["href"].split("#")[-1].lstrip("/"), a.text()) for a in page.find_all("a", cls="quarto-xref")]
    assert links == [("eq-second", "Equation\u00a02"), ("eq-first", "1")]
