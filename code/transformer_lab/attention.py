"""Scaled dot-product attention, equation (1) of Vaswani et al., 2017 (Section 3.2.1).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Masks follow one convention throughout the package: boolean, ``True`` = may attend,
broadcastable to the scores' shape (..., T, S). It is the convention of
``torch.nn.functional.scaled_dot_product_attention``.

Shapes: T queries, S keys and values, K d_k, V d_v; any leading batch dimensions (...).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from . import checks


def check_mask(mask: Tensor, scores_shape: torch.Size | tuple[int, ...], name: str = "mask") -> None:
    """Raise unless ``mask`` is boolean and broadcastable to ``scores_shape`` (..., T, S)."""
    checks.tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor (True = may attend), got dtype {mask.dtype}")
    shape = tuple(scores_shape)
    ok = mask.dim() <= len(shape) and all(
        m in (1, s) for m, s in zip(reversed(mask.shape), reversed(shape))
    )
    if not ok:
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the attention scores' "
            f"shape {shape} (..., T queries, S keys)"
        )


def _check_inputs(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        checks.tensor(name, t)
        if t.dim() < 2:
            raise ValueError(f"{name} must have shape (..., length, dim), got {tuple(t.shape)}")
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must share d_k, got query (..., {query.size(-1)}) "
            f"and key (..., {key.size(-1)})"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(
            f"key and value must have the same length S, got key {tuple(key.shape)} "
            f"and value {tuple(value.shape)}"
        )
    if mask is not None:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
        check_mask(mask, batch + (query.size(-2), key.size(-2)))


def attention_weights(
    query: Tensor, key: Tensor, mask: Tensor | None = None
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) with masked keys set to exactly zero: (..., T, S).

    query (..., T, K), key (..., S, K); ``mask`` boolean, True = may attend,
    broadcastable to (..., T, S). ``attention_weights(q, k, mask) @ v`` is equation (1).

    Masked scores are filled with the dtype's most negative finite value (not -inf, which
    makes a fully masked row NaN, and not -1e9, which is outside float16's range). Then
    the weights are multiplied by the mask, so a query that may see no key gets all-zero
    weights, hence a zero output: finite, never NaN. Half-precision inputs take the
    softmax in float32. Inputs are not checked here (scaled_dot_product_attention and
    MultiHeadAttention check theirs).
    """
    scale = 1.0 / math.sqrt(query.size(-1))
    # Scaling q first is cheaper than scaling the (T, S) scores.
    scores = (query * scale) @ key.transpose(-2, -1)  # (..., T, S)
    if scores.dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()
    if mask is not None:
        lowest = torch.finfo(scores.dtype).min  # finite, unlike -inf
        scores = scores.masked_fill(~mask, lowest)
    weights = torch.softmax(scores, dim=-1)  # rows sum to 1 over keys
    if mask is not None:
        weights = weights * mask  # exact zeros; fully masked rows: 0
    return weights.to(query.dtype)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> Tensor:
    """Equation (1): softmax(Q K^T / sqrt(d_k)) V.

    Args:
        query: (..., T, K). key: (..., S, K). value: (..., S, V).
        mask: optional boolean, True = may attend, broadcastable to (..., T, S).
        dropout_p: dropout on the attention weights (0 in evaluation).

    Returns:
        output (..., T, V).

    Runs PyTorch's fused ``F.scaled_dot_product_attention``, which never materialises
    the (T, S) weights; :func:`attention_weights` computes them when they are wanted
    (``attention_weights(q, k, mask) @ v`` is the same output). A fully masked query
    row gives a zero output, as it does there.
    """
    _check_inputs(query, key, value, mask)
    checks.fraction("dropout_p", dropout_p)
    output = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=dropout_p)
    if mask is not None:
        # The fused kernels disagree on rows with no visible key (zeros on CPU, NaN on
        # some GPU kernels); pin them to zero like attention_weights does.
        output = output.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return output  # (..., T, V)
