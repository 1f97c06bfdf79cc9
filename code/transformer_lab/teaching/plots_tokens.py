"""Figures about tokens: how the vocabulary size of byte-pair encoding (Section 5.1) trades
against the sequence length n of Table 1. They only draw; ``bpe`` computes."""

from __future__ import annotations

from typing import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from .style import OTHER, as_array, new_figure, styled

#: Series that are not Q, K, V or masks: ink, then vermillion.
NEUTRAL_COLORS = (OTHER["ink"], OTHER["vermillion"])


@styled
def plot_vocabulary_tradeoff(
    vocab_sizes: Sequence[int],
    mean_tokens: dict[str, Sequence[float]],
    words_per_sentence: dict[str, float] | None = None,
    title: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Mean tokens per sentence (the sequence length n) against the vocabulary size, one
    line per text in ``mean_tokens``; ``words_per_sentence`` draws each text's word count
    as a dashed line (one token per word). The x axis is logarithmic."""
    x = as_array(vocab_sizes, "vocab_sizes", 1, "(m,)")
    if not isinstance(mean_tokens, dict) or not mean_tokens:
        raise ValueError(f"mean_tokens must be a non-empty dict of text name -> (m,) means, got {mean_tokens!r}")
    if len(mean_tokens) > len(NEUTRAL_COLORS):
        raise ValueError(f"mean_tokens must hold at most {len(NEUTRAL_COLORS)} texts, got {len(mean_tokens)}")
    fig, axes = new_figure(ax, figsize=(10, 4.6))
    a = axes[0, 0]
    for color, (name, values) in zip(NEUTRAL_COLORS, mean_tokens.items()):
        y = as_array(values, f"mean_tokens[{name!r}]", 1, f"(m,) with m = {len(x)}")
        if len(y) != len(x):
            raise ValueError(f"mean_tokens[{name!r}] must have one value per vocabulary size ({len(x)}), got {len(y)}")
        a.plot(x, y, "o-", color=color, label=name)
        if words_per_sentence and name in words_per_sentence:
            a.axhline(words_per_sentence[name], color=color, ls="--", lw=1.5)
    if words_per_sentence:  # label the first dashed line; the others read the same
        name, level = next(iter(words_per_sentence.items()))
        a.annotate("one token per word", (x[0], level), xytext=(0, -24), textcoords="offset points",
                   color=OTHER["ink"])
    a.set_xscale("log")
    ticks = [t for t in (20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000) if x.min() <= t <= x.max()]
    a.set_xticks(ticks, [str(t) for t in ticks])  # plain numbers, not 2 x 10^2
    a.xaxis.set_minor_formatter(NullFormatter())
    a.set_xlabel("vocabulary size (symbols)")
    a.set_ylabel("tokens per sentence, n")
    a.set_ylim(bottom=0)
    if title:
        a.set_title(title)
    a.legend()
    return fig
