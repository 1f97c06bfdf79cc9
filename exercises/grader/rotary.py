"""Exercise 15: rotary positions (Su et al., 2021), a change made after 2017: the rotation of
each head's queries and keys by their positions (``RotaryEmbedding``), and multi-head
self-attention that applies it, with a decoding cache (``RotaryMultiHeadAttention``).

The answer key of the second part is the package's ``GroupedQueryAttention`` with one
key/value head per query head (multi-head attention) and ``positions="rotary"``, under the
exercise's name and constructor. Each mistake is the package's code with one thing done wrong."""

from __future__ import annotations

import torch

import transformer_lab as tl
from transformer_lab.multi_head_attention import as_attention_mask

from .core import Exercise, Mistake, Part, Property
from .inputs import B, D, H, PAD, S, T, generator, load_weights, padded_tokens, randn, randomise, seeded
from .multi_head import P_DROP, mean_of_draws, same_output
from .stages import ROTARY_ATTENTION_STAGES

K_ROT = 8  # the first part's head width: four pairs, so that each pair's frequency counts

# --------------------------------------------------------------------------- RotaryEmbedding


def rotary_inputs():
    g = generator()
    return randn(g, B, H, T, K_ROT), randn(g, B, H, S, K_ROT), randn(g, B, S, 6)


def run_rotary(ns, rec):
    q, k, x = rotary_inputs()
    rec.watch(q=q, k=k, x=x)
    rotary = rec.call(f"RotaryEmbedding({K_ROT})", lambda: ns.RotaryEmbedding(K_ROT))
    rec(f"forward(q (2, 3, 5, {K_ROT}), k = q)", lambda: rotary(q, q))
    rec(f"forward(q (2, 3, 5, {K_ROT}), k (2, 3, 7, {K_ROT})): both from position 0", lambda: rotary(q, k))
    rec(f"forward(q (2, 3, 1, {K_ROT}), k (2, 3, 1, {K_ROT}), offset=4): position 4",
        lambda: rotary(q[:, :, :1], k[:, :, :1], offset=4))
    rec(f"forward(q, k (2, 3, 7, {K_ROT})) one position at a time, offset=t, as decoding with a cache: "
        f"the rotated k of positions 0..6", lambda: torch.cat([rotary(q[:, :, :1], k[:, :, t : t + 1], offset=t)[1]
                                                                for t in range(S)], dim=2))
    rec(f"batch size 1: forward(q (1, 3, 5, {K_ROT}), k (1, 3, 7, {K_ROT}), offset=2)",
        lambda: rotary(q[:1], k[:1], offset=2))
    other = rec.call("RotaryEmbedding(6, base=100.0)", lambda: ns.RotaryEmbedding(6, base=100.0))
    rec("base=100, no heads axis: forward(x (2, 7, 6), x)", lambda: other(x, x))


class _Rotary(tl.RotaryEmbedding):
    """The package's rotation with one step done another way."""


class _Interleaved(_Rotary):
    """RoFormer's paper's pairs, neighbours (2i, 2i + 1), where the package pairs i with i + K/2."""

    def cos_sin(self, length, offset, like):
        angle = self.angles(length, offset, like).repeat_interleave(2, dim=-1)  # (L, K): a0 a0 a1 a1 ...
        return angle.cos(), angle.sin()

    @staticmethod
    def turn(x, cos, sin):
        h = x.to(cos.dtype)
        turned = torch.stack((-h[..., 1::2], h[..., 0::2]), dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, ...)
        return (h * cos + turned * sin).to(x.dtype)


class _AngleTableInterleaved(_Rotary):
    """Pairs in halves (rotate_half) but the angles laid out for neighbouring pairs."""

    def cos_sin(self, length, offset, like):
        angle = self.angles(length, offset, like).repeat_interleave(2, dim=-1)  # (L, K)
        return angle.cos(), angle.sin()


