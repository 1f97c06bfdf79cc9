"""Test-writing exercise 15: the tests that catch wrong rotary positions (Su et al., 2021).
Check them with `make exercises TESTS=15`.

Here you do not write ``RotaryEmbedding`` and ``RotaryMultiHeadAttention`` (exercise 15): you
write the tests that would catch every wrong version of them. The grader runs your tests
against the package's code (they must all pass there: a test that fails on correct code is a
false alarm) and against every known mistake of exercise 15 (each should make a test fail),
and says which mistakes your tests catch and, for each survivor, what property would catch it.

Rules of the game: reach the code under test only through the fixtures ``RotaryEmbedding``
and ``make_attention`` (the grader swaps them). Check the closed form (pair i, features i and
i + K/2, read as the complex number z = x_i + j x_(i+K/2), becomes z e^(j pos theta_i) with
theta_i = base^(-2i/K)), properties (scores depend on m - n only, decoding with a cache
equals the whole run), or attention computed by hand from the module's own projections with
PyTorch's ``F.scaled_dot_product_attention``. A test that uses transformer_lab's own
RotaryEmbedding, the answer key, is not counted.

Run them alone with ``pytest exercises/tests15_rotary.py``.
"""

from __future__ import annotations

import pytest
import torch

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


# Your tests below. Ideas: the closed form in float64 for q and k (pair i is features i and
# i + K/2); an offset, one position at a time, as decoding with a cache feeds it; which
# tensors are turned in attention (q and k, each head, after the projections; never v);
# decoding with tl.KVCache() against the causal run, tl.causal_mask(S).
