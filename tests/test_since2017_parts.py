"""Each change since 2017 plugs into the paper's Transformer through its parts (or, for
RMSNorm and positions inside attention, by swapping built modules), with no edit to the
paper's modules: the variant model trains, decodes with its cache as without it, is
recorded like the paper's, and exports to ONNX with the same outputs as PyTorch."""

import pytest
import torch
from torch import nn

import transformer_lab as tl
from test_export import Runtime, assert_parity
from test_multi_head_attention import randomise_biases
from transformer_lab.teaching.since2017 import CHANGES

B, S, T, D, H = 3, 7, 5, 16, 4
BOS, EOS = tl.BOS_ID, tl.EOS_ID
IN_THE_TRANSFORMER = [key for key in CHANGES if key not in ("paper", "decoder_only")]


def build(key, seed=0):
    torch.manual_seed(seed)
    config = tl.TransformerConfig(23, 19, d_model=D, num_heads=H, d_ff=20, num_layers=2, max_len=64, dropout=0.0,
                                  tie_embeddings=False)
    return randomise_biases(CHANGES[key].build(config))


def source():
    src = torch.randint(4, 23, (B, S))
    src[1, -3:] = tl.PAD_ID
    return src


EXPECTED_PART = {  # where the change sits, and its type
    "pre_ln": ("encoder.norm", nn.LayerNorm),
    "rms_norm": ("decoder.layers.1.norm3", tl.RMSNorm),
    "learned": ("tgt_positions", tl.LearnedPositionalEncoding),
    "rotary": ("encoder.layers.1.self_attn.rotary", tl.RotaryEmbedding),
    "alibi": ("decoder.layers.0.self_attn.alibi", tl.ALiBi),
    "gelu": ("encoder.layers.0.feed_forward", tl.GELUFeedForward),
    "swiglu": ("decoder.layers.1.feed_forward", tl.SwiGLU),
    "gqa": ("decoder.layers.1.cross_attn", tl.GroupedQueryAttention),
    "mqa": ("encoder.layers.0.self_attn", tl.GroupedQueryAttention),
}


@pytest.mark.parametrize("key", IN_THE_TRANSFORMER)
def test_the_change_sits_in_every_layer_and_the_rest_is_the_papers(key):
    model = build(key)
    path, kind = EXPECTED_PART[key]
    assert type(model.get_submodule(path)) is kind
    paper_types = {type(m) for m in build("paper").modules()}
    variant_types = {type(m) for m in model.modules()}
    new = variant_types - paper_types
    assert new <= {tl.RMSNorm, tl.RotaryEmbedding, tl.ALiBi, tl.GELUFeedForward, tl.SwiGLU,
                   tl.GroupedQueryAttention, tl.NoPositionalEncoding, tl.LearnedPositionalEncoding}
    if key in ("rotary", "alibi"):  # positions inside attention: none added to the embeddings
        assert type(model.src_positions) is type(model.tgt_positions) is tl.NoPositionalEncoding
        assert type(model.decoder.layers[0].cross_attn) is tl.MultiHeadAttention, "cross-attention has no positions"
    if key == "mqa":
        assert all(layer.self_attn.num_kv_heads == 1 for layer in model.decoder.layers)


@pytest.mark.parametrize("key", IN_THE_TRANSFORMER)
def test_every_parameter_learns(key):
    model = build(key).train()
    src, tgt = source(), torch.randint(3, 19, (B, T))
    model(src, tgt).logsumexp(-1).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


@pytest.mark.parametrize("key", IN_THE_TRANSFORMER)
def test_decoding_with_the_cache_equals_recomputation_and_beam_1_equals_greedy(key):
    model, src = build(key).eval(), source()
    tgt = torch.randint(3, 19, (B, 6))
    memory, src_mask = model.encode(src), model.src_mask(src)
    cache = model.new_cache()
    with torch.no_grad():
        steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache=cache) for t in range(tgt.size(1))]
        torch.testing.assert_close(torch.cat(steps, dim=1), model(src, tgt))
    cached = tl.greedy_decode(model, src, max_len=10, bos_id=BOS, eos_id=EOS, use_cache=True)
    assert torch.equal(cached, tl.greedy_decode(model, src, max_len=10, bos_id=BOS, eos_id=EOS, use_cache=False))
    assert torch.equal(tl.beam_search(model, src, 1, 10, BOS, EOS), cached)


@pytest.mark.parametrize("key", IN_THE_TRANSFORMER)
def test_the_attention_is_recorded_and_exported(key, tmp_path):
    pytest.importorskip("onnxruntime")
    model, src = build(key).eval(), source()
    tgt = torch.randint(3, 19, (B, T))
    with torch.no_grad(), tl.record_attention(model) as attn:
        logits = model(src, tgt)
    torch.testing.assert_close(logits, model(src, tgt))
    assert attn.decoder_self[1].shape == (B, H, T, T) and attn.cross[0].shape == (B, H, T, S)
    assert torch.all(attn.decoder_self[1].triu(1) == 0), "the causal mask reaches the part"
    torch.testing.assert_close(attn.encoder[0].sum(-1), torch.ones(B, H, S))
    runtime = Runtime(model, tmp_path)
    for shape in [(1, 1, 1), (3, 11, 8)]:  # other sizes than the (2, 5, 3) traced
        assert_parity(model, runtime, *shape)
