"""The measurements of the changes since 2017 (transformer_lab.teaching.since2017), on
tiny budgets: what they return, that a model's numbers do not depend on the models trained
beside it, that the cache gives what a fresh run gives, and the key/value cache's bytes."""

import dataclasses
import math

import pytest
import torch

import transformer_lab as tl
from transformer_lab.teaching import cache, since2017
from transformer_lab.teaching.since2017 import Budget

TINY = Budget(max_len=4, num_train=64, num_test=6, steps=4, max_tokens=128, d_model=8, num_heads=2, d_ff=16,
              num_layers=1, warmup_steps=2, curve_every=2)
SOME = ("paper", "pre_ln", "learned", "rotary", "alibi", "mqa", "decoder_only")


@pytest.fixture
def cache_dir(tmp_path):
    cache.set_cache_directory(tmp_path)
    yield tmp_path
    cache.set_cache_directory(None)


@pytest.fixture(scope="module")
def run():
    return since2017.train_since2017(0, TINY, SOME)


def without_times(model: since2017.TrainedModel) -> since2017.TrainedModel:
    return dataclasses.replace(model, step_ms=0.0, step_time_ratio=0.0)


def test_every_change_and_both_runs_without_warm_up_are_trained(run):
    assert list(run.models) == [*SOME, "post_ln_no_warmup", "pre_ln_no_warmup"]
    assert run.threads == 1 and run.seed == 0 and run.budget == TINY
    vocab = 4 + len(TINY.alphabet)
    config = since2017._config(TINY, vocab)
    for key, model in run.models.items():
        base = since2017.NO_WARMUP.get(key, key)
        assert model.parameters == tl.count_parameters(since2017.CHANGES[base].build(config))
        assert len(model.train_loss) == TINY.steps // TINY.curve_every
        assert 0 <= model.held_out.exact_match <= 1 and 0 <= model.held_out.token_accuracy <= 1
        assert model.held_out.examples == TINY.num_test and model.held_out.finite
        assert (model.at_2l is not None) == (key in since2017.POSITION_KINDS.values())
        assert model.step_ms > 0 and model.step_time_ratio > 0
    assert run.model("paper").step_time_ratio == 1.0
    with pytest.raises(ValueError, match=r"key must be one of .*got 'gelu'"):
        run.model("gelu")


def test_a_models_numbers_do_not_depend_on_the_models_beside_it(run):
    alone = since2017.train_since2017(0, TINY, ("paper", "rotary"))
    for key in ("paper", "rotary", "post_ln_no_warmup"):
        assert without_times(alone.model(key)) == without_times(run.model(key))


def test_same_seed_same_numbers_and_another_seed_others(run):
    again = since2017.train_since2017(0, TINY, ("paper",))
    assert without_times(again.model("paper")) == without_times(run.model("paper"))
    other = since2017.train_since2017(1, TINY, ("paper",))
    assert other.model("paper").train_loss != run.model("paper").train_loss


def test_the_cached_run_equals_a_fresh_one_and_is_not_trained_twice(cache_dir, monkeypatch):
    first = since2017.since2017_run(0, TINY, ("paper", "pre_ln"))
    fresh = since2017.train_since2017(0, TINY, ("paper", "pre_ln"))
    assert {k: without_times(m) for k, m in first.models.items()} == \
           {k: without_times(m) for k, m in fresh.models.items()}
    monkeypatch.setattr(since2017, "train_since2017", lambda *a, **k: pytest.fail("trained again"))
    assert since2017.since2017_run(0, TINY, ("paper", "pre_ln")) == first
    assert len(list(cache_dir.glob("since2017-run-*.pt"))) == 1


