"""Exercise 10: a decoder layer, with cross-attention (Section 3.1). Check it with
`make exercises N=10`.

The report of `make exercises` names the slide that explains it.

The layer receives its three sub-layers as modules (the grader hands it the package's
MultiHeadAttention twice and PositionwiseFeedForward); you write what connects them.
"""

from __future__ import annotations

from torch import Tensor, nn


class DecoderLayer(nn.Module):
    """Masked self-attention, attention over the encoder's output, then the feed-forward
    network, each inside a residual connection with layer normalisation (Section 3.1):
    post-LN by default, pre-LN with ``norm_first=True`` (exercise 8).

    Section 3.2.3: in the cross-attention ("encoder-decoder attention") the queries come
    from the previous decoder sub-layer and the keys and values from the encoder's output,
    the ``memory``; the self-attention is masked so that a position sees no later one.

    ``__init__``: keep ``self.self_attn``, ``self.cross_attn`` and ``self.feed_forward`` as
    given; ``self.norm1``, ``self.norm2``, ``self.norm3`` (one ``nn.LayerNorm(d_model,
    eps=layer_norm_eps)`` per sub-layer, in that order) and ``self.dropout``.

    ``forward(x (B, T, D), memory (B, S, D), src_mask=None, tgt_mask=None, cache=None)
    -> (B, T, D)``. ``tgt_mask`` (causal, usually (T, T)) shapes the self-attention,
    ``src_mask`` ((B, 1, 1, S), the source padding) the cross-attention. ``cache`` is None
    or a pair (self-attention cache, cross-attention cache) used while decoding one token
    at a time: hand each to its attention module, ``self.self_attn(h, h, h,
    mask=tgt_mask, cache=self_cache)``, ``self.cross_attn(h, memory, memory,
    mask=src_mask, cache=cross_cache)``.
    """

    def __init__(self, d_model: int, self_attn: nn.Module, cross_attn: nn.Module, feed_forward: nn.Module,
                 dropout: float = 0.1, *, norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        raise NotImplementedError

    def forward(self, x: Tensor, memory: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, cache=None) -> Tensor:
        raise NotImplementedError
