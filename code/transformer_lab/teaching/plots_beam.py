"""A beam search drawn as a tree (Section 6.1 of Vaswani et al., 2017).

One column per step; top to bottom the candidates that step kept (boxed token, log P so far
below it) and finished (filled box, length-penalised score in bold). The text is drawn and
measured first; the columns are then spaced so that every gap between two columns' text
has room for its lines, and the lines run only there: a line leaves its parent's box along
the parent's row, goes up or down the gap (on a lane of its own, or slanted across the
gap) and enters its child's box along the child's row. So no line crosses a token or a
score. The figure is laid out for its size: pass ``figsize`` rather than resizing it.

Shapes: M the last step, R the most rows (candidates) any step shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from .decoding_steps import BeamNode, BeamTree
from .style import OTHER, WIDE_FIGSIZE, styled

INK, FADED = OTHER["ink"], OTHER["grey"]
#: Line widths (points) of the best path and of the others.
BOLD_LW, THIN_LW = 3.5, 1.4
#: Points between a line and any text, and between a score and its box.
CLEARANCE_PT = 3.0
#: Room (points) for lines in each gap between two columns' text: ``CLEARANCE_PT`` on each
#: side, and ``LANE_PT`` before, between and after its lanes, at least; a default-sized
#: figure gives each gap ``EXTRA_PT`` more, and each row ``ROW_PT``, as far as
#: ``MAX_FIGSIZE`` allows. A smaller figure squeezes the lanes, down to ``TIGHT_PT`` a gap.
LANE_PT, EXTRA_PT, ROW_PT, TIGHT_PT = 4.0, 16.0, 64.0, 2 * CLEARANCE_PT + 2.0
#: The largest default size: the wide figure of a slide with a title.
MAX_FIGSIZE = WIDE_FIGSIZE


@dataclass
class _Layout:
    """The tree's shown nodes (kept and finished), their rows, the best path's nodes, the
    last step, and per step the parents whose lines need a lane (:func:`_lanes`)."""

    nodes: list[BeamNode]
    row: dict[int, int]  # node id -> row within its step (rank order)
    on_best: set[int]
    steps: int  # M
    lanes: dict[int, list[int]] = field(default_factory=dict)  # step -> parent ids, left to right

    @classmethod
    def of(cls, tree: BeamTree) -> "_Layout":
        shown = [n for n in tree.nodes if n.status != "pruned"]
        row = {n.id: sum(1 for m in shown if m.step == n.step and m.rank < n.rank) for n in shown}
        best = max((n for n in shown if n.status == "finished"), key=lambda n: n.final)
        on_best, node_id = set(), best.id
        while node_id is not None:
            on_best.add(node_id)
            node_id = tree.nodes[node_id].parent
        layout = cls(shown, row, on_best, max(n.step for n in shown))
        layout.lanes = {s: _lanes(layout.parents(s)) for s in range(1, layout.steps + 1)}
        return layout

    @property
    def rows(self) -> int:
        return max(self.row.values()) + 1

    def column(self, step: int) -> list[BeamNode]:
        return [n for n in self.nodes if n.step == step]

    def parents(self, step: int) -> dict[int, tuple[int, list[int]]]:
        """``{parent id: (its row, its children's rows)}`` for the nodes of ``step``."""
        out: dict[int, tuple[int, list[int]]] = {}
        for n in self.column(step):
            out.setdefault(n.parent, (self.row[n.parent], []))[1].append(self.row[n.id])
        return out

    def room(self) -> list[float]:
        """The room (points) each gap's lines want: clearance, and ``LANE_PT`` around lanes."""
        return [2 * CLEARANCE_PT + LANE_PT * (len(self.lanes[s]) + 1) for s in range(1, self.steps + 1)]


def _span(parent: tuple[int, list[int]]) -> tuple[int, int]:
    rows = [parent[0], *parent[1]]
    return min(rows), max(rows)


def _lanes(parents: dict[int, tuple[int, list[int]]]) -> list[int]:
    """The parents, of ``{parent id: (its row, its children's rows)}``, whose lines run up
    or down the gap on a lane of their own, left to right: those with two children or more,
    and an only child on another row whose rows meet a lane's (elsewhere a slanted line
    across the gap reaches it, crossing no lane). A parent's line leaves along its own row,
    so it lies left of any other parent's line that arrives on that row (the two would
    otherwise run along the same stretch of that row); ties, and cycles, by row."""
    laned = {p for p, v in parents.items() if len(v[1]) > 1}
    growing = True
    while growing:
        growing = False
        for p, v in parents.items():
            low, high = _span(v)
            if p not in laned and low < high and any(
                    low <= _span(parents[q])[1] and _span(parents[q])[0] <= high for q in laned):
                laned.add(p)
                growing = True
    arriving = {r: q for q in laned for r in parents[q][1]}
    after = {p: {arriving[parents[p][0]]} - {p} if parents[p][0] in arriving else set() for p in laned}
    order, left = [], set(laned)
    while left:
        free = [p for p in left if not any(p in after[q] for q in left)] or list(left)
        p = min(free, key=lambda p: parents[p][0])
        order.append(p)
        left.remove(p)
    return order


def _draw_nodes(a: Axes, layout: _Layout, labels: list[str]) -> dict[int, tuple[Text, Annotation | None]]:
    """Each node's boxed token at (step, row) and its score below the box (placed by
    :func:`_extents` once the box's height is known)."""
    texts = {}
    for n in layout.nodes:
        finished = n.status == "finished"
        box = a.text(n.step, layout.row[n.id], labels[n.token].replace("<", "\u2039").replace(">", "\u203a"),
                     ha="center", va="center", color="white" if finished else INK, zorder=3,
                     bbox=dict(boxstyle="round,pad=0.25", facecolor=INK if finished else "white", edgecolor=INK))
        score = None
        if n.step:
            score = a.annotate(f"{n.final if finished else n.score:.2f}", (n.step, layout.row[n.id]),
                               xytext=(0, 0), textcoords="offset points", ha="center", va="top",
                               fontweight="bold" if finished else "normal", color=INK, zorder=3)
        texts[n.id] = (box, score)
    return texts


def _points(fig: Figure, px: float) -> float:
    return px * 72 / fig.dpi


def _box_extent(box: Text) -> Bbox:
    return box.get_bbox_patch().get_window_extent()


def _text_extent(box: Text, score: Annotation | None) -> Bbox:
    return Bbox.union([_box_extent(box)] + ([score.get_window_extent()] if score is not None else []))


def _extents(fig: Figure, a: Axes, layout: _Layout, texts) -> dict[int, tuple[float, float, float, float]]:
    """Each node's text (box and score) around its anchor, in points: left, right, up, down.
    Puts each score ``CLEARANCE_PT`` below its box first."""
    fig.draw_without_rendering()
    half = max(_points(fig, _box_extent(box).height) / 2 for box, _ in texts.values())
    for _, score in texts.values():
        if score is not None:
            score.xyann = (0, -(half + CLEARANCE_PT))
    fig.draw_without_rendering()
    out = {}
    for n in layout.nodes:
        x, y = a.transData.transform((n.step, layout.row[n.id]))
        e = _text_extent(*texts[n.id])
        out[n.id] = tuple(_points(fig, d) for d in (x - e.x0, e.x1 - x, e.y1 - y, y - e.y0))
    return out


@dataclass(frozen=True)
class _Needs:
    """Room the text needs, in points: beyond the first column and the last, above the
    first row and below the last, between each two neighbouring columns' anchors, and
    between two neighbouring rows' anchors."""

    left: float
    right: float
    up: float
    down: float
    gaps: list[float]  # M
    row: float

    @classmethod
    def of(cls, layout: _Layout, ext) -> "_Needs":
        def most(nodes, side):
            return max(ext[n.id][side] for n in nodes)

        by_row = [[n for n in layout.nodes if layout.row[n.id] == r] for r in range(layout.rows)]
        left = [most(layout.column(s), 0) for s in range(layout.steps + 1)]
        right = [most(layout.column(s), 1) for s in range(layout.steps + 1)]
        up, down = [most(nodes, 2) for nodes in by_row], [most(nodes, 3) for nodes in by_row]
        return cls(left[0], right[-1], up[0], down[-1], [right[s - 1] + left[s] for s in range(1, layout.steps + 1)],
                   max((down[r - 1] + up[r] for r in range(1, layout.rows)), default=0.0))


def _default_size(fig: Figure, a: Axes, layout: _Layout, needs: _Needs) -> None:
    """Size the figure for the tree: each gap its room plus ``EXTRA_PT``, ``ROW_PT`` per
    row, as far as ``MAX_FIGSIZE`` allows; never narrower than the title."""
    box = a.get_window_extent()
    width, height = fig.get_size_inches()
    c = CLEARANCE_PT
    content_w = needs.left + needs.right + 2 * c + sum(needs.gaps) + sum(layout.room()) + EXTRA_PT * layout.steps
    content_h = needs.up + needs.down + 2 * c + (layout.rows - 1) * max(ROW_PT, needs.row + 4 * c)
    width += (content_w - _points(fig, box.width)) / 72
    height += (content_h - _points(fig, box.height)) / 72
    title = _points(fig, a.title.get_window_extent().width) / 72 + 0.2 if a.get_title() else 0.0
    fig.set_size_inches(min(max(width, title), MAX_FIGSIZE[0]), min(height, MAX_FIGSIZE[1]))
    fig.draw_without_rendering()


def _columns(width: float, layout: _Layout, needs: _Needs) -> list[float]:
    """Each column's x (points): every gap gets its text's need, its lines' room and an
    equal part of what is left; if the room does not fit, the rooms shrink in proportion,
    down to ``TIGHT_PT`` (else a ``ValueError``)."""
    room = layout.room()
    free = width - needs.left - needs.right - 2 * CLEARANCE_PT - sum(needs.gaps)
    if free >= sum(room):
        room = [r + (free - sum(room)) / len(room) for r in room]
    else:
        room = [r * free / sum(room) for r in room]
    if min(room) < TIGHT_PT:
        raise ValueError(f"the figure is too narrow for a tree of {layout.steps} steps: its text needs "
                         f"{sum(needs.gaps) + needs.left + needs.right:.0f} pt and its lines at least "
                         f"{TIGHT_PT * layout.steps:.0f} pt more, the figure gives {width:.0f} pt; pass a wider figsize")
    xs = [0.0]
    for gap, r in zip(needs.gaps, room):
        xs.append(xs[-1] + gap + r)
    return xs


def _place(fig: Figure, a: Axes, layout: _Layout, needs: _Needs, texts) -> None:
    """Put the columns at :func:`_columns` (x in points) and spread the rows evenly, then fit
    the axis limits to the text with ``CLEARANCE_PT`` to spare; a ``ValueError`` if the
    figure is too small for the tree."""
    box = a.get_window_extent()
    width, height, c = _points(fig, box.width), _points(fig, box.height), CLEARANCE_PT
    xs = _columns(width, layout, needs)
    per_row = (height - needs.up - needs.down - 2 * c) / max(layout.rows - 1, 1)
    if layout.rows > 1 and per_row < needs.row + c:
        raise ValueError(f"the figure is too short for a tree of {layout.rows} rows: they need "
                         f"{needs.row + c:.0f} pt each, the figure gives {per_row:.0f}; pass a taller figsize")
    for n in layout.nodes:
        box_text, score = texts[n.id]
        box_text.set_x(xs[n.step])
        if score is not None:
            score.xy = (xs[n.step], layout.row[n.id])
    a.set_xticks(xs, [str(s) for s in range(layout.steps + 1)])
    a.set_xlim(-(needs.left + c), xs[-1] + needs.right + c)
    if layout.rows == 1:  # one row: centred
        spare = (height - needs.up - needs.down) / 2
        a.set_ylim((needs.down + spare) / height, -(needs.up + spare) / height)
    else:
        a.set_ylim(layout.rows - 1 + (needs.down + c) / per_row, -(needs.up + c) / per_row)
    fig.draw_without_rendering()


def _edges(a: Axes, layout: _Layout, texts) -> dict[int, list[tuple[list[float], list[float], bool]]]:
    """Each node's line from its parent's box, grouped by parent, in data coordinates: out
    along the parent's row, then in the gap between the two columns' text along the
    parent's lane (or slanted across the gap), in along the child's row. Each line comes
    with whether it is on the best path."""
    to_data = a.transData.inverted()

    def x_of(px: float) -> float:
        return float(to_data.transform((px, 0))[0])

    clearance = x_of(CLEARANCE_PT * a.figure.dpi / 72) - x_of(0)
    extent = {i: _text_extent(*pair) for i, pair in texts.items()}
    edges: dict[int, list] = {}
    for step in range(1, layout.steps + 1):
        start = max(x_of(extent[n.id].x1) for n in layout.column(step - 1)) + clearance
        end = min(x_of(extent[n.id].x0) for n in layout.column(step)) - clearance
        lanes = layout.lanes[step]
        lane_x = {p: start + (j + 1) * (end - start) / (len(lanes) + 1) for j, p in enumerate(lanes)}
        for n in layout.column(step):
            y0, y1 = layout.row[n.parent], layout.row[n.id]
            x0, x1 = x_of(_box_extent(texts[n.parent][0]).x1), x_of(_box_extent(texts[n.id][0]).x0)
            turn = (lane_x[n.parent], lane_x[n.parent]) if n.parent in lane_x else (start, end)
            edges.setdefault(n.parent, []).append(([x0, *turn, x1], [y0, y0, y1, y1], n.id in layout.on_best))
    return edges


def _draw_edges(a: Axes, layout: _Layout, texts) -> None:
    """The lines of :func:`_edges`, one parent after another (the best path's last), each
    parent's over a white halo: where two parents' lines cross, the later one visibly
    passes over the earlier; a parent's own lines, drawn above its halo, stay joined."""
    edges = _edges(a, layout, texts)
    order = sorted(edges, key=lambda p: (p in layout.on_best, p))
    style = dict(solid_joinstyle="miter", solid_capstyle="butt")
    for k, parent in enumerate(order):
        z = 1 + k / len(order)  # all below the boxes (zorder 3)
        for xs, ys, bold in edges[parent]:
            a.plot(xs, ys, color="white", linewidth=(BOLD_LW if bold else THIN_LW) + 3, zorder=z, gid="halo", **style)
        for xs, ys, bold in sorted(edges[parent], key=lambda e: e[2]):
            a.plot(xs, ys, color=INK if bold else FADED, linewidth=BOLD_LW if bold else THIN_LW,
                   zorder=z + (0.6 if bold else 0.3) / len(order), **style)


@styled
def plot_beam_tree(tree: BeamTree, labels: Sequence[str], title: str | None = None, *,
                   figsize: tuple[float, float] | None = None) -> Figure:
    """A beam search drawn as a tree (module docstring): ``tree`` is a
    :class:`~transformer_lab.teaching.decoding_steps.BeamTree`, ``labels`` maps token ids to
    text. The 2k - k candidates ranked and pruned at each step are left out; the best
    hypothesis's path is bold. ``figsize`` defaults to the tree's size, at most
    ``MAX_FIGSIZE``; a tree whose text does not fit raises a ``ValueError``."""
    if not isinstance(tree, BeamTree):
        raise TypeError(f"tree must be a BeamTree (from beam_tree), got {type(tree).__name__}")
    if not tree.finished:
        raise ValueError("tree must hold at least one finished hypothesis")
    labels = [str(x) for x in labels]
    layout = _Layout.of(tree)
    needed = max(n.token for n in layout.nodes) + 1
    if len(labels) < needed:
        raise ValueError(f"labels must name every token id the tree shows (at least {needed}), got {len(labels)}")
    fig = Figure(figsize=figsize or MAX_FIGSIZE, layout="constrained")
    a = fig.subplots()
    texts = _draw_nodes(a, layout, labels)
    a.set_xticks(range(layout.steps + 1))
    a.set_yticks([])
    a.set_xlabel("step")
    a.set_xlim(-0.5, layout.steps + 0.5)
    a.set_ylim(layout.rows - 0.5, -0.5)
    for side in ("left", "top", "right"):
        a.spines[side].set_visible(False)
    if title:
        a.set_title(title)
    needs = _Needs.of(layout, _extents(fig, a, layout, texts))
    if figsize is None:
        _default_size(fig, a, layout, needs)
    _place(fig, a, layout, needs, texts)
    _draw_edges(a, layout, texts)
    return fig
