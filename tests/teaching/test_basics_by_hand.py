"""Claims about issue 30's worked examples (transformer_lab.teaching): layer normalisation step
by step equals nn.LayerNorm, the next-token loss equals F.cross_entropy with padding ignored,
and the output layer the slide recomputes by hand is the model's own."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl
from transformer_lab import teaching as tt


# --------------------------------------------------------------------------- layer norm, step by step


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 4), D=st.integers(2, 12), eps=st.sampled_from([0.0, 1e-5, 0.1]), seed=st.integers(0, 2**16))
def test_each_layer_norm_step_is_its_formula_in_float64(rows, D, eps, seed):
    # the end result equals nn.LayerNorm (tests/teaching/test_by_hand.py); here every step on the way
    g = torch.Generator().manual_seed(seed)
    x, gain, bias = torch.randn(rows, D, generator=g) * 3 + 1, torch.randn(D, generator=g), torch.randn(D, generator=g)
    s = tt.layer_norm_steps(x, gain, bias, eps=eps)
    x64 = x.double()
    mean = x64.sum(-1, keepdim=True) / D
    variance = ((x64 - mean) ** 2).sum(-1, keepdim=True) / D  # divided by D, not D - 1
    normalised = (x64 - mean) / (variance + eps).sqrt()
    for step, reference in [(s.mean, mean), (s.variance, variance), (s.normalised, normalised),
                            (s.output, gain.double() * normalised + bias.double())]:
        torch.testing.assert_close(step, reference.float(), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(s.output, tt.layer_norm(x, gain, bias, eps=eps))


def test_the_slides_vector_gives_round_numbers_a_class_can_check():
    # the slide's x: mean 1, variance 4, so (x - 1) / 2 up to eps
    x = torch.tensor([5.0, -1, 1, -1, 3, -1, 1, 1])
    gain, bias = torch.tensor([0.5, 1, 1, 1, 2, 1, 1, 1]), torch.tensor([0.0, 0, 0, 0, 0, 0, 1, 0])
    s = tt.layer_norm_steps(x, gain, bias)
    assert s.mean.item() == 1.0 and s.variance.item() == 4.0
    torch.testing.assert_close(s.normalised, (x - 1) / 2, atol=1e-5, rtol=0)
    torch.testing.assert_close(s.output, torch.tensor([1.0, -1, 0, -1, 2, -1, 1, 0]), atol=1e-5, rtol=0)


def test_layer_norm_steps_name_a_bias_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"bias must have shape \(D,\) = \(4,\), got torch.Size\(\[5\]\)"):
        tt.layer_norm_steps(torch.zeros(4), torch.ones(4), torch.zeros(5))


# --------------------------------------------------------------------------- the loss


@settings(max_examples=30, deadline=None)
@given(B=st.integers(1, 3), T=st.integers(1, 5), V=st.integers(2, 7), seed=st.integers(0, 2**16))
def test_next_token_loss_is_cross_entropy_without_the_padding(B, T, V, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, T, V, generator=g) * 2
    target = torch.randint(1, V, (B, T), generator=g)
    target[0, T - 1:] = 0  # padding at the end of the first sentence
    if (target != 0).sum() == 0:
        target[-1, 0] = 1
    expected = F.cross_entropy(logits.reshape(-1, V), target.reshape(-1), ignore_index=0)
    torch.testing.assert_close(tt.next_token_loss(logits, target, pad_id=0), expected)
    torch.testing.assert_close(tt.next_token_loss(logits, target), tl.LabelSmoothingLoss(0.0)(logits, target))


def test_padding_changes_nothing_and_uniform_logits_give_log_v():
    logits, target = torch.zeros(2, 3, 6), torch.tensor([[1, 2, 0], [3, 0, 0]])  # 3 tokens, 3 padding
    assert tt.next_token_loss(logits, target).item() == pytest.approx(math.log(6))
    changed = logits.clone()
    changed[0, 2] = torch.randn(6) * 5  # the padded positions' logits
    changed[1, 1:] = torch.randn(2, 6) * 5
    assert tt.next_token_loss(changed, target).item() == pytest.approx(math.log(6))


def test_next_token_loss_names_what_it_cannot_use():
    with pytest.raises(ValueError, match=r"logits must be \(B, T, V\) and target \(B, T\), got \(2, 3\) and \(2,\)"):
        tt.next_token_loss(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"at least one token that is not padding \(pad_id=0\)"):
        tt.next_token_loss(torch.zeros(1, 2, 4), torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="logits and target must be torch.Tensors, got list and Tensor"):
        tt.next_token_loss([[0.0]], torch.zeros(1, 1, dtype=torch.long))


# --------------------------------------------------------------------------- the output layer


def tiny_model(seed: int, tie: bool = True) -> tl.Transformer:
    torch.manual_seed(seed)
    config = tl.TransformerConfig.tiny(17, 11, d_model=12, num_heads=3, d_ff=20, tie_embeddings=tie)
    return tl.Transformer(config).eval()


@pytest.mark.parametrize("seed", range(4))
def test_the_output_layer_by_hand_is_the_models_last_logits(seed):
    model = tiny_model(seed)
    with torch.no_grad():
        model.output_projection.bias.normal_()  # a bias that is not zero, so forgetting it fails
    src, prefix = torch.randint(4, 17, (1, 7), generator=torch.Generator().manual_seed(seed)), [tl.BOS_ID, 5, 6]
    step = tt.output_layer(model, src, prefix)
    with torch.no_grad():
        expected = model(src, torch.tensor([prefix]))[0, -1]  # (V,)
        E, b = model.tgt_embed.weight, model.output_projection.bias
        torch.testing.assert_close(step.logits, expected)
        torch.testing.assert_close(step.hidden @ E.T + b, expected)  # the slide's formula, with the tied matrix
        torch.testing.assert_close(step.probs, expected.softmax(-1))
    assert step.hidden.shape == (12,) and step.probs.shape == (11,)
    assert not model.output_projection._forward_hooks  # the hook is gone


def test_the_tied_output_weight_is_the_target_embedding_itself():
    tied, untied = tiny_model(0), tiny_model(0, tie=False)
    names = lambda m, w: [n for n, p in m.named_parameters(remove_duplicate=False) if p is w]
    assert names(tied, tied.tgt_embed.weight) == ["tgt_embed.embedding.weight", "output_projection.weight"]
    assert names(untied, untied.tgt_embed.weight) == ["tgt_embed.embedding.weight"]


def test_output_layer_names_a_bad_prefix():
    with pytest.raises(ValueError, match=r"prefix must be a non-empty list of token ids, got \[\]"):
        tt.output_layer(tiny_model(0), torch.tensor([[4, 5]]), [])
    with pytest.raises(ValueError, match=r"src must be a \(1, S\) tensor"):
        tt.output_layer(tiny_model(0), torch.tensor([[4, 5], [6, 7]]), [tl.BOS_ID])
