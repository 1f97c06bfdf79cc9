"""Multi-head attention (Section 3.2.2 of Vaswani et al., 2017).

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

"Multi-head attention allows the model to jointly attend to information from different
representation subspaces at different positions." The h heads are computed at once: one
(D, H*K) projection whose output is split into heads, which costs the same as one
full-width head when d_k = d_v = d_model / h.

Shapes: B batch, T queries, S keys/values, D d_model, H heads, K d_k, Kv d_v.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import checks
from .attention import attend, check_mask


@dataclass
class KVCache:
    """Projected keys and values of one attention layer kept between decoding steps.

    ``k``: (B, H, S, K), ``v``: (B, H, S, Kv). Self-attention caches grow by one step per
    decoded token; cross-attention caches (``static=True``) are computed once from the
    encoder's memory and reused. An attention module (this one, or a variant, which may
    store fewer heads) reads it the same way: ``cache.k, cache.v`` when ``cache.filled``,
    else it projects this call's keys and values and keeps ``cache.update(k, v)``.
    """

    k: Tensor | None = None
    v: Tensor | None = None
    static: bool = False

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.size(-2)

    @property
    def filled(self) -> bool:
        """A static cache already holding the memory's keys and values: read them, project nothing."""
        return self.static and self.k is not None

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Keep this call's keys (B, H, S, K) and values (B, H, S, Kv) and return every
        stored one: a self-attention cache appends them to the earlier steps'."""
        if not self.static and self.k is not None:
            k = torch.cat([self.k, k], dim=2)  # (B, H, S_past + S, K)
            v = torch.cat([self.v, v], dim=2)  # (B, H, S_past + S, Kv)
        self.k, self.v = k, v
        return k, v

    def reorder(self, index: Tensor) -> None:
        """Keep the batch rows ``index`` (beam search reorders hypotheses)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


def as_attention_mask(mask: Tensor | None) -> Tensor | None:
    """Lift a (T, S) or (B, T, S) mask to broadcast over heads: (.., 1 or B, 1 or H, T, S)."""
    if mask is None or mask.dim() != 3:
        return mask  # (T, S) and (B, *, T, S) already broadcast against (B, H, T, S)
    return mask.unsqueeze(1)  # (B, 1, T, S)


def head_dims(d_model: int, num_heads: int, d_k: int | None = None, d_v: int | None = None) -> tuple[int, int]:
    """(d_k, d_v) of each head: ``d_model // num_heads`` unless given (Table 3 rows A-C
    vary them), checked once for the layer and the model's config alike."""
    checks.positive_int("d_model", d_model)
    checks.positive_int("num_heads", num_heads)
    if (d_k is None or d_v is None) and d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} must be divisible by num_heads={num_heads} "
            f"(or give d_k and d_v explicitly)"
        )
    d_k = d_model // num_heads if d_k is None else d_k
    d_v = d_model // num_heads if d_v is None else d_v
    return checks.positive_int("d_k", d_k), checks.positive_int("d_v", d_v)


