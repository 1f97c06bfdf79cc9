"""Test-writing exercise 10: the tests that catch a wrong decoder layer (Section 3.1).
Check them with `make exercises TESTS=10`.

Here you do not write ``DecoderLayer`` (exercise 10): you write the tests that would catch
every wrong version of it. The grader runs your tests against the package's layer (they must
all pass there: a test that fails on correct code is a false alarm) and against every known
mistake of exercise 10 (each should make a test fail), and says which mistakes your tests
catch and, for each survivor, what property would catch it.

Rules of the game: build the layer under test only with the fixture ``make_layer`` (or the
class from ``DecoderLayer``): the grader swaps it. Check properties (causality, source
padding, decoding one position at a time with a cache) or compare with PyTorch's own
``nn.TransformerDecoderLayer`` holding the same weights (the fixture ``torch_layer``; its
masks are True = blocked). A test that compares with transformer_lab's own DecoderLayer, the
answer key, is not counted.

Run them alone with ``pytest exercises/tests10_decoder_layer.py``.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import transformer_lab as tl
from exercises.grader.testing import under_test
from transformer_lab.interop import copy_into_torch_attention

B, T, S, D, H, F = 2, 5, 7, 12, 3, 20


@pytest.fixture
def DecoderLayer():
    """DecoderLayer(d_model, self_attn, cross_attn, feed_forward, dropout=0.1, *, norm_first=False,
    layer_norm_eps=1e-5); forward(x (B, T, D), memory (B, S, D), src_mask=None, tgt_mask=None,
    cache=None) -> (B, T, D)."""
    return under_test("DecoderLayer")


@pytest.fixture
def make_layer(DecoderLayer):
    """make_layer(norm_first=False, dropout=0.0): a seeded layer in eval mode, holding the
    package's MultiHeadAttention twice and PositionwiseFeedForward, with random biases and
    LayerNorm gains."""
    def make(norm_first=False, dropout=0.0):
        torch.manual_seed(2)
        layer = DecoderLayer(D, tl.MultiHeadAttention(D, H), tl.MultiHeadAttention(D, H),
                             tl.PositionwiseFeedForward(D, F), dropout, norm_first=norm_first)
        with torch.no_grad():
            for name, p in layer.named_parameters():
                if name.endswith("bias") or name.startswith("norm"):
                    p.normal_(1.0 if name.endswith("weight") else 0.0, 0.5)
        return layer.eval()
    return make


@pytest.fixture
def torch_layer():
    """torch_layer(layer) -> nn.TransformerDecoderLayer(batch_first=True) holding layer's
    weights, eval mode, post-LN or pre-LN as layer.norm_first says."""
    def build(layer: nn.Module) -> nn.TransformerDecoderLayer:
        theirs = nn.TransformerDecoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=layer.norm_first)
        copy_into_torch_attention(layer.self_attn, theirs.self_attn)
        copy_into_torch_attention(layer.cross_attn, theirs.multihead_attn)
        theirs.linear1.load_state_dict(layer.feed_forward.w_1.state_dict())
        theirs.linear2.load_state_dict(layer.feed_forward.w_2.state_dict())
        for i in (1, 2, 3):
            getattr(theirs, f"norm{i}").load_state_dict(getattr(layer, f"norm{i}").state_dict())
        return theirs.eval()
    return build


@pytest.fixture
def inputs():
    """x (B, T, D), memory (B, S, D), src_mask (B, 1, 1, S) (the last two source positions of
    example 1 are padding) and tgt_mask, causal (T, T); masks are True = may attend."""
    g = torch.Generator().manual_seed(0)
    src_mask = torch.ones(B, 1, 1, S, dtype=torch.bool)
    src_mask[1, ..., -2:] = False
    return torch.randn(B, T, D, generator=g), torch.randn(B, S, D, generator=g), src_mask, tl.causal_mask(T)


def test_the_output_has_the_targets_shape(make_layer, inputs):
    x, memory, src_mask, tgt_mask = inputs
    assert make_layer()(x, memory, src_mask, tgt_mask).shape == (B, T, D)


# Your tests below. Ideas: causality; padded source positions; the same output as
# torch_layer(layer), post-LN and pre-LN; one position at a time with
# cache=(tl.KVCache(), tl.KVCache(static=True)) against the whole target at once.
