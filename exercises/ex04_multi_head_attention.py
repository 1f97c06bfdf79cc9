"""Exercise 4: multi-head attention (Section 3.2.2). Check it with `make exercises N=4`.

The report of `make exercises` names the slide that explains it.

You may call the package's equation (1), ``transformer_lab.scaled_dot_product_attention``
(exercise 1), or your own; copy your ``split_heads`` and ``merge_heads`` from exercise 3.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    """h attention heads, each on its own learned projection of the inputs (Section 3.2.2):

        MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O
        head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

    The paper uses h = 8 and d_k = d_v = d_model / h = 64. ``d_k`` and ``d_v`` default
    to ``d_model // num_heads`` each (Table 3 rows A-C vary them).

    ``__init__``: four projections, under the paper's names (the grader loads the
    package's weights into them by name): ``self.w_q``, ``self.w_k`` (D -> H*K),
    ``self.w_v`` (D -> H*Kv) and ``self.w_o`` (H*Kv -> D), each an ``nn.Linear`` with
    ``bias=bias``. ``dropout`` is the dropout on the attention weights in training.

    ``forward(query (B, T, D), key (B, S, D), value (B, S, D), mask=None, cache=None)
    -> (B, T, D)``. ``mask`` is boolean, True = may attend, broadcastable to the scores
    (B, H, T, S): the grader passes (B, 1, 1, S) and (T, S). ``cache`` is for
    incremental decoding (exercise 13 uses the package's); here it is always None.
    """

    def __init__(self, d_model: int, num_heads: int, d_k: int | None = None, d_v: int | None = None,
                 dropout: float = 0.0, bias: bool = True):
        super().__init__()
        raise NotImplementedError

    def split_heads(self, x: Tensor, head_dim: int) -> Tensor:
        """(B, L, H*head_dim) -> (B, H, L, head_dim)."""
        raise NotImplementedError

    def merge_heads(self, x: Tensor) -> Tensor:
        """(B, H, T, Kv) -> (B, T, H*Kv)."""
        raise NotImplementedError

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                cache=None) -> Tensor:
        raise NotImplementedError
