"""Positional encoding (Section 3.5 of Vaswani et al., 2017).

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

"We chose this function because we hypothesized it would allow the model to easily learn
to attend by relative positions, since for any fixed offset k, PE(pos+k) can be
represented as a linear function of PE(pos)." Learned positional embeddings are the
alternative of Table 3, row (E).

Shapes: B batch, L sequence length, D d_model.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from . import checks


def _check_d_model(d_model: int) -> None:
    checks.positive_even_int("d_model", d_model, "sin/cos pairs")


def sinusoidal_positional_encoding(
    length: int, d_model: int, *, dtype: torch.dtype = torch.float32, device=None
) -> Tensor:
    """The paper's table of sinusoids, shape (length, d_model) (Section 3.5).

    Even columns hold sines, odd columns cosines; column pair i has wavelength
    2*pi * 10000^(2i/d_model), a geometric progression from 2*pi to 10000*2*pi.
    Computed in float64 and cast to ``dtype``.
    """
    checks.non_negative_int("length", length)
    _check_d_model(d_model)
    position = torch.arange(length, dtype=torch.float64, device=device)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (D/2,)
    frequency = torch.exp(-math.log(10000.0) * two_i / d_model)  # 1 / 10000^(2i/D)
    angle = position * frequency  # (L, D/2)
    table = torch.empty(length, d_model, dtype=torch.float64, device=device)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return table.to(dtype)


def relative_position_map(k: int, d_model: int) -> Tensor:
    """The (D, D) matrix M_k with PE(pos + k) = PE(pos) @ M_k for every pos (Section 3.5).

    Each (sin, cos) pair rotates by the angle k * frequency_i: a block-diagonal rotation
    that depends on the offset k only, never on pos.
    """
    _check_d_model(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k * torch.exp(-math.log(10000.0) * two_i / d_model)  # (D/2,)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    # Row vector convention: [sin a, cos a] @ [[cos b, -sin b], [sin b, cos b]]
    #                      = [sin(a + b), cos(a + b)].
    m[0::2, 0::2] = torch.diag(cos)
    m[0::2, 1::2] = torch.diag(-sin)
    m[1::2, 0::2] = torch.diag(sin)
    m[1::2, 1::2] = torch.diag(cos)
    return m


class _Positions(nn.Module):
    """Shared checks and dropout for both kinds of positional encoding."""

    def __init__(self, d_model: int, max_len: int, dropout: float):
        super().__init__()
        self.d_model = d_model
        self.max_len = checks.positive_int("max_len", max_len)
        self.dropout = nn.Dropout(checks.fraction("dropout", dropout))

    def positions(self, length: int, offset: int, x: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Return ``Dropout(x + P[offset : offset + L])`` for ``x`` of shape (B, L, D).

        Dropout on the sums is the paper's (Section 5.4). ``offset`` is the position of
        the first row of ``x``: incremental decoding feeds one new token at a time.
        """
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(
                f"x must have shape (B, L, d_model={self.d_model}), got {tuple(x.shape)}"
            )
        length = x.size(1)
        if offset + length > self.max_len:
            raise ValueError(
                f"sequence of length {offset + length} is longer than max_len={self.max_len}"
            )
        return self.dropout(x + self.positions(length, offset, x))  # (B, L, D)


class PositionalEncoding(_Positions):
    """Add the sinusoidal table to embeddings, then dropout (Sections 3.5 and 5.4).

    The table is a non-persistent buffer: it follows the module's device and is not saved
    in ``state_dict`` (it is a function of the shape, not a parameter).
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        _check_d_model(d_model)
        super().__init__(d_model, max_len, dropout)
        self.register_buffer(
            "table", sinusoidal_positional_encoding(max_len, d_model), persistent=False
        )

    def positions(self, length: int, offset: int, x: Tensor) -> Tensor:
        return self.table[offset : offset + length].to(x.dtype)  # (L, D)


class LearnedPositionalEncoding(_Positions):
    """Learned position embeddings, Table 3 row (E): "nearly identical results"."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        checks.positive_int("d_model", d_model)
        super().__init__(d_model, max_len, dropout)
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=1.0)

    def positions(self, length: int, offset: int, x: Tensor) -> Tensor:
        index = torch.arange(offset, offset + length, device=x.device)
        return self.embedding(index).to(x.dtype)  # (L, D)
