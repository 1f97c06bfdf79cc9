"""Exercises 4 and 7: multi-head attention and the position-wise feed-forward network."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import transformer_lab as tl
from transformer_lab.multi_head_attention import as_attention_mask

from .core import Exercise, Mistake, Part, Property
from .inputs import (B, D, F_FF, H, PAD, S, T, generator, load_weights, padded_tokens, python_list_of_modules,
                     randn, randomise, seeded)
from .inputs_attention import MIN, _weights
from .masks_heads import MERGE_NO_TRANSPOSE, SPLIT_NO_TRANSPOSE

# --------------------------------------------------------------------------- 4 multi-head attention

MHA_BUILDS = ((f"MultiHeadAttention({D}, {H})", {}),
              (f"MultiHeadAttention({D}, {H}, d_k=5, d_v=2, bias=False)", dict(d_k=5, d_v=2, bias=False)))


def _pair(ns, rec, g, seed, label, build, **kwargs):
    """The package's module (seeded, random biases) and the learner's holding its weights."""
    reference = randomise(seeded(seed, lambda: build(tl, **kwargs)), g)
    mine = rec.call(label, lambda: build(ns, **kwargs))
    rec.call("loading the package's weights", lambda: load_weights(mine, reference))
    rec.call("eval()", lambda: mine.eval())
    return mine


def _mha(ns, **options):
    return ns.MultiHeadAttention(D, H, **options)


def run_mha(ns, rec):
    g = generator()
    x, query, memory = randn(g, B, S, D), randn(g, B, T, D), randn(g, B, S, D)
    padding = (padded_tokens(g) != PAD)[:, None, None, :]  # (B, 1, 1, S)
    window = torch.ones(T, S, dtype=torch.bool).tril(2)  # (T, S)
    mine = _pair(ns, rec, g, 1, MHA_BUILDS[0][0], _mha)
    rec("self-attention, x (2, 7, 12), no mask", lambda: mine(x, x, x))
    rec("query (2, 5, 12), key = value (2, 7, 12), padding mask (2, 1, 1, 7)",
        lambda: mine(query, memory, memory, mask=padding))
    rec("query (2, 5, 12), key = value (2, 7, 12), mask (5, 7)", lambda: mine(query, memory, memory, mask=window))
    label, options = MHA_BUILDS[1]
    mine = _pair(ns, rec, g, 2, label, _mha, **options)
    rec("d_k=5, d_v=2: query (2, 5, 12), key = value (2, 7, 12), padding mask",
        lambda: mine(query, memory, memory, mask=padding))


class _Variant(tl.MultiHeadAttention):
    """The package's module with one step of ``forward`` done another way."""

    use_mask, use_w_o = True, True

    def attend(self, q, k, v, mask):
        return tl.scaled_dot_product_attention(q, k, v, mask)

    def forward(self, query, key, value, mask=None, cache=None):
        q = self.split_heads(self.w_q(query), self.d_k)  # (B, H, T, K)
        k = self.split_heads(self.w_k(key), self.d_k)  # (B, H, S, K)
        v = self.split_heads(self.w_v(value), self.d_v)  # (B, H, S, Kv)
        heads = self.attend(q, k, v, as_attention_mask(mask) if self.use_mask else None)
        merged = self.merge_heads(heads)  # (B, T, H*Kv)
        return self.w_o(merged) if self.use_w_o else merged


class _DividedByDk(_Variant):
    def attend(self, q, k, v, mask):
        return _weights(lambda d: d, MIN)(q, k, mask) @ v


class _MaskIgnored(_Variant):
    use_mask = False


class _NoOutputProjection(_Variant):
    use_w_o = False


def _permutation_equivariant(ns) -> bool:
    module = ns.MultiHeadAttention(D, H).eval()
    x, perm = randn(generator(), B, S, D), torch.randperm(S, generator=generator(3))
    return torch.allclose(module(x, x, x)[:, perm], module(x[:, perm], x[:, perm], x[:, perm]), atol=1e-5)


def _masked_keys_change_nothing(ns) -> bool:
    module, g = ns.MultiHeadAttention(D, H).eval(), generator()
    query, memory = randn(g, B, T, D), randn(g, B, S, D)
    padding = torch.ones(B, 1, 1, S, dtype=torch.bool)
    padding[1, ..., -2:] = False
    edited = memory.clone()
    edited[1, -2:] = randn(g, 2, D)
    return torch.allclose(module(query, memory, memory, padding), module(query, edited, edited, padding), atol=1e-6)


def _every_parameter_learns(ns) -> bool:
    module, x = ns.MultiHeadAttention(D, H), randn(generator(), B, S, D)
    module(x, x, x).square().sum().backward()
    params = list(module.parameters())
    return len(params) == 8 and all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in params)


