"""Rotary position embedding (Su et al., 2021, "RoFormer: Enhanced Transformer with Rotary
Position Embedding", Section 3.2), a change made after Vaswani et al., 2017.

The paper adds a position's sinusoids to its embedding once, below the first layer
(Section 3.5), and notes that PE(pos + k) is a linear function of PE(pos): a rotation of
every (sin, cos) pair by the angle k * theta_i. Rotary positions apply that rotation to
the queries and keys themselves, in every attention layer: the pair i of a head's query
at position m turns by m * theta_i, of a key at position n by n * theta_i, with

    theta_i = base^(-2i / d),  i = 0 .. d/2 - 1   (base = 10000, d = the head's width d_k)

so that q_m . k_n = Re sum_i z_i(q) conj(z_i(k)) e^{j (m - n) theta_i} depends on the
positions only through m - n (their Section 3.2). Values are not rotated, and no table is added
to the embeddings. Pair i as a complex number z_i = x_a + j x_b:
rotated z_i = z_i * e^{j * pos * theta_i}.

Which features form a pair: this module pairs feature i with feature i + d/2 (the two
halves of the head), as GPT-NeoX and Llama do. RoFormer's paper writes the pairs as
neighbours, (2i, 2i + 1) ("interleaved"). The two are the same rotation after a fixed
permutation of the features, so a model trains equally well with either; but weights
trained with one pairing give other scores under the other (the tests check both facts).

Shapes: B batch, H heads, L positions, K d_k (even); any leading dimensions (...).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import checks


def rotate_half(x: Tensor) -> Tensor:
    """(x_a, x_b) -> (-x_b, x_a) on the two halves of the last dimension: multiplying each
    pair z = x_a + j x_b by j."""
    half = x.size(-1) // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (..., K)


class RotaryEmbedding(nn.Module):
    """Rotate queries and keys by their positions (Su et al., 2021, Section 3.2).

    ``RotaryEmbedding(head_dim, base=10000)``; ``forward(q (..., T, K), k (..., T', K),
    offset=0) -> (q, k)`` rotated, row t at position ``offset + t``. A decoding cache
    passes ``offset`` = the number of positions already cached, so that the new token is
    rotated by its true position (the cached keys were rotated when they were new).
    :meth:`rotate` turns one tensor. Pairs are the two halves of the head (GPT-NeoX,
    Llama); see the module docstring. ``inverse_frequency`` (K/2,) holds theta_i, a
    non-persistent buffer. Angles are computed in float32 (float64 for float64 inputs),
    and the result has the input's dtype. No parameters.
    """

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        self.head_dim = checks.positive_even_int("head_dim", head_dim, "rotary positions turn pairs of features")
        self.base = checks.positive_number("base", base)
        if base <= 1:
            raise ValueError(f"base must be greater than 1 (theta_i = base^(-2i/d) must decrease), got {base!r}")
        exponent = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim  # 2i / d
        self.register_buffer("inverse_frequency", base**-exponent, persistent=False)  # (K/2,) theta_i

    def angles(self, length: int, offset: int, like: Tensor) -> Tensor:
        """pos * theta_i for pos = offset .. offset + length - 1: (length, K/2)."""
        dtype = torch.float64 if like.dtype == torch.float64 else torch.float32
        position = torch.arange(length, device=like.device, dtype=dtype) + offset  # (L,)
        return position[:, None] * self.inverse_frequency.to(device=like.device, dtype=dtype)  # (L, K/2)

    def cos_sin(self, length: int, offset: int, like: Tensor) -> tuple[Tensor, Tensor]:
        """cos and sin of every feature's angle, (length, K): pair i is features i and i + K/2."""
        angle = self.angles(length, offset, like)  # (L, K/2)
        angle = torch.cat([angle, angle], dim=-1)  # (L, K)
        return angle.cos(), angle.sin()

    @staticmethod
    def turn(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        """z * e^{j a} = (x_a cos a - x_b sin a) + j (x_b cos a + x_a sin a), for every pair."""
        h = x.to(cos.dtype)
        return (h * cos + rotate_half(h) * sin).to(x.dtype)  # (..., L, K)

    def _check(self, name: str, x: Tensor, offset: int) -> None:
        checks.tensor(name, x)
        if x.dim() < 2 or x.size(-1) != self.head_dim:
            raise ValueError(f"{name} must have shape (..., L, head_dim={self.head_dim}), got {tuple(x.shape)}")
        if not checks.exporting():
            checks.non_negative_int("offset", offset)

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        """``x`` (..., L, K) with row t turned by the angles of position ``offset + t``."""
        self._check("x", x, offset)
        return self.turn(x, *self.cos_sin(x.size(-2), offset, x))

    def forward(self, q: Tensor, k: Tensor, offset: int = 0) -> tuple[Tensor, Tensor]:
        """q (..., T, K) and k (..., T', K), both rotated from position ``offset`` (one
        table of angles for both when T = T', as in self-attention)."""
        self._check("q", q, offset)
        self._check("k", k, offset)
        if k.size(-2) != q.size(-2) or k.dtype != q.dtype:
            return self.rotate(q, offset), self.rotate(k, offset)
        cos, sin = self.cos_sin(q.size(-2), offset, q)  # (T, K) each
        return self.turn(q, cos, sin), self.turn(k, cos, sin)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base:g}"
