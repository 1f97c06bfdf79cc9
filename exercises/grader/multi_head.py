"""Exercises 4 and 7: multi-head attention and the position-wise feed-forward network."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import transformer_lab as tl
from transformer_lab.multi_head_attention import as_attention_mask

from .compare import Claim
from .core import Exercise, Mistake, Part, Property
from .inputs import (B, D, F_FF, H, PAD, S, T, generator, load_weights, padded_tokens, python_list_of_modules,
                     randn, randomise, seeded)
from .inputs_attention import _weights
from .masks_heads import MERGE_INTERLEAVED, MERGE_NO_TRANSPOSE, PARITY_HINT, SPLIT_NO_TRANSPOSE
from .stages import ATTENTION_STAGES, layer_stages

# --------------------------------------------------------------------------- 4 multi-head attention

MHA_BUILDS = ((f"MultiHeadAttention({D}, {H})", {}),
              (f"MultiHeadAttention({D}, {H}, d_k=5, d_v=2, bias=False)", dict(d_k=5, d_v=2, bias=False)))
P_DROP, DRAWS = 0.5, 2048


def pair(ns, rec, g, seed, label, build, **kwargs):
    """The package's module (seeded, random biases) and the learner's holding its weights,
    in eval mode."""
    reference = randomise(seeded(seed, lambda: build(tl, **kwargs)), g).eval()
    mine = rec.call(label, lambda: build(ns, **kwargs))
    rec.call("loading the package's weights", lambda: load_weights(mine, reference))
    rec.call("eval()", lambda: mine.eval())
    return mine, reference


def _mha(ns, **options):
    return ns.MultiHeadAttention(D, H, **options)


def run_mha(ns, rec):
    g = generator()
    x, query, memory = randn(g, B, S, D), randn(g, B, T, D), randn(g, B, S, D)
    padding = (padded_tokens(g) != PAD)[:, None, None, :]  # (B, 1, 1, S)
    window = torch.ones(T, S, dtype=torch.bool).tril(2)  # (T, S)
    rec.watch(query=query, key=memory, x=x, mask=padding, window=window)
    mine, _ = pair(ns, rec, g, 1, MHA_BUILDS[0][0], _mha)
    rec("self-attention, x (2, 7, 12), no mask", lambda: mine(x, x, x), module=mine)
    rec("query (2, 5, 12), key = value (2, 7, 12), padding mask (2, 1, 1, 7)",
        lambda: mine(query, memory, memory, mask=padding), module=mine)
    rec("query (2, 5, 12), key = value (2, 7, 12), mask (5, 7)", lambda: mine(query, memory, memory, mask=window),
        module=mine)
    rec("batch size 1: query (1, 5, 12), key = value (1, 7, 12), padding mask (1, 1, 1, 7)",
        lambda: mine(query[:1], memory[:1], memory[:1], mask=padding[:1]), module=mine)
    label, options = MHA_BUILDS[1]
    mine, _ = pair(ns, rec, g, 2, label, _mha, **options)
    rec("d_k=5, d_v=2: query (2, 5, 12), key = value (2, 7, 12), padding mask",
        lambda: mine(query, memory, memory, mask=padding), module=mine)
    mine, reference = pair(ns, rec, g, 3, f"MultiHeadAttention({D}, {H}, dropout={P_DROP})", _mha, dropout=P_DROP)
    expected = reference(query, memory, memory, mask=padding)
    rec(f"dropout={P_DROP} in eval mode: query, key = value, padding mask: equals the output without dropout",
        lambda: same_output(mine(query, memory, memory, mask=padding), expected))
    rec.call("train()", lambda: mine.train())
    rec(f"dropout={P_DROP} in training, {DRAWS} draws: their mean is the output in eval mode",
        lambda: mean_of_draws(lambda q, kv: mine(q, kv, kv, mask=padding[:1].expand(len(q), -1, -1, -1)),
                              query[:1], memory[:1], expected[:1]))


def same_output(out, expected) -> Claim:
    if isinstance(out, torch.Tensor) and out.shape == expected.shape and torch.allclose(out, expected, 1e-4, 1e-5):
        return Claim(True)
    got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
    if got == tuple(expected.shape):
        got = f"a largest difference of {(out - expected).abs().max().item():.3g}"
    return Claim(False, f"in eval mode dropout must do nothing: got {got}")


def mean_of_draws(module_call, query, key, expected) -> Claim:
    """Dropout keeps the expected value: the mean output of ``DRAWS`` copies of one example
    (each with its own draw) lies within 6 standard errors of the output without dropout,
    and the copies differ (dropout acted)."""
    outs = module_call(query.expand(DRAWS, -1, -1), key.expand(DRAWS, -1, -1)).detach()  # (N, T, D)
    mean, error = outs.mean(0), outs.std(0) / math.sqrt(DRAWS)
    if float(error.max()) == 0.0:
        return Claim(False, f"every one of the {DRAWS} draws gave the same output: nothing was dropped")
    z = ((mean - expected[0]).abs() / (error + 1e-6)).max().item()
    return Claim(z < 6.0, f"the mean of {DRAWS} draws is {z:.1f} standard errors from the output without "
                          f"dropout (dropout must keep the expected value: divide the kept entries by 1 - p)")


class _Variant(tl.MultiHeadAttention):
    """The package's module with one step of ``forward`` done another way."""

    use_mask, use_w_o, invert_mask = True, True, False

    def attend(self, q, k, v, mask):
        return tl.scaled_dot_product_attention(q, k, v, mask, self.dropout if self.training else 0.0)

    def forward(self, query, key, value, mask=None, cache=None):
        q = self.split_heads(self.w_q(query), self.d_k)  # (B, H, T, K)
        k = self.split_heads(self.w_k(key), self.d_k)  # (B, H, S, K)
        v = self.split_heads(self.w_v(value), self.d_v)  # (B, H, S, Kv)
        mask = as_attention_mask(mask) if self.use_mask else None
        heads = self.attend(q, k, v, ~mask if mask is not None and self.invert_mask else mask)
        merged = self.merge_heads(heads)  # (B, T, H*Kv)
        return self.w_o(merged) if self.use_w_o else merged


