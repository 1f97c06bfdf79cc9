"""Exercise 16: grouped-query attention (Ainslie et al., 2023, Section 2.2), and multi-query
attention (Shazeer, 2019) as its one-group case: changes made after 2017. Check it with
`make exercises N=16`.

The report of `make exercises` names the slide that explains it.

While decoding, every layer keeps the keys and values of every earlier token (exercise 13),
and reading them dominates the time of a step at long lengths. Grouped-query attention keeps
the h query heads of multi-head attention but only G key/value heads, each shared by a
group of h/G query heads: the cache is h/G times smaller.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

import transformer_lab as tl


class GroupedQueryAttention(nn.Module):
    """``num_heads`` (h) query heads sharing ``num_kv_heads`` (G) key/value heads:

        head_i = Attention(Q W_i^Q, K W_g^K, V W_g^V),   g = floor(i / (h/G))

    so the h/G neighbouring query heads 0 .. h/G - 1 read key/value head 0, and so on.
    G = h is the paper's multi-head attention; G = 1 is multi-query attention.

    ``__init__``: four projections, under the paper's names (the grader loads the package's
    weights into them by name): ``self.w_q`` (D -> h*K), ``self.w_k`` (D -> G*K),
    ``self.w_v`` (D -> G*Kv) and ``self.w_o`` (h*Kv -> D), each an ``nn.Linear`` with
    ``bias=bias``. ``d_k`` and ``d_v`` default to ``d_model // num_heads`` each; num_heads
    must be divisible by num_kv_heads. ``dropout``: on the attention weights in training.
    ``positions`` and ``rotary_base`` are the package's ways to apply rotary positions
    (exercise 15) or ALiBi inside the module: the grader never passes them, so accept only
    ``positions=None`` (raise a ValueError otherwise).

    ``forward(query (B, T, D), key (B, S, D), value (B, S, D), mask=None, cache=None)
    -> (B, T, D)``: the call of ``tl.MultiHeadAttention``. ``mask``: boolean, True = may
    attend, broadcastable to (B, h, T, S): the grader passes (B, 1, 1, S) and (T, S).
    ``cache``: a ``tl.KVCache`` while decoding, or None. A self-attention cache keeps this
    call's keys and values, ``k, v = cache.update(k, v)``, and returns every cached one; a
    static (cross-attention) cache that is ``cache.filled`` already holds the memory's keys
    and values: read ``cache.k, cache.v`` and project nothing. Keep in the cache what
    grouped-query attention is for: (B, G, S, K) keys and (B, G, S, Kv) values.

    Attention itself: ``tl.scaled_dot_product_attention(q, k, v, mask, dropout_p)``
    (equation (1)) with each query head against its group's key/value head, however you
    line them up.
    """

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0, *,
                 d_k: int | None = None, d_v: int | None = None, bias: bool = True, positions: str | None = None,
                 rotary_base: float = 10000.0):
        super().__init__()
        raise NotImplementedError

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                cache: tl.KVCache | None = None) -> Tensor:
        raise NotImplementedError
