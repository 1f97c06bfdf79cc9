"""Rotary positions (Su et al., 2021, Section 3.2): pair i of a query or key at
position m turns by m * theta_i, theta_i = 10000^(-2i/d); this module pairs the halves."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl

B, H, L, K = 2, 3, 7, 8


def complex_closed_form(x: torch.Tensor, first_position: int, base: float = 10000.0) -> torch.Tensor:
    """z_i = x_i + j x_{i + K/2}; rotated z_i = z_i * e^{j pos theta_i}, in float64."""
    half = x.size(-1) // 2
    z = torch.complex(x[..., :half], x[..., half:])  # (..., L, K/2)
    theta = torch.tensor([base ** (-2 * i / x.size(-1)) for i in range(half)], dtype=torch.float64)
    pos = torch.arange(first_position, first_position + x.size(-2), dtype=torch.float64)[:, None]
    turned = z * torch.polar(torch.ones_like(pos * theta), pos * theta)
    return torch.cat([turned.real, turned.imag], dim=-1)


def interleaved(x: torch.Tensor, first_position: int) -> torch.Tensor:
    """RoFormer's written pairing: features (2i, 2i + 1) turn together (not this module's)."""
    pairs = x.view(*x.shape[:-1], -1, 2)
    z = torch.complex(pairs[..., 0], pairs[..., 1])
    theta = torch.tensor([10000.0 ** (-2 * i / x.size(-1)) for i in range(x.size(-1) // 2)], dtype=x.dtype)
    pos = torch.arange(first_position, first_position + x.size(-2), dtype=x.dtype)[:, None]
    turned = z * torch.polar(torch.ones_like(pos * theta), pos * theta)
    return torch.stack([turned.real, turned.imag], dim=-1).flatten(-2)


@pytest.mark.parametrize("offset", [0, 5, 1000])
@pytest.mark.parametrize("head_dim", [2, 8, 64])
def test_the_rotation_equals_the_complex_closed_form_in_float64(offset, head_dim):
    x = torch.randn(B, H, L, head_dim, dtype=torch.float64)
    rotated = tl.RotaryEmbedding(head_dim).rotate(x, offset)
    torch.testing.assert_close(rotated, complex_closed_form(x, offset), rtol=1e-12, atol=1e-12)


def test_float32_angles_stay_close_to_float64_at_long_positions():
    x = torch.randn(1, 1, L, 64, dtype=torch.float64)
    rotated = tl.RotaryEmbedding(64).rotate(x.float(), offset=4000)
    assert rotated.dtype == torch.float32
    torch.testing.assert_close(rotated.double(), complex_closed_form(x, 4000), rtol=0, atol=2e-3)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 500), n=st.integers(0, 500), shift=st.integers(0, 500), seed=st.integers(0, 2**16))
def test_the_score_of_q_at_m_and_k_at_n_depends_only_on_m_minus_n(m, n, shift, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, K, generator=g, dtype=torch.float64), torch.randn(1, K, generator=g, dtype=torch.float64)
    rope = tl.RotaryEmbedding(K)
    score = (rope.rotate(q, m) * rope.rotate(k, n)).sum()
    shifted = (rope.rotate(q, m + shift) * rope.rotate(k, n + shift)).sum()
    assert shifted.item() == pytest.approx(score.item(), abs=1e-9)


def test_a_rotation_keeps_lengths_and_position_zero_is_the_identity():
    x = torch.randn(B, H, L, K, dtype=torch.float64)
    rope = tl.RotaryEmbedding(K)
    torch.testing.assert_close(rope.rotate(x, 3).norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rope.rotate(x[..., :1, :], 0), x[..., :1, :])


def test_the_pairs_are_the_two_halves_not_neighbours():
    """GPT-NeoX and Llama pair feature i with i + K/2; RoFormer's paper writes (2i, 2i + 1).
    The two differ on the same weights, and are the same rotation after a permutation."""
    x = torch.randn(B, H, L, K, dtype=torch.float64)
    ours = tl.RotaryEmbedding(K).rotate(x, 1)
    assert not torch.allclose(ours, interleaved(x, 1)), "the other pairing gives other vectors"
    halves_to_neighbours = torch.stack([torch.arange(K // 2), torch.arange(K // 2, K)], dim=-1).flatten()
    torch.testing.assert_close(interleaved(x[..., halves_to_neighbours], 1), ours[..., halves_to_neighbours])
    q, k = torch.randn(2, L, K, dtype=torch.float64).unbind(0)
    rope = tl.RotaryEmbedding(K)
    ours_scores = rope.rotate(q) @ rope.rotate(k).mT
    assert not torch.allclose(ours_scores, interleaved(q, 0) @ interleaved(k, 0).mT), "and other scores"


def test_forward_turns_queries_and_keys_from_the_offset_like_the_full_sequence():
    rope = tl.RotaryEmbedding(K)
    q, k = torch.randn(B, H, L, K), torch.randn(B, H, L, K)
    full_q, full_k = rope(q, k)
    step_q, step_k = rope(q[:, :, 4:5], k[:, :, 4:5], offset=4)  # one decoding step at position 4
    torch.testing.assert_close(step_q, full_q[:, :, 4:5])
    torch.testing.assert_close(step_k, full_k[:, :, 4:5])
    assert not torch.allclose(rope(q[:, :, 4:5], k[:, :, 4:5])[0], full_q[:, :, 4:5]), "the offset matters"


def test_no_parameters_and_no_saved_state_and_dtype_kept():
    rope = tl.RotaryEmbedding(K, base=500.0)
    assert list(rope.parameters()) == [] and rope.state_dict() == {}
    assert rope.inverse_frequency[1].item() == pytest.approx(500.0 ** (-2 / K))
    x = torch.randn(B, H, L, K, dtype=torch.bfloat16)
    assert rope.rotate(x).dtype == torch.bfloat16
    assert math.isclose(rope.inverse_frequency[0].item(), 1.0)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"head_dim must be a positive even int \(rotary positions turn pairs "
                                         r"of features\), got 7"):
        tl.RotaryEmbedding(7)
    with pytest.raises(ValueError, match=r"base must be greater than 1 \(theta_i = base\^\(-2i/d\) must "
                                         r"decrease\), got 1.0"):
        tl.RotaryEmbedding(K, base=1.0)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., L, head_dim=8\), got \(2, 3, 7, 6\)"):
        tl.RotaryEmbedding(K).rotate(torch.randn(B, H, L, 6))
    with pytest.raises(ValueError, match="offset must be a non-negative int, got -1"):
        tl.RotaryEmbedding(K).rotate(torch.randn(B, H, L, K), offset=-1)
