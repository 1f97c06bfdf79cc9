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

from . import checks
from .embeddings import TokenEmbedding
from .layers import PARTS, Decoder, DecoderCache, Encoder, LayerConfig, PartFactory
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
        for name in ("src_vocab_size", "tgt_vocab_size", "d_ff", "num_layers", "max_len"):
            checks.positive_int(name, getattr(self, name))
        self.layer_config()  # heads, d_k and d_v, the dropouts, layer_norm_eps: checked there
        checks.one_of("positional", self.positional, POSITIONAL_KINDS)
        checks.positive_int("beam_size", self.beam_size)
        checks.finite_number("length_penalty", self.length_penalty, minimum=0.0)
        if self.positional == "sinusoidal":
            checks.positive_even_int("d_model", self.d_model, "sinusoidal positions come in sin/cos pairs")
        if self.shared_vocab and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"shared_vocab=True needs src_vocab_size == tgt_vocab_size, got "
                f"{self.src_vocab_size} and {self.tgt_vocab_size}"
            )
        if not 0 <= self.pad_id < min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(f"pad_id must be a valid token id in both vocabularies, got {self.pad_id!r}")

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

    def layer_config(self, **parts: PartFactory) -> LayerConfig:
        """The options every encoder and decoder layer gets: the fields of this config that
        :class:`LayerConfig` has, by the same names, and ``parts`` (``self_attention``,
        ``cross_attention``, ``feed_forward``) where a variant replaces the paper's."""
        unknown = sorted(set(parts) - set(PARTS))
        if unknown:
            raise TypeError(f"parts must be among {PARTS}, got {unknown}")
        names = [f.name for f in dataclasses.fields(LayerConfig) if f.name not in PARTS]
        return LayerConfig(**{name: getattr(self, name) for name in names}, **parts)

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
    Masks are named and ordered ``src_mask, tgt_mask`` here and in every layer below.

    ``parts`` plug a variant into every layer: ``self_attention``, ``cross_attention``
    or ``feed_forward``, each a factory ``LayerConfig -> nn.Module`` (see
    :class:`LayerConfig`), e.g. ``Transformer(config, self_attention=MyAttention.build)``.
    They are code, not options, so they are not in the config (nor in its checkpoints).
    """

    def __init__(self, config: TransformerConfig, **parts: PartFactory):
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
        layer = c.layer_config(**parts)  # one config for every layer of both stacks
        self.encoder = Encoder.from_config(c.num_layers, layer)
        self.decoder = Decoder.from_config(c.num_layers, layer)
        self.output_projection = nn.Linear(c.d_model, c.tgt_vocab_size)
        if c.tie_embeddings:
            self.output_projection.weight = self.tgt_embed.weight  # one (V, D) matrix, Section 3.4
        else:
            nn.init.xavier_uniform_(self.output_projection.weight)
        nn.init.zeros_(self.output_projection.bias)

    # -- masks: the defaults, built here and nowhere else -----------------------------
    def src_mask(self, src: Tensor) -> Tensor:
        """(B, 1, 1, S): every query may attend to every non-padding source token."""
        return padding_mask(src, self.config.pad_id)

    def tgt_mask(self, tgt: Tensor, offset: int = 0) -> Tensor:
        """(B, 1, T, T): non-padding target tokens at or before the query's position.

        With ``offset`` positions already in a decoding cache: (T, offset + T), where new
        token i sees every cached position and the new tokens up to itself.
        """
        causal = causal_mask(offset + tgt.size(1), device=tgt.device)[offset:]  # (T, offset + T)
        if offset:
            return causal
        return padding_mask(tgt, self.config.pad_id) & causal  # (B, 1, T, T)

    # -- the two halves --------------------------------------------------------------
    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """src (B, S) -> memory (B, S, D). ``src_mask`` defaults to :meth:`src_mask`."""
        self._check_tokens("src", src)
        self._check_mask("src_mask", src_mask)
        if src_mask is None:
            src_mask = self.src_mask(src)
        x = self.src_positions(self.src_embed(src, name="src"))  # (B, S, D)
        return self.encoder(x, src_mask)  # (B, S, D)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
    ) -> Tensor:
        """tgt (B, T) and memory (B, S, D) -> logits (B, T, V).

        ``src_mask`` masks the memory's padding; pass the same one ``encode`` used (the
        default, all positions visible, is right only without source padding). With a
        ``cache``, ``tgt`` holds the new tokens only, which may see all earlier ones; the
        cache knows how many came before.
        """
        self._check_tokens("tgt", tgt)
        self._check_mask("src_mask", src_mask)
        self._check_mask("tgt_mask", tgt_mask)
        checks.tensor("memory", memory)
        if memory.size(0) != tgt.size(0):
            raise ValueError(
                f"memory and tgt must have the same batch size, got {memory.size(0)} and {tgt.size(0)}"
            )
        offset = 0 if cache is None else cache.length
        if tgt_mask is None and (cache is None or tgt.size(1) > 1):  # one new token sees everything
            tgt_mask = self.tgt_mask(tgt, offset)
        x = self.tgt_positions(self.tgt_embed(tgt, name="tgt"), offset=offset)  # (B, T, D)
        x = self.decoder(x, memory, src_mask, tgt_mask, cache=cache)  # (B, T, D)
        return self.output_projection(x)  # (B, T, V)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
    ) -> Tensor:
        """Teacher forcing: src (B, S), tgt (B, T) -> logits (B, T, V).

        For the attention weights, run it inside :func:`transformer_lab.record_attention`.
        """
        self._check_tokens("src", src)
        self._check_tokens("tgt", tgt)
        self._check_mask("src_mask", src_mask)
        if src.size(0) != tgt.size(0):
            raise ValueError(f"src and tgt must have the same batch size, got {src.size(0)} and {tgt.size(0)}")
        if src_mask is None:
            src_mask = self.src_mask(src)  # built once: the encoder and the decoder read it
        memory = self.encode(src, src_mask)  # (B, S, D)
        return self.decode(tgt, memory, src_mask, tgt_mask)  # (B, T, V)

    def new_cache(self) -> DecoderCache:
        """An empty cache for incremental decoding with :meth:`decode`."""
        return DecoderCache.empty(self.config.num_layers)

    def _check_tokens(self, name: str, tokens: Tensor) -> None:
        """``src`` or ``tgt``: (B, L) with B >= 1 and L >= 1."""
        if not isinstance(tokens, Tensor) or tokens.dim() != 2:
            shape = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
            raise ValueError(f"{name} must be a (B, L) tensor of token ids, got {shape}")
        if tokens.numel() == 0:
            raise ValueError(f"{name} must hold at least one sequence of at least one token (B >= 1, L >= 1), "
                             f"got shape {tuple(tokens.shape)}")
        # dtype and range: checked once, by the embedding, under this name

    @staticmethod
    def _check_mask(name: str, mask: Tensor | None) -> None:
        """A mask is a boolean tensor (True = may attend); its shape is checked where it is used."""
        if mask is not None:
            checks.tensor(name, mask)
            if mask.dtype != torch.bool:
                raise TypeError(f"{name} must be a boolean tensor (True = may attend), got dtype {mask.dtype}")