MULTI_HEAD = Exercise(4, "ex04_multi_head_attention", "multi-head attention", "multi-head",
                      {"MultiHeadAttention": tl.MultiHeadAttention}, (
    Part("MultiHeadAttention", run_mha, tl.MultiHeadAttention, mistakes=(
        Mistake("projections in a Python list", "the projections are kept in a plain Python list (or dict), "
                "which .parameters(), the optimiser, .to(device) and state_dict cannot see; assign each to "
                "an attribute (or use nn.ModuleList).", "mistakes-more",
                detect=lambda ns: python_list_of_modules(ns.MultiHeadAttention(D, H))),
        SPLIT_NO_TRANSPOSE,
        MERGE_NO_TRANSPOSE,
        Mistake("divided by d_k", "the heads' scores are divided by d_k instead of sqrt(d_k), so the weights "
                "are too flat.", "mistakes-scale-mask", {"MultiHeadAttention": _DividedByDk}),
        Mistake("mask not used", "the mask is never applied, so queries attend to padding and to keys the "
                "mask hides; pass it to the attention of every head.", "masks",
                {"MultiHeadAttention": _MaskIgnored}),
        Mistake("no output projection", "the concatenated heads are returned without the output projection "
                "W^O (self.w_o).", "multi-head", {"MultiHeadAttention": _NoOutputProjection}),
    ), properties=(
        Property("self-attention without positions is permutation-equivariant", _permutation_equivariant),
        Property("editing a masked key or value changes nothing", _masked_keys_change_nothing),
        Property("all 8 parameters (w_q, w_k, w_v, w_o) are registered and receive a gradient",
                 _every_parameter_learns),
    )),
))

# --------------------------------------------------------------------------- 7 feed-forward


def _ffn(ns, **options):
    return ns.PositionwiseFeedForward(D, F_FF, **options)


def run_ffn(ns, rec):
    g = generator()
    x, flat = randn(g, B, S, D), randn(g, T, D)
    mine = _pair(ns, rec, g, 1, f"PositionwiseFeedForward({D}, {F_FF})", _ffn)
    rec("forward(x (2, 7, 12))", lambda: mine(x))
    rec("forward(x (5, 12))", lambda: mine(flat))
    mine = _pair(ns, rec, g, 2, f"PositionwiseFeedForward({D}, {F_FF}, dropout=0.5)", _ffn, dropout=0.5)
    rec.call("train()", lambda: mine.train())
    torch.manual_seed(3)
    rec("dropout=0.5 in training: forward(x (2, 7, 12))", lambda: mine(x))


class _FFN(tl.PositionwiseFeedForward):
    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class _NoReLU(_FFN):
    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x)))


class _ReLUAtOutput(_FFN):
    def forward(self, x):
        return super().forward(x).relu()


class _DropoutOnOutput(_FFN):
    def forward(self, x):
        return self.dropout(self.w_2(self.w_1(x).relu()))


class _GELU(_FFN):
    def forward(self, x):
        return self.w_2(self.dropout(F.gelu(self.w_1(x))))


def _position_wise(ns) -> bool:
    module = ns.PositionwiseFeedForward(D, F_FF).eval()
    x, perm = randn(generator(), B, S, D), torch.randperm(S, generator=generator(3))
    return torch.allclose(module(x)[:, perm], module(x[:, perm]), atol=1e-6)


FEED_FORWARD = Exercise(7, "ex07_feed_forward", "position-wise feed-forward network", "feed-forward",
                        {"PositionwiseFeedForward": tl.PositionwiseFeedForward}, (
    Part("PositionwiseFeedForward", run_ffn, tl.PositionwiseFeedForward, mistakes=(
        Mistake("no ReLU", "there is no ReLU between the two linear maps, so the network is one linear map; "
                "equation (2) is max(0, x W_1 + b_1) W_2 + b_2.", "feed-forward", {"PositionwiseFeedForward": _NoReLU}),
        Mistake("ReLU after W_2", "the output goes through a ReLU too; equation (2) has one ReLU, between the "
                "two linear maps, and the output may be negative.", "feed-forward",
                {"PositionwiseFeedForward": _ReLUAtOutput}),
        Mistake("dropout on the output", "dropout acts on the output; the package drops the hidden "
                "activations after the ReLU (the layer applies the residual dropout to the output).",
                "feed-forward", {"PositionwiseFeedForward": _DropoutOnOutput}),
        Mistake("GELU instead of ReLU", "the activation is GELU (BERT's and GPT's); equation (2) uses "
                "ReLU, max(0, .).", "feed-forward", {"PositionwiseFeedForward": _GELU}),
    ), properties=(
        Property("each position is transformed separately and identically", _position_wise),
    )),
))
