"""The paper's reported results as data (teaching.paper) and the charts that draw them
(teaching.plots_paper): the rows are the paper's, and each chart shows exactly its rows."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from transformer_lab.teaching import paper, plot_table2, plot_table3  # noqa: E402
from transformer_lab.teaching.plots_paper import table3_label  # noqa: E402


def test_table2_has_the_papers_ten_systems_and_the_transformer_leads_en_de():
    assert len(paper.TABLE2) == 10
    big = paper.table2_row("Transformer (big)")
    assert (big.bleu_en_de, big.bleu_en_fr, big.cost_en_de) == (28.4, 41.8, 2.3e19)
    best = paper.table2_best_previous("en_de")
    assert best.model == "ConvS2S Ensemble" and best.bleu_en_de == 26.36
    assert round(big.bleu_en_de - best.bleu_en_de, 1) == 2.0  # "by over 2 BLEU" (abstract)
    assert paper.table2_best_previous("en_fr").model == "ConvS2S Ensemble"


def test_table2_base_beats_every_earlier_en_de_model_at_under_a_third_of_the_cheapest_cost():
    base = paper.table2_row("Transformer (base)")
    earlier = [r for r in paper.TABLE2 if not r.ours]
    assert all(base.bleu_en_de > r.bleu_en_de for r in earlier if r.bleu_en_de is not None)
    cheapest = min(r.cost_en_de for r in earlier if r.cost_en_de)
    assert cheapest == 9.6e18 and cheapest / base.cost_en_de > 2.9


def test_table2_rejects_an_unknown_pair_or_model():
    with pytest.raises(ValueError, match="pair must be 'en_de' or 'en_fr', got 'de'"):
        paper.table2_best_previous("de")
    with pytest.raises(ValueError, match="model must be one of"):
        paper.table2_row("LSTM")


def test_table3_effects_are_differences_from_the_base_row():
    effects = paper.table3_effects(("A",))
    assert [row.change for row, _, _ in effects][0] == "h=1, d_k=d_v=512"
    assert effects[0][1:] == (-0.9, 0.37)  # 24.9 - 25.8 BLEU, 5.29 - 4.92 perplexity
    assert len(paper.table3_effects()) == 18  # rows A-E, without base and big


def test_table3_worst_and_best_rows_are_the_ones_the_slides_name():
    effects = paper.table3_effects(("A", "B", "D", "E"))
    worst = min(effects, key=lambda e: e[1])
    assert worst[0].change == "P_drop=0.0" and worst[1] == -1.2
    size = paper.table3_effects(("C", "big"))
    assert min(size, key=lambda e: e[1])[0].change == "N=2"
    assert max(size, key=lambda e: e[1])[0].group == "big"
    with pytest.raises(ValueError, match=r"groups must be among"):
        paper.table3_effects(("F",))


def test_table3_sizes_grow_with_the_model():
    sized = {row.change: row.params_m for row in paper.TABLE3 if row.group == "C"}
    assert sized["N=2"] < sized["N=4"] < paper.table3_base().params_m < sized["N=8"]


def test_table4_best_by_training_picks_the_top_other_parser_per_regime():
    best = {regime: (other, ours) for regime, other, ours in paper.table4_best_by_training()}
    assert list(best) == ["WSJ only", "semi-supervised", "multi-task", "generative"]
    (other,), ours = best["WSJ only"]
    assert other.parser == "Dyer et al. (2016)" and other.f1 == 91.7 and ours.f1 == 91.3
    others, ours = best["semi-supervised"]  # Section 6.3's comparison: two parsers tie at 92.1
    assert [o.parser for o in others] == ["McClosky et al. (2006)", "Vinyals & Kaiser et al. (2014)"]
    assert {o.f1 for o in others} == {92.1} and ours.f1 == 92.7
    assert best["generative"][1] is None


def test_table2_chart_plots_every_reported_cell_and_labels_every_row():
    fig = plot_table2(paper.TABLE2)
    de, fr, cost = fig.axes[:3]
    assert [t.get_text() for t in de.get_yticklabels()] == [r.model for r in paper.TABLE2]
    assert sorted(line.get_xdata()[0] for line in de.lines) == sorted(
        r.bleu_en_de for r in paper.TABLE2 if r.bleu_en_de is not None)
    n_costs = sum((r.cost_en_de is not None) + (r.cost_en_fr is not None) for r in paper.TABLE2)
    assert len(cost.lines) == n_costs and cost.get_xscale() == "log"
    assert len(fr.lines) == sum(r.bleu_en_fr is not None for r in paper.TABLE2)


def test_table3_chart_bars_are_the_datas_differences_and_its_longest_bar_the_worst_row():
    rows = [row for row, _, _ in paper.table3_effects(("C", "big"))]
    fig = plot_table3(rows)
    bleu = fig.axes[0]
    widths = [bar.get_width() for bar in bleu.patches]
    assert widths == pytest.approx([r.bleu - 25.8 for r in rows])
    labels = [t.get_text() for t in bleu.get_yticklabels()]
    assert labels[widths.index(min(widths))] == "(C) N=2, 36M"
    assert labels[widths.index(max(widths))] == "big model, 213M" == table3_label(rows[-1])


def test_charts_reject_rows_of_the_wrong_kind():
    with pytest.raises(TypeError, match="rows must be a non-empty sequence of Table2Row"):
        plot_table2(paper.TABLE3)
    with pytest.raises(TypeError, match="rows must be a non-empty sequence of Table3Row"):
        plot_table3([])
