"""Section 3.1: LayerNorm(x + Sublayer(x)) around every sub-layer; N identical layers."""

import pytest
import torch
from torch import nn

import transformer_lab as tl
from parity import torch_attn_mask
from test_multi_head_attention import randomise_biases
from transformer_lab.interop import copy_into_torch_attention

B, S, T, D, H, F = 2, 7, 5, 12, 3, 20


def copy_encoder_layer(ours: tl.EncoderLayer, ref: nn.TransformerEncoderLayer):
    copy_into_torch_attention(ours.self_attn, ref.self_attn)
    ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
    ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
    ref.norm1.load_state_dict(ours.norm1.state_dict())
    ref.norm2.load_state_dict(ours.norm2.state_dict())


def copy_decoder_layer(ours: tl.DecoderLayer, ref: nn.TransformerDecoderLayer):
    copy_into_torch_attention(ours.self_attn, ref.self_attn)
    copy_into_torch_attention(ours.cross_attn, ref.multihead_attn)
    ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
    ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
    for i in (1, 2, 3):
        getattr(ref, f"norm{i}").load_state_dict(getattr(ours, f"norm{i}").state_dict())


def randomise_norms(module):
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
    return module


def source_padding():
    keep = torch.ones(B, S, dtype=torch.bool)
    keep[0, -3:] = False
    return keep


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_nn_transformer_encoder_layer(norm_first):
    ours = randomise_norms(randomise_biases(tl.EncoderLayer.build(D, H, F, norm_first=norm_first))).eval()
    ref = nn.TransformerEncoderLayer(D, H, F, dropout=0.1, batch_first=True, norm_first=norm_first).eval()
    copy_encoder_layer(ours, ref)
    x, keep = torch.randn(B, S, D), source_padding()
    out = ours(x, tl.padding_mask(keep.long(), 0))
    torch.testing.assert_close(out, ref(x, src_key_padding_mask=torch_attn_mask(keep)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_nn_transformer_decoder_layer(norm_first):
    ours = randomise_norms(randomise_biases(tl.DecoderLayer.build(D, H, F, norm_first=norm_first))).eval()
    ref = nn.TransformerDecoderLayer(D, H, F, dropout=0.1, batch_first=True, norm_first=norm_first).eval()
    copy_decoder_layer(ours, ref)
    x, memory, keep = torch.randn(B, T, D), torch.randn(B, S, D), source_padding()
    out = ours(x, memory, src_mask=tl.padding_mask(keep.long(), 0), tgt_mask=tl.causal_mask(T))
    expected = ref(
        x, memory,
        tgt_mask=torch_attn_mask(tl.causal_mask(T)),
        memory_key_padding_mask=torch_attn_mask(keep),
    )
    torch.testing.assert_close(out, expected)


def silence_sublayers(layer):
    with torch.no_grad():
        for m in layer.modules():
            if isinstance(m, tl.MultiHeadAttention):
                m.w_o.weight.zero_(), m.w_o.bias.zero_()
            if isinstance(m, tl.PositionwiseFeedForward):
                m.w_2.weight.zero_(), m.w_2.bias.zero_()
    return layer


def test_the_residual_connection_carries_the_input_past_silent_sublayers():
    # Sublayer(x) = 0, so post-LN gives LayerNorm(x + 0) at every step: the input survives.
    # Without the residual connection the output would be LayerNorm(0): all zeros.
    def ln(x, times):
        for _ in range(times):
            x = nn.functional.layer_norm(x, (D,))
        return x

    layer = silence_sublayers(tl.EncoderLayer.build(D, H, F)).eval()
    x = torch.randn(B, S, D)
    torch.testing.assert_close(layer(x), ln(x, 2))  # two sub-layers, two LayerNorms
    decoder_layer = silence_sublayers(tl.DecoderLayer.build(D, H, F)).eval()
    y = torch.randn(B, T, D)
    torch.testing.assert_close(decoder_layer(y, x), ln(y, 3))
    pre_ln = silence_sublayers(tl.EncoderLayer.build(D, H, F, norm_first=True)).eval()
    torch.testing.assert_close(pre_ln(x), x)


def test_post_ln_stacks_have_no_final_norm_and_pre_ln_stacks_do():
    assert tl.Encoder(2, D, H, F).norm is None
    assert isinstance(tl.Encoder(2, D, H, F, norm_first=True).norm, nn.LayerNorm)
    assert isinstance(tl.Decoder(2, D, H, F, norm_first=True).norm, nn.LayerNorm)


def test_stacks_record_the_weights_of_every_layer():
    encoder, decoder = tl.Encoder(3, D, H, F).eval(), tl.Decoder(3, D, H, F).eval()
    with tl.record_attention(encoder) as enc_w:
        memory = encoder(torch.randn(B, S, D))
    with tl.record_attention(decoder) as dec_w:
        out = decoder(torch.randn(B, T, D), memory, tgt_mask=tl.causal_mask(T))
    assert len(enc_w.encoder) == len(dec_w.decoder_self) == len(dec_w.cross) == 3
    assert enc_w.encoder[0].shape == (B, H, S, S)
    assert dec_w.decoder_self[2].shape == (B, H, T, T) and dec_w.cross[2].shape == (B, H, T, S)
    assert torch.all(dec_w.decoder_self[0].triu(1) == 0), "masked self-attention never looks ahead"
    assert out.shape == (B, T, D)


def test_layers_in_a_stack_have_their_own_parameters():
    encoder = tl.Encoder(2, D, H, F)
    assert tl.count_parameters(encoder) == 2 * tl.count_parameters(tl.EncoderLayer.build(D, H, F))


# -- parts handed in (the Annotated Transformer's EncoderLayer(size, self_attn, feed_forward, dropout))


def test_a_layer_keeps_the_parts_it_is_handed_under_the_papers_names():
    attn, cross, ffn = tl.MultiHeadAttention(D, H), tl.MultiHeadAttention(D, H), tl.PositionwiseFeedForward(D, F)
    layer = tl.DecoderLayer(D, attn, cross, ffn, dropout=0.0)
    assert layer.self_attn is attn and layer.cross_attn is cross and layer.feed_forward is ffn
    built = tl.DecoderLayer.build(D, H, F)
    assert list(layer.state_dict()) == list(built.state_dict())  # checkpoints load either way
    assert "self_attn.w_q.weight" in built.state_dict() and "norm3.bias" in built.state_dict()
    encoder_layer = tl.EncoderLayer(D, attn, ffn, 0.0, norm_first=True)
    x = torch.randn(B, S, D)
    h = encoder_layer.norm1(x)
    after_attention = x + attn(h, h, h)
    torch.testing.assert_close(encoder_layer(x), after_attention + ffn(encoder_layer.norm2(after_attention)))


def test_every_layer_of_a_stack_gets_the_options_and_parts_of_its_own():
    calls = []

    def feed_forward(config):
        calls.append(config)
        return tl.PositionwiseFeedForward(config.d_model, 2 * config.d_ff)

    decoder = tl.Decoder(3, D, H, F, 0.2, d_k=2, norm_first=True, layer_norm_eps=1e-3, feed_forward=feed_forward)
    assert len(calls) == 3 and calls[0] == tl.LayerConfig(D, H, F, 0.2, d_k=2, norm_first=True,
                                                          layer_norm_eps=1e-3, feed_forward=feed_forward)
    for layer in decoder.layers:
        assert layer.feed_forward.d_ff == 2 * F and layer.dropout.p == 0.2 and layer.norm_first
        assert layer.self_attn.d_k == layer.cross_attn.d_k == 2 and layer.norm3.eps == 1e-3
    w_1 = [layer.feed_forward.w_1.weight for layer in decoder.layers]
    assert len({id(w) for w in w_1}) == 3 and not torch.equal(w_1[0], w_1[1]), "independent parameters"
    assert decoder.norm.eps == 1e-3


def test_bad_parts_and_options_are_named():
    with pytest.raises(TypeError, match="self_attn must be a torch.nn.Module, got int"):
        tl.EncoderLayer(D, H, F)  # the sizes belong to EncoderLayer.build
    with pytest.raises(TypeError, match="cross_attn must be a torch.nn.Module, got function"):
        tl.DecoderLayer(D, tl.MultiHeadAttention(D, H), lambda q, k, v: q, tl.PositionwiseFeedForward(D, F))
    with pytest.raises(TypeError, match="feed_forward must be a callable that builds a module from a "
                                        "LayerConfig, got PositionwiseFeedForward"):
        tl.LayerConfig(D, H, F, feed_forward=tl.PositionwiseFeedForward(D, F))  # one module for every layer
    with pytest.raises(ValueError, match="d_model=10 must be divisible by num_heads=3"):
        tl.Encoder(2, 10, 3, F)
    with pytest.raises(ValueError, match=r"attention_dropout must be in \[0, 1\), got 1.5"):
        tl.EncoderLayer.build(D, H, F, attention_dropout=1.5)
    with pytest.raises(TypeError, match="norm_first must be a bool, got str"):
        tl.Encoder(1, D, H, F, norm_first="yes")
    with pytest.raises(TypeError, match="config must be a LayerConfig, got dict"):
        tl.Encoder.from_config(2, dict(d_model=D, num_heads=H, d_ff=F))
