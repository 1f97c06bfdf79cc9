"""The house style of the deck's figures: one palette, one set of rcParams, shared plumbing.

Queries, keys, values and masks keep one colour each across every figure and the slides'
SCSS (``PALETTE``; the Okabe-Ito colour-blind-safe set). Every plotting function takes
plain tensors, arrays or lists (no model), returns a ``matplotlib.figure.Figure`` and,
where a single panel makes sense, draws into an ``ax`` you pass instead.

Figures are built with ``matplotlib.figure.Figure`` rather than ``pyplot``, so nothing is
left open in pyplot's registry and a notebook cell that returns one shows it once. Show
one with ``fig.savefig(...)`` or by returning it from a cell.

Sizes are for the deck's 1050 x 700 slide at 96 px per inch: a figure is drawn at the size
at which a slide shows it (``FIGSIZE`` below a title, ``WIDE_FIGSIZE`` for two panels,
``COLUMN_FIGSIZE`` in one of two columns), never shrunk to fit, so its text, all at least
``TEXT_PT`` points, stays at least 20 px (:mod:`.legibility` measures it).
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
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

PALETTE: dict[str, str] = {
    "query": "#0072B2",
    "key": "#E69F00",
    "value": "#009E73",
    "mask": "#3D3D3D",
    "ink": "#1B1F3B",
}
#: Colours for every series that is not a query, key, value or mask (pre-LN, validation
#: loss, recompute, "ours vs PyTorch", ...): ink, then Okabe-Ito hues outside ``PALETTE``.
OTHER: dict[str, str] = {
    "ink": "#1B1F3B",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "grey": "#7A7A7A",
}
SERIES_COLORS = tuple(OTHER.values())
#: A background that is not data: light grey (e.g. cells that may attend in a mask).
LIGHT = "#DCDCDC"

#: Text sizes in points. At the deck's 96 px per inch, 1 pt = 4/3 px, so 16 pt is 21.3 px:
#: over the 20 px floor of a 1050 x 700 slide with a little room for a figure scaled by up
#: to 6% to fit. Figures are sized for where the deck shows them, not scaled down to fit.
TEXT_PT = 16
TITLE_PT = 18
#: Display resolution of the deck's figures (Quarto's fig-dpi) and the slide's width.
DISPLAY_DPI = 96
SLIDE_WIDTH_PX = 1050
#: Figure sizes (inches) for the deck's layouts: a whole slide below its title, a wide
#: figure (two panels, or a long axis) and one column of two.
FIGSIZE = (8.0, 4.5)
WIDE_FIGSIZE = (10.4, 4.6)
COLUMN_FIGSIZE = (5.2, 5.2)

#: Attention weights: light grey (0) to the query colour, so a zero weight still shows on a
#: projector; masked cells (``bad``) in the mask colour.
ATTENTION_CMAP = LinearSegmentedColormap.from_list("lab_attention", ["#E4E6EA", PALETTE["query"]]).with_extremes(
    bad=PALETTE["mask"]
)
#: Signed values (positional encodings, which are neither queries nor keys): vermillion
#: (-1), near white (0), ink (+1).
DIVERGING_CMAP = LinearSegmentedColormap.from_list("lab_diverging", [OTHER["vermillion"], "#F4F4F4", OTHER["ink"]])
#: Boolean masks: False (masked) in the mask colour, True (may attend) in light grey.
MASK_CMAP = ListedColormap([PALETTE["mask"], LIGHT], name="lab_mask")

# SVG output keeps text as <text> (selectable in the PDF, measurable in the browser). Set
# globally, not only in ``STYLE``: a notebook saves a returned figure after the plotting
# function (and its rc_context) has returned.
matplotlib.rcParams["svg.fonttype"] = "none"

STYLE: dict = {
    "figure.figsize": FIGSIZE,
    "figure.dpi": DISPLAY_DPI,
    "font.size": TEXT_PT,
    "axes.titlesize": TITLE_PT,
    "figure.titlesize": TITLE_PT,
    "figure.labelsize": TEXT_PT,
    "axes.labelsize": TEXT_PT,
    "legend.fontsize": TEXT_PT,
    "xtick.labelsize": TEXT_PT,
    "ytick.labelsize": TEXT_PT,
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
    "svg.fonttype": "none",
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
        # an axes made outside the house style keeps its tick sizes: bring them to slide size
        ax.tick_params(labelsize=STYLE["xtick.labelsize"])
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


def heatmap_ticks(ax: Axes, query_labels, key_labels, label_right: bool, *, show_keys: bool = True,
                  show_queries: bool = True, stagger: bool = False) -> None:
    """Query labels on the left (and mirrored on the right), key labels on top.

    ``show_keys`` / ``show_queries`` False leave that axis's tick labels to a neighbouring
    panel (labels once per axis). ``stagger`` sets the key labels in two rows, both above
    the map: every other label sits in the far row, with a thin tick line from its column
    up between the near row's labels, so the labels need half the pitch (many keys in a
    narrow panel, without small text) and every key is read in the same place.
    """
    T, S = ax.images[-1].get_array().shape
    keys = [str(k) for k in key_labels] if key_labels is not None else [str(k) for k in range(S)]
    queries = [str(q) for q in query_labels] if query_labels is not None else [str(q) for q in range(T)]
    rotation = _key_rotation(keys)
    ax.xaxis.set_label_position("top")
    if stagger and show_keys:
        ax.set_xticks(range(0, S, 2), keys[0::2], rotation=rotation)
        ax.tick_params(axis="x", top=False, bottom=False, labeltop=True, labelbottom=False)
        far = ax.secondary_xaxis("top")
        far.set_xticks(range(1, S, 2), keys[1::2], rotation=rotation)
        pad = matplotlib.rcParams["xtick.major.pad"]
        far.tick_params(axis="x", length=pad + _label_extent_pt(keys[0::2], rotation) + pad, width=0.8,
                        color=OTHER["grey"], direction="out")
        far.spines["top"].set_visible(False)
    else:
        ax.set_xticks(range(S), keys, rotation=rotation)
        ax.tick_params(axis="x", top=False, bottom=False, labeltop=show_keys, labelbottom=False)
    ax.set_yticks(range(T), queries)
    ax.tick_params(axis="y", labelleft=show_queries, labelright=label_right and show_queries, right=False, left=False)
    for side in ("left", "bottom", "top", "right"):
        ax.spines[side].set_visible(False)


def _key_rotation(keys: list[str]) -> int:
    """Key labels longer than two characters stand upright (90 degrees), so each needs
    only a line's height of the axis."""
    return 90 if max(map(len, keys), default=0) > 2 else 0


