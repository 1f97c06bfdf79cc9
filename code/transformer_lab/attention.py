"""Scaled dot-product attention, equation (1) of Vaswani et al., 2017 (Section 3.2.1).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Masks follow one convention throughout the package: boolean, ``True`` = may attend,
broadcastable to the scores' shape (..., T, S). It is the convention of
``torch.nn.functional.scaled_dot_product_attention``. Variants that shift the scores
rather than hide keys (a relative-position bias, ALiBi) pass a floating-point ``bias``
of the same shape, added to Q K^T / sqrt(d_k) before the softmax; it is not in the paper.

Shapes: T queries, S keys and values, K d_k, V d_v; any leading batch dimensions (...).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from . import checks


def _check_broadcast(name: str, t: Tensor, scores_shape: torch.Size | tuple[int, ...]) -> None:
    shape = tuple(scores_shape)
    ok = t.dim() <= len(shape) and all(m in (1, s) for m, s in zip(reversed(t.shape), reversed(shape)))
    if not ok:
        raise ValueError(
            f"{name} of shape {tuple(t.shape)} does not broadcast to the attention scores' "
            f"shape {shape} (..., T queries, S keys)"
        )


def check_mask(mask: Tensor, scores_shape: torch.Size | tuple[int, ...], name: str = "mask") -> None:
    """Raise unless ``mask`` is boolean and broadcastable to ``scores_shape`` (..., T, S)."""
    checks.tensor(name, mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a boolean tensor (True = may attend), got dtype {mask.dtype}")
    _check_broadcast(name, mask, scores_shape)


def check_bias(bias: Tensor, scores_shape: torch.Size | tuple[int, ...], name: str = "bias") -> None:
    """Raise unless ``bias`` is a floating-point tensor broadcastable to ``scores_shape``."""
    checks.tensor(name, bias)
    if not bias.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor added to the scores, got dtype {bias.dtype}")
    _check_broadcast(name, bias, scores_shape)


def _check_inputs(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, bias: Tensor | None) -> None:
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
    scores_shape = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2]) + (query.size(-2), key.size(-2))
    if mask is not None:
        check_mask(mask, scores_shape)
    if bias is not None:
        check_bias(bias, scores_shape)


def attention_weights(
    query: Tensor, key: Tensor, mask: Tensor | None = None,
    *, bias: Tensor | None = None,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)) with masked keys set to exactly zero: (..., T, S).

    query (..., T, K), key (..., S, K); ``mask`` boolean, True = may attend,
    broadcastable to (..., T, S). ``attention_weights(q, k, mask) @ v`` is equation (1).
    ``bias`` (optional, floating point, broadcastable to (..., T, S)) is added to the
    scaled scores before the softmax.

    Masked scores are filled with the dtype's most negative finite value (not -inf, which
    makes a fully masked row NaN, and not -1e9, which is outside float16's range). Then
    the weights are multiplied by the mask, so a query that may see no key gets all-zero
    weights, hence a zero output: finite, never NaN. Half-precision inputs take the
    softmax in float32. Inputs are not checked here (scaled_dot_product_attention and
    MultiHeadAttention check theirs).
    """
    scale = 1.0 / math.sqrt(query.size(-1))  # q first: fp16 headroom
    scores = (query * scale) @ key.transpose(-2, -1)  # (..., T, S)
    if scores.dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()
    scores = scores if bias is None else scores + bias  # (..., T, S)
    if mask is not None:  # the lowest finite value: a row of -inf would be NaN
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # rows sum to 1 over keys
    if mask is not None:
        weights = weights * mask  # a fully masked row: 0, not 1/S
    return weights.to(query.dtype)


def _fused_attn_mask(mask: Tensor | None, bias: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """What PyTorch's kernel takes as ``attn_mask``: the boolean mask, or the bias with
    the masked entries at the lowest finite value (one float tensor carries both)."""
    if bias is None:
        return mask
    bias = bias.to(dtype)  # the fused kernels want the queries' dtype
    return bias if mask is None else bias.masked_fill(~mask, torch.finfo(dtype).min)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    bias: Tensor | None = None,
    on_weights: Callable[[Tensor], None] | None = None,
) -> Tensor:
    """Equation (1): softmax(Q K^T / sqrt(d_k) + bias) V.

    Args:
        query: (..., T, K). key: (..., S, K). value: (..., S, V).
        mask: optional boolean, True = may attend, broadcastable to (..., T, S).
        dropout_p: dropout on the attention weights (0 in evaluation).
        bias: optional floating-point tensor broadcastable to (..., T, S), added to the
            scaled scores (a relative-position variant's; the paper has none).
        on_weights: optional callback; when given, the weights (..., T, S) are computed
            explicitly with :func:`attention_weights` and handed to it before dropout
            (this is how :func:`transformer_lab.record_attention` sees them).

    Returns:
        output (..., T, V), the same on both paths.

    Without ``on_weights`` it runs PyTorch's ``F.scaled_dot_product_attention``, which picks
    a kernel by device and shape: a fused one (on the CPU, flash attention for the model's
    4-D inputs with d_k = d_v) never materialises the (T, S) weights; 2-D inputs, or d_k !=
    d_v, take its unfused math path on the CPU, which scales q and k by d_k^(-1/4) each, so
    the last digits differ from dividing the scores. A fully masked query row gives a zero
    output on both paths.
    """
    _check_inputs(query, key, value, mask, bias)
    checks.fraction("dropout_p", dropout_p)
    if on_weights is None:
        attn_mask = _fused_attn_mask(mask, bias, query.dtype)
        output = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p)
    else:
        weights = attention_weights(query, key, mask, bias=bias)  # (..., T, S)
        on_weights(weights)
        if dropout_p:                   # no Dropout op at all in evaluation (ONNX export)
            weights = F.dropout(weights, dropout_p)
        output = weights @ value  # (..., T, V)
    if mask is not None:
        # The fused kernels disagree on rows with no visible key (zeros on CPU, NaN on
        # some GPU kernels); pin them to zero like attention_weights does.
        output = output.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return output  # (..., T, V)
