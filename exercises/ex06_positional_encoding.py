"""Exercise 6: the sinusoidal positional encoding (Section 3.5) and the module that adds
it to the embeddings. Check it with `make exercises N=6`.

The report of `make exercises` names the slide that explains it. Write the table first:
``PositionalEncoding`` builds its buffer with your ``sinusoidal_positional_encoding``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_positional_encoding(
    length: int, d_model: int, *, dtype: torch.dtype = torch.float32, device=None
) -> Tensor:
    """The table of sinusoids the model adds to its embeddings: shape (length, d_model).

    Section 3.5: each dimension of the encoding is a sinusoid, sine in the even columns and
    cosine in the odd ones, with wavelengths from 2*pi to 10000 * 2*pi:

        PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
        PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

    ``pos`` runs over 0 .. length - 1 (the rows), ``i`` over 0 .. d_model/2 - 1 (the column
    pairs). ``d_model`` is even. Return the table in ``dtype`` on ``device`` (compute it in
    float64 and cast, as the package does, or directly in ``dtype``).
    """
    raise NotImplementedError


class PositionalEncoding(nn.Module):
    """Adds the table to the embeddings, then dropout (Sections 3.5 and 5.4: "we apply
    dropout to the sums of the embeddings and the positional encodings").

    ``__init__`` is written: the table of ``max_len`` rows is a non-persistent buffer,
    ``self.table`` (max_len, d_model), and ``self.dropout`` an ``nn.Dropout``.
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("table", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Dropout(x + PE[offset : offset + L]) for x (B, L, d_model) -> (B, L, d_model).

        ``offset`` is the position of the first row of ``x``: decoding with a key/value
        cache feeds one new token at a time, at position offset = the tokens decoded so
        far. Add the table in ``x``'s dtype.
        """
        raise NotImplementedError
