"""The contact sheet: every slide's screenshot as a numbered thumbnail in one image, so a
reviewer sees the whole deck at once (written by ``deckbuild check`` beside the
screenshots, as ``<stem>_screenshots/contact-sheet.png``)."""

from __future__ import annotations

import math
from pathlib import Path

from .errors import DeckError

NAME = "contact-sheet.png"


def _label_font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def write_contact_sheet(shots: list[Path], out: Path, columns: int = 6,
                        thumb_width: int = 300, gap: int = 12) -> Path:
    """Tile ``shots`` (slide screenshots, in order) into ``out``: ``columns`` thumbnails
    a row, each ``thumb_width`` px wide with its slide number in the corner."""
    from PIL import Image, ImageDraw

    if not shots:
        raise DeckError("no screenshots to put on a contact sheet", out)
    if columns < 1 or thumb_width < 16:
        raise ValueError(f"columns must be >= 1 and thumb_width >= 16, got {columns} and {thumb_width}")
    with Image.open(shots[0]) as first:
        w, h = first.size
    tw, th = thumb_width, round(thumb_width * h / w)
    font = _label_font(max(14, tw // 14))
    band = font.size + 8                       # the slide number, above its thumbnail
    rows = math.ceil(len(shots) / columns)
    sheet = Image.new("RGB", (gap + columns * (tw + gap), gap + rows * (band + th + gap)), "#3d3d3d")
    draw = ImageDraw.Draw(sheet)
    for i, shot in enumerate(shots):
        x, y = gap + (i % columns) * (tw + gap), gap + (i // columns) * (band + th + gap)
        draw.text((x, y + band - 4), f"{i + 1}", fill="white", font=font, anchor="ls")
        with Image.open(shot) as img:
            sheet.paste(img.convert("RGB").resize((tw, th), Image.LANCZOS), (x, y + band))
    sheet.save(out, optimize=True)
    return out
