"""Exercise 3: splitting the features into heads, and merging them back (Section 3.2.2).
Check it with `make exercises N=3`.

The report of `make exercises` names the slide that explains it.

The package computes all h heads at once: one (D, H*K) projection whose output is split
into heads. This exercise asks for the two reshapes only; exercise 4 is the whole module.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    """The two reshapes of multi-head attention; ``__init__`` is written for you."""

    def __init__(self, d_model: int, num_heads: int, d_k: int | None = None, d_v: int | None = None,
                 dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads

    def split_heads(self, x: Tensor, head_dim: int) -> Tensor:
        """(B, L, H*head_dim) -> (B, H, L, head_dim): head h gets features
        h*head_dim .. (h+1)*head_dim - 1 of every position (its own slice W_h of the projection).
        """
        raise NotImplementedError

    def merge_heads(self, x: Tensor) -> Tensor:
        """(B, H, T, Kv) -> (B, T, H*Kv): Concat(head_1, ..., head_h) along the features
        of each position, the inverse of ``split_heads``.
        """
        raise NotImplementedError
