"""Exercise 11: the warm-up learning rate, equation (3) (Section 5.3), and the scheduler
that sets it before every update. Check it with `make exercises N=11`.

The report of `make exercises` names the slide that explains it.
"""

from __future__ import annotations

import torch


def noam_learning_rate(step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """The learning rate of update number ``step`` (1, 2, ...), equation (3):

        lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)           (3)

    Section 5.3: the rate rises linearly for the first ``warmup_steps`` steps, then
    decreases in proportion to the inverse square root of the step number; the paper uses
    warmup_steps = 4000. ``factor`` multiplies the whole curve. Step 0 (before the first
    update) gives 0.0. Return a Python float.
    """
    raise NotImplementedError


class WarmupSchedule(torch.optim.lr_scheduler.LRScheduler):
    """Equation (3) as a PyTorch scheduler: call ``optimizer.step()`` then
    ``schedule.step()`` after every batch.

    ``__init__`` and ``rate`` are written. PyTorch's schedulers count in ``self.last_epoch``
    the steps already taken: it is 0 when the scheduler is built (PyTorch calls ``get_lr``
    then, for the first update) and grows by one at every ``schedule.step()``.
    ``self.base_lrs`` holds each parameter group's learning rate as the optimiser was built.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int = 4000,
                 factor: float = 1.0, last_epoch: int = -1):
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor
        super().__init__(optimizer, last_epoch)

    def rate(self, update: int) -> float:
        """Equation (3) for update number ``update`` (1, 2, ...)."""
        return noam_learning_rate(update, self.d_model, self.warmup_steps, self.factor)

    def get_lr(self) -> list[float]:
        """The learning rate of each parameter group for the next update: the group's base
        learning rate times the rate of that update."""
        raise NotImplementedError
