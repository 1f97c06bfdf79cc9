"""Our weights in PyTorch's own modules, for side-by-side checks (the parity tests) and
timings (the benchmarks).

``nn.MultiheadAttention`` keeps the three input projections in one (3D, D) matrix,
``in_proj_weight`` = [W^Q; W^K; W^V], and calls the output projection ``out_proj``; ours
are ``w_q, w_k, w_v, w_o``. Its masks mean the opposite of ours (True = blocked): the
tests flip them in their own helper.
"""

from __future__ import annotations

import torch
from torch import nn

from .multi_head_attention import MultiHeadAttention


def copy_into_torch_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> nn.MultiheadAttention:
    """Copy ``ours``' projections into ``theirs`` (same d_model and heads, d_k = d_v =
    d_model / h, biases on both) and return ``theirs``."""
    if not isinstance(ours, MultiHeadAttention):
        raise TypeError(f"ours must be a transformer_lab.MultiHeadAttention, got {type(ours).__name__}")
    if not isinstance(theirs, nn.MultiheadAttention):
        raise TypeError(f"theirs must be a torch.nn.MultiheadAttention, got {type(theirs).__name__}")
    if ours.w_q.bias is None or ours.num_heads * ours.d_k != ours.d_model or ours.d_k != ours.d_v:
        raise ValueError(f"ours must have biases and d_k = d_v = d_model / num_heads, got {ours.extra_repr()}")
    if theirs.in_proj_weight is None or theirs.in_proj_bias is None:
        raise ValueError("theirs must have one packed in_proj_weight with biases (kdim = vdim = embed_dim, bias=True)")
    if (theirs.embed_dim, theirs.num_heads) != (ours.d_model, ours.num_heads):
        raise ValueError(
            f"theirs must have embed_dim={ours.d_model} and num_heads={ours.num_heads}, "
            f"got embed_dim={theirs.embed_dim} and num_heads={theirs.num_heads}"
        )
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        theirs.out_proj.bias.copy_(ours.w_o.bias)
    return theirs


def to_torch_attention(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    """A new ``nn.MultiheadAttention`` (``batch_first=True``, on ``ours``' device) that
    computes what ``ours`` computes."""
    device = ours.w_q.weight.device
    theirs = nn.MultiheadAttention(ours.d_model, ours.num_heads, batch_first=True, device=device)
    return copy_into_torch_attention(ours, theirs)
