"""Exercises 8-10: the residual connection with its LayerNorm, the encoder layer and the
decoder layer. The layers are handed the package's attention and feed-forward modules."""

from __future__ import annotations

import torch
from torch import nn

import transformer_lab as tl
from transformer_lab.layers import _Layer

from .core import Exercise, Mistake, Part, Property
from .inputs import B, D, F_FF, H, PAD, S, generator, load_weights, padded_tokens, randn, randomise, seeded
from .multi_head import same_output
from .stages import layer_stages, residual_layer_words

EPS = 1e-5

# --------------------------------------------------------------------------- 8 residual + LayerNorm


def _ln(norm_first: bool) -> str:
    return "pre-LN" if norm_first else "post-LN"


def run_residual(ns, rec):
    g = generator()
    norm = randomise(nn.LayerNorm(D), g)
    x, sub = randn(g, B, S, D), randn(g, B, S, D)
    rec.watch(x=x, sublayer_output=sub)
    for dropout in (0.0, 0.5):
        for norm_first in (False, True):
            name = f"{_ln(norm_first)}, dropout={dropout}"
            layer = rec.call(f"_Layer({D}, {dropout}, norm_first={norm_first}, layer_norm_eps={EPS})",
                             lambda: ns._Layer(D, dropout, norm_first, EPS))
            if dropout == 0.0:
                rec(f"{name}: sublayer_input(x, norm)", lambda: layer.sublayer_input(x, norm))
            rec.call("train()", lambda: layer.train())
            torch.manual_seed(4)
            rec(f"{name}{' in training' if dropout else ''}: residual(x, sublayer_output, norm)",
                lambda: layer.residual(x, sub, norm))
            if dropout == 0.0:
                rec(f"batch size 1, {name}: residual(x (1, 7, 12), sublayer_output, norm)",
                    lambda: layer.residual(x[:1], sub[:1], norm))


class _Swapped(_Layer):
    def sublayer_input(self, x, norm):
        return x if self.norm_first else norm(x)

    def residual(self, x, sublayer_output, norm):
        if self.norm_first:
            return norm(x + self.dropout(sublayer_output))
        return x + self.dropout(sublayer_output)


class _AlwaysPostLN(_Layer):
    def sublayer_input(self, x, norm):
        return x

    def residual(self, x, sublayer_output, norm):
        return norm(x + self.dropout(sublayer_output))


class _NoResidual(_Layer):
    def residual(self, x, sublayer_output, norm):
        out = self.dropout(sublayer_output)
        return out if self.norm_first else norm(out)


class _DropoutOnSum(_Layer):
    def residual(self, x, sublayer_output, norm):
        out = self.dropout(x + sublayer_output)
        return out if self.norm_first else norm(out)


class _NormOnSublayer(_Layer):
    def residual(self, x, sublayer_output, norm):
        if self.norm_first:
            return x + self.dropout(sublayer_output)
        return x + norm(self.dropout(sublayer_output))


class _PreLNNormalisedTwice(_Layer):
    def residual(self, x, sublayer_output, norm):
        return norm(x + self.dropout(sublayer_output))


def _silent_sublayer(ns) -> bool:
    g = generator()
    norm, x = randomise(nn.LayerNorm(D), g), randn(g, B, S, D)
    post, pre = ns._Layer(D, 0.0, False, EPS), ns._Layer(D, 0.0, True, EPS)
    zero = torch.zeros_like(x)
    return torch.allclose(post.residual(x, zero, norm), norm(x), atol=1e-6) and torch.equal(pre.residual(x, zero, norm), x)


SWAPPED = Mistake("post-LN and pre-LN swapped", "norm_first=False must be the paper's post-LN, "
                  "LayerNorm(x + Dropout(Sublayer(x))), and norm_first=True pre-LN, "
                  "x + Dropout(Sublayer(LayerNorm(x))); yours does the opposite.", "residual")
