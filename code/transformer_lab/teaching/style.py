"""The house style of the deck's figures: one palette, one set of rcParams, shared plumbing.

Queries, keys, values and masks keep one colour each across every figure and the slides'
SCSS (``PALETTE``; the Okabe-Ito colour-blind-safe set). Every plotting function takes
plain tensors, arrays or lists (no model), returns a ``matplotlib.figure.Figure`` and,
where a single panel makes sense, draws into an ``ax`` you pass instead.

Figures are built with ``matplotlib.figure.Figure`` rather than ``pyplot``, so nothing is
left open in pyplot's registry and a notebook cell that returns one shows it once. Show
one with ``fig.savefig(...)`` or by returning it from a cell. The default size, (8, 4.5)
inches, fills a 1050 x 700 slide with room for a title.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import matplotlib
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap, ListedColormap
from matplotlib.figure import Figure

PALETTE: dict[str, str] = {
    "query": "#0072B2",
    "key": "#E69F00",
    "value": "#009E73",
    "mask": "#D55E00",
    "ink": "#1B1F3B",
}
FIGSIZE = (8.0, 4.5)
SERIES_COLORS = (PALETTE["query"], PALETTE["key"], PALETTE["value"], PALETTE["ink"], PALETTE["mask"])

#: Attention weights: white (0) to the query colour; masked cells (``bad``) in the mask colour.
ATTENTION_CMAP = LinearSegmentedColormap.from_list("lab_attention", ["#FFFFFF", PALETTE["query"]]).with_extremes(
    bad=PALETTE["mask"]
)
#: Signed values (positional encodings): key colour (-1), white (0), query colour (+1).
DIVERGING_CMAP = LinearSegmentedColormap.from_list("lab_diverging", [PALETTE["key"], "#FFFFFF", PALETTE["query"]])
#: Boolean masks: False (masked) in the mask colour, True (may attend) in the query colour.
MASK_CMAP = ListedColormap([PALETTE["mask"], PALETTE["query"]], name="lab_mask")

STYLE: dict = {
    "figure.figsize": FIGSIZE,
    "figure.dpi": 100,
    "font.size": 13,
    "axes.titlesize": 15,
    "axes.labelsize": 13,
    "legend.fontsize": 11,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "text.color": PALETTE["ink"],
    "axes.labelcolor": PALETTE["ink"],
    "axes.edgecolor": PALETTE["ink"],
    "axes.titlecolor": PALETTE["ink"],
    "xtick.color": PALETTE["ink"],
    "ytick.color": PALETTE["ink"],
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=SERIES_COLORS),
    "legend.frameon": False,
    "lines.linewidth": 2.2,
    "savefig.bbox": "tight",
}


def styled(fn: Callable) -> Callable:
    """Run ``fn`` under the house ``STYLE`` without touching the caller's rcParams."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return fn(*args, **kwargs)

    return wrapper


def new_figure(ax: Axes | None, nrows: int = 1, ncols: int = 1, figsize=None) -> tuple[Figure, np.ndarray]:
    """A new constrained-layout figure with a grid of axes, or the figure that owns ``ax``."""
    if ax is not None:
        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
        return ax.figure, np.array([[ax]])
    fig = Figure(figsize=figsize or FIGSIZE, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def as_array(x, name: str, ndim: int | None = None, shape_name: str = "") -> np.ndarray:
    """``x`` (tensor, array or nested list) as a float or bool numpy array, checked."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        x = x.numpy() if x.dtype == torch.bool else x.float().numpy()
    try:
        a = np.asarray(x)
    except Exception as e:  # ragged lists
        raise TypeError(f"{name} must be a tensor, array or nested list of numbers, got {type(x).__name__}") from e
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have shape {shape_name}, got {a.shape}")
    return a


def as_bool_mask(mask, shape: tuple[int, int], name: str = "mask") -> np.ndarray:
    m = as_array(mask, name)
    if m.dtype != bool:
        raise TypeError(f"{name} must be boolean (True = may attend), got dtype {m.dtype}")
    if m.ndim > 2:  # e.g. (1, 1, T, S) from padding_mask & causal_mask
        m = m.reshape(m.shape[-2:]) if math.prod(m.shape[:-2]) == 1 else m
    try:
        return np.broadcast_to(m, shape)
    except ValueError:
        raise ValueError(f"{name} of shape {m.shape} does not broadcast to the weights' shape {shape} (T, S)") from None


def check_labels(labels, n: int, name: str, axis: str) -> list[str] | None:
    if labels is None:
        return None
    labels = [str(x) for x in labels]
    if len(labels) != n:
        raise ValueError(f"{name} must have one label per {axis} ({n}), got {len(labels)}")
    return labels


def heatmap_labels(query_labels, key_labels, T: int, S: int) -> tuple[list[str] | None, list[str] | None]:
    """The rows' and columns' labels of a (T, S) heatmap, one per query and per key."""
    return (check_labels(query_labels, T, "query_labels", "query (T)"),
            check_labels(key_labels, S, "key_labels", "key (S)"))


def finish_axes(ax: Axes, xlabel: str, ylabel: str, title: str | None, ylim_bottom: float | None = 0.0) -> None:
    """Axis labels, an optional title, the y axis from ``ylim_bottom``, and the legend."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim_bottom is not None:
        ax.set_ylim(bottom=ylim_bottom)
    if title:
        ax.set_title(title)
    ax.legend()


def heatmap_ticks(ax: Axes, query_labels, key_labels, label_right: bool) -> None:
    """Query labels on the left (and mirrored on the right), key labels on top."""
    T, S = ax.images[-1].get_array().shape
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xticks(range(S), key_labels if key_labels is not None else range(S),
                  rotation=90 if key_labels is not None and max(map(len, key_labels), default=0) > 2 else 0)
    ax.set_yticks(range(T), query_labels if query_labels is not None else range(T))
    ax.tick_params(axis="y", labelright=label_right, right=False, left=False)
    ax.tick_params(axis="x", top=False, bottom=False)
    for side in ("left", "bottom", "top", "right"):
        ax.spines[side].set_visible(False)

