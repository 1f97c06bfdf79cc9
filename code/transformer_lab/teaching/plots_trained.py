"""Figures of trained models: heads that resolve a pronoun (encoder self-attention,
Section 3.2.3). A beam search's tree (Section 6.1) is drawn by :mod:`.plots_beam`.

Shapes: L layers, H heads, S keys.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .style import LIGHT, OTHER, WIDE_FIGSIZE, as_array, check_labels, styled

#: The two nouns of a pronoun sentence and the other words (no Q/K/V meaning: ink and greys).
ANTECEDENT, OTHER_NOUN, OTHER_WORD = OTHER["ink"], OTHER["grey"], LIGHT


@styled
def plot_antecedent_heads(more_on_antecedent, weight_on_antecedent, weight_on_other,
                          title: str | None = None) -> Figure:
    """Every encoder head's pronoun statistic, two panels over heads grouped by layer:
    left, the share of sentences where "it" puts more weight on its antecedent than on the
    other noun (chance: 50%); right, the mean weight on each noun. Inputs are (L, H)."""
    more = as_array(more_on_antecedent, "more_on_antecedent", 2, "(L, H)")
    right = as_array(weight_on_antecedent, "weight_on_antecedent", 2, "(L, H)")
    other = as_array(weight_on_other, "weight_on_other", 2, "(L, H)")
    if not more.shape == right.shape == other.shape:
        raise ValueError(f"the three statistics must have one shape (L, H), got {more.shape}, {right.shape}, "
                         f"{other.shape}")
    L, H = more.shape
    x = np.arange(L * H) + np.repeat(np.arange(L), H) * 0.8  # a gap between layers
    labels = [f"{h}" for _ in range(L) for h in range(H)]
    fig = Figure(figsize=(WIDE_FIGSIZE[0], 4.4), layout="constrained")
    left, mean = fig.subplots(1, 2)
    shades = [OTHER_NOUN if layer < L - 1 else ANTECEDENT for layer in range(L) for _ in range(H)]
    bars = left.bar(x, 100 * more.reshape(-1), color=shades, width=0.8)
    left.bar_label(bars, [f"{100 * v:.0f}" for v in more.reshape(-1)], padding=2)
    left.axhline(50, color=OTHER["ink"], linestyle="--", linewidth=1.2, label="chance")
    left.legend(loc="upper left")
    left.set_ylim(0, 112)
    left.set_ylabel("% of sentences")
    left.set_title("more weight on the antecedent")
    width = 0.4
    mean.bar(x - width / 2, right.reshape(-1), width, color=ANTECEDENT, label="antecedent")
    mean.bar(x + width / 2, other.reshape(-1), width, color=OTHER_NOUN, label="other noun")
    mean.set_ylabel("mean weight from \"it\"")
    mean.set_title("mean attention weight")
    mean.legend(loc="upper left")
    mean.set_ylim(0, max(0.05, float(max(right.max(), other.max()))) * 1.3)
    for a in (left, mean):
        a.set_xticks(x, labels)
        a.set_xlabel("   ".join(f"layer {layer}" for layer in range(L)) + " (head)")
    if title:
        fig.suptitle(title)
    return fig


@styled
def plot_weights_from(weights: Sequence, key_labels: Sequence[Sequence[str]], antecedents: Sequence[int],
                      others: Sequence[int], titles: Sequence[str] | None = None, query: str = "it",
                      title: str | None = None) -> Figure:
    """One head's weights from one query (``query``) over the words of several sentences,
    one panel each (horizontal bars, the sentence read top to bottom): the antecedent in
    ink, the other noun in grey. ``weights[i]`` is (S_i,) for ``key_labels[i]``."""
    n = len(weights)
    if not n or not len(key_labels) == len(antecedents) == len(others) == n:
        raise ValueError(f"weights, key_labels, antecedents and others must have one entry per sentence, got "
                         f"{n}, {len(key_labels)}, {len(antecedents)}, {len(others)}")
    titles = check_labels(titles, n, "titles", "sentence") or [""] * n
    rows = [as_array(w, f"weights[{i}]", 1, "(S,)") for i, w in enumerate(weights)]
    fig = Figure(figsize=(WIDE_FIGSIZE[0], 4.6), layout="constrained")
    axes = fig.subplots(1, n, squeeze=False, sharex=True)[0]
    for a, w, words, right, other, panel in zip(axes, rows, key_labels, antecedents, others, titles):
        words = check_labels(words, len(w), "key_labels", "key (S)")
        colors = [ANTECEDENT if i == right else OTHER_NOUN if i == other else OTHER_WORD for i in range(len(w))]
        bars = a.barh(np.arange(len(w)), w, color=colors)
        a.bar_label(bars, [f"{v:.2f}" if i in (right, other) else "" for i, v in enumerate(w)], padding=3)
        a.set_yticks(np.arange(len(w)), words)
        a.invert_yaxis()
        a.set_xlim(0, 1.18 * max(float(r.max()) for r in rows))
        a.set_xlabel(f"weight from \"{query}\"")
        a.set_title(panel)
    axes[-1].legend(handles=[Patch(color=ANTECEDENT, label="antecedent"), Patch(color=OTHER_NOUN, label="other noun")],
                    loc="lower right")
    if title:
        fig.suptitle(title)
    return fig
