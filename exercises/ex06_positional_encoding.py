"""Exercise 6: the sinusoidal positional encoding (Section 3.5). Check it with
`make exercises N=6`.

The report of `make exercises` names the slide that explains it.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


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
