"""The explorer slide's Python side (transformer_lab.teaching.explorer): what it embeds,
the still image it draws, and the messages for bad arguments. The page itself is tested
in headless Chromium by test_explorer_browser.py."""

import base64
import gzip
import html
import json
import re

import pytest
import torch

import transformer_lab as tl
from transformer_lab.teaching import explorer
from transformer_lab.teaching.style import PALETTE

from extras import needs

pytest.importorskip("onnxruntime")
WORDS = "the cat dog sat ran on mat rug".split()


@pytest.fixture(scope="module")
def task():
    torch.manual_seed(3)
    src_vocab, tgt_vocab = tl.Vocabulary(WORDS), tl.Vocabulary(list("abc"), tokenize="char")
    config = tl.TransformerConfig.tiny(len(src_vocab), len(tgt_vocab), d_model=12, num_heads=3, d_ff=20,
                                       max_len=16)
    return explorer.ExplorerTask("toy", tl.Transformer(config).eval(), src_vocab, tgt_vocab, example="the cat sat")


def test_source_ids_are_the_vocabulary_s_with_eos(task):
    assert explorer.source_ids(task.src_vocab, "the cat sat") == task.src_vocab.encode("the cat sat")
    with pytest.raises(ValueError, match=r"unknown symbol\(s\) \['bird'\]"):
        explorer.source_ids(task.src_vocab, "the bird sat")
    with pytest.raises(ValueError, match="text must hold 1 to 20 symbols, got 21"):
        explorer.source_ids(task.src_vocab, " ".join(["cat"] * 21))
    with pytest.raises(ValueError, match="got 0"):
        explorer.source_ids(task.src_vocab, "   ")


def test_decode_is_greedy_decoding_with_the_last_step_s_weights(task):
    decoded = explorer.decode(task, "the cat sat on the mat")
    src = torch.tensor([task.src_vocab.encode("the cat sat on the mat")])
    tokens = tl.greedy_decode(task.model, src, min(src.size(1) + 50, 16), tl.data.BOS_ID, tl.data.EOS_ID)[0]
    assert decoded.output == [task.tgt_vocab.itos[i] for i in tokens[1:]]
    assert decoded.read == [task.tgt_vocab.itos[i] for i in tokens[:-1]]
    assert decoded.source == "the cat sat on the mat <eos>".split()
    S, T, L, H = 7, len(decoded.read), 2, 3
    assert decoded.attention["encoder"].shape == (L, H, S, S)
    assert decoded.attention["decoder_self"].shape == (L, H, T, T)
    assert decoded.attention["cross"].shape == (L, H, T, S)
    assert all(0 < p <= 1 for p in decoded.probabilities)
    torch.testing.assert_close(decoded.attention["cross"].sum(-1), torch.ones(L, H, T))


def test_heatmap_draws_every_cell_labels_and_masked_future_in_the_mask_colour():
    weights = [[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.5, 0.25, 0.25]]
    svg = explorer.render_heatmap(weights, ["<bos>", "a", "b"], ["<bos>", "a", "b"], masked_future=True)
    fills = re.findall(r'<rect x="[^"]+" y="[^"]+" width="[^"]+" height="[^"]+" fill="(#[0-9A-F]{6})"', svg)
    assert len(fills) == 9
    assert fills[1] == fills[2] == fills[5] == PALETTE["mask"]  # j > i
    assert fills[0] == PALETTE["query"].upper() and fills[3] == explorer._shade(0.25) not in ("#FFFFFF", fills[0])
    assert explorer._shade(0.0) == "#FFFFFF" and explorer._shade(1.0) == PALETTE["query"].upper()
    assert 'font-size="21"' in svg and "&lt;bos&gt;" in svg and svg.count("<text") == 3 + 3 + 2


def test_packed_is_gzip_then_base64():
    data = bytes(range(256)) * 10
    assert gzip.decompress(base64.b64decode(explorer.packed(data))) == data


@needs("IPython")
def test_the_html_embeds_runtime_models_vocabularies_and_the_still(task):
    page = explorer.explorer_html([task], kind="cross", layer=-1, head=2).data
    data = json.loads(html.unescape(re.search(r'class="tlx-data"[^>]*>(.*?)</script>', page).group(1)).replace("<\\/", "</"))
    (embedded,) = data["tasks"]
    assert embedded["src"] == task.src_vocab.to_dict() and embedded["tgt"] == task.tgt_vocab.to_dict()
    assert embedded["layers"] == 2 and embedded["heads"] == 3 and embedded["maxWords"] == explorer.MAX_WORDS
    assert data["start"] == {"kind": "cross", "layer": 1, "head": 2}
    onnx = gzip.decompress(base64.b64decode(embedded["decoder"]))
    assert b"cross_attention_1" in onnx
    wasm = re.search(r'class="tlx-wasm"[^>]*>(.*?)</script>', page, re.S).group(1)
    assert gzip.decompress(base64.b64decode(wasm))[:4] == b"\0asm"
    assert "sourceMappingURL" not in page and "ort.env" not in page.split('class="tlx-runtime"')[0]
    assert 'value="the cat sat"' in page and "tlx-print-note" in page and "<svg" in page
    assert page.count("<script") == 5


@needs("IPython")
def test_the_payload_is_marked_to_go_after_the_body_and_keyed_to_its_explorer(task):
    page = explorer.explorer_html([task]).data
    key = re.match(r'<div class="tl-explorer" data-tlx-key="([0-9a-f]{12})">', page).group(1)
    payload = re.findall(r'<script type="[^"]+" class="tlx-([a-z]+)" data-tlx-key="([0-9a-f]+)" '
                         r'data-deckbuild-after-body>', page)
    assert payload == [(name, key) for name in ("data", "runtime", "glue", "wasm")]
    # the same explorer gives the same key (builds are reproducible); another gives another
    assert explorer.explorer_html([task]).data == page
    assert f'data-tlx-key="{key}"' not in explorer.explorer_html([task], head=1).data


@needs("IPython")
def test_bad_arguments_are_named(task):
    with pytest.raises(TypeError, match="tasks must be a non-empty list of ExplorerTask"):
        explorer.explorer_html([])
    with pytest.raises(ValueError, match="tasks must have distinct names"):
        explorer.explorer_html([task, task])
    with pytest.raises(ValueError, match="kind must be one of"):
        explorer.explorer_html([task], kind="self")
    with pytest.raises(ValueError, match=r"head must be in \[0, 3\), got 3"):
        explorer.explorer_html([task], head=3)
    with pytest.raises(ValueError, match=r"unknown symbol\(s\) \['bird'\]"):
        explorer.ExplorerTask("toy", task.model, task.src_vocab, task.tgt_vocab, example="bird")
    with pytest.raises(ValueError, match="name must be a short identifier"):
        explorer.ExplorerTask("two words", task.model, task.src_vocab, task.tgt_vocab, example="cat")
    with pytest.raises(TypeError, match="model must be a transformer_lab.Transformer, got str"):
        explorer.ExplorerTask("toy", "model", task.src_vocab, task.tgt_vocab, example="cat")


def test_missing_runtime_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("DECKBUILD_NODE_MODULES", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(explorer, "HERE", tmp_path / "a" / "b" / "c")
    with pytest.raises(FileNotFoundError, match="onnxruntime-web not found.*npm ci"):
        explorer.node_modules()
