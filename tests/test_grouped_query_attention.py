"""Grouped-query attention (Ainslie et al., 2023): H query heads share G key/value heads;
G = H is multi-head attention, G = 1 multi-query attention (Shazeer, 2019)."""

import math

import pytest
import torch
import torch.nn.functional as F

import transformer_lab as tl
from parity import torch_attn_mask
from test_multi_head_attention import randomise_biases
from transformer_lab.interop import to_torch_attention

B, S, T, D, H = 2, 7, 5, 12, 6
KV_HEADS = [1, 2, 3, 6]


def same_weights(gqa: tl.GroupedQueryAttention) -> tl.MultiHeadAttention:
    """A multi-head attention with gqa's projections (G = H)."""
    mha = tl.MultiHeadAttention(D, H)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
    return mha.eval()


def heads(x, num):
    """(B, L, num * K) -> (B, num, L, K)."""
    return x.view(x.size(0), x.size(1), num, -1).transpose(1, 2)


def padding_and_causal():
    keep = torch.ones(B, T, dtype=torch.bool)
    keep[1, -2:] = False
    return keep[:, None, :] & tl.causal_mask(T)  # (B, T, T)


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_with_a_key_value_head_per_query_head_it_is_multi_head_attention(kind):
    gqa = randomise_biases(tl.GroupedQueryAttention(D, H, H)).eval()
    mha = same_weights(gqa)
    x = torch.randn(B, T, D)
    memory = x if kind == "self" else torch.randn(B, S, D)
    mask = padding_and_causal() if kind == "self" else None
    torch.testing.assert_close(gqa(x, memory, memory, mask=mask), mha(x, memory, memory, mask=mask))
    ref = to_torch_attention(mha).eval()  # and so PyTorch's nn.MultiheadAttention
    expected, _ = ref(x, memory, memory, attn_mask=None if mask is None else torch_attn_mask(mask).repeat_interleave(H, 0))
    torch.testing.assert_close(gqa(x, memory, memory, mask=mask), expected)


MASKS = {
    "none": lambda: None,
    "causal (T, S)": lambda: tl.causal_mask(T),
    "padding (B, 1, 1, S)": lambda: tl.padding_mask(torch.tensor([[1] * T, [1] * (T - 2) + [0] * 2]), 0),
    "(B, T, S)": padding_and_causal,
    "per head (B, H, T, S)": lambda: torch.rand(B, H, T, T) > 0.3,
    "per head, one row (1, H, 1, S)": lambda: torch.rand(1, H, 1, T) > 0.3,
}


@pytest.mark.parametrize("mask_name", MASKS)
@pytest.mark.parametrize("num_kv_heads", KV_HEADS)
def test_matches_torchs_grouped_query_attention(num_kv_heads, mask_name):
    """F.scaled_dot_product_attention(enable_gqa=True) repeats each key/value head for its
    group; stacking a group's queries instead gives the same output and weights."""
    gqa = randomise_biases(tl.GroupedQueryAttention(D, H, num_kv_heads)).eval()
    x, mask = torch.randn(B, T, D), MASKS[mask_name]()
    with tl.record_attention(gqa) as recorded:
        out = gqa(x, x, x, mask=mask)
    q = heads(gqa.w_q(x), H)  # (B, H, T, K)
    k, v = heads(gqa.w_k(x), num_kv_heads), heads(gqa.w_v(x), num_kv_heads)  # (B, G, T, K)
    full = None if mask is None else (mask if mask.dim() != 3 else mask[:, None])
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=full, enable_gqa=True)
    if full is not None:  # a query that sees no key: zero, the package's convention
        expected = expected.masked_fill(~full.any(-1, keepdim=True), 0.0)
    torch.testing.assert_close(out, gqa.w_o(expected.transpose(1, 2).flatten(2)))
    group = H // num_kv_heads
    scores = q @ k.repeat_interleave(group, 1).mT / math.sqrt(gqa.d_k)
    if full is not None:
        scores = scores.masked_fill(~full, -torch.inf)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    torch.testing.assert_close(recorded.weights, weights)
    torch.testing.assert_close(gqa(x, x, x, mask=mask), out)  # the fused path, the same output


def test_query_head_i_reads_key_value_head_i_over_group():
    gqa = tl.GroupedQueryAttention(D, H, 2).eval()
    x = torch.randn(1, T, D)
    with tl.record_attention(gqa) as before:
        gqa(x, x, x)
    with torch.no_grad():
        gqa.w_k.weight[gqa.d_k:].mul_(3.0)  # change key head 1 only
    with tl.record_attention(gqa) as after:
        gqa(x, x, x)
    changed = [not torch.allclose(before.weights[0, h], after.weights[0, h]) for h in range(H)]
    assert changed == [False, False, False, True, True, True]


@pytest.mark.parametrize("num_kv_heads", KV_HEADS)
def test_the_projections_shrink_with_the_key_value_heads(num_kv_heads):
    gqa = tl.GroupedQueryAttention(D, H, num_kv_heads)
    d_k = D // H
    assert gqa.w_q.weight.shape == (H * d_k, D) and gqa.w_o.weight.shape == (D, H * d_k)
    assert gqa.w_k.weight.shape == gqa.w_v.weight.shape == (num_kv_heads * d_k, D)
    assert tl.count_parameters(gqa) == 2 * (D * D + D) + 2 * (D * num_kv_heads * d_k + num_kv_heads * d_k)


