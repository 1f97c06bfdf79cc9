"""Table 1's cost terms, counted and measured (teaching.scaling): the counts are exact,
the slope and crossover helpers recover known power laws; timings only by their shape."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_lab.teaching import scaling


def test_table1_terms_cross_exactly_at_n_equals_d():
    lengths = [128, 256, 512, 1024, 2048]
    flops = scaling.table1_flops(lengths, d_model=512)
    attention, recurrent = flops.values()
    assert [a < r for a, r in zip(attention, recurrent)] == [True, True, False, False, False]
    assert attention[2] == recurrent[2] == 512**3


@pytest.mark.parametrize("exponent", [1.0, 2.0, 1.5])
def test_loglog_slope_recovers_the_exponent_of_a_power_law(exponent):
    lengths = [8, 64, 512, 4096]
    assert scaling.loglog_slope(lengths, [3.0 * n**exponent for n in lengths]) == pytest.approx(exponent)


def test_power_law_crossover_finds_where_two_power_laws_meet():
    lengths = [100, 200, 400, 800]
    quadratic = [n * n * 1e-3 for n in lengths]  # equals 0.5 n at n = 500
    linear = [0.5 * n for n in lengths]
    assert scaling.power_law_crossover(lengths, quadratic, linear) == pytest.approx(500)
    assert scaling.power_law_crossover(lengths, linear, [2 * v for v in linear]) == math.inf


def test_loglog_slope_rejects_bad_input():
    with pytest.raises(ValueError, match="same length >= 2"):
        scaling.loglog_slope([1, 2], [1])
    with pytest.raises(ValueError, match="positive"):
        scaling.loglog_slope([1, 2], [0, 1])


def test_attention_vs_recurrence_gives_one_time_per_length_and_restores_threads():
    before = torch.get_num_threads()
    times = scaling.attention_vs_recurrence([4, 8], d_model=16, num_heads=2, repeats=1)
    assert set(times) == {"attention layer", "attention core", "GRU"}
    assert all(len(v) == 2 and min(v) > 0 for v in times.values())
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads must be a positive int, got 0"):
        scaling.attention_vs_recurrence([4], threads=0)


def test_multi_head_cost_does_not_depend_on_the_number_of_heads():
    """Section 3.2.2: 'the total computational cost is similar to that of single-head
    attention with full dimensionality' (the ch08 slide)."""
    costs = {h: scaling.multi_head_macs(50, 512, h) for h in (1, 8, 16)}
    assert len({tuple(c.values()) for c in costs.values()}) == 1
    assert costs[8] == {"projections": 4 * 50 * 512 * 512, "attention": 2 * 50 * 50 * 512}
    with pytest.raises(ValueError, match="d_model=512 must be divisible by num_heads=3"):
        scaling.multi_head_macs(50, 512, 3)


def test_cached_step_work_grows_linearly_with_the_position():
    """Key/value cache slide: per-step attention work is O(t d) on top of constant weights."""
    steps = [scaling.cached_step_macs(512, 2048, 2, 100, position=t, src_len=64) for t in (1, 513, 1025)]
    assert steps[0]["weights"] == steps[2]["weights"] == 2 * (6 * 512**2 + 2 * 512 * 2048) + 512 * 100
    growth = [b["attention"] - a["attention"] for a, b in zip(steps, steps[1:])]
    assert growth[0] == growth[1] == 2 * 2 * 512 * 512
    # the first step also projects the memory into cross-attention keys and values, once
    assert steps[0]["memory"] == 2 * 2 * 64 * 512 * 512 and steps[1]["memory"] == steps[2]["memory"] == 0
    first, last = (sum(s.values()) for s in (steps[0], steps[2]))
    assert first > last  # at S = 64 the memory's projection outweighs 1,024 positions of attention
    tiny = scaling.cached_step_macs(64, 256, 2, 100, position=256, src_len=64)
    assert sum(tiny.values()) < 300_000  # microseconds of arithmetic: per-op overhead dominates
    with pytest.raises(ValueError, match="position must be a positive int"):
        scaling.cached_step_macs(64, 256, 2, 100, position=0, src_len=4)


def test_attention_vs_recurrence_leaves_the_global_random_state_alone():
    """A deck cell that measures (cold) or reads the cache (warm) must leave later cells
    the same random numbers."""
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    scaling.attention_vs_recurrence([4], d_model=8, num_heads=2, repeats=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("length", [6, 40])  # below and above d_model = 20
def test_layer_macs_match_what_pytorch_counts_in_the_timed_layers(length):
    """An independent count: torch's FlopCounterMode (2 FLOPs per multiply-add) over the
    matrix products each timed layer dispatches, nn.GRU's included. The math attention
    path is forced because the counter has no formula for the fused CPU kernel; it does
    the same products (Q K^T and the weights times V)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from transformer_lab import MultiHeadAttention

    d, h = 20, 4
    x = torch.randn(1, length, d)
    q, k, v = (torch.randn(1, h, length, d // h) for _ in range(3))
    layers = {"attention layer": lambda: MultiHeadAttention(d, h).eval()(x, x, x),
              "attention core": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
              "GRU": lambda: torch.nn.GRU(d, d, batch_first=True)(x)}
    counted = {}
    for name, run in layers.items():
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
            run()
        counted[name] = counter.get_total_flops() // 2
    assert counted == {name: values[0] for name, values in scaling.layer_macs([length], d).items()}
    assert counted["GRU"] == 6 * length * d * d  # three gates, each W x_t and U h_(t-1)


def test_the_attention_layer_and_the_gru_do_equal_work_at_n_equals_d():
    d = 512
    assert scaling.macs_crossover("attention layer", "GRU", d) == d
    assert scaling.macs_crossover("GRU", "attention layer", d) == d
    assert scaling.macs_crossover("attention core", "GRU", d) == 3 * d
    assert scaling.macs_crossover("attention layer", "attention core", d) == math.inf  # 4 n d² apart
    counts = scaling.layer_macs([d // 2, d, 3 * d, 4 * d], d)
    layer, core, gru = counts["attention layer"], counts["attention core"], counts["GRU"]
    assert layer[1] == gru[1] and core[2] == gru[2]
    assert layer[0] < gru[0] and layer[3] > gru[3]
    assert layer[0] > scaling.table1_flops([d // 2], d)["self-attention  n² d"][0]  # the projections count too
    with pytest.raises(ValueError, match="first must be one of"):
        scaling.macs_crossover("LSTM", "GRU")
    with pytest.raises(ValueError, match="same count everywhere"):
        scaling.macs_crossover("GRU", "GRU")


def test_mac_rates_divide_the_counts_by_the_measured_time():
    lengths, d = [8, 64], 32
    counts = scaling.layer_macs(lengths, d)
    one_gmac_per_s = {name: [m / 1e9 * 1e3 for m in counts[name]] for name in ("GRU", "attention layer")}
    rates = scaling.mac_rates(lengths, one_gmac_per_s, d)
    assert set(rates) == {"GRU", "attention layer"}
    assert all(r == pytest.approx(1.0) for values in rates.values() for r in values)
    half_speed = scaling.mac_rates(lengths, {"GRU": [2 * t for t in one_gmac_per_s["GRU"]]}, d)
    assert half_speed["GRU"] == pytest.approx([0.5, 0.5])
    with pytest.raises(ValueError, match="times_ms keys must be among"):
        scaling.mac_rates(lengths, {"attention": [1.0, 1.0]}, d)
    with pytest.raises(ValueError, match=r"times_ms\['GRU'\] must have one positive time per length \(2\)"):
        scaling.mac_rates(lengths, {"GRU": [1.0]}, d)
