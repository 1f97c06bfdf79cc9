"""Section 3.2.2: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import transformer_lab as tl
from parity import torch_attn_mask
from transformer_lab.interop import copy_into_torch_attention, to_torch_attention

B, S, T, D, H = 2, 7, 5, 12, 3


def randomise_biases(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.normal_()
    return module


@pytest.mark.parametrize("kind", ["self", "cross"])
@pytest.mark.parametrize("with_mask", [False, True])
def test_matches_nn_multihead_attention(kind, with_mask):
    ours = randomise_biases(tl.MultiHeadAttention(D, H)).eval()
    ref = to_torch_attention(ours).eval()
    x = torch.randn(B, T, D)
    memory = x if kind == "self" else torch.randn(B, S, D)
    src_len = memory.size(1)
    key_padding = torch.ones(B, src_len, dtype=torch.bool)
    key_padding[1, -2:] = False  # example 1 has two padding positions
    attn = tl.causal_mask(T) if kind == "self" else torch.ones(T, src_len, dtype=torch.bool)
    mask = (key_padding[:, None, :] & attn) if with_mask else None  # (B, T, S)
    with tl.record_attention(ours) as recorded:
        out = ours(x, memory, memory, mask=mask)
    w = recorded.weights
    ref_out, ref_w = ref(
        x, memory, memory,
        key_padding_mask=torch_attn_mask(key_padding) if with_mask else None,
        attn_mask=torch_attn_mask(attn) if with_mask else None,
        need_weights=True, average_attn_weights=False,
    )
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(w, ref_w)
    fused = ours(x, memory, memory, mask=mask)
    torch.testing.assert_close(fused, ref_out)


def reference_per_head(mha, query, key, value):
    """The paper's equation, head by head: slice each projection, attend, concatenate."""
    heads = []
    for i in range(mha.num_heads):
        rows_k = slice(i * mha.d_k, (i + 1) * mha.d_k)
        rows_v = slice(i * mha.d_v, (i + 1) * mha.d_v)
        q = query @ mha.w_q.weight[rows_k].T + mha.w_q.bias[rows_k]
        k = key @ mha.w_k.weight[rows_k].T + mha.w_k.bias[rows_k]
        v = value @ mha.w_v.weight[rows_v].T + mha.w_v.bias[rows_v]
        w = torch.softmax(q @ k.mT / mha.d_k**0.5, dim=-1)
        heads.append(w @ v)
    return mha.w_o(torch.cat(heads, dim=-1))  # Concat(head_1, ..., head_h) W^O


@pytest.mark.parametrize("d_k, d_v", [(None, None), (2, 6), (8, None), (None, 5)])
def test_heads_are_split_and_concatenated_along_the_feature_axis(d_k, d_v):
    mha = randomise_biases(tl.MultiHeadAttention(D, H, d_k=d_k, d_v=d_v))
    q, kv = torch.randn(B, T, D), torch.randn(B, S, D)
    with tl.record_attention(mha) as attn:
        out = mha(q, kv, kv)
    torch.testing.assert_close(out, reference_per_head(mha, q, kv, kv))
    assert attn.weights.shape == (B, H, T, S)


def test_d_k_and_d_v_default_independently():
    mha = tl.MultiHeadAttention(D, H, d_k=8)
    assert (mha.d_k, mha.d_v) == (8, D // H)
    mha = tl.MultiHeadAttention(D, H, d_v=2)
    assert (mha.d_k, mha.d_v) == (D // H, 2)
    assert mha.w_o.in_features == H * 2


def test_all_four_projections_are_registered_parameters():
    # Projections kept in a plain Python list would be invisible to .parameters(),
    # the optimizer, .to(device) and state_dict.
    mha = tl.MultiHeadAttention(D, H, d_k=2, d_v=6)
    expected = (D * H * 2 + H * 2) * 2 + (D * H * 6 + H * 6) + (H * 6 * D + D)
    assert tl.count_parameters(mha) == expected
    assert {k.split(".")[0] for k in mha.state_dict()} == {"w_q", "w_k", "w_v", "w_o"}
    out = mha(torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, D))
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mha.parameters())


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_self_attention_without_positions_is_permutation_equivariant(seed):
    torch.manual_seed(seed)
    mha = tl.MultiHeadAttention(D, H).eval()
    x = torch.randn(B, S, D)
    perm = torch.randperm(S)
    out = mha(x, x, x)
    out_perm = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm])


@pytest.mark.parametrize("shape", [(T, T), (B, T, T), (B, 1, T, T), (B, H, T, T)])
def test_masks_of_every_documented_rank_are_accepted(shape):
    mha = tl.MultiHeadAttention(D, H).eval()
    x = torch.randn(B, T, D)
    mask = tl.causal_mask(T).expand(shape)
    out = mha(x, x, x, mask=mask)
    expected = mha(x, x, x, mask=tl.causal_mask(T))
    torch.testing.assert_close(out, expected)


