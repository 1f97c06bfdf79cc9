"""Training (Section 5 of Vaswani et al., 2017): the loss and the learning-rate schedule.

Shapes: B batch, T target length, V vocabulary.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def noam_learning_rate(step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """Equation (3), Section 5.3:

        lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    It rises linearly for ``warmup_steps`` steps, then decays as 1/sqrt(step); the peak,
    at ``step == warmup_steps``, is ``(d_model * warmup_steps)^-0.5``. Step 0 (before the
    first update) gives 0. ``factor`` scales the whole curve.
    """
    if not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be a non-negative int, got {step!r}")
    if not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"d_model must be a positive int, got {d_model!r}")
    if not isinstance(warmup_steps, int) or warmup_steps < 1:
        raise ValueError(f"warmup_steps must be a positive int, got {warmup_steps!r}")
    if step == 0:
        return 0.0
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


class LabelSmoothingLoss(nn.Module):
    """Cross-entropy against label-smoothed targets (Section 5.4, epsilon_ls = 0.1).

    The target distribution puts ``1 - smoothing`` on the correct token and spreads
    ``smoothing`` uniformly over all V tokens (the convention of
    ``F.cross_entropy(label_smoothing=...)``, which this equals for every ``smoothing``).
    Positions whose target is ``ignore_index`` (padding) count for nothing; the result is
    the mean over the remaining positions. "This hurts perplexity, as the model learns to
    be more unsure, but improves accuracy and BLEU score."

    ``forward(logits (B, T, V), target (B, T)) -> scalar``.
    """

    def __init__(self, smoothing: float = 0.1, ignore_index: int = 0):
        super().__init__()
        if not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
        self.smoothing = smoothing
        self.ignore_index = ignore_index

    def target_distribution(self, target: Tensor, vocab_size: int) -> Tensor:
        """The smoothed distribution q(k | position), shape target.shape + (V,)."""
        q = torch.full((*target.shape, vocab_size), self.smoothing / vocab_size, device=target.device)
        q.scatter_(-1, target.clamp(min=0).unsqueeze(-1), 1.0 - self.smoothing + self.smoothing / vocab_size)
        return q

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        if logits.dim() < 2 or logits.shape[:-1] != target.shape:
            raise ValueError(
                f"logits must have shape target.shape + (V,), got logits {tuple(logits.shape)} "
                f"and target {tuple(target.shape)}"
            )
        log_p = torch.log_softmax(logits.float(), dim=-1)  # (B, T, V)
        keep = target != self.ignore_index  # (B, T)
        nll = -log_p.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (B, T)
        uniform = -log_p.mean(dim=-1)  # (B, T): cross-entropy against the uniform distribution
        loss = (1.0 - self.smoothing) * nll + self.smoothing * uniform
        count = keep.sum()
        return (loss * keep).sum() / count.clamp(min=1)

    def extra_repr(self) -> str:
        return f"smoothing={self.smoothing}, ignore_index={self.ignore_index}"
