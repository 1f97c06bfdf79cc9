"""A decoder-only language model built from the paper's parts (Radford et al., 2018, GPT:
"a multi-layer Transformer decoder"; Liu et al., 2018 before it), the family most models
since 2017 belong to.

    tokens -> embedding * sqrt(D) + positions -> N x [x + SelfAttn(Norm(x)) (causal);
                                                      x + FFN(Norm(x))] -> Norm -> linear -> logits

Vaswani et al. (2017) translate with an encoder and a decoder (Figure 1). Drop the encoder
and the decoder's cross-attention, and what is left, causal self-attention and the
feed-forward network in residual blocks, predicts every next token of one sequence: the
loss at position t is -log P(x_{t+1} | x_1 .. x_t). A translation pair becomes one
sequence, the source as a prompt and then the target, ``src <eos> <bos> tgt <eos>``
(:func:`language_model_batch`); the loss counts the target tokens only, the ones the
encoder-decoder predicts too. The layers are pre-LN with a final norm (GPT-2's
arrangement, not the paper's post-LN; Xiong et al., 2020 analyse why it trains without
warm-up).

The parts are the paper's, or a variant's handed in as for :class:`~transformer_lab.Transformer`:
``DecoderOnlyTransformer(config, self_attention=..., feed_forward=...)``. Positions are
the config's ``positional``: added to the embeddings ("sinusoidal", "learned"), turned into
q and k ("rotary") or added to the scores ("alibi") by the default self-attention
(:class:`~transformer_lab.GroupedQueryAttention`, which also takes ``num_kv_heads``), or none.

Shapes: B batch, L sequence length, T new tokens, D d_model, V vocabulary.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor, nn

from . import checks
from .attention_positions import NoPositionalEncoding
from .data.batching import Batch
from .embeddings import TokenEmbedding
from .grouped_query_attention import GroupedQueryAttention
from .layers import LayerConfig, PartFactory, _Layer, _module
from .masks import causal_mask, padding_mask
from .multi_head_attention import KVCache
from .positional_encoding import LearnedPositionalEncoding, PositionalEncoding
from .training import LabelSmoothingLoss

POSITIONAL_KINDS = ("sinusoidal", "learned", "rotary", "alibi", "none")
IN_ATTENTION = ("rotary", "alibi")  # positions the self-attention applies
DECODER_ONLY_PARTS = ("self_attention", "feed_forward")  # no cross-attention: there is no encoder


@dataclass(frozen=True)
class DecoderOnlyConfig:
    """Hyperparameters of :class:`DecoderOnlyTransformer`, by the names of
    :class:`~transformer_lab.TransformerConfig` (one ``vocab_size``: prompt and answer
    share one vocabulary). ``num_kv_heads``: key/value heads of the default
    self-attention (``None``: one per query head, multi-head attention).
    ``positional``: one of ``POSITIONAL_KINDS`` (module docstring); ``rotary_base`` is the
    rotary positions' base. Defaults: the paper's base sizes, as for the encoder-decoder."""

    vocab_size: int
    d_model: int = 512
    num_heads: int = 8
    d_ff: int = 2048
    num_layers: int = 6
    num_kv_heads: int | None = None
    d_k: int | None = None
    d_v: int | None = None
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    max_len: int = 5000
    pad_id: int = 0
    positional: str = "sinusoidal"
    rotary_base: float = 10000.0
    layer_norm_eps: float = 1e-5
    tie_embeddings: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "num_layers", "max_len"):
            checks.positive_int(name, getattr(self, name))
        checks.one_of("positional", self.positional, POSITIONAL_KINDS)
        self.layer_config()  # sizes, dropouts and epsilon: LayerConfig checks them
        if self.num_kv_heads is not None:
            checks.positive_int("num_kv_heads", self.num_kv_heads)
            if self.num_heads % self.num_kv_heads:
                raise ValueError(f"num_heads={self.num_heads} must be divisible by num_kv_heads="
                                 f"{self.num_kv_heads} (each key/value head serves the same number of query heads)")
        if self.positional == "sinusoidal":
            checks.positive_even_int("d_model", self.d_model, "sinusoidal positions come in sin/cos pairs")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id must be a valid token id in [0, {self.vocab_size}), got {self.pad_id!r}")

    @classmethod
    def tiny(cls, vocab_size: int, **overrides) -> "DecoderOnlyConfig":
        """The sizes of ``TransformerConfig.tiny`` (not in any paper)."""
        sizes = dict(d_model=64, num_heads=4, d_ff=256, num_layers=2, max_len=512)
        return cls(vocab_size=vocab_size, **{**sizes, **overrides})

    def replace(self, **changes) -> "DecoderOnlyConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def default_self_attention(self) -> PartFactory | None:
        """The self-attention this config asks for, or ``None`` for the paper's."""
        positions = self.positional if self.positional in IN_ATTENTION else None
        if positions is None and self.num_kv_heads is None:
            return None
        return GroupedQueryAttention.factory(self.num_kv_heads, positions, self.rotary_base)

    def layer_config(self, **parts: PartFactory) -> LayerConfig:
        """What every layer gets: sizes, pre-LN, and the parts (``self_attention``,
        ``feed_forward``); a ``self_attention`` part replaces the one the config asks for,
        so it cannot come with ``num_kv_heads`` or positions inside attention."""
        unknown = sorted(set(parts) - set(DECODER_ONLY_PARTS))
        if unknown:
            raise TypeError(f"parts must be among {DECODER_ONLY_PARTS}, got {unknown}")
        default = self.default_self_attention()
        if default is not None:
            if "self_attention" in parts:
                raise ValueError(f"a self_attention part replaces the config's (positional={self.positional!r}, "
                                 f"num_kv_heads={self.num_kv_heads}): give positional='none' or an additive one, "
                                 f"and num_kv_heads=None, and let the part do both")
            parts = {**parts, "self_attention": default}
        return LayerConfig(self.d_model, self.num_heads, self.d_ff, self.dropout, d_k=self.d_k, d_v=self.d_v,
                           attention_dropout=self.attention_dropout, activation_dropout=self.activation_dropout,
                           norm_first=True, layer_norm_eps=self.layer_norm_eps, **parts)


