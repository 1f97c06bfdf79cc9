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
import warnings
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.weak import WeakIdKeyDictionary

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


def _additive_mask(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """A boolean mask as PyTorch's fused kernels take it: a float tensor of the queries'
    dtype, 0 where a key may be attended and the dtype's lowest finite value where not
    (PyTorch would turn a boolean mask into -inf itself, in more kernels, on every call;
    the finite fill keeps a fully masked row finite in the backward pass too)."""
    return torch.full_like(mask, torch.finfo(dtype).min, dtype=dtype).masked_fill_(mask, 0.0)  # (..., T, S)


# One entry per live boolean mask: the model hands the same mask to every layer (the source
# mask to 12 attention calls of the base model, 6 more per decoding step), so its float form
# and its visible rows are made once. Keyed by the tensor's identity, held weakly (an entry
# goes with its mask), and checked against the mask's version counter (an in-place edit
# makes a new entry) and the dtype asked for. Eager only: torch.compile fuses the work.
_PREPARED_MASKS = WeakIdKeyDictionary()


def _prepared_mask(mask: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """(additive float mask (..., T, S), visible rows (..., T, 1)) of a boolean ``mask``."""
    if checks.tracing() or mask.is_inference():  # traced, or no version counter to check
        return _additive_mask(mask, dtype), mask.any(dim=-1, keepdim=True)
    key = (mask._version, dtype)
    entry = _PREPARED_MASKS.get(mask)
    if entry is None or entry[0] != key:
        entry = (key, _additive_mask(mask, dtype), mask.any(dim=-1, keepdim=True))
        _PREPARED_MASKS[mask] = entry
    return entry[1], entry[2]


def _explicit_attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float,
                        bias: Tensor | None, on_weights: Callable[[Tensor], None]) -> Tensor:
    """Equation (1) with the weights formed and handed to ``on_weights`` (record_attention)."""
    weights = attention_weights(query, key, mask, bias=bias)  # (..., T, S)
    on_weights(weights)
    if dropout_p:                   # no Dropout op at all in evaluation (ONNX export)
        weights = F.dropout(weights, dropout_p)
    return weights @ value  # (..., T, V)


@torch.compiler.disable
def _explicit_attention_in_eager(*args) -> Tensor:
    """The recording path inside ``torch.compile``d code: it runs in eager mode (a Python
    callback receives each tensor), and says so (once per process, Python's default)."""
    warnings.warn("record_attention: the recorded attention modules run in eager mode under torch.compile "
                  "(a graph break around each; the rest of the model stays compiled)", stacklevel=2)
    return _explicit_attention(*args)


def attend(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None, dropout_p: float = 0.0,
    *, bias: Tensor | None = None, on_weights: Callable[[Tensor], None] | None = None,
) -> Tensor:
    """:func:`scaled_dot_product_attention` without its input checks: for callers that
    have checked their inputs already (:class:`MultiHeadAttention` checks its own), so
    that the hot path runs no Python it does not need."""
    attn_mask, visible = (None, None) if mask is None else _prepared_mask(mask, query.dtype)
    if on_weights is None:
        if bias is not None:  # the bias, with the masked keys at the lowest finite value
            bias = bias.to(query.dtype)
            attn_mask = bias if mask is None else bias.masked_fill(~mask, torch.finfo(query.dtype).min)
        output = F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p)
    elif torch.compiler.is_compiling():
        output = _explicit_attention_in_eager(query, key, value, mask, dropout_p, bias, on_weights)
    else:
        output = _explicit_attention(query, key, value, mask, dropout_p, bias, on_weights)
    if visible is not None:
        # A query that may see no key gets a zero output on every path and kernel (the
        # fused kernel averaged the values there): one select over the output, which
        # torch.compile fuses with its neighbours.
        output = torch.where(visible, output, 0.0)
    return output  # (..., T, V)


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
            (this is how :func:`transformer_lab.record_attention` sees them). Under
            ``torch.compile`` this path runs in eager mode and warns once.

    Returns:
        output (..., T, V), the same on both paths.

    Without ``on_weights`` it runs PyTorch's ``F.scaled_dot_product_attention``, which picks
    a kernel by device and shape: a fused one (on the CPU, flash attention for the model's
    4-D inputs with d_k = d_v; on an H100/H200, cuDNN's) never materialises the (T, S)
    weights; 2-D inputs, or d_k != d_v, take its unfused math path on the CPU, which scales
    q and k by d_k^(-1/4) each, so the last digits differ from dividing the scores. The
    boolean mask reaches the kernel as an additive float mask (0 or the dtype's lowest
    finite value). A fully masked query row gives a zero output on both paths.
    """
    _check_inputs(query, key, value, mask, bias)
    checks.fraction("dropout_p", dropout_p)
    return attend(query, key, value, mask, dropout_p, bias=bias, on_weights=on_weights)
