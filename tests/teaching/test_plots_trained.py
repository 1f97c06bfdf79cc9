"""The trained-model figures: what they draw, legible text, and clear errors."""

import matplotlib
import pytest
import torch
from matplotlib.figure import Figure

from transformer_lab import teaching as tt


def texts(fig):
    return [t for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def test_the_head_statistic_draws_one_bar_per_head_with_its_percentage_and_a_chance_line():
    more = torch.tensor([[0.5, 0.52, 0.48, 0.5], [0.8, 0.9, 0.85, 0.75]])
    if_place = torch.tensor([[0.7, 0.3, 0.6, 0.5], [0.9, 0.95, 0.8, 0.85]])
    if_animal = torch.tensor([[0.68, 0.31, 0.62, 0.5], [0.05, 0.1, 0.2, 0.15]])
    fig = tt.plot_antecedent_heads(more, if_place, if_animal)
    left, right = fig.axes[:2]
    assert [round(p.get_height()) for p in left.patches] == [50, 52, 48, 50, 80, 90, 85, 75]
    # right: per head, the place preferred when it is meant, then when the animal is
    heights = [round(p.get_height()) for p in right.patches]
    assert heights == [70, 30, 60, 50, 90, 95, 80, 85, 68, 31, 62, 50, 5, 10, 20, 15]
    labels = {t.get_text() for t in texts(fig)}
    assert {"90", "75", "chance"} <= labels and left.lines[0].get_ydata()[0] == 50
    assert min(t.get_fontsize() for t in texts(fig)) >= 15
    # shares on a 0-100% axis on both panels: no tick above 100 (review of round 4: "axis to 120")
    assert right.get_ylim() == (0, 100) and max(left.get_yticks()) == max(right.get_yticks()) == 100
    fig.draw_without_rendering()   # lays it out: the legend sits under the panels, not over the bars
    legend = fig.legends[0].get_window_extent()
    assert right.get_legend() is None and legend.y1 <= right.xaxis.label.get_window_extent().y0
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["the place is meant", "the animal is meant"]


def test_the_head_statistic_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"the three statistics must have one shape \(L, H\), got \(2, 4\), \(2, 3\)"):
        tt.plot_antecedent_heads(torch.rand(2, 4), torch.rand(2, 3), torch.rand(2, 4))


def test_weights_from_it_marks_the_antecedent_and_the_other_noun():
    words = "the cat did not cross the road because it was too tired".split()
    w = torch.softmax(torch.randn(len(words)), dim=0)
    fig = tt.plot_weights_from([w, w], [words, words], [1, 6], [6, 1], titles=["a", "b"], title="head")
    assert fig._suptitle.get_text() == "head" and [a.get_title() for a in fig.axes] == ["a", "b"]
    bars = fig.axes[0].patches
    assert len(bars) == len(words)
    assert bars[1].get_facecolor() != bars[6].get_facecolor() != bars[0].get_facecolor()
    assert fig.axes[1].patches[6].get_facecolor() == bars[1].get_facecolor()  # antecedent colour follows the index
    with pytest.raises(ValueError, match="must have one entry per sentence, got 2, 1, 2, 2"):
        tt.plot_weights_from([w, w], [words], [1, 6], [6, 1])


def test_enlarge_text_raises_small_text_and_leaves_large_text():
    fig = Figure()
    ax = fig.subplots()
    small, large = ax.text(0, 0, "small", fontsize=8), ax.text(0, 1, "large", fontsize=30)
    assert tt.enlarge_text(fig, 15) is fig
    assert small.get_fontsize() == 15 and large.get_fontsize() == 30
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got str"):
        tt.enlarge_text("figure")


def test_a_bar_label_and_the_claim_under_the_figure_round_one_share_the_same_way():
    # 346 of 400 in float32 is 0.86500001: its bar said 86 (float32 rounds half to even)
    # while the sentence under it, from the float64 value, said 87 (review of round 4)
    held = torch.tensor([1.0] * 346 + [0.0] * 54).mean()        # as the statistic is computed
    share = torch.stack([torch.tensor(0.5), torch.tensor(0.5), held, torch.tensor(0.95)]).reshape(2, 2)
    fig = tt.plot_antecedent_heads(share, share, share)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["50", "50", "87", "95"]
    from transformer_lab.teaching.plots_trained import percent
    assert [percent(v) for v in share.reshape(-1)] == labels


def test_a_weight_below_half_a_hundredth_is_labelled_as_the_notes_print_it():
    # the opener's bar for the other noun said 0.00 while its notes said "< 0.01" (review of round 4)
    from transformer_lab.teaching.deck_claims import weight as claimed
    from transformer_lab.teaching.plots_trained import weight
    weights = torch.tensor([0.003, 0.2, 0.5, 0.297])
    fig = tt.plot_weights_from([weights], [["a", "b", "c", "d"]], [2], [0])
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_text()]
    assert labels == ["< 0.01", "0.50"]
    assert [weight(w) for w in (0.0049, 0.005, 0.5)] == ["< 0.01", "0.01", "0.50"]
    assert claimed is weight