NO_RESIDUAL = Mistake("residual missing", "the sub-layer's input x is not added back, so the layer forgets its "
                      "input and deep stacks stop training; post-LN is LayerNorm(x + Dropout(Sublayer(x))).",
                      "mistakes-mask-residual")
RESIDUAL = Exercise(8, "ex08_residual", "residual connection and LayerNorm (post-LN, pre-LN)", "residual",
                    {"_Layer": _Layer}, (
    Part("_Layer", run_residual, _Layer, mistakes=(
        Mistake(SWAPPED.name, SWAPPED.says, SWAPPED.slide, {"_Layer": _Swapped}),
        Mistake("norm_first ignored", "pre-LN (norm_first=True) computes post-LN too; it normalises the "
                "sub-layer's input, x + Dropout(Sublayer(LayerNorm(x))), and not the sum.", "residual",
                {"_Layer": _AlwaysPostLN}),
        Mistake(NO_RESIDUAL.name, NO_RESIDUAL.says, NO_RESIDUAL.slide, {"_Layer": _NoResidual}),
        Mistake("dropout on the sum", "dropout acts on x + Sublayer(x); Section 5.4 drops the sub-layer's "
                "output before it is added to x, so the residual path is never dropped.", "residual",
                {"_Layer": _DropoutOnSum}),
        Mistake("pre-LN normalises the sum too", "pre-LN normalises both the sub-layer's input and the sum; "
                "it normalises only the input, leaving an identity path x + ... through the layer.",
                "residual", {"_Layer": _PreLNNormalisedTwice}),
        Mistake("LayerNorm on the sub-layer's output", "post-LN computes x + LayerNorm(Dropout(Sublayer(x))); "
                "the paper normalises the sum, LayerNorm(x + Dropout(Sublayer(x))), so the output of every "
                "layer is normalised.", "residual", {"_Layer": _NormOnSublayer}),
    ), properties=(
        Property("with a silent sub-layer, post-LN returns LayerNorm(x) and pre-LN returns x", _silent_sublayer),
    )),
))

# --------------------------------------------------------------------------- 9 encoder layer


def _parts(g, *names):
    """The package's sub-layers, seeded, with random biases: shared by the learner's
    layer and the package's."""
    build = {"attention": lambda: tl.MultiHeadAttention(D, H), "ffn": lambda: tl.PositionwiseFeedForward(D, F_FF)}
    return [randomise(seeded(i, build[name]), g) for i, name in enumerate(names)]


def _layer_pair(ns, rec, g, cls, parts, dropout, norm_first, train=None):
    """The package's layer and the learner's, holding the same sub-layers and weights, in
    training when there is dropout (unless ``train`` says otherwise)."""
    options = dict(norm_first=norm_first, layer_norm_eps=EPS)
    reference = randomise(getattr(tl, cls)(D, *parts, dropout, **options), g)
    mine = rec.call(f"{cls}({D}, <the package's sub-layers>, {dropout}, norm_first={norm_first})",
                    lambda: getattr(ns, cls)(D, *parts, dropout, **options))
    rec.call("loading the package's weights", lambda: load_weights(mine, reference))
    train = bool(dropout) if train is None else train
    rec.call("train()" if train else "eval()", lambda: mine.train(train))
    return mine, reference.train(train)


# (dropout, norm_first, batch size): post-LN and pre-LN, dropout in training, batch size 1
LAYER_CASES = ((0.0, False, B), (0.0, True, B), (0.3, False, B), (0.0, False, 1))


