"""Claims about the teaching plots (transformer_lab.teaching): every figure builds from plain arrays, in one palette."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_hex, to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from transformer_lab import teaching as viz  # noqa: E402
from transformer_lab.masks import causal_mask  # noqa: E402
from transformer_lab.positional_encoding import sinusoidal_positional_encoding  # noqa: E402
from transformer_lab.teaching import (  # noqa: E402
    ATTENTION_CMAP,
    PALETTE,
    STYLE,
    plot_attention,
    plot_attention_cost,
    plot_attention_heads,
    plot_dot_product_variance,
    plot_label_smoothing,
    plot_learning_rate_schedule,
    plot_mask,
    plot_positional_encoding,
    plot_scaling_argument,
    plot_softmax_saturation,
    plot_training_curves,
    plot_wavelengths,
)

# Deliberately unequal sizes, so swapped axes fail.
T, S, H = 5, 7, 3
QUERIES = ["<bos>", "2", "0", "2", "6"]
KEYS = ["the", "first", "of", "may", "twenty", "twenty-six", "<eos>"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def tick_texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


def rgba(hex_code: str) -> np.ndarray:
    return np.array(to_rgba(hex_code))


# --------------------------------------------------------------------------- palette


def test_attention_map_runs_from_light_grey_to_the_query_colour_with_masked_cells_in_the_mask_colour():
    low = np.array(to_rgba(ATTENTION_CMAP(0.0)))[:3]
    assert 0.8 < low.min() and low.max() < 0.95  # a grey that shows on a projector, not white
    assert to_hex(ATTENTION_CMAP(1.0)) == PALETTE["query"].lower()
    assert to_hex(ATTENTION_CMAP.get_bad()) == PALETTE["mask"].lower()


def test_figures_use_the_house_style_without_changing_global_rcparams():
    before = dict(matplotlib.rcParams)
    fig = plot_label_smoothing()
    ax = fig.axes[0]
    assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible()
    assert to_hex(ax.title.get_color()) == PALETTE["ink"].lower()
    assert tuple(fig.get_size_inches()) == pytest.approx(STYLE["figure.figsize"])
    assert {ax.title.get_fontsize(), ax.xaxis.label.get_fontsize()} == {STYLE["axes.titlesize"], STYLE["axes.labelsize"]}
    assert dict(matplotlib.rcParams) == before


# --------------------------------------------------------------------------- attention


def test_plot_attention_draws_one_heatmap_with_token_labels_left_right_and_top_and_a_colour_bar():
    weights = torch.rand(T, S).softmax(-1)
    fig = plot_attention(weights, QUERIES, KEYS, title="cross-attention", label_right=True)
    assert isinstance(fig, Figure) and len(fig.axes) == 2  # the map and its colour bar
    ax, bar = fig.axes
    assert "attention weight" in (bar.get_xlabel(), bar.get_ylabel())
    assert len(ax.images) == 1 and ax.images[0].get_array().shape == (T, S)
    y_ticks, x_ticks = ax.yaxis.get_major_ticks(), ax.xaxis.get_major_ticks()
    assert [t.label1.get_text() for t in y_ticks] == QUERIES and all(t.label1.get_visible() for t in y_ticks)
    assert [t.label2.get_text() for t in y_ticks] == QUERIES and all(t.label2.get_visible() for t in y_ticks)
    assert [t.label2.get_text() for t in x_ticks] == KEYS and all(t.label2.get_visible() for t in x_ticks)
    assert ax.xaxis.get_label_position() == "top"
    assert ax.get_title() == "cross-attention"


def test_plot_attention_paints_masked_cells_in_the_mask_colour():
    mask = causal_mask(T)  # True = may attend
    weights = torch.rand(T, T).masked_fill(~mask, 0.0)
    fig = plot_attention(weights, mask=mask)
    image = fig.axes[0].images[0]
    colours = image.to_rgba(image.get_array())  # (T, T, 4)
    assert np.allclose(colours[~mask.numpy()], rgba(PALETTE["mask"]))
    assert not np.isclose(colours[mask.numpy()], rgba(PALETTE["mask"])).all(-1).any()


def test_plot_attention_accepts_a_broadcastable_padding_mask():
    keep = torch.tensor([[True] * (S - 2) + [False] * 2])  # (1, S)
    fig = plot_attention(torch.rand(T, S), mask=keep)
    assert fig.axes[0].images[0].get_array().mask[:, -2:].all()


def test_plot_attention_draws_into_a_given_axes():
    host = Figure()
    ax = host.subplots()
    assert plot_attention(np.eye(3), ax=ax) is host


def test_plot_attention_heads_draws_exactly_one_panel_per_head_with_one_colour_bar_and_labels_once():
    fig = plot_attention_heads(torch.rand(H, T, S).softmax(-1), QUERIES, KEYS, ncols=2)
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == H  # the unused fourth grid cell is removed
    assert [ax.get_title() for ax in maps] == ["head 0", "head 1", "head 2"]
    assert all(ax.images[0].get_array().shape == (T, S) for ax in maps)
    assert len({ax.images[0].get_clim() for ax in maps}) == 1  # one colour scale
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1 and bars[0].get_ylabel() == "attention weight"
    assert fig.get_supxlabel() == "keys" and fig.get_supylabel() == "queries"
    assert all(ax.get_xlabel() == ax.get_ylabel() == "" for ax in maps)
    fig.draw_without_rendering()
    shown = [ax for ax in maps if any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())]
    assert shown == [maps[0], maps[2]]  # query labels once per row of panels


def test_heads_too_narrow_for_every_key_label_set_them_in_two_rows_above_each_map():
    """Chapter 08's figure, four heads of 13 keys in one row: too narrow for 13 labels side by
    side at slide size, so every other label goes to a far row, still above the map (they
    once alternated above and below it, which made a column's word hard to find). Every
    label sits above its own column, no two overlap, and a line leads up to each far one."""
    keys = "the cat did not cross the road because it was too tired <eos>".split()
    fig = plot_attention_heads(torch.rand(4, 13, 13).softmax(-1), keys, keys, ncols=4)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 4
    for ax in maps:
        (far_axis,) = ax.child_axes
        near = [t for t in ax.get_xticklabels() if t.get_text()]
        far = [t for t in far_axis.get_xticklabels() if t.get_text()]
        assert [t.get_text() for t in near] == keys[0::2] and [t.get_text() for t in far] == keys[1::2]
        top = ax.get_window_extent(renderer).y1
        for columns, labels in ((range(0, 13, 2), near), (range(1, 13, 2), far)):
            boxes = [t.get_window_extent(renderer) for t in labels]
            for column, box in zip(columns, boxes):
                assert box.y0 >= top  # above the map, never below it
                assert abs((box.x0 + box.x1) / 2 - ax.transData.transform((column, 0))[0]) < 1
            assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))  # no overlap within a row
        assert min(t.get_window_extent(renderer).y0 for t in far) > max(t.get_window_extent(renderer).y1 for t in near)
        assert far_axis.xaxis.get_tick_params()["length"] > 0  # the lines up to the far row


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: plot_attention(torch.rand(2, T, S)), r"weights must have shape \(T, S\), got \(2, 5, 7\)"),
        (lambda: plot_attention(torch.rand(T, S), QUERIES[:2]),
         r"query_labels must have one label per query \(T\) \(5\), got 2"),
        (lambda: plot_attention(torch.rand(T, S), key_labels=KEYS[:3]),
         r"key_labels must have one label per key \(S\) \(7\), got 3"),
        (lambda: plot_attention(torch.rand(T, S), mask=torch.ones(S, T, dtype=torch.bool)),
         r"mask of shape \(7, 5\) does not broadcast to the weights' shape \(5, 7\)"),
        (lambda: plot_attention_heads(torch.rand(T, S)), r"weights must have shape \(H, T, S\), got \(5, 7\)"),
        (lambda: plot_attention_heads(torch.rand(H, T, S), ncols=0), "ncols must be a positive int, got 0"),
        (lambda: plot_mask(torch.ones(2, T, S, dtype=torch.bool)), r"mask must have shape \(T, S\), got \(2, 5, 7\)"),
        (lambda: plot_positional_encoding(torch.rand(10)), r"table must have shape \(L, D\), got \(10,\)"),
        (lambda: plot_wavelengths(d_model=7), "d_model must be a positive even int, got 7"),
        (lambda: plot_label_smoothing(vocab_size=5, target=5), r"target must be an int in \[0, vocab_size=5\), got 5"),
        (lambda: plot_attention_cost([1, 2, 3], [1.0, 2.0]),
         r"times_ms must have shape \(n,\) or \(m, n\) with n = len\(lengths\) = 3, got \(1, 2\)"),
        (lambda: plot_softmax_saturation(d_ks=[]), r"d_ks must be a non-empty sequence of positive ints"),
        (lambda: plot_training_curves([{"step": 1, "lr": 0.1}]), "history has no loss or accuracy series"),
    ],
)
def test_bad_shapes_and_values_raise_value_errors_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_non_boolean_mask_is_a_type_error():
    with pytest.raises(TypeError, match="mask must be boolean \\(True = may attend\\), got dtype float32"):
        plot_attention(torch.rand(T, S), mask=torch.ones(T, S))
    with pytest.raises(TypeError, match="mask must be boolean"):
        plot_mask(np.ones((T, S)))
    with pytest.raises(TypeError, match="history must be a list of dicts or a dict of lists, got int"):
        plot_training_curves(3)


def test_plot_mask_shows_allowed_cells_in_light_grey_and_masked_cells_in_the_mask_colour():
    mask = causal_mask(T) & torch.tensor([True, True, True, True, False])  # causal & padding
    fig = plot_mask(mask, QUERIES, QUERIES, title="causal & padding")
    ax = fig.axes[0]
    image = ax.images[0]
    colours = image.to_rgba(image.get_array())
    assert np.allclose(colours[mask.numpy()], rgba(viz.style.LIGHT))
    assert np.allclose(colours[~mask.numpy()], rgba(PALETTE["mask"]))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["may attend", "masked"]
    assert [t.label1.get_text() for t in ax.yaxis.get_major_ticks()] == QUERIES


def test_plot_masks_puts_several_masks_side_by_side_with_one_legend_and_shared_axis_labels():
    padding = torch.tensor([True] * (S - 2) + [False] * 2).expand(T, S)
    fig = viz.plot_masks([padding, padding], ["padding", "again"], QUERIES, KEYS)
    assert [ax.get_title() for ax in fig.axes] == ["padding", "again"]
    assert len(fig.legends) == 1 and fig.get_supxlabel() == "keys" and fig.get_supylabel() == "queries"
    fig.draw_without_rendering()
    assert not any(t.get_visible() and t.get_text() for t in fig.axes[1].get_yticklabels())
    with pytest.raises(ValueError, match=r"masks must share one shape \(T, S\), got \[\(5, 7\), \(5, 5\)\]"):
        viz.plot_masks([padding, causal_mask(T)])
    with pytest.raises(TypeError, match="masks must be a non-empty list"):
        viz.plot_masks([])


# --------------------------------------------------------------------------- positions


def test_plot_positional_encoding_shows_the_table_with_a_colour_bar():
    table = sinusoidal_positional_encoding(50, 16)
    fig = plot_positional_encoding(table)
    assert len(fig.axes) == 2  # heatmap and colour bar
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), table.numpy())
    # i counts (sin, cos) pairs as in the paper's PE(pos, 2i): the axis counts columns
    assert fig.axes[1].get_ylabel() == "PE(pos, column)"
    assert fig.axes[0].get_xlabel() == "column: 2i (sin), 2i + 1 (cos)" and fig.axes[0].get_ylabel() == "position pos"


def test_plot_wavelengths_draws_the_requested_columns_of_the_table():
    fig = plot_wavelengths(d_model=32, length=40, dims=(0, 5, 12))
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3
    table = sinusoidal_positional_encoding(40, 32).numpy()
    for line, d in zip(lines, (0, 5, 12)):
        np.testing.assert_allclose(line.get_ydata(), table[:, d])
    assert "cos" in lines[1].get_label() and "sin" in lines[0].get_label()
    # the legend names columns as the paper's PE(pos, 2i) and PE(pos, 2i+1) do: i counts pairs
    assert lines[0].get_label() == "2i = 0: sin, wavelength 6"
    assert lines[1].get_label() == f"2i + 1 = 5: cos, wavelength {2 * np.pi * 10000 ** (4 / 32):.0f}"  # i = 2
    assert lines[2].get_label() == f"2i = 12: sin, wavelength {2 * np.pi * 10000 ** (12 / 32):.0f}"
    assert fig.axes[0].get_ylabel() == "PE(pos, column)"
    assert plot_wavelengths(d_model=32, length=40, dims=(0, 12)).axes[0].get_ylabel() == "PE(pos, 2i)"
    assert plot_wavelengths(d_model=32, length=40, dims=(1, 13)).axes[0].get_ylabel() == "PE(pos, 2i + 1)"


# --------------------------------------------------------------------------- training


def test_learning_rate_schedule_draws_every_d_model_and_warmup_pair_peaking_at_warmup():
    fig = plot_learning_rate_schedule(d_models=(128, 512, 1024), warmups=(400, 800), steps=2000)
    ax = fig.axes[0]
    curves = [line for line in ax.get_lines() if line.get_label().startswith("d = ")]
    assert len(curves) == 6
    first = curves[0]  # d_model = 128, warmup = 400
    x, y = first.get_xdata(), first.get_ydata()
    assert x[np.argmax(y)] == pytest.approx(400, abs=5)
    assert max(y) == pytest.approx((128 * 400) ** -0.5, rel=1e-2)
    assert [t.get_text() for t in ax.get_legend().get_texts()][0] == "d = 128, warmup 400"


def test_label_smoothing_bars_match_the_loss_target_distribution():
    fig = plot_label_smoothing(vocab_size=6, target=2, smoothing=0.3, labels=list("abcdef"))
    ax = fig.axes[0]
    one_hot, smoothed = ax.containers
    assert [b.get_height() for b in one_hot] == [0, 0, 1, 0, 0, 0]
    heights = np.array([b.get_height() for b in smoothed])
    np.testing.assert_allclose(heights, [0.05, 0.05, 0.75, 0.05, 0.05, 0.05], rtol=1e-6)
    assert heights.sum() == pytest.approx(1.0)
    assert tick_texts(ax.get_xticklabels()) == list("abcdef")
    assert to_hex(smoothed[0].get_facecolor()) not in {c.lower() for c in PALETTE.values()}  # not a Q/K/V role


def test_training_curves_accept_a_list_of_dicts_with_gaps():
    history = [{"step": s, "loss": 4.0 / s, "accuracy": 1 - 1 / s} for s in range(1, 21)]
    for row in history[::5]:
        row["val_loss"], row["exact_match"] = 5.0 / row["step"], 0.5
    history[3]["loss"] = float("nan")
    fig = plot_training_curves(history)
    loss_ax, metric_ax = fig.axes
    lines = {line.get_label(): line for ax in fig.axes for line in ax.get_lines()}
    assert set(lines) == {"loss", "val loss", "accuracy", "exact match"}
    assert len(lines["loss"].get_xdata()) == 19 and len(lines["val loss"].get_xdata()) == 4
    assert list(lines["val loss"].get_xdata()) == [1, 6, 11, 16]
    assert loss_ax.get_ylabel() == "loss" and metric_ax.get_ylabel() == "accuracy"


def test_training_curves_accept_a_dict_of_lists_without_steps_or_metrics():
    fig = plot_training_curves({"loss": [3.0, 2.0, 1.5]})
    assert len(fig.axes) == 1
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == [0, 1, 2]


# --------------------------------------------------------------------------- why sqrt(d_k)


def test_dot_product_variance_grows_like_d_k_and_scaling_keeps_it_near_one():
    fig = plot_dot_product_variance(d_ks=(4, 64, 256), samples=4000, seed=0)
    lines = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["var(q·k)"], [4, 64, 256], rtol=0.1)
    np.testing.assert_allclose(lines["var(q·k / √d_k)"], [1, 1, 1], rtol=0.1)


def test_softmax_saturates_without_scaling_and_is_reproducible():
    a = plot_softmax_saturation(d_ks=(1, 256), num_keys=8, seed=3)
    b = plot_softmax_saturation(d_ks=(1, 256), num_keys=8, seed=3)
    ya = {line.get_label(): list(line.get_ydata()) for line in a.axes[0].get_lines()}
    yb = {line.get_label(): list(line.get_ydata()) for line in b.axes[0].get_lines()}
    assert ya == yb
    raw, scaled = ya["q·k"], ya["q·k / √d_k"]
    assert raw[1] > 0.85 and scaled[1] < 0.5


def test_scaling_argument_puts_both_panels_side_by_side():
    assert len(plot_scaling_argument(d_ks=(1, 16)).axes) == 2


# --------------------------------------------------------------------------- timings


def test_attention_cost_draws_one_labelled_line_per_series():
    fig = plot_attention_cost([64, 128, 256], [[1.0, 3.0, 9.0], [1.0, 2.0, 4.0]], ["recompute", "kv cache"], logy=True)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["recompute", "kv cache"]
    assert list(ax.get_lines()[1].get_ydata()) == [1.0, 2.0, 4.0]
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "sequence length"


@pytest.mark.parametrize(
    "make",
    [
        lambda: plot_attention(torch.rand(T, S)),
        lambda: plot_attention_heads(torch.rand(H, T, S)),
        lambda: plot_mask(causal_mask(T)),
        lambda: plot_positional_encoding(sinusoidal_positional_encoding(20, 8)),
        lambda: plot_wavelengths(64),
        lambda: plot_learning_rate_schedule(steps=500),
        lambda: plot_label_smoothing(),
        lambda: plot_training_curves({"step": [1, 2], "loss": [2.0, 1.0]}),
        lambda: plot_scaling_argument(d_ks=(1, 4)),
        lambda: plot_attention_cost([1, 2], [1.0, 2.0]),
    ],
)
def test_every_figure_renders_to_png(make, tmp_path):
    fig = make()
    assert isinstance(fig, Figure)
    path = tmp_path / "figure.png"
    fig.savefig(path)
    assert path.stat().st_size > 1000


def test_plot_layer_gradient_norms_draws_one_line_per_variant():
    fig = viz.plot_layer_gradient_norms({"post-LN": [0.2, 0.5, 0.9], "pre-LN": [0.6, 0.5, 0.4]})
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["post-LN", "pre-LN"]
    with pytest.raises(ValueError, match="norms must be a non-empty dict"):
        viz.plot_layer_gradient_norms([])


def test_plot_decode_step_times_draws_a_running_median_per_variant():
    fig = viz.plot_decode_step_times({"with cache": [1.0, 9.0, 1.0, 1.0], "recompute": [1.0, 2.0, 3.0, 4.0]},
                                     window=3)
    ax = fig.axes[0]
    cached, full = ax.get_lines()
    assert list(cached.get_ydata()) == [1.0, 5.0, 1.0, 1.0]  # the outlier at step 2 is damped
    assert list(full.get_xdata()) == [1, 2, 3, 4]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["with cache", "recompute"]
    with pytest.raises(ValueError, match="non-empty dict"):
        viz.plot_decode_step_times({})
    with pytest.raises(ValueError, match="window must be a positive int"):
        viz.plot_decode_step_times({"a": [1.0]}, window=0)


def test_plot_table1_scaling_counts_what_the_timed_layers_do_in_their_colours():
    """The right panel draws layer_macs (the GRU's 6 n d², the attention layer's 4 n d² +
    2 n² d), each in its measured series' colour; Table 1's bare terms only when given."""
    lengths, d = [8, 64, 512, 2048], 512
    times = {"attention layer": [1, 2, 30, 130], "attention core": [0.1, 0.2, 6, 90], "GRU": [1, 5, 35, 140]}
    counts = viz.layer_macs(lengths, d)
    fig = viz.plot_table1_scaling(lengths, times, d_model=d)
    left, right = fig.axes
    measured = {line.get_label(): line for line in left.get_lines() if not line.get_label().startswith("_")}
    drawn = {line.get_label(): line for line in right.get_lines() if not line.get_label().startswith("_")}
    assert list(drawn) == ["attention layer  4 n d² + 2 n² d", "attention core  2 n² d", "GRU  6 n d²"]
    for (label, line), name in zip(drawn.items(), counts):
        assert list(line.get_ydata()) == counts[name]
        assert to_hex(line.get_color()) == to_hex(measured[name].get_color())
    assert [t.get_text() for t in right.get_legend().get_texts()] == list(drawn)
    bottom, top = right.get_ylim()
    assert bottom <= min(min(v) for v in counts.values()) and top > max(max(v) for v in counts.values())
    with_terms = viz.plot_table1_scaling(lengths, times, viz.table1_flops(lengths, d), d_model=d)
    labels = [t.get_text() for t in with_terms.axes[1].get_legend().get_texts()]
    assert labels[3:] == ["Table 1: n² d", "Table 1: n d²"]
    with pytest.raises(ValueError, match=r"series\['GRU'\] must have one value per length \(4\)"):
        viz.plot_table1_scaling(lengths, {"GRU": [1, 2]}, d_model=d)
    with pytest.raises(ValueError, match="flops must be None or a non-empty dict"):
        viz.plot_table1_scaling(lengths, times, {}, d_model=d)
