"""Every figure the deck shows is legible from the back row: rendered with small inputs at
the place a slide shows it (the whole slide or one column), every text artist (titles,
tick labels, legends, annotations, colour-bar ticks) is at least 20 px; heatmaps carry a
colour bar; the SVG keeps its text as <text>."""

from __future__ import annotations

import io
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import transformer_lab as tl  # noqa: E402
from transformer_lab import teaching as tt  # noqa: E402
from transformer_lab.masks import causal_mask  # noqa: E402
from transformer_lab.teaching import paper  # noqa: E402
from transformer_lab.teaching.decoding_steps import BeamNode, BeamTree  # noqa: E402
from transformer_lab.teaching.legibility import MIN_TEXT_PX, PLACES, display_scale, saved_width_px  # noqa: E402

WORDS = ["the", "cat", "did", "not", "cross", "because", "<eos>"]
T, S = 5, 7
SENTENCE = "the cat did not cross the road because it was too tired <eos>".split()


def small_beam_tree() -> BeamTree:
    nodes = [BeamNode(0, None, 0, 0, 1, 0.0, "kept"), BeamNode(1, 0, 1, 0, 3, -0.5, "kept"),
             BeamNode(2, 0, 1, 1, 4, -1.2, "kept"), BeamNode(3, 1, 2, 0, 2, -0.9, "finished", -0.8),
             BeamNode(4, 2, 2, 1, 5, -2.0, "pruned")]
    return BeamTree(2, 0.6, nodes, [(-0.8, [1, 3, 2])])


def token_vectors() -> Figure:
    sentence = "the cat did not cross the road because it was too tired"
    vocab = tl.Vocabulary(sentence.split())
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig.tiny(len(vocab.itos), 9, d_model=48, num_heads=3, d_ff=20))
    return tt.plot_token_vectors(model, vocab, sentence)


