"""Attention figures (Sections 3.2.1-3.2.3): weights as heatmaps, per head, and masks.

Shapes: T queries, S keys, H heads.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .. import checks
from .style import (
    ATTENTION_CMAP,
    MASK_CMAP,
    PALETTE,
    as_array,
    as_bool_mask,
    check_labels,
    heatmap_labels,
    heatmap_ticks,
    new_figure,
    styled,
)


@styled
def plot_attention(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    ax: Axes | None = None,
    *,
    label_right: bool = True,
    vmax: float | None = None,
    colorbar: bool = False,
) -> Figure:
    """Heatmap of attention weights (T, S): row i is what query i attends to (equation 1).

    Query tokens label the rows on the left and, mirrored, on the right; key tokens label
    the columns on top. ``mask`` (bool, ``True`` = may attend, broadcastable to (T, S))
    paints masked cells in ``PALETTE["mask"]``. The colour runs from white at 0 to the
    query colour at ``vmax`` (default: the largest weight).
    """
    w = as_array(weights, "weights", 2, "(T, S)")
    query_labels, key_labels = heatmap_labels(query_labels, key_labels, *w.shape)
    T, S = w.shape
    shown = np.ma.masked_array(w, mask=~as_bool_mask(mask, (T, S))) if mask is not None else np.ma.masked_array(w)
    fig, axes = new_figure(ax, figsize=(max(4.0, min(8.0, 2.5 + 0.35 * S)), max(3.0, min(6.0, 1.5 + 0.35 * T))))
    a = axes[0, 0]
    top = vmax if vmax is not None else (float(w.max()) if w.size else 1.0)
    im = a.imshow(shown, cmap=ATTENTION_CMAP, vmin=0.0, vmax=top if top > 0 else 1.0, aspect="auto",
                  interpolation="nearest")
    heatmap_ticks(a, query_labels, key_labels, label_right)
    a.set_xlabel("keys")
    a.set_ylabel("queries")
    if title:
        a.set_title(title)
    if colorbar:
        fig.colorbar(im, ax=a, shrink=0.8, label="attention weight", location="bottom")
    return fig


@styled
def plot_attention_heads(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    ncols: int = 4,
    title: str | None = None,
    head_titles: Sequence[str] | None = None,
) -> Figure:
    """One heatmap per head for weights (H, T, S) (multi-head attention, Section 3.2.2),
    on a grid ``ncols`` wide with one shared colour scale. Unused grid cells are removed,
    so the figure has exactly H axes."""
    w = as_array(weights, "weights", 3, "(H, T, S)")
    H, T, S = w.shape
    checks.positive_int("ncols", ncols)
    head_titles = check_labels(head_titles, H, "head_titles", "head (H)") or [f"head {h}" for h in range(H)]
    ncols = min(ncols, H)
    nrows = math.ceil(H / ncols)
    fig = Figure(figsize=(min(11.0, 2.8 * ncols), min(7.0, 2.6 * nrows + 0.6)), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    top = float(w.max()) if w.size else 1.0
    for h in range(nrows * ncols):
        a = axes.flat[h]
        if h >= H:
            fig.delaxes(a)
            continue
        plot_attention(w[h], query_labels, key_labels, mask=mask, title=head_titles[h], ax=a, label_right=False,
                       vmax=top)
        if h % ncols:
            a.set_ylabel("")
        if h >= ncols:
            a.set_xlabel("")
    if title:
        fig.suptitle(title)
    return fig


@styled
def plot_mask(
    mask,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A boolean mask (T, S) as a picture: query colour where the query may attend
    (``True``, the package's convention), mask colour where it may not. Padding masks
    are columns, the causal mask (Section 3.2.3) a lower triangle."""
    m = as_array(mask, "mask", 2, "(T, S)")
    if m.dtype != bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {m.dtype}")
    query_labels, key_labels = heatmap_labels(query_labels, key_labels, *m.shape)
    T, S = m.shape
    fig, axes = new_figure(ax, figsize=(max(4.0, min(8.0, 3.0 + 0.35 * S)), max(3.0, min(6.0, 1.5 + 0.35 * T))))
    a = axes[0, 0]
    a.imshow(m.astype(float), cmap=MASK_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    heatmap_ticks(a, query_labels, key_labels, label_right=False)
    # thin white grid lines so single cells stay countable on a slide
    a.set_xticks(np.arange(-0.5, S, 1), minor=True)
    a.set_yticks(np.arange(-0.5, T, 1), minor=True)
    a.grid(which="minor", color="white", linewidth=1.0)
    a.tick_params(which="minor", length=0)
    a.set_xlabel("keys")
    a.set_ylabel("queries")
    a.legend(
        handles=[Patch(color=PALETTE["query"], label="may attend"), Patch(color=PALETTE["mask"], label="masked")],
        loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
    )
    if title:
        a.set_title(title)
    return fig

