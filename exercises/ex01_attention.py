"""Exercise 1: attention weights and scaled dot-product attention, equation (1)
(Section 3.2.1). Check it with `make exercises N=1`.

The report of `make exercises` names the slide that explains it.

Masks are boolean everywhere in this project: True = may attend, broadcastable to the
scores' shape (..., T, S) (the convention of torch.nn.functional.scaled_dot_product_attention).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor


def attention_weights(
    query: Tensor, key: Tensor, mask: Tensor | None = None,
    *, bias: Tensor | None = None,
) -> Tensor:
    """softmax(Q K^T / sqrt(d_k)), shape (..., T, S): how much each query takes from each key.

    Section 3.2.1: the dot products of the query with all keys are divided by sqrt(d_k),
    and a softmax turns them into the weights on the values:

        Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V                      (1)

    query (..., T, K), key (..., S, K). ``mask`` (optional) is boolean, True = may attend,
    broadcastable to (..., T, S): a masked key must get weight exactly 0 and each query's
    weights must still sum to 1 over the keys it may see. A query that may see no key at
    all gets all-zero weights (not NaN, not 1/S). ``bias`` (optional, not in the paper:
    relative-position variants use it) is a float tensor broadcastable to (..., T, S),
    added to the scaled scores before the softmax.
    """
    raise NotImplementedError


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
    """Equation (1): the weights of ``attention_weights`` applied to the values, (..., T, V).

    query (..., T, K), key (..., S, K), value (..., S, V); ``mask`` and ``bias`` as in
    ``attention_weights``. ``dropout_p``: dropout on the weights (Section 5.4 drops
    sub-layer outputs; this one is an extra, 0 in evaluation). ``on_weights``: when given,
    call it with the weights (..., T, S) before dropout (this is how the package records
    attention for its plots). A query that may see no key gives a zero output.
    """
    raise NotImplementedError
