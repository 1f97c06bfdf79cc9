"""Test-writing exercise 2: the tests that catch a wrong mask (Sections 3.1 and 3.2.3).
Check them with `make exercises TESTS=2`.

Here you do not write ``causal_mask`` and ``padding_mask`` (exercise 2): you write the tests
that would catch every wrong version of them. The grader runs your tests against the
package's code (they must all pass there: a test that fails on correct code is a false alarm)
and against every known mistake of exercise 2 (each should make a test fail), and says which
mistakes your tests catch and, for each survivor, what property would catch it.

Rules of the game: reach the code under test only through the fixtures ``causal_mask`` and
``padding_mask`` (the grader swaps what they return); check what the masks must do (the
project's convention: boolean, True = may attend, broadcastable to the scores (B, H, T, S));
a test that compares with transformer_lab's own masks, the answer key, is not counted.

Run them alone with ``pytest exercises/tests02_masks.py`` (they test the package then).
"""

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


# Your tests below. Ideas: which keys query i may see; the diagonal; the padding positions
# as keys; the shape a padding mask needs to broadcast against (B, H, T, S).
