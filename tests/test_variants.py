"""Attention variants plug into the layers without an edit to the package.

Both variants below live in this file only, as a newcomer's would live in a module of
their own: grouped-query attention (Ainslie et al., 2023: H query heads share G key/value
heads, so the decoding cache holds G heads) and a learned relative-position bias (one
scalar per head and clipped distance j - i, added to the scores, after Shaw et al., 2018
and T5). Each is a module with the layers' call ``forward(query, key, value, mask=None,
cache=None) -> (B, T, D)``, handed to the model as a factory ``LayerConfig -> module``.
"""

import pytest
import torch
from torch import nn

import transformer_lab as tl
from transformer_lab.multi_head_attention import as_attention_mask

B, S, T, D, H = 2, 7, 5, 12, 3
BOS, EOS = 1, 2


class GroupedQueryAttention(nn.Module):
    """``num_heads`` query heads in ``num_kv_heads`` groups; each group shares one key
    and one value head. ``num_kv_heads == num_heads`` is multi-head attention."""

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.d_k = num_heads, num_kv_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, num_heads * self.d_k)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.w_o = nn.Linear(num_heads * self.d_k, d_model)
        self.on_weights = None  # record_attention's hook, as in MultiHeadAttention

    @classmethod
    def factory(cls, num_kv_heads: int):
        return lambda config: cls(config.d_model, config.num_heads, num_kv_heads)

    def split(self, x, heads):
        return x.view(x.size(0), x.size(1), heads, self.d_k).transpose(1, 2)  # (B, heads, L, K)

    def forward(self, query, key, value, mask=None, cache=None):
        q = self.split(self.w_q(query), self.num_heads)  # (B, H, T, K)
        if cache is not None and cache.filled:
            k, v = cache.k, cache.v  # (B, G, S, K)
        else:
            k = self.split(self.w_k(key), self.num_kv_heads)  # (B, G, S, K)
            v = self.split(self.w_v(value), self.num_kv_heads)  # (B, G, S, K)
            if cache is not None:
                k, v = cache.update(k, v)  # the cache keeps G heads, not H
        group = self.num_heads // self.num_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, H, S, K)
        heads = tl.scaled_dot_product_attention(q, k, v, as_attention_mask(mask), on_weights=self.on_weights)
        return self.w_o(heads.transpose(1, 2).flatten(2))  # (B, T, D)


class RelativePositionAttention(tl.MultiHeadAttention):
    """Multi-head attention plus a learned bias per head and clipped distance j - i."""

    def __init__(self, d_model: int, num_heads: int, max_distance: int):
        super().__init__(d_model, num_heads)
        self.max_distance = max_distance
        self.distance_bias = nn.Parameter(0.5 * torch.randn(num_heads, 2 * max_distance + 1))

    @classmethod
    def factory(cls, max_distance: int):
        return lambda config: cls(config.d_model, config.num_heads, max_distance)

    def bias(self, first_query: int, num_queries: int, num_keys: int, device) -> torch.Tensor:
        i = torch.arange(first_query, first_query + num_queries, device=device)  # (T,) query positions
        j = torch.arange(num_keys, device=device)  # (S,) key positions
        distance = (j[None, :] - i[:, None]).clamp(-self.max_distance, self.max_distance)  # (T, S)
        return self.distance_bias[:, distance + self.max_distance]  # (H, T, S)

    def forward(self, query, key, value, mask=None, cache=None):
        first_query = 0 if cache is None else cache.length  # positions decoded before this call
        q = self.split_heads(self.w_q(query), self.d_k)  # (B, H, T, K)
        k, v = self.project_key_value(key, value, cache)  # (B, H, S, K), (B, H, S, Kv)
        bias = self.bias(first_query, q.size(2), k.size(2), q.device)  # (H, T, S)
        dropout_p = self.dropout if self.training else 0.0
        heads = tl.scaled_dot_product_attention(q, k, v, as_attention_mask(mask), dropout_p, bias=bias,
                                                on_weights=self.on_weights)  # (B, H, T, Kv)
        return self.w_o(self.merge_heads(heads))  # (B, T, D)


# -- each variant on its own -----------------------------------------------------------


def test_grouped_query_attention_with_a_kv_head_per_query_head_is_multi_head_attention():
    mha = tl.MultiHeadAttention(D, H).eval()
    gqa = GroupedQueryAttention(D, H, num_kv_heads=H).eval()
    gqa.load_state_dict(mha.state_dict())  # the same four projections, by the same names
    x, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    torch.testing.assert_close(gqa(x, memory, memory), mha(x, memory, memory))
    mask = tl.causal_mask(T)
    torch.testing.assert_close(gqa(x, x, x, mask=mask), mha(x, x, x, mask=mask))


def test_the_relative_bias_is_added_to_the_scores_before_the_softmax():
    attn = RelativePositionAttention(D, H, max_distance=2).eval()
    x = torch.randn(B, T, D)
    with tl.record_attention(attn) as recorded:
        out = attn(x, x, x, mask=tl.causal_mask(T))
    q, k = attn.split_heads(attn.w_q(x), attn.d_k), attn.split_heads(attn.w_k(x), attn.d_k)
    distance = (torch.arange(T)[None, :] - torch.arange(T)[:, None]).clamp(-2, 2)  # (T, T)
    scores = q @ k.mT / attn.d_k**0.5 + attn.distance_bias[:, distance + 2]
    expected = torch.softmax(scores.masked_fill(~tl.causal_mask(T), -torch.inf), dim=-1)
    torch.testing.assert_close(recorded.weights, expected)
    torch.testing.assert_close(out, attn(x, x, x, mask=tl.causal_mask(T)))  # fused path, same output
    with torch.no_grad():
        attn.distance_bias.zero_()
    plain = tl.MultiHeadAttention(D, H).eval()
    plain.load_state_dict(attn.state_dict(), strict=False)
    torch.testing.assert_close(attn(x, x, x), plain(x, x, x))  # no bias: the paper's attention


