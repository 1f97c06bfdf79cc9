"""A map of the whole model for a narrow column beside a slide: the encoder-decoder
Transformer of the paper's Figure 1, simplified and redrawn, with the part the slide talks
about filled in the highlight colour, so the audience always knows where a traced sentence
is.

Drawn bottom to top as in the paper: tokens, embedding and positions (one box each: the two
sides share the embedding matrix, Section 3.4, and the sinusoid table, Section 3.5), the
encoder stack (left, lower) whose output, the memory, feeds the decoder stack's
cross-attention (right, upper), then the output layer, the next-token probabilities and the
search that picks a token (Section 6.1). Residual connections and layer normalisation are
left out.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

from .style import LIGHT, OTHER, TEXT_PT, styled

#: The highlight: filled in ink with white text (16:1), as the deck's other figures of
#: things that are no query, key, value or mask stress one element (the beam tree's finished
#: hypotheses, the antecedent); every other box light grey with ink text (11.7:1), a stack's
#: frame lighter still, arrows grey. Ink against light grey keeps at least 11.5:1 for every
#: simulated colour vision; vermillion would drop to 2.5:1 (deuteranopia), white on it 3.9:1.
ACCENT = OTHER["ink"]
MUTED = LIGHT
FRAME = "#F1F1F1"
INK = OTHER["ink"]
#: The smallest figure (inches) whose boxes hold their labels at ``TEXT_PT``.
MAP_FIGSIZE = (2.6, 4.6)

#: What each key of ``highlight`` fills: the names of the map's boxes (each patch's gid).
MAP_KEYS: dict[str, tuple[str, ...]] = {
    "tokens": ("source tokens", "target tokens"),
    "embedding": ("embedding",),
    "positions": ("positions",),
    "encoder-self-attention": ("encoder self-attention",),
    "encoder-feed-forward": ("encoder feed-forward",),
    "encoder": ("encoder",),
    "decoder-self-attention": ("decoder masked self-attention",),
    "cross-attention": ("cross-attention",),
    "decoder-feed-forward": ("decoder feed-forward",),
    "decoder": ("decoder",),
    "output": ("linear + softmax", "next-token probabilities"),
    "search": ("search",),
}

# The drawing, in points of a 180 x 324 pt (2.5 x 4.5 in) canvas, y upwards.
_W, _H = 180.0, 324.0
_ROW, _ROW2 = 20.0, 41.0  # a box of one and of two lines at TEXT_PT
_GAP, _PAD, _SUB = 6.0, 2.5, 3.0  # between rows (an arrow), inside a frame, between sublayers
_REPEAT_W = 26.0  # the "N×" column inside a stack's frame
_ENC_W, _DEC_W = 112.0, 128.0  # sublayer widths: "self-attention" and "cross-attention" fit
_X_SRC, _X_TGT, _X_MEM = 80.0, 160.0, 9.0  # the source path, the target path, the memory


class _Box(NamedTuple):
    name: str
    label: str
    x0: float
    y0: float
    x1: float
    y1: float
    frame: bool = False

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


def _stack(name: str, x0: float, y0: float, width: float, rows: Sequence[tuple[str, str, float]]) -> list[_Box]:
    """A frame holding an "N×" column and sublayers bottom to top (name, label, height)."""
    boxes, y, left = [], y0 + _PAD, x0 + _PAD + _REPEAT_W + 2.0
    for sub_name, label, height in rows:
        boxes.append(_Box(sub_name, label, left, y, left + width, y + height))
        y += height + _SUB
    frame = _Box(name, "", x0, y0, left + width + _PAD, y - _SUB + _PAD, frame=True)
    return [frame, *boxes]


_Arrow = tuple[str, str, list[tuple[float, float]]]


def _layout() -> tuple[list[_Box], list[_Arrow], list[tuple[str, float, float]]]:
    """The boxes, the arrows (from box, to box, polyline from tail to head) and the "N×"
    labels (their stack's name and centre)."""
    tokens_y, embed_y, pos_y = 0.0, _ROW + _GAP, 2 * (_ROW + _GAP)
    enc_y = pos_y + _ROW + _GAP
    encoder = _stack("encoder", 0.0, enc_y, _ENC_W, [("encoder self-attention", "self-attention", _ROW),
                                                      ("encoder feed-forward", "feed-forward", _ROW)])
    dec_y = encoder[0].y1 + _GAP + 1.0
    dec_x = _W - (2 * _PAD + _REPEAT_W + 2.0 + _DEC_W)
    decoder = _stack("decoder", dec_x, dec_y, _DEC_W, [
        ("decoder masked self-attention", "masked\nself-attention", _ROW2),
        ("cross-attention", "cross-attention", _ROW), ("decoder feed-forward", "feed-forward", _ROW)])
    top = decoder[0].y1 + _GAP
    boxes = [
        _Box("source tokens", "tokens", _X_SRC - 29, tokens_y, _X_SRC + 29, tokens_y + _ROW),
        _Box("target tokens", "tokens", _W - 58, tokens_y, _W, tokens_y + _ROW),
        _Box("embedding", "embedding", 0.0, embed_y, _W, embed_y + _ROW),
        _Box("positions", "+ positions", 0.0, pos_y, _W, pos_y + _ROW),
        *encoder, *decoder,
        _Box("linear + softmax", "linear + softmax", 0.0, top, _W, top + _ROW),
        _Box("next-token probabilities", "next-token\nprobabilities", 0.0, top + _ROW + _GAP, _W,
             top + _ROW + _GAP + _ROW2),
        _Box("search", "greedy / beam search", 0.0, _H - _ROW, _W, _H),
    ]
    by = {b.name: b for b in boxes}
    x_out, cross = by["cross-attention"].cx, by["cross-attention"]
    arrows = [(lower, upper, [(x, by[lower].y1), (x, by[upper].y0)]) for x, lower, upper in [
        (_X_SRC, "source tokens", "embedding"), (_X_TGT, "target tokens", "embedding"),
        (_X_SRC, "embedding", "positions"), (_X_TGT, "embedding", "positions"),
        (_X_SRC, "positions", "encoder self-attention"), (_X_TGT, "positions", "decoder masked self-attention"),
        (x_out, "decoder feed-forward", "linear + softmax"), (x_out, "linear + softmax", "next-token probabilities"),
        (x_out, "next-token probabilities", "search")]]
    # the memory: up from the encoder's top, then right into every decoder layer's cross-attention
    memory = [(_X_MEM, by["encoder"].y1), (_X_MEM, cross.cy), (cross.x0, cross.cy)]
    arrows.append(("encoder", "cross-attention", memory))
    repeats = [("encoder", by["encoder"].x0 + _PAD + _REPEAT_W / 2, by["encoder"].cy),
               ("decoder", by["decoder"].x0 + _PAD + _REPEAT_W / 2, by["decoder feed-forward"].cy)]
    return boxes, arrows, repeats


def _highlighted(highlight) -> set[str]:
    if isinstance(highlight, str):
        keys = [highlight]
    elif isinstance(highlight, Iterable):
        keys = list(highlight)
    else:
        raise TypeError(f"highlight must be a key of the model map or a sequence of keys, got "
                        f"{type(highlight).__name__}")
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"highlight must hold keys (str), got {key!r} of type {type(key).__name__}")
        if key not in MAP_KEYS:
            raise ValueError(f"highlight must name parts of the model map, one of {', '.join(MAP_KEYS)}; "
                             f"got unknown key {key!r}")
    return {name for key in keys for name in MAP_KEYS[key]}


