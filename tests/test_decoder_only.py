"""The decoder-only language model (GPT's arrangement of the paper's parts): causal
self-attention and the feed-forward network in pre-LN blocks, a final norm, next-token loss;
greedy and beam decoding after a prompt, with a cache equal to recomputation."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import transformer_lab as tl
from parity import torch_attn_mask
from test_layers import copy_encoder_layer, randomise_norms
from test_multi_head_attention import randomise_biases
from transformer_lab.decoder_only_decoding import prompt_groups

B, L, D, H, V = 3, 9, 12, 6, 23
BOS, EOS, PAD = tl.BOS_ID, tl.EOS_ID, tl.PAD_ID
POSITIONAL = ["sinusoidal", "learned", "rotary", "alibi", "none"]


def config(**overrides):
    options = dict(vocab_size=V, d_model=D, num_heads=H, d_ff=20, num_layers=2, max_len=64, dropout=0.0,
                   tie_embeddings=False)
    return tl.DecoderOnlyConfig(**{**options, **overrides})


def model(seed=0, parts=None, rms=False, **overrides):
    torch.manual_seed(seed)
    m = tl.DecoderOnlyTransformer(config(**overrides), **(parts or {}))
    randomise_biases(m)  # varied predictions from an untrained model
    return (tl.use_rms_norm(m) if rms else m).eval()


VARIANTS = {  # (config overrides, parts, RMSNorm)
    "paper's parts": ({}, {}, False),
    "learned": ({"positional": "learned"}, {}, False),
    "rotary": ({"positional": "rotary"}, {}, False),
    "alibi": ({"positional": "alibi"}, {}, False),
    "no positions": ({"positional": "none"}, {}, False),
    "grouped-query": ({"num_kv_heads": 2}, {}, False),
    "Llama-like": ({"positional": "rotary", "num_kv_heads": 2}, {"feed_forward": tl.SwiGLU.from_config}, True),
}


def variant(name, seed=0):
    overrides, parts, rms = VARIANTS[name]
    return model(seed, parts, rms, **overrides)


def prompts():
    src = torch.randint(4, V, (4, 6))
    src[1, 4:] = PAD  # prompts of 6, 4, 6 and 2 tokens
    src[3, 2:] = PAD
    return src


def test_a_layer_is_pytorchs_pre_ln_encoder_layer_under_a_causal_mask():
    ours = randomise_norms(randomise_biases(tl.DecoderOnlyLayer.from_config(config().layer_config()))).eval()
    ref = nn.TransformerEncoderLayer(D, H, 20, dropout=0.0, batch_first=True, norm_first=True).eval()
    copy_encoder_layer(ours, ref)
    x = torch.randn(B, L, D)
    torch.testing.assert_close(ours(x, tl.causal_mask(L)), ref(x, src_mask=torch_attn_mask(tl.causal_mask(L))))


def test_the_model_is_pre_ln_with_a_final_norm_and_tied_embeddings_by_default():
    m = tl.DecoderOnlyTransformer(tl.DecoderOnlyConfig.tiny(V))
    assert all(layer.norm_first for layer in m.layers) and isinstance(m.norm, nn.LayerNorm)
    assert m.output_projection.weight is m.embed.weight
    assert not hasattr(m.layers[0], "cross_attn")
    assert isinstance(m.layers[0].self_attn, tl.MultiHeadAttention), "the paper's attention unless asked"


@settings(max_examples=10, deadline=None)
@given(name=st.sampled_from(list(VARIANTS)), position=st.integers(0, L - 1), seed=st.integers(0, 100))
def test_editing_a_token_changes_no_earlier_prediction(name, position, seed):
    m = variant(name, seed)
    tokens = torch.randint(4, V, (B, L))
    edited = tokens.clone()
    edited[:, position] = 4 + (tokens[:, position] - 3) % (V - 4)
    with torch.no_grad():
        before, after = m(tokens), m(edited)
    torch.testing.assert_close(after[:, :position], before[:, :position])
    assert not torch.allclose(after[:, position:], before[:, position:])


@pytest.mark.parametrize("name", VARIANTS)
def test_cached_steps_equal_the_full_pass(name):
    m, tokens = variant(name), torch.randint(4, V, (B, L))
    cache = m.new_cache()
    with torch.no_grad():
        steps = [m.decode(tokens[:, :3], cache=cache)]  # a prompt of 3, then one token at a time
        steps += [m.decode(tokens[:, t : t + 1], cache=cache) for t in range(3, L)]
        full = m(tokens)
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == L


@pytest.mark.parametrize("name", ["paper's parts", "rotary", "alibi", "Llama-like"])  # the offsets differ
def test_greedy_with_the_cache_equals_recomputation_and_beam_1_equals_greedy(name):
    m, src = variant(name), prompts()
    cached = tl.decoder_only_greedy_decode(m, src, max_len=8, bos_id=BOS, eos_id=EOS, use_cache=True)
    assert torch.equal(cached, tl.decoder_only_greedy_decode(m, src, 8, BOS, EOS, use_cache=False))
    assert torch.equal(tl.decoder_only_beam_search(m, src, 1, 8, BOS, EOS), cached)
    assert cached.shape[0] == 4 and torch.all(cached[:, 0] == BOS)
    beams = tl.decoder_only_beam_search(m, src, 3, 8, BOS, EOS)  # reorders the caches
    assert beams.shape[0] == 4 and torch.all(beams[:, 0] == BOS)


def test_each_prompt_is_decoded_as_if_it_were_alone():
    m, src = variant("rotary"), prompts()
    together = tl.decoder_only_greedy_decode(m, src, 8, BOS, EOS)
    for row in range(src.size(0)):
        alone = tl.decoder_only_greedy_decode(m, src[row : row + 1], 8, BOS, EOS)
        assert torch.equal(together[row, : alone.size(1)], alone[0])


def test_greedy_decoding_picks_the_argmax_after_the_prompt():
    m = variant("paper's parts")
    src = torch.randint(4, V, (2, 5))
    out = tl.decoder_only_greedy_decode(m, src, 4, BOS, eos_id=EOS)
    sequence = torch.cat([src, out[:, :1]], dim=1)  # the prompt and <bos>
    for t in range(1, out.size(1)):
        with torch.no_grad():
            expected = m(sequence)[:, -1].argmax(-1)
        finished = (out[:, 1:t] == EOS).any(1)
        assert torch.equal(out[:, t], expected.masked_fill(finished, PAD))
        sequence = torch.cat([sequence, out[:, t : t + 1]], dim=1)


def test_prompts_are_grouped_by_length():
    groups = prompt_groups(prompts(), PAD)
    assert [(rows.tolist(), tuple(p.shape)) for rows, p in groups] == [([3], (1, 2)), ([1], (1, 4)), ([0, 2], (2, 6))]
    with pytest.raises(ValueError, match="src must hold at least one token before its padding in every row"):
        prompt_groups(torch.tensor([[PAD, 5, 6]]), PAD)


def translation_batch():
    pairs = [("abc", "cba"), ("de", "ed")]
    vocab = tl.Vocabulary.build(["abcde"], tokenize="char")
    return tl.collate([tl.TranslationDataset(pairs, vocab, vocab)[i] for i in range(2)]), vocab


def test_a_translation_pair_becomes_one_sequence_with_loss_on_the_target_only():
    batch, vocab = translation_batch()
    lm = tl.language_model_batch(batch)
    a, b, c, d, e = (vocab.stoi[ch] for ch in "abcde")
    assert lm.tokens.tolist() == [[a, b, c, EOS, BOS, c, b, a], [d, e, EOS, BOS, e, d, PAD, PAD]]
    assert lm.targets.tolist() == [[PAD, PAD, PAD, PAD, c, b, a, EOS], [PAD, PAD, PAD, e, d, EOS, PAD, PAD]]
    assert lm.prompt_lengths.tolist() == [4, 3] and lm.tgt_tokens == batch.tgt_tokens == 7


def test_next_token_loss_counts_the_target_tokens_and_trains_every_parameter():
    batch, vocab = translation_batch()
    lm = tl.language_model_batch(batch)
    m = tl.DecoderOnlyTransformer(config(vocab_size=len(vocab), positional="rotary", num_kv_heads=3),
                                  feed_forward=tl.SwiGLU.from_config)
    loss_fn = tl.LabelSmoothingLoss(0.0)
    loss, correct = tl.language_model_loss_sum(m, lm, loss_fn)
    logits = m(lm.tokens)
    keep = lm.targets != PAD
    expected = torch.nn.functional.cross_entropy(logits[keep], lm.targets[keep], reduction="sum")
    torch.testing.assert_close(loss, expected)
    assert 0 <= int(correct) <= 7
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in m.parameters()), "every parameter learns"
    optimizer = torch.optim.Adam(m.parameters(), lr=1e-2)
    first = float(loss.detach()) / 7
    for _ in range(15):
        optimizer.zero_grad()
        loss, _ = tl.language_model_loss_sum(m, lm, loss_fn)
        loss.backward()
        optimizer.step()
    assert float(loss.detach()) / 7 < 0.5 * first


@pytest.mark.parametrize("name", ["paper's parts", "Llama-like"])
def test_attention_is_recorded_per_layer(name):
    m = variant(name)
    tokens = torch.randint(4, V, (B, L))
    with tl.record_attention(m) as attn:
        logits = m(tokens)
    torch.testing.assert_close(logits, m(tokens))
    weights = attn.maps["layers.1.self_attn"]
    assert weights.shape == (B, H, L, L)
    assert torch.all(weights.triu(1) == 0), "causal"
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, L))


def test_the_cache_holds_g_heads_per_layer_and_counts_its_bytes():
    m = variant("grouped-query")
    cache = m.new_cache()
    with torch.no_grad():
        m.decode(torch.randint(4, V, (B, L)), cache=cache)
    assert [tuple(c.k.shape) for c in cache.layers] == [(B, 2, L, D // H)] * 2
    assert cache.nbytes() == 2 * 2 * B * 2 * L * (D // H) * 4  # layers x (k, v) x B x G x L x K x float32


@pytest.mark.parametrize("name", ["paper's parts", "learned", "alibi", "Llama-like"])
def test_onnx_runtime_computes_the_same_logits_and_weights(name, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from transformer_lab.export_decoder_only import decoder_only_output_names, decoder_only_to_onnx

    m = variant(name)
    session = ort.InferenceSession(str(decoder_only_to_onnx(m, tmp_path / "lm.onnx")),
                                   providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == decoder_only_output_names(2)
    for batch, length in [(1, 1), (3, 11)]:  # other sizes than the traced (2, 5)
        tokens = torch.randint(4, V, (batch, length))
        tokens[-1, length // 2 + 1 :] = PAD
        outputs = session.run(None, {"tokens": tokens.numpy()})
        with torch.no_grad(), tl.record_attention(m) as attn:
            logits = m(tokens)
        close = dict(atol=1e-5, rtol=0)
        torch.testing.assert_close(torch.from_numpy(outputs[0]), logits, **close)
        for i in range(2):
            torch.testing.assert_close(torch.from_numpy(outputs[1 + i]), attn.maps[f"layers.{i}.self_attn"], **close)


def test_bad_configs_parts_and_inputs_are_named():
    with pytest.raises(ValueError, match=r"positional must be one of \('sinusoidal', 'learned', 'rotary', 'alibi', "
                                         r"'none'\), got 'relative'"):
        config(positional="relative")
    with pytest.raises(ValueError, match=r"num_heads=6 must be divisible by num_kv_heads=4"):
        config(num_kv_heads=4)
    with pytest.raises(ValueError, match=r"pad_id must be a valid token id in \[0, 23\), got 23"):
        config(pad_id=23)
    with pytest.raises(TypeError, match=r"parts must be among \('self_attention', 'feed_forward'\), "
                                        r"got \['cross_attention'\]"):
        tl.DecoderOnlyTransformer(config(), cross_attention=tl.GroupedQueryAttention.factory(1))
    with pytest.raises(ValueError, match="a self_attention part replaces the config's \\(positional='rotary'"):
        tl.DecoderOnlyTransformer(config(positional="rotary"), self_attention=tl.GroupedQueryAttention.factory(1))
    with pytest.raises(TypeError, match="config must be a DecoderOnlyConfig, got TransformerConfig"):
        tl.DecoderOnlyTransformer(tl.TransformerConfig.tiny(V))
    m = variant("paper's parts")
    with pytest.raises(ValueError, match=r"tokens must be a \(B, L\) tensor of token ids with B >= 1 and L >= 1, "
                                         r"got \(9,\)"):
        m(torch.randint(4, V, (L,)))
    with pytest.raises(ValueError, match=r"tokens must hold ids in \[0, 23\)"):
        m(torch.full((B, L), V))
    with pytest.raises(TypeError, match="cache must be a DecoderOnlyCache, got KVCache"):
        m.decode(torch.randint(4, V, (B, 1)), cache=tl.KVCache())
    with pytest.raises(ValueError, match="sequence of length 65 is longer than max_len=64"):
        variant("rotary")(torch.randint(4, V, (1, 65)))
    with pytest.raises(TypeError, match="model must be a transformer_lab.DecoderOnlyTransformer, got Transformer"):
        tl.decoder_only_greedy_decode(tl.Transformer(tl.TransformerConfig.tiny(V)), prompts(), 5, BOS, EOS)
    with pytest.raises(ValueError, match=r"beam_size=12 needs a vocabulary of at least 24 tokens, got 23"):
        tl.decoder_only_beam_search(m, prompts(), 12, 5, BOS, EOS)
    with pytest.raises(TypeError, match="batch must be a transformer_lab.Batch, got tuple"):
        tl.language_model_batch((1, 2))
