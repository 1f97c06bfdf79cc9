"""Exercise 7: the position-wise feed-forward network, equation (2) (Section 3.3). Check
it with `make exercises N=7`.

The report of `make exercises` names the slide that explains it.
"""

from __future__ import annotations

from torch import Tensor, nn


class PositionwiseFeedForward(nn.Module):
    """Two linear maps with a ReLU between them, applied to each position separately and
    identically (Section 3.3):

        FFN(x) = max(0, x W_1 + b_1) W_2 + b_2                                  (2)

    d_model = 512 and d_ff = 2048 in the base model.

    ``__init__``: ``self.w_1`` (D -> F) and ``self.w_2`` (F -> D), each an ``nn.Linear``,
    and ``self.dropout = nn.Dropout(dropout)`` acting on the hidden activations, after the
    ReLU (not in the paper, so it defaults to 0; the residual dropout belongs to the layer).

    ``forward(x (B, L, D)) -> (B, L, D)``; any leading dimensions work the same way.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError
