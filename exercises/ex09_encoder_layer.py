"""Exercise 9: an encoder layer and the stack of them (Section 3.1). Check it with
`make exercises N=9`.

The report of `make exercises` names the slide that explains it.

The layer receives its two sub-layers as modules (the grader hands it the package's
MultiHeadAttention and PositionwiseFeedForward); you write what connects them. Then the
stack: ``Encoder.forward`` runs the layers in turn (``__init__`` is written and builds them
with your ``EncoderLayer``).
"""

from __future__ import annotations

from torch import Tensor, nn

from transformer_lab import LayerConfig


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


class Encoder(nn.Module):
    """A stack of ``num_layers`` identical encoder layers (N = 6 in the paper), each with
    parts of its own. ``options`` are the other fields of ``transformer_lab.LayerConfig``
    (``norm_first=True``, ``layer_norm_eps``, ...).

    ``__init__`` is written: ``self.layers`` (an ``nn.ModuleList`` of your ``EncoderLayer``)
    and ``self.norm``, a final ``nn.LayerNorm`` for a pre-LN stack (None for post-LN: every
    post-LN layer already ends with one).

    ``forward(x (B, S, D), src_mask=None) -> (B, S, D)``: each layer reads the previous
    one's output; a pre-LN stack normalises the last layer's output with ``self.norm``.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1,
                 **options):
        super().__init__()
        c = LayerConfig(d_model, num_heads, d_ff, dropout, **options)
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.self_attention(c), c.feed_forward(c), c.dropout, norm_first=c.norm_first,
                         layer_norm_eps=c.layer_norm_eps) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=c.layer_norm_eps) if c.norm_first else None

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        raise NotImplementedError
