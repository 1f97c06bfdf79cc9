"""Exercise 2: the causal and padding masks (Sections 3.1 and 3.2.3). Check it with
`make exercises N=2`.

The report of `make exercises` names the slide that explains it.

One convention in the whole project: a boolean mask, True = may attend, broadcastable to
the attention scores' shape (B, H, T, S). Masks combine with ``&``.
"""

from __future__ import annotations

import torch
from torch import Tensor


def causal_mask(size: int, device=None) -> Tensor:
    """Boolean (size, size): query position i may attend to key positions 0 .. i.

    Section 3.2.3: the decoder's self-attention must not let information flow leftward,
    so each position sees itself and the positions before it, never a later one. With the
    target shifted right by one (Section 3.1), the prediction for position i then depends
    only on the known outputs before i. Put it on ``device``.
    """
    raise NotImplementedError


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Boolean (B, 1, 1, S): True where ``tokens`` (B, S) is not ``pad_id``.

    No query may attend to a padding key. The two singleton dimensions let the mask
    broadcast over the heads and over the queries of the scores (B, H, T, S).
    """
    raise NotImplementedError
