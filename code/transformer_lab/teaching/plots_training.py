"""Training figures (Section 5): the learning-rate schedule, label smoothing, training
curves, per-layer gradient norms at initialisation (post-LN against pre-LN), and the
training and validation loss of runs with and without dropout (:func:`plot_dropout_runs`).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ..training import LabelSmoothingLoss, noam_learning_rate
from .style import FIGSIZE, OTHER, SERIES_COLORS, WIDE_FIGSIZE, as_array, check_labels, finish_axes, new_figure, styled


@styled
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
    fig, axes = new_figure(ax, figsize=(WIDE_FIGSIZE[0], 4.0))
    a = axes[0, 0]
    x = np.unique(np.linspace(1, steps, 500).astype(int))
    for i, d in enumerate(d_models):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        for j, w in enumerate(warmups):
            lr = [noam_learning_rate(int(s), d, w, factor) for s in x]
            a.plot(x, lr, color=color, linestyle=styles[j % len(styles)], label=f"d = {d}, warmup {w}")
            if w <= steps:
                a.plot([w], [noam_learning_rate(w, d, w, factor)], "o", color=color, markersize=5)
    a.set_xlabel("training step")
    a.set_title("Warmup, then 1/√step decay (equation 3)")
    a.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 1e3:g}"))  # no small offset text
    a.set_ylabel("learning rate (× 10⁻³)")
    a.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e3:g}k" if v else "0"))
    a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig


@styled
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
    labels = check_labels(labels, vocab_size, "labels", "vocabulary entry (V)")
    smoothed = LabelSmoothingLoss(smoothing).target_distribution(torch.tensor([target]), vocab_size)[0].numpy()  # (V,)
    one_hot = np.zeros(vocab_size)
    one_hot[target] = 1.0
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    x = np.arange(vocab_size)
    width = 0.4
    a.bar(x - width / 2, one_hot, width, color=OTHER["grey"], label="one-hot target")
    a.bar(x + width / 2, smoothed, width, color=OTHER["vermillion"], label=f"smoothed, ε = {smoothing}")
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


@styled
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
    fig = Figure(figsize=(WIDE_FIGSIZE[0], 4.0) if len(panels) > 1 else FIGSIZE, layout="constrained")
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



@styled
def plot_layer_gradient_norms(norms: dict[str, Sequence[float]], title: str | None = None, ax: Axes | None = None) -> Figure:
    """Gradient norm per layer, one line per variant (e.g. ``{"post-LN": [...], "pre-LN": [...]}``)."""
    if not isinstance(norms, dict) or not norms:
        raise ValueError(f"norms must be a non-empty dict of name -> per-layer norms, got {type(norms).__name__}")
    fig, axes = new_figure(ax)
    a = axes[0, 0]
    for i, (name, values) in enumerate(norms.items()):
        y = as_array(values, f"norms[{name!r}]", 1, "(layers,)")
        a.plot(np.arange(1, len(y) + 1), y, "o-", color=SERIES_COLORS[i % len(SERIES_COLORS)], label=name)
    finish_axes(a, "layer (1 = nearest the input)", "gradient norm", title)
    return fig



@styled
def plot_dropout_runs(runs: Sequence[Mapping], title: str = "solid: validation · dashed: training",
                      ax: Axes | None = None) -> Figure:
    """The runs of :func:`~transformer_lab.teaching.dropout.dropout_runs` against the step:
    per dropout rate one colour (named in the legend, top right, above the curves' ends),
    the validation loss solid and the training loss (both in evaluation mode) dashed, as the
    title says, so the gap between a rate's two lines is what it failed to generalise."""
    runs = list(runs)
    if not runs:
        raise ValueError("runs must hold at least one run (dropout_runs())")
    fig, axes = new_figure(ax, figsize=(5.4, 3.2))  # a column of 54% of a slide
    a = axes[0, 0]
    colors = (OTHER["vermillion"], OTHER["ink"], OTHER["sky"], OTHER["purple"])
    top = 0.0
    for i, run in enumerate(runs):
        missing = {"rate", "steps", "train_loss", "validation_loss"} - set(run)
        if missing:
            raise ValueError(f"runs[{i}] lacks {sorted(missing)}")
        color, name = colors[i % len(colors)], f"P_drop = {run['rate']:g}"
        a.plot(run["steps"], run["validation_loss"], "-o", ms=4, color=color, label=name)
        a.plot(run["steps"], run["train_loss"], "--", color=color)
        top = max(top, *run["validation_loss"], *run["train_loss"])
    a.set_xlabel("training step")
    a.set_ylabel("loss (nats per token)")
    a.set_ylim(0.0, 1.15 * top)
    if title:
        a.set_title(title)
    a.legend(loc="upper right")  # the curves fall from the top left: the top right is free
    return fig