class _DividedByDk(_Variant):
    def attend(self, q, k, v, mask):
        return _weights(lambda d: d)(q, k, mask) @ v


class _ScaledByDModel(_Variant):
    def attend(self, q, k, v, mask):
        return _weights(lambda d: math.sqrt(self.d_model))(q, k, mask) @ v


class _DropoutInEval(_Variant):
    def attend(self, q, k, v, mask):
        return F.dropout(tl.attention_weights(q, k, mask), self.dropout) @ v  # training=True by default


class _MaskIgnored(_Variant):
    use_mask = False


class _MaskPolarity(_Variant):
    """The mask inverted, as code written for nn.MultiheadAttention reads it; a query that
    then sees no key gets the mean of the values, as that code (-1e9 or the lowest value,
    then a softmax) gives it."""

    invert_mask = True

    def attend(self, q, k, v, mask):
        return _weights(math.sqrt, after=False)(q, k, mask) @ v


class _NoOutputProjection(_Variant):
    use_w_o = False


class _ProjectionsInAList(tl.MultiHeadAttention):
    """The projections out of .parameters(): what a learner's plain list of modules does."""

    def __init__(self, d_model, num_heads, d_k=None, d_v=None, dropout=0.0, bias=True):
        super().__init__(d_model, num_heads, d_k, d_v, dropout, bias)
        projections = [self.w_q, self.w_k, self.w_v, self.w_o]
        for name in ("w_q", "w_k", "w_v", "w_o"):
            del self._modules[name]
        self.linears = projections
        self.w_q, self.w_k, self.w_v, self.w_o = (_Hidden(p) for p in projections)


