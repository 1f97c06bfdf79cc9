"""Using a trained model: load it, translate text, see where the decoder looked.

Decoding follows Section 6.1 of Vaswani et al., 2017 (beam 4, alpha 0.6, at most input
length + 50 tokens); :func:`cross_attention` reads the encoder-decoder ("cross")
attention weights of an output (Section 3.2.3) through :func:`record_attention`.

Shapes: S source length, T output length, H heads.
"""

from __future__ import annotations

import os

import torch

from .checkpoint import load_checkpoint, resolve_checkpoint
from .data import BOS_ID, EOS_ID, Vocabulary
from .decoding import generate
from .model import Transformer, TransformerConfig
from .recording import record_attention


def load_model(checkpoint: str | os.PathLike, prefer_averaged: bool = True,
               device: str | torch.device = "cpu") -> tuple[Transformer, Vocabulary, Vocabulary]:
    """(model in eval mode, source vocabulary, target vocabulary) from a checkpoint file or
    a run's output directory (the averaged model when there is one)."""
    state = load_checkpoint(resolve_checkpoint(checkpoint, prefer_averaged=prefer_averaged))
    model = Transformer(TransformerConfig(**state["config"]))
    model.load_state_dict(state["model"])
    return (model.to(device).eval(), Vocabulary.from_dict(state["src_vocab"]),
            Vocabulary.from_dict(state["tgt_vocab"]))


@torch.no_grad()
def translate(model: Transformer, src_vocab: Vocabulary, tgt_vocab: Vocabulary, text: str,
              beam_size: int = 1, length_penalty: float = 0.6,
              extra_length: int = 50) -> tuple[list[int], torch.Tensor]:
    """Output ids (``<bos>`` ... ``<eos>``) for ``text`` and the source ids (1, S).
    Unknown source symbols become ``<unk>`` with a warning (from ``Vocabulary.encode``)."""
    device = next(model.parameters()).device
    src = torch.tensor([src_vocab.encode(text)], dtype=torch.long, device=device)  # (1, S)
    ids = generate(model, src, BOS_ID, EOS_ID, beam_size, length_penalty, extra_length)[0].tolist()
    if EOS_ID in ids:
        ids = ids[: ids.index(EOS_ID) + 1]
    return ids, src


@torch.no_grad()
def cross_attention(model: Transformer, src: torch.Tensor, out_ids: list[int], layer: int = -1,
                    head: int | None = None) -> torch.Tensor:
    """Cross-attention weights (T, S) of the decoder reading ``out_ids`` (teacher forcing):
    row t is what output token t+1 attended to when it was predicted. Averaged over heads
    unless ``head`` is given."""
    num_layers, num_heads = model.config.num_layers, model.config.num_heads
    if not -num_layers <= layer < num_layers:
        raise ValueError(f"layer must be in [{-num_layers}, {num_layers}), got {layer!r}")
    if head is not None and not 0 <= head < num_heads:
        raise ValueError(f"head must be in [0, {num_heads}), got {head!r}")
    tgt = torch.tensor([out_ids[:-1]], dtype=torch.long, device=src.device)  # (1, T)
    with record_attention(model, [model.decoder.layers[layer].cross_attn]) as attn:
        model(src, tgt)
    weights = attn.cross[layer][0]  # (H, T, S)
    return weights.mean(0) if head is None else weights[head]  # (T, S)
