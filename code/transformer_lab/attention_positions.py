"""Models whose positions live inside attention (rotary, ALiBi) add none to the embeddings.

The paper adds its sinusoids to the embeddings (Section 3.5). Rotary positions
(:mod:`transformer_lab.rotary`) turn the queries and keys instead, and ALiBi
(:mod:`transformer_lab.alibi`) biases the scores; with either, the table below the first
layer goes. :class:`NoPositionalEncoding` is the embeddings' dropout alone, with the
positional modules' call, and :func:`remove_positional_encoding` puts it in a built
model's place (the paper's ``TransformerConfig.positional`` offers only "sinusoidal" and
"learned"). Without any position at all, self-attention does not see order (a causal
mask lets a decoder infer some: Haviv et al., 2022).

Shapes: B batch, L length, D d_model.
"""

from __future__ import annotations

from torch import Tensor, nn

from . import checks
from .positional_encoding import LearnedPositionalEncoding, PositionalEncoding


class NoPositionalEncoding(nn.Module):
    """``forward(x (B, L, D), offset=0) -> Dropout(x)``: the call of
    :class:`~transformer_lab.PositionalEncoding` with nothing added (dropout on the
    embeddings stays, Section 5.4). ``max_len`` still bounds ``offset + L``, as the
    model's other limits (a learned table's rows) are set by it."""

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        self.d_model = checks.positive_int("d_model", d_model)
        self.max_len = checks.positive_int("max_len", max_len)
        self.dropout = nn.Dropout(checks.fraction("dropout", dropout))

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(f"x must have shape (B, L, d_model={self.d_model}), got {tuple(x.shape)}")
        if not checks.exporting() and offset + x.size(1) > self.max_len:
            raise ValueError(f"sequence of length {offset + x.size(1)} is longer than max_len={self.max_len}")
        return self.dropout(x)  # (B, L, D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


def remove_positional_encoding(model: nn.Module) -> nn.Module:
    """Replace every additive positional encoding directly inside ``model`` (a
    :class:`~transformer_lab.Transformer`'s ``src_positions`` and ``tgt_positions``) by a
    :class:`NoPositionalEncoding` of the same size, ``max_len`` and dropout, in place, and
    return ``model``. For a model whose attention applies positions itself (rotary, ALiBi)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    replaced = 0
    for name, child in list(model.named_children()):
        if isinstance(child, (PositionalEncoding, LearnedPositionalEncoding)):
            setattr(model, name, NoPositionalEncoding(child.d_model, child.max_len, child.dropout.p))
            replaced += 1
    if not replaced:
        raise ValueError(f"model must hold a PositionalEncoding or LearnedPositionalEncoding as a direct "
                         f"child, got {type(model).__name__} without one")
    return model
