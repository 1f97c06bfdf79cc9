"""Visualisation: the deck's figures, in one colour scheme.

Queries, keys, values and masks keep one colour each across every figure and the slides'
SCSS (``PALETTE``; the Okabe-Ito colour-blind-safe set). Every function takes plain
tensors, arrays or lists (no model), returns a ``matplotlib.figure.Figure`` and, where a
single panel makes sense, draws into an ``ax`` you pass instead.

Figures are built with ``matplotlib.figure.Figure`` rather than ``pyplot``, so nothing is
left open in pyplot's registry and a notebook cell that returns one shows it once. Show
one with ``fig.savefig(...)`` or by returning it from a cell. The default size, (8, 4.5)
inches, fills a 1050 x 700 slide with room for a title.

Shapes: T queries, S keys, H heads, L positions, D d_model.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Mapping, Sequence

import matplotlib
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap, ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .positional_encoding import sinusoidal_positional_encoding
from .training import LabelSmoothingLoss, noam_learning_rate

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


def _styled(fn: Callable) -> Callable:
    """Run ``fn`` under the house ``STYLE`` without touching the caller's rcParams."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            return fn(*args, **kwargs)

    return wrapper


def _figure(ax: Axes | None, nrows: int = 1, ncols: int = 1, figsize=None) -> tuple[Figure, np.ndarray]:
    """A new constrained-layout figure with a grid of axes, or the figure that owns ``ax``."""
    if ax is not None:
        if not isinstance(ax, Axes):
            raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
        return ax.figure, np.array([[ax]])
    fig = Figure(figsize=figsize or FIGSIZE, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _array(x, name: str, ndim: int | None = None, shape_name: str = "") -> np.ndarray:
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


def _bool_mask(mask, shape: tuple[int, int], name: str = "mask") -> np.ndarray:
    m = _array(mask, name)
    if m.dtype != bool:
        raise TypeError(f"{name} must be boolean (True = may attend), got dtype {m.dtype}")
    if m.ndim > 2:  # e.g. (1, 1, T, S) from padding_mask & causal_mask
        m = m.reshape(m.shape[-2:]) if math.prod(m.shape[:-2]) == 1 else m
    try:
        return np.broadcast_to(m, shape)
    except ValueError:
        raise ValueError(f"{name} of shape {m.shape} does not broadcast to the weights' shape {shape} (T, S)") from None


def _check_labels(labels, n: int, name: str, axis: str) -> list[str] | None:
    if labels is None:
        return None
    labels = [str(x) for x in labels]
    if len(labels) != n:
        raise ValueError(f"{name} must have one label per {axis} ({n}), got {len(labels)}")
    return labels


def _heatmap_ticks(ax: Axes, query_labels, key_labels, label_right: bool) -> None:
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


# --------------------------------------------------------------------------- attention


@_styled
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
    w = _array(weights, "weights", 2, "(T, S)")
    T, S = w.shape
    query_labels = _check_labels(query_labels, T, "query_labels", "query (T)")
    key_labels = _check_labels(key_labels, S, "key_labels", "key (S)")
    shown = np.ma.masked_array(w, mask=~_bool_mask(mask, (T, S))) if mask is not None else np.ma.masked_array(w)
    fig, axes = _figure(ax, figsize=(max(4.0, min(8.0, 2.5 + 0.35 * S)), max(3.0, min(6.0, 1.5 + 0.35 * T))))
    a = axes[0, 0]
    top = vmax if vmax is not None else (float(w.max()) if w.size else 1.0)
    im = a.imshow(shown, cmap=ATTENTION_CMAP, vmin=0.0, vmax=top if top > 0 else 1.0, aspect="auto",
                  interpolation="nearest")
    _heatmap_ticks(a, query_labels, key_labels, label_right)
    a.set_xlabel("keys")
    a.set_ylabel("queries")
    if title:
        a.set_title(title)
    if colorbar:
        fig.colorbar(im, ax=a, shrink=0.8, label="attention weight", location="bottom")
    return fig


@_styled
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
    w = _array(weights, "weights", 3, "(H, T, S)")
    H, T, S = w.shape
    if not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    head_titles = _check_labels(head_titles, H, "head_titles", "head (H)") or [f"head {h}" for h in range(H)]
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


@_styled
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
    m = _array(mask, "mask", 2, "(T, S)")
    if m.dtype != bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {m.dtype}")
    T, S = m.shape
    query_labels = _check_labels(query_labels, T, "query_labels", "query (T)")
    key_labels = _check_labels(key_labels, S, "key_labels", "key (S)")
    fig, axes = _figure(ax, figsize=(max(4.0, min(8.0, 3.0 + 0.35 * S)), max(3.0, min(6.0, 1.5 + 0.35 * T))))
    a = axes[0, 0]
    a.imshow(m.astype(float), cmap=MASK_CMAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    _heatmap_ticks(a, query_labels, key_labels, label_right=False)
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


# --------------------------------------------------------------------------- positions


@_styled
def plot_positional_encoding(table, title: str | None = None, ax: Axes | None = None) -> Figure:
    """The sinusoid table (L, D) of Section 3.5 as a heatmap, positions down, dimensions
    across: fast-varying columns on the left, slow ones on the right."""
    t = _array(table, "table", 2, "(L, D)")
    fig, axes = _figure(ax)
    a = axes[0, 0]
    im = a.imshow(t, cmap=DIVERGING_CMAP, vmin=-1.0, vmax=1.0, aspect="auto", interpolation="nearest")
    a.set_xlabel("dimension i")
    a.set_ylabel("position pos")
    a.set_title(title or f"Sinusoidal positional encoding, d_model = {t.shape[1]}")
    fig.colorbar(im, ax=a, shrink=0.85, label="PE(pos, i)")
    return fig


@_styled
def plot_wavelengths(
    d_model: int = 512, length: int = 128, dims: Sequence[int] | None = None, ax: Axes | None = None
) -> Figure:
    """A few columns of the positional-encoding table against position (Section 3.5):
    "the wavelengths form a geometric progression from 2*pi to 10000 * 2*pi". ``dims``
    defaults to four even (sine) columns, i = 0, D/8, D/4 and 3D/8, with wavelengths of about
    6, 20, 63 and 199 positions."""
    if not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be a positive even int, got {d_model!r}")
    if not isinstance(length, int) or length < 2:
        raise ValueError(f"length must be an int >= 2, got {length!r}")
    if dims is None:
        dims = sorted({2 * round(d_model * k / 16) for k in (0, 1, 2, 3)})
    dims = list(dims)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or not 0 <= d < d_model:
            raise ValueError(f"dims must hold ints in [0, d_model={d_model}), got {d!r}")
    table = sinusoidal_positional_encoding(length, d_model).numpy()  # (L, D)
    fig, axes = _figure(ax)
    a = axes[0, 0]
    for d in dims:
        wavelength = 2 * math.pi * 10000 ** ((d - d % 2) / d_model)
        kind = "sin" if d % 2 == 0 else "cos"
        a.plot(np.arange(length), table[:, d], label=f"i = {d} ({kind}, wavelength {wavelength:.0f})")
    a.set_xlabel("position pos")
    a.set_ylabel("PE(pos, i)")
    a.set_title(f"Positional-encoding columns, d_model = {d_model}")
    a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


# --------------------------------------------------------------------------- training


@_styled
def plot_learning_rate_schedule(
    d_models: Sequence[int] = (512, 1024),
    warmups: Sequence[int] = (4000, 8000),
    steps: int = 20000,
    factor: float = 1.0,
    ax: Axes | None = None,
) -> Figure:
    """Equation (3) of Section 5.3 for every (d_model, warmup) pair: one colour per d_model,
    one line style per warmup; a dot marks each peak, at step = warmup."""
    if not isinstance(steps, int) or steps < 2:
        raise ValueError(f"steps must be an int >= 2, got {steps!r}")
    d_models, warmups = list(d_models), list(warmups)
    if not d_models or not warmups:
        raise ValueError(f"d_models and warmups must be non-empty, got d_models={d_models}, warmups={warmups}")
    styles = ("-", "--", ":", "-.")
    fig, axes = _figure(ax)
    a = axes[0, 0]
    x = np.unique(np.linspace(1, steps, 500).astype(int))
    for i, d in enumerate(d_models):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        for j, w in enumerate(warmups):
            lr = [noam_learning_rate(int(s), d, w, factor) for s in x]
            a.plot(x, lr, color=color, linestyle=styles[j % len(styles)], label=f"d_model = {d}, warmup = {w}")
            if w <= steps:
                a.plot([w], [noam_learning_rate(w, d, w, factor)], "o", color=color, markersize=5)
    a.set_xlabel("training step")
    a.set_ylabel("learning rate")
    a.set_title("Warmup, then 1/sqrt(step) decay (equation 3)")
    a.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    a.legend()
    return fig


@_styled
def plot_label_smoothing(
    vocab_size: int = 10,
    target: int = 3,
    smoothing: float = 0.1,
    labels: Sequence[str] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The label-smoothed target distribution (Section 5.4) beside the one-hot target:
    ``1 - smoothing`` (plus its uniform share) on the correct token, ``smoothing / V`` on
    every token, from ``LabelSmoothingLoss.target_distribution``."""
    if not isinstance(vocab_size, int) or vocab_size < 2:
        raise ValueError(f"vocab_size must be an int >= 2, got {vocab_size!r}")
    if not isinstance(target, int) or not 0 <= target < vocab_size:
        raise ValueError(f"target must be an int in [0, vocab_size={vocab_size}), got {target!r}")
    labels = _check_labels(labels, vocab_size, "labels", "vocabulary entry (V)")
    smoothed = LabelSmoothingLoss(smoothing).target_distribution(torch.tensor([target]), vocab_size)[0].numpy()  # (V,)
    one_hot = np.zeros(vocab_size)
    one_hot[target] = 1.0
    fig, axes = _figure(ax)
    a = axes[0, 0]
    x = np.arange(vocab_size)
    width = 0.4
    a.bar(x - width / 2, one_hot, width, color=PALETTE["ink"], alpha=0.25, label="one-hot target")
    a.bar(x + width / 2, smoothed, width, color=PALETTE["query"], label=f"smoothed, epsilon = {smoothing}")
    a.set_xticks(x, labels if labels is not None else x)
    a.set_xlabel("vocabulary entry")
    a.set_ylabel("target probability")
    a.set_ylim(0, 1.08)
    a.set_title("Label smoothing (Section 5.4)")
    a.legend()
    return fig


def _history_columns(history) -> dict[str, list]:
    if isinstance(history, Mapping):
        return {str(k): list(v) for k, v in history.items()}
    if isinstance(history, Sequence) and all(isinstance(row, Mapping) for row in history):
        keys = list(dict.fromkeys(k for row in history for k in row))
        return {str(k): [row.get(k) for row in history] for k in keys}
    raise TypeError(f"history must be a list of dicts or a dict of lists, got {type(history).__name__}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and math.isfinite(float(v))


@_styled
def plot_training_curves(history, step_key: str = "step", title: str | None = None) -> Figure:
    """Loss (left) and accuracy-like metrics (right) against the step.

    ``history`` is a list of dicts (one per log line) or a dict of lists. Series are found
    by name: keys containing "loss" go left; keys containing "acc", "exact" or "match"
    go right. Missing keys, ``None`` and NaN (e.g. validation logged every 100 steps)
    are skipped. Without ``step_key`` the row number is the step. With no metric, the
    figure has one panel.
    """
    columns = _history_columns(history)
    n = max((len(v) for v in columns.values()), default=0)
    steps = columns.get(step_key, list(range(n)))
    loss_keys = [k for k in columns if k != step_key and "loss" in k.lower()]
    metric_keys = [k for k in columns if k != step_key and k not in loss_keys
                   and any(s in k.lower() for s in ("acc", "exact", "match"))]
    if not loss_keys and not metric_keys:
        raise ValueError(
            f"history has no loss or accuracy series; expected keys like 'loss', 'val_loss', 'accuracy', "
            f"'exact_match', got {sorted(columns)}"
        )
    panels = [(keys, ylabel) for keys, ylabel in ((loss_keys, "loss"), (metric_keys, "accuracy")) if keys]
    fig = Figure(figsize=FIGSIZE, layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for a, (keys, ylabel) in zip(axes, panels):
        for i, k in enumerate(keys):
            pts = [(s, v) for s, v in zip(steps, columns[k]) if _is_number(s) and _is_number(v)]
            if pts:
                xs, ys = zip(*pts)
                a.plot(xs, ys, color=SERIES_COLORS[i % len(SERIES_COLORS)], label=k.replace("_", " "),
                       marker="o" if len(pts) < 30 else None, markersize=4)
        a.set_xlabel("step")
        a.set_ylabel(ylabel)
        if ylabel == "accuracy":
            a.set_ylim(-0.02, 1.02)
        a.legend()
    if title:
        fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------- why sqrt(d_k)


def _check_d_ks(d_ks) -> list[int]:
    d_ks = list(d_ks)
    if not d_ks or not all(isinstance(d, (int, np.integer)) and d >= 1 for d in d_ks):
        raise ValueError(f"d_ks must be a non-empty sequence of positive ints, got {d_ks}")
    return [int(d) for d in d_ks]


@_styled
def plot_dot_product_variance(
    d_ks: Sequence[int] = (1, 4, 16, 64, 256, 1024), samples: int = 4000, seed: int = 0, ax: Axes | None = None
) -> Figure:
    """Footnote 4 of Section 3.2.1, measured: for q, k with independent unit-variance
    components, q . k has variance d_k; q . k / sqrt(d_k) has variance 1."""
    d_ks = _check_d_ks(d_ks)
    g = torch.Generator().manual_seed(seed)
    raw, scaled = [], []
    for d in d_ks:
        q, k = torch.randn(samples, d, generator=g), torch.randn(samples, d, generator=g)  # (N, K)
        dot = (q * k).sum(-1)  # (N,)
        raw.append(dot.var().item())
        scaled.append((dot / math.sqrt(d)).var().item())
    fig, axes = _figure(ax)
    a = axes[0, 0]
    a.plot(d_ks, d_ks, color=PALETTE["ink"], linestyle=":", linewidth=1.5, label="d_k (theory)")
    a.plot(d_ks, raw, "o-", color=PALETTE["mask"], label="var(q . k)")
    a.plot(d_ks, scaled, "o-", color=PALETTE["query"], label="var(q . k / sqrt(d_k))")
    a.set_xscale("log", base=2)
    a.set_yscale("log", base=2)
    a.set_xlabel("d_k")
    a.set_ylabel("variance of the score")
    a.set_title("Dot products grow with d_k")
    a.legend()
    return fig


@_styled
def plot_softmax_saturation(
    d_ks: Sequence[int] = (1, 4, 16, 64, 256, 1024),
    num_keys: int = 16,
    samples: int = 500,
    seed: int = 0,
    ax: Axes | None = None,
) -> Figure:
    """Why divide by sqrt(d_k) (Section 3.2.1): the mean largest softmax weight over
    ``num_keys`` random keys. Unscaled, it tends to 1 as d_k grows (a one-hot softmax,
    "regions where it has extremely small gradients"); scaled, it stays put."""
    d_ks = _check_d_ks(d_ks)
    if not isinstance(num_keys, int) or num_keys < 2:
        raise ValueError(f"num_keys must be an int >= 2, got {num_keys!r}")
    g = torch.Generator().manual_seed(seed)
    raw, scaled = [], []
    for d in d_ks:
        q = torch.randn(samples, 1, d, generator=g)  # (N, 1, K)
        k = torch.randn(samples, num_keys, d, generator=g)  # (N, S, K)
        scores = (q * k).sum(-1)  # (N, S)
        raw.append(scores.softmax(-1).amax(-1).mean().item())
        scaled.append((scores / math.sqrt(d)).softmax(-1).amax(-1).mean().item())
    fig, axes = _figure(ax)
    a = axes[0, 0]
    a.axhline(1.0 / num_keys, color=PALETTE["ink"], linestyle=":", linewidth=1.5, label=f"uniform (1/{num_keys})")
    a.plot(d_ks, raw, "o-", color=PALETTE["mask"], label="softmax(q . k)")
    a.plot(d_ks, scaled, "o-", color=PALETTE["query"], label="softmax(q . k / sqrt(d_k))")
    a.set_xscale("log", base=2)
    a.set_ylim(0, 1.05)
    a.set_xlabel("d_k")
    a.set_ylabel("largest attention weight (mean)")
    a.set_title(f"Softmax saturates without scaling ({num_keys} keys)")
    a.legend()
    return fig


@_styled
def plot_scaling_argument(d_ks: Sequence[int] = (1, 4, 16, 64, 256, 1024), seed: int = 0) -> Figure:
    """Both halves of the sqrt(d_k) argument side by side: score variance, then saturation."""
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    plot_dot_product_variance(d_ks, seed=seed, ax=left)
    plot_softmax_saturation(d_ks, seed=seed, ax=right)
    return fig


# --------------------------------------------------------------------------- timings


@_styled
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
    x = _array(lengths, "lengths", 1, "(n,)")
    y = _array(times_ms, "times_ms")
    if y.ndim == 1:
        y = y[None, :]
    if y.ndim != 2 or y.shape[1] != x.shape[0]:
        raise ValueError(f"times_ms must have shape (n,) or (m, n) with n = len(lengths) = {x.shape[0]}, got {y.shape}")
    labels = _check_labels(labels, y.shape[0], "labels", "series (m)")
    fig, axes = _figure(ax)
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


# --------------------------------------------------------------------------- gradients


@_styled
def plot_layer_gradient_norms(norms: dict[str, Sequence[float]], title: str | None = None, ax: Axes | None = None) -> Figure:
    """Gradient norm per layer, one line per variant (e.g. ``{"post-LN": [...], "pre-LN": [...]}``)."""
    if not isinstance(norms, dict) or not norms:
        raise ValueError(f"norms must be a non-empty dict of name -> per-layer norms, got {type(norms).__name__}")
    fig, axes = _figure(ax)
    a = axes[0, 0]
    for i, (name, values) in enumerate(norms.items()):
        y = _array(values, f"norms[{name!r}]", 1, "(layers,)")
        a.plot(np.arange(1, len(y) + 1), y, "o-", color=SERIES_COLORS[i % len(SERIES_COLORS)], label=name)
    a.set_xlabel("layer (1 = nearest the input)")
    a.set_ylabel("gradient norm")
    a.set_ylim(bottom=0)
    if title:
        a.set_title(title)
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
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    fig, axes = _figure(ax)
    a = axes[0, 0]
    for i, (name, values) in enumerate(step_times_ms.items()):
        y = _array(values, f"step_times_ms[{name!r}]", 1, "(steps,)")
        smooth = np.array([np.median(y[max(0, t - window + 1): t + 1]) for t in range(len(y))])
        a.plot(np.arange(1, len(y) + 1), smooth, color=SERIES_COLORS[i % len(SERIES_COLORS)], label=name, lw=2)
    a.set_xlabel("output position (step)")
    a.set_ylabel("time per step (ms)")
    a.set_ylim(bottom=0)
    if title:
        a.set_title(title)
    a.legend()
    return fig
