"""ALiBi (Press et al., 2022): no positions on the embeddings; head h adds -m_h * distance
to its scores, with slopes m_h a geometric sequence starting at 2^(-8/H)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl

B, T, S, D, H = 2, 5, 7, 12, 6


def test_the_papers_slopes_for_8_and_16_heads():
    assert tl.alibi_slopes(8) == [2.0**-k for k in range(1, 9)]  # "1/2^1, 1/2^2, ..., 1/2^8"
    assert tl.alibi_slopes(16) == pytest.approx([2.0 ** (-k / 2) for k in range(1, 17)])  # 1/2^0.5 ... 1/2^8


def test_heads_not_a_power_of_two_take_every_other_slope_of_the_next_power():
    assert tl.alibi_slopes(6) == pytest.approx([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3])
    twelve = tl.alibi_slopes(12)
    assert twelve[:8] == tl.alibi_slopes(8)
    assert twelve[8:] == pytest.approx([2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5])
    assert tl.alibi_slopes(1) == [2.0**-8] and tl.alibi_slopes(3) == pytest.approx([2.0**-4, 2.0**-8, 2.0**-2])


@settings(max_examples=30, deadline=None)
@given(num_heads=st.integers(1, 200))
def test_slopes_are_distinct_fractions_and_powers_of_two_are_geometric(num_heads):
    slopes = tl.alibi_slopes(num_heads)
    assert len(slopes) == num_heads == len(set(slopes))
    assert all(0 < m < 1 for m in slopes)
    if num_heads & (num_heads - 1) == 0:
        start = 2.0 ** (-8 / num_heads)
        assert slopes == pytest.approx([start ** (h + 1) for h in range(num_heads)])


@pytest.mark.parametrize("offset", [0, 3])
def test_the_bias_is_minus_slope_times_distance(offset):
    slopes = torch.tensor(tl.alibi_slopes(H), dtype=torch.float64)
    bias = tl.alibi_bias(slopes, T, S, offset)
    assert bias.shape == (H, T, S)
    for h in range(H):
        for t in range(T):
            for s in range(S):
                assert bias[h, t, s].item() == -slopes[h].item() * abs(offset + t - s)
    causal = torch.ones(T, S, dtype=torch.bool).tril(offset)  # key s <= query offset + t
    i = torch.arange(T)[:, None] + offset
    papers = -slopes[:, None, None] * (i - torch.arange(S)[None, :])  # -m (i - j): the paper's, causal part
    torch.testing.assert_close(bias[:, causal], papers[:, causal])


def test_alibi_attention_adds_the_bias_to_the_scaled_scores():
    attn = tl.GroupedQueryAttention(D, H, H, positions="alibi").eval()
    x, mask = torch.randn(B, T, D), tl.causal_mask(T)
    with tl.record_attention(attn) as recorded:
        out = attn(x, x, x, mask=mask)
    q = attn.split_heads(attn.w_q(x), H, attn.d_k)
    k = attn.split_heads(attn.w_k(x), H, attn.d_k)
    scores = q @ k.mT / math.sqrt(attn.d_k) + tl.alibi_bias(torch.tensor(tl.alibi_slopes(H)), T, T)
    expected = torch.softmax(scores.masked_fill(~mask, -torch.inf), dim=-1)
    torch.testing.assert_close(recorded.weights, expected)
    torch.testing.assert_close(attn(x, x, x, mask=mask), out)  # the fused path, same output


def test_alibi_attention_without_a_mask_sees_order_but_not_absolute_position():
    attn = tl.GroupedQueryAttention(D, H, H, positions="alibi").eval()
    x = torch.randn(1, T, D)
    perm = torch.randperm(T)
    assert not torch.allclose(attn(x[:, perm], x[:, perm], x[:, perm]), attn(x, x, x)[:, perm]), "order is seen"
    # the same tokens, later in a longer sequence behind a wall of masked keys: the same output
    padded = torch.cat([torch.randn(1, 3, D), x], dim=1)
    keep = torch.ones(1, 1, 1, T + 3, dtype=torch.bool)
    keep[..., :3] = False
    torch.testing.assert_close(attn(padded, padded, padded, mask=keep)[:, 3:], attn(x, x, x))


def test_the_module_holds_no_parameters_and_follows_the_dtype():
    alibi = tl.ALiBi(H)
    assert list(alibi.parameters()) == [] and alibi.state_dict() == {}
    assert alibi(T, S).dtype == torch.float32
    assert alibi(T, S, like=torch.zeros(1, dtype=torch.float64)).dtype == torch.float64
    torch.testing.assert_close(alibi(T, S, 2).double(), tl.alibi_bias(alibi.slopes, T, S, 2))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="num_heads must be a positive int, got 0"):
        tl.alibi_slopes(0)
    with pytest.raises(ValueError, match=r"slopes must be a floating-point \(H,\) tensor, got \(2, 3\)"):
        tl.alibi_bias(torch.ones(2, 3), T, S)
