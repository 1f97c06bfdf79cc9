"""Grouped-query attention (Ainslie et al., 2023, "GQA: Training Generalized Multi-Query
Transformer Models from Multi-Head Checkpoints", Section 2.2), and multi-query attention
(Shazeer, 2019, "Fast Transformer Decoding: One Write-Head is All You Need") as its
one-group case: changes made after Vaswani et al., 2017.

The paper's multi-head attention (Section 3.2.2) gives each of its h heads its own query,
key and value projections. Grouped-query attention keeps h query heads but only G key and
value heads; query head i reads key/value head floor(i / (h/G)):

    head_i = Attention(Q W_i^Q, K W_g^K, V W_g^V),   g = floor(i G / h)

G = h is multi-head attention; G = 1 is multi-query attention. While decoding, the cache
keeps G heads of keys and values instead of h: h/G times fewer bytes per token to store
and, at every step, to read: the memory traffic that Shazeer (2019) shows dominates
incremental decoding at long lengths. To keep that saving, the h/G query heads of a group are stacked as more
queries against their group's one key/value head ((B, G, h/G * T, K) queries against
(B, G, S, K) keys) instead of copying every key/value head h/G times.

The same module applies the positions of a model that keeps them inside attention
(``positions="rotary"``: :class:`~transformer_lab.RotaryEmbedding` turns q and k;
``positions="alibi"``: :class:`~transformer_lab.ALiBi` biases the scores), for
self-attention only. With ``num_kv_heads == num_heads`` and no positions it computes the
paper's multi-head attention, so it is also how rotary positions or ALiBi enter the
paper's model alone.

Shapes: B batch, T queries, S keys/values, D d_model, H query heads, G key/value heads,
K d_k, Kv d_v.
"""

from __future__ import annotations

from typing import Callable

from torch import Tensor, nn

from . import checks
from .alibi import ALiBi
from .attention import check_mask, scaled_dot_product_attention
from .layers import LayerConfig
from .multi_head_attention import KVCache, as_attention_mask, head_dims
from .rotary import RotaryEmbedding

POSITIONS = (None, "rotary", "alibi")


def fold_groups(x: Tensor, num_kv_heads: int, group: int, num_queries: int, num_keys: int) -> Tensor:
    """A mask or bias broadcastable to (B, H, T, S) (H = G * group) laid out for the
    stacked queries: (B or 1, G or 1, group * T or 1, S). Row ``r * T + t`` of group ``g``
    is query t of head ``g * group + r``."""
    while x.dim() < 4:
        x = x.unsqueeze(0)  # (1, .., T, S)
    heads = x.size(1)
    if heads == 1 and x.size(2) == 1:
        return x  # one row for every head and query: broadcasts as it is
    x = x.expand(x.size(0), heads, num_queries, num_keys)  # (B', 1 or H, T, S)
    if heads == 1:
        return x.repeat(1, 1, group, 1)  # (B', 1, group*T, S): the same rows for each head of a group
    return x.reshape(x.size(0), num_kv_heads, group * num_queries, num_keys)  # (B', G, group*T, S)


