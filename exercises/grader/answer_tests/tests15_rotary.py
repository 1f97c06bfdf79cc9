"""Tests that catch every known mistake of exercise 15: the answer key of test-writing
exercise 15 (`make exercises TESTS=15 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import transformer_lab as tl
from exercises.grader.testing import under_test

B, H, T, S, K = 2, 3, 5, 7, 8  # the rotation's inputs: q (B, H, T, K), k (B, H, S, K)
D = 12  # the attention's d_model: 3 heads of d_k = 4


@pytest.fixture
def RotaryEmbedding():
    """RotaryEmbedding(head_dim, base=10000.0); forward(q (..., T, K), k (..., S, K), offset=0)
    -> (q, k) turned, row t by the angles of position offset + t."""
    return under_test("RotaryEmbedding")


@pytest.fixture
def make_attention():
    """A seeded RotaryMultiHeadAttention in eval mode with random biases: make_attention(),
    make_attention(num_heads=2), make_attention(dropout=0.5). Its call: forward(query, key,
    value, mask=None, cache=None) as self-attention (query = key = value), with a
    tl.KVCache() while decoding. It has w_q, w_k, w_v, w_o, num_heads, d_k, and self.rotary."""
    cls = under_test("RotaryMultiHeadAttention")

    def make(d_model=D, num_heads=H, dropout=0.0):
        torch.manual_seed(1)
        module = cls(d_model, num_heads, dropout)
        with torch.no_grad():
            for name, p in module.named_parameters():
                if name.endswith("bias"):
                    p.normal_()
        return module.eval()
    return make


@pytest.fixture
def qk():
    """q (B, H, T, K) and k (B, H, S, K)."""
    g = torch.Generator().manual_seed(0)
    return torch.randn(B, H, T, K, generator=g), torch.randn(B, H, S, K, generator=g)


@pytest.fixture
def x():
    """A self-attention input (B, S, D)."""
    return torch.randn(B, S, D, generator=torch.Generator().manual_seed(1))


def test_rotation_keeps_the_shapes(RotaryEmbedding, qk):
    q, k = qk
    turned_q, turned_k = RotaryEmbedding(K)(q, k, offset=2)
    assert turned_q.shape == q.shape and turned_k.shape == k.shape


def turned_by_hand(x, offset, base=10000.0):
    """The closed form in float64: pair i (features i and i + K/2) as z = x_i + j x_(i+K/2),
    times e^(j pos theta_i), theta_i = base^(-2i/K), pos = offset + row."""
    half = x.size(-1) // 2
    z = torch.complex(x[..., :half].double(), x[..., half:].double())  # (..., L, K/2)
    theta = base ** (-2 * torch.arange(half, dtype=torch.float64) / x.size(-1))  # (K/2,)
    position = torch.arange(offset, offset + x.size(-2), dtype=torch.float64)  # (L,)
    z = z * torch.polar(torch.ones(x.size(-2), half, dtype=torch.float64), position[:, None] * theta)
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)  # (..., L, K)


@pytest.mark.parametrize("offset", [0, 3])
def test_q_and_k_equal_the_complex_closed_form(RotaryEmbedding, qk, offset):
    q, k = qk
    turned_q, turned_k = RotaryEmbedding(K)(q, k, offset=offset)
    torch.testing.assert_close(turned_q, turned_by_hand(q, offset), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(turned_k, turned_by_hand(k, offset), rtol=1e-5, atol=1e-5)


def test_turning_one_position_at_a_time_with_its_offset_equals_the_whole_sequence(RotaryEmbedding, qk):
    q, k = qk
    rotary = RotaryEmbedding(K)
    steps = [rotary(q[:, :, t : t + 1], k[:, :, t : t + 1], offset=t) for t in range(T)]
    whole_q, whole_k = rotary(q, k[:, :, :T])
    torch.testing.assert_close(torch.cat([s[0] for s in steps], dim=2), whole_q)
    torch.testing.assert_close(torch.cat([s[1] for s in steps], dim=2), whole_k)


def attention_by_hand(module, x, mask):
    """Self-attention from the module's own projections: each head's q and k turned by the
    closed form, v as it is, PyTorch's equation (1), the heads merged, W^O."""
    batch, length, _ = x.shape
    heads = module.num_heads

    def split(y):
        return y.view(batch, length, heads, -1).transpose(1, 2)  # (B, H, L, K)

    q, k, v = split(module.w_q(x)), split(module.w_k(x)), split(module.w_v(x))
    q, k = turned_by_hand(q, 0), turned_by_hand(k, 0)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, L, Kv); True = may attend, as here
    return module.w_o(out.transpose(1, 2).reshape(batch, length, -1))


@pytest.mark.parametrize("num_heads", [3, 2])
def test_attention_equals_attention_by_hand_with_q_and_k_turned(make_attention, x, num_heads):
    module = make_attention(num_heads=num_heads)
    mask = tl.causal_mask(S)
    torch.testing.assert_close(module(x, x, x, mask=mask), attention_by_hand(module, x, mask), rtol=1e-5, atol=1e-5)


def test_decoding_with_a_cache_equals_the_causal_run(make_attention, x):
    module = make_attention()
    cache = tl.KVCache()
    prompt = x[:, :3]
    steps = [module(prompt, prompt, prompt, mask=tl.causal_mask(3), cache=cache)]
    steps += [module(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(3, S)]
    torch.testing.assert_close(torch.cat(steps, dim=1), module(x, x, x, mask=tl.causal_mask(S)))
