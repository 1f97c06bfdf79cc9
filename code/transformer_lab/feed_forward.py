"""Position-wise feed-forward network (Section 3.3 of Vaswani et al., 2017).

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2                                   (2)

"While the linear transformations are the same across different positions, they use
different parameters from layer to layer. Another way of describing this is as two
convolutions with kernel size 1." d_model = 512, d_ff = 2048 in the base model.

Shapes: B batch, L length, D d_model, F d_ff.
"""

from __future__ import annotations

from torch import Tensor, nn


class PositionwiseFeedForward(nn.Module):
    """Equation (2), applied to each position separately and identically.

    ``forward(x (B, L, D)) -> (B, L, D)``. ``dropout`` acts on the hidden activations
    (after the ReLU); the paper does not mention it, so it defaults to 0. The residual
    dropout of Section 5.4 is applied by the layer, not here.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        for name, value in (("d_model", d_model), ("d_ff", d_ff)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model, self.d_ff = d_model, d_ff
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.d_model:
            raise ValueError(f"x must have last dimension d_model="
                             f"{self.d_model}, got {tuple(x.shape)}")
        hidden = self.dropout(self.w_1(x).relu())  # (B, L, F)
        return self.w_2(hidden)  # (B, L, D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}"