class _Hidden:
    """A module reached through a plain attribute: called as usual, invisible to the parent."""

    def __init__(self, module):
        self.module = module

    def __call__(self, x):
        return self.module(x)


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
                {"MultiHeadAttention": _ProjectionsInAList},
                detect=lambda ns: python_list_of_modules(ns.MultiHeadAttention(D, H)),
                hint="a test that the module has 8 parameters (w_q, w_k, w_v, w_o: weights and biases) and "
                     "that each receives a gradient"),
        SPLIT_NO_TRANSPOSE,
        MERGE_NO_TRANSPOSE,
        Mistake("divided by d_k", "the heads' scores are divided by d_k instead of sqrt(d_k), so the weights "
                "are too flat.", "mistakes-scale-mask", {"MultiHeadAttention": _DividedByDk}, hint=PARITY_HINT),
        Mistake("mask not used", "the mask is never applied, so queries attend to padding and to keys the "
                "mask hides; pass it to the attention of every head.", "masks",
                {"MultiHeadAttention": _MaskIgnored},
                hint="a test that editing a key and value the mask hides changes nothing"),
        Mistake("no output projection", "the concatenated heads are returned without the output projection "
                "W^O (self.w_o).", "multi-head", {"MultiHeadAttention": _NoOutputProjection}, hint=PARITY_HINT),
        Mistake("scaled by sqrt(d_model)", "the heads' scores are divided by sqrt(d_model); each head's dot "
                "products have d_k terms, so equation (1) divides by sqrt(d_k) = sqrt(d_model / h).",
                "why-sqrt", {"MultiHeadAttention": _ScaledByDModel}, hint=PARITY_HINT),
        MERGE_INTERLEAVED,
        Mistake("mask read as True = masked", "the mask is read with nn.MultiheadAttention's convention "
                "(True = masked out); this project's masks, like F.scaled_dot_product_attention's, are "
                "True = may attend.", "gallery-mask-polarity", {"MultiHeadAttention": _MaskPolarity},
                hint="a test that a key the mask hides (False) cannot change the output while a visible one "
                     "can"),
        Mistake("dropout on in eval mode", "the attention weights are dropped in eval mode too, as if "
                "model.eval() were forgotten: F.dropout(x, p) drops by default (training=True); pass "
                "training=self.training, or use nn.Dropout.", "gallery-eval-mode",
                {"MultiHeadAttention": _DropoutInEval},
                hint="a test that a module built with dropout > 0 gives the same output twice in eval mode"),
    ), properties=(
        Property("self-attention without positions is permutation-equivariant", _permutation_equivariant),
        Property("editing a masked key or value changes nothing", _masked_keys_change_nothing),
        Property("all 8 parameters (w_q, w_k, w_v, w_o) are registered and receive a gradient",
                 _every_parameter_learns),
    ), stages=ATTENTION_STAGES),
))

# --------------------------------------------------------------------------- 7 feed-forward


def _ffn(ns, **options):
    return ns.PositionwiseFeedForward(D, F_FF, **options)


def run_ffn(ns, rec):
    g = generator()
    x, flat = randn(g, B, S, D), randn(g, T, D)
    rec.watch(x=x)
    rec.watch(x=flat)
    mine, _ = pair(ns, rec, g, 1, f"PositionwiseFeedForward({D}, {F_FF})", _ffn)
    rec("forward(x (2, 7, 12))", lambda: mine(x), module=mine)
    rec("forward(x (5, 12))", lambda: mine(flat), module=mine)
    rec("batch size 1: forward(x (1, 7, 12))", lambda: mine(x[:1]), module=mine)
    mine, reference = pair(ns, rec, g, 2, f"PositionwiseFeedForward({D}, {F_FF}, dropout=0.5)", _ffn, dropout=0.5)
    expected = reference(x)
    rec("dropout=0.5 in eval mode: forward(x (2, 7, 12)) equals the output without dropout",
        lambda: same_output(mine(x), expected))
    rec.call("train()", lambda: mine.train())
    torch.manual_seed(3)
    rec("dropout=0.5 in training: forward(x (2, 7, 12))", lambda: mine(x), module=mine)


