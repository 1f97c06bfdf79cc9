"""Large raw HTML blocks skip pandoc and come back unchanged (code/deckbuild/rawhtml.py)."""

import subprocess

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
