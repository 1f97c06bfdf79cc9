"""Section 3.2.1, equation (1): Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl

B, H, T, S, K, V = 2, 3, 5, 7, 4, 6


def qkv(dtype=torch.float32, device="cpu"):
    q = torch.randn(B, H, T, K, dtype=dtype, device=device)
    k = torch.randn(B, H, S, K, dtype=dtype, device=device)
    v = torch.randn(B, H, S, V, dtype=dtype, device=device)
    return q, k, v


def random_mask(*shape):
    mask = torch.rand(*shape) > 0.4
    mask[..., 0] = True  # every query sees at least one key
    return mask


def test_a_hand_computed_example():
    # d_k = 4: scores are q.k / 2. One key matches (q.k = 4, score 2), one does not (score 0).
    q = torch.ones(1, 4)
    k = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    v = torch.tensor([[10.0], [0.0]])
    w, out = tl.attention_weights(q, k), tl.scaled_dot_product_attention(q, k, v)
    expected = math.exp(2) / (math.exp(2) + 1)  # dividing by d_k = 4 instead would give e/(e+1)
    assert w[0, 0].item() == pytest.approx(expected)
    assert out.item() == pytest.approx(10 * expected)


@pytest.mark.parametrize("with_mask", [False, True])
def test_explicit_path_matches_pytorch(device, with_mask):
    q, k, v = qkv(device=device)
    mask = random_mask(B, 1, T, S).to(device) if with_mask else None
    ours = tl.attention_weights(q, k, mask) @ v
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("mask_shape", [None, (T, S), (B, 1, 1, S), (B, H, T, S)])
def test_explicit_and_fused_paths_agree(device, mask_shape):
    q, k, v = qkv(device=device)
    mask = random_mask(*mask_shape).to(device) if mask_shape else None
    weights = tl.attention_weights(q, k, mask)
    explicit, fused = weights @ v, tl.scaled_dot_product_attention(q, k, v, mask)
    assert isinstance(fused, torch.Tensor) and weights.shape == (B, H, T, S)
    torch.testing.assert_close(explicit, fused)


@settings(max_examples=30, deadline=None)
@given(t=st.integers(1, 9), s=st.integers(1, 9), d=st.integers(1, 8), seed=st.integers(0, 10_000))
def test_weights_are_a_distribution_over_the_visible_keys(t, s, d, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, t, d, generator=g) * 3, torch.randn(2, s, d, generator=g) * 3
    mask = torch.rand(2, t, s, generator=g) > 0.5
    mask[:, :, -1] = True
    w = tl.attention_weights(q, k, mask)
    assert torch.all(w >= 0)
    assert torch.all(w[~mask] == 0), "masked keys get exactly zero weight"
    torch.testing.assert_close(w.sum(-1), torch.ones(2, t))  # softmax over the keys, not the queries


def test_masking_happens_before_the_softmax():
    # Masking after the softmax would zero the weight but leave the row summing to less than 1.
    q, k = torch.randn(1, 3, 4), torch.randn(1, 6, 4)
    mask = torch.tensor([True, True, False, True, False, False]).expand(3, 6)
    w = tl.attention_weights(q, k, mask)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 3))
    torch.testing.assert_close(w[..., mask[0]], torch.softmax(q @ k[:, mask[0]].mT / 2, dim=-1))


def test_scores_are_divided_by_sqrt_d_k():
    # With unit-variance q and k, q.k has variance d_k; the scaled scores have variance 1.
    d_k = 256
    q, k = torch.randn(1, 512, d_k), torch.randn(1, 512, d_k)
    w = tl.attention_weights(q, k)
    scores = torch.log(w) - torch.log(w).mean(-1, keepdim=True)  # log-softmax up to a constant
    assert scores.var().item() == pytest.approx(1.0, rel=0.1)


@pytest.mark.parametrize("path", ["fused", "explicit"])
def test_a_fully_masked_row_gives_zero_output_not_nan(device, path):
    q, k, v = qkv(device=device)
    mask = random_mask(B, H, T, S).to(device)
    mask[0, 1, 2] = False  # query 2 of head 1 in example 0 may see nothing
    w = tl.attention_weights(q, k, mask)
    out = tl.scaled_dot_product_attention(q, k, v, mask) if path == "fused" else w @ v
    assert torch.isfinite(out).all()
    assert torch.all(out[0, 1, 2] == 0)
    if path == "explicit":
        assert torch.all(w[0, 1, 2] == 0)


def test_float16_weights_are_finite_and_a_query_that_sees_nothing_gets_zeros():
    # float16's lowest value is -65504: a mask filled with -1e9 in float16 overflows (to -inf
    # or an error) and a query that may see no key gets NaN. On the CPU too, half-precision
    # scores are masked and normalised in float32 and come back as float16.
    q, k, v = qkv(torch.float16)
    mask = random_mask(B, H, T, S)
    mask[1, 2, 3] = False  # query 3 of head 2 in example 1 may see nothing
    w = tl.attention_weights(q, k, mask)
    assert w.dtype == torch.float16 and torch.isfinite(w).all()
    torch.testing.assert_close(w.float().sum(-1), mask.any(-1).float(), atol=2e-3, rtol=0)
    assert torch.all(w[~mask] == 0) and torch.all(w[1, 2, 3] == 0)
    out = tl.scaled_dot_product_attention(q, k, v, mask)
    assert out.dtype == torch.float16 and torch.isfinite(out).all() and torch.all(out[1, 2, 3] == 0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_dtypes(dtype):
    q, k, v = qkv(dtype)
    mask = random_mask(T, S)
    w = tl.attention_weights(q, k, mask)
    explicit, fused = w @ v, tl.scaled_dot_product_attention(q, k, v, mask)
    assert explicit.dtype == w.dtype == dtype
    tol = dict(atol=2e-2, rtol=2e-2) if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(explicit, fused, **tol)


def test_weights_are_returned_before_dropout_and_dropout_acts_in_the_product():
    q, k, v = qkv()
    torch.manual_seed(1)
    out, w = tl.scaled_dot_product_attention(q, k, v, dropout_p=0.5), tl.attention_weights(q, k)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, T))
    plain = tl.scaled_dot_product_attention(q, k, v)
    assert not torch.allclose(out, plain)


def test_bad_masks_and_shapes_are_named():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="mask must be a boolean tensor"):
        tl.scaled_dot_product_attention(q, k, v, torch.ones(T, S))
    with pytest.raises(ValueError, match=r"mask of shape \(5, 5\) does not broadcast"):
        tl.scaled_dot_product_attention(q, k, v, torch.ones(T, T, dtype=torch.bool))
    with pytest.raises(ValueError, match="query and key must share d_k"):
        tl.scaled_dot_product_attention(q, v, v)
    with pytest.raises(ValueError, match="dropout_p"):
        tl.scaled_dot_product_attention(q, k, v, dropout_p=1.0)


# -- an additive bias on the scores (not in the paper: relative-position variants) -----


@pytest.mark.parametrize("bias_shape", [(T, S), (H, T, S), (B, H, T, S)])
@pytest.mark.parametrize("with_mask", [False, True])
def test_a_bias_matches_pytorchs_float_attn_mask(device, bias_shape, with_mask):
    q, k, v = qkv(device=device)
    bias = torch.randn(*bias_shape, device=device)
    mask = random_mask(B, 1, T, S).to(device) if with_mask else None
    # PyTorch takes one float attn_mask: the bias, with -inf where our mask says False
    attn_mask = bias if mask is None else bias.masked_fill(~mask, -math.inf)
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    fused = tl.scaled_dot_product_attention(q, k, v, mask, bias=bias)
    explicit = tl.attention_weights(q, k, mask, bias=bias) @ v
    torch.testing.assert_close(fused, theirs)
    torch.testing.assert_close(explicit, theirs)
    assert not torch.allclose(fused, tl.scaled_dot_product_attention(q, k, v, mask)), "the bias counts"


@pytest.mark.parametrize("path", ["fused", "explicit"])
def test_a_bias_learns_through_either_path_and_masked_keys_stay_at_zero(device, path):
    q, k, v = qkv(device=device)
    mask = random_mask(B, H, T, S).to(device)
    mask[0, 1, 2] = False  # a query that may see nothing
    bias = torch.randn(H, T, S, device=device, requires_grad=True)
    on_weights = (lambda w: None) if path == "explicit" else None
    out = tl.scaled_dot_product_attention(q, k, v, mask, bias=bias, on_weights=on_weights)
    assert torch.isfinite(out).all() and torch.all(out[0, 1, 2] == 0)
    out.sum().backward()
    reference = bias.detach().clone().requires_grad_()
    theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=reference.masked_fill(~mask, -math.inf))
    theirs[mask.any(-1)].sum().backward()  # blind rows: zero on CPU, NaN on some GPU kernels
    torch.testing.assert_close(bias.grad, reference.grad)


def test_a_bias_of_another_dtype_than_the_queries_is_accepted():
    q, k, v = qkv(torch.bfloat16)
    bias = torch.randn(H, T, S)  # float32, as a learned table usually is
    fused, explicit = tl.scaled_dot_product_attention(q, k, v, bias=bias), tl.attention_weights(q, k, bias=bias) @ v
    assert fused.dtype == explicit.dtype == torch.bfloat16
    torch.testing.assert_close(fused, explicit, atol=2e-2, rtol=2e-2)


def test_on_weights_receives_the_weights_and_the_output_is_the_fused_one():
    q, k, v = qkv()
    mask, seen = random_mask(B, 1, T, S), []
    out = tl.scaled_dot_product_attention(q, k, v, mask, on_weights=seen.append)
    torch.testing.assert_close(seen[0], tl.attention_weights(q, k, mask))
    torch.testing.assert_close(out, tl.scaled_dot_product_attention(q, k, v, mask))


def test_a_bad_bias_is_named():
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"bias must be a floating-point tensor added to the scores, got dtype "
                                        r"torch.bool"):
        tl.scaled_dot_product_attention(q, k, v, bias=random_mask(T, S))
    with pytest.raises(ValueError, match=r"bias of shape \(4, 5, 7\) does not broadcast"):
        tl.scaled_dot_product_attention(q, k, v, bias=torch.randn(4, T, S))
    with pytest.raises(TypeError, match="bias must be a torch.Tensor, got list"):
        tl.scaled_dot_product_attention(q, k, v, bias=[[0.0] * S] * T)


@pytest.mark.cuda
def test_float16_on_cuda():
    q, k, v = qkv(torch.float16, "cuda")
    mask = random_mask(T, S).cuda()
    explicit = tl.attention_weights(q, k, mask) @ v
    fused = tl.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(explicit, fused, atol=2e-3, rtol=2e-3)


# -- the prepared-mask memo: what it gives equals what a fresh mask gives ----------------


def fresh(mask):
    """A new tensor with the same values: it cannot hit the memo."""
    return mask.clone()


def test_a_mask_edited_in_place_after_use_is_read_again(device):
    q, k, v = (t.to(device) for t in qkv())
    mask = random_mask(B, 1, T, S).to(device)
    tl.scaled_dot_product_attention(q, k, v, mask)  # prepares this mask
    mask[0, 0, 1] = False  # a whole row: this query now sees nothing
    mask[1, 0, :, 2] = ~mask[1, 0, :, 2]
    got = tl.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(got, tl.scaled_dot_product_attention(q, k, v, fresh(mask)))
    assert torch.all(got[0, :, 1] == 0)


def test_a_view_of_an_edited_mask_is_read_again():
    q, k, v = qkv()
    base = random_mask(B, T, S)
    view = base[:, None]  # (B, 1, T, S), shares base's storage and version counter
    tl.scaled_dot_product_attention(q, k, v, view)
    base[:, :, 3] = False
    torch.testing.assert_close(tl.scaled_dot_product_attention(q, k, v, view),
                               tl.scaled_dot_product_attention(q, k, v, fresh(view)))


def test_one_mask_serves_queries_of_two_dtypes():
    q, k, v = qkv()
    mask = random_mask(T, S)
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        args = [t.to(dtype) for t in (q, k, v)]
        torch.testing.assert_close(tl.scaled_dot_product_attention(*args, mask),
                                   tl.scaled_dot_product_attention(*args, fresh(mask)))


def test_masks_in_inference_mode_and_prepared_entries_go_with_their_masks():
    import gc

    from transformer_lab.attention import _PREPARED_MASKS

    q, k, v = qkv()
    before = len(_PREPARED_MASKS)
    masks = [random_mask(T, S) for _ in range(3)]
    outputs = [tl.scaled_dot_product_attention(q, k, v, m) for m in masks]
    assert len(_PREPARED_MASKS) == before + 3
    del masks, outputs
    gc.collect()
    assert len(_PREPARED_MASKS) == before
    with torch.inference_mode():  # inference tensors have no version counter: never kept
        mask = random_mask(T, S)
        torch.testing.assert_close(tl.scaled_dot_product_attention(q, k, v, mask),
                                   tl.scaled_dot_product_attention(q, k, v, fresh(mask)))
    assert len(_PREPARED_MASKS) == before
