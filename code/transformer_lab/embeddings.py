"""Token embeddings (Section 3.4 of Vaswani et al., 2017).

"We use learned embeddings to convert the input tokens and output tokens to vectors of
dimension d_model. [...] In the embedding layers, we multiply those weights by
sqrt(d_model)."

Shapes: B batch, L sequence length, D d_model, V vocabulary.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from . import checks

TOKEN_DTYPES = (torch.long, torch.int32)


def check_token_ids(tokens: Tensor, vocab_size: int, name: str = "tokens") -> None:
    """Raise a clear error unless ``tokens`` holds ids in [0, vocab_size) as ``torch.long``
    (or ``torch.int32``, the other index type ``nn.Embedding`` takes). The range is read
    in eager mode only: a graph being traced (``torch.compile``, an exporter) has no values
    to read, and reading them would break the graph."""
    checks.tensor(name, tokens)
    if tokens.dtype not in TOKEN_DTYPES:
        raise TypeError(f"{name} must hold integer token ids as torch.long (or torch.int32), got dtype {tokens.dtype}")
    if checks.tracing() or tokens.numel() == 0:
        return  # traced tokens hold no values to check (torch.compile, an exporter)
    low, high = torch.aminmax(tokens)  # one pass; the first int() waits for the device, once
    low, high = int(low), int(high)
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(
            f"{name} must hold ids in [0, {vocab_size}) for vocab_size={vocab_size}, got id {bad}"
        )


class TokenEmbedding(nn.Module):
    """Look up each token's vector and scale it by sqrt(d_model) (Section 3.4).

    ``forward(tokens (B, L)) -> (B, L, D)``: ``E[tokens] * sqrt(d_model)``.

    The matrix ``E`` (``self.weight``, shape (V, D)) starts from N(0, 1/d_model), so that
    the scaled embeddings have unit variance, the scale the sinusoidal positions have
    too. The same matrix can serve as the pre-softmax projection (weight tying,
    Section 3.4); ``padding_idx`` keeps that token's row at zero and out of the gradient.
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = None):
        super().__init__()
        checks.positive_int("vocab_size", vocab_size)
        checks.positive_int("d_model", d_model)
        if padding_idx is not None and not 0 <= padding_idx < vocab_size:
            raise ValueError(f"padding_idx must be in [0, {vocab_size}), got {padding_idx}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.padding_idx = padding_idx
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        self.scale = math.sqrt(d_model)
        self.reset_parameters()

    @property
    def weight(self) -> nn.Parameter:
        """The (V, D) embedding matrix E."""
        return self.embedding.weight

    def reset_parameters(self) -> None:
        nn.init.normal_(self.embedding.weight, mean=0.0, std=self.d_model**-0.5)
        if self.padding_idx is not None:
            with torch.no_grad():
                self.embedding.weight[self.padding_idx].zero_()

    def forward(self, tokens: Tensor, name: str = "tokens") -> Tensor:
        """``name`` is what an error calls ``tokens`` (the model passes ``src`` or ``tgt``)."""
        check_token_ids(tokens, self.vocab_size, name)
        return self.embedding(tokens) * self.scale  # (B, L, D)

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}, padding_idx={self.padding_idx}"
