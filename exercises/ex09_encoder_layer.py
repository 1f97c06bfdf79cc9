"""Exercise 9: an encoder layer (Section 3.1). Check it with `make exercises N=9`.

The report of `make exercises` names the slide that explains it.

The layer receives its two sub-layers as modules (the grader hands it the package's
MultiHeadAttention and PositionwiseFeedForward); you write what connects them.
"""

from __future__ import annotations

from torch import Tensor, nn


class EncoderLayer(nn.Module):
    """Self-attention, then the feed-forward network, each inside a residual connection
    with layer normalisation (Section 3.1): LayerNorm(x + Dropout(Sublayer(x))) for each
    sub-layer in post-LN (the paper), x + Dropout(Sublayer(LayerNorm(x))) in pre-LN
    (``norm_first=True``). Exercise 8 is that connection.

    ``__init__``: keep ``self.self_attn`` and ``self.feed_forward`` as given, one
    ``nn.LayerNorm(d_model, eps=layer_norm_eps)`` per sub-layer, ``self.norm1`` (attention)
    and ``self.norm2`` (feed-forward), and ``self.dropout = nn.Dropout(dropout)``.

    ``forward(x (B, S, D), src_mask=None) -> (B, S, D)``. The self-attention is called
    ``self.self_attn(h, h, h, mask=src_mask)``; ``src_mask`` is boolean, True = may attend
    (the source padding mask, (B, 1, 1, S)).
    """

    def __init__(self, d_model: int, self_attn: nn.Module, feed_forward: nn.Module, dropout: float = 0.1,
                 *, norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        raise NotImplementedError