def test_incremental_self_attention_with_a_cache_equals_full_causal_attention():
    mha = tl.MultiHeadAttention(D, H).eval()
    x = torch.randn(B, T, D)
    full = mha(x, x, x, mask=tl.causal_mask(T))
    cache = tl.KVCache()
    steps = [mha(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(T)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == T


def test_cross_attention_cache_projects_the_memory_once():
    mha = tl.MultiHeadAttention(D, H).eval()
    memory = torch.randn(B, S, D)
    cache = tl.KVCache(static=True)
    mha(torch.randn(B, 1, D), memory, memory, cache=cache)
    k = cache.k
    mha(torch.randn(B, 1, D), memory, memory, cache=cache)
    assert cache.k is k and cache.length == S


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="d_model=10 must be divisible by num_heads=3"):
        tl.MultiHeadAttention(10, 3)
    tl.MultiHeadAttention(10, 3, d_k=4, d_v=4)  # allowed when both are given
    mha = tl.MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match=r"query must have shape \(B, L, d_model=12\), got \(2, 5, 10\)"):
        mha(torch.randn(B, T, 10), torch.randn(B, S, D), torch.randn(B, S, D))
    with pytest.raises(ValueError, match="same batch size"):
        mha(torch.randn(B, T, D), torch.randn(3, S, D), torch.randn(3, S, D))
    with pytest.raises(TypeError, match="boolean"):
        mha(torch.randn(B, T, D), torch.randn(B, S, D), torch.randn(B, S, D), mask=torch.ones(T, S))


def test_recording_changes_neither_the_output_nor_its_type_and_stops_afterwards():
    mha = randomise_biases(tl.MultiHeadAttention(D, H)).eval()
    x, mask = torch.randn(B, T, D), tl.causal_mask(T)
    fused = mha(x, x, x, mask=mask)
    with tl.record_attention(mha) as attn:
        recorded = mha(x, x, x, mask=mask)
    assert isinstance(recorded, torch.Tensor)
    torch.testing.assert_close(recorded, fused)
    torch.testing.assert_close(attn.weights.sum(-1), torch.ones(B, H, T))
    assert torch.all(attn.weights.triu(1) == 0), "the mask is applied to the recorded weights"
    assert mha.on_weights is None, "outside the block the fused path runs again"


def test_recorded_weights_are_taken_before_dropout():
    mha = tl.MultiHeadAttention(D, H, dropout=0.5).train()
    x = torch.randn(B, T, D)
    with tl.record_attention(mha) as attn:
        dropped = mha(x, x, x)
    torch.testing.assert_close(attn.weights.sum(-1), torch.ones(B, H, T))
    assert not torch.allclose(dropped, mha.eval()(x, x, x))


def test_the_weight_copy_rejects_modules_of_another_shape():
    ours = tl.MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match="theirs must have embed_dim=12 and num_heads=3, got embed_dim=12 and num_heads=2"):
        copy_into_torch_attention(ours, nn.MultiheadAttention(D, 2, batch_first=True))
    with pytest.raises(ValueError, match="ours must have biases and d_k = d_v = d_model / num_heads"):
        to_torch_attention(tl.MultiHeadAttention(D, H, d_k=2, d_v=2))


def test_a_bad_mask_is_named_on_the_recording_path_too():
    mha = tl.MultiHeadAttention(D, H)
    x = torch.randn(B, T, D)
    with tl.record_attention(mha):
        with pytest.raises(TypeError, match="boolean"):
            mha(x, x, x, mask=torch.ones(T, T))
        with pytest.raises(ValueError, match=r"mask of shape \(5, 4\) does not broadcast"):
            mha(x, x, x, mask=torch.ones(T, 4, dtype=torch.bool))


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_on_the_cpu_outputs_and_gradients_are_bit_for_bit_those_of_three_separate_products(kind):
    """The fast paths (stacked projections on an accelerator, the prepared float mask)
    leave the CPU's float32 numbers exactly as a plain implementation gives them: the
    deck's trained models do not move."""
    mha = randomise_biases(tl.MultiHeadAttention(D, H, dropout=0.0))
    x = torch.randn(B, T, D, requires_grad=True)
    memory = x if kind == "self" else torch.randn(B, S, D, requires_grad=True)
    keep = torch.ones(B, 1, T, memory.size(1), dtype=torch.bool)
    keep[1, ..., -2:] = False
    mask = keep & tl.causal_mask(T) if kind == "self" else keep
    out = mha(x, memory, memory, mask=mask)
    out.backward(torch.ones_like(out))
    ours = [out, x.grad, *(p.grad for p in mha.parameters())]

    x.grad = None
    if memory is not x:
        memory.grad = None
    mha.zero_grad(set_to_none=True)
    q = mha.split_heads(mha.w_q(x), D // H)
    k = mha.split_heads(mha.w_k(memory), D // H)
    v = mha.split_heads(mha.w_v(memory), D // H)
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    plain = mha.w_o(mha.merge_heads(heads))
    plain.backward(torch.ones_like(plain))
    for got, want in zip(ours, [plain, x.grad, *(p.grad for p in mha.parameters())]):
        assert torch.equal(got, want)
