"""Test-writing exercise 4: the tests that catch a wrong multi-head attention (Section 3.2.2).
Check them with `make exercises TESTS=4`.

Here you do not write ``MultiHeadAttention`` (exercise 4): you write the tests that would
catch every wrong version of it. The grader runs your tests against the package's module
(they must all pass there: a test that fails on correct code is a false alarm) and against
every known mistake of exercise 4 (each should make a test fail), and says which mistakes
your tests catch and, for each survivor, what property would catch it.

Rules of the game: build the module under test only with the fixture ``make_mha`` (or the
class from ``MultiHeadAttention``): the grader swaps it. Check properties (masked keys change
nothing, self-attention without positions is permutation-equivariant, every parameter learns)
or compare with PyTorch's own ``nn.MultiheadAttention`` holding the same weights (the fixture
``torch_mha``; mind its masks: True = blocked, the opposite of this project's). A test that
compares with transformer_lab's own MultiHeadAttention, the answer key, is not counted.

Run them alone with ``pytest exercises/tests04_multi_head_attention.py``.
"""

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


# Your tests below. Ideas: the same output as torch_mha(module) (flip the mask for it);
# editing a masked key changes nothing; parameters and their gradients; dropout in eval mode.
