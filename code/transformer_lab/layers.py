"""Encoder and decoder layers and stacks (Section 3.1 of Vaswani et al., 2017).

"We employ a residual connection around each of the two sub-layers, followed by layer
normalization. That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))"
(post-LN), with dropout "to the output of each sub-layer, before it is added to the
sub-layer input and normalized" (Section 5.4). ``norm_first=True`` gives the pre-LN
variant used by most later models, x + Sublayer(LayerNorm(x)), whose stack then needs a
final LayerNorm (this deviates from the paper and says so).

Shapes: B batch, S source length, T target length, D d_model, H heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor, nn

from . import checks
from .feed_forward import PositionwiseFeedForward
from .multi_head_attention import KVCache, MultiHeadAttention


class _Layer(nn.Module):
    """What both layers share: the residual connection and its normalisation."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool, layer_norm_eps: float):
        super().__init__()
        checks.positive_number("layer_norm_eps", layer_norm_eps)  # LayerNorm divides by sqrt(var + eps)
        self.norm_first = norm_first
        self.dropout = nn.Dropout(checks.fraction("dropout", dropout))

    def sublayer_input(self, x: Tensor, norm: nn.LayerNorm) -> Tensor:
        return norm(x) if self.norm_first else x

    def residual(self, x: Tensor, sublayer_output: Tensor, norm: nn.LayerNorm) -> Tensor:
        """Post-LN: LayerNorm(x + Dropout(Sublayer(x))); pre-LN: x + Dropout(Sublayer(LayerNorm(x)))."""
        if self.norm_first:
            return x + self.dropout(sublayer_output)  # (B, L, D)
        return norm(x + self.dropout(sublayer_output))  # (B, L, D)


class EncoderLayer(_Layer):
    """Self-attention, then the feed-forward network, each inside a residual connection.

    ``forward(x (B, S, D), src_mask=None) -> (B, S, D)``. ``src_mask`` is boolean,
    True = may attend (usually the source padding mask (B, 1, 1, S)).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        d_k: int | None = None,
        d_v: int | None = None,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__(d_model, dropout, norm_first, layer_norm_eps)
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout=attention_dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout=activation_dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        h = self.sublayer_input(x, self.norm1)
        attended = self.self_attn(h, h, h, mask=src_mask)  # self-attention
        x = self.residual(x, attended, self.norm1)  # (B, S, D)
        h = self.sublayer_input(x, self.norm2)
        return self.residual(x, self.feed_forward(h), self.norm2)  # (B, S, D)


@dataclass
class DecoderCache:
    """Key/value caches of every decoder layer for incremental decoding.

    ``layers[i] = (self-attention cache, cross-attention cache)``. ``length``, the
    number of target positions decoded so far (the positional encoding's offset), is
    read from the self-attention caches, which grow by one row per decoded token.
    """

    layers: list[tuple[KVCache, KVCache]] = field(default_factory=list)

    @classmethod
    def empty(cls, num_layers: int) -> "DecoderCache":
        return cls([(KVCache(), KVCache(static=True)) for _ in range(num_layers)])

    @property
    def length(self) -> int:
        return self.layers[0][0].length if self.layers else 0

    def reorder(self, index: Tensor) -> None:
        """Keep the hypotheses ``index`` (B*k,) in every self-attention cache (beam search).

        Cross-attention caches are left alone: beam search only reorders hypotheses
        within one example, whose rows of the encoder memory are identical.
        """
        for self_cache, _ in self.layers:
            self_cache.reorder(index)


class DecoderLayer(_Layer):
    """Masked self-attention, attention over the encoder output, then the feed-forward
    network, each inside a residual connection (Section 3.1).

    ``forward(x (B, T, D), memory (B, S, D), src_mask=None, tgt_mask=None, cache=None)
    -> (B, T, D)``: ``src_mask`` hides the memory's padding from the cross-attention,
    ``tgt_mask`` (causal, usually) shapes the self-attention.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        *,
        d_k: int | None = None,
        d_v: int | None = None,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__(d_model, dropout, norm_first, layer_norm_eps)
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout=attention_dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout=attention_dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout=activation_dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: tuple[KVCache, KVCache] | None = None,
    ) -> Tensor:
        self_cache, cross_cache = cache if cache is not None else (None, None)
        h = self.sublayer_input(x, self.norm1)
        # masked self-attention: queries, keys and values from the target
        attended = self.self_attn(h, h, h, mask=tgt_mask, cache=self_cache)
        x = self.residual(x, attended, self.norm1)  # (B, T, D)
        h = self.sublayer_input(x, self.norm2)
        # cross-attention: queries from the target, keys and values from the memory
        attended = self.cross_attn(h, memory, memory, mask=src_mask, cache=cross_cache)
        x = self.residual(x, attended, self.norm2)  # (B, T, D)
        h = self.sublayer_input(x, self.norm3)
        return self.residual(x, self.feed_forward(h), self.norm3)  # (B, T, D)


class _Stack(nn.Module):
    """``num_layers`` identical layers (N = 6 in the paper); pre-LN stacks end with a LayerNorm."""

    def __init__(self, layer: type[_Layer], num_layers: int, d_model: int, num_heads: int, d_ff: int,
                 dropout: float, *, norm_first: bool = False, layer_norm_eps: float = 1e-5, **layer_options):
        super().__init__()
        checks.positive_int("num_layers", num_layers)
        self.layers = nn.ModuleList(
            layer(d_model, num_heads, d_ff, dropout, norm_first=norm_first, layer_norm_eps=layer_norm_eps,
                  **layer_options)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps) if norm_first else None

    def final_norm(self, x: Tensor) -> Tensor:
        return x if self.norm is None else self.norm(x)


class Encoder(_Stack):
    """A stack of ``num_layers`` identical encoder layers (N = 6 in the paper).

    ``forward(x (B, S, D), src_mask=None) -> (B, S, D)``. Pre-LN stacks end with a LayerNorm.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1,
                 **layer_options):
        super().__init__(EncoderLayer, num_layers, d_model, num_heads, d_ff, dropout, **layer_options)

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        for layer in self.layers:
            x = layer(x, src_mask)  # (B, S, D)
        return self.final_norm(x)


class Decoder(_Stack):
    """A stack of ``num_layers`` identical decoder layers (N = 6 in the paper).

    ``forward(x (B, T, D), memory (B, S, D), src_mask=None, tgt_mask=None, cache=None)
    -> (B, T, D)``. With a :class:`DecoderCache`, ``x`` holds only the new positions and
    the cache supplies the earlier ones.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1,
                 **layer_options):
        super().__init__(DecoderLayer, num_layers, d_model, num_heads, d_ff, dropout, **layer_options)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        if cache is not None and not cache.layers:
            cache.layers = DecoderCache.empty(len(self.layers)).layers
        for i, layer in enumerate(self.layers):
            layer_cache = cache.layers[i] if cache is not None else None
            x = layer(x, memory, src_mask, tgt_mask, cache=layer_cache)  # (B, T, D)
        return self.final_norm(x)
