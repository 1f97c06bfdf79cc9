"""GELU and SwiGLU feed-forward networks (Shazeer, 2020, "GLU Variants Improve
Transformer"): FFN_SwiGLU(x) = (Swish(x W) * (x V)) W_2, with d_ff scaled by 2/3."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import transformer_lab as tl

B, L, D, F_ = 2, 7, 12, 20


def test_gelu_network_matches_torchs_linear_gelu_linear():
    ours = tl.GELUFeedForward(D, F_)
    ref = nn.Sequential(nn.Linear(D, F_), nn.GELU(), nn.Linear(F_, D))
    ref[0].load_state_dict(ours.w_1.state_dict())
    ref[2].load_state_dict(ours.w_2.state_dict())
    x = torch.randn(B, L, D)
    torch.testing.assert_close(ours(x), ref(x))
    assert tl.count_parameters(ours) == tl.count_parameters(tl.PositionwiseFeedForward(D, F_))


def test_gelu_is_the_exact_erf_form_not_relu():
    ffn = tl.GELUFeedForward(D, F_).double()
    x = torch.randn(B, L, D, dtype=torch.float64)
    h = ffn.w_1(x)
    gelu = h * 0.5 * (1 + torch.erf(h / 2**0.5))
    torch.testing.assert_close(ffn(x), ffn.w_2(gelu), rtol=1e-12, atol=1e-12)
    relu = tl.PositionwiseFeedForward(D, F_).double()
    relu.load_state_dict(ffn.state_dict())
    assert not torch.allclose(ffn(x), relu(x))


def test_swiglu_is_shazeers_definition_in_float64():
    ffn = tl.SwiGLU(D, F_).double()
    x = torch.randn(B, L, D, dtype=torch.float64)
    gate = x @ ffn.w.weight.T
    swish = gate * torch.sigmoid(gate)  # Swish with beta = 1
    expected = (swish * (x @ ffn.v.weight.T)) @ ffn.w_2.weight.T
    torch.testing.assert_close(ffn(x), expected, rtol=1e-12, atol=1e-12)
    assert [n for n, _ in ffn.named_parameters()] == ["w.weight", "v.weight", "w_2.weight"], "no biases"


def test_swiglu_is_applied_to_each_position_separately_and_identically():
    ffn = tl.SwiGLU(D, F_)
    x = torch.randn(B, L, D)
    perm = torch.randperm(L)
    torch.testing.assert_close(ffn(x[:, perm]), ffn(x)[:, perm])
    torch.testing.assert_close(ffn(x[:, 3:4]), ffn(x)[:, 3:4])


def test_the_hidden_width_is_two_thirds_rounded_to_the_nearest_integer():
    assert [tl.swiglu_d_ff(f) for f in (1, 2, 3, 4, 5, 256, 2048, 3072)] == [1, 1, 2, 3, 3, 171, 1365, 2048]


@settings(max_examples=50, deadline=None)
@given(d_model=st.integers(1, 64), d_ff=st.integers(1, 4096))
def test_swiglu_keeps_the_relu_networks_weights_up_to_rounding_and_biases(d_model, d_ff):
    relu_weights = 2 * d_model * d_ff
    swiglu_weights = 3 * d_model * tl.swiglu_d_ff(d_ff)
    assert abs(swiglu_weights - relu_weights) <= d_model  # 3 * round(2F/3) - 2F is -1, 0 or 1


def test_a_model_with_swiglu_has_about_the_papers_parameters():
    config = tl.TransformerConfig.tiny(40, dropout=0.0)
    paper = tl.Transformer(config)
    swiglu = tl.Transformer(config, feed_forward=tl.SwiGLU.from_config)
    ffn = swiglu.encoder.layers[0].feed_forward
    assert isinstance(ffn, tl.SwiGLU) and ffn.d_ff == 171
    layers = 2 * config.num_layers
    biases = config.d_ff + config.d_model  # the paper's network has them; Shazeer's GLUs do not
    difference = tl.count_parameters(paper) - tl.count_parameters(swiglu)
    assert difference == layers * (biases - config.d_model), "64 * (2 * 256 - 3 * 171) = -64 weights each"
    gelu = tl.Transformer(config, feed_forward=tl.GELUFeedForward.from_config)
    assert tl.count_parameters(gelu) == tl.count_parameters(paper)


def test_dropout_acts_only_in_training():
    ffn = tl.SwiGLU(D, F_, dropout=0.5)
    x = torch.randn(B, L, D)
    torch.testing.assert_close(ffn.eval()(x), ffn(x))
    assert not torch.allclose(ffn.train()(x), ffn.eval()(x))


@pytest.mark.parametrize("cls", [tl.SwiGLU, tl.GELUFeedForward])
def test_bad_arguments_are_named(cls):
    with pytest.raises(ValueError, match="d_ff must be a positive int, got 0"):
        cls(D, 0)
    with pytest.raises(ValueError, match=r"x must have last dimension d_model=12, got \(2, 7, 13\)"):
        cls(D, F_)(torch.randn(B, L, 13))
    with pytest.raises(ValueError, match="dropout must be in \\[0, 1\\), got 1.0"):
        cls(D, F_, dropout=1.0)
    with pytest.raises(ValueError, match="d_ff must be a positive int, got -3"):
        tl.swiglu_d_ff(-3)
