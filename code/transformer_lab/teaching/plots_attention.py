"""Attention figures (Sections 3.2.1-3.2.3): weights as heatmaps, per head, and masks.

Shapes: T queries, S keys, H heads.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from .. import checks
from .style import (
    ATTENTION_CMAP,
    LIGHT,
    MASK_CMAP,
    PALETTE,
    TEXT_PT,
    WIDE_FIGSIZE,
    add_colorbar,
    as_array,
    as_bool_mask,
    check_labels,
    heatmap_labels,
    heatmap_ticks,
    key_row_inches,
    new_figure,
    styled,
)


#: Label pitch: a tick label needs about this many points of axis per label, at TEXT_PT.
_PITCH_PT = 1.15 * TEXT_PT


def _masked(w: np.ndarray, mask) -> np.ma.MaskedArray:
    T, S = w.shape
    return np.ma.masked_array(w, mask=~as_bool_mask(mask, (T, S))) if mask is not None else np.ma.masked_array(w)


def _heatmap_size(T: int, S: int) -> tuple[tuple[float, float], bool]:
    """A heatmap's figure size (inches) that gives every row and column room for a label
    at slide size (about 1.3 in for the query labels, 1.9 in for the key labels and a
    title, then one label pitch per row and column), and whether its colour bar goes below
    the map: in a narrow figure (a column of a slide) the width is worth more than height."""
    pitch = _PITCH_PT / 72
    below = 1.3 + S * pitch + 0.9 <= 6.0
    width = 1.3 + S * pitch + (0.0 if below else 0.9)
    height = 1.9 + T * pitch + (0.8 if below else 0.0)
    return (max(4.0, min(WIDE_FIGSIZE[0], width)), max(3.0, min(5.8, height))), below


@styled
def plot_attention(
    weights,
    query_labels: Sequence[str] | None = None,
    key_labels: Sequence[str] | None = None,
    mask=None,
    title: str | None = None,
    ax: Axes | None = None,
    *,
    label_right: bool = False,
    vmax: float | None = None,
    colorbar: bool = True,
) -> Figure:
    """Heatmap of attention weights (T, S): row i is what query i attends to (equation 1).

    Query tokens label the rows on the left (and, with ``label_right``, mirrored on the
    right); key tokens label the columns on top. ``mask`` (bool, ``True`` = may attend,
    broadcastable to (T, S)) paints masked cells in ``PALETTE["mask"]``. The colour runs
    from light grey at 0 to the query colour at ``vmax`` (default: the largest weight), with
    a colour bar giving the scale (``colorbar=False`` leaves it to the caller, e.g. one bar
    shared by several panels). The figure is sized to give every label room at slide size.
    """
    w = as_array(weights, "weights", 2, "(T, S)")
    query_labels, key_labels = heatmap_labels(query_labels, key_labels, *w.shape)
    T, S = w.shape
    figsize, bar_below = _heatmap_size(T, S)
    fig, axes = new_figure(ax, figsize=figsize)
    a = axes[0, 0]
    top = vmax if vmax is not None else (float(w.max()) if w.size else 1.0)
    im = a.imshow(_masked(w, mask), cmap=ATTENTION_CMAP, vmin=0.0, vmax=top if top > 0 else 1.0, aspect="auto",
                  interpolation="nearest")
    heatmap_ticks(a, query_labels, key_labels, label_right)
    a.set_xlabel("keys")
    a.set_ylabel("queries")
    if title:
        a.set_title(title)
    if np.ma.getmaskarray(im.get_array()).any():
        _hatch_masked(a, np.ma.getmaskarray(im.get_array()))
    if colorbar:
        place = dict(location="bottom", shrink=0.8, pad=0.02, aspect=30) if bar_below else dict(pad=0.03, aspect=25)
        add_colorbar(fig, im, a, "attention weight", **place)
    return fig


def _hatch_masked(a: Axes, hidden: np.ndarray) -> None:
    """A light hatch over masked cells, so they differ from a large weight in greyscale too."""
    for i, j in zip(*np.nonzero(hidden)):
        a.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="//", edgecolor="#8C8C8C", linewidth=0))


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
    on a grid ``ncols`` wide with one shared colour scale and one colour bar. Unused grid
    cells are removed, so the figure has exactly H heatmaps. Query labels appear once per
    row of panels, "keys" and "queries" once for the figure; key labels sit above every
    map, in two rows (every other label in the far row, a thin line from its column) when
    a panel is too narrow for all of them in one row at slide size."""
    w = as_array(weights, "weights", 3, "(H, T, S)")
    H, T, S = w.shape
    checks.positive_int("ncols", ncols)
    head_titles = check_labels(head_titles, H, "head_titles", "head (H)") or [f"head {h}" for h in range(H)]
    query_labels, key_labels = heatmap_labels(query_labels, key_labels, T, S)
    ncols = min(ncols, H)
    nrows = math.ceil(H / ncols)
    width = WIDE_FIGSIZE[0]
    panel_pt = (width - 2.5) * 72 / ncols  # points of axis per panel, less labels and colour bar
    stagger = S * _PITCH_PT > panel_pt
    far_row = 0.0 if not stagger else key_row_inches(key_labels or [str(k) for k in range(S)])
    height = 2.0 + nrows * (min(3.6, T * _PITCH_PT / 72) + far_row)
    fig = Figure(figsize=(width, min(5.6, height)), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    top = float(w.max()) if w.size else 1.0
    image = None
    for h in range(nrows * ncols):
        a = axes.flat[h]
        if h >= H:
            fig.delaxes(a)
            continue
        image = a.imshow(_masked(w[h], mask), cmap=ATTENTION_CMAP, vmin=0.0, vmax=top if top > 0 else 1.0,
                         aspect="auto", interpolation="nearest")
        if mask is not None:
            _hatch_masked(a, np.ma.getmaskarray(image.get_array()))
        heatmap_ticks(a, query_labels, key_labels, label_right=False, show_queries=h % ncols == 0, stagger=stagger)
        a.set_title(head_titles[h], pad=6)
    add_colorbar(fig, image, [a for a in axes.flat[:H]], "attention weight", shrink=0.9, pad=0.02, aspect=25)
    fig.supxlabel("keys")
    fig.supylabel("queries")
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
    *,
    legend: bool = True,
) -> Figure:
    """A boolean mask (T, S) as a picture: light grey where the query may attend (``True``,
    the package's convention), the mask colour where it may not. Padding masks are
    columns, the causal mask (Section 3.2.3) a lower triangle. A legend names the two
    colours (``legend=False`` leaves it to the caller)."""
    m = _check_mask(mask, "mask")
    query_labels, key_labels = heatmap_labels(query_labels, key_labels, *m.shape)
    T, S = m.shape
    cell = min(0.5, max(_PITCH_PT / 72, 2.6 / max(T, S)))  # small masks get large, countable cells
    # query labels, then the map; key labels, the map and the legend below it
    fig, axes = new_figure(ax, figsize=(min(WIDE_FIGSIZE[0], max(4.0, 1.6 + S * cell)),
                                        max(3.0, min(5.8, 2.6 + T * cell))))
    a = axes[0, 0]
    _draw_mask(a, m, query_labels, key_labels, show_queries=True)
    a.set_xlabel("keys")
    a.set_ylabel("queries")
    if legend:
        a.legend(handles=_mask_legend(), loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=2,
                 handlelength=1.2, columnspacing=1.0)
    if title:
        a.set_title(title)
    return fig


