"""Exercise 11: the warm-up learning rate, equation (3) (Section 5.3). Check it with
`make exercises N=11`.

The report of `make exercises` names the slide that explains it.
"""

from __future__ import annotations


def noam_learning_rate(step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """The learning rate of update number ``step`` (1, 2, ...), equation (3):

        lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)           (3)

    Section 5.3: the rate rises linearly for the first ``warmup_steps`` steps, then
    decreases in proportion to the inverse square root of the step number; the paper uses
    warmup_steps = 4000. ``factor`` multiplies the whole curve. Step 0 (before the first
    update) gives 0.0. Return a Python float.
    """
    raise NotImplementedError
