"""The explorer benchmark's three pages are the ones it says: the deck as built, the deck
without the explorer (payload and script cut out), and the payload back inside its slide
as Quarto leaves it. On the explorer's own HTML, laid out as our renderer writes it."""

import importlib.util
import re
from pathlib import Path

import pytest
import torch

from extras import skip_module_without

skip_module_without("IPython", "playwright", "yaml")  # the explorer's HTML, the renderer, the browser

import transformer_lab as tl  # noqa: E402
from deckbuild import rawhtml  # noqa: E402
from transformer_lab.teaching import explorer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_explorer", ROOT / "benchmarks" / "bench_explorer.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def page() -> str:
    """A page with a toy explorer on its second slide, after our renderer's move."""
    torch.manual_seed(0)
    src, tgt = tl.Vocabulary(["the", "cat", "sat"]), tl.Vocabulary(list("abc"), tokenize="char")
    config = tl.TransformerConfig.tiny(len(src), len(tgt), d_model=12, num_heads=3, d_ff=20, max_len=16)
    block = explorer.explorer_html([explorer.ExplorerTask("toy", tl.Transformer(config).eval(), src, tgt,
                                                          example="the cat sat")]).data
    html = (f"<html><body><div class='reveal'><section>one</section><section>{block}</section></div>\n"
            "<script>Reveal.initialize({});</script>\n</body></html>")
    return rawhtml.after_body(html)


def test_the_page_without_the_explorer_has_none_of_it(page):
    without = bench.PAYLOAD.sub("", page)
    assert page.count("<script") == 6                                          # 4 payload, explorer.js, start-up
    assert re.findall(r"<script[^>]*>", without) == ["<script>"] and "Reveal.initialize" in without
    assert "// The explorer slide" not in without and "data-tlx-key=" in without   # the still stays


def test_the_quarto_layout_puts_the_payload_back_in_the_slide(page):
    start = page.index("Reveal.initialize")
    assert min(m.start() for m in re.finditer(r'class="tlx-(data|wasm)"', page)) > start
    quarto = bench.in_slide(page)
    assert len(quarto) == len(page)
    where = [m.start() for m in re.finditer(r'class="tlx-(data|runtime|glue|wasm)"', quarto)]
    assert len(where) == 4 and max(where) < quarto.index("Reveal.initialize")
    assert quarto.index('<div class="tl-explorer"') < min(where)
