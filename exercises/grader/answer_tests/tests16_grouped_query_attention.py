"""Tests that catch every known mistake of exercise 16: the answer key of test-writing
exercise 16 (`make exercises TESTS=16 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""


from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import transformer_lab as tl
from exercises.grader.testing import under_test

B, T, S, D = 2, 5, 7, 12


@pytest.fixture
def GroupedQueryAttention():
    """GroupedQueryAttention(d_model, num_heads, num_kv_heads, dropout=0.0, *, d_k=None,
    d_v=None, bias=True); forward(query (B, T, D), key (B, S, D), value (B, S, D), mask=None,
    cache=None) -> (B, T, D). Projections w_q, w_k, w_v, w_o; with a tl.KVCache() while decoding."""
    return under_test("GroupedQueryAttention")


@pytest.fixture
def make_gqa(GroupedQueryAttention):
    """A seeded module in eval mode with random biases: make_gqa() has 4 query heads and 2
    key/value heads; make_gqa(6, 3), make_gqa(4, 1) (multi-query), make_gqa(d_k=5, d_v=2)."""
    def make(num_heads=4, num_kv_heads=2, d_model=D, **options):
        torch.manual_seed(1)
        module = GroupedQueryAttention(d_model, num_heads, num_kv_heads, **options)
        with torch.no_grad():
            for name, p in module.named_parameters():
                if name.endswith("bias"):
                    p.normal_()
        return module.eval()
    return make


@pytest.fixture
def inputs():
    """query (B, T, D), memory (B, S, D) and a padding mask (B, 1, 1, S), True = may attend
    (the last two positions of example 1 are padding)."""
    g = torch.Generator().manual_seed(0)
    padding = torch.ones(B, 1, 1, S, dtype=torch.bool)
    padding[1, ..., -2:] = False
    return torch.randn(B, T, D, generator=g), torch.randn(B, S, D, generator=g), padding


def test_the_output_has_the_queries_shape(make_gqa, inputs):
    query, memory, padding = inputs
    assert make_gqa()(query, memory, memory, mask=padding).shape == (B, T, D)


@pytest.mark.parametrize("heads, kv_heads, options", [(4, 2, {}), (6, 3, {}), (4, 1, {}), (4, 2, dict(d_k=5, d_v=2))])
def test_the_projections_have_num_kv_heads_key_and_value_heads(make_gqa, heads, kv_heads, options):
    module = make_gqa(heads, kv_heads, **options)
    d_k, d_v = options.get("d_k", D // heads), options.get("d_v", D // heads)
    assert module.w_q.weight.shape == (heads * d_k, D)
    assert module.w_k.weight.shape == (kv_heads * d_k, D)
    assert module.w_v.weight.shape == (kv_heads * d_v, D)
    assert module.w_o.weight.shape == (D, heads * d_v)


def by_pytorch(module, query, memory, mask, heads, kv_heads):
    """PyTorch's grouped heads on the module's own projections: query head i reads
    key/value head i // (heads // kv_heads)."""
    def split(y, n):
        return y.view(y.size(0), y.size(1), n, -1).transpose(1, 2)  # (B, n, L, hd)

    q, k, v = split(module.w_q(query), heads), split(module.w_k(memory), kv_heads), split(module.w_v(memory), kv_heads)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, H, T, Kv)
    return module.w_o(out.transpose(1, 2).reshape(query.size(0), query.size(1), -1))


@pytest.mark.parametrize("heads, kv_heads", [(4, 2), (6, 3), (4, 1), (3, 3)])
def test_equals_pytorchs_grouped_query_attention_on_the_same_projections(make_gqa, inputs, heads, kv_heads):
    query, memory, padding = inputs
    module = make_gqa(heads, kv_heads)
    torch.testing.assert_close(module(query, memory, memory, mask=padding),
                               by_pytorch(module, query, memory, padding, heads, kv_heads))


def test_decoding_caches_num_kv_heads_heads_and_equals_the_causal_run(make_gqa, inputs):
    _, x, _ = inputs
    module, cache = make_gqa(), tl.KVCache()
    steps = torch.cat([module(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(S)], dim=1)
    assert cache.k.shape == (B, 2, S, D // 4) and cache.v.shape == (B, 2, S, D // 4)
    torch.testing.assert_close(steps, module(x, x, x, mask=tl.causal_mask(S)))
