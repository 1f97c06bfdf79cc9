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


def weight(value) -> str:
    """An attention weight as the slides print it: two decimals, or "< 0.01" (never a
    misleading 0.00); the bar labels and the sentences under them (``deck_claims``) share it."""
    return f"{float(value):.2f}" if float(value) >= 0.005 else "< 0.01"


def percent(share) -> str:
    """A share (a float or a one-element tensor of any dtype) as a whole percentage, rounded
    from its float64 value: the bar labels and the sentences under them (``deck_claims``)
    print one share the same way (a float32 0.865 is 86.500001%, so 87, on both)."""
    return f"{100 * float(share):.0f}"


@styled
def plot_antecedent_heads(more_on_antecedent, place_if_place, place_if_animal,
                          title: str | None = None) -> Figure:
    """Every encoder head's pronoun statistics, two panels over heads grouped by layer.
    Left: the share of sentences where "it" puts more weight on its antecedent than on the
    other noun (chance: 50%). Right: the share where "it" weights the place above the
    animal, right or wrong, apart for the sentences where the place is meant
    (``place_if_place``) and where the animal is (``place_if_animal``): a head that knows
    which noun is meant draws two bars far apart; a head whose choice cannot depend on the
    meaning (layer 0: its keys are the input vectors) draws two bars alike. Inputs are (L, H)."""
    more = as_array(more_on_antecedent, "more_on_antecedent", 2, "(L, H)")
    if_place = as_array(place_if_place, "place_if_place", 2, "(L, H)")
    if_animal = as_array(place_if_animal, "place_if_animal", 2, "(L, H)")
    if not more.shape == if_place.shape == if_animal.shape:
        raise ValueError(f"the three statistics must have one shape (L, H), got {more.shape}, {if_place.shape}, "
                         f"{if_animal.shape}")
    L, H = more.shape
    x = np.arange(L * H) + np.repeat(np.arange(L), H) * 0.8  # a gap between layers
    labels = [f"{h}" for _ in range(L) for h in range(H)]
    fig = Figure(figsize=(WIDE_FIGSIZE[0], 4.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    shades = [OTHER_NOUN if layer < L - 1 else ANTECEDENT for layer in range(L) for _ in range(H)]
    bars = left.bar(x, 100 * more.reshape(-1), color=shades, width=0.8)
    left.bar_label(bars, [percent(v) for v in more.reshape(-1)], padding=2)
    left.axhline(50, color=OTHER["ink"], linestyle="--", linewidth=1.2, label="chance")
    left.legend(loc="upper left")
    left.set_ylim(0, 112)
    left.set_ylabel("% of sentences")
    left.set_title("more weight on the antecedent")
    width = 0.4
    right.bar(x - width / 2, 100 * if_place.reshape(-1), width, color=ANTECEDENT, label="the place is meant")
    right.bar(x + width / 2, 100 * if_animal.reshape(-1), width, color=OTHER_NOUN, label="the animal is meant")
    right.set_ylabel("% of sentences")
    right.set_title("\"it\" weights the place more")
    # a share stays on a 0-100% axis: the legend goes under the panel, not on top of room above 100
    fig.legend(*right.get_legend_handles_labels(), loc="outside lower right", ncol=2, columnspacing=0.8,
               handlelength=1.2)
    right.set_ylim(0, 100)
    for a in (left, right):
        a.set_yticks(range(0, 101, 20))
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
        a.bar_label(bars, [weight(v) if i in (right, other) else "" for i, v in enumerate(w)], padding=3)
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
