"""Figures of measured times: attention cost against length (Table 1) and the time of
each decoding step with and without the key/value cache; and the chains of matrix
products a recurrent layer and a self-attention layer must run one after another
(:func:`plot_sequential_products`, counted by ``scaling``). They only draw; ``speed``
measures.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from .. import checks
from .scaling import LAYER_MAC_FORMULAS, MatrixProduct, chain_summary, layer_macs
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
                        flops: dict[str, Sequence[float]] | None = None, *, d_model: int) -> Figure:
    """Two log-log panels against the sequence length n (Table 1, Section 4): measured
    milliseconds per layer (``times_ms``, one series per layer) and the multiply-adds the
    timed layers actually do (:func:`~transformer_lab.teaching.scaling.layer_macs`:
    attention layer 4 n d² + 2 n² d, attention core 2 n² d, GRU 6 n d², each in its
    left-panel colour), with a dotted line at n = d_model, where the attention layer's
    and the GRU's counts meet. ``flops`` (Table 1's bare terms, ``table1_flops``), if
    given, is drawn beside them in thin dashed grey."""
    x = as_array(lengths, "lengths", 1, "(n,)")
    if not isinstance(times_ms, dict) or not times_ms:
        raise ValueError("times_ms must be a non-empty dict of name -> one value per length")
    if flops is not None and (not isinstance(flops, dict) or not flops):
        raise ValueError("flops must be None or a non-empty dict of name -> one value per length")
    checks.positive_int("d_model", d_model)
    counts = layer_macs([int(n) for n in x], d_model)
    names = list(times_ms) + [name for name in counts if name not in times_ms]
    colors = {name: SERIES_COLORS[i % len(SERIES_COLORS)] for i, name in enumerate(names)}
    fig, axes = new_figure(None, 1, 2, figsize=(WIDE_FIGSIZE[0], 4.4))
    left, right = axes[0, 0], axes[0, 1]
    for name, values in times_ms.items():
        left.loglog(x, _per_length(values, name, x), "o-", color=colors[name], label=name, ms=5)
    for name, values in counts.items():
        right.loglog(x, values, "o-", color=colors[name], label=f"{name}  {LAYER_MAC_FORMULAS[name]}", ms=5)
    for i, (name, values) in enumerate((flops or {}).items()):
        right.loglog(x, _per_length(values, name, x), ("--", ":")[i % 2], color=OTHER["grey"], lw=1.5,
                     label=f"Table 1: {name.split()[-2]} {name.split()[-1]}" if len(name.split()) > 1 else name)
    for a, ylabel, title in ((left, "time (ms)", "measured, 1 thread"), (right, "multiply-adds", "multiply-adds")):
        a.axvline(d_model, color=OTHER["grey"], ls=":", lw=2)
        a.set_xscale("log", base=2)
        plain_log_axis(a.xaxis, 2, every=8)
        plain_log_axis(a.yaxis)
        a.set_xlabel("sequence length n")
        a.set_ylabel(ylabel)
        a.set_title(title)
    left.legend(loc="upper left")
    low, high = right.get_ylim()  # room above the lines for the legend: about a tenth of the height per entry
    above = 0.06 + 0.1 * (len(counts) + len(flops or {}))
    right.set_ylim(low, high * (high / low) ** (above / (1 - above)))
    right.set_yticks([10.0**k for k in range(math.ceil(math.log10(low)), math.floor(math.log10(high)) + 1)])
    right.yaxis.set_minor_locator(NullLocator())  # no ticks in the legend's room
    right.legend(loc="upper left")
    right.annotate(f"n = d = {d_model}", (d_model, low), xytext=(6, 10), textcoords="offset points")
    return fig


def _per_length(values, name: str, x: np.ndarray) -> np.ndarray:
    y = as_array(values, f"series[{name!r}]", 1, "(n,)")
    if y.shape != x.shape:
        raise ValueError(f"series[{name!r}] must have one value per length ({x.shape[0]}), got {y.shape}")
    return y


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


@styled
def plot_sequential_products(chains: dict[str, Sequence[MatrixProduct]]) -> Figure:
    """One panel per layer (``chains``: name -> its matrix products in the order they must
    run, :func:`~transformer_lab.teaching.scaling.sequential_products`), sharing one axis:
    product 1, 2, 3, ... each waiting for the one before. A bar's height is how many
    positions that one product handles at once (its rows): a recurrent layer's state
    products handle one position each, attention's handle all n. Titles give each chain's
    length, and a line in each panel names its products (:func:`chain_summary`)."""
    if not isinstance(chains, dict) or not chains:
        raise ValueError(f"chains must be a non-empty dict of name -> matrix products, got {type(chains).__name__}")
    for name, chain in chains.items():
        if not chain or not all(isinstance(p, MatrixProduct) for p in chain):
            raise ValueError(f"chains[{name!r}] must be a non-empty sequence of MatrixProduct")
    longest = max(len(chain) for chain in chains.values())
    tallest = max(p.rows for chain in chains.values() for p in chain)
    fig, axes = new_figure(None, len(chains), 1, figsize=(10.0, 1.5 * len(chains) + 0.3))  # a slide below its title
    colors = (OTHER["vermillion"], OTHER["ink"], OTHER["sky"])  # not a query, key or value: no role colour
    for i, (a, (name, chain)) in enumerate(zip(axes[:, 0], chains.items())):
        a.bar(np.arange(1, len(chain) + 1), [p.rows for p in chain], width=0.8, color=colors[i % len(colors)])
        a.set_xlim(0.3, longest + 0.7)
        # a log axis: a product over one position must show beside one over all n (a linear axis
        # drew the recurrent chain's one-position bars 2% high, invisible on a slide)
        a.set_yscale("log")
        a.set_ylim(0.5, tallest * 1.6)
        a.set_yticks([1, tallest], [str(1), str(tallest)])
        a.minorticks_off()
        a.set_title(f"{name}: {len(chain)} products in a row", loc="left")
        a.set_ylabel("positions")
        a.text(0.99, 0.55, chain_summary(chain), transform=a.transAxes, ha="right", va="center")
    axes[-1, 0].set_xlabel("matrix products, in the order they must run (each needs the one before)")
    for a in axes[:-1, 0]:
        a.tick_params(labelbottom=False)
    return fig
