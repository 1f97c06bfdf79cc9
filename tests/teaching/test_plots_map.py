"""The model map beside the traced-sentence slides: each key fills exactly the boxes it
names, labels fit their boxes at slide size, arrows join the right boxes, and bad keys are
refused with the valid ones listed."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from transformer_lab import teaching as tt  # noqa: E402
from transformer_lab.teaching.legibility import MIN_TEXT_PX, PLACES, saved_width_px  # noqa: E402
from transformer_lab.teaching.style import LIGHT, OTHER  # noqa: E402

from colour_vision import VISIONS, contrast_ratio, simulate  # noqa: E402

ACCENT = OTHER["ink"]  # the deck's emphasis for things that are no query, key, value or mask
#: Every box of the map, and what each key must fill (written out here, not read from the module).
STACK_PARTS = {"encoder": {"encoder self-attention", "encoder feed-forward"},
               "decoder": {"decoder masked self-attention", "cross-attention", "decoder feed-forward"}}
EXPECTED = {
    "tokens": {"source tokens", "target tokens"},
    "embedding": {"embedding"},
    "positions": {"positions"},
    "encoder-self-attention": {"encoder self-attention"},
    "encoder-feed-forward": {"encoder feed-forward"},
    "encoder": {"encoder"},
    "decoder-self-attention": {"decoder masked self-attention"},
    "cross-attention": {"cross-attention"},
    "decoder-feed-forward": {"decoder feed-forward"},
    "decoder": {"decoder"},
    "output": {"linear + softmax", "next-token probabilities"},
    "search": {"search"},
}
ALL_BOXES = set().union(*EXPECTED.values(), *STACK_PARTS.values())
LABELS = {"tokens", "embedding", "+ positions", "self-attention", "feed-forward", "masked\nself-attention",
          "cross-attention", "linear + softmax", "next-token\nprobabilities", "greedy / beam search", "N\u00d7"}


def boxes(fig) -> dict[str, FancyBboxPatch]:
    return {p.get_gid(): p for p in fig.findobj(FancyBboxPatch)}


def arrows(fig) -> list[FancyArrowPatch]:
    return list(fig.findobj(FancyArrowPatch))


def texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_text().strip()]


def filled(fig) -> set[str]:
    return {name for name, p in boxes(fig).items() if to_hex(p.get_facecolor()) == ACCENT.lower()}


def extent(artist, fig):
    fig.draw_without_rendering()
    return artist.get_window_extent()


def test_the_map_draws_every_part_once_with_its_label_and_no_axes():
    fig = tt.plot_model_map([])
    assert set(boxes(fig)) == ALL_BOXES and len(fig.findobj(FancyBboxPatch)) == len(ALL_BOXES)
    labels = [t.get_text() for t in texts(fig)]
    assert set(labels) == LABELS
    assert labels.count("tokens") == 2 and labels.count("N\u00d7") == 2 and labels.count("feed-forward") == 2
    assert all(not ax.axison for ax in fig.axes)
    assert filled(fig) == set()
    # nothing else wears the highlight: the arrows are grey
    assert {to_hex(a.get_facecolor()) for a in arrows(fig)} == {to_hex(a.get_edgecolor()) for a in arrows(fig)} \
        == {OTHER["grey"].lower()}
    assert {to_hex(p.get_facecolor()) for name, p in boxes(fig).items() if name not in STACK_PARTS} == {LIGHT.lower()}


@pytest.mark.parametrize("key", list(EXPECTED))
def test_each_key_fills_exactly_the_boxes_it_names_and_turns_their_text_white(key):
    fig = tt.plot_model_map(key)
    assert filled(fig) == EXPECTED[key]
    fig.draw_without_rendering()
    ext = {name: p.get_window_extent() for name, p in boxes(fig).items()}
    for t in texts(fig):
        centre = t.get_window_extent().get_points().mean(axis=0)
        # the innermost box under the label decides its colour (a sublayer inside a lit frame stays grey)
        under = min((name for name, e in ext.items() if e.contains(*centre)),
                    key=lambda name: ext[name].width * ext[name].height)
        colour = "#ffffff" if under in EXPECTED[key] else OTHER["ink"].lower()
        assert to_hex(t.get_color()) == colour, (key, t.get_text(), under)


def test_several_keys_fill_the_union_of_their_boxes():
    fig = tt.plot_model_map(("embedding", "cross-attention", "output"))
    assert filled(fig) == {"embedding", "cross-attention", "linear + softmax", "next-token probabilities"}
    assert filled(tt.plot_model_map(["tokens", "tokens"])) == {"source tokens", "target tokens"}


def test_an_unknown_key_is_named_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"got unknown key 'self-attention'") as error:
        tt.plot_model_map(["embedding", "self-attention"])
    for key in EXPECTED:
        assert key in str(error.value)
    with pytest.raises(TypeError, match="highlight must be a key of the model map or a sequence of keys, got int"):
        tt.plot_model_map(3)
    with pytest.raises(TypeError, match=r"highlight must hold keys \(str\), got 1 of type int"):
        tt.plot_model_map(["tokens", 1])
    with pytest.raises(ValueError, match=r"figsize must be at least \(2.6, 4.6\) inches .* got \(2.0, 4.6\)"):
        tt.plot_model_map("tokens", figsize=(2.0, 4.6))


@pytest.mark.parametrize("width_px", [PLACES["column 25%"], 250.0])
def test_every_text_is_slide_size_in_a_quarter_column_or_at_250_px(width_px):
    """Sized for a narrow column: saved about 260 px wide, its text is 21 px at natural
    size and still over 20 px when a 250 px column shrinks it a little."""
    fig = tt.plot_model_map("cross-attention")
    assert saved_width_px(fig) <= PLACES["column 25%"]
    assert tt.smallest_text(fig, width_px).px >= MIN_TEXT_PX


def test_a_larger_figure_spreads_the_boxes_and_keeps_the_text_size():
    small, large = tt.plot_model_map("search"), tt.plot_model_map("search", figsize=(4.0, 6.0))
    assert extent(boxes(large)["search"], large).width > 1.4 * extent(boxes(small)["search"], small).width
    assert tt.smallest_text(large).px == pytest.approx(tt.smallest_text(small).px)


def test_labels_sit_inside_their_boxes_and_never_overlap():
    fig = tt.plot_model_map([])
    fig.draw_without_rendering()
    ext = [p.get_window_extent() for p in boxes(fig).values()]
    placed = [t.get_window_extent() for t in texts(fig)]
    for t, e in zip(texts(fig), placed):
        # its box: the innermost one under the label's centre (a frame for "N×")
        box = min((b for b in ext if b.contains(*e.get_points().mean(axis=0))), key=lambda b: b.width * b.height)
        assert box.x0 + 1 <= e.x0 and e.x1 <= box.x1 - 1 and box.y0 <= e.y0 and e.y1 <= box.y1, \
            f"{t.get_text()!r} sticks out of its box"
    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            assert not a.overlaps(b), "two labels overlap"


def _distance(point, bbox) -> float:
    """Pixels from ``point`` to the rectangle ``bbox`` (0 inside it)."""
    dx = max(bbox.x0 - point[0], point[0] - bbox.x1, 0)
    dy = max(bbox.y0 - point[1], point[1] - bbox.y1, 0)
    return float(np.hypot(dx, dy))


def _shaft(arrow: FancyArrowPatch) -> np.ndarray:
    """The arrow's shaft in pixels, tail first: its path is the shaft, then the head."""
    path = arrow.get_path()
    points = arrow.get_transform().transform(path.vertices)
    second_move = np.flatnonzero(path.codes == path.MOVETO)[1]
    return points[:second_move]