def run_encoder(ns, rec):
    g = generator()
    parts = _parts(g, "attention", "ffn")
    x, src_mask = randn(g, B, S, D), (padded_tokens(g) != PAD)[:, None, None, :]
    rec.watch(x=x, src_mask=src_mask)
    for dropout, norm_first, batch in LAYER_CASES:
        layer, _ = _layer_pair(ns, rec, g, "EncoderLayer", parts, dropout, norm_first)
        torch.manual_seed(5)
        mode = " in training" if dropout else ""
        one = "batch size 1, " if batch == 1 else ""
        rec(f"{one}{_ln(norm_first)}, dropout={dropout}{mode}: forward(x ({batch}, 7, 12), "
            f"src_mask ({batch}, 1, 1, 7))", lambda: layer(x[:batch], src_mask[:batch]), module=layer)
    layer, reference = _layer_pair(ns, rec, g, "EncoderLayer", parts, 0.3, False, train=False)
    rec("dropout=0.3 in eval mode: forward(x, src_mask) equals the output without dropout",
        lambda: same_output(layer(x, src_mask), reference(x, src_mask)))


class _EncNoMask(tl.EncoderLayer):
    def forward(self, x, src_mask=None):
        return super().forward(x, None)


class _EncFeedForwardFirst(tl.EncoderLayer):
    def forward(self, x, src_mask=None):
        h = self.sublayer_input(x, self.norm1)
        x = self.residual(x, self.feed_forward(h), self.norm1)
        h = self.sublayer_input(x, self.norm2)
        return self.residual(x, self.self_attn(h, h, h, mask=src_mask), self.norm2)


class _EncOneNorm(tl.EncoderLayer):
    def forward(self, x, src_mask=None):
        h = self.sublayer_input(x, self.norm1)
        x = self.residual(x, self.self_attn(h, h, h, mask=src_mask), self.norm1)
        h = self.sublayer_input(x, self.norm1)
        return self.residual(x, self.feed_forward(h), self.norm1)


class _EncSwapped(_Swapped, tl.EncoderLayer):
    pass


class _EncNoResidual(_NoResidual, tl.EncoderLayer):
    pass


class _EncNoFeedForwardResidual(tl.EncoderLayer):
    def forward(self, x, src_mask=None):
        h = self.sublayer_input(x, self.norm1)
        x = self.residual(x, self.self_attn(h, h, h, mask=src_mask), self.norm1)
        h = self.sublayer_input(x, self.norm2)
        return _NoResidual.residual(self, x, self.feed_forward(h), self.norm2)


def _encoder_padding_blocks(ns) -> bool:
    g = generator()
    layer = ns.EncoderLayer(D, *_parts(g, "attention", "ffn"), 0.0).eval()
    x, src_mask = randn(g, B, S, D), (padded_tokens(g) != PAD)[:, None, None, :]
    edited = x.clone()
    edited[1, -2:] += 1.0  # the padded positions of example 1
    before, after = layer(x, src_mask), layer(edited, src_mask)
    return torch.allclose(before[:, :-2], after[:, :-2], atol=1e-6) and torch.allclose(before[0], after[0], atol=1e-6)


def _encoder_equivariant(ns) -> bool:
    g = generator()
    layer = ns.EncoderLayer(D, *_parts(g, "attention", "ffn"), 0.0).eval()
    x, perm = randn(g, B, S, D), torch.randperm(S, generator=generator(3))
    return torch.allclose(layer(x)[:, perm], layer(x[:, perm]), atol=1e-5)


ENCODER_SUBLAYERS = (("self_attn", "the self-attention"), ("feed_forward", "the feed-forward network"))
ENCODER_POINTS = ("self_attn", "norm1", "feed_forward", "norm2")
NO_FFN_RESIDUAL = Mistake(
    "feed-forward residual missing", "the feed-forward sub-layer's input is not added back (the "
    "self-attention's residual is there): each sub-layer sits in its own residual connection, "
    "LayerNorm(x + Dropout(FFN(x))).", "mistakes-mask-residual")


