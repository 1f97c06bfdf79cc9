"""Claims about the worked examples (transformer_lab.teaching.by_hand): one head step by step
equals the package's attention, the layer-norm equation equals nn.LayerNorm, and the LaTeX
matrices show the tensors' numbers rounded to two decimals."""

from __future__ import annotations

import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl
from transformer_lab import teaching as tt


def numbers_in(latex: str) -> list[list[float]]:
    body = re.search(r"\\begin\{bmatrix\}(.*)\\end\{bmatrix\}", latex).group(1)
    return [[float(cell) for cell in row.split("&")] for row in body.split(r"\\")]


# --------------------------------------------------------------------------- LaTeX


@pytest.mark.parametrize(
    "value, text",
    [(2.0, "2"), (0.5, "0.5"), (0.7071, "0.71"), (-0.004, "0"), (-1.25, "-1.25"), (12.0, "12"), (0.996, "1")],
)
def test_format_number_rounds_to_two_decimals_and_drops_trailing_zeros(value, text):
    assert tt.format_number(value) == text


def test_bmatrix_writes_rows_and_columns_in_order():
    t = torch.tensor([[1.0, 0.5, -2.0], [0.123, 4.0, 1 / 3]])  # (2, 3): unequal, so a transpose fails
    assert tt.bmatrix(t) == r"\begin{bmatrix}1 & 0.5 & -2 \\ 0.12 & 4 & 0.33\end{bmatrix}"
    assert tt.bmatrix(torch.tensor([1.0, 2.0])) == r"\begin{bmatrix}1 & 2\end{bmatrix}"


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_bmatrix_numbers_are_the_tensor_rounded(rows, cols, seed):
    t = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)) * 5
    shown = torch.tensor(numbers_in(tt.bmatrix(t)), dtype=torch.float64)
    torch.testing.assert_close(shown, t.double(), atol=0.005 + 1e-9, rtol=0)


def test_bmatrix_rejects_what_is_not_a_matrix():
    with pytest.raises(ValueError, match=r"t must be a vector or a matrix .* got shape \(1, 2, 3\)"):
        tt.bmatrix(torch.zeros(1, 2, 3))
    with pytest.raises(TypeError, match="t must be a torch.Tensor, got list"):
        tt.bmatrix([[1, 2]])


def test_math_span_colours_with_the_theme_classes():
    assert tt.math_span("Q", "query") == r"[$\displaystyle Q$]{.query}"
    assert tt.math_span("x") == r"$\displaystyle x$"
    with pytest.raises(ValueError, match=r"role must be one of \('query', 'key', 'value', 'mask'\) or None, got 'q'"):
        tt.math_span("Q", "q")


# --------------------------------------------------------------------------- one head


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 6), D=st.integers(1, 7), K=st.integers(1, 5), V=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_one_head_steps_equal_the_package_attention(T, D, K, V, seed):
    g = torch.Generator().manual_seed(seed)
    x, w_q, w_k, w_v = (torch.randn(*shape, generator=g) for shape in [(T, D), (D, K), (D, K), (D, V)])
    head = tt.one_head_steps(x, w_q, w_k, w_v)
    # every step against a computation of its own (einsum, float64), then the package's
    # explicit weights and PyTorch's F.scaled_dot_product_attention (its math path on 2-D inputs)
    q64, k64, v64 = (torch.einsum("td,dk->tk", x.double(), w.double()) for w in (w_q, w_k, w_v))
    scores64 = torch.einsum("tk,sk->ts", q64, k64)
    for step, reference in [(head.q, q64), (head.k, k64), (head.v, v64), (head.scores, scores64),
                            (head.scaled, scores64 / math.sqrt(K)),
                            (head.weights, torch.softmax(scores64 / math.sqrt(K), dim=-1)),
                            (head.output, torch.softmax(scores64 / math.sqrt(K), dim=-1) @ v64)]:
        torch.testing.assert_close(step, reference.float())
    torch.testing.assert_close(head.weights, tl.attention_weights(head.q, head.k))
    torch.testing.assert_close(head.output, tl.scaled_dot_product_attention(head.q, head.k, head.v))
    assert head.output.shape == (T, V)


