"""Tests that catch every known mistake of exercise 10: the answer key of test-writing
exercise 10 (`make exercises TESTS=10 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""

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


@pytest.mark.parametrize("norm_first", [False, True])
def test_equals_pytorchs_decoder_layer_with_the_same_weights(make_layer, torch_layer, inputs, norm_first):
    x, memory, src_mask, tgt_mask = inputs
    ours = make_layer(norm_first=norm_first)
    expected = torch_layer(ours)(x, memory, tgt_mask=~tgt_mask, memory_key_padding_mask=~src_mask[:, 0, 0])
    torch.testing.assert_close(ours(x, memory, src_mask, tgt_mask), expected)


def test_causality_editing_later_target_positions_changes_nothing_before_them(make_layer, inputs):
    x, memory, src_mask, tgt_mask = inputs
    layer = make_layer()
    edited = x.clone()
    edited[:, 3:] += 1.0
    before, after = layer(x, memory, src_mask, tgt_mask), layer(edited, memory, src_mask, tgt_mask)
    torch.testing.assert_close(after[:, :3], before[:, :3])


def test_editing_padded_source_positions_changes_nothing(make_layer, inputs):
    x, memory, src_mask, tgt_mask = inputs
    layer = make_layer()
    edited = memory.clone()
    edited[1, -2:] += 1.0
    torch.testing.assert_close(layer(x, edited, src_mask, tgt_mask), layer(x, memory, src_mask, tgt_mask))


def test_one_position_at_a_time_with_the_caches_equals_the_whole_target(make_layer, inputs):
    x, memory, src_mask, tgt_mask = inputs
    layer = make_layer()
    cache = (tl.KVCache(), tl.KVCache(static=True))
    steps = [layer(x[:, t : t + 1], memory, src_mask, None, cache=cache) for t in range(T)]
    torch.testing.assert_close(torch.cat(steps, dim=1), layer(x, memory, src_mask, tgt_mask))