class DecoderOnlyLayer(_Layer):
    """Causal self-attention, then the feed-forward network, each in a pre-LN residual
    block: x + Dropout(Sublayer(LayerNorm(x))). The encoder layer's two sub-layers, with
    a causal mask and a decoding cache: ``forward(x (B, T, D), tgt_mask=None,
    cache=None) -> (B, T, D)``."""

    def __init__(self, d_model: int, self_attn: nn.Module, feed_forward: nn.Module, dropout: float = 0.1,
                 *, layer_norm_eps: float = 1e-5):
        super().__init__(d_model, dropout, True, layer_norm_eps)
        self.self_attn = _module("self_attn", self_attn)
        self.feed_forward = _module("feed_forward", feed_forward)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)

    @classmethod
    def from_config(cls, config: LayerConfig) -> "DecoderOnlyLayer":
        c = config
        return cls(c.d_model, c.self_attention(c), c.feed_forward(c), c.dropout, layer_norm_eps=c.layer_norm_eps)

    def forward(self, x: Tensor, tgt_mask: Tensor | None = None, cache: KVCache | None = None) -> Tensor:
        h = self.sublayer_input(x, self.norm1)
        attended = self.self_attn(h, h, h, mask=tgt_mask, cache=cache)  # causal self-attention
        x = self.residual(x, attended, self.norm1)  # (B, T, D)
        h = self.sublayer_input(x, self.norm2)
        return self.residual(x, self.feed_forward(h), self.norm2)  # (B, T, D)


@dataclass
class DecoderOnlyCache:
    """One self-attention :class:`~transformer_lab.KVCache` per layer; ``length`` is the
    number of positions already cached (the offset of the next tokens)."""

    layers: list[KVCache] = field(default_factory=list)

    @classmethod
    def empty(cls, num_layers: int) -> "DecoderOnlyCache":
        return cls([KVCache() for _ in range(num_layers)])

    @property
    def length(self) -> int:
        return self.layers[0].length if self.layers else 0

    def reorder(self, index: Tensor) -> None:
        """Keep (or repeat) the batch rows ``index`` in every layer (beam search)."""
        for cache in self.layers:
            cache.reorder(index)

    def nbytes(self) -> int:
        """Bytes held by the cached keys and values of every layer."""
        return sum(t.numel() * t.element_size() for c in self.layers for t in (c.k, c.v) if t is not None)


