"""The three families of Transformer models in one picture: what each position may see (its
mask) and what it is trained to predict.

- encoder-only (BERT, Devlin et al., 2019): no mask, every position sees every other; a
  share of the input tokens is replaced by ``[MASK]`` and the model predicts the originals
  there, and nothing elsewhere;
- decoder-only (GPT, Radford et al., 2018): the causal mask (Section 3.2.3); every
  position predicts the next token;
- encoder-decoder (this paper; T5, Raffel et al., 2020): the encoder unmasked, the decoder
  causal over the target plus cross-attention to every source position (Section 3.2.3);
  every target position predicts the next target token.

:func:`model_families` builds the three with the package's masks (``causal_mask``; one
square matrix per family, rows the positions that read, columns the positions read, the
encoder-decoder's source first, then its target); :func:`plot_model_families` draws them.
Masks follow the package's convention: ``True`` = may attend.

Shapes: Q positions that read (rows), K positions read (columns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from ..masks import causal_mask
from .plots_attention import _draw_mask, _mask_legend
from .style import OTHER, as_array, check_labels, styled


@dataclass(frozen=True)
class Family:
    """One family: its ``name``, an ``example`` model with its paper, the ``tokens`` its
    positions read (rows and columns of ``mask``, (Q, Q) boolean, ``True`` = may attend),
    and ``targets``, what each position is trained to predict (``None``: no loss there).
    ``split`` is where the source ends and the target begins (0 for a single stack)."""

    name: str
    example: str
    tokens: tuple[str, ...]
    mask: torch.Tensor
    targets: tuple[str | None, ...]
    split: int = 0

    def __post_init__(self):
        n = len(self.tokens)
        if not isinstance(self.mask, torch.Tensor) or self.mask.dtype != torch.bool or tuple(self.mask.shape) != (n, n):
            raise ValueError(f"mask must be a boolean ({n}, {n}) tensor, one row and column per token, got "
                             f"{getattr(self.mask, 'shape', type(self.mask).__name__)}")
        if len(self.targets) != n:
            raise ValueError(f"targets must have one entry per token ({n}), got {len(self.targets)}")
        if not 0 <= self.split < n:
            raise ValueError(f"split must be in [0, {n}), got {self.split}")


def model_families(words: Sequence[str] = ("the", "cat", "slept"),
                   translation: Sequence[str] = ("die", "Katze", "schlief"), masked: int = 1) -> list[Family]:
    """The three families on one short sentence ``words``: encoder-only with the word at
    index ``masked`` replaced by ``[MASK]``, decoder-only reading ``words`` and predicting
    each next word (then ``<eos>``), encoder-decoder translating ``words`` into ``translation``
    (the decoder reads ``<bos>`` and the translation shifted right, Section 3.1)."""
    words, translation = tuple(words), tuple(translation)
    if not words or not translation:
        raise ValueError("words and translation must each hold at least one token")
    if not 0 <= masked < len(words):
        raise ValueError(f"masked must index a word of words (0 to {len(words) - 1}), got {masked}")
    n, t = len(words), len(translation)
    encoder_only = Family(
        "encoder-only", "BERT",
        tuple("[MASK]" if i == masked else w for i, w in enumerate(words)),
        torch.ones(n, n, dtype=torch.bool),  # no mask: every position sees every other
        tuple(w if i == masked else None for i, w in enumerate(words)))
    decoder_only = Family(
        "decoder-only", "GPT", words, causal_mask(n), words[1:] + ("<eos>",))
    mask = torch.zeros(n + t + 1, n + t + 1, dtype=torch.bool)  # source rows first, then the target's
    mask[:n, :n] = True  # encoder self-attention: unmasked
    mask[n:, :n] = True  # cross-attention: every target position reads every source position
    mask[n:, n:] = causal_mask(t + 1)  # decoder self-attention: causal
    encoder_decoder = Family(
        "encoder-decoder", "this paper, T5", words + ("<bos>",) + translation, mask,
        (None,) * n + translation + ("<eos>",), split=n)
    return [encoder_only, decoder_only, encoder_decoder]


@styled
def plot_model_families(families: Sequence[Family]) -> Figure:
    """One mask per family side by side (:func:`model_families`): a row is a position
    reading, a column a position read, light grey where it may attend and the mask colour
    where it may not; right of each row, the token it is trained to predict ("-": none).
    An encoder-decoder's source and target blocks are split by lines and named."""
    families = list(families)
    if not families or not all(isinstance(f, Family) for f in families):
        raise ValueError("families must be a non-empty sequence of Family (model_families())")
    sizes = [len(f.tokens) for f in families]
    fig = Figure(figsize=(10.0, 4.4), layout="constrained")  # a slide below its title
    axes = fig.subplots(1, len(families), squeeze=False, width_ratios=sizes)[0]
    for a, f in zip(axes, families):
        m = as_array(f.mask, "mask", 2, "(Q, Q)")
        labels = check_labels(f.tokens, m.shape[0], "tokens", "position")
        _draw_mask(a, m, labels, labels, show_queries=True)
        a.set_aspect("equal")  # one cell size in every panel
        a.set_anchor("N")  # the panels aligned at the top
        a.set_title(f"{f.name}\n({f.example})")
        for row, target in enumerate(f.targets):
            a.annotate(f"→ {target}" if target is not None else "-", (1.0, row), xycoords=("axes fraction", "data"),
                       xytext=(8, 0), textcoords="offset points", va="center",
                       color=OTHER["vermillion"] if target is not None else OTHER["grey"])
        if f.split:
            for line in (a.axhline, a.axvline):
                line(f.split - 0.5, color=OTHER["vermillion"], lw=3)
            for start, stop, name in ((0, f.split, "source"), (f.split, len(f.tokens), "target")):
                a.annotate(name, ((start + stop - 1) / 2, len(f.tokens) - 0.5), xytext=(0, -6),
                           textcoords="offset points", ha="center", va="top")
    axes[0].set_ylabel("position reading")
    fig.legend(handles=_mask_legend() + [_target_key()], loc="outside lower center", ncol=3)
    return fig


def _target_key():
    from matplotlib.lines import Line2D
    return Line2D([], [], color=OTHER["vermillion"], marker="$→$", linestyle="none", markersize=14,
                  label="trained to predict")