@styled
def plot_masks(masks: Sequence, titles: Sequence[str] | None = None, query_labels: Sequence[str] | None = None,
               key_labels: Sequence[str] | None = None) -> Figure:
    """Several boolean masks (T, S) side by side, e.g. padding, causal and both combined:
    one legend, "keys" and "queries" once for the figure, query labels on the first panel."""
    if isinstance(masks, np.ndarray) or not isinstance(masks, Sequence) or not masks:
        raise TypeError(f"masks must be a non-empty list of boolean (T, S) masks, got {type(masks).__name__}")
    ms = [_check_mask(m, f"masks[{i}]") for i, m in enumerate(masks)]
    if len({m.shape for m in ms}) != 1:
        raise ValueError(f"masks must share one shape (T, S), got {[m.shape for m in ms]}")
    titles = check_labels(titles, len(ms), "titles", "mask") or [""] * len(ms)
    query_labels, key_labels = heatmap_labels(query_labels, key_labels, *ms[0].shape)
    T, S = ms[0].shape
    height = min(5.0, 1.6 + T * _PITCH_PT / 72)
    fig = Figure(figsize=(min(WIDE_FIGSIZE[0], 1.2 + len(ms) * (0.4 + S * _PITCH_PT / 72) + 2.2), height),
                 layout="constrained")
    axes = fig.subplots(1, len(ms), squeeze=False, sharey=True)[0]
    for i, (a, m, t) in enumerate(zip(axes, ms, titles)):
        _draw_mask(a, m, query_labels, key_labels, show_queries=i == 0)
        a.set_title(t)
    fig.legend(handles=_mask_legend(), loc="outside right upper")
    fig.supxlabel("keys")
    fig.supylabel("queries")
    return fig


def _check_mask(mask, name: str) -> np.ndarray:
    m = as_array(mask, name, 2, "(T, S)")
    if m.dtype != bool:
        raise TypeError(f"{name} must be boolean (True = may attend), got dtype {m.dtype}")
    return m


def _mask_legend() -> list[Patch]:
    return [Patch(facecolor=LIGHT, edgecolor=PALETTE["ink"], linewidth=0.5, label="may attend"),
            Patch(color=PALETTE["mask"], label="masked")]


def _draw_mask(a: Axes, m: np.ndarray, query_labels, key_labels, show_queries: bool) -> None:
    T, S = m.shape
    a.imshow(m.astype(float), cmap=MASK_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    heatmap_ticks(a, query_labels, key_labels, label_right=False, show_queries=show_queries)
    # white grid lines so single cells stay countable on a slide
    a.set_xticks(np.arange(-0.5, S, 1), minor=True)
    a.set_yticks(np.arange(-0.5, T, 1), minor=True)
    a.grid(which="minor", color="white", linewidth=2.0)
    a.tick_params(which="minor", length=0)
