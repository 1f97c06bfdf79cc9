"""Charts of the paper's reported results (``paper``): Table 2's BLEU against training
cost, and Table 3's variations as differences from the base model. They only draw the
data they are given; every row comes from :mod:`transformer_lab.teaching.paper`.
"""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from .paper import Table2Row, Table3Row, table3_base
from .style import OTHER, PALETTE, WIDE_FIGSIZE, new_figure, plain_log_axis, styled

# Not the query/key/value/mask colours, which mean only those: the paper's own rows and the
# better-than-base bars in ink, the others in grey.
OURS = OTHER["ink"]
THEIRS = OTHER["grey"]


@styled
def plot_table2(rows: Sequence[Table2Row]) -> Figure:
    """Table 2 as three dot columns sharing the models' axis: BLEU EN-DE, BLEU EN-FR, and
    training cost in FLOPs (log scale; EN-DE filled, EN-FR hollow). The Transformer's rows
    are in ink, the others grey; missing cells are left empty, as in the paper."""
    rows = list(rows)
    if not rows or not all(isinstance(r, Table2Row) for r in rows):
        raise TypeError("rows must be a non-empty sequence of Table2Row")
    fig, axes = new_figure(None, 1, 3, figsize=(WIDE_FIGSIZE[0], 5.2))
    y = list(range(len(rows)))[::-1]  # first row on top
    for i, row in enumerate(rows):
        colour = OURS if row.ours else THEIRS
        for a, value in ((axes[0, 0], row.bleu_en_de), (axes[0, 1], row.bleu_en_fr)):
            if value is not None:
                a.plot(value, y[i], "o", color=colour, ms=10)
                a.annotate(f"{value:g}", (value, y[i]), xytext=(9, 0), textcoords="offset points",
                           ha="left", va="center", color=colour)
        for value, fill in ((row.cost_en_de, colour), (row.cost_en_fr, "none")):
            if value is not None:
                axes[0, 2].plot(value, y[i], "o", color=colour, mfc=fill, ms=10, mew=2)
    axes[0, 2].set_xscale("log")
    plain_log_axis(axes[0, 2].xaxis, every=100)
    for a, title in zip(axes[0], ("BLEU EN-DE", "BLEU EN-FR", "training cost (FLOPs)")):
        a.set_title(title)
        a.set_yticks(y, [r.model for r in rows] if a is axes[0, 0] else [""] * len(rows))
        a.set_ylim(-0.7, len(rows) - 0.3)
        a.grid(axis="y", color="#DDDDDD", lw=0.8)
        a.tick_params(axis="y", left=False)
    axes[0, 2].legend(handles=[Line2D([], [], marker="o", ls="", color=THEIRS, ms=10, label="EN-DE"),
                               Line2D([], [], marker="o", ls="", color=THEIRS, mfc="none", mew=2, ms=10,
                                      label="EN-FR")], loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2,
                      handletextpad=0.1, columnspacing=0.8)
    axes[0, 0].set_xlim(23, 30.4)  # room right of each dot for its value
    axes[0, 1].set_xlim(37.5, 43.6)
    axes[0, 2].set_xlim(1e17, 1e22)
    return fig


def table3_label(row: Table3Row) -> str:
    """A chart label for a Table 3 row: its group, what changed, and its size if printed."""
    change = "big model" if row.group == "big" else row.change
    prefix = "" if row.group in ("base", "big") else f"({row.group}) "
    return f"{prefix}{change}" + (f", {row.params_m:g}M" if row.params_m is not None else "")


@styled
def plot_table3(rows: Sequence[Table3Row], base: Table3Row | None = None, title: str | None = None) -> Figure:
    """Each row's BLEU and perplexity minus the base row's (Table 3), as horizontal bars:
    right is better for BLEU, left is better for perplexity. Bars that improve on the base
    are in ink, those that are worse (or equal) in grey."""
    rows = list(rows)
    if not rows or not all(isinstance(r, Table3Row) for r in rows):
        raise TypeError("rows must be a non-empty sequence of Table3Row")
    base = base or table3_base()
    fig, axes = new_figure(None, 1, 2, figsize=(WIDE_FIGSIZE[0], min(5.4, 0.4 * len(rows) + 1.4)))
    y = list(range(len(rows)))[::-1]
    labels = [table3_label(r) for r in rows]
    for a, metric, better_if_positive, name in ((axes[0, 0], "bleu", True, "ΔBLEU (→ better)"),
                                                (axes[0, 1], "ppl", False, "Δperplexity (← better)")):
        deltas = [round(getattr(r, metric) - getattr(base, metric), 2) for r in rows]
        digits = 1 if metric == "bleu" else 2  # as many decimals as the paper prints
        colours = [OURS if (d > 0) == better_if_positive and abs(d) > 1e-9 else THEIRS for d in deltas]
        a.barh(y, deltas, color=colours, height=0.65)
        for yi, d in zip(y, deltas):
            a.annotate(f"{d:+.{digits}f}", (d, yi), xytext=(4 if d >= 0 else -4, 0), textcoords="offset points",
                       ha="left" if d >= 0 else "right", va="center")
        a.axvline(0, color=PALETTE["ink"], lw=1)
        a.set_title(name)
        a.set_yticks(y, labels if a is axes[0, 0] else [""] * len(rows))
        a.tick_params(axis="y", left=False)
        lo, hi = min(deltas + [0]), max(deltas + [0])
        pad = 0.35 * (hi - lo or 1)
        a.set_xlim(lo - pad, hi + pad)
        a.xaxis.set_major_locator(MaxNLocator(4))
    if title:
        fig.suptitle(title)
    return fig
