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

from .feed_forward import PositionwiseFeedForward
from .multi_head_attention import KVCache, MultiHeadAttention


class _Layer(nn.Module):
    """What both layers share: the residual connection and its normalisation."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.norm_first = norm_first
        self.dropout = nn.Dropout(dropout)

    def sublayer_input(self, x: Tensor, norm: nn.LayerNorm) -> Tensor:
        return norm(x) if self.norm_first else x

    def residual(self, x: Tensor, sublayer_output: Tensor, norm: nn.LayerNorm) -> Tensor:
        """Post-LN: LayerNorm(x + Dropout(Sublayer(x))); pre-LN: x + Dropout(Sublayer(LayerNorm(x)))."""
        if self.norm_first:
            return x + self.dropout(sublayer_output)  # (B, L, D)
        return norm(x + self.dropout(sublayer_output))  # (B, L, D)


class EncoderLayer(_Layer):
    """Self-attention, then the feed-forward network, each inside a residual connection.

    ``forward(x (B, S, D), mask=None, need_weights=False) -> x (B, S, D)``, or
    ``(x, weights (B, H, S, S))`` when ``need_weights``. ``mask`` is boolean,
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
        super().__init__(d_model, dropout, norm_first)
        self.self_attn = MultiHeadAttention(d_model, num_heads, d_k, d_v, dropout=attention_dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout=activation_dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)

    def forward(self, x: Tensor, mask: Tensor | None = None,
                need_weights: bool = False):
        h = self.sublayer_input(x, self.norm1)
        attended, weights = self.self_attn(h, h, h, mask=mask,
                                           need_weights=need_weights)
        x = self.residual(x, attended, self.norm1)  # (B, S, D)
        h = self.sublayer_input(x, self.norm2)
        x = self.residual(x, self.feed_forward(h), self.norm2)  # (B, S, D)
        return (x, weights) if need_weights else x


@dataclass
class DecoderCache:
    """Key/value caches of every decoder layer for incremental decoding.

    ``layers[i] = (self-attention cache, cross-attention cache)``; ``length`` counts the
    target positions decoded so far (the positional encoding's offset).
    """

    layers: list[tuple[KVCache, KVCache]] = field(default_factory=list)
    length: int = 0

    @classmethod
    def empty(cls, num_layers: int) -> "DecoderCache":
        return cls([(KVCache(), KVCache(static=True)) for _ in range(num_layers)])

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

    ``forward(x (B, T, D), memory (B, S, D), tgt_mask=None, memory_mask=None,
    need_weights=False, cache=None) -> x (B, T, D)``, or ``(x, (self_weights (B, H, T, T),
    cross_weights (B, H, T, S)))`` when ``need_weights``.
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
        super().__init__(d_model, dropout, norm_first)
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
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: tuple[KVCache, KVCache] | None = None,
    ):
        self_cache, cross_cache = cache if cache is not None else (None, None)
        h = self.sublayer_input(x, self.norm1)
        attended, self_weights = self.self_attn(  # masked self-attention
            h, h, h, mask=tgt_mask, need_weights=need_weights,
            cache=self_cache)
        x = self.residual(x, attended, self.norm1)  # (B, T, D)
        h = self.sublayer_input(x, self.norm2)
        attended, cross_weights = self.cross_attn(  # queries from h, K, V: memory
            h, memory, memory, mask=memory_mask, need_weights=need_weights,
            cache=cross_cache)
        x = self.residual(x, attended, self.norm2)  # (B, T, D)
        h = self.sublayer_input(x, self.norm3)
        x = self.residual(x, self.feed_forward(h), self.norm3)  # (B, T, D)
        weights = (self_weights, cross_weights)
        return (x, weights) if need_weights else x


class Encoder(nn.Module):
    """A stack of ``num_layers`` identical encoder layers (N = 6 in the paper).

    ``forward(x (B, S, D), mask=None, need_weights=False) -> (B, S, D)``, or
    ``(x, [weights (B, H, S, S) per layer])``. Pre-LN stacks end with a LayerNorm.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, **layer_options):
        super().__init__()
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"num_layers must be a positive int, got {num_layers!r}")
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, **layer_options) for _ in range(num_layers)
        )
        norm_first = layer_options.get("norm_first", False)
        eps = layer_options.get("layer_norm_eps", 1e-5)
        self.norm = nn.LayerNorm(d_model, eps=eps) if norm_first else None

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False):
        all_weights = []
        for layer in self.layers:
            if need_weights:
                x, weights = layer(x, mask, need_weights=True)
                all_weights.append(weights)
            else:
                x = layer(x, mask)
        if self.norm is not None:
            x = self.norm(x)
        return (x, all_weights) if need_weights else x


class Decoder(nn.Module):
    """A stack of ``num_layers`` identical decoder layers (N = 6 in the paper).

    ``forward(x (B, T, D), memory (B, S, D), tgt_mask=None, memory_mask=None,
    need_weights=False, cache=None) -> (B, T, D)``, or ``(x, [(self_weights,
    cross_weights) per layer])``. With a :class:`DecoderCache`, ``x`` holds only the new
    positions and the cache supplies the earlier ones.
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, **layer_options):
        super().__init__()
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"num_layers must be a positive int, got {num_layers!r}")
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, **layer_options) for _ in range(num_layers)
        )
        norm_first = layer_options.get("norm_first", False)
        eps = layer_options.get("layer_norm_eps", 1e-5)
        self.norm = nn.LayerNorm(d_model, eps=eps) if norm_first else None

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: DecoderCache | None = None,
    ):
        if cache is not None and not cache.layers:
            cache.layers = DecoderCache.empty(len(self.layers)).layers
        all_weights = []
        for i, layer in enumerate(self.layers):
            layer_cache = cache.layers[i] if cache is not None else None
            out = layer(x, memory, tgt_mask, memory_mask, need_weights=need_weights, cache=layer_cache)
            if need_weights:
                x, weights = out
                all_weights.append(weights)
            else:
                x = out
        if cache is not None:
            cache.length += x.size(1)
        if self.norm is not None:
            x = self.norm(x)
        return (x, all_weights) if need_weights else x