#: name -> (a figure from small inputs, where the deck shows it)
FIGURES = {
    "plot_attention": (lambda: tt.plot_attention(torch.rand(T, S).softmax(-1), WORDS[:T], WORDS), "column 50%"),
    "plot_attention (masked, slide)": (lambda: tt.plot_attention(torch.rand(T, T), WORDS[:T], WORDS[:T],
                                                                  mask=causal_mask(T), title="masked"), "slide"),
    "plot_attention_heads": (lambda: tt.plot_attention_heads(torch.rand(4, len(WORDS), len(WORDS)), WORDS, WORDS,
                                                              head_titles=[f"layer 0, head {h}" for h in range(4)]),
                             "slide"),
    # chapter 08: 13 keys, too many for one row of labels per panel, so two rows above each map
    "plot_attention_heads (13 keys, slide)": (lambda: tt.plot_attention_heads(
        torch.rand(4, 13, 13).softmax(-1), SENTENCE, SENTENCE, ncols=4,
        head_titles=[f"{h}: tired 0.83" for h in range(4)]), "slide"),
    "plot_mask": (lambda: tt.plot_mask(causal_mask(T), WORDS[:T], WORDS[:T], title="left padding & causal"),
                  "column 44%"),
    "plot_masks": (lambda: tt.plot_masks([causal_mask(6)] * 3, ["padding", "causal", "padding & causal"]), "slide"),
    "plot_positional_encoding": (lambda: tt.plot_positional_encoding(torch.rand(20, 16) * 2 - 1), "slide"),
    "plot_wavelengths": (lambda: tt.plot_wavelengths(d_model=64, length=40), "slide"),
    "plot_dot_product_variance": (lambda: tt.plot_dot_product_variance((1, 16, 256), samples=200), "slide"),
    "plot_softmax_saturation": (lambda: tt.plot_softmax_saturation((1, 16, 256), samples=100), "slide"),
    "plot_scaling_argument": (lambda: tt.plot_scaling_argument((1, 4, 16, 64, 256, 1024)), "slide"),
    "plot_learning_rate_schedule": (lambda: tt.plot_learning_rate_schedule((256, 512, 1024), (4000, 8000), 30000),
                                    "slide"),
    "plot_label_smoothing": (lambda: tt.plot_label_smoothing(), "slide"),
    "plot_training_curves": (lambda: tt.plot_training_curves(
        {"step": [0, 100, 200, 300], "loss": [4, 2, 1, 0.5], "val_loss": [4, 2.2, 1.1, 0.6],
         "val_token_accuracy": [0.2, 0.5, 0.9, 0.99], "val_exact_match": [0, 0.1, 0.8, 0.97]}), "slide"),
    "plot_layer_gradient_norms": (lambda: tt.plot_layer_gradient_norms({"post-LN": [0.2, 0.5, 0.9],
                                                                        "pre-LN": [0.6, 0.5, 0.4]}), "slide"),
    "plot_attention_cost": (lambda: tt.plot_attention_cost([64, 256, 1024], [[1, 10, 160], [1, 4, 30]],
                                                           ["explicit", "fused"], logy=True), "slide"),
    "plot_decode_step_times": (lambda: tt.plot_decode_step_times({"with cache": [1.0] * 20,
                                                                  "recompute": list(range(20))}), "slide"),
    "plot_decode_panels": (lambda: tt.plot_decode_panels(
        {"tiny (d = 64)": {"with cache": [1.0] * 30, "recompute": list(range(30))},
         "base size (d = 512, 1 layer)": {"with cache": [2.0] * 30}}), "slide"),
    "plot_table1_scaling": (lambda: tt.plot_table1_scaling(
        [8, 64, 512, 2048], {"GRU": [1, 8, 64, 256], "attention": [0.1, 1, 60, 900]},
        tt.table1_flops([8, 64, 512, 2048], 512), d_model=512), "slide"),
    "plot_table1_scaling (actual counts only)": (lambda: tt.plot_table1_scaling(
        [8, 64, 512, 2048], {"attention layer": [0.4, 2, 16, 130], "attention core": [0.02, 0.1, 6, 90],
                             "GRU": [0.7, 5, 35, 140]}, d_model=512), "slide"),
    "plot_vocabulary_tradeoff": (lambda: tt.plot_vocabulary_tradeoff(
        [30, 100, 1000, 5000], {"training text": [90, 50, 25, 17], "held out": [92, 55, 30, 22]},
        {"training text": 17, "held out": 18}), "slide"),
    "plot_table2": (lambda: tt.plot_table2(paper.TABLE2), "slide"),
    "plot_table3": (lambda: tt.plot_table3([r for r, _, _ in paper.table3_effects(("A", "B", "D", "E"))]), "slide"),
    "plot_antecedent_heads": (lambda: tt.plot_antecedent_heads(torch.rand(2, 4), torch.rand(2, 4) / 2,
                                                               torch.rand(2, 4) / 2), "slide"),
    "plot_weights_from": (lambda: tt.plot_weights_from(
        [np.linspace(0.05, 0.3, 7)] * 2, [WORDS, WORDS], [1, 1], [4, 4], titles=["tired", "wide"]), "slide"),
    "plot_token_vectors": (token_vectors, "slide"),
    "plot_beam_tree": (lambda: tt.plot_beam_tree(small_beam_tree(), [f"t{i}" for i in range(8)],
                                                 title="best: t3 t2, score -0.80"), "slide"),
    "plot_model_map": (lambda: tt.plot_model_map(["encoder", "cross-attention"]), "column 25%"),
    "plot_position_rotation": (lambda: tt.plot_position_rotation(), "column 64%"),
    "plot_sequential_products": (lambda: tt.plot_sequential_products(tt.sequential_products(50)), "slide"),
    "plot_dropout_runs": (lambda: tt.plot_dropout_runs(
        [{"rate": r, "steps": [25, 50, 75], "train_loss": [2.0, 1.0, 0.2 + r], "validation_loss": [2.1, 1.2, 1.1 - r]}
         for r in (0.0, 0.1)]), "column 54%"),
    "plot_model_families": (lambda: tt.plot_model_families(tt.model_families()), "slide"),
}
HEATMAPS = ("plot_attention", "plot_attention (masked, slide)", "plot_attention_heads", "plot_positional_encoding",
            "plot_token_vectors")


def test_every_public_plot_function_is_checked_here():
    public = {name for name in dir(tt) if name.startswith("plot_")}
    assert public == {name.split(" ")[0] for name in FIGURES}


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_text_is_at_least_20_px_where_the_deck_shows_the_figure(name):
    make, place = FIGURES[name]
    fig = make()
    sizes = tt.text_sizes(fig, PLACES[place])
    assert sizes, f"{name} has no text"
    small = sorted({(round(px, 1), text) for px, text in sizes if px < MIN_TEXT_PX})
    assert not small, f"{name} shown in a {place} ({PLACES[place]:.0f} px) has text under 20 px: {small[:5]}"


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_figure_fits_its_place_at_natural_size(name):
    """Sized for where it is shown, so a slide never scales it (and its text) down."""
    make, place = FIGURES[name]
    fig = make()
    assert saved_width_px(fig) <= PLACES[place], f"{name}: {saved_width_px(fig):.0f} px wide for a {place}"
    assert fig.get_size_inches()[1] * 96 <= 560, f"{name} is taller than a slide below its title"


