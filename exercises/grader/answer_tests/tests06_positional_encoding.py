"""Tests that catch every known mistake of exercise 6: the answer key of test-writing
exercise 6 (`make exercises TESTS=6 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""

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


def test_entries_equal_the_formula_of_section_3_5_computed_by_hand(sinusoidal_positional_encoding):
    table = sinusoidal_positional_encoding(L, D, dtype=torch.float64)
    for pos in (1, 4):
        for i in (0, 1, 5):
            angle = pos / 10000 ** (2 * i / D)
            assert math.isclose(table[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-9)
            assert math.isclose(table[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-9)


def test_each_sin_cos_pair_shares_one_angle(sinusoidal_positional_encoding):
    table = sinusoidal_positional_encoding(50, D, dtype=torch.float64)
    torch.testing.assert_close(table[:, 0::2] ** 2 + table[:, 1::2] ** 2, torch.ones(50, D // 2, dtype=torch.float64))


def test_positions_added_one_at_a_time_with_their_offsets_equal_the_whole_sequence(PositionalEncoding, x):
    module = PositionalEncoding(D, max_len=20).eval()
    steps = torch.cat([module(x[:, t : t + 1], offset=t) for t in range(L)], dim=1)
    torch.testing.assert_close(steps, module(x))


def test_dropout_acts_on_the_sum_of_x_and_the_encoding(PositionalEncoding, sinusoidal_positional_encoding, x):
    torch.manual_seed(0)
    module = PositionalEncoding(D, max_len=20, dropout=0.5).train()
    out = module(x, offset=3)
    expected = 2 * (x + sinusoidal_positional_encoding(20, D)[3 : 3 + L])  # kept entries, divided by 1 - p
    dropped = out == 0
    assert 0 < int(dropped.sum()) < out.numel()
    torch.testing.assert_close(out[~dropped], expected[~dropped])
