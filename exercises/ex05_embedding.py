"""Exercise 5: the token embedding (Section 3.4). Check it with `make exercises N=5`.

The report of `make exercises` names the slide that explains it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class TokenEmbedding(nn.Module):
    """Look each token up in a learned (V, D) matrix E and scale it by sqrt(d_model).

    Section 3.4: the model turns input and output tokens into vectors of size d_model with
    learned embeddings, and in the embedding layers those weights are multiplied by
    sqrt(d_model):

        x_i = E[t_i] * sqrt(d_model)

    ``__init__``: keep the matrix as ``self.embedding = nn.Embedding(vocab_size, d_model,
    padding_idx=padding_idx)`` (the grader loads the package's weights into it by that
    name). ``padding_idx`` is the padding token, whose row stays zero and gets no gradient.

    ``forward(tokens)``: tokens (B, L) of integer ids -> (B, L, D). ``name`` is what an
    error message calls ``tokens`` (the model passes "src" or "tgt"); you may ignore it.
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = None):
        super().__init__()
        raise NotImplementedError

    def forward(self, tokens: Tensor, name: str = "tokens") -> Tensor:
        raise NotImplementedError
