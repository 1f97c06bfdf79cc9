"""Using a trained model: load it, translate text, see where the decoder looked.

Decoding follows Section 6.1 of Vaswani et al., 2017 (beam 4, alpha 0.6, at most input
length + 50 tokens); :func:`cross_attention` reads the encoder-decoder ("cross")
attention weights of an output (Section 3.2.3) through :func:`record_attention`.

Shapes: S source length, T output length, H heads.
"""

from __future__ import annotations

import os

import torch

from . import checks
from .checkpoint import CheckpointError, describe_error, load_checkpoint, resolve_checkpoint
from .data import BOS_ID, EOS_ID, Vocabulary
from .decoding import generate
from .model import Transformer, TransformerConfig
from .recording import record_attention


def load_model(checkpoint: str | os.PathLike, prefer_averaged: bool = True,
               device: str | torch.device = "cpu") -> tuple[Transformer, Vocabulary, Vocabulary]:
    """(model in eval mode, source vocabulary, target vocabulary) from a checkpoint file or
    a run's output directory (the averaged model when there is one). A checkpoint whose
    config, vocabularies or weights do not make a model raises :class:`CheckpointError`."""
    state = load_checkpoint(resolve_checkpoint(checkpoint, prefer_averaged=prefer_averaged))
    model, src_vocab, tgt_vocab = model_from_state(state)
    return model.to(device).eval(), src_vocab, tgt_vocab


def model_from_state(state: dict) -> tuple[Transformer, Vocabulary, Vocabulary]:
    """(model, source vocabulary, target vocabulary) rebuilt from a loaded checkpoint
    (:func:`load_checkpoint`'s dict); a part that does not fit raises
    :class:`CheckpointError` naming the file and the part."""
    path = state["path"]
    try:
        config = TransformerConfig(**state["config"])
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint {path!r} has an invalid model config: {describe_error(e)}") from e
    vocabs = []
    for key, size in (("src_vocab", config.src_vocab_size), ("tgt_vocab", config.tgt_vocab_size)):
        try:
            vocabs.append(Vocabulary.from_dict(state[key]))
        except (TypeError, ValueError) as e:
            raise CheckpointError(f"checkpoint {path!r} has an invalid {key}: {describe_error(e)}") from e
        if len(vocabs[-1]) != size:
            raise CheckpointError(f"checkpoint {path!r} has a {key} of {len(vocabs[-1])} symbols for a model "
                                  f"config of {size}")
    model = Transformer(config)
    try:
        model.load_state_dict(state["model"])
    except (RuntimeError, TypeError, ValueError) as e:  # missing, unexpected or misshapen entries
        raise CheckpointError(f"checkpoint {path!r} holds weights that do not fit its model config: "
                              f"{describe_error(e)}") from e
    return model, vocabs[0], vocabs[1]


@torch.no_grad()
def translate(model: Transformer, src_vocab: Vocabulary, tgt_vocab: Vocabulary, text: str,
              beam_size: int = 1, length_penalty: float = 0.6,
              extra_length: int = 50) -> tuple[list[int], torch.Tensor]:
    """Output ids (``<bos>`` ... ``<eos>``) for ``text`` and the source ids (1, S).
    Unknown source symbols become ``<unk>`` with a warning (from ``Vocabulary.encode``);
    a text without a symbol is a ``ValueError``."""
    device = next(model.parameters()).device
    if not src_vocab.tokens(text):
        raise ValueError(f"text must hold at least one symbol to translate, got {text!r}")
    src = torch.tensor([src_vocab.encode(text)], dtype=torch.long, device=device)  # (1, S)
    ids = generate(model, src, BOS_ID, EOS_ID, beam_size, length_penalty, extra_length)[0].tolist()
    if EOS_ID in ids:
        ids = ids[: ids.index(EOS_ID) + 1]
    return ids, src


def check_layer_head(model: Transformer, layer: int, head: int | None) -> None:
    """Raise unless decoder ``layer`` (negative counts from the end) and ``head`` (or None,
    the mean of all heads) exist in ``model``."""
    num_layers, num_heads = model.config.num_layers, model.config.num_heads
    if isinstance(layer, bool) or not isinstance(layer, int) or not -num_layers <= layer < num_layers:
        raise ValueError(f"layer must be an int in [{-num_layers}, {num_layers}), got {layer!r}")
    if head is not None:
        checks.index("head", head, num_heads)


@torch.no_grad()
def cross_attention(model: Transformer, src: torch.Tensor, out_ids: list[int], layer: int = -1,
                    head: int | None = None) -> torch.Tensor:
    """Cross-attention weights (T, S) of the decoder reading ``out_ids`` (teacher forcing):
    row t is what output token t+1 attended to when it was predicted. Averaged over heads
    unless ``head`` is given."""
    check_layer_head(model, layer, head)
    tgt = torch.tensor([out_ids[:-1]], dtype=torch.long, device=src.device)  # (1, T)
    with record_attention(model, [model.decoder.layers[layer].cross_attn]) as attn:
        model(src, tgt)
    weights = attn.cross[layer][0]  # (H, T, S)
    return weights.mean(0) if head is None else weights[head]  # (T, S)