class _SineFlipped(_Rotary):
    @staticmethod
    def turn(x, cos, sin):
        h = x.to(cos.dtype)
        return (h * cos - tl.rotary.rotate_half(h) * sin).to(x.dtype)  # turned by -pos * theta


class _OffsetIgnored(_Rotary):
    def angles(self, length, offset, like):
        return super().angles(length, 0, like)


class _FromOne(_Rotary):
    def angles(self, length, offset, like):
        return super().angles(length, offset + 1, like)


class _ExponentOverD(_Rotary):
    def __init__(self, head_dim, base=10000.0):
        super().__init__(head_dim, base)
        exponent = torch.arange(head_dim // 2, dtype=torch.float64) / head_dim  # i / d, not 2i / d
        self.inverse_frequency = base**-exponent


class _OnlyQ(_Rotary):
    def forward(self, q, k, offset=0):
        return self.rotate(q, offset), k


def _relative(ns) -> bool:
    """q_m . k_n depends on m - n only: moving both by 3 positions changes no score."""
    q, k, _ = rotary_inputs()
    rotary = ns.RotaryEmbedding(K_ROT)
    scores = [a @ b.transpose(-2, -1) for a, b in (rotary(q, k), rotary(q, k, offset=3))]
    return torch.allclose(scores[0], scores[1], atol=1e-4)


def _keeps_lengths(ns) -> bool:
    q, k, _ = rotary_inputs()
    turned_q, turned_k = ns.RotaryEmbedding(K_ROT)(q, k, offset=2)
    return torch.allclose(turned_q.norm(dim=-1), q.norm(dim=-1), atol=1e-5) and \
        torch.allclose(turned_k.norm(dim=-1), k.norm(dim=-1), atol=1e-5)


CLOSED_FORM = ("a test against the closed form in float64: pair i is z = x_i + j x_(i+K/2), turned to "
               "z e^(j pos theta_i) with theta_i = base^(-2i/K)")
ROTARY_PART = Part("RotaryEmbedding", run_rotary, tl.RotaryEmbedding, mistakes=(
    Mistake("pairs interleaved", "the rotation pairs neighbouring features (2i, 2i+1), as the RoFormer paper "
            "writes it; this exercise pairs feature i with feature i + K/2 (the two halves, as GPT-NeoX and "
            "Llama), so turn (x_a, x_b) into (-x_b, x_a) on the halves.", "rotary",
            {"RotaryEmbedding": _Interleaved}, hint=CLOSED_FORM),
    Mistake("angle table interleaved", "the angles are laid out for neighbouring pairs (repeat_interleave: "
            "a0, a0, a1, a1, ...) while the pairs are the halves; feature i and feature i + K/2 share one "
            "angle, so concatenate the table with itself, (a0, a1, ..., a0, a1, ...).", "rotary",
            {"RotaryEmbedding": _AngleTableInterleaved}, hint=CLOSED_FORM),
    Mistake("rotated the other way", "each pair turns by -pos * theta_i (the sine's sign flipped), which keeps "
            "scores relative but is not the rotation of the package or of pretrained weights; the rotated pair "
            "is (x_a cos - x_b sin, x_b cos + x_a sin).", "rotary", {"RotaryEmbedding": _SineFlipped},
            hint=CLOSED_FORM + " (relative scores alone cannot catch it)"),
    Mistake("offset ignored", "forward turns row t by position t whatever the offset, so while decoding "
            "with a cache every new token is told it is at position 0; turn it by offset + t.",
            "rotary-offset", {"RotaryEmbedding": _OffsetIgnored},
            hint="a test that rotating one position at a time, forward(q[..., t:t+1, :], k[..., t:t+1, :], "
                 "offset=t), equals rotating the whole sequence"),
    Mistake("positions counted from 1", "the first row is turned by position 1; positions count from 0, so "
            "row 0 of q and k (at offset 0) comes back unchanged.", "rotary", {"RotaryEmbedding": _FromOne},
            hint="a test that at offset 0 the first row of q and k is unchanged"),
    Mistake("exponent i/d", "theta_i is base^(-i/d); it is base^(-2i/d), i = 0 .. d/2 - 1, so the "
            "frequencies run down to about 1/base: arange(0, d, 2) / d.", "rotary",
            {"RotaryEmbedding": _ExponentOverD}, hint=CLOSED_FORM),
    Mistake("only q rotated", "forward returns k as it came; the keys are turned by their positions too, so "
            "that the score q_m . k_n depends on m - n only.", "rotary-qk", {"RotaryEmbedding": _OnlyQ},
            hint="a test that the scores q_m . k_n stay the same when both are moved by the same offset"),
), properties=(
    Property("the score q_m . k_n depends on m - n only (moving q and k by 3 positions changes none)", _relative),
    Property("the rotation keeps the length of every q and k", _keeps_lengths),
))

# --------------------------------------------------------------------------- RotaryMultiHeadAttention


class RotaryMultiHeadAttention(tl.GroupedQueryAttention):
    """The answer key of exercise 15's second part: the package's grouped-query attention with
    one key/value head per query head, which is the paper's multi-head attention, and
    ``positions="rotary"``, built as the exercise builds it."""

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__(d_model, num_heads, num_heads, dropout, positions="rotary")


def _attention_pair(ns, rec, g, seed, d_model, num_heads, dropout=0.0):
    label = f"RotaryMultiHeadAttention({d_model}, {num_heads}" + (f", dropout={dropout})" if dropout else ")")
    reference = randomise(seeded(seed, lambda: RotaryMultiHeadAttention(d_model, num_heads, dropout)), g).eval()
    mine = rec.call(label, lambda: ns.RotaryMultiHeadAttention(d_model, num_heads, dropout))
    rec.call("loading the package's weights", lambda: load_weights(mine, reference, parameters_only=True))
    rec.call("eval()", lambda: mine.eval())
    return mine, reference


PROMPT = 3  # decoding: the first three positions at once, then one at a time


def run_rotary_attention(ns, rec):
    g = generator()
    x = randn(g, B, S, D)
    padding = (padded_tokens(g) != PAD)[:, None, None, :]  # (B, 1, 1, S)
    causal = tl.causal_mask(S)
    rec.watch(x=x, mask=padding, causal=causal)
    mine, _ = _attention_pair(ns, rec, g, 1, D, H)
    rec("self-attention, x (2, 7, 12), no mask", lambda: mine(x, x, x), module=mine)
    rec("self-attention, x (2, 7, 12), causal mask (7, 7)", lambda: mine(x, x, x, mask=causal), module=mine)
    rec("self-attention, x (2, 7, 12), padding mask (2, 1, 1, 7)", lambda: mine(x, x, x, mask=padding), module=mine)
    rec("batch size 1: self-attention, x (1, 7, 12), padding mask (1, 1, 1, 7)",
        lambda: mine(x[:1], x[:1], x[:1], mask=padding[:1]), module=mine)
    cache = tl.KVCache()
    prompt = x[:, :PROMPT]
    rec(f"decoding with a KVCache: positions 0..{PROMPT - 1}, x[:, :{PROMPT}] with a causal mask ({PROMPT}, {PROMPT})",
        lambda: mine(prompt, prompt, prompt, mask=tl.causal_mask(PROMPT), cache=cache), module=mine)
    for t in range(PROMPT, S):
        step = x[:, t : t + 1]
        rec(f"then position {t} alone, x[:, {t}:{t + 1}], with the cache of positions 0..{t - 1}",
            lambda: mine(step, step, step, cache=cache), module=mine)
    mine, _ = _attention_pair(ns, rec, g, 2, D, 2)
    rec("2 heads of d_k=6: self-attention, x (2, 7, 12), causal mask (7, 7)", lambda: mine(x, x, x, mask=causal),
        module=mine)
    mine, reference = _attention_pair(ns, rec, g, 3, D, H, P_DROP)
    expected = reference(x, x, x, mask=causal)
    rec(f"dropout={P_DROP} in eval mode: self-attention, causal mask: equals the output without dropout",
        lambda: same_output(mine(x, x, x, mask=causal), expected))
    rec.call("train()", lambda: mine.train())
    rec(f"dropout={P_DROP} in training, 2048 draws: their mean is the output in eval mode",
        lambda: mean_of_draws(lambda q, kv: mine(q, kv, kv, mask=causal), x[:1], x[:1], expected[:1]))


class _RotaryVariant(RotaryMultiHeadAttention):
    """The package's forward (self-attention, one key/value head per query head) with where
    and how the rotation happens chosen by the subclass."""

    def project(self, query, key, value, offset):
        q = self.split_heads(self.w_q(query), self.num_heads, self.d_k)  # (B, H, T, K)
        k = self.split_heads(self.w_k(key), self.num_heads, self.d_k)  # (B, H, S, K)
        v = self.split_heads(self.w_v(value), self.num_heads, self.d_v)  # (B, H, S, Kv)
        q, k = self.rotary(q, k, offset)
        return q, k, v

    def forward(self, query, key, value, mask=None, cache=None):
        offset = 0 if cache is None else cache.length
        q, k, v = self.project(query, key, value, offset)
        if cache is not None:
            k, v = cache.update(k, v)
        heads = self.attend(q, k, v, as_attention_mask(mask), None)  # (B, H, T, Kv)
        batch, _, length, _ = heads.shape
        return self.w_o(heads.transpose(1, 2).reshape(batch, length, self.num_heads * self.d_v))  # (B, T, D)


class _ValuesRotated(_RotaryVariant):
    def project(self, query, key, value, offset):
        q, k, v = super().project(query, key, value, offset)
        return q, k, self.rotary.rotate(v, offset)


class _OffsetNotPassed(_RotaryVariant):
    def project(self, query, key, value, offset):
        return super().project(query, key, value, 0)


class _KeysUnrotated(_RotaryVariant):
    def project(self, query, key, value, offset):
        q, _, v = super().project(query, key, value, offset)
        return q, self.split_heads(self.w_k(key), self.num_heads, self.d_k), v


class _BeforeTheSplit(_RotaryVariant):
    """One rotation over all d_model features of the projections, then the split."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__(d_model, num_heads, dropout)
        self.rotary = tl.RotaryEmbedding(d_model)

    def project(self, query, key, value, offset):
        q, k = self.rotary(self.w_q(query), self.w_k(key), offset)  # (B, T, D): pairs across heads
        return (self.split_heads(q, self.num_heads, self.d_k), self.split_heads(k, self.num_heads, self.d_k),
                self.split_heads(self.w_v(value), self.num_heads, self.d_v))


class _HeadsAxis(_RotaryVariant):
    """Rotated in the (B, L, H, K) layout, before the transpose: the rows it turns are heads."""

    def project(self, query, key, value, offset):
        q = self.w_q(query).view(query.size(0), query.size(1), self.num_heads, self.d_k)  # (B, T, H, K)
        k = self.w_k(key).view(key.size(0), key.size(1), self.num_heads, self.d_k)  # (B, S, H, K)
        q, k = self.rotary(q, k, offset)  # positions 0 .. H-1 along the heads
        v = self.split_heads(self.w_v(value), self.num_heads, self.d_v)
        return q.transpose(1, 2), k.transpose(1, 2), v


class _InputRotated(_BeforeTheSplit):
    """The layer's inputs turned where the paper adds its sinusoids, before W^Q and W^K."""

    def project(self, query, key, value, offset):
        query, key = self.rotary(query, key, offset)  # (B, T, D): the inputs, not q and k
        return (self.split_heads(self.w_q(query), self.num_heads, self.d_k),
                self.split_heads(self.w_k(key), self.num_heads, self.d_k),
                self.split_heads(self.w_v(value), self.num_heads, self.d_v))


def _cached_equals_full(ns) -> bool:
    """Decoding one position at a time with a cache gives the causal run's output."""
    module = ns.RotaryMultiHeadAttention(D, H).eval()
    x, cache = randn(generator(), B, S, D), tl.KVCache()
    steps = torch.cat([module(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(S)], 1)
    return torch.allclose(steps, module(x, x, x, mask=tl.causal_mask(S)), atol=1e-5)


def _shift_changes_nothing(ns) -> bool:
    """Positions enter only as m - n: x decoded after 4 hidden positions gives x's output."""
    module = ns.RotaryMultiHeadAttention(D, H).eval()
    g = generator()
    x, before, cache = randn(g, B, T, D), randn(g, B, 4, D), tl.KVCache()
    module(before, before, before, cache=cache)  # positions 0..3, which the mask below hides
    mask = torch.cat([torch.zeros(T, 4, dtype=torch.bool), tl.causal_mask(T)], dim=1)  # (T, 4 + T)
    shifted = module(x, x, x, mask=mask, cache=cache)
    return torch.allclose(shifted, module(x, x, x, mask=tl.causal_mask(T)), atol=1e-5)


BY_HAND = ("a test against attention computed by hand from the module's own w_q, w_k, w_v, w_o: each head's "
           "q and k turned (the closed form), v as it is, softmax(q k^T / sqrt(d_k)) v")
ATTENTION_PART = Part("RotaryMultiHeadAttention", run_rotary_attention, tl.GroupedQueryAttention, mistakes=(
    Mistake("values rotated too", "the values are turned as well; rotary positions turn only q and k, whose dot "
            "product then depends on m - n, and a rotated value would carry its absolute position into the "
            "output.", "rotary-qk", {"RotaryMultiHeadAttention": _ValuesRotated}, hint=BY_HAND),
    Mistake("offset not passed", "forward calls self.rotary(q, k) without offset=cache.length, so while "
            "decoding with a cache every new token is turned as if at position 0; pass the number of cached "
            "positions.", "rotary-offset", {"RotaryMultiHeadAttention": _OffsetNotPassed},
            hint="a test that decoding one position at a time with a KVCache equals the causal run on the "
                 "whole sequence"),
    Mistake("keys used unrotated", "the rotated keys are dropped (q, _ = self.rotary(q, k, offset)), so the "
            "scores depend on the query's position alone; use the rotated k too.", "rotary-qk",
            {"RotaryMultiHeadAttention": _KeysUnrotated}, hint=BY_HAND),
    Mistake("rotated before the split into heads", "one RotaryEmbedding(d_model) turns the projections before "
            "the split, so pairs straddle heads and each head gets other frequencies; build "
            "RotaryEmbedding(d_k) and turn each head's (B, H, T, K) q and k.", "rotary-qk",
            {"RotaryMultiHeadAttention": _BeforeTheSplit}, hint=BY_HAND),
    Mistake("positions on the heads axis", "q and k are turned in the (B, T, H, K) layout, before the transpose, "
            "so the rows turned by positions 0, 1, 2 are the heads; transpose to (B, H, T, K) first, where the "
            "rows are the positions.", "rotary-qk", {"RotaryMultiHeadAttention": _HeadsAxis}, hint=BY_HAND),
    Mistake("input rotated instead of q and k", "the layer's inputs are turned before W^Q and W^K, where the "
            "paper adds its sinusoids to the scaled embeddings; the projections do not commute with the "
            "rotation, so turn q and k after them.", "rotary-qk",
            {"RotaryMultiHeadAttention": _InputRotated}, hint=BY_HAND),
), properties=(
    Property("decoding one position at a time with a KVCache equals the causal run", _cached_equals_full),
    Property("positions enter only as m - n: the same input after 4 hidden positions gives the same output",
             _shift_changes_nothing),
), stages=ROTARY_ATTENTION_STAGES)

ROTARY = Exercise(15, "ex15_rotary", "rotary positions", "rotary", {
    "RotaryEmbedding": tl.RotaryEmbedding, "RotaryMultiHeadAttention": RotaryMultiHeadAttention},
    (ROTARY_PART, ATTENTION_PART))