def test_the_tables_read_the_run(cache_dir, monkeypatch, run):
    monkeypatch.setattr(since2017, "since2017_run", lambda seed, budget, changes: run)
    compared = since2017.changes_compared(0, TINY, SOME)
    assert [r.key for r in compared.rows] == list(SOME)
    paper = compared.row("paper")
    assert (paper.parameter_ratio, paper.step_time_ratio, paper.exact_match_change, paper.loss_change) == (1, 1, 0, 0)
    rotary = compared.row("rotary")
    assert rotary.source == "Su et al., 2021" and rotary.replaces == "sinusoids"
    assert rotary.loss_change == pytest.approx(run.model("rotary").held_out.loss - run.model("paper").held_out.loss)
    positions = since2017.positions_beyond_training(0, TINY, SOME)
    assert [r.positions for r in positions.rows] == ["sinusoidal", "learned", "rotary", "alibi"]
    assert positions.trained_lengths == (1, 4) and positions.tested_length == 8
    assert positions.rows[2].exact_match_2l == run.model("rotary").at_2l.exact_match
    warmup = since2017.warmup_and_layer_norm(0, TINY, SOME)
    assert [(r.norm, r.warmup) for r in warmup.rows] == [("post-LN", True), ("post-LN", False),
                                                          ("pre-LN", True), ("pre-LN", False)]
    assert warmup.row("pre-LN", False).train_loss == run.model("pre_ln_no_warmup").train_loss
    assert warmup.peak_learning_rate == pytest.approx(0.5 * (8 * 2) ** -0.5)
    with pytest.raises(ValueError, match="norm must be 'post-LN' or 'pre-LN'"):
        warmup.row("RMSNorm", True)


def test_without_warm_up_the_first_step_takes_the_peak_rate_then_the_same_decay():
    budget = Budget(warmup_steps=10, d_model=16, lr_factor=1.0)
    rates = {}
    for warmup in (True, False):
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        schedule = since2017._schedule(optimizer, budget, warmup)
        rates[warmup] = []
        for _ in range(20):
            rates[warmup].append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            schedule.step()
    peak = tl.noam_learning_rate(10, 16, 10)
    assert rates[True][0] == pytest.approx(tl.noam_learning_rate(1, 16, 10)) and rates[True][9] == pytest.approx(peak)
    assert rates[False][:10] == pytest.approx([peak] * 10)
    assert rates[False][10:] == pytest.approx(rates[True][10:])


def test_a_diverged_model_is_reported_not_raised():
    config = since2017._config(TINY, 14)
    model = tl.Transformer(config)
    with torch.no_grad():
        model.output_projection.bias.fill_(float("nan"))
    data, _, held_out, _ = since2017._task(TINY, 0)
    evaluation = since2017.evaluate_model(model, held_out)
    assert evaluation == since2017.Evaluation(0.0, 0.0, math.inf, TINY.num_test, finite=False)


def test_the_key_value_cache_holds_g_heads_per_token_and_the_costs_are_timed(cache_dir):
    costs = since2017.kv_cache_costs(0, d_model=16, num_heads=4, num_layers=2, batch=2, short_context=4,
                                     long_context=16, rounds=2)
    assert [r.attention for r in costs.rows] == ["multi-head", "grouped-query", "multi-query"]
    head_dim, float32 = 16 // 4, 4
    assert [r.bytes_per_token for r in costs.rows] == [2 * 2 * g * head_dim * float32 for g in (4, 2, 1)]
    assert [r.bytes_ratio for r in costs.rows] == [1.0, 0.5, 0.25]
    assert costs.rows[0].time_ratio_long == 1.0 and all(r.step_ms_long > 0 for r in costs.rows)
    assert since2017.kv_cache_costs(0, d_model=16, num_heads=4, num_layers=2, batch=2, short_context=4,
                                    long_context=16, rounds=2) == costs  # from the cache


def test_bad_budgets_and_arguments_are_named():
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        Budget(steps=0)
    with pytest.raises(ValueError, match=r"num_heads must be even \(grouped-query attention uses"):
        Budget(num_heads=3)
    with pytest.raises(ValueError, match=r"changes must start with 'paper' and name each change once"):
        since2017.train_since2017(0, TINY, ("rotary", "paper"))
    with pytest.raises(ValueError, match=r"changes must be one of .*got 'flash'"):
        since2017.train_since2017(0, TINY, ("paper", "flash"))
    with pytest.raises(TypeError, match="seed must be an int, got str"):
        since2017.train_since2017("0", TINY)