class MultiHeadAttention(nn.Module):
    """Multi-head attention, Section 3.2.2; the paper uses h = 8, d_k = d_v = 64.

    ``forward(query (B, T, D), key (B, S, D), value (B, S, D), mask=None, cache=None)
    -> output (B, T, D)``.

    ``mask``: boolean, True = may attend, of shape (T, S), (B, T, S) or anything that
    broadcasts to (B, H, T, S). ``d_k`` and ``d_v`` default independently to
    ``d_model // num_heads`` (Table 3 rows A-C vary them). Projections are
    ``w_q, w_k, w_v`` (D -> H*K, H*K, H*Kv) and ``w_o`` (H*Kv -> D), initialised
    Xavier-uniform with zero biases (the paper does not specify an initialisation).

    The heads run PyTorch's fused attention kernel, which never forms the (T, S)
    weights. On an accelerator, projections of one input share one matrix product
    (self-attention's Q, K and V; cross-attention's K and V of the memory), the same
    numbers in fewer kernels; the four ``nn.Linear`` modules and their parameters stay as
    they are. Inside :func:`transformer_lab.record_attention` the module computes them
    explicitly instead (:func:`attention_weights`, same output) and hands them
    (B, H, T, S), before dropout, to ``on_weights``: both paths are
    :func:`scaled_dot_product_attention`.

    Layers call every attention module as ``forward(query, key, value, mask=None,
    cache=None)``; a variant (grouped-query, relative positions) that keeps this call
    and returns (B, T, D) plugs into the layers through :class:`LayerConfig`.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_k: int | None = None,
        d_v: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        d_k, d_v = head_dims(d_model, num_heads, d_k, d_v)
        self.d_model, self.num_heads, self.d_k, self.d_v = d_model, num_heads, d_k, d_v
        self.dropout = checks.fraction("dropout", dropout)
        self.w_q = nn.Linear(d_model, num_heads * d_k, bias=bias)
        self.w_k = nn.Linear(d_model, num_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_heads * d_v, bias=bias)
        self.w_o = nn.Linear(num_heads * d_v, d_model, bias=bias)
        self.on_weights: Callable[[Tensor], None] | None = None  # set by record_attention
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for linear in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.xavier_uniform_(linear.weight)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)

    def split_heads(self, x: Tensor, head_dim: int) -> Tensor:
        """(B, L, H*head_dim) -> (B, H, L, head_dim): each head gets its own slice of features."""
        batch, length, _ = x.shape
        x = x.view(batch, length, self.num_heads, head_dim)  # (B, L, H, hd)
        return x.transpose(1, 2)  # (B, H, L, hd)

    def merge_heads(self, x: Tensor) -> Tensor:
        """(B, H, T, Kv) -> (B, T, H*Kv): Concat(head_1, ..., head_h) along the features."""
        batch, heads, length, head_dim = x.shape
        x = x.transpose(1, 2)  # (B, T, H, Kv)
        return x.reshape(batch, length, heads * head_dim)  # (B, T, H*Kv)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        """Attend from ``query`` to ``key``/``value``; see the class docstring for shapes.

        ``cache`` (incremental decoding): a self-attention cache appends this step's keys
        and values to the stored ones; a static (cross-attention) cache projects
        ``key``/``value`` on its first use and reuses them afterwards.
        """
        self._check_inputs(query, key, value, cache)
        if query is key and key is value and not (cache is not None and cache.filled):
            q, k, v = self.project_self(query, cache)  # (B, H, T, K), (B, H, T(+past), K), (.., Kv)
        else:
            q = self.split_heads(self.w_q(query), self.d_k)  # (B, H, T, K)
            k, v = self.project_key_value(key, value, cache)  # (B, H, S, K), (B, H, S, Kv)
        if mask is not None:
            checks.tensor("mask", mask)
            mask = as_attention_mask(mask)  # (.., 1 or B, 1 or H, T, S)
            check_mask(mask, (q.size(0), self.num_heads, q.size(2), k.size(2)))
        dropout_p = self.dropout if self.training else 0.0
        # Fused kernel, or the explicit weights handed to on_weights inside record_attention.
        heads = attend(q, k, v, mask, dropout_p, on_weights=self.on_weights)  # (B, H, T, Kv)
        return self.w_o(self.merge_heads(heads))  # (B, T, D)

    def project_self(self, x: Tensor, cache: KVCache | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention's queries (B, H, T, K), keys (B, H, T, K) and values (B, H, T, Kv)
        from one input ``x`` (B, T, D): on an accelerator one product with [W^Q; W^K; W^V]
        stacked, the same numbers as three, in one larger kernel. A ``cache`` adds the
        earlier steps' keys and values."""
        q, k, v = self._joint_projection(x, (self.w_q, self.w_k, self.w_v))  # (B, T, H*K) x2, (B, T, H*Kv)
        q = self.split_heads(q, self.d_k)  # (B, H, T, K)
        k = self.split_heads(k, self.d_k)  # (B, H, T, K)
        v = self.split_heads(v, self.d_v)  # (B, H, T, Kv)
        return (q, k, v) if cache is None else (q, *cache.update(k, v))

    @staticmethod
    def _joint_projection(x: Tensor, linears: tuple[nn.Linear, ...]) -> tuple[Tensor, ...]:
        """``tuple(linear(x) for linear in linears)``: on an accelerator as one product with
        the weights stacked, since an eager step there is bound by launching kernels (one
        larger kernel instead of two or three, and their casts under autocast). On the CPU
        the products stay apart: the gain there is small, and the stacked product sums the
        gradient of ``x`` in another order, which would move training's last bits (and the
        deck's trained models) away from what they are."""
        if x.device.type == "cpu":
            return tuple(linear(x) for linear in linears)
        weight = torch.cat([linear.weight for linear in linears])  # (sum of outputs, D)
        bias = None if linears[0].bias is None else torch.cat([linear.bias for linear in linears])
        out = F.linear(x, weight, bias)  # (B, L, sum of outputs)
        return out.split([linear.out_features for linear in linears], dim=-1)

    def project_key_value(self, key: Tensor, value: Tensor, cache: KVCache | None) -> tuple[Tensor, Tensor]:
        """Keys (B, H, S, K) and values (B, H, S, Kv), read from or written to ``cache``."""
        if cache is not None and cache.filled:
            return cache.k, cache.v  # computed from the memory at the first step
        if key is value:
            k, v = self._joint_projection(key, (self.w_k, self.w_v))  # (B, S, H*K), (B, S, H*Kv)
        else:
            k, v = self.w_k(key), self.w_v(value)  # (B, S, H*K), (B, S, H*Kv)
        k = self.split_heads(k, self.d_k)  # (B, H, S, K)
        v = self.split_heads(v, self.d_v)  # (B, H, S, Kv)
        return (k, v) if cache is None else cache.update(k, v)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None) -> None:
        self._check_input("query", query)
        if (cache is not None and cache.filled) or (query is key and key is value):
            return  # key and value are not read, or are the query
        self._check_input("key", key)
        self._check_input("value", value)
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"key and value must share (B, S), got key {tuple(key.shape)} and value {tuple(value.shape)}"
            )
        if query.size(0) != key.size(0):
            raise ValueError(
                f"query and key must have the same batch size, got {query.size(0)} and {key.size(0)}"
            )

    def _check_input(self, name: str, x: Tensor) -> None:
        checks.tensor(name, x)
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(
                f"{name} must have shape (B, L, d_model={self.d_model}), got {tuple(x.shape)}"
            )

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k}, "
            f"d_v={self.d_v}, dropout={self.dropout}"
        )
