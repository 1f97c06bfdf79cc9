"""Feed-forward networks made after Vaswani et al., 2017: GELU and SwiGLU (Shazeer, 2020,
"GLU Variants Improve Transformer", Section 2).

The paper's network (its Section 3.3, equation 2) is FFN(x) = max(0, x W_1 + b_1) W_2 + b_2.
Two later choices replace the ReLU:

    FFN_GELU(x)   = GELU(x W_1 + b_1) W_2 + b_2            (Hendrycks & Gimpel, 2016; BERT, GPT)
    FFN_SwiGLU(x) = (Swish(x W) * (x V)) W_2                (Shazeer, 2020, Section 2)

where Swish(z) = z * sigmoid(z) (``F.silu``; Swish with beta = 1) and * is the elementwise
product: one projection, passed through Swish, gates another. Shazeer writes the GLU
variants without bias terms, and so does :class:`SwiGLU`.

Three matrices instead of two: to keep the parameters and the computation of the
ReLU network, Shazeer (2020, Section 2) reduces the hidden width d_ff by a factor of 2/3. :func:`swiglu_d_ff` does that and says how it rounds.

Shapes: B batch, L length, D d_model, F d_ff.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from . import checks
from .feed_forward import PositionwiseFeedForward
from .layers import LayerConfig


def swiglu_d_ff(d_ff: int) -> int:
    """The hidden width of a SwiGLU network with the parameters of a ReLU network of width
    ``d_ff``: 2/3 * d_ff rounded to the nearest integer (2 d_ff / 3 is never halfway between
    two integers, so there is no tie). The ReLU network has 2 D d_ff weights plus d_ff + D
    biases, the SwiGLU network 3 D round(2 d_ff / 3) weights and no biases: equal up to the
    rounding (at most D weights) and the biases. d_ff = 2048 -> 1365; Shazeer's 3072 -> 2048.
    """
    checks.positive_int("d_ff", d_ff)
    return max(1, (2 * d_ff + 1) // 3)  # round(2 d_ff / 3) in integers


class GELUFeedForward(PositionwiseFeedForward):
    """Equation (2) with GELU (the exact, erf form) in place of max(0, .): ``forward(x
    (B, L, D)) -> (B, L, D)``. The same matrices ``w_1, w_2`` and sizes as the paper's
    network, so the same parameters; ``dropout`` acts on the hidden activations."""

    @classmethod
    def from_config(cls, config: LayerConfig) -> "GELUFeedForward":
        """The layers' factory (``Transformer(config, feed_forward=GELUFeedForward.from_config)``)."""
        return cls(config.d_model, config.d_ff, dropout=config.activation_dropout)

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got {tuple(x.shape)}")
        hidden = self.dropout(F.gelu(self.w_1(x)))  # (B, L, F)
        return self.w_2(hidden)  # (B, L, D)


class SwiGLU(nn.Module):
    """FFN_SwiGLU(x) = (Swish(x W) * (x V)) W_2, Shazeer (2020, Section 2), without biases.

    ``SwiGLU(d_model, d_ff)``: ``d_ff`` is the hidden width F itself; give
    ``swiglu_d_ff(paper_d_ff)`` for the paper's network's parameter count, as
    :meth:`from_config` does. Matrices ``w`` (D -> F, the gate, through Swish), ``v``
    (D -> F) and ``w_2`` (F -> D). ``forward(x (B, L, D)) -> (B, L, D)``; ``dropout`` acts
    on the gated hidden activations.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.d_model = checks.positive_int("d_model", d_model)
        self.d_ff = checks.positive_int("d_ff", d_ff)
        self.w = nn.Linear(d_model, d_ff, bias=False)
        self.v = nn.Linear(d_model, d_ff, bias=False)
        self.w_2 = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(checks.fraction("dropout", dropout))

    @classmethod
    def from_config(cls, config: LayerConfig) -> "SwiGLU":
        """The layers' factory: hidden width ``swiglu_d_ff(config.d_ff)``, so a model keeps
        (up to rounding and biases) the parameters it has with the paper's network."""
        return cls(config.d_model, swiglu_d_ff(config.d_ff), dropout=config.activation_dropout)

    def forward(self, x: Tensor) -> Tensor:
        if x.size(-1) != self.d_model:
            raise ValueError(f"x must have last dimension d_model={self.d_model}, got {tuple(x.shape)}")
        hidden = F.silu(self.w(x)) * self.v(x)  # (B, L, F): Swish(x W) gates x V
        return self.w_2(self.dropout(hidden))  # (B, L, D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}"