def test_every_arrow_runs_from_its_box_to_the_next_with_its_head_there_and_crosses_no_other_box():
    fig = tt.plot_model_map([])
    fig.draw_without_rendering()
    ext = {name: p.get_window_extent() for name, p in boxes(fig).items()}
    joined = []
    for arrow in arrows(fig):
        tail, head = arrow.get_gid().removeprefix("arrow:").split("->")
        joined.append((tail, head))
        shaft = _shaft(arrow)
        assert _distance(shaft[0], ext[tail]) < 2.5, f"{tail} -> {head} does not start at {tail}"
        assert _distance(shaft[-1], ext[head]) < 2.5, f"{tail} -> {head} does not point at {head}"
        assert _distance(shaft[-1], ext[tail]) > 5 and _distance(shaft[0], ext[head]) > 5, (tail, head)
        drawn = arrow.get_window_extent()
        for name, box in ext.items():
            if name not in (tail, head) and name not in STACK_PARTS:
                overlap = min(drawn.x1, box.x1) - max(drawn.x0, box.x0), min(drawn.y1, box.y1) - max(drawn.y0, box.y0)
                assert min(overlap) < 1, f"{tail} -> {head} crosses {name}"
    assert sorted(joined) == sorted([
        ("source tokens", "embedding"), ("target tokens", "embedding"), ("embedding", "positions"),
        ("embedding", "positions"), ("positions", "encoder self-attention"),
        ("positions", "decoder masked self-attention"), ("encoder", "cross-attention"),
        ("decoder feed-forward", "linear + softmax"), ("linear + softmax", "next-token probabilities"),
        ("next-token probabilities", "search")])


@pytest.mark.parametrize("vision", VISIONS)
def test_a_lit_box_stands_out_and_its_text_reads_for_every_colour_vision(vision):
    lit, grey = simulate(ACCENT, vision), simulate(LIGHT, vision)
    assert contrast_ratio(lit, grey) >= 3.0
    assert contrast_ratio(simulate("#FFFFFF", vision), lit) >= 4.5
    assert contrast_ratio(simulate(OTHER["ink"], vision), grey) >= 4.5


def test_the_map_renders_to_svg_with_its_labels_as_text():
    fig = tt.plot_model_map(["encoder-self-attention", "search"])
    out = io.StringIO()
    fig.savefig(out, format="svg")
    svg = out.getvalue()
    shown = " ".join(re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S))
    for label in ("tokens", "embedding", "positions", "masked", "cross-attention", "linear + softmax",
                  "probabilities", "greedy / beam search"):
        assert label in shown
    assert 'id="DejaVuSans' not in svg
    sizes = [float(x) for x in re.findall(r"font-size: *([\d.]+)px", svg)]
    assert sizes and min(sizes) >= tt.STYLE["xtick.labelsize"]