class GroupedQueryAttention(nn.Module):
    """``num_heads`` query heads sharing ``num_kv_heads`` key/value heads (see the module
    docstring). The call of :class:`~transformer_lab.MultiHeadAttention`:
    ``forward(query (B, T, D), key (B, S, D), value (B, S, D), mask=None, cache=None)
    -> (B, T, D)``, with a boolean ``mask`` (True = may attend) broadcastable to
    (B, H, T, S) and, while decoding, a :class:`~transformer_lab.KVCache`, which then holds
    (B, G, S, K) keys and (B, G, S, Kv) values.

    Projections ``w_q`` (D -> H*K), ``w_k`` (D -> G*K), ``w_v`` (D -> G*Kv) and ``w_o``
    (H*Kv -> D), named and initialised as in multi-head attention (Xavier-uniform, zero
    biases). ``positions``: ``None``, ``"rotary"`` (``rotary_base`` is its base) or
    ``"alibi"``; a decoding cache's length is the offset of the new positions. Recorded
    by :func:`~transformer_lab.record_attention` as (B, H, T, S) weights, like the paper's.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int,
        dropout: float = 0.0,
        *,
        d_k: int | None = None,
        d_v: int | None = None,
        bias: bool = True,
        positions: str | None = None,
        rotary_base: float = 10000.0,
    ):
        super().__init__()
        d_k, d_v = head_dims(d_model, num_heads, d_k, d_v)
        checks.positive_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads={num_heads} must be divisible by num_kv_heads={num_kv_heads} "
                             f"(each key/value head serves the same number of query heads)")
        checks.one_of("positions", positions, POSITIONS)
        self.d_model, self.num_heads, self.num_kv_heads, self.d_k, self.d_v = d_model, num_heads, num_kv_heads, d_k, d_v
        self.group = num_heads // num_kv_heads
        self.dropout = checks.fraction("dropout", dropout)
        self.positions = positions
        self.w_q = nn.Linear(d_model, num_heads * d_k, bias=bias)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_v, bias=bias)
        self.w_o = nn.Linear(num_heads * d_v, d_model, bias=bias)
        self.rotary = RotaryEmbedding(d_k, rotary_base) if positions == "rotary" else None
        self.alibi = ALiBi(num_heads) if positions == "alibi" else None
        self.on_weights: Callable[[Tensor], None] | None = None  # set by record_attention
        self.reset_parameters()

    @classmethod
    def factory(cls, num_kv_heads: int | None = None, positions: str | None = None,
                rotary_base: float = 10000.0) -> Callable[[LayerConfig], "GroupedQueryAttention"]:
        """The layers' factory ``LayerConfig -> GroupedQueryAttention`` at the config's sizes
        (``num_kv_heads=None``: one per query head), e.g.
        ``Transformer(config, self_attention=GroupedQueryAttention.factory(1))``."""
        if num_kv_heads is not None:
            checks.positive_int("num_kv_heads", num_kv_heads)
        checks.one_of("positions", positions, POSITIONS)

        def build(config: LayerConfig) -> GroupedQueryAttention:
            kv_heads = config.num_heads if num_kv_heads is None else num_kv_heads
            return cls(config.d_model, config.num_heads, kv_heads, config.attention_dropout,
                       d_k=config.d_k, d_v=config.d_v, positions=positions, rotary_base=rotary_base)

        return build

    def reset_parameters(self) -> None:
        for linear in (self.w_q, self.w_k, self.w_v, self.w_o):
            nn.init.xavier_uniform_(linear.weight)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)

    @staticmethod
    def split_heads(x: Tensor, heads: int, head_dim: int) -> Tensor:
        """(B, L, heads*head_dim) -> (B, heads, L, head_dim)."""
        batch, length, _ = x.shape
        return x.view(batch, length, heads, head_dim).transpose(1, 2)  # (B, heads, L, hd)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        self._check_inputs(query, key, value, cache)
        if mask is not None:
            checks.tensor("mask", mask)
        offset = 0 if cache is None else cache.length  # positions decoded before this call
        q = self.split_heads(self.w_q(query), self.num_heads, self.d_k)  # (B, H, T, K)
        if cache is not None and cache.filled:
            k, v = cache.k, cache.v  # (B, G, S, K), (B, G, S, Kv), from the memory at the first step
        else:
            k = self.split_heads(self.w_k(key), self.num_kv_heads, self.d_k)  # (B, G, S, K)
            v = self.split_heads(self.w_v(value), self.num_kv_heads, self.d_v)  # (B, G, S, Kv)
            if self.rotary is not None:  # the cached keys were turned when they were new
                q, k = self.rotary(q, k, offset)
            if cache is not None:
                k, v = cache.update(k, v)  # the cache keeps G heads, never the h/G copies
        bias = None if self.alibi is None else self.alibi(q.size(2), k.size(2), offset, like=q)  # (H, T, S)
        heads = self.attend(q, k, v, as_attention_mask(mask), bias)  # (B, H, T, Kv)
        batch, _, length, _ = heads.shape
        return self.w_o(heads.transpose(1, 2).reshape(batch, length, self.num_heads * self.d_v))  # (B, T, D)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, bias: Tensor | None) -> Tensor:
        """Equation (1) per query head, each against its group's key/value head:
        q (B, H, T, K), k (B, G, S, K), v (B, G, S, Kv) -> (B, H, T, Kv)."""
        batch, heads, length, _ = q.shape
        num_keys = k.size(2)
        if mask is not None:
            check_mask(mask, (batch, heads, length, num_keys))
        dropout_p = self.dropout if self.training else 0.0
        if self.group == 1:  # multi-head attention: nothing to stack
            return scaled_dot_product_attention(q, k, v, mask, dropout_p, bias=bias, on_weights=self.on_weights)
        g, r = self.num_kv_heads, self.group
        q = q.reshape(batch, g, r * length, self.d_k)  # (B, G, r*T, K): head g*r + i's queries are rows i*T..
        if mask is not None:
            mask = fold_groups(mask, g, r, length, num_keys)  # (B', G or 1, r*T or 1, S)
        if bias is not None:
            bias = bias.reshape(g, r * length, num_keys)  # (G, r*T, S)
        on_weights = self.on_weights
        if on_weights is not None:  # hand the recorder the weights per query head, as multi-head attention does
            record = on_weights
            on_weights = lambda w: record(w.reshape(batch, heads, length, num_keys))  # noqa: E731  (B, H, T, S)
        out = scaled_dot_product_attention(q, k, v, mask, dropout_p, bias=bias, on_weights=on_weights)  # (B, G, r*T, Kv)
        return out.reshape(batch, heads, length, self.d_v)  # (B, H, T, Kv)

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None) -> None:
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
        reads_key_value = cache is None or not cache.filled  # a filled static cache replaces key and value
        for name, x in zip(("query", "key", "value"), (query, key, value) if reads_key_value else (query,)):
            checks.tensor(name, x)
            if x.dim() != 3 or x.size(-1) != self.d_model:
                raise ValueError(f"{name} must have shape (B, L, d_model={self.d_model}), got {tuple(x.shape)}")
        if reads_key_value:
            if key.shape[:2] != value.shape[:2]:
                raise ValueError(f"key and value must share (B, S), got key {tuple(key.shape)} "
                                 f"and value {tuple(value.shape)}")
            if query.size(0) != key.size(0):
                raise ValueError(f"query and key must have the same batch size, got {query.size(0)} "
                                 f"and {key.size(0)}")
        if cache is not None:
            if cache.static and self.positions is not None:
                raise ValueError(f"positions={self.positions!r} apply to self-attention; a static "
                                 f"(cross-attention) cache holds no positions")

    def extra_repr(self) -> str:
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, num_kv_heads={self.num_kv_heads}, "
                f"d_k={self.d_k}, d_v={self.d_v}, dropout={self.dropout}, positions={self.positions}")
