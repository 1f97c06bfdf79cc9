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
from .style import (OTHER, SERIES_COLORS, WIDE_FIGSIZE, as_array, check_labels, finish_axes, new_figure, plain_log_axis,
                    styled)


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
        plain_log_axis(a.yaxis)
    if title:
        a.set_title(title)
    if labels:
        a.legend()
    return fig


@styled
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


@styled
def plot_table1_scaling(lengths: Sequence[int], times_ms: dict[str, Sequence[float]],
                        flops: dict[str, Sequence[float]], d_model: int) -> Figure:
    """Two log-log panels against the sequence length n (Table 1, Section 4): measured
    milliseconds per layer (``times_ms``, one series per layer) and the multiply-adds of
    Table 1's leading terms (``flops``), with a dotted line at n = d_model."""
    x = as_array(lengths, "lengths", 1, "(n,)")
    if not isinstance(times_ms, dict) or not isinstance(flops, dict) or not times_ms or not flops:
        raise ValueError("times_ms and flops must be non-empty dicts of name -> one value per length")
    checks.positive_int("d_model", d_model)
    fig, axes = new_figure(None, 1, 2, figsize=(WIDE_FIGSIZE[0], 4.4))
    for a, series, ylabel, title in ((axes[0, 0], times_ms, "time (ms)", "measured, 1 thread"),
                                     (axes[0, 1], flops, "multiply-adds", "Table 1's terms")):
        for i, (name, values) in enumerate(series.items()):
            y = as_array(values, f"series[{name!r}]", 1, "(n,)")
            if y.shape != x.shape:
                raise ValueError(f"series[{name!r}] must have one value per length ({x.shape[0]}), got {y.shape}")
            a.loglog(x, y, "o-", color=SERIES_COLORS[i % len(SERIES_COLORS)], label=name, ms=5)
        a.axvline(d_model, color=OTHER["grey"], ls=":", lw=2)
        a.set_xscale("log", base=2)
        plain_log_axis(a.xaxis, 2, every=8)
        plain_log_axis(a.yaxis)
        a.set_xlabel("sequence length n")
        a.set_ylabel(ylabel)
        a.set_title(title)
        a.legend(loc="upper left")
    axes[0, 1].annotate(f"n = d = {d_model}", (d_model, axes[0, 1].get_ylim()[0]), xytext=(6, 10),
                        textcoords="offset points")
    return fig


@styled
def plot_decode_panels(panels: dict[str, dict[str, Sequence[float]]], window: int = 8) -> Figure:
    """Side-by-side :func:`plot_decode_step_times` panels, one per model (``panels``:
    title -> variant -> per-step milliseconds), sized for a whole slide."""
    if not isinstance(panels, dict) or not panels:
        raise ValueError(f"panels must be a non-empty dict of title -> step times, got {type(panels).__name__}")
    fig, axes = new_figure(None, 1, len(panels), figsize=(min(WIDE_FIGSIZE[0], 5.2 * len(panels)), 4.2))
    for a, (title, step_times_ms) in zip(axes[0], panels.items()):
        plot_decode_step_times(step_times_ms, window=window, title=title, ax=a)
    return fig
