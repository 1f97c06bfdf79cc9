"""Encoder and decoder layers and stacks (Section 3.1 of Vaswani et al., 2017).

"We employ a residual connection around each of the two sub-layers, followed by layer
normalization. That is, the output of each sub-layer is LayerNorm(x + Sublayer(x))"
(post-LN), with dropout "to the output of each sub-layer, before it is added to the
sub-layer input and normalized" (Section 5.4). ``norm_first=True`` gives the pre-LN
variant used by most later models, x + Sublayer(LayerNorm(x)), whose stack then needs a
final LayerNorm (this deviates from the paper and says so).

A layer receives its sub-layers as modules: ``EncoderLayer(d_model, self_attn,
feed_forward, dropout)``. One :class:`LayerConfig` (sizes, options and the factories of
the parts) is what a stack and the model hand to every layer they build, so a variant of
attention or of the feed-forward network is a new module and a factory, not an edit here.

Shapes: B batch, S source length, T target length, D d_model, H heads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from torch import Tensor, nn

from . import checks
from .feed_forward import PositionwiseFeedForward
from .multi_head_attention import KVCache, MultiHeadAttention, head_dims


def multi_head_attention(config: LayerConfig) -> MultiHeadAttention:
    """The paper's attention (Section 3.2.2) at ``config``'s sizes: every layer's default."""
    return MultiHeadAttention(config.d_model, config.num_heads, config.d_k, config.d_v,
                              dropout=config.attention_dropout)


def positionwise_feed_forward(config: LayerConfig) -> PositionwiseFeedForward:
    """The paper's feed-forward network (Section 3.3) at ``config``'s sizes: the default."""
    return PositionwiseFeedForward(config.d_model, config.d_ff, dropout=config.activation_dropout)


PartFactory = Callable[["LayerConfig"], nn.Module]
PARTS = ("self_attention", "cross_attention", "feed_forward")


@dataclass(frozen=True)
class LayerConfig:
    """One layer's sizes and options, and how to build its parts: what the model hands
    down from its :class:`TransformerConfig` (same names) to every layer of both stacks.

    ``dropout`` is the residual dropout P_drop (Section 5.4). The parts are factories
    ``LayerConfig -> nn.Module``, called once per layer so that every layer has its own
    parameters: ``self_attention`` (both stacks), ``cross_attention`` (decoder) and
    ``feed_forward``. They default to the paper's modules; a variant replaces one. An
    attention part is called ``forward(query, key, value, mask=None, cache=None) ->
    (B, T, D)``, with a boolean ``mask`` (True = may attend) and, while decoding, a
    :class:`KVCache`; a feed-forward part ``forward(x (B, L, D)) -> (B, L, D)``.
    """

    d_model: int
    num_heads: int
    d_ff: int
    dropout: float = 0.1
    d_k: int | None = None
    d_v: int | None = None
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    norm_first: bool = False
    layer_norm_eps: float = 1e-5
    self_attention: PartFactory = multi_head_attention
    cross_attention: PartFactory = multi_head_attention
    feed_forward: PartFactory = positionwise_feed_forward

    def __post_init__(self):
        head_dims(self.d_model, self.num_heads, self.d_k, self.d_v)  # d_model and num_heads too
        checks.positive_int("d_ff", self.d_ff)
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            checks.fraction(name, getattr(self, name))
        if not isinstance(self.norm_first, bool):
            raise TypeError(f"norm_first must be a bool, got {type(self.norm_first).__name__}")
        checks.positive_number("layer_norm_eps", self.layer_norm_eps)  # LayerNorm divides by sqrt(var + eps)
        for name in PARTS:
            part = getattr(self, name)
            if isinstance(part, nn.Module) or not callable(part):  # a module would be shared by every layer
                raise TypeError(f"{name} must be a callable that builds a module from a LayerConfig, "
                                f"got {type(part).__name__}")

    def fields(self) -> dict:
        """Every field by name (shallow, unlike ``dataclasses.asdict``): ``LayerConfig(**c.fields())``."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def _module(name: str, part: nn.Module) -> nn.Module:
    if not isinstance(part, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(part).__name__}")
    return part


class _Layer(nn.Module):
    """What both layers share: the residual connection and its normalisation."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool, layer_norm_eps: float):
        super().__init__()
        checks.positive_int("d_model", d_model)
        checks.positive_number("layer_norm_eps", layer_norm_eps)  # LayerNorm divides by sqrt(var + eps)
        self.norm_first = norm_first
        self.dropout = nn.Dropout(checks.fraction("dropout", dropout))

    @classmethod
    def build(cls, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, **options) -> "_Layer":
        """The paper's layer in one line: ``EncoderLayer.build(512, 8, 2048)``. ``options``
        are :class:`LayerConfig`'s other fields (``norm_first=True``, ``d_k``, a part)."""
        return cls.from_config(LayerConfig(d_model, num_heads, d_ff, dropout, **options))

    @classmethod
    def from_config(cls, config: LayerConfig) -> "_Layer":
        raise NotImplementedError

    def sublayer_input(self, x: Tensor, norm: nn.LayerNorm) -> Tensor:
        return norm(x) if self.norm_first else x

    def residual(self, x: Tensor, sublayer_output: Tensor, norm: nn.LayerNorm) -> Tensor:
        """Post-LN: LayerNorm(x + Dropout(Sublayer(x))); pre-LN: x + Dropout(Sublayer(LayerNorm(x)))."""
        if self.norm_first:
            return x + self.dropout(sublayer_output)  # (B, L, D)
        return norm(x + self.dropout(sublayer_output))  # (B, L, D)


