"""Test-writing exercise 1: the tests that catch a wrong attention (Section 3.2.1).
Check them with `make exercises TESTS=1`.

Here you do not write ``attention_weights`` and ``scaled_dot_product_attention`` (exercise 1):
you write the tests that would catch every wrong version of them. The grader runs your tests
against the package's code (they must all pass there: a test that fails on correct code is a
false alarm) and against every known mistake of exercise 1 (each should make a test fail),
and says which mistakes your tests catch and, for each survivor, what property would catch it.

Rules of the game:
- Reach the code under test only through the fixtures ``attention_weights`` and
  ``scaled_dot_product_attention``: the grader swaps what they return.
- Check what the paper states (rows of weights sum to 1, a masked key gets weight 0, the
  scaling by sqrt(d_k), ...) or compare with PyTorch's own
  ``torch.nn.functional.scaled_dot_product_attention``. A test that compares with
  transformer_lab's own attention, the answer key, is not counted.
- Every test must pass on correct code whatever the random numbers: seed your inputs or
  use the fixtures below.

Run them alone with ``pytest exercises/tests01_attention.py`` (they test the package then).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from exercises.grader.testing import under_test

B, H, T, S, K, KV = 2, 3, 5, 7, 4, 6  # unequal sizes: two swapped axes cannot agree by accident


@pytest.fixture
def attention_weights():
    """attention_weights(query (..., T, K), key (..., S, K), mask=None, *, bias=None) -> (..., T, S)."""
    return under_test("attention_weights")


@pytest.fixture
def scaled_dot_product_attention():
    """scaled_dot_product_attention(query, key, value (..., S, Kv), mask=None, dropout_p=0.0, *,
    bias=None, on_weights=None) -> (..., T, Kv); on_weights receives the weights before dropout."""
    return under_test("scaled_dot_product_attention")


@pytest.fixture
def qkv():
    """query (B, H, T, K), key (B, H, S, K), value (B, H, S, Kv), seeded."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(B, H, T, K, generator=g), torch.randn(B, H, S, K, generator=g)
    return q, k, torch.randn(B, H, S, KV, generator=g)


@pytest.fixture
def padding():
    """A padding mask (B, 1, 1, S), True = may attend: the last two keys of example 1 are padding."""
    mask = torch.ones(B, 1, 1, S, dtype=torch.bool)
    mask[1, ..., -2:] = False
    return mask


def test_each_querys_weights_sum_to_one(attention_weights, qkv):
    q, k, _ = qkv
    weights = attention_weights(q, k)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(B, H, T))


# Your tests below. Ideas: a masked key's weight; a query that may see no key; the scale
# (compare with the softmax computed by hand, or with F.scaled_dot_product_attention given the
# identity as the values); a bias; float16 inputs; on_weights; dropout_p > 0.
