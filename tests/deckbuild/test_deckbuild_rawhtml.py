"""Large raw HTML blocks skip pandoc and come back unchanged (code/deckbuild/rawhtml.py)."""

import re
import subprocess
from html.parser import HTMLParser

import pytest

from deckbuild import rawhtml
from deckbuild.pandoc import pandoc_path

BIG = "<div id='page'>\n" + "<p>" + "x" * rawhtml.LARGE + "</p>\n" + "<script>let a = 1;\n</script>\n</div>"


def block(body: str) -> str:
    return "```{=html}\n" + body + "\n```"


def test_a_large_self_contained_block_is_swapped_for_a_placeholder_of_the_same_lines():
    md = "# Slide\n\n" + block(BIG) + "\n\nafter\n"
    source, pairs = rawhtml.stash(md)
    assert len(pairs) == 1 and pairs[0][1] == BIG
    assert BIG not in source and len(source) < 200
    assert source.count("\n") == md.count("\n")      # pandoc's line numbers stay right


@pytest.mark.parametrize("body", [
    "<p>small</p>",
    BIG.replace("<p>", "<img src='figure.png'><p>", 1),
    BIG.replace("<p>", "<link href=\"theme.css\" rel=stylesheet><p>", 1),
    BIG.replace("<p>", "<div style=\"background: url(tile.png)\"></div><p>", 1),
])
def test_small_blocks_and_blocks_that_load_files_still_go_through_pandoc(body):
    md = block(body)
    assert rawhtml.stash(md) == (md, [])


def test_self_contained_references_do_not_stop_the_detour():
    body = BIG.replace("<p>", "<img src=\"data:image/png;base64,AAAA\"><a href='#top'>t</a><p>", 1)
    assert len(rawhtml.stash(block(body))[1]) == 1


def test_restore_puts_each_block_back_and_refuses_a_missing_placeholder():
    source, pairs = rawhtml.stash(block(BIG))
    assert rawhtml.restore(source, pairs) == block(BIG)
    with pytest.raises(RuntimeError, match="0 copies of the placeholder"):
        rawhtml.restore("<html></html>", pairs)


def test_pandoc_output_is_the_same_with_and_without_the_detour(tmp_path):
    md = "## A slide\n\ntext before\n\n" + block(BIG) + "\n\ntext after\n"
    source, pairs = rawhtml.stash(md)

    def run(text: str) -> str:
        path = tmp_path / "in.md"
        path.write_text(text, encoding="utf-8")
        return subprocess.run([pandoc_path(), "-f", "markdown", "-t", "revealjs", str(path)],
                              capture_output=True, text=True, check=True).stdout

    assert rawhtml.restore(run(source), pairs) == run(md)


# the explorer's runtime builds script elements in its code: "h.src=e" is not a reference
CODE = "<script>var h = document.createElement('script'); h.src=e; h.style.background = 'url(' + u + ')';</script>"


def test_an_inline_script_s_code_does_not_keep_its_block_in_pandoc():
    assert len(rawhtml.stash(block(BIG.replace("<p>", CODE + "<p>", 1)))[1]) == 1
    # a script that loads a file is a reference: pandoc embeds it
    assert rawhtml.stash(block(BIG.replace("<p>", "<script src='lib.js'></script><p>", 1)))[1] == []


