"""Attention with linear biases, ALiBi (Press et al., 2022, "Train Short, Test Long:
Attention with Linear Biases Enables Input Length Extrapolation", Section 3), a change
made after Vaswani et al., 2017.

No position is added to the embeddings. Instead every head h adds to its scores a penalty
proportional to the distance between query i and key j:

    softmax(q_i K^T / sqrt(d_k) + m_h * [-(i - 1), ..., -2, -1, 0])       (Section 3)

with a fixed, head-specific slope m_h (not learned). "For a model with 8 heads, [the
slopes are] 1/2^1, 1/2^2, ..., 1/2^8": a geometric sequence that starts at 2^(-8/H) and
has that ratio (16 heads interleave the geometric means of neighbouring 8-head slopes).
For H not a power of two the authors' rule (stated for their released code) takes the
2^floor(log2 H) slopes of the nearest smaller power of two and adds the first
H - 2^floor(log2 H) of every other slope of the sequence for twice as many heads (the
ones that fall between the slopes already taken).

The paper's models are causal language models, where j <= i. A query here may also see
later keys (an encoder), so the bias is -m_h * |i - j|: the paper's on every key a causal
query sees, and symmetric beyond (a deviation, needed outside a causal decoder).
The bias is the ``bias`` argument of :func:`transformer_lab.scaled_dot_product_attention`.

Shapes: H heads, T queries, S keys.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from . import checks


def alibi_slopes(num_heads: int) -> list[float]:
    """The head-specific slopes m_1 .. m_H of Press et al. (2022), largest first:
    8 heads -> 1/2, 1/4, ..., 1/256; 16 heads -> 2^-0.5, 2^-1, ..., 2^-8; 6 heads ->
    2^-2, 2^-4, 2^-6, 2^-8 (those of 4 heads), then 2^-1, 2^-3 (from those of 8)."""
    checks.positive_int("num_heads", num_heads)

    def geometric(n: int) -> list[float]:  # n a power of two: start 2^(-8/n), ratio 2^(-8/n)
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    power = 2 ** int(math.floor(math.log2(num_heads)))
    if power == num_heads:
        return geometric(num_heads)
    return geometric(power) + geometric(2 * power)[0::2][: num_heads - power]


def alibi_bias(slopes: Tensor, num_queries: int, num_keys: int, offset: int = 0) -> Tensor:
    """The bias -m_h * |i - j| (H, T, S) for queries at positions ``offset .. offset + T - 1``
    and keys at positions 0 .. S - 1 (a decoding cache holds the first ``offset`` keys).
    ``slopes`` (H,) as from :func:`alibi_slopes`; the result has their dtype and device."""
    checks.tensor("slopes", slopes)
    if slopes.dim() != 1 or not slopes.is_floating_point():
        raise ValueError(f"slopes must be a floating-point (H,) tensor, got {tuple(slopes.shape)} {slopes.dtype}")
    i = torch.arange(num_queries, device=slopes.device, dtype=slopes.dtype) + offset  # (T,) query positions
    j = torch.arange(num_keys, device=slopes.device, dtype=slopes.dtype)  # (S,) key positions
    distance = (i[:, None] - j[None, :]).abs()  # (T, S)
    return -slopes[:, None, None] * distance  # (H, T, S)


class ALiBi(nn.Module):
    """The slopes of ``num_heads`` heads as a non-persistent buffer ``slopes`` (H,), and
    ``forward(num_queries, num_keys, offset=0, like=None) -> bias (H, T, S)`` (on ``like``'s
    device, in float32 unless ``like`` is float64). No parameters."""

    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = checks.positive_int("num_heads", num_heads)
        self.register_buffer("slopes", torch.tensor(alibi_slopes(num_heads), dtype=torch.float64), persistent=False)

    def forward(self, num_queries: int, num_keys: int, offset: int = 0, like: Tensor | None = None) -> Tensor:
        dtype = torch.float64 if like is not None and like.dtype == torch.float64 else torch.float32
        device = self.slopes.device if like is None else like.device
        return alibi_bias(self.slopes.to(device=device, dtype=dtype), num_queries, num_keys, offset)  # (H, T, S)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}"
