"""Timing helpers behind the deck's speed figures: shapes and arguments, never timings."""

import pytest
import torch

import transformer_lab as tl
from transformer_lab.teaching import speed


def test_median_times_runs_every_function_warmup_plus_repeats_times():
    calls = {"a": 0, "b": 0}

    def bump(name):
        return lambda: calls.__setitem__(name, calls[name] + 1)

    times = speed.median_times({"a": bump("a"), "b": bump("b")}, repeats=3, warmup=2)
    assert calls == {"a": 5, "b": 5}
    assert set(times) == {"a", "b"} and all(t >= 0 for t in times.values())


def test_attention_cost_and_paths_give_one_time_per_length():
    cost = speed.attention_cost([8, 16], d_model=8, repeats=1)
    assert set(cost) == {"attention", "linear"} and all(len(v) == 2 for v in cost.values())
    paths = speed.attention_paths([8, 16], heads=2, d_k=4, batch=1, repeats=1)
    assert set(paths) == {"explicit", "fused", "PyTorch SDPA"} and all(len(v) == 2 for v in paths.values())


@pytest.mark.parametrize("use_cache", [True, False])
def test_decode_step_times_times_every_step_even_past_eos(use_cache):
    model = tl.Transformer(tl.TransformerConfig.tiny(20, max_len=32)).eval()
    with torch.no_grad():
        model.output_projection.bias.fill_(-1e4)
        model.output_projection.bias[tl.EOS_ID] = 1e4  # every step predicts EOS
    times = speed.decode_step_times(model, torch.randint(4, 20, (1, 5)), 12, use_cache=use_cache)
    assert len(times) == 12 and all(t > 0 for t in times)


def test_decode_step_times_rejects_a_batch_and_too_many_tokens():
    model = tl.Transformer(tl.TransformerConfig.tiny(20, max_len=16)).eval()
    with pytest.raises(ValueError, match=r"src must have shape \(1, S\)"):
        speed.decode_step_times(model, torch.randint(4, 20, (2, 5)), 4)
    with pytest.raises(ValueError, match="new_tokens must be in"):
        speed.decode_step_times(model, torch.randint(4, 20, (1, 5)), 16)
