"""Position-wise feed-forward network (Section 3.3 of Vaswani et al., 2017).

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2                                   (2)

"While the linear transformations are the same across different positions, they use
different parameters from layer to layer. Another way of describing this is as two
convolutions with kernel size 1." d_model = 512, d_ff = 2048 in the base model.

Shapes: B batch, L length, D d_model, F d_ff.
"""

from __future__ import annotations

from torch import Tensor, nn

from . import checks


class PositionwiseFeedForward(nn.Module):
    """Equation (2), applied to each position separately and identically.

    ``forward(x (B, L, D)) -> (B, L, D)``. ``dropout`` acts on the hidden activations
    (after the ReLU); the paper does not mention it, so it defaults to 0. The residual
    dropout of Section 5.4 is applied by the layer, not here.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.d_model = checks.positive_int("d_model", d_model)
        self.d_ff = checks.positive_int("d_ff", d_ff)
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(checks.fraction("dropout", dropout))

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.d_model:
            raise ValueError(f"x must have last dimension d_model="
                             f"{self.d_model}, got {tuple(x.shape)}")
        hidden = self.dropout(self.w_1(x).relu())  # (B, L, F)
        return self.w_2(hidden)  # (B, L, D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}"
