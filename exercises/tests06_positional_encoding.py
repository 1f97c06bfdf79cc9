"""Test-writing exercise 6: the tests that catch a wrong positional encoding (Section 3.5).
Check them with `make exercises TESTS=6`.

Here you do not write ``sinusoidal_positional_encoding`` and ``PositionalEncoding`` (exercise
6): you write the tests that would catch every wrong version of them. The grader runs your
tests against the package's code (they must all pass there: a test that fails on correct code
is a false alarm) and against every known mistake of exercise 6 (each should make a test
fail), and says which mistakes your tests catch and, for each survivor, what property would
catch it.

Rules of the game: reach the code under test only through the fixtures
``sinusoidal_positional_encoding`` and ``PositionalEncoding`` (the grader swaps them); check
what Section 3.5 states, entries computed by hand, or properties (each sin/cos pair shares one
angle, PE(pos + k) is a linear function of PE(pos)). A test that compares with
transformer_lab's own table, the answer key, is not counted.

Run them alone with ``pytest exercises/tests06_positional_encoding.py``.
"""

from __future__ import annotations

import math

import pytest
import torch

from exercises.grader.testing import under_test

B, L, D = 2, 5, 12


@pytest.fixture
def sinusoidal_positional_encoding():
    """sinusoidal_positional_encoding(length, d_model, *, dtype=torch.float32, device=None) -> (length, d_model)."""
    return under_test("sinusoidal_positional_encoding")


@pytest.fixture
def PositionalEncoding():
    """PositionalEncoding(d_model, max_len=5000, dropout=0.0); forward(x (B, L, D), offset=0)
    -> Dropout(x + PE[offset : offset + L])."""
    return under_test("PositionalEncoding")


@pytest.fixture
def x():
    return torch.randn(B, L, D, generator=torch.Generator().manual_seed(0))


def test_row_0_is_sin_0_and_cos_0(sinusoidal_positional_encoding):
    table = sinusoidal_positional_encoding(L, D)
    assert table[0].tolist() == [0.0, 1.0] * (D // 2)


# Your tests below. Ideas: entries computed by hand in later columns; one angle per sin/cos
# pair; the module with an offset, one position at a time as decoding with a cache feeds it;
# dropout in training.
