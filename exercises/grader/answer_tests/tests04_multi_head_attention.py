"""Tests that catch every known mistake of exercise 4: the answer key of test-writing
exercise 4 (`make exercises TESTS=4 SHOW=solution` names this file). The grader's own tests
check that it passes on the package and catches each mistake."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from exercises.grader.testing import under_test
from transformer_lab.interop import to_torch_attention

B, T, S, D, H = 2, 5, 7, 12, 3


@pytest.fixture
def MultiHeadAttention():
    """MultiHeadAttention(d_model, num_heads, d_k=None, d_v=None, dropout=0.0, bias=True);
    forward(query (B, T, D), key (B, S, D), value (B, S, D), mask=None) -> (B, T, D)."""
    return under_test("MultiHeadAttention")


@pytest.fixture
def make_mha(MultiHeadAttention):
    """A seeded module in eval mode with random biases: make_mha(), make_mha(d_k=5, d_v=2),
    make_mha(dropout=0.5)."""
    def make(d_model=D, num_heads=H, **options):
        torch.manual_seed(1)
        module = MultiHeadAttention(d_model, num_heads, **options)
        with torch.no_grad():
            for name, p in module.named_parameters():
                if name.endswith("bias"):
                    p.normal_()
        return module.eval()
    return make


@pytest.fixture
def torch_mha():
    """torch_mha(module) -> nn.MultiheadAttention(batch_first=True) holding module's weights
    (d_k = d_v = d_model / num_heads, with biases)."""
    def build(module: nn.Module) -> nn.MultiheadAttention:
        return to_torch_attention(module).eval()
    return build


@pytest.fixture
def inputs():
    """query (B, T, D), memory (B, S, D) and a padding mask (B, 1, 1, S), True = may attend
    (the last two positions of example 1 are padding)."""
    g = torch.Generator().manual_seed(0)
    padding = torch.ones(B, 1, 1, S, dtype=torch.bool)
    padding[1, ..., -2:] = False
    return torch.randn(B, T, D, generator=g), torch.randn(B, S, D, generator=g), padding


def test_the_output_has_the_queries_shape(make_mha, inputs):
    query, memory, padding = inputs
    out = make_mha(d_k=5, d_v=2)(query, memory, memory, mask=padding)
    assert out.shape == (B, T, D)


def test_equals_pytorchs_multi_head_attention_with_the_same_weights(make_mha, torch_mha, inputs):
    query, memory, padding = inputs
    ours = make_mha()
    expected, _ = torch_mha(ours)(query, memory, memory, key_padding_mask=~padding[:, 0, 0])  # True = blocked
    torch.testing.assert_close(ours(query, memory, memory, mask=padding), expected)
    expected, _ = torch_mha(ours)(memory, memory, memory)  # self-attention, no mask
    torch.testing.assert_close(ours(memory, memory, memory), expected)


def test_editing_a_masked_key_and_value_changes_nothing_and_a_visible_one_does(make_mha, inputs):
    query, memory, padding = inputs
    module = make_mha()
    hidden, visible = memory.clone(), memory.clone()
    hidden[1, -2:] += 1.0  # padding positions of example 1
    visible[1, 0] += 1.0
    before = module(query, memory, memory, mask=padding)
    torch.testing.assert_close(module(query, hidden, hidden, mask=padding), before)
    assert not torch.allclose(module(query, visible, visible, mask=padding)[1], before[1])


def test_all_eight_parameters_are_registered_and_learn(make_mha, inputs):
    query, memory, _ = inputs
    module = make_mha()
    params = list(module.parameters())
    assert len(params) == 8  # w_q, w_k, w_v, w_o: weight and bias each
    module(query, memory, memory).square().sum().backward()
    assert all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in params)


def test_dropout_does_nothing_in_eval_mode(make_mha, inputs):
    query, memory, padding = inputs
    module = make_mha(dropout=0.5)
    torch.testing.assert_close(module(query, memory, memory, mask=padding), module(query, memory, memory, mask=padding))
