"""Exercise 15: rotary positions (Su et al., 2021, "RoFormer", Section 3.2), a change made
after 2017. Check it with `make exercises N=15`.

The report of `make exercises` names the slide that explains it.

The paper adds its sinusoids to the embeddings once, below the first layer (Section 3.5),
and notes that PE(pos + k) is a linear function of PE(pos): a rotation of every (sin, cos)
pair. Rotary positions apply such a rotation to each head's queries and keys instead, in
every attention layer, so that the score q_m . k_n depends on the positions only through
m - n. Write the rotation first (``RotaryEmbedding``), then the attention that uses it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

import transformer_lab as tl


class RotaryEmbedding(nn.Module):
    """Turn queries and keys by their positions.

    The K features of a head form K/2 pairs; pair i is feature i with feature i + K/2 (the
    two halves of the head, as GPT-NeoX and Llama pair them; the RoFormer paper writes
    neighbours, 2i and 2i + 1, which is the same rotation after a fixed permutation but
    gives other scores with the same weights). Read pair i as the complex number
    z = x_i + j x_(i+K/2): at position pos it becomes z * e^(j pos theta_i), that is

        x_i       -> x_i cos(pos theta_i) - x_(i+K/2) sin(pos theta_i)
        x_(i+K/2) -> x_(i+K/2) cos(pos theta_i) + x_i sin(pos theta_i)

    with theta_i = base^(-2i / K), i = 0 .. K/2 - 1 (K = ``head_dim``, even).

    ``__init__``: keep what ``forward`` needs (the K/2 frequencies theta_i, say, as a
    buffer registered with ``persistent=False``: it is computed, not learned). No parameters.

    ``forward(q (..., T, K), k (..., S, K), offset=0) -> (q, k)``, both turned: row t at
    position ``offset + t`` (positions count from 0). Any leading dimensions: the grader
    passes (B, H, T, K) and (B, T, K). While decoding with a cache, ``offset`` is the number
    of positions already cached. Do not change ``q`` or ``k`` in place.
    """

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        raise NotImplementedError

    def forward(self, q: Tensor, k: Tensor, offset: int = 0) -> tuple[Tensor, Tensor]:
        raise NotImplementedError


class RotaryMultiHeadAttention(tl.MultiHeadAttention):
    """Multi-head self-attention (Section 3.2.2) with rotary positions: the package's
    ``MultiHeadAttention`` gives the projections ``w_q, w_k, w_v, w_o``, ``split_heads(x,
    head_dim)``, ``merge_heads(x)``, ``self.d_k``, ``self.d_v``, ``self.num_heads`` and
    ``self.dropout`` (a float: the dropout on the attention weights in training).

    ``__init__``: the parent's module, then a ``RotaryEmbedding`` (yours, above) as
    ``self.rotary``; at what width?

    ``forward(query (B, T, D), key (B, T, D), value (B, T, D), mask=None, cache=None)
    -> (B, T, D)``, called as self-attention (query, key and value are the same x). Each
    head's queries and keys are turned by their positions before the scores; equation (1)
    does the rest: ``tl.scaled_dot_product_attention(q, k, v, mask, dropout_p)``.
    ``mask``: boolean, True = may attend, (T, S) or (B, 1, 1, S). ``cache``: a
    ``tl.KVCache`` while decoding, or None. With a cache, the new positions come after the
    ``cache.length`` cached ones; keep this call's keys and values with
    ``k, v = cache.update(k, v)``, which returns every cached one.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__(d_model, num_heads, dropout=dropout)
        raise NotImplementedError

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                cache: tl.KVCache | None = None) -> Tensor:
        raise NotImplementedError
