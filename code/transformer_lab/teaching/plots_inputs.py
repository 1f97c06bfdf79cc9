"""What the first encoder layer reads for one sentence: each token's embedding scaled by
sqrt(d_model) (Section 3.4) plus its position's encoding (Section 3.5).

    inputs = sentence_inputs(model, src_vocab, "the cat did not cross the road")
    inputs.tokens                       # the words, then "<eos>", as the encoder sees them
    inputs.embedding.norm(dim=-1)       # (S,) one length per token
    fig = plot_token_vectors(model, src_vocab, "the cat did not cross the road")

Shapes: S source length (the sentence's tokens and its ``<eos>``), D d_model.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from matplotlib.figure import Figure

from .. import checks
from ..data import Vocabulary
from ..model import Transformer
from .style import DIVERGING_CMAP, TEXT_PT, WIDE_FIGSIZE, add_colorbar, styled

#: Columns shown by default (all of them when d_model is smaller): a third of a slide holds
#: 32 columns of 8 px each, wide enough to see single cells; the positional encoding's
#: fast columns come first, and from about column 2i = d_model / 2 on they barely change
#: over a sentence's positions.
DEFAULT_DIMS = 32
#: Points of height per token row, so each row's label stays at slide size.
_ROW_PT = 1.15 * TEXT_PT


class SentenceInputs(NamedTuple):
    """One sentence on its way into the encoder, in eval mode (no dropout): ``total`` is
    ``embedding + positions``, what the first encoder layer reads."""

    tokens: list[str]  # S tokens: the sentence's words, then "<eos>"
    embedding: torch.Tensor  # (S, D) E[token] * sqrt(d_model)
    positions: torch.Tensor  # (S, D) the positional encoding added to it
    total: torch.Tensor  # (S, D) the encoder's input


def _check(model, src_vocab, sentence) -> list[int]:
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lab.Transformer, got {type(model).__name__}")
    if not isinstance(src_vocab, Vocabulary):
        raise TypeError(f"src_vocab must be a transformer_lab Vocabulary, got {type(src_vocab).__name__}")
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError(f"sentence must be a non-empty string, got {sentence!r}")
    unknown = [s for s in dict.fromkeys(src_vocab.tokens(sentence)) if s not in src_vocab.stoi]
    if unknown:
        raise ValueError(f"sentence has {len(unknown)} word(s) not in the source vocabulary: "
                         + ", ".join(repr(s) for s in unknown))
    return src_vocab.encode(sentence)


@torch.no_grad()
def sentence_inputs(model: Transformer, src_vocab: Vocabulary, sentence: str) -> SentenceInputs:
    """``sentence`` through the model's source embedding and positional encoding, as
    :meth:`Transformer.encode` sends it to the encoder (Sections 3.4 and 3.5), in eval mode;
    the model's mode is left as it was. Words missing from ``src_vocab`` raise a
    ``ValueError`` naming them (``encode`` would map them to ``<unk>`` silently)."""
    ids = _check(model, src_vocab, sentence)
    src = torch.tensor([ids], device=next(model.parameters()).device)  # (1, S)
    training = model.training
    model.eval()
    try:
        embedding = model.src_embed(src, name="src")  # (1, S, D), already times sqrt(d_model)
        total = model.src_positions(embedding)  # (1, S, D): embedding + positions, no dropout in eval
        positions = model.src_positions.positions(src.size(1), 0, embedding)  # (S, D)
    finally:
        model.train(training)
    return SentenceInputs([src_vocab.itos[i] for i in ids], embedding[0].cpu(), positions.cpu(), total[0].cpu())


def _check_dims(dims, d_model: int) -> int:
    if dims is None:
        return min(d_model, DEFAULT_DIMS)
    checks.positive_int("dims", dims)
    if dims > d_model:
        raise ValueError(f"dims must be at most d_model={d_model}, got {dims}")
    return dims


@styled
def plot_token_vectors(model: Transformer, src_vocab: Vocabulary, sentence: str, *, dims: int | None = None,
                       title: str | None = None) -> Figure:
    """Three heatmaps side by side, one row per token of ``sentence`` and one column per
    model dimension: the scaled token embedding, the positional encoding added to it, and
    their sum, the first encoder layer's input (:func:`sentence_inputs`). One colour scale,
    symmetric about zero, for all three. ``dims``: how many columns to show, from
    the first (default ``DEFAULT_DIMS`` = 32, or all if d_model is smaller). The figure grows
    with the sentence up to 5.6 inches: about 16 tokens keep their labels apart."""
    inputs = sentence_inputs(model, src_vocab, sentence)
    D = inputs.total.size(1)
    dims = _check_dims(dims, D)
    S = len(inputs.tokens)
    panels = [inputs.embedding, inputs.positions, inputs.total]
    titles = ["token embedding\n× √d_model", "+ positional\nencoding", "= encoder input"]
    top = max(float(p[:, :dims].abs().max()) for p in panels) or 1.0
    fig = Figure(figsize=(WIDE_FIGSIZE[0], min(5.6, 1.5 + S * _ROW_PT / 72)), layout="constrained")
    axes = fig.subplots(1, 3, sharey=True)
    for a, panel, name in zip(axes, panels, titles):
        image = a.imshow(panel[:, :dims].numpy(), cmap=DIVERGING_CMAP, vmin=-top, vmax=top, aspect="auto",
                         interpolation="nearest")
        a.set_title(name)
        a.set_xticks(np.arange(0, dims, max(1, dims // 4)))
        a.tick_params(left=False)
        for side in ("top", "right"):
            a.spines[side].set_visible(False)
    axes[0].set_yticks(range(S), inputs.tokens)
    fig.supxlabel(f"column (d_model = {D})" if dims == D else f"column (the first {dims} of d_model = {D})")
    add_colorbar(fig, image, list(axes), "entry of the vector", shrink=0.9, pad=0.02, aspect=25)
    if title:
        fig.suptitle(title)
    return fig