class _FFN(tl.PositionwiseFeedForward):
    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class _NoReLU(_FFN):
    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x)))


class _ReLUAtOutput(_FFN):
    def forward(self, x):
        return super().forward(x).relu()


class _ReLUMoved(_FFN):
    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x))).relu()


class _DropoutOnOutput(_FFN):
    def forward(self, x):
        return self.dropout(self.w_2(self.w_1(x).relu()))


class _GELU(_FFN):
    def forward(self, x):
        return self.w_2(self.dropout(F.gelu(self.w_1(x))))


class _FFNDropoutInEval(_FFN):
    def forward(self, x):
        return self.w_2(F.dropout(self.w_1(x).relu(), self.dropout.p))  # training=True by default


def _position_wise(ns) -> bool:
    module = ns.PositionwiseFeedForward(D, F_FF).eval()
    x, perm = randn(generator(), B, S, D), torch.randperm(S, generator=generator(3))
    return torch.allclose(module(x)[:, perm], module(x[:, perm]), atol=1e-6)


FFN_WORDS = {
    "w_1:input": "w_1: its input x",
    "w_1:output": "w_1: x W_1 + b_1",
    "w_2:input": "the hidden activations: max(0, x W_1 + b_1), dropped out in training (w_2's input)",
    "w_2:output": "w_2: max(0, x W_1 + b_1) W_2 + b_2",
    "output": "the network's output",
}
FEED_FORWARD = Exercise(7, "ex07_feed_forward", "position-wise feed-forward network", "feed-forward",
                        {"PositionwiseFeedForward": tl.PositionwiseFeedForward}, (
    Part("PositionwiseFeedForward", run_ffn, tl.PositionwiseFeedForward, mistakes=(
        Mistake("no ReLU", "there is no ReLU between the two linear maps, so the network is one linear map; "
                "equation (2) is max(0, x W_1 + b_1) W_2 + b_2.", "feed-forward", {"PositionwiseFeedForward": _NoReLU}),
        Mistake("ReLU after W_2", "the output goes through a ReLU too; equation (2) has one ReLU, between the "
                "two linear maps, and the output may be negative.", "feed-forward",
                {"PositionwiseFeedForward": _ReLUAtOutput}),
        Mistake("ReLU moved after W_2", "the ReLU comes after W_2 instead of between the linear maps, so the "
                "hidden layer is linear and the output cannot be negative; equation (2) is "
                "max(0, x W_1 + b_1) W_2 + b_2.", "feed-forward", {"PositionwiseFeedForward": _ReLUMoved}),
        Mistake("dropout on the output", "dropout acts on the output; the package drops the hidden "
                "activations after the ReLU (the layer applies the residual dropout to the output).",
                "feed-forward", {"PositionwiseFeedForward": _DropoutOnOutput}),
        Mistake("GELU instead of ReLU", "the activation is GELU (BERT's and GPT's); equation (2) uses "
                "ReLU, max(0, .).", "feed-forward", {"PositionwiseFeedForward": _GELU}),
        Mistake("dropout on in eval mode", "the hidden activations are dropped in eval mode too, as if "
                "model.eval() were forgotten: F.dropout(x, p) drops by default (training=True); use "
                "self.dropout (nn.Dropout) or pass training=self.training.", "gallery-eval-mode",
                {"PositionwiseFeedForward": _FFNDropoutInEval}),
    ), properties=(
        Property("each position is transformed separately and identically", _position_wise),
    ), stages=layer_stages(("w_1", "w_2"), lambda key, module: FFN_WORDS[key])),
))
