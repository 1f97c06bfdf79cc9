"""Masks (Sections 3.1, 3.2.3): boolean, True = may attend."""

import pytest
import torch

import transformer_lab as tl


def test_causal_mask_lets_position_i_see_exactly_positions_up_to_i():
    mask = tl.causal_mask(5)
    assert mask.dtype == torch.bool and mask.shape == (5, 5)
    for i in range(5):
        for j in range(5):
            assert bool(mask[i, j]) == (j <= i), (i, j)


def test_causal_mask_is_not_off_by_one():
    mask = tl.causal_mask(4)
    assert mask.diagonal().all(), "a token must see itself"
    assert not mask.diagonal(1).any(), "a token must not see the next one"


def test_padding_mask_hides_pad_keys_and_broadcasts_over_heads_and_queries():
    tokens = torch.tensor([[5, 6, 7, 0, 0], [5, 0, 7, 8, 9]])
    mask = tl.padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 5)
    assert mask[0, 0, 0].tolist() == [True, True, True, False, False]
    assert mask[1, 0, 0].tolist() == [True, False, True, True, True]


def test_masks_combine_with_and():
    tokens = torch.tensor([[5, 6, 0]])
    combined = tl.padding_mask(tokens, 0) & tl.causal_mask(3)
    assert combined.shape == (1, 1, 3, 3)
    assert combined[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="size must be a non-negative int"):
        tl.causal_mask(-1)
    with pytest.raises(ValueError, match=r"tokens must be a \(B, S\) tensor"):
        tl.padding_mask(torch.zeros(3, dtype=torch.long), 0)