class EncoderLayer(_Layer):
    """Self-attention, then the feed-forward network, each inside a residual connection.

    ``EncoderLayer(d_model, self_attn, feed_forward, dropout)`` receives its two
    sub-layers as modules; ``EncoderLayer.build(d_model, num_heads, d_ff)`` builds the
    paper's. ``forward(x (B, S, D), src_mask=None) -> (B, S, D)``. ``src_mask`` is
    boolean, True = may attend (usually the source padding mask (B, 1, 1, S)).
    """

    def __init__(
        self,
        d_model: int,
        self_attn: nn.Module,
        feed_forward: nn.Module,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__(d_model, dropout, norm_first, layer_norm_eps)
        self.self_attn = _module("self_attn", self_attn)
        self.feed_forward = _module("feed_forward", feed_forward)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)

    @classmethod
    def from_config(cls, config: LayerConfig) -> "EncoderLayer":
        """A layer with its own parts, built by ``config``'s factories."""
        c = config
        return cls(c.d_model, c.self_attention(c), c.feed_forward(c), c.dropout,
                   norm_first=c.norm_first, layer_norm_eps=c.layer_norm_eps)

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

    ``DecoderLayer(d_model, self_attn, cross_attn, feed_forward, dropout)`` receives its
    three sub-layers; ``DecoderLayer.build(d_model, num_heads, d_ff)`` builds the paper's.
    ``forward(x (B, T, D), memory (B, S, D), src_mask=None, tgt_mask=None, cache=None)
    -> (B, T, D)``: ``src_mask`` hides the memory's padding from the cross-attention,
    ``tgt_mask`` (causal, usually) shapes the self-attention.
    """

    def __init__(
        self,
        d_model: int,
        self_attn: nn.Module,
        cross_attn: nn.Module,
        feed_forward: nn.Module,
        dropout: float = 0.1,
        *,
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
    ):
        super().__init__(d_model, dropout, norm_first, layer_norm_eps)
        self.self_attn = _module("self_attn", self_attn)
        self.cross_attn = _module("cross_attn", cross_attn)
        self.feed_forward = _module("feed_forward", feed_forward)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)

    @classmethod
    def from_config(cls, config: LayerConfig) -> "DecoderLayer":
        """A layer with its own parts, built by ``config``'s factories."""
        c = config
        return cls(c.d_model, c.self_attention(c), c.cross_attention(c), c.feed_forward(c), c.dropout,
                   norm_first=c.norm_first, layer_norm_eps=c.layer_norm_eps)

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
    """``num_layers`` layers (N = 6 in the paper), each built from the same :class:`LayerConfig`
    with parts of its own; pre-LN stacks end with a LayerNorm.

    ``Encoder(num_layers, d_model, num_heads, d_ff, dropout=0.1, **options)``: ``options``
    are the other fields of :class:`LayerConfig` (``norm_first``, ``d_k``, a part factory).
    ``Encoder.from_config(num_layers, config)`` takes a whole one (the model's way).
    """

    layer_type: type[_Layer]

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1,
                 **options):
        super().__init__()
        checks.positive_int("num_layers", num_layers)
        config = LayerConfig(d_model, num_heads, d_ff, dropout, **options)
        self.layers = nn.ModuleList(self.layer_type.from_config(config) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model, eps=config.layer_norm_eps) if config.norm_first else None

    @classmethod
    def from_config(cls, num_layers: int, config: LayerConfig) -> "_Stack":
        if not isinstance(config, LayerConfig):
            raise TypeError(f"config must be a LayerConfig, got {type(config).__name__}")
        return cls(num_layers, **config.fields())

    def final_norm(self, x: Tensor) -> Tensor:
        return x if self.norm is None else self.norm(x)


class Encoder(_Stack):
    """A stack of ``num_layers`` identical encoder layers (N = 6 in the paper).

    ``forward(x (B, S, D), src_mask=None) -> (B, S, D)``. Pre-LN stacks end with a LayerNorm.
    """

    layer_type = EncoderLayer

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

    layer_type = DecoderLayer

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
