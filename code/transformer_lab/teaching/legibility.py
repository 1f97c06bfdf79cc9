"""Text on a slide must be readable from the back of the room: at least 20 px on the deck's
1050 x 700 slide. The house ``STYLE`` sets every text of the package's figures to at least
``TEXT_PT`` points; this module measures what a figure's text becomes where a slide shows
it, and raises the text of a figure drawn elsewhere to that size.

A figure shown at its natural size (its saved width in inches x 96 px) renders 1 pt as
4/3 px; one scaled down to fit a narrower place (a column) shrinks its text in proportion.
"""

from __future__ import annotations

from typing import NamedTuple

from matplotlib.figure import Figure
from matplotlib.text import Text

from deckbuild.findings import MIN_TEXT_PX  # noqa: F401 - re-exported: one floor for figures and deck

from .. import checks
from .style import DISPLAY_DPI, SLIDE_WIDTH_PX, TEXT_PT

#: The widths (px) of the places a slide shows a figure: the whole slide, or one column of
#: ``.columns`` at the given share of the slide's width (25%: the model map beside a slide).
PLACES = {"slide": SLIDE_WIDTH_PX, "column 64%": 0.64 * SLIDE_WIDTH_PX, "column 56%": 0.56 * SLIDE_WIDTH_PX,
          "column 54%": 0.54 * SLIDE_WIDTH_PX, "column 50%": 0.5 * SLIDE_WIDTH_PX,
          "column 44%": 0.44 * SLIDE_WIDTH_PX, "column 25%": 0.25 * SLIDE_WIDTH_PX}


class TextSize(NamedTuple):
    px: float
    text: str


def _check_figure(fig) -> None:
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")


def saved_width_px(fig: Figure) -> float:
    """The width of ``fig`` as the deck saves it (``bbox_inches="tight"``, 0.1 in padding,
    as the notebook's inline backend does), in px at 96 px per inch."""
    _check_figure(fig)
    fig.draw_without_rendering()  # lays out constrained axes and creates the tick labels
    bbox = fig.get_tightbbox()
    return (bbox.width + 0.2) * DISPLAY_DPI


def display_scale(fig: Figure, width_px: float = SLIDE_WIDTH_PX) -> float:
    """How much the slide shrinks ``fig`` to fit a place ``width_px`` wide (1.0: natural
    size; an image never grows beyond it)."""
    checks.positive_number("width_px", width_px)
    return min(1.0, width_px / saved_width_px(fig))


def text_sizes(fig: Figure, width_px: float = SLIDE_WIDTH_PX) -> list[TextSize]:
    """Every visible, non-empty text of ``fig`` (titles, labels, ticks, legends, colour-bar
    ticks, annotations) with its size in px where ``fig`` is shown ``width_px`` wide at most."""
    scale = display_scale(fig, width_px)
    px_per_pt = DISPLAY_DPI / 72 * scale
    return [TextSize(t.get_fontsize() * px_per_pt, t.get_text())
            for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and _shown(t)]


def _shown(text: Text) -> bool:
    """False for text inside an invisible or removed axis (e.g. hidden tick labels)."""
    parent = getattr(text, "axes", None)
    return parent is None or parent.get_visible()


def smallest_text(fig: Figure, width_px: float = SLIDE_WIDTH_PX) -> TextSize | None:
    """The smallest text of ``fig`` shown at most ``width_px`` wide, or None if it has none."""
    sizes = text_sizes(fig, width_px)
    return min(sizes) if sizes else None


def enlarge_text(fig: Figure, min_size: float = TEXT_PT) -> Figure:
    """Raise every text of ``fig`` (titles, labels, ticks, legends) to at least ``min_size``
    points; larger text is left alone. For figures drawn outside the package: the
    package's own already use at least ``TEXT_PT``. Returns ``fig``."""
    _check_figure(fig)
    checks.positive_number("min_size", min_size)
    for text in fig.findobj(Text):
        if text.get_fontsize() < min_size:
            text.set_fontsize(min_size)
    return fig
