"""Exercise 12: label smoothing (Section 5.4). Check it with `make exercises N=12`.

The report of `make exercises` names the slide that explains it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class LabelSmoothingLoss(nn.Module):
    """Cross-entropy against label-smoothed targets; the paper uses epsilon_ls = 0.1.

    Section 5.4: label smoothing "hurts perplexity, as the model learns to be more unsure,
    but improves accuracy and BLEU score". The target distribution puts 1 - smoothing on
    the correct token and spreads ``smoothing`` uniformly over all V tokens (the correct
    one included), the convention of ``F.cross_entropy(label_smoothing=...)``:

        q(k) = (1 - smoothing) * [k == target] + smoothing / V
        loss = - sum_k q(k) log p(k),  averaged over the positions whose target is not
               ``ignore_index`` (padding counts for nothing)

    ``forward(logits (B, T, V), target (B, T)) -> a scalar tensor``.
    """

    def __init__(self, smoothing: float = 0.1, ignore_index: int = 0):
        super().__init__()
        raise NotImplementedError

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        raise NotImplementedError
