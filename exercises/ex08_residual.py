"""Exercise 8: the residual connection and layer normalisation, post-LN (the paper) and
pre-LN (later models) (Sections 3.1 and 5.4). Check it with `make exercises N=8`.

The report of `make exercises` names the slide that explains it.

``_Layer`` is the base class both of the package's layers share
(transformer_lab.layers._Layer); ``__init__`` is written for you.
"""

from __future__ import annotations

from torch import Tensor, nn


class _Layer(nn.Module):
    """What the encoder and decoder layers share: the residual connection around each
    sub-layer, and where its LayerNorm goes.

    Section 3.1: the output of each sub-layer is LayerNorm(x + Sublayer(x)) (post-LN).
    Section 5.4: dropout is applied to the output of each sub-layer, before it is added
    to the sub-layer input and normalised. ``norm_first=True`` is the pre-LN variant of
    most later models: x + Dropout(Sublayer(LayerNorm(x))), no LayerNorm after the sum.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, layer_norm_eps: float):
        super().__init__()
        self.norm_first = norm_first
        self.dropout = nn.Dropout(dropout)

    def sublayer_input(self, x: Tensor, norm: nn.LayerNorm) -> Tensor:
        """What the sub-layer reads, (B, L, D): ``norm(x)`` in pre-LN, ``x`` itself in post-LN."""
        raise NotImplementedError

    def residual(self, x: Tensor, sublayer_output: Tensor, norm: nn.LayerNorm) -> Tensor:
        """The layer's output (B, L, D) from its input ``x`` and the sub-layer's output:
        post-LN: LayerNorm(x + Dropout(Sublayer)); pre-LN: x + Dropout(Sublayer).
        Use ``self.dropout`` once, on the sub-layer's output."""
        raise NotImplementedError
