"""Training (Section 5 of Vaswani et al., 2017): the loss and the learning-rate schedule.

Shapes: B batch, T target length, V vocabulary.
"""

from __future__ import annotations

import contextlib

import torch
from torch import Tensor, nn

from . import checks


def noam_learning_rate(step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """Equation (3), Section 5.3:

        lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    It rises linearly for ``warmup_steps`` steps, then decays as 1/sqrt(step); the peak,
    at ``step == warmup_steps``, is ``(d_model * warmup_steps)^-0.5``. Step 0 (before the
    first update) gives 0. ``factor`` scales the whole curve.
    """
    checks.non_negative_int("step", step)
    checks.positive_int("d_model", d_model)
    checks.positive_int("warmup_steps", warmup_steps)
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
        self.smoothing = checks.fraction("smoothing", smoothing)
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


# --------------------------------------------------------------------------- optimiser and schedule

PAPER_BETAS = (0.9, 0.98)
PAPER_EPS = 1e-9


def make_optimizer(
    model: nn.Module, betas: tuple[float, float] = PAPER_BETAS, eps: float = PAPER_EPS, weight_decay: float = 0.0
) -> torch.optim.Adam:
    """Adam with the paper's settings (Section 5.3): beta1 = 0.9, beta2 = 0.98, eps = 1e-9.

    The learning rate is set by :class:`WarmupSchedule`, so the optimiser starts at 1.0 (the
    schedule multiplies it). Tied matrices (Section 3.4) appear once.
    """
    return torch.optim.Adam(model.parameters(), lr=1.0, betas=betas,
                            eps=eps, weight_decay=weight_decay)


class WarmupSchedule(torch.optim.lr_scheduler.LRScheduler):
    """Equation (3) of Section 5.3 as a PyTorch scheduler: ``warmup_steps`` of linear
    warm-up, then inverse-square-root decay, scaled by ``factor``.

    Update number n (1-based) uses ``noam_learning_rate(n, d_model, warmup_steps, factor)``;
    call ``scheduler.step()`` after every ``optimizer.step()``. ``scheduler.last_epoch``
    counts the updates done. The optimiser's base learning rate multiplies the curve, so
    create the optimiser with ``lr=1.0`` (as :func:`make_optimizer` does). The paper uses
    ``warmup_steps = 4000`` and factor 1; toy runs a few hundred steps long need a shorter
    warm-up (see ``RECIPES`` in ``transformer_lab.run``).
    """

    def __init__(self, optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int = 4000,
                 factor: float = 1.0, last_epoch: int = -1):
        noam_learning_rate(1, d_model, warmup_steps, factor)  # validates the arguments
        checks.positive_number("factor", factor)
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor
        super().__init__(optimizer, last_epoch)

    def rate(self, update: int) -> float:
        return noam_learning_rate(update, self.d_model, self.warmup_steps, self.factor)

    def get_lr(self) -> list[float]:
        rate = self.rate(self.last_epoch + 1)
        return [base * rate for base in self.base_lrs]


# --------------------------------------------------------------------------- one step


def batch_loss_sum(model: nn.Module, batch, loss_fn: LabelSmoothingLoss) -> tuple[Tensor, Tensor]:
    """Summed (not averaged) smoothed loss over the non-padding targets of ``batch``, and
    the number of targets predicted correctly (argmax under teacher forcing)."""
    logits = model(batch.src, batch.tgt_in)  # (B, T, V)
    loss = loss_fn(logits, batch.tgt_out) * batch.tgt_tokens
    keep = batch.tgt_out != loss_fn.ignore_index  # (B, T)
    correct = ((logits.argmax(-1) == batch.tgt_out) & keep).sum()
    return loss, correct


def train_step(
    model: nn.Module,
    batches,
    loss_fn: LabelSmoothingLoss,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    clip_norm: float | None = None,
    global_tokens: int | None = None,
    world_size: int = 1,
) -> dict:
    """One update from one ``Batch`` or a list of them (gradient accumulation).

    The loss is summed over every target token and divided by the number of target tokens
    in the whole update, ``global_tokens`` (all micro-batches of all ranks; defaults to this
    process's). Under DistributedDataParallel, which averages gradients over
    ``world_size`` ranks, each rank's loss is multiplied by ``world_size`` so that the
    update equals one process training on the whole global batch. ``clip_norm`` (> 0) clips
    the gradient's global L2 norm (not in the paper). Returns ``loss`` (this process's mean
    per token), ``tokens``, ``lr``, and ``grad_norm`` when clipping.
    """
    if not isinstance(batches, (list, tuple)) or (batches and not hasattr(batches[0], "tgt_out")):
        batches = [batches]
    if not batches:
        raise ValueError("batches must hold at least one Batch")
    local_tokens = sum(b.tgt_tokens for b in batches)
    global_tokens = local_tokens if global_tokens is None else global_tokens
    checks.positive_number("global_tokens", global_tokens)
    if clip_norm is not None:  # a norm <= 0 would zero every gradient or flip its sign
        checks.positive_number("clip_norm", clip_norm)
    model.train()
    optimizer.zero_grad(set_to_none=True)
    lr = optimizer.param_groups[0]["lr"]
    total = 0.0
    for i, batch in enumerate(batches):
        sync = getattr(model, "no_sync", None)
        last = i == len(batches) - 1
        context = sync() if sync is not None and not last else contextlib.nullcontext()
        with context:
            loss, _ = batch_loss_sum(model, batch, loss_fn)
            (loss * (world_size / global_tokens)).backward()
        total += float(loss.detach())
    out = {"loss": total / max(local_tokens, 1), "tokens": local_tokens, "lr": lr}
    if clip_norm is not None:
        out["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm))
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return out