def test_one_head_steps_name_a_bad_shape():
    x = torch.zeros(3, 4)
    with pytest.raises(ValueError, match=r"w_k must have shape \(D=4, d_k or d_v\), got \(5, 2\)"):
        tt.one_head_steps(x, torch.zeros(4, 2), torch.zeros(5, 2), torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"w_q and w_k must share d_k, got w_q \(4, 2\) and w_k \(4, 3\)"):
        tt.one_head_steps(x, torch.zeros(4, 2), torch.zeros(4, 3), torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"x must have shape \(T, D\), got \(4,\)"):
        tt.one_head_steps(torch.zeros(4), torch.zeros(4, 2), torch.zeros(4, 2), torch.zeros(4, 2))


# --------------------------------------------------------------------------- layer norm


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=0, max_size=2), D=st.integers(2, 16), seed=st.integers(0, 2**16))
def test_layer_norm_equals_nn_layer_norm(shape, D, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, D, generator=g) * 3 + 1
    ln = torch.nn.LayerNorm(D)
    with torch.no_grad():
        ln.weight.copy_(torch.randn(D, generator=g))
        ln.bias.copy_(torch.randn(D, generator=g))
        torch.testing.assert_close(tt.layer_norm(x, ln.weight, ln.bias, eps=ln.eps), ln(x))
        torch.testing.assert_close(tt.layer_norm_steps(x, ln.weight, ln.bias, eps=ln.eps).output, ln(x))


def test_layer_norm_normalises_each_position_over_its_features_not_the_batch():
    x = torch.tensor([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])  # same pattern at two scales
    y = tt.layer_norm(x, torch.ones(3), torch.zeros(3), eps=0.0)
    torch.testing.assert_close(y[0], y[1])
    torch.testing.assert_close(y.mean(-1), torch.zeros(2), atol=1e-6, rtol=0)
    torch.testing.assert_close(y.pow(2).mean(-1), torch.ones(2))  # variance divides by D


def test_layer_norm_names_a_gain_of_the_wrong_size():
    with pytest.raises(ValueError, match=r"gain must have shape \(D,\) = \(4,\), got torch.Size\(\[3\]\)"):
        tt.layer_norm(torch.zeros(2, 4), torch.ones(3), torch.zeros(4))


# --------------------------------------------------------------------------- a check's line


@pytest.mark.parametrize("dtype", list(tt.TOLERANCES))
def test_the_tolerances_are_assert_close_s_own(dtype):
    from torch.testing._comparison import default_tolerances

    assert tt.TOLERANCES[dtype] == default_tolerances(dtype)


def test_difference_line_shows_the_measured_gap_and_the_tests_bound():
    expected = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    ours = expected + torch.tensor([[0.0, 3e-6], [-2.5e-5, 0.0]])
    line = tt.difference_line(ours, expected)
    assert line == ("largest difference: 2.5e-05\n"
                    "the tests' bound: 1e-05 + 1.3e-06 × |expected| ≥ 1.13e-05 (assert_close, float32)")
    # the gap it prints is the one assert_close judges: 2.5e-5 > 1e-5 + 1.3e-6 x 3
    with pytest.raises(AssertionError):
        torch.testing.assert_close(ours, expected)
    assert tt.difference_line(expected.double(), expected.double(), "max difference", sep="; ") == \
        "max difference: 0.0e+00; the tests' bound: 1e-07 + 1e-07 × |expected| ≥ 2.00e-07 (assert_close, float64)"
    # a lower bound is rounded down, never up: 1e-5 + 1.3e-6 x 0.5178 = 1.0673e-05
    assert tt.difference_line(torch.tensor([0.5178, 2.0]), torch.tensor([0.5178, 2.0])).endswith(
        "≥ 1.06e-05 (assert_close, float32)")


def test_difference_line_refuses_what_it_cannot_compare():
    x = torch.zeros(2, 3)
    with pytest.raises(TypeError, match="ours and expected must be torch.Tensors, got Tensor and list"):
        tt.difference_line(x, [0.0])
    with pytest.raises(ValueError, match=r"one shape and dtype, got \(2, 3\) torch.float32 and \(3, 2\)"):
        tt.difference_line(x, x.T)
    with pytest.raises(ValueError, match="dtype must be one of"):
        tt.difference_line(x.long(), x.long())
