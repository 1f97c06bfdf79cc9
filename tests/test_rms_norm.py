"""RMSNorm (Zhang & Sennrich, 2019, Section 3): x / sqrt(mean(x^2) + eps) * g, and
use_rms_norm, which swaps it for every LayerNorm of a built model."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import transformer_lab as tl

B, S, T, D, H = 2, 7, 5, 12, 3


def with_random_gain(norm):
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    return norm


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
@pytest.mark.parametrize("shape", [(D,), (S, D), (B, S, D)])
def test_equals_torch_rms_norm_with_the_same_weight(eps, shape):
    ours = with_random_gain(tl.RMSNorm(D, eps))
    ref = nn.RMSNorm(D, eps=eps)
    ref.load_state_dict(ours.state_dict())  # one parameter, "weight", in both
    x = 3 * torch.randn(shape) + 1
    torch.testing.assert_close(ours(x), ref(x))


def test_the_definition_in_float64():
    norm = with_random_gain(tl.RMSNorm(D, eps=1e-6)).double()
    x = torch.randn(B, S, D, dtype=torch.float64)
    rms = (x.pow(2).sum(-1, keepdim=True) / D + 1e-6).sqrt()
    torch.testing.assert_close(norm(x), x / rms * norm.weight, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(1e-2, 1e2), seed=st.integers(0, 2**16))
def test_it_re_scales_without_re_centring(scale, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(S, D, generator=g, dtype=torch.float64) + 2.0  # features with a mean far from 0
    norm = tl.RMSNorm(D, eps=1e-12).double()
    torch.testing.assert_close(norm(scale * x), norm(x))  # invariant to re-scaling the input
    rms = norm(x).pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones(S, dtype=torch.float64))  # unit RMS with gain 1
    assert bool((norm(x).mean(-1).abs() > 0.5).all()), "the mean is not removed"


def test_it_equals_layer_norm_on_features_whose_mean_is_zero():
    x = torch.randn(B, S, D)
    x = x - x.mean(-1, keepdim=True)
    layer_norm, rms_norm = nn.LayerNorm(D, eps=1e-5), tl.RMSNorm(D, eps=1e-5)
    torch.testing.assert_close(rms_norm(x), layer_norm(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_normalised_in_float32(dtype):
    norm = with_random_gain(tl.RMSNorm(D))
    x = 100 * torch.randn(B, S, D)  # squares beyond float16's range
    out = norm.to(dtype)(x.to(dtype))
    assert out.dtype == dtype and bool(torch.isfinite(out).all())
    torch.testing.assert_close(out.float(), norm.float()(x.to(dtype).float()), atol=2e-2, rtol=2e-2)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="d_model must be a positive int, got 0"):
        tl.RMSNorm(0)
    with pytest.raises(ValueError, match="eps must be positive and finite, got 0"):
        tl.RMSNorm(D, eps=0)
    with pytest.raises(ValueError, match=r"x must have last dimension d_model=12, got \(2, 7, 13\)"):
        tl.RMSNorm(D)(torch.randn(B, S, 13))
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        tl.RMSNorm(D)([1.0] * D)


def paper_model(norm_first=False):
    config = tl.TransformerConfig(23, 19, d_model=D, num_heads=H, d_ff=20, num_layers=2, dropout=0.0,
                                  norm_first=norm_first)
    return tl.Transformer(config)


@pytest.mark.parametrize("norm_first", [False, True])
def test_use_rms_norm_replaces_every_layer_norm_and_keeps_the_names(norm_first):
    model = paper_model(norm_first)
    norms = {name: m for name, m in model.named_modules() if isinstance(m, nn.LayerNorm)}
    assert len(norms) == 2 * 2 + 2 * 3 + (2 if norm_first else 0)
    assert tl.use_rms_norm(model) is model
    assert not any(isinstance(m, nn.LayerNorm) for m in model.modules())
    for name, old in norms.items():
        new = model.get_submodule(name)
        assert isinstance(new, tl.RMSNorm) and (new.d_model, new.eps) == (D, old.eps)
    keys = set(model.state_dict())
    assert "decoder.layers.1.norm3.weight" in keys and "decoder.layers.1.norm3.bias" not in keys
    src, tgt = torch.randint(4, 23, (B, S)), torch.randint(4, 19, (B, T))
    model(src, tgt).sum().backward()
    assert all(p.grad is not None for p in model.parameters()), "every gain receives a gradient"


def test_use_rms_norm_needs_a_layer_norm():
    with pytest.raises(ValueError, match="model must contain an nn.LayerNorm to replace, got Linear"):
        tl.use_rms_norm(nn.Linear(3, 3))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got str"):
        tl.use_rms_norm("model")