class _Canonical(HTMLParser):
    """A page as the browser reads it, not as it is spelt: tags with their attributes
    (sorted), ``<x/>`` as ``<x></x>``, text with runs of white space as one, and CSS without
    comments. pandoc's --embed-resources pass re-spells the tags it reads that way."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.events, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.events.append(("<", tag, tuple(sorted((k, v or "") for k, v in attrs))))

    def handle_endtag(self, tag):
        self.events.append(("/", tag))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_data(self, data):
        if self.tags and self.tags[-1] == "style":
            data = re.sub(r"/\*.*?\*/", " ", data, flags=re.S)
        text = " ".join(data.split())
        if text:
            self.events.append(("text", text))


def canonical(page: str) -> list:
    parser = _Canonical()
    parser.feed(page)
    return parser.events


def test_pandoc_embeds_nothing_an_inline_script_names(tmp_path):
    """What lets such a block skip pandoc: with --embed-resources, the page the browser
    reads is the same (pandoc re-spells tags and CSS; canonical() undoes that)."""
    body = BIG.replace("<p>", CODE + "<script type='text/plain'>x = '<img src=\"a.png\">'</script><p>", 1)
    md = "## A slide\n\n" + block(body) + "\n"
    source, pairs = rawhtml.stash(md)
    assert len(pairs) == 1

    def run(text: str) -> str:
        path = tmp_path / "in.md"
        path.write_text(text, encoding="utf-8")
        return subprocess.run([pandoc_path(), "-f", "markdown", "-t", "html", "--embed-resources", "--standalone",
                               "--metadata", "title=t", str(path)], capture_output=True, text=True, check=True,
                              cwd=tmp_path).stdout

    detour, through = rawhtml.restore(run(source), pairs), run(md)
    assert canonical(detour) == canonical(through)
    assert CODE in detour and CODE in through                   # the script's code is untouched
    # canonical() is not blind: a changed attribute or text is a difference
    assert canonical(detour.replace('<div id=', '<div data-x id=', 1)) != canonical(through)
    assert canonical(detour.replace("x" * 10, "y" * 10, 1)) != canonical(through)


PAGE = ("<html><body><section><div class='x'>{a}<script>start()</script>{b}</div></section>\n"
        "<script>Reveal.initialize({{}});</script>\n</body>\n</html>\n")
DATA_A = '<script type="application/json" class="a" data-deckbuild-after-body>{"a": 1}</script>'
DATA_B = '<script type="text/plain" data-deckbuild-after-body class="b">&lt;/p&gt; x</script>'


def test_marked_scripts_move_in_order_after_the_start_up_script():
    page = PAGE.format(a=DATA_A, b=DATA_B)
    moved = rawhtml.after_body(page)
    assert moved == PAGE.format(a="", b="").replace("</body>", DATA_A + "\n" + DATA_B + "\n</body>")
    assert moved.index("Reveal.initialize") < moved.index(DATA_A) < moved.index(DATA_B)
    assert rawhtml.after_body(moved) == moved                       # already at the end: unchanged


def test_a_page_without_marked_scripts_is_unchanged_and_one_without_a_body_is_refused():
    page = PAGE.format(a="<script type='application/json'>{}</script>", b="")
    assert rawhtml.after_body(page) == page
    with pytest.raises(RuntimeError, match="1 script.*marked data-deckbuild-after-body.*no </body>"):
        rawhtml.after_body("<div>" + DATA_A + "</div>")


def test_the_explorer_s_block_skips_pandoc_and_reads_the_same(tmp_path):
    """The deck's largest block (8 MB in the deck; a toy model's here) is stashed, and the
    page is the one pandoc would have written, as the browser reads it."""
    torch = pytest.importorskip("torch")
    import transformer_lab as tl
    from transformer_lab.teaching import explorer

    torch.manual_seed(3)
    src, tgt = tl.Vocabulary(["the", "cat", "sat"]), tl.Vocabulary(list("abc"), tokenize="char")
    config = tl.TransformerConfig.tiny(len(src), len(tgt), d_model=12, num_heads=3, d_ff=20, max_len=16)
    task = explorer.ExplorerTask("toy", tl.Transformer(config).eval(), src, tgt, example="the cat sat")
    md = "## The explorer\n\n" + block(explorer.explorer_html([task]).data) + "\n"
    source, pairs = rawhtml.stash(md)
    assert len(pairs) == 1
    path = tmp_path / "in.md"

    def run(text: str) -> str:
        path.write_text(text, encoding="utf-8")
        return subprocess.run([pandoc_path(), "-f", "markdown", "-t", "revealjs", "--embed-resources",
                               "--standalone", "--metadata", "title=t", str(path)], capture_output=True, text=True,
                              check=True, cwd=tmp_path).stdout

    assert canonical(rawhtml.restore(run(source), pairs)) == canonical(run(md))
