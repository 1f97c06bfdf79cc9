"""Tests that catch every known mistake of exercise 2: the answer key of test-writing
exercise 2 (`make exercises TESTS=2 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""

from __future__ import annotations

import pytest
import torch

from exercises.grader.testing import under_test

B, S, T, PAD = 2, 7, 5, 0


@pytest.fixture
def causal_mask():
    """causal_mask(size, device=None) -> (size, size)."""
    return under_test("causal_mask")


@pytest.fixture
def padding_mask():
    """padding_mask(tokens (B, S), pad_id) -> a mask that broadcasts against scores (B, H, T, S)."""
    return under_test("padding_mask")


@pytest.fixture
def tokens():
    """Token ids (B, S): example 1 ends with two padding tokens (id 0)."""
    tokens = torch.randint(3, 11, (B, S), generator=torch.Generator().manual_seed(0))
    tokens[1, -2:] = PAD
    return tokens


def test_the_causal_mask_is_boolean(causal_mask):
    assert causal_mask(T).dtype == torch.bool


def test_query_i_may_attend_to_key_j_exactly_when_j_is_at_most_i(causal_mask):
    mask = causal_mask(T)
    assert mask.shape == (T, T)
    for i in range(T):
        for j in range(T):
            assert bool(mask[i, j]) == (j <= i), (i, j)


def test_no_query_may_attend_to_padding_and_every_query_to_real_tokens(padding_mask, tokens):
    mask = padding_mask(tokens, PAD)
    assert mask.shape == (B, 1, 1, S)  # broadcasts over heads and queries
    expected = (tokens != PAD)[:, None, None, :].expand(B, 3, T, S)
    assert torch.equal(mask.expand(B, 3, T, S), expected)