@pytest.mark.parametrize("name", HEATMAPS)
def test_heatmaps_carry_a_colour_bar_with_a_labelled_scale(name):
    fig = FIGURES[name][0]()
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1
    fig.draw_without_rendering()
    bar = bars[0]
    ticks = [t.get_text() for t in bar.get_yticklabels() + bar.get_xticklabels() if t.get_text()]
    assert len(ticks) >= 2 and (bar.get_ylabel() or bar.get_xlabel())


@pytest.mark.parametrize("name", ["plot_attention", "plot_table2", "plot_scaling_argument", "plot_masks"])
def test_svg_keeps_text_as_text(name):
    fig = FIGURES[name][0]()
    out = io.StringIO()
    fig.savefig(out, format="svg")
    svg = out.getvalue()
    texts = re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)
    assert len(texts) >= 5
    assert 'id="DejaVuSans' not in svg  # no glyphs drawn as paths
    sizes = [float(x) for x in re.findall(r"font-size: *([\d.]+)px", svg)]
    assert sizes and min(sizes) >= tt.STYLE["xtick.labelsize"]


def test_text_sizes_scale_with_the_place_a_figure_is_shrunk_into():
    fig = Figure(figsize=(10, 4))
    ax = fig.subplots()
    ax.set_title("a title", fontsize=15)
    natural = saved_width_px(fig)
    (px, text), = [s for s in tt.text_sizes(fig) if s.text == "a title"]
    assert text == "a title" and px == pytest.approx(20.0)  # 15 pt at 96 px per inch
    half = [s.px for s in tt.text_sizes(fig, natural / 2) if s.text == "a title"]
    assert half == [pytest.approx(10.0)] and display_scale(fig, natural / 2) == pytest.approx(0.5)
    assert tt.smallest_text(fig).px < MIN_TEXT_PX  # the default tick labels (10 pt)
    tt.enlarge_text(fig)
    assert tt.smallest_text(fig).px >= MIN_TEXT_PX


def test_measuring_rejects_what_is_not_a_figure_or_a_width():
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got str"):
        tt.text_sizes("figure")
    with pytest.raises(ValueError, match="width_px must be positive and finite, got 0"):
        tt.text_sizes(Figure(), 0)


def test_a_figure_drawn_into_a_foreign_axes_still_gets_slide_size_ticks():
    host = Figure(figsize=(4, 4))  # made outside the house style: 10 pt ticks by default
    tt.plot_mask(causal_mask(4), ax=host.subplots())
    host.draw_without_rendering()
    ticks = [t for t in host.axes[0].get_xticklabels() + host.axes[0].get_yticklabels() if t.get_text()]
    assert ticks and min(t.get_fontsize() for t in ticks) >= tt.STYLE["xtick.labelsize"]


ROLE_FIGURES = ("plot_attention", "plot_attention (masked, slide)", "plot_attention_heads",
                "plot_attention_heads (13 keys, slide)", "plot_mask", "plot_masks", "plot_model_families")


@pytest.mark.parametrize("name", [n for n in FIGURES if n not in ROLE_FIGURES])
def test_figures_of_other_things_never_draw_in_a_query_key_value_or_mask_colour(name):
    """One palette, one meaning: loss curves, pre-LN, recompute, positional encodings and
    the paper's rows are drawn in the other colours."""
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = FIGURES[name][0]()
    roles = {tt.PALETTE[r].lower() for r in ("query", "key", "value", "mask")}
    used = set()
    for artist in fig.findobj(lambda a: isinstance(a, (Line2D, Patch))):
        colours = [artist.get_color(), artist.get_markerfacecolor()] if isinstance(artist, Line2D) else \
            [artist.get_facecolor(), artist.get_edgecolor()]
        used |= {to_hex(c) for c in colours if not isinstance(c, str) or c != "none"}
    for image in fig.findobj(lambda a: hasattr(a, "get_cmap") and hasattr(a, "get_array")):
        used |= {to_hex(image.get_cmap()(x)) for x in np.linspace(0, 1, 5)}
    assert not used & roles, f"{name} uses {sorted(used & roles)}"
