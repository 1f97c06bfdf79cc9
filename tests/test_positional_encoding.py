"""Section 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl


@settings(max_examples=25, deadline=None)
@given(length=st.integers(1, 60), half=st.integers(1, 16))
def test_table_equals_the_float64_closed_form(length, half):
    d_model = 2 * half
    table = tl.sinusoidal_positional_encoding(length, d_model, dtype=torch.float64)
    assert table.shape == (length, d_model)
    for pos in range(0, length, max(1, length // 7)):
        for i in range(half):
            angle = pos / 10000 ** (2 * i / d_model)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_even_columns_are_sines_and_odd_columns_cosines():
    table = tl.sinusoidal_positional_encoding(3, 8)
    assert table[0].tolist() == [0.0, 1.0] * 4  # sin 0 = 0, cos 0 = 1: not swapped
    assert table[1, 0].item() == pytest.approx(math.sin(1.0))


def test_wavelengths_form_a_geometric_progression_from_2pi_to_10000_2pi():
    d_model = 64
    table = tl.sinusoidal_positional_encoding(2, d_model, dtype=torch.float64)
    # At pos = 1 each (sin, cos) pair sits at angle omega_i = 2*pi / wavelength_i.
    omega = torch.atan2(table[1, 0::2], table[1, 1::2])
    wavelength = 2 * math.pi / omega
    assert wavelength[0].item() == pytest.approx(2 * math.pi)
    assert wavelength[-1].item() == pytest.approx(2 * math.pi * 10000 ** (1 - 2 / d_model))
    ratios = wavelength[1:] / wavelength[:-1]
    torch.testing.assert_close(ratios, torch.full_like(ratios, 10000 ** (2 / d_model)))


@settings(max_examples=20, deadline=None)
@given(k=st.integers(-30, 30))
def test_pe_of_pos_plus_k_is_one_linear_map_of_pe_of_pos_for_every_pos(k):
    d_model = 16
    table = tl.sinusoidal_positional_encoding(100, d_model, dtype=torch.float64)
    m = tl.relative_position_map(k, d_model)
    lo, hi = max(0, -k), min(100, 100 - k)
    torch.testing.assert_close(table[lo:hi] @ m, table[lo + k : hi + k])


def test_module_adds_the_table_and_follows_offset():
    pe = tl.PositionalEncoding(d_model=12, max_len=20)
    x = torch.randn(2, 5, 12)
    table = tl.sinusoidal_positional_encoding(20, 12)
    torch.testing.assert_close(pe(x), x + table[:5])
    torch.testing.assert_close(pe(x, offset=3), x + table[3:8])


def test_table_is_a_non_persistent_buffer():
    pe = tl.PositionalEncoding(d_model=12, max_len=20)
    assert "table" not in pe.state_dict()
    assert list(pe.parameters()) == []
    assert pe.to(torch.float64)(torch.randn(1, 3, 12, dtype=torch.float64)).dtype == torch.float64


def test_dropout_acts_on_the_sums_in_training_only():
    pe = tl.PositionalEncoding(d_model=12, max_len=20, dropout=0.5)
    x = torch.randn(4, 5, 12)
    assert (pe.train()(x) == 0).any()
    torch.testing.assert_close(pe.eval()(x), x + pe.table[:5])


def test_learned_positions_are_trained_parameters():
    pe = tl.LearnedPositionalEncoding(d_model=12, max_len=20)
    out = pe(torch.zeros(2, 5, 12))
    out.sum().backward()
    assert tl.count_parameters(pe) == 20 * 12
    assert pe.embedding.weight.grad[:5].abs().sum() > 0
    assert pe.embedding.weight.grad[5:].abs().sum() == 0


@pytest.mark.parametrize("cls", [tl.PositionalEncoding, tl.LearnedPositionalEncoding])
def test_sequences_longer_than_max_len_are_rejected(cls):
    pe = cls(d_model=12, max_len=6)
    with pytest.raises(ValueError, match="length 7 is longer than max_len=6"):
        pe(torch.zeros(1, 7, 12))
    with pytest.raises(ValueError, match=r"d_model=12"):
        pe(torch.zeros(1, 3, 10))


def test_odd_d_model_is_rejected_for_sinusoids():
    with pytest.raises(ValueError, match="even"):
        tl.sinusoidal_positional_encoding(5, 7)
