"""Section 3.3, equation (2): FFN(x) = max(0, x W1 + b1) W2 + b2, position by position."""

import pytest
import torch
import torch.nn.functional as F

import transformer_lab as tl


def test_equation_2():
    ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=20)
    x = torch.randn(2, 7, 12)
    expected = torch.clamp(x @ ffn.w_1.weight.T + ffn.w_1.bias, min=0) @ ffn.w_2.weight.T + ffn.w_2.bias
    torch.testing.assert_close(ffn(x), expected)


def test_each_position_is_transformed_separately_and_identically():
    ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=20)
    x = torch.randn(2, 7, 12)
    perm = torch.randperm(7)
    torch.testing.assert_close(ffn(x[:, perm]), ffn(x)[:, perm])
    torch.testing.assert_close(ffn(x[:, 3:4]), ffn(x)[:, 3:4])


def test_it_is_two_convolutions_with_kernel_size_one():
    ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=20)
    x = torch.randn(2, 7, 12)
    h = F.conv1d(x.transpose(1, 2), ffn.w_1.weight[:, :, None], ffn.w_1.bias).relu()
    y = F.conv1d(h, ffn.w_2.weight[:, :, None], ffn.w_2.bias).transpose(1, 2)
    torch.testing.assert_close(ffn(x), y)


def test_parameter_count_of_the_base_model_sublayer():
    ffn = tl.PositionwiseFeedForward(d_model=512, d_ff=2048)
    assert tl.count_parameters(ffn) == 2 * 512 * 2048 + 2048 + 512


def test_wrong_width_is_rejected():
    with pytest.raises(ValueError, match="d_model=12"):
        tl.PositionwiseFeedForward(12, 20)(torch.randn(2, 7, 13))