def run_stack(ns, rec):
    g = generator(3)
    x, src_mask = randn(g, B, S, D), (padded_tokens(g) != PAD)[:, None, None, :]
    rec.watch(x=x, src_mask=src_mask)
    for norm_first, batch in ((False, B), (True, B), (True, 1)):
        build = f"Encoder(2, {D}, {H}, {F_FF}, 0.0, norm_first={norm_first})"
        reference = randomise(seeded(7, lambda: tl.Encoder(2, D, H, F_FF, 0.0, norm_first=norm_first)), g)
        stack = rec.call(build, lambda: ns.Encoder(2, D, H, F_FF, 0.0, norm_first=norm_first))
        rec.call("loading the package's weights", lambda: load_weights(stack, reference))
        rec.call("eval()", lambda: stack.eval())
        one = "batch size 1, " if batch == 1 else ""
        rec(f"{one}{build}: forward(x ({batch}, 7, 12), src_mask ({batch}, 1, 1, 7))",
            lambda: stack(x[:batch], src_mask[:batch]))


class _StackNoFinalNorm(tl.Encoder):
    def forward(self, x, src_mask=None):
        for layer in self.layers:
            x = layer(x, src_mask)
        return x


class _StackSameInput(tl.Encoder):
    def forward(self, x, src_mask=None):
        out = x
        for layer in self.layers:
            out = layer(x, src_mask)
        return self.final_norm(out)


class _StackNoMask(tl.Encoder):
    def forward(self, x, src_mask=None):
        return super().forward(x, None)


ENCODER = Exercise(9, "ex09_encoder_layer", "encoder layer and stack", "encoder",
                   {"EncoderLayer": tl.EncoderLayer, "Encoder": tl.Encoder}, (
    Part("EncoderLayer", run_encoder, tl.EncoderLayer, mistakes=(
        Mistake("src_mask not used", "the self-attention is called without src_mask, so every position "
                "attends to the source padding.", "masks", {"EncoderLayer": _EncNoMask}),
        Mistake("feed-forward first", "the feed-forward network runs before the self-attention; Section 3.1 "
                "puts self-attention first, then the feed-forward network.", "encoder",
                {"EncoderLayer": _EncFeedForwardFirst}),
        Mistake("one LayerNorm for both sub-layers", "both sub-layers use norm1; each sub-layer has a "
                "LayerNorm of its own (norm1, norm2), with its own gain and bias.", "encoder",
                {"EncoderLayer": _EncOneNorm}),
        Mistake(SWAPPED.name, SWAPPED.says, SWAPPED.slide, {"EncoderLayer": _EncSwapped}),
        Mistake(NO_RESIDUAL.name, NO_RESIDUAL.says, NO_RESIDUAL.slide, {"EncoderLayer": _EncNoResidual}),
        Mistake(NO_FFN_RESIDUAL.name, NO_FFN_RESIDUAL.says, NO_FFN_RESIDUAL.slide,
                {"EncoderLayer": _EncNoFeedForwardResidual}),
    ), properties=(
        Property("editing a padded position changes no other position's output", _encoder_padding_blocks),
        Property("without a mask, permuting the positions permutes the output", _encoder_equivariant),
    ), stages=layer_stages(ENCODER_POINTS, residual_layer_words(ENCODER_SUBLAYERS))),
    Part("Encoder", run_stack, tl.Encoder, mistakes=(
        Mistake("pre-LN without a final LayerNorm", "a pre-LN stack returns the last layer's sum unnormalised: "
                "pre-LN layers leave x + ... without a LayerNorm, so the stack ends with one (self.norm); "
                "post-LN stacks have none.", "gallery-pre-ln-final-norm", {"Encoder": _StackNoFinalNorm}),
        Mistake("every layer reads the stack's input", "each layer is applied to the stack's input x and "
                "only the last one's output is kept; layer n reads layer n - 1's output, x = layer(x, "
                "src_mask).", "encoder", {"Encoder": _StackSameInput}),
        Mistake("src_mask not passed to the layers", "the layers are called without src_mask, so every "
                "position attends to the source padding; hand it to each layer.", "masks",
                {"Encoder": _StackNoMask}),
    )),
))
