"""Attention masks (Sections 3.1 and 3.2.3 of Vaswani et al., 2017).

One convention everywhere: boolean, ``True`` = may attend, broadcastable to the attention
scores' shape (B, H, T, S). Masks combine with ``&``: ``padding_mask(tgt) & causal_mask(T)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import checks


def causal_mask(size: int, device=None) -> Tensor:
    """Bool (size, size), True on and below the diagonal (Section 3.2.3 masks inside attention).

    Query position i may attend to key positions 0..i. Section 3.1 (the decoder): "This
    masking, combined with fact that the output embeddings are offset by one position,
    ensures that the predictions for position i can depend only on the known outputs at
    positions less than i."
    """
    if not checks.tracing():  # torch.compile or an exporter passes a symbolic size, not an int
        checks.non_negative_int("size", size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()  # (T, T)


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Bool (B, 1, 1, S), True where ``tokens != pad_id``: no query attends to padding.

    The two singleton dimensions broadcast over heads and queries.
    """
    if not isinstance(tokens, Tensor) or tokens.dim() != 2:
        shape = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
        raise ValueError(f"tokens must be a (B, S) tensor of token ids, got {shape}")
    return (tokens != pad_id)[:, None, None, :]  # (B, 1, 1, S)
