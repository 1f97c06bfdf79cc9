"""Figures of the model's fixed parts: the positional encoding (Section 3.5) and the
argument for scaling dot products by 1/sqrt(d_k) (Section 3.2.1, footnote 4).

Shapes: L positions, D d_model.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .. import checks
from ..positional_encoding import sinusoidal_positional_encoding
from .style import DIVERGING_CMAP, OTHER, WIDE_FIGSIZE, add_colorbar, as_array, new_figure, plain_log_axis, styled


@styled
def plot_positional_encoding(table, title: str | None = None, ax: Axes | None = None) -> Figure:
    """The sinusoid table (L, D) of Section 3.5 as a heatmap, positions down, its D columns
    across: fast-varying columns on the left, slow ones on the right. As in the paper's
    PE(pos, 2i) and PE(pos, 2i+1), i counts (sin, cos) pairs: column 2i is a sine, column
    2i + 1 the cosine of the same frequency."""
    t = as_array(table, "table", 2, "(L, D)")
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    im = a.imshow(t, cmap=DIVERGING_CMAP, vmin=-1.0, vmax=1.0, aspect="auto", interpolation="nearest")
    a.set_xlabel("column: 2i (sin), 2i + 1 (cos)")
    a.set_ylabel("position pos")
    a.set_title(title or f"Sinusoidal positional encoding, d_model = {t.shape[1]}")
    add_colorbar(fig, im, a, "PE(pos, column)", shrink=0.9, pad=0.02, aspect=25)
    return fig


@styled
def plot_wavelengths(
    d_model: int = 512, length: int = 128, dims: Sequence[int] | None = None, ax: Axes | None = None
) -> Figure:
    """A few columns of the positional-encoding table against position (Section 3.5):
    "the wavelengths form a geometric progression from 2*pi to 10000 * 2*pi". ``dims`` are
    column indices in [0, D). As in the paper's PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),
    i counts (sin, cos) pairs: column 2i is a sine, column 2i + 1 a cosine, both with
    wavelength 2*pi * 10000^(2i/d_model); the legend names each column that way
    ("2i = 64: sin"). ``dims`` defaults to four sine columns, 2i = 0, D/8, D/4 and 3D/8,
    with wavelengths of about 6, 20, 63 and 199 positions."""
    checks.positive_even_int("d_model", d_model)
    if not isinstance(length, int) or length < 2:
        raise ValueError(f"length must be an int >= 2, got {length!r}")
    if dims is None:
        dims = sorted({2 * round(d_model * k / 16) for k in (0, 1, 2, 3)})
    dims = list(dims)
    for d in dims:
        if not isinstance(d, (int, np.integer)) or not 0 <= d < d_model:
            raise ValueError(f"dims must hold ints in [0, d_model={d_model}), got {d!r}")
    table = sinusoidal_positional_encoding(length, d_model).numpy()  # (L, D)
    fig, axes = new_figure(ax, figsize=(WIDE_FIGSIZE[0], 4.2))
    a = axes[0, 0]
    for d in dims:
        two_i = d - d % 2
        wavelength = 2 * math.pi * 10000 ** (two_i / d_model)
        column = f"2i = {d}: sin" if d % 2 == 0 else f"2i + 1 = {d}: cos"
        a.plot(np.arange(length), table[:, d], label=f"{column}, wavelength {wavelength:.0f}")
    a.set_xlabel("position pos")
    parities = {d % 2 for d in dims}
    a.set_ylabel("PE(pos, 2i)" if parities == {0} else "PE(pos, 2i + 1)" if parities == {1} else "PE(pos, column)")
    # from the plot's left edge: centred over a plot the legend narrows, it would stick out
    a.set_title(f"Positional-encoding columns, d_model = {d_model}", loc="left")
    a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig



def _check_d_ks(d_ks) -> list[int]:
    d_ks = list(d_ks)
    if not d_ks or not all(isinstance(d, (int, np.integer)) and d >= 1 for d in d_ks):
        raise ValueError(f"d_ks must be a non-empty sequence of positive ints, got {d_ks}")
    return [int(d) for d in d_ks]


@styled
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
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    a.plot(d_ks, d_ks, color=OTHER["grey"], linestyle=":", linewidth=2, label="d_k (theory)")
    a.plot(d_ks, raw, "o-", color=OTHER["vermillion"], label="var(q·k)")
    a.plot(d_ks, scaled, "o-", color=OTHER["ink"], label="var(q·k / √d_k)")
    a.set_xscale("log", base=2)
    a.set_yscale("log", base=2)
    a.set_xlabel("d_k")
    a.set_ylabel("variance of the score")
    plain_log_axis(a.xaxis, 2, every=4)
    plain_log_axis(a.yaxis, 2, every=8)
    a.set_title("Dot products grow with d_k")
    a.legend(loc="upper left")  # above the diagonal
    return fig


@styled
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
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    a.axhline(1.0 / num_keys, color=OTHER["grey"], linestyle=":", linewidth=2, label=f"uniform, 1/{num_keys}")
    a.plot(d_ks, raw, "o-", color=OTHER["vermillion"], label="q·k")
    a.plot(d_ks, scaled, "o-", color=OTHER["ink"], label="q·k / √d_k")
    a.set_xscale("log", base=2)
    plain_log_axis(a.xaxis, 2, every=4)
    a.set_ylim(0, 1.05)
    a.set_xlabel("d_k")
    a.set_ylabel("largest weight (mean)")
    a.set_title(f"Softmax saturates ({num_keys} keys)")
    a.legend(loc="center right")  # between the saturating line and the flat one
    return fig


@styled
def plot_scaling_argument(d_ks: Sequence[int] = (1, 4, 16, 64, 256, 1024), seed: int = 0) -> Figure:
    """Both halves of the sqrt(d_k) argument side by side: score variance, then saturation."""
    fig = Figure(figsize=(WIDE_FIGSIZE[0], 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    plot_dot_product_variance(d_ks, seed=seed, ax=left)
    plot_softmax_saturation(d_ks, seed=seed, ax=right)
    for a in (left, right):  # one legend for both: the colours mean the same in each
        a.get_legend().remove()
    fig.legend(left.get_lines(), ["reference: d_k, uniform 1/16", "q·k", "q·k / √d_k"], loc="outside lower center",
               ncol=3)
    return fig



@styled
def plot_position_rotation(d_model: int = 512, pairs: Sequence[int] = (0, 32), positions: int = 7,
                           k: int = 2, starts: Sequence[int] = (0, 3)) -> Figure:
    """Why sinusoids (Section 3.5): each (sin, cos) pair of the positional encoding is a
    point on the unit circle, (PE(pos, 2i), PE(pos, 2i + 1)) = (sin(omega_i pos),
    cos(omega_i pos)) with omega_i = 1 / 10000^(2i/d_model), so one step of position turns
    it by the same angle omega_i wherever it is. One panel per pair index i in ``pairs``:
    positions 0 to ``positions`` - 1 as numbered points, and an arrow from each pos in
    ``starts`` to pos + ``k``: the same turn, k omega_i, from every start. That turn is
    what :func:`~transformer_lab.relative_position_map` applies to every pair at once."""
    checks.positive_even_int("d_model", d_model)
    checks.positive_int("positions", positions)
    checks.positive_int("k", k)
    pairs, starts = list(pairs), list(starts)
    if not pairs or not all(isinstance(i, (int, np.integer)) and 0 <= i < d_model // 2 for i in pairs):
        raise ValueError(f"pairs must be a non-empty sequence of pair indices in [0, {d_model // 2}), got {pairs}")
    if not all(isinstance(p, (int, np.integer)) and 0 <= p and p + k < positions for p in starts):
        raise ValueError(f"starts must hold positions p with p + k < positions = {positions} (k = {k}), got {starts}")
    table = sinusoidal_positional_encoding(positions, d_model, dtype=torch.float64).numpy()  # (L, D)
    fig, axes = new_figure(None, 1, len(pairs), figsize=(3.1 * len(pairs), 2.8))  # two fill 64% of a slide
    circle = np.linspace(0, 2 * math.pi, 200)
    for a, i in zip(axes[0], pairs):
        omega = 10000 ** (-2 * i / d_model)
        x, y = table[:, 2 * i], table[:, 2 * i + 1]  # sin, cos
        a.plot(np.sin(circle), np.cos(circle), color=OTHER["grey"], lw=1)
        a.plot(x, y, "o", color=OTHER["ink"], ms=7)
        for pos in range(positions):
            a.annotate(str(pos), (x[pos], y[pos]), xytext=(1.22 * x[pos], 1.22 * y[pos]), ha="center", va="center")
        for p in starts:
            a.annotate("", (0.82 * x[p + k], 0.82 * y[p + k]), xytext=(0.82 * x[p], 0.82 * y[p]),
                       arrowprops=dict(arrowstyle="-|>", color=OTHER["vermillion"], lw=2.2,
                                       connectionstyle=f"arc3,rad={-0.25 if k * omega < math.pi else 0.25}"))
        a.set_aspect("equal")
        a.set_xlim(-1.45, 1.45)
        a.set_ylim(-1.45, 1.45)
        a.set_xticks([-1, 0, 1])
        a.set_yticks([-1, 0, 1])
        a.set_xlabel(f"PE(pos, {2 * i}) = sin")
        a.set_ylabel(f"PE(pos, {2 * i + 1}) = cos")
        a.set_title(f"pair i = {i}: ω = {omega:.2f}")
    return fig
