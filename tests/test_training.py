"""Section 5: the learning-rate schedule, equation (3), and label smoothing (5.4)."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl


def test_schedule_rises_linearly_then_decays_as_inverse_square_root():
    lr = [tl.noam_learning_rate(s, 512, warmup_steps=4000) for s in range(1, 16001)]
    peak = max(range(len(lr)), key=lr.__getitem__) + 1
    assert peak == 4000
    assert lr[3999] == pytest.approx((512 * 4000) ** -0.5)
    assert lr[1999] == pytest.approx(lr[999] * 2)  # linear warm-up
    assert lr[15999] == pytest.approx(lr[3999] / 2)  # 4x the steps, half the rate


def test_schedule_starts_at_zero_and_scales_with_factor_and_d_model():
    assert tl.noam_learning_rate(0, 512) == 0.0
    assert tl.noam_learning_rate(100, 512, factor=2.0) == pytest.approx(2 * tl.noam_learning_rate(100, 512))
    assert tl.noam_learning_rate(100, 128) == pytest.approx(2 * tl.noam_learning_rate(100, 512))
    with pytest.raises(ValueError, match="warmup_steps must be a positive int"):
        tl.noam_learning_rate(1, 512, warmup_steps=0)


@settings(max_examples=25, deadline=None)
@given(smoothing=st.floats(0.0, 0.9), seed=st.integers(0, 1000))
def test_label_smoothing_equals_pytorch_cross_entropy(smoothing, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(2, 5, 11, generator=g) * 3
    target = torch.randint(0, 11, (2, 5), generator=g)
    target[0, -2:] = 0  # padding
    ours = tl.LabelSmoothingLoss(smoothing, ignore_index=0)(logits, target)
    theirs = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), ignore_index=0, label_smoothing=smoothing)
    torch.testing.assert_close(ours, theirs)


def test_padding_positions_count_for_nothing():
    loss = tl.LabelSmoothingLoss(0.1, ignore_index=0)
    logits, target = torch.randn(1, 4, 7), torch.tensor([[3, 4, 0, 0]])
    changed = logits.clone()
    changed[0, 2:] = torch.randn(2, 7) * 10
    torch.testing.assert_close(loss(logits, target), loss(changed, target))


def test_smoothed_target_distribution():
    q = tl.LabelSmoothingLoss(0.1).target_distribution(torch.tensor([3]), vocab_size=10)
    torch.testing.assert_close(q.sum(-1), torch.ones(1))
    assert q[0, 3].item() == pytest.approx(0.9 + 0.01)
    assert q[0, 0].item() == pytest.approx(0.01)


def test_the_best_prediction_under_smoothing_is_not_one_hot():
    # "This hurts perplexity, as the model learns to be more unsure": the loss is lowest
    # when the model predicts the smoothed distribution, not the one-hot target.
    loss = tl.LabelSmoothingLoss(0.1, ignore_index=-1)
    target = torch.tensor([[3]])
    q = loss.target_distribution(target, 10)
    confident = torch.full((1, 1, 10), -20.0)
    confident[0, 0, 3] = 20.0
    assert loss(q.log(), target) < loss(confident, target)


def test_shape_mismatch_is_named():
    with pytest.raises(ValueError, match=r"logits must have shape target.shape \+ \(V,\)"):
        tl.LabelSmoothingLoss()(torch.randn(2, 5, 7), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="smoothing"):
        tl.LabelSmoothingLoss(1.0)
