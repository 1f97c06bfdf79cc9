"""Figures of measured times: attention cost against length (Table 1) and the time of
each decoding step with and without the key/value cache. They only draw; ``speed``
measures.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .. import checks
from .style import SERIES_COLORS, as_array, check_labels, finish_axes, new_figure, styled


@styled
def plot_attention_cost(
    lengths: Sequence[int],
    times_ms,
    labels: Sequence[str] | None = None,
    title: str | None = None,
    logy: bool = False,
    ax: Axes | None = None,
) -> Figure:
    """Measured times against sequence length: ``times_ms`` is one series (n,) or several
    (m, n), one label each. This function only draws; the deck does the measuring."""
    x = as_array(lengths, "lengths", 1, "(n,)")
    y = as_array(times_ms, "times_ms")
    if y.ndim == 1:
        y = y[None, :]
    if y.ndim != 2 or y.shape[1] != x.shape[0]:
        raise ValueError(f"times_ms must have shape (n,) or (m, n) with n = len(lengths) = {x.shape[0]}, got {y.shape}")
    labels = check_labels(labels, y.shape[0], "labels", "series (m)")
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    for i, row in enumerate(y):
        a.plot(x, row, "o-", color=SERIES_COLORS[i % len(SERIES_COLORS)], label=labels[i] if labels else None)
    a.set_xlabel("sequence length")
    a.set_ylabel("time (ms)")
    if logy:
        a.set_yscale("log")
    if title:
        a.set_title(title)
    if labels:
        a.legend()
    return fig



def plot_decode_step_times(
    step_times_ms: dict[str, Sequence[float]], window: int = 8, title: str | None = None, ax: Axes | None = None
) -> Figure:
    """Milliseconds per greedy decoding step against the output position (Section 6.1's
    decoding, with and without the key/value cache), one line per variant, as a running
    median over ``window`` steps so that a noisy machine still shows the trend."""
    if not isinstance(step_times_ms, dict) or not step_times_ms:
        raise ValueError(
            f"step_times_ms must be a non-empty dict of name -> per-step times, got {type(step_times_ms).__name__}"
        )
    checks.positive_int("window", window)
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    for i, (name, values) in enumerate(step_times_ms.items()):
        y = as_array(values, f"step_times_ms[{name!r}]", 1, "(steps,)")
        smooth = np.array([np.median(y[max(0, t - window + 1): t + 1]) for t in range(len(y))])
        a.plot(np.arange(1, len(y) + 1), smooth, color=SERIES_COLORS[i % len(SERIES_COLORS)], label=name, lw=2)
    finish_axes(a, "output position (step)", "time per step (ms)", title)
    return fig
