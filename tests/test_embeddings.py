"""Section 3.4: learned embeddings, multiplied by sqrt(d_model)."""

import math

import pytest
import torch

import transformer_lab as tl


def test_embedding_is_the_lookup_scaled_by_sqrt_d_model():
    emb = tl.TokenEmbedding(vocab_size=11, d_model=12)
    tokens = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    out = emb(tokens)
    assert out.shape == (2, 5, 12)
    torch.testing.assert_close(out, emb.weight[tokens] * math.sqrt(12))


def test_scaled_embeddings_start_with_unit_variance_like_the_positions():
    emb = tl.TokenEmbedding(vocab_size=4000, d_model=64)
    out = emb(torch.arange(4000)[None])
    assert out.var().item() == pytest.approx(1.0, rel=0.05)


def test_padding_row_is_zero_and_receives_no_gradient():
    emb = tl.TokenEmbedding(vocab_size=7, d_model=12, padding_idx=0)
    assert torch.count_nonzero(emb.weight[0]) == 0
    emb(torch.tensor([[0, 3, 0, 5]])).sum().backward()
    assert torch.count_nonzero(emb.weight.grad[0]) == 0
    assert torch.count_nonzero(emb.weight.grad[3]) == 12


@pytest.mark.parametrize("bad_id", [-1, 7])
def test_ids_outside_the_vocabulary_are_rejected(bad_id):
    emb = tl.TokenEmbedding(vocab_size=7, d_model=12)
    with pytest.raises(ValueError, match=rf"ids in \[0, 7\).*got id {bad_id}"):
        emb(torch.tensor([[1, bad_id]]))


def test_float_token_ids_are_a_type_error():
    emb = tl.TokenEmbedding(vocab_size=7, d_model=12)
    with pytest.raises(TypeError, match="integer token ids"):
        emb(torch.tensor([[1.0, 2.0]]))


def test_bad_constructor_arguments_are_named():
    with pytest.raises(ValueError, match="vocab_size"):
        tl.TokenEmbedding(0, 12)
    with pytest.raises(ValueError, match="padding_idx"):
        tl.TokenEmbedding(5, 12, padding_idx=5)