# -- each variant in a whole model, through the public API -----------------------------

VARIANTS = {
    "grouped-query": dict(self_attention=GroupedQueryAttention.factory(1),
                          cross_attention=GroupedQueryAttention.factory(1)),
    "relative-position": dict(self_attention=RelativePositionAttention.factory(3)),
}


def variant_model(name, seed=0, **overrides):
    torch.manual_seed(seed)
    options = dict(src_vocab_size=23, tgt_vocab_size=19, d_model=D, num_heads=H, d_ff=20, num_layers=2,
                   max_len=64, dropout=0.0)
    config = tl.TransformerConfig(**{**options, **overrides})
    return tl.Transformer(config, **VARIANTS[name])


def source():
    src = torch.randint(4, 23, (3, S))
    src[1, -3:] = 0  # padding
    return src


@pytest.mark.parametrize("name", VARIANTS)
def test_a_variant_is_built_into_every_layer_and_the_rest_keeps_its_names(name):
    model = variant_model(name)
    kind = type(VARIANTS[name]["self_attention"](model.config.layer_config()))
    for layer in [*model.encoder.layers, *model.decoder.layers]:
        assert type(layer.self_attn) is kind
    assert len({id(layer.self_attn) for layer in model.decoder.layers}) == 2, "each layer has its own"
    names = set(model.state_dict())
    assert {"decoder.layers.1.feed_forward.w_1.weight", "encoder.layers.0.norm1.weight"} <= names
    if name == "grouped-query":  # one shared key head: H times fewer key parameters
        assert model.encoder.layers[0].self_attn.w_k.weight.shape == (D // H, D)


@pytest.mark.parametrize("name", VARIANTS)
def test_a_variant_model_trains(name):
    loaders = tl.make_loaders("copy", seed=0, max_tokens=128, num_train=64, num_validation=8, num_test=8)
    vocab = len(loaders.src_vocab)
    model = variant_model(name, src_vocab_size=vocab, tgt_vocab_size=vocab, shared_vocab=True)
    optimizer, loss_fn = torch.optim.Adam(model.parameters(), lr=1e-2), tl.LabelSmoothingLoss(0.0)
    batch = next(iter(loaders.train))
    first = tl.train_step(model, batch, loss_fn, optimizer)["loss"]  # the loss before the update
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters()), "every parameter learns"
    for _ in range(10):
        last = tl.train_step(model, batch, loss_fn, optimizer)["loss"]
    assert last < 0.85 * first, f"ten steps on one batch: loss {first:.2f} -> {last:.2f}"


@pytest.mark.parametrize("name", VARIANTS)
def test_a_variant_decodes_with_the_cache_as_without_it(name):
    model, src = variant_model(name).eval(), source()
    tgt = torch.randint(3, 19, (3, 6))
    memory, src_mask = model.encode(src), model.src_mask(src)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache=cache) for t in range(tgt.size(1))]
    torch.testing.assert_close(torch.cat(steps, dim=1), model(src, tgt))
    cached = tl.greedy_decode(model, src, max_len=10, bos_id=BOS, eos_id=EOS, use_cache=True)
    assert torch.equal(cached, tl.greedy_decode(model, src, max_len=10, bos_id=BOS, eos_id=EOS, use_cache=False))
    assert torch.equal(tl.beam_search(model, src, 1, 10, BOS, EOS), cached)
    beams = tl.beam_search(model, src, 3, 10, BOS, EOS)  # reorders the variant's caches
    assert beams.size(0) == 3 and torch.all(beams[:, 0] == BOS)


@pytest.mark.parametrize("name", VARIANTS)
def test_a_variant_is_recorded_like_the_papers_attention(name):
    model, src = variant_model(name).eval(), source()
    tgt = torch.randint(3, 19, (3, T))
    with tl.record_attention(model) as attn:
        logits = model(src, tgt)
    torch.testing.assert_close(logits, model(src, tgt))
    assert attn.decoder_self[1].shape == (3, H, T, T) and attn.cross[0].shape == (3, H, T, S)
    assert torch.all(attn.decoder_self[1].triu(1) == 0), "the causal mask reaches the variant"
    torch.testing.assert_close(attn.encoder[0].sum(-1), torch.ones(3, H, S))


def test_parts_are_named_and_checked():
    config = tl.TransformerConfig(23, 19, d_model=D, num_heads=H, d_ff=20, num_layers=1)
    with pytest.raises(TypeError, match=r"parts must be among \('self_attention', 'cross_attention', "
                                        r"'feed_forward'\), got \['attention'\]"):
        tl.Transformer(config, attention=GroupedQueryAttention.factory(1))
    with pytest.raises(TypeError, match="self_attention must be a callable that builds a module from a "
                                        "LayerConfig, got GroupedQueryAttention"):
        tl.Transformer(config, self_attention=GroupedQueryAttention(D, H, 1))
    with pytest.raises(TypeError, match="self_attn must be a torch.nn.Module, got int"):
        tl.Encoder(1, D, H, 20, self_attention=lambda config: config.num_heads)
