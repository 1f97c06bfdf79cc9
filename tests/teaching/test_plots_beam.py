"""The beam tree figure: every line joins a parent's box to its child's and crosses no text,
no two texts overlap, the best path is bold, and a small tree gets a small figure."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

import transformer_lab as tl  # noqa: E402
from transformer_lab import teaching as tt  # noqa: E402
from transformer_lab.teaching import plots_beam  # noqa: E402
from transformer_lab.teaching.decoding_steps import BeamNode, BeamTree  # noqa: E402
from transformer_lab.teaching.legibility import MIN_TEXT_PX, PLACES, saved_width_px  # noqa: E402

LABELS = [f"t{i}" for i in range(11)]


def random_tree(seed: int, beam_size: int, max_len: int = 10) -> BeamTree:
    torch.manual_seed(seed)
    model = tl.Transformer(tl.TransformerConfig.tiny(17, 11, d_model=12, num_heads=3, d_ff=20)).eval()
    src = torch.randint(4, 17, (1, 7), generator=torch.Generator().manual_seed(seed))
    return tt.beam_tree(model, src, beam_size, max_len, tl.BOS_ID, tl.EOS_ID, 0.6)


def two_step_tree() -> BeamTree:
    """start -> a (kept) -> end (finished); start -> b (kept) -> end (finished)."""
    nodes = [BeamNode(0, None, 0, 0, 1, 0.0, "kept"), BeamNode(1, 0, 1, 0, 4, -0.1, "kept"),
             BeamNode(2, 0, 1, 1, 5, -2.3, "kept"), BeamNode(3, 1, 2, 0, 2, -0.2, "finished", -0.15),
             BeamNode(4, 2, 2, 1, 2, -2.5, "finished", -1.9)]
    return BeamTree(2, 0.6, nodes, [(-0.15, [1, 4, 2]), (-1.9, [1, 5, 2])])


def drawn(fig):
    """The axes' lines (halos apart) and texts, in display coordinates, after layout."""
    fig.draw_without_rendering()
    a = fig.axes[0]
    lines = [line for line in a.lines if line.get_gid() != "halo"]
    boxes = {t: t.get_bbox_patch().get_window_extent() for t in a.texts if t.get_bbox_patch() is not None}
    scores = {t: t.get_window_extent() for t in a.texts if t.get_bbox_patch() is None}
    return a, lines, boxes, scores


def lines_crossing_text(fig) -> list[str]:
    """Texts that a line (or its white halo) touches: a score, anywhere, with the line's
    width; a box anywhere but its edge, where a line ends."""
    a, _, boxes, scores = drawn(fig)
    hits = []
    for line in a.lines:
        path = line.get_transform().transform_path(line.get_path())
        half = line.get_linewidth() * fig.dpi / 72 / 2
        for text, e in scores.items():
            if path.intersects_bbox(Bbox.from_extents(e.x0 - half, e.y0 - half, e.x1 + half, e.y1 + half)):
                hits.append(text.get_text())
        for text, e in boxes.items():
            if line.get_gid() != "halo" and path.intersects_bbox(Bbox.from_extents(e.x0 + 1, e.y0 + 1, e.x1 - 1,
                                                                                     e.y1 - 1)):
                hits.append(text.get_text())
    return hits


def overlapping_texts(fig) -> list[tuple[str, str]]:
    _, _, boxes, scores = drawn(fig)
    extents = list(boxes.items()) + list(scores.items())
    return [(s.get_text(), t.get_text()) for i, (s, e) in enumerate(extents) for t, f in extents[i + 1:]
            if e.overlaps(f)]


TREES = [pytest.param(lambda: random_tree(seed, k), id=f"seed {seed}, k {k}") for seed, k in
         [(0, 2), (1, 3), (1, 4), (2, 3), (3, 4), (5, 3), (7, 4)]] + [pytest.param(two_step_tree, id="two steps")]


@pytest.mark.parametrize("make", TREES)
def test_no_line_crosses_a_token_or_a_score_and_no_texts_overlap(make):
    fig = tt.plot_beam_tree(make(), LABELS, title="a beam tree")
    assert lines_crossing_text(fig) == []
    assert overlapping_texts(fig) == []


@pytest.mark.parametrize("make", TREES)
def test_each_shown_node_has_one_line_from_its_parents_box_to_its_own(make):
    tree = make()
    fig = tt.plot_beam_tree(tree, LABELS)
    a, lines, boxes, _ = drawn(fig)
    shown = [n for n in tree.nodes if n.status != "pruned"]
    box_of = dict(zip([n.id for n in shown], [t for t in a.texts if t.get_bbox_patch() is not None]))
    ends = [line.get_transform().transform(line.get_xydata()[[0, -1]]) for line in lines]
    for n in shown[1:]:
        parent, child = boxes[box_of[n.parent]], boxes[box_of[n.id]]
        joining = [(s, e) for s, e in ends if abs(s[0] - parent.x1) < 1 and abs(s[1] - (parent.y0 + parent.y1) / 2) < 1
                   and abs(e[0] - child.x0) < 1 and abs(e[1] - (child.y0 + child.y1) / 2) < 1]
        assert len(joining) == 1, f"node {n.id}: {len(joining)} lines from its parent {n.parent}"
    assert len(lines) == len(shown) - 1


