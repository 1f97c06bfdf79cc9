"""Text on a slide must be readable from the back of the room: at least about 20 px on a
1050 x 700 slide. A figure drawn by another helper can be brought up to size here."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text

from .. import checks


def enlarge_text(fig: Figure, min_size: float = 16.0) -> Figure:
    """Raise every text of ``fig`` (titles, labels, ticks, legends) to at least ``min_size``
    points; larger text is left alone. Returns ``fig``."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    checks.positive_number("min_size", min_size)
    for text in fig.findobj(Text):
        if text.get_fontsize() < min_size:
            text.set_fontsize(min_size)
    return fig