def _check_figsize(figsize) -> tuple[float, float]:
    try:
        width, height = (float(v) for v in figsize)
    except (TypeError, ValueError):
        raise TypeError(f"figsize must be a (width, height) pair of inches, got {figsize!r}") from None
    if width < MAP_FIGSIZE[0] or height < MAP_FIGSIZE[1]:
        raise ValueError(f"figsize must be at least {MAP_FIGSIZE} inches for the labels to fit at {TEXT_PT} pt, "
                         f"got {figsize!r}")
    return width, height


@styled
def plot_model_map(highlight: str | Sequence[str], *, figsize: tuple[float, float] = MAP_FIGSIZE) -> Figure:
    """A small map of the encoder-decoder Transformer (Figure 1 of the paper, simplified)
    with the boxes that ``highlight`` names filled in ink: one key of ``MAP_KEYS`` or a
    sequence of them (an empty one highlights nothing). A sublayer's key fills that box;
    ``"encoder"`` and ``"decoder"`` fill the whole stack's frame around its (grey)
    sublayers. Each box's patch carries its name as gid, each arrow ``"arrow:A->B"``.

    Sized for a column a quarter of the slide wide: the drawing is 2.5 x 4.5 in, saved
    with the notebook's 0.1 in padding as 259 x 451 px, its text 21 px (still 20.6 px in a
    250 px column). A larger ``figsize`` spreads the boxes; the text stays at ``TEXT_PT``.
    """
    names = _highlighted(highlight)
    width, height = _check_figsize(figsize)
    fig = Figure(figsize=(width, height))
    margin_x, margin_y = 0.05 / width, 0.05 / height
    ax = fig.add_axes((margin_x, margin_y, 1 - 2 * margin_x, 1 - 2 * margin_y))
    ax.set_xlim(0, _W)
    ax.set_ylim(0, _H)
    ax.set_axis_off()
    boxes, arrows, repeats = _layout()
    for box in boxes:
        on = box.name in names
        face = ACCENT if on else (FRAME if box.frame else MUTED)
        edge = OTHER["grey"] if box.frame and not on else face
        patch = FancyBboxPatch((box.x0, box.y0), box.x1 - box.x0, box.y1 - box.y0, facecolor=face, edgecolor=edge,
                               boxstyle="round,pad=0,rounding_size=3", linewidth=1.0, zorder=1 if box.frame else 2)
        patch.set_gid(box.name)
        ax.add_patch(patch)
        if box.label:
            ax.text(box.cx, box.cy, box.label, ha="center", va="center", fontsize=TEXT_PT, linespacing=1.1,
                    color="white" if on else INK, zorder=3)
    for stack, x, y in repeats:
        colour = "white" if stack in names else INK
        ax.text(x, y, "N\u00d7", ha="center", va="center", fontsize=TEXT_PT, color=colour, zorder=3)
    for tail, head, points in arrows:
        path = Path(points, [Path.MOVETO] + [Path.LINETO] * (len(points) - 1))
        arrow = FancyArrowPatch(path=path, arrowstyle="-|>,head_length=4,head_width=2.4", color=OTHER["grey"],
                                linewidth=1.3, shrinkA=0, shrinkB=0, zorder=4)
        arrow.set_gid(f"arrow:{tail}->{head}")
        ax.add_patch(arrow)
    return fig
