"""Test-writing exercise 16: the tests that catch a wrong grouped-query attention (Ainslie et
al., 2023). Check them with `make exercises TESTS=16`.

Here you do not write ``GroupedQueryAttention`` (exercise 16): you write the tests that would
catch every wrong version of it. The grader runs your tests against the package's module (they
must all pass there: a test that fails on correct code is a false alarm) and against every
known mistake of exercise 16 (each should make a test fail), and says which mistakes your
tests catch and, for each survivor, what property would catch it.

Rules of the game: build the module under test only with the fixture ``make_gqa`` (or the
class from ``GroupedQueryAttention``): the grader swaps it. Check the projections' shapes,
what the cache holds while decoding, or compare with PyTorch's own grouped heads,
``F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)`` given the
module's own projections (query head i reads key/value head i // (num_heads // num_kv_heads)).
A test that compares with transformer_lab's own GroupedQueryAttention, the answer key, is not
counted.

Run them alone with ``pytest exercises/tests16_grouped_query_attention.py``.
"""

from __future__ import annotations

import pytest
import torch

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


# Your tests below. Ideas: the shapes of w_q, w_k, w_v, w_o; the output against PyTorch's
# F.scaled_dot_product_attention(..., enable_gqa=True) on the module's own projections, with
# 2 or 3 key/value heads; decoding one position at a time with tl.KVCache(): what cache.k
# holds, and that it equals the causal run (tl.causal_mask(S)).