def _label_extent_pt(labels, rotation: float) -> float:
    """How far (points) the tallest of ``labels``, as x tick labels at ``rotation`` (0 or 90
    degrees) in the current style, reaches out from the axis."""
    size = FontProperties(size=matplotlib.rcParams["xtick.labelsize"])
    extents = [_TEXT_TO_PATH.get_text_width_height_descent(text, size, ismath=False) for text in labels]
    return max((w if rotation else h + d) for w, h, d in extents) if extents else 0.0


def key_row_inches(key_labels) -> float:
    """The height (inches) that :func:`heatmap_ticks` with ``stagger`` adds above a map for
    its far row of key labels."""
    keys = [str(k) for k in key_labels]
    return (_label_extent_pt(keys[1::2], _key_rotation(keys)) + 2 * matplotlib.rcParams["xtick.major.pad"]) / 72


_TEXT_TO_PATH = TextToPath()

_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def power_label(value: float, base: int = 10) -> str:
    """A log axis's tick as plain text: ``1024`` up to 99999, else ``10¹²`` with Unicode
    superscripts (mathtext would set the exponent in smaller type than the slide allows)."""
    if value <= 0:
        return ""
    if 1e-3 <= value < 1e5:
        return f"{value:g}"
    exponent = round(math.log(value, base))
    return f"{base}{str(exponent).translate(_SUPERSCRIPT)}"


def plain_log_axis(axis, base: int = 10, every: int | None = None) -> None:
    """Major ticks of a log ``axis`` (``ax.xaxis``) at powers of ``every`` (default
    ``base``), labelled by :func:`power_label`; minor ticks unlabelled."""
    axis.set_major_locator(LogLocator(base=every or base))
    axis.set_major_formatter(FuncFormatter(lambda v, _: power_label(v, base)))
    axis.set_minor_formatter(NullFormatter())


def add_colorbar(fig: Figure, mappable, axes, label: str, **kwargs):
    """One colour bar with its scale for ``mappable``, beside ``axes`` (one or several), with
    at most five ticks so its numbers stay at slide size."""
    bar = fig.colorbar(mappable, ax=axes, label=label, **kwargs)
    bar.ax.locator_params(nbins=4)
    bar.outline.set_visible(False)
    return bar
