"""Tests that catch every known mistake of exercise 1: the answer key of test-writing
exercise 1 (`make exercises TESTS=1 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""

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


def test_masked_keys_get_zero_weight_and_the_others_sum_to_one(attention_weights, qkv, padding):
    q, k, _ = qkv
    weights = attention_weights(q, k, padding)
    assert bool((weights[1, ..., -2:] == 0).all())
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(B, H, T))


def test_the_weights_are_the_softmax_of_the_scaled_scores(attention_weights, qkv):
    q, k, _ = qkv
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(K), dim=-1)
    torch.testing.assert_close(attention_weights(q, k), expected)


def test_a_query_that_sees_no_key_gets_zero_weights_and_a_zero_output(attention_weights,
                                                                     scaled_dot_product_attention, qkv):
    q, k, v = qkv
    mask = torch.ones(T, S, dtype=torch.bool)
    mask[2] = False  # query 2 may see nothing
    weights = attention_weights(q, k, mask)
    assert bool((weights[..., 2, :] == 0).all())
    assert bool((scaled_dot_product_attention(q, k, v, mask)[..., 2, :] == 0).all())


def test_a_bias_is_added_after_the_scaling_as_pytorch_adds_a_float_mask(attention_weights, qkv):
    q, k, _ = qkv
    bias = torch.randn(B, H, T, S, generator=torch.Generator().manual_seed(1))
    identity = torch.eye(S).expand(B, H, S, S)
    expected = F.scaled_dot_product_attention(q, k, identity, attn_mask=bias)  # the weights
    torch.testing.assert_close(attention_weights(q, k, bias=bias), expected)


def test_float16_inputs_with_a_mask_give_finite_weights_that_sum_to_one(attention_weights, qkv, padding):
    q, k, _ = qkv
    weights = attention_weights(q.half(), k.half(), padding).float()
    assert bool(torch.isfinite(weights).all())
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(B, H, T), rtol=1e-2, atol=1e-2)


def test_the_output_is_the_weights_applied_to_the_values(scaled_dot_product_attention, qkv, padding):
    q, k, v = qkv
    identity = torch.eye(S).expand(B, H, S, S)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=padding)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v, padding), expected)
    weights = scaled_dot_product_attention(q, k, identity, padding)
    torch.testing.assert_close(weights @ v, expected)


def test_on_weights_receives_the_weights_once_before_dropout(scaled_dot_product_attention, qkv, padding):
    q, k, v = qkv
    seen = []
    scaled_dot_product_attention(q, k, v, padding, 0.5, on_weights=seen.append)
    assert len(seen) == 1 and seen[0].shape == (B, H, T, S)
    torch.testing.assert_close(seen[0].sum(dim=-1), torch.ones(B, H, T))


def test_dropout_drops_some_weights_and_rescales_the_others(scaled_dot_product_attention, qkv, padding):
    q, k, _ = qkv
    identity = torch.eye(S).expand(B, H, S, S)
    weights = F.scaled_dot_product_attention(q, k, identity, attn_mask=padding)
    out = scaled_dot_product_attention(q, k, identity, padding, 0.5)
    dropped = out == 0
    assert 0 < int((dropped & (weights > 0)).sum()) < int((weights > 0).sum())
    torch.testing.assert_close(out[~dropped], 2 * weights[~dropped])
