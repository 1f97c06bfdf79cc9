"""The mistakes gallery (transformer_lab.teaching.mistakes): every symptom the slides print
shows its mistake, and every test the slides name fails when the package makes the mistake
(its broken copy swapped in by ``mistakes.made``) and passes when it does not."""

from __future__ import annotations

import math

import pytest
import torch

import transformer_lab as tl
from transformer_lab.teaching import mistakes

import test_attention
import test_decoding
import test_model
import test_multi_head_attention
import test_training

# mistake -> (the test of the suite the gallery names, its arguments, what it raises under the mistake)
CAUGHT_BY = {
    "mask-polarity": (test_multi_head_attention.test_matches_nn_multihead_attention, ("self", True), AssertionError),
    "unshifted-target": (test_training.test_no_position_reads_the_target_token_it_is_scored_on, (), AssertionError),
    "padding-in-loss": (test_training.test_padding_positions_count_for_nothing, (), AssertionError),
    "padding-in-smoothing": (test_training.test_padding_positions_count_for_nothing, (), AssertionError),
    "positions-from-zero": (test_decoding.test_cached_decoder_logits_equal_the_full_forward_pass, (), AssertionError),
    "schedule-at-step-0": (test_training.test_schedule_starts_at_zero_and_scales_with_factor_and_d_model, (),
                           ZeroDivisionError),
    "scheduler-from-step-0": (test_training.test_scheduler_follows_equation_3_update_by_update, (), AssertionError),
    "pre-ln-no-final-norm": (test_model.test_encoder_decoder_stack_matches_nn_transformer, (True,), AssertionError),
    "fp16-minus-1e9-added": (test_attention.test_float16_weights_are_finite_and_a_query_that_sees_nothing_gets_zeros,
                             (), AssertionError),
    "fp16-minus-1e9-filled": (test_attention.test_float16_weights_are_finite_and_a_query_that_sees_nothing_gets_zeros,
                              (), RuntimeError),
    "eval-forgotten": (test_training.test_evaluation_runs_the_model_in_eval_mode_and_restores_its_mode, (),
                       AssertionError),
}


def test_every_mistake_has_the_test_that_catches_it():
    assert set(CAUGHT_BY) == set(mistakes.MISTAKES)


@pytest.mark.parametrize("key", sorted(CAUGHT_BY))
def test_the_named_test_fails_with_the_mistake_and_passes_without_it(key):
    test, args, raised = CAUGHT_BY[key]
    torch.manual_seed(0)
    test(*args)  # the package as it is
    torch.manual_seed(0)
    with mistakes.made(key), pytest.raises(raised):
        test(*args)
    torch.manual_seed(0)
    test(*args)  # and everything was put back


def test_made_swaps_the_broken_copy_in_and_puts_the_package_back():
    original = tl.attention_weights
    with mistakes.made("fp16-minus-1e9-added") as mistake:
        assert tl.attention_weights is mistakes.weights_minus_1e9_added
        assert tl.attention.attention_weights is mistakes.weights_minus_1e9_added
        assert "-1e9" in mistake.wrong_line
    assert tl.attention_weights is original and tl.attention.attention_weights is original
    with pytest.raises(RuntimeError), mistakes.made("eval-forgotten"):
        assert torch.nn.Linear(2, 2).eval().training  # eval() does nothing
        raise RuntimeError("leave the block by an exception")
    assert not torch.nn.Linear(2, 2).eval().training
    with pytest.raises(KeyError, match="key must be one of"):
        with mistakes.made("no-such-mistake"):
            pass


# ----------------------------------------------------------------------------- the symptoms
def test_mask_polarity_sends_query_0_to_the_future_and_leaves_the_last_row_nan():
    s = mistakes.mask_polarity()
    assert s.later[0] == pytest.approx(1.0) and all(math.isnan(w) for w in s.last_row)
    assert s.flipped_later == 0.0
    assert "query 0 → later: 1.00 (must be 0)" in str(s) and "nan nan nan nan" in str(s)


def test_an_unshifted_target_trains_to_a_low_loss_and_decodes_nothing():
    s = mistakes.unshifted_target()
    assert s.loss_unshifted < 0.25 * s.loss_shifted
    assert s.reads_right >= 0.9 and s.writes_right == 0 and s.examples == 32


def test_only_the_package_loss_ignores_the_padding():
    s = mistakes.padding_in_loss()
    package = s.losses["package"]
    assert package[0] == pytest.approx(package[1], abs=1e-5) and s.padding_gradient["package"] == 0.0
    assert abs(s.losses["padding"][0] - s.losses["padding"][1]) > 1e-3
    assert s.padding_gradient["padding"] > 0 and s.padding_gradient["smoothing"] > 0
    assert str(s).splitlines()[1].endswith("  0")


def test_positions_from_zero_change_every_cached_step_but_the_first():
    s = mistakes.positions_with_cache()
    assert s.broken[0] < 1e-5 and min(s.broken[1:]) > 1e-2
    assert max(s.package) < 1e-4


def test_the_schedule_at_step_0_divides_by_zero_or_wastes_the_first_update():
    s = mistakes.schedule_at_step_0()
    assert s.error.startswith("ZeroDivisionError")
    assert s.from_zero[0] == 0.0 and s.from_zero[1:] == pytest.approx(s.package[:-1])
    assert s.package[0] == pytest.approx(tl.noam_learning_rate(1, 512))


def test_without_the_final_norm_a_pre_ln_stack_grows_with_depth():
    s = mistakes.missing_final_norm()
    assert all(a < b for a, b in zip(s.without, s.without[1:])) and s.without[1] > 1.2
    assert s.with_norm == pytest.approx((1.0,) * len(s.depths), abs=1e-3)


def test_minus_1e9_in_float16_raises_or_makes_an_empty_row_nan():
    s = mistakes.fp16_mask_fill()
    assert s.filled.startswith("RuntimeError") and s.minus_1e9 == -math.inf
    assert all(math.isfinite(w) for w in s.added[0]) and all(math.isnan(w) for w in s.added[1])
    assert s.package[1] == (0.0, 0.0, 0.0) and sum(s.package[0]) == pytest.approx(1.0, abs=2e-3)


def test_a_model_left_in_training_mode_answers_differently_each_call():
    s = mistakes.eval_forgotten()
    assert s.train_difference > 1e-2 and s.eval_difference == 0.0
    assert len(set(s.top_probabilities)) == 3


def test_the_symptoms_leave_the_callers_random_stream_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    mistakes.mask_polarity(), mistakes.padding_in_loss(), mistakes.eval_forgotten()
    assert torch.equal(torch.rand(3), expected)