def test_the_best_hypothesis_path_is_bold_and_only_it():
    tree = random_tree(1, 3)
    fig = tt.plot_beam_tree(tree, LABELS)
    _, lines, _, _ = drawn(fig)
    best = max((n for n in tree.nodes if n.status == "finished"), key=lambda n: n.final)
    bold = [line for line in lines if line.get_linewidth() == plots_beam.BOLD_LW]
    assert len(bold) == best.step  # one line per step from <bos> to the best finished node
    scores = {t.get_text(): t for t in fig.axes[0].texts if t.get_bbox_patch() is None}
    assert scores[f"{best.final:.2f}"].get_fontweight() == "bold"


def test_a_small_tree_gets_a_small_figure_that_its_text_fills():
    fig = tt.plot_beam_tree(two_step_tree(), LABELS, title="best: t4")
    width, height = fig.get_size_inches()
    assert width < 0.5 * plots_beam.MAX_FIGSIZE[0] and height < plots_beam.MAX_FIGSIZE[1]
    a, _, boxes, scores = drawn(fig)
    text = Bbox.union(list(boxes.values()) + list(scores.values()))
    axes = a.get_window_extent()
    assert text.width > 0.9 * axes.width and text.height > 0.8 * axes.height
    assert tt.smallest_text(fig).px >= MIN_TEXT_PX


def test_a_long_tree_fits_the_slide_at_slide_size():
    fig = tt.plot_beam_tree(random_tree(1, 4, max_len=12), LABELS, title="best: t6 t6 t6, score -5.17")
    assert saved_width_px(fig) <= PLACES["slide"] and fig.get_size_inches()[1] * 96 <= 560
    assert tt.smallest_text(fig).px >= MIN_TEXT_PX


def test_a_figure_too_small_for_the_tree_and_bad_inputs_are_refused():
    with pytest.raises(ValueError, match=r"the figure is too narrow for a tree of \d+ steps: .* pass a wider figsize"):
        tt.plot_beam_tree(random_tree(1, 4), LABELS, figsize=(4, 4.6))
    with pytest.raises(ValueError, match=r"the figure is too short for a tree of \d+ rows: .* pass a taller figsize"):
        tt.plot_beam_tree(random_tree(1, 4), LABELS, figsize=(10.4, 2))
    with pytest.raises(ValueError, match=r"labels must name every token id the tree shows \(at least 6\), got 3"):
        tt.plot_beam_tree(two_step_tree(), ["a", "b", "c"])
    with pytest.raises(TypeError, match="tree must be a BeamTree"):
        tt.plot_beam_tree([], LABELS)
    with pytest.raises(ValueError, match="tree must hold at least one finished hypothesis"):
        tt.plot_beam_tree(BeamTree(2, 0.6, two_step_tree().nodes[:3], []), LABELS)


def slide_tree(run, text: str, max_len: int) -> tuple[BeamTree, list[str]]:
    """A trained deck model's beam tree (beam size 3) on ``text``, labelled as the slide does."""
    src = torch.tensor([run.src_vocab.encode(text)])
    tree = tt.beam_tree(run.model, src, beam_size=3, max_len=max_len, bos_id=tl.BOS_ID, eos_id=tl.EOS_ID,
                        length_penalty=0.6)
    return tree, [t.replace("<eos>", "end").replace("<bos>", "start") for t in run.tgt_vocab.itos]


@pytest.mark.slow
def test_the_slides_dates_tree_keeps_its_lines_off_the_text_at_slide_size():
    from deck_runs import dates_run

    tree, labels = slide_tree(dates_run(), "the ninth of july nineteen eighty-four", 60)
    fig = tt.plot_beam_tree(tree, labels, title="best: 1984-07-09, score -0.38; boxed: log P so far; filled: "
                                                 "finished, log P / lp(Y)")
    assert lines_crossing_text(fig) == [] and overlapping_texts(fig) == []
    assert saved_width_px(fig) <= PLACES["slide"] and tt.smallest_text(fig).px >= MIN_TEXT_PX


@pytest.mark.slow
def test_the_pronoun_models_short_tree_is_compact_and_clean():
    from deck_runs import pronoun_run

    tree, labels = slide_tree(pronoun_run(), "the cat did not cross the road because it was too tired", 5)
    fig = tt.plot_beam_tree(tree, labels, title="best: cat")
    assert lines_crossing_text(fig) == [] and overlapping_texts(fig) == []
    assert fig.get_size_inches()[0] < 0.6 * plots_beam.MAX_FIGSIZE[0]  # a few steps: no wide empty figure
    assert tt.smallest_text(fig).px >= MIN_TEXT_PX
