"""The full encoder-decoder model (Figure 1 and Section 3 of Vaswani et al., 2017).

    src tokens -> embedding * sqrt(D) + positions -> Encoder   -> memory
    tgt tokens -> embedding * sqrt(D) + positions -> Decoder(memory) -> linear -> logits

Shapes: B batch, S source length, T target length, D d_model, V vocabulary.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .embeddings import TokenEmbedding
from .layers import Decoder, DecoderCache, Encoder
from .masks import causal_mask, padding_mask
from .positional_encoding import LearnedPositionalEncoding, PositionalEncoding

POSITIONAL_KINDS = ("sinusoidal", "learned")


@dataclass(frozen=True)
class TransformerConfig:
    """Hyperparameters of the model; the defaults are the paper's base model (Table 3).

    ``tie_embeddings``: the target embedding and the pre-softmax projection share one
    matrix (Section 3.4). ``shared_vocab``: source and target use one vocabulary (the
    paper's byte-pair vocabularies), so the source embedding shares that matrix too.
    ``dropout`` is the residual and embedding dropout P_drop (Section 5.4);
    ``attention_dropout`` and ``activation_dropout`` are extras the paper does not use.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    num_heads: int = 8
    d_ff: int = 2048
    num_layers: int = 6
    d_k: int | None = None
    d_v: int | None = None
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    max_len: int = 5000
    pad_id: int = 0
    norm_first: bool = False
    tie_embeddings: bool = True
    shared_vocab: bool = False
    positional: str = "sinusoidal"
    layer_norm_eps: float = 1e-5
    beam_size: int = 4
    length_penalty: float = 0.6

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "d_ff", "num_layers", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if (self.d_k is None or self.d_v is None) and self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by num_heads={self.num_heads} "
                f"(or give d_k and d_v explicitly)"
            )
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {value}")
        if self.positional not in POSITIONAL_KINDS:
            raise ValueError(f"positional must be one of {POSITIONAL_KINDS}, got {self.positional!r}")
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.shared_vocab and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"shared_vocab=True needs src_vocab_size == tgt_vocab_size, got "
                f"{self.src_vocab_size} and {self.tgt_vocab_size}"
            )
        if not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id must be a valid token id in both vocabularies, got {self.pad_id}")

    @classmethod
    def base(cls, vocab_size: int, tgt_vocab_size: int | None = None, **overrides) -> "TransformerConfig":
        """The base model of Table 3: N=6, d_model=512, d_ff=2048, h=8, P_drop=0.1."""
        return cls._preset(vocab_size, tgt_vocab_size, overrides)

    @classmethod
    def big(cls, vocab_size: int, tgt_vocab_size: int | None = None, **overrides) -> "TransformerConfig":
        """The big model of Table 3: N=6, d_model=1024, d_ff=4096, h=16, P_drop=0.3
        (0.3 for EN-DE; Section 6.1 uses 0.1 for EN-FR)."""
        sizes = dict(d_model=1024, num_heads=16, d_ff=4096, dropout=0.3)
        return cls._preset(vocab_size, tgt_vocab_size, {**sizes, **overrides})

    @classmethod
    def tiny(cls, vocab_size: int, tgt_vocab_size: int | None = None, **overrides) -> "TransformerConfig":
        """A laptop-sized model for the toy tasks and the live slides (not in the paper)."""
        sizes = dict(d_model=64, num_heads=4, d_ff=256, num_layers=2, max_len=512)
        return cls._preset(vocab_size, tgt_vocab_size, {**sizes, **overrides})

    @classmethod
    def _preset(cls, vocab_size, tgt_vocab_size, overrides) -> "TransformerConfig":
        tgt = vocab_size if tgt_vocab_size is None else tgt_vocab_size
        options = {"shared_vocab": tgt == vocab_size, **overrides}
        return cls(src_vocab_size=vocab_size, tgt_vocab_size=tgt, **options)

    def replace(self, **changes) -> "TransformerConfig":
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def count_parameters(module: nn.Module) -> int:
    """Number of unique trainable parameters; a tied matrix counts once."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


class Transformer(nn.Module):
    """The encoder-decoder Transformer of Figure 1.

    ``forward(src (B, S), tgt (B, T)) -> logits (B, T, V)``: teacher forcing, where
    ``tgt`` is the target shifted right (it starts with BOS). Masks default to the
    padding masks built from ``config.pad_id``, and a causal mask for the decoder's
    self-attention. ``encode`` and ``decode`` run the two halves separately, as
    decoding does; ``decode`` with a :class:`DecoderCache` takes only the new tokens.
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = c = config
        self.tgt_embed = TokenEmbedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.src_embed = (
            self.tgt_embed if c.shared_vocab else TokenEmbedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        )
        positions = PositionalEncoding if c.positional == "sinusoidal" else LearnedPositionalEncoding
        self.src_positions = positions(c.d_model, c.max_len, c.dropout)
        self.tgt_positions = positions(c.d_model, c.max_len, c.dropout)
        layer_options = dict(
            d_k=c.d_k,
            d_v=c.d_v,
            attention_dropout=c.attention_dropout,
            activation_dropout=c.activation_dropout,
            norm_first=c.norm_first,
            layer_norm_eps=c.layer_norm_eps,
        )
        self.encoder = Encoder(c.num_layers, c.d_model, c.num_heads, c.d_ff, c.dropout, **layer_options)
        self.decoder = Decoder(c.num_layers, c.d_model, c.num_heads, c.d_ff, c.dropout, **layer_options)
        self.output_projection = nn.Linear(c.d_model, c.tgt_vocab_size)
        if c.tie_embeddings:
            self.output_projection.weight = self.tgt_embed.weight  # one (V, D) matrix, Section 3.4
        else:
            nn.init.xavier_uniform_(self.output_projection.weight)
        nn.init.zeros_(self.output_projection.bias)

    # -- masks -----------------------------------------------------------------------
    def src_mask(self, src: Tensor) -> Tensor:
        """(B, 1, 1, S): every query may attend to every non-padding source token."""
        return padding_mask(src, self.config.pad_id)

    def tgt_mask(self, tgt: Tensor) -> Tensor:
        """(B, 1, T, T): non-padding target tokens at or before the query's position."""
        return padding_mask(tgt, self.config.pad_id) & causal_mask(tgt.size(1), device=tgt.device)

    # -- the two halves --------------------------------------------------------------
    def encode(self, src: Tensor, src_mask: Tensor | None = None, need_weights: bool = False):
        """src (B, S) -> memory (B, S, D), or (memory, [weights (B, H, S, S) per layer])."""
        self._check_tokens("src", src)
        if src_mask is None:
            src_mask = self.src_mask(src)
        x = self.src_positions(self.src_embed(src))  # (B, S, D)
        return self.encoder(x, src_mask, need_weights=need_weights)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
        need_weights: bool = False,
    ):
        """tgt (B, T) and memory (B, S, D) -> logits (B, T, V) (or (logits, weights)).

        ``src_mask`` masks the memory's padding; pass the same one ``encode`` used (the
        default, all positions visible, is right only without source padding). With a
        ``cache``, ``tgt`` holds the new tokens only, which may see all earlier ones.
        """
        self._check_tokens("tgt", tgt)
        if memory.size(0) != tgt.size(0):
            raise ValueError(
                f"memory and tgt must have the same batch size, got {memory.size(0)} and {tgt.size(0)}"
            )
        offset = cache.length if cache is not None else 0
        if tgt_mask is None and (cache is None or tgt.size(1) > 1):
            tgt_mask = self._incremental_tgt_mask(tgt, offset) if cache is not None else self.tgt_mask(tgt)
        x = self.tgt_positions(self.tgt_embed(tgt), offset=offset)  # (B, T, D)
        out = self.decoder(x, memory, tgt_mask, src_mask, need_weights=need_weights, cache=cache)
        x, weights = out if need_weights else (out, None)
        logits = self.output_projection(x)  # (B, T, V)
        return (logits, weights) if need_weights else logits

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        need_weights: bool = False,
    ):
        """Teacher forcing: src (B, S), tgt (B, T) -> logits (B, T, V).

        With ``need_weights=True`` returns ``(logits, {"encoder": [...], "decoder_self":
        [...], "cross": [...]})``, one (B, H, ., .) tensor per layer.
        """
        self._check_tokens("src", src)
        self._check_tokens("tgt", tgt)
        if src.size(0) != tgt.size(0):
            raise ValueError(f"src and tgt must have the same batch size, got {src.size(0)} and {tgt.size(0)}")
        if src_mask is None:
            src_mask = self.src_mask(src)
        if not need_weights:
            memory = self.encode(src, src_mask)
            return self.decode(tgt, memory, src_mask, tgt_mask)
        memory, encoder_weights = self.encode(src, src_mask, need_weights=True)
        logits, decoder_weights = self.decode(tgt, memory, src_mask, tgt_mask, need_weights=True)
        return logits, {
            "encoder": encoder_weights,
            "decoder_self": [w for w, _ in decoder_weights],
            "cross": [w for _, w in decoder_weights],
        }

    def new_cache(self) -> DecoderCache:
        """An empty cache for incremental decoding with :meth:`decode`."""
        return DecoderCache.empty(self.config.num_layers)

    # -- helpers ---------------------------------------------------------------------
    def _incremental_tgt_mask(self, tgt: Tensor, offset: int) -> Tensor:
        """(T, offset + T): new token i sees every cached position and new tokens <= i."""
        length = tgt.size(1)
        full = causal_mask(offset + length, device=tgt.device)
        return full[offset:]  # (T, offset + T)

    def _check_tokens(self, name: str, tokens: Tensor) -> None:
        if not isinstance(tokens, Tensor) or tokens.dim() != 2:
            shape = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
            raise ValueError(f"{name} must be a (B, L) tensor of token ids, got {shape}")
