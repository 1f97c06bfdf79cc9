"""What the paper leaves unspecified (transformer_lab.teaching.unspecified): the numbers the
appendix table computes, checked against the paper's and against closed forms."""

from __future__ import annotations

import math

import pytest
import torch

import transformer_lab as tl
from transformer_lab.teaching import paper, unspecified as un


def test_footnote_5_reproduces_table_2s_training_costs():
    table2 = {row.model: row.cost_en_de for row in paper.TABLE2 if row.ours}
    for name, model in (("base", "Transformer (base)"), ("big", "Transformer (big)")):
        flops = un.footnote5_flops(**un.TRAINING_TIME[name])
        assert float(f"{flops:.1e}") == table2[model]  # Table 2 prints two significant digits
    assert un.footnote5_flops(1.0, 1, "K80") == pytest.approx(3600 * 2.8e12)
    with pytest.raises(ValueError, match="gpu must be one of"):
        un.footnote5_flops(1.0, 1, "V100")


@pytest.mark.parametrize("d_model", [8, 64, 512])
def test_the_released_layout_concatenates_sines_and_cosines_and_ends_at_10000(d_model):
    table = un.released_positional_encoding(50, d_model)
    half = d_model // 2
    assert table[0].tolist() == [0.0] * half + [1.0] * half  # sin 0, then cos 0
    torch.testing.assert_close(table[:, :half] ** 2 + table[:, half:] ** 2, torch.ones(50, half, dtype=torch.float64))
    # the slowest pair turns by exactly 1/10000 radian per position
    torch.testing.assert_close(table[1, half - 1], torch.tensor(math.sin(1e-4), dtype=torch.float64))
    with pytest.raises(ValueError, match="d_model must be an even int of at least 4"):
        un.released_positional_encoding(5, 5)


@pytest.mark.parametrize("d_model", [16, 512])
def test_section_3_5_and_the_released_code_differ_by_more_than_the_column_order(d_model):
    c = un.compare_with_released_positions(d_model, length=100)
    half = d_model // 2
    assert not c.same_after_reordering and c.largest_difference > 1e-3
    # frequency ratio of pair i: 10000^(i/(h-1) - 2i/d), largest at the last pair: 10000^(1/h)
    assert c.largest_ratio == pytest.approx(10000 ** (1 / half))
    assert c.longest_package == pytest.approx(10000 ** ((d_model - 2) / d_model))
    assert c.longest_released == pytest.approx(10000.0)
    # and the package's table is Section 3.5's formula (the same comparison against itself is exact)
    ours = tl.sinusoidal_positional_encoding(3, d_model, dtype=torch.float64)
    assert ours[1, 2 * (half - 1)] == pytest.approx(math.sin(10000 ** (-(d_model - 2) / d_model)))


def test_the_initial_spreads_are_the_rules_the_package_states():
    spreads = un.initial_spread()
    assert [s.weight for s in spreads][-1] == "LayerNorm gain"
    for s in spreads[:-1]:
        assert s.std == pytest.approx(s.expected, rel=0.03), s
    assert spreads[-1].std == 0.0 and spreads[0].expected == pytest.approx(512**-0.5)


@pytest.mark.parametrize("source_length, extra, expected", [(7, 50, 57), (3, 5, 8)])
def test_an_output_that_never_ends_stops_at_the_source_length_plus_the_extra(source_length, extra, expected):
    assert un.longest_output(source_length, extra) == expected


def test_every_process_draws_its_own_batch_of_at_most_max_tokens():
    one = un.batch_per_update(max_tokens=2000, ranks=1, sentences=2000)
    eight = un.batch_per_update(max_tokens=2000, ranks=8, sentences=2000)
    assert one.largest_batch <= 2000 and one.first_update <= 2000
    assert eight.largest_batch <= 2000 and 2000 < eight.first_update <= 8 * 2000
