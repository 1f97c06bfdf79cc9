"""One sentence's encoder input, embedding plus positions: the numbers are what the model's
first encoder layer reads, and the figure shows them legibly on one colour scale."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import transformer_lab as tl  # noqa: E402
from transformer_lab import teaching as tt  # noqa: E402
from transformer_lab.teaching.legibility import MIN_TEXT_PX, PLACES, saved_width_px  # noqa: E402

SENTENCE = "the cat did not cross the road because it was too tired"


def vocab() -> tl.Vocabulary:
    return tl.Vocabulary(SENTENCE.split() + ["dog", "wide"])


def model(d_model: int = 12, positional: str = "sinusoidal", dropout: float = 0.5) -> tl.Transformer:
    config = tl.TransformerConfig.tiny(len(vocab().itos), 11, d_model=d_model, num_heads=3, d_ff=20,
                                       dropout=dropout, positional=positional)
    return tl.Transformer(config)


def encoder_input(m: tl.Transformer, ids: list[int]) -> torch.Tensor:
    """What the first encoder layer receives from ``Transformer.encode`` in eval mode."""
    seen = []
    hook = m.encoder.layers[0].register_forward_pre_hook(lambda _, args: seen.append(args[0].detach().clone()))
    try:
        m.eval()
        with torch.no_grad():
            m.encode(torch.tensor([ids]))
    finally:
        hook.remove()
    return seen[0][0]  # (S, D)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_the_total_is_what_the_first_encoder_layer_reads_and_the_model_keeps_its_mode(positional):
    m = model(positional=positional).train()  # dropout 0.5: a training-mode pass would differ
    inputs = tt.sentence_inputs(m, vocab(), SENTENCE)
    assert m.training
    ids = vocab().encode(SENTENCE)
    assert inputs.tokens == SENTENCE.split() + ["<eos>"]
    torch.testing.assert_close(inputs.total, encoder_input(m, ids))
    torch.testing.assert_close(inputs.total, inputs.embedding + inputs.positions)
    torch.testing.assert_close(inputs.embedding, m.src_embed.weight[ids].detach() * math.sqrt(12))


def test_the_sinusoidal_positions_are_the_papers_table_row_per_token():
    inputs = tt.sentence_inputs(model(), vocab(), SENTENCE)
    S = len(SENTENCE.split()) + 1
    torch.testing.assert_close(inputs.positions, tl.sinusoidal_positional_encoding(S, 12))
    assert inputs.embedding.shape == inputs.total.shape == (S, 12)
    torch.testing.assert_close(inputs.embedding[0], inputs.embedding[5])  # "the" twice: one vector


def test_a_word_missing_from_the_vocabulary_is_named():
    with pytest.raises(ValueError, match=r"sentence has 2 word\(s\) not in the source vocabulary: 'zebra', 'lazy'"):
        tt.sentence_inputs(model(), vocab(), "the zebra was lazy because the zebra was tired")
    with pytest.raises(ValueError, match="sentence must be a non-empty string, got ' '"):
        tt.sentence_inputs(model(), vocab(), " ")
    with pytest.raises(TypeError, match="model must be a transformer_lab.Transformer, got str"):
        tt.sentence_inputs("model", vocab(), SENTENCE)
    with pytest.raises(TypeError, match="src_vocab must be a transformer_lab Vocabulary, got dict"):
        tt.sentence_inputs(model(), {"the": 4}, SENTENCE)
    with pytest.raises(ValueError, match="sentence has 1 word"):
        tt.plot_token_vectors(model(), vocab(), "the cat sat")


def test_the_figure_shows_the_three_panels_on_one_symmetric_scale_with_one_colour_bar():
    m = model(d_model=48)
    inputs = tt.sentence_inputs(m, vocab(), SENTENCE)
    fig = tt.plot_token_vectors(m, vocab(), SENTENCE)
    panels = [a for a in fig.axes if a.images and a.get_label() != "<colorbar>"]
    bars = [a for a in fig.axes if a.get_label() == "<colorbar>"]
    assert len(panels) == 3 and len(bars) == 1
    expected = [inputs.embedding, inputs.positions, inputs.total]
    top = max(float(t[:, :32].abs().max()) for t in expected)
    for a, values in zip(panels, expected):
        np.testing.assert_allclose(a.images[0].get_array(), values[:, :32].numpy())  # d_model 48: first 32
        assert a.images[0].get_clim() == pytest.approx((-top, top))
    assert [a.get_title() for a in panels] == ["token embedding\n× √d_model", "+ positional\nencoding",
                                               "= encoder input"]
    assert [t.get_text() for t in panels[0].get_yticklabels()] == inputs.tokens
    assert fig.get_supxlabel() == "column (the first 32 of d_model = 48)"


def test_dims_picks_the_first_columns_and_is_checked():
    fig = tt.plot_token_vectors(model(), vocab(), SENTENCE)  # d_model 12 < 32: all of them
    assert fig.axes[0].images[0].get_array().shape == (13, 12) and fig.get_supxlabel() == "column (d_model = 12)"
    fig = tt.plot_token_vectors(model(), vocab(), SENTENCE, dims=5)
    assert fig.axes[0].images[0].get_array().shape == (13, 5)
    with pytest.raises(ValueError, match="dims must be at most d_model=12, got 13"):
        tt.plot_token_vectors(model(), vocab(), SENTENCE, dims=13)
    with pytest.raises(ValueError, match="dims must be a positive int, got 0"):
        tt.plot_token_vectors(model(), vocab(), SENTENCE, dims=0)


def test_the_figure_is_legible_on_a_slide():
    fig = tt.plot_token_vectors(model(d_model=66), vocab(), SENTENCE)
    assert tt.smallest_text(fig).px >= MIN_TEXT_PX
    assert saved_width_px(fig) <= PLACES["slide"] and fig.get_size_inches()[1] * 96 <= 560
    fig.draw_without_rendering()
    labels = [t.get_window_extent() for t in fig.axes[0].get_yticklabels()]
    assert all(a.y0 >= b.y1 - 1 for a, b in zip(labels, labels[1:]))  # token labels top to bottom, no overlap