class DecoderOnlyTransformer(nn.Module):
    """A decoder-only language model (module docstring): ``forward(tokens (B, L), mask=None)
    -> logits (B, L, V)``, row t scoring token t + 1. ``mask`` defaults to the tokens'
    padding mask and the causal mask (:meth:`mask`). ``decode(tokens, cache=cache)`` takes
    only the new tokens when a :class:`DecoderOnlyCache` (:meth:`new_cache`) holds the
    earlier ones. Attention is recorded by :func:`~transformer_lab.record_attention` under
    the module names, ``attn.maps["layers.0.self_attn"]`` (B, H, L, L).
    """

    def __init__(self, config: DecoderOnlyConfig, **parts: PartFactory):
        super().__init__()
        if not isinstance(config, DecoderOnlyConfig):
            raise TypeError(f"config must be a DecoderOnlyConfig, got {type(config).__name__}")
        self.config = c = config
        layer = c.layer_config(**parts)
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        positions = {"sinusoidal": PositionalEncoding, "learned": LearnedPositionalEncoding}.get(
            c.positional, NoPositionalEncoding)
        self.positions = positions(c.d_model, c.max_len, c.dropout)
        self.layers = nn.ModuleList(DecoderOnlyLayer.from_config(layer) for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)  # pre-LN stacks end with a norm
        self.output_projection = nn.Linear(c.d_model, c.vocab_size)
        if c.tie_embeddings:
            self.output_projection.weight = self.embed.weight  # one (V, D) matrix, as Section 3.4
        else:
            nn.init.xavier_uniform_(self.output_projection.weight)
        nn.init.zeros_(self.output_projection.bias)

    def mask(self, tokens: Tensor, offset: int = 0) -> Tensor:
        """(B, 1, T, T): non-padding tokens at or before the query; with ``offset`` cached
        positions, (T, offset + T): every cached position and the new ones up to the query."""
        causal = causal_mask(offset + tokens.size(1), device=tokens.device)[offset:]  # (T, offset + T)
        if offset:
            return causal
        return padding_mask(tokens, self.config.pad_id) & causal  # (B, 1, T, T)

    def new_cache(self) -> DecoderOnlyCache:
        return DecoderOnlyCache.empty(self.config.num_layers)

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> Tensor:
        """tokens (B, L) -> logits (B, L, V)."""
        return self.decode(tokens, mask)

    def decode(self, tokens: Tensor, mask: Tensor | None = None, cache: DecoderOnlyCache | None = None) -> Tensor:
        """tokens (B, T) -> logits (B, T, V); with ``cache``, ``tokens`` are the new ones
        and follow the cached positions (one new token sees every one of them)."""
        if not isinstance(tokens, Tensor) or tokens.dim() != 2 or tokens.numel() == 0:
            shape = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
            raise ValueError(f"tokens must be a (B, L) tensor of token ids with B >= 1 and L >= 1, got {shape}")
        if mask is not None:
            checks.tensor("mask", mask)
            if mask.dtype != torch.bool:
                raise TypeError(f"mask must be a boolean tensor (True = may attend), got dtype {mask.dtype}")
        if cache is not None and not isinstance(cache, DecoderOnlyCache):
            raise TypeError(f"cache must be a DecoderOnlyCache, got {type(cache).__name__}")
        if cache is not None and not cache.layers:
            cache.layers = DecoderOnlyCache.empty(len(self.layers)).layers
        offset = 0 if cache is None else cache.length
        if mask is None and (cache is None or tokens.size(1) > 1):
            mask = self.mask(tokens, offset)
        x = self.positions(self.embed(tokens, name="tokens"), offset=offset)  # (B, T, D)
        for i, layer in enumerate(self.layers):
            x = layer(x, mask, cache=None if cache is None else cache.layers[i])  # (B, T, D)
        return self.output_projection(self.norm(x))  # (B, T, V)


class LanguageModelBatch(NamedTuple):
    """A translation :class:`~transformer_lab.Batch` as one sequence per example:
    ``tokens`` = ``src <eos> <bos> y_1 .. y_n`` and ``targets`` = ``<pad> .. <pad> y_1 ..
    y_n <eos>`` (B, L), right-padded; ``prompt_lengths`` (B,) counts the source tokens;
    ``tgt_tokens`` the targets that count in the loss (the encoder-decoder's count)."""

    tokens: Tensor  # (B, L)
    targets: Tensor  # (B, L)
    prompt_lengths: Tensor  # (B,)
    tgt_tokens: int


def language_model_batch(batch: Batch, pad_id: int = 0) -> LanguageModelBatch:
    """Each example's source (without its padding) followed by its target input; the
    targets are the target output at the same places and ``pad_id`` (no loss) under the
    source. Source and target must share one vocabulary."""
    if not isinstance(batch, Batch):
        raise TypeError(f"batch must be a transformer_lab.Batch, got {type(batch).__name__}")
    rows, targets, lengths = [], [], []
    for src, tgt_in, tgt_out in zip(batch.src, batch.tgt_in, batch.tgt_out):
        src, tgt_in, tgt_out = src[src != pad_id], tgt_in[tgt_in != pad_id], tgt_out[tgt_out != pad_id]
        rows.append(torch.cat([src, tgt_in]))  # (S_b + T_b,)
        targets.append(torch.cat([torch.full_like(src, pad_id), tgt_out]))  # (S_b + T_b,)
        lengths.append(src.numel())
    pad = torch.nn.utils.rnn.pad_sequence
    return LanguageModelBatch(pad(rows, batch_first=True, padding_value=pad_id),  # (B, L)
                              pad(targets, batch_first=True, padding_value=pad_id),  # (B, L)
                              torch.tensor(lengths, device=batch.src.device), batch.tgt_tokens)


def language_model_loss_sum(model: DecoderOnlyTransformer, batch: LanguageModelBatch,
                            loss_fn: LabelSmoothingLoss) -> tuple[Tensor, Tensor]:
    """Summed next-token loss over the target tokens of ``batch``, and how many of them the
    model predicts (argmax) under teacher forcing: what
    :func:`~transformer_lab.batch_loss_sum` gives for the encoder-decoder."""
    logits = model(batch.tokens)  # (B, L, V)
    loss = loss_fn(logits, batch.targets) * batch.tgt_tokens
    keep = batch.targets != loss_fn.ignore_index  # (B, L)
    correct = ((logits.argmax(-1) == batch.targets) & keep).sum()
    return loss, correct