@pytest.mark.parametrize("positions", [None, "rotary", "alibi"])
@pytest.mark.parametrize("num_kv_heads", [1, 2, 6])
def test_the_cache_holds_g_heads_and_cached_steps_equal_full_causal_attention(num_kv_heads, positions):
    gqa = randomise_biases(tl.GroupedQueryAttention(D, H, num_kv_heads, positions=positions)).eval()
    x = torch.randn(B, T, D)
    full = gqa(x, x, x, mask=tl.causal_mask(T))
    cache = tl.KVCache()
    prefix = gqa(x[:, :2], x[:, :2], x[:, :2], mask=tl.causal_mask(2), cache=cache)  # a prompt of 2
    steps = [gqa(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(2, T)]
    torch.testing.assert_close(torch.cat([prefix, *steps], dim=1), full)
    assert cache.k.shape == (B, num_kv_heads, T, D // H) and cache.v.shape == (B, num_kv_heads, T, D // H)


def test_positions_change_the_output_and_the_cache_offset_reaches_them():
    x = torch.randn(B, T, D)
    plain = tl.GroupedQueryAttention(D, H, 2).eval()
    for positions in ("rotary", "alibi"):
        variant = tl.GroupedQueryAttention(D, H, 2, positions=positions).eval()
        variant.load_state_dict(plain.state_dict())
        assert not torch.allclose(variant(x, x, x), plain(x, x, x))
        cache = tl.KVCache()
        variant(x[:, :3], x[:, :3], x[:, :3], mask=tl.causal_mask(3), cache=cache)
        late = variant(x[:, 3:4], x[:, 3:4], x[:, 3:4], cache=cache)  # position 3
        cache_at_0 = tl.KVCache()
        early = variant(x[:, 3:4], x[:, 3:4], x[:, 3:4], cache=cache_at_0)  # position 0, nothing before
        assert not torch.allclose(late, early)


@pytest.mark.parametrize("num_kv_heads", [1, 3])
def test_a_static_cache_projects_the_memory_once(num_kv_heads):
    gqa = tl.GroupedQueryAttention(D, H, num_kv_heads).eval()
    x, memory = torch.randn(B, 1, D), torch.randn(B, S, D)
    cache = tl.KVCache(static=True)
    first = gqa(x, memory, memory, cache=cache)
    assert cache.k.shape == (B, num_kv_heads, S, D // H)
    again = gqa(x, torch.zeros(B, S, D), torch.zeros(B, S, D), cache=cache)  # key and value not read
    torch.testing.assert_close(again, first)
    with pytest.raises(ValueError, match="positions='rotary' apply to self-attention; a static"):
        tl.GroupedQueryAttention(D, H, 2, positions="rotary")(x, memory, memory, cache=tl.KVCache(static=True))


def test_dropout_acts_on_the_weights_in_training_only():
    gqa = tl.GroupedQueryAttention(D, H, 2, dropout=0.5)
    x = torch.randn(B, T, D)
    torch.testing.assert_close(gqa.eval()(x, x, x), gqa(x, x, x))
    assert not torch.allclose(gqa.train()(x, x, x), gqa.eval()(x, x, x))


def test_factory_builds_from_the_layer_config():
    config = tl.LayerConfig(D, H, 20, attention_dropout=0.1)
    gqa = tl.GroupedQueryAttention.factory(3, positions="rotary", rotary_base=500.0)(config)
    assert (gqa.num_heads, gqa.num_kv_heads, gqa.dropout, gqa.positions) == (H, 3, 0.1, "rotary")
    assert gqa.rotary.base == 500.0
    assert tl.GroupedQueryAttention.factory()(config).num_kv_heads == H


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"num_heads=6 must be divisible by num_kv_heads=4 \(each key/value"):
        tl.GroupedQueryAttention(D, H, 4)
    with pytest.raises(ValueError, match="num_kv_heads must be a positive int, got 0"):
        tl.GroupedQueryAttention(D, H, 0)
    with pytest.raises(ValueError, match=r"positions must be one of \(None, 'rotary', 'alibi'\), got 'sinusoidal'"):
        tl.GroupedQueryAttention(D, H, 2, positions="sinusoidal")
    with pytest.raises(ValueError, match=r"head_dim must be a positive even int"):
        tl.GroupedQueryAttention(D, 4, 2, positions="rotary")  # d_k = 3
    gqa = tl.GroupedQueryAttention(D, H, 2)
    x = torch.randn(B, T, D)
    with pytest.raises(ValueError, match=r"key must have shape \(B, L, d_model=12\), got \(2, 7, 10\)"):
        gqa(x, torch.randn(B, S, 10), torch.randn(B, S, 10))
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        gqa(x, x, x, mask=torch.ones(T, T))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast to the attention scores' "
                                         r"shape \(2, 6, 5, 5\)"):
        gqa(x, x, x, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="cache must be a KVCache, got dict"):
        gqa(x, x, x, cache={})
