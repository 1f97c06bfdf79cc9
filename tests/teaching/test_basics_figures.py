"""Claims about issue 30's counted computations and figures (transformer_lab.teaching): the
chains of matrix products of a recurrent and an attention layer, the training facts of
Section 5 and Table 2's cost recomputed, why sinusoids (a rotation per pair), the three
families' masks, and the dropout runs; every figure builds with text at slide size."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import transformer_lab as tl  # noqa: E402
from transformer_lab import teaching as tt  # noqa: E402
from transformer_lab.teaching.style import TEXT_PT  # noqa: E402


def assert_slide_text(fig: Figure) -> None:
    fig.canvas.draw()
    small = [t for t in tt.text_sizes(fig) if t.px < tt.legibility.MIN_TEXT_PX]
    assert small == [], small


# --------------------------------------------------------------------------- n products in a row


@pytest.mark.parametrize("n, d, h", [(50, 512, 8), (7, 12, 3), (1, 8, 2)])
def test_the_chains_count_table_1s_sequential_operations_and_the_layers_work(n, d, h):
    chains = tt.sequential_products(length=n, d_model=d, num_heads=h)
    gru, attention = chains["GRU"], chains["self-attention"]
    assert len(gru) == n + 1 and len(attention) == 4  # O(n) against O(1)
    assert [p.rows for p in gru] == [n] + [1] * n  # one position per state product
    assert all(p.rows == n for p in attention)
    # the totals are the layers' multiply-adds that scaling.layer_macs counts (6 n d², 4 n d² + 2 n² d)
    macs = tt.layer_macs([n], d)
    assert sum(p.macs for p in gru) == macs["GRU"][0]
    assert sum(p.macs for p in attention) == macs["attention layer"][0]
    # the heads' products: h of them side by side, d_k wide each
    assert attention[1].count == h and attention[1].inner == d // h and attention[1].columns == n


def test_the_chains_are_said_in_words_runs_counted():
    chains = tt.sequential_products(50)
    assert tt.chain_summary(chains["GRU"]) == "input projection → 50 × state product"
    assert tt.chain_summary(chains["self-attention"]) == (
        "Q, K, V projections → Q Kᵀ → weights × V → output projection")


def test_sequential_products_name_a_bad_width():
    with pytest.raises(ValueError, match="d_model=10 must be divisible by num_heads=4"):
        tt.sequential_products(5, 10, 4)


def test_the_chain_figure_has_one_bar_per_product_and_slide_sized_text():
    chains = tt.sequential_products(50)
    fig = tt.plot_sequential_products(chains)
    bars = [len(a.patches) for a in fig.axes]
    assert bars == [51, 4]
    # a one-position product is drawn visibly beside a 50-position one (log axis): at least a
    # sixth of the panel's height, where a linear axis drew it at 2%
    gru = fig.axes[0]
    fig.draw_without_rendering()
    panel = gru.get_window_extent().height
    one = gru.patches[1].get_window_extent()
    assert gru.patches[1].get_height() == 1 and one.height >= panel / 6
    assert [a.get_title(loc="left") for a in fig.axes] == ["GRU: 51 products in a row",
                                                         "self-attention: 4 products in a row"]
    assert_slide_text(fig)
    with pytest.raises(ValueError, match="chains\\['x'\\] must be a non-empty sequence of MatrixProduct"):
        tt.plot_sequential_products({"x": []})


# --------------------------------------------------------------------------- Section 5 and Table 2


def test_the_training_times_multiply_out_to_the_totals_the_paper_states():
    base, big = tt.paper.TRAINING_RUNS
    assert (base.steps, base.seconds_per_step, big.steps, big.seconds_per_step) == (100_000, 0.4, 300_000, 1.0)
    assert base.hours == pytest.approx(100_000 * 0.4 / 3600)
    assert abs(base.hours - base.stated_hours) / base.stated_hours < 0.1  # "about 0.4 seconds", "12 hours"
    assert big.hours / 24 == pytest.approx(3.5, abs=0.05)


def test_table_2s_training_cost_is_time_times_gpus_times_the_p100s_rate():
    for run in tt.paper.TRAINING_RUNS:
        reported = tt.paper.table2_row(f"Transformer ({run.model})").cost_en_de
        assert tt.paper.training_flops(run) == pytest.approx(reported, rel=0.01)  # 3.3e18, 2.3e19 to 2 digits
    assert [d.sentence_pairs for d in tt.paper.DATASETS] == [4_500_000, 36_000_000]


# --------------------------------------------------------------------------- why sinusoids


def test_the_rotation_figure_puts_each_position_on_its_pairs_circle():
    fig = tt.plot_position_rotation(d_model=512, pairs=(0, 32), positions=7, k=2)
    assert len(fig.axes) == 2
    table = tl.sinusoidal_positional_encoding(7, 512, dtype=torch.float64)
    for a, i in zip(fig.axes, (0, 32)):
        x, y = a.lines[1].get_data()
        torch.testing.assert_close(torch.tensor(x), table[:, 2 * i])
        torch.testing.assert_close(torch.tensor(y), table[:, 2 * i + 1])
        assert max(abs(math.hypot(u, v) - 1) for u, v in zip(x, y)) < 1e-12  # on the unit circle
    assert_slide_text(fig)


def test_the_turn_from_pos_to_pos_plus_k_is_the_same_for_every_pos():
    # what the arrows show, as numbers: the angle between PE pairs at pos and pos + k
    table = tl.sinusoidal_positional_encoding(40, 64, dtype=torch.float64)
    k = 3
    angle = torch.atan2(table[:, 0::2], table[:, 1::2])  # (L, D/2): omega_i * pos, mod 2 pi
    turn = torch.remainder(angle[k:] - angle[:-k], 2 * math.pi)  # (L - k, D/2)
    torch.testing.assert_close(turn, turn[:1].expand_as(turn))


def test_the_rotation_figure_names_bad_arguments():
    with pytest.raises(ValueError, match=r"pairs must be a non-empty sequence of pair indices in \[0, 8\)"):
        tt.plot_position_rotation(d_model=16, pairs=(8,))
    with pytest.raises(ValueError, match=r"starts must hold positions p with p \+ k < positions = 5"):
        tt.plot_position_rotation(d_model=16, pairs=(0,), positions=5, k=2, starts=(3,))


# --------------------------------------------------------------------------- three families


def test_the_families_masks_are_the_packages_and_their_targets_line_up():
    enc, dec, seq2seq = tt.model_families()
    assert enc.mask.all() and enc.targets == (None, "cat", None) and enc.tokens[1] == "[MASK]"
    assert torch.equal(dec.mask, tl.causal_mask(3)) and dec.targets == ("cat", "slept", "<eos>")
    s, m = seq2seq.split, seq2seq.mask
    assert m[:s, :s].all() and not m[:s, s:].any()  # the encoder sees the source, never the target
    assert m[s:, :s].all()  # cross-attention: every target position reads every source position
    assert torch.equal(m[s:, s:], tl.causal_mask(len(seq2seq.tokens) - s))
    # the decoder reads <bos> + the target shifted right and predicts it (Section 3.1)
    assert seq2seq.tokens[s:][1:] == seq2seq.targets[s:][:-1] and seq2seq.tokens[s] == "<bos>"
    assert seq2seq.targets[:s] == (None,) * s


def test_the_families_figure_draws_each_mask_and_target_at_slide_size():
    families = tt.model_families()
    fig = tt.plot_model_families(families)
    assert len(fig.axes) == 3
    for a, f in zip(fig.axes, families):
        shown = a.images[0].get_array()
        assert (shown.astype(bool) == f.mask.numpy()).all()
        targets = [t.get_text() for t in a.texts if t.get_text().startswith(("→", "-"))]
        assert targets == [f"→ {t}" if t else "-" for t in f.targets]
    assert_slide_text(fig)


def test_a_family_refuses_a_mask_that_does_not_fit_its_tokens():
    with pytest.raises(ValueError, match=r"mask must be a boolean \(2, 2\) tensor"):
        tt.Family("x", "y", ("a", "b"), torch.ones(3, 3, dtype=torch.bool), (None, None))
    with pytest.raises(ValueError, match=r"masked must index a word of words \(0 to 2\), got 3"):
        tt.model_families(masked=3)


# --------------------------------------------------------------------------- dropout


@pytest.fixture(scope="module")
def small_runs():
    return tt.dropout_runs((0.0, 0.3), seed=1, num_train=20, num_validation=10, steps=6, eval_interval=3)


def test_dropout_runs_differ_only_in_the_rate(small_runs):
    without, with_ = small_runs
    assert without["steps"] == with_["steps"] == [3, 6]
    assert without["rate"] == 0.0 and with_["rate"] == 0.3
    # the same start: the rate draws no random number when the model is built
    torch.manual_seed(1)
    a = tl.Transformer(tl.TransformerConfig.tiny(30, 20, dropout=0.0))
    torch.manual_seed(1)
    b = tl.Transformer(tl.TransformerConfig.tiny(30, 20, dropout=0.3))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert without["train_loss"] != with_["train_loss"]  # and the rate does change training


def test_dropout_runs_repeat_and_leave_the_random_state_alone(small_runs):
    state = torch.get_rng_state()
    again = tt.dropout_runs((0.0, 0.3), seed=1, num_train=20, num_validation=10, steps=6, eval_interval=3)
    assert torch.equal(torch.get_rng_state(), state)
    assert again == small_runs


def test_final_losses_average_the_last_evaluations(small_runs):
    summary = tt.final_losses(small_runs, last=2)
    run = small_runs[0]
    assert summary[0.0]["validation"] == pytest.approx(sum(run["validation_loss"]) / 2)
    assert summary[0.0]["gap"] == pytest.approx(summary[0.0]["validation"] - summary[0.0]["train"])


def test_the_dropout_figure_draws_two_lines_per_rate(small_runs):
    fig = tt.plot_dropout_runs(small_runs)
    lines = fig.axes[0].lines
    assert [(l.get_label(), l.get_linestyle()) for l in lines if not l.get_label().startswith("_")] == [
        ("P_drop = 0", "-"), ("P_drop = 0.3", "-")]  # one legend entry per rate, for its solid line
    assert [l.get_linestyle() for l in lines] == ["-", "--", "-", "--"]  # validation, then training
    assert list(lines[0].get_ydata()) == small_runs[0]["validation_loss"]
    assert list(lines[3].get_ydata()) == small_runs[1]["train_loss"]
    assert fig.axes[0].get_title() == "solid: validation · dashed: training"
    assert_slide_text(fig)


def test_dropout_runs_name_unknown_settings():
    with pytest.raises(TypeError, match=r"settings must be among .*got \['epochs'\]"):
        tt.dropout_runs(epochs=3)
