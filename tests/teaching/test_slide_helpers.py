"""Claims about the small helpers that put numbers and figures on slides: markdown tables,
text enlarged to slide size, and the vocabulary trade-off figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from extras import needs  # noqa: E402
from transformer_lab import teaching as tt  # noqa: E402
from transformer_lab.teaching.style import PALETTE  # noqa: E402


def test_markdown_table_aligns_labels_left_and_numbers_right():
    table = tt.markdown_table(["", "mean square", "std"], [("positions", "0.500", "0.669")])
    assert table == "|  | mean square | std |\n|:--|--:|--:|\n| positions | 0.500 | 0.669 |\n"


def test_markdown_table_names_a_row_of_the_wrong_width():
    with pytest.raises(ValueError, match=r"rows\[1\] must have 2 cells, one per column, got 3"):
        tt.markdown_table(["a", "b"], [(1, 2), (1, 2, 3)])
    with pytest.raises(ValueError, match=r"align must have one of l, c, r per column \(2\), got 'x'"):
        tt.markdown_table(["a", "b"], [], align="x")


@needs("pypandoc")   # pandoc reads the widths: the [deck] extra
def test_markdown_table_widths_set_the_columns_pandoc_draws():
    long = "a cell long enough to make the table wrap, so that pandoc reads the widths " * 2
    table = tt.markdown_table(["item", "text"], [("x", long)], align="ll", widths=[1, 3])
    assert table.splitlines()[1] == "|:--|:--------|"
    import pypandoc

    html = pypandoc.convert_text(table, "html", format="markdown")
    assert re.findall(r'<col style="width: (\d+)%" />', html) == ["25", "75"]
    with pytest.raises(ValueError, match=r"widths must be one positive int per column \(2\), got \[1\]"):
        tt.markdown_table(["a", "b"], [], widths=[1])


def test_enlarge_text_raises_small_text_and_leaves_large_text():
    fig = Figure()
    ax = fig.subplots()
    ax.set_title("big", fontsize=30)
    ax.set_xlabel("small", fontsize=8)
    tt.enlarge_text(fig, 16)
    assert ax.title.get_fontsize() == 30
    assert ax.xaxis.label.get_fontsize() == 16
    assert min(t.get_fontsize() for t in fig.findobj(Text)) >= 16
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got Axes"):
        tt.enlarge_text(ax)


def test_vocabulary_tradeoff_draws_one_neutral_line_per_text_with_slide_sized_text():
    fig = tt.plot_vocabulary_tradeoff([30, 60, 130], {"train": [90, 60, 30], "held out": [80, 55, 35]},
                                      {"train": 17.0, "held out": 12.0})
    ax = fig.axes[0]
    solid = [line for line in ax.lines if line.get_linestyle() == "-"]
    assert [list(line.get_ydata()) for line in solid] == [[90, 60, 30], [80, 55, 35]]
    assert {line.get_color() for line in solid}.isdisjoint({PALETTE[k] for k in ("query", "key", "value", "mask")})
    assert sorted(line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--") == [12.0, 17.0]
    assert ax.get_xscale() == "log"
    assert min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text()) >= 15


def test_vocabulary_tradeoff_names_a_series_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"mean_tokens\['a'\] must have one value per vocabulary size \(3\), got 2"):
        tt.plot_vocabulary_tradeoff([1, 2, 3], {"a": [1, 2]})
