"""The decoder-only model as one ONNX graph, as :mod:`transformer_lab.export` writes the
encoder-decoder's two:

    path = decoder_only_to_onnx(model, "exported/decoder_only.onnx")
    # tokens (B, L) -> logits (B, L, V), self_attention_i (B, H, L, L)

One step of greedy decoding without a cache: the graph reads the prompt and the tokens
chosen so far, and the last row of ``logits`` scores the next token. Every layer's
attention weights (equation 1 of Vaswani et al., 2017, before dropout) are outputs, as
:func:`~transformer_lab.record_attention` records them. Batch and length are dynamic. The
file is written under a temporary name and moved into place once whole (an
:class:`~transformer_lab.export.OnnxWriteError` names it otherwise).

Shapes: B batch, L length, H heads, V vocabulary.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch
from torch import Tensor, nn

from .decoder_only import DecoderOnlyTransformer
from .export import _export, _replace_together, _writing
from .recording import record_attention


def decoder_only_output_names(num_layers: int) -> list[str]:
    """``logits``, then ``self_attention_0`` ... one per layer."""
    return ["logits"] + [f"self_attention_{i}" for i in range(num_layers)]


class DecoderOnlyWithAttention(nn.Module):
    """``forward(tokens (B, L)) -> (logits (B, L, V), *self-attention weights (B, H, L, L))``."""

    def __init__(self, model: DecoderOnlyTransformer):
        super().__init__()
        self.model = model

    def forward(self, tokens: Tensor) -> tuple[Tensor, ...]:
        attention = [layer.self_attn for layer in self.model.layers]
        with record_attention(self.model, attention) as record:
            logits = self.model(tokens)  # (B, L, V), padding and causal masks by default
        return (logits, *(record.maps[f"layers.{i}.self_attn"] for i in range(len(attention))))


def decoder_only_to_onnx(model: DecoderOnlyTransformer, path: str | os.PathLike) -> Path:
    """Write ``model`` as one ONNX file at ``path`` (its folder made if missing) and return
    the path. Traced in evaluation mode (no dropout); ``model``'s mode is restored."""
    if not isinstance(model, DecoderOnlyTransformer):
        raise TypeError(f"model must be a transformer_lab.DecoderOnlyTransformer, got {type(model).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    was_training = model.training
    device = next(model.parameters()).device
    # B=2, L=5: unequal sizes, so the tracer cannot confuse one axis with the other
    tokens = torch.full((2, 5), model.config.pad_id + 1, dtype=torch.long, device=device) % model.config.vocab_size
    written: dict[Path, str] = {}
    try:
        with torch.no_grad(), _writing(path, written) as tmp:
            _export(DecoderOnlyWithAttention(model).eval(), (tokens,), tmp, {"tokens": {0: "batch", 1: "length"}},
                    decoder_only_output_names(model.config.num_layers))
        _replace_together(written)
    finally:
        model.train(was_training)
        for tmp in written.values():
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return path
